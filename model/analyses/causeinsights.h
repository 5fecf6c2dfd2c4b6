#pragma once

// Findings from the steady steps' breakdown (stepbreakdown.h): what limits a training loop, named
// by its cause, with the advice that fits that cause, its evidence and the time at stake.
// Rules and wording: docs/analyses.md, "Insights", "The verdict".
//
//  - One finding per cause that holds at least kMinCauseShare of the steady state's time (GPU
//    compute: GpuBound; copies and memsets: Copies; collectives alone: Communication; launch
//    cost: LaunchBound; host work outside CUDA calls: CpuWork; waiting for the next batch:
//    InputBound; a sync and its refill: SyncStall; allocator calls: Allocator; JIT compilation:
//    Compilation). Its stake is the cause's time over the steady steps.
//  - The verdict (Insight::verdict, listed first): GpuBound when the causes other than computing
//    hold less than kMaxOverheadShare of the steady state (the GPU computes nearly all the time:
//    its kernels set the step time), or when the GPU computes kMostlyComputeShare and no other
//    cause alone holds kMaxOverheadShare (a 6% sync beside 90% of compute is no verdict), or when
//    it computes kComputeOverLaunchShare and the launch idle is at most a third of that with no
//    other cause at kMaxOverheadShare (eager PyTorch's overhead between large kernels: a finding,
//    not the verdict); else the finding of the cause with the most time. A one-time compilation is
//    never the verdict. A launch-bound verdict whose steps wait for the GPU kDenseSyncMinimum
//    times a step or more gives way to the synchronization when that holds at least
//    kSyncBeforeLaunchShare of the launch idle: its remedy must come first.
//
// Pure function of the store and the steps: safe on a worker thread.

#include "insights.h"
#include "steps.h"

#include <vector>

namespace warpline::model {

inline constexpr double kMinCauseShare = 0.05;
inline constexpr double kMaxOverheadShare = 0.10;
inline constexpr double kMostlyComputeShare = 0.85;
inline constexpr double kComputeOverLaunchShare = 0.60;
inline constexpr double kSyncBeforeLaunchShare = 0.5;
// A launch-bound finding says how much of the launching thread's CPU samples were the recorder's
// own work (recorderShare, cpuactivity.h) from this share on.
inline constexpr double kRecorderNote = 0.05;

// Appends the findings of the steady steps' causes to `out` (nothing without steps).
// `steadyStalls`: the sync stalls over options.gaps.window (the steady state).
void stepCauseInsights(const TraceStore& store, const StepAnalysis& steps,
                       const SyncStallAnalysis& steadyStalls, const InsightOptions& options,
                       std::vector<Insight>& out);

// Appends the one StartUp finding (nothing without steps): start-up, warm-up and teardown, how
// long each took and where the time went. Start-up and teardown as the rank's CPU threads saw
// them: with no CUDA call (gaps between outermost calls of kCpuStretch or longer; the longest
// named by the call that ended it) or in CUDA calls (the rest; the three names that took
// longest), and the GPU's busy time beside them; the warm-up steps by what they spent beyond as
// many steady steps, per cause of their breakdown (stepbreakdown.h).
void phaseInsight(const TraceStore& store, const StepAnalysis& steps, std::vector<Insight>& out);

} // namespace warpline::model
