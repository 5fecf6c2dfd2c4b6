// allreduce: one rank of a data-parallel training job. Every step computes a gradient (a few
// compute kernels whose length is set by --work), all-reduces it with NCCL across every rank on
// the communication stream, applies it on the compute stream, and reads the loss back (the
// `loss.item()` of a training loop). `warpline-record --workload allreduce` starts one process per
// GPU (workload.h: Workload::onePerGpu) with RANK, LOCAL_RANK and WORLD_SIZE set, each recording
// its own trace; open them together to see every rank on one timeline.
//
// With --slow-rank R, rank R's compute takes --slow-factor times longer: it reaches the all-reduce
// last every step, and every other rank's all-reduce kernel waits for it. That wait is what the
// session analyses find ("which rank is late").
//
// NCCL is loaded at run time (dlopen), so Warpline builds and runs its other workloads without it:
// WARPLINE_NCCL_LIBRARY, else libnccl.so.2 from the system, else the one PyTorch's wheels ship
// (nvidia-nccl-cu13 / -cu12 in a Python site-packages folder). The handful of NCCL entry points
// used are declared below from NCCL's stable C API (nccl.h, NCCL 2.x).
//
// Check: after the last step every rank's weights must equal w0 - lr * sum over steps and ranks of
// each rank's gradient, computed on the CPU.

#include "builtin.h"
#include "cudacheck.h"
#include "hostref.h"

#include <chrono>
#include <cstdlib>
#include <dlfcn.h>
#include <fstream>
#include <glob.h>
#include <thread>
#include <unistd.h>

namespace warpline::kernels {

namespace {

// --- NCCL's C API, the part used here (nccl.h) ----------------------------------------------
using ncclComm_t = struct ncclComm*;
struct ncclUniqueId {
    char internal[128]; // NCCL_UNIQUE_ID_BYTES
};
using ncclResult_t = int; // ncclSuccess = 0
constexpr int kNcclFloat32 = 7;
constexpr int kNcclSum = 0;

struct Nccl {
    void* handle = nullptr;
    std::string path;
    ncclResult_t (*getUniqueId)(ncclUniqueId*) = nullptr;
    ncclResult_t (*commInitRank)(ncclComm_t*, int, ncclUniqueId, int) = nullptr;
    ncclResult_t (*allReduce)(const void*, void*, size_t, int, int, ncclComm_t,
                              cudaStream_t) = nullptr;
    ncclResult_t (*commDestroy)(ncclComm_t) = nullptr;
    const char* (*getErrorString)(ncclResult_t) = nullptr;

    void check(ncclResult_t result, const char* what) const {
        if (result != 0)
            throw std::runtime_error(std::string(what) + " failed: " + getErrorString(result) +
                                     " (NCCL error " + std::to_string(result) + ")");
    }
};

std::vector<std::string> ncclCandidates() {
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("WARPLINE_NCCL_LIBRARY"))
        return {env};
    candidates.push_back("libnccl.so.2");
    for (const char* pattern :
         {"/opt/*/.venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
          "/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2",
          "/usr/lib/python3/dist-packages/nvidia/nccl/lib/libnccl.so.2",
          "/root/.local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2"}) {
        glob_t found{};
        if (::glob(pattern, 0, nullptr, &found) == 0) {
            for (size_t i = 0; i < found.gl_pathc; ++i)
                candidates.emplace_back(found.gl_pathv[i]);
        }
        ::globfree(&found);
    }
    return candidates;
}

const Nccl& loadNccl() {
    static Nccl nccl;
    if (nccl.handle)
        return nccl;
    std::string tried;
    for (const std::string& candidate : ncclCandidates()) {
        nccl.handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (nccl.handle) {
            nccl.path = candidate;
            break;
        }
        tried += (tried.empty() ? "" : ", ") + candidate;
    }
    if (!nccl.handle)
        throw std::runtime_error("NCCL not found (tried " + tried +
                                 "); install it (Debian: libnccl2 from non-free; pip: "
                                 "nvidia-nccl-cu13) or set WARPLINE_NCCL_LIBRARY to libnccl.so.2");
    auto symbol = [&](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(nccl.handle, name));
        if (!fn)
            throw std::runtime_error(nccl.path + " has no " + name + "; is it NCCL 2.x?");
    };
    symbol(nccl.getUniqueId, "ncclGetUniqueId");
    symbol(nccl.commInitRank, "ncclCommInitRank");
    symbol(nccl.allReduce, "ncclAllReduce");
    symbol(nccl.commDestroy, "ncclCommDestroy");
    symbol(nccl.getErrorString, "ncclGetErrorString");
    return nccl;
}

int envInteger(const char* name, int fallback) {
    const char* text = std::getenv(name);
    if (!text || !*text)
        return fallback;
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    if (*end != '\0' || value < 0 || value > 1 << 20)
        throw std::invalid_argument(std::string(name) + "=" + text + " is not a rank number");
    return static_cast<int>(value);
}

