// mlp: a small multi-layer perceptron trained with hand-written kernels, the shape of one training
// step as a framework runs it. Layers: input -> hidden (ReLU) -> hidden (ReLU) -> classes, softmax
// cross-entropy loss, plain SGD. Every step is an NVTX range "step N" with nested "forward",
// "backward" and "optimizer" ranges, so the timeline shows which kernels each phase launches and
// how long each takes. The losses stay on the device until the end (no per-step sync).
//
// Step 0 is checked against a CPU reference: the forward pass of sampled rows, their loss and
// logit gradients, each matmul shape of the backward pass on sampled entries, and the SGD update.
// The run checks that the loss went down.

#include "blockreduce.cuh"
#include "builtin.h"
#include "cudacheck.h"
#include "hostref.h"

#include <algorithm>
#include <cmath>

namespace warpline::kernels {

namespace {
constexpr int kTile = 16;   // matmul tile: 16 x 16 threads
constexpr int kBlock = 256; // element-wise and reduction kernels; a power of two
} // namespace

// C (M x N) = op(A) op(B), row-major. op(A) is M x K: A itself (M x K) or, when TransA, the
// transpose of a stored K x M matrix. op(B) is K x N: B itself (K x N) or, when TransB, the
// transpose of a stored N x K matrix. Tiles are loaded so that consecutive threads read
// consecutive addresses in either layout; the +1 column of padding keeps the transposed stores
// into shared memory free of bank conflicts.
template <bool TransA, bool TransB>
__global__ void mlpMatmul(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[kTile][kTile + 1]; // As[r][k] = op(A)(tileRow + r, k0 + k)
    __shared__ float Bs[kTile][kTile + 1]; // Bs[k][c] = op(B)(k0 + k, tileCol + c)
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int tileRow = blockIdx.y * kTile;
    const int tileCol = blockIdx.x * kTile;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += kTile) {
        if (!TransA) {
            const int r = tileRow + ty, k = k0 + tx;
            As[ty][tx] = (r < M && k < K) ? A[static_cast<size_t>(r) * K + k] : 0.0f;
        } else {
            const int r = tileRow + tx, k = k0 + ty;
            As[tx][ty] = (r < M && k < K) ? A[static_cast<size_t>(k) * M + r] : 0.0f;
        }
        if (!TransB) {
            const int k = k0 + ty, c = tileCol + tx;
            Bs[ty][tx] = (k < K && c < N) ? B[static_cast<size_t>(k) * N + c] : 0.0f;
        } else {
            const int k = k0 + tx, c = tileCol + ty;
            Bs[tx][ty] = (k < K && c < N) ? B[static_cast<size_t>(c) * K + k] : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < kTile; ++k) {
            acc += As[ty][k] * Bs[k][tx];
        }
        __syncthreads();
    }
    const int row = tileRow + ty;
    const int col = tileCol + tx;
    if (row < M && col < N) {
        C[static_cast<size_t>(row) * N + col] = acc;
    }
}

// z (rows x cols) = relu(z + bias), in place.
__global__ void mlpBiasRelu(float* z, const float* bias, int rows, int cols) {
    const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < static_cast<size_t>(rows) * cols) {
        z[i] = fmaxf(z[i] + bias[i % cols], 0.0f);
    }
}

// z (rows x cols) += bias, in place.
__global__ void mlpBiasAdd(float* z, const float* bias, int rows, int cols) {
    const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < static_cast<size_t>(rows) * cols) {
        z[i] += bias[i % cols];
    }
}

// One thread per sample: its cross-entropy loss and the gradient of the batch-mean loss with
// respect to its logits, (softmax - onehot) / batch.
__global__ void mlpCrossEntropy(const float* logits, const int* labels, float* lossRows,
                                float* dlogits, int batch, int classes) {
    const int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= batch) {
        return;
    }
    const float* z = logits + static_cast<size_t>(b) * classes;
    float m = z[0];
    for (int c = 1; c < classes; ++c) {
        m = fmaxf(m, z[c]);
    }
    float sum = 0.0f;
    for (int c = 0; c < classes; ++c) {
        sum += expf(z[c] - m);
    }
    const int label = labels[b];
    lossRows[b] = m + logf(sum) - z[label];
    float* g = dlogits + static_cast<size_t>(b) * classes;
    const float invBatch = 1.0f / static_cast<float>(batch);
    for (int c = 0; c < classes; ++c) {
        const float p = expf(z[c] - m) / sum;
        g[c] = (p - (c == label ? 1.0f : 0.0f)) * invBatch;
    }
}

