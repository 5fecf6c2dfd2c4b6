#include "gpuactivity.h"

#include <algorithm>
#include <cstdint>

namespace warpline::model {

std::vector<float> gpuBusyShares(const TraceStore& store) {
    constexpr size_t kBins = kGpuBusyBins;
    const double begin = static_cast<double>(store.beginTime());
    const double end = std::max(begin + 1, static_cast<double>(store.endTime()));
    // O(ops + bins they cover).
    const double binNs = (end - begin) / kBins;
    std::vector<double> busy(kBins, 0.0);
    for (const GpuTrack& t : store.gpuTracks()) {
        for (size_t i = 0; i < t.size(); ++i) {
            double a = (static_cast<double>(t.start(i)) - begin) / binNs;
            const double b = (static_cast<double>(t.end(i)) - begin) / binNs;
            a = std::max(a, 0.0);
            while (a < b && a < kBins) {
                const auto bin = static_cast<size_t>(a);
                const double next = std::min(b, static_cast<double>(bin + 1));
                busy[bin] += next - a;
                a = next;
            }
        }
    }
    std::vector<float> shares(kBins);
    for (size_t b = 0; b < kBins; ++b)
        shares[b] = static_cast<float>(std::min(1.0, busy[b]));
    return shares;
}

GpuActivity gpuActivityRange(const TraceStore& store) {
    constexpr size_t kBins = 4096;
    const double begin = static_cast<double>(store.beginTime());
    const double span = std::max(1.0, static_cast<double>(store.endTime() - store.beginTime()));
    std::vector<double> busy(kBins, 0.0);
    double total = 0;
    for (const GpuTrack& t : store.gpuTracks()) {
        for (size_t i = 0; i < t.size(); ++i) {
            const double d = static_cast<double>(std::max<int64_t>(1, t.duration(i)));
            const double mid = 0.5 * static_cast<double>(t.start(i) + t.end(i));
            const auto bin = static_cast<size_t>(
                std::clamp((mid - begin) / span * kBins, 0.0, double(kBins - 1)));
            busy[bin] += d;
            total += d;
        }
    }
    if (total <= 0)
        return {};
    size_t first = 0, last = kBins - 1;
    double sum = 0;
    for (size_t b = 0; b < kBins; ++b) {
        sum += busy[b];
        if (sum >= 0.01 * total) {
            first = b;
            break;
        }
    }
    sum = 0;
    for (size_t b = kBins; b-- > 0;) {
        sum += busy[b];
        if (sum >= 0.01 * total) {
            last = b;
            break;
        }
    }
    return {false, begin + span * static_cast<double>(first) / kBins,
            begin + span * static_cast<double>(last + 1) / kBins};
}

} // namespace warpline::model
