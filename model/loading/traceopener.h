#pragma once

// TraceOpener: opens any trace Warpline reads, by its content: a Warpline trace or an Nsight
// Systems SQLite export (TraceLoader), or a PyTorch profiler trace, Kineto's Chrome trace JSON,
// plain or gzipped (KinetoImport). The CLI and the app open files through it.

#include "traceloader.h"
#include "tracestore.h"

#include <string>

namespace warpline::model {

class TraceOpener {
public:
    // Throws what TraceLoader::load and KinetoImport::load throw.
    static TraceStore open(const std::string& path, const TraceLoader::Options& options);
    static TraceStore open(const std::string& path) { return open(path, TraceLoader::Options{}); }
};

} // namespace warpline::model
