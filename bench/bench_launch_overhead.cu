// Collector overhead on a GPU, in one process and one run: per-launch cost of a tiny-kernel launch
// loop untraced, traced by Warpline (kernel + runtime + driver + NVTX records, written to a
// trace), and untraced again after the session is finalized; then the same for the bundled `mlp`
// workload's wall time.
//
//   warpline-bench-overhead [--launches N] [--repeats R] [--trace FILE]

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

// Microseconds per launch: N launches then one sync, median of `repeats` runs.
double launchLoop(float* buf, int launches, int repeats) {
    std::vector<double> perLaunch;
    for (int r = 0; r < repeats; ++r) {
        const auto t = Clock::now();
        for (int i = 0; i < launches; ++i)
            tiny<<<1, 32>>>(buf);
        check(cudaDeviceSynchronize(), "sync");
        perLaunch.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t).count() /
                            launches);
    }
    std::sort(perLaunch.begin(), perLaunch.end());
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
    std::string trace = "/tmp/bench-overhead.warpline";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--launches"))
            launches = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--repeats"))
            repeats = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--trace"))
            trace = argv[i + 1];
    }
    const std::string cupti = collector::CuptiSession::cuptiLibraryPath();
    ::setenv("NVTX_INJECTION64_PATH", cupti.c_str(), 0);
    float* buf = nullptr;
    check(cudaMalloc(&buf, 32 * sizeof(float)), "cudaMalloc");
    launchLoop(buf, 1000, 1); // warm-up: module load, context

    const double untraced = launchLoop(buf, launches, repeats);
    mlpSeconds(1); // warm-up
    const double mlpUntraced = mlpSeconds(repeats);

    double traced = 0, mlpTraced = 0;
    uint64_t records = 0, dropped = 0;
    {
        ::unlink(trace.c_str());
        collector::TraceWriter writer(trace);
        writer.setProcess(static_cast<uint32_t>(::getpid()), "warpline-bench-overhead");
        collector::CuptiSession session(writer);
        traced = launchLoop(buf, launches, repeats);
        mlpTraced = mlpSeconds(repeats);
        session.stop();
        records = writer.recordsWritten();
        dropped = session.droppedRecords();
        writer.finish("complete");
    }
    const double after = launchLoop(buf, launches, repeats);
    const double mlpAfter = mlpSeconds(repeats);

    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    std::printf("GPU: %s; %d launches x %d repeats (median); mlp: %d runs (median)\n", prop.name,
                launches, repeats, repeats);
    std::printf("%-36s %10s %10s\n", "configuration", "us/launch", "ratio");
    std::printf("%-36s %10.3f %10.2f\n", "untraced", untraced, 1.0);
    std::printf("%-36s %10.3f %10.2f\n", "traced by Warpline", traced, traced / untraced);
    std::printf("%-36s %10.3f %10.2f\n", "untraced after session finalized", after,
                after / untraced);
    std::printf("%-36s %10s %10s\n", "mlp workload", "s/run", "ratio");
    std::printf("%-36s %10.3f %10.2f\n", "untraced", mlpUntraced, 1.0);
    std::printf("%-36s %10.3f %10.2f\n", "traced by Warpline", mlpTraced, mlpTraced / mlpUntraced);
    std::printf("%-36s %10.3f %10.2f\n", "untraced after session finalized", mlpAfter,
                mlpAfter / mlpUntraced);
    std::printf("records written: %llu, dropped: %llu\n", static_cast<unsigned long long>(records),
                static_cast<unsigned long long>(dropped));
    return 0;
}
