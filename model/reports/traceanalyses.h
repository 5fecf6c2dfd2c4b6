#pragma once

// TraceAnalyses: the analyses of one trace, each computed at most once, on first use, from the
// inputs named here: steps from the sync stalls, the insights from the steps and the stalls. The
// reports (reportregistry.h) read them from one such object, for the window (which keeps the
// results for its timeline) and for warpline-stats alike, so both show one computation.
//
// An analysis asked for with less detail than it has is served from what it has; asked for with
// more, it is computed again with that detail and replaces the first (the window asks for the
// most detail first, so that does not happen there).
//
// Thread safety: every member may be called from several threads at once; each analysis is
// computed by the first thread that needs it while the others wait for it (two different ones
// run in parallel). The results are immutable and shared: keep the shared_ptr as long as needed.
// The store must outlive this object.

#include "crossrank.h"
#include "gpugaps.h"
#include "insights.h"
#include "kernelmetrics.h"
#include "runahead.h"
#include "sourcelines.h"
#include "steps.h"
#include "summaries.h"
#include "syncstalls.h"
#include "tracestore.h"

#include <memory>
#include <mutex>
#include <vector>

namespace warpline::model {

class TraceAnalyses {
public:
    explicit TraceAnalyses(const TraceStore& store) : m_store(store) {}
    TraceAnalyses(const TraceAnalyses&) = delete;
    TraceAnalyses& operator=(const TraceAnalyses&) = delete;

    const TraceStore& store() const { return m_store; }

    // analyzeSyncStalls over the whole trace.
    std::shared_ptr<const SyncStallAnalysis> syncStalls();
    // analyzeSteps from syncStalls(): Full has every step's figures and breakdown, Phases only
    // the steps and phases.
    std::shared_ptr<const StepAnalysis> steps(StepDetail detail = StepDetail::Full);
    // analyzeRunAhead over the whole trace: All has the queue depth over time per stream (the
    // timeline's rows), NoDepthSteps the per-stream figures only.
    std::shared_ptr<const RunAheadAnalysis> runAhead(RunAheadDetail detail = RunAheadDetail::All);
    // analyzeGpuGaps over the whole trace (gaps over 10 us) with the launch-bound check to
    // `launchBound` (PerName holds AllKernels holds None).
    std::shared_ptr<const GpuGapAnalysis>
    gaps(GapOptions::LaunchBound launchBound = GapOptions::LaunchBound::PerName);
    // analyzeCrossRank: a session's ranks at their collectives; for one trace, no ranks.
    std::shared_ptr<const CrossRankAnalysis> crossRank();
    // findInsights over the steady state when there are steps (the whole trace otherwise, with
    // the line that says why there are none), from steps(), syncStalls() and, for a session,
    // crossRank().
    std::shared_ptr<const std::vector<Insight>> insights();
    // kernelMetrics: per kernel name, from the GPU metric samples (none: no rows).
    std::shared_ptr<const KernelMetricsReport> kernelMetrics();

    // Over a window (ReportOptions::window), the last window asked for kept: two reports each
    // render one of them. sourceReport: the Python lines and functions; memOpSummary: the memory
    // operations by time and by size.
    std::shared_ptr<const SourceReport> sourceLines(const TimeWindow& window);
    std::shared_ptr<const std::vector<MemOpSummaryRow>> memOps(const TimeWindow& window);
    // The stalls, the run-ahead and the GPU gaps over a window (what starts in it): for the
    // whole trace (TimeWindow{}) the analyses above, else the stalls of syncStalls() within it
    // (stallsWithin), the run-ahead without depth steps and the gaps without the launch-bound
    // check.
    std::shared_ptr<const SyncStallAnalysis> syncStalls(const TimeWindow& window);
    std::shared_ptr<const RunAheadAnalysis> runAhead(const TimeWindow& window);
    std::shared_ptr<const GpuGapAnalysis> gaps(const TimeWindow& window);

private:
    // One analysis, the detail it was computed with (higher: more), and who computes it.
    template <typename T> struct Slot {
        std::mutex mutex;
        std::shared_ptr<const T> value;
        int detail = -1;
    };
    template <typename T, typename Compute>
    static std::shared_ptr<const T> get(Slot<T>& slot, int detail, Compute compute);
    // One analysis over a window, and that window.
    template <typename T> struct WindowSlot {
        std::mutex mutex;
        std::shared_ptr<const T> value;
        TimeWindow window;
    };
    template <typename T, typename Compute>
    static std::shared_ptr<const T> over(WindowSlot<T>& slot, const TimeWindow& window,
                                         Compute compute);

    const TraceStore& m_store;
    Slot<SyncStallAnalysis> m_syncStalls;
    Slot<StepAnalysis> m_steps;
    Slot<RunAheadAnalysis> m_runAhead;
    Slot<GpuGapAnalysis> m_gaps;
    Slot<CrossRankAnalysis> m_crossRank;
    Slot<std::vector<Insight>> m_insights;
    Slot<KernelMetricsReport> m_kernelMetrics;
    WindowSlot<SourceReport> m_sourceLines;
    WindowSlot<std::vector<MemOpSummaryRow>> m_memOps;
    WindowSlot<SyncStallAnalysis> m_syncStallsOver;
    WindowSlot<RunAheadAnalysis> m_runAheadOver;
    WindowSlot<GpuGapAnalysis> m_gapsOver;
};

} // namespace warpline::model
