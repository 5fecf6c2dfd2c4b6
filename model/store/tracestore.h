#pragma once

// TraceStore: one loaded trace, in memory, ready for the timeline and the analyses.
//
// Built by TraceLoader::load (traceloader.h); immutable afterwards. All const methods may be called
// from any number of threads at once (load on a worker thread, then hand the store to the GUI
// thread, e.g. as std::shared_ptr<const TraceStore>).
//
// Layout: structure-of-arrays per track, every track sorted by start with no overlapping spans
// (spantrack.h), so a visible range is two binary searches:
//   apiTracks()  one per (CPU thread, API nesting depth)          CUDA runtime + driver calls
//   nvtxTracks() one per (CPU thread, NVTX depth or lane, style)  NVTX ranges and marks
//   gpuTracks()  one per (device, stream, lane)                   kernels, memcpys, memsets
// threads() and streams() list their tracks in display order. Events are addressed by EventRef
// (track index within its family + event index). Correlation links go both ways:
// GpuTrack::launch(i) -> the API call, ApiTrack::gpuOps(i) -> the GPU operations.
//
// Times: integer ns relative to the session start, half-open [start, end), within +-2^62 ns (the
// loader skips rows beyond), so the difference of any two times fits in int64.
// Memory: about 41 bytes per GPU op, 33 per API call (+8 per launched op), 29 per NVTX range.

#include "apitrack.h"
#include "callchains.h"
#include "cpusamples.h"
#include "gpumetricsamples.h"
#include "gputrack.h"
#include "nvtxtrack.h"
#include "stringtable.h"
#include "tracetypes.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace warpline::model {

// The integer a WARPLINE_META value holds (its whole text, decimal), if the key is there and
// holds one.
std::optional<int64_t> metaInteger(const std::map<std::string, std::string>& meta,
                                   const std::string& key);

class TraceStore {
public:
    TraceStore();
    TraceStore(TraceStore&&) noexcept;
    TraceStore& operator=(TraceStore&&) noexcept;
    TraceStore(const TraceStore&) = delete;
    TraceStore& operator=(const TraceStore&) = delete;
    ~TraceStore();

    // --- the file -----------------------------------------------------------------------------
    const std::string& path() const { return m_path; }
    TraceOrigin origin() const { return m_origin; }
    int formatVersion() const { return m_formatVersion; } // PRAGMA user_version (100 = 1.0)
    // WARPLINE_META (format_version, collector_version, status, workload, command_line, ...);
    // empty for an nsys export.
    const std::map<std::string, std::string>& meta() const { return m_meta; }
    std::string metaValue(const std::string& key) const; // "" when absent
    // Things the user should know (dropped records, collector errors, incomplete recording,
    // skipped rows, unclosed NVTX ranges), one sentence each, in the order found.
    const std::vector<std::string>& warnings() const { return m_warnings; }

    // The files this store was read from: one, or one per rank of a session (tracesession.h).
    const std::vector<TraceSource>& sources() const { return m_sources; }
    bool isSession() const { return m_sources.size() > 1; }

    // --- time ---------------------------------------------------------------------------------
    // Earliest start and latest end over every loaded event (ns); both 0 for an empty trace.
    int64_t beginTime() const { return m_beginTime; }
    int64_t endTime() const { return m_endTime; }

    // --- names --------------------------------------------------------------------------------
    const StringTable& strings() const { return m_strings; }
    const std::string& text(NameId id) const { return m_strings.text(id); }

    // --- entities -----------------------------------------------------------------------------
    const std::vector<ProcessInfo>& processes() const { return m_processes; }
    const std::vector<ThreadInfo>& threads() const { return m_threads; } // by globalTid
    const std::vector<DeviceInfo>& devices() const { return m_devices; } // by id
    // The device with this DeviceInfo::id, or nullptr. O(log n).
    const DeviceInfo* device(uint32_t id) const;
    const std::vector<StreamInfo>& streams() const { return m_streams; } // by device, stream id
    const std::vector<KernelConfig>& kernelConfigs() const { return m_kernelConfigs; }
    const std::vector<MemOpInfo>& memOps() const { return m_memOps; }

    // --- tracks -------------------------------------------------------------------------------
    const std::vector<ApiTrack>& apiTracks() const { return m_apiTracks; }
    const std::vector<NvtxTrack>& nvtxTracks() const { return m_nvtxTracks; }
    const std::vector<GpuTrack>& gpuTracks() const { return m_gpuTracks; }

