#pragma once

// CPU samples and thread states (Nsight Systems' COMPOSITE_EVENTS with SAMPLING_CALLCHAINS, and
// SCHED_EVENTS; written by warpline-record -- PROGRAM, or by nsys with CPU sampling): per
// sampled thread, when it ran and when it waited, and its stack every sample. Stacks are
// deduplicated; a frame is a CallFrame (function, and the module: a library path, or for a Python
// function its .py file; line 0).

#include "callchains.h"
#include "tracetypes.h"

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace warpline::model {

enum class CpuState : uint8_t {
    Unknown = 0,
    Running = 1, // on a CPU (or runnable and preempted)
    Waiting = 2, // off its CPU by its own doing: a wait, a sleep, a lock, I/O
};

struct ThreadCpuActivity {
    int64_t globalTid = 0;
    NameId name = kNoName; // ThreadNames ("pt_data_worker": a DataLoader's worker), or none
    // The thread's state from stateTimes[i] until stateTimes[i + 1] (the last one: until the
    // thread's last event); from switches on and off a CPU. Empty without SCHED_EVENTS.
    std::vector<int64_t> stateTimes;
    std::vector<CpuState> states;
    // Samples, by time: when, which stack (CpuSamples::stack), and whether the thread was waiting
    // (a stack taken as it went off its CPU) rather than running.
    std::vector<int64_t> sampleTimes;
    std::vector<uint32_t> sampleStacks;
    std::vector<uint8_t> sampleWaiting;
    // Whether a sample's stack holds a Python frame (a .py file or the interpreter): a process
    // none of whose threads has one runs native code only (a C++ program), whose frames name
    // the program's own functions.
    bool python = false;

    // The state at time t (Unknown before the first switch).
    CpuState stateAt(int64_t t) const {
        const auto it = std::upper_bound(stateTimes.begin(), stateTimes.end(), t);
        if (it == stateTimes.begin())
            return CpuState::Unknown;
        return states[static_cast<size_t>(it - stateTimes.begin()) - 1];
    }
    // Nanoseconds of [begin, end) spent in each state, by CpuState value.
    struct StateTimes {
        int64_t unknown = 0, running = 0, waiting = 0;
    };
    StateTimes timeIn(int64_t begin, int64_t end) const {
        StateTimes out;
        if (end <= begin)
            return out;
        auto it = std::upper_bound(stateTimes.begin(), stateTimes.end(), begin);
        size_t i = static_cast<size_t>(it - stateTimes.begin());
        int64_t t = begin;
        CpuState s = i == 0 ? CpuState::Unknown : states[i - 1];
        while (t < end) {
            const int64_t next = i < stateTimes.size() ? std::min(stateTimes[i], end) : end;
            (s == CpuState::Running   ? out.running
             : s == CpuState::Waiting ? out.waiting
                                      : out.unknown) += next - t;
            t = next;
            if (i < stateTimes.size())
                s = states[i++];
        }
        return out;
    }
    // Indices of the samples in [begin, end).
    std::pair<size_t, size_t> samplesIn(int64_t begin, int64_t end) const {
        const auto a = std::lower_bound(sampleTimes.begin(), sampleTimes.end(), begin);
        const auto b = std::lower_bound(a, sampleTimes.end(), end);
        return {static_cast<size_t>(a - sampleTimes.begin()),
                static_cast<size_t>(b - sampleTimes.begin())};
    }
};

class CpuSamples {
public:
    bool empty() const { return m_threads.empty(); }
    // Sampled threads, by globalTid.
    const std::vector<ThreadCpuActivity>& threads() const { return m_threads; }
    const ThreadCpuActivity* thread(int64_t globalTid) const {
        const auto it =
            std::lower_bound(m_threads.begin(), m_threads.end(), globalTid,
                             [](const ThreadCpuActivity& t, int64_t g) { return t.globalTid < g; });
        return it != m_threads.end() && it->globalTid == globalTid ? &*it : nullptr;
    }
    // A stack's frames, innermost first; empty for an id that names none (UINT32_MAX: a sample
    // whose stack the file does not hold).
    std::span<const CallFrame> stack(uint32_t id) const {
        if (id >= stackCount())
            return {};
        return std::span<const CallFrame>(m_frames).subspan(m_stackBegin[id], m_stackBegin[id + 1] -
                                                                                  m_stackBegin[id]);
    }
    size_t stackCount() const { return m_stackBegin.empty() ? 0 : m_stackBegin.size() - 1; }
    size_t sampleCount() const {
        size_t n = 0;
        for (const auto& t : m_threads)
            n += t.sampleTimes.size();
        return n;
    }
    size_t memoryBytes() const {
        size_t n = m_frames.capacity() * sizeof(CallFrame) + m_stackBegin.capacity() * 4;
        for (const auto& t : m_threads)
            n += t.stateTimes.capacity() * 9 + t.sampleTimes.capacity() * 13;
        return n;
    }

private:
    friend class TraceLoader;
    friend class TraceSession;
    std::vector<ThreadCpuActivity> m_threads;
    std::vector<CallFrame> m_frames;
    std::vector<uint32_t> m_stackBegin; // stack i: m_frames[m_stackBegin[i], m_stackBegin[i + 1])
};

} // namespace warpline::model
