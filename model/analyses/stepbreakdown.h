#pragma once

// Where a step's time goes: one breakdown per step that adds up to the step's duration, in what
// the GPU did and, while it idled, why. Definitions: docs/analyses.md, "Step time".
//
// Every instant of a step [start, end) is given one cause, from the rank's GPU ops (every
// device of the step thread's rank) and the CPU calls of the rank's threads (outermost calls):
//  - GPU busy, by what ran (the first that applies): Compute (a kernel other than a collective),
//    Copy (a memcpy), Memset, Communication (only collectives: isCommunicationKernel).
//  - GPU idle, by what the CPU was doing:
//     Memory   a thread was in a memory-management call (cudaMalloc, cudaFree, cudaHostAlloc,
//              cuMemCreate, ...; isMemoryCall);
//     Compile  a thread was loading GPU code (cuModuleLoad*, cuLibraryLoad*; isModuleLoadCall), or
//              no thread was in a call and the step loaded GPU code (JIT compilation:
//              torch.compile, Triton);
//     Sync     a thread was blocked in a sync stall (syncstalls.h), or within the refill after
//              one: the idle from a stall's end up to as long as the stall waited for queued
//              work (its blocked time less the time its own blocking copy ran on the GPU): the
//              CPU work a synchronization keeps from overlapping the GPU's queue; and in a step
//              that waits at least kDenseSyncMinimum times, once every kDenseSyncLaunches
//              launches or more often, what would be Launch (the CPU can never queue work
//              ahead: a value read back per item of a Python loop);
//     Launch   a thread was in another CUDA call, or no thread was in one for less than
//              kCpuStretch (the per-op cost of launching: framework overhead between calls);
//     Input    no thread was in a CUDA call for kCpuStretch or longer, and one of the first three
//              launches after that stretch is a host-to-device copy (the batch: waiting for
//              input);
//     CpuWork  no thread was in a CUDA call for kCpuStretch or longer otherwise (Python or other
//              host code between launches).
//   When the trace has CPU samples of the thread that makes the launch ending such a stretch
//   (cpuactivity.h), they decide instead where they say: the time it waited off its CPU is Input
//   (a queue, a pipe, another thread, a sleep), except the share of its waiting samples that
//   wait for Python's GIL (or in which another thread of its process ran Python; in a process
//   without Python, ran at all: its worker threads, joined), which is CpuWork (another
//   thread's); the time it ran is CpuWork, except the share of its running samples in
//   torch.utils.data (the DataLoader), which is Input, the share unmapping host memory (munmap,
//   madvise) in a step that copies from or to pageable memory, which is HostMemory, and the
//   share with no Python frame in a Python program, which keeps the rule above. Time without a
//   known state keeps the rule above.
//     HostMemory  the thread unmapping host memory in a step with pageable copies (above): the
//              CPU side of those copies (a DataLoader batch's shared memory released after its
//              copy), which pinned memory moves off the launching thread.
//
// Pure function of the store: safe on a worker thread. O((ops + calls) log) per step; the steps
// are split between two threads.

#include "cpuactivity.h"
#include "syncstalls.h"
#include "tracestore.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace warpline::model {

enum class StepCause : uint8_t {
    Compute,
    Copy,
    Memset,
    Communication,
    Launch,
    CpuWork,
    Input,
    Sync,
    Memory,
    Compile,
    HostMemory,
};
inline constexpr size_t kStepCauseCount = 11;
// "compute", "copy", "memset", "communication", "launch", "cpu-work", "input", "sync",
// "memory", "compile", "host-memory".
std::string_view stepCauseName(StepCause cause);
// "GPU Compute", ... : the column titles of the step table.
std::string_view stepCauseTitle(StepCause cause);

// A CPU stretch without CUDA calls this long or longer is host work (or a wait), not the cost of
// launching the next op.
inline constexpr int64_t kCpuStretch = 100'000; // ns
// A step with at least this many sync stalls, and at most kDenseSyncLaunches launch calls per
// stall, spends its launch time on its syncs (Sync above).
inline constexpr size_t kDenseSyncMinimum = 3;
inline constexpr size_t kDenseSyncLaunches = 4;
// In a step with at least kDenseSyncMinimum stalls, a stretch between two waits (or before the
// first, after the last) with at most this many launch calls spends its launch time on the
// waits: too few launches to capture or fuse on their own (a value read back per tensor).
inline constexpr size_t kDenseStretchLaunches = 16;

// A call that launches GPU work: "Launch" in its name (cudaLaunchKernel, cuLaunchKernelEx,
// cudaGraphLaunch, ...).
bool isLaunchCall(std::string_view apiName);
bool isMemoryCall(std::string_view apiName);
bool isModuleLoadCall(std::string_view apiName);

struct StepBreakdown {
    std::array<int64_t, kStepCauseCount> time{}; // ns per cause; sums to the step's duration
    uint32_t memoryCalls = 0;                    // memory-management calls starting in the step
    uint32_t moduleLoads = 0;                    // module/library loads starting in the step
    // The longest stretch without CUDA calls (host work or input wait) and the first launch
    // call after it (apiTracks(); invalid when none).
    int64_t longestStretch = 0;
    int64_t longestStretchStart = 0;
    EventRef afterLongest;
    bool longestIsInput = false;
    // Whether a copy to the GPU follows the longest stretch (among the first three launches
    // after it, no read-back before it): the rule without samples, kept where samples decide
    // longestIsInput. Host work ending so prepares the step's data.
    bool longestEndsInUpload = false;
    // What the thread that launched after the longest stretch did in it, from CPU samples
    // (CpuStretch::sampled false when the trace has none).
    CpuStretch longestCpu;

    int64_t operator[](StepCause c) const { return time[static_cast<size_t>(c)]; }
    int64_t& operator[](StepCause c) { return time[static_cast<size_t>(c)]; }
    int64_t total() const;
};

// The cause with the most time (the first on ties).
StepCause mainCause(const StepBreakdown& b);

// The breakdown of each window [first, second) (the steps, by start) for the rank `source`
// (sessions; 0 for one file), with the store's sync stalls.
std::vector<StepBreakdown> breakDownSteps(const TraceStore& store, uint32_t source,
                                          const SyncStallAnalysis& stalls,
                                          const std::vector<std::pair<int64_t, int64_t>>& windows);

} // namespace warpline::model
