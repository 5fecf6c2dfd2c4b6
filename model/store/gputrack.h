#pragma once

// GpuTrack: the GPU operations (kernels, memcpys, memsets) of one CUDA stream, in one lane.
// A stream's operations do not overlap in a correct trace, so a stream normally has exactly one
// track (lane 0). Operations that overlap an earlier one on the same stream in the file are moved
// to lane 1, 2, ... so SpanTrack's invariants hold; the store carries a warning when that happens.

#include "spantrack.h"

namespace warpline::model {

class GpuTrack : public SpanTrack {
public:
    uint32_t streamIndex() const { return m_stream; } // into TraceStore::streams()
    uint32_t deviceId() const { return m_deviceId; }
    uint32_t lane() const { return m_lane; }

    GpuOpKind kind(size_t i) const { return static_cast<GpuOpKind>(m_kind[i]); }
    // Kernel: demangled name. Memcpy/memset: the nsys operation name ("[CUDA memcpy
    // Host-to-Device]", "[CUDA memset]").
    NameId name(size_t i) const { return m_name[i]; }
    uint32_t correlationId(size_t i) const { return m_correlation[i]; }
    // Kernel: index into TraceStore::kernelConfigs(). Memcpy/memset: index into
    // TraceStore::memOps().
    uint32_t detail(size_t i) const { return m_detail[i]; }
    // CUDA graph id the op ran in; 0 when not launched from a graph.
    uint32_t graphId(size_t i) const { return m_graphId[i]; }
    // The API call that launched this op (EventRef into TraceStore::apiTracks()); invalid when the
    // trace holds no API call with the same correlation id in the same process.
    EventRef launch(size_t i) const { return m_launch[i]; }

    size_t memoryBytes() const;

private:
    friend class TraceLoader;
    friend class TraceSession;
    friend class SpanTrack;
    template <typename Self, typename F> static void forEachColumn(Self& self, F&& f) {
        SpanTrack::forEachColumn(self, f);
        f(self.m_kind);
        f(self.m_name);
        f(self.m_correlation);
        f(self.m_detail);
        f(self.m_graphId);
        f(self.m_launch);
    }

    uint32_t m_stream = 0;
    uint32_t m_deviceId = 0;
    uint32_t m_lane = 0;
    std::vector<uint8_t> m_kind;
    std::vector<NameId> m_name;
    std::vector<uint32_t> m_correlation;
    std::vector<uint32_t> m_detail;
    std::vector<uint32_t> m_graphId;
    std::vector<EventRef> m_launch;
};

} // namespace warpline::model
