// Radio-telescope FX correlator (64 dual-polarisation antennas = 128 inputs, 256 channels):
// per block of 256 spectra the int8 voltages are staged in a pinned host buffer, uploaded,
// channelised by a DFT-as-GEMM (cublasCgemm), reordered, and cross-multiplied per channel
// (cublasCgemmStridedBatched, accumulated into the integration's visibilities).
//
// The planted problem: the block loop allocates its staging memory afresh for every block, as
// the first prototype did: cudaMallocHost for the 16.8 MB pinned input buffer and cudaMalloc for
// the four device buffers (16.8 MB raw + 3 x 67 MB complex), freed again (cudaFreeHost, cudaFree)
// once the block's results are in. The GPU work per block is about a millisecond; page-locking
// and mapping the buffers costs several times that. Each integration dump (every 8 blocks) also
// allocates its pinned output buffer per dump.
// Secondary: the host copies each block from the capture ring into the pinned buffer (memcpy),
// a stream synchronize per block before the frees, the 33.5 MB visibility download per dump and
// the memset of the accumulator.
// Steps: 4 warm-up blocks, then 160 timed blocks (20 integrations of 8); NVTX range "block" per
// block and "dump" per integration dump.
// Build: nvcc -O2 -o blind16_fx_correlator_pinned_per_block blind16_fx_correlator_pinned_per_block.cu -lcublas
#include <cublas_v2.h>
#include <cuComplex.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                          \
    do {                                                                               \
        cudaError_t e_ = (x);                                                          \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)
