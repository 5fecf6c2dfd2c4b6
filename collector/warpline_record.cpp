// warpline-record: runs a bundled workload under the CUPTI collector and writes a trace file.
//
// Exit codes: 0 recorded, 1 the workload failed or the trace could not be written to the end
// (disk full; trace kept, error stored in it), 2 usage or environment error (nothing written),
// 128 + N interrupted by signal N (SIGINT 130, SIGTERM 143; the trace is finished and marked
// incomplete).
//
// Signals: SIGINT and SIGTERM are blocked in every thread before the first thread starts (threads
// inherit the mask) and taken by one thread with sigwait, so an interrupted recording is finished
// by ordinary code, not in a signal handler. With --workload that thread stops the session (which
// flushes CUPTI's buffers), finishes the trace as "incomplete" with an error row saying which
// signal, prints one line and exits 128 + signal. With -- PROGRAM it forwards SIGTERM to the
// program; SIGINT from the terminal reaches the program through the process group, so the
// recorder ignores it and waits to finish the program's traces.

#include "cpusampling.h"
#include "gpumetrics.h"
#include "outputfile.h"
#include "outputname.h"
#include "remoterecord.h"
#include "tracewriter.h"
#include "warpline_version.h"
#include "workload.h"
#include "workloadrecording.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <iostream>
#include <mutex>
#include <optional>
#include <pthread.h>
#include <signal.h>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace warpline;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitWorkloadFailed = 1;
constexpr int kExitUsage = 2;

const char* kUsage =
    R"(Usage: warpline-record --workload NAME [workload options] [-o FILE] [--force]
       warpline-record --workload allreduce [--gpus N] [--slow-rank R] [-o NAME.rank%q{RANK}.warpline]
       warpline-record [-o FILE] -- PROGRAM [ARGS...]
       warpline-record --list
       warpline-record --host [USER@]HOST [--remote-recorder PATH] [--remote-dir DIR] ...
Records CUDA API calls, GPU kernels, memory copies, synchronizations and NVTX ranges of a bundled
workload into a Warpline trace file (SQLite; open it with `warpline FILE`).

Options:
  --workload NAME   the workload to run (see --list); its options follow, e.g. --iterations 100
  -o, --output FILE trace file to write (default: NAME.warpline, numbered if it exists)
  --force           replace FILE if it exists
  --list            list the bundled workloads with their options
  --api all         record every CUDA API call; the default records those that start, move or
                    wait for GPU work (launches, copies, memsets, syncs, events, graphs,
                    allocations, module loads), not cheap queries such as cudaGetDevice
  --no-driver-api   do not record the program's own CUDA driver API calls
  --sync-records, --no-sync-records
                    record CUPTI's synchronization records (sync type, stream and event of
                    each wait; implicit waits in calls such as cudaFree). On for --workload,
                    off for -- PROGRAM, where they cost up to a third of a PyTorch step;
                    explicit syncs and blocking copies are found from the API calls anyway
  --host HOST       record on HOST over SSH (the system's ssh, your keys, agent and
                    ~/.ssh/config; never a password) with its warpline-record, which must be
                    this version; the trace is copied back to FILE here, then removed there.
                    WARPLINE_SSH_COMMAND replaces `ssh` ("ssh -F my_config")
  --remote-recorder PATH
                    warpline-record's path on HOST (default: warpline-record on its PATH)
  --remote-dir DIR  working directory on HOST for -- PROGRAM (default: the home directory)
  --remote-trace-dir DIR
                    where the trace is written on HOST until it is copied back (default:
                    ~/.cache/warpline); a recording cut off by a lost connection stays there
  --gpu-metrics     also sample the GPUs' performance counters (SM, warps, tensor and FMA
                    pipes, DRAM, L2, PCIe, NVLink) with CUPTI's PM sampling, into the trace's
                    GPU_METRICS table; where the counters cannot be read, one line says why
                    and the recording goes on without them
  --gpu-metrics-frequency HZ
                    samples per second with --gpu-metrics (10 to 20000; default 10000)
  --python-stacks   with -- PROGRAM: the Python call stack (file, line, function) of every
                    recorded CUDA call made from a Python thread, read from the interpreter
                    (CPython 3.9+), into CUDA_CALLCHAINS; GPU time by source line is then one
                    report (warpline-stats --report python-lines)
  --no-cpu-sampling with -- PROGRAM: do not sample the CPU. By default every thread of PROGRAM
                    and of the processes it starts is sampled (perf events, no root needed
                    where the kernel allows them): its native stack every 1/RATE s of its CPU
                    time with Python functions named (CPython 3.12+ perf trampolines:
                    PYTHONPERFSUPPORT=1 is set), and each time it starts or stops waiting,
                    into COMPOSITE_EVENTS, SAMPLING_CALLCHAINS and SCHED_EVENTS; where the
                    kernel refuses, one line says what to change and the recording goes on
  --cpu-sampling-rate HZ
                    CPU samples per second of a thread's CPU time (10 to 20000; default 1000)
  --quiet           no progress on stderr
  -h, --help        this help
  --version         print the version
