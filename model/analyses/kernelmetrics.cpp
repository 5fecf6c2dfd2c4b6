#include "kernelmetrics.h"

#include "occupancy.h"
#include "saturating.h"

#include <algorithm>
#include <array>
#include <map>

namespace warpline::model {

namespace {

double maxPresent(double a, double b) {
    if (std::isnan(a))
        return b;
    if (std::isnan(b))
        return a;
    return std::max(a, b);
}

struct Overlap {
    uint32_t sample;
    NameId name; // kNoName for a copy or memset
    int64_t length;
};

constexpr size_t kCols = 7; // SM, warps, tensor, FMA, DRAM read, DRAM write, L2

// The series of a device's samples in KernelMetricsRow's order; -1 where absent.
std::array<int, kCols> metricColumns(const GpuMetricSamples& set) {
    return {set.find("SMs Active") >= 0 ? set.find("SMs Active") : set.find("SM Active"),
            set.find("Compute Warps In Flight"),
            set.find("Tensor Active"),
            set.find("FMA Pipe Active"),
            set.find("DRAM Read Bandwidth"),
            set.find("DRAM Write Bandwidth"),
            set.find("L2 Throughput")};
}

struct Sums {
    uint64_t n = 0;
    double sum[kCols] = {};
    uint64_t present[kCols] = {};
    void add(const GpuMetricSamples& set, const std::array<int, kCols>& col, size_t s) {
        ++n;
        for (size_t c = 0; c < kCols; ++c) {
            if (col[c] < 0)
                continue;
            const float v = set.metrics[static_cast<size_t>(col[c])].values[s];
            if (std::isnan(v))
                continue;
            sum[c] += v;
            ++present[c];
        }
    }
};

// Means, bandwidth, bytes and bound of a row from its samples' sums.
void fill(KernelMetricsRow& r, const Sums& sum, const DeviceInfo* device) {
    r.samples = sum.n;
    double* fields[] = {&r.smActive, &r.warpsActive, &r.tensor, &r.fma,
                        &r.dramRead, &r.dramWrite,   &r.l2};
    for (size_t c = 0; c < kCols; ++c)
        *fields[c] = sum.present[c] > 0 ? sum.sum[c] / static_cast<double>(sum.present[c])
                                        : KernelMetricsRow::kNone;
    if (device && device->memoryBandwidth > 0 && !std::isnan(r.dram())) {
        r.achievedBandwidth = r.dram() / 100.0 * static_cast<double>(device->memoryBandwidth);
        r.bytesMoved = r.achievedBandwidth * static_cast<double>(r.totalTime) * 1e-9;
    }
    const double memory = r.memory(), compute = r.compute();
    const double m = std::isnan(memory) ? 0 : memory, c = std::isnan(compute) ? 0 : compute;
    if (sum.n == 0 || (std::isnan(memory) && std::isnan(compute)))
        r.bound = KernelBound::TooShort;
    else if (m >= kRoofThreshold && m >= c)
        r.bound = KernelBound::Memory;
    else if (c >= kRoofThreshold)
        r.bound = KernelBound::Compute;
    else
        r.bound = KernelBound::Latency;
}

} // namespace

double KernelMetricsRow::dram() const {
    if (std::isnan(dramRead) && std::isnan(dramWrite))
        return kNone;
    return (std::isnan(dramRead) ? 0 : dramRead) + (std::isnan(dramWrite) ? 0 : dramWrite);
}
double KernelMetricsRow::compute() const {
    return maxPresent(fma, tensor);
}
double KernelMetricsRow::memory() const {
    return maxPresent(dram(), l2);
}

std::string kernelBoundName(KernelBound bound) {
    switch (bound) {
    case KernelBound::Memory:
        return "memory-bound";
    case KernelBound::Compute:
        return "compute-bound";
    case KernelBound::Latency:
        return "latency-bound";
    case KernelBound::TooShort:
        return "too short to sample";
    case KernelBound::NotSampled:
        break;
    }
    return "not sampled";
}

KernelMetricsReport kernelMetrics(const TraceStore& store) {
    KernelMetricsReport report;
    report.sampled = !store.gpuMetrics().empty();
    // Theoretical occupancy per launch configuration (NaN: unknown).
    std::vector<double> configOccupancy;
    for (const KernelConfig& c : store.kernelConfigs()) {
        const Occupancy o = theoreticalOccupancy(store, c);
        configOccupancy.push_back(o.known ? o.percent : KernelMetricsRow::kNone);
    }
    // Instances and time per (device, name).
    std::map<std::pair<uint32_t, NameId>, KernelMetricsRow> rows;
    for (const GpuTrack& t : store.gpuTracks())
        for (size_t i = 0; i < t.size(); ++i) {
            if (t.kind(i) != GpuOpKind::Kernel)
                continue;
            KernelMetricsRow& r = rows[{t.deviceId(), t.name(i)}];
            r.name = t.name(i);
            r.deviceId = t.deviceId();
            ++r.instances;
            accumulate(r.totalTime, t.end(i) - t.start(i));
            if (t.detail(i) < configOccupancy.size()) {
                const double o = configOccupancy[t.detail(i)];
                if (!std::isnan(o)) {
                    r.occupancyMin = std::isnan(r.occupancyMin) ? o : std::min(r.occupancyMin, o);
                    r.occupancyMax = std::isnan(r.occupancyMax) ? o : std::max(r.occupancyMax, o);
                }
            }
        }

    for (const GpuMetricSamples& set : store.gpuMetrics()) {
        if (set.times.empty() || set.interval <= 0)
            continue;
        const std::array<int, kCols> col = metricColumns(set);
        // Every (sample, op) overlap on this device.
        std::vector<Overlap> overlaps;
        for (const GpuTrack& t : store.gpuTracks()) {
            if (t.deviceId() != set.deviceId)
                continue;
            for (size_t i = 0; i < t.size(); ++i) {
                const int64_t start = t.start(i), end = t.end(i);
                for (size_t s = set.firstEndingAfter(start);
                     s < set.times.size() && set.sampleBegin(s) < end; ++s) {
                    const int64_t length =
                        std::min(end, set.times[s]) - std::max(start, set.sampleBegin(s));
                    if (length > 0)
                        overlaps.push_back({static_cast<uint32_t>(s),
                                            t.kind(i) == GpuOpKind::Kernel ? t.name(i) : kNoName,
                                            length});
                }
            }
        }
        std::sort(overlaps.begin(), overlaps.end(), [](const Overlap& a, const Overlap& b) {
            return a.sample != b.sample ? a.sample < b.sample : a.name < b.name;
        });
        std::map<NameId, Sums> sums;
        for (size_t a = 0; a < overlaps.size();) {
            const uint32_t s = overlaps[a].sample;
            const int64_t length = set.times[s] - set.sampleBegin(s);
            // Coverage per name within this sample.
            NameId best = kNoName;
            int64_t bestCover = 0, total = 0;
            size_t b = a;
            while (b < overlaps.size() && overlaps[b].sample == s) {
                const NameId name = overlaps[b].name;
                int64_t cover = 0;
                for (; b < overlaps.size() && overlaps[b].sample == s && overlaps[b].name == name;
                     ++b)
                    accumulate(cover, overlaps[b].length);
                accumulate(total, cover);
                if (name != kNoName && cover > bestCover) {
                    bestCover = cover;
                    best = name;
                }
            }
            a = b;
            const int64_t others = total - bestCover;
            if (best == kNoName || bestCover * 10 < length * 9 || others * 10 > length)
                continue;
            sums[best].add(set, col, s);
        }
        for (auto& [key, row] : rows)
            if (key.first == set.deviceId)
                row.bound = KernelBound::TooShort;
        const DeviceInfo* device = store.device(set.deviceId);
        for (const auto& [name, sum] : sums) {
            const auto it = rows.find({set.deviceId, name});
            if (it == rows.end())
                continue;
            fill(it->second, sum, device);
        }
    }
    for (auto& [key, row] : rows)
        report.rows.push_back(row);
    std::stable_sort(report.rows.begin(), report.rows.end(),
                     [](const KernelMetricsRow& a, const KernelMetricsRow& b) {
                         return a.totalTime > b.totalTime;
                     });
    return report;
}

KernelMetricsRow instanceMetrics(const TraceStore& store, EventRef op) {
    KernelMetricsRow r;
    if (!op.valid() || op.track >= store.gpuTracks().size())
        return r;
    const GpuTrack& t = store.gpuTracks()[op.track];
    if (op.index >= t.size())
        return r;
    r.name = t.name(op.index);
    r.deviceId = t.deviceId();
    r.instances = 1;
    const int64_t start = t.start(op.index), end = t.end(op.index);
    r.totalTime = end - start;
    const GpuMetricSamples* set = store.gpuMetricsOf(t.deviceId());
    if (!set || set->times.empty() || set->interval <= 0)
        return r; // NotSampled
    const std::array<int, kCols> col = metricColumns(*set);
    Sums sum;
    for (size_t s = set->firstEndingAfter(start); s < set->times.size() && set->times[s] <= end;
         ++s) {
        const int64_t length = set->times[s] - set->sampleBegin(s);
        if (set->sampleBegin(s) >= start && length > 0)
            sum.add(*set, col, s);
    }
    fill(r, sum, store.device(t.deviceId()));
    return r;
}

Table kernelMetricsTable(const TraceStore& store, const KernelMetricsReport& report) {
    bool severalDevices = false;
    for (const auto& r : report.rows)
        severalDevices = severalDevices || r.deviceId != report.rows.front().deviceId;
    std::vector<Column> columns = {{"Total Time (ns)"},
                                   {"Instances"},
                                   {"Samples"},
                                   {"SM Active (%)"},
                                   {"Warps Active (%)"},
                                   {"Theoretical Occupancy"},
                                   {"Tensor (%)"},
                                   {"FMA (%)"},
                                   {"DRAM (%)"},
                                   {"DRAM (GB/s)", Column::Align::Right, 0},
                                   {"L2 (%)"},
                                   {"DRAM Moved (MB)"},
                                   {"Bound", Column::Align::Left}};
    if (severalDevices)
        columns.push_back({"GPU"});
    columns.push_back({"Name", Column::Align::Left});
    Table table(columns);
    const auto value = [](double v) -> Cell {
        if (std::isnan(v))
            return std::monostate{};
        return v;
    };
    for (const KernelMetricsRow& r : report.rows) {
        std::vector<Cell> cells = {
            r.totalTime,
            static_cast<int64_t>(r.instances),
            static_cast<int64_t>(r.samples),
            value(r.smActive),
            value(r.warpsActive),
            std::isnan(r.occupancyMin) ? Cell(std::monostate{})
                                       : Cell(occupancyRangeText(r.occupancyMin, r.occupancyMax)),
            value(r.tensor),
            value(r.fma),
            value(r.dram()),
            value(r.achievedBandwidth * 1e-9),
            value(r.l2),
            value(r.bytesMoved * 1e-6),
            kernelBoundName(r.bound),
        };
        if (severalDevices)
            cells.emplace_back(static_cast<int64_t>(r.deviceId));
        cells.emplace_back(store.text(r.name));
        table.addRow(std::move(cells));
    }
    return table;
}

} // namespace warpline::model
