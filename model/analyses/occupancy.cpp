#include "occupancy.h"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace warpline::model {

namespace {

constexpr uint32_t kUnlimited = std::numeric_limits<uint32_t>::max();
constexpr uint32_t KiB = 1024;

// Per-SM resources of one compute capability (CUDA C Programming Guide, "Technical
// Specifications per Compute Capability"; blocks per SM and allocation units as cuda_occupancy.h
// of CUDA 13.0 has them).
struct CcEntry {
    uint32_t major, minor;
    uint32_t maxWarpsPerSm, maxBlocksPerSm;
    uint32_t sharedMemoryPerSm, sharedMemoryPerBlockOptin; // bytes
};

constexpr CcEntry kComputeCapabilities[] = {
    {7, 0, 64, 32, 96 * KiB, 96 * KiB},    // V100
    {7, 2, 64, 32, 96 * KiB, 96 * KiB},    // Xavier
    {7, 5, 32, 16, 64 * KiB, 64 * KiB},    // Turing
    {8, 0, 64, 32, 164 * KiB, 163 * KiB},  // A100
    {8, 6, 48, 16, 100 * KiB, 99 * KiB},   // GA10x
    {8, 7, 48, 16, 164 * KiB, 163 * KiB},  // Orin
    {8, 9, 48, 24, 100 * KiB, 99 * KiB},   // Ada
    {9, 0, 64, 32, 228 * KiB, 227 * KiB},  // H100, H200
    {10, 0, 64, 32, 228 * KiB, 227 * KiB}, // B200
    {10, 3, 64, 32, 228 * KiB, 227 * KiB}, // B300
    {12, 0, 48, 24, 100 * KiB, 99 * KiB},  // RTX 50 series
    {12, 1, 48, 24, 100 * KiB, 99 * KiB},  // GB10
};

// The rules every compute capability from 7.0 on shares; per-SM counts left unknown (0).
std::optional<SmLimits> familyLimits(uint32_t major, uint32_t minor) {
    if (major < 7 || major > 12)
        return std::nullopt;
    SmLimits l;
    l.computeMajor = major;
    l.computeMinor = minor;
    l.sharedMemoryAllocationUnit = major >= 8 ? 128 : 256;
    l.reservedSharedMemoryPerBlock = major >= 8 ? KiB : 0;
    return l;
}

uint64_t roundUp(uint64_t value, uint64_t unit) {
    return (value + unit - 1) / unit * unit;
}

std::string formatPercent(double percent) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.1f", percent);
    std::string text = buffer;
    if (text.size() > 2 && text.compare(text.size() - 2, 2, ".0") == 0)
        text.resize(text.size() - 2);
    return text;
}

std::string formatBytes(uint64_t bytes) {
    if (bytes < KiB || bytes % (KiB / 2) != 0)
        return std::to_string(bytes) + " B";
    return formatPercent(static_cast<double>(bytes) / KiB) + " KiB";
}

} // namespace

std::optional<SmLimits> smLimitsForComputeCapability(uint32_t major, uint32_t minor) {
    for (const CcEntry& e : kComputeCapabilities) {
        if (e.major != major || e.minor != minor)
            continue;
        std::optional<SmLimits> l = familyLimits(major, minor);
        l->maxWarpsPerSm = e.maxWarpsPerSm;
        l->maxBlocksPerSm = e.maxBlocksPerSm;
        l->sharedMemoryPerSm = e.sharedMemoryPerSm;
        l->sharedMemoryPerBlockOptin = e.sharedMemoryPerBlockOptin;
        return l;
    }
    return std::nullopt;
}

