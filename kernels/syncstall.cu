// sync-stall: a training-style loop (forward, loss reduction into a device scalar, update) run
// twice. Phase "sync-every-step" copies the 4-byte loss to the host after every step, as
// `loss.item()` does: each copy waits for the whole step, so the CPU stalls in cudaMemcpy and the
// GPU idles while the CPU launches the next step. Phase "sync-once" keeps every loss on the device
// and copies them once at the end: the CPU runs ahead and the GPU runs the steps back to back.
// Both phases must produce the same bits.
//
// The model is element-wise linear regression, pred = w * x against y, loss = mean(0.5 e^2) with
// e = pred - y, and SGD w -= lr * e * x. Its error follows e_t = e_0 (1 - lr x^2)^t, which gives a
// cheap exact CPU reference for every step's loss and the final weights.

#include "blockreduce.cuh"
#include "builtin.h"
#include "cudacheck.h"
#include "hostref.h"

#include <cmath>

namespace warpline::kernels {

namespace {
constexpr int kBlock = 256;
constexpr int kPartials = 512; // blocks of the loss reduction's first pass
constexpr float kLearningRate = 0.02f;
} // namespace

__global__ void stallForward(const float* w, const float* x, float* pred, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        pred[i] = w[i] * x[i];
    }
}

// First pass of the loss: each block sums 0.5 e^2 over a grid-stride slice into partials[block].
__global__ void stallLossPartials(const float* pred, const float* y, float* partials, int n) {
    __shared__ float smem[kBlock];
    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float e = pred[i] - y[i];
        sum += 0.5f * e * e;
    }
    sum = blockReduceSum(sum, smem);
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = sum;
    }
}

// Second pass, one block: the mean loss into the device scalar *loss.
__global__ void stallLossFinal(const float* partials, int count, float* loss, int n) {
    __shared__ float smem[kBlock];
    float sum = 0.0f;
    for (int i = threadIdx.x; i < count; i += blockDim.x) {
        sum += partials[i];
    }
    sum = blockReduceSum(sum, smem);
    if (threadIdx.x == 0) {
        *loss = sum / static_cast<float>(n);
    }
}

__global__ void stallUpdate(float* w, const float* x, const float* y, const float* pred, float lr,
                            int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        w[i] -= lr * (pred[i] - y[i]) * x[i];
    }
}

namespace {

struct Model {
    DeviceBuffer<float> w, x, y, pred, partials, losses;
    int n;
};

// One training step; its loss lands in losses[step] on the device.
void trainStep(Model& m, int step) {
    const unsigned int grid = blocksFor(m.n, kBlock);
    {
        NvtxRange range("forward");
        stallForward<<<grid, kBlock>>>(m.w.get(), m.x.get(), m.pred.get(), m.n);
        WL_CHECK_LAUNCH("stallForward");
    }
    {
        NvtxRange range("loss");
        stallLossPartials<<<kPartials, kBlock>>>(m.pred.get(), m.y.get(), m.partials.get(), m.n);
        WL_CHECK_LAUNCH("stallLossPartials");
        stallLossFinal<<<1, kBlock>>>(m.partials.get(), kPartials, m.losses.get() + step, m.n);
        WL_CHECK_LAUNCH("stallLossFinal");
    }
    {
        NvtxRange range("update");
        stallUpdate<<<grid, kBlock>>>(m.w.get(), m.x.get(), m.y.get(), m.pred.get(), kLearningRate,
                                      m.n);
        WL_CHECK_LAUNCH("stallUpdate");
    }
}

struct Reference {
    double lossFirst = 0.0, lossMiddle = 0.0, lossLast = 0.0;
    std::vector<double> finalWeights;
};

// Closed form of the whole run in double: e_t = e_0 q^t with q = 1 - lr x^2.
Reference closedForm(const std::vector<float>& w0, const std::vector<float>& x,
                     const std::vector<float>& y, int steps, int middle) {
    Reference ref;
    ref.finalWeights.resize(x.size());
    const double lr = kLearningRate;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double xi = x[i];
        const double e0 = static_cast<double>(w0[i]) * xi - static_cast<double>(y[i]);
        const double q = 1.0 - lr * xi * xi;
        const double eMiddle = e0 * std::pow(q, middle);
        const double eLast = e0 * std::pow(q, steps - 1);
        ref.lossFirst += 0.5 * e0 * e0;
        ref.lossMiddle += 0.5 * eMiddle * eMiddle;
        ref.lossLast += 0.5 * eLast * eLast;
        ref.finalWeights[i] = (static_cast<double>(y[i]) + eLast * q) / xi;
    }
    const double n = static_cast<double>(x.size());
    ref.lossFirst /= n;
    ref.lossMiddle /= n;
    ref.lossLast /= n;
    return ref;
}

void expectLoss(const char* phase, const std::vector<float>& losses, int step, double expected) {
    const std::vector<double> ref = {expected};
    const std::vector<float> got = {losses[step]};
    expectClose("sync-stall", phase, "loss at step " + std::to_string(step), got, ref, 1, 1e-3);
}

