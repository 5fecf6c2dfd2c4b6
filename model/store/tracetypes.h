#pragma once

// Plain value types shared by TraceStore, its tracks and the analyses. All times are integer
// nanoseconds relative to the start of the recording session, exactly as in the trace file.

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace warpline::model {

// Index into TraceStore::strings(). Every name in the store (kernel, API, NVTX range, thread,
// stream, device, memory operation) is interned once and referred to by id.
using NameId = uint32_t;
inline constexpr NameId kNoName = 0; // StringTable reserves id 0 for the empty string

// Addresses one event: the index of its track within its family (TraceStore::apiTracks(),
// nvtxTracks() or gpuTracks(); the family is implied by where the ref is found) and the event's
// index in that track.
struct EventRef {
    static constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
    uint32_t track = kNone;
    uint32_t index = kNone;

    bool valid() const { return track != kNone; }
    friend bool operator==(const EventRef&, const EventRef&) = default;
};

// [first, last) indices into a track.
struct IndexRange {
    size_t first = 0;
    size_t last = 0;

    bool empty() const { return first >= last; }
    size_t size() const { return empty() ? 0 : last - first; }
    friend bool operator==(const IndexRange&, const IndexRange&) = default;
};

enum class GpuOpKind : uint8_t { Kernel = 0, Memcpy = 1, Memset = 2 };

enum class ApiDomain : uint8_t { Runtime = 0, Driver = 1 };

// NVTX_EVENTS.eventType 59 (PushPop) and 60 (StartEnd); marks (34) are instants.
enum class NvtxStyle : uint8_t { PushPop = 0, StartEnd = 1, Mark = 2 };

struct ProcessInfo {
    int64_t globalPid = 0; // pid * 0x1000000 (+ source << 48 in a session, so ids stay unique)
    uint32_t pid = 0;
    NameId name = kNoName;
    uint32_t source = 0; // index into TraceStore::sources(): the file this process was read from
};

// One OS thread that made CUDA API calls or NVTX annotations.
struct ThreadInfo {
    int64_t globalTid = 0; // pid * 0x1000000 + tid (+ source << 48 in a session)
    uint32_t pid = 0;
    uint32_t tid = 0;
    NameId name = kNoName;            // ThreadNames, or empty
    uint32_t source = 0;              // index into TraceStore::sources()
    std::vector<uint32_t> apiTracks;  // indices into TraceStore::apiTracks(), by depth 0, 1, ...
    std::vector<uint32_t> nvtxTracks; // indices into TraceStore::nvtxTracks(), ordered for display
};

// TARGET_INFO_GPU; devices that only appear in GPU records get a row with just the id.
struct DeviceInfo {
    // Unique within the store (what StreamInfo, GpuTrack and KernelConfig refer to). For a store
    // read from one file it is the CUDA device id of that file; a session renumbers its devices
    // 0, 1, ... in source order and keeps the file's own id in cudaId.
    uint32_t id = 0;
    uint32_t cudaId = 0;   // the device's id in its own trace file ("GPU <cudaId>" in labels)
    uint32_t source = 0;   // index into TraceStore::sources()
    NameId name = kNoName; // "NVIDIA H100 80GB HBM3"
    std::string uuid;
    uint64_t totalMemory = 0;     // bytes
    uint64_t memoryBandwidth = 0; // bytes per second
    uint32_t smCount = 0;
    uint32_t computeMajor = 0;
    uint32_t computeMinor = 0;
    uint32_t clockRate = 0; // kHz
    // Launch limits (TARGET_INFO_GPU) for the theoretical occupancy of a kernel; 0 when the trace
    // does not say (older Warpline traces lack the per-SM ones). Untrusted: occupancy.h checks
    // them before use.
    uint32_t threadsPerWarp = 0;
    uint32_t maxThreadsPerBlock = 0;
    uint32_t maxRegistersPerBlock = 0;
    uint32_t maxRegistersPerSm = 0;
    uint32_t maxSharedMemoryPerBlock = 0;      // bytes, without opt-in
    uint32_t maxSharedMemoryPerBlockOptin = 0; // bytes
    uint32_t maxSharedMemoryPerSm = 0;         // bytes
    uint32_t maxWarpsPerSm = 0;
    uint32_t maxBlocksPerSm = 0;
};

// One CUDA stream. Its GPU operations are on gpuTracks (normally exactly one track; a stream whose
// operations overlap in the file gets extra lanes, see GpuTrack).
struct StreamInfo {
    uint32_t deviceId = 0;
    uint32_t contextId = 0;
    uint32_t streamId = 0;
    NameId name = kNoName;           // WARPLINE_STREAM_NAMES, else "Stream <id>"
    int32_t priority = 0;            // TARGET_INFO_CUDA_STREAM
    std::vector<uint32_t> gpuTracks; // indices into TraceStore::gpuTracks(), lane 0 first
};

// A deduplicated kernel launch configuration (WARPLINE_KERNEL_CONFIGS, or built from the columns of
// an nsys CUPTI_ACTIVITY_KIND_KERNEL table).
struct KernelConfig {
    uint32_t deviceId = 0;
    uint32_t contextId = 0;
    NameId demangledName = kNoName; // "void gelu<float>(float*, int)"
    NameId shortName = kNoName;     // "gelu"
    NameId mangledName = kNoName;   // "_Z4geluIfEvPfi", empty when unknown
    int32_t gridX = 0, gridY = 0, gridZ = 0;
    int32_t blockX = 0, blockY = 0, blockZ = 0;
    int32_t registersPerThread = 0;
    int32_t staticSharedMemory = 0;  // bytes per block
    int32_t dynamicSharedMemory = 0; // bytes per block
    int32_t launchType = 0;          // ENUM_CUDA_KERNEL_LAUNCH_TYPE
    // Shared memory per SM the driver configured for the launch (its L1/shared carveout), bytes;
    // 0 when not recorded.
    int32_t sharedMemoryExecuted = 0;
};

// Details of one memcpy or memset (GpuTrack::detail() of a Memcpy/Memset op).
struct MemOpInfo {
    uint64_t bytes = 0;
    uint8_t copyKind = 0; // ENUM_CUDA_MEMCPY_OPER (memcpy): kCopyHtoD, kCopyDtoH ... below
    uint8_t srcKind = 0;  // ENUM_CUDA_MEM_KIND (memcpy)
    uint8_t dstKind = 0;  // ENUM_CUDA_MEM_KIND (memcpy); memKind for a memset
    uint32_t value = 0;   // memset value
};

// The ENUM_CUDA_MEMCPY_OPER values the analyses read (CUpti_ActivityMemcpyKind; the rest are named
// by copyKindText). A host-to-host copy is made by the driver on the CPU and timed there.
constexpr uint8_t kCopyHtoD = 1;
constexpr uint8_t kCopyDtoH = 2;
constexpr uint8_t kCopyDtoD = 8;
constexpr uint8_t kCopyHtoH = 9;
// ENUM_CUDA_MEM_KIND: host memory the driver must stage through a pinned buffer.
constexpr uint8_t kMemPageable = 1;

// A device-to-host copy of at most this many bytes reads one value back (loss.item(), a count, a
// flag): what the CPU waits for is the GPU work queued before it, not the bytes.
constexpr uint64_t kScalarReadBackBytes = 8;
constexpr bool isScalarReadBack(uint8_t copyKind, uint64_t bytes) {
    return copyKind == kCopyDtoH && bytes > 0 && bytes <= kScalarReadBackBytes;
}

// CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: a synchronization the CPU waited in.
struct SyncEvent {
    int64_t start = 0; // ns
    int64_t end = 0;   // ns
    uint32_t contextId = 0;
    int64_t streamId = -1; // -1: context-wide
    uint32_t correlationId = 0;
    uint8_t syncType = 0; // 1 event sync, 2 stream wait event, 3 stream sync, 4 context sync
    EventRef apiCall;     // the API call that synchronized (apiTracks()), invalid when not found
};

// How a session source's clock was put on the session's time axis (TraceSource::alignment).
enum class ClockAlignment : uint8_t {
    Reference,   // the session's reference source (offset 0), or a store read from one file
    SharedClock, // same host as the reference: CUPTI timestamps share the host's clock
    SyncPoint,   // another host: the ends of the first communication kernel were matched
    WallClock,   // another host without communication kernels: wall-clock start times (rough)
    Unaligned    // nothing to align by: offset 0, times as recorded
};

// One trace file of the store (TraceStore::sources()). A store read from one file has exactly one
// source; a session (tracesession.h) has one per file, ordered by rank, then host, then path.
struct TraceSource {
    std::string path;
    std::string host;   // WARPLINE_META hostname; "" when unknown
    int rank = -1;      // env_RANK (torchrun, mpirun's OMPI_COMM_WORLD_RANK ...); -1 when unknown
    int localRank = -1; // env_LOCAL_RANK; -1 when unknown
    int worldSize = -1; // env_WORLD_SIZE; -1 when unknown
    // TARGET_INFO_SESSION_START_TIME: wall-clock time of the file's t = 0, ns since the Unix epoch
    // (UTC); 0 when unknown. Hosts' wall clocks agree only to about a millisecond (NTP).
    int64_t utcEpochNs = 0;
    // ns added to every time read from this file to place it on the store's time axis.
    int64_t clockOffset = 0;
    ClockAlignment alignment = ClockAlignment::Reference;
    std::map<std::string, std::string> meta; // the file's WARPLINE_META
    std::vector<std::string> warnings;       // the file's own warnings (also in the store's)

    // "rank 1" when the rank is known, else the file name.
    std::string label() const;
};

// Where the trace came from.
enum class TraceOrigin : uint8_t { Warpline, NsightSystemsExport };

} // namespace warpline::model
