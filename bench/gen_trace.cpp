// warpline-gen-trace: writes a realistic synthetic trace through the real TraceWriter, for loading
// and analysis benchmarks at scale.
//
//   warpline-gen-trace OUT.warpline [--events N] [--threads T] [--seed S] [--force]
//   warpline-gen-trace OUTDIR --ranks N [--slow-rank R] [--hosts H] [--events N] [--seed S]
//                      [--force]
//
// With --ranks, OUTDIR gets rank_0.warpline ... rank_<N-1>.warpline, the traces of one
// data-parallel job (bench/rankjobgen.h): N ranks over H hosts, an NCCL all-reduce per step, the
// slow rank's compute 2 ms longer each step. --events is then per rank (default 100,000).
//
// Mix (of N events): 40% kernels (300 names, log-normal durations, 2 streams per thread), 46%
// runtime API calls (cudaLaunchKernel with correlation ids, cudaEventRecord, one
// cudaStreamSynchronize per 64 launches), 13% NVTX push/pop ranges nested 3 deep
// (iteration > layer > forward/backward). The CPU runs ahead
// of the GPU until a synchronize waits for its stream, as real launch-bound programs do.

#include "rankjobgen.h"
#include "records.h"
#include "tracewriter.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

using namespace warpline::format;
namespace format = warpline::format;

