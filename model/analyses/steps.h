#pragma once

// Training steps: the repeated unit of work of a training (or inference) loop, what each step
// spends its time on, and where the steady state begins. Definitions and formulas:
// docs/analyses.md, "Steps".
//
// Where the steps come from, the first way that finds at least two:
//  1. NVTX: the instances of one repeated, numbered range ("step 3", "iteration 12", "Step#3",
//     "step -1", PyTorch's "ProfilerStep#3"; the counter is the last run of digits, with its
//     sign), or of one unnumbered range holding a step word ("train_step", "md_step"), on one
//     thread. The name without its counter is chosen once: among the names with at least two
//     instances on one thread (three unnumbered), one holding a step word ("step", "iter",
//     "batch") first,
//     then the one with the most range time; it must hold a step word ("replay 3", "layer_2" are
//     not a loop's steps). A PyTorch profiler trace's operators (domain "cpu_op") are never
//     steps, except ProfilerStep#N. Its thread is the one with the most instances; an instance
//     nested in (or overlapping) an earlier one is dropped. A step lasts until the next one
//     starts (the wait for the next batch, outside the range, belongs to the loop), unless the
//     gap is longer than 4x the gaps' 75th percentile and the median range (another phase).
//  2. Repeats: the launch sequence of the rank that launched the most GPU work (every thread of
//     it: PyTorch runs the backward pass on a thread of its own; else its busiest thread alone;
//     that one first when the threads launch at the same time, more than one launch in ten
//     switching thread, each running a loop of its own),
//     as the names of the GPU ops each launch call started, in call order. Its period P is the
//     smallest shift under which at least 95% of the last half (else quarter, eighth) of the
//     sequence matches itself (P from 3 to 4096 launches, at least three repeats; one kernel
//     repeated, or two alternating, is a launch loop, not a loop of steps). A step starts at a
//     launch whose name occurs once per period there (in the first period the next repeats
//     exactly, and about once a period throughout): the one fewest launches after the rank's
//     sync stalls (a loop that reads its loss back ends each step waiting), then the one
//     launched first in the trace (the loop begins there), then the one after the longest CPU
//     pauses between launches. Each occurrence of that name starts a step when the next one
//     follows within [P/2, 2P] launches (the first steps may launch more: set-up, autotuning);
//     the step begins at the first launch after the sync stall before that occurrence, when that
//     lies less than P/2 launches before it. A step ends where the next begins; the last at the
//     end of its P-th launch (call or op) or of a sync stall that starts before any later
//     launch.
//     A loop whose steps vary (a loss printed every N steps, an evaluation every M, a
//     recompilation, batches of varying size) matches no shift: then a name that cuts the last
//     half into segments of near-equal length (80% within 25% of their median) starts the steps
//     (anchorFit in steps.cpp), and a step may be any length.
//  3. Sync cadence: a loop of one kernel name that waits at the end of each iteration: the
//     busiest thread's stalls cut it into steps when the launches between them are near-equal
//     in number.
//     Steps from repeats that launched under a tenth of the rank's GPU ops (first step's start
//     to last step's end) are a loop inside a step or after the loop (an LSTM's time steps, a
//     final evaluation's ticks): dropped, in a trace of one rank.
//  4. Optimizer (one rank): when neither gives steps, the runs of PyTorch's optimizer kernels
//     (at least eight, spread over half the launches, durations regular) end the steps: a
//     training loop whose batches vary in shape too much to repeat.
// NVTX steps of gradient accumulation ("micro_step" K times, then "optimizer_step", whose
// instances launch the optimizer's kernels) are grouped: each optimizer range ends a step.
// When the CPU runs more than a step ahead of the GPU (no sync in the loop), the steps are moved
// onto the GPU's timeline: a step runs from the GPU start of the first op launched in it to that
// of the next step's first op (StepAnalysis::measuredOnGpu).
//
// Per step [start, end) (ns; GPU ops and CPU threads are those of the step thread's rank, GPU ops
// clipped to the step):
//  - gpuBusy: the union of the GPU ops' intervals; kernel, memcpy, memset: their summed time;
//  - syncWait: the CPU time the rank's threads spent in sync stalls (syncstalls.h);
//  - launch: the CPU time of the rank's outermost launch calls ("Launch" in the name);
//  - kernels launched in the step (launch call start in it) and those of them that are
//    launch-bound: shorter than their launch cost (the call's duration / the ops it launched);
//  - causes: where every instant of the step went (stepbreakdown.h): GPU busy by what ran, GPU
//    idle by what the CPU was doing.
// Warm-up: the leading steps each longer than 1.5x the median of the (up to) five steps after it.
// Steady state: from the first step that is not warm-up to the end of the last step. Start-up:
// the trace's begin to the first step; teardown: the last step's end to the trace's end.
//
// Pure function of the store: safe on a worker thread. O(events log n) for NVTX steps; the repeat
// search is O(min(L, 16384) * min(P, 4096)) for L launches.

