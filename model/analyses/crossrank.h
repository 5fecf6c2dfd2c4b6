#pragma once

// Across ranks: which rank of a distributed job the others wait for at each collective.
// Definitions and formulas: docs/analyses.md, "Across ranks".
//
// A rank is one source of the store (TraceStore::sources(): one trace file of a TraceSession; a
// store read from one file is one rank). Its GPU work is that of the devices whose
// DeviceInfo::source is the rank, its CPU work that of the threads of its processes.
//
//  - Communication kernels: kernels whose name or short name isCommunicationKernel
//    (communication.h).
//  - Steps of a rank: the instances of one repeated, numbered NVTX range ("step 3",
//    "iteration 12", "Step#3", PyTorch's "ProfilerStep#3") on one thread of the rank. The name
//    (without its counter) is chosen once for the whole store: among the numbered names with at
//    least two instances on one thread, a name holding a step word ("step", "iter", "batch")
//    first, then the one with the most range time over all ranks. On each rank the thread with
//    the most instances holds its steps; an instance nested in an earlier one is dropped. A rank
//    without that range takes the steps of its repeating launches (steps.h, repeatStepSpans: the
//    training step, with its collectives inside), and when those do not repeat, one step per
//    communication kernel: from the end of the previous one (for the first, from the rank's
//    first GPU op) to the end of this one. A rank whose repeating steps mostly hold no
//    collective (its longest loop is a validation only it runs), or that has one step per
//    communication kernel, takes the steps of the rank with the most steps that mostly hold
//    collectives, when both ran as many: step k holds the same collectives on both (a
//    communicator runs its collectives in one order on every rank), its boundaries as long after
//    the rank's own collective as the other rank's are after theirs (StepOrigin::OtherRank).
//  - A communication kernel belongs to the step that holds its launch call's start (its own GPU
//    start when the launch is not in the trace): the CPU marks the step, the GPU runs it later.
//  - Steps are matched across ranks by their order: step k is the k-th step of every rank.
//  - The decisive collective of step k: when every rank ran as many collectives (the g-th is the
//    same collective everywhere), of those every rank launched within its step k, the one whose
//    arrivals lie furthest apart (a barrier after a validation only one rank runs, rather than
//    the step's first all-reduce bucket); else the step's first.
//  - Arrival of a rank at step k = the GPU start of its kernel of the decisive collective (the
//    moment the rank reached it). Last arrival = the latest over the ranks that
//    arrived; wait of a rank = last arrival - its arrival (time its collective sat waiting).
//  - Slowest rank of a step = the rank that arrived last, when at least two ranks arrived and it
//    arrived strictly after the next one; lateness = last arrival - second-to-last arrival (how
//    much earlier the collective could have completed had it been as fast as the next slowest).
//  - Compute time of a rank in a step = step duration - its communication kernels' time there.
//  - Verdict: the rank that was the slowest in the most steps (ties: the lower row); it dominates
//    when that is more than half of the steps that have a slowest rank or a tie. The others'
//    wait behind it and their step time are summed over its slowest steps after the warm-up
//    (the leading steps whose median duration is 1.5x that of the next five: steps.h).
//
// Pure function of the store: safe on a worker thread. O(GPU ops + NVTX ranges) with a few
// lookups per op, plus a sort of each rank's communication kernels and steps.

#include "summaries.h"
#include "table.h"
#include "tracestore.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace warpline::model {

enum class StepOrigin : uint8_t {
    Nvtx,        // NVTX ranges of the chosen step name
    Repeats,     // its repeating launches (steps.h: repeatStepSpans), collectives inside
    OtherRank,   // another rank's steps, by the order of the collectives (stepsFrom)
    CommKernels, // one step per communication kernel (no step ranges, no repeats)
    None,        // neither: the rank has no steps
};

// One step of one rank. Times in ns.
struct RankStep {
    static constexpr int64_t kNoArrival = std::numeric_limits<int64_t>::min();

    int64_t start = 0; // the step's [start, end)
    int64_t end = 0;
    int64_t arrival = kNoArrival;  // GPU start of its kernel of the decisive collective
    EventRef arrivalOp;            // gpuTracks(): that kernel; invalid without arrival
    uint32_t commKernels = 0;      // communication kernels in the step
    int64_t commTime = 0;          // their summed duration
    int64_t wait = 0;              // last arrival of step k - arrival; 0 without arrival
    std::optional<int64_t> number; // the counter in its NVTX name ("step 12": 12, "step -1": -1)

    bool arrived() const { return arrival != kNoArrival; }
    int64_t duration() const { return end - start; }
    int64_t compute() const { return duration() > commTime ? duration() - commTime : 0; }
};

