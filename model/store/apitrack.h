#pragma once

// ApiTrack: the CUDA runtime/driver API calls of one CPU thread at one nesting depth.
// Depth 0 holds the outermost calls; a driver call made inside a runtime call (cudaLaunchKernel ->
// cuLaunchKernel) is on depth 1, and so on. SpanTrack's invariants hold (sorted, no overlap).

#include "spantrack.h"

#include <string_view>

namespace warpline::model {

// CUPTI names an API call with the CUDA version it came in: "cudaLaunchKernel_v7000",
// "cudaGraphLaunch_v10000" (a "_v" and four or five digits). A "_v2" is part of a function's own
// name ("cuMemAlloc_v2", "cudaGetDeviceProperties_v2"), not a version. The length of the version
// suffix, 0 when there is none.
constexpr size_t apiVersionSuffixLength(std::string_view name) {
    const size_t pos = name.rfind("_v");
    if (pos == std::string_view::npos)
        return 0;
    const size_t digits = name.size() - pos - 2;
    if (digits < 4 || digits > 5)
        return 0;
    for (size_t i = pos + 2; i < name.size(); ++i) {
        if (name[i] < '0' || name[i] > '9')
            return 0;
    }
    return digits + 2;
}

// The call without its version suffix ("cudaGraphLaunch"): what the analyses compare.
constexpr std::string_view stripApiVersion(std::string_view name) {
    return name.substr(0, name.size() - apiVersionSuffixLength(name));
}

// The name as nsys stats shows it, and so as Warpline's tables do (ApiTrack::name): without a
// four-digit version only ("cudaLaunchKernel", but "cudaGraphLaunch_v10000"), because nsys drops
// the last six characters when they start with "_v". Its reports and Warpline's then pair row for
// row.
constexpr std::string_view apiDisplayName(std::string_view name) {
    return apiVersionSuffixLength(name) == 6 ? stripApiVersion(name) : name;
}

class ApiTrack : public SpanTrack {
public:
    uint32_t threadIndex() const { return m_thread; } // into TraceStore::threads()
    uint32_t depth() const { return m_depth; }

    // Display name, as nsys stats shows it (apiDisplayName: "cudaLaunchKernel").
    NameId name(size_t i) const { return m_name[i]; }
    uint32_t correlationId(size_t i) const { return m_correlation[i]; }
    int32_t returnValue(size_t i) const { return m_returnValue[i]; }
    ApiDomain domain(size_t i) const { return static_cast<ApiDomain>(m_domain[i]); }

    // The GPU operations this call started (EventRefs into TraceStore::gpuTracks()), in start
    // order. Empty for calls that launched nothing; many for a cudaGraphLaunch.
    std::span<const EventRef> gpuOps(size_t i) const {
        return std::span<const EventRef>(m_ops).subspan(m_opBegin[i],
                                                        m_opBegin[i + 1] - m_opBegin[i]);
    }

    size_t memoryBytes() const;

private:
    friend class TraceLoader;
    friend class TraceSession;
    friend class SpanTrack;
    template <typename Self, typename F> static void forEachColumn(Self& self, F&& f) {
        SpanTrack::forEachColumn(self, f);
        f(self.m_name);
        f(self.m_correlation);
        f(self.m_returnValue);
        f(self.m_domain);
    }

    uint32_t m_thread = 0;
    uint32_t m_depth = 0;
    std::vector<NameId> m_name;
    std::vector<uint32_t> m_correlation;
    std::vector<int32_t> m_returnValue;
    std::vector<uint8_t> m_domain;
    std::vector<uint32_t> m_opBegin{0}; // size() + 1 offsets into m_ops (CSR)
    std::vector<EventRef> m_ops;
};

} // namespace warpline::model
