// Collector overhead on a GPU: per-launch cost of a tiny-kernel launch loop (N launches, one sync)
// and the wall time of the bundled `mlp` workload, in one process that is either
//   --mode untraced   no tool loaded at all,
//   --mode traced     recorded by Warpline (kernel, runtime, driver, memcpy, sync and NVTX records
//                     written to a trace file), then measured again after the session finalized,
//   --raw-cupti       recorded by a bare CUPTI client that frees its buffers unread (the floor
//                     any CUPTI-based recorder stands on).
// bench/run_overhead.sh alternates the modes and prints the medians side by side.
//
//   warpline-bench-overhead --mode untraced|NAME [--kinds runtime,driver,memory,nvtx,overhead]
//                           [--raw-cupti] [--no-finalize] [--launches N] [--repeats R]
//                           [--trace FILE]
//   warpline-bench-overhead --alternate ROUNDS [--configs "KINDS;KINDS..."]   (see alternate())
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
#include <cupti.h>
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

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
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
    if (cpuOnly)
        *cpuOnly = median(launching);
    return median(perLaunch);
}

// Microseconds per launch of bursts short enough never to fill the launch queue (256 launches,
// then a sync, median of 100): the launching thread's own cost, with no waiting for the GPU.
double burstLaunch(float* buf) {
    std::vector<double> perLaunch;
    for (int r = 0; r < 100; ++r) {
        const auto t = Clock::now();
        for (int i = 0; i < 256; ++i)
            tiny<<<1, 32>>>(buf);
        perLaunch.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t).count() /
                            256);
        check(cudaDeviceSynchronize(), "sync");
    }
    return median(perLaunch);
}

// The least a CUPTI client can do (the issue's "raw CUPTI" anchor): kernel records, and runtime
// records of every API call when `runtime`, into 8 MiB buffers that are freed unread.
void startRawCupti(bool runtime) {
    cuptiActivityRegisterCallbacks(
        [](uint8_t** buffer, size_t* size, size_t* maxRecords) {
            *size = 8u << 20;
            *buffer = static_cast<uint8_t*>(std::malloc(*size));
            *maxRecords = 0;
        },
        [](CUcontext, uint32_t, uint8_t* buffer, size_t, size_t) { std::free(buffer); });
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (runtime)
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
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
    return median(s);
}

// Session options from a comma-separated subset of runtime,driver,memory,nvtx,overhead (kernel
// records always); allapi records every API call rather than the essential ones; memory brings
// synchronization records unless nosync (what `warpline-record -- PROGRAM` records).
collector::CuptiSession::Options kindsOptions(const std::string& kinds) {
    const std::string k = "," + kinds + ",";
    auto has = [&k](const char* kind) {
        return k.find("," + std::string(kind) + ",") != std::string::npos;
    };
    collector::CuptiSession::Options options;
    options.runtimeApi = has("runtime");
    options.driverApi = has("driver");
    options.memory = has("memory");
    options.synchronization = (has("memory") && !has("nosync")) || has("sync");
    options.nvtx = has("nvtx");
    options.overhead = has("overhead");
    options.essentialApiOnly = !has("allapi");
    return options;
}

// Records this process into `trace` (replaced) as warpline-record would, with these options.
void startRecording(std::optional<warpline::format::TraceWriter>& writer,
                    std::optional<collector::CuptiSession>& session, const std::string& trace,
                    const collector::CuptiSession::Options& options) {
    ::unlink(trace.c_str());
    writer.emplace(trace);
    writer->setProcess(static_cast<uint32_t>(::getpid()), "warpline-bench-overhead");
    session.emplace(*writer, options);
}

