// warpline-record: runs a bundled workload under the CUPTI collector and writes a trace file.
//
// Exit codes: 0 recorded, 1 the workload failed (trace kept, error stored in it),
// 2 usage or environment error (nothing written).

#include "cuptisession.h"
#include "tracewriter.h"
#include "warpline_version.h"
#include "workload.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <cupti.h>
#include <iostream>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

using namespace warpline;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitWorkloadFailed = 1;
constexpr int kExitUsage = 2;

const char* kUsage =
    R"(Usage: warpline-record --workload NAME [workload options] [-o FILE] [--force]
       warpline-record --list
Records CUDA API calls, GPU kernels, memory copies, synchronizations and NVTX ranges of a bundled
workload into a Warpline trace file (SQLite; open it with `warpline FILE`).

Options:
  --workload NAME   the workload to run (see --list); its options follow, e.g. --iterations 100
  -o, --output FILE trace file to write (default: NAME.warpline, numbered if it exists)
  --force           replace FILE if it exists
  --list            list the bundled workloads with their options
  --no-driver-api   do not record the program's own CUDA driver API calls
  --quiet           no progress on stderr
  -h, --help        this help
  --version         print the version
Exit codes: 0 recorded; 1 the workload failed (trace kept, error stored in it);
            2 usage or environment error (nothing written).
)";

[[noreturn]] void fail(const std::string& message) {
    std::cerr << "warpline-record: " << message << "\n";
    std::exit(kExitUsage);
}

bool exists(const std::string& path) {
    return ::access(path.c_str(), F_OK) == 0;
}

std::string directoryOf(const std::string& path) {
    const auto slash = path.rfind('/');
    if (slash == std::string::npos)
        return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

// NAME.warpline, or NAME-2.warpline, NAME-3.warpline ... when taken.
std::string defaultOutput(const std::string& workload) {
    std::string path = workload + ".warpline";
    for (int n = 2; exists(path); ++n)
        path = workload + "-" + std::to_string(n) + ".warpline";
    return path;
}

void listWorkloads() {
    for (const auto& w : kernels::allWorkloads()) {
        std::printf("%-12s %s\n", w.name.c_str(), w.description.c_str());
        for (const auto& o : w.options)
            std::printf("    --%-16s %s (default %s)\n", o.name.c_str(), o.help.c_str(),
                        o.defaultValue.c_str());
    }
}

// Checks that a CUDA GPU and driver are usable; exits 2 with what to do when not.
int checkGpu() {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err == cudaErrorInsufficientDriver)
        fail("no usable NVIDIA driver (the CUDA driver library libcuda.so.1 is missing or older "
             "than CUDA " +
             std::to_string(CUDART_VERSION / 1000) +
             " needs); install the NVIDIA driver, or record on a machine with a GPU");
    if (err == cudaErrorNoDevice || (err == cudaSuccess && count == 0))
        fail("no CUDA GPU found; record on a machine with an NVIDIA GPU (check nvidia-smi and "
             "CUDA_VISIBLE_DEVICES)");
    if (err != cudaSuccess)
        fail(std::string("cannot initialise CUDA: ") + cudaGetErrorString(err) +
             "; check nvidia-smi and the driver installation");
    return count;
}

std::string commandLine(int argc, char** argv) {
    std::string s;
    for (int i = 0; i < argc; ++i) {
        if (i)
            s += ' ';
        s += argv[i];
    }
    return s;
}

int64_t utcNowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

} // namespace

