#pragma once

// Rank-job generator: writes the traces of a synthetic data-parallel training job, one Warpline
// trace per rank, through the collector's real TraceWriter, for the session tests and benchmarks
// (model/loading/tracesession.h) and warpline-gen-trace --ranks.
//
// Each rank is one process (pid differing per rank) on host "node<h>" using GPU <local rank>. Its
// file is what the collector writes for it: its own t = 0 (the ranks start recording up to 3 ms
// apart), WARPLINE_META hostname, session_start_timestamp, env_RANK, env_LOCAL_RANK and
// env_WORLD_SIZE, TARGET_INFO_SESSION_START_TIME, and a TARGET_INFO_GPU row for its device. The
// CUPTI clocks of different hosts are unrelated (hours apart); their wall clocks differ by about a
// millisecond, as NTP leaves them.
//
// Per step, thread "python3" pushes the NVTX range "step <i>", launches kernelsPerStep compute
// kernels (cudaLaunchKernel, names from a small set) on the compute stream, then one NCCL
// all-reduce ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)") on the
// communication stream, then reads the loss (cudaMemcpyAsync device-to-host on the compute
// stream, then cudaStreamSynchronize, with its SYNCHRONIZATION record) and pops the range. A
// rank's all-reduce kernel starts when its own compute is done (or its launch arrives, if later)
// and ends at the same global time on every rank: the latest start of the step plus
// allReduceNs. The slow rank's compute takes slowByNs longer each step, so every other rank waits
// that long inside its all-reduce kernel.

#include <cstdint>
#include <string>
#include <vector>

namespace warpline::bench {

struct RankJobSpec {
    int ranks = 8;
    int steps = 10;
    int hosts = 1; // ranks spread evenly over hosts ("node0", "node1"...), in rank order
    int slowRank = -1;
    int64_t slowByNs = 2'000'000; // that rank's compute is slower each step
    int64_t computeNs = 5'000'000;
    int64_t allReduceNs = 1'000'000; // per step, per rank
    int kernelsPerStep = 20;
    // Rank 0 alone evaluates after every evalEvery-th step (0: never): evalBatches batches of
    // evalKernels kernels of fixed names, each batch read back (a 4-byte copy and a synchronize),
    // then every rank joins a barrier (an all-reduce the others wait in for rank 0).
    int evalEvery = 0;
    int evalBatches = 8;
    int evalKernels = 6;
    int64_t evalKernelNs = 300'000;
    uint64_t seed = 1;
};

// Writes rank_<r>.warpline into dir (one process per rank, pid differing, GPU = local rank) and
// returns the paths in rank order. Creates dir when missing and replaces files of those names.
// Throws std::invalid_argument for a spec that makes no job (ranks or hosts < 1, more hosts than
// ranks, steps < 0, kernelsPerStep < 1, negative durations) and warpline::format::TraceWriteError
// when a file cannot be written.
std::vector<std::string> writeRankJob(const std::string& dir, const RankJobSpec& spec);

// Events each rank's trace holds for a spec (rank 0's, with evaluation) (kernels, API calls,
// copies, syncs, NVTX ranges).
int64_t rankJobEventsPerRank(const RankJobSpec& spec);

} // namespace warpline::bench
