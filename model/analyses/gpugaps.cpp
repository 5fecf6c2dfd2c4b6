#include "gpugaps.h"

#include "analysishelpers.h"
#include "durationstats.h"
#include "saturating.h"
#include "steps.h"

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>

namespace warpline::model {

std::string_view gapCauseName(GapCause cause) {
    return cause == GapCause::HostWait ? "host-wait" : "other";
}

namespace {

struct Cursor {
    int64_t start;
    uint32_t track;
    size_t index;
    size_t last;
    bool operator<(const Cursor& o) const {
        return std::tie(start, track) < std::tie(o.start, o.track);
    }
};

// Calls visit(track, index) for the ops of `cursors` in (start, track) order: a k-way merge that
// takes a run of ops from one track while they come before every other track's next op, so a
// device whose streams take turns in long runs costs one comparison per op.
template <typename Visit>
void mergeByStart(const TraceStore& store, std::vector<Cursor>& cursors, Visit&& visit) {
    const auto& gpu = store.gpuTracks();
    while (!cursors.empty()) {
        size_t m = 0;
        for (size_t k = 1; k < cursors.size(); ++k) {
            if (cursors[k] < cursors[m])
                m = k;
        }
        Cursor bound{INT64_MAX, UINT32_MAX, 0, 0}; // the next op of any other track
        for (size_t k = 0; k < cursors.size(); ++k) {
            if (k != m && cursors[k] < bound)
                bound = cursors[k];
        }
        Cursor& c = cursors[m];
        const GpuTrack& track = gpu[c.track];
        while (true) {
            visit(track, c.track, c.index);
            if (++c.index == c.last)
                break;
            c.start = track.start(c.index);
            if (!(c < bound))
                break;
        }
        if (c.index == c.last)
            cursors.erase(cursors.begin() + static_cast<std::ptrdiff_t>(m));
    }
}

// Walks the device's ops in start order and builds the busy union, the gaps and the idle split.
void analyzeDevice(const TraceStore& store, const DeviceTracks& device, const GapOptions& options,
                   std::vector<Cursor>& cursors, GpuGapAnalysis& out) {
    const auto& gpu = store.gpuTracks();
    cursors.clear();
    for (const uint32_t t : device.tracks) {
        const IndexRange r = gpu[t].startingIn(options.window.t0, options.window.t1);
        if (!r.empty())
            cursors.push_back({gpu[t].start(r.first), t, r.first, r.last});
    }
    if (cursors.empty())
        return;

    DeviceUtilization u;
    u.deviceId = device.deviceId;
    u.gapsBegin = out.gaps.size();
    bool open = false;
    int64_t busyStart = 0;
    int64_t busyEnd = 0;
    EventRef lastOp;
    mergeByStart(store, cursors, [&](const GpuTrack& track, uint32_t t, size_t i) {
        const int64_t s = track.start(i);
        const int64_t e = track.end(i);
        const EventRef op{t, static_cast<uint32_t>(i)};
        ++u.ops;
        accumulate(u.opTime, e - s);
        if (!open) {
            open = true;
            u.activeStart = s;
            busyStart = s;
            busyEnd = e;
            lastOp = op;
        } else if (s > busyEnd) {
            accumulate(u.busy, busyEnd - busyStart);
            const int64_t gap = s - busyEnd;
            if (gap > options.threshold) {
                GpuGap g;
                g.deviceId = device.deviceId;
                g.start = busyEnd;
                g.end = s;
                g.before = lastOp;
                g.after = op;
                g.afterLaunch = track.launch(i);
                if (g.afterLaunch.valid() &&
                    store.apiTracks()[g.afterLaunch.track].end(g.afterLaunch.index) > g.start)
                    g.cause = GapCause::HostWait;
                accumulate(g.cause == GapCause::HostWait ? u.hostWaitIdle : u.otherIdle, gap);
                u.longestGap = std::max(u.longestGap, gap);
                ++u.gaps;
                out.gaps.push_back(g);
            } else {
                accumulate(u.shortIdle, gap);
            }
            busyStart = s;
            busyEnd = e;
            lastOp = op;
        } else if (e > busyEnd) {
            busyEnd = e;
            lastOp = op;
        }
    });
    accumulate(u.busy, busyEnd - busyStart);
    u.activeEnd = busyEnd;
    u.gapsEnd = out.gaps.size();
    out.devices.push_back(u);
}

// Launch cost of kernel i of `track` (see the header); -1 when its launch is unknown.
int64_t launchCost(const TraceStore& store, const GpuTrack& track, size_t i) {
    const EventRef call = track.launch(i);
    if (!call.valid())
        return -1;
    const ApiTrack& api = store.apiTracks()[call.track];
    const size_t ops = std::max<size_t>(1, api.gpuOps(call.index).size());
    return api.duration(call.index) / static_cast<int64_t>(ops);
}

// The launch-bound rows per kernel name (perName) or only allKernels (every name in one bucket).
void launchBoundRows(const TraceStore& store, const TimeWindow& window, bool perName,
                     GpuGapAnalysis& out) {
    const auto& gpu = store.gpuTracks();
    // The kernels with a known launch starting in the window, track by track.
    const auto forEachCounted = [&](auto&& visit) {
        for (const GpuTrack& track : gpu) {
            const IndexRange r = track.startingIn(window.t0, window.t1);
            for (size_t i = r.first; i < r.last; ++i) {
                if (track.kind(i) == GpuOpKind::Kernel && track.launch(i).valid())
                    visit(track, i);
            }
        }
    };
    const auto bucket = [perName](NameId name) -> size_t { return perName ? name : 0; };
    // Counting sort by name: offsets per NameId, then one flat array filled per pass.
    std::vector<uint64_t> offset(perName ? store.strings().size() + 1 : 2, 0);
    uint64_t total = 0;
    forEachCounted([&](const GpuTrack& track, size_t i) {
        ++offset[bucket(track.name(i)) + 1];
        ++total;
    });
    if (total == 0)
        return;
    for (size_t n = 1; n < offset.size(); ++n)
        offset[n] += offset[n - 1];

    std::vector<LaunchBoundRow> rows;
    for (size_t n = 0; n + 1 < offset.size(); ++n) {
        if (offset[n + 1] > offset[n])
            rows.push_back({static_cast<NameId>(n), offset[n + 1] - offset[n]});
    }
    // Kernel durations on this thread, launch costs on the other: each fills its own flat array
    // (grouped by name) and the medians and totals of its own members of each row.
    const auto summarize = [&](bool launch) {
        const auto values = std::make_unique_for_overwrite<int64_t[]>(total);
        std::vector<uint64_t> cursor(offset.begin(), offset.end() - 1);
        forEachCounted([&](const GpuTrack& track, size_t i) {
            values[cursor[bucket(track.name(i))]++] =
                launch ? launchCost(store, track, i) : track.duration(i);
        });
        int64_t sumAll = 0;
        for (LaunchBoundRow& r : rows) {
            std::span<int64_t> seg(values.get() + offset[r.kernel], r.count);
            int64_t sum = 0;
            for (const int64_t v : seg)
                accumulate(sum, v);
            accumulate(sumAll, sum);
            (launch ? r.totalLaunch : r.totalKernel) = sum;
            (launch ? r.medianLaunch : r.medianKernel) =
                perName ? medianOf(seg) : 0; // one bucket: its median is the overall one below
        }
        (launch ? out.allKernels.totalLaunch : out.allKernels.totalKernel) = sumAll;
        (launch ? out.allKernels.medianLaunch : out.allKernels.medianKernel) =
            medianOf(std::span<int64_t>(values.get(), total));
    };
    runBoth([&] { summarize(false); }, [&] { summarize(true); });
    out.allKernels.count = total;
    std::sort(rows.begin(), rows.end(), [&](const LaunchBoundRow& a, const LaunchBoundRow& b) {
        if (a.totalKernel != b.totalKernel)
            return a.totalKernel > b.totalKernel;
        return store.text(a.kernel) < store.text(b.kernel);
    });
    if (perName)
        out.launchBound = std::move(rows);
}

Column textColumn(std::string name) {
    return {std::move(name), Column::Align::Left, 0};
}
Column intColumn(std::string name) {
    return {std::move(name), Column::Align::Right, 0};
}
Column realColumn(std::string name) {
    return {std::move(name), Column::Align::Right, 1};
}

std::string opName(const TraceStore& store, EventRef op) {
    if (!op.valid())
        return {};
    return store.text(store.gpuTracks()[op.track].name(op.index));
}

} // namespace

std::span<const GpuGap> GpuGapAnalysis::gapsOf(size_t deviceRow) const {
    const DeviceUtilization& d = devices[deviceRow];
    return std::span<const GpuGap>(gaps).subspan(d.gapsBegin, d.gapsEnd - d.gapsBegin);
}

GpuGapAnalysis analyzeGpuGaps(const TraceStore& store, const GapOptions& options) {
    GpuGapAnalysis out;
    out.threshold = options.threshold;
    // The devices' walks here, the launch-bound rows on a second thread (they fill different
    // members of `out`).
    runBoth(
        [&] {
            std::vector<Cursor> cursors;
            for (const DeviceTracks& device : tracksByDevice(store))
                analyzeDevice(store, device, options, cursors, out);
        },
        [&] { fillLaunchBound(store, options, out); });
    return out;
}

void fillLaunchBound(const TraceStore& store, const GapOptions& options, GpuGapAnalysis& analysis) {
    if (options.launchBound != GapOptions::LaunchBound::None)
        launchBoundRows(store, options.window,
                        options.launchBound == GapOptions::LaunchBound::PerName, analysis);
}

std::vector<RangeLaunchBound> launchBoundByRange(const TraceStore& store, TimeWindow window) {
    // Normalized range names, numbered in first-seen order.
    std::vector<int32_t> regionOf(store.strings().size(), -1);
    std::unordered_map<std::string, int32_t> regionIds;
    std::vector<RangeLaunchBound> regions;
    const auto region = [&](NameId name) {
        if (regionOf[name] < 0) {
            const std::string norm = normalizedRangeName(store.text(name));
            auto [it, inserted] = regionIds.emplace(norm, static_cast<int32_t>(regions.size()));
            if (inserted) {
                regions.emplace_back();
                regions.back().range = norm;
            }
            regionOf[name] = it->second;
        }
        return static_cast<size_t>(regionOf[name]);
    };
    // One flag per NVTX range: counted as an instance that launched a kernel.
    std::vector<size_t> flagBase(store.nvtxTracks().size() + 1, 0);
    for (size_t t = 0; t < store.nvtxTracks().size(); ++t)
        flagBase[t + 1] = flagBase[t] + store.nvtxTracks()[t].size();
    std::vector<uint8_t> counted(flagBase.back(), 0);

    // Walks each thread's calls in start order against a cursor per NVTX row of that thread (a
    // merge: rows are sorted and do not overlap), and calls visit(region, kernel, launch cost)
    // for every (range instance, kernel launched inside it) pair.
    std::vector<uint32_t> rows;
    std::vector<size_t> cursor;
    const auto walk = [&](auto&& visit) {
        for (const ThreadInfo& thread : store.threads()) {
            rows.clear();
            for (const uint32_t t : thread.nvtxTracks) {
                if (store.nvtxTracks()[t].style() != NvtxStyle::Mark)
                    rows.push_back(t);
            }
            if (rows.empty())
                continue;
            for (const uint32_t at : thread.apiTracks) {
                const ApiTrack& api = store.apiTracks()[at];
                cursor.assign(rows.size(), 0);
                for (size_t c = 0; c < api.size(); ++c) {
                    const auto ops = api.gpuOps(c);
                    if (ops.empty())
                        continue;
                    const int64_t t = api.start(c);
                    const int64_t cost = api.duration(c) / static_cast<int64_t>(ops.size());
                    for (size_t r = 0; r < rows.size(); ++r) {
                        const NvtxTrack& range = store.nvtxTracks()[rows[r]];
                        size_t& i = cursor[r];
                        while (i < range.size() && range.end(i) <= t)
                            ++i;
                        if (i == range.size() || range.start(i) > t || range.start(i) < window.t0 ||
                            range.start(i) >= window.t1)
                            continue;
                        const size_t reg = region(range.name(i));
                        for (const EventRef op : ops) {
                            const GpuTrack& g = store.gpuTracks()[op.track];
                            if (g.kind(op.index) == GpuOpKind::Kernel)
                                visit(reg, flagBase[rows[r]] + i, g.duration(op.index), cost);
                        }
                    }
                }
            }
        }
    };
    std::vector<uint64_t> offset;
    walk([&](size_t reg, size_t flag, int64_t, int64_t) {
        if (offset.size() < regions.size() + 1)
            offset.resize(regions.size() + 1, 0);
        ++offset[reg + 1];
        if (!counted[flag]) {
            counted[flag] = 1;
            ++regions[reg].instances;
        }
    });
    offset.resize(regions.size() + 1, 0);
    for (size_t r = 1; r < offset.size(); ++r)
        offset[r] += offset[r - 1];
    std::vector<int64_t> durations(offset.back());
    std::vector<int64_t> costs(offset.back());
    std::vector<uint64_t> fill(offset.begin(), offset.end() - 1);
    walk([&](size_t reg, size_t, int64_t duration, int64_t cost) {
        durations[fill[reg]] = duration;
        costs[fill[reg]++] = cost;
    });
    for (const bool launch : {false, true}) {
        std::vector<int64_t>& values = launch ? costs : durations;
        for (size_t r = 0; r < regions.size(); ++r) {
            LaunchBoundRow& row = regions[r].kernels;
            std::span<int64_t> seg(values.data() + offset[r], offset[r + 1] - offset[r]);
            int64_t sum = 0;
            for (const int64_t v : seg)
                accumulate(sum, v);
            row.count = seg.size();
            (launch ? row.totalLaunch : row.totalKernel) = sum;
            (launch ? row.medianLaunch : row.medianKernel) = medianOf(seg);
        }
    }
    std::erase_if(regions, [](const RangeLaunchBound& r) { return r.kernels.count == 0; });
    std::sort(regions.begin(), regions.end(),
              [](const RangeLaunchBound& a, const RangeLaunchBound& b) {
                  if (a.uncovered() != b.uncovered())
                      return a.uncovered() > b.uncovered();
                  return a.range < b.range;
              });
    return regions;
}

Table launchBoundRangeTable(const std::vector<RangeLaunchBound>& rows) {
    Table table({textColumn("Range"), intColumn("Range Instances"), intColumn("Kernel Instances"),
                 realColumn("Med Kernel (ns)"), realColumn("Med Launch (ns)"),
                 intColumn("Total Kernel (ns)"), intColumn("Total Launch (ns)"),
                 textColumn("Launch Bound")});
    for (const RangeLaunchBound& r : rows)
        table.addRow({r.range, static_cast<int64_t>(r.instances),
                      static_cast<int64_t>(r.kernels.count), r.kernels.medianKernel,
                      r.kernels.medianLaunch, r.kernels.totalKernel, r.kernels.totalLaunch,
                      std::string(r.kernels.launchBound() ? "yes" : "no")});
    return table;
}

Table utilizationTable(const TraceStore&, const GpuGapAnalysis& analysis) {
    Table table({textColumn("Device"), realColumn("Utilization (%)"), intColumn("Active (ns)"),
                 intColumn("Busy (ns)"), intColumn("Idle (ns)"), intColumn("Ops"),
                 intColumn("Gaps (> " + std::to_string(analysis.threshold) + " ns)"),
                 intColumn("Host-Wait Idle (ns)"), intColumn("Other Idle (ns)"),
                 intColumn("Short Idle (ns)"), intColumn("Longest Gap (ns)"),
                 realColumn("Med Kernel (ns)"), realColumn("Med Launch (ns)"),
                 textColumn("Launch Bound")});
    const LaunchBoundRow& k = analysis.allKernels;
    for (const DeviceUtilization& d : analysis.devices) {
        table.addRow({deviceLabel(d.deviceId), d.utilization() * 100, d.active(), d.busy, d.idle(),
                      static_cast<int64_t>(d.ops), static_cast<int64_t>(d.gaps), d.hostWaitIdle,
                      d.otherIdle, d.shortIdle, d.longestGap,
                      k.count ? Cell(k.medianKernel) : Cell(),
                      k.count ? Cell(k.medianLaunch) : Cell(),
                      k.count ? Cell(std::string(k.launchBound() ? "yes" : "no")) : Cell()});
    }
    return table;
}

Table gapSummaryTable(const TraceStore& store, const GpuGapAnalysis& analysis,
                      const StepAnalysis* steps) {
    std::vector<Column> columns = {realColumn("Time (%)"), intColumn("Total Time (ns)"),
                                   intColumn("Gaps"),      realColumn("Avg (ns)"),
                                   realColumn("Med (ns)"), intColumn("Min (ns)"),
                                   intColumn("Max (ns)"),  textColumn("Device"),
                                   textColumn("Cause"),    textColumn("Next Op")};
    if (steps)
        columns.insert(columns.begin(), textColumn("Phase"));
    Table table(std::move(columns));
    struct Row {
        double percent;
        DurationStats stats;
        std::string_view phase;
        uint32_t device;
        GapCause cause;
        std::string next;
    };
    std::vector<Row> rows;
    for (size_t d = 0; d < analysis.devices.size(); ++d) {
        const DeviceUtilization& dev = analysis.devices[d];
        // Group this device's gaps by (phase, cause, next op name id).
        std::map<std::tuple<std::string_view, GapCause, NameId>, std::vector<int64_t>> groups;
        for (const GpuGap& g : analysis.gapsOf(d)) {
            const NameId next = store.gpuTracks()[g.after.track].name(g.after.index);
            groups[{steps ? steps->phaseOf(g.start) : std::string_view(), g.cause, next}].push_back(
                g.duration());
        }
        for (auto& [key, durations] : groups) {
            Row r;
            r.stats = DurationStats::compute(durations);
            r.phase = std::get<0>(key);
            // Share of the device's active window, within the phase when there are phases.
            int64_t active = dev.active();
            if (steps) {
                const TimeWindow w = steps->phaseWindow(r.phase);
                active = std::max<int64_t>(0, std::min(dev.activeEnd, w.t1) -
                                                  std::max(dev.activeStart, w.t0));
            }
            r.percent = active > 0 ? 100.0 * static_cast<double>(r.stats.total) /
                                         static_cast<double>(active)
                                   : 0.0;
            r.device = dev.deviceId;
            r.cause = std::get<1>(key);
            r.next = store.text(std::get<2>(key));
            rows.push_back(std::move(r));
        }
    }
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
        const int pa = StepAnalysis::phaseRank(a.phase), pb = StepAnalysis::phaseRank(b.phase);
        return pa != pb ? pa < pb : a.stats.total > b.stats.total;
    });
    for (const Row& r : rows) {
        std::vector<Cell> cells = {
            r.percent,       r.stats.total,         static_cast<int64_t>(r.stats.count),
            r.stats.average, r.stats.median,        r.stats.minimum,
            r.stats.maximum, deviceLabel(r.device), std::string(gapCauseName(r.cause)),
            r.next};
        if (steps)
            cells.insert(cells.begin(), std::string(r.phase));
        table.addRow(std::move(cells));
    }
    return table;
}

