#pragma once

// Run-ahead: how far the CPU ran ahead of the GPU. Definitions and formulas: docs/analyses.md,
// "Run-ahead".
//
//  - A launch is one (API call, stream) pair: an API call whose correlation id has at least one
//    GPU op, and one stream it put work on. Its GPU start is the start of the call's first op on
//    that stream (a cudaGraphLaunch that feeds two streams is two launches; an ordinary kernel
//    launch or cudaMemcpyAsync is one).
//  - lag   = GPU start - launch call start (ns), how long the work waited from the moment the CPU
//            began to issue it;
//    delay = GPU start - launch call end (ns), how long it sat in the queue after the call
//            returned (negative when the GPU started it before the call returned).
//  - Queue depth of a stream at time t = the number of its launches with callEnd <= t < gpuStart:
//    +1 when the launch call RETURNS (the work is then surely submitted), -1 when the GPU starts
//    the op. A launch whose op started before its call returned never counts. The depth is a step
//    function: DepthStep{time, depth} holds from `time` until the next step's time; the last step
//    of a stream always has depth 0.
//  - Drain time: the first time at or after the (first) maximum depth at which the depth is 0
//    again, i.e. when the backlog the CPU built up has been worked off.
//
// Ops whose launch call is not in the trace are ignored. Pure function of the store: safe on a
// worker thread while other threads read the same store. O(launches) time (plus a sort only when
// launches to one stream return out of order). The analysis keeps per-stream summaries and (when
// asked) the depth steps, not a record per launch: the launches themselves are read back from the
// store on demand (launchesOf, queuedAt), so a trace with 40M launches costs 16 bytes per launch
// of scratch while it runs, not 40 bytes kept.

#include "summaries.h"
#include "table.h"
#include "tracestore.h"

#include <cstdint>
#include <span>
#include <vector>

namespace warpline::model {

struct LaunchLag {
    EventRef call;         // into TraceStore::apiTracks()
    EventRef op;           // into TraceStore::gpuTracks(): the call's first op on this stream
    int64_t callStart = 0; // ns
    int64_t callEnd = 0;   // ns
    int64_t gpuStart = 0;  // ns

    int64_t lag() const { return gpuStart - callStart; }
    int64_t delay() const { return gpuStart - callEnd; }
};

struct DepthStep {
    int64_t time = 0;  // ns; the depth holds from here to the next step's time
    int32_t depth = 0; // launches queued (returned, not yet started on the GPU)
};

// Lag statistics over a set of launches (ns). Median as DurationStats; p95 = nearest rank
// (ceil(0.95 n)-th smallest). All zero when count == 0.
struct LagStats {
    uint64_t count = 0;
    double medianLag = 0;
    int64_t p95Lag = 0;
    int64_t maxLag = 0;
    double medianDelay = 0;
    int64_t maxDelay = 0;
    // The launch with the largest lag; on a tie the earliest GPU start, then the first in
    // stream order. Valid when count > 0.
    LaunchLag maxLagLaunch;
    // The same among the launches that were queued (delay > 0: the GPU started them after their
    // call returned): how far the CPU ran ahead, where maxLagLaunch may be a call that is slow in
    // itself (a first launch that loads its module: a lag of milliseconds, a negative delay).
    // Valid when queued > 0.
    uint64_t queued = 0;
    LaunchLag maxQueuedLaunch;
};

struct StreamRunAhead {
    uint32_t streamIndex = 0; // into TraceStore::streams()
    uint32_t deviceId = 0;
    LagStats lag;
    int32_t maxDepth = 0;
    int64_t maxDepthTime = 0; // ns: first time the depth reached maxDepth (0 when maxDepth == 0)
    int64_t drainTime = 0;    // ns: see the header comment (0 when maxDepth == 0)
    size_t stepsBegin = 0, stepsEnd = 0; // [begin, end) into RunAheadAnalysis::steps
};

struct RunAheadAnalysis {
    TimeWindow window; // launches whose call starts in it count
    // Queue depth steps, grouped by stream as `streams`, each group sorted by time (strictly
    // increasing) and ending with depth 0.
    std::vector<DepthStep> steps;
    // One entry per stream that has at least one launch, in TraceStore::streams() order.
    std::vector<StreamRunAhead> streams;
    // Over every launch of every stream.
    LagStats overall;
    int32_t maxDepth = 0;      // the largest StreamRunAhead::maxDepth
    size_t maxDepthStream = 0; // index into `streams` of that stream (valid when non-empty)

    std::span<const DepthStep> depthSteps(size_t streamRow) const;
    // The queue depth of streams[streamRow] at time t (ns). O(log steps).
    int32_t depthAt(size_t streamRow, int64_t t) const;
    // The row of `streams` for TraceStore stream index `streamIndex`, or -1.
    std::ptrdiff_t rowOfStream(uint32_t streamIndex) const;
};

// How much analyzeRunAhead computes:
//  - All: everything above (the timeline's queue-depth rows, the Chrome export);
//  - NoDepthSteps: all but `steps` (the report);
//  - OverallLags: `overall`'s lag statistics (count, median, p95, max and its launch), each
//    stream's count, max lag and depth summaries (maxDepth, its time, drain time), and maxDepth /
//    maxDepthStream; no per-stream lag medians, no delays (all 0), no steps (insights).
enum class RunAheadDetail { All, NoDepthSteps, OverallLags };

// Launches whose call starts in [window.t0, window.t1) count.
RunAheadAnalysis analyzeRunAhead(const TraceStore& store, TimeWindow window = {},
                                 RunAheadDetail detail = RunAheadDetail::All);

// The launches of streams[streamRow], read back from the store, sorted by GPU start (stable: on
// a tie, in the order of the stream's GPU tracks). One LaunchLag (40 bytes) per launch.
std::vector<LaunchLag> launchesOf(const TraceStore& store, const RunAheadAnalysis& analysis,
                                  size_t streamRow);
// The launches of streams[streamRow] queued at time t (callEnd <= t < gpuStart), sorted by GPU
// start, at most `limit` of them (the first by GPU start).
std::vector<LaunchLag> queuedAt(const TraceStore& store, const RunAheadAnalysis& analysis,
                                size_t streamRow, int64_t t, size_t limit = SIZE_MAX);

// One row per stream, then "All streams": Stream, Device, Launches, Med Lag (ns), P95 Lag (ns),
// Max Lag (ns), Med Delay (ns), Max Delay (ns), Max Depth, Max Depth At (ns), Drained At (ns).
Table runAheadTable(const TraceStore& store, const RunAheadAnalysis& analysis);
// One row per launch, stream by stream, each sorted by GPU start: Stream, API Call, Operation, Call
// Start (ns), Call End (ns), GPU Start (ns), Lag (ns), Delay (ns).
Table launchLagTable(const TraceStore& store, const RunAheadAnalysis& analysis);

} // namespace warpline::model
