#pragma once

// KinetoImport: reads a PyTorch profiler trace (Kineto's Chrome trace JSON, `.pt.trace.json`, or
// gzipped, `.json.gz`) and writes it as a Warpline trace (collector/tracewriter.h), which
// TraceLoader then loads like any recording: run-ahead, sync-stall and kernel reports work on
// traces people already have, and the conversion can be kept as a .warpline file.
//
// Parsed with simdjson's On-Demand API (the whole file is read into memory, gzip inflated with
// zlib; events are streamed into the writer). The file is untrusted: the JSON read is capped by
// Options::maxBytes (from the memory available) and Options::maxStringBytes while it is read and
// inflated; invalid UTF-8, a second "traceEvents" and a bomb end with a TraceError that says so;
// deep nesting is skipped over without recursion; times beyond 2^61 ns skip their event,
// counted in a warning. What maps
// to what (old and new Kineto category names both accepted):
//   "cuda_runtime" / "Runtime"      -> CUDA runtime API calls (CUPTI_ACTIVITY_KIND_RUNTIME)
//   "cuda_driver" / "Driver"        -> CUDA driver API calls
//   "kernel" / "Kernel"             -> kernels (args: device, context, stream, correlation, grid,
//                                      block, registers per thread, shared memory, graph id)
//   "gpu_memcpy" / "Memcpy"         -> memory copies (kind and memory kinds from the name,
//                                      "Memcpy HtoD (Pageable -> Device)"; args: bytes)
//   "gpu_memset" / "Memset"         -> memory sets
//   "cuda_sync"                     -> synchronizations ("Stream Sync", "Event Sync",
//                                      "Context Sync", "Stream Wait Event")
//   "user_annotation"               -> NVTX push/pop ranges on their thread (record_function,
//                                      ProfilerStep#N); "nvtx" (Warpline's Chrome export) too,
//                                      in its args' "domain"
//   "cpu_op" / "Operator"           -> NVTX push/pop ranges in the domain "cpu_op" on their thread
//                                      (as nsys shows PyTorch's emit_nvtx ranges), so the
//                                      nvtx-kernels report says which op launched which kernels
//   "gpu_user_annotation"           -> NVTX push/pop ranges in the domain "gpu_user_annotation"
//                                      on one extra row per stream ("GPU annotations, stream 7")
//   "M" process_name / thread_name  -> process and thread names; deviceProperties (new) or
//                                      computeProperties (old) -> GPUs
// Correlation ids come from args "correlation" and join calls to their GPU work exactly as in a
// recording.
//   "python_function" (with_stack=True) -> each CUDA API call's Python stack: the python_function
//                                      events enclosing it on its thread, as CUDA_CALLCHAINS
//                                      (callchains.h), as warpline-record --python-stacks writes
// Everything else (flows, instant events, "Trace" spans) is skipped and counted. Timestamps
// (microseconds, integer or with decimals) are read from their text, so nanosecond decimals are
// kept exactly; times become ns relative to the earliest imported event. The trace's process is the
// one with the most CUDA API calls.

#include "traceloader.h"
#include "tracestore.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace warpline::model {

class KinetoImport {
public:
    struct Options {
        // Called with the fraction done (0..1); return false to cancel (LoadCancelled).
        std::function<bool(double fraction)> progress;
        // Whether convert may replace a file or link already at tracePath.
        bool replace = true;
        // The most JSON read (inflated, for .json.gz); 0: a third of the memory available (the
        // parse needs about three times the JSON's size), at most 4 GiB.
        uint64_t maxBytes = 0;
        // The longest string read: none in a trace comes near; a gzip bomb of one endless string
        // stops here instead of inflating to its end.
        uint64_t maxStringBytes = uint64_t(256) << 20;
    };

    struct Result {
        uint64_t apiCalls = 0;
        uint64_t kernels = 0;
        uint64_t memcpys = 0;
        uint64_t memsets = 0;
        uint64_t syncs = 0;
        uint64_t ranges = 0;        // user_annotation, cpu_op and gpu_user_annotation ranges
        uint64_t pythonStacks = 0;  // distinct stacks from python_function events (with_stack)
        uint64_t backwardCalls = 0; // API calls of backward ops given their forward op's stack
        uint64_t skipped = 0;       // events of other kinds
        uint32_t pid = 0;           // the trace's process
    };

    // True when the file's content looks like JSON (first non-blank byte '{' or '['), or gzip.
    static bool isKinetoTrace(const std::string& path);

    // Converts `jsonPath` into a new Warpline trace at `tracePath`, written through OutputFile
    // (outputfile.h): whole or not at all, never through a symbolic link; an existing file is
    // replaced only with options.replace.
    // Throws TraceError (NotFound, NotATrace with the JSON error and its byte offset) and
    // LoadCancelled.
    static Result convert(const std::string& jsonPath, const std::string& tracePath,
                          const Options& options);
    static Result convert(const std::string& jsonPath, const std::string& tracePath) {
        return convert(jsonPath, tracePath, Options{});
    }

    // Converts into a temporary file, loads it and removes it. Progress: conversion then load.
    static TraceStore load(const std::string& jsonPath, const TraceLoader::Options& options);
    static TraceStore load(const std::string& jsonPath) {
        return load(jsonPath, TraceLoader::Options{});
    }
};

} // namespace warpline::model
