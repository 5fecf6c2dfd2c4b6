#pragma once

// Communication kernels: the GPU side of collectives and point-to-point transfers between ranks
// (NCCL, RCCL, NVSHMEM, PyTorch's symmetric-memory all-reduce). Time a rank spends in them is
// mostly time spent waiting for the other ranks, so the session analyses and the timeline treat
// them apart from compute.

#include <string_view>

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

} // namespace warpline::model
