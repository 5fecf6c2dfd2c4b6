#include "communication.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace warpline::model {

namespace {

bool containsNoCase(std::string_view text, std::string_view part) {
    return std::search(text.begin(), text.end(), part.begin(), part.end(), [](char a, char b) {
               return std::tolower(static_cast<unsigned char>(a)) ==
                      std::tolower(static_cast<unsigned char>(b));
           }) != text.end();
}

} // namespace

bool isCommunicationKernel(std::string_view name) {
    // Library prefixes first (cheap and unambiguous), then collective names used by kernels of
    // other libraries (PyTorch's symmetric memory, vLLM's custom all-reduce, ...).
    static constexpr std::string_view kLibraries[] = {"nccl", "rccl", "nvshmem"};
    for (std::string_view library : kLibraries) {
        if (containsNoCase(name, library))
            return true;
    }
    static constexpr std::string_view kCollectives[] = {"all_reduce", "allreduce", "all_gather",
                                                         "allgather", "reduce_scatter",
                                                         "reducescatter", "all_to_all",
                                                         "alltoall"};
    for (std::string_view collective : kCollectives) {
        if (containsNoCase(name, collective))
            return true;
    }
    return false;
}

} // namespace warpline::model
