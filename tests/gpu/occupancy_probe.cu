// Probe of theoretical occupancy (issue: GPU hardware metrics): CUDA's own answer, to compare with
// Warpline's calculator (model/analyses/occupancy.h).
//   occupancy_probe [DEVICE] > docs/probes/occupancy-h100.txt
// Prints the device's limits, then for kernels compiled with different register pressure, static
// shared memory and launch bounds, over block sizes and dynamic shared memory sizes, the inputs
// (cudaFuncGetAttributes: numRegs, sharedSizeBytes) and the resident blocks per SM that
// cudaOccupancyMaxActiveBlocksPerMultiprocessor gives. One record per line, KEY=VALUE fields; a
// device's name comes last (it has spaces). tst_occupancy reads the file and checks every line.

#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <vector>

namespace {

__global__ void light(const float* in, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[i] * 2.0f + 1.0f;
}

// N values live at once: register pressure grows with N (until launch bounds cap it and spill).
template <int N> __device__ float keepLive(const float* in, int n) {
    float v[N];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
    for (int k = 0; k < N; ++k)
        v[k] = in[(i + k * 97) % n];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
#pragma unroll
        for (int k = 0; k < N; ++k)
            v[k] = v[k] * v[(k + 1) % N] + v[(k + 7) % N];
    }
    float s = 0;
#pragma unroll
    for (int k = 0; k < N; ++k)
        s += v[k];
    return s;
}

__global__ void regs32(const float* in, float* out, int n) {
    out[(blockIdx.x * blockDim.x + threadIdx.x) % n] = keepLive<24>(in, n);
}

__global__ void regs64(const float* in, float* out, int n) {
    out[(blockIdx.x * blockDim.x + threadIdx.x) % n] = keepLive<56>(in, n);
}

__global__ void regs128(const float* in, float* out, int n) {
    out[(blockIdx.x * blockDim.x + threadIdx.x) % n] = keepLive<120>(in, n);
}

// Launch bounds cap registers: 65536 / (256 threads * 3 blocks) = 85, allocated as 80.
__global__ void __launch_bounds__(256, 3) bounded(const float* in, float* out, int n) {
    out[(blockIdx.x * blockDim.x + threadIdx.x) % n] = keepLive<120>(in, n);
}

template <int Bytes> __global__ void staticShared(const float* in, float* out, int n) {
    __shared__ float tile[Bytes / sizeof(float)];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = threadIdx.x; k < Bytes / int(sizeof(float)); k += blockDim.x)
        tile[k] = in[(i + k) % n];
    __syncthreads();
    out[i % n] = tile[(threadIdx.x * 13) % (Bytes / sizeof(float))];
}

__global__ void dynamicShared(const float* in, float* out, int n) {
    extern __shared__ float tile[];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = in[i % n];
    __syncthreads();
    out[i % n] = tile[(threadIdx.x * 13) % blockDim.x];
}

struct Kernel {
    const char* name;
    const void* function;
};

bool check(cudaError_t e, const char* what) {
    if (e == cudaSuccess)
        return true;
    std::printf("# FAIL %s: %s\n", what, cudaGetErrorString(e));
    return false;
}

} // namespace

int main(int argc, char** argv) {
    const int device = argc > 1 ? std::atoi(argv[1]) : 0;
    if (!check(cudaSetDevice(device), "cudaSetDevice"))
        return 1;
    cudaDeviceProp p{};
    if (!check(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties"))
        return 1;
    std::printf("# occupancy_probe: cudaOccupancyMaxActiveBlocksPerMultiprocessor, default "
                "carveout; CUDA runtime %d\n",
                CUDART_VERSION);
    std::printf("device cc=%d.%d warpSize=%d maxThreadsPerBlock=%d maxThreadsPerSm=%d "
                "maxBlocksPerSm=%d regsPerSm=%d regsPerBlock=%d smemPerSm=%zu smemPerBlock=%zu "
                "smemPerBlockOptin=%zu reservedSmemPerBlock=%zu smCount=%d name=%s\n",
                p.major, p.minor, p.warpSize, p.maxThreadsPerBlock, p.maxThreadsPerMultiProcessor,
                p.maxBlocksPerMultiProcessor, p.regsPerMultiprocessor, p.regsPerBlock,
                p.sharedMemPerMultiprocessor, p.sharedMemPerBlock, p.sharedMemPerBlockOptin,
                p.reservedSharedMemPerBlock, p.multiProcessorCount, p.name);

    const std::vector<Kernel> kernels = {
        {"light", reinterpret_cast<const void*>(light)},
        {"regs32", reinterpret_cast<const void*>(regs32)},
        {"regs64", reinterpret_cast<const void*>(regs64)},
        {"regs128", reinterpret_cast<const void*>(regs128)},
        {"bounded", reinterpret_cast<const void*>(bounded)},
        {"static12k", reinterpret_cast<const void*>(staticShared<12 * 1024>)},
        {"static40k", reinterpret_cast<const void*>(staticShared<40 * 1024>)},
        {"dynamic", reinterpret_cast<const void*>(dynamicShared)},
    };
    const int blockSizes[] = {32, 64, 96, 100, 128, 192, 256, 384, 512, 640, 768, 1024};
    const size_t dynamicSizes[] = {0,         1024,      8 * 1024,   20 * 1024,  47 * 1024,
                                   48 * 1024, 64 * 1024, 100 * 1024, 150 * 1024, 226 * 1024};
    int lines = 0;
    for (const Kernel& k : kernels) {
        cudaFuncAttributes a{};
        if (!check(cudaFuncGetAttributes(&a, k.function), k.name))
            continue;
        // Opt in to the most dynamic shared memory this kernel can have.
        const int optin = static_cast<int>(p.sharedMemPerBlockOptin - a.sharedSizeBytes);
        check(cudaFuncSetAttribute(k.function, cudaFuncAttributeMaxDynamicSharedMemorySize, optin),
              "cudaFuncSetAttribute");
        for (const int block : blockSizes) {
            if (block > a.maxThreadsPerBlock)
                continue;
            for (const size_t dynamic : dynamicSizes) {
                if (dynamic > static_cast<size_t>(optin))
                    continue;
                int blocks = -1;
                if (!check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k.function, block,
                                                                         dynamic),
                           "cudaOccupancyMaxActiveBlocksPerMultiprocessor"))
                    continue;
                std::printf("launch kernel=%s block=%d dynSmem=%zu numRegs=%d staticSmem=%zu "
                            "maxThreadsPerBlock=%d blocks=%d\n",
                            k.name, block, dynamic, a.numRegs, a.sharedSizeBytes,
                            a.maxThreadsPerBlock, blocks);
                ++lines;
            }
        }
    }
    std::printf("# %d launches\n", lines);
    return lines > 0 ? 0 : 1;
}
