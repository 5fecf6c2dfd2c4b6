// Corpus (blind, batch 15): a Monte-Carlo value-at-risk engine that brings every scenario P&L
// matrix back to the host with a synchronous cudaMemcpy into pageable memory. Expected verdict:
// tests/corpus/BLIND15_EXPECTED.md.
//
// Program: the overnight risk run of a trading desk. The book has 2,048 positions exposed to 64
// risk factors (rates, FX, equity indices, vol surfaces). Scenarios are priced in batches of 65,536
// on the GPU, on two non-blocking streams that alternate, so that the GPU can price batch b while
// the host stores batch b-1 (the pipeline the code was written for):
//   1. gen_normals: independent standard normals for the batch (counter-based hash + Box-Muller);
//   2. cublasSgemm: correlated factor moves = normals x chol(correlation)^T, scaled by the vols;
//   3. cublasSgemm: linear P&L of every position in every scenario = moves x exposures^T
//      (65,536 x 2,048 fp32, 512 MiB);
//   4. delta_gamma: the option positions' second-order term, 0.5 x gamma x move^2 on their factor;
// After queueing batch b, the host takes the previous batch, b-1: cudaStreamSynchronize on its
// stream, then a cudaMemcpy (not Async) of its whole P&L matrix into a std::vector, the "scenario
// store" that the aggregation service reads (per-position scenario P&L vectors are kept for the
// desk's marginal VaR). The host then reads 1 value in 4,096 for a running check of the worst
// loss. The std::vector is pageable, so the copy is staged through the driver's bounce buffer at
// pageable speed, and cudaMemcpy returns only when it is done: the host is blocked in it for the
// whole transfer, the GPU finishes batch b in well under a millisecond and then idles, and batch
// b+1 cannot be queued until the copy returns.
// NVTX (nvtx3, header only): one "price_batch" range per batch. 2 warm-up batches, then 120.
// The last line printed gives the seconds inside cudaMemcpy and inside cudaStreamSynchronize,
// against the loop's total, with the bytes copied and the batch count.
//   nvcc -O2 -o blind15-var-scenario-sync-d2h blind15_var_scenario_sync_d2h.cu -lcublas
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr int kScenarios = 65536;     // per batch
constexpr int kFactors = 64;
constexpr int kPositions = 2048;
constexpr int kOptions = 512;         // the first kOptions positions carry gamma
constexpr int kStreams = 2;
constexpr int kWarmup = 2;
constexpr int kBatches = 120;
constexpr size_t kPnlElems = static_cast<size_t>(kScenarios) * kPositions;

#define CHECK(call)                                                                          \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) {                                                             \
            std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call,                \
                         cudaGetErrorString(e_));                                            \
            std::exit(1);                                                                    \
        }                                                                                    \
    } while (0)
#define CHECK_BLAS(call)                                                                     \
    do {                                                                                     \
        cublasStatus_t s_ = (call);                                                          \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                   \
            std::fprintf(stderr, "%s:%d %s: cuBLAS status %d\n", __FILE__, __LINE__, #call,  \
                         static_cast<int>(s_));                                              \
            std::exit(1);                                                                    \
        }                                                                                    \
    } while (0)

__device__ __forceinline__ uint32_t mix32(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return static_cast<uint32_t>(x);
}

// Standard normals, column-major kScenarios x kFactors, from (batch, index) counters.
__global__ void gen_normals(float* __restrict__ z, uint64_t batch) {
    const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const size_t n = static_cast<size_t>(kScenarios) * kFactors;
    if (2 * i >= n) return;
    const uint64_t key = (batch << 40) ^ i;
    const float u1 = (mix32(key * 2 + 1) + 1.0f) * 2.3283064e-10f;
    const float u2 = mix32(key * 2 + 2) * 2.3283064e-10f;
    const float r = sqrtf(-2.0f * logf(u1));
    float s, c;
    sincospif(2.0f * u2, &s, &c);
    z[2 * i] = r * c;
    if (2 * i + 1 < n) z[2 * i + 1] = r * s;
}

// pnl (column-major kScenarios x kPositions) += 0.5 * gamma[p] * move[s, factor[p]]^2 for the
// option positions p < kOptions.
__global__ void delta_gamma(float* __restrict__ pnl, const float* __restrict__ moves,
                            const float* __restrict__ gamma, const int* __restrict__ factor) {
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    const int p = blockIdx.y;
    if (s >= kScenarios) return;
    const float m = moves[static_cast<size_t>(factor[p]) * kScenarios + s];
    pnl[static_cast<size_t>(p) * kScenarios + s] += 0.5f * gamma[p] * m * m;
}

