#include "summaries.h"

#include "analysishelpers.h"
#include "occupancy.h"
#include "saturating.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <unordered_map>

namespace warpline::model {

namespace {

// Groups values by a dense key in two passes (count, then place), so each group's values are
// contiguous and DurationStats can take its median in place. forEach(emit) must call
// emit(key, value) for the same sequence both times.
template <typename ForEach>
std::vector<DurationStats> groupStats(size_t keyCount, const ForEach& forEach) {
    std::vector<size_t> offset(keyCount + 1, 0);
    forEach([&](size_t key, int64_t) { ++offset[key + 1]; });
    std::partial_sum(offset.begin(), offset.end(), offset.begin());
    std::vector<int64_t> values(offset.back());
    std::vector<size_t> cursor(offset.begin(), offset.end() - 1);
    forEach([&](size_t key, int64_t value) { values[cursor[key]++] = value; });
    std::vector<DurationStats> stats(keyCount);
    for (size_t k = 0; k < keyCount; ++k) {
        if (offset[k + 1] > offset[k])
            stats[k] = DurationStats::compute(
                std::span<int64_t>(values.data() + offset[k], offset[k + 1] - offset[k]));
    }
    return stats;
}

double percentOf(int64_t part, int64_t whole) {
    return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

// Total time descending, then display name ascending: a stable, readable order.
template <typename Row, typename Total, typename Name>
void sortRows(std::vector<Row>& rows, const Total& total, const Name& name) {
    std::sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
        const int64_t ta = total(a);
        const int64_t tb = total(b);
        if (ta != tb)
            return ta > tb;
        return name(a) < name(b);
    });
}

std::vector<Column> statsColumns(const char* countName) {
    using A = Column::Align;
    return {{"Time (%)", A::Right, 1}, {"Total Time (ns)", A::Right, 0}, {countName, A::Right, 0},
            {"Avg (ns)", A::Right, 1}, {"Med (ns)", A::Right, 1},        {"Min (ns)", A::Right, 0},
            {"Max (ns)", A::Right, 0}, {"StdDev (ns)", A::Right, 1}};
}

void appendStats(std::vector<Cell>& cells, double percent, const DurationStats& s) {
    cells.emplace_back(percent);
    cells.emplace_back(s.total);
    cells.emplace_back(static_cast<int64_t>(s.count));
    cells.emplace_back(s.average);
    cells.emplace_back(s.median);
    cells.emplace_back(s.minimum);
    cells.emplace_back(s.maximum);
    cells.emplace_back(s.stddev);
}

std::string xyz(const std::array<int32_t, 3>& v) {
    return std::to_string(v[0]) + " " + std::to_string(v[1]) + " " + std::to_string(v[2]);
}

const char* styleName(NvtxStyle style) {
    switch (style) {
    case NvtxStyle::PushPop:
        return "PushPop";
    case NvtxStyle::StartEnd:
        return "StartEnd";
    case NvtxStyle::Mark:
        return "Mark";
    }
    return "";
}

std::string rangeLabel(const TraceStore& store, NameId domain, NameId name) {
    if (domain == kNoName)
        return store.text(name);
    return store.text(domain) + ":" + store.text(name);
}

// A summary row's range: "domain:text", or for a numbered row "domain:text N" ("step N").
std::string nvtxRowLabel(const TraceStore& store, const NvtxSummaryRow& row) {
    if (!row.numbered)
        return rangeLabel(store, row.domain, row.name);
    const std::string text = normalizedRangeName(store.text(row.name)) + " N";
    return row.domain == kNoName ? text : store.text(row.domain) + ":" + text;
}

// (domain, text, style) of an NVTX range, packed for hashing.
uint64_t rangeKey(NameId domain, NameId name, NvtxStyle style) {
    return (static_cast<uint64_t>(domain) << 34) | (static_cast<uint64_t>(name) << 2) |
           static_cast<uint64_t>(style);
}

} // namespace

// --- kernels ------------------------------------------------------------------------------------