#define CB(x)                                                                          \
    do {                                                                               \
        cublasStatus_t s_ = (x);                                                       \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                             \
            fprintf(stderr, "%s:%d %s: cublas status %d\n", __FILE__, __LINE__, #x, (int)s_); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

static const int INPUTS = 128, NT = 256, CHAN = 256;
static const int WARMUP = 4, BLOCKS = 160, DUMP_EVERY = 8;
static const size_t SAMPLES = (size_t)INPUTS * NT * CHAN;           // complex samples per block
static const size_t RAW_BYTES = SAMPLES * 2;                          // int8 re, int8 im
static const size_t CPLX_BYTES = SAMPLES * sizeof(cuFloatComplex);
static const size_t VIS = (size_t)CHAN * INPUTS * INPUTS;
static const size_t RING_BLOCKS = 4;

using clk = std::chrono::steady_clock;
static double secs(clk::time_point a, clk::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

// raw[(i*NT + t)*CHAN + c] (int8 pairs) -> A column-major CHAN x (INPUTS*NT), with a Hann window.
__global__ void unpack(const int8_t* __restrict__ raw, cuFloatComplex* __restrict__ a) {
    size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (k >= SAMPLES) return;
    int c = (int)(k % CHAN);
    float w = 0.5f - 0.5f * __cosf(6.2831853f * c / CHAN);
    a[k] = make_cuFloatComplex(w * raw[2 * k], w * raw[2 * k + 1]);
}

// S (CHAN x INPUTS*NT, element (c, i*NT+t)) -> Vt[c] column-major NT x INPUTS.
__global__ void reorder(const cuFloatComplex* __restrict__ s, cuFloatComplex* __restrict__ vt) {
    size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (k >= SAMPLES) return;
    int c = (int)(k % CHAN);
    size_t col = k / CHAN;          // i*NT + t
    int t = (int)(col % NT);
    int i = (int)(col / NT);
    vt[(size_t)c * NT * INPUTS + (size_t)i * NT + t] = s[k];
}

__global__ void dft_matrix(cuFloatComplex* f) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= CHAN * CHAN) return;
    int r = k % CHAN, c = k / CHAN;
    float ph = -6.2831853f * (float)((r * c) % CHAN) / CHAN;
    f[k] = make_cuFloatComplex(cosf(ph), sinf(ph));
}

int main() {
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    cublasHandle_t h;
    CB(cublasCreate(&h));
    CB(cublasSetStream(h, st));

    // Capture ring (pageable): the digitiser's output, noise plus a periodic impulse per input.
    std::vector<int8_t> ring(RAW_BYTES * RING_BLOCKS);
    uint32_t lcg = 12345u;
    for (size_t k = 0; k < ring.size(); k += 2) {
        lcg = lcg * 1664525u + 1013904223u;
        size_t s = k / 2;
        int c = (int)(s % CHAN);
        int tone = (c == 37 || c == 150) ? 20 : 0;
        ring[k] = (int8_t)(((lcg >> 24) & 31) - 16 + tone);
        ring[k + 1] = (int8_t)(((lcg >> 16) & 31) - 16);
    }

    cuFloatComplex *d_f, *d_vis;
    CK(cudaMalloc(&d_f, sizeof(cuFloatComplex) * CHAN * CHAN));
    CK(cudaMalloc(&d_vis, sizeof(cuFloatComplex) * VIS));
    dft_matrix<<<(CHAN * CHAN + 255) / 256, 256, 0, st>>>(d_f);
    CK(cudaMemsetAsync(d_vis, 0, sizeof(cuFloatComplex) * VIS, st));

    const cuFloatComplex one = make_cuFloatComplex(1.f, 0.f), zero = make_cuFloatComplex(0.f, 0.f);
    const int threads = 256;
    const unsigned grid = (unsigned)((SAMPLES + threads - 1) / threads);

    double pinned_s = 0, device_alloc_s = 0, fill_s = 0, dump_s = 0;
    double power_37 = 0, power_other = 0;
    clk::time_point loop_t0 = clk::now();
    for (int b = 0; b < WARMUP + BLOCKS; ++b) {
        if (b == WARMUP) {
            CK(cudaStreamSynchronize(st));
            pinned_s = device_alloc_s = fill_s = dump_s = 0;
            loop_t0 = clk::now();
        }
        nvtxRangePushA("block");
        clk::time_point t0 = clk::now();
        int8_t* h_raw = nullptr;
        CK(cudaMallocHost(&h_raw, RAW_BYTES));
        clk::time_point t1 = clk::now();
        std::memcpy(h_raw, ring.data() + (b % RING_BLOCKS) * RAW_BYTES, RAW_BYTES);
        clk::time_point t2 = clk::now();
        int8_t* d_raw;
        cuFloatComplex *d_a, *d_s, *d_vt;
        CK(cudaMalloc(&d_raw, RAW_BYTES));
        CK(cudaMalloc(&d_a, CPLX_BYTES));
        CK(cudaMalloc(&d_s, CPLX_BYTES));
        CK(cudaMalloc(&d_vt, CPLX_BYTES));
        clk::time_point t3 = clk::now();
        CK(cudaMemcpyAsync(d_raw, h_raw, RAW_BYTES, cudaMemcpyHostToDevice, st));
        unpack<<<grid, threads, 0, st>>>(d_raw, d_a);
        // F step: S = F * A  (CHAN x CHAN) * (CHAN x INPUTS*NT)
        CB(cublasCgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, CHAN, INPUTS * NT, CHAN, &one, d_f, CHAN, d_a,
                       CHAN, &zero, d_s, CHAN));
        reorder<<<grid, threads, 0, st>>>(d_s, d_vt);
        // X step: R_c += Vt_c^H * Vt_c for every channel c (INPUTS x INPUTS, k = NT)
        CB(cublasCgemmStridedBatched(h, CUBLAS_OP_C, CUBLAS_OP_N, INPUTS, INPUTS, NT, &one, d_vt, NT,
                                     (long long)NT * INPUTS, d_vt, NT, (long long)NT * INPUTS, &one,
                                     d_vis, INPUTS, (long long)INPUTS * INPUTS, CHAN));
        CK(cudaStreamSynchronize(st));  // the block is done: release its buffers
        clk::time_point t4 = clk::now();
        CK(cudaFree(d_raw));
        CK(cudaFree(d_a));
        CK(cudaFree(d_s));
        CK(cudaFree(d_vt));
        clk::time_point t5 = clk::now();
        CK(cudaFreeHost(h_raw));
        clk::time_point t6 = clk::now();
        nvtxRangePop();
        pinned_s += secs(t0, t1) + secs(t5, t6);
        device_alloc_s += secs(t2, t3) + secs(t4, t5);
        fill_s += secs(t1, t2);

        if ((b + 1) % DUMP_EVERY == 0) {
            nvtxRangePushA("dump");
            clk::time_point d0 = clk::now();
            cuFloatComplex* h_vis = nullptr;
            CK(cudaMallocHost(&h_vis, sizeof(cuFloatComplex) * VIS));
            clk::time_point d1 = clk::now();
            CK(cudaMemcpyAsync(h_vis, d_vis, sizeof(cuFloatComplex) * VIS, cudaMemcpyDeviceToHost, st));
            CK(cudaMemsetAsync(d_vis, 0, sizeof(cuFloatComplex) * VIS, st));
            CK(cudaStreamSynchronize(st));
            // Autocorrelation power of input 0 per channel (host check of the impulse).
            double p37 = 0, pother = 0;
            for (int c = 0; c < CHAN; ++c) {
                float p = cuCrealf(h_vis[(size_t)c * INPUTS * INPUTS]);
                if (c == 37) p37 += p; else pother += p / (CHAN - 1);
            }
            power_37 = p37;
            power_other = pother;
            clk::time_point d2 = clk::now();
            CK(cudaFreeHost(h_vis));
            clk::time_point d3 = clk::now();
            nvtxRangePop();
            pinned_s += secs(d0, d1) + secs(d2, d3);
            dump_s += secs(d1, d2);
            if (b >= WARMUP && ((b + 1) / DUMP_EVERY) % 5 == 0)
                printf("integration %d: impulse/noise power %.2f\n", (b + 1) / DUMP_EVERY,
                       power_other > 0 ? power_37 / power_other : 0.0);
        }
    }
    CK(cudaStreamSynchronize(st));
    double loop_s = secs(loop_t0, clk::now());
    CB(cublasDestroy(h));
    CK(cudaFree(d_f));
    CK(cudaFree(d_vis));
    CK(cudaStreamDestroy(st));
    double alloc = pinned_s + device_alloc_s;
    printf("GROUND TRUTH: allocation calls %.2f s of %.2f s loop (%.0f%%): pinned cudaMallocHost/"
           "cudaFreeHost %.2f s, device cudaMalloc/cudaFree %.2f s; host fill %.2f s, dumps %.2f s; "
           "%d blocks\n",
           alloc, loop_s, 100 * alloc / loop_s, pinned_s, device_alloc_s, fill_s, dump_s, BLOCKS);
    return 0;
}
