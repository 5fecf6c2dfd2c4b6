#pragma once

// What both fuzz targets do with a trace file: load it, check the store's promises, run every
// report of the registry (both kernel groupings) and write every table in every format. Typed
// errors (TraceError, LoadCancelled) are the expected answer to a bad file; anything else that
// escapes, a broken invariant, a sanitizer report or a hang is a bug and aborts.

#include "reportregistry.h"
#include "tablewriter.h"
#include "traceerror.h"
#include "traceloader.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <unistd.h>

namespace warpline::fuzz {

// WARPLINE_FUZZ_VERBOSE: what the loader made of each input, in lines the regression check
// (check_regressions.py) matches: "load: refused: MESSAGE", or "load: N kernels, ..." with a
// "warning: TEXT" line per warning and a "fact: ..." line per condition worth replaying.
inline bool verbose() {
    static const bool v = std::getenv("WARPLINE_FUZZ_VERBOSE") != nullptr;
    return v;
}

[[noreturn]] inline void broken(const char* what) {
    std::fprintf(stderr, "fuzz: invariant broken: %s\n", what);
    std::abort();
}

// The promises of tracestore.h and spantrack.h, on any store the loader returns.
inline void checkStore(const model::TraceStore& store) {
    using namespace model;
    const auto checkTrack = [&](const SpanTrack& t) {
        for (size_t i = 0; i < t.size(); ++i) {
            if (t.start(i) > t.end(i))
                broken("start <= end");
            if (i > 0 && t.start(i - 1) > t.start(i))
                broken("sorted by start");
            if (i > 0 && t.end(i - 1) > t.start(i))
                broken("no overlap on a track");
            if (t.start(i) < store.beginTime() || t.end(i) > store.endTime())
                broken("inside [beginTime, endTime]");
        }
    };
    size_t linked = 0, reverse = 0;
    for (const ApiTrack& t : store.apiTracks()) {
        checkTrack(t);
        for (size_t i = 0; i < t.size(); ++i) {
            for (const EventRef& op : t.gpuOps(i)) {
                if (op.track >= store.gpuTracks().size() ||
                    op.index >= store.gpuTracks()[op.track].size())
                    broken("gpuOps refers to an existing op");
                ++reverse;
            }
        }
    }
    for (const NvtxTrack& t : store.nvtxTracks())
        checkTrack(t);
    for (const GpuTrack& t : store.gpuTracks()) {
        checkTrack(t);
        if (t.streamIndex() >= store.streams().size())
            broken("GPU track's stream exists");
        for (size_t i = 0; i < t.size(); ++i) {
            const bool kernel = t.kind(i) == GpuOpKind::Kernel;
            if (t.detail(i) >= (kernel ? store.kernelConfigs().size() : store.memOps().size()))
                broken("GPU op detail index in range");
            const EventRef launch = t.launch(i);
            if (!launch.valid())
                continue;
            ++linked;
            if (launch.track >= store.apiTracks().size() ||
                launch.index >= store.apiTracks()[launch.track].size())
                broken("launch refers to an existing call");
            if (store.apiTracks()[launch.track].correlationId(launch.index) != t.correlationId(i))
                broken("launch has the op's correlation id");
        }
    }
    if (linked != reverse)
        broken("correlation links go both ways");
    if (store.beginTime() > store.endTime())
        broken("beginTime <= endTime");
}

// What a verbose run prints about a store the loader returned.
inline void describeLoad(const model::TraceStore& store) {
    using namespace model;
    std::fprintf(stderr,
                 "load: %zu kernels, %zu API calls, %zu memory copies, %zu memsets, %zu NVTX "
                 "ranges\n",
                 store.kernelCount(), store.apiCallCount(), store.memcpyCount(),
                 store.memsetCount(), store.nvtxEventCount());
    for (const std::string& w : store.warnings())
        std::fprintf(stderr, "warning: %s\n", w.c_str());
    int64_t total = 0;
    bool saturates = false;
    for (const GpuTrack& t : store.gpuTracks()) {
        for (size_t i = 0; i < t.size(); ++i) {
            if (t.kind(i) == GpuOpKind::Kernel)
                saturates |= __builtin_add_overflow(total, t.end(i) - t.start(i), &total);
        }
    }
    if (saturates)
        std::fprintf(stderr, "fact: the kernels' durations add up past INT64_MAX\n");
}

// Loads `path` and runs everything on it. Returns false when the loader refused the file.
inline bool runEverything(const std::string& path) {
    using namespace model;
    TraceStore store;
    try {
        TraceLoader::Options options;
        options.progress = [](double fraction) {
            if (!(fraction >= 0 && fraction <= 1))
                broken("progress fraction in [0, 1]");
            return true;
        };
        store = TraceLoader::load(path, options);
    } catch (const TraceError& e) {
        if (verbose())
            std::fprintf(stderr, "load: refused: %s\n", e.what());
        return false;
    } catch (const LoadCancelled&) {
        broken("cancelled without being asked to");
    }
    checkStore(store);
    if (verbose())
        describeLoad(store);
    for (const bool byConfig : {false, true}) {
        ReportOptions options;
        options.groupByLaunchConfig = byConfig;
        for (const ReportDef& report : ReportRegistry::all()) {
            if (byConfig && report.name != "kernels")
                continue;
            const Table table = report.run(store, options);
            for (const TableFormat format :
                 {TableFormat::Text, TableFormat::Csv, TableFormat::Json, TableFormat::Markdown}) {
                std::ostringstream out;
                writeTable(out, table, format);
            }
        }
    }
    return true;
}

// A scratch file per fuzzing process, on tmpfs when there is one.
inline std::string scratchPath(const char* tag) {
    const char* dir = std::getenv("WARPLINE_FUZZ_TMP");
    std::string base = dir ? dir : "/dev/shm";
    if (FILE* probe = std::fopen((base + "/.warpline-fuzz-probe").c_str(), "wb")) {
        std::fclose(probe);
        std::remove((base + "/.warpline-fuzz-probe").c_str());
    } else {
        base = "/tmp";
    }
    return base + "/warpline-fuzz-" + tag + "-" + std::to_string(::getpid()) + ".warpline";
}

inline bool writeFile(const std::string& path, const void* data, size_t size) {
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f)
        return false;
    const bool ok = std::fwrite(data, 1, size, f) == size;
    return std::fclose(f) == 0 && ok;
}

} // namespace warpline::fuzz