// One block: *out = mean of lossRows.
__global__ void mlpMeanLoss(const float* lossRows, int batch, float* out) {
    __shared__ float smem[kBlock];
    float sum = 0.0f;
    for (int b = threadIdx.x; b < batch; b += blockDim.x) {
        sum += lossRows[b];
    }
    sum = blockReduceSum(sum, smem);
    if (threadIdx.x == 0) {
        *out = sum / static_cast<float>(batch);
    }
}

// out[c] = sum over rows of m[r][c]: the bias gradient. One thread per column.
__global__ void mlpColumnSum(const float* m, float* out, int rows, int cols) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) {
        float sum = 0.0f;
        for (int r = 0; r < rows; ++r) {
            sum += m[static_cast<size_t>(r) * cols + c];
        }
        out[c] = sum;
    }
}

// grad *= relu'(pre-activation), read off the post-ReLU activation: act > 0 exactly where z > 0.
__global__ void mlpReluBackward(float* grad, const float* act, int count) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) {
        grad[i] = act[i] > 0.0f ? grad[i] : 0.0f;
    }
}

__global__ void mlpSgd(float* params, const float* grads, float lr, int count) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) {
        params[i] -= lr * grads[i];
    }
}

namespace {

struct Dims {
    int batch, input, hidden, classes;
};

// Offsets of each tensor in the packed parameter (and gradient) array. Weights are stored
// fan-in x fan-out, row-major: layer output = input row times W, plus b.
struct Layout {
    explicit Layout(const Dims& d)
        : w1(0), b1(w1 + size_t(d.input) * d.hidden), w2(b1 + d.hidden),
          b2(w2 + size_t(d.hidden) * d.hidden), w3(b2 + d.hidden),
          b3(w3 + size_t(d.hidden) * d.classes), total(b3 + d.classes) {}
    size_t w1, b1, w2, b2, w3, b3, total;
};

template <bool TransA, bool TransB>
void matmul(const float* A, const float* B, float* C, int M, int N, int K) {
    const dim3 block(kTile, kTile);
    const dim3 grid(blocksFor(N, kTile), blocksFor(M, kTile));
    mlpMatmul<TransA, TransB><<<grid, block>>>(A, B, C, M, N, K);
    WL_CHECK_LAUNCH("mlpMatmul");
}

struct Net {
    Net(const Dims& d, const Layout& l, int steps)
        : dims(d), layout(l), params(l.total), grads(l.total), x(size_t(d.batch) * d.input),
          labels(d.batch), a1(size_t(d.batch) * d.hidden), a2(size_t(d.batch) * d.hidden),
          logits(size_t(d.batch) * d.classes), dlogits(size_t(d.batch) * d.classes),
          da1(size_t(d.batch) * d.hidden), da2(size_t(d.batch) * d.hidden), lossRows(d.batch),
          losses(steps) {}

    float* p(size_t offset) const { return params.get() + offset; }
    float* g(size_t offset) const { return grads.get() + offset; }