std::vector<KernelSummaryRow> kernelSummary(const TraceStore& store, KernelGrouping grouping,
                                            TimeWindow window, KernelNaming naming) {
    // Kernels are grouped through their launch configuration: a config determines the name (and
    // grid/block), and there are few configs, so each kernel costs one array lookup.
    const auto& configs = store.kernelConfigs();
    std::vector<uint32_t> groupOfConfig(configs.size());
    std::vector<KernelSummaryRow> rows;
    {
        std::map<std::tuple<NameId, std::array<int32_t, 3>, std::array<int32_t, 3>>, uint32_t>
            groups;
        for (size_t c = 0; c < configs.size(); ++c) {
            KernelSummaryRow row;
            const NameId other = naming == KernelNaming::Base      ? configs[c].shortName
                                 : naming == KernelNaming::Mangled ? configs[c].mangledName
                                                                   : kNoName;
            row.name =
                other != kNoName && !store.text(other).empty() ? other : configs[c].demangledName;
            if (grouping == KernelGrouping::NameAndLaunchConfig) {
                row.grid = {configs[c].gridX, configs[c].gridY, configs[c].gridZ};
                row.block = {configs[c].blockX, configs[c].blockY, configs[c].blockZ};
            }
            const auto [it, inserted] = groups.emplace(
                std::make_tuple(row.name, row.grid, row.block), static_cast<uint32_t>(rows.size()));
            if (inserted)
                rows.push_back(row);
            groupOfConfig[c] = it->second;
        }
    }
    std::vector<bool> configUsed(configs.size(), false);
    const auto stats = groupStats(rows.size(), [&](const auto& emit) {
        for (const GpuTrack& t : store.gpuTracks()) {
            const IndexRange r = t.startingIn(window.t0, window.t1);
            for (size_t i = r.first; i < r.last; ++i) {
                if (t.kind(i) == GpuOpKind::Kernel) {
                    configUsed[t.detail(i)] = true;
                    emit(groupOfConfig[t.detail(i)], t.duration(i));
                }
            }
        }
    });
    int64_t total = 0;
    for (size_t g = 0; g < rows.size(); ++g) {
        rows[g].stats = stats[g];
        accumulate(total, stats[g].total);
    }
    for (size_t c = 0; c < configs.size(); ++c) {
        if (!configUsed[c])
            continue;
        const Occupancy o = theoreticalOccupancy(store, configs[c]);
        if (!o.known)
            continue;
        KernelSummaryRow& row = rows[groupOfConfig[c]];
        if (!row.occupancyKnown || o.percent < row.occupancyMin) {
            row.occupancyMin = o.percent;
            row.occupancyLimiters = o.limiters;
        } else if (o.percent == row.occupancyMin) {
            row.occupancyLimiters |= o.limiters;
        }
        row.occupancyMax = row.occupancyKnown ? std::max(row.occupancyMax, o.percent) : o.percent;
        row.occupancyKnown = true;
    }
    std::erase_if(rows, [](const KernelSummaryRow& r) { return r.stats.count == 0; });
    for (KernelSummaryRow& r : rows)
        r.timePercent = percentOf(r.stats.total, total);
    sortRows(
        rows, [](const KernelSummaryRow& r) { return r.stats.total; },
        [&](const KernelSummaryRow& r) -> const std::string& { return store.text(r.name); });
    return rows;
}

Table kernelSummaryTable(const TraceStore& store, const std::vector<KernelSummaryRow>& rows,
                         KernelGrouping grouping) {
    std::vector<Column> columns = statsColumns("Instances");
    const bool byConfig = grouping == KernelGrouping::NameAndLaunchConfig;
    if (byConfig) {
        columns.push_back({"GridXYZ", Column::Align::Right, 0});
        columns.push_back({"BlockXYZ", Column::Align::Right, 0});
    }
    columns.push_back({"Name", Column::Align::Left, 0});
    columns.push_back({"Theoretical Occupancy", Column::Align::Right, 0});
    columns.push_back({"Occupancy Limiter", Column::Align::Left, 0});
    Table table(std::move(columns));
    for (const KernelSummaryRow& r : rows) {
        std::vector<Cell> cells;
        appendStats(cells, r.timePercent, r.stats);
        if (byConfig) {
            cells.emplace_back(xyz(r.grid));
            cells.emplace_back(xyz(r.block));
        }
        cells.emplace_back(store.text(r.name));
        if (r.occupancyKnown) {
            cells.emplace_back(occupancyRangeText(r.occupancyMin, r.occupancyMax));
            cells.emplace_back(occupancyLimiterText(r.occupancyLimiters));
        } else {
            cells.emplace_back(std::string("unknown"));
            cells.emplace_back(std::monostate{});
        }
        table.addRow(std::move(cells));
    }
    return table;
}

// --- API ----------------------------------------------------------------------------------------