// Rank 0 creates the communicator's id and publishes it in WARPLINE_NCCL_ID_FILE (written under a
// temporary name, then renamed, so a reader never sees half of it); the others wait for it.
ncclUniqueId exchangeUniqueId(const Nccl& nccl, int rank, int worldSize) {
    ncclUniqueId id{};
    if (worldSize == 1) {
        nccl.check(nccl.getUniqueId(&id), "ncclGetUniqueId");
        return id;
    }
    const char* file = std::getenv("WARPLINE_NCCL_ID_FILE");
    if (!file || !*file)
        throw std::invalid_argument("WORLD_SIZE is " + std::to_string(worldSize) +
                                    " but WARPLINE_NCCL_ID_FILE is not set: start the job with "
                                    "warpline-record --workload allreduce, which sets both");
    const std::string path = file;
    if (rank == 0) {
        nccl.check(nccl.getUniqueId(&id), "ncclGetUniqueId");
        const std::string partial = path + ".partial";
        {
            std::ofstream out(partial, std::ios::binary | std::ios::trunc);
            out.write(id.internal, sizeof id.internal);
            if (!out)
                throw std::runtime_error("cannot write " + partial);
        }
        if (std::rename(partial.c_str(), path.c_str()) != 0)
            throw std::runtime_error("cannot rename " + partial + " to " + path);
        return id;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    for (;;) {
        std::ifstream in(path, std::ios::binary);
        if (in.read(id.internal, sizeof id.internal))
            return id;
        if (std::chrono::steady_clock::now() > deadline)
            throw std::runtime_error("rank 0 did not publish the NCCL id in " + path +
                                     " within 120 s");
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

constexpr int kBlock = 256;
constexpr float kLearningRate = 0.01f;

// The gradient each rank contributes at one step: small multiples of 1/128 so that sums over
// ranks and steps are exact in float and the CPU reference matches bit for bit.
__host__ __device__ inline float gradientValue(size_t i, int step, int rank) {
    return static_cast<float>((rank + 1) *
                              static_cast<int>((i * 7 + static_cast<size_t>(step)) % 13)) *
           (1.0f / 128.0f);
}

// "Forward and backward": `work` dependent multiply-adds per activation, the knob that sets how
// long a step computes.
__global__ void allreduceCompute(float* activations, size_t n, int work) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i < n) {
        float x = activations[i];
        for (int k = 0; k < work; ++k)
            x = x * 0.999f + 0.001f;
        activations[i] = x;
    }
}

// The gradient of this step; reads the activations so the compute cannot be skipped, without
// letting their value change the result (they stay within [0, 1]).
__global__ void allreduceGradient(float* gradient, const float* activations, size_t n,
                                  size_t activationCount, int step, int rank) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i < n) {
        const float a = activations[i % activationCount];
        gradient[i] = gradientValue(i, step, rank) + (a > 2.0f ? a : 0.0f);
    }
}

__global__ void allreduceApply(float* weights, const float* gradient, size_t n, float lr) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i < n)
        weights[i] -= lr * gradient[i];
}

