#include "trace/traceanalyzer.h"

#include "analysishelpers.h"
#include "reportregistry.h"

#include <chrono>

namespace warpline::views {

namespace {

QString qs(std::string_view s) {
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

} // namespace

ReportTable TraceAnalyzer::report(const LoadedTrace& trace, const model::ReportDef& def,
                                  model::TimeWindow window) {
    model::ReportOptions options;
    if (def.windowed)
        options.window = window;
    model::Report report = def.build(*trace.analyses, options);
    return {qs(def.name), qs(def.title), std::move(report.table), std::move(report.targets)};
}

std::shared_ptr<LoadedTrace> TraceAnalyzer::analyze(std::shared_ptr<const model::TraceStore> store,
                                                    const std::function<bool()>& cancelled) {
    using Clock = std::chrono::steady_clock;
    const auto begin = Clock::now();
    auto trace = std::make_shared<LoadedTrace>();
    trace->path = QString::fromStdString(store->path());
    trace->store = std::move(store);
    trace->analyses = std::make_shared<model::TraceAnalyses>(*trace->store);
    model::TraceAnalyses& analyses = *trace->analyses;
    // What the timeline draws and the reports share, with the most detail any report asks for,
    // two at a time (the steps come from the sync stalls).
    model::runBoth(
        [&] {
            trace->runAhead = analyses.runAhead(model::RunAheadDetail::All);
            analyses.gaps(model::GapOptions::LaunchBound::AllKernels);
        },
        [&] {
            trace->syncStalls = analyses.syncStalls();
            trace->steps = analyses.steps(model::StepDetail::Full);
        });
    if (trace->store->isSession())
        trace->crossRank = analyses.crossRank();
    if (!trace->store->gpuMetrics().empty())
        trace->kernelMetrics = analyses.kernelMetrics();
    for (const model::ReportDef& def : model::ReportRegistry::all()) {
        if (cancelled && cancelled())
            return nullptr;
        if (model::ReportRegistry::docked(def, analyses))
            trace->reports.push_back(report(*trace, def));
    }
    trace->insights = *analyses.insights();
    trace->analysisSeconds = std::chrono::duration<double>(Clock::now() - begin).count();
    return trace;
}

std::vector<ReportTable> TraceAnalyzer::summaries(const LoadedTrace& trace,
                                                  model::TimeWindow window) {
    std::vector<ReportTable> out;
    for (const model::ReportDef& def : model::ReportRegistry::all()) {
        if (def.windowed && model::ReportRegistry::docked(def, *trace.analyses))
            out.push_back(report(trace, def, window));
    }
    return out;
}

} // namespace warpline::views
