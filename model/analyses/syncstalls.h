#pragma once

// Sync stalls: the calls in which the CPU waited for the GPU. Definitions and formulas:
// docs/analyses.md, "Sync stalls".
//
// A stall is one API call (any nesting depth; a stall nested inside another stall merges into
// the outer one) that is
//  - cudaDeviceSynchronize / cudaThreadSynchronize / cuCtxSynchronize, cudaStreamSynchronize /
//    cuStreamSynchronize, cudaEventSynchronize / cuEventSynchronize;
//  - a blocking copy: cudaMemcpy* / cuMemcpy* without "Async" in the name, except a copy whose GPU
//    op is Device-to-Device (CUDA does not make the host wait for those);
//  - or any call that a CUPTI SYNCHRONIZATION record (TraceStore::syncs()) joins by correlation
//    id, except "stream wait event" records (type 2: the GPU waits there, not the CPU).
// A SYNCHRONIZATION record whose call is not in the trace is a stall of its own, on no thread.
// Names are compared without their "_vNNNN" suffix.
//
// For each stall (times in ns, the call's [start, end)):
//  - blocked = end - start, the CPU time spent waiting;
//  - finished ops = the GPU ops on the stall's device whose end lies in (start, end];
//  - GPU idle after = the device's idle interval that contains `end` (no op of the device runs at
//    `end`), from max(its start, stall start) to the start of the device's next op; 0 when an op
//    runs at `end` or no op follows.
// The device of a stall: that of its own copy op, else of the sync record's context, else the only
// device of the trace; with several devices and none of those, every device counts together.
//
// Stalled share of a thread = the sum of its stalls' blocked time / its active time, where active
// time = end of its last outermost API call - start of its first (both among calls starting in
// the window). Stalls of one thread never overlap, so the share is at most 1.
//
// Pure function of the store: safe on a worker thread. O(calls + stalls * device tracks * log n).

#include "durationstats.h"
#include "summaries.h"
#include "table.h"
#include "tracestore.h"

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace warpline::model {

enum class StallKind : uint8_t {
    DeviceSync, // cudaDeviceSynchronize, cudaThreadSynchronize, cuCtxSynchronize
    StreamSync, // cudaStreamSynchronize, cuStreamSynchronize
    EventSync,  // cudaEventSynchronize, cuEventSynchronize
    Memcpy,     // blocking cudaMemcpy*, cuMemcpy*
    OtherSync,  // another call a SYNCHRONIZATION record joins (cudaFree, cudaMemset, ...)
};
std::string_view stallKindName(StallKind kind); // "device sync", "stream sync", ...

// GPU ops [range.first, range.last) of TraceStore::gpuTracks()[track].
struct OpRun {
    uint32_t track = 0;
    IndexRange range;
};

struct SyncStall {
    static constexpr uint32_t kNoThread = EventRef::kNone;

    EventRef call;               // into TraceStore::apiTracks(); invalid for a lone sync record
    int64_t syncIndex = -1;      // into TraceStore::syncs(); -1 when no record joins the call
    uint32_t thread = kNoThread; // into TraceStore::threads()
    StallKind kind = StallKind::DeviceSync;
    int64_t start = 0;     // ns
    int64_t end = 0;       // ns
    int64_t deviceId = -1; // the device waited for; -1: every device
    // Blocking copies: the copy's first GPU op (gpuTracks()), its direction, and the bytes of all
    // the call's copy ops. A sync whose previous call on the same track started copies
    // (cudaMemcpyAsync + cudaStreamSynchronize, PyTorch's .item()) carries those copies the same
    // way. Invalid / 0 otherwise.
    EventRef copyOp;
    uint8_t copyKind = 0; // ENUM_CUDA_MEMCPY_OPER
    uint64_t bytes = 0;
    uint64_t finishedOps = 0;                  // count of GPU ops that ended while it waited
    size_t finishedBegin = 0, finishedEnd = 0; // [begin, end) into SyncStallAnalysis::finishedRuns
    int64_t gpuIdleAfter = 0;                  // ns
    EventRef nextOp; // gpuTracks(): the op that ended that idle interval; invalid when none

    int64_t blocked() const { return end - start; }
};

struct ThreadStallShare {
    uint32_t thread = 0;     // into TraceStore::threads()
    int64_t activeStart = 0; // ns
    int64_t activeEnd = 0;   // ns
    int64_t stalled = 0;     // ns, sum of blocked time
    uint64_t stalls = 0;
    int64_t active() const { return activeEnd - activeStart; }
    double share() const {
        return active() > 0 ? static_cast<double>(stalled) / static_cast<double>(active()) : 0.0;
    }
};

// Stalls of one thread with the same API name, kind, copy direction and copy size class
// (std::bit_width(bytes): sizes within a factor of two group together; 0 bytes is its own class).
struct StallGroup {
    uint32_t thread = SyncStall::kNoThread;
    NameId name = kNoName; // API name as stored (kNoName for lone sync records)
    StallKind kind = StallKind::DeviceSync;
    uint8_t copyKind = 0;
    DurationStats blocked; // ns
    uint64_t minBytes = 0, maxBytes = 0, totalBytes = 0;
    uint64_t finishedOps = 0;
    int64_t gpuIdleAfter = 0;     // ns, summed
    double shareOfThread = 0;     // blocked.total / the thread's active time
    std::vector<uint32_t> stalls; // indices into SyncStallAnalysis::stalls, by start
};

struct SyncStallAnalysis {
    std::vector<SyncStall> stalls;         // sorted by start (then thread)
    std::vector<OpRun> finishedRuns;       // see SyncStall::finishedBegin
    std::vector<ThreadStallShare> threads; // threads with an API call in the window, by index
    int64_t stalledTime = 0;               // ns, over every thread
    int64_t activeTime = 0;                // ns, summed over `threads`
    double share() const {
        return activeTime > 0 ? static_cast<double>(stalledTime) / static_cast<double>(activeTime)
                              : 0.0;
    }

    std::span<const OpRun> finishedOps(size_t stall) const;
    // The share entry of TraceStore thread `thread`, or nullptr.
    const ThreadStallShare* threadShare(uint32_t thread) const;
};

// Stalls whose start lies in [window.t0, window.t1) count.
SyncStallAnalysis analyzeSyncStalls(const TraceStore& store, TimeWindow window = {});

// Grouped stalls, sorted by total blocked time descending, then API name.
std::vector<StallGroup> groupSyncStalls(const TraceStore& store, const SyncStallAnalysis& analysis);

// One row per group, then one "All" row per thread: Time (%), Total Time (ns), Stalls, Avg (ns),
// Med (ns), Min (ns), Max (ns), GPU Ops Finished, GPU Idle After (ns), Copy, Min Bytes,
// Max Bytes, Kind, Thread, Name. Time (%) = share of the thread's active time.
Table syncStallGroupTable(const TraceStore& store, const SyncStallAnalysis& analysis,
                          const std::vector<StallGroup>& groups);
// One row per stall, by start: Start (ns), Blocked (ns), Kind, Name, Thread, Device, Copy, Bytes,
// GPU Ops Finished, GPU Idle After (ns), Next Op.
Table syncStallTable(const TraceStore& store, const SyncStallAnalysis& analysis);

// warpline-stats --report syncs (the group table).
Table syncStallReport(const TraceStore& store);

} // namespace warpline::model
