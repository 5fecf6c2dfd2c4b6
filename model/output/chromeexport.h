#pragma once

// Chrome trace event JSON export: the format Perfetto (ui.perfetto.dev), chrome://tracing and
// PyTorch's tools (Holistic Trace Analysis) open. Written as a stream: memory use does not grow
// with the trace (a few strings per distinct name, the run-ahead steps when queue depth is on).
//
// What the file holds (JSON Object Format: {"traceEvents": [...], ...}):
//  - Metadata ("M"): process_name / process_sort_index for each CPU process and each GPU (one pid
//    per device: kGpuPidBase + device id, so it never collides with an OS pid), thread_name /
//    thread_sort_index for each row.
//  - CPU rows of a process (pid = OS pid): each thread's CUDA API calls on its own tid (nested
//    driver calls on the same row when they nest, else on extra rows); its NVTX push/pop ranges on
//    one extra row, start/end lanes and marks on rows of their own (tids above every OS tid).
//  - GPU rows: one per stream (tid = stream id when free, "Stream 7"), extra rows for the lanes of
//    a stream whose operations overlap in the file.
//  - Complete events ("X") for API calls (cat "cuda_runtime" / "cuda_driver"), NVTX ranges (cat
//    "nvtx"), kernels, copies and sets (cat "kernel", "gpu_memcpy", "gpu_memset"); NVTX marks as
//    thread-scoped instants ("i"). Their fields are in args under the names PyTorch's profiler
//    (Kineto) uses where it has one ("correlation", "device", "stream", "grid", "block",
//    "registers per thread", "bytes", ...), so tools written for Kineto traces read them.
//  - One flow arrow per GPU operation whose launch call is in the trace (cat and name "ac2g" as
//    Kineto writes them, a distinct id per arrow): "s" at the launch call's start on the call's
//    row, emitted right after the call's slice, and "f" with "bp":"e" at the operation's start on
//    its stream row, right after the operation's slice. Both timestamps equal their slice's start,
//    so every viewer binds them to those slices (Perfetto: the slice open on the row; Catapult:
//    the enclosing slice; Chrome DevTools: the slice with the same ts).
//  - Launch queue depth per stream (model/analyses/runahead.h) as a counter ("C") named "<stream>
//  queue"
//    with the series "depth", in the GPU's process.
//  Timestamps ("ts", "dur") are microseconds relative to options.base (default: the session start,
//  t = 0, or the earliest event when that is earlier) with three decimals, so nanoseconds are
//  exact ("ts": 1234.567). Text from the trace is escaped as JSON strings (quotes, backslashes,
//  control characters; invalid UTF-8 replaced).

#include "tracestore.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>

namespace warpline::model {

struct ChromeExportOptions {
    bool flows = true;      // launch -> GPU op arrows
    bool queueDepth = true; // the per-stream queue depth counters
    // Time that becomes ts 0 (ns); unset: min(0, store.beginTime()).
    std::optional<int64_t> base;
    // Called with the fraction written (0..1) every few hundred thousand events; return false to
    // stop (the export then throws ExportCancelled and the output is incomplete).
    std::function<bool(double fraction)> progress;
    // Whether writeChromeTraceFile may replace a file or link already at its path (the command
    // line's --force, the save dialog's confirmation).
    bool replace = true;
};

// What was written, by kind of event.
struct ChromeExportCounts {
    uint64_t metadata = 0;   // "M"
    uint64_t apiCalls = 0;   // "X" cat cuda_runtime / cuda_driver
    uint64_t nvtxRanges = 0; // "X" cat nvtx
    uint64_t nvtxMarks = 0;  // "i"
    uint64_t gpuOps = 0;     // "X" cat kernel / gpu_memcpy / gpu_memset
    uint64_t flows = 0;      // arrows: as many "s" as "f"
    uint64_t counters = 0;   // "C"
};

// GPU device d is process kGpuPidBase + d in the export (OS pids stay below 2^22 on Linux).
inline constexpr uint32_t kGpuPidBase = 1'000'000'000;

class ExportCancelled : public std::runtime_error {
public:
    ExportCancelled() : std::runtime_error("export cancelled") {}
};

// Writes the store to `out`. Throws std::runtime_error when the stream fails, ExportCancelled when
// progress returned false.
ChromeExportCounts writeChromeTrace(std::ostream& out, const TraceStore& store,
                                    const ChromeExportOptions& options = {});

// Writes to the file `path` through OutputFile (outputfile.h): the file appears whole or not at
// all, and a symbolic link at the path is replaced, never written through. Throws
// std::runtime_error naming the file (also when it exists and options.replace is false) or
// ExportCancelled; nothing is left behind then.
ChromeExportCounts writeChromeTraceFile(const std::string& path, const TraceStore& store,
                                        const ChromeExportOptions& options = {});

} // namespace warpline::model
