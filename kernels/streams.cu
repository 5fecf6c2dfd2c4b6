// streams: the input is processed in chunks, each copied to the GPU, transformed by a kernel and
// copied back. Phase "one-stream" does it all on the default stream from pageable memory, so copy,
// compute, copy, copy, compute, ... run strictly one after another. Phase "multi-stream" spreads
// the chunks round-robin over several streams from pinned memory with cudaMemcpyAsync, so one
// chunk's upload overlaps another's kernel and a third's download; the host then waits for each
// chunk's event in turn, picking up results as they land.
//
// The kernel applies `work` steps of a 32-bit linear congruential generator to every element: a
// stand-in for per-element compute whose result the CPU can check exactly in O(1) per element,
// because `work` steps of v -> a v + c compose to one affine map v -> A v + C (mod 2^32).

#include "builtin.h"
#include "cudacheck.h"
#include "hostref.h"

#include <cstdint>
#include <cstring>

namespace warpline::kernels {

namespace {
constexpr int kBlock = 256;
constexpr std::uint32_t kLcgMultiplier = 1664525u;
constexpr std::uint32_t kLcgIncrement = 1013904223u;
} // namespace

__global__ void streamsCompute(const std::uint32_t* in, std::uint32_t* out, int n, int work) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        std::uint32_t v = in[i];
        for (int k = 0; k < work; ++k) {
            v = v * kLcgMultiplier + kLcgIncrement;
        }
        out[i] = v;
    }
}

