#pragma once

// Internal to kernels/: CUDA error checking, RAII owners for device resources, NVTX ranges, timing
// and option helpers shared by the workloads. Not installed, not part of workload.h's interface.
//
// Error policy: every CUDA call goes through WL_CUDA and every launch is followed by
// WL_CHECK_LAUNCH; both throw CudaError. runGuarded() turns any exception into a
// WorkloadResult{false, "<workload>: <message>"}, and the RAII owners free what was allocated, so a
// failed workload leaves the recording process (which outlives it) clean.

#include "workload.h"

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cuda_runtime.h>
#include <new>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCudaRt.h>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace warpline::kernels {

// A CUDA runtime call or kernel launch failed. what() names the call, the error and the source
// line.
class CudaError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

namespace detail {

inline const char* baseName(const char* path) {
    const char* base = path;
    for (const char* p = path; *p; ++p) {
        if (*p == '/') {
            base = p + 1;
        }
    }
    return base;
}

inline void checkCuda(cudaError_t err, const char* what, const char* file, int line) {
    if (err == cudaSuccess) {
        return;
    }
    throw CudaError(std::string(what) + " failed: " + cudaGetErrorString(err) + " (" +
                    cudaGetErrorName(err) + ") at " + baseName(file) + ":" + std::to_string(line));
}

} // namespace detail

// Wraps one CUDA runtime call: WL_CUDA(cudaMalloc(&p, bytes));
#define WL_CUDA(call) ::warpline::kernels::detail::checkCuda((call), #call, __FILE__, __LINE__)

// After every <<<...>>> launch: catches bad configurations (grid, block, shared memory) at once,
// and errors of earlier asynchronous work that the runtime has already seen.
#define WL_CHECK_LAUNCH(kernelName)                                                                \
    ::warpline::kernels::detail::checkCuda(cudaGetLastError(), "launch of " kernelName, __FILE__,  \
                                           __LINE__)

// Blocks of `block` threads covering n items (n > 0).
inline unsigned int blocksFor(long long n, int block) {
    return static_cast<unsigned int>((n + block - 1) / block);
}

// Owns a cudaMalloc'd array of `count` T. Not copyable; moves transfer ownership.
template <typename T> class DeviceBuffer {
public:
    explicit DeviceBuffer(std::size_t count) : m_count(count) {
        WL_CUDA(cudaMalloc(reinterpret_cast<void**>(&m_ptr), bytes()));
    }
    ~DeviceBuffer() {
        if (m_ptr) {
            cudaFree(m_ptr); // never throws from a destructor; a failure here changes nothing
        }
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    DeviceBuffer(DeviceBuffer&& other) noexcept
        : m_ptr(std::exchange(other.m_ptr, nullptr)), m_count(std::exchange(other.m_count, 0)) {}

    T* get() const { return m_ptr; }
    std::size_t size() const { return m_count; }
    std::size_t bytes() const { return m_count * sizeof(T); }

    // Synchronous copies of the whole buffer (host vector must have size() elements).
    void upload(const std::vector<T>& host) {
        checkSize(host.size());
        WL_CUDA(cudaMemcpy(m_ptr, host.data(), bytes(), cudaMemcpyHostToDevice));
    }
    std::vector<T> download() const {
        std::vector<T> host(m_count);
        WL_CUDA(cudaMemcpy(host.data(), m_ptr, bytes(), cudaMemcpyDeviceToHost));
        return host;
    }

private:
    void checkSize(std::size_t n) const {
        if (n != m_count) {
            throw std::logic_error("DeviceBuffer::upload: host has " + std::to_string(n) +
                                   " elements, device buffer " + std::to_string(m_count));
        }
    }
    T* m_ptr = nullptr;
    std::size_t m_count = 0;
};

// Owns page-locked host memory (cudaMallocHost): the only host memory an async copy can overlap.
template <typename T> class PinnedBuffer {
public:
    explicit PinnedBuffer(std::size_t count) : m_count(count) {
        WL_CUDA(cudaMallocHost(reinterpret_cast<void**>(&m_ptr), count * sizeof(T)));
    }
    ~PinnedBuffer() {
        if (m_ptr) {
            cudaFreeHost(m_ptr);
        }
    }
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;

    T* get() const { return m_ptr; }
    std::size_t size() const { return m_count; }
    T& operator[](std::size_t i) { return m_ptr[i]; }
    const T& operator[](std::size_t i) const { return m_ptr[i]; }

private:
    T* m_ptr = nullptr;
    std::size_t m_count = 0;
};

// A non-blocking stream (no implicit sync with the legacy default stream), named for the timeline.
class Stream {
public:
    explicit Stream(const std::string& name) {
        WL_CUDA(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking));
        nvtxNameCudaStreamA(m_stream, name.c_str());
    }
    ~Stream() {
        if (m_stream) {
            cudaStreamDestroy(m_stream);
        }
    }
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    Stream(Stream&& other) noexcept : m_stream(std::exchange(other.m_stream, nullptr)) {}

    cudaStream_t get() const { return m_stream; }

private:
    cudaStream_t m_stream = nullptr;
};

