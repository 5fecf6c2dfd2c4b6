#include "crossrank.h"

#include "analysishelpers.h"
#include "communication.h"
#include "saturating.h"
#include "steps.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

namespace warpline::model {

std::span<const RankStep> CrossRankAnalysis::stepsOf(size_t rank) const {
    const RankSummary& r = ranks[rank];
    return std::span<const RankStep>(rankSteps).subspan(r.stepsBegin, r.steps());
}

const RankStep* CrossRankAnalysis::step(size_t rank, size_t k) const {
    const RankSummary& r = ranks[rank];
    return k < r.steps() ? &rankSteps[r.stepsBegin + k] : nullptr;
}

std::string rankLabel(const TraceStore& store, uint32_t source) {
    if (source < store.sources().size())
        return store.sources()[source].label();
    const std::string name = std::filesystem::path(store.path()).filename().string();
    return name.empty() ? std::string("rank ?") : name;
}

namespace {

// The source of a device; 0 when it is not listed.
uint32_t deviceSource(const TraceStore& store, uint32_t deviceId, size_t sourceCount) {
    const DeviceInfo* device = store.device(deviceId);
    return device ? std::min<uint32_t>(device->source, static_cast<uint32_t>(sourceCount - 1)) : 0;
}

struct CommKernel {
    int64_t start = 0; // GPU
    int64_t end = 0;
    int64_t cpuTime = 0; // its launch call's start, else `start`
    EventRef op;
};

// Steps are matched across ranks by order. When every rank numbers its steps (one counter, rising
// by one), a rank whose recording began later than the others' would be compared one or more
// steps off: drop the steps before the first number every rank has, so step k is the same step
// everywhere.
void alignStepNumbers(std::vector<std::vector<RankStep>>& steps) {
    int64_t first = std::numeric_limits<int64_t>::min();
    for (const std::vector<RankStep>& rank : steps) {
        if (rank.empty())
            continue;
        for (size_t i = 0; i < rank.size(); ++i) {
            if (!rank[i].number || (i > 0 && *rank[i].number != *rank[i - 1].number + 1))
                return; // not one rising counter: order it is
        }
        first = std::max(first, *rank.front().number);
    }
    for (std::vector<RankStep>& rank : steps) {
        const auto keep = std::find_if(rank.begin(), rank.end(),
                                       [first](const RankStep& s) { return *s.number >= first; });
        rank.erase(rank.begin(), keep);
    }
}

void assignCommKernels(std::vector<RankStep>& steps, const std::vector<CommKernel>& kernels) {
    for (const CommKernel& c : kernels) {
        const std::ptrdiff_t k = stepHolding(steps, c.cpuTime);
        if (k < 0)
            continue;
        RankStep& s = steps[static_cast<size_t>(k)];
        ++s.commKernels;
        accumulate(s.commTime, c.end - c.start);
        if (!s.arrived() || c.start < s.arrival) {
            s.arrival = c.start;
            s.arrivalOp = c.op;
        }
    }
}

std::vector<RankStep> commKernelSteps(const std::vector<CommKernel>& kernels, int64_t firstOp) {
    std::vector<RankStep> steps;
    steps.reserve(kernels.size());
    int64_t previousEnd = firstOp;
    for (const CommKernel& c : kernels) {
        steps.push_back({.start = std::min(previousEnd, c.start),
                         .end = c.end,
                         .arrival = c.start,
                         .arrivalOp = c.op,
                         .commKernels = 1,
                         .commTime = c.end - c.start,
                         .wait = 0,
                         .number = std::nullopt});
        previousEnd = c.end;
    }
    return steps;
}

// Whether most of a rank's steps (at least two) hold a collective: they are its loop that
// communicates, the training step.
bool holdCollectives(const std::vector<RankStep>& steps) {
    size_t holding = 0;
    for (const RankStep& s : steps)
        holding += s.commKernels > 0;
    return steps.size() >= 2 && 2 * holding >= steps.size();
}

// `donor`'s steps on a rank with the same collectives (`own`, `theirs`: both sorted by start): a
// communicator runs its collectives in one order on every rank, so the k-th is the same
// collective everywhere. Each boundary of the donor's steps lies after some collective j (by
// launch time); on the rank it lies as long after the rank's collective j, and before the rank's
// collective j + 1, so step k holds the same collectives on both. A boundary before the first
// collective lies as long before the rank's first.
std::vector<RankStep> stepsLike(const std::vector<RankStep>& donor,
                                const std::vector<CommKernel>& theirs,
                                const std::vector<CommKernel>& own) {
    std::vector<int64_t> theirTimes, ownTimes;
    for (const CommKernel& c : theirs)
        theirTimes.push_back(c.cpuTime);
    for (const CommKernel& c : own)
        ownTimes.push_back(c.cpuTime);
    std::sort(theirTimes.begin(), theirTimes.end());
    std::sort(ownTimes.begin(), ownTimes.end());
    const auto map = [&](int64_t t, int64_t floor) {
        // The donor's collectives launched before t: t lies after the last of them.
        const auto after = static_cast<size_t>(
            std::lower_bound(theirTimes.begin(), theirTimes.end(), t) - theirTimes.begin());
        int64_t mapped = 0;
        if (after == 0) {
            mapped = ownTimes.front() - (theirTimes.front() - t);
        } else {
            mapped = ownTimes[after - 1] + (t - theirTimes[after - 1]);
            mapped = std::max(mapped, ownTimes[after - 1] + 1);
            if (after < ownTimes.size())
                mapped = std::min(mapped, ownTimes[after]);
        }
        return std::max(mapped, floor);
    };
    std::vector<RankStep> steps;
    int64_t floor = std::numeric_limits<int64_t>::min();
    for (const RankStep& d : donor) {
        RankStep s;
        s.start = map(d.start, floor);
        s.end = map(d.end, s.start);
        s.number = d.number;
        floor = s.end;
        steps.push_back(s);
    }
    return steps;
}

// A rank whose own steps are not the loop that communicates (its longest repeating loop holds
// no collective: validation it alone runs) or that found none but one per collective takes the
// steps of the rank with the most steps that hold its collectives, when both ran the same
// number of collectives (stepsLike).
void borrowSteps(std::vector<std::vector<RankStep>>& stepsOfRank,
                 const std::vector<std::vector<CommKernel>>& comm,
                 std::vector<RankSummary>& ranks) {
    std::vector<bool> holds(ranks.size());
    for (size_t r = 0; r < ranks.size(); ++r)
        holds[r] =
            (ranks[r].origin == StepOrigin::Nvtx || ranks[r].origin == StepOrigin::Repeats) &&
            holdCollectives(stepsOfRank[r]);
    for (size_t r = 0; r < ranks.size(); ++r) {
        const bool borrow = ranks[r].origin == StepOrigin::CommKernels ||
                            (ranks[r].origin == StepOrigin::Repeats && !holds[r]);
        if (!borrow || comm[r].empty())
            continue;
        size_t donor = ranks.size();
        for (size_t d = 0; d < ranks.size(); ++d) {
            if (holds[d] && comm[d].size() == comm[r].size() &&
                (donor == ranks.size() || stepsOfRank[d].size() > stepsOfRank[donor].size()))
                donor = d;
        }
        if (donor == ranks.size())
            continue;
        stepsOfRank[r] = stepsLike(stepsOfRank[donor], comm[donor], comm[r]);
        assignCommKernels(stepsOfRank[r], comm[r]);
        ranks[r].origin = StepOrigin::OtherRank;
        ranks[r].stepsFrom = static_cast<uint32_t>(donor);
    }
}

// "all-reduce", "all-gather", ... from a communication kernel's name; "collective" otherwise.
std::string collectiveName(std::string_view kernel) {
    std::string squashed;
    for (const char c : kernel) {
        if (c != '_' && c != '-')
            squashed += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    static constexpr std::pair<std::string_view, std::string_view> kNames[] = {
        {"allreduce", "all-reduce"},
        {"allgather", "all-gather"},
        {"reducescatter", "reduce-scatter"},
        {"alltoall", "all-to-all"},
        {"sendrecv", "send/receive"},
        {"broadcast", "broadcast"},
        {"reduce", "reduce"},
    };
    for (const auto& [part, name] : kNames) {
        if (squashed.find(part) != std::string::npos)
            return std::string(name);
    }
    return "collective";
}

// The collective of each step the ranks are compared at: when every rank ran as many collectives
// (NCCL runs a communicator's collectives in one order, so the g-th is the same collective on
// every rank), of those launched within step k on every rank that reached one, the one whose
// arrivals lie furthest apart. A step that waits at its first all-reduce bucket on one rank and
// at a barrier after a validation only another rank runs is decided by the barrier. Sets each
// rank's arrival and arrivalOp to its kernel there; without such a collective (ranks that ran
// different numbers, steps that share none), the first of the step stays.
void chooseDecisiveCollectives(CrossRankAnalysis& a,
                               const std::vector<std::vector<CommKernel>>& comm) {
    size_t count = std::numeric_limits<size_t>::max();
    for (size_t r = 0; r < a.ranks.size() && r < comm.size(); ++r) {
        if (a.ranks[r].steps() == 0)
            continue;
        if (count != std::numeric_limits<size_t>::max() && comm[r].size() != count)
            return;
        count = comm[r].size();
    }
    if (count == std::numeric_limits<size_t>::max() || count == 0)
        return;
    // stepOf[r][g]: the step of rank r that launched its g-th collective, or -1.
    std::vector<std::vector<int64_t>> stepOf(a.ranks.size());
    for (size_t r = 0; r < a.ranks.size() && r < comm.size(); ++r) {
        if (a.ranks[r].steps() == 0)
            continue;
        const std::span<const RankStep> steps = a.stepsOf(r);
        stepOf[r].assign(count, -1);
        for (size_t g = 0; g < count; ++g)
            stepOf[r][g] = stepHolding(steps, comm[r][g].cpuTime);
    }
    // Per step: the widest spread of arrivals at a collective every arrived rank launched in it.
    size_t most = 0;
    for (const RankSummary& r : a.ranks)
        most = std::max<size_t>(most, r.steps());
    std::vector<int64_t> widest(most, -1);
    std::vector<size_t> decisive(most, count);
    for (size_t g = 0; g < count; ++g) {
        int64_t k = -1;
        int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
        bool same = true;
        size_t ranks = 0;
        for (size_t r = 0; r < a.ranks.size(); ++r) {
            if (stepOf[r].empty())
                continue;
            if (stepOf[r][g] < 0 || (k >= 0 && stepOf[r][g] != k)) {
                same = false;
                break;
            }
            k = stepOf[r][g];
            lo = std::min(lo, comm[r][g].start);
            hi = std::max(hi, comm[r][g].start);
            ++ranks;
        }
        if (!same || ranks < 2 || hi - lo <= widest[static_cast<size_t>(k)])
            continue;
        widest[static_cast<size_t>(k)] = hi - lo;
        decisive[static_cast<size_t>(k)] = g;
    }
    for (size_t k = 0; k < most; ++k) {
        if (decisive[k] == count)
            continue;
        for (size_t r = 0; r < a.ranks.size(); ++r) {
            if (stepOf[r].empty() || k >= a.ranks[r].steps())
                continue;
            RankStep& s = a.rankSteps[a.ranks[r].stepsBegin + k];
            s.arrival = comm[r][decisive[k]].start;
            s.arrivalOp = comm[r][decisive[k]].op;
        }
    }
}

void crossSteps(CrossRankAnalysis& a) {
    size_t most = 0;
    for (const RankSummary& r : a.ranks)
        most = std::max<size_t>(most, r.steps());
    a.steps.resize(most);
    std::vector<int64_t> durations;
    for (size_t k = 0; k < most; ++k) {
        CrossRankStep& cs = a.steps[k];
        durations.clear();
        int64_t last = RankStep::kNoArrival;
        int64_t secondLast = RankStep::kNoArrival;
        uint32_t lastRank = CrossRankStep::kNoRank;
        bool first = true;
        for (size_t r = 0; r < a.ranks.size(); ++r) {
            const RankStep* s = a.step(r, k);
            if (!s)
                continue;
            ++cs.ranks;
            cs.start = first ? s->start : std::min(cs.start, s->start);
            first = false;
            durations.push_back(s->duration());
            cs.maxStep = std::max(cs.maxStep, s->duration());
            if (!s->arrived())
                continue;
            ++cs.arrived;
            if (cs.firstArrival == RankStep::kNoArrival || s->arrival < cs.firstArrival)
                cs.firstArrival = s->arrival;
            if (s->arrival > last) {
                secondLast = last;
                last = s->arrival;
                lastRank = static_cast<uint32_t>(r);
            } else if (s->arrival > secondLast) {
                secondLast = s->arrival;
            }
        }
        cs.lastArrival = last;
        cs.medianStep = medianOf(durations);
        if (!cs.compared())
            continue;
        if (last > secondLast) {
            cs.slowest = lastRank;
            cs.lateness = last - secondLast;
            RankSummary& slow = a.ranks[lastRank];
            ++slow.slowest;
            accumulate(slow.lateness, cs.lateness);
        }
        for (size_t r = 0; r < a.ranks.size(); ++r) {
            if (k >= a.ranks[r].steps())
                continue;
            RankStep& s = a.rankSteps[a.ranks[r].stepsBegin + k];
            if (!s.arrived())
                continue;
            s.wait = last - s.arrival;
            accumulate(cs.wait, s.wait);
            accumulate(a.ranks[r].wait, s.wait);
        }
        accumulate(a.totalWait, cs.wait);
    }
}

void decide(const TraceStore& store, CrossRankAnalysis& a) {
    CrossRankVerdict& v = a.verdict;
    for (const CrossRankStep& s : a.steps)
        v.comparedSteps += s.compared() ? 1 : 0;
    for (uint32_t r = 0; r < a.ranks.size(); ++r) {
        if (a.ranks[r].slowest > 0 &&
            (v.rank == CrossRankStep::kNoRank || a.ranks[r].slowest > a.ranks[v.rank].slowest))
            v.rank = r;
    }
    if (a.ranks.size() < 2) {
        v.text = "One rank (" + rankLabel(store, 0) + "): nothing to compare across ranks.";
        return;
    }
    if (v.comparedSteps == 0) {
        v.text = "No step has a communication kernel on two ranks or more: the ranks cannot be "
                 "compared at a collective.";
        return;
    }
    if (v.rank == CrossRankStep::kNoRank) {
        v.text = "The ranks reach the collective together: no rank is the last in any of the " +
                 std::to_string(v.comparedSteps) + " steps.";
        return;
    }
    const RankSummary& slow = a.ranks[v.rank];
    v.slowestSteps = slow.slowest;
    v.meanLateness = slow.meanLateness();
    v.dominant = v.slowestSteps * 2 > v.comparedSteps;
    // The collective it arrives late to most often; the wait behind it over the steady steps
    // (after the warm-up steps, by the steps' median durations: steps.h, warmupSteps).
    std::vector<int64_t> durations;
    for (const CrossRankStep& s : a.steps)
        durations.push_back(static_cast<int64_t>(std::llround(s.medianStep)));
    v.warmupSteps = warmupSteps(durations);
    std::map<std::string, size_t> late;
    for (size_t k = 0; k < a.steps.size(); ++k) {
        if (a.steps[k].slowest != v.rank)
            continue;
        const RankStep& own = *a.step(v.rank, k);
        if (own.arrivalOp.valid())
            ++late[collectiveName(gpuOpShortName(store, own.arrivalOp))];
        if (k < v.warmupSteps)
            continue;
        accumulate(v.waitBehind, a.steps[k].wait);
        for (size_t r = 0; r < a.ranks.size(); ++r) {
            const RankStep* s = a.step(r, k);
            if (r != v.rank && s)
                accumulate(v.othersStepTime, s->duration());
        }
    }
    std::string collective = "collective";
    size_t mostLate = 0;
    for (const auto& [name, n] : late) {
        if (n > mostLate) {
            mostLate = n;
            collective = name;
        }
    }
    const std::string label = rankLabel(store, slow.source);
    const std::string counts = std::to_string(v.slowestSteps) + " of " +
                               std::to_string(v.comparedSteps) +
                               (v.comparedSteps == 1 ? " step, " : " steps, ") +
                               formatDurationText(v.meanLateness) + " late on average";
    if (v.dominant) {
        v.text = label + " is the last to reach the " + collective + " in " + counts +
                 (a.ranks.size() == 2 ? "; the other rank waits " : "; the other ranks wait ") +
                 formatDurationText(static_cast<double>(v.waitBehind)) + " in total.";
    } else {
        v.text = "No rank is consistently the last to reach the " + collective + ": " + label +
                 " is the last most often (" + counts + "); the ranks wait " +
                 formatDurationText(static_cast<double>(a.totalWait)) + " in total.";
    }
}

} // namespace

CrossRankAnalysis analyzeCrossRank(const TraceStore& store, TimeWindow window) {
    CrossRankAnalysis a;
    const size_t rankCount = std::max<size_t>(1, store.sources().size());
    const std::vector<uint32_t> threadSource = threadSources(store, rankCount);

    // Communication kernels, GPU time and devices per rank: one pass over the GPU ops.
    std::vector<std::vector<CommKernel>> comm(rankCount);
    std::vector<int64_t> firstOp(rankCount, std::numeric_limits<int64_t>::max());
    a.ranks.resize(rankCount);
    CommunicationNames names(store);
    for (uint32_t t = 0; t < store.gpuTracks().size(); ++t) {
        const GpuTrack& track = store.gpuTracks()[t];
        const IndexRange r = track.startingIn(window.t0, window.t1);
        if (r.empty())
            continue;
        const uint32_t rank = deviceSource(store, track.deviceId(), rankCount);
        RankSummary& summary = a.ranks[rank];
        if (std::find(summary.devices.begin(), summary.devices.end(), track.deviceId()) ==
            summary.devices.end())
            summary.devices.push_back(track.deviceId());
        firstOp[rank] = std::min(firstOp[rank], track.start(r.first));
        for (size_t i = r.first; i < r.last; ++i) {
            accumulate(summary.gpuTime, track.duration(i));
            if (track.kind(i) != GpuOpKind::Kernel || !names.isKernel(track, i))
                continue;
            CommKernel c{
                track.start(i), track.end(i), track.start(i), {t, static_cast<uint32_t>(i)}};
            if (const EventRef launch = track.launch(i); launch.valid())
                c.cpuTime = store.apiTracks()[launch.track].start(launch.index);
            comm[rank].push_back(c);
            ++summary.commKernels;
            accumulate(summary.commTime, c.end - c.start);
        }
    }

    const StepRanges ranges = findStepRanges(store, threadSource, rankCount, window);
    a.stepName = ranges.name;
    std::optional<SyncStallAnalysis> stalls; // for ranks without step ranges
    std::vector<std::vector<RankStep>> stepsOfRank(rankCount);
    for (uint32_t rank = 0; rank < rankCount; ++rank) {
        RankSummary& summary = a.ranks[rank];
        summary.source = rank;
        std::sort(summary.devices.begin(), summary.devices.end());
        std::vector<CommKernel>& kernels = comm[rank];
        std::sort(kernels.begin(), kernels.end(), [](const CommKernel& x, const CommKernel& y) {
            return std::tie(x.start, x.op.track, x.op.index) <
                   std::tie(y.start, y.op.track, y.op.index);
        });
        if (ranges.found && ranges.threadOfRank[rank] != EventRef::kNone) {
            summary.origin = StepOrigin::Nvtx;
            summary.thread = ranges.threadOfRank[rank];
            for (const StepRange& r : stepRangesOn(store, ranges, summary.thread, window)) {
                RankStep step;
                step.start = r.start;
                step.end = r.end;
                step.number = r.number;
                stepsOfRank[rank].push_back(step);
            }
            assignCommKernels(stepsOfRank[rank], kernels);
        } else if (!kernels.empty()) {
            // The training step, found from the rank's repeating launches, with its collectives
            // inside; one step per communication kernel only when the launches do not repeat.
            if (!stalls)
                stalls = analyzeSyncStalls(store);
            for (const auto& [start, end] : repeatStepSpans(store, *stalls, rank)) {
                if (start >= window.t0 && start < window.t1) {
                    RankStep step;
                    step.start = start;
                    step.end = end;
                    stepsOfRank[rank].push_back(step);
                }
            }
            if (stepsOfRank[rank].size() >= 2) {
                summary.origin = StepOrigin::Repeats;
                assignCommKernels(stepsOfRank[rank], kernels);
            } else {
                summary.origin = StepOrigin::CommKernels;
                stepsOfRank[rank] = commKernelSteps(kernels, firstOp[rank]);
            }
        }
    }
    borrowSteps(stepsOfRank, comm, a.ranks);
    alignStepNumbers(stepsOfRank);
    std::vector<int64_t> durations;
    for (uint32_t rank = 0; rank < rankCount; ++rank) {
        RankSummary& summary = a.ranks[rank];
        const std::vector<RankStep>& steps = stepsOfRank[rank];
        summary.stepsBegin = a.rankSteps.size();
        a.rankSteps.insert(a.rankSteps.end(), steps.begin(), steps.end());
        summary.stepsEnd = a.rankSteps.size();
        if (steps.empty())
            continue;
        durations.clear();
        int64_t total = 0;
        int64_t compute = 0;
        for (const RankStep& s : steps) {
            durations.push_back(s.duration());
            accumulate(total, s.duration());
            accumulate(compute, s.compute());
        }
        const auto n = static_cast<double>(steps.size());
        summary.meanStep = static_cast<double>(total) / n;
        summary.meanCompute = static_cast<double>(compute) / n;
        summary.medianStep = medianOf(durations);
        int64_t work = 0;
        uint64_t ops = 0;
        for (const GpuTrack& track : store.gpuTracks()) {
            if (deviceSource(store, track.deviceId(), rankCount) != rank)
                continue;
            const IndexRange r = track.startingIn(std::max(window.t0, steps.front().start),
                                                  std::min(window.t1, steps.back().end));
            for (size_t i = r.first; i < r.last; ++i) {
                if (track.kind(i) == GpuOpKind::Kernel && names.isKernel(track, i))
                    continue;
                accumulate(work, track.duration(i));
                ++ops;
            }
        }
        summary.meanGpuWork = static_cast<double>(work) / n;
        summary.meanGpuOps = static_cast<double>(ops) / n;
    }
    chooseDecisiveCollectives(a, comm);
    crossSteps(a);
    decide(store, a);
    return a;
}

namespace {

Column left(std::string name) {
    return {std::move(name), Column::Align::Left, 0};
}
Column integer(std::string name) {
    return {std::move(name), Column::Align::Right, 0};
}
Column real(std::string name) {
    return {std::move(name), Column::Align::Right, 1};
}

std::string gpuText(const TraceStore& store, const RankSummary& r) {
    std::string text;
    for (const uint32_t id : r.devices) {
        const DeviceInfo* device = store.device(id);
        const uint32_t cudaId = device ? device->cudaId : id;
        text += (text.empty() ? "GPU " : ", ") + std::to_string(cudaId);
    }
    return text;
}

} // namespace

Table crossRankTable(const TraceStore& store, const CrossRankAnalysis& analysis) {
    Table table({left("Rank"), left("Host"), left("GPU"), integer("Steps"), left("Step Source"),
                 real("Mean Step (ns)"), real("Med Step (ns)"), real("Mean Compute (ns)"),
                 integer("Comm Kernels"), integer("Comm Time (ns)"), real("Comm (%)"),
                 integer("Wait (ns)"), integer("Slowest Steps"), real("Avg Late (ns)"),
                 left("Trace")});
    for (const RankSummary& r : analysis.ranks) {
        const bool known = r.source < store.sources().size();
        const std::string host = known ? store.sources()[r.source].host : std::string();
        const std::string path = known ? store.sources()[r.source].path : store.path();
        const std::string origin = r.origin == StepOrigin::Nvtx
                                       ? "\"" + analysis.stepName + "\" ranges"
                                   : r.origin == StepOrigin::CommKernels ? "comm kernels"
                                   : r.origin == StepOrigin::Repeats     ? "repeats"
                                   : r.origin == StepOrigin::OtherRank
                                       ? rankLabel(store, r.stepsFrom) + "'s, by collective"
                                       : "none";
        table.addRow({rankLabel(store, r.source), host, gpuText(store, r),
                      static_cast<int64_t>(r.steps()), origin, r.meanStep, r.medianStep,
                      r.meanCompute, static_cast<int64_t>(r.commKernels), r.commTime,
                      r.commShare() * 100, r.wait, static_cast<int64_t>(r.slowest),
                      r.meanLateness(), path});
    }
    return table;
}

Table rankStepTable(const TraceStore& store, const CrossRankAnalysis& analysis) {
    std::vector<Column> columns = {integer("Step"),        integer("Start (ns)"),
                                   integer("Ranks"),       integer("Arrived"),
                                   left("Slowest"),        integer("Late (ns)"),
                                   integer("Spread (ns)"), integer("Wait (ns)"),
                                   real("Med Step (ns)"),  integer("Max Step (ns)")};
    for (const RankSummary& r : analysis.ranks)
        columns.push_back(integer(rankLabel(store, r.source) + " Arrival (ns)"));
    Table table(std::move(columns));
    for (size_t k = 0; k < analysis.steps.size(); ++k) {
        const CrossRankStep& s = analysis.steps[k];
        std::vector<Cell> row = {static_cast<int64_t>(k),
                                 s.start,
                                 static_cast<int64_t>(s.ranks),
                                 static_cast<int64_t>(s.arrived),
                                 s.slowest == CrossRankStep::kNoRank
                                     ? Cell{}
                                     : Cell{rankLabel(store, analysis.ranks[s.slowest].source)},
                                 s.lateness,
                                 s.spread(),
                                 s.wait,
                                 s.medianStep,
                                 s.maxStep};
        for (size_t r = 0; r < analysis.ranks.size(); ++r) {
            const RankStep* step = analysis.step(r, k);
            if (step && step->arrived())
                row.emplace_back(step->arrival - s.firstArrival);
            else
                row.emplace_back();
        }
        table.addRow(std::move(row));
    }
    return table;
}

} // namespace warpline::model
