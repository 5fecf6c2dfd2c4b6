#include "traceanalyses.h"

namespace warpline::model {

namespace {

// Higher: more detail. Each enum lists the most detail first.
int rank(StepDetail d) {
    return d == StepDetail::Full ? 1 : 0;
}

int rank(RunAheadDetail d) {
    return d == RunAheadDetail::All ? 2 : d == RunAheadDetail::NoDepthSteps ? 1 : 0;
}

int rank(GapOptions::LaunchBound b) {
    using B = GapOptions::LaunchBound;
    return b == B::PerName ? 2 : b == B::AllKernels ? 1 : 0;
}

} // namespace

template <typename T, typename Compute>
std::shared_ptr<const T> TraceAnalyses::get(Slot<T>& slot, int detail, Compute compute) {
    std::lock_guard lock(slot.mutex);
    if (!slot.value || slot.detail < detail) {
        slot.value = std::make_shared<const T>(compute());
        slot.detail = detail;
    }
    return slot.value;
}

template <typename T, typename Compute>
std::shared_ptr<const T> TraceAnalyses::over(WindowSlot<T>& slot, const TimeWindow& window,
                                             Compute compute) {
    std::lock_guard lock(slot.mutex);
    if (!slot.value || !(slot.window == window)) {
        slot.value = std::make_shared<const T>(compute());
        slot.window = window;
    }
    return slot.value;
}

std::shared_ptr<const SyncStallAnalysis> TraceAnalyses::syncStalls() {
    return get(m_syncStalls, 0, [&] { return analyzeSyncStalls(m_store); });
}

std::shared_ptr<const StepAnalysis> TraceAnalyses::steps(StepDetail detail) {
    return get(m_steps, rank(detail), [&] { return analyzeSteps(m_store, *syncStalls(), detail); });
}

std::shared_ptr<const RunAheadAnalysis> TraceAnalyses::runAhead(RunAheadDetail detail) {
    return get(m_runAhead, rank(detail), [&] { return analyzeRunAhead(m_store, {}, detail); });
}

std::shared_ptr<const GpuGapAnalysis> TraceAnalyses::gaps(GapOptions::LaunchBound launchBound) {
    return get(m_gaps, rank(launchBound), [&] {
        GapOptions options;
        options.launchBound = launchBound;
        return analyzeGpuGaps(m_store, options);
    });
}

std::shared_ptr<const CrossRankAnalysis> TraceAnalyses::crossRank() {
    return get(m_crossRank, 0, [&] { return analyzeCrossRank(m_store); });
}

std::shared_ptr<const std::vector<Insight>> TraceAnalyses::insights() {
    return get(m_insights, 0, [&] {
        const auto stalls = syncStalls();
        // A session's ranks, computed once for the Ranks reports and the findings alike.
        const auto ranks = m_store.isSession() ? crossRank() : nullptr;
        return findInsights(m_store, *steps(), {}, stalls.get(), ranks.get());
    });
}

std::shared_ptr<const KernelMetricsReport> TraceAnalyses::kernelMetrics() {
    return get(m_kernelMetrics, 0, [&] { return model::kernelMetrics(m_store); });
}

std::shared_ptr<const SourceReport> TraceAnalyses::sourceLines(const TimeWindow& window) {
    return over(m_sourceLines, window, [&] { return sourceReport(m_store, window); });
}

std::shared_ptr<const std::vector<MemOpSummaryRow>>
TraceAnalyses::memOps(const TimeWindow& window) {
    return over(m_memOps, window, [&] { return memOpSummary(m_store, window); });
}

std::shared_ptr<const SyncStallAnalysis> TraceAnalyses::syncStalls(const TimeWindow& window) {
    if (window == TimeWindow{})
        return syncStalls();
    const auto whole = syncStalls();
    return over(m_syncStallsOver, window, [&] { return stallsWithin(m_store, *whole, window); });
}

std::shared_ptr<const RunAheadAnalysis> TraceAnalyses::runAhead(const TimeWindow& window) {
    if (window == TimeWindow{})
        return runAhead(RunAheadDetail::NoDepthSteps);
    return over(m_runAheadOver, window,
                [&] { return analyzeRunAhead(m_store, window, RunAheadDetail::NoDepthSteps); });
}

std::shared_ptr<const GpuGapAnalysis> TraceAnalyses::gaps(const TimeWindow& window) {
    if (window == TimeWindow{})
        return gaps(GapOptions::LaunchBound::None);
    return over(m_gapsOver, window, [&] {
        GapOptions options;
        options.window = window;
        options.launchBound = GapOptions::LaunchBound::None;
        return analyzeGpuGaps(m_store, options);
    });
}

} // namespace warpline::model
