// matmul: C = A B in float32 (A is M x K, B is K x N, all row-major), two ways. The naive kernel
// gives each thread one output and reads its whole row of A and column of B from global memory.
// The tiled kernel has each block stage 32 x 32 tiles of A and B in shared memory and reuses every
// loaded value 32 times. Same arithmetic, same launch count: the timeline shows one kernel's time
// set by how it uses memory.

#include "builtin.h"
#include "cudacheck.h"
#include "hostref.h"

#include <algorithm>
#include <set>

namespace warpline::kernels {

namespace {
constexpr int kNaiveBlock = 16; // 16 x 16 threads
constexpr int kTile = 32;       // 32 x 32 threads, one output each
} // namespace

__global__ void matmulNaive(const float* A, const float* B, float* C, int M, int N, int K) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) {
        return;
    }
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        acc += A[static_cast<size_t>(row) * K + k] * B[static_cast<size_t>(k) * N + col];
    }
    C[static_cast<size_t>(row) * N + col] = acc;
}

// Block (kTile, kTile) computes the kTile x kTile tile of C at (blockIdx.y, blockIdx.x). Tiles
// that hang over the matrix edge load zeros, which add nothing to the sums.
__global__ void matmulTiled(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[kTile][kTile];
    __shared__ float Bs[kTile][kTile];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * kTile + ty;
    const int col = blockIdx.x * kTile + tx;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += kTile) {
        const int aCol = k0 + tx;
        const int bRow = k0 + ty;
        As[ty][tx] = (row < M && aCol < K) ? A[static_cast<size_t>(row) * K + aCol] : 0.0f;
        Bs[ty][tx] = (bRow < K && col < N) ? B[static_cast<size_t>(bRow) * N + col] : 0.0f;
        __syncthreads(); // tiles complete before anyone reads them
        for (int k = 0; k < kTile; ++k) {
            acc += As[ty][k] * Bs[k][tx];
        }
        __syncthreads(); // everyone done reading before the next tiles overwrite them
    }
    if (row < M && col < N) {
        C[static_cast<size_t>(row) * N + col] = acc;
    }
}