std::optional<SmLimits> smLimitsOf(const DeviceInfo& device, std::string* whyNot) {
    const auto fail = [&](std::string reason) -> std::optional<SmLimits> {
        if (whyNot)
            *whyNot = std::move(reason);
        return std::nullopt;
    };
    const std::string cc =
        std::to_string(device.computeMajor) + "." + std::to_string(device.computeMinor);
    std::optional<SmLimits> limits =
        smLimitsForComputeCapability(device.computeMajor, device.computeMinor);
    if (!limits)
        limits = familyLimits(device.computeMajor, device.computeMinor);
    if (!limits)
        return fail(device.computeMajor == 0 ? "the trace gives no compute capability"
                                             : "compute capability " + cc + " is not modelled");
    // A recorded value replaces the table's when plausible; an implausible one (a corrupt or
    // hostile trace) makes the limits unknown rather than silently wrong.
    bool implausible = false;
    std::string bad;
    const auto take = [&](uint32_t recorded, uint32_t& field, uint32_t low, uint32_t high,
                          const char* column, bool perSm) {
        if (recorded == 0)
            return;
        if (recorded < low || recorded > high) {
            if (!implausible)
                bad = std::string(column) + " = " + std::to_string(recorded);
            implausible = true;
            return;
        }
        field = recorded;
        if (perSm)
            limits->fromTrace = true;
    };
    take(device.threadsPerWarp, limits->threadsPerWarp, 32, 32, "threadsPerWarp", false);
    take(device.maxThreadsPerBlock, limits->maxThreadsPerBlock, 32, 4096, "maxThreadsPerBlock",
         false);
    take(device.maxRegistersPerBlock, limits->maxRegistersPerBlock, 1024, 1u << 20,
         "maxRegistersPerBlock", false);
    take(device.maxRegistersPerSm, limits->registersPerSm, 1024, 1u << 20, "maxRegistersPerSm",
         true);
    take(device.maxWarpsPerSm, limits->maxWarpsPerSm, 1, 256, "maxWarpsPerSm", true);
    take(device.maxBlocksPerSm, limits->maxBlocksPerSm, 1, 256, "maxBlocksPerSm", true);
    take(device.maxSharedMemoryPerSm, limits->sharedMemoryPerSm, 1, 64u << 20, "maxShmemPerSm",
         true);
    take(device.maxSharedMemoryPerBlockOptin, limits->sharedMemoryPerBlockOptin, 1, 64u << 20,
         "maxShmemPerBlockOptin", true);
    if (implausible)
        return fail("TARGET_INFO_GPU." + bad + " is not plausible");
    // CUPTI records no opt-in limit: a block may use at most the SM's carveout less its reserve.
    if (limits->sharedMemoryPerBlockOptin == 0 &&
        limits->sharedMemoryPerSm > limits->reservedSharedMemoryPerBlock)
        limits->sharedMemoryPerBlockOptin =
            limits->sharedMemoryPerSm - limits->reservedSharedMemoryPerBlock;
    if (limits->maxWarpsPerSm == 0 || limits->maxBlocksPerSm == 0 ||
        limits->sharedMemoryPerSm == 0 || limits->sharedMemoryPerBlockOptin == 0)
        return fail("the trace does not record the GPU's per-SM limits and compute capability " +
                    cc + " is not in Warpline's table");
    return limits;
}

