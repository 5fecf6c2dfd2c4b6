#pragma once

// GPU time by source line and by function, from the call stacks of the launches
// (Callchains; warpline-record --python-stacks). Definitions: docs/analyses.md, "GPU time by
// source line".
//
//  - A kernel's GPU time belongs to the stack of the API call that launched it (its correlation
//    id). Kernels whose launch has no stack (made with no Python code on the thread, such as
//    PyTorch's autograd threads in backward, or recorded without --python-stacks) are counted
//    apart, in one row of their own ("(no Python stack)", SourceRow::withoutStack) ranked with
//    the others, so the shares add up and a backward pass that holds most of the GPU time shows.
//  - Inclusive time of a line (or function): the GPU time of the kernels with that line anywhere
//    in their launch's stack, each kernel once however often the line appears. Self time: only
//    the kernels whose innermost frame is that line.
//  - Own-code time: only the kernels whose innermost frame of the program's own code
//    (UserFrames: not a library, not PyTorch) is that line: the line in the program to edit.
//    Rows are ranked by it (the "(no Python stack)" row counts its whole time), then by
//    inclusive time: the program's own lines come first, the library and framework frames
//    (Module._call_impl, Tensor.backward) after them.
//
// Pure function of the store; O(kernels x stack depth).

#include "summaries.h"
#include "table.h"
#include "tracestore.h"

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace warpline::model {

struct SourceRow {
    NameId file = kNoName;
    int32_t line = 0;          // 0 in the per-function rows
    NameId function = kNoName; // the frame's function
    int64_t inclusive = 0;     // ns of GPU time
    int64_t self = 0;
    int64_t own = 0;           // ns of GPU time: own-code time (see the top)
    uint64_t kernels = 0;      // kernels counted in `inclusive`
    std::vector<EventRef> ops; // those kernels (into gpuTracks()), at most kMaxOps
    bool withoutStack = false; // the row of the kernels whose launch has no stack
};

struct SourceReport {
    static constexpr size_t kMaxOps = 20000;
    int64_t kernelTime = 0; // every kernel
    int64_t withStack = 0;  // kernels whose launch has a stack
    uint64_t kernels = 0, kernelsWithStack = 0;
    // By own-code time, then inclusive time, descending; each holds the withoutStack row when
    // some kernels have no stack and others do.
    std::vector<SourceRow> lines;
    std::vector<SourceRow> functions;
};

// Only the kernels starting in `window` (warpline-stats --phase); every kernel by default.
SourceReport sourceReport(const TraceStore& store, TimeWindow window = {});
// Own Code (ns), Own Share (%), GPU Time (ns), Share (%), Self (ns), Kernels, Location, Function
Table sourceLinesTable(const TraceStore& store, const SourceReport& report);
// Own Code (ns), Own Share (%), GPU Time (ns), Share (%), Self (ns), Kernels, Function, File
Table sourceFunctionsTable(const TraceStore& store, const SourceReport& report);
// "train.py:42" (the file's last path component), or the file alone when the line is unknown.
std::string sourceLocation(const TraceStore& store, NameId file, int32_t line);

// Whether a Python frame is an autotuner benchmarking candidates: a function named "...bench..."
// in Triton's autotuner (Autotuner._bench, triton.testing.do_bench) or torch.compile's
// (CachingAutotuner.benchmark_all_configs, select_algorithm, autotune_process). The autotuner's
// other frames are on every launch of a tuned kernel (Autotuner.run launches the chosen config
// too), so the file alone does not say.
bool isAutotunerFrame(std::string_view file, std::string_view function);
// Whether an API call's Python stack (--python-stacks) passes through such a frame; false without
// stacks. Caches per stack in `cache` (chain id -> 0 / 1).
bool isAutotunerCall(const TraceStore& store, EventRef call,
                     std::unordered_map<uint32_t, int8_t>& cache);

} // namespace warpline::model