namespace {

// The expected output: `work` LCG steps composed into one affine map.
std::vector<std::uint32_t> reference(const std::vector<std::uint32_t>& in, int work) {
    std::uint32_t a = 1;
    std::uint32_t c = 0;
    for (int k = 0; k < work; ++k) {
        a = kLcgMultiplier * a;
        c = kLcgMultiplier * c + kLcgIncrement;
    }
    std::vector<std::uint32_t> out(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        out[i] = a * in[i] + c;
    }
    return out;
}

void runStreams(const WorkloadArgs& args, const Progress& progress) {
    const int chunks = static_cast<int>(boundedInteger(args, "chunks", 1, 4096));
    const int chunkElements = static_cast<int>(boundedInteger(args, "chunk-elements", 1, 1 << 26));
    const int streamCount = static_cast<int>(boundedInteger(args, "streams", 2, 32));
    const int work = static_cast<int>(boundedInteger(args, "work", 0, 1000000));
    const std::size_t total = static_cast<std::size_t>(chunks) * chunkElements;
    if (total > (std::size_t(1) << 27)) {
        throw std::invalid_argument("--chunks x --chunk-elements must be at most 134217728 (got " +
                                    std::to_string(total) + ")");
    }
    const std::size_t chunkBytes = static_cast<std::size_t>(chunkElements) * sizeof(std::uint32_t);
    const unsigned int grid = blocksFor(chunkElements, kBlock);

    std::vector<std::uint32_t> input(total);
    Rng rng(61);
    for (auto& v : input) {
        v = static_cast<std::uint32_t>(rng.next());
    }
    const std::vector<std::uint32_t> expected = reference(input, work);

    std::vector<DeviceBuffer<std::uint32_t>> deviceIn;
    std::vector<DeviceBuffer<std::uint32_t>> deviceOut;
    for (int s = 0; s < streamCount; ++s) {
        deviceIn.emplace_back(chunkElements);
        deviceOut.emplace_back(chunkElements);
    }
    {
        NvtxRange range("setup");
        WL_CUDA(cudaMemset(deviceIn[0].get(), 0, deviceIn[0].bytes()));
        streamsCompute<<<grid, kBlock>>>(deviceIn[0].get(), deviceOut[0].get(), chunkElements, 1);
        WL_CHECK_LAUNCH("streamsCompute");
        WL_CUDA(cudaDeviceSynchronize());
    }

    // Phase one-stream: pageable memory, default stream, everything in sequence.
    std::vector<std::uint32_t> pageableOut(total);
    CpuTimer timer;
    {
        NvtxRange phase("one-stream");
        for (int c = 0; c < chunks; ++c) {
            NvtxRange range("chunk " + std::to_string(c));
            const std::size_t offset = static_cast<std::size_t>(c) * chunkElements;
            WL_CUDA(cudaMemcpy(deviceIn[0].get(), input.data() + offset, chunkBytes,
                               cudaMemcpyHostToDevice));
            streamsCompute<<<grid, kBlock>>>(deviceIn[0].get(), deviceOut[0].get(), chunkElements,
                                             work);
            WL_CHECK_LAUNCH("streamsCompute");
            WL_CUDA(cudaMemcpy(pageableOut.data() + offset, deviceOut[0].get(), chunkBytes,
                               cudaMemcpyDeviceToHost));
        }
    }
    const double oneStreamMs = timer.elapsedMs();
    progress("one-stream: " + std::to_string(chunks) + " chunks in " + formatMs(oneStreamMs));

    // Phase multi-stream: pinned memory, chunk c on stream c % streamCount, all copies async.
    PinnedBuffer<std::uint32_t> pinnedIn(total);
    PinnedBuffer<std::uint32_t> pinnedOut(total);
    std::vector<Stream> streams;
    std::vector<Event> chunkDone(chunks);
    {
        NvtxRange range("setup pinned memory and streams");
        std::memcpy(pinnedIn.get(), input.data(), total * sizeof(std::uint32_t));
        for (int s = 0; s < streamCount; ++s) {
            streams.emplace_back("chunk stream " + std::to_string(s));
        }
    }
    timer.restart();
    double firstChunkMs = 0.0;
    {
        NvtxRange phase("multi-stream");
        {
            NvtxRange range("queue copies and kernels");
            for (int c = 0; c < chunks; ++c) {
                const int s = c % streamCount;
                const cudaStream_t stream = streams[s].get();
                const std::size_t offset = static_cast<std::size_t>(c) * chunkElements;
                WL_CUDA(cudaMemcpyAsync(deviceIn[s].get(), pinnedIn.get() + offset, chunkBytes,
                                        cudaMemcpyHostToDevice, stream));
                streamsCompute<<<grid, kBlock, 0, stream>>>(deviceIn[s].get(), deviceOut[s].get(),
                                                            chunkElements, work);
                WL_CHECK_LAUNCH("streamsCompute");
                WL_CUDA(cudaMemcpyAsync(pinnedOut.get() + offset, deviceOut[s].get(), chunkBytes,
                                        cudaMemcpyDeviceToHost, stream));
                WL_CUDA(cudaEventRecord(chunkDone[c].get(), stream));
            }
        }
        NvtxRange range("wait for each chunk");
        for (int c = 0; c < chunks; ++c) {
            WL_CUDA(cudaEventSynchronize(chunkDone[c].get()));
            if (c == 0) {
                firstChunkMs = timer.elapsedMs();
            }
        }
    }
    const double multiStreamMs = timer.elapsedMs();
    progress("multi-stream: " + std::to_string(chunks) + " chunks on " +
             std::to_string(streamCount) + " streams in " + formatMs(multiStreamMs) +
             " (first chunk back after " + formatMs(firstChunkMs) + "), " +
             formatRatio(oneStreamMs / multiStreamMs) + " faster than one-stream");

    NvtxRange range("check");
    expectIdentical("streams", "one-stream", "output", pageableOut, expected);
    const std::vector<std::uint32_t> pinnedCopy(pinnedOut.get(), pinnedOut.get() + total);
    expectIdentical("streams", "multi-stream", "output", pinnedCopy, expected);
}

} // namespace

Workload streamsWorkload() {
    return {"streams",
            "chunked copy-compute-copy on one stream from pageable memory against several streams "
            "from pinned memory; shows copies overlapping compute",
            {
                {"chunks", "8", "chunks the input is split into"},
                {"chunk-elements", "4194304", "32-bit elements per chunk (16 MiB)"},
                {"streams", "3", "streams in the multi-stream phase (at least 2)"},
                {"work", "4000", "generator steps per element: sets the kernel's length"},
            },
            [](const WorkloadArgs& args, const ProgressFn& fn) {
                return runGuarded("streams", [&] { runStreams(args, Progress(fn)); });
            }};
}

} // namespace warpline::kernels
