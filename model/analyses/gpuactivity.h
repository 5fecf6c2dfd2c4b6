#pragma once

// Where a trace's GPU time lies, for the window's first view and its overview strip: a busy
// share per bin over the whole trace, and the window that holds the bulk of the GPU's op time.
// Qt-free and one pass over the GPU ops: the loader computes it with the store, off the GUI
// thread (at 100M events each half took the GUI thread a quarter second).

#include "tracestore.h"

#include <cstddef>
#include <vector>

namespace warpline::model {

// The bins of GpuActivity::busyShares over the store's [beginTime, endTime).
inline constexpr size_t kGpuBusyBins = 4096;

struct GpuActivity {
    // kGpuBusyBins shares (0..1) of GPU-busy time: every op's time spread over the bins it
    // covers, then capped at the bin's length (ops on several streams at once count once,
    // roughly). The overview strip draws them.
    std::vector<float> busyShares;
    // The window from the first to the 99th percentile of the GPU's op time (ns), each op
    // counted at its middle: a stray early copy or a late check does not stretch it, and an idle
    // start-up (allocations, loading) is left out. The view opens on it. Empty: no GPU op time.
    bool empty = true;
    double t0 = 0;
    double t1 = 0;
};

GpuActivity gpuActivity(const TraceStore& store);

} // namespace warpline::model