std::vector<ApiSummaryRow> apiSummary(const TraceStore& store, TimeWindow window) {
    // API names are few; map each name id that occurs to a dense group.
    std::vector<uint32_t> groupOfName(store.strings().size(), UINT32_MAX);
    std::vector<ApiSummaryRow> rows;
    for (const ApiTrack& t : store.apiTracks()) {
        const IndexRange r = t.startingIn(window.t0, window.t1);
        for (size_t i = r.first; i < r.last; ++i) {
            uint32_t& g = groupOfName[t.name(i)];
            if (g == UINT32_MAX) {
                g = static_cast<uint32_t>(rows.size());
                rows.push_back(ApiSummaryRow{t.name(i), 0, {}});
            }
        }
    }
    const auto stats = groupStats(rows.size(), [&](const auto& emit) {
        for (const ApiTrack& t : store.apiTracks()) {
            const IndexRange r = t.startingIn(window.t0, window.t1);
            for (size_t i = r.first; i < r.last; ++i)
                emit(groupOfName[t.name(i)], t.duration(i));
        }
    });
    int64_t total = 0;
    for (size_t g = 0; g < rows.size(); ++g) {
        rows[g].stats = stats[g];
        accumulate(total, stats[g].total);
    }
    for (ApiSummaryRow& r : rows)
        r.timePercent = percentOf(r.stats.total, total);
    sortRows(
        rows, [](const ApiSummaryRow& r) { return r.stats.total; },
        [&](const ApiSummaryRow& r) -> const std::string& { return store.text(r.name); });
    return rows;
}

Table apiSummaryTable(const TraceStore& store, const std::vector<ApiSummaryRow>& rows) {
    std::vector<Column> columns = statsColumns("Num Calls");
    columns.push_back({"Name", Column::Align::Left, 0});
    Table table(std::move(columns));
    for (const ApiSummaryRow& r : rows) {
        std::vector<Cell> cells;
        appendStats(cells, r.timePercent, r.stats);
        cells.emplace_back(store.text(r.name));
        table.addRow(std::move(cells));
    }
    return table;
}

// --- NVTX ---------------------------------------------------------------------------------------

std::vector<NvtxSummaryRow> nvtxSummary(const TraceStore& store, TimeWindow window) {
    return nvtxSummary(store, NvtxSummaryOptions{window});
}

std::vector<NvtxSummaryRow> nvtxSummary(const TraceStore& store,
                                        const NvtxSummaryOptions& options) {
    const TimeWindow& window = options.window;
    // Numbered: each name id stands for the first name id with the same normalized text.
    std::vector<NameId> canonical;
    std::unordered_map<std::string, NameId> firstOfNormalized;
    const auto groupName = [&](NameId name) {
        if (options.grouping == NvtxGrouping::Name)
            return name;
        if (canonical.empty())
            canonical.assign(store.strings().size(), kNoName);
        NameId& c = canonical[name];
        if (c == kNoName) {
            const std::string& text = store.text(name);
            std::string normalized = normalizedRangeName(text);
            c = normalized == text
                    ? name
                    : firstOfNormalized.emplace(std::move(normalized), name).first->second;
        }
        return c;
    };
    std::unordered_map<uint64_t, uint32_t> groupOfKey;
    std::vector<NvtxSummaryRow> rows;
    // Group index per range, computed once; the two passes of groupStats then only read it.
    std::vector<std::vector<uint32_t>> groupOfRange(store.nvtxTracks().size());
    for (size_t ti = 0; ti < store.nvtxTracks().size(); ++ti) {
        const NvtxTrack& t = store.nvtxTracks()[ti];
        if (t.style() == NvtxStyle::Mark)
            continue;
        const IndexRange r = t.startingIn(window.t0, window.t1);
        auto& groups = groupOfRange[ti];
        groups.reserve(r.size());
        for (size_t i = r.first; i < r.last; ++i) {
            const NameId name = groupName(t.name(i));
            const uint64_t key = rangeKey(t.domain(i), name, t.style());
            const auto [it, inserted] = groupOfKey.emplace(key, static_cast<uint32_t>(rows.size()));
            if (inserted) {
                NvtxSummaryRow row;
                row.name = name;
                row.domain = t.domain(i);
                row.style = t.style();
                rows.push_back(std::move(row));
                rows.back().numbered = options.grouping == NvtxGrouping::Numbered &&
                                       normalizedRangeName(store.text(name)) != store.text(name);
            }
            if (options.instances)
                rows[it->second].instances.push_back(
                    {static_cast<uint32_t>(ti), static_cast<uint32_t>(i)});
            groups.push_back(it->second);
        }
    }
    const auto stats = groupStats(rows.size(), [&](const auto& emit) {
        for (size_t ti = 0; ti < store.nvtxTracks().size(); ++ti) {
            const NvtxTrack& t = store.nvtxTracks()[ti];
            if (t.style() == NvtxStyle::Mark)
                continue;
            const IndexRange r = t.startingIn(window.t0, window.t1);
            for (size_t i = r.first; i < r.last; ++i)
                emit(groupOfRange[ti][i - r.first], t.duration(i));
        }
    });
    int64_t total = 0;
    for (size_t g = 0; g < rows.size(); ++g) {
        rows[g].stats = stats[g];
        accumulate(total, stats[g].total);
    }
    for (NvtxSummaryRow& r : rows) {
        r.timePercent = percentOf(r.stats.total, total);
        std::sort(r.instances.begin(), r.instances.end(), [&](EventRef a, EventRef b) {
            return store.nvtxTracks()[a.track].start(a.index) <
                   store.nvtxTracks()[b.track].start(b.index);
        });
    }
    sortRows(
        rows, [](const NvtxSummaryRow& r) { return r.stats.total; },
        [&](const NvtxSummaryRow& r) { return std::make_tuple(nvtxRowLabel(store, r), r.style); });
    return rows;
}