void runSyncStall(const WorkloadArgs& args, const Progress& progress) {
    const int n = static_cast<int>(boundedInteger(args, "elements", 1, 1 << 28));
    const int steps = static_cast<int>(boundedInteger(args, "steps", 1, 100000));
    const int reportEvery = steps >= 4 ? steps / 4 : 1;

    const std::vector<float> x = uniformVector(n, 11, 0.5f, 1.5f);
    const std::vector<float> trueWeights = uniformVector(n, 12, -1.0f, 1.0f);
    const std::vector<float> w0 = uniformVector(n, 13, -1.0f, 1.0f);
    std::vector<float> y(n);
    for (int i = 0; i < n; ++i) {
        y[i] = trueWeights[i] * x[i];
    }

    Model m{DeviceBuffer<float>(n),
            DeviceBuffer<float>(n),
            DeviceBuffer<float>(n),
            DeviceBuffer<float>(n),
            DeviceBuffer<float>(kPartials),
            DeviceBuffer<float>(steps),
            n};
    {
        NvtxRange range("setup");
        m.x.upload(x);
        m.y.upload(y);
        m.w.upload(w0);
        trainStep(m, 0); // loads the kernels; its effect is undone just below
        WL_CUDA(cudaDeviceSynchronize());
        m.w.upload(w0);
    }

    std::vector<float> lossesEvery(steps);
    CpuTimer timer;
    {
        NvtxRange phase("sync-every-step");
        for (int s = 0; s < steps; ++s) {
            NvtxRange range("step " + std::to_string(s));
            trainStep(m, s);
            {
                NvtxRange item("loss.item()");
                WL_CUDA(cudaMemcpy(&lossesEvery[s], m.losses.get() + s, sizeof(float),
                                   cudaMemcpyDeviceToHost));
            }
            if ((s + 1) % reportEvery == 0) {
                progress("sync-every-step: step " + std::to_string(s + 1) + "/" +
                         std::to_string(steps) + ", loss " + std::to_string(lossesEvery[s]));
            }
        }
    }
    const double everyMs = timer.elapsedMs();
    const std::vector<float> weightsEvery = m.w.download();
    progress("sync-every-step: " + std::to_string(steps) + " steps in " + formatMs(everyMs));

    {
        NvtxRange range("reset weights");
        m.w.upload(w0);
        WL_CUDA(cudaMemset(m.losses.get(), 0, m.losses.bytes()));
        WL_CUDA(cudaDeviceSynchronize());
    }
    std::vector<float> lossesOnce(steps);
    timer.restart();
    {
        NvtxRange phase("sync-once");
        for (int s = 0; s < steps; ++s) {
            NvtxRange range("step " + std::to_string(s));
            trainStep(m, s);
            if ((s + 1) % reportEvery == 0) {
                progress("sync-once: step " + std::to_string(s + 1) + "/" + std::to_string(steps) +
                         " queued");
            }
        }
        NvtxRange copy("copy all losses");
        WL_CUDA(cudaMemcpy(lossesOnce.data(), m.losses.get(), m.losses.bytes(),
                           cudaMemcpyDeviceToHost));
    }
    const double onceMs = timer.elapsedMs();
    const std::vector<float> weightsOnce = m.w.download();
    progress("sync-once: " + std::to_string(steps) + " steps in " + formatMs(onceMs) + " (" +
             formatMs(everyMs - onceMs) + " less than syncing every step), final loss " +
             std::to_string(lossesOnce[steps - 1]));

    NvtxRange range("check");
    expectIdentical("sync-stall", "sync-once", "losses (against sync-every-step)", lossesOnce,
                    lossesEvery);
    expectIdentical("sync-stall", "sync-once", "final weights (against sync-every-step)",
                    weightsOnce, weightsEvery);
    const int middle = steps / 2;
    const Reference ref = closedForm(w0, x, y, steps, middle);
    expectLoss("sync-every-step", lossesEvery, 0, ref.lossFirst);
    expectLoss("sync-every-step", lossesEvery, middle, ref.lossMiddle);
    expectLoss("sync-every-step", lossesEvery, steps - 1, ref.lossLast);
    expectClose("sync-stall", "sync-every-step", "final weights", weightsEvery, ref.finalWeights,
                weightsEvery.size(), 1e-4);
}

} // namespace

Workload syncStallWorkload() {
    return {"sync-stall",
            "copies the loss back every step (loss.item()) against once at the end; shows the CPU "
            "stalled waiting for the GPU and the GPU idle while the CPU launches",
            {
                {"elements", "8388608", "parameters (and samples) of the element-wise model"},
                {"steps", "200", "training steps in each phase"},
            },
            [](const WorkloadArgs& args, const ProgressFn& fn) {
                return runGuarded("sync-stall", [&] { runSyncStall(args, Progress(fn)); });
            }};
}

} // namespace warpline::kernels
