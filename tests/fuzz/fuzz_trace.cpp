// libFuzzer target: the fuzz input is a whole trace file. Most inputs die at SQLite's header and
// page checks, which is what this target is for: whatever the bytes, the loader answers with a
// TraceError or a store every report can run on. fuzz_trace_sql.cpp mutates valid traces instead.

#include "fuzzrun.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::string path = warpline::fuzz::scratchPath("raw");
    if (!warpline::fuzz::writeFile(path, data, size))
        std::abort();
    warpline::fuzz::runEverything(path);
    return 0;
}
