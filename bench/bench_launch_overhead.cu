// Collector overhead on a GPU: per-launch cost of a tiny-kernel launch loop (N launches, one sync)
// and the wall time of the bundled `mlp` workload, in one process that is either
//   --mode untraced   no tool loaded at all, or
//   --mode traced     recorded by Warpline (kernel, runtime, driver, memcpy, sync and NVTX records
//                     written to a trace file), then measured again after the session finalized.
// bench/run_overhead.sh alternates the two modes and prints the medians side by side.
//
//   warpline-bench-overhead --mode untraced|NAME [--kinds runtime,driver,memory,nvtx,overhead]
//                           [--no-finalize] [--launches N] [--repeats R] [--trace FILE]
// A mode starting with "untraced" loads no tool; any other records. NAME labels the output.

#include "cuptisession.h"
#include "tracewriter.h"
#include "workload.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

using Clock = std::chrono::steady_clock;
using namespace warpline;

namespace {

__global__ void tiny(float* x) {
    x[threadIdx.x] += 1.0f;
}

void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
        std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
        std::exit(1);
    }
}

// Microseconds per launch: N launches then one sync, median of `repeats` runs. *cpuOnly gets the
// median time of the launches alone (before the sync): when it is well below the total, the GPU,
// not the launching thread, sets the pace.
double launchLoop(float* buf, int launches, int repeats, double* cpuOnly = nullptr) {
    std::vector<double> perLaunch, launching;
    for (int r = 0; r < repeats; ++r) {
        const auto t = Clock::now();
        for (int i = 0; i < launches; ++i)
            tiny<<<1, 32>>>(buf);
        const auto launched = Clock::now();
        check(cudaDeviceSynchronize(), "sync");
        perLaunch.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t).count() /
                            launches);
        launching.push_back(std::chrono::duration<double, std::micro>(launched - t).count() /
                            launches);
    }
    std::sort(perLaunch.begin(), perLaunch.end());
    std::sort(launching.begin(), launching.end());
    if (cpuOnly)
        *cpuOnly = launching[launching.size() / 2];
    return perLaunch[perLaunch.size() / 2];
}

double mlpSeconds(int repeats) {
    const kernels::Workload* mlp = kernels::findWorkload("mlp");
    if (!mlp)
        return -1;
    std::vector<double> s;
    for (int r = 0; r < repeats; ++r) {
        const auto t = Clock::now();
        const auto result =
            mlp->run(kernels::parseWorkloadArgs(*mlp, {}), [](const std::string&) {});
        if (!result.ok) {
            std::fprintf(stderr, "mlp failed: %s\n", result.error.c_str());
            return -1;
        }
        s.push_back(std::chrono::duration<double>(Clock::now() - t).count());
    }
    std::sort(s.begin(), s.end());
    return s[s.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
    int launches = 50000, repeats = 5;
    std::string trace = "/tmp/bench-overhead.warpline", mode = "untraced";
    collector::CuptiSession::Options options;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const char* value = i + 1 < argc ? argv[i + 1] : "";
        if (arg == "--no-finalize") {
            options.finalize = false;
            continue;
        }
        ++i;
        if (arg == "--launches")
            launches = std::atoi(value);
        else if (arg == "--repeats")
            repeats = std::atoi(value);
        else if (arg == "--trace")
            trace = value;
        else if (arg == "--mode")
            mode = value;
        else if (arg == "--tuning") // CuptiSession's benchmark knobs (cuptisession.cpp)
            ::setenv("WARPLINE_CUPTI_TUNING", value, 1);
        else if (arg == "--kinds") {
            // Comma-separated subset of runtime,driver,memory,nvtx,overhead (kernels always);
            // allapi records every API call rather than the essential ones.
            const std::string k = "," + std::string(value) + ",";
            auto has = [&k](const char* kind) {
                return k.find("," + std::string(kind) + ",") != std::string::npos;
            };
            options.runtimeApi = has("runtime");
            options.driverApi = has("driver");
            options.memory = has("memory");
            options.synchronization = has("memory") || has("sync");
            options.nvtx = has("nvtx");
            options.overhead = has("overhead");
            options.essentialApiOnly = !has("allapi");
        } else {
            std::fprintf(stderr, "unknown option %s\n", arg.c_str());
            return 2;
        }
    }
    std::setvbuf(stdout, nullptr, _IOLBF,
                 0); // each result reaches the log even if a later phase fails
    const bool traced = mode.rfind("untraced", 0) != 0; // "untraced", "untraced-again" ...
    std::optional<collector::TraceWriter> writer;
    std::optional<collector::CuptiSession> session;
    if (traced) {
        // As warpline-record does: NVTX reaches CUPTI, the session starts before CUDA does.
        ::setenv("NVTX_INJECTION64_PATH", collector::CuptiSession::cuptiLibraryPath().c_str(), 1);
        ::unlink(trace.c_str());
        writer.emplace(trace);
        writer->setProcess(static_cast<uint32_t>(::getpid()), "warpline-bench-overhead");
        session.emplace(*writer, options);
    }
    float* buf = nullptr;
    check(cudaMalloc(&buf, 32 * sizeof(float)), "cudaMalloc");
    launchLoop(buf, 1000, 1); // warm-up: module load, context
    mlpSeconds(1);
    double cpuOnly = 0;
    const double perLaunch = launchLoop(buf, launches, repeats, &cpuOnly);
    const double mlp = mlpSeconds(repeats);
    std::printf("mode=%s launch_us=%.4f mlp_s=%.4f cpu_launch_us=%.4f\n", mode.c_str(), perLaunch,
                mlp, cpuOnly);
    if (traced) {
        session->stop();
        std::printf("records=%llu dropped=%llu\n",
                    static_cast<unsigned long long>(writer->recordsWritten()),
                    static_cast<unsigned long long>(session->droppedRecords()));
        writer->finish("complete");
        const double after = launchLoop(buf, launches, repeats);
        const double mlpAfter = mlpSeconds(repeats);
        std::printf("mode=%s-after-stop launch_us=%.4f mlp_s=%.4f\n", mode.c_str(), after,
                    mlpAfter);
    }
    return 0;
}