// Cholesky factor (lower, column-major) of an equicorrelated block structure: 8 blocks of 8
// factors, correlation 0.6 inside a block and 0.2 across, computed on the host.
std::vector<float> factor_loadings(std::vector<float>& vols) {
    std::vector<double> c(kFactors * kFactors);
    for (int i = 0; i < kFactors; ++i)
        for (int j = 0; j < kFactors; ++j)
            c[i + j * kFactors] = i == j ? 1.0 : (i / 8 == j / 8 ? 0.6 : 0.2);
    std::vector<double> l(kFactors * kFactors, 0.0);
    for (int j = 0; j < kFactors; ++j) {
        double d = c[j + j * kFactors];
        for (int k = 0; k < j; ++k) d -= l[j + k * kFactors] * l[j + k * kFactors];
        l[j + j * kFactors] = std::sqrt(d);
        for (int i = j + 1; i < kFactors; ++i) {
            double v = c[i + j * kFactors];
            for (int k = 0; k < j; ++k) v -= l[i + k * kFactors] * l[j + k * kFactors];
            l[i + j * kFactors] = v / l[j + j * kFactors];
        }
    }
    vols.resize(kFactors);
    for (int i = 0; i < kFactors; ++i) vols[i] = 0.004f + 0.0005f * (i % 13);
    // B = diag(vols) * L, so that moves = Z * B^T.
    std::vector<float> b(kFactors * kFactors);
    for (int i = 0; i < kFactors; ++i)
        for (int j = 0; j < kFactors; ++j)
            b[i + j * kFactors] = static_cast<float>(vols[i] * l[i + j * kFactors]);
    return b;
}

}  // namespace

