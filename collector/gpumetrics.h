#pragma once

// GpuMetricsSampler: samples GPU performance counters with CUPTI's PM sampling API (CUDA 13.0,
// cupti_pmsampling.h with cupti_profiler_host.h) on every visible GPU while a recording runs.
// It runs in warpline-record's own process, beside the program it traces (which may be another
// process): PM sampling sees the whole device. A thread decodes the hardware buffer every
// 20 ms (at 10 kHz it fills in seconds) and evaluates each sample into metric values.
//
// Metrics (docs/gpu-metrics.md): one set that fits one pass (PM sampling cannot replay), chosen
// per chip from a list in priority order, each under an Nsight Systems-like name with its unit.
// Where a GPU cannot be sampled (counters restricted to administrators, an unsupported GPU, a
// vGPU), start() says why in GpuMetricsData::problems and the recording goes on without.

#include "gpumetricsdata.h"

#include <functional>
#include <memory>

namespace warpline::collector {

class GpuMetricsSampler {
public:
    // `makeContext(device)` creates a CUDA context on the device, for drivers where PM sampling
    // needs one in the sampling process; it is called only when enabling without one fails.
    GpuMetricsSampler(const format::GpuMetricsRequest& request,
                      std::function<bool(int)> makeContext);
    ~GpuMetricsSampler(); // stops
    GpuMetricsSampler(const GpuMetricsSampler&) = delete;
    GpuMetricsSampler& operator=(const GpuMetricsSampler&) = delete;

    // Starts sampling every GPU it can; false when none could be sampled (problems() says why).
    bool start();
    // Stops sampling, decodes what is left and hands the samples over. Idempotent.
    format::GpuMetricsData stop();
    const std::vector<std::string>& problems() const;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

// The words for a CUPTI result met while setting PM sampling up, with what to do about it
// (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: the driver restricts counters to administrators).
// (gpumetricsproblem.cpp, in the collector library.)
std::string gpuMetricsProblem(int cuptiResult, const std::string& step);
// CUPTI's name for a result ("CUPTI_ERROR_UNKNOWN").
std::string cuptiResultName(int cuptiResult);

// Entry points in libwarpline-inject.so, which warpline-record loads with dlopen (it does not
// link CUPTI itself, workloadrecording.h).
using GpuMetricsStartFn = GpuMetricsSampler* (*)(const format::GpuMetricsRequest* request,
                                                 const std::function<bool(int)>* makeContext);
using GpuMetricsStopFn = void (*)(GpuMetricsSampler* sampler, format::GpuMetricsData* out);
inline constexpr const char* kGpuMetricsStartSymbol = "warpline_gpu_metrics_start";
inline constexpr const char* kGpuMetricsStopSymbol = "warpline_gpu_metrics_stop";

} // namespace warpline::collector
