#pragma once

// Plain records the collector decodes from CUPTI and hands to TraceWriter. No CUPTI types here,
// so the writer can be tested without a GPU. Times are integer nanoseconds relative to the start
// of the recording session (t = 0 when the session started); ids are CUPTI's.
//
// Names in the per-event records (kernels, API calls, markers) are views: they point at strings
// that outlive the call that hands the record over (CUPTI's own name strings, the decoder's name
// cache), so the hot path copies no string. TraceWriter interns what it keeps.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace warpline::format {

// One kernel execution on the GPU.
struct KernelRecord {
    int64_t start = 0;
    int64_t end = 0;
    uint32_t deviceId = 0;
    uint32_t contextId = 0;
    uint32_t streamId = 0;
    uint32_t correlationId =
        0; // joins the launching API call (for graph launches: the cudaGraphLaunch)
    std::string mangledName; // as the driver reports it; demangled and short names derived on write
    int64_t gridId = 0;
    int32_t gridX = 1, gridY = 1, gridZ = 1;
    int32_t blockX = 1, blockY = 1, blockZ = 1;
    uint32_t registersPerThread = 0;
    int32_t staticSharedMemory = 0;
    int32_t dynamicSharedMemory = 0;
    uint32_t localMemoryPerThread = 0;
    uint64_t localMemoryTotal = 0;
    uint32_t sharedMemoryExecuted = 0;
    uint8_t launchType =
        0; // ENUM_CUDA_KERNEL_LAUNCH_TYPE: 0 regular, 1 cooperative single, 2 multi
    uint8_t cacheConfig = 0; // CUPTI cacheConfig.both
    uint8_t sharedMemoryLimitConfig = 0;
    uint32_t clusterX = 0, clusterY = 0, clusterZ = 0;
    std::optional<uint64_t> graphNodeId; // set when launched as part of a CUDA graph
    std::optional<uint32_t> graphId;
};

// One CUDA runtime or driver API call on a CPU thread.
struct ApiRecord {
    enum class Domain { Runtime, Driver };
    Domain domain = Domain::Runtime;
    int64_t start = 0;
    int64_t end = 0;
    uint32_t processId = 0;
    uint32_t threadId = 0;
    uint32_t correlationId = 0;
    uint32_t callbackId = 0;
    std::string_view name; // CUPTI's callback name, e.g. "cudaLaunchKernel_v7000"
    uint32_t returnValue = 0;
    uint32_t callchainId = 0; // the caller's Python stack (CallchainRecord::id); 0: none
};

// One Python call stack (warpline-record --python-stacks), innermost frame first; written as
// Nsight Systems' CUDA_CALLCHAINS rows.
struct PythonFrame {
    std::string function; // co_qualname (3.11+) or co_name
    std::string file;     // co_filename
    int line = 0;
};
struct CallchainRecord {
    uint32_t id = 0;
    std::vector<PythonFrame> frames;
};

struct MemcpyRecord {
    int64_t start = 0;
    int64_t end = 0;
    uint32_t deviceId = 0;
    uint32_t contextId = 0;
    uint32_t streamId = 0;
    uint32_t correlationId = 0;
    uint64_t bytes = 0;
    uint8_t copyKind = 0; // CUpti_ActivityMemcpyKind == ENUM_CUDA_MEMCPY_OPER
    uint8_t srcKind = 0;  // CUpti_ActivityMemoryKind == ENUM_CUDA_MEM_KIND
    uint8_t dstKind = 0;
    std::optional<uint64_t> graphNodeId;
};

struct MemsetRecord {
    int64_t start = 0;
    int64_t end = 0;
    uint32_t deviceId = 0;
    uint32_t contextId = 0;
    uint32_t streamId = 0;
    uint32_t correlationId = 0;
    uint64_t bytes = 0;
    uint32_t value = 0;
    uint16_t memKind = 0;
    std::optional<uint64_t> graphNodeId;
};

// A GPU-side synchronization the CPU waited on (CUPTI_ACTIVITY_KIND_SYNCHRONIZATION).
struct SyncRecord {
    int64_t start = 0;
    int64_t end = 0;
    uint32_t contextId = 0;
    std::optional<uint32_t> streamId; // absent for context-wide syncs
    uint32_t correlationId = 0;       // the API call that synchronized
    uint8_t syncType = 0; // ENUM_CUPTI_SYNC_TYPE: 1 event, 2 stream wait event, 3 stream, 4 context
    std::optional<uint32_t> eventId;
};

// One NVTX marker activity record. Ranges arrive as a Start record (with name) and an End record
// sharing its id; TraceWriter pairs them into one NVTX_EVENTS row.
struct MarkerRecord {
    enum class Kind { Instant, Start, End };
    Kind kind = Kind::Instant;
    int64_t timestamp = 0;
    uint32_t id = 0;
    uint32_t processId = 0;
    uint32_t threadId = 0;
    std::string_view name;   // set on Start and Instant
    std::string_view domain; // empty: the default domain
};

// Colour and category of an NVTX marker (CUPTI_ACTIVITY_KIND_MARKER_DATA), joined by id.
struct MarkerDataRecord {
    uint32_t id = 0;
    uint32_t color = 0; // ARGB; 0 when the program set none
    uint32_t category = 0;
    bool hasColor = false;
};

struct OverheadRecord {
    int64_t start = 0;
    int64_t end = 0;
    uint32_t overheadKind = 0; // CUpti_ActivityOverheadKind
    uint32_t processId = 0;
    uint32_t threadId = 0;
    std::optional<uint32_t> deviceId;
    uint32_t correlationId = 0;
};

struct DeviceRecord {
    uint32_t id = 0;
    std::string name;
    std::string uuid; // hex
    uint64_t totalMemory = 0;
    uint64_t memoryBandwidth = 0; // bytes per second
    uint32_t l2CacheSize = 0;
    uint32_t clockRate = 0; // kHz
    uint32_t smCount = 0;
    uint32_t computeMajor = 0;
    uint32_t computeMinor = 0;
    uint32_t threadsPerWarp = 0;
    uint32_t maxThreadsPerBlock = 0;
    uint32_t maxSharedMemoryPerBlock = 0;
    uint32_t maxRegistersPerBlock = 0;
    uint32_t numMemcpyEngines = 0;
    // Per-SM limits for the theoretical occupancy of a launch; 0 when not known (written as NULL).
    uint32_t maxRegistersPerSm = 0;
    uint32_t maxSharedMemoryPerSm = 0;         // bytes, the largest shared-memory carveout
    uint32_t maxSharedMemoryPerBlockOptin = 0; // bytes, with cudaFuncSetAttribute opt-in
    uint32_t maxWarpsPerSm = 0;
    uint32_t maxBlocksPerSm = 0;
};

struct ContextRecord {
    uint32_t contextId = 0;
    uint32_t deviceId = 0;
    uint32_t nullStreamId = 0;
};

struct StreamRecord {
    uint32_t contextId = 0;
    uint32_t streamId = 0;
    uint32_t priority = 0;
    uint32_t flag = 0; // CUpti_ActivityStreamFlag: 1 default (blocking), 2 non-blocking
};

// A name given to an OS thread or CUDA stream (nvtxNameOsThread, nvtxNameCudaStream, /proc comm).
struct NameRecord {
    enum class Object { Thread, Stream };
    Object object = Object::Thread;
    uint32_t processId = 0;
    uint32_t threadId = 0;                // Thread
    uint32_t contextId = 0, streamId = 0; // Stream
    std::string name;
};

} // namespace warpline::format
