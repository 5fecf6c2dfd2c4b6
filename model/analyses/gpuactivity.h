#pragma once

// Where a trace's GPU time lies, for the window's first view and its overview strip: a busy
// share per bin over the whole trace, and the window that holds the bulk of the GPU's op time.
// Qt-free and O(GPU ops): the loader computes both with the store, off the GUI thread (at 100M
// events they took the GUI thread a quarter second each).

#include "tracestore.h"

#include <cstddef>
#include <vector>

namespace warpline::model {

// The bins of gpuBusyShares over the store's [beginTime, endTime).
inline constexpr size_t kGpuBusyBins = 4096;

// kGpuBusyBins shares (0..1) of GPU-busy time: every op's time spread over the bins it covers,
// then capped at the bin's length (ops on several streams at once count once, roughly).
std::vector<float> gpuBusyShares(const TraceStore& store);

// The window from the first to the 99th percentile of a trace's GPU op time (ns); empty when the
// trace has no GPU op time.
struct GpuActivity {
    bool empty = true;
    double t0 = 0;
    double t1 = 0;
};

// Where the GPU's busy time is: a histogram of op time (each op at its middle) over the trace,
// then the window from its first to its 99th percentile. A stray early copy or a late check does
// not stretch it, and an idle start-up (allocations, loading) is left out.
GpuActivity gpuActivityRange(const TraceStore& store);

} // namespace warpline::model
