#pragma once

// Recording a bundled workload in warpline-record's own process. The part that needs CUPTI (the
// session, the writer thread, finishing the trace, the signal thread) lives in
// libwarpline-inject.so, next to the injection entry points, and warpline-record loads it with
// dlopen: so warpline-record itself does not depend on libcupti, starts without it, and says in
// one line what to do when CUPTI is missing instead of failing in the dynamic loader.
// warpline-record keeps what needs the CUDA runtime (GPU check, device description, running the
// workload) and hands it over in a WorkloadRecordingRequest.

#include "records.h"

#include <functional>
#include <signal.h>
#include <string>
#include <vector>

namespace warpline::collector {

struct WorkloadOutcome {
    bool ok = true;
    std::string error; // when !ok
};

struct WorkloadRecordingRequest {
    std::string workload;     // name, stored as WARPLINE_META workload
    std::string workloadArgs; // "--steps=20 --elements=..." (workload_args)
    std::string output;       // checked by the caller: free, or --force given
    bool force = false;
    bool quiet = false;
    bool driverApi = true;
    bool allApi = false;
    bool syncRecords = true; // CuptiSession::Options::synchronization
    std::string commandLine;
    std::string gpuNames; // "NVIDIA H100 80GB HBM3; ..."
    std::vector<format::DeviceRecord> devices;
    std::string cudaDriverVersion; // "13.0"
    std::string cudaRuntimeVersion;
    sigset_t stopSignals{}; // blocked in every thread; taken by the recording's signal thread
    // Runs the workload and waits for the GPU to finish it (the CUDA runtime is the caller's).
    std::function<WorkloadOutcome(const std::function<void(const std::string&)>& progress)> run;
    // Called with the trace's path once it is finished, also when a signal ended the recording
    // (warpline-record adds the GPU metrics it sampled meanwhile). Optional.
    std::function<void(const std::string& trace)> finished;
};

// Records the workload into request.output; returns warpline-record's exit status (0 recorded,
// 1 workload failed or writing stopped early, 2 environment error; 128 + signal when
// interrupted, from the signal thread).
using RecordWorkloadFn = int (*)(const WorkloadRecordingRequest* request);
inline constexpr const char* kRecordWorkloadSymbol = "warpline_record_workload";

} // namespace warpline::collector
