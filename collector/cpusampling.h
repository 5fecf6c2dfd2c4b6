#pragma once

// CpuSampler: samples every thread of a program and of the processes it starts (DataLoader
// workers included) while warpline-record runs it, with Linux perf events, as `perf record -g`
// does and without root where the kernel allows it (perf_event_paranoid <= 2, the default):
//   - a sample every 1/rate seconds of a thread's CPU time: the thread's native call stack
//     (frame pointers), innermost first, state Running. Where the kernel allows it
//     (perf_event_paranoid <= 0, CAP_PERFMON or root) by a software clock on each CPU this
//     process may use, which samples whatever runs there and keeps the program's processes;
//     elsewhere by a task clock each thread inherits, which costs a timer reprogramming at each
//     switch on and off a CPU (docs/benchmarks.md: +5-6% for a loop that sleeps five times a
//     step, against none with the clock per CPU);
//   - each time a thread goes on or off a CPU (context-switch records): off while runnable is a
//     preemption, off otherwise is a wait, so a thread's timeline is running / waiting. (A stack
//     sampled at each switch off a CPU was tried: on the GPU machine the kernel delivered one
//     in ten, at a cost paid on every switch, so where a thread waited is read from its last
//     sample before the wait instead: cpuactivity.h.)
// Python functions appear in the stacks by name and file when the program runs CPython 3.12+ with
// its perf trampolines (PYTHONPERFSUPPORT=1, which the recorder sets): the interpreter lists them
// in /tmp/perf-PID.map, read here after the run (and removed when the recorder asked for it).
//
// Thread affinity: start() and stop() from one thread; a reader thread of its own drains the ring
// buffers while the program runs. Memory: the samples stay in memory until stop() (about 40 bytes
// a sample plus 8 per new frame of a new stack); beyond maxSamples sampling stops and says so.

#include "cpusamplesdata.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <sys/types.h>
#include <thread>
#include <vector>

namespace warpline::collector {

class CpuSampler {
public:
    struct Options {
        uint32_t rateHz = 1000;
        uint64_t maxSamples = 20'000'000;
        bool removePerfMaps = false; // remove /tmp/perf-PID.map of sampled processes after reading
    };
    CpuSampler();
    ~CpuSampler(); // stop() if running
    CpuSampler(const CpuSampler&) = delete;
    CpuSampler& operator=(const CpuSampler&) = delete;

    // Starts sampling `pid` and every thread and process it creates from now on. Call it between
    // fork() and the child's exec(), while the child waits: events count from the exec on. False
    // (and `whyNot`, one line a user can act on) when the kernel refuses the events.
    bool start(pid_t pid, const Options& options, std::string* whyNot);
    bool running() const { return m_reader.joinable(); }

    // Stops sampling (after the program exited), symbolises the stacks and returns everything.
    format::CpuSampleData stop();

private:
    struct Ring;
    void readLoop();
    void drain(Ring& ring);
    void toggleIfDue();
    // Per CPU: adds to the program (m_root at first) every process forked from one of it.
    void growProgram();
    // Per-CPU clocks sample every process: keeps the program's (growProgram's, from m_root's
    // exec on) and their stacks only. Membership is by pid: a pid that the kernel gives, during
    // the recording, to a process outside the program after a program's process exited would be
    // taken for the program's (unlike the per-thread clock, which only the program's processes
    // inherit). Pids wrap after pid_max new processes on the machine (32,768 on the development
    // machine; 4,194,304 where systemd raises it).
    void keepProgram();
    // Interns raw.key as the sample's stack and keeps it (up to maxSamples).
    void keepSample(format::CpuSampleData::Sample s);
    // Per CPU: keeps the pending records of processes now known to be the program's, drops
    // those of others once they are a full drain pass old (all of them when `last`).
    void resolvePending(bool last);
    void handleRecord(const uint8_t* record, size_t size);
    format::CpuSampleData symbolise();

    Options m_options;
    std::vector<std::unique_ptr<Ring>> m_rings;
    std::thread m_reader;
    std::atomic<bool> m_quit{false};
    int m_wakeFd = -1;
    bool m_callchains = true; // samples carry stacks (off only as a benchmark knob)
    bool m_perCpu = false;    // a clock per CPU (else per thread, inherited)
    uint32_t m_root = 0;      // the program's first process
    uint32_t m_self = 0;      // warpline-record's own process

    // Benchmark knob toggle=MS: sampling on while floor(CLOCK_MONOTONIC / MS) is even, off
    // otherwise, so that one run compares its own steps with and without it (the run-to-run
    // spread of a PyTorch loop is larger than the cost). While off, the events also miss mmap,
    // comm and fork records: a library loaded then has no symbols. Toggle times are written to
    // $WARPLINE_CPU_SAMPLING_TOGGLE_LOG at stop().
    struct Toggle {
        int64_t beginNs, endNs; // CLOCK_MONOTONIC around the ioctls
        bool on;
    };
    uint64_t m_toggleNs = 0;
    std::vector<Toggle> m_toggles;

    struct Raw;
    std::unique_ptr<Raw> m_raw;
};

} // namespace warpline::collector
