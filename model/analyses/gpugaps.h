#pragma once

// GPU utilization, idle gaps and launch-bound kernels. Definitions and formulas:
// docs/analyses.md, "GPU utilization and idle gaps" and "Launch-bound kernels".
//
//  - Busy time of a device = the length of the union of its GPU ops' [start, end) intervals, over
//    every stream (kernels, copies, memsets); overlapping ops count once.
//  - Active window of a device = [first op start, last op end) (ops starting in the window);
//    idle = active - busy; utilization = busy / active. Time before the device's first op (program
//    start-up) and after its last is not idle.
//  - A gap is a maximal interval of the active window in which no op of the device runs. Gaps
//    longer than GapOptions::threshold (strictly) are listed; shorter ones only add to shortIdle.
//  - Cause of a listed gap: HostWait when the op that ends it (the first op starting at the gap's
//    end) had not been launched yet when the gap began: its launch call ENDS after the gap start
//    (the call may have started before, as in a launch-bound loop where each launch takes longer
//    than the kernel before it). Other: the op was launched in time and waited for something else
//    (a dependency, an event, a copy engine), or its launch is not in the trace.
//  - Launch-bound kernels (per kernel name, over every device): median kernel duration < median
//    launch cost, where the launch cost of a kernel = its launch call's duration / the number of
//    GPU ops that call launched (a cudaGraphLaunch spreads its cost over its kernels). Kernels
//    whose launch is not in the trace are left out.
//
// Pure function of the store: safe on a worker thread (it uses a second one itself). O(n) for n
// ops per device while its streams take turns in runs (O(n s) at worst for s streams), O(n +
// names) for the launch-bound table; a few arrays, no allocation per op.