int main(int argc, char** argv) {
    std::string workloadName, output;
    bool force = false, quiet = false, driverApi = true, list = false;
    std::vector<std::string> workloadArgs;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&](const std::string& opt) -> std::string {
            if (i + 1 >= argc)
                fail(opt + " needs a value; see --help");
            return argv[++i];
        };
        if (a == "-h" || a == "--help") {
            std::cout << kUsage;
            return kExitOk;
        } else if (a == "--version") {
            std::cout << "warpline-record " << WARPLINE_VERSION << "\n";
            return kExitOk;
        } else if (a == "--list") {
            list = true;
        } else if (a == "--workload") {
            workloadName = value(a);
        } else if (a.rfind("--workload=", 0) == 0) {
            workloadName = a.substr(11);
        } else if (a == "-o" || a == "--output") {
            output = value(a);
        } else if (a.rfind("--output=", 0) == 0) {
            output = a.substr(9);
        } else if (a == "--force") {
            force = true;
        } else if (a == "--quiet") {
            quiet = true;
        } else if (a == "--no-driver-api") {
            driverApi = false;
        } else if (a == "--") {
            fail("tracing a program of your own (-- PROGRAM ARGS) is not supported yet; use "
                 "--workload NAME (see --list)");
        } else if (a.rfind("--", 0) == 0 && !workloadName.empty()) {
            workloadArgs.push_back(a);
            if (a.find('=') == std::string::npos && i + 1 < argc &&
                std::strncmp(argv[i + 1], "--", 2) != 0 && std::strcmp(argv[i + 1], "-o") != 0)
                workloadArgs.push_back(argv[++i]);
        } else {
            fail("unknown option " + a + "; see --help");
        }
    }
    if (list) {
        listWorkloads();
        return kExitOk;
    }
    if (workloadName.empty())
        fail("nothing to record: give --workload NAME (see --list) or --help");
    const kernels::Workload* workload = kernels::findWorkload(workloadName);
    if (!workload) {
        std::string names;
        for (const auto& w : kernels::allWorkloads())
            names += (names.empty() ? "" : ", ") + w.name;
        fail("unknown workload '" + workloadName + "'; the bundled workloads are: " + names);
    }
    std::optional<kernels::WorkloadArgs> args;
    try {
        args.emplace(kernels::parseWorkloadArgs(*workload, workloadArgs));
    } catch (const std::invalid_argument& e) {
        fail(e.what());
    }

    if (output.empty())
        output = defaultOutput(workload->name);
    else if (exists(output) && !force)
        fail(output + " already exists; choose another name with -o or pass --force to replace it");
    if (::access(directoryOf(output).c_str(), W_OK) != 0)
        fail("cannot write " + output + ": the directory " + directoryOf(output) +
             " does not exist or is not writable");

    // NVTX ranges reach CUPTI when NVTX loads it as its injection library; this must be set
    // before the workload's first NVTX call.
    const std::string cupti = collector::CuptiSession::cuptiLibraryPath();
    if (!cupti.empty())
        ::setenv("NVTX_INJECTION64_PATH", cupti.c_str(), 0);

    const int gpus = checkGpu();

    std::optional<collector::TraceWriter> writer;
    try {
        collector::TraceWriter::Options options;
        options.overwrite = force;
        writer.emplace(output, options);
    } catch (const collector::TraceWriteError& e) {
        fail(e.what());
    }

    std::string argsText;
    for (const auto& [k, v] : args->values())
        argsText += (argsText.empty() ? "--" : " --") + k + "=" + v;
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    char cwd[4096] = {};
    int driverVersion = 0, runtimeVersion = 0;
    uint32_t cuptiVersion = 0;
    cudaDriverGetVersion(&driverVersion);
    cudaRuntimeGetVersion(&runtimeVersion);
    cuptiGetVersion(&cuptiVersion);
    auto version = [](int v) {
        return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
    };
    // CUPTI reports devices only when it starts before CUDA does; describe them here instead.
    std::string gpuNames;
    std::vector<collector::DeviceRecord> devices;
    for (int d = 0; d < gpus; ++d) {
        cudaDeviceProp prop{};
        if (cudaGetDeviceProperties(&prop, d) != cudaSuccess)
            continue;
        gpuNames += (gpuNames.empty() ? "" : "; ") + std::string(prop.name);
        collector::DeviceRecord r;
        r.id = static_cast<uint32_t>(d);
        r.name = prop.name;
        r.uuid = collector::formatGpuUuid(prop.uuid.bytes);
        int clockKHz = 0, memoryClockKHz = 0, busWidth = 0;
        cudaDeviceGetAttribute(&clockKHz, cudaDevAttrClockRate, d);
        cudaDeviceGetAttribute(&memoryClockKHz, cudaDevAttrMemoryClockRate, d);
        cudaDeviceGetAttribute(&busWidth, cudaDevAttrGlobalMemoryBusWidth, d);
        r.totalMemory = prop.totalGlobalMem;
        // DDR: two transfers per clock.
        r.memoryBandwidth = 2ULL * static_cast<uint64_t>(memoryClockKHz) * 1000ULL *
                            static_cast<uint64_t>(busWidth / 8);
        r.l2CacheSize = static_cast<uint32_t>(prop.l2CacheSize);
        r.clockRate = static_cast<uint32_t>(clockKHz);
        r.smCount = static_cast<uint32_t>(prop.multiProcessorCount);
        r.computeMajor = static_cast<uint32_t>(prop.major);
        r.computeMinor = static_cast<uint32_t>(prop.minor);
        r.threadsPerWarp = static_cast<uint32_t>(prop.warpSize);
        r.maxThreadsPerBlock = static_cast<uint32_t>(prop.maxThreadsPerBlock);
        r.maxSharedMemoryPerBlock = static_cast<uint32_t>(prop.sharedMemPerBlock);
        r.maxRegistersPerBlock = static_cast<uint32_t>(prop.regsPerBlock);
        r.numMemcpyEngines = static_cast<uint32_t>(prop.asyncEngineCount);
        devices.push_back(r);
    }

    std::optional<collector::CuptiSession> session;
    try {
        collector::CuptiSession::Options options;
        options.driverApi = driverApi;
        session.emplace(*writer, options);
    } catch (const collector::CollectorError& e) {
        writer.reset();
        std::remove(output.c_str());
        fail(e.what());
    }

    writer->setProcess(static_cast<uint32_t>(::getpid()), "warpline-record");
    writer->setSessionStart(utcNowNs());
    writer->setMeta("collector_version", WARPLINE_VERSION);
    writer->setMeta("workload", workload->name);
    writer->setMeta("workload_args", argsText);
    writer->setMeta("command_line", commandLine(argc, argv));
    writer->setMeta("working_directory", ::getcwd(cwd, sizeof cwd - 1) ? cwd : "");
    writer->setMeta("hostname", host);
    writer->setMeta("gpu", gpuNames);
    for (const auto& d : devices)
        writer->addDevice(d);
    writer->setMeta("cuda_driver_version", version(driverVersion));
    writer->setMeta("cuda_runtime_version", version(runtimeVersion));
    writer->setMeta("cupti_api_version", std::to_string(cuptiVersion));
    writer->setMeta("session_start_timestamp", std::to_string(session->startTimestamp()));
    writer->commit();

    if (!quiet)
        std::cerr << "warpline-record: recording " << workload->name << " (" << argsText
                  << ") into " << output << "\n";
    const auto wallStart = std::chrono::steady_clock::now();
    kernels::WorkloadResult result;
    try {
        result = workload->run(*args, [quiet, &workload](const std::string& line) {
            if (!quiet)
                std::cerr << "warpline-record: " << workload->name << ": " << line << "\n";
        });
    } catch (const std::exception& e) {
        result = {false, e.what()};
    }
    cudaDeviceSynchronize();
    uint64_t endTimestamp = 0;
    cuptiGetTimestamp(&endTimestamp);
    session->stop();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();

    const std::string writeError = session->writeError();
    writer->setMeta("end_time",
                    std::to_string(static_cast<int64_t>(endTimestamp - session->startTimestamp())));
    writer->setMeta("dropped_records", std::to_string(session->droppedRecords()));
    writer->setMeta("exit_code", result.ok ? "0" : "1");
    if (!result.ok)
        writer->addError(static_cast<int64_t>(endTimestamp - session->startTimestamp()), "workload",
                         result.error);
    if (!writeError.empty())
        writer->addError(static_cast<int64_t>(endTimestamp - session->startTimestamp()), "writer",
                         writeError);
    const uint64_t records = writer->recordsWritten();
    writer->finish(!writeError.empty() ? "incomplete" : result.ok ? "complete" : "failed");

    if (!quiet || !result.ok)
        std::cerr << "warpline-record: wrote " << records << " records in " << seconds << " s to "
                  << output << " (" << session->droppedRecords() << " dropped)\n";
    if (session->droppedRecords() > 0)
        std::cerr << "warpline-record: warning: CUPTI dropped " << session->droppedRecords()
                  << " records (activity buffers full); the trace is missing them\n";
    if (!writeError.empty())
        std::cerr << "warpline-record: warning: recording stopped writing early: " << writeError
                  << "\n";
    if (!result.ok) {
        std::cerr << "warpline-record: workload " << workload->name << " failed: " << result.error
                  << " (the trace is kept)\n";
        return kExitWorkloadFailed;
    }
    return kExitOk;
}