struct RankSummary {
    uint32_t source = 0; // index into TraceStore::sources() (0 when the store lists none)
    StepOrigin origin = StepOrigin::None;
    uint32_t thread = EventRef::kNone;   // the thread whose NVTX ranges are its steps (Nvtx only)
    uint32_t stepsFrom = 0;              // the rank whose steps it took (OtherRank only)
    std::vector<uint32_t> devices;       // DeviceInfo::id of its devices with GPU ops, ascending
    size_t stepsBegin = 0, stepsEnd = 0; // [begin, end) into CrossRankAnalysis::rankSteps
    double meanStep = 0;                 // ns
    double medianStep = 0;               // ns
    double meanCompute = 0;              // ns per step
    // Its GPU ops other than communication kernels, starting within its steps' span, per step:
    // their summed duration (ns) and count.
    double meanGpuWork = 0;
    double meanGpuOps = 0;
    uint64_t commKernels = 0; // all its communication kernels in the window
    int64_t commTime = 0;     // ns, their summed duration
    int64_t gpuTime = 0;      // ns, summed duration of all its GPU ops in the window
    int64_t wait = 0;         // ns, summed over its steps
    uint64_t slowest = 0;     // steps in which it was the slowest rank
    int64_t lateness = 0;     // ns, summed over those steps

    uint64_t steps() const { return stepsEnd - stepsBegin; }
    double commShare() const {
        return gpuTime > 0 ? static_cast<double>(commTime) / static_cast<double>(gpuTime) : 0.0;
    }
    double meanLateness() const {
        return slowest > 0 ? static_cast<double>(lateness) / static_cast<double>(slowest) : 0.0;
    }
};

// Step k across ranks. Times in ns.
struct CrossRankStep {
    static constexpr uint32_t kNoRank = std::numeric_limits<uint32_t>::max();

    uint32_t ranks = 0;   // ranks that have a k-th step
    uint32_t arrived = 0; // of those, ranks that reached a collective in it
    int64_t start = 0;    // earliest start of the k-th step over the ranks
    int64_t firstArrival = RankStep::kNoArrival;
    int64_t lastArrival = RankStep::kNoArrival;
    uint32_t slowest = kNoRank; // row of CrossRankAnalysis::ranks; kNoRank: none (see header)
    int64_t lateness = 0;       // last arrival - second-to-last arrival (0 without slowest)
    int64_t wait = 0;           // summed over the ranks
    double medianStep = 0;      // of the ranks' step durations
    int64_t maxStep = 0;

    bool compared() const { return arrived >= 2; }
    int64_t spread() const { return compared() ? lastArrival - firstArrival : 0; }
};

struct CrossRankVerdict {
    bool dominant = false;                  // `rank` was the slowest in more than half the steps
    uint32_t rank = CrossRankStep::kNoRank; // row of ranks: the slowest most often; kNoRank: none
    uint64_t slowestSteps = 0;              // steps in which it was the slowest
    uint64_t comparedSteps = 0;             // steps where at least two ranks arrived
    double meanLateness = 0;                // ns, over its slowest steps
    uint64_t warmupSteps = 0;   // leading steps left out of the two below (steps.h, warmupSteps)
    int64_t waitBehind = 0;     // ns, the other ranks' wait summed over its slowest steady steps
    int64_t othersStepTime = 0; // ns, the other ranks' step durations summed over those steps
    std::string text;           // one sentence, plain text
};

struct CrossRankAnalysis {
    std::vector<RankSummary> ranks;   // one per source, in TraceStore::sources() order
    std::vector<RankStep> rankSteps;  // grouped by rank as `ranks`, each group by start
    std::vector<CrossRankStep> steps; // step k = steps[k], k < the most steps of any rank
    std::string stepName;             // the NVTX step name without its counter; "" when none
    int64_t totalWait = 0;            // ns, over every rank and step
    CrossRankVerdict verdict;

    std::span<const RankStep> stepsOf(size_t rank) const;
    // The k-th step of ranks[rank], or nullptr when it has fewer steps.
    const RankStep* step(size_t rank, size_t k) const;
};

// Communication kernels and steps whose start lies in [window.t0, window.t1) count.
CrossRankAnalysis analyzeCrossRank(const TraceStore& store, TimeWindow window = {});

// "rank 3" (TraceSource::label()), or the file name for a store that lists no sources.
std::string rankLabel(const TraceStore& store, uint32_t source);

// One row per rank: Rank, Host, GPU, Steps, Step Source, Mean Step (ns), Med Step (ns),
// Mean Compute (ns), Comm Kernels, Comm Time (ns), Comm (%), Wait (ns), Slowest Steps,
// Avg Late (ns), Trace.
Table crossRankTable(const TraceStore& store, const CrossRankAnalysis& analysis);
// One row per step k: Step, Start (ns), Ranks, Arrived, Slowest, Late (ns), Spread (ns),
// Wait (ns), Med Step (ns), Max Step (ns), then one "<rank> Arrival (ns)" column per rank: its
// arrival - the step's first arrival (empty when it did not arrive).
Table rankStepTable(const TraceStore& store, const CrossRankAnalysis& analysis);

} // namespace warpline::model