Exit codes: 0 recorded; 1 the workload failed, or writing stopped early (disk full); the
            trace is kept, the error stored in it; 2 usage or environment error (nothing
            written); 130/143 interrupted by SIGINT/SIGTERM (the trace is finished and
            marked incomplete); with -- PROGRAM: PROGRAM's own exit status (128 + signal
            number when it was killed). SIGTERM is passed on to PROGRAM.
)";

// The signals that end a recording early, and the mask main() started with (a traced program
// gets that back).
sigset_t g_originalMask;

sigset_t stopSignals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    return set;
}

[[noreturn]] void fail(const std::string& message) {
    std::cerr << "warpline-record: " << message << "\n";
    std::exit(kExitUsage);
}

bool exists(const std::string& path) {
    return ::access(path.c_str(), F_OK) == 0;
}

// True when something, a symbolic link too (dangling or not), has this name: an output name is
// taken by a link as much as by a file.
bool taken(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

std::string directoryOf(const std::string& path) {
    const auto slash = path.rfind('/');
    if (slash == std::string::npos)
        return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

// NAME.warpline, or NAME-2.warpline, NAME-3.warpline ... when taken, in the working directory:
// NAME is the workload's or program's fileStem (no '/', no leading '.'), never a path.
std::string defaultOutput(const std::string& name) {
    const std::string stem = format::fileStem(name);
    std::string path = stem + ".warpline";
    for (int n = 2; taken(path); ++n)
        path = stem + "-" + std::to_string(n) + ".warpline";
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

std::string absolutePath(const std::string& path) {
    if (!path.empty() && path[0] == '/')
        return path;
    char cwd[4096] = {};
    if (!::getcwd(cwd, sizeof cwd - 1))
        return path;
    return std::string(cwd) + "/" + path;
}

std::string baseName(const std::string& path) {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The executable execvp would run, or exits 2 saying why there is none.
std::string resolveProgram(const std::string& name) {
    auto check = [&name](const std::string& path) {
        if (::access(path.c_str(), F_OK) != 0)
            return false;
        if (::access(path.c_str(), X_OK) != 0)
            fail("'" + name +
                 "' is not executable (chmod +x it, or run it through its "
                 "interpreter, e.g. -- python3 " +
                 name + ")");
        return true;
    };
    if (name.find('/') != std::string::npos) {
        if (!check(name))
            fail("program '" + name + "' not found");
        return name;
    }
    const char* pathEnv = std::getenv("PATH");
    std::string paths = pathEnv ? pathEnv : "/usr/local/bin:/usr/bin:/bin";
    size_t begin = 0;
    while (begin <= paths.size()) {
        const size_t end = std::min(paths.find(':', begin), paths.size());
        const std::string dir = end > begin ? paths.substr(begin, end - begin) : ".";
        if (check(dir + "/" + name))
            return dir + "/" + name;
        begin = end + 1;
    }
    fail("program '" + name + "' not found in PATH");
}

// This executable's path, or "" when /proc does not say.
std::string selfPath() {
    char self[4096] = {};
    const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    return n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string();
}

// Exits 2 unless `path` may be written: free (or --force given) in a writable directory. A
// symbolic link there is taken too: --force replaces the link, never its target.
void requireWritableOutput(const std::string& path, bool force) {
    struct stat st {};
    if (!force && ::lstat(path.c_str(), &st) == 0)
        fail(S_ISLNK(st.st_mode)
                 ? format::OutputFile::existsMessage(path, "pass --force")
                 : path + " already exists; choose another name with -o or pass --force to "
                          "replace it");
    if (::access(directoryOf(path).c_str(), W_OK) != 0)
        fail("cannot write " + path + ": the directory " + directoryOf(path) +
             " does not exist or is not writable");
}

// libwarpline-inject.so next to this executable (build tree) or in ../lib/warpline (installed).
std::string injectionLibrary() {
    if (const char* env = std::getenv("WARPLINE_INJECTION_LIBRARY"))
        return env;
    const std::string self = selfPath();
    const std::string dir = self.empty() ? "." : directoryOf(self);
    for (const std::string& candidate :
         {dir + "/libwarpline-inject.so", dir + "/../lib/warpline/libwarpline-inject.so"})
        if (exists(candidate))
            return candidate;
    fail("the injection library libwarpline-inject.so was not found next to warpline-record or "
         "in ../lib/warpline; rebuild or reinstall Warpline, or set WARPLINE_INJECTION_LIBRARY");
}

// The options every recording mode shares.
struct Flags {
    bool force = false;        // replace an existing output
    bool quiet = false;        // no progress on stderr
    bool driverApi = true;     // the program's own driver API calls
    bool allApi = false;       // every API call, not only the essential ones
    int syncRecords = -1;      // CUPTI synchronization records: 1 on, 0 off, -1 the mode's default
    bool gpuMetrics = false;   // sample the GPUs' counters (gpumetrics.h)
    bool pythonStacks = false; // Python call stacks of API calls (pythonstacks.h)
    bool cpuSampling = true;   // -- PROGRAM: sample its threads (cpusampling.h)
    uint32_t cpuSamplingRate = 1000;
    uint64_t gpuMetricsInterval = 100000; // ns between samples
};

void* loadInjection();

// --gpu-metrics: the sampler in libwarpline-inject.so, running in this process beside the
// recording; its samples go into the trace(s) once they are finished.
class MetricsSampling {
public:
    MetricsSampling(const Flags& flags, int deviceCount) {
        if (!flags.gpuMetrics)
            return;
        void* library = loadInjection();
        auto start = reinterpret_cast<collector::GpuMetricsStartFn>(
            ::dlsym(library, collector::kGpuMetricsStartSymbol));
        m_stop = reinterpret_cast<collector::GpuMetricsStopFn>(
            ::dlsym(library, collector::kGpuMetricsStopSymbol));
        if (!start || !m_stop)
            fail("the injection library has no GPU metrics sampler; it belongs to another "
                 "Warpline version: reinstall Warpline");
        format::GpuMetricsRequest request;
        request.intervalNs = flags.gpuMetricsInterval;
        request.deviceCount = deviceCount;
        request.quiet = flags.quiet;
        // Some drivers sample only for a process that holds a context on the GPU.
        const std::function<bool(int)> makeContext = [](int device) {
            return cudaSetDevice(device) == cudaSuccess && cudaFree(nullptr) == cudaSuccess;
        };
        m_sampler = start(&request, &makeContext);
    }
    MetricsSampling(const MetricsSampling&) = delete;
    MetricsSampling& operator=(const MetricsSampling&) = delete;
    ~MetricsSampling() { stop(); }

    // Stops sampling (once) and keeps the samples for addTo().
    void stop() {
        if (m_sampler && m_stop)
            m_stop(m_sampler, &m_data);
        m_sampler = nullptr;
    }
    bool active() const { return m_stop != nullptr; }

    // Stores the samples in a finished trace; says so, or why not, on stderr.
    void addTo(const std::string& trace, bool quiet) {
        stop();
        if (!active())
            return;
        try {
            const uint64_t samples = format::appendGpuMetrics(trace, m_data);
            if (!quiet)
                std::cerr << "warpline-record: " << samples << " GPU metric samples added to "
                          << trace << "\n";
        } catch (const std::exception& e) {
            std::cerr << "warpline-record: GPU metrics not stored: " << e.what() << "\n";
        }
    }

private:
    collector::GpuMetricsSampler* m_sampler = nullptr;
    collector::GpuMetricsStopFn m_stop = nullptr;
    format::GpuMetricsData m_data;
};

// Runs PROGRAM with the injection library and returns its exit status (128 + signal if killed).
int recordProgram(const std::vector<std::string>& program, std::string output, const Flags& flags) {
    const bool force = flags.force, quiet = flags.quiet;
    const std::string executable = resolveProgram(program[0]);
    const std::string library = injectionLibrary();
    if (output.empty())
        output = defaultOutput(program[0]);
    output = absolutePath(output);
    std::string firstName;
    try {
        firstName = format::expandOutputName(output, ::getpid());
    } catch (const format::OutputNameError& e) {
        fail(e.what());
    }
    if (!format::isPerProcessPattern(output) && taken(output)) {
        if (!force)
            fail(output + " already exists; choose another name with -o or pass --force to "
                          "replace it");
        if (std::remove(output.c_str()) != 0)
            fail("cannot replace " + output + ": " + std::strerror(errno));
    }
    if (::access(directoryOf(firstName).c_str(), W_OK) != 0)
        fail("cannot write " + firstName + ": the directory " + directoryOf(firstName) +
             " does not exist or is not writable");

    // Sampling starts before the program does, so its start-up is sampled too.
    MetricsSampling metrics(flags, flags.gpuMetrics ? checkGpu() : 0);

    char manifest[] = "/tmp/warpline-manifest-XXXXXX";
    const int manifestFd = ::mkstemp(manifest);
    if (manifestFd < 0)
        fail(std::string("cannot create a temporary file in /tmp: ") + std::strerror(errno));
    ::close(manifestFd);

    std::vector<char*> args;
    for (const auto& a : program)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    // Ctrl+C (SIGINT, blocked here and taken by the signal thread) and Ctrl+\ reach the whole
    // foreground group: the program decides what to do with them, and we stay to finish its
    // traces. SIGTERM is sent to us alone (kill, timeout, a batch system): pass it on.
    struct sigaction ignore {
    }, oldQuit{};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGQUIT, &ignore, &oldQuit);
    static std::mutex childMutex;
    static pid_t childToSignal = 0; // 0 once the child has exited: its pid may be reused
    std::thread([] {
        const sigset_t set = stopSignals();
        for (;;) {
            int sig = 0;
            if (::sigwait(&set, &sig) != 0 || sig != SIGTERM)
                continue;
            std::lock_guard lock(childMutex);
            if (childToSignal > 0)
                ::kill(childToSignal, SIGTERM);
        }
    }).detach();
    // The child reports a failed exec through this pipe; a successful exec closes it.
    int execError[2];
    if (::pipe2(execError, O_CLOEXEC) != 0)
        fail(std::string("cannot start ") + program[0] + ": " + std::strerror(errno));
    // The child waits on this pipe until the CPU sampler has attached to it.
    int go[2];
    if (::pipe2(go, O_CLOEXEC) != 0)
        fail(std::string("cannot start ") + program[0] + ": " + std::strerror(errno));
    // PYTHONPERFSUPPORT makes CPython 3.12+ name its functions for perf (/tmp/perf-PID.map); the
    // maps are removed after the run unless the user asked for them.
    const bool perfMapsOurs = flags.cpuSampling && !std::getenv("PYTHONPERFSUPPORT");
    std::unique_lock childLock(childMutex);
    const pid_t child = ::fork();
    if (child < 0)
        fail(std::string("cannot start ") + program[0] + ": " + std::strerror(errno));
    if (child == 0) {
        ::close(execError[0]);
        ::close(go[1]);
        char ready = 0;
        while (::read(go[0], &ready, 1) < 0 && errno == EINTR) {
        }
        ::sigaction(SIGQUIT, &oldQuit, nullptr);
        ::sigprocmask(SIG_SETMASK, &g_originalMask, nullptr);
        ::setenv("CUDA_INJECTION64_PATH", library.c_str(), 1);
        ::setenv("NVTX_INJECTION64_PATH", library.c_str(), 1);
        ::setenv("WARPLINE_OUTPUT", output.c_str(), 1);
        ::setenv("WARPLINE_MANIFEST", manifest, 1);
        if (quiet)
            ::setenv("WARPLINE_QUIET", "1", 1);
        if (!flags.driverApi)
            ::setenv("WARPLINE_NO_DRIVER_API", "1", 1);
        if (flags.allApi)
            ::setenv("WARPLINE_ALL_API", "1", 1);
        if (flags.syncRecords == 1) // off by default for programs (CuptiSession::Options)
            ::setenv("WARPLINE_SYNC_RECORDS", "1", 1);
        if (flags.pythonStacks)
            ::setenv("WARPLINE_PYTHON_STACKS", "1", 1);
        if (perfMapsOurs)
            ::setenv("PYTHONPERFSUPPORT", "1", 1);
        ::execv(executable.c_str(), args.data());
        const int error = errno;
        [[maybe_unused]] const ssize_t written = ::write(execError[1], &error, sizeof error);
        ::_exit(127);
    }
    childToSignal = child;
    childLock.unlock();
    ::close(go[0]);
    collector::CpuSampler cpuSampler;
    if (flags.cpuSampling) {
        collector::CpuSampler::Options options;
        options.rateHz = flags.cpuSamplingRate;
        options.removePerfMaps = perfMapsOurs;
        std::string whyNot;
        if (!cpuSampler.start(child, options, &whyNot))
            std::cerr << "warpline-record: " << whyNot << "\n";
    }
    ::close(go[1]); // the child goes on to exec
    ::close(execError[1]);
    int error = 0;
    const ssize_t got = ::read(execError[0], &error, sizeof error);
    ::close(execError[0]);
    if (got != sizeof error && !quiet)
        std::cerr << "warpline-record: recording " << program[0] << " into " << output << "\n";
    // Wait without reaping first: until the child is reaped its pid cannot be reused, so a
    // SIGTERM forwarded meanwhile reaches the right process.
    siginfo_t exited{};
    while (::waitid(P_PID, static_cast<id_t>(child), &exited, WEXITED | WNOWAIT) < 0 &&
           errno == EINTR) {
    }
    {
        std::lock_guard lock(childMutex);
        childToSignal = 0;
    }
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    format::CpuSampleData cpuSamples;
    if (cpuSampler.running())
        cpuSamples = cpuSampler.stop();
    if (got == sizeof error) {
        std::remove(manifest);
        fail("cannot run " + executable + ": " + std::strerror(error));
    }
    ::sigaction(SIGQUIT, &oldQuit, nullptr);
    const bool signaled = WIFSIGNALED(status);
    const int exitCode = signaled ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
    const std::string how = signaled ? std::string("was killed by signal ") +
                                           std::to_string(WTERMSIG(status)) + " (" +
                                           strsignal(WTERMSIG(status)) + ")"
                                     : "exited with status " + std::to_string(exitCode);

    // Each process that initialised CUDA wrote its trace and listed it in the manifest.
    std::vector<std::pair<long, std::string>> traces;
    {
        std::ifstream in(manifest);
        long pid = 0;
        std::string path;
        while (in >> pid && std::getline(in >> std::ws, path))
            if (exists(path)) // gone: the process did no GPU work (libwarpline-inject removed it)
                traces.emplace_back(pid, path);
    }
    std::remove(manifest);
    // The name asked for was free when the program started. A process that initialised CUDA but
    // did no GPU work (a launcher, a probe that counts the GPUs) may have taken it first, so the
    // trace that holds the work was numbered (NAME-2); that process removed its empty file, so
    // the first trace takes the name asked for. link() never replaces a file.
    if (!format::isPerProcessPattern(output) && !traces.empty() && !taken(output) &&
        traces.front().second != output &&
        ::link(traces.front().second.c_str(), output.c_str()) == 0) {
        ::unlink(traces.front().second.c_str());
        traces.front().second = output;
    }
    if (traces.empty()) {
        // Keep what is known (the exit status) in a trace that says no CUDA activity happened.
        try {
            format::TraceWriter::Options options;
            options.numberIfExists = true;
            format::TraceWriter w(format::expandOutputName(output, child), options);
            w.setProcess(static_cast<uint32_t>(child), baseName(program[0]));
            w.setMeta("collector_version", WARPLINE_VERSION);
            w.setMeta("exit_code", std::to_string(exitCode));
            w.addError(0, "collector",
                       "no CUDA activity recorded: " + program[0] + " never initialised CUDA");
            w.finish("no-cuda");
            std::cerr << "warpline-record: no CUDA activity recorded: " << program[0] << " " << how
                      << " without initialising CUDA; its exit status is in " << w.path() << "\n";
        } catch (const std::exception& e) {
            std::cerr << "warpline-record: no CUDA activity recorded (" << program[0] << " " << how
                      << "); " << e.what() << "\n";
        }
        return exitCode;
    }
    for (const auto& [pid, path] : traces) {
        std::vector<std::pair<std::string, std::string>> meta;
        if (pid == child) {
            meta.emplace_back("exit_code", std::to_string(exitCode));
            if (signaled)
                meta.emplace_back("exit_signal", std::to_string(WTERMSIG(status)));
        }
        // A process that never reached its exit handlers (killed) left its trace "recording":
        // it holds everything up to the last periodic commit.
        if (format::traceMetaValue(path, "status") == "recording")
            meta.emplace_back("status", "incomplete");
        try {
            if (!meta.empty())
                format::amendTraceMeta(path, meta);
        } catch (const std::exception& e) {
            std::cerr << "warpline-record: warning: " << e.what() << "\n";
        }
        metrics.addTo(path, quiet);
        if (flags.cpuSampling && !cpuSamples.samples.empty()) {
            // The first trace also takes the processes that wrote none (DataLoader workers).
            std::set<uint32_t> pids = {static_cast<uint32_t>(pid)};
            if (path == traces.front().second)
                for (const auto& s : cpuSamples.samples)
                    if (std::none_of(traces.begin(), traces.end(),
                                     [&](const auto& t) { return t.first == long(s.pid); }))
                        pids.insert(s.pid);
            try {
                const uint64_t n = format::appendCpuSamples(path, pids, cpuSamples);
                if (!quiet)
                    std::cerr << "warpline-record: " << n << " CPU samples added to " << path
                              << "\n";
            } catch (const std::exception& e) {
                std::cerr << "warpline-record: CPU samples not stored: " << e.what() << "\n";
            }
        }
        if (!quiet || signaled || exitCode != 0)
            std::cerr << "warpline-record: process " << pid
                      << (pid == child ? " (" + program[0] + ")" : "") << ": trace " << path
                      << "\n";
    }
    if (!quiet || exitCode != 0)
        std::cerr << "warpline-record: " << program[0] << " " << how << "\n";
    return exitCode;
}

// The workload recorder in libwarpline-inject.so, or exits 2 saying why it cannot be loaded
// (most often: CUPTI, which it links, is not installed or not on the loader's path).
void* loadInjection() {
    static void* loaded = nullptr;
    if (loaded)
        return loaded;
    const std::string library = injectionLibrary();
    void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const std::string error = ::dlerror();
        if (error.find("libcupti") != std::string::npos)
            fail("CUPTI (libcupti.so." + std::to_string(CUDART_VERSION / 1000) +
                 ", part of the CUDA toolkit) cannot be loaded: " + error +
                 "; install the CUDA toolkit's CUPTI, or add its folder (e.g. "
                 "/usr/local/cuda/lib64) to LD_LIBRARY_PATH");
        fail("cannot load " + library + ": " + error +
             "; CUPTI (libcupti, part of the CUDA toolkit) and the other libraries it needs must "
             "be installed: try LD_LIBRARY_PATH=/usr/local/cuda/lib64, or reinstall Warpline");
    }
    loaded = handle;
    return handle;
}

collector::RecordWorkloadFn loadRecorder() {
    void* handle = loadInjection();
    const std::string library = injectionLibrary();
    auto* record = reinterpret_cast<collector::RecordWorkloadFn>(
        ::dlsym(handle, collector::kRecordWorkloadSymbol));
    if (!record)
        fail(library + " has no " + collector::kRecordWorkloadSymbol +
             "; it belongs to another Warpline version: reinstall Warpline");
    return record;
}

// A distributed workload (Workload::onePerGpu): starts one recording process per GPU, each this
// program recording one rank (RANK, LOCAL_RANK, WORLD_SIZE set; the ranks meet through an NCCL id
// file in a private temporary folder), waits for all of them and returns the first failure's exit
// status. When a rank fails, the others cannot finish their collectives: they get SIGTERM after a
// grace period, which finishes their traces as incomplete.
int recordJob(const kernels::Workload& workload, const kernels::WorkloadArgs& args,
              std::string output, const Flags& flags) {
    const bool force = flags.force, quiet = flags.quiet;
    const int visible = checkGpu();
    const long long requested = args.integer("gpus");
    if (requested < 0)
        fail("--gpus must be 0 (every visible GPU) or more");
    if (requested > visible)
        fail("--gpus " + std::to_string(requested) + " but only " + std::to_string(visible) +
             " GPU(s) are visible; use --gpus " + std::to_string(visible) +
             " or fewer (check CUDA_VISIBLE_DEVICES)");
    const int ranks = requested == 0 ? visible : static_cast<int>(requested);

    // One file per rank: NAME.rank%q{RANK}.warpline unless the name says where the rank goes.
    if (output.empty())
        output = workload.name + ".rank%q{RANK}.warpline";
    if (output.find("%p") != std::string::npos)
        fail("-o " + output + ": name the ranks' files with %q{RANK}, not %p, in a job");
    if (output.find("%q{RANK}") == std::string::npos) {
        const auto dot = output.rfind('.');
        const auto slash = output.rfind('/');
        const bool hasExtension =
            dot != std::string::npos && (slash == std::string::npos || dot > slash);
        output = hasExtension ? output.substr(0, dot) + ".rank%q{RANK}" + output.substr(dot)
                              : output + ".rank%q{RANK}";
    }
    std::vector<std::string> outputs;
    for (int r = 0; r < ranks; ++r) {
        const std::string rank = std::to_string(r), size = std::to_string(ranks);
        const auto env = [&](const char* var) -> const char* {
            const std::string_view name = var;
            if (name == "RANK" || name == "LOCAL_RANK")
                return rank.c_str();
            return name == "WORLD_SIZE" ? size.c_str() : std::getenv(var);
        };
        std::string name;
        try {
            name = format::expandOutputName(output, ::getpid(), env);
        } catch (const format::OutputNameError& e) {
            fail(e.what());
        }
        requireWritableOutput(name, force);
        outputs.push_back(name);
    }

    char jobDir[] = "/tmp/warpline-job-XXXXXX";
    if (!::mkdtemp(jobDir))
        fail(std::string("cannot create a temporary folder in /tmp: ") + std::strerror(errno));
    const std::string idFile = std::string(jobDir) + "/nccl-id";

    const std::string self = selfPath();
    if (self.empty())
        fail(std::string("cannot find this program's path: ") + std::strerror(errno));
    std::vector<std::string> common = {self, "--workload", workload.name};
    for (const auto& [name, value] : args.values())
        if (name != "gpus")
            common.push_back("--" + name + "=" + value);
    if (force)
        common.push_back("--force");
    if (quiet)
        common.push_back("--quiet");
    if (!flags.driverApi)
        common.push_back("--no-driver-api");
    if (flags.allApi)
        common.push_back("--api=all");
    if (flags.syncRecords >= 0)
        common.push_back(flags.syncRecords ? "--sync-records" : "--no-sync-records");

    if (!quiet)
        std::cerr << "warpline-record: starting " << ranks << " rank(s) of " << workload.name
                  << ", one per GPU\n";
    static std::mutex childMutex;
    static std::vector<pid_t> running;
    std::thread([] {
        const sigset_t set = stopSignals();
        for (;;) {
            int sig = 0;
            if (::sigwait(&set, &sig) != 0)
                continue;
            std::lock_guard lock(childMutex);
            for (pid_t pid : running)
                ::kill(pid, SIGTERM);
        }
    }).detach();
    std::vector<pid_t> children;
    {
        std::lock_guard lock(childMutex);
        for (int r = 0; r < ranks; ++r) {
            std::vector<std::string> argv = common;
            argv.push_back("-o");
            argv.push_back(outputs[r]);
            const pid_t child = ::fork();
            if (child < 0)
                fail(std::string("cannot start rank ") + std::to_string(r) + ": " +
                     std::strerror(errno));
            if (child == 0) {
                std::vector<char*> raw;
                for (auto& a : argv)
                    raw.push_back(a.data());
                raw.push_back(nullptr);
                ::setenv("RANK", std::to_string(r).c_str(), 1);
                ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
                ::setenv("WORLD_SIZE", std::to_string(ranks).c_str(), 1);
                ::setenv("WARPLINE_JOB_RANK", std::to_string(r).c_str(), 1);
                ::setenv("WARPLINE_NCCL_ID_FILE", idFile.c_str(), 1);
                ::execv(self.c_str(), raw.data());
                std::fprintf(stderr, "warpline-record: cannot start rank %d: %s\n", r,
                             std::strerror(errno));
                ::_exit(kExitUsage);
            }
            children.push_back(child);
            running.push_back(child);
        }
    }

    int result = kExitOk;
    std::vector<int> status(ranks, -1);
    std::optional<std::chrono::steady_clock::time_point> failedAt;
    bool othersStopped = false; // SIGTERM sent to the ranks left, 10 s after a rank failed
    for (int done = 0; done < ranks;) {
        int st = 0;
        const pid_t pid = ::waitpid(-1, &st, failedAt ? WNOHANG : 0);
        if (pid < 0 && errno == EINTR)
            continue;
        if (pid <= 0) {
            if (failedAt && !othersStopped &&
                std::chrono::steady_clock::now() - *failedAt > std::chrono::seconds(10)) {
                std::lock_guard lock(childMutex);
                for (pid_t p : running)
                    ::kill(p, SIGTERM);
                othersStopped = true;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            continue;
        }
        const auto it = std::find(children.begin(), children.end(), pid);
        if (it == children.end())
            continue;
        const int r = static_cast<int>(it - children.begin());
        status[r] = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
        ++done;
        {
            std::lock_guard lock(childMutex);
            running.erase(std::find(running.begin(), running.end(), pid));
        }
        if (status[r] != kExitOk) {
            if (result == kExitOk)
                result = status[r];
            if (!failedAt) {
                failedAt = std::chrono::steady_clock::now();
                std::cerr << "warpline-record: rank " << r << " ended with status " << status[r]
                          << "; the other ranks get 10 s to finish\n";
            }
        }
    }
    std::remove(idFile.c_str());
    ::rmdir(jobDir);

    std::string list;
    for (int r = 0; r < ranks; ++r) {
        if (exists(outputs[r]))
            list += " " + outputs[r];
        if (!quiet || status[r] != kExitOk)
            std::cerr << "warpline-record: rank " << r << ": " << outputs[r]
                      << (status[r] == kExitOk ? "" : " (status " + std::to_string(status[r]) + ")")
                      << "\n";
    }
    if (!quiet && !list.empty())
        std::cerr << "warpline-record: open the ranks together: warpline" << list << "\n";
    return result;
}

} // namespace

// The value of option argv[i], the next argument (i moves to it); fails when there is none.
static std::string optionValue(int argc, char** argv, int& i) {
    if (i + 1 >= argc)
        fail(std::string(argv[i]) + " needs a value; see --help");
    return argv[++i];
}

int main(int argc, char** argv) {
    // Before any thread starts (CUDA's, CUPTI's, ours): every thread inherits this mask, so only
    // the thread that sigwaits ever takes these signals.
    const sigset_t stop = stopSignals();
    ::pthread_sigmask(SIG_BLOCK, &stop, &g_originalMask);

    // --host: the recording runs on another machine (remoterecord.h); this process only passes
    // the arguments on, shows what comes back and copies the trace home.
    {
        collector::RemoteRequest remote;
        std::string output;
        std::string workload; // --workload NAME, checked before it names a file
        bool force = false;
        for (int i = 1; i < argc; ++i) {
            const std::string a = argv[i];
            if (a == "--") {
                for (int j = i; j < argc; ++j)
                    remote.args.emplace_back(argv[j]);
                if (i + 1 < argc)
                    remote.name = baseName(argv[i + 1]);
                break;
            } else if (a == "--host") {
                remote.host = optionValue(argc, argv, i);
            } else if (a == "--remote-recorder") {
                remote.recorder = optionValue(argc, argv, i);
            } else if (a == "--remote-dir") {
                remote.directory = optionValue(argc, argv, i);
            } else if (a == "--remote-trace-dir") {
                remote.traceDir = optionValue(argc, argv, i);
            } else if (a == "-o" || a == "--output") {
                output = optionValue(argc, argv, i);
            } else if (a.rfind("--output=", 0) == 0) {
                output = a.substr(9);
            } else if (a == "--force") {
                force = true;
            } else {
                if (a == "--list")
                    remote.list = true;
                if (a == "--workload" && i + 1 < argc)
                    remote.name = workload = argv[i + 1];
                else if (a.rfind("--workload=", 0) == 0)
                    remote.name = workload = a.substr(11);
                remote.args.push_back(a);
            }
        }
        if (!remote.host.empty()) {
            if (remote.host[0] == '-')
                fail("--host needs a host name, not " + remote.host);
            // The host's workloads are not known here: a name that could not be one of them
            // (a path, "..") is refused before it names a file, here or there.
            if (!workload.empty() && !format::isPlainWorkloadName(workload))
                fail("unknown workload '" + workload +
                     "': a workload's name is one word, without '/' or '..' (see --host " +
                     remote.host + " --list)");
            if (!remote.list) {
                if (remote.name.empty())
                    fail("nothing to record: give -- PROGRAM ARGS, or --workload NAME (see "
                         "--host HOST --list)");
                if (output.empty())
                    output = defaultOutput(remote.name);
                requireWritableOutput(output, force);
            }
            remote.output = output;
            remote.force = force;
            remote.localVersion = WARPLINE_VERSION;
            remote.stopSignals = stop;
            return collector::recordRemote(remote);
        }
    }

    std::string workloadName, output;
    Flags flags;
    bool list = false;
    std::vector<std::string> workloadArgs, program;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            std::cout << kUsage;
            return kExitOk;
        } else if (a == "--version") {
            std::cout << "warpline-record " << WARPLINE_VERSION << "\n";
            return kExitOk;
        } else if (a == "--list") {
            list = true;
        } else if (a == "--workload") {
            workloadName = optionValue(argc, argv, i);
        } else if (a.rfind("--workload=", 0) == 0) {
            workloadName = a.substr(11);
        } else if (a == "-o" || a == "--output") {
            output = optionValue(argc, argv, i);
        } else if (a.rfind("--output=", 0) == 0) {
            output = a.substr(9);
        } else if (a == "--force") {
            flags.force = true;
        } else if (a == "--quiet") {
            flags.quiet = true;
        } else if (a == "--no-driver-api") {
            flags.driverApi = false;
        } else if (a == "--sync-records" || a == "--no-sync-records") {
            flags.syncRecords = a == "--sync-records" ? 1 : 0;
        } else if (a == "--api" || a.rfind("--api=", 0) == 0) {
            const std::string v = a == "--api" ? optionValue(argc, argv, i) : a.substr(6);
            if (v != "all" && v != "essential")
                fail("--api takes 'all' or 'essential', not '" + v + "'");
            flags.allApi = v == "all";
        } else if (a == "--gpu-metrics") {
            flags.gpuMetrics = true;
        } else if (a == "--python-stacks") {
            flags.pythonStacks = true;
        } else if (a == "--no-cpu-sampling") {
            flags.cpuSampling = false;
        } else if (a == "--cpu-sampling-rate" || a.rfind("--cpu-sampling-rate=", 0) == 0) {
            const std::string v =
                a == "--cpu-sampling-rate" ? optionValue(argc, argv, i) : a.substr(20);
            char* end = nullptr;
            const long hz = std::strtol(v.c_str(), &end, 10);
            if (v.empty() || *end != '\0' || hz < 10 || hz > 20000)
                fail("--cpu-sampling-rate takes samples per second from 10 to 20000, not '" + v +
                     "'");
            flags.cpuSamplingRate = static_cast<uint32_t>(hz);
        } else if (a == "--gpu-metrics-frequency" || a.rfind("--gpu-metrics-frequency=", 0) == 0) {
            const std::string v =
                a == "--gpu-metrics-frequency" ? optionValue(argc, argv, i) : a.substr(24);
            char* end = nullptr;
            const long hz = std::strtol(v.c_str(), &end, 10);
            if (v.empty() || *end != '\0' || hz < 10 || hz > 20000)
                fail("--gpu-metrics-frequency takes samples per second from 10 to 20000, not '" +
                     v + "'");
            flags.gpuMetrics = true;
            flags.gpuMetricsInterval = static_cast<uint64_t>(1000000000L / hz);
        } else if (a == "--") {
            for (int j = i + 1; j < argc; ++j)
                program.push_back(argv[j]);
            if (program.empty())
                fail("-- must be followed by the program to record, e.g. -- python3 train.py");
            break;
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
    if (!program.empty()) {
        if (!workloadName.empty())
            fail("give either --workload NAME or -- PROGRAM, not both");
        return recordProgram(program, output, flags);
    }
    if (workloadName.empty())
        fail("nothing to record: give -- PROGRAM ARGS, or --workload NAME (see --list), or --help");
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

    if (flags.pythonStacks)
        fail("--python-stacks records Python programs (-- python3 ...); the bundled workloads "
             "are C++");
    if (workload->onePerGpu && flags.gpuMetrics)
        fail("--gpu-metrics is not available for multi-GPU workloads (" + workload->name +
             ") yet; record one GPU's program with -- PROGRAM --gpu-metrics instead");
    if (workload->onePerGpu && !std::getenv("WARPLINE_JOB_RANK"))
        return recordJob(*workload, *args, output, flags);

    if (output.empty())
        output = defaultOutput(workload->name);
    requireWritableOutput(output, flags.force);

    // The recording itself runs in libwarpline-inject.so (workloadrecording.h), which brings
    // CUPTI: load it first, so a missing CUPTI is one clear line, before anything else happens.
    const collector::RecordWorkloadFn recordWorkload = loadRecorder();
    const int gpus = checkGpu();

    collector::WorkloadRecordingRequest request;
    request.workload = workload->name;
    for (const auto& [k, v] : args->values())
        request.workloadArgs += (request.workloadArgs.empty() ? "--" : " --") + k + "=" + v;
    request.output = output;
    request.force = flags.force;
    request.quiet = flags.quiet;
    request.driverApi = flags.driverApi;
    request.allApi = flags.allApi;
    request.syncRecords = flags.syncRecords != 0; // on by default for workloads
    request.commandLine = commandLine(argc, argv);
    request.stopSignals = stop;
    int driverVersion = 0, runtimeVersion = 0;
    cudaDriverGetVersion(&driverVersion);
    cudaRuntimeGetVersion(&runtimeVersion);
    auto version = [](int v) {
        return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
    };
    request.cudaDriverVersion = version(driverVersion);
    request.cudaRuntimeVersion = version(runtimeVersion);
    // CUPTI reports devices only when it starts before CUDA does; describe them here instead.
    for (int d = 0; d < gpus; ++d) {
        cudaDeviceProp prop{};
        if (cudaGetDeviceProperties(&prop, d) != cudaSuccess)
            continue;
        request.gpuNames += (request.gpuNames.empty() ? "" : "; ") + std::string(prop.name);
        format::DeviceRecord r;
        r.id = static_cast<uint32_t>(d);
        r.name = prop.name;
        r.uuid = format::formatGpuUuid(prop.uuid.bytes);
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
        r.maxRegistersPerSm = static_cast<uint32_t>(prop.regsPerMultiprocessor);
        r.maxSharedMemoryPerSm = static_cast<uint32_t>(prop.sharedMemPerMultiprocessor);
        r.maxSharedMemoryPerBlockOptin = static_cast<uint32_t>(prop.sharedMemPerBlockOptin);
        if (prop.warpSize > 0)
            r.maxWarpsPerSm =
                static_cast<uint32_t>(prop.maxThreadsPerMultiProcessor / prop.warpSize);
        r.maxBlocksPerSm = static_cast<uint32_t>(prop.maxBlocksPerMultiProcessor);
        request.devices.push_back(r);
    }
    MetricsSampling metrics(flags, gpus);
    if (metrics.active())
        request.finished = [&metrics, &flags](const std::string& trace) {
            metrics.addTo(trace, flags.quiet);
        };
    request.run = [workload, &args](const std::function<void(const std::string&)>& progress) {
        const kernels::WorkloadResult result = workload->run(*args, progress);
        cudaDeviceSynchronize();
        return collector::WorkloadOutcome{result.ok, result.error};
    };
    return recordWorkload(&request);
}