namespace {

void launchNaive(const float* A, const float* B, float* C, int M, int N, int K) {
    const dim3 block(kNaiveBlock, kNaiveBlock);
    const dim3 grid(blocksFor(N, kNaiveBlock), blocksFor(M, kNaiveBlock));
    matmulNaive<<<grid, block>>>(A, B, C, M, N, K);
    WL_CHECK_LAUNCH("matmulNaive");
}

void launchTiled(const float* A, const float* B, float* C, int M, int N, int K) {
    const dim3 block(kTile, kTile);
    const dim3 grid(blocksFor(N, kTile), blocksFor(M, kTile));
    matmulTiled<<<grid, block>>>(A, B, C, M, N, K);
    WL_CHECK_LAUNCH("matmulTiled");
}

// Indices to check in [0, size): both ends, both sides of tile edges, the middle, a few random.
std::vector<int> sampleIndices(int size, std::uint64_t seed) {
    std::set<int> picked = {0, 1, 15, 16, 31, 32, 33, size / 2, size - 2, size - 1};
    Rng rng(seed);
    for (int i = 0; i < 6; ++i) {
        picked.insert(static_cast<int>(rng.below(static_cast<std::uint32_t>(size))));
    }
    std::vector<int> result;
    for (int i : picked) {
        if (i >= 0 && i < size) {
            result.push_back(i);
        }
    }
    return result;
}

// Compares whole sampled rows and whole sampled columns of C with a double-precision reference.
void checkSampled(const char* phase, const std::vector<float>& C, const std::vector<float>& A,
                  const std::vector<float>& B, int M, int N, int K) {
    std::vector<float> got;
    std::vector<double> ref;
    std::vector<double> rowRef(N);
    for (int r : sampleIndices(M, 41)) {
        std::fill(rowRef.begin(), rowRef.end(), 0.0);
        for (int k = 0; k < K; ++k) {
            const double a = A[static_cast<size_t>(r) * K + k];
            const float* bRow = B.data() + static_cast<size_t>(k) * N;
            for (int c = 0; c < N; ++c) {
                rowRef[c] += a * bRow[c];
            }
        }
        for (int c = 0; c < N; ++c) {
            got.push_back(C[static_cast<size_t>(r) * N + c]);
            ref.push_back(rowRef[c]);
        }
    }
    std::vector<double> bColumn(K);
    for (int c : sampleIndices(N, 42)) {
        for (int k = 0; k < K; ++k) {
            bColumn[k] = B[static_cast<size_t>(k) * N + c];
        }
        for (int r = 0; r < M; ++r) {
            const float* aRow = A.data() + static_cast<size_t>(r) * K;
            double sum = 0.0;
            for (int k = 0; k < K; ++k) {
                sum += aRow[k] * bColumn[k];
            }
            got.push_back(C[static_cast<size_t>(r) * N + c]);
            ref.push_back(sum);
        }
    }
    expectClose("matmul", phase, "sampled rows and columns of C", got, ref, got.size(), 1e-3);
}

void runMatmul(const WorkloadArgs& args, const Progress& progress) {
    const int M = static_cast<int>(boundedInteger(args, "m", 1, 8192));
    const int N = static_cast<int>(boundedInteger(args, "n", 1, 8192));
    const int K = static_cast<int>(boundedInteger(args, "k", 1, 8192));
    const int repeats = static_cast<int>(boundedInteger(args, "repeats", 1, 1000));

    const std::vector<float> A = uniformVector(static_cast<size_t>(M) * K, 51, -1.0f, 1.0f);
    const std::vector<float> B = uniformVector(static_cast<size_t>(K) * N, 52, -1.0f, 1.0f);
    DeviceBuffer<float> dA(A.size());
    DeviceBuffer<float> dB(B.size());
    DeviceBuffer<float> dNaive(static_cast<size_t>(M) * N);
    DeviceBuffer<float> dTiled(static_cast<size_t>(M) * N);
    {
        NvtxRange range("setup");
        dA.upload(A);
        dB.upload(B);
        launchNaive(dA.get(), dB.get(), dNaive.get(), M, N, K);
        launchTiled(dA.get(), dB.get(), dTiled.get(), M, N, K);
        WL_CUDA(cudaDeviceSynchronize());
    }

    const double flops = 2.0 * M * N * K;
    const auto report = [&](const char* name, double ms) {
        progress(std::string(name) + ": " +
                 std::to_string(static_cast<long long>(flops * repeats / (ms * 1e6))) +
                 " GFLOP/s, wall clock");
    };
    const double naiveMs = timeRepeats("naive", repeats, progress, [&] {
        launchNaive(dA.get(), dB.get(), dNaive.get(), M, N, K);
    });
    report("naive", naiveMs);
    const double tiledMs = timeRepeats("tiled", repeats, progress, [&] {
        launchTiled(dA.get(), dB.get(), dTiled.get(), M, N, K);
    });
    report("tiled", tiledMs);

    NvtxRange range("check");
    const std::vector<float> naive = dNaive.download();
    const std::vector<float> tiled = dTiled.download();
    checkSampled("naive", naive, A, B, M, N, K);
    checkSampled("tiled", tiled, A, B, M, N, K);
    expectClose("matmul", "tiled", "C (against naive)", tiled, naive, naive.size(), 1e-4);
}

} // namespace

Workload matmulWorkload() {
    return {"matmul",
            "naive against shared-memory tiled float32 matrix product; shows a kernel's time set "
            "by how it uses memory, with the same launches and arithmetic",
            {
                {"m", "1024", "rows of A and C"},
                {"n", "1024", "columns of B and C"},
                {"k", "1024", "columns of A, rows of B"},
                {"repeats", "3", "times each variant runs"},
            },
            [](const WorkloadArgs& args, const ProgressFn& fn) {
                return runGuarded("matmul", [&] { runMatmul(args, Progress(fn)); });
            }};
}

} // namespace warpline::kernels
