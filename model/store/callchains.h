#pragma once

// Call stacks of API calls (Nsight Systems' CUDA_CALLCHAINS, referenced from
// CUPTI_ACTIVITY_KIND_RUNTIME.callchainId): Python stacks from `warpline-record --python-stacks`
// (module "file.py:line"), or an nsys export's native backtraces (module = library; line 0).

#include "tracetypes.h"

#include <cstdint>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace warpline::model {

struct CallFrame {
    NameId function = kNoName; // "Block.forward"
    NameId file = kNoName;     // "/work/train.py" (or a library for a native frame)
    int32_t line = 0;          // 0 when unknown
};

class Callchains {
public:
    bool empty() const { return m_chains.empty(); }
    size_t chainCount() const { return m_chains.size(); }
    // The frames of a chain, innermost first; empty when unknown.
    std::span<const CallFrame> chain(uint32_t id) const {
        const auto it = m_chains.find(id);
        if (it == m_chains.end())
            return {};
        return std::span<const CallFrame>(m_frames).subspan(it->second.first,
                                                            it->second.second - it->second.first);
    }
    // The chain of the API call with this correlation id in this source (TraceStore::sources();
    // correlation ids are unique within one file only), 0 when it has none.
    uint32_t chainOfCall(uint32_t source, uint32_t correlationId) const {
        const auto it = m_byCorrelation.find(callKey(source, correlationId));
        return it == m_byCorrelation.end() ? 0 : it->second;
    }
    size_t callsWithChain() const { return m_byCorrelation.size(); }

private:
    friend class TraceLoader;
    friend class TraceSession;
    static uint64_t callKey(uint32_t source, uint32_t correlationId) {
        return uint64_t(source) << 32 | correlationId;
    }
    std::vector<CallFrame> m_frames;
    std::unordered_map<uint32_t, std::pair<uint32_t, uint32_t>> m_chains; // id -> [begin, end)
    std::unordered_map<uint64_t, uint32_t> m_byCorrelation;               // callKey -> chain id
};

} // namespace warpline::model