    // Synchronizations (CUPTI_ACTIVITY_KIND_SYNCHRONIZATION), sorted by start; may overlap.
    const std::vector<SyncEvent>& syncs() const { return m_syncs; }
    // Call stacks of API calls (CUDA_CALLCHAINS; --python-stacks); empty when none were recorded.
    const Callchains& callchains() const { return m_callchains; }
    // The call stack of an API call (a ref into apiTracks()), innermost frame first; empty when
    // it has none. The stack of a GPU op is callStack(launchOf(op)).
    std::span<const CallFrame> callStack(EventRef apiCall) const {
        return m_callchains.chain(chainOfCall(apiCall));
    }
    // The id of that stack in callchains(), 0 when it has none.
    uint32_t chainOfCall(EventRef apiCall) const {
        if (!apiCall.valid() || m_callchains.empty())
            return 0;
        const ApiTrack& track = m_apiTracks[apiCall.track];
        return m_callchains.chainOfCall(m_threads[track.threadIndex()].source,
                                        track.correlationId(apiCall.index));
    }
    // CPU samples and thread states (COMPOSITE_EVENTS, SAMPLING_CALLCHAINS, SCHED_EVENTS; CPU
    // sampling of warpline-record -- PROGRAM); empty when none were taken. Not in beginTime() and
    // endTime(): samples before the first CUDA call (imports) or after the last do not move them.
    const CpuSamples& cpuSamples() const { return m_cpuSamples; }
    // GPU metric samples (GPU_METRICS), one set per sampled device; empty when none were taken.
    const std::vector<GpuMetricSamples>& gpuMetrics() const { return m_gpuMetrics; }
    // The samples of a device, or nullptr.
    const GpuMetricSamples* gpuMetricsOf(uint32_t deviceId) const {
        for (const auto& s : m_gpuMetrics)
            if (s.deviceId == deviceId)
                return &s;
        return nullptr;
    }

    // --- correlation --------------------------------------------------------------------------
    // The API call that launched a GPU op (ref into gpuTracks()); invalid when unknown.
    EventRef launchOf(EventRef gpuOp) const { return m_gpuTracks[gpuOp.track].launch(gpuOp.index); }
    // The GPU ops an API call launched (ref into apiTracks()).
    std::span<const EventRef> gpuOpsOf(EventRef apiCall) const {
        return m_apiTracks[apiCall.track].gpuOps(apiCall.index);
    }

    // --- counts -------------------------------------------------------------------------------
    size_t kernelCount() const { return m_kernelCount; }
    size_t memcpyCount() const { return m_memcpyCount; }
    size_t memsetCount() const { return m_memsetCount; }
    // GPU ops that overlap an earlier op on their stream as CUDA allows (gputrack.h
    // isAllowedOverlap: programmatic dependent launch, branches of one graph launch, host-to-host
    // copies): drawn on a stream's extra rows, no warning.
    size_t allowedOverlapCount() const { return m_allowedOverlapCount; }
    size_t apiCallCount() const;
    size_t nvtxEventCount() const;
    size_t eventCount() const; // GPU ops + API calls + NVTX ranges and marks + syncs

    // Bytes held by the store's arrays (tracks: in use; the rest: capacity), for benchmarks and the
    // About box.
    size_t memoryBytes() const;

private:
    friend class TraceLoader;
    friend class TraceSession;

    std::string m_path;
    std::vector<TraceSource> m_sources;
    TraceOrigin m_origin = TraceOrigin::Warpline;
    int m_formatVersion = 0;
    std::map<std::string, std::string> m_meta;
    std::vector<std::string> m_warnings;
    int64_t m_beginTime = 0;
    int64_t m_endTime = 0;

    StringTable m_strings;
    std::vector<ProcessInfo> m_processes;
    std::vector<ThreadInfo> m_threads;
    std::vector<DeviceInfo> m_devices;
    std::vector<StreamInfo> m_streams;
    std::vector<KernelConfig> m_kernelConfigs;
    std::vector<MemOpInfo> m_memOps;

    std::vector<ApiTrack> m_apiTracks;
    std::vector<NvtxTrack> m_nvtxTracks;
    std::vector<GpuTrack> m_gpuTracks;
    std::vector<SyncEvent> m_syncs;
    std::vector<GpuMetricSamples> m_gpuMetrics;
    Callchains m_callchains;
    CpuSamples m_cpuSamples;

    size_t m_kernelCount = 0;
    size_t m_memcpyCount = 0;
    size_t m_memsetCount = 0;
    size_t m_allowedOverlapCount = 0;
};

} // namespace warpline::model
