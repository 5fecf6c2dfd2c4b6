#pragma once

// What a CPU thread did over a stretch of time, from the trace's CPU samples and thread states
// (TraceStore::cpuSamples(); warpline-record samples by default): how long it ran and how long
// it waited, and, from the stacks, what for. The step breakdown uses it to tell CPU work from a
// wait (stepbreakdown.h), the findings to name where the time went. Definitions:
// docs/analyses.md, "CPU samples".
//
// Pure functions of the store: safe on any thread. O(log n + samples in the stretch).

#include "summaries.h"
#include "table.h"
#include "tracestore.h"

#include <algorithm>
#include <cstdint>

namespace warpline::model {

struct CpuStretch {
    bool sampled = false; // the thread has samples or states; every field below is 0 otherwise
    // Time of the stretch by the thread's state (states from SCHED_EVENTS); unknown: no state.
    int64_t running = 0, waiting = 0, unknown = 0;
    // Running samples; those with the input pipeline on their stack (torch.utils.data: the
    // DataLoader's __next__, its collate, its workers' queue reads on this thread); and those
    // with no Python frame at all (native code whose caller the stack walk could not reach:
    // they cannot say what they served; none in a process without Python, whose native frames
    // are the program's own).
    uint32_t runningSamples = 0, inputSamples = 0, opaqueSamples = 0;
    // Running samples unmapping host memory (the innermost frame munmap, madvise or mremap:
    // a large buffer released, such as a DataLoader batch's shared memory), outside the
    // DataLoader's own code; neither input nor opaque.
    uint32_t hostMemorySamples = 0;
    // Running samples in a system call that reads or writes a file, pipe or socket (the
    // innermost frame read, write, fsync, recvmsg, ...: I/O, input or output) outside the
    // DataLoader's own code, and the most frequent of those calls (kNoName if none); neither
    // input nor opaque. I/O counts as input.
    uint32_t ioSamples = 0;
    CallFrame ioIn;
    // Samples taken as the thread went off its CPU (nsys exports; Warpline's recorder takes none),
    // those waiting for Python's GIL and those asleep.
    uint32_t waitingSamples = 0, gilSamples = 0, sleepSamples = 0;
    // The share of its waiting time in which another thread of its process ran Python code (its
    // innermost frame in the interpreter): the GIL held elsewhere, the wait that thread's CPU
    // work, not a wait for input. In a process without Python (ThreadCpuActivity::python on
    // none of its threads: a C++ program), another thread running at all: the program's own
    // worker threads, joined. From the other threads' samples, each standing for one
    // sampling period; at most 1.
    double gilHeldElsewhere = 0;
    // Where those other threads ran Python most often (frameOf their stacks); kNoName if none.
    CallFrame heldIn;
    // Other processes' samples in the stretch (a DataLoader's workers, recorded into the same
    // trace), and where they ran most often (frameOf); kNoName if none.
    uint32_t otherProcessSamples = 0;
    CallFrame otherProcessesIn;
    // Those of its samples in the DataLoader's code (torch.utils.data: its workers' loop), and
    // whether a thread of them is named as PyTorch names a DataLoader's worker
    // (pt_data_worker). Either (half the samples, or the name): the other processes are a data
    // loader's workers, not, say, a compiler's.
    uint32_t otherProcessLoaderSamples = 0;
    bool otherProcessesLoader = false;
    // How many CPUs those processes kept busy over the stretch on average: their threads' running
    // time (SCHED_EVENTS) over its length. Near their number: CPU-bound (more of them helps); near
    // 0: they wait too (I/O, a sleep, a lock).
    double otherProcessCpus = 0;
    uint32_t otherProcesses = 0;
    // Where it waited and where it ran: the innermost frame of the program's own Python code
    // (not the standard library's or an installed package's), for a stack without one its
    // innermost Python frame, else its innermost frame; kNoName if none. waitedIn: the frame of
    // the most waiting time, each wait attributed to the latest running sample with Python code
    // on its stack in the 5 ms before the wait began (none: the wait is not placed). ranIn: the
    // frame of the most running samples.
    CallFrame waitedIn, ranIn;
    int64_t waitedInNs = 0;
    // The waiting time whose last sample before it (at most one sampling period earlier) was in
    // an I/O system call, and the call of the most of it (kNoName if none).
    CallFrame waitedInIo;
    int64_t waitedInIoNs = 0;
    uint32_t ranInSamples = 0;

