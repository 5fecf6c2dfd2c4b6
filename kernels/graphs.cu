// graphs: thousands of tiny kernels, each far shorter than its launch. Phase "eager" launches them
// one by one: the GPU idles between kernels while the CPU pays one launch call per kernel. Phase
// "capture" records the same sequence once into a CUDA graph (stream capture), and phase "replay"
// launches that graph a few times: one cudaGraphLaunch call per replay, and the kernels run back
// to back.

#include "builtin.h"
#include "cudacheck.h"
#include "hostref.h"

namespace warpline::kernels {

namespace {
constexpr int kBlock = 256;
}

__global__ void graphsAddOne(float* data, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        data[i] += 1.0f;
    }
}

namespace {

void launchSequence(float* data, int n, int launches, cudaStream_t stream) {
    for (int i = 0; i < launches; ++i) {
        graphsAddOne<<<blocksFor(n, kBlock), kBlock, 0, stream>>>(data, n);
        WL_CHECK_LAUNCH("graphsAddOne");
    }
}

// Owns a graph and its executable instance.
class Graph {
public:
    Graph() = default;
    ~Graph() {
        if (m_exec) {
            cudaGraphExecDestroy(m_exec);
        }
        if (m_graph) {
            cudaGraphDestroy(m_graph);
        }
    }
    Graph(const Graph&) = delete;
    Graph& operator=(const Graph&) = delete;

    // Records what record() enqueues on `stream` (which must not be the legacy default stream).
    // If record() throws, the capture is ended so the stream is usable (and destroyable) again.
    template <typename Record> void capture(cudaStream_t stream, Record&& record) {
        WL_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        try {
            record();
        } catch (...) {
            cudaGraph_t partial = nullptr;
            if (cudaStreamEndCapture(stream, &partial) == cudaSuccess && partial) {
                cudaGraphDestroy(partial);
            }
            throw;
        }
        WL_CUDA(cudaStreamEndCapture(stream, &m_graph));
    }
    void instantiate() { WL_CUDA(cudaGraphInstantiate(&m_exec, m_graph, 0)); }
    void launch(cudaStream_t stream) { WL_CUDA(cudaGraphLaunch(m_exec, stream)); }
    std::size_t nodeCount() const {
        std::size_t count = 0;
        WL_CUDA(cudaGraphGetNodes(m_graph, nullptr, &count));
        return count;
    }

private:
    cudaGraph_t m_graph = nullptr;
    cudaGraphExec_t m_exec = nullptr;
};

void runGraphs(const WorkloadArgs& args, const Progress& progress) {
    const int launches = static_cast<int>(boundedInteger(args, "launches", 1, 100000));
    const int n = static_cast<int>(boundedInteger(args, "elements", 1, 1 << 24));
    const int replays = static_cast<int>(boundedInteger(args, "replays", 1, 10000));

    const std::vector<float> initial = uniformVector(n, 71, 0.0f, 1.0f);
    std::vector<float> expected = initial;
    const auto addExpected = [&](int times) {
        for (int t = 0; t < times; ++t) {
            for (auto& v : expected) {
                v += 1.0f;
            }
        }
    };
    DeviceBuffer<float> data(n);
    Stream stream("graphs stream");
    {
        NvtxRange range("setup");
        data.upload(initial);
        launchSequence(data.get(), n, 1, stream.get());
        WL_CUDA(cudaStreamSynchronize(stream.get()));
        addExpected(1);
    }

    CpuTimer timer;
    {
        NvtxRange phase("eager");
        launchSequence(data.get(), n, launches, stream.get());
        WL_CUDA(cudaStreamSynchronize(stream.get()));
    }
    const double eagerMs = timer.elapsedMs();
    progress("eager: " + std::to_string(launches) + " launches in " + formatMs(eagerMs));
    addExpected(launches);
    {
        NvtxRange range("check eager");
        expectClose("graphs", "eager", "data", data.download(), expected, expected.size(), 0.0);
    }

    Graph graph;
    timer.restart();
    {
        NvtxRange phase("capture");
        graph.capture(stream.get(), [&] { launchSequence(data.get(), n, launches, stream.get()); });
        graph.instantiate();
    }
    progress("capture: " + std::to_string(graph.nodeCount()) +
             " kernel nodes captured and instantiated in " + formatMs(timer.elapsedMs()));

    timer.restart();
    {
        NvtxRange phase("replay");
        for (int r = 0; r < replays; ++r) {
            NvtxRange range("replay " + std::to_string(r));
            graph.launch(stream.get());
        }
        WL_CUDA(cudaStreamSynchronize(stream.get()));
    }
    const double replayMs = timer.elapsedMs();
    progress("replay: " + std::to_string(replays) + " x " + std::to_string(launches) +
             " kernels in " + formatMs(replayMs) + " (" + formatMs(replayMs / replays) +
             " per replay against " + formatMs(eagerMs) + " eager)");
    addExpected(launches * replays);

    NvtxRange range("check replay");
    expectClose("graphs", "replay", "data", data.download(), expected, expected.size(), 0.0);
}

} // namespace

Workload graphsWorkload() {
    return {"graphs",
            "thousands of tiny kernels launched one by one against the same sequence captured "
            "once into a CUDA graph and replayed; shows the launch overhead a graph removes",
            {
                {"launches", "2000", "tiny kernels in the sequence"},
                {"elements", "1024", "floats each kernel adds 1 to"},
                {"replays", "5", "graph launches in the replay phase"},
            },
            [](const WorkloadArgs& args, const ProgressFn& fn) {
                return runGuarded("graphs", [&] { runGraphs(args, Progress(fn)); });
            }};
}

} // namespace warpline::kernels