Table nvtxSummaryTable(const TraceStore& store, const std::vector<NvtxSummaryRow>& rows) {
    std::vector<Column> columns = statsColumns("Instances");
    columns.push_back({"Style", Column::Align::Left, 0});
    columns.push_back({"Range", Column::Align::Left, 0});
    Table table(std::move(columns));
    for (const NvtxSummaryRow& r : rows) {
        std::vector<Cell> cells;
        appendStats(cells, r.timePercent, r.stats);
        cells.emplace_back(std::string(styleName(r.style)));
        cells.emplace_back(nvtxRowLabel(store, r));
        table.addRow(std::move(cells));
    }
    return table;
}

// --- kernels per NVTX range ---------------------------------------------------------------------

std::vector<NvtxKernelRow> nvtxKernelSummary(const TraceStore& store, TimeWindow window) {
    struct Group {
        NvtxKernelRow row;
        std::vector<int64_t> durations;
        uint64_t lastInstance = UINT64_MAX; // stamp: the range instance that last counted here
    };
    std::vector<Group> groups;
    // Range key -> the first of its groups in `groups`, its kernel names in keyKernels; a key's
    // groups are looked up by kernel name through `groupOfKernel` while its instances are walked.
    std::unordered_map<uint64_t, std::vector<uint32_t>> keyGroups;
    constexpr uint32_t kNoGroup = UINT32_MAX;
    std::vector<uint32_t> groupOfKernel(store.strings().size(), kNoGroup);
    uint64_t instanceStamp = 0;
    std::vector<size_t> hints; // per API track of the thread: where the last search ended

    struct Instance {
        int64_t start;
        int64_t end;
    };
    for (const ThreadInfo& thread : store.threads()) {
        if (thread.apiTracks.empty())
            continue;
        // Instances of each range key on this thread, from all its tracks.
        std::map<uint64_t, std::vector<Instance>> instances;
        for (const uint32_t ti : thread.nvtxTracks) {
            const NvtxTrack& t = store.nvtxTracks()[ti];
            if (t.style() == NvtxStyle::Mark)
                continue;
            const IndexRange r = t.startingIn(window.t0, window.t1);
            for (size_t i = r.first; i < r.last; ++i)
                instances[rangeKey(t.domain(i), t.name(i), t.style())].push_back(
                    {t.start(i), t.end(i)});
        }
        // Calls whose start lies in [a, b), on every API track of the thread. A key's instances
        // come in start order, so each search goes on from where the last one ended.
        const auto forCallsIn = [&](int64_t a, int64_t b, const auto& visit) {
            for (size_t k = 0; k < thread.apiTracks.size(); ++k) {
                const ApiTrack& t = store.apiTracks()[thread.apiTracks[k]];
                size_t i = lowerBoundFrom(t.starts(), hints[k], a);
                hints[k] = i;
                for (; i < t.size() && t.start(i) < b; ++i) {
                    for (const EventRef& op : t.gpuOps(i)) {
                        const GpuTrack& g = store.gpuTracks()[op.track];
                        if (g.kind(op.index) == GpuOpKind::Kernel)
                            visit(g, op.index);
                    }
                }
            }
        };
        for (auto& [key, list] : instances) {
            std::vector<uint32_t>& keyGroup = keyGroups[key];
            for (const uint32_t g : keyGroup) // groups of this key from earlier threads
                groupOfKernel[groups[g].row.kernel] = g;
            hints.assign(thread.apiTracks.size(), 0);
            const auto style = static_cast<NvtxStyle>(key & 3);
            const auto domain = static_cast<NameId>(key >> 34);
            const auto name = static_cast<NameId>((key >> 2) & 0xFFFFFFFFu);
            const auto group = [&](NameId kernel) -> Group& {
                if (const uint32_t g = groupOfKernel[kernel]; g != kNoGroup)
                    return groups[g];
                groupOfKernel[kernel] = static_cast<uint32_t>(groups.size());
                keyGroup.push_back(static_cast<uint32_t>(groups.size()));
                Group& g = groups.emplace_back();
                g.row.range = name;
                g.row.domain = domain;
                g.row.style = style;
                g.row.kernel = kernel;
                return g;
            };
            const auto countInstance = [&](Group& grp) {
                if (grp.lastInstance != instanceStamp) {
                    grp.lastInstance = instanceStamp;
                    ++grp.row.rangeInstances;
                }
            };
            // Kernel durations over the union of overlapping instances, so a kernel inside nested
            // or overlapping same-named ranges counts once; range instances per kernel name over
            // each instance. A lone instance (the usual case) needs one scan for both.
            std::sort(list.begin(), list.end(),
                      [](const Instance& a, const Instance& b) { return a.start < b.start; });
            size_t i = 0;
            while (i < list.size()) {
                const int64_t a = list[i].start;
                int64_t b = list[i].end;
                size_t j = i + 1;
                while (j < list.size() && list[j].start < b) {
                    b = std::max(b, list[j].end);
                    ++j;
                }
                const bool lone = j == i + 1;
                ++instanceStamp;
                forCallsIn(a, b, [&](const GpuTrack& g, size_t k) {
                    Group& grp = group(g.name(k));
                    grp.durations.push_back(g.duration(k));
                    if (lone)
                        countInstance(grp);
                });
                for (size_t n = i; !lone && n < j; ++n) {
                    ++instanceStamp;
                    forCallsIn(list[n].start, list[n].end, [&](const GpuTrack& g, size_t k) {
                        countInstance(group(g.name(k)));
                    });
                }
                i = j;
            }
            for (const uint32_t g : keyGroup)
                groupOfKernel[groups[g].row.kernel] = kNoGroup;
        }
    }
    // The groups' statistics, half of them on a second thread.
    const auto computeStats = [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) {
            groups[i].row.stats = DurationStats::compute(groups[i].durations);
            std::vector<int64_t>().swap(groups[i].durations);
        }
    };
    const size_t half = groups.size() / 2;
    runBoth([&] { computeStats(0, half); }, [&] { computeStats(half, groups.size()); });
    std::vector<NvtxKernelRow> rows;
    rows.reserve(groups.size());
    for (const Group& g : groups)
        rows.push_back(g.row);
    std::sort(rows.begin(), rows.end(), [&](const NvtxKernelRow& x, const NvtxKernelRow& y) {
        const std::string lx = rangeLabel(store, x.domain, x.range);
        const std::string ly = rangeLabel(store, y.domain, y.range);
        if (lx != ly)
            return lx < ly;
        if (x.style != y.style)
            return x.style < y.style;
        if (x.stats.total != y.stats.total)
            return x.stats.total > y.stats.total;
        return store.text(x.kernel) < store.text(y.kernel);
    });
    return rows;
}

