#include "gpuactivity.h"

#include <algorithm>
#include <cstdint>

namespace warpline::model {

GpuActivity gpuActivity(const TraceStore& store) {
    constexpr size_t kBins = kGpuBusyBins;
    const double begin = static_cast<double>(store.beginTime());
    const double end = std::max(begin + 1, static_cast<double>(store.endTime()));
    const double span = std::max(1.0, static_cast<double>(store.endTime() - store.beginTime()));
    // O(ops + bins they cover).
    const double binNs = (end - begin) / kBins;
    std::vector<double> busy(kBins, 0.0);   // busy time per bin, in bins
    std::vector<double> opTime(kBins, 0.0); // op time by the bin of each op's middle, in ns
    double total = 0;
    for (const GpuTrack& t : store.gpuTracks()) {
        for (size_t i = 0; i < t.size(); ++i) {
            const int64_t start = t.start(i), stop = t.end(i);
            double a = (static_cast<double>(start) - begin) / binNs;
            const double b = (static_cast<double>(stop) - begin) / binNs;
            a = std::max(a, 0.0);
            while (a < b && a < kBins) {
                const auto bin = static_cast<size_t>(a);
                const double next = std::min(b, static_cast<double>(bin + 1));
                busy[bin] += next - a;
                a = next;
            }
            const double d = static_cast<double>(std::max<int64_t>(1, stop - start));
            const double mid = 0.5 * static_cast<double>(start + stop);
            const auto bin = static_cast<size_t>(
                std::clamp((mid - begin) / span * kBins, 0.0, double(kBins - 1)));
            opTime[bin] += d;
            total += d;
        }
    }
    GpuActivity out;
    out.busyShares.resize(kBins);
    for (size_t b = 0; b < kBins; ++b)
        out.busyShares[b] = static_cast<float>(std::min(1.0, busy[b]));
    if (total <= 0)
        return out;
    size_t first = 0, last = kBins - 1;
    double sum = 0;
    for (size_t b = 0; b < kBins; ++b) {
        sum += opTime[b];
        if (sum >= 0.01 * total) {
            first = b;
            break;
        }
    }
    sum = 0;
    for (size_t b = kBins; b-- > 0;) {
        sum += opTime[b];
        if (sum >= 0.01 * total) {
            last = b;
            break;
        }
    }
    out.empty = false;
    out.t0 = begin + span * static_cast<double>(first) / kBins;
    out.t1 = begin + span * static_cast<double>(last + 1) / kBins;
    return out;
}

} // namespace warpline::model