    Dims dims;
    Layout layout;
    DeviceBuffer<float> params, grads, x;
    DeviceBuffer<int> labels;
    DeviceBuffer<float> a1, a2, logits, dlogits, da1, da2, lossRows, losses;
};

void forward(Net& n, int step) {
    NvtxRange range("forward");
    const Dims& d = n.dims;
    const Layout& l = n.layout;
    const unsigned int hiddenBlocks = blocksFor(static_cast<long long>(d.batch) * d.hidden, kBlock);
    matmul<false, false>(n.x.get(), n.p(l.w1), n.a1.get(), d.batch, d.hidden, d.input);
    mlpBiasRelu<<<hiddenBlocks, kBlock>>>(n.a1.get(), n.p(l.b1), d.batch, d.hidden);
    WL_CHECK_LAUNCH("mlpBiasRelu");
    matmul<false, false>(n.a1.get(), n.p(l.w2), n.a2.get(), d.batch, d.hidden, d.hidden);
    mlpBiasRelu<<<hiddenBlocks, kBlock>>>(n.a2.get(), n.p(l.b2), d.batch, d.hidden);
    WL_CHECK_LAUNCH("mlpBiasRelu");
    matmul<false, false>(n.a2.get(), n.p(l.w3), n.logits.get(), d.batch, d.classes, d.hidden);
    mlpBiasAdd<<<blocksFor(static_cast<long long>(d.batch) * d.classes, kBlock), kBlock>>>(
        n.logits.get(), n.p(l.b3), d.batch, d.classes);
    WL_CHECK_LAUNCH("mlpBiasAdd");
    mlpCrossEntropy<<<blocksFor(d.batch, kBlock), kBlock>>>(
        n.logits.get(), n.labels.get(), n.lossRows.get(), n.dlogits.get(), d.batch, d.classes);
    WL_CHECK_LAUNCH("mlpCrossEntropy");
    mlpMeanLoss<<<1, kBlock>>>(n.lossRows.get(), d.batch, n.losses.get() + step);
    WL_CHECK_LAUNCH("mlpMeanLoss");
}

void backward(Net& n) {
    NvtxRange range("backward");
    const Dims& d = n.dims;
    const Layout& l = n.layout;
    const int hiddenCount = d.batch * d.hidden;
    // Layer 3: dW3 = A2^T dlogits, db3 = column sums of dlogits, dA2 = dlogits W3^T.
    matmul<true, false>(n.a2.get(), n.dlogits.get(), n.g(l.w3), d.hidden, d.classes, d.batch);
    mlpColumnSum<<<blocksFor(d.classes, kBlock), kBlock>>>(n.dlogits.get(), n.g(l.b3), d.batch,
                                                           d.classes);
    WL_CHECK_LAUNCH("mlpColumnSum");
    matmul<false, true>(n.dlogits.get(), n.p(l.w3), n.da2.get(), d.batch, d.hidden, d.classes);
    mlpReluBackward<<<blocksFor(hiddenCount, kBlock), kBlock>>>(n.da2.get(), n.a2.get(),
                                                                hiddenCount);
    WL_CHECK_LAUNCH("mlpReluBackward");
    // Layer 2 (da2 now holds dZ2).
    matmul<true, false>(n.a1.get(), n.da2.get(), n.g(l.w2), d.hidden, d.hidden, d.batch);
    mlpColumnSum<<<blocksFor(d.hidden, kBlock), kBlock>>>(n.da2.get(), n.g(l.b2), d.batch,
                                                          d.hidden);
    WL_CHECK_LAUNCH("mlpColumnSum");
    matmul<false, true>(n.da2.get(), n.p(l.w2), n.da1.get(), d.batch, d.hidden, d.hidden);
    mlpReluBackward<<<blocksFor(hiddenCount, kBlock), kBlock>>>(n.da1.get(), n.a1.get(),
                                                                hiddenCount);
    WL_CHECK_LAUNCH("mlpReluBackward");
    // Layer 1 (da1 now holds dZ1); no gradient for the input.
    matmul<true, false>(n.x.get(), n.da1.get(), n.g(l.w1), d.input, d.hidden, d.batch);
    mlpColumnSum<<<blocksFor(d.hidden, kBlock), kBlock>>>(n.da1.get(), n.g(l.b1), d.batch,
                                                          d.hidden);
    WL_CHECK_LAUNCH("mlpColumnSum");
}

void optimizer(Net& n, float lr) {
    NvtxRange range("optimizer");
    const int count = static_cast<int>(n.layout.total);
    mlpSgd<<<blocksFor(count, kBlock), kBlock>>>(n.params.get(), n.grads.get(), lr, count);
    WL_CHECK_LAUNCH("mlpSgd");
}

// Host copies of everything step 0 computed, for the checks.
struct StepZero {
    std::vector<float> a1, a2, logits, dlogits, dz1, dz2, lossRows, grads, paramsAfter;
    float loss = 0.0f;
};

StepZero downloadStepZero(const Net& n) {
    StepZero s;
    s.a1 = n.a1.download();
    s.a2 = n.a2.download();
    s.logits = n.logits.download();
    s.dlogits = n.dlogits.download();
    s.dz1 = n.da1.download();
    s.dz2 = n.da2.download();
    s.lossRows = n.lossRows.download();
    s.grads = n.grads.download();
    s.paramsAfter = n.params.download();
    WL_CUDA(cudaMemcpy(&s.loss, n.losses.get(), sizeof(float), cudaMemcpyDeviceToHost));
    return s;
}

// Collects (got, expected) pairs for one quantity and compares them in one go.
struct Compare {
    std::vector<float> got;
    std::vector<double> ref;
    void add(float g, double r) {
        got.push_back(g);
        ref.push_back(r);
    }
    void check(const std::string& what, double tolerance) const {
        expectClose("mlp", "step 0", what, got, ref, got.size(), tolerance);
    }
};

std::vector<int> sampleRows(int count, std::uint64_t seed, int extra) {
    std::vector<int> rows = {0, count - 1};
    Rng rng(seed);
    for (int i = 0; i < extra; ++i) {
        rows.push_back(static_cast<int>(rng.below(static_cast<std::uint32_t>(count))));
    }
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    return rows;
}

void checkStepZero(const StepZero& s, const Dims& d, const Layout& l,
                   const std::vector<float>& params0, const std::vector<float>& x,
                   const std::vector<int>& labels, float lr) {
    const int B = d.batch, D = d.input, H = d.hidden, C = d.classes;
    const auto at = [](const std::vector<float>& m, int cols, int r, int c) {
        return static_cast<double>(m[static_cast<size_t>(r) * cols + c]);
    };
    const float* w1 = params0.data() + l.w1;
    const float* w2 = params0.data() + l.w2;
    const float* w3 = params0.data() + l.w3;

    // Forward pass of sampled rows from the initial parameters, in double; then their loss and
    // logit gradients.
    Compare fwdA1, fwdA2, fwdLogits, loss, dlogits;
    for (int b : sampleRows(B, 81, 6)) {
        std::vector<double> a1(H), a2(H), z(C);
        for (int j = 0; j < H; ++j) {
            a1[j] = params0[l.b1 + j];
        }
        for (int i = 0; i < D; ++i) {
            const double xi = at(x, D, b, i);
            for (int j = 0; j < H; ++j) {
                a1[j] += xi * w1[size_t(i) * H + j];
            }
        }
        for (int j = 0; j < H; ++j) {
            a1[j] = std::max(a1[j], 0.0);
            a2[j] = params0[l.b2 + j];
        }
        for (int i = 0; i < H; ++i) {
            for (int j = 0; j < H; ++j) {
                a2[j] += a1[i] * w2[size_t(i) * H + j];
            }
        }
        for (int c = 0; c < C; ++c) {
            z[c] = params0[l.b3 + c];
        }
        for (int j = 0; j < H; ++j) {
            a2[j] = std::max(a2[j], 0.0);
            for (int c = 0; c < C; ++c) {
                z[c] += a2[j] * w3[size_t(j) * C + c];
            }
        }
        for (int j = 0; j < H; ++j) {
            fwdA1.add(s.a1[size_t(b) * H + j], a1[j]);
            fwdA2.add(s.a2[size_t(b) * H + j], a2[j]);
        }
        const double m = *std::max_element(z.begin(), z.end());
        double sum = 0.0;
        for (int c = 0; c < C; ++c) {
            sum += std::exp(z[c] - m);
        }
        loss.add(s.lossRows[b], m + std::log(sum) - z[labels[b]]);
        for (int c = 0; c < C; ++c) {
            fwdLogits.add(s.logits[size_t(b) * C + c], z[c]);
            const double p = std::exp(z[c] - m) / sum;
            dlogits.add(s.dlogits[size_t(b) * C + c], (p - (c == labels[b] ? 1.0 : 0.0)) / B);
        }
    }
    fwdA1.check("forward: first hidden activations of sampled rows", 1e-3);
    fwdA2.check("forward: second hidden activations of sampled rows", 1e-3);
    fwdLogits.check("forward: logits of sampled rows", 1e-3);
    loss.check("cross-entropy loss of sampled rows", 1e-3);
    dlogits.check("logit gradients of sampled rows", 1e-3);

    double meanLoss = 0.0;
    for (float v : s.lossRows) {
        meanLoss += v;
    }
    Compare mean;
    mean.add(s.loss, meanLoss / B);
    mean.check("mean loss", 1e-4);

    // Backward: each gradient from the GPU's own inputs to that stage, so a mismatch points at
    // one kernel. dW3 and db3 in full; the rest on samples.
    Compare dw3, db3;
    for (int j = 0; j < H; ++j) {
        for (int c = 0; c < C; ++c) {
            double sum = 0.0;
            for (int b = 0; b < B; ++b) {
                sum += at(s.a2, H, b, j) * at(s.dlogits, C, b, c);
            }
            dw3.add(s.grads[l.w3 + size_t(j) * C + c], sum);
        }
    }
    for (int c = 0; c < C; ++c) {
        double sum = 0.0;
        for (int b = 0; b < B; ++b) {
            sum += at(s.dlogits, C, b, c);
        }
        db3.add(s.grads[l.b3 + c], sum);
    }
    dw3.check("backward: dW3 = A2^T dlogits", 1e-3);
    db3.check("backward: db3", 1e-3);

    Compare dz2, dz1;
    for (int b : sampleRows(B, 82, 4)) {
        for (int j = 0; j < H; ++j) {
            double sum = 0.0;
            for (int c = 0; c < C; ++c) {
                sum += at(s.dlogits, C, b, c) * w3[size_t(j) * C + c];
            }
            dz2.add(s.dz2[size_t(b) * H + j], at(s.a2, H, b, j) > 0.0 ? sum : 0.0);
            double sum1 = 0.0;
            for (int k = 0; k < H; ++k) {
                sum1 += at(s.dz2, H, b, k) * w2[size_t(j) * H + k];
            }
            dz1.add(s.dz1[size_t(b) * H + j], at(s.a1, H, b, j) > 0.0 ? sum1 : 0.0);
        }
    }
    dz2.check("backward: dZ2 = (dlogits W3^T) * relu'", 1e-3);
    dz1.check("backward: dZ1 = (dZ2 W2^T) * relu'", 1e-3);

    Compare dw2, dw1, db1;
    Rng rng(83);
    for (int t = 0; t < 256; ++t) {
        const int i2 = static_cast<int>(rng.below(H)), j2 = static_cast<int>(rng.below(H));
        const int i1 = static_cast<int>(rng.below(D)), j1 = static_cast<int>(rng.below(H));
        double sum2 = 0.0, sum1 = 0.0;
        for (int b = 0; b < B; ++b) {
            sum2 += at(s.a1, H, b, i2) * at(s.dz2, H, b, j2);
            sum1 += at(x, D, b, i1) * at(s.dz1, H, b, j1);
        }
        dw2.add(s.grads[l.w2 + size_t(i2) * H + j2], sum2);
        dw1.add(s.grads[l.w1 + size_t(i1) * H + j1], sum1);
    }
    for (int j = 0; j < H; ++j) {
        double sum = 0.0;
        for (int b = 0; b < B; ++b) {
            sum += at(s.dz1, H, b, j);
        }
        db1.add(s.grads[l.b1 + j], sum);
    }
    dw2.check("backward: dW2 = A1^T dZ2 (sampled)", 1e-3);
    dw1.check("backward: dW1 = X^T dZ1 (sampled)", 1e-3);
    db1.check("backward: db1", 1e-3);

    std::vector<double> expectedParams(l.total);
    for (size_t i = 0; i < l.total; ++i) {
        expectedParams[i] = static_cast<double>(params0[i]) - static_cast<double>(lr) * s.grads[i];
    }
    expectClose("mlp", "step 0", "optimizer: parameters after SGD", s.paramsAfter, expectedParams,
                l.total, 1e-5);
}

void runMlp(const WorkloadArgs& args, const Progress& progress) {
    const Dims d{static_cast<int>(boundedInteger(args, "batch", 1, 4096)),
                 static_cast<int>(boundedInteger(args, "input", 1, 8192)),
                 static_cast<int>(boundedInteger(args, "hidden", 1, 8192)),
                 static_cast<int>(boundedInteger(args, "classes", 2, 1024))};
    const int steps = static_cast<int>(boundedInteger(args, "steps", 2, 100000));
    const float lr = static_cast<float>(boundedReal(args, "lr", 1e-6, 10.0));
    const Layout l(d);

    // He-uniform weights, small random biases; inputs uniform; labels from a random linear
    // "teacher", so there is something to learn.
    std::vector<float> params0(l.total);
    Rng rng(91);
    const auto fill = [&](size_t offset, size_t count, float bound) {
        for (size_t i = 0; i < count; ++i) {
            params0[offset + i] = rng.uniform(-bound, bound);
        }
    };
    fill(l.w1, size_t(d.input) * d.hidden, std::sqrt(6.0f / d.input));
    fill(l.b1, d.hidden, 0.1f);
    fill(l.w2, size_t(d.hidden) * d.hidden, std::sqrt(6.0f / d.hidden));
    fill(l.b2, d.hidden, 0.1f);
    fill(l.w3, size_t(d.hidden) * d.classes, std::sqrt(6.0f / d.hidden));
    fill(l.b3, d.classes, 0.1f);
    const std::vector<float> x = uniformVector(size_t(d.batch) * d.input, 92, -1.0f, 1.0f);
    const std::vector<float> teacher = uniformVector(size_t(d.input) * d.classes, 93, -1.0f, 1.0f);
    std::vector<int> labels(d.batch);
    for (int b = 0; b < d.batch; ++b) {
        std::vector<double> score(d.classes, 0.0);
        for (int i = 0; i < d.input; ++i) {
            for (int c = 0; c < d.classes; ++c) {
                score[c] += double(x[size_t(b) * d.input + i]) * teacher[size_t(i) * d.classes + c];
            }
        }
        labels[b] = static_cast<int>(std::max_element(score.begin(), score.end()) - score.begin());
    }

    Net net(d, l, steps);
    {
        NvtxRange range("setup");
        net.params.upload(params0);
        net.x.upload(x);
        net.labels.upload(labels);
        WL_CUDA(cudaMemset(net.losses.get(), 0, net.losses.bytes()));
    }

    CpuTimer timer;
    {
        NvtxRange phase("train");
        for (int s = 0; s < steps; ++s) {
            {
                NvtxRange range("step " + std::to_string(s));
                forward(net, s);
                backward(net);
                optimizer(net, lr);
            }
            if (s == 0) {
                // Step 0 doubles as the warm-up (it loads every kernel); check it while its
                // activations and gradients are still in place.
                NvtxRange range("check step 0");
                checkStepZero(downloadStepZero(net), d, l, params0, x, labels, lr);
                progress("step 0 matches the CPU reference");
                timer.restart();
            } else if ((s + 1) % 10 == 0 && s + 1 < steps) {
                progress("train: step " + std::to_string(s + 1) + "/" + std::to_string(steps) +
                         " queued");
            }
        }
        WL_CUDA(cudaDeviceSynchronize());
    }
    const double trainMs = timer.elapsedMs();

    NvtxRange range("check");
    const std::vector<float> losses = net.losses.download();
    for (int s = 0; s < steps; ++s) {
        if (!std::isfinite(losses[s])) {
            throw ResultMismatch("mlp, phase train: loss at step " + std::to_string(s) + " is " +
                                 std::to_string(losses[s]) + "; try a smaller --lr");
        }
    }
    progress("train: loss " + std::to_string(losses[0]) + " -> " +
             std::to_string(losses[steps - 1]) + "; steps 1.." + std::to_string(steps - 1) +
             " in " + formatMs(trainMs) + " (" + formatMs(trainMs / (steps - 1)) + " per step)");
    if (!(losses[steps - 1] < losses[0])) {
        throw ResultMismatch(
            "mlp, phase train: loss did not decrease: " + std::to_string(losses[0]) +
            " at step 0, " + std::to_string(losses[steps - 1]) + " at step " +
            std::to_string(steps - 1));
    }
}

} // namespace

Workload mlpWorkload() {
    return {"mlp",
            "a small MLP trained with hand-written kernels (matmul, bias+ReLU, cross-entropy, "
            "backward, SGD), NVTX ranges per step and phase; shows what a training step is made of",
            {
                {"batch", "256", "samples per step (one fixed batch)"},
                {"input", "512", "input features"},
                {"hidden", "1024", "width of both hidden layers"},
                {"classes", "10", "output classes"},
                {"steps", "50", "training steps"},
                {"lr", "0.05", "SGD learning rate"},
            },
            [](const WorkloadArgs& args, const ProgressFn& fn) {
                return runGuarded("mlp", [&] { runMlp(args, Progress(fn)); });
            }};
}

} // namespace warpline::kernels
