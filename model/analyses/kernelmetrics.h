#pragma once

// GPU metrics per kernel: which kernels are memory-bound, compute-bound or neither. Definitions
// and formulas: docs/analyses.md, "GPU metrics per kernel".
//
//  - A metric sample (GpuMetricSamples, interval I ending at its time) belongs to kernel name K on
//    its device when K's kernels cover at least 90% of the interval and every other GPU op (other
//    kernel names, copies, memsets, on any stream) covers at most 10% of it. A kernel name with no
//    such sample is "too short to sample": its instances are shorter than about one interval, or
//    always share the GPU; it gets no numbers, not a guess.
//  - Each metric's mean over the name's samples. DRAM % = DRAM read % + DRAM write % (reads and
//    writes share the peak); compute % = the larger of the FMA pipe % and the tensor pipe %;
//    memory % = the larger of DRAM % and L2 %.
//  - Bound: memory-bound when memory % >= 60 and >= compute %; compute-bound when compute % >= 60
//    and > memory %; latency-bound when neither roof is near (both < 60%): the kernel waits on
//    latency (dependent loads, too few warps, synchronization) rather than a throughput limit.
//  - Achieved DRAM bandwidth = DRAM % x the device's peak (TARGET_INFO_GPU.memoryBandwidth);
//    DRAM bytes moved (an estimate) = achieved bandwidth x the name's total time.
//
// Pure function of the store; O(ops + samples) per device plus a sort of the (sample, op) overlaps.

#include "table.h"
#include "tracestore.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace warpline::model {

// NotSampled: the kernel's device has no metric samples (recorded without --gpu-metrics).
enum class KernelBound : uint8_t { NotSampled, TooShort, Memory, Compute, Latency };

struct KernelMetricsRow {
    static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
    NameId name = kNoName; // demangled, as the kernels table
    uint32_t deviceId = 0;
    uint64_t instances = 0;
    int64_t totalTime = 0; // ns
    uint64_t samples = 0;  // samples attributed to the name
    // Means over the samples, in % of peak; NaN when not sampled or not in the trace.
    double smActive = kNone, warpsActive = kNone, tensor = kNone, fma = kNone;
    double dramRead = kNone, dramWrite = kNone, l2 = kNone;
    double dram() const;    // read + write
    double compute() const; // max(fma, tensor)
    double memory() const;  // max(dram, l2)
    // Theoretical occupancy over the name's launch configurations (occupancy.h), in %.
    double occupancyMin = kNone, occupancyMax = kNone;
    double achievedBandwidth = kNone; // DRAM bytes per second
    double bytesMoved = kNone;        // DRAM bytes over all instances (estimate)
    KernelBound bound = KernelBound::NotSampled;
};

struct KernelMetricsReport {
    bool sampled = false;               // the trace has GPU metric samples at all
    std::vector<KernelMetricsRow> rows; // by total time, descending
};

inline constexpr double kRoofThreshold = 60.0; // % of peak that counts as "at the roof"

KernelMetricsReport kernelMetrics(const TraceStore& store);
// One kernel instance (an EventRef into gpuTracks()): the samples whose whole interval lies inside
// it (other work running beside it is not checked), for the details panel. NotSampled without
// samples on its GPU; TooShort when no sample fits inside.
KernelMetricsRow instanceMetrics(const TraceStore& store, EventRef op);
// "memory-bound", "compute-bound", "latency-bound", "too short to sample", "not sampled"
std::string kernelBoundName(KernelBound bound);
// Total Time (ns), Instances, Samples, SM Active (%), Warps Active (%), Theoretical Occupancy,
// Tensor (%), FMA (%),
// DRAM (%), DRAM (GB/s), L2 (%), DRAM Moved (MB), Bound, [GPU,] Name
Table kernelMetricsTable(const TraceStore& store, const KernelMetricsReport& report);

} // namespace warpline::model
