#pragma once

// Insights: plain-language findings built from the run-ahead, sync-stall, gap, kernel and
// cross-rank analyses, ranked by the time at stake, each with its numbers and the events that show
// it. Rules, thresholds and wording: docs/analyses.md, "Insights".
//
// Pure function of the store (and the analyses passed in): safe on a worker thread. Refs point
// into the same store the analyses were computed from.

#include "crossrank.h"
#include "gpugaps.h"
#include "runahead.h"
#include "steps.h"
#include "syncstalls.h"
#include "table.h"
#include "tracestore.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace warpline::model {

enum class InsightKind : uint8_t {
    SyncStall,           // the CPU waited in synchronizing calls
    LaunchBound,         // kernels shorter than their launches (a device, or an NVTX region)
    GpuIdle,             // the GPU idled for another reason (host-wait, dependencies)
    RunAhead,            // how far the CPU queued work ahead of the GPU
    KernelConcentration, // one kernel owns most of the GPU time
    LateRank,            // one rank of a session reaches the collectives last; the others wait
    StartUp,             // the time before the first training step (and its warm-up steps)
    MemoryBound,         // kernels at the DRAM/L2 roof (GPU metrics samples, kernelmetrics.h)
    // From the steady steps' breakdown (stepbreakdown.h; causeinsights.h):
    GpuBound,      // the GPU computes nearly all of each step: the kernels hold the time
    Copies,        // memcpys (and memsets) keep the GPU busy
    Communication, // collectives run with no computation beside them
    CpuWork,       // the GPU idles while the CPU runs host code outside CUDA calls
    InputBound,    // the GPU idles while the CPU waits for (or makes) the next batch
    Allocator,     // the GPU idles while the CPU allocates and frees device memory
    Compilation,   // the GPU idles while new GPU code is compiled and loaded (JIT, recompiles)
    NoSteps,       // no training steps were found: why, in one line (listed last)
};
std::string_view insightKindName(InsightKind kind); // "sync-stall", "launch-bound", ...

struct InsightNumber {
    std::string name; // stable key, e.g. "stalled_share", "count", "median_kernel_ns"
    double value = 0; // ns for *_ns, 0..1 for *_share, plain count otherwise
};

struct Insight {
    InsightKind kind = InsightKind::SyncStall;
    int64_t stake = 0; // ns of time at stake: the ranking key (see docs/analyses.md)
    // The verdict: what limits the steady state's steps, listed first whatever its stake.
    bool verdict = false;
    std::string text; // one or two sentences, plain text
    std::vector<InsightNumber> numbers;
    // The events that show it, at most InsightOptions::maxRefs each, in time order:
    std::vector<EventRef> apiCalls; // into TraceStore::apiTracks()
    std::vector<EventRef> gpuOps;   // into TraceStore::gpuTracks()
    uint64_t eventCount = 0;        // how many events the finding is about (may exceed the refs)

    double number(std::string_view name) const; // 0 when absent
};

struct InsightOptions {
    GapOptions gaps;             // threshold of listed gaps, and the window of every analysis
    size_t maxRefs = 1000;       // per insight and ref family
    double minStallShare = 0.05; // report a stall pattern from this share of its thread's time
    double minIdleShare = 0.2;   // report GPU idle from this share of the active window
    int64_t minRunAheadLag = 1'000'000; // ns: report run-ahead from this p95 lag ...
    int32_t minRunAheadDepth = 16;      // ... or this max queue depth
    double minKernelShare = 0.3;        // report the top kernel from this share of kernel time
    uint64_t minRegionKernels = 16;     // an NVTX region needs this many kernels for a finding
    double minRegionIdleShare = 0.05;   // look for launch-bound regions from this GPU idle share
    double minRankWaitShare = 0.05;   // report a late rank from this share of the others' step time
    double minMemoryBoundShare = 0.2; // report memory-bound kernels from this share of kernel time
};

// Runs the analyses over options.gaps.window and returns the findings, by stake descending.
// When the window is the whole trace (the default) and the trace has training steps (steps.h),
// the analyses run over the steady state instead, and one StartUp finding, last whatever its
// stake, says how long start-up (and warm-up) took: a program's set-up does not drown the
// findings about the loop it runs.
std::vector<Insight> findInsights(const TraceStore& store, const InsightOptions& options = {});
// The same with the steps the caller already has, and the whole trace's sync stalls
// (analyzeSyncStalls(store)) and a session's ranks (analyzeCrossRank(store)) when it has those
// too.
std::vector<Insight> findInsights(const TraceStore& store, const StepAnalysis& steps,
                                  const InsightOptions& options = {},
                                  const SyncStallAnalysis* wholeStalls = nullptr,
                                  const CrossRankAnalysis* wholeCrossRank = nullptr);
// The same from analyses the caller already has (the GUI computes them for its panels).
// crossRank: analyzeCrossRank of a session, or an empty analysis for a store of one file.
std::vector<Insight> findInsights(const TraceStore& store, const RunAheadAnalysis& runAhead,
                                  const SyncStallAnalysis& stalls, const GpuGapAnalysis& gaps,
                                  const CrossRankAnalysis& crossRank,
                                  const InsightOptions& options = {});

// Appends the no-steps finding (why no steps were found; it goes last) when `steps` has a
// reason: the window, which finds its insights from analyses it already has, adds it so.
void addNoStepsInsight(const StepAnalysis& steps, std::vector<Insight>& out);

// Rank, Kind, Time at Stake (ns), Finding, Numbers ("key=value; ..."), Events (count),
// Refs ("api T:I; gpu T:I; ...", the first ten).
Table insightTable(const TraceStore& store, const std::vector<Insight>& insights);

} // namespace warpline::model