    // The parts of the stretch's waiting that were for input (not the GIL), and of its running
    // that was the input pipeline, as fractions of waiting and running time.
    double inputShareOfWaiting() const {
        const double gil =
            waitingSamples == 0 ? 0.0 : static_cast<double>(gilSamples) / waitingSamples;
        return 1.0 - std::max(gil, gilHeldElsewhere);
    }
    // The part of its running that unmapped host memory, as a fraction of running time.
    double hostMemoryShare() const {
        return runningSamples == 0 ? 0.0 : static_cast<double>(hostMemorySamples) / runningSamples;
    }
    // The stack-less samples are native code whose frame-pointer walk broke off (NumPy, BLAS
    // and PyTorch's C++ have no frame pointers), not a kind of work of their own: where enough
    // samples of the stretch do reach Python, the stack-less ones are taken to be spent as
    // those are (a NumPy feature loop half of whose samples stop in _multiarray_umath is CPU
    // work, as its Python frames say). Only where too few reach Python does `opaqueIsInput`
    // decide (the step breakdown's rule without samples: whether the stretch ends in a copy to
    // the GPU).
    static constexpr uint32_t kMinKnownSamples = 8;
    double inputShareOfRunning(bool opaqueIsInput) const {
        if (runningSamples == 0)
            return opaqueIsInput ? 1.0 : 0.0;
        const uint32_t known = runningSamples - std::min(opaqueSamples, runningSamples);
        if (known >= kMinKnownSamples)
            return static_cast<double>(inputSamples + ioSamples) / known;
        return static_cast<double>(inputSamples + ioSamples + (opaqueIsInput ? opaqueSamples : 0)) /
               runningSamples;
    }
};

// The thread's activity over [from, to); `globalTid` as ThreadInfo::globalTid.
CpuStretch readCpuStretch(const TraceStore& store, int64_t globalTid, int64_t from, int64_t to);

// The share of the thread's running samples over [from, to) whose stack passes through the
// recorder's own code (CUPTI's library, Warpline's injection library: its callbacks and Python
// stack reader), and how many running samples there were. A finding about the CPU's speed
// measured under tracing says how much of it was the recorder's.
struct RecorderShare {
    double share = 0;
    uint32_t running = 0;
};
RecorderShare recorderShare(const TraceStore& store, int64_t globalTid, int64_t from, int64_t to);
bool isRecorderModule(std::string_view module);

// Whether the process of this thread (ThreadInfo::globalTid) runs no Python: it has sampled
// threads and none of them has a Python frame (a C++ program). False without samples of it.
bool isNativeProcess(const TraceStore& store, int64_t globalTid);
// Whether a frame belongs to the program's own Python code: a .py file outside the standard
// library and installed packages (site-packages, dist-packages), not frozen.
bool isProgramFrame(const TraceStore& store, const CallFrame& frame);

// The frame a stack is shown by: its innermost frame of the program's own code, else its
// innermost Python frame, else its innermost frame; nullptr for an empty stack.
const CallFrame* frameOf(const TraceStore& store, std::span<const CallFrame> stack);

// --- the CPU samples report (warpline-stats --report cpu-samples) -----------------------------

// One function's samples: as the innermost frame (self) and anywhere on the stack (total), over
// samples of running threads; and the waits (samples taken as a thread went off its CPU) with it
// on the stack.
struct CpuSampleRow {
    CallFrame frame;
    uint64_t self = 0, total = 0, waits = 0;
};
struct CpuSampleSummary {
    uint64_t running = 0, waiting = 0; // samples in the window
    std::vector<CpuSampleRow> rows;    // by self, then total, descending
};
// Samples of every thread starting in the window; with `gpuIdleOnly`, only those taken while
// no GPU op (of any device) ran.
CpuSampleSummary cpuSampleSummary(const TraceStore& store, TimeWindow window,
                                  bool gpuIdleOnly = false);
Table cpuSamplesTable(const TraceStore& store, const CpuSampleSummary& summary);

// --- the call tree of the samples (the window's flame graph, warpline-stats --report cpu-tree) ---

// The samples' stacks merged from the outermost frame in, under their thread: node 0 holds every
// sample, its children one sampled thread each, the others one frame (function and module) under
// its parent. O(samples in the window + frames of their distinct stacks per thread); node count at
// most the frames of those stacks.
struct CpuTreeNode {
    int64_t thread = 0;             // a thread's node (depth 1): its globalTid; else 0
    CallFrame frame;                // none for node 0; a thread's node: its name only
    uint32_t parent = 0;            // node 0 is its own
    uint32_t depth = 0;             // node 0: 0
    uint64_t samples = 0;           // samples with this path on their stack
    uint64_t waits = 0;             // of those, taken as the thread went off its CPU
    uint64_t self = 0;              // of those, with this frame innermost
    std::vector<uint32_t> children; // by samples descending, then by first seen
};
struct CpuSampleTree {
    std::vector<CpuTreeNode> nodes; // node 0 first; a parent before its children
    uint64_t samples() const { return nodes.empty() ? 0 : nodes.front().samples; }
};
// The samples of every thread starting in the window, running and waiting; with `gpuIdleOnly`,
// only those taken while no GPU op (of any device) ran (as cpuSampleSummary).
CpuSampleTree cpuSampleTree(const TraceStore& store, TimeWindow window, bool gpuIdleOnly = false);
// What a node shows: "all samples", a thread ("pt_data_worker [tid 499]"), or its function.
std::string cpuTreeLabel(const TraceStore& store, const CpuTreeNode& node);
// Top-down, depth first in child order: its depth, the function indented two spaces a level (at
// most 24 levels), samples, share, self, waits, module; nodes with at least 0.1% of the samples
// (and one sample).
Table cpuTreeTable(const TraceStore& store, const CpuSampleTree& tree);

} // namespace warpline::model
