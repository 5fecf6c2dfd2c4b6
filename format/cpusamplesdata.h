#pragma once

// CPU samples taken while a program runs (warpline-record -- PROGRAM, on by default), and how they
// reach a trace file. The sampler (cpusampling.h, Linux perf events) fills CpuSampleData;
// appendCpuSamples() stores one process's part in Nsight Systems' layout: COMPOSITE_EVENTS (one
// row per sample), SAMPLING_CALLCHAINS (its frames, stackDepth 0 = innermost) and SCHED_EVENTS
// (each time a thread went on or off a CPU), docs/trace-format.md. No CUDA or CUPTI dependency.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace warpline::format {

// ENUM_SAMPLING_THREAD_STATE values used here (nsys's numbering).
enum class SampledThreadState : uint8_t {
    Running = 1,       // on a CPU, or runnable and preempted
    Interruptible = 2, // blocked: it gave up its CPU (a wait, a sleep, a lock, I/O)
};

struct CpuFrame {
    std::string symbol; // "PyObject_Call", or a Python function ("forward") from perf maps
    std::string module; // "/usr/lib/x86_64-linux-gnu/libc.so.6", or "/work/train.py"
    uint64_t ip = 0;
    bool resolved = false;
};

struct CpuSampleData {
    struct Sample {
        int64_t monotonicNs = 0; // CLOCK_MONOTONIC
        uint32_t pid = 0, tid = 0, cpu = 0;
        SampledThreadState state = SampledThreadState::Running;
        uint32_t chain = 0; // index into chains
    };
    struct Switch {
        int64_t monotonicNs = 0;
        uint32_t pid = 0, tid = 0, cpu = 0;
        bool in = false;        // went onto a CPU; otherwise off one
        bool preempted = false; // off a CPU while still runnable
    };
    uint32_t rateHz = 0;
    bool perCpu = false;          // sampled by a clock per CPU (else per thread): cpusampling.h
    std::vector<Sample> samples;  // in time order
    std::vector<Switch> switches; // in time order
    std::vector<std::vector<uint32_t>> chains; // frame indices, innermost first
    std::vector<CpuFrame> frames;
    std::map<std::pair<uint32_t, uint32_t>, std::string> threadNames; // (pid, tid) -> comm
    uint64_t lostRecords = 0;
    // Why sampling did not run, or ran in part, one line each (stored in WARPLINE_ERRORS).
    std::vector<std::string> problems;
};

// Whether an ELF module is CPython's own code: the python3.X executable (statically linked) or
// libpython3.X.so. The recorder folds runs of its frames; the analyses take a thread whose
// innermost frame is in it as running Python (holding the GIL).
inline bool isPythonInterpreterModule(std::string_view path) {
    const size_t slash = path.rfind('/');
    const std::string_view file = path.substr(slash == std::string_view::npos ? 0 : slash + 1);
    return file.starts_with("python3") || file.starts_with("libpython3");
}

// Adds the samples of the processes `pids` to a trace written by the same recording: its own
// process, and those that have no trace of their own (a DataLoader's worker processes, which
// make no CUDA call), each thread under its own globalTid. Times go onto
// the trace's clock through the CUPTI/CLOCK_MONOTONIC pairs the collector stored in WARPLINE_META
// (cupti_monotonic_start, cupti_monotonic_end); a trace without them gets no samples, and says
// why in WARPLINE_ERRORS. Also writes ThreadNames for sampled threads that have none, and a
// summary in WARPLINE_META (cpu_sampling, cpu_sampling_rate_hz). Throws TraceWriteError. Returns
// the number of samples written.
uint64_t appendCpuSamples(const std::string& path, const std::set<uint32_t>& pids,
                          const CpuSampleData& data);

// The CLOCK_MONOTONIC -> trace time mapping appendCpuSamples uses, from the two pairs "C M"
// (CUPTI ns, monotonic ns) and the session start S: t = C0 - S + (m - M0) * (C1 - C0) / (M1 - M0),
// the rate taken as 1 when the end pair is missing or implausible.
struct MonotonicToTrace {
    int64_t cupti0 = 0, mono0 = 0;
    double rate = 1.0;
    int64_t sessionStart = 0;
    int64_t operator()(int64_t mono) const {
        return cupti0 - sessionStart +
               static_cast<int64_t>(static_cast<double>(mono - mono0) * rate);
    }
};
// false when `start` is not a pair of two positive integers.
bool parseClockPairs(const std::string& start, const std::string& end, int64_t sessionStart,
                     MonotonicToTrace& out);

} // namespace warpline::format
