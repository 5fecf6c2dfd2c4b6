#pragma once

// GPU metric samples (Nsight Systems' GPU_METRICS with TARGET_INFO_GPU_METRICS, written by
// `warpline-record --gpu-metrics` or by nsys --gpu-metrics-devices): per device, the sample times
// and one value series per metric. A sample's value is the metric's average over the interval
// that ends at its time: (previous sample's time, time], or (time - interval, time] for the first
// sample and after a gap.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace warpline::model {

enum class MetricUnit : uint8_t { Percent, BytesPerSecond, Other };

struct GpuMetricSeries {
    std::string name;  // as stored: "DRAM Read Bandwidth [Throughput %]"
    std::string label; // without the unit: "DRAM Read Bandwidth"
    MetricUnit unit = MetricUnit::Other;
    std::vector<float> values; // one per sample; NaN where the sample lacks this metric
};

struct GpuMetricSamples {
    uint32_t deviceId = 0;      // DeviceInfo::id
    int64_t interval = 0;       // median spacing of the samples, ns
    std::vector<int64_t> times; // each sample's end, ascending, unique
    std::vector<GpuMetricSeries> metrics;

    // The interval sample i covers: [begin, end) with end = times[i].
    int64_t sampleBegin(size_t i) const {
        const int64_t nominal = times[i] - interval;
        if (i == 0)
            return nominal;
        // After a gap (lost samples, or sampling paused) the value still covers one interval.
        return times[i - 1] < nominal ? nominal : times[i - 1];
    }
    // The first sample whose interval ends after t: the first that can hold time t or later.
    size_t firstEndingAfter(int64_t t) const {
        return static_cast<size_t>(std::upper_bound(times.begin(), times.end(), t) - times.begin());
    }
    // The metric whose label starts with `label` ("SMs Active"), or -1.
    int find(std::string_view label) const {
        for (size_t m = 0; m < metrics.size(); ++m)
            if (std::string_view(metrics[m].label).substr(0, label.size()) == label)
                return static_cast<int>(m);
        return -1;
    }
};

// "SMs Active [Throughput %]" -> label "SMs Active", unit Percent.
inline void splitMetricName(GpuMetricSeries& s) {
    const auto open = s.name.rfind(" [");
    s.label = open == std::string::npos ? s.name : s.name.substr(0, open);
    const std::string unit = open == std::string::npos ? "" : s.name.substr(open);
    if (unit.find('%') != std::string::npos)
        s.unit = MetricUnit::Percent;
    else if (unit.find("bytes/s") != std::string::npos || unit.find("B/s") != std::string::npos)
        s.unit = MetricUnit::BytesPerSecond;
    else
        s.unit = MetricUnit::Other;
}

} // namespace warpline::model