#include "summaries.h"
#include "table.h"
#include "tracestore.h"

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace warpline::model {

struct GapOptions {
    int64_t threshold = 10'000; // ns: list gaps longer than this
    TimeWindow window;          // ops whose start lies in [t0, t1) count
    // How much of the launch-bound check to compute: per kernel name (GpuGapAnalysis::launchBound
    // and allKernels), only over every kernel (allKernels; launchBound stays empty), or none.
    enum class LaunchBound { PerName, AllKernels, None };
    LaunchBound launchBound = LaunchBound::PerName;
};

enum class GapCause : uint8_t { HostWait, Other };
std::string_view gapCauseName(GapCause cause); // "host-wait", "other"

struct GpuGap {
    uint32_t deviceId = 0;
    int64_t start = 0; // ns: end of the busy interval before
    int64_t end = 0;   // ns: start of `after`
    GapCause cause = GapCause::Other;
    EventRef before;      // gpuTracks(): the op whose end starts the gap
    EventRef after;       // gpuTracks(): the op whose start ends it
    EventRef afterLaunch; // apiTracks(): its launch call; invalid when unknown

    int64_t duration() const { return end - start; }
};

struct DeviceUtilization {
    uint32_t deviceId = 0;
    uint64_t ops = 0;
    int64_t activeStart = 0;           // ns
    int64_t activeEnd = 0;             // ns
    int64_t busy = 0;                  // ns
    int64_t opTime = 0;                // ns, sum of the ops\' durations
    uint64_t gaps = 0;                 // listed gaps (longer than the threshold)
    int64_t hostWaitIdle = 0;          // ns in listed HostWait gaps
    int64_t otherIdle = 0;             // ns in listed Other gaps
    int64_t shortIdle = 0;             // ns in gaps not longer than the threshold
    int64_t longestGap = 0;            // ns
    size_t gapsBegin = 0, gapsEnd = 0; // [begin, end) into GpuGapAnalysis::gaps

    int64_t active() const { return activeEnd - activeStart; }
    int64_t idle() const { return active() - busy; }
    // Op time beyond the busy union: > 0 exactly when ops ran at the same time (on different
    // streams); each extra op counts its overlapping part once.
    int64_t overlap() const { return opTime - busy; }
    double utilization() const {
        return active() > 0 ? static_cast<double>(busy) / static_cast<double>(active()) : 0.0;
    }
};

struct LaunchBoundRow {
    NameId kernel = kNoName; // demangled name
    uint64_t count = 0;      // kernels with a known launch
    double medianKernel = 0; // ns
    double medianLaunch = 0; // ns, launch cost per kernel
    int64_t totalKernel = 0; // ns
    int64_t totalLaunch = 0; // ns, sum of launch costs
    bool launchBound() const { return count > 0 && medianKernel < medianLaunch; }
};

struct GpuGapAnalysis {
    int64_t threshold = 0;
    std::vector<DeviceUtilization> devices; // by device id; devices with at least one op
    std::vector<GpuGap> gaps;               // grouped by device as `devices`, each by start
    // Per kernel name, sorted by total kernel time descending, then name.
    std::vector<LaunchBoundRow> launchBound;
    LaunchBoundRow allKernels; // the same over every kernel (kernel = kNoName)

    std::span<const GpuGap> gapsOf(size_t deviceRow) const;
};

GpuGapAnalysis analyzeGpuGaps(const TraceStore& store, const GapOptions& options = {});
// The launch-bound part of analyzeGpuGaps alone (what options.launchBound asks for, over
// options.window), into an analysis made with LaunchBound::None: for callers that learn from the
// gaps whether they need it.
void fillLaunchBound(const TraceStore& store, const GapOptions& options, GpuGapAnalysis& analysis);

// Launch-bound check per NVTX region. A region is every range (push/pop or start/end) whose name,
// without a trailing counter ("step 12" -> "step"), is the same. Its kernels are those whose launch
// call starts inside one of its instances on the instance's thread; a kernel counts once per
// instance that holds it (so a range nested in a same-named range counts it twice). Ranges
// starting in the window count.
struct RangeLaunchBound {
    std::string range;      // normalized range name
    uint64_t instances = 0; // instances that launched at least one kernel
    LaunchBoundRow kernels; // over the region's kernels (kernel = kNoName)
    // Launch cost not hidden behind kernel time: max(0, totalLaunch - totalKernel), ns.
    int64_t uncovered() const {
        return std::max<int64_t>(0, kernels.totalLaunch - kernels.totalKernel);
    }
};
// Sorted by uncovered() descending, then range name. O(kernel visits + ranges * log calls).
std::vector<RangeLaunchBound> launchBoundByRange(const TraceStore& store, TimeWindow window = {});
// Range, Range Instances, Kernel Instances, Med Kernel (ns), Med Launch (ns), Total Kernel (ns),
// Total Launch (ns), Launch Bound.
Table launchBoundRangeTable(const std::vector<RangeLaunchBound>& rows);

// One row per device: Device, Utilization (%), Active (ns), Busy (ns), Idle (ns), Ops,
// Gaps (> threshold), Host-Wait Idle (ns), Other Idle (ns), Short Idle (ns), Longest Gap (ns),
// Med Kernel (ns), Med Launch (ns), Launch Bound.
// (The last three are over every kernel of every device.)
Table utilizationTable(const TraceStore& store, const GpuGapAnalysis& analysis);
struct StepAnalysis;
// Gaps grouped by (device, cause, name of the op after the gap), by total time descending:
// Time (%), Total Time (ns), Gaps, Avg (ns), Med (ns), Min (ns), Max (ns), Device, Cause, Next Op.
// Time (%) = share of the device's active window. With `steps`, a first column Phase (where the
// gap begins: StepAnalysis::phaseOf) splits the groups too, steady state first, then start-up,
// warm-up and teardown, each by total time, and Time (%) is the share of the part of the active
// window in that phase.
Table gapSummaryTable(const TraceStore& store, const GpuGapAnalysis& analysis,
                      const StepAnalysis* steps = nullptr);
// One row per listed gap, by device then start: Device, Start (ns), End (ns), Duration (ns), Cause,
// Previous Op, Next Op, Next Launch Start (ns), Next Launch End (ns); with `steps`, a last column
// Phase.
Table gapTable(const TraceStore& store, const GpuGapAnalysis& analysis,
               const StepAnalysis* steps = nullptr);
// Per kernel name: Kernel Instances, Med Kernel (ns), Med Launch (ns), Total Kernel (ns),
// Total Launch (ns), Launch Bound, Name.
Table launchBoundTable(const TraceStore& store, const GpuGapAnalysis& analysis);

// utilizationTable with a first column, Phase, over the whole trace and, when the trace has
// training steps (steps.h), over its start-up (before the first step), warm-up steps, steady state
// and teardown (after the last step): a program's set-up does not hide how busy its loop keeps the
// GPU. Each phase counts the ops that start in it. `whole`: the whole trace's gaps, with the
// launch-bound check over all kernels at least (GapOptions::LaunchBound::AllKernels).
Table utilizationByPhase(const TraceStore& store, const StepAnalysis& steps,
                         const GpuGapAnalysis& whole);

} // namespace warpline::model
