// softmax: row-wise softmax, y[r][c] = exp(x[r][c] - max_r) / sum_c exp(x[r][c] - max_r),
// computed as four kernels (row max, subtract+exp, row sum, divide) against one fused kernel.
// Both use the same block-per-row reductions, so what differs is only the fusion: the naive
// variant launches four kernels and streams the matrix through global memory five times, the fused
// one launches one kernel that reads its row while it is hot in cache and writes the result once.

#include "blockreduce.cuh"
#include "builtin.h"
#include "cudacheck.h"
#include "hostref.h"

#include <cmath>

namespace warpline::kernels {

namespace {
constexpr int kBlock = 256; // threads per row in the reduction kernels; a power of two
}

// One block per row.
__global__ void softmaxRowMax(const float* x, float* rowMax, int cols) {
    __shared__ float smem[kBlock];
    const float* row = x + static_cast<size_t>(blockIdx.x) * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        m = fmaxf(m, row[c]);
    }
    m = blockReduceMax(m, smem);
    if (threadIdx.x == 0) {
        rowMax[blockIdx.x] = m;
    }
}

// One thread per element.
__global__ void softmaxSubtractExp(const float* x, const float* rowMax, float* y, int rows,
                                   int cols) {
    const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < static_cast<size_t>(rows) * cols) {
        y[i] = expf(x[i] - rowMax[i / cols]);
    }
}

// One block per row.
__global__ void softmaxRowSum(const float* y, float* rowSum, int cols) {
    __shared__ float smem[kBlock];
    const float* row = y + static_cast<size_t>(blockIdx.x) * cols;
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        s += row[c];
    }
    s = blockReduceSum(s, smem);
    if (threadIdx.x == 0) {
        rowSum[blockIdx.x] = s;
    }
}

// One thread per element.
__global__ void softmaxDivide(float* y, const float* rowSum, int rows, int cols) {
    const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < static_cast<size_t>(rows) * cols) {
        y[i] /= rowSum[i / cols];
    }
}

// One block per row: max, sum of exponentials, then the output, all in one launch.
__global__ void softmaxFused(const float* x, float* y, int cols) {
    __shared__ float smem[kBlock];
    const float* row = x + static_cast<size_t>(blockIdx.x) * cols;
    float* out = y + static_cast<size_t>(blockIdx.x) * cols;

    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        m = fmaxf(m, row[c]);
    }
    m = blockReduceMax(m, smem);

    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        s += expf(row[c] - m);
    }
    s = blockReduceSum(s, smem);

    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        out[c] = expf(row[c] - m) / s;
    }
}

namespace {

void softmaxNaive(const float* x, float* y, float* rowMax, float* rowSum, int rows, int cols) {
    const unsigned int elementBlocks = blocksFor(static_cast<long long>(rows) * cols, kBlock);
    softmaxRowMax<<<rows, kBlock>>>(x, rowMax, cols);
    WL_CHECK_LAUNCH("softmaxRowMax");
    softmaxSubtractExp<<<elementBlocks, kBlock>>>(x, rowMax, y, rows, cols);
    WL_CHECK_LAUNCH("softmaxSubtractExp");
    softmaxRowSum<<<rows, kBlock>>>(y, rowSum, cols);
    WL_CHECK_LAUNCH("softmaxRowSum");
    softmaxDivide<<<elementBlocks, kBlock>>>(y, rowSum, rows, cols);
    WL_CHECK_LAUNCH("softmaxDivide");
}

void softmaxFusedLaunch(const float* x, float* y, int rows, int cols) {
    softmaxFused<<<rows, kBlock>>>(x, y, cols);
    WL_CHECK_LAUNCH("softmaxFused");
}

// Every row of y must sum to 1.
void expectRowsSumToOne(const char* phase, const std::vector<float>& y, int rows, int cols) {
    std::vector<double> sums(rows, 0.0);
    const std::vector<double> ones(rows, 1.0);
    for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < cols; ++c) {
            sums[r] += y[static_cast<size_t>(r) * cols + c];
        }
    }
    expectClose("softmax", phase, "row sums", sums, ones, sums.size(), 1e-3);
}

void runSoftmax(const WorkloadArgs& args, const Progress& progress) {
    const int rows = static_cast<int>(boundedInteger(args, "rows", 1, 1 << 20));
    const int cols = static_cast<int>(boundedInteger(args, "cols", 1, 1 << 20));
    const int repeats = static_cast<int>(boundedInteger(args, "repeats", 1, 100000));
    const size_t count = static_cast<size_t>(rows) * cols;
    if (count > (size_t(1) << 28)) {
        throw std::invalid_argument("--rows x --cols must be at most 268435456 (got " +
                                    std::to_string(count) + ")");
    }

    const std::vector<float> x = uniformVector(count, 31, -4.0f, 4.0f);
    DeviceBuffer<float> dx(count);
    DeviceBuffer<float> dNaive(count);
    DeviceBuffer<float> dFused(count);
    DeviceBuffer<float> dRowMax(rows);
    DeviceBuffer<float> dRowSum(rows);
    {
        NvtxRange range("setup");
        dx.upload(x);
        softmaxNaive(dx.get(), dNaive.get(), dRowMax.get(), dRowSum.get(), rows, cols);
        softmaxFusedLaunch(dx.get(), dFused.get(), rows, cols);
        WL_CUDA(cudaDeviceSynchronize());
    }

    const double naiveMs = timeRepeats("naive", repeats, progress, [&] {
        softmaxNaive(dx.get(), dNaive.get(), dRowMax.get(), dRowSum.get(), rows, cols);
    });
    const double fusedMs = timeRepeats("fused", repeats, progress, [&] {
        softmaxFusedLaunch(dx.get(), dFused.get(), rows, cols);
    });
    progress("fused: " + formatRatio(naiveMs / fusedMs) + " faster than naive, wall clock");

    NvtxRange range("check");
    const std::vector<float> naive = dNaive.download();
    const std::vector<float> fused = dFused.download();
    std::vector<double> ref(count);
    for (int r = 0; r < rows; ++r) {
        const float* row = x.data() + static_cast<size_t>(r) * cols;
        double* out = ref.data() + static_cast<size_t>(r) * cols;
        double m = row[0];
        for (int c = 1; c < cols; ++c) {
            m = std::fmax(m, row[c]);
        }
        double s = 0.0;
        for (int c = 0; c < cols; ++c) {
            out[c] = std::exp(row[c] - m);
            s += out[c];
        }
        for (int c = 0; c < cols; ++c) {
            out[c] /= s;
        }
    }
    expectClose("softmax", "naive", "output", naive, ref, count, 1e-3);
    expectClose("softmax", "fused", "output", fused, ref, count, 1e-3);
    expectClose("softmax", "fused", "output (against naive)", fused, naive, count, 1e-4);
    expectRowsSumToOne("naive", naive, rows, cols);
    expectRowsSumToOne("fused", fused, rows, cols);
}

} // namespace

Workload softmaxWorkload() {
    return {"softmax",
            "row softmax as four kernels (max, exp, sum, divide) against one fused kernel per row; "
            "shows the cost of extra launches and of re-reading memory between kernels",
            {
                {"rows", "4096", "matrix rows (one block each)"},
                {"cols", "1024", "matrix columns (the softmax runs along a row)"},
                {"repeats", "10", "times each variant runs"},
            },
            [](const WorkloadArgs& args, const ProgressFn& fn) {
                return runGuarded("softmax", [&] { runSoftmax(args, Progress(fn)); });
            }};
}

} // namespace warpline::kernels