int main() {
    using clock = std::chrono::steady_clock;
    auto seconds = [](clock::time_point a, clock::time_point b) {
        return std::chrono::duration<double>(b - a).count();
    };

    std::vector<float> vols;
    const std::vector<float> loadings = factor_loadings(vols);
    // Exposures (column-major kPositions x kFactors): each position loads on 1-4 factors.
    std::vector<float> exposures(static_cast<size_t>(kPositions) * kFactors, 0.f);
    std::vector<float> gamma(kOptions);
    std::vector<int> gamma_factor(kOptions);
    uint64_t lcg = 0x2545F4914F6CDD1Dull;
    auto uniform = [&lcg]() {
        lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<float>(lcg >> 40) / static_cast<float>(1 << 24);
    };
    for (int p = 0; p < kPositions; ++p) {
        const int n = 1 + static_cast<int>(uniform() * 4);
        for (int k = 0; k < n; ++k) {
            const int f = static_cast<int>(uniform() * kFactors) % kFactors;
            exposures[p + static_cast<size_t>(f) * kPositions] += (uniform() - 0.45f) * 2e6f;
        }
        if (p < kOptions) {
            gamma[p] = (uniform() - 0.5f) * 4e8f;
            gamma_factor[p] = static_cast<int>(uniform() * kFactors) % kFactors;
        }
    }

    float *d_loadings, *d_exposures, *d_gamma;
    int* d_gamma_factor;
    CHECK(cudaMalloc(&d_loadings, loadings.size() * sizeof(float)));
    CHECK(cudaMalloc(&d_exposures, exposures.size() * sizeof(float)));
    CHECK(cudaMalloc(&d_gamma, gamma.size() * sizeof(float)));
    CHECK(cudaMalloc(&d_gamma_factor, gamma_factor.size() * sizeof(int)));
    CHECK(cudaMemcpy(d_loadings, loadings.data(), loadings.size() * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_exposures, exposures.data(), exposures.size() * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_gamma, gamma.data(), gamma.size() * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_gamma_factor, gamma_factor.data(), gamma_factor.size() * sizeof(int),
                     cudaMemcpyHostToDevice));

    cublasHandle_t blas;
    CHECK_BLAS(cublasCreate(&blas));
    cudaStream_t streams[kStreams];
    float *d_normals[kStreams], *d_moves[kStreams], *d_pnl[kStreams];
    for (int s = 0; s < kStreams; ++s) {
        CHECK(cudaStreamCreateWithFlags(&streams[s], cudaStreamNonBlocking));
        CHECK(cudaMalloc(&d_normals[s], static_cast<size_t>(kScenarios) * kFactors * sizeof(float)));
        CHECK(cudaMalloc(&d_moves[s], static_cast<size_t>(kScenarios) * kFactors * sizeof(float)));
        CHECK(cudaMalloc(&d_pnl[s], kPnlElems * sizeof(float)));
    }
    // The scenario store: pageable host memory, as std::vector gives it.
    std::vector<float> store(kPnlElems);

    double memcpy_s = 0, sync_s = 0, bytes = 0;
    double worst = 0, check_sum = 0;
    long checked = 0;

    auto enqueue = [&](int batch) {
        const int s = batch % kStreams;
        const float one = 1.f, zero = 0.f;
        const size_t pairs = static_cast<size_t>(kScenarios) * kFactors / 2;
        gen_normals<<<static_cast<unsigned>((pairs + 255) / 256), 256, 0, streams[s]>>>(d_normals[s], batch);
        CHECK(cudaGetLastError());
        CHECK_BLAS(cublasSetStream(blas, streams[s]));
        CHECK_BLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, kScenarios, kFactors, kFactors, &one,
                               d_normals[s], kScenarios, d_loadings, kFactors, &zero, d_moves[s], kScenarios));
        CHECK_BLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, kScenarios, kPositions, kFactors, &one,
                               d_moves[s], kScenarios, d_exposures, kPositions, &zero, d_pnl[s], kScenarios));
        delta_gamma<<<dim3((kScenarios + 255) / 256, kOptions), 256, 0, streams[s]>>>(d_pnl[s], d_moves[s],
                                                                                    d_gamma, d_gamma_factor);
        CHECK(cudaGetLastError());
    };
    // Takes a finished batch into the store and folds a sample of it into the running check.
    auto store_batch = [&](int batch, bool timed) {
        const int s = batch % kStreams;
        const auto w0 = clock::now();
        CHECK(cudaStreamSynchronize(streams[s]));
        const auto c0 = clock::now();
        CHECK(cudaMemcpy(store.data(), d_pnl[s], kPnlElems * sizeof(float), cudaMemcpyDeviceToHost));
        const auto c1 = clock::now();
        if (timed) {
            sync_s += seconds(w0, c0);
            memcpy_s += seconds(c0, c1);
            bytes += kPnlElems * sizeof(float);
        }
        for (size_t i = 0; i < kPnlElems; i += 4096) {
            check_sum += store[i];
            worst = std::min(worst, static_cast<double>(store[i]));
            ++checked;
        }
    };

    // Warm-up: cuBLAS's first calls and the module load.
    for (int b = 0; b < kWarmup; ++b) {
        enqueue(b);
        store_batch(b, false);
    }
    CHECK(cudaDeviceSynchronize());

    const auto start = clock::now();
    for (int b = 0; b < kBatches; ++b) {
        const int batch = kWarmup + b;
        nvtxRangePushA("price_batch");
        enqueue(batch);
        if (b > 0) store_batch(batch - 1, true);
        nvtxRangePop();
    }
    store_batch(kWarmup + kBatches - 1, true);
    CHECK(cudaDeviceSynchronize());
    const double loop_s = seconds(start, clock::now());

    std::printf("scenarios %d, sampled P&L mean %.1f, worst sampled loss %.1f\n", kBatches * kScenarios,
                check_sum / checked, worst);
    std::printf("copies: cudaMemcpy device-to-host %.3f s for %.1f GB (%.1f GB/s into pageable memory), "
                "cudaStreamSynchronize %.3f s, of loop %.3f s (%.1f%% in cudaMemcpy); %d batches\n",
                memcpy_s, bytes / 1e9, bytes / 1e9 / memcpy_s, sync_s, loop_s, 100 * memcpy_s / loop_s,
                kBatches);

    for (int s = 0; s < kStreams; ++s) {
        cudaFree(d_normals[s]);
        cudaFree(d_moves[s]);
        cudaFree(d_pnl[s]);
        cudaStreamDestroy(streams[s]);
    }
    cudaFree(d_loadings);
    cudaFree(d_exposures);
    cudaFree(d_gamma);
    cudaFree(d_gamma_factor);
    cublasDestroy(blas);
    return 0;
}