Table gapTable(const TraceStore& store, const GpuGapAnalysis& analysis, const StepAnalysis* steps) {
    std::vector<Column> columns = {textColumn("Device"),
                                   intColumn("Start (ns)"),
                                   intColumn("End (ns)"),
                                   intColumn("Duration (ns)"),
                                   textColumn("Cause"),
                                   textColumn("Previous Op"),
                                   textColumn("Next Op"),
                                   intColumn("Next Launch Start (ns)"),
                                   intColumn("Next Launch End (ns)")};
    if (steps)
        columns.push_back(textColumn("Phase"));
    Table table(std::move(columns));
    for (const GpuGap& g : analysis.gaps) {
        Cell launchStart, launchEnd;
        if (g.afterLaunch.valid()) {
            const ApiTrack& api = store.apiTracks()[g.afterLaunch.track];
            launchStart = api.start(g.afterLaunch.index);
            launchEnd = api.end(g.afterLaunch.index);
        }
        std::vector<Cell> cells = {deviceLabel(g.deviceId),
                                   g.start,
                                   g.end,
                                   g.duration(),
                                   std::string(gapCauseName(g.cause)),
                                   opName(store, g.before),
                                   opName(store, g.after),
                                   launchStart,
                                   launchEnd};
        if (steps)
            cells.emplace_back(std::string(steps->phaseOf(g.start)));
        table.addRow(std::move(cells));
    }
    return table;
}

