#pragma once

// TraceAnalyzer: runs the model's summaries and analyses over a loaded store and packages them
// as a LoadedTrace for the window. Pure function of the store; runs on the loading thread.

#include "loadedtrace.h"

#include <functional>
#include <memory>
#include <vector>

namespace warpline::views {

class TraceAnalyzer {
public:
    // `cancelled` is polled between analyses; when it returns true, analyze() returns null.
    static std::shared_ptr<LoadedTrace> analyze(std::shared_ptr<const model::TraceStore> store,
                                                const std::function<bool()>& cancelled = {});
    // The summary reports (kernels, api, nvtx, memops; python-lines and python-functions for a
    // trace with Python stacks) over the work that starts in `window`, with the same tables and row
    // targets analyze() gives them over the whole trace (TimeWindow{}), and warpline-stats --phase
    // prints: the window's statistics over a range or a phase.
    static std::vector<ReportTable> summaries(const model::TraceStore& store,
                                              model::TimeWindow window);
};

} // namespace warpline::views
