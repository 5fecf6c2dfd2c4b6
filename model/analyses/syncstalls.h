#pragma once

// Sync stalls: the calls in which the CPU waited for the GPU. Definitions and formulas:
// docs/analyses.md, "Sync stalls".
//
// A stall is one API call (any nesting depth; a stall nested inside another stall merges into
// the outer one) that is
//  - cudaDeviceSynchronize / cudaThreadSynchronize / cuCtxSynchronize, cudaStreamSynchronize /
//    cuStreamSynchronize, cudaEventSynchronize / cuEventSynchronize;
//  - a blocking copy: cudaMemcpy* / cuMemcpy* without "Async" in the name, except a copy whose GPU
//    op is Device-to-Device (CUDA does not make the host wait for those); or an async copy whose
//    GPU op is Device-to-Host into pageable memory and that returned only after that op ended
//    (CUDA makes it wait for the copy: PyTorch's .cpu() of a tensor);
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
// Origin of a stall (StallOrigin): with a Python stack (--python-stacks) on its call, or else on
// the call that started the copy it waited for, the stack's innermost frame (where the sync
// happened, often in a library) and the innermost frame of the user's own code (not under
// site-packages, dist-packages, lib/pythonX.Y or a torch/ folder). Without a stack, the last
// kernel its thread launched before it (looking back at most 256 calls per API depth).
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
#include <optional>
#include <span>
#include <string>
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

// The kind of a call that waits by its name alone (the list at the top of this file, the _vNNNN
// suffix ignored), nullopt for any other call: the one list of calls that synchronize, which the
// timeline's stall colour reads too. OtherSync is never returned (it needs a sync record).
std::optional<StallKind> stallKindOfCallName(std::string_view apiName);

// Where a stall was made (see the top of this file). At most one of the two parts is set.
struct StallOrigin {
    // From the stack: `site` = its innermost frame; `user` (when hasUser) = the innermost frame
    // of the user's code, when that is not `site` and some frame is the user's.
    bool fromStack = false;
    bool hasUser = false;
    CallFrame site;
    CallFrame user;
    // Without a stack: the last kernel the stall's thread launched before the stall
    // (gpuTracks()); invalid when none was found.
    EventRef lastKernel;
};

// "grad_scaler.py:371 ← gradscaler_amp.py:26" (library frame, then the user's), "bool_mask.py:21"
// (the innermost frame is the user's), "<autograd backward> ← train.py:32" (a frame without a
// file shows its function), "after reduce_kernel" (no stack: gpuOpShortName of the last kernel),
// "" when nothing is known.
std::string stallOriginText(const TraceStore& store, const StallOrigin& origin);
// That text as it follows a call in a sentence: " at bool_mask.py:21", " after reduce_kernel", or
// "" when it is empty.
std::string originInSentence(const std::string& originText);
// The origin of any API call (apiTracks()), the same way as a stall's.
StallOrigin callOrigin(const TraceStore& store, EventRef call);

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
    StallOrigin origin;

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

// Stalls of one thread with the same API name, kind, copy direction, copy size class
// (std::bit_width(bytes): sizes within a factor of two group together; 0 bytes is its own class)
// and origin text (stallOriginText). Of the origins that share the other keys, the
// kMaxOrigins - 1 with the most blocked time keep a row each when there are more than
// kMaxOrigins; the rest merge into one row whose origin reads "(N other origins)".
struct StallGroup {
    static constexpr size_t kMaxOrigins = 8;

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
    std::string origin;           // stallOriginText of its stalls; "(N other origins)" merged
    uint32_t origins = 1;         // distinct origins in the row: > 1 only for the merged row
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

// The stalls of `whole` (analyzeSyncStalls over the whole trace) that start in `window`, with the
// threads' shares over the window: analyzeSyncStalls(store, window) without walking the trace
// again. O(stalls in the window + threads). One difference: a call nested in a sync call that
// starts before the window is part of that stall here, outside the window, where a walk of the
// window alone counts it on its own.
SyncStallAnalysis stallsWithin(const TraceStore& store, const SyncStallAnalysis& whole,
                               TimeWindow window);

// Grouped stalls, sorted by total blocked time descending, then API name, then origin.
// O(stalls * log(groups)).
std::vector<StallGroup> groupSyncStalls(const TraceStore& store, const SyncStallAnalysis& analysis);

// One row per group, then one "All" row per thread: Time (%), Total Time (ns), Stalls, Avg (ns),
// Med (ns), Min (ns), Max (ns), GPU Ops Finished, GPU Idle After (ns), Copy, Min Bytes,
// Max Bytes, Kind, Thread, Name, Origin. Time (%) = share of the thread's active time.
Table syncStallGroupTable(const TraceStore& store, const SyncStallAnalysis& analysis,
                          const std::vector<StallGroup>& groups);
// One row per stall, by start: Start (ns), Blocked (ns), Kind, Name, Thread, Device, Copy, Bytes,
// GPU Ops Finished, GPU Idle After (ns), Next Op, Origin.
Table syncStallTable(const TraceStore& store, const SyncStallAnalysis& analysis);

} // namespace warpline::model
