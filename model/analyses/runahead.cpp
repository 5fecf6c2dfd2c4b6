#include "runahead.h"

#include "analysishelpers.h"

#include <algorithm>
#include <memory>

namespace warpline::model {

namespace {

bool inWindow(int64_t t, const TimeWindow& w) {
    return t >= w.t0 && t < w.t1;
}

// True when `op` is the first of the call's GPU ops that runs on `streamIndex` (the call's ops are
// in start order, so that op is the stream's launch of this call).
bool isFirstOpOnStream(const TraceStore& store, EventRef call, EventRef op, uint32_t streamIndex) {
    for (const EventRef other : store.gpuOpsOf(call)) {
        if (store.gpuTracks()[other.track].streamIndex() == streamIndex)
            return other == op;
    }
    return false;
}

// The launches of GPU track `t` (of stream `si`) whose call starts in `window`, one at a time in
// op order.
class TrackLaunches {
public:
    TrackLaunches(const TraceStore& store, uint32_t t, uint32_t si, const TimeWindow& window)
        : m_store(store), m_track(store.gpuTracks()[t]), m_t(t), m_si(si), m_window(window) {}

    bool next(LaunchLag& out) {
        while (m_i < m_track.size()) {
            const size_t i = m_i++;
            const EventRef call = m_track.launch(i);
            if (!call.valid())
                continue;
            const ApiTrack& api = m_store.apiTracks()[call.track];
            const int64_t callStart = api.start(call.index);
            if (!inWindow(callStart, m_window))
                continue;
            const EventRef op{m_t, static_cast<uint32_t>(i)};
            // One op (an ordinary launch): it is the launch; otherwise the first on this stream.
            if (m_store.gpuOpsOf(call).size() != 1 && !isFirstOpOnStream(m_store, call, op, m_si))
                continue;
            out = LaunchLag{call, op, callStart, api.end(call.index), m_track.start(i)};
            return true;
        }
        return false;
    }

private:
    const TraceStore& m_store;
    const GpuTrack& m_track;
    uint32_t m_t;
    uint32_t m_si;
    TimeWindow m_window;
    size_t m_i = 0;
};

// Calls fn(const LaunchLag&) for every launch of stream `si` whose call starts in `window`, track
// by track in the stream's order, each track's in op order (not merged by GPU start).
template <class Fn>
void forEachLaunch(const TraceStore& store, uint32_t si, const TimeWindow& window, Fn&& fn) {
    for (const uint32_t t : store.streams()[si].gpuTracks) {
        TrackLaunches launches(store, t, si, window);
        LaunchLag l;
        while (launches.next(l))
            fn(l);
    }
}

// Up to `capacity` values, written in order. Unlike a reserved vector's push_back, a write is a
// store and an increment; unlike a resized vector, no page is touched before it is written.
class Scratch {
public:
    explicit Scratch(size_t capacity)
        : m_data(std::make_unique_for_overwrite<int64_t[]>(capacity)), m_capacity(capacity) {}
    void push(int64_t v) {
        if (m_size < m_capacity) // always, as the capacity counts every GPU op
            m_data[m_size++] = v;
    }
    void clear() { m_size = 0; }
    size_t size() const { return m_size; }
    std::span<int64_t> all() { return {m_data.get(), m_size}; }
    std::span<int64_t> from(size_t begin) { return all().subspan(begin); }
    std::span<int64_t> part(size_t begin, size_t end) { return all().subspan(begin, end - begin); }

private:
    std::unique_ptr<int64_t[]> m_data;
    size_t m_capacity = 0;
    size_t m_size = 0;
};

// Whether `a` is the better "largest lag" launch than `b` seen before it in walk order.
bool lagsMore(const LaunchLag& a, const LaunchLag& b) {
    return a.lag() > b.lag() || (a.lag() == b.lag() && a.gpuStart < b.gpuStart);
}

// Builds the depth steps from the sorted call ends and GPU starts of a stream's queued launches
// (those with gpuStart > callEnd) into `steps` (when non-null); fills the depth fields of `row`.
// nextStart() gives the starts in order, then INT64_MAX. Nothing happens at INT64_MAX itself.
template <typename NextStart>
void walkDepth(std::span<const int64_t> ends, NextStart&& nextStart, std::vector<DepthStep>* steps,
               StreamRunAhead& row) {
    if (steps)
        row.stepsBegin = steps->size();
    int32_t depth = 0;
    int32_t last = 0; // the depth of the last step (0 before the first)
    bool any = false;
    size_t up = 0; // next +1 (into ends)
    int64_t down = nextStart();
    bool drained = true;
    while (true) {
        const int64_t tUp = up < ends.size() ? ends[up] : INT64_MAX;
        const int64_t t = std::min(tUp, down);
        if (t == INT64_MAX)
            break;
        while (up < ends.size() && ends[up] == t) {
            ++depth;
            ++up;
        }
        while (down == t) {
            --depth;
            down = nextStart();
        }
        if (any && last == depth)
            continue;
        any = true;
        last = depth;
        if (steps)
            steps->push_back({t, depth});
        if (depth > row.maxDepth) {
            row.maxDepth = depth;
            row.maxDepthTime = t;
            drained = false;
        } else if (depth == 0 && !drained) {
            row.drainTime = t;
            drained = true;
        }
    }
    if (steps)
        row.stepsEnd = steps->size();
}

// nextStart for walkDepth over a sorted array.
auto startsOf(std::span<const int64_t> starts) {
    return
        [starts, i = size_t(0)]() mutable { return i < starts.size() ? starts[i++] : INT64_MAX; };
}

} // namespace

std::span<const DepthStep> RunAheadAnalysis::depthSteps(size_t streamRow) const {
    const StreamRunAhead& s = streams[streamRow];
    return std::span<const DepthStep>(steps).subspan(s.stepsBegin, s.stepsEnd - s.stepsBegin);
}

int32_t RunAheadAnalysis::depthAt(size_t streamRow, int64_t t) const {
    const auto s = depthSteps(streamRow);
    const auto it = std::upper_bound(
        s.begin(), s.end(), t, [](int64_t time, const DepthStep& d) { return time < d.time; });
    return it == s.begin() ? 0 : std::prev(it)->depth;
}

std::ptrdiff_t RunAheadAnalysis::rowOfStream(uint32_t streamIndex) const {
    const auto it =
        std::lower_bound(streams.begin(), streams.end(), streamIndex,
                         [](const StreamRunAhead& s, uint32_t idx) { return s.streamIndex < idx; });
    if (it == streams.end() || it->streamIndex != streamIndex)
        return -1;
    return it - streams.begin();
}

RunAheadAnalysis analyzeRunAhead(const TraceStore& store, TimeWindow window,
                                 RunAheadDetail detail) {
    RunAheadAnalysis result;
    result.window = window;
    const bool delaysToo = detail != RunAheadDetail::OverallLags;
    // Walks over every launch, each keeping one value per launch, grouped by stream, two at a
    // time: the lags on this thread; on the other, the delays (the whole of each array is the
    // multiset over all streams, whatever order the per-stream selections leave) or, when no
    // delay is asked for, the queued launches' GPU starts already. Upper bounds; untouched
    // capacity costs no memory until it is written.
    size_t most = 0; // launches <= GPU ops
    for (const GpuTrack& track : store.gpuTracks())
        most += track.size();
    const size_t streamCount = store.streams().size();
    Scratch lags(most);
    Scratch delays(most);
    struct DelayStats {
        uint64_t count = 0;
        int64_t maxDelay = 0;
        double medianDelay = 0;
    };
    std::vector<DelayStats> delayStats(streamCount); // per stream of the store
    double overallMedianDelay = 0;

    // The queued launches' call ends or GPU starts, per stream of the store (bounds[si] ..
    // bounds[si + 1]), each stream's sorted.
    std::vector<size_t> endsBegin(streamCount + 1), startsBegin(streamCount + 1);
    const auto queued = [&](Scratch& out, std::vector<size_t>& bounds, bool ends) {
        out.clear();
        for (uint32_t si = 0; si < streamCount; ++si) {
            bounds[si] = out.size();
            forEachLaunch(store, si, window, [&](const LaunchLag& l) {
                if (l.gpuStart > l.callEnd)
                    out.push(ends ? l.callEnd : l.gpuStart);
            });
            const std::span<int64_t> mine = out.from(bounds[si]);
            if (!std::is_sorted(mine.begin(), mine.end()))
                std::sort(mine.begin(), mine.end());
        }
        bounds.back() = out.size();
    };

    // Without delays, the other thread finds each stream's depth summary while this one takes the
    // lags: the call ends into the (unused) delay array, the GPU starts straight from the track
    // (in op order, which is start order) unless the stream has several.
    std::vector<StreamRunAhead> depthOf(streamCount); // the depth fields, per stream of the store
    const auto depthWithoutStarts = [&] {
        std::vector<int64_t> starts;
        for (uint32_t si = 0; si < streamCount; ++si) {
            delays.clear();
            forEachLaunch(store, si, window, [&](const LaunchLag& l) {
                if (l.gpuStart > l.callEnd)
                    delays.push(l.callEnd);
            });
            const std::span<int64_t> ends = delays.all();
            if (!std::is_sorted(ends.begin(), ends.end()))
                std::sort(ends.begin(), ends.end());
            const std::vector<uint32_t>& tracks = store.streams()[si].gpuTracks;
            if (tracks.size() == 1) {
                TrackLaunches launches(store, tracks.front(), si, window);
                walkDepth(
                    ends,
                    [&] {
                        LaunchLag l;
                        while (launches.next(l)) {
                            if (l.gpuStart > l.callEnd)
                                return l.gpuStart;
                        }
                        return INT64_MAX;
                    },
                    nullptr, depthOf[si]);
            } else {
                starts.clear();
                forEachLaunch(store, si, window, [&](const LaunchLag& l) {
                    if (l.gpuStart > l.callEnd)
                        starts.push_back(l.gpuStart);
                });
                std::sort(starts.begin(), starts.end());
                walkDepth(ends, startsOf(starts), nullptr, depthOf[si]);
            }
        }
    };

    runBoth(
        [&] {
            for (uint32_t si = 0; si < streamCount; ++si) {
                StreamRunAhead row;
                row.streamIndex = si;
                row.deviceId = store.streams()[si].deviceId;
                LagStats& s = row.lag;
                const size_t begin = lags.size();
                forEachLaunch(store, si, window, [&](const LaunchLag& l) {
                    if (s.count == 0 || lagsMore(l, s.maxLagLaunch))
                        s.maxLagLaunch = l;
                    ++s.count;
                    if (l.delay() > 0) {
                        if (s.queued == 0 || lagsMore(l, s.maxQueuedLaunch))
                            s.maxQueuedLaunch = l;
                        ++s.queued;
                    }
                    lags.push(l.lag());
                });
                if (s.count == 0)
                    continue;
                s.maxLag = s.maxLagLaunch.lag();
                if (detail != RunAheadDetail::OverallLags)
                    medianAndPercentileOf(lags.from(begin), 95, s.medianLag, s.p95Lag);
                result.streams.push_back(row);
            }
            LagStats& all = result.overall;
            for (const StreamRunAhead& row : result.streams) {
                if (all.count == 0 || row.lag.maxLag > all.maxLagLaunch.lag())
                    all.maxLagLaunch = row.lag.maxLagLaunch;
                all.count += row.lag.count;
                if (row.lag.queued > 0 &&
                    (all.queued == 0 || row.lag.maxQueuedLaunch.lag() > all.maxQueuedLaunch.lag()))
                    all.maxQueuedLaunch = row.lag.maxQueuedLaunch;
                all.queued += row.lag.queued;
            }
            all.maxLag = all.maxLagLaunch.lag();
            medianAndPercentileOf(lags.all(), 95, all.medianLag, all.p95Lag);
        },
        [&] {
            if (!delaysToo) {
                depthWithoutStarts();
                return;
            }
            for (uint32_t si = 0; si < streamCount; ++si) {
                DelayStats& d = delayStats[si];
                const size_t begin = delays.size();
                forEachLaunch(store, si, window, [&](const LaunchLag& l) {
                    d.maxDelay = d.count == 0 ? l.delay() : std::max(d.maxDelay, l.delay());
                    ++d.count;
                    delays.push(l.delay());
                });
                d.medianDelay = medianOf(delays.from(begin));
            }
            overallMedianDelay = medianOf(delays.all());
        });
    if (delaysToo) {
        LagStats& all = result.overall;
        for (StreamRunAhead& row : result.streams) {
            const DelayStats& d = delayStats[row.streamIndex];
            row.lag.maxDelay = d.maxDelay;
            row.lag.medianDelay = d.medianDelay;
            all.maxDelay =
                &row == &result.streams.front() ? d.maxDelay : std::max(all.maxDelay, d.maxDelay);
        }
        all.medianDelay = overallMedianDelay;
    }

    // The depth walk, when not done already: the call ends into the lag array and the GPU starts
    // into the delay array, on two threads; then one merge per stream.
    const bool keepSteps = detail == RunAheadDetail::All;
    if (delaysToo) {
        runBoth([&] { queued(lags, endsBegin, true); },
                [&] { queued(delays, startsBegin, false); });
        if (keepSteps)
            result.steps.reserve(2 * lags.size());
    }
    for (size_t r = 0; r < result.streams.size(); ++r) {
        StreamRunAhead& row = result.streams[r];
        const uint32_t si = row.streamIndex;
        if (delaysToo) {
            walkDepth(lags.part(endsBegin[si], endsBegin[si + 1]),
                      startsOf(delays.part(startsBegin[si], startsBegin[si + 1])),
                      keepSteps ? &result.steps : nullptr, row);
        } else {
            row.maxDepth = depthOf[si].maxDepth;
            row.maxDepthTime = depthOf[si].maxDepthTime;
            row.drainTime = depthOf[si].drainTime;
        }
        if (r == 0 || row.maxDepth > result.maxDepth) {
            result.maxDepth = row.maxDepth;
            result.maxDepthStream = r;
        }
    }
    return result;
}

std::vector<LaunchLag> launchesOf(const TraceStore& store, const RunAheadAnalysis& analysis,
                                  size_t streamRow) {
    std::vector<LaunchLag> out;
    out.reserve(analysis.streams[streamRow].lag.count);
    const uint32_t si = analysis.streams[streamRow].streamIndex;
    forEachLaunch(store, si, analysis.window, [&](const LaunchLag& l) { out.push_back(l); });
    if (store.streams()[si].gpuTracks.size() > 1)
        std::stable_sort(out.begin(), out.end(), [](const LaunchLag& a, const LaunchLag& b) {
            return a.gpuStart < b.gpuStart;
        });
    return out;
}

std::vector<LaunchLag> queuedAt(const TraceStore& store, const RunAheadAnalysis& analysis,
                                size_t streamRow, int64_t t, size_t limit) {
    std::vector<LaunchLag> out;
    const uint32_t si = analysis.streams[streamRow].streamIndex;
    forEachLaunch(store, si, analysis.window, [&](const LaunchLag& l) {
        if (l.callEnd <= t && l.gpuStart > t)
            out.push_back(l);
    });
    std::stable_sort(out.begin(), out.end(), [](const LaunchLag& a, const LaunchLag& b) {
        return a.gpuStart < b.gpuStart;
    });
    if (out.size() > limit)
        out.resize(limit);
    return out;
}

namespace {

Column textColumn(std::string name) {
    return {std::move(name), Column::Align::Left, 0};
}
Column intColumn(std::string name) {
    return {std::move(name), Column::Align::Right, 0};
}
Column realColumn(std::string name) {
    return {std::move(name), Column::Align::Right, 1};
}

} // namespace

Table runAheadTable(const TraceStore& store, const RunAheadAnalysis& analysis) {
    Table table({textColumn("Stream"), intColumn("Device"), intColumn("Launches"),
                 realColumn("Med Lag (ns)"), intColumn("P95 Lag (ns)"), intColumn("Max Lag (ns)"),
                 realColumn("Med Delay (ns)"), intColumn("Max Delay (ns)"), intColumn("Max Depth"),
                 intColumn("Max Depth At (ns)"), intColumn("Drained At (ns)")});
    for (const StreamRunAhead& s : analysis.streams) {
        const LagStats& l = s.lag;
        const bool queued = s.maxDepth > 0;
        table.addRow({streamLabel(store, s.streamIndex), int64_t{s.deviceId},
                      static_cast<int64_t>(l.count), l.medianLag, l.p95Lag, l.maxLag, l.medianDelay,
                      l.maxDelay, int64_t{s.maxDepth}, queued ? Cell(s.maxDepthTime) : Cell(),
                      queued ? Cell(s.drainTime) : Cell()});
    }
    if (!analysis.streams.empty()) {
        const LagStats& l = analysis.overall;
        table.addRow({std::string("All streams"), Cell(), static_cast<int64_t>(l.count),
                      l.medianLag, l.p95Lag, l.maxLag, l.medianDelay, l.maxDelay,
                      int64_t{analysis.maxDepth}, Cell(), Cell()});
    }
    return table;
}

Table launchLagTable(const TraceStore& store, const RunAheadAnalysis& analysis) {
    Table table({textColumn("Stream"), textColumn("API Call"), textColumn("Operation"),
                 intColumn("Call Start (ns)"), intColumn("Call End (ns)"),
                 intColumn("GPU Start (ns)"), intColumn("Lag (ns)"), intColumn("Delay (ns)")});
    for (size_t r = 0; r < analysis.streams.size(); ++r) {
        const std::string stream = streamLabel(store, analysis.streams[r].streamIndex);
        for (const LaunchLag& l : launchesOf(store, analysis, r)) {
            const ApiTrack& api = store.apiTracks()[l.call.track];
            table.addRow({stream, std::string(stripApiVersion(store.text(api.name(l.call.index)))),
                          store.text(store.gpuTracks()[l.op.track].name(l.op.index)), l.callStart,
                          l.callEnd, l.gpuStart, l.lag(), l.delay()});
        }
    }
    return table;
}

} // namespace warpline::model
