#include "runahead.h"

#include "analysishelpers.h"

#include <algorithm>

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

LagStats lagStats(std::span<const LaunchLag> launches, size_t firstIndex,
                  std::vector<int64_t>& scratch) {
    LagStats s;
    s.count = launches.size();
    if (launches.empty())
        return s;
    s.maxLag = launches[0].lag();
    s.maxDelay = launches[0].delay();
    s.maxLagLaunch = firstIndex;
    scratch.clear();
    for (size_t i = 0; i < launches.size(); ++i) {
        const int64_t lag = launches[i].lag();
        scratch.push_back(lag);
        if (lag > s.maxLag) {
            s.maxLag = lag;
            s.maxLagLaunch = firstIndex + i;
        }
        s.maxDelay = std::max(s.maxDelay, launches[i].delay());
    }
    medianAndPercentileOf(scratch, 95, s.medianLag, s.p95Lag);
    scratch.clear();
    for (const LaunchLag& l : launches)
        scratch.push_back(l.delay());
    s.medianDelay = medianOf(scratch);
    return s;
}

// Builds the depth steps of one stream's launches (sorted by GPU start) into `steps`; fills the
// depth fields of `row`. `ends` is scratch.
void buildSteps(std::span<const LaunchLag> launches, std::vector<int64_t>& ends,
                std::vector<DepthStep>& steps, StreamRunAhead& row) {
    ends.clear();
    for (const LaunchLag& l : launches) {
        if (l.gpuStart > l.callEnd)
            ends.push_back(l.callEnd);
    }
    if (!std::is_sorted(ends.begin(), ends.end()))
        std::sort(ends.begin(), ends.end());

    row.stepsBegin = steps.size();
    int32_t depth = 0;
    size_t up = 0;   // next +1 (into ends)
    size_t down = 0; // next -1 candidate (into launches)
    auto nextDown = [&] {
        while (down < launches.size() && launches[down].gpuStart <= launches[down].callEnd)
            ++down;
        return down < launches.size() ? launches[down].gpuStart : INT64_MAX;
    };
    bool drained = true;
    while (true) {
        const int64_t tUp = up < ends.size() ? ends[up] : INT64_MAX;
        const int64_t tDown = nextDown();
        const int64_t t = std::min(tUp, tDown);
        if (t == INT64_MAX)
            break;
        while (up < ends.size() && ends[up] == t) {
            ++depth;
            ++up;
        }
        while (nextDown() == t) {
            --depth;
            ++down;
        }
        if (steps.size() > row.stepsBegin && steps.back().depth == depth)
            continue;
        steps.push_back({t, depth});
        if (depth > row.maxDepth) {
            row.maxDepth = depth;
            row.maxDepthTime = t;
            drained = false;
        } else if (depth == 0 && !drained) {
            row.drainTime = t;
            drained = true;
        }
    }
    row.stepsEnd = steps.size();
}

} // namespace

std::span<const LaunchLag> RunAheadAnalysis::launchesOf(size_t streamRow) const {
    const StreamRunAhead& s = streams[streamRow];
    return std::span<const LaunchLag>(launches).subspan(s.launchesBegin,
                                                        s.launchesEnd - s.launchesBegin);
}

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

RunAheadAnalysis analyzeRunAhead(const TraceStore& store, TimeWindow window) {
    RunAheadAnalysis result;
    // Upper bounds; untouched capacity costs no memory until it is written.
    result.launches.reserve(store.kernelCount() + store.memcpyCount() + store.memsetCount());
    result.steps.reserve(2 * result.launches.capacity());
    const auto& apiTracks = store.apiTracks();
    const auto& gpuTracks = store.gpuTracks();
    std::vector<int64_t> scratch;

    for (uint32_t si = 0; si < store.streams().size(); ++si) {
        const StreamInfo& stream = store.streams()[si];
        StreamRunAhead row;
        row.streamIndex = si;
        row.deviceId = stream.deviceId;
        row.launchesBegin = result.launches.size();
        for (const uint32_t t : stream.gpuTracks) {
            const GpuTrack& track = gpuTracks[t];
            for (size_t i = 0; i < track.size(); ++i) {
                const EventRef call = track.launch(i);
                if (!call.valid())
                    continue;
                const ApiTrack& api = apiTracks[call.track];
                const int64_t callStart = api.start(call.index);
                if (!inWindow(callStart, window))
                    continue;
                const EventRef op{t, static_cast<uint32_t>(i)};
                if (!isFirstOpOnStream(store, call, op, si))
                    continue;
                result.launches.push_back(
                    {call, op, callStart, api.end(call.index), track.start(i)});
            }
        }
        row.launchesEnd = result.launches.size();
        if (row.launchesEnd == row.launchesBegin)
            continue;
        const auto first = result.launches.begin() + static_cast<std::ptrdiff_t>(row.launchesBegin);
        if (stream.gpuTracks.size() > 1)
            std::stable_sort(
                first, result.launches.end(),
                [](const LaunchLag& a, const LaunchLag& b) { return a.gpuStart < b.gpuStart; });
        const std::span<const LaunchLag> mine(&*first, row.launchesEnd - row.launchesBegin);
        row.lag = lagStats(mine, row.launchesBegin, scratch);
        buildSteps(mine, scratch, result.steps, row);
        if (result.streams.empty() || row.maxDepth > result.maxDepth) {
            result.maxDepth = row.maxDepth;
            result.maxDepthStream = result.streams.size();
        }
        result.streams.push_back(row);
    }
    result.overall = lagStats(result.launches, 0, scratch);
    return result;
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
        for (const LaunchLag& l : analysis.launchesOf(r)) {
            const ApiTrack& api = store.apiTracks()[l.call.track];
            table.addRow({stream, std::string(stripApiVersion(store.text(api.name(l.call.index)))),
                          store.text(store.gpuTracks()[l.op.track].name(l.op.index)), l.callStart,
                          l.callEnd, l.gpuStart, l.lag(), l.delay()});
        }
    }
    return table;
}

Table runAheadReport(const TraceStore& store) {
    return runAheadTable(store, analyzeRunAhead(store));
}

} // namespace warpline::model
