// gelu: the tanh approximation of GeLU,
//     gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
// computed as eight small element-wise kernels, one per operation (what an eager framework without
// fusion launches), against one fused kernel. The unfused variant pays eight launches and moves
// the whole array through memory eight times; the fused one reads x once and writes y once.

#include "builtin.h"
#include "cudacheck.h"
#include "hostref.h"

#include <cmath>

namespace warpline::kernels {

namespace {
constexpr int kBlock = 256;
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubeCoefficient = 0.044715f;
} // namespace

__global__ void geluCube(const float* x, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = x[i] * x[i] * x[i];
    }
}

__global__ void geluScale(float* data, float factor, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        data[i] *= factor;
    }
}

__global__ void geluAdd(const float* a, float* data, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        data[i] += a[i];
    }
}

__global__ void geluTanh(float* data, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        data[i] = tanhf(data[i]);
    }
}

__global__ void geluAddScalar(float* data, float value, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        data[i] += value;
    }
}

__global__ void geluMultiply(const float* a, float* data, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        data[i] *= a[i];
    }
}

__global__ void geluFused(const float* x, float* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const float v = x[i];
        const float inner = kSqrt2OverPi * (v + kCubeCoefficient * v * v * v);
        y[i] = 0.5f * v * (1.0f + tanhf(inner));
    }
}

namespace {

// y = gelu(x), one operation per launch, in place on y.
void geluUnfused(const float* x, float* y, int n) {
    const unsigned int grid = blocksFor(n, kBlock);
    geluCube<<<grid, kBlock>>>(x, y, n); // x^3
    WL_CHECK_LAUNCH("geluCube");
    geluScale<<<grid, kBlock>>>(y, kCubeCoefficient, n); // 0.044715 x^3
    WL_CHECK_LAUNCH("geluScale");
    geluAdd<<<grid, kBlock>>>(x, y, n); // x + 0.044715 x^3
    WL_CHECK_LAUNCH("geluAdd");
    geluScale<<<grid, kBlock>>>(y, kSqrt2OverPi, n); // sqrt(2/pi) (...)
    WL_CHECK_LAUNCH("geluScale");
    geluTanh<<<grid, kBlock>>>(y, n); // tanh(...)
    WL_CHECK_LAUNCH("geluTanh");
    geluAddScalar<<<grid, kBlock>>>(y, 1.0f, n); // 1 + tanh(...)
    WL_CHECK_LAUNCH("geluAddScalar");
    geluMultiply<<<grid, kBlock>>>(x, y, n); // x (1 + tanh(...))
    WL_CHECK_LAUNCH("geluMultiply");
    geluScale<<<grid, kBlock>>>(y, 0.5f, n); // 0.5 x (1 + tanh(...))
    WL_CHECK_LAUNCH("geluScale");
}

void geluFusedLaunch(const float* x, float* y, int n) {
    geluFused<<<blocksFor(n, kBlock), kBlock>>>(x, y, n);
    WL_CHECK_LAUNCH("geluFused");
}

void runGelu(const WorkloadArgs& args, const Progress& progress) {
    const int n = static_cast<int>(boundedInteger(args, "elements", 1, 1 << 28));
    const int repeats = static_cast<int>(boundedInteger(args, "repeats", 1, 100000));

    const std::vector<float> x = uniformVector(n, 21, -4.0f, 4.0f);
    DeviceBuffer<float> dx(n);
    DeviceBuffer<float> dUnfused(n);
    DeviceBuffer<float> dFused(n);
    {
        NvtxRange range("setup");
        dx.upload(x);
        geluUnfused(dx.get(), dUnfused.get(), n); // loads every kernel once
        geluFusedLaunch(dx.get(), dFused.get(), n);
        WL_CUDA(cudaDeviceSynchronize());
    }

    const double unfusedMs = timeRepeats("unfused", repeats, progress,
                                         [&] { geluUnfused(dx.get(), dUnfused.get(), n); });
    const double fusedMs = timeRepeats("fused", repeats, progress,
                                       [&] { geluFusedLaunch(dx.get(), dFused.get(), n); });
    progress("fused: " + formatRatio(unfusedMs / fusedMs) + " faster than unfused, wall clock");

    NvtxRange range("check");
    const std::vector<float> unfused = dUnfused.download();
    const std::vector<float> fused = dFused.download();
    std::vector<double> ref(n);
    const double c = std::sqrt(2.0 / 3.14159265358979323846);
    for (int i = 0; i < n; ++i) {
        const double v = x[i];
        ref[i] = 0.5 * v * (1.0 + std::tanh(c * (v + 0.044715 * v * v * v)));
    }
    // Outputs are of the inputs' magnitude (up to 4), even when a short run draws only a few small
    // ones; measure errors against that scale.
    expectClose("gelu", "unfused", "output", unfused, ref, ref.size(), 1e-4, 1.0);
    expectClose("gelu", "fused", "output", fused, ref, ref.size(), 1e-4, 1.0);
    expectClose("gelu", "fused", "output (against unfused)", fused, unfused, ref.size(), 1e-4, 1.0);
}

} // namespace

Workload geluWorkload() {
    return {"gelu",
            "GeLU as eight small element-wise kernels against one fused kernel; shows the launches "
            "and memory round trips that kernel fusion removes",
            {
                {"elements", "4194304", "floats in the input array"},
                {"repeats", "20", "times each variant runs"},
            },
            [](const WorkloadArgs& args, const ProgressFn& fn) {
                return runGuarded("gelu", [&] { runGelu(args, Progress(fn)); });
            }};
}

} // namespace warpline::kernels