#include "stepbreakdown.h"
#include "summaries.h"
#include "syncstalls.h"
#include "table.h"
#include "tracestore.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace warpline::model {

// --- NVTX step ranges (also the steps of each rank in crossrank.h) -----------------------------

// True when the name holds a step word: "step", "iter" or "batch", in any case.
bool hasStepWord(const std::string& name);
// The last run of digits in a range name ("step 12" -> 12, "ProfilerStep#3" -> 3, "step -2" ->
// -2: a minus sign after a separator is the counter's sign); none without digits.
std::optional<int64_t> trailingNumber(const std::string& name);
// The first run of digits, with its sign as trailingNumber's ("recording 17 CardioMem-5" -> 17).
std::optional<int64_t> leadingNumber(const std::string& name);

// False for a range that cannot be a step: an operator of a PyTorch profiler trace (domain
// "cpu_op": "CudnnBatchNormBackward0" holds "batch" but is no step), except "ProfilerStep#N".
bool mayBeStepRange(const TraceStore& store, const NvtxTrack& track, size_t i);

// The repeated NVTX range name that marks the steps (numbered, or unnumbered with a step word),
// and on which thread of each rank.
struct StepRanges {
    bool found = false;
    std::string name;                   // without its counter: "step"
    std::vector<NameId> names;          // name ids whose normalized name is the step name (sorted)
    std::vector<uint32_t> threadOfRank; // EventRef::kNone: the rank has none
    // counterRanges: the counter is the name's first run of digits, a label follows it
    // ("recording 17 CardioMem-5"); else the last (trailingNumber).
    bool leadingCounter = false;
    // findStepRanges: the other repeated names with a step word (the ids of each, sorted), most
    // range time first, at most four: an "optimizer_step" after K "micro_step"s (steps.cpp).
    std::vector<std::vector<NameId>> others;
};
// The source (rank) of each thread of the store, clamped to [0, sourceCount).
std::vector<uint32_t> threadSources(const TraceStore& store, size_t sourceCount);

// threadSource[t]: the rank (0 .. rankCount - 1) of thread t. Ranges starting in `w` count.
StepRanges findStepRanges(const TraceStore& store, const std::vector<uint32_t>& threadSource,
                          size_t rankCount, const TimeWindow& w);

// Ranges whose trailing counter counts up through the run, with or without a step word
// ("tenant5/req0144"): the key replaces every run of digits ("tenant#/req#"), or, for a name whose
// first counter a label follows, keeps what comes before that counter ("recording 17 CardioMem-5",
// "recording 18 DR180+": "recording #…", counted by 17, 18; consecutive ranges with the same
// leading counter are one instance: "it03.rollout", "it03.update" is step 3). Found when one
// thread holds at least eight instances, 90% with distinct counters and 90% rising from one to the
// next, covering half the time from the first's start to the last's end; the longest such key.
StepRanges counterRanges(const TraceStore& store, const std::vector<uint32_t>& threadSource,
                         size_t rankCount);

// A loop annotated with one range an iteration, named without a counter or a step word
// ("process_frame" around each frame of a C++ pipeline): a name with at least eight outermost
// instances on one thread (nested or overlapping ones dropped) that cover 90% of the time from
// the first's start to the last's end; the one covering the most time. Phases of a step
// ("forward", "backward") each cover part of it; a library's ranges around its calls are nested
// in the program's, or cover little.
StepRanges loopRanges(const TraceStore& store, const std::vector<uint32_t>& threadSource,
                      size_t rankCount);

// One instance of the step range.
struct StepRange {
    int64_t start = 0, end = 0;    // ns
    std::optional<int64_t> number; // its counter, as written
    EventRef range;                // into TraceStore::nvtxTracks()
};
// The instances of the step name on `thread`, by start, nested or overlapping ones dropped (under
// a leading counter, consecutive ones with the same counter joined into one).
std::vector<StepRange> stepRangesOn(const TraceStore& store, const StepRanges& ranges,
                                    uint32_t thread, const TimeWindow& w);

// --- steps and their breakdown -------------------------------------------------------------------

enum class StepSource : uint8_t { None, Nvtx, Repeats };

