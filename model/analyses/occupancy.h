#pragma once

// Theoretical occupancy of a kernel launch: how many warps of it one SM can hold at once, from
// its launch configuration (block size, registers per thread, shared memory) and the device's
// per-SM limits, with the CUDA occupancy calculator's rules (cuda_occupancy.h,
// cudaOccupancyMaxActiveBlocksPerMultiprocessor). Formulas: docs/analyses.md "Theoretical
// occupancy".
//
// Inputs come from the trace file and are untrusted: any zero, negative or implausible value
// gives an unknown result with a reason, never a division by zero. Pure functions; thread-safe.

#include "tracestore.h"

#include <cstdint>
#include <optional>
#include <string>

namespace warpline::model {

// The per-SM limits the calculator needs, for one device. All positive when valid.
struct SmLimits {
    uint32_t computeMajor = 0;
    uint32_t computeMinor = 0;
    uint32_t threadsPerWarp = 32;
    uint32_t maxThreadsPerBlock = 1024;
    uint32_t maxWarpsPerSm = 0;
    uint32_t maxBlocksPerSm = 0;
    uint32_t registersPerSm = 65536;
    uint32_t maxRegistersPerBlock = 65536;
    uint32_t maxRegistersPerThread = 255;
    uint32_t registerAllocationUnit = 256;     // registers, allocated per warp
    uint32_t subPartitions = 4;                // registers are split between the SM's 4 schedulers
    uint32_t sharedMemoryPerSm = 0;            // bytes: the largest shared-memory carveout
    uint32_t sharedMemoryPerBlockOptin = 0;    // bytes: the most one block may use (opted in)
    uint32_t reservedSharedMemoryPerBlock = 0; // bytes the driver takes per block (1 KiB, CC >= 8)
    uint32_t sharedMemoryAllocationUnit = 128; // bytes
    bool fromTrace = false; // the per-SM limits came from TARGET_INFO_GPU, not the CC table
};

// The documented limits of a compute capability (CUDA C Programming Guide, "Technical
// Specifications per Compute Capability"; cuda_occupancy.h), or nullopt for one not in the table.
std::optional<SmLimits> smLimitsForComputeCapability(uint32_t major, uint32_t minor);

// A device's limits: those TARGET_INFO_GPU recorded (0 = not recorded), the rest from its
// compute capability's table entry. nullopt, with the reason in *whyNot, when the two do not give
// a full set or a recorded value is implausible (a hostile or corrupt trace).
std::optional<SmLimits> smLimitsOf(const DeviceInfo& device, std::string* whyNot = nullptr);

// One launch configuration, as recorded. Signed and wide so that hostile values stay visible.
struct LaunchShape {
    int64_t threadsPerBlock = 0;
    int64_t registersPerThread = 0;
    int64_t staticSharedMemory = 0;   // bytes per block
    int64_t dynamicSharedMemory = 0;  // bytes per block
    int64_t sharedMemoryExecuted = 0; // bytes per SM the driver configured; 0 when unknown
};

// What bounds the number of resident blocks; a launch may be bound by several at once.
enum OccupancyLimiter : uint8_t {
    LimitWarps = 1,        // warps per SM / warps per block (the block size)
    LimitRegisters = 2,    // the register file
    LimitSharedMemory = 4, // the shared-memory carveout
    LimitBlocks = 8,       // the maximum of resident blocks per SM
};

struct Occupancy {
    bool known = false;
    std::string unknownReason; // when !known: why, in a phrase ("no device limits for CC 5.2")

    uint32_t warpsPerBlock = 0;
    uint32_t activeBlocks = 0; // resident blocks per SM
    uint32_t activeWarps = 0;  // activeBlocks * warpsPerBlock
    uint32_t maxWarps = 0;     // of the SM
    double percent = 0;        // 100 * activeWarps / maxWarps
    uint8_t limiters = 0;      // OccupancyLimiter bits: every limit equal to activeBlocks

    // Blocks per SM each resource alone allows (UINT32_MAX: does not limit).
    uint32_t blocksByWarps = 0;
    uint32_t blocksByRegisters = 0;
    uint32_t blocksBySharedMemory = 0;
    uint32_t blocksByBlockLimit = 0;
    uint32_t registersPerWarp = 0;     // allocated: registers/thread * 32, rounded up to 256
    uint64_t sharedMemoryPerBlock = 0; // allocated: static + dynamic + reserve, rounded up
    uint64_t sharedMemoryPerSm = 0;    // the carveout the blocks share
    bool carveoutFromTrace = false;    // sharedMemoryPerSm is the launch's sharedMemoryExecuted
    bool limitsFromTrace = false;      // the device limits came from TARGET_INFO_GPU
    uint32_t registersPerThread = 0;
};

Occupancy theoreticalOccupancy(const LaunchShape& launch, const SmLimits& limits);

// The occupancy of a recorded launch configuration on its device.
Occupancy theoreticalOccupancy(const TraceStore& store, const KernelConfig& config);

// "registers", "shared memory", "warps (block size)", "blocks per SM"; several joined by " and ".
std::string occupancyLimiterText(uint8_t limiters);

// "75% (48 of 64 warps per SM; limited by registers: 40 regs/thread)", or "unknown (reason)":
// the value of the details panel's "Theoretical occupancy" field.
std::string occupancySentence(const Occupancy& occupancy);

// "75%" / "50–100%" (en dash) over a range of percentages.
std::string occupancyRangeText(double minPercent, double maxPercent);

} // namespace warpline::model