Table launchBoundTable(const TraceStore& store, const GpuGapAnalysis& analysis) {
    Table table({intColumn("Kernel Instances"), realColumn("Med Kernel (ns)"),
                 realColumn("Med Launch (ns)"), intColumn("Total Kernel (ns)"),
                 intColumn("Total Launch (ns)"), textColumn("Launch Bound"), textColumn("Name")});
    for (const LaunchBoundRow& r : analysis.launchBound)
        table.addRow({static_cast<int64_t>(r.count), r.medianKernel, r.medianLaunch, r.totalKernel,
                      r.totalLaunch, std::string(r.launchBound() ? "yes" : "no"),
                      store.text(r.kernel)});
    return table;
}

Table utilizationByPhase(const TraceStore& store, const StepAnalysis& steps,
                         const GpuGapAnalysis& whole) {
    std::vector<std::string_view> phases = {"whole trace"};
    if (!steps.empty()) {
        phases.push_back("start-up");
        if (steps.warmupSteps() > 0)
            phases.push_back("warm-up");
        phases.push_back("steady state");
        phases.push_back("teardown");
    }
    Table out;
    for (const std::string_view phase : phases) {
        GapOptions options;
        options.window = steps.phaseWindow(phase);
        options.launchBound = GapOptions::LaunchBound::AllKernels; // the table's last columns
        const Table t = utilizationTable(
            store, phase == phases.front() ? whole : analyzeGpuGaps(store, options));
        if (out.columnCount() == 0) {
            std::vector<Column> columns = {textColumn("Phase")};
            columns.insert(columns.end(), t.columns().begin(), t.columns().end());
            out = Table(std::move(columns));
        }
        for (const auto& row : t.rows()) {
            std::vector<Cell> cells = {std::string(phase)};
            cells.insert(cells.end(), row.begin(), row.end());
            out.addRow(std::move(cells));
        }
    }
    return out;
}

} // namespace warpline::model