// An event used only for ordering and waiting (timing disabled: cheaper to record).
class Event {
public:
    Event() { WL_CUDA(cudaEventCreateWithFlags(&m_event, cudaEventDisableTiming)); }
    ~Event() {
        if (m_event) {
            cudaEventDestroy(m_event);
        }
    }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    Event(Event&& other) noexcept : m_event(std::exchange(other.m_event, nullptr)) {}

    cudaEvent_t get() const { return m_event; }

private:
    cudaEvent_t m_event = nullptr;
};

// One NVTX push/pop range on the calling thread, popped on scope exit (also when an error throws).
class NvtxRange {
public:
    explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
    explicit NvtxRange(const std::string& name) { nvtxRangePushA(name.c_str()); }
    ~NvtxRange() { nvtxRangePop(); }
    NvtxRange(const NvtxRange&) = delete;
    NvtxRange& operator=(const NvtxRange&) = delete;
};

// Wall-clock time on the CPU. Around GPU work it measures launch + wait, so phases that time GPU
// work end with a synchronization before elapsedMs().
class CpuTimer {
public:
    CpuTimer() : m_start(std::chrono::steady_clock::now()) {}
    void restart() { m_start = std::chrono::steady_clock::now(); }
    double elapsedMs() const {
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - m_start)
            .count();
    }

private:
    std::chrono::steady_clock::time_point m_start;
};

// "12.3 ms", "850 us": durations in progress lines.
inline std::string formatMs(double ms) {
    char text[32];
    if (ms < 1.0) {
        std::snprintf(text, sizeof text, "%.0f us", ms * 1000.0);
    } else {
        std::snprintf(text, sizeof text, "%.2f ms", ms);
    }
    return text;
}

// "3.2x": speed-ups in progress lines.
inline std::string formatRatio(double ratio) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1fx", ratio);
    return text;
}

// Progress lines; a workload may be run without a ProgressFn.
class Progress {
public:
    explicit Progress(const ProgressFn& fn) : m_fn(fn) {}
    void operator()(const std::string& line) const {
        if (m_fn) {
            m_fn(line);
        }
    }

private:
    const ProgressFn& m_fn;
};

// Runs launch() `repeats` times inside an NVTX range named `phase`, synchronizes, reports and
// returns the wall-clock milliseconds of the whole phase.
template <typename Launch>
double timeRepeats(const std::string& phase, int repeats, const Progress& progress,
                   Launch&& launch) {
    NvtxRange range(phase);
    CpuTimer timer;
    for (int r = 0; r < repeats; ++r) {
        launch();
    }
    WL_CUDA(cudaDeviceSynchronize());
    const double ms = timer.elapsedMs();
    progress(phase + ": " + std::to_string(repeats) + " repeats in " + formatMs(ms) + " (" +
             formatMs(ms / repeats) + " each)");
    return ms;
}

// Reads an integer option and checks it lies in [lo, hi]; throws std::invalid_argument otherwise.
inline long long boundedInteger(const WorkloadArgs& args, const std::string& name, long long lo,
                                long long hi) {
    const long long value = args.integer(name);
    if (value < lo || value > hi) {
        throw std::invalid_argument("--" + name + " must be between " + std::to_string(lo) +
                                    " and " + std::to_string(hi) + " (got " +
                                    std::to_string(value) + ")");
    }
    return value;
}

inline double boundedReal(const WorkloadArgs& args, const std::string& name, double lo, double hi) {
    const double value = args.real(name);
    if (!(value >= lo && value <= hi)) {
        throw std::invalid_argument("--" + name + " must be between " + std::to_string(lo) +
                                    " and " + std::to_string(hi) + " (got " +
                                    std::to_string(value) + ")");
    }
    return value;
}

// Runs one workload body: makes sure a GPU is there, then turns every failure (bad option, CUDA
// error, wrong result, host out of memory) into ok=false with a message that starts with the name.
template <typename Body> WorkloadResult runGuarded(const char* workload, Body&& body) {
    try {
        int devices = 0;
        const cudaError_t err = cudaGetDeviceCount(&devices);
        if (err != cudaSuccess || devices == 0) {
            return {false, std::string(workload) + ": no usable CUDA device (" +
                               (err != cudaSuccess ? cudaGetErrorString(err) : "none found") + ")"};
        }
        body();
        return {};
    } catch (const std::bad_alloc&) {
        return {false, std::string(workload) + ": out of host memory; try smaller sizes"};
    } catch (const std::exception& e) {
        return {false, std::string(workload) + ": " + e.what()};
    }
}

} // namespace warpline::kernels