Table nvtxKernelSummaryTable(const TraceStore& store, const std::vector<NvtxKernelRow>& rows) {
    using A = Column::Align;
    Table table({{"Range", A::Left, 0},
                 {"Style", A::Left, 0},
                 {"Range Instances", A::Right, 0},
                 {"Kernel Instances", A::Right, 0},
                 {"Total Time (ns)", A::Right, 0},
                 {"Avg (ns)", A::Right, 1},
                 {"Med (ns)", A::Right, 1},
                 {"Min (ns)", A::Right, 0},
                 {"Max (ns)", A::Right, 0},
                 {"StdDev (ns)", A::Right, 1},
                 {"Kernel Name", A::Left, 0}});
    for (const NvtxKernelRow& r : rows) {
        table.addRow({rangeLabel(store, r.domain, r.range), std::string(styleName(r.style)),
                      static_cast<int64_t>(r.rangeInstances), static_cast<int64_t>(r.stats.count),
                      r.stats.total, r.stats.average, r.stats.median, r.stats.minimum,
                      r.stats.maximum, r.stats.stddev, store.text(r.kernel)});
    }
    return table;
}

// --- memory operations --------------------------------------------------------------------------

std::vector<MemOpSummaryRow> memOpSummary(const TraceStore& store, TimeWindow window) {
    std::vector<uint32_t> groupOfName(store.strings().size(), UINT32_MAX);
    std::vector<MemOpSummaryRow> rows;
    for (const GpuTrack& t : store.gpuTracks()) {
        const IndexRange r = t.startingIn(window.t0, window.t1);
        for (size_t i = r.first; i < r.last; ++i) {
            if (t.kind(i) == GpuOpKind::Kernel)
                continue;
            uint32_t& g = groupOfName[t.name(i)];
            if (g == UINT32_MAX) {
                g = static_cast<uint32_t>(rows.size());
                rows.push_back(MemOpSummaryRow{t.name(i), 0, {}, {}});
            }
        }
    }
    const auto each = [&](bool bytes) {
        return [&, bytes](const auto& emit) {
            for (const GpuTrack& t : store.gpuTracks()) {
                const IndexRange r = t.startingIn(window.t0, window.t1);
                for (size_t i = r.first; i < r.last; ++i) {
                    if (t.kind(i) == GpuOpKind::Kernel)
                        continue;
                    emit(groupOfName[t.name(i)],
                         bytes ? static_cast<int64_t>(store.memOps()[t.detail(i)].bytes)
                               : t.duration(i));
                }
            }
        };
    };
    const auto time = groupStats(rows.size(), each(false));
    const auto size = groupStats(rows.size(), each(true));
    int64_t total = 0;
    for (size_t g = 0; g < rows.size(); ++g) {
        rows[g].time = time[g];
        rows[g].size = size[g];
        accumulate(total, time[g].total);
    }
    for (MemOpSummaryRow& r : rows)
        r.timePercent = percentOf(r.time.total, total);
    sortRows(
        rows, [](const MemOpSummaryRow& r) { return r.time.total; },
        [&](const MemOpSummaryRow& r) -> const std::string& { return store.text(r.operation); });
    return rows;
}