struct Step {
    int64_t number = 0;         // the range's counter, else its position (0, 1, ...)
    int64_t start = 0, end = 0; // ns
    EventRef range;             // nvtxTracks(): the step's NVTX range; invalid for repeats
    bool warmup = false;
    int64_t gpuBusy = 0;  // ns
    int64_t kernel = 0;   // ns
    int64_t memcpy = 0;   // ns
    int64_t memset = 0;   // ns
    int64_t syncWait = 0; // ns
    int64_t launch = 0;   // ns
    uint64_t kernels = 0; // kernels launched in the step
    uint64_t launchBoundKernels = 0;
    StepBreakdown causes; // where its time went (stepbreakdown.h); sums to duration()

    int64_t duration() const { return end - start; }
    double launchBoundShare() const {
        return kernels ? static_cast<double>(launchBoundKernels) / static_cast<double>(kernels)
                       : 0.0;
    }
};

struct StepAnalysis {
    StepSource source = StepSource::None;
    std::string name;                  // "step" (NVTX name without counter); "" for repeats
    uint32_t thread = EventRef::kNone; // into TraceStore::threads()
    uint32_t period = 0;               // launches per step (repeats only)
    std::vector<Step> steps;           // by start
    size_t firstSteady = 0;            // index of the first step that is not warm-up
    double medianDuration = 0;         // ns, over the steady steps
    int64_t p95Duration = 0;           // ns, over the steady steps
    int64_t traceBegin = 0, traceEnd = 0;
    // The steps were moved onto the GPU's timeline: the CPU ran more than a step ahead, so each
    // step runs from the GPU start of its first op to that of the next step's.
    bool measuredOnGpu = false;
    // One line on why no steps were found (empty when there are steps).
    std::string noStepsReason;
    // The steady steps' breakdowns summed.
    StepBreakdown steadyCauses() const;

    bool empty() const { return steps.empty(); }
    size_t warmupSteps() const { return firstSteady; }
    // [first steady step's start, last step's end); the whole trace when there are no steps.
    TimeWindow steadyWindow() const;
    int64_t startup() const { return empty() ? 0 : steps.front().start - traceBegin; }
    int64_t teardown() const { return empty() ? 0 : traceEnd - steps.back().end; }
    // The phase a time lies in: "start-up" (before the first step), "warm-up", "steady state",
    // "teardown" (from the last step's end); "whole trace" when there are no steps. Its rank orders
    // phases steady state first: 0 steady state, 1 start-up, 2 warm-up, 3 teardown, 4 whole trace.
    std::string_view phaseOf(int64_t t) const;
    static int phaseRank(std::string_view phase);
    // The phase's [t0, t1) (ns). Start-up has no lower bound and teardown no upper one, and
    // "whole trace" (or any other name) is TimeWindow{}: every event of the phase counts.
    TimeWindow phaseWindow(std::string_view phase) const;
    // The window the viewer opens on: `count` steady steps from the first steady one (all of
    // them when fewer); the whole trace when there are no steps.
    TimeWindow openingWindow(size_t count = 5) const;
};

// How many leading steps are warm-up: each longer than 1.5x the median of the (up to) five
// steps after it (StepAnalysis::firstSteady; the late-rank share of crossrank.h).
size_t warmupSteps(std::span<const int64_t> durations);

// The steps of one rank (source) from its repeating launches alone (2. above), as [start, end)
// spans; empty when it has fewer than two. A session's ranks without step ranges (crossrank.h).
std::vector<std::pair<int64_t, int64_t>>
repeatStepSpans(const TraceStore& store, const SyncStallAnalysis& stalls, uint32_t source);

// How much analyzeSteps computes: every step's figures and breakdown (Full: the steps table,
// insights), or the steps, their warm-up and phases only (Phases: reports split by phase, which
// then skip the breakdown's pass over every event).
enum class StepDetail : uint8_t { Full, Phases };

StepAnalysis analyzeSteps(const TraceStore& store, StepDetail detail = StepDetail::Full);
// The same with the sync-stall analysis the caller already has.
StepAnalysis analyzeSteps(const TraceStore& store, const SyncStallAnalysis& stalls,
                          StepDetail detail = StepDetail::Full);

// One row per step: Step, Start (ns), Duration (ns), GPU Busy (ns), GPU Busy (%), Kernel (ns),
// Memcpy (ns), Memset (ns), Sync Wait (ns), Launch (ns), Kernels, Launch Bound (%), Warm-up;
// then two rows "median" and "p95" over the steady steps (durations and each time column).
Table stepTable(const TraceStore& store, const StepAnalysis& analysis);

} // namespace warpline::model
