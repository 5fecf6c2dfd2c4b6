#pragma once

// Steps from the repeating launch sequence (steps.h, "Where the steps come from", 2): the
// launches of a rank as the names of the GPU ops each started, their period, the step cuts, and
// the merges of inner loops and gradient accumulation. Used by steps.cpp alone; no Qt, no state.

#include "steps.h"
#include "syncstalls.h"
#include "tracestore.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace warpline::model {

// A repeat period runs from 3 to 4096 launches.
inline constexpr size_t kMinPeriod = 3;
inline constexpr size_t kMaxPeriod = 4096;

// A launch call and the name of the first GPU op it started.
struct Launch {
    int64_t start = 0;
    int64_t end = 0;
    int64_t opEnd = 0; // latest end of the ops it started
    NameId key = kNoName;
    uint32_t thread = 0; // into TraceStore::threads()
    uint32_t ops = 0;    // GPU ops it started (a CUDA graph launch starts many)
};

// The launches of every thread of one source (rank), in call order: PyTorch launches a step's
// forward pass and optimizer on the main thread and its backward pass on autograd's thread. With
// `tail` > 0, only the last `tail` of them (each track's last `tail` hold them all). With `only`
// set, the launches of that one thread.
std::vector<Launch> launchesOf(const TraceStore& store, uint32_t source, size_t tail = 0,
                               uint32_t only = EventRef::kNone);

// How many launch calls (calls that started GPU work) each thread made; with `source` set, only
// that source's threads are counted (the others hold 0). O(calls), no allocation per call.
std::vector<size_t> launchesPerThread(const TraceStore& store, uint32_t source = EventRef::kNone);

// Whether each step launches a kernel of PyTorch's optimizers (isOptimizerKernel) among `all`,
// the launches of every thread of the rank (autograd's too), in call order.
std::vector<bool> holdsOptimizer(const TraceStore& store, const std::vector<Launch>& all,
                                 const std::vector<Step>& steps);

// Steps from the repeating launch sequence of the rank that launched the most GPU work: all its
// threads together (PyTorch's backward thread), else its busiest thread alone (a program whose
// threads each run a loop of their own). In a session, the first rank by launches whose steps
// mostly hold its collectives, when the busiest rank's do not. Sets out.thread and out.period.
std::vector<Step> repeatSteps(const TraceStore& store, const SyncStallAnalysis& stalls,
                              StepAnalysis& out);

// The repeat steps of one rank (`perThread`: launchesPerThread); out.thread becomes its thread
// that launched the most.
std::vector<Step> repeatStepsOf(const TraceStore& store, const SyncStallAnalysis& stalls,
                                uint32_t source, const std::vector<size_t>& perThread,
                                StepAnalysis& out);

} // namespace warpline::model