Table memTimeSummaryTable(const TraceStore& store, const std::vector<MemOpSummaryRow>& rows) {
    std::vector<Column> columns = statsColumns("Count");
    columns.push_back({"Operation", Column::Align::Left, 0});
    Table table(std::move(columns));
    for (const MemOpSummaryRow& r : rows) {
        std::vector<Cell> cells;
        appendStats(cells, r.timePercent, r.time);
        cells.emplace_back(store.text(r.operation));
        table.addRow(std::move(cells));
    }
    return table;
}

Table memSizeSummaryTable(const TraceStore& store, const std::vector<MemOpSummaryRow>& rows) {
    using A = Column::Align;
    Table table({{"Total (MB)", A::Right, 3},
                 {"Count", A::Right, 0},
                 {"Avg (MB)", A::Right, 3},
                 {"Med (MB)", A::Right, 3},
                 {"Min (MB)", A::Right, 3},
                 {"Max (MB)", A::Right, 3},
                 {"StdDev (MB)", A::Right, 3},
                 {"Operation", A::Left, 0}});
    std::vector<const MemOpSummaryRow*> order;
    for (const MemOpSummaryRow& r : rows)
        order.push_back(&r);
    std::stable_sort(order.begin(), order.end(),
                     [](const MemOpSummaryRow* a, const MemOpSummaryRow* b) {
                         return a->size.total > b->size.total;
                     });
    constexpr double kMB = 1e6;
    for (const MemOpSummaryRow* r : order) {
        const DurationStats& s = r->size;
        table.addRow({static_cast<double>(s.total) / kMB, static_cast<int64_t>(s.count),
                      s.average / kMB, s.median / kMB, static_cast<double>(s.minimum) / kMB,
                      static_cast<double>(s.maximum) / kMB, s.stddev / kMB,
                      store.text(r->operation)});
    }
    return table;
}

} // namespace warpline::model