// Untraced and traced phases alternated inside one process, `rounds` times, the order rotating
// each round: every configuration (kinds as for --kinds, separated by ';') gets its own session,
// started and stopped (CUPTI finalized) around its phase. Each round compares its phases with
// that round's untraced phase, so what makes one process faster than another (where its memory
// and threads landed) cancels out; prints every round and the median ratio per configuration.
int alternate(int rounds, const std::string& configList, int launches, const std::string& trace) {
    std::vector<std::string> configs = {"untraced"};
    for (size_t at = 0; at <= configList.size();) {
        const size_t end = std::min(configList.find(';', at), configList.size());
        configs.push_back(configList.substr(at, end - at));
        at = end + 1;
    }
    ::setenv("NVTX_INJECTION64_PATH", collector::CuptiSession::cuptiLibraryPath().c_str(), 1);
    float* buf = nullptr;
    check(cudaMalloc(&buf, 32 * sizeof(float)), "cudaMalloc");
    launchLoop(buf, 1000, 1);
    mlpSeconds(1);
    struct Phase {
        double launch, burst, mlp;
    };
    std::vector<std::vector<Phase>> results(configs.size());
    for (int r = 0; r < rounds; ++r) {
        for (size_t step = 0; step < configs.size(); ++step) {
            const size_t c = (step + r) % configs.size();
            std::optional<warpline::format::TraceWriter> writer;
            std::optional<collector::CuptiSession> session;
            if (c > 0)
                startRecording(writer, session, trace, kindsOptions(configs[c]));
            const Phase p{launchLoop(buf, launches, 3), burstLaunch(buf), mlpSeconds(3)};
            if (session) {
                session->stop();
                writer->finish("complete");
            }
            results[c].push_back(p);
            std::printf("round=%d config=%s launch_us=%.4f burst_us=%.4f mlp_s=%.4f\n", r,
                        configs[c].c_str(), p.launch, p.burst, p.mlp);
        }
    }
    std::printf("%-40s %9s %7s %11s %9s %7s %7s\n", "configuration (median of rounds)", "us/launch",
                "ratio", "ratio range", "burst us", "ratio", "mlp");
    for (size_t c = 0; c < configs.size(); ++c) {
        std::vector<double> launch, launchRatio, burst, burstRatio, mlpRatio;
        for (int r = 0; r < rounds; ++r) {
            const Phase& p = results[c][r];
            const Phase& u = results[0][r];
            launch.push_back(p.launch);
            burst.push_back(p.burst);
            launchRatio.push_back(p.launch / u.launch);
            burstRatio.push_back(p.burst / u.burst);
            mlpRatio.push_back(p.mlp / u.mlp);
        }
        const auto [lo, hi] = std::minmax_element(launchRatio.begin(), launchRatio.end());
        std::printf("%-40s %9.3f %7.2f %5.2f-%5.2f %9.3f %7.2f %7.2f\n", configs[c].c_str(),
                    median(launch), median(launchRatio), *lo, *hi, median(burst),
                    median(burstRatio), median(mlpRatio));
    }
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    int launches = 50000, repeats = 5;
    std::string trace = "/tmp/bench-overhead.warpline", mode = "untraced";
    bool raw = false;
    int alternateRounds = 0;
    std::string configs = "runtime,driver,memory,nvtx,overhead";
    collector::CuptiSession::Options options;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const char* value = i + 1 < argc ? argv[i + 1] : "";
        if (arg == "--no-finalize") {
            options.finalize = false;
            continue;
        }
        if (arg == "--raw-cupti") { // a bare CUPTI client instead of Warpline's session
            raw = true;
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
        else if (arg == "--kinds")
            options = kindsOptions(value);
        else if (arg == "--alternate")
            alternateRounds = std::atoi(value);
        else if (arg == "--configs")
            configs = value;
        else {
            std::fprintf(stderr, "unknown option %s\n", arg.c_str());
            return 2;
        }
    }
    std::setvbuf(stdout, nullptr, _IOLBF,
                 0); // each result reaches the log even if a later phase fails
    if (alternateRounds > 0)
        return alternate(alternateRounds, configs, launches, trace);
    const bool traced = mode.rfind("untraced", 0) != 0; // "untraced", "untraced-again" ...
    std::optional<warpline::format::TraceWriter> writer;
    std::optional<collector::CuptiSession> session;
    if (traced && raw) {
        startRawCupti(options.runtimeApi);
    } else if (traced) {
        // As warpline-record does: NVTX reaches CUPTI, the session starts before CUDA does.
        ::setenv("NVTX_INJECTION64_PATH", collector::CuptiSession::cuptiLibraryPath().c_str(), 1);
        startRecording(writer, session, trace, options);
    }
    float* buf = nullptr;
    check(cudaMalloc(&buf, 32 * sizeof(float)), "cudaMalloc");
    launchLoop(buf, 1000, 1); // warm-up: module load, context
    mlpSeconds(1);
    double cpuOnly = 0;
    const double perLaunch = launchLoop(buf, launches, repeats, &cpuOnly);
    const double burst = burstLaunch(buf);
    const double mlp = mlpSeconds(repeats);
    std::printf("mode=%s launch_us=%.4f mlp_s=%.4f cpu_launch_us=%.4f burst_us=%.4f\n",
                mode.c_str(), perLaunch, mlp, cpuOnly, burst);
    if (session) {
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
