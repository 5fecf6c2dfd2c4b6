#pragma once

// GPU performance-counter samples taken while a program runs (warpline-record --gpu-metrics), and
// how they reach a trace file. The sampler (gpumetrics.h, CUPTI's PM sampling) fills
// GpuMetricsData; appendGpuMetrics() stores it in Nsight Systems' layout (GPU_METRICS with
// TARGET_INFO_GPU_METRICS, docs/trace-format.md). No CUDA or CUPTI dependency.

#include <cstdint>
#include <string>
#include <vector>

namespace warpline::format {

struct GpuMetricDef {
    std::string name;      // as stored in TARGET_INFO_GPU_METRICS: "SMs Active [Throughput %]"
    std::string cuptiName; // the PM-sampling metric it was read from
};

struct GpuMetricsDevice {
    uint32_t deviceId = 0; // CUDA device ordinal (the trace's deviceId)
    std::string chip;      // "GH100"
    std::vector<GpuMetricDef> metrics;
    // One entry per sample: the end of the sample's interval, on CUPTI's timestamp clock (the
    // trace's clock before the session start is subtracted). Values: metrics.size() per sample,
    // percentages rounded to integers, bandwidths in bytes per second.
    std::vector<uint64_t> timestamps;
    std::vector<int64_t> values;
    std::string error; // sampling of this device stopped early, in words; "" if it did not
};

struct GpuMetricsData {
    uint64_t intervalNs = 0;
    std::vector<GpuMetricsDevice> devices;
    // Why some or all devices were not sampled ("GPU 1: ...: counters restricted to ..."), one
    // line each; stored in WARPLINE_ERRORS with source "gpu-metrics".
    std::vector<std::string> problems;
};

// What the recorder asks the sampler for.
struct GpuMetricsRequest {
    uint64_t intervalNs = 100000; // 10 kHz
    int deviceCount = 0;          // GPUs 0 .. deviceCount-1 are sampled
    bool quiet = false;
    // Samples kept in memory, all devices together; beyond it sampling stops with an error.
    uint64_t maxSamples = 20'000'000;
};

// Adds the samples to an existing trace (written before by the same recording): rows in
// GPU_METRICS with times relative to the trace's session_start_timestamp (samples before it
// are left out), their names in TARGET_INFO_GPU_METRICS, problems in WARPLINE_ERRORS and a
// summary in WARPLINE_META (gpu_metrics, gpu_metrics_interval_ns). Throws TraceWriteError.
// Returns the number of samples written.
uint64_t appendGpuMetrics(const std::string& path, const GpuMetricsData& data);

} // namespace warpline::format
