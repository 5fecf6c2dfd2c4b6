// Corpus: a multi-threaded C++ program: 4 threads, each with its own stream, launch-bound.
//
// Planted: launch cost. Each thread runs 200 iterations of 40 tiny kernels (a 4096-element
// saxpy chain) on its own non-blocking stream and synchronizes its stream at the end of each
// iteration. The kernels take ~2 us, their launches longer, so the GPU idles although four
// threads feed it. No NVTX. Advice that helps: fewer, larger kernels; a CUDA graph per iteration.
//   nvcc -O2 -o threads threads.cu
#include <cstdio>
#include <thread>
#include <vector>

__global__ void saxpy(float a, const float* x, float* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}

static bool ok(cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
        std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
        return false;
    }
    return true;
}

int main() {
    constexpr int kThreads = 4, kIterations = 200, kKernels = 40, n = 4096;
    std::vector<int> failed(kThreads, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([t, &failed] {
            cudaStream_t s;
            float *x, *y;
            if (!ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream") ||
                !ok(cudaMalloc(&x, n * sizeof(float)), "malloc") ||
                !ok(cudaMalloc(&y, n * sizeof(float)), "malloc")) {
                failed[t] = 1;
                return;
            }
            cudaMemsetAsync(x, 0, n * sizeof(float), s);
            cudaMemsetAsync(y, 0, n * sizeof(float), s);
            for (int it = 0; it < kIterations; ++it) {
                for (int k = 0; k < kKernels; ++k)
                    saxpy<<<(n + 255) / 256, 256, 0, s>>>(1.0001f, x, y, n);
                if (!ok(cudaStreamSynchronize(s), "sync")) {
                    failed[t] = 1;
                    return;
                }
            }
            cudaFree(x);
            cudaFree(y);
            cudaStreamDestroy(s);
        });
    }
    for (std::thread& th : threads)
        th.join();
    for (int f : failed)
        if (f)
            return 1;
    std::printf("done: %d threads x %d iterations x %d kernels\n", kThreads, kIterations, kKernels);
    return 0;
}
