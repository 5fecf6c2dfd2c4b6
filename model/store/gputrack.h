#pragma once

// GpuTrack: the GPU operations (kernels, memcpys, memsets) of one CUDA stream, in one lane.
// A stream runs its operations one after another, so a stream normally has exactly one track
// (lane 0). Operations that overlap an earlier one on the same stream in the file are moved to
// lane 1, 2, ... so SpanTrack's invariants hold. Overlap CUDA allows (isAllowedOverlap) is counted
// (TraceStore::allowedOverlapCount()); any other overlap gives the store a warning.

#include "spantrack.h"

#include <cstdint>
#include <string_view>

namespace warpline::model {

// The launch calls that take launch attributes, programmatic stream serialization among them:
// cudaLaunchKernelEx and cudaLaunchKernelExC (runtime), cuLaunchKernelEx (driver), with or
// without a version or _ptsz suffix.
inline bool isLaunchExApi(std::string_view name) {
    return name.starts_with("cudaLaunchKernelEx") || name.starts_with("cuLaunchKernelEx");
}

// The tail of an earlier kernel that a later one may overlap and still read as a programmatic
// dependent launch without a launch-Ex call to show it (a graph's programmatic edge, a PyTorch
// trace whose launch fell outside the profiler's window): at most 5 us and at most a tenth of the
// earlier kernel. On an H100 such kernels started 0.1 to 2.4 us before their predecessor ended,
// at most 1.2% of it (tests/data/corpus: 509 kernels in six traces); the bounds leave room for
// slower launches and shorter predecessors, and a kernel in the middle of another is outside them.
constexpr int64_t kDependentLaunchTailNs = 5'000;
constexpr int64_t kDependentLaunchTailShare = 10; // overlap <= duration / 10

// Whether a later op on a stream that starts before `earlier` ends (times in ns, half-open) is an
// overlap CUDA allows rather than damage: programmatic dependent launch (PDL), where a kernel
// launched with programmatic stream serialization (or after a graph's programmatic edge) starts
// once the kernel before it on its stream triggers, typically a few us before that one ends.
// Both ops must be kernels and the later must start after the earlier started. Then either the
// later was launched through a launch-Ex call (the only way to ask for PDL outside graphs; how
// early it may start is up to the earlier kernel's trigger, so no bound applies), or it overlaps
// only the earlier one's tail (kDependentLaunchTailNs, kDependentLaunchTailShare). A kernel
// starting in the middle of another after a plain cudaLaunchKernel is neither.
inline bool isDependentLaunchOverlap(GpuOpKind earlierKind, int64_t earlierStart,
                                     int64_t earlierEnd, GpuOpKind laterKind, int64_t laterStart,
                                     bool launchedEx) {
    if (earlierKind != GpuOpKind::Kernel || laterKind != GpuOpKind::Kernel ||
        laterStart <= earlierStart || laterStart >= earlierEnd)
        return false;
    if (launchedEx)
        return true;
    const int64_t overlap = earlierEnd - laterStart;
    return overlap <= kDependentLaunchTailNs &&
           overlap * kDependentLaunchTailShare <= earlierEnd - earlierStart;
}

// Two ops of one CUDA graph launch (the same graph, the same launch's correlation id): a graph's
// independent branches run at the same time, and CUPTI reports every node on the stream the
// graph was launched into (XLA's jitted steps: 120 of 780 kernels of a JAX trace overlapped).
inline bool isConcurrentGraphOverlap(uint32_t earlierGraph, uint32_t earlierCorrelation,
                                     uint32_t laterGraph, uint32_t laterCorrelation) {
    return earlierGraph != 0 && earlierGraph == laterGraph &&
           earlierCorrelation == laterCorrelation;
}

// The overlaps CUDA allows, counted rather than warned about: a dependent launch, branches of one
// graph launch, an overlap with a host-to-host copy (`hostToHost`: either op is one, kCopyHtoH).
// The driver makes such a copy on the CPU and times it there, so its span need not follow the
// stream's GPU work, before it or after it (XLA's 8-byte read-backs of its autotuner: 452 began
// inside the kernel before them on their stream, and 420 kernels began inside such a copy's span).
inline bool isAllowedOverlap(GpuOpKind earlierKind, int64_t earlierStart, int64_t earlierEnd,
                             GpuOpKind laterKind, int64_t laterStart, bool launchedEx,
                             bool sameGraphLaunch, bool hostToHost) {
    return isDependentLaunchOverlap(earlierKind, earlierStart, earlierEnd, laterKind, laterStart,
                                    launchedEx) ||
           sameGraphLaunch || hostToHost;
}

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