void runAllReduce(const WorkloadArgs& args, const Progress& progress) {
    const size_t n = static_cast<size_t>(boundedInteger(args, "elements", 1, 1LL << 30));
    const int steps = static_cast<int>(boundedInteger(args, "steps", 1, 100000));
    const int layers = static_cast<int>(boundedInteger(args, "layers", 1, 1000));
    const int work = static_cast<int>(boundedInteger(args, "work", 1, 1 << 20));
    const int slowRank = static_cast<int>(boundedInteger(args, "slow-rank", -1, 1 << 20));
    const double slowFactor = boundedReal(args, "slow-factor", 1.0, 1000.0);

    const int worldSize = envInteger("WORLD_SIZE", 1);
    const int rank = envInteger("RANK", 0);
    const int localRank = envInteger("LOCAL_RANK", rank);
    if (worldSize < 1 || rank >= worldSize)
        throw std::invalid_argument("RANK " + std::to_string(rank) + " is outside WORLD_SIZE " +
                                    std::to_string(worldSize));
    int devices = 0;
    WL_CUDA(cudaGetDeviceCount(&devices));
    if (localRank >= devices)
        throw std::invalid_argument("LOCAL_RANK " + std::to_string(localRank) + " but only " +
                                    std::to_string(devices) + " GPU(s) are visible");
    WL_CUDA(cudaSetDevice(localRank));
    const Nccl& nccl = loadNccl();
    progress("rank " + std::to_string(rank) + " of " + std::to_string(worldSize) + " on GPU " +
             std::to_string(localRank) + ", NCCL from " + nccl.path);

    const int myWork = rank == slowRank ? static_cast<int>(work * slowFactor) : work;
    const size_t activationCount = std::min<size_t>(n, size_t(1) << 22);
    DeviceBuffer<float> weights(n), gradient(n), activations(activationCount);
    const std::vector<float> w0 = uniformVector(n, 21, -1.0f, 1.0f);
    Stream compute("compute");
    Stream communication("all-reduce");
    Event gradientReady, reduced;

    ncclComm_t comm = nullptr;
    {
        NvtxRange range("setup");
        weights.upload(w0);
        WL_CUDA(cudaMemset(activations.get(), 0, activations.bytes()));
        const ncclUniqueId id = exchangeUniqueId(nccl, rank, worldSize);
        nccl.check(nccl.commInitRank(&comm, worldSize, id, rank), "ncclCommInitRank");
        WL_CUDA(cudaDeviceSynchronize());
    }
    struct CommGuard {
        const Nccl& nccl;
        ncclComm_t comm;
        ~CommGuard() { nccl.commDestroy(comm); }
    } guard{nccl, comm};

    const unsigned int grid = blocksFor(n, kBlock);
    const unsigned int activationGrid = blocksFor(activationCount, kBlock);
    float loss = 0.0f;
    CpuTimer timer;
    for (int s = 0; s < steps; ++s) {
        NvtxRange step("step " + std::to_string(s));
        {
            NvtxRange range("forward+backward");
            for (int l = 0; l < layers; ++l) {
                allreduceCompute<<<activationGrid, kBlock, 0, compute.get()>>>(
                    activations.get(), activationCount, myWork);
                WL_CHECK_LAUNCH("allreduceCompute");
            }
            allreduceGradient<<<grid, kBlock, 0, compute.get()>>>(gradient.get(), activations.get(),
                                                                  n, activationCount, s, rank);
            WL_CHECK_LAUNCH("allreduceGradient");
            WL_CUDA(cudaEventRecord(gradientReady.get(), compute.get()));
        }
        {
            NvtxRange range("all-reduce");
            WL_CUDA(cudaStreamWaitEvent(communication.get(), gradientReady.get(), 0));
            nccl.check(nccl.allReduce(gradient.get(), gradient.get(), n, kNcclFloat32, kNcclSum,
                                      comm, communication.get()),
                       "ncclAllReduce");
            WL_CUDA(cudaEventRecord(reduced.get(), communication.get()));
        }
        {
            NvtxRange range("optimizer");
            WL_CUDA(cudaStreamWaitEvent(compute.get(), reduced.get(), 0));
            allreduceApply<<<grid, kBlock, 0, compute.get()>>>(weights.get(), gradient.get(), n,
                                                               kLearningRate);
            WL_CHECK_LAUNCH("allreduceApply");
        }
        {
            NvtxRange range("loss.item()");
            WL_CUDA(cudaMemcpyAsync(&loss, weights.get(), sizeof loss, cudaMemcpyDeviceToHost,
                                    compute.get()));
            WL_CUDA(cudaStreamSynchronize(compute.get()));
        }
        if ((s + 1) % std::max(1, steps / 4) == 0)
            progress("rank " + std::to_string(rank) + ": step " + std::to_string(s + 1) + "/" +
                     std::to_string(steps));
    }
    progress("rank " + std::to_string(rank) + ": " + std::to_string(steps) + " steps in " +
             formatMs(timer.elapsedMs()) + (rank == slowRank ? " (the slowed rank)" : ""));

    NvtxRange range("check");
    const std::vector<float> got = weights.download();
    // Every rank's weights: w0 - lr * sum over steps of the summed gradient of all ranks.
    const size_t stride = std::max<size_t>(1, n / (size_t(1) << 20));
    std::vector<float> gotSample, refSample;
    for (size_t i = 0; i < n; i += stride) {
        float w = w0[i];
        for (int s = 0; s < steps; ++s) {
            float sum = 0.0f;
            for (int r = 0; r < worldSize; ++r)
                sum += gradientValue(i, s, r);
            w -= kLearningRate * sum;
        }
        gotSample.push_back(got[i]);
        refSample.push_back(w);
    }
    expectClose("allreduce", "check", "weights after " + std::to_string(steps) + " steps",
                gotSample, refSample, gotSample.size(), 1e-5, 1.0);
}

} // namespace

Workload allReduceWorkload() {
    Workload w{"allreduce",
               "one process per GPU: compute, then an NCCL all-reduce of the gradient each step; "
               "--slow-rank makes one rank late so the others wait in the all-reduce",
               {
                   {"gpus", "0", "processes (one per GPU) to start; 0: every visible GPU"},
                   {"elements", "16777216", "gradient floats all-reduced each step (64 MiB)"},
                   {"steps", "20", "training steps"},
                   {"layers", "4", "compute kernels per step"},
                   {"work", "2000", "multiply-adds per activation per compute kernel"},
                   {"slow-rank", "-1", "rank whose compute is slowed on purpose; -1: none"},
                   {"slow-factor", "3.0", "how much longer the slowed rank computes"},
               },
               [](const WorkloadArgs& args, const ProgressFn& fn) {
                   return runGuarded("allreduce", [&] { runAllReduce(args, Progress(fn)); });
               }};
    w.onePerGpu = true;
    return w;
}

} // namespace warpline::kernels
