// runahead: the CPU queues hundreds of kernels without waiting, each far longer on the GPU than
// its launch takes on the CPU, then synchronizes once. On the timeline the launches end long
// before the kernels do, the launch-to-start lag grows with every kernel, and the one
// cudaDeviceSynchronize at the end is where the CPU finally waits for the queue to drain.

#include "builtin.h"
#include "cudacheck.h"
#include "hostref.h"

namespace warpline::kernels {

// Each thread spins on a dependent chain of `spin` multiply-adds (a stand-in for real work that
// takes a fixed time), then adds 1 to its element. acc stays positive for data >= 0, so the
// never-taken branch keeps the compiler from dropping the loop without changing the result.
__global__ void runaheadSpin(float* data, int n, int spin) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    const float x = data[i];
    float acc = x;
    for (int k = 0; k < spin; ++k) {
        acc = acc * 0.999f + 0.001f;
    }
    data[i] = acc < 0.0f ? acc : x + 1.0f;
}

namespace {

constexpr int kBlock = 256;

void runRunahead(const WorkloadArgs& args, const Progress& progress) {
    const int launches = static_cast<int>(boundedInteger(args, "launches", 1, 100000));
    const int spin = static_cast<int>(boundedInteger(args, "spin", 0, 100000000));
    const int n = static_cast<int>(boundedInteger(args, "elements", 1, 1 << 24));

    std::vector<float> host = uniformVector(n, 1, 0.0f, 1.0f);
    std::vector<float> expected = host;
    DeviceBuffer<float> data(n);
    {
        NvtxRange range("setup");
        data.upload(host);
        // First launch loads the module; keep that one-off cost out of the queue we study.
        runaheadSpin<<<blocksFor(n, kBlock), kBlock>>>(data.get(), n, 1);
        WL_CHECK_LAUNCH("runaheadSpin");
        WL_CUDA(cudaDeviceSynchronize());
        for (auto& v : expected) {
            v += 1.0f;
        }
    }

    CpuTimer timer;
    {
        NvtxRange range("launch " + std::to_string(launches) + " kernels, no sync");
        for (int i = 0; i < launches; ++i) {
            runaheadSpin<<<blocksFor(n, kBlock), kBlock>>>(data.get(), n, spin);
            WL_CHECK_LAUNCH("runaheadSpin");
            if ((i + 1) % 100 == 0 && i + 1 < launches) {
                progress("launch: " + std::to_string(i + 1) + "/" + std::to_string(launches) +
                         " kernels queued after " + formatMs(timer.elapsedMs()));
            }
        }
    }
    const double launchMs = timer.elapsedMs();
    progress("launch: all " + std::to_string(launches) + " kernels queued in " +
             formatMs(launchMs) + "; the GPU is still working through them");
    {
        NvtxRange range("sync once");
        WL_CUDA(cudaDeviceSynchronize());
    }
    const double totalMs = timer.elapsedMs();
    progress("sync: waited " + formatMs(totalMs - launchMs) + " for the queue to drain (" +
             formatMs(totalMs / launches) + " of GPU time per kernel)");

    NvtxRange range("check");
    for (int i = 0; i < launches; ++i) {
        for (auto& v : expected) {
            v += 1.0f;
        }
    }
    expectClose("runahead", "launch", "data after " + std::to_string(launches) + " increments",
                data.download(), expected, expected.size(), 0.0);
}

} // namespace

Workload runaheadWorkload() {
    return {"runahead",
            "queues hundreds of long kernels with no sync between them, then syncs once; shows "
            "the CPU running far ahead of the GPU and the launch queue filling up",
            {
                {"launches", "500", "kernels queued before the one synchronization"},
                {"spin", "20000", "dependent multiply-adds per thread: sets each kernel's length"},
                {"elements", "32768", "array size (one thread each); small, so spin sets the time"},
            },
            [](const WorkloadArgs& args, const ProgressFn& fn) {
                return runGuarded("runahead", [&] { runRunahead(args, Progress(fn)); });
            }};
}

} // namespace warpline::kernels
