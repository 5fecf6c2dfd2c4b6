#pragma once

// KinetoImport: reads a PyTorch profiler trace (Kineto's Chrome trace JSON, `.pt.trace.json`, or
// gzipped, `.json.gz`) and writes it as a Warpline trace (format/tracewriter.h), which
// TraceLoader then loads like any recording: run-ahead, sync-stall and kernel reports work on
// traces people already have, and the conversion can be kept as a .warpline file.
//
// Parsed with simdjson's On-Demand API (the whole file is read into memory, gzip inflated with
// zlib; events are streamed into the writer). The file is untrusted: the JSON read is capped by
// Options::maxBytes (from the memory available) and Options::maxStringBytes while it is read and
// inflated, and each window of it must look like a profiler trace (Options::maxInflation,
// maxFillerShare, maxStructuralShare), so that a bomb within the caps is refused after one window
// instead of after gigabytes; invalid UTF-8, a second "traceEvents" and a bomb end with a
// TraceError that says so; deep nesting is skipped over without recursion; times beyond 2^61 ns
// skip their event, counted in a warning. What maps to what (old and new Kineto category names both
// accepted):
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
        // Plausibility, checked on each window of plausibilityWindowBytes of JSON as it is read
        // (inflated), so that a file of gigabytes of filler within maxBytes is refused after one
        // window. Real torch.profiler traces (tests/data/pytorch, and their events repeated to
        // 400 MB) inflate 7.5-14 times from gzip (level 9), 28 times re-indented by 8 spaces;
        // Warpline's Chrome exports 16-29 times; one byte repeated inflates 1000 times (measured
        // in docs/robustness.md, "JSON bombs within the caps"). A window that inflates more than
        // maxInflation times is refused.
        double maxInflation = 100;
        // Traces are 22-25% whitespace (67% re-indented by 8 spaces, 3% in Warpline's Chrome
        // export) and no byte is more than 21% of them. A window whose whitespace, or any one
        // byte, is more than this share is refused.
        double maxFillerShare = 0.9;
        // Traces are 10-17% commas, colons and brackets; filler of tokens ("0,0,0", "[[]]") is
        // 50-100%, and simdjson indexes each token in 4 bytes: 3 GiB of "0," took 15 GiB. A
        // window where they are more than this share is refused.
        double maxStructuralShare = 0.4;
        // The window: large enough that no real trace's stretch of similar events passes the
        // bounds, small enough that a refusal costs a fraction of a second and little memory.
        uint64_t plausibilityWindowBytes = uint64_t(64) << 20;
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
