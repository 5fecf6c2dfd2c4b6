#include "rankjobgen.h"

#include "records.h"
#include "tracewriter.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace warpline::bench {

namespace col = warpline::format;

namespace {

constexpr uint32_t kContext = 1;
constexpr uint32_t kComputeStream = 7;
constexpr uint32_t kNcclStream = 23;
constexpr int64_t kJobStartNs = 5'000'000;         // global time the ranks begin their first step
constexpr int64_t kMaxRecordingSkewNs = 3'000'000; // ranks start recording up to this far apart
// CUPTI timestamp of global time 0 on node0; other hosts' clocks are unrelated (hours apart).
constexpr int64_t kCuptiBase = 1'795'000'000'000'000'000;
constexpr int64_t kHostClockStep = 3'907'123'456'789;    // about 65 minutes per host
constexpr int64_t kWallBase = 1'795'600'000'000'000'000; // 2026-11-25, wall clock of global 0

// Compute kernels: cuBLAS's extern "C" GEMM, and C++ kernels as (name, mangled parameters).
const std::pair<const char*, const char*> kComputeKernels[] = {
    {"sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_"
     "segment_k_off_kernel__5x_cublas",
     nullptr},
    {"gelu_forward_kernel", "PfPKfi"},
    {"layer_norm_forward_kernel", "PfPKfS1_S1_ii"},
    {"elementwise_add_kernel", "PfPKfS1_i"},
    {"softmax_forward_kernel", "PfPKfii"},
    {"sgd_update_kernel", "PfPKffi"},
};

// The name CUPTI reports: "_Z<length><name><parameters>" for a C++ kernel.
std::string mangled(const char* name, const char* parameters) {
    if (!parameters)
        return name;
    return "_Z" + std::to_string(std::string_view(name).size()) + name + parameters;
}

std::string ncclAllReduceName() {
    // Demangles to "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)".
    return mangled("ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                   "24ncclDevKernelArgsStorageILm4096EE");
}

std::string uuidOf(int host, int localRank) {
    char text[64];
    std::snprintf(text, sizeof text, "GPU-%08x-5eed-4a11-8%03x-%012x", 0x9a3c0000u + host * 64u,
                  static_cast<unsigned>(localRank), 0x51ab0000u + host * 64u + localRank);
    return text;
}

// One rank while its trace is written: its writer, its clocks and where its CPU and streams are.
// Times in the members are global (ns since the job's time 0); the file gets global - recordStart.
struct Rank {
    int rank = 0;
    int host = 0;
    int localRank = 0;
    uint32_t pid = 0;
    int64_t recordStart = 0; // global time of this file's t = 0
    std::unique_ptr<col::TraceWriter> writer;
    int64_t cpu = 0;         // global time the thread is at
    int64_t computeFree = 0; // global time the compute stream is done
    uint32_t correlation = 0;
    uint32_t markerId = 0;
    int64_t allReduceStart = 0;
    int64_t allReduceLaunch = 0;
    uint32_t allReduceCorrelation = 0;

    int64_t local(int64_t global) const { return global - recordStart; }

    uint32_t api(const char* name, int64_t start, int64_t duration) {
        col::ApiRecord r;
        r.start = local(start);
        r.end = local(start + duration);
        r.processId = pid;
        r.threadId = pid;
        r.correlationId = ++correlation;
        r.name = name;
        writer->addApi(r);
        return r.correlationId;
    }

    void kernel(int64_t start, int64_t end, uint32_t stream, uint32_t correlationId,
                const std::string& name, int32_t grid, int32_t block) {
        col::KernelRecord k;
        k.start = local(start);
        k.end = local(end);
        k.deviceId = static_cast<uint32_t>(localRank);
        k.contextId = kContext;
        k.streamId = stream;
        k.correlationId = correlationId;
        k.mangledName = name;
        k.gridX = grid;
        k.blockX = block;
        k.registersPerThread = 64;
        writer->addKernel(k);
    }

    // A kernel launch on the compute stream a little after the thread's last call: its
    // correlation id and the GPU start of its kernel (after the stream's previous work), which
    // the caller writes with kernel().
    template <typename Uniform> std::pair<uint32_t, int64_t> launchCompute(Uniform& uniform) {
        cpu += uniform(1'000, 3'000);
        const int64_t launchStart = cpu;
        const int64_t launchDuration = uniform(4'000, 7'000);
        const uint32_t c = api("cudaLaunchKernel_v7000", launchStart, launchDuration);
        cpu += launchDuration;
        return {c, std::max(launchStart + uniform(3'000, 8'000), computeFree + 1'000)};
    }

    // cudaStreamSynchronize from `cpu` until the GPU reaches `until`; the thread resumes after.
    template <typename Uniform> void sync(int64_t until, Uniform& uniform) {
        const int64_t call = cpu;
        const int64_t end = std::max(call + 2'000, until + 3'000);
        const uint32_t c = api("cudaStreamSynchronize_v3020", call, end - call);
        col::SyncRecord s;
        s.start = local(call + 500);
        s.end = local(std::max(call + 500, end - 1'000));
        s.contextId = kContext;
        s.streamId = kComputeStream;
        s.correlationId = c;
        s.syncType = 3;
        writer->addSync(s);
        cpu = end + uniform(1'000, 3'000);
    }

    void marker(col::MarkerRecord::Kind kind, int64_t at, uint32_t id, const std::string& name) {
        col::MarkerRecord m;
        m.kind = kind;
        m.timestamp = local(at);
        m.id = id;
        m.processId = pid;
        m.threadId = pid;
        m.name = name;
        writer->addMarker(m);
    }
};

void validate(const RankJobSpec& spec) {
    if (spec.ranks < 1 || spec.hosts < 1 || spec.hosts > spec.ranks)
        throw std::invalid_argument("a rank job needs at least one rank and one host, and no "
                                    "more hosts than ranks");
    if (spec.steps < 0 || spec.kernelsPerStep < 1)
        throw std::invalid_argument("a rank job needs steps >= 0 and kernelsPerStep >= 1");
    if (spec.evalEvery < 0 ||
        (spec.evalEvery > 0 &&
         (spec.evalBatches < 1 || spec.evalKernels < 1 || spec.evalKernelNs < 1)))
        throw std::invalid_argument("a rank job needs evalEvery >= 0, and with evaluation "
                                    "evalBatches, evalKernels and evalKernelNs >= 1");
    if (spec.computeNs < spec.kernelsPerStep || spec.allReduceNs < 1 || spec.slowByNs < 0)
        throw std::invalid_argument("a rank job needs computeNs >= kernelsPerStep (1 ns per "
                                    "kernel), allReduceNs >= 1 and slowByNs >= 0");
}

// A 4-byte device-to-host copy of what the compute stream holds (loss.item()), and a
// synchronize that waits for it; the thread resumes after.
template <typename Uniform> void readBack(Rank& rank, Uniform& uniform) {
    rank.cpu += uniform(3'000, 10'000);
    const int64_t copyCall = rank.cpu;
    const int64_t copyCallDuration = uniform(6'000, 9'000);
    const uint32_t copyCorrelation = rank.api("cudaMemcpyAsync_v3020", copyCall, copyCallDuration);
    rank.cpu += copyCallDuration;
    col::MemcpyRecord copy;
    const int64_t copyStart = std::max(copyCall + 5'000, rank.computeFree + 1'500);
    copy.start = rank.local(copyStart);
    copy.end = rank.local(copyStart + 2'000);
    copy.deviceId = static_cast<uint32_t>(rank.localRank);
    copy.contextId = kContext;
    copy.streamId = kComputeStream;
    copy.correlationId = copyCorrelation;
    copy.bytes = 4;
    copy.copyKind = 2; // device to host
    copy.srcKind = 2;  // device
    copy.dstKind = 1;  // pageable
    rank.writer->addMemcpy(copy);
    rank.computeFree = copyStart + 2'000;
    rank.cpu += uniform(1'000, 2'000);
    rank.sync(rank.computeFree, uniform);
}

// Rank 0 evaluates alone (batches of fixed kernels, each read back); then every rank joins a
// barrier, an all-reduce that ends when rank 0 has joined, and waits for it.
template <typename Uniform>
void evaluateThenBarrier(std::vector<Rank>& ranks, const RankJobSpec& spec,
                         const std::string& allReduce, Uniform& uniform) {
    Rank& first = ranks.front();
    for (int b = 0; b < spec.evalBatches; ++b) {
        for (int k = 0; k < spec.evalKernels; ++k) {
            const auto [c, start] = first.launchCompute(uniform);
            // Forward kernels only (the last of kComputeKernels is the optimizer's).
            const char* name =
                kComputeKernels[static_cast<size_t>(k) % (std::size(kComputeKernels) - 1)].first;
            first.kernel(start, start + spec.evalKernelNs, kComputeStream, c,
                         std::string("eval_") + name, 132, 256);
            first.computeFree = start + spec.evalKernelNs;
        }
        readBack(first, uniform);
    }
    int64_t lastJoin = 0;
    std::vector<std::pair<int64_t, uint32_t>> joins; // kernel start, launch correlation
    for (Rank& rank : ranks) {
        rank.cpu += uniform(2'000, 5'000);
        const int64_t launch = rank.cpu;
        const int64_t launchDuration = uniform(5'000, 9'000);
        const uint32_t c = rank.api("cudaLaunchKernel_v7000", launch, launchDuration);
        rank.cpu += launchDuration;
        joins.emplace_back(std::max(launch + uniform(4'000, 9'000), rank.computeFree + 2'000), c);
        lastJoin = std::max(lastJoin, joins.back().first);
    }
    const int64_t end = lastJoin + 20'000;
    for (size_t r = 0; r < ranks.size(); ++r) {
        Rank& rank = ranks[r];
        rank.kernel(joins[r].first, end, kNcclStream, joins[r].second, allReduce, 1, 512);
        rank.computeFree = std::max(rank.computeFree, end);
        rank.cpu += uniform(1'000, 2'000);
        rank.sync(end, uniform);
    }
}

} // namespace

int64_t rankJobEventsPerRank(const RankJobSpec& spec) {
    // Per step: launches and kernels, the all-reduce launch and kernel, the loss copy call and
    // copy, the synchronize call and its record, the step's NVTX range.
    // Per evaluation: on every rank the barrier's launch, kernel, synchronize call and record;
    // on rank 0 each batch's launches and kernels, its copy call and copy, its synchronize.
    const int64_t evals = spec.evalEvery > 0 ? spec.steps / spec.evalEvery : 0;
    return static_cast<int64_t>(spec.steps) * (2 * int64_t{spec.kernelsPerStep} + 7) +
           evals * (4 + int64_t{spec.evalBatches} * (2 * int64_t{spec.evalKernels} + 4));
}

std::vector<std::string> writeRankJob(const std::string& dir, const RankJobSpec& spec) {
    validate(spec);
    namespace fs = std::filesystem;
    fs::create_directories(dir);
    std::mt19937_64 rng(spec.seed);
    const auto uniform = [&rng](int64_t lo, int64_t hi) {
        return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
    };
    const int ranksPerHost = (spec.ranks + spec.hosts - 1) / spec.hosts;
    const std::string allReduce = ncclAllReduceName();

    std::vector<Rank> ranks(static_cast<size_t>(spec.ranks));
    std::vector<std::string> paths;
    // Per host: wall-clock error against true time (NTP keeps hosts within about a millisecond).
    std::vector<int64_t> wallError(static_cast<size_t>(spec.hosts));
    for (int h = 0; h < spec.hosts; ++h)
        wallError[static_cast<size_t>(h)] = h == 0 ? 0 : uniform(-1'500'000, 1'500'000);
    for (int r = 0; r < spec.ranks; ++r) {
        Rank& rank = ranks[static_cast<size_t>(r)];
        rank.rank = r;
        rank.host = r / ranksPerHost;
        rank.localRank = r % ranksPerHost;
        rank.pid = 41000 + 97 * static_cast<uint32_t>(r);
        rank.recordStart = uniform(0, kMaxRecordingSkewNs);
        rank.cpu = kJobStartNs + uniform(0, 200'000);
        const std::string path = (fs::path(dir) / ("rank_" + std::to_string(r) + ".warpline"));
        paths.push_back(path);

        col::TraceWriter::Options options;
        options.overwrite = true;
        options.commitInterval = std::chrono::milliseconds(60'000); // few, large transactions
        rank.writer = std::make_unique<col::TraceWriter>(path, options);
        col::TraceWriter& w = *rank.writer;
        const std::string host = "node" + std::to_string(rank.host);
        w.setProcess(rank.pid, "python3");
        w.setSessionStart(kWallBase + rank.recordStart + wallError[static_cast<size_t>(rank.host)]);
        w.setMeta("workload", "rank-job");
        w.setMeta("command_line", "torchrun --nnodes " + std::to_string(spec.hosts) +
                                      " --nproc-per-node " + std::to_string(ranksPerHost) +
                                      " train.py");
        w.setMeta("hostname", host);
        w.setMeta("gpu", "NVIDIA H100 80GB HBM3");
        w.setMeta("session_start_timestamp",
                  std::to_string(kCuptiBase + rank.host * kHostClockStep + rank.recordStart));
        w.setMeta("env_RANK", std::to_string(r));
        w.setMeta("env_LOCAL_RANK", std::to_string(rank.localRank));
        w.setMeta("env_WORLD_SIZE", std::to_string(spec.ranks));

        col::DeviceRecord device;
        device.id = static_cast<uint32_t>(rank.localRank);
        device.name = "NVIDIA H100 80GB HBM3";
        device.uuid = uuidOf(rank.host, rank.localRank);
        device.totalMemory = 85'045'182'464;
        device.memoryBandwidth = 3'352'320'000'000;
        device.clockRate = 1'980'000;
        device.smCount = 132;
        device.computeMajor = 9;
        device.computeMinor = 0;
        w.addDevice(device);
        col::ContextRecord context;
        context.contextId = kContext;
        context.deviceId = device.id;
        context.nullStreamId = kComputeStream;
        w.addContext(context);
        col::NameRecord thread;
        thread.object = col::NameRecord::Object::Thread;
        thread.processId = rank.pid;
        thread.threadId = rank.pid;
        thread.name = "python3";
        w.addName(thread);
    }

    constexpr size_t kKernelNames = std::size(kComputeKernels);
    std::vector<std::string> computeNames;
    for (const auto& [name, parameters] : kComputeKernels)
        computeNames.push_back(mangled(name, parameters));
    std::vector<double> share(static_cast<size_t>(spec.kernelsPerStep));
    for (int step = 0; step < spec.steps; ++step) {
        const std::string stepName = "step " + std::to_string(step);
        for (Rank& rank : ranks) {
            rank.marker(col::MarkerRecord::Kind::Start, rank.cpu, ++rank.markerId, stepName);
            // Compute: kernel durations that add up to exactly this rank's compute time.
            const int64_t compute =
                spec.computeNs + (rank.rank == spec.slowRank ? spec.slowByNs : 0);
            double total = 0;
            for (double& s : share) {
                s = 0.5 + std::uniform_real_distribution<double>(0.0, 1.0)(rng);
                total += s;
            }
            int64_t assigned = 0;
            double cumulative = 0;
            for (int k = 0; k < spec.kernelsPerStep; ++k) {
                cumulative += share[static_cast<size_t>(k)];
                const int64_t upTo = k + 1 == spec.kernelsPerStep
                                         ? compute
                                         : static_cast<int64_t>(compute * (cumulative / total));
                const int64_t duration = std::max<int64_t>(1, upTo - assigned);
                assigned += duration;
                const auto [c, start] = rank.launchCompute(uniform);
                const size_t name = static_cast<size_t>(uniform(0, kKernelNames - 1));
                rank.kernel(start, start + duration, kComputeStream, c, computeNames[name],
                            132 * static_cast<int32_t>(1 + name % 4), 128 << (name % 3));
                rank.computeFree = start + duration;
            }
            // The all-reduce waits (stream wait event) for this rank's compute.
            rank.cpu += uniform(2'000, 5'000);
            rank.allReduceLaunch = rank.cpu;
            const int64_t launchDuration = uniform(5'000, 9'000);
            rank.allReduceCorrelation =
                rank.api("cudaLaunchKernel_v7000", rank.allReduceLaunch, launchDuration);
            rank.cpu += launchDuration;
            rank.allReduceStart =
                std::max(rank.allReduceLaunch + uniform(4'000, 9'000), rank.computeFree + 2'000);
        }
        // A collective ends together on every rank: when the last one has joined, plus the
        // transfer itself.
        int64_t lastJoin = 0;
        for (const Rank& rank : ranks)
            lastJoin = std::max(lastJoin, rank.allReduceStart);
        const int64_t allReduceEnd = lastJoin + spec.allReduceNs;
        for (Rank& rank : ranks) {
            rank.kernel(rank.allReduceStart, allReduceEnd, kNcclStream, rank.allReduceCorrelation,
                        allReduce, 32, 512);
            // loss.item(): a 4-byte device-to-host copy after the all-reduce, and a synchronize.
            rank.computeFree = std::max(rank.computeFree, allReduceEnd);
            readBack(rank, uniform);
            rank.marker(col::MarkerRecord::Kind::End, rank.cpu, rank.markerId, "");
            // Python between steps (optimizer bookkeeping, data loader).
            rank.cpu += uniform(20'000, 60'000);
            rank.writer->commitIfDue();
        }
        if (spec.evalEvery > 0 && (step + 1) % spec.evalEvery == 0)
            evaluateThenBarrier(ranks, spec, allReduce, uniform);
    }
    for (Rank& rank : ranks) {
        rank.writer->setMeta("end_time", std::to_string(rank.local(rank.cpu)));
        rank.writer->finish("complete");
    }
    return paths;
}

} // namespace warpline::bench