Occupancy theoreticalOccupancy(const LaunchShape& launch, const SmLimits& limits) {
    Occupancy o;
    const auto unknown = [&](std::string reason) {
        o.known = false;
        o.unknownReason = std::move(reason);
        return o;
    };
    if (limits.threadsPerWarp == 0 || limits.maxWarpsPerSm == 0 || limits.subPartitions == 0 ||
        limits.registerAllocationUnit == 0 || limits.sharedMemoryAllocationUnit == 0)
        return unknown("device limits incomplete");
    if (launch.threadsPerBlock <= 0)
        return unknown("block of " + std::to_string(launch.threadsPerBlock) + " threads");
    if (launch.registersPerThread < 0)
        return unknown(std::to_string(launch.registersPerThread) + " registers per thread");
    if (launch.staticSharedMemory < 0 || launch.dynamicSharedMemory < 0)
        return unknown("negative shared memory size");
    o.known = true;
    o.limitsFromTrace = limits.fromTrace;
    o.maxWarps = limits.maxWarpsPerSm;
    o.registersPerThread =
        static_cast<uint32_t>(std::min<int64_t>(launch.registersPerThread, kUnlimited));

    // Warps: a block occupies whole warps. A block over the device's limit cannot launch.
    const uint64_t threads = static_cast<uint64_t>(launch.threadsPerBlock);
    const uint64_t warpsPerBlock = (threads + limits.threadsPerWarp - 1) / limits.threadsPerWarp;
    o.warpsPerBlock = static_cast<uint32_t>(std::min<uint64_t>(warpsPerBlock, kUnlimited));
    o.blocksByWarps = threads > limits.maxThreadsPerBlock
                          ? 0
                          : static_cast<uint32_t>(limits.maxWarpsPerSm / warpsPerBlock);

    // Registers: allocated per warp in units, from the register file of each of the SM's
    // sub-partitions (schedulers); a block must also fit the per-block limit, checked as if its
    // warps were spread evenly over the sub-partitions.
    if (threads > limits.maxThreadsPerBlock) {
        o.blocksByRegisters = kUnlimited; // the block size alone rules it out
    } else if (launch.registersPerThread > limits.maxRegistersPerThread) {
        o.blocksByRegisters = 0;
    } else {
        const uint64_t perWarp =
            roundUp(static_cast<uint64_t>(launch.registersPerThread) * limits.threadsPerWarp,
                    limits.registerAllocationUnit);
        o.registersPerWarp = static_cast<uint32_t>(perWarp);
        const uint64_t perBlock = perWarp * warpsPerBlock;
        const uint64_t assumedPerBlock = perWarp * roundUp(warpsPerBlock, limits.subPartitions);
        if (perBlock > limits.maxRegistersPerBlock || assumedPerBlock > limits.maxRegistersPerBlock)
            o.blocksByRegisters = 0;
        else if (perWarp == 0)
            o.blocksByRegisters = kUnlimited;
        else
            o.blocksByRegisters =
                static_cast<uint32_t>((limits.registersPerSm / limits.subPartitions / perWarp) *
                                      limits.subPartitions / warpsPerBlock);
    }

    // Shared memory: static + dynamic + the driver's reserve, in allocation units, out of the
    // carveout the driver configured for the launch (when recorded and consistent) or the
    // largest one.
    constexpr int64_t kAbsurdSharedMemory = int64_t(1) << 40;
    if (launch.staticSharedMemory > kAbsurdSharedMemory ||
        launch.dynamicSharedMemory > kAbsurdSharedMemory) {
        o.sharedMemoryPerBlock = std::numeric_limits<uint64_t>::max();
        o.blocksBySharedMemory = 0;
    } else {
        o.sharedMemoryPerBlock = roundUp(static_cast<uint64_t>(launch.staticSharedMemory) +
                                             static_cast<uint64_t>(launch.dynamicSharedMemory) +
                                             limits.reservedSharedMemoryPerBlock,
                                         limits.sharedMemoryAllocationUnit);
        o.sharedMemoryPerSm = limits.sharedMemoryPerSm;
        if (launch.sharedMemoryExecuted > 0 &&
            static_cast<uint64_t>(launch.sharedMemoryExecuted) <= limits.sharedMemoryPerSm &&
            static_cast<uint64_t>(launch.sharedMemoryExecuted) >= o.sharedMemoryPerBlock) {
            o.sharedMemoryPerSm = static_cast<uint64_t>(launch.sharedMemoryExecuted);
            o.carveoutFromTrace = true;
        }
        const uint64_t perBlockLimit =
            uint64_t{limits.sharedMemoryPerBlockOptin} + limits.reservedSharedMemoryPerBlock;
        if (o.sharedMemoryPerBlock > perBlockLimit)
            o.blocksBySharedMemory = 0;
        else if (o.sharedMemoryPerBlock == 0)
            o.blocksBySharedMemory = kUnlimited;
        else
            o.blocksBySharedMemory = static_cast<uint32_t>(
                std::min<uint64_t>(o.sharedMemoryPerSm / o.sharedMemoryPerBlock, kUnlimited));
    }

    o.blocksByBlockLimit = limits.maxBlocksPerSm;
    o.activeBlocks = std::min(
        {o.blocksByWarps, o.blocksByRegisters, o.blocksBySharedMemory, o.blocksByBlockLimit});
    if (o.blocksByWarps == o.activeBlocks)
        o.limiters |= LimitWarps;
    if (o.blocksByRegisters == o.activeBlocks)
        o.limiters |= LimitRegisters;
    if (o.blocksBySharedMemory == o.activeBlocks)
        o.limiters |= LimitSharedMemory;
    if (o.blocksByBlockLimit == o.activeBlocks)
        o.limiters |= LimitBlocks;
    // activeBlocks <= blocksByWarps keeps this within maxWarps.
    o.activeWarps = static_cast<uint32_t>(uint64_t{o.activeBlocks} * warpsPerBlock);
    o.percent = 100.0 * o.activeWarps / limits.maxWarpsPerSm;
    return o;
}