namespace {

constexpr uint32_t kPid = 31337;
constexpr int kKernelNames = 300;
constexpr int kStreamsPerThread = 2;
constexpr int kLaunchesPerOp = 4;      // NVTX depth 2 range
constexpr int kOpsPerLayer = 4;        // NVTX depth 1 range
constexpr int kLayersPerIteration = 4; // NVTX depth 0 range: 64 launches

[[noreturn]] void usage(const char* message) {
    std::fprintf(stderr,
                 "warpline-gen-trace: %s\nusage: warpline-gen-trace OUT.warpline [--events N] "
                 "[--threads T] [--seed S] [--force]\n"
                 "       warpline-gen-trace OUTDIR --ranks N [--slow-rank R] [--hosts H] "
                 "[--events N per rank] [--seed S] [--force]\n",
                 message);
    std::exit(2);
}

std::string mangled(int i) {
    // "_Z" <len> <name> "PfPKfi": void name(float*, float const*, int)
    const std::string name = (i % 3 == 0   ? "gemm_tile_"
                              : i % 3 == 1 ? "elementwise_"
                                           : "reduce_") +
                             std::to_string(i);
    return "_Z" + std::to_string(name.size()) + name + "PfPKfi";
}

struct Thread {
    uint32_t tid = 0;
    int64_t now = 0; // CPU clock
    std::vector<int64_t> streamFree;
    std::vector<uint32_t> streams;
    uint32_t markerId = 0;
};

// --ranks: the traces of a multi-rank job into `dir`.
int writeRanks(const std::string& dir, warpline::bench::RankJobSpec spec, uint64_t eventsPerRank,
               bool force) {
    const auto t0 = std::chrono::steady_clock::now();
    spec.steps = 1;
    const auto perStep = static_cast<uint64_t>(warpline::bench::rankJobEventsPerRank(spec));
    spec.steps = static_cast<int>(std::max<uint64_t>(1, eventsPerRank / perStep));
    std::error_code ec;
    if (!force && std::filesystem::exists(std::filesystem::path(dir) / "rank_0.warpline", ec)) {
        std::fprintf(stderr,
                     "warpline-gen-trace: %s already holds rank traces (--force replaces "
                     "them)\n",
                     dir.c_str());
        return 2;
    }
    try {
        const std::vector<std::string> paths = warpline::bench::writeRankJob(dir, spec);
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("wrote %zu rank traces into %s: %d steps, %lld events per rank, %d hosts, "
                    "slow rank %d, in %.1f s\n",
                    paths.size(), dir.c_str(), spec.steps,
                    static_cast<long long>(warpline::bench::rankJobEventsPerRank(spec)), spec.hosts,
                    spec.slowRank, s);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "warpline-gen-trace: %s\n", e.what());
        return 2;
    }
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    std::string out;
    uint64_t events = 10'000'000;
    int threads = 2;
    uint32_t seed = 1;
    bool force = false;
    bool eventsGiven = false;
    warpline::bench::RankJobSpec job;
    job.ranks = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const auto value = [&]() -> const char* {
            if (i + 1 >= argc)
                usage((a + " needs a value").c_str());
            return argv[++i];
        };
        if (a == "--events") {
            events = std::strtoull(value(), nullptr, 10);
            eventsGiven = true;
        } else if (a == "--ranks")
            job.ranks = std::atoi(value());
        else if (a == "--slow-rank")
            job.slowRank = std::atoi(value());
        else if (a == "--hosts")
            job.hosts = std::atoi(value());
        else if (a == "--threads")
            threads = std::atoi(value());
        else if (a == "--seed")
            seed = static_cast<uint32_t>(std::strtoul(value(), nullptr, 10));
        else if (a == "--force")
            force = true;
        else if (a == "-h" || a == "--help")
            usage("writes a synthetic trace");
        else if (!a.empty() && a[0] == '-')
            usage(("unknown option " + a).c_str());
        else
            out = a;
    }
    if (out.empty())
        usage("no output file given");
    if (job.ranks != 0) {
        if (job.ranks < 1 || job.hosts < 1 || job.hosts > job.ranks)
            usage("need --ranks >= 1 and 1 <= --hosts <= --ranks");
        if (job.slowRank >= job.ranks)
            usage("--slow-rank must be below --ranks");
        job.seed = seed;
        return writeRanks(out, job, eventsGiven ? events : 100'000, force);
    }
    if (threads < 1 || events < 100)
        usage("need --threads >= 1 and --events >= 100");

    const auto t0 = std::chrono::steady_clock::now();
    try {
        format::TraceWriter::Options options;
        options.overwrite = force;
        options.commitInterval = std::chrono::milliseconds(60'000); // few, large transactions
        format::TraceWriter writer(out, options);
        writer.setProcess(kPid, "synthetic_train");
        writer.setMeta("workload", "synthetic");
        writer.setMeta("workload_args", "--events " + std::to_string(events));
        format::DeviceRecord device;
        device.id = 0;
        device.name = "Synthetic GPU";
        device.smCount = 132;
        writer.addDevice(device);

        std::mt19937_64 rng(seed);
        std::vector<std::string> names;
        std::vector<double> meanLog; // per kernel name: log of its typical duration
        std::lognormal_distribution<double> spread(0.0, 0.25);
        std::uniform_real_distribution<double> uniform(0.0, 1.0);
        for (int i = 0; i < kKernelNames; ++i) {
            names.push_back(mangled(i));
            meanLog.push_back(std::log(2'000.0) + 4.0 * uniform(rng)); // 2 us .. 110 us
        }
        // Zipf-like popularity: a few kernels dominate, as in real programs.
        std::vector<double> weights;
        for (int i = 0; i < kKernelNames; ++i)
            weights.push_back(1.0 / (1.0 + i));
        std::discrete_distribution<int> pickName(weights.begin(), weights.end());

        std::vector<Thread> ts(static_cast<size_t>(threads));
        uint32_t nextStream = 13;
        for (int t = 0; t < threads; ++t) {
            ts[t].tid = kPid + 1 + static_cast<uint32_t>(t);
            ts[t].now = 1'000 + t * 777;
            for (int s = 0; s < kStreamsPerThread; ++s) {
                ts[t].streams.push_back(nextStream++);
                ts[t].streamFree.push_back(0);
            }
            format::NameRecord name;
            name.object = format::NameRecord::Object::Thread;
            name.processId = kPid;
            name.threadId = ts[t].tid;
            name.name = t == 0 ? "python3" : "pt_worker_" + std::to_string(t);
            writer.addName(name);
        }

        uint32_t correlation = 0;
        uint64_t written = 0;
        uint64_t kernels = 0, apis = 0, ranges = 0;
        // Per iteration of one thread: 64 kernels, 73 API calls (64 launches, 8 event records, one
        // synchronize), 21 NVTX ranges: 40% / 46% / 13%.
        const uint64_t perIteration = 64 + 73 + 21;
        const uint64_t iterations = events / perIteration + 1;

        const auto api = [&](Thread& t, const char* name, int64_t duration, uint32_t corr) {
            format::ApiRecord r;
            r.start = t.now;
            r.end = t.now + duration;
            r.processId = kPid;
            r.threadId = t.tid;
            r.correlationId = corr;
            r.name = name;
            writer.addApi(r);
            t.now = r.end;
            ++apis;
        };
        const auto marker = [&](Thread& t, format::MarkerRecord::Kind kind, uint32_t id,
                                const std::string& name) {
            format::MarkerRecord m;
            m.kind = kind;
            m.timestamp = t.now;
            m.id = id;
            m.processId = kPid;
            m.threadId = t.tid;
            m.name = name;
            writer.addMarker(m);
            if (kind == format::MarkerRecord::Kind::End)
                ++ranges;
        };
        for (uint64_t it = 0; it < iterations && written < events; ++it) {
            for (Thread& t : ts) {
                const uint32_t iterId = (t.tid << 20) + t.markerId++;
                marker(t, format::MarkerRecord::Kind::Start, iterId, "iteration");
                for (int layer = 0; layer < kLayersPerIteration; ++layer) {
                    const uint32_t layerId = (t.tid << 20) + t.markerId++;
                    t.now += 300;
                    marker(t, format::MarkerRecord::Kind::Start, layerId,
                           "layer " + std::to_string(layer));
                    for (int op = 0; op < kOpsPerLayer; ++op) {
                        const uint32_t opId = (t.tid << 20) + t.markerId++;
                        t.now += 200;
                        marker(t, format::MarkerRecord::Kind::Start, opId,
                               op % 2 ? "backward" : "forward");
                        for (int l = 0; l < kLaunchesPerOp; ++l) {
                            t.now += 500 + static_cast<int64_t>(uniform(rng) * 1500);
                            const uint32_t corr = ++correlation;
                            const int64_t launchStart = t.now;
                            api(t, "cudaLaunchKernel_v7000",
                                2'500 + static_cast<int64_t>(uniform(rng) * 3'000), corr);
                            const int name = pickName(rng);
                            const int s = (l + op) % kStreamsPerThread;
                            format::KernelRecord k;
                            k.start = std::max(launchStart + 3'000, t.streamFree[s]);
                            k.end = k.start +
                                    static_cast<int64_t>(std::exp(meanLog[name]) * spread(rng));
                            t.streamFree[s] = k.end + 800;
                            k.streamId = t.streams[s];
                            k.contextId = 1;
                            k.correlationId = corr;
                            k.mangledName = names[name];
                            k.gridX = 64 << (name % 4);
                            k.blockX = 128 << (name % 3);
                            k.registersPerThread = 32 + name % 64;
                            writer.addKernel(k);
                            ++kernels;
                            if (l == kLaunchesPerOp - 1 && op % 2 == 1) {
                                t.now += 200;
                                api(t, "cudaEventRecord_v3020", 800, ++correlation);
                            }
                        }
                        t.now += 150;
                        marker(t, format::MarkerRecord::Kind::End, opId, "");
                    }
                    t.now += 100;
                    marker(t, format::MarkerRecord::Kind::End, layerId, "");
                }
                // The iteration ends by waiting for the GPU: the CPU stalls in the sync.
                const uint32_t corr = ++correlation;
                const int64_t waitUntil = std::max(t.streamFree[0], t.streamFree[1]);
                const int64_t syncStart = t.now + 400;
                t.now = syncStart;
                api(t, "cudaStreamSynchronize_v3020",
                    std::max<int64_t>(2'000, waitUntil - syncStart), corr);
                format::SyncRecord sync;
                sync.start = syncStart + 500;
                sync.end = std::max(sync.start, t.now - 300);
                sync.contextId = 1;
                sync.streamId = t.streams[0];
                sync.correlationId = corr;
                sync.syncType = 3;
                writer.addSync(sync);
                t.now += 200;
                marker(t, format::MarkerRecord::Kind::End, iterId, "");
                written = kernels + apis + ranges;
            }
            writer.commitIfDue();
        }
        writer.finish("complete");
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("wrote %s: %llu events (%llu kernels %.1f%%, %llu API calls %.1f%%, %llu NVTX "
                    "ranges %.1f%%) in %.1f s\n",
                    out.c_str(), static_cast<unsigned long long>(written),
                    static_cast<unsigned long long>(kernels), 100.0 * kernels / written,
                    static_cast<unsigned long long>(apis), 100.0 * apis / written,
                    static_cast<unsigned long long>(ranges), 100.0 * ranges / written, s);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "warpline-gen-trace: %s\n", e.what());
        return 2;
    }
    return 0;
}
