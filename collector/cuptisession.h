#pragma once

// CuptiSession: one CUPTI activity-recording session per process.
//
// CUPTI's buffer callbacks only hand completed buffers to a queue; a writer thread decodes them
// (ActivityDecoder) and writes them (TraceWriter) in batched transactions. CUPTI flushes
// partially filled buffers every flush period, so records reach the file at least once a second
// while the program runs. stop() flushes everything, stores the dropped-record counts, disables
// collection and finalizes CUPTI so the process returns to full speed.

#include "pythonstacks.h"

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

struct CUctx_st; // CUDA driver context (cuda.h's CUcontext)

namespace warpline::format {
class TraceWriter;
}

namespace warpline::collector {

// An environment problem (CUPTI missing or refusing, no driver): the recording cannot start.
class CollectorError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class CuptiSession {
public:
    struct Options {
        size_t bufferBytes = 8u << 20; // host activity buffers handed to the writer thread
        uint32_t flushPeriodMs = 500;
        bool runtimeApi = true; // CUDA runtime API calls (launches, copies, syncs on the CPU)
        bool driverApi = true;  // program's own driver API calls (Triton, cuBLAS, cu* code)
        // Only the API calls that start, move or wait for GPU work (launches, copies, memsets,
        // synchronizations, events, graphs, allocations, module loads; isEssentialApi()). A
        // PyTorch step makes thousands of cheap queries (cudaGetDevice, cudaGetLastError ...)
        // that say nothing about the GPU and would dominate the cost of recording.
        bool essentialApiOnly = true;
        bool memory = true; // memcpy and memset records
        // CUPTI's synchronization records (sync type, stream and event of each wait, and the
        // implicit waits inside calls such as cudaFree). Explicit syncs and blocking copies are
        // found from the API calls without them. They cost little in a launch loop but 0.28x to
        // 0.33x of a PyTorch step (docs/benchmarks.md), so program recordings leave them out
        // unless asked (warpline-record --sync-records).
        bool synchronization = true;
        bool nvtx = true;
        bool overhead = true; // CUPTI's own overhead records
        // CUPTI writes kernel, memcpy and memset timestamps into page-locked host memory
        // (CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED) rather than device memory. Off:
        // it cost 3 x 8 MiB of pinned memory per context and its effect on the launch cost was
        // within run-to-run noise in four runs (docs/benchmarks.md).
        bool pinnedTimestamps = false;
        // Activity buffers are handed to CUPTI already zeroed (cleared on the writer thread when
        // recycled; new ones come zeroed from calloc), so CUPTI does not clear 8 MiB on the
        // program's launching thread, which its documentation warns stalls the critical path.
        bool zeroedBuffers = true;
        // cuptiFinalize() in stop(). Without it stop() only disables collection.
        bool finalize = true;
        // The Python call stack of every recorded API call made on a thread holding the GIL
        // (pythonstacks.h): CUDA_CALLCHAINS and CUPTI_ACTIVITY_KIND_RUNTIME.callchainId.
        bool pythonStacks = false;
    };

    // Enables activity collection and starts the writer thread writing into `writer`, which
    // must outlive the session. Throws CollectorError when CUPTI refuses.
    CuptiSession(format::TraceWriter& writer, Options options);
    explicit CuptiSession(format::TraceWriter& writer) : CuptiSession(writer, Options{}) {}
    ~CuptiSession(); // stop() if not stopped
    CuptiSession(const CuptiSession&) = delete;
    CuptiSession& operator=(const CuptiSession&) = delete;

    // CUPTI timestamp (ns) that is t = 0 in the trace.
    uint64_t startTimestamp() const { return m_startTimestamp; }
    // "C M": a CUPTI timestamp and CLOCK_MONOTONIC read back to back (the smallest gap of a few
    // tries), for WARPLINE_META cupti_monotonic_start/_end: what puts samples taken on
    // CLOCK_MONOTONIC (CPU samples, cpusamplesdata.h) onto the trace's clock.
    static std::string clockPair();
    // Flushes, drains the queue, records dropped counts, finalizes CUPTI. Idempotent.
    void stop();

    // The first error the writer thread met (disk full, ...), empty if none.
    std::string writeError() const;
    uint64_t droppedRecords() const { return m_dropped; }
    uint64_t recordsDecoded() const { return m_decoded; }

    // Path of the loaded CUPTI library (for NVTX_INJECTION64_PATH), empty if unknown.
    static std::string cuptiLibraryPath();
    // What every recording says about itself, into the writer: the process (pid, name), the
    // wall-clock start, collector version, command line, working directory, host, NVIDIA driver,
    // this session's start timestamp, and the rank variables of launchers that run one process
    // per GPU (torchrun's RANK ..., Open MPI's, PMI's, Slurm's) as env_<NAME>.
    void describeRecording(const std::string& processName, const std::string& commandLine);
    // Whether a runtime or driver API call (CUPTI name, with or without its _vNNNN suffix) is
    // recorded when Options::essentialApiOnly is set.
    static bool isEssentialApi(const std::string& name);

private:
    struct Buffer {
        uint8_t* data;
        size_t validSize;
        uint64_t dropped;
        uint32_t contextId;
        uint32_t streamId;
    };

    static void bufferRequested(uint8_t** buffer, size_t* size, size_t* maxNumRecords);
    static void bufferCompleted(::CUctx_st* context, uint32_t streamId, uint8_t* buffer,
                                size_t size, size_t validSize);
    void writerLoop();
    void writeNewCallchains();

    format::TraceWriter& m_writer;
    Options m_options;
    uint64_t m_startTimestamp = 0;
    std::string m_startClockPair;
    bool m_stopped = false;

    mutable std::mutex m_mutex;
    std::condition_variable m_ready;
    std::deque<Buffer> m_queue;
    std::vector<uint8_t*> m_freeBuffers;
    bool m_quit = false;
    std::string m_writeError;
    uint64_t m_dropped = 0;
    uint64_t m_decoded = 0;
    std::thread m_thread;
    std::vector<int> m_enabledKinds; // CUpti_ActivityKind values, to disable in stop()
    std::vector<uint32_t> m_enabledRuntimeApis, m_enabledDriverApis; // callback ids, likewise
    PythonStacks m_python;
    void* m_subscriber = nullptr; // CUpti_SubscriberHandle of the Python-stack callbacks
    std::string m_pythonProblem;  // why --python-stacks records none here

public:
    // "412 stacks on 18,204 API calls", or why there are none ("" without --python-stacks).
    std::string pythonStacksSummary() const;
};

} // namespace warpline::collector
