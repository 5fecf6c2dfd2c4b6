#pragma once

// TraceAnalyzer: builds the window's reports (ReportRegistry's docked ones, the same tables
// warpline-stats prints) and keeps the analyses the timeline draws, as a LoadedTrace. Pure
// function of the store; runs on the loading thread.

#include "reportregistry.h"
#include "trace/loadedtrace.h"

#include <functional>
#include <memory>
#include <vector>

namespace warpline::views {

class TraceAnalyzer {
public:
    // `cancelled` is polled between reports; when it returns true, analyze() returns null.
    static std::shared_ptr<LoadedTrace> analyze(std::shared_ptr<const model::TraceStore> store,
                                                const std::function<bool()>& cancelled = {});
    // The report `def` over the work that starts in `window` (the whole trace for a report that
    // is not windowed), from the trace's analyses: what warpline-stats --report prints (with
    // --phase for a phase's window).
    static ReportTable report(const LoadedTrace& trace, const model::ReportDef& def,
                              model::TimeWindow window = {});
    // The docked windowed reports (kernels, api, nvtx, memops; python-lines, python-functions and
    // cpu-samples for a trace that has them) over `window`: the window's statistics over a range
    // or a phase.
    static std::vector<ReportTable> summaries(const LoadedTrace& trace, model::TimeWindow window);
};

} // namespace warpline::views
