#pragma once

// TraceAnalyzer: runs the model's summaries and analyses over a loaded store and packages them
// as a LoadedTrace for the window. Pure function of the store; runs on the loading thread.

#include "loadedtrace.h"

#include <functional>
#include <memory>

namespace warpline::views {

class TraceAnalyzer {
public:
    // `cancelled` is polled between analyses; when it returns true, analyze() returns null.
    static std::shared_ptr<LoadedTrace> analyze(std::shared_ptr<const model::TraceStore> store,
                                                const std::function<bool()>& cancelled = {});
};

} // namespace warpline::views