Occupancy theoreticalOccupancy(const TraceStore& store, const KernelConfig& config) {
    const DeviceInfo* device = store.device(config.deviceId);
    if (!device) {
        Occupancy o;
        o.unknownReason = "the trace does not describe the GPU";
        return o;
    }
    std::string whyNot;
    const std::optional<SmLimits> limits = smLimitsOf(*device, &whyNot);
    if (!limits) {
        Occupancy o;
        o.unknownReason = whyNot;
        return o;
    }
    LaunchShape launch;
    const auto dim = [](int32_t v) { return static_cast<int64_t>(v); };
    launch.threadsPerBlock = dim(config.blockX) * dim(config.blockY) * dim(config.blockZ);
    if (config.blockX < 0 || config.blockY < 0 || config.blockZ < 0)
        launch.threadsPerBlock = -1;
    launch.registersPerThread = config.registersPerThread;
    launch.staticSharedMemory = config.staticSharedMemory;
    launch.dynamicSharedMemory = config.dynamicSharedMemory;
    launch.sharedMemoryExecuted = config.sharedMemoryExecuted;
    return theoreticalOccupancy(launch, *limits);
}

std::string occupancyLimiterText(uint8_t limiters) {
    std::string text;
    const auto add = [&](uint8_t bit, const char* name) {
        if (!(limiters & bit))
            return;
        text += (text.empty() ? "" : " and ");
        text += name;
    };
    add(LimitWarps, "warps (block size)");
    add(LimitRegisters, "registers");
    add(LimitSharedMemory, "shared memory");
    add(LimitBlocks, "blocks per SM");
    return text;
}

std::string occupancySentence(const Occupancy& o) {
    if (!o.known)
        return "unknown (" + o.unknownReason + ")";
    std::string text = formatPercent(o.percent) + "% (" + std::to_string(o.activeWarps) + " of " +
                       std::to_string(o.maxWarps) + " warps per SM";
    if (o.activeBlocks == 0)
        text += "; the block does not fit an SM";
    std::string causes;
    const auto add = [&](uint8_t bit, const std::string& cause) {
        if (!(o.limiters & bit))
            return;
        causes += (causes.empty() ? "" : " and ") + cause;
    };
    add(LimitWarps, "warps (block size): " + std::to_string(o.warpsPerBlock) + " warps/block");
    add(LimitRegisters, "registers: " + std::to_string(o.registersPerThread) + " regs/thread");
    add(LimitSharedMemory, "shared memory: " + formatBytes(o.sharedMemoryPerBlock) + "/block of " +
                               formatBytes(o.sharedMemoryPerSm) + " per SM");
    add(LimitBlocks, "blocks per SM: " + std::to_string(o.blocksByBlockLimit) + " max");
    if (!causes.empty())
        text += "; limited by " + causes;
    return text + ")";
}

std::string occupancyRangeText(double minPercent, double maxPercent) {
    const std::string low = formatPercent(minPercent);
    const std::string high = formatPercent(maxPercent);
    return low == high ? low + "%" : low + "\u2013" + high + "%";
}

} // namespace warpline::model
