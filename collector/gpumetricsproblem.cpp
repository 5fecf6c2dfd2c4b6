#include "gpumetrics.h"

#include <cupti.h>

// The words for a CUPTI result met while setting up PM sampling (gpumetrics.h). In the collector
// library, apart from the sampler, so that tests without a GPU can check them.

namespace warpline::collector {

std::string cuptiResultName(int cuptiResult) {
    const char* text = nullptr;
    cuptiGetResultString(static_cast<CUptiResult>(cuptiResult), &text);
    return text ? text : "CUPTI error " + std::to_string(cuptiResult);
}

std::string gpuMetricsProblem(int cuptiResult, const std::string& step) {
    const auto r = static_cast<CUptiResult>(cuptiResult);
    switch (r) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
        return "the NVIDIA driver lets only administrators read GPU performance counters "
               "(NVreg_RestrictProfilingToAdminUsers=1): record as root, or allow all users "
               "(options nvidia NVreg_RestrictProfilingToAdminUsers=0 in /etc/modprobe.d, then "
               "reload the driver; https://developer.nvidia.com/ERR_NVGPUCTRPERM)";
    case CUPTI_ERROR_HARDWARE_BUSY:
        return "the GPU's counters are in use by another profiler (Nsight Systems or Compute, "
               "DCGM's profiling module, another warpline-record): stop it, or record without "
               "--gpu-metrics";
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED:
        return "this GPU or driver does not support PM sampling (" + step + ")";
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
        return "a virtual GPU (vGPU) that does not expose counters";
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
        return "a MIG instance: counters are not sampled per MIG instance";
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
        return "WSL does not expose GPU counters";
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
        return "confidential computing is on: counters are not readable";
    default:
        return step + " failed: " + cuptiResultName(cuptiResult);
    }
}

} // namespace warpline::collector
