#pragma once

// Communication kernels: the GPU side of collectives and point-to-point transfers between ranks
// (NCCL, RCCL, NVSHMEM, PyTorch's symmetric-memory all-reduce). Time a rank spends in them is
// mostly time spent waiting for the other ranks, so the session analyses and the timeline treat
// them apart from compute.

#include "tracestore.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace warpline::model {

// True for a kernel name (demangled or short) that names a communication kernel:
// "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ncclKernel_SendRecv_...", "rcclGenericKernel",
// "nvshmemi_...", "one_shot_all_reduce_kernel", "oneShotAllReduceKernel" ... A collective's name
// run into another word ("allreduceCompute", "allreduceApply": compute kernels named after the
// step they belong to) does not make a kernel a communication kernel.
bool isCommunicationKernel(std::string_view name);
// The communication library a kernel name contains ("nccl", "rccl" or "nvshmem", as spelled
// here, whatever the name's case), or empty.
std::string_view communicationLibrary(std::string_view name);

// isCommunicationKernel over a store's names, judged once per name id.
class CommunicationNames {
public:
    explicit CommunicationNames(const TraceStore& store)
        : m_store(store), m_known(store.strings().size(), kUnknown) {}

    // Whether the name with this id names a communication kernel.
    bool isName(NameId id) {
        if (id == kNoName || id >= m_known.size())
            return false;
        if (m_known[id] == kUnknown)
            m_known[id] = isCommunicationKernel(m_store.text(id)) ? 1 : 0;
        return m_known[id] == 1;
    }
    // Whether kernel `i` of `track` is one, by its name or its configuration's short name.
    bool isKernel(const GpuTrack& track, size_t i) {
        if (isName(track.name(i)))
            return true;
        const uint32_t detail = track.detail(i);
        return detail < m_store.kernelConfigs().size() &&
               isName(m_store.kernelConfigs()[detail].shortName);
    }

private:
    static constexpr int8_t kUnknown = -1;
    const TraceStore& m_store;
    std::vector<int8_t> m_known;
};

} // namespace warpline::model
