#include "traceanalyzer.h"

#include "cpuactivity.h"
#include "eventsearch.h"
#include "kernelmetrics.h"
#include "sourcelines.h"
#include "summaries.h"

#include <algorithm>
#include <chrono>

namespace warpline::views {

namespace {

RowTarget rangeTarget(int64_t t0, int64_t t1, EventId event = {}) {
    RowTarget target;
    target.t0 = t0;
    target.t1 = std::max(t1, t0 + 1);
    target.event = event;
    return target;
}

// A report whose rows each point at one name: clicking a row finds that kernel, API function or
// memory operation on the timeline.
template <typename Rows, typename Aim>
ReportTable namedReport(const QString& id, const QString& title, model::Table table,
                        const Rows& rows, Aim aim) {
    ReportTable report{id, title, std::move(table), {}};
    for (const auto& row : rows) {
        RowTarget target;
        aim(target, row);
        report.targets.push_back(target);
    }
    return report;
}

// The summary reports that can cover a window of the trace (TraceAnalyzer::summaries).
ReportTable kernelsReport(const model::TraceStore& store, model::TimeWindow window) {
    const auto rows = model::kernelSummary(store, model::KernelGrouping::Name, window);
    return namedReport(QStringLiteral("kernels"), QStringLiteral("Kernels"),
                       model::kernelSummaryTable(store, rows), rows,
                       [](RowTarget& target, const auto& row) { target.kernel = row.name; });
}

ReportTable apiReport(const model::TraceStore& store, model::TimeWindow window) {
    const auto rows = model::apiSummary(store, window);
    return namedReport(QStringLiteral("api"), QStringLiteral("CUDA API"),
                       model::apiSummaryTable(store, rows), rows,
                       [](RowTarget& target, const auto& row) { target.apiName = row.name; });
}

ReportTable memOpsReport(const model::TraceStore& store, model::TimeWindow window) {
    const auto rows = model::memOpSummary(store, window);
    return namedReport(QStringLiteral("memops"), QStringLiteral("Memory operations"),
                       model::memTimeSummaryTable(store, rows), rows,
                       [](RowTarget& target, const auto& row) { target.kernel = row.operation; });
}

void addKernels(LoadedTrace& trace) {
    trace.reports.push_back(kernelsReport(*trace.store, {}));
}

void addApi(LoadedTrace& trace) {
    trace.reports.push_back(apiReport(*trace.store, {}));
}

// Numbered ranges ("step 0" ... "step 29") share one row ("step N"); a row highlights every
// instance, and double-clicking it zooms to the instance of median duration.
ReportTable nvtxReport(const model::TraceStore& store, model::TimeWindow window) {
    model::NvtxSummaryOptions options;
    options.window = window;
    options.grouping = model::NvtxGrouping::Numbered;
    options.instances = true;
    const auto rows = model::nvtxSummary(store, options);
    ReportTable report{
        QStringLiteral("nvtx"), QStringLiteral("NVTX"), model::nvtxSummaryTable(store, rows), {}};
    const auto duration = [&](model::EventRef r) {
        return store.nvtxTracks()[r.track].duration(r.index);
    };
    std::vector<model::EventRef> byDuration;
    for (const model::NvtxSummaryRow& row : rows) {
        RowTarget target;
        byDuration = row.instances;
        if (!byDuration.empty()) {
            const auto middle = byDuration.begin() + static_cast<long>(byDuration.size() / 2);
            std::nth_element(
                byDuration.begin(), middle, byDuration.end(),
                [&](model::EventRef a, model::EventRef b) { return duration(a) < duration(b); });
            const model::NvtxTrack& track = store.nvtxTracks()[middle->track];
            target = rangeTarget(track.start(middle->index), track.end(middle->index),
                                 EventId::nvtx(*middle));
        }
        for (const model::EventRef& ref : row.instances)
            target.related.push_back(EventId::nvtx(ref));
        report.targets.push_back(std::move(target));
    }
    return report;
}

void addNvtx(LoadedTrace& trace) {
    trace.reports.push_back(nvtxReport(*trace.store, {}));
}

// One row per step (double-click zooms to it), then the median and p95 rows.
void addSteps(LoadedTrace& trace) {
    const model::TraceStore& store = *trace.store;
    auto analysis = std::make_shared<model::StepAnalysis>(
        trace.syncStalls ? model::analyzeSteps(store, *trace.syncStalls)
                         : model::analyzeSteps(store));
    ReportTable report{
        QStringLiteral("steps"), QStringLiteral("Steps"), model::stepTable(store, *analysis), {}};
    for (const model::Step& step : analysis->steps)
        report.targets.push_back(rangeTarget(
            step.start, step.end, step.range.valid() ? EventId::nvtx(step.range) : EventId{}));
    report.targets.resize(report.table.rowCount());
    trace.reports.push_back({QStringLiteral("utilization"),
                             QStringLiteral("GPU utilization"),
                             model::utilizationByPhaseTable(store, *analysis),
                             {}});
    trace.steps = std::move(analysis);
    trace.reports.insert(trace.reports.begin(), std::move(report));
}

// Only for a trace recorded with GPU metrics: a row per kernel name, selecting its kernels.
void addKernelMetrics(LoadedTrace& trace) {
    const model::TraceStore& store = *trace.store;
    if (store.gpuMetrics().empty())
        return;
    auto report = std::make_shared<model::KernelMetricsReport>(model::kernelMetrics(store));
    trace.reports.push_back(
        namedReport(QStringLiteral("gpu-metrics"), QStringLiteral("GPU metrics"),
                    model::kernelMetricsTable(store, *report), report->rows,
                    [](RowTarget& target, const auto& row) { target.kernel = row.name; }));
    trace.kernelMetrics = std::move(report);
}

// GPU time by Python line and function over the window, a row selecting its kernels; none for a
// trace without Python stacks.
std::vector<ReportTable> sourceLineReports(const model::TraceStore& store,
                                           model::TimeWindow window) {
    if (store.callchains().empty())
        return {};
    const model::SourceReport report = model::sourceReport(store, window);
    const auto table = [](const QString& id, const QString& title, model::Table t,
                          const std::vector<model::SourceRow>& rows) {
        ReportTable out{id, title, std::move(t), {}};
        for (const model::SourceRow& row : rows) {
            RowTarget target;
            for (const model::EventRef& op : row.ops)
                target.related.push_back(EventId::gpu(op));
            out.targets.push_back(std::move(target));
        }
        return out;
    };
    std::vector<ReportTable> out;
    out.push_back(table(QStringLiteral("python-lines"), QStringLiteral("Python lines"),
                        model::sourceLinesTable(store, report), report.lines));
    out.push_back(table(QStringLiteral("python-functions"), QStringLiteral("Python functions"),
                        model::sourceFunctionsTable(store, report), report.functions));
    return out;
}

void addSourceLines(LoadedTrace& trace) {
    for (ReportTable& table : sourceLineReports(*trace.store, {}))
        trace.reports.push_back(std::move(table));
}

// Only for a trace with CPU samples: where its threads ran and waited, by function.
void addCpuSamples(LoadedTrace& trace) {
    const model::TraceStore& store = *trace.store;
    if (store.cpuSamples().empty())
        return;
    const model::CpuSampleSummary summary = model::cpuSampleSummary(store, model::TimeWindow{});
    ReportTable table{QStringLiteral("cpu-samples"),
                      QStringLiteral("CPU samples"),
                      model::cpuSamplesTable(store, summary),
                      {}};
    table.targets.resize(summary.rows.size());
    trace.reports.push_back(std::move(table));
}

void addMemOps(LoadedTrace& trace) {
    trace.reports.push_back(memOpsReport(*trace.store, {}));
}

void addRunAhead(LoadedTrace& trace) {
    const model::TraceStore& store = *trace.store;
    auto analysis = std::make_shared<model::RunAheadAnalysis>(model::analyzeRunAhead(store));
    ReportTable report{QStringLiteral("runahead"),
                       QStringLiteral("Run-ahead"),
                       model::runAheadTable(store, *analysis),
                       {}};
    // One row per stream, then "All streams": a stream's row zooms to its deepest backlog, from
    // the moment it peaked until it drained.
    for (const auto& stream : analysis->streams) {
        RowTarget target;
        if (stream.maxDepth > 0)
            target = rangeTarget(stream.maxDepthTime, stream.drainTime);
        report.targets.push_back(target);
    }
    while (report.targets.size() < report.table.rowCount())
        report.targets.push_back({});
    report.targets.resize(report.table.rowCount());
    trace.runAhead = std::move(analysis);
    trace.reports.push_back(std::move(report));
}

void addSyncStalls(LoadedTrace& trace) {
    const model::TraceStore& store = *trace.store;
    auto analysis = std::make_shared<model::SyncStallAnalysis>(model::analyzeSyncStalls(store));
    ReportTable report{QStringLiteral("syncs"),
                       QStringLiteral("Sync stalls"),
                       model::syncStallTable(store, *analysis),
                       {}};
    for (const model::SyncStall& stall : analysis->stalls)
        report.targets.push_back(rangeTarget(
            stall.start, stall.end, stall.call.valid() ? EventId::api(stall.call) : EventId{}));
    if (report.targets.size() != report.table.rowCount())
        report.targets.clear();
    trace.syncStalls = std::move(analysis);
    trace.reports.push_back(std::move(report));
}

void addGaps(LoadedTrace& trace) {
    const model::TraceStore& store = *trace.store;
    auto analysis = std::make_shared<model::GpuGapAnalysis>(model::analyzeGpuGaps(store));
    ReportTable report{QStringLiteral("gaps"),
                       QStringLiteral("GPU idle gaps"),
                       model::gapTable(store, *analysis, trace.steps.get()),
                       {}};
    for (const model::GpuGap& gap : analysis->gaps)
        report.targets.push_back(rangeTarget(
            gap.start, gap.end, gap.after.valid() ? EventId::gpu(gap.after) : EventId{}));
    if (report.targets.size() != report.table.rowCount())
        report.targets.clear();

    trace.gaps = std::move(analysis);
    trace.reports.push_back(std::move(report));
}

void addInsights(LoadedTrace& trace) {
    const model::TraceStore& store = *trace.store;
    // A trace with steps: the findings are about its steady state (the analyses run again over
    // that window), and start-up gets a line of its own.
    trace.insights =
        trace.steps && !trace.steps->empty()
            ? model::findInsights(store, *trace.steps, {}, trace.syncStalls.get())
            : model::findInsights(store, *trace.runAhead, *trace.syncStalls, *trace.gaps,
                                  trace.crossRank ? *trace.crossRank : model::CrossRankAnalysis{});
    if (trace.steps)
        model::addNoStepsInsight(*trace.steps, trace.insights); // why there are no steps
    ReportTable report{QStringLiteral("insights"),
                       QStringLiteral("Insights"),
                       model::insightTable(store, trace.insights),
                       {}};
    for (const model::Insight& insight : trace.insights) {
        RowTarget target;
        for (const model::EventRef& ref : insight.apiCalls)
            target.related.push_back(EventId::api(ref));
        for (const model::EventRef& ref : insight.gpuOps)
            target.related.push_back(EventId::gpu(ref));
        std::stable_sort(target.related.begin(), target.related.end(),
                         [&](const EventId& a, const EventId& b) {
                             return EventSearch::startOf(store, a) < EventSearch::startOf(store, b);
                         });
        if (!target.related.empty()) {
            int64_t t0 = EventSearch::startOf(store, target.related.front());
            int64_t t1 = t0;
            for (const EventId& e : target.related)
                t1 = std::max(t1, EventSearch::endOf(store, e));
            target.t0 = t0;
            target.t1 = std::max(t1, t0 + 1);
            target.event = target.related.front();
        }
        report.targets.push_back(std::move(target));
    }
    if (report.targets.size() != report.table.rowCount())
        report.targets.clear();
    // Insights first: the window shows them before the raw tables.
    trace.reports.insert(trace.reports.begin(), std::move(report));
}

// A session's cross-rank reports, as warpline-stats --report ranks and rank-steps print them, from
// one analysis that the timeline (the waits at the collectives) and the insights use too; a trace
// read from one file is one rank, so it gets none.
void addSessionReports(LoadedTrace& trace) {
    const model::TraceStore& store = *trace.store;
    if (!store.isSession())
        return;
    auto analysis = std::make_shared<model::CrossRankAnalysis>(model::analyzeCrossRank(store));
    trace.reports.push_back({QStringLiteral("ranks"),
                             QStringLiteral("Ranks"),
                             model::crossRankTable(store, *analysis),
                             {}});
    trace.reports.push_back({QStringLiteral("rank-steps"),
                             QStringLiteral("Rank steps"),
                             model::rankStepTable(store, *analysis),
                             {}});
    trace.crossRank = std::move(analysis);
}

} // namespace

std::shared_ptr<LoadedTrace> TraceAnalyzer::analyze(std::shared_ptr<const model::TraceStore> store,
                                                    const std::function<bool()>& cancelled) {
    using Clock = std::chrono::steady_clock;
    const auto begin = Clock::now();
    auto trace = std::make_shared<LoadedTrace>();
    trace->path = QString::fromStdString(store->path());
    trace->store = std::move(store);
    for (const auto step :
         {addKernels, addKernelMetrics, addSourceLines, addCpuSamples, addApi, addNvtx, addMemOps,
          addRunAhead, addSyncStalls, addSteps, addGaps, addSessionReports, addInsights}) {
        if (cancelled && cancelled())
            return nullptr;
        step(*trace);
    }
    trace->analysisSeconds = std::chrono::duration<double>(Clock::now() - begin).count();
    return trace;
}

std::vector<ReportTable> TraceAnalyzer::summaries(const model::TraceStore& store,
                                                  model::TimeWindow window) {
    std::vector<ReportTable> out{kernelsReport(store, window), apiReport(store, window),
                                 nvtxReport(store, window), memOpsReport(store, window)};
    for (ReportTable& table : sourceLineReports(store, window))
        out.push_back(std::move(table));
    return out;
}

} // namespace warpline::views
