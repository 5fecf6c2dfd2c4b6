#include "insights.h"

#include "analysishelpers.h"
#include "causeinsights.h"
#include "communication.h"
#include "kernelmetrics.h"
#include "saturating.h"
#include "sourcelines.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <unordered_map>

namespace warpline::model {

std::string_view insightKindName(InsightKind kind) {
    switch (kind) {
    case InsightKind::SyncStall:
        return "sync-stall";
    case InsightKind::LaunchBound:
        return "launch-bound";
    case InsightKind::GpuIdle:
        return "gpu-idle";
    case InsightKind::RunAhead:
        return "run-ahead";
    case InsightKind::KernelConcentration:
        return "kernel-concentration";
    case InsightKind::LateRank:
        return "late-rank";
    case InsightKind::StartUp:
        return "start-up";
    case InsightKind::MemoryBound:
        return "memory-bound";
    case InsightKind::GpuBound:
        return "gpu-bound";
    case InsightKind::Copies:
        return "copies";
    case InsightKind::Communication:
        return "communication";
    case InsightKind::CpuWork:
        return "cpu-work";
    case InsightKind::InputBound:
        return "input-bound";
    case InsightKind::Allocator:
        return "allocator";
    case InsightKind::Compilation:
        return "compilation";
    case InsightKind::NoSteps:
        return "no-steps";
    }
    return "";
}

double Insight::number(std::string_view name) const {
    for (const InsightNumber& n : numbers) {
        if (n.name == name)
            return n.value;
    }
    return 0;
}

namespace {

std::string quoted(const std::string& s) {
    return "\"" + s + "\"";
}

void addRef(std::vector<EventRef>& refs, EventRef ref, size_t maxRefs) {
    if (ref.valid() && refs.size() < maxRefs)
        refs.push_back(ref);
}

// A repeated NVTX range (same name up to a trailing counter) on the stalls' thread such that
// every stall lies in its own instance, and each instance holds other API calls too (so the range
// is a loop step, not a wrapper around the stall itself). The longest such range wins.
struct PerRange {
    bool found = false;
    std::string name;
    int64_t instancesTime = 0; // ns, summed over the instances holding a stall
};

PerRange findPerRange(const TraceStore& store, const SyncStallAnalysis& analysis,
                      const StallGroup& group) {
    PerRange best;
    if (group.thread == SyncStall::kNoThread || group.stalls.size() < 2)
        return best;
    const ThreadInfo& thread = store.threads()[group.thread];
    struct Acc {
        uint64_t inside = 0;
        uint64_t instances = 0;
        EventRef last;
        int64_t time = 0;
    };
    std::unordered_map<std::string, Acc> accs;
    std::unordered_map<NameId, std::string> normalized;
    for (const uint32_t si : group.stalls) {
        const SyncStall& s = analysis.stalls[si];
        for (const uint32_t t : thread.nvtxTracks) {
            const NvtxTrack& track = store.nvtxTracks()[t];
            if (track.style() == NvtxStyle::Mark)
                continue;
            const std::ptrdiff_t i = track.indexAt(s.start);
            if (i < 0 || track.end(static_cast<size_t>(i)) < s.end)
                continue;
            // A PyTorch profiler operator ("aten::item" around its own copy and sync) is not a
            // loop step: measured against it, a wait is a share of itself.
            if (!mayBeStepRange(store, track, static_cast<size_t>(i)))
                continue;
            const NameId id = track.name(static_cast<size_t>(i));
            auto it = normalized.find(id);
            if (it == normalized.end())
                it = normalized.emplace(id, normalizedRangeName(store.text(id))).first;
            Acc& acc = accs[it->second];
            ++acc.inside;
            const EventRef instance{t, static_cast<uint32_t>(i)};
            if (!(instance == acc.last)) {
                ++acc.instances;
                accumulate(acc.time, track.duration(static_cast<size_t>(i)));
                acc.last = instance;
            }
        }
    }
    const uint64_t n = group.stalls.size();
    const ApiTrack* top =
        thread.apiTracks.empty() ? nullptr : &store.apiTracks()[thread.apiTracks.front()];
    for (const auto& [name, acc] : accs) {
        if (acc.inside != n || acc.instances != n || acc.time <= best.instancesTime)
            continue;
        const NvtxTrack& track = store.nvtxTracks()[acc.last.track];
        const int64_t a = track.start(acc.last.index);
        const int64_t b = track.end(acc.last.index);
        if (top == nullptr || top->visibleRange(a, b).size() < 2)
            continue;
        best = {true, name, acc.time};
    }
    return best;
}

// "The CPU", or "The CPU (python3 [4243])" when several threads made CUDA calls.
std::string cpuSubject(const TraceStore& store, const SyncStallAnalysis& analysis,
                       uint32_t thread) {
    if (analysis.threads.size() <= 1)
        return "The CPU";
    return "The CPU (" + threadLabel(store, thread) + ")";
}

void stallInsights(const TraceStore& store, const SyncStallAnalysis& analysis,
                   const InsightOptions& options, std::vector<Insight>& out) {
    const std::vector<StallGroup> groups = groupSyncStalls(store, analysis);
    for (const StallGroup& g : groups) {
        if (g.thread == SyncStall::kNoThread)
            continue;
        // A loop's stalls are judged against the loop's steps, not the whole thread (which
        // includes start-up, data preparation and checks).
        const PerRange per = findPerRange(store, analysis, g);
        const double share =
            per.found && per.instancesTime > 0
                ? static_cast<double>(g.blocked.total) / static_cast<double>(per.instancesTime)
                : g.shareOfThread;
        if (share < options.minStallShare)
            continue;
        const std::string name = std::string(stripApiVersion(store.text(g.name)));
        const uint64_t n = g.blocked.count;
        std::string what = name;
        if (g.copyKind != 0) {
            what += g.kind == StallKind::Memcpy ? " " : " after a ";
            what += std::string(copyKindText(g.copyKind)) +
                    (g.kind == StallKind::Memcpy ? std::string() : std::string(" copy"));
            what += g.minBytes == g.maxBytes ? " of " + formatBytesText(g.maxBytes)
                                             : " of " + formatBytesText(g.minBytes) + " to " +
                                                   formatBytesText(g.maxBytes);
        }
        std::string text =
            cpuSubject(store, analysis, g.thread) + " waited " + formatPercentText(share) + " ";
        text += per.found ? "of the " + quoted(per.name) + " ranges' time" : "of the time";
        text += " in " + what;
        text += per.found ? ", once per " + quoted(per.name) + " (" + std::to_string(n) + " times)"
                : n == 1  ? " (once, " + formatDurationText(g.blocked.average) + ")"
                          : " (" + std::to_string(n) + " times, " +
                               formatDurationText(g.blocked.average) + " each)";
        int64_t copyTime = 0; // GPU time of the group's copies (their first op each)
        for (const uint32_t i : g.stalls) {
            const SyncStall& st = analysis.stalls[i];
            if (st.copyOp.valid())
                accumulate(copyTime, store.gpuTracks()[st.copyOp.track].duration(st.copyOp.index));
        }
        const bool scalarBack = isScalarReadBack(g.copyKind, g.maxBytes);
        if (scalarBack) {
            text += ": a scalar copied back " +
                    std::string(per.found ? "each step" : "again and again") +
                    " (the loss.item() pattern). Copy it less often, or keep it on the GPU and "
                    "read it once at the end.";
        } else if (g.kind == StallKind::Memcpy && copyTime * 2 >= g.blocked.total) {
            text += ": mostly the transfer itself (" +
                    formatDurationText(static_cast<double>(copyTime)) +
                    " on the GPU), with the CPU held until it ends. Copy from pinned memory with "
                    "cudaMemcpyAsync so the CPU and other streams keep working meanwhile.";
        } else if (g.kind == StallKind::Memcpy) {
            text += ": a blocking copy waits for all the GPU work queued before it. Use "
                    "cudaMemcpyAsync into pinned memory and synchronize less often.";
        } else {
            text += ": each call waits until the GPU has finished the work queued before it";
            if (g.gpuIdleAfter > 0)
                text += ", and the GPU then idled " +
                        formatDurationText(static_cast<double>(g.gpuIdleAfter)) +
                        " in all until the CPU gave it new work";
            text += ". Synchronize less often (record an event and wait for it only where the "
                    "result is needed).";
        }
        Insight in;
        in.kind = InsightKind::SyncStall;
        in.stake = g.blocked.total;
        in.text = std::move(text);
        in.numbers = {{"stalled_share", share},
                      {"thread_share", g.shareOfThread},
                      {"count", static_cast<double>(n)},
                      {"blocked_ns", static_cast<double>(g.blocked.total)},
                      {"median_blocked_ns", g.blocked.median},
                      {"gpu_idle_after_ns", static_cast<double>(g.gpuIdleAfter)},
                      {"bytes_max", static_cast<double>(g.maxBytes)}};
        in.eventCount = n;
        for (const uint32_t i : g.stalls) {
            const SyncStall& s = analysis.stalls[i];
            addRef(in.apiCalls, s.call, options.maxRefs);
            addRef(in.gpuOps, s.copyOp, options.maxRefs);
        }
        out.push_back(std::move(in));
    }
}

// What the CPU thread was doing during [t0, t1), as ` (the CPU was in "name")`: the shortest of
// its NVTX ranges that cover at least half of the interval (the most specific), else the one that
// overlaps it most; empty when none overlaps.
std::string cpuContext(const TraceStore& store, uint32_t thread, int64_t t0, int64_t t1) {
    if (thread >= store.threads().size())
        return {};
    const int64_t half = (t1 - t0 + 1) / 2;
    const NvtxTrack* best = nullptr;
    size_t bestIndex = 0;
    int64_t bestOverlap = 0;
    const auto better = [&](int64_t overlap, int64_t duration) {
        if (!best)
            return true;
        const bool covers = overlap >= half;
        const bool bestCovers = bestOverlap >= half;
        if (covers != bestCovers)
            return covers;
        if (covers)
            return duration < best->duration(bestIndex);
        return overlap > bestOverlap;
    };
    for (const uint32_t n : store.threads()[thread].nvtxTracks) {
        const NvtxTrack& track = store.nvtxTracks()[n];
        if (track.style() == NvtxStyle::Mark)
            continue;
        const IndexRange r = track.visibleRange(t0, t1);
        for (size_t i = r.first; i < r.last; ++i) {
            const int64_t overlap = std::min(t1, track.end(i)) - std::max(t0, track.start(i));
            if (overlap > 0 && better(overlap, track.duration(i))) {
                best = &track;
                bestIndex = i;
                bestOverlap = overlap;
            }
        }
    }
    if (!best)
        return {};
    return " (the CPU was in " + quoted(store.text(best->name(bestIndex))) + ")";
}

// GPU idle that came right after synchronizing calls returned, on `deviceId`: the CPU had waited
// for the GPU, and then the GPU waited for the CPU. Each idle interval counts once.
// Intervals that end at an op in `skip` (gaps already reported) do not count.
int64_t idleAfterStalls(const SyncStallAnalysis& stalls, uint32_t deviceId,
                        const std::vector<const GpuGap*>& skip, uint64_t& count) {
    int64_t idle = 0;
    EventRef last;
    count = 0;
    for (const SyncStall& s : stalls.stalls) {
        if (s.gpuIdleAfter <= 0 || (s.deviceId >= 0 && s.deviceId != deviceId) ||
            s.nextOp == last || std::any_of(skip.begin(), skip.end(), [&](const GpuGap* g) {
                return g->after == s.nextOp;
            }))
            continue;
        accumulate(idle, s.gpuIdleAfter);
        last = s.nextOp;
        ++count;
    }
    return idle;
}

// Per device: first the few long gaps that hold much of the idle time (each at least
// kLongGapShare of it), named with what the CPU was doing; then the idle time outside them,
// launch-bound or not.
void gpuIdleInsights(const TraceStore& store, const GpuGapAnalysis& gaps,
                     const SyncStallAnalysis& stalls, const InsightOptions& options,
                     std::vector<Insight>& out) {
    constexpr double kLongGapShare = 0.1;
    constexpr size_t kMaxLongGaps = 3;
    const LaunchBoundRow& k = gaps.allKernels;
    for (size_t d = 0; d < gaps.devices.size(); ++d) {
        const DeviceUtilization& dev = gaps.devices[d];
        if (dev.active() <= 0 || dev.idle() <= 0)
            continue;
        const std::string where =
            gaps.devices.size() > 1 ? " on " + deviceLabel(dev.deviceId) : std::string();
        const auto deviceGaps = gaps.gapsOf(d);

        std::vector<const GpuGap*> longest;
        for (const GpuGap& g : deviceGaps) {
            if (static_cast<double>(g.duration()) >=
                kLongGapShare * static_cast<double>(dev.idle()))
                longest.push_back(&g);
        }
        std::sort(longest.begin(), longest.end(),
                  [](const GpuGap* a, const GpuGap* b) { return a->duration() > b->duration(); });
        if (longest.size() > kMaxLongGaps)
            longest.resize(kMaxLongGaps);
        int64_t longIdle = 0, longHostWait = 0, longOther = 0;
        for (const GpuGap* g : longest) {
            accumulate(longIdle, g->duration());
            accumulate(g->cause == GapCause::HostWait ? longHostWait : longOther, g->duration());
        }
        if (!longest.empty() && static_cast<double>(longIdle) >=
                                    options.minIdleShare * static_cast<double>(dev.active())) {
            Insight in;
            in.kind = InsightKind::GpuIdle;
            in.stake = longIdle;
            std::string text = "The GPU" + where + " sat idle " +
                               formatDurationText(static_cast<double>(longIdle)) + " in " +
                               (longest.size() == 1 ? std::string("one gap")
                                                    : std::to_string(longest.size()) + " gaps") +
                               " (" +
                               formatPercentText(static_cast<double>(longIdle) /
                                                 static_cast<double>(dev.active())) +
                               " of its active time): ";
            for (size_t i = 0; i < longest.size(); ++i) {
                const GpuGap& g = *longest[i];
                if (i > 0)
                    text += i + 1 == longest.size() ? " and " : ", ";
                text += formatDurationText(static_cast<double>(g.duration())) + " before " +
                        gpuOpShortName(store, g.after);
                if (g.afterLaunch.valid())
                    text += cpuContext(store, store.apiTracks()[g.afterLaunch.track].threadIndex(),
                                       g.start, g.end);
                addRef(in.gpuOps, g.before, options.maxRefs);
                addRef(in.gpuOps, g.after, options.maxRefs);
                addRef(in.apiCalls, g.afterLaunch, options.maxRefs);
            }
            text += longHostWait >= longOther
                        ? ". The next op had not been launched yet: the CPU was doing other work. "
                          "Queue GPU work before long CPU work, or overlap the two."
                        : ". The next op was already launched: it waited for a dependency (an "
                          "event, another stream, a copy).";
            in.text = std::move(text);
            in.numbers = {
                {"idle_ns", static_cast<double>(longIdle)},
                {"idle_share", static_cast<double>(longIdle) / static_cast<double>(dev.active())},
                {"gaps", static_cast<double>(longest.size())},
                {"longest_gap_ns", static_cast<double>(longest.front()->duration())},
                {"device", static_cast<double>(dev.deviceId)}};
            in.eventCount = longest.size();
            out.push_back(std::move(in));
        } else {
            longest.clear();
            longIdle = longHostWait = longOther = 0;
        }

        // The rest of the active window.
        const int64_t active = dev.active() - longIdle;
        const int64_t idle = dev.idle() - longIdle;
        const int64_t hostWait = dev.hostWaitIdle - longHostWait;
        const int64_t other = dev.otherIdle - longOther;
        const uint64_t listed = dev.gaps - longest.size();
        if (active <= 0 || idle <= 0)
            continue;
        const double idleShare = static_cast<double>(idle) / static_cast<double>(active);
        if (idleShare < options.minIdleShare)
            continue;
        Insight in;
        in.stake = idle;
        std::string text = (longest.empty() ? "GPU idle " : "Outside those gaps, GPU idle ") +
                           formatPercentText(idleShare) + where;
        if (k.launchBound()) {
            in.kind = InsightKind::LaunchBound;
            text += ": launch-bound, " + formatDurationText(k.medianKernel) + " kernels behind " +
                    formatDurationText(k.medianLaunch) + " launches";
            size_t boundNames = 0;
            for (const LaunchBoundRow& r : gaps.launchBound)
                boundNames += r.launchBound() ? 1 : 0;
            if (!gaps.launchBound.empty() && boundNames < gaps.launchBound.size())
                text += " (" + std::to_string(boundNames) + " of " +
                        std::to_string(gaps.launchBound.size()) + " kernel names)";
            text += "; fuse kernels or replay a CUDA graph.";
        } else {
            in.kind = InsightKind::GpuIdle;
            text += " (" + formatDurationText(static_cast<double>(idle)) + " of " +
                    formatDurationText(static_cast<double>(active)) + ")";
            if (hostWait * 2 >= idle) {
                text += ", mostly waiting for the host: in " + std::to_string(listed) +
                        " gaps longer than " +
                        formatDurationText(static_cast<double>(gaps.threshold)) + " (" +
                        formatDurationText(static_cast<double>(hostWait)) +
                        ") the next op had not been launched yet.";
            } else if ((hostWait + other) * 2 >= idle) {
                text += ", in " + std::to_string(listed) + " gaps longer than " +
                        formatDurationText(static_cast<double>(gaps.threshold)) +
                        " where the next op was already launched (" +
                        formatDurationText(static_cast<double>(other)) +
                        "): it waited for a dependency (an event, another stream, a copy).";
            } else {
                text += ", spread over many short gaps (" +
                        formatDurationText(static_cast<double>(dev.shortIdle)) + " in gaps up to " +
                        formatDurationText(static_cast<double>(gaps.threshold)) +
                        "): the GPU waits a little between most ops.";
            }
            uint64_t afterStalls = 0;
            const int64_t stallIdle = idleAfterStalls(stalls, dev.deviceId, longest, afterStalls);
            if (stallIdle * 5 >= idle)
                text += " " + formatDurationText(static_cast<double>(stallIdle)) +
                        " of it came right after " + std::to_string(afterStalls) +
                        " synchronizing calls returned: the CPU waited for the GPU, then the GPU "
                        "for the CPU.";
            else
                text += " The CPU is the bottleneck: look at the CPU work between launches.";
        }
        in.text = std::move(text);
        in.numbers = {{"idle_share", idleShare},
                      {"idle_ns", static_cast<double>(idle)},
                      {"active_ns", static_cast<double>(active)},
                      {"host_wait_idle_ns", static_cast<double>(hostWait)},
                      {"other_idle_ns", static_cast<double>(other)},
                      {"short_idle_ns", static_cast<double>(dev.shortIdle)},
                      {"gaps", static_cast<double>(listed)},
                      {"median_kernel_ns", k.medianKernel},
                      {"median_launch_ns", k.medianLaunch},
                      {"device", static_cast<double>(dev.deviceId)}};
        // The longest remaining gaps show it best: the ops after them and their launches.
        std::vector<const GpuGap*> shown;
        for (const GpuGap& g : deviceGaps) {
            if (std::find(longest.begin(), longest.end(), &g) == longest.end())
                shown.push_back(&g);
        }
        const size_t keep = std::min(shown.size(), options.maxRefs);
        std::partial_sort(
            shown.begin(), shown.begin() + static_cast<std::ptrdiff_t>(keep), shown.end(),
            [](const GpuGap* a, const GpuGap* b) { return a->duration() > b->duration(); });
        shown.resize(keep);
        std::sort(shown.begin(), shown.end(),
                  [](const GpuGap* a, const GpuGap* b) { return a->start < b->start; });
        for (const GpuGap* g : shown) {
            addRef(in.gpuOps, g->after, options.maxRefs);
            addRef(in.apiCalls, g->afterLaunch, options.maxRefs);
        }
        in.eventCount = listed;
        out.push_back(std::move(in));
    }
}

void runAheadInsight(const TraceStore& store, const RunAheadAnalysis& ra,
                     const InsightOptions& options, std::vector<Insight>& out) {
    if (ra.streams.empty() || ra.overall.count == 0)
        return;
    // p95, not max: one late op (behind an event, say) is not the CPU running ahead.
    if (ra.overall.p95Lag < options.minRunAheadLag && ra.maxDepth < options.minRunAheadDepth)
        return;
    const StreamRunAhead& deep = ra.streams[ra.maxDepthStream];
    // How far the CPU ran ahead: the largest lag of a queued launch, not of a call slow in
    // itself (a first launch that loads its module).
    const LaunchLag& worst =
        ra.overall.queued > 0 ? ra.overall.maxQueuedLaunch : ra.overall.maxLagLaunch;
    std::string text = "The CPU ran up to " + formatDurationText(static_cast<double>(worst.lag())) +
                       " ahead of the GPU (queue depth " + std::to_string(ra.maxDepth);
    if (ra.streams.size() > 1)
        text += " on " + streamLabel(store, deep.streamIndex);
    text += ", median lag " + formatDurationText(ra.overall.medianLag) + ")";
    if (deep.maxDepth > 0)
        text += "; the queue drained at " +
                formatDurationText(static_cast<double>(deep.drainTime)) + ", " +
                formatDurationText(static_cast<double>(deep.drainTime - deep.maxDepthTime)) +
                " after its peak";
    text += ". Queued work keeps the GPU busy, but a synchronization or a host read at the peak "
            "waits for the whole queue.";
    Insight in;
    in.kind = InsightKind::RunAhead;
    in.stake = worst.lag();
    in.text = std::move(text);
    in.numbers = {{"max_lag_ns", static_cast<double>(ra.overall.maxLag)},
                  {"max_queued_lag_ns", static_cast<double>(worst.lag())},
                  {"p95_lag_ns", static_cast<double>(ra.overall.p95Lag)},
                  {"median_lag_ns", ra.overall.medianLag},
                  {"max_depth", static_cast<double>(ra.maxDepth)},
                  {"max_depth_time_ns", static_cast<double>(deep.maxDepthTime)},
                  {"drain_time_ns", static_cast<double>(deep.drainTime)},
                  {"launches", static_cast<double>(ra.overall.count)}};
    in.eventCount = ra.overall.count;
    // The launches queued at the peak, led by the one that waited longest.
    addRef(in.apiCalls, worst.call, options.maxRefs);
    addRef(in.gpuOps, worst.op, options.maxRefs);
    for (const LaunchLag& l :
         queuedAt(store, ra, ra.maxDepthStream, deep.maxDepthTime, options.maxRefs + 1)) {
        if (!(l.call == worst.call)) {
            addRef(in.apiCalls, l.call, options.maxRefs);
            addRef(in.gpuOps, l.op, options.maxRefs);
        }
    }
    out.push_back(std::move(in));
}

// The NVTX region with the most launch time not hidden behind kernel time, when its kernels are
// launch-bound and no device-wide launch-bound finding was made.
void regionLaunchBoundInsight(const TraceStore& store, const GpuGapAnalysis& gaps,
                              const InsightOptions& options, std::vector<Insight>& out) {
    for (const Insight& in : out) {
        if (in.kind == InsightKind::LaunchBound)
            return;
    }
    // Launch cost only matters where the GPU waits: skip the per-region pass (the costliest of
    // the insights) when the devices hardly idle.
    int64_t idle = 0;
    int64_t active = 0;
    for (const DeviceUtilization& d : gaps.devices) {
        accumulate(idle, d.idle());
        accumulate(active, d.active());
    }
    if (active <= 0 ||
        static_cast<double>(idle) < options.minRegionIdleShare * static_cast<double>(active))
        return;
    const std::vector<RangeLaunchBound> regions = launchBoundByRange(store, options.gaps.window);
    const auto it = std::find_if(regions.begin(), regions.end(), [&](const RangeLaunchBound& r) {
        return r.kernels.launchBound() && r.kernels.count >= options.minRegionKernels &&
               r.uncovered() > 0;
    });
    if (it == regions.end())
        return;
    const RangeLaunchBound& r = *it;
    Insight in;
    in.kind = InsightKind::LaunchBound;
    in.stake = r.uncovered();
    in.text = "Inside " + quoted(r.range) + " (" + std::to_string(r.instances) +
              (r.instances == 1 ? " range" : " ranges") +
              "), launch-bound: " + formatDurationText(r.kernels.medianKernel) +
              " kernels behind " + formatDurationText(r.kernels.medianLaunch) + " launches (" +
              std::to_string(r.kernels.count) + " kernels; " +
              formatDurationText(static_cast<double>(r.uncovered())) +
              " of launch time not covered by kernel time); fuse kernels or replay a CUDA graph.";
    in.numbers = {{"median_kernel_ns", r.kernels.medianKernel},
                  {"median_launch_ns", r.kernels.medianLaunch},
                  {"kernels", static_cast<double>(r.kernels.count)},
                  {"instances", static_cast<double>(r.instances)},
                  {"uncovered_ns", static_cast<double>(r.uncovered())}};
    in.eventCount = r.kernels.count;
    // Refs: the region's kernels and their launches, from its first instances.
    for (uint32_t t = 0; t < store.nvtxTracks().size() && in.gpuOps.size() < options.maxRefs; ++t) {
        const NvtxTrack& range = store.nvtxTracks()[t];
        if (range.style() == NvtxStyle::Mark)
            continue;
        const ThreadInfo& thread = store.threads()[range.threadIndex()];
        for (size_t i = 0; i < range.size() && in.gpuOps.size() < options.maxRefs; ++i) {
            if (range.start(i) < options.gaps.window.t0 ||
                range.start(i) >= options.gaps.window.t1 ||
                normalizedRangeName(store.text(range.name(i))) != r.range)
                continue;
            for (const uint32_t at : thread.apiTracks) {
                const ApiTrack& api = store.apiTracks()[at];
                const IndexRange calls = api.visibleRange(range.start(i), range.end(i));
                for (size_t c = calls.first; c < calls.last; ++c) {
                    if (api.start(c) < range.start(i))
                        continue;
                    for (const EventRef op : api.gpuOps(c)) {
                        if (store.gpuTracks()[op.track].kind(op.index) != GpuOpKind::Kernel)
                            continue;
                        addRef(in.gpuOps, op, options.maxRefs);
                        addRef(in.apiCalls, {at, static_cast<uint32_t>(c)}, options.maxRefs);
                    }
                }
            }
        }
    }
    out.push_back(std::move(in));
}

// The top kernel by total time. A communication kernel's time is partly ranks waiting for each
// other (crossrank.h): that part is not at stake in the kernel itself.
void kernelInsight(const TraceStore& store, const CrossRankAnalysis& crossRank,
                   const InsightOptions& options, std::vector<Insight>& out) {
    const TimeWindow& w = options.gaps.window;
    std::vector<int64_t> total(store.strings().size(), 0);
    std::vector<uint32_t> count(store.strings().size(), 0);
    int64_t all = 0;
    for (const GpuTrack& track : store.gpuTracks()) {
        for (size_t i = 0; i < track.size(); ++i) {
            if (track.kind(i) != GpuOpKind::Kernel || track.start(i) < w.t0 ||
                track.start(i) >= w.t1)
                continue;
            accumulate(total[track.name(i)], track.duration(i));
            ++count[track.name(i)];
            accumulate(all, track.duration(i));
        }
    }
    if (all <= 0)
        return;
    // With a single kernel name there is nothing to compare.
    if (std::count_if(count.begin(), count.end(), [](uint32_t c) { return c > 0; }) < 2)
        return;
    const auto top =
        static_cast<NameId>(std::max_element(total.begin(), total.end()) - total.begin());
    const double share = static_cast<double>(total[top]) / static_cast<double>(all);
    if (share < options.minKernelShare)
        return;
    const bool communication = isCommunicationKernel(store.text(top));
    int64_t waited = 0; // ns of `top` spent waiting for the last rank to arrive
    for (const RankStep& s : crossRank.rankSteps) {
        if (communication && s.arrivalOp.valid() &&
            store.gpuTracks()[s.arrivalOp.track].name(s.arrivalOp.index) == top)
            accumulate(waited, s.wait);
    }
    waited = std::min(waited, total[top]);
    Insight in;
    in.kind = InsightKind::KernelConcentration;
    in.stake = total[top] - waited;
    for (uint32_t t = 0; t < store.gpuTracks().size() && in.gpuOps.size() < options.maxRefs; ++t) {
        const GpuTrack& track = store.gpuTracks()[t];
        for (size_t i = 0; i < track.size() && in.gpuOps.size() < options.maxRefs; ++i) {
            if (track.name(i) == top && track.start(i) >= w.t0 && track.start(i) < w.t1)
                in.gpuOps.push_back({t, static_cast<uint32_t>(i)});
        }
    }
    std::sort(in.gpuOps.begin(), in.gpuOps.end(), [&](EventRef a, EventRef b) {
        return store.gpuTracks()[a.track].start(a.index) <
               store.gpuTracks()[b.track].start(b.index);
    });
    const std::string name =
        in.gpuOps.empty() ? store.text(top) : gpuOpShortName(store, in.gpuOps.front());
    const double avg = static_cast<double>(total[top]) / count[top];
    in.text = name + " takes " + formatPercentText(share) + " of GPU kernel time (" +
              std::to_string(count[top]) + (count[top] == 1 ? " launch, " : " launches, ") +
              formatDurationText(avg) + " each): ";
    if (!communication)
        in.text += share >= 0.999 ? "it is the only kernel that matters here."
                                  : "speeding it up pays the most.";
    else if (waited > 0)
        in.text += "a communication kernel, and " +
                   formatDurationText(static_cast<double>(waited)) +
                   " of that is ranks waiting in it for the last rank to arrive; the rest is the "
                   "transfer itself.";
    else
        in.text += "a communication kernel: its time is the transfer and any wait for other "
                   "ranks, which one rank's trace cannot tell apart.";
    in.numbers = {{"kernel_share", share},
                  {"total_ns", static_cast<double>(total[top])},
                  {"count", static_cast<double>(count[top])},
                  {"average_ns", avg},
                  {"wait_ns", static_cast<double>(waited)}};
    in.eventCount = count[top];
    out.push_back(std::move(in));
}

std::string formatNumber(double v);

// Autotuning inside the run, from the Python stacks (--python-stacks): the GPU ops launched, and
// the waits made, from a stack that passes through an autotuner's benchmarking. Fires when that
// GPU time is at least options.minIdleShare of the window's; its stake is that GPU time (what
// tuning once, or on fewer shapes, gives back).
void autotuningInsight(const TraceStore& store, const InsightOptions& options,
                       const SyncStallAnalysis& stalls, std::vector<Insight>& out) {
    if (store.callchains().empty())
        return;
    const TimeWindow& w = options.gaps.window;
    UserFrames user(store);
    std::unordered_map<uint32_t, int8_t> tuning;            // chain id -> 0 / 1
    std::map<std::pair<NameId, int32_t>, uint64_t> callers; // the user's line -> tuning calls
    const auto isTuning = [&](EventRef call) { return isAutotunerCall(store, call, tuning); };
    int64_t tuningTime = 0, busy = 0, first = std::numeric_limits<int64_t>::max(), last = 0;
    uint64_t kernels = 0;
    Insight in;
    for (uint32_t t = 0; t < store.apiTracks().size(); ++t) {
        const ApiTrack& track = store.apiTracks()[t];
        const IndexRange r = track.startingIn(w.t0, w.t1);
        for (size_t i = r.first; i < r.last; ++i) {
            const auto ops = track.gpuOps(i);
            if (ops.empty() || !isTuning({t, static_cast<uint32_t>(i)}))
                continue;
            for (const EventRef op : ops) {
                const GpuTrack& g = store.gpuTracks()[op.track];
                accumulate(tuningTime, g.duration(op.index));
                kernels += g.kind(op.index) == GpuOpKind::Kernel;
                if (in.gpuOps.size() < options.maxRefs)
                    in.gpuOps.push_back(op);
            }
            // The innermost frame of the user's own code: where the tuned function was called.
            for (const CallFrame& f : store.callStack({t, static_cast<uint32_t>(i)})) {
                if (user.isUser(f)) {
                    ++callers[{f.file, f.line}];
                    break;
                }
            }
        }
    }
    for (const GpuTrack& g : store.gpuTracks()) {
        const IndexRange r = g.startingIn(w.t0, w.t1);
        for (size_t i = r.first; i < r.last; ++i) {
            accumulate(busy, g.duration(i));
            first = std::min(first, g.start(i));
            last = std::max(last, g.end(i));
        }
    }
    if (tuningTime <= 0 || last <= first ||
        static_cast<double>(tuningTime) < options.minIdleShare * static_cast<double>(last - first))
        return;
    uint64_t waits = 0;
    int64_t waited = 0;
    for (const SyncStall& stall : stalls.stalls) {
        if (stall.call.valid() && isTuning(stall.call)) {
            ++waits;
            accumulate(waited, stall.blocked());
        }
    }
    const auto caller =
        std::max_element(callers.begin(), callers.end(),
                         [](const auto& a, const auto& b) { return a.second < b.second; });
    const double share = static_cast<double>(tuningTime) / static_cast<double>(busy);
    in.kind = InsightKind::Compilation;
    in.stake = tuningTime;
    in.text = "Autotuning in the run: " + formatPercentText(share) + " of the GPU's time (" +
              formatDurationText(static_cast<double>(tuningTime)) + ", " + std::to_string(kernels) +
              " kernels) is an autotuner benchmarking candidate configurations (Triton's "
              "@triton.autotune or torch.compile's max-autotune)";
    if (caller != callers.end())
        in.text +=
            ", for the call at " + sourceLocation(store, caller->first.first, caller->first.second);
    if (waits > 0)
        in.text += "; it waited for the GPU " + std::to_string(waits) + " times (" +
                   formatDurationText(static_cast<double>(waited)) + ")";
    in.text += ". An autotuner benchmarks again each time its key (the arguments named in "
               "@triton.autotune(key=...), or the input shapes) takes a value it has not seen: "
               "bucket those shapes (pad to a few sizes) or key on a bucket of them, or tune "
               "once and fix the configuration. A faster kernel would not help: the time is the "
               "tuning.";
    in.numbers = {{"share", share},
                  {"time_ns", static_cast<double>(tuningTime)},
                  {"kernels", static_cast<double>(kernels)},
                  {"waits", static_cast<double>(waits)},
                  {"wait_ns", static_cast<double>(waited)}};
    in.eventCount = kernels;
    out.push_back(std::move(in));
}

// Kernels whose GPU metric samples put them at the memory roof (kernelmetrics.h): their time is
// set by the bytes they move. Over the whole trace (samples are per kernel name).
void memoryBoundInsight(const TraceStore& store, const InsightOptions& options,
                        std::vector<Insight>& out) {
    if (store.gpuMetrics().empty())
        return;
    const KernelMetricsReport report = kernelMetrics(store);
    int64_t all = 0, bound = 0;
    double bytes = 0;
    const KernelMetricsRow* top = nullptr;
    uint64_t names = 0, launches = 0;
    for (const KernelMetricsRow& r : report.rows) {
        accumulate(all, r.totalTime);
        if (r.bound != KernelBound::Memory)
            continue;
        accumulate(bound, r.totalTime);
        if (!std::isnan(r.bytesMoved))
            bytes += r.bytesMoved;
        ++names;
        launches += r.instances;
        if (!top) // rows are by total time
            top = &r;
    }
    if (!top || all <= 0)
        return;
    const double share = static_cast<double>(bound) / static_cast<double>(all);
    if (share < options.minMemoryBoundShare)
        return;
    Insight in;
    in.kind = InsightKind::MemoryBound;
    in.stake = bound;
    for (uint32_t t = 0; t < store.gpuTracks().size() && in.gpuOps.size() < options.maxRefs; ++t) {
        const GpuTrack& track = store.gpuTracks()[t];
        for (size_t i = 0; i < track.size() && in.gpuOps.size() < options.maxRefs; ++i)
            if (track.name(i) == top->name && track.deviceId() == top->deviceId)
                in.gpuOps.push_back({t, static_cast<uint32_t>(i)});
    }
    std::sort(in.gpuOps.begin(), in.gpuOps.end(), [&](EventRef a, EventRef b) {
        return store.gpuTracks()[a.track].start(a.index) <
               store.gpuTracks()[b.track].start(b.index);
    });
    const std::string name =
        in.gpuOps.empty() ? store.text(top->name) : gpuOpShortName(store, in.gpuOps.front());
    const bool dramRoof = !std::isnan(top->dram()) && top->dram() >= top->memory();
    in.text = name + " runs at " + formatPercentText(top->memory() / 100.0) + " of " +
              (dramRoof ? "DRAM" : "L2") + " peak";
    if (dramRoof && !std::isnan(top->achievedBandwidth))
        in.text += " (" + formatNumber(top->achievedBandwidth / 1e9) + " GB/s)";
    in.text += ": memory-bound";
    if (names > 1)
        in.text += ", like " + std::to_string(names - 1) + " more kernel" +
                   (names == 2 ? "" : "s") + " (together " + formatPercentText(share) +
                   " of kernel time";
    else
        in.text += " (" + formatPercentText(share) + " of kernel time";
    if (bytes > 0)
        in.text += ", " + formatNumber(bytes / 1e9) + " GB moved";
    in.text += "). Their time is set by the bytes they move, not their arithmetic: fusing "
               "neighbouring kernels so data stays in registers, or smaller data types, removes "
               "traffic; faster math will not.";
    in.numbers = {{"memory_bound_share", share},
                  {"total_ns", static_cast<double>(bound)},
                  {"kernel_names", static_cast<double>(names)},
                  {"top_memory_percent", top->memory()},
                  {"bytes", bytes}};
    in.eventCount = launches;
    out.push_back(std::move(in));
}

// Where the late rank's extra time goes, from its GPU work a step (kernels, copies and memsets
// other than collectives) against the other ranks' median: when the difference makes up at least
// half of its lateness, its GPU has more to do (more ops: more work; as many ops, longer: larger
// inputs or a slower GPU); else the extra time is on its CPU.
std::string lateRankCause(const RankSummary& slow, double othersWork, double othersOps,
                          double lateness, bool two) {
    const std::string figures =
        formatDurationText(slow.meanGpuWork) + " of GPU work a step (" +
        formatNumber(std::round(slow.meanGpuOps)) + " ops), " +
        (two ? "the other rank " : "the others ") + formatDurationText(othersWork) + " (" +
        formatNumber(std::round(othersOps)) + " ops" + (two ? ")" : ", median)");
    if (slow.meanGpuWork - othersWork >= 0.5 * lateness) {
        if (slow.meanGpuOps > 1.1 * othersOps)
            return "Its GPU has more to do: " + figures +
                   ". Give the ranks equal work a step (the same number of micro-batches, "
                   "layers or samples).";
        return "Its GPU has more to do: " + figures +
               ", the same ops taking longer. Its inputs are larger (longer sequences, uneven "
               "shards: balance the tokens per rank, bucket by length across ranks), or its GPU "
               "is slower (clocks, temperature, another process on it).";
    }
    return "Its GPU does about as much: " + figures +
           ". The extra time is on its CPU before the collective (its input pipeline, host work "
           "or waits; its trace opened alone says which).";
}

// A session whose ranks wait for one of them at most collectives (crossrank.h).
void lateRankInsight(const TraceStore& store, const CrossRankAnalysis& a,
                     const InsightOptions& options, std::vector<Insight>& out) {
    if (!store.isSession())
        return;
    const CrossRankVerdict& v = a.verdict;
    if (!v.dominant || v.othersStepTime <= 0)
        return;
    const double share = static_cast<double>(v.waitBehind) / static_cast<double>(v.othersStepTime);
    if (share < options.minRankWaitShare)
        return;
    const RankSummary& slow = a.ranks[v.rank];
    std::vector<int64_t> others, othersWork, othersOps;
    for (uint32_t r = 0; r < a.ranks.size(); ++r) {
        if (r != v.rank && a.ranks[r].steps() > 0) {
            others.push_back(static_cast<int64_t>(std::llround(a.ranks[r].meanCompute)));
            othersWork.push_back(static_cast<int64_t>(std::llround(a.ranks[r].meanGpuWork)));
            othersOps.push_back(static_cast<int64_t>(std::llround(a.ranks[r].meanGpuOps)));
        }
    }
    // The others' wait a step against the late rank's own collectives a step (it waits for no
    // one: that is the transfer): which of the two the communication is.
    std::vector<int64_t> othersWait;
    for (uint32_t r = 0; r < a.ranks.size(); ++r)
        if (r != v.rank && a.ranks[r].steps() > 0)
            othersWait.push_back(a.ranks[r].wait / static_cast<int64_t>(a.ranks[r].steps()));
    const double othersWaitPerStep = medianOf(othersWait);
    const double lateCommPerStep =
        slow.steps() > 0 ? static_cast<double>(slow.commTime) / static_cast<double>(slow.steps())
                         : 0.0;
    const double othersCompute = medianOf(others);
    const double othersGpuWork = medianOf(othersWork);
    const double othersGpuOps = medianOf(othersOps);
    Insight in;
    in.kind = InsightKind::LateRank;
    in.stake = v.waitBehind;
    const bool two = a.ranks.size() == 2;
    in.text = v.text + " That wait is " + formatPercentText(share) +
              (two ? " of the other rank's step time; " : " of their step time; ") +
              rankLabel(store, slow.source) + " spends " + formatDurationText(slow.meanCompute) +
              (two ? " a step outside collectives, the other rank "
                   : " a step outside collectives, the others ") +
              formatDurationText(othersCompute) + (two ? "" : " (median)") + ". " +
              lateRankCause(slow, othersGpuWork, othersGpuOps, v.meanLateness, two);
    const TraceSource* source =
        slow.source < store.sources().size() ? &store.sources()[slow.source] : nullptr;
    const int rank = source && source->rank >= 0 ? source->rank : static_cast<int>(slow.source);
    in.numbers = {{"rank", static_cast<double>(rank)},
                  {"slowest_steps", static_cast<double>(v.slowestSteps)},
                  {"compared_steps", static_cast<double>(v.comparedSteps)},
                  {"mean_late_ns", v.meanLateness},
                  {"wait_ns", static_cast<double>(v.waitBehind)},
                  {"wait_share", share},
                  {"compute_ns", slow.meanCompute},
                  {"others_compute_ns", othersCompute},
                  {"gpu_work_ns", slow.meanGpuWork},
                  {"others_gpu_work_ns", othersGpuWork},
                  {"others_wait_per_step_ns", othersWaitPerStep},
                  {"late_comm_per_step_ns", lateCommPerStep}};
    in.eventCount = v.slowestSteps;
    // Its own arrivals first (the collectives it was late to), then the others' in those steps.
    for (size_t pass = 0; pass < 2; ++pass) {
        for (size_t k = 0; k < a.steps.size(); ++k) {
            if (a.steps[k].slowest != v.rank)
                continue;
            for (uint32_t r = 0; r < a.ranks.size(); ++r) {
                const RankStep* s = a.step(r, k);
                if (s && (r == v.rank) == (pass == 0))
                    addRef(in.gpuOps, s->arrivalOp, options.maxRefs);
            }
        }
    }
    std::sort(in.gpuOps.begin(), in.gpuOps.end(), [&](EventRef x, EventRef y) {
        return std::make_pair(store.gpuTracks()[x.track].start(x.index), x.track) <
               std::make_pair(store.gpuTracks()[y.track].start(y.index), y.track);
    });
    out.push_back(std::move(in));
}

} // namespace

void addNoStepsInsight(const StepAnalysis& steps, std::vector<Insight>& out) {
    if (steps.noStepsReason.empty())
        return;
    Insight in;
    in.kind = InsightKind::NoSteps;
    in.text = steps.noStepsReason +
              " The findings above cover the whole trace, start-up and teardown included; an "
              "NVTX range \"step N\" around each step of the loop gives per-step findings.";
    out.push_back(std::move(in));
}

namespace {

std::string formatNumber(double v) {
    char buf[64];
    // Range first: converting a double beyond int64 (a saturated total) is undefined behaviour.
    if (std::abs(v) < 9.0e18 && v == static_cast<double>(static_cast<int64_t>(v)))
        std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    else
        std::snprintf(buf, sizeof buf, "%.4g", v);
    return buf;
}

} // namespace

namespace {

// The findings in the order they are listed before ranking (ties keep it): those that do not
// read the run-ahead analysis come before and after its one, so they can be found while it runs.
void findingsBeforeRunAhead(const TraceStore& store, const SyncStallAnalysis& stalls,
                            const GpuGapAnalysis& gaps, const InsightOptions& options,
                            std::vector<Insight>& out) {
    stallInsights(store, stalls, options, out);
    autotuningInsight(store, options, stalls, out);
    gpuIdleInsights(store, gaps, stalls, options, out);
    regionLaunchBoundInsight(store, gaps, options, out);
}
void findingsAfterRunAhead(const TraceStore& store, const CrossRankAnalysis& crossRank,
                           const InsightOptions& options, std::vector<Insight>& out) {
    kernelInsight(store, crossRank, options, out);
    memoryBoundInsight(store, options, out);
    lateRankInsight(store, crossRank, options, out);
}

std::vector<Insight> ranked(std::vector<Insight> out) {
    std::stable_sort(out.begin(), out.end(),
                     [](const Insight& a, const Insight& b) { return a.stake > b.stake; });
    return out;
}

} // namespace

std::vector<Insight> findInsights(const TraceStore& store, const RunAheadAnalysis& runAhead,
                                  const SyncStallAnalysis& stalls, const GpuGapAnalysis& gaps,
                                  const CrossRankAnalysis& crossRank,
                                  const InsightOptions& options) {
    std::vector<Insight> out;
    findingsBeforeRunAhead(store, stalls, gaps, options, out);
    runAheadInsight(store, runAhead, options, out);
    findingsAfterRunAhead(store, crossRank, options, out);
    return ranked(std::move(out));
}

namespace {

// The analyses over options.gaps.window (a session's ranks over `crossRankWindow`), then the
// findings from them. `stalls`, when given, are the sync stalls over that window already, and
// `crossRankGiven` the ranks over `crossRankWindow`. The run-ahead walk runs beside the others.
std::vector<Insight> insightsOver(const TraceStore& store, const InsightOptions& options,
                                  const TimeWindow& crossRankWindow,
                                  const SyncStallAnalysis* stalls = nullptr,
                                  const CrossRankAnalysis* crossRankGiven = nullptr) {
    const TimeWindow& w = options.gaps.window;
    RunAheadAnalysis runAhead;
    std::vector<Insight> before; // the findings from the other analyses, found meanwhile
    std::vector<Insight> after;
    runBoth([&] { runAhead = analyzeRunAhead(store, w, RunAheadDetail::OverallLags); },
            [&] {
                SyncStallAnalysis ownStalls;
                GpuGapAnalysis gaps;
                CrossRankAnalysis ownCrossRank;
                if (!stalls)
                    ownStalls = analyzeSyncStalls(store, w);
                // The launch-bound figures are read only for a device that idles enough for a
                // finding (gpuIdleInsights: its idle share outside the long gaps is at most its
                // idle share); at 100M events they are most of the gap analysis' time.
                GapOptions walkOnly = options.gaps;
                walkOnly.launchBound = GapOptions::LaunchBound::None;
                gaps = analyzeGpuGaps(store, walkOnly);
                const bool idles = std::any_of(
                    gaps.devices.begin(), gaps.devices.end(), [&](const DeviceUtilization& d) {
                        return d.active() > 0 && d.idle() > 0 &&
                               static_cast<double>(d.idle()) >=
                                   0.5 * options.minIdleShare * static_cast<double>(d.active());
                    });
                if (idles)
                    fillLaunchBound(store, options.gaps, gaps);
                // Sessions only: a store of one file is one rank, with nothing to compare.
                if (store.isSession() && !crossRankGiven)
                    ownCrossRank = analyzeCrossRank(store, crossRankWindow);
                findingsBeforeRunAhead(store, stalls ? *stalls : ownStalls, gaps, options, before);
                findingsAfterRunAhead(store, crossRankGiven ? *crossRankGiven : ownCrossRank,
                                      options, after);
            });
    runAheadInsight(store, runAhead, options, before);
    before.insert(before.end(), std::make_move_iterator(after.begin()),
                  std::make_move_iterator(after.end()));
    return ranked(std::move(before));
}

} // namespace

std::vector<Insight> findInsights(const TraceStore& store, const InsightOptions& options) {
    const TimeWindow& w = options.gaps.window;
    const bool wholeTrace = w.t0 == TimeWindow{}.t0 && w.t1 == TimeWindow{}.t1;
    if (!wholeTrace)
        return insightsOver(store, options, w);
    // The stalls over the whole trace find its steps; without steps they are the ones wanted.
    const SyncStallAnalysis stalls = analyzeSyncStalls(store, w);
    const StepAnalysis steps = analyzeSteps(store, stalls);
    if (!steps.empty())
        return findInsights(store, steps, options, &stalls);
    std::vector<Insight> out = insightsOver(store, options, w, &stalls);
    addNoStepsInsight(steps, out);
    return out;
}

std::vector<Insight> findInsights(const TraceStore& store, const StepAnalysis& steps,
                                  const InsightOptions& options,
                                  const SyncStallAnalysis* wholeStalls,
                                  const CrossRankAnalysis* wholeCrossRank) {
    if (steps.empty()) {
        const TimeWindow& w = options.gaps.window;
        const bool wholeTrace = w.t0 == TimeWindow{}.t0 && w.t1 == TimeWindow{}.t1;
        std::vector<Insight> out =
            insightsOver(store, options, w, wholeTrace ? wholeStalls : nullptr,
                         wholeTrace ? wholeCrossRank : nullptr);
        addNoStepsInsight(steps, out);
        return out;
    }
    InsightOptions steady = options;
    steady.gaps.window = steps.steadyWindow();
    const SyncStallAnalysis stalls = wholeStalls
                                         ? stallsWithin(store, *wholeStalls, steady.gaps.window)
                                         : analyzeSyncStalls(store, steady.gaps.window);
    // Ranks are compared step by step over the whole job (crossrank.h has its own steps, and
    // the ranks' steps do not start at the same moment as the steady window).
    std::vector<Insight> out = insightsOver(store, steady, TimeWindow{}, &stalls, wholeCrossRank);
    // The steps' causes (causeinsights.h) say why the GPU idles, per cause and with the advice
    // that fits it: they replace the device-wide idle, launch-bound and sync findings.
    std::erase_if(out, [](const Insight& in) {
        return in.kind == InsightKind::GpuIdle || in.kind == InsightKind::LaunchBound ||
               in.kind == InsightKind::SyncStall;
    });
    stepCauseInsights(store, steps, stalls, steady, out);
    // An autotuner benchmarking in the steps (Python stacks) holding half the steady state or
    // more is the verdict: the GPU's busy time, its kernel concentration and its waits are that
    // benchmarking, so the findings about them lose that time from their stake and say so.
    const auto tuning = std::find_if(out.begin(), out.end(), [](const Insight& in) {
        return in.kind == InsightKind::Compilation && in.number("time_ns") > 0 && !in.verdict;
    });
    const TimeWindow sw = steady.gaps.window;
    if (tuning != out.end() &&
        tuning->number("time_ns") >= 0.5 * static_cast<double>(sw.t1 - sw.t0)) {
        const auto tuned = static_cast<int64_t>(tuning->number("time_ns"));
        const auto waited = static_cast<int64_t>(tuning->number("wait_ns"));
        for (Insight& in : out) {
            in.verdict = false;
            if (&in == &*tuning)
                continue;
            if (in.kind == InsightKind::GpuBound || in.kind == InsightKind::KernelConcentration) {
                in.stake = std::max<int64_t>(0, in.stake - tuned);
                in.text += " Most of that GPU time is the autotuner's benchmarking (" +
                           formatDurationText(static_cast<double>(tuned)) +
                           ", its own finding): tune once, and this is what is left.";
            } else if (in.kind == InsightKind::SyncStall && waited > 0) {
                in.stake = std::max<int64_t>(0, in.stake - waited);
                in.text += " The autotuner's own waits (" +
                           formatDurationText(static_cast<double>(waited)) +
                           ") are part of its finding, not this one's.";
            }
        }
        tuning->verdict = true;
    }
    // In a session, ranks waiting for a late one is the verdict: the waiting ranks' own causes
    // (communication, syncs) are that wait. Not when the others wait less a step than the late
    // rank's own collectives take (the transfer itself: an exposed all-reduce, one rank a little
    // late): then the communication finding is.
    auto late = std::find_if(out.begin(), out.end(),
                             [](const Insight& in) { return in.kind == InsightKind::LateRank; });
    const auto communication = std::find_if(out.begin(), out.end(), [](const Insight& in) {
        return in.kind == InsightKind::Communication;
    });
    if (late != out.end() && communication != out.end() &&
        late->number("others_wait_per_step_ns") < late->number("late_comm_per_step_ns"))
        late = out.end();
    if (late != out.end()) {
        const auto wait = static_cast<int64_t>(late->number("wait_ns"));
        for (Insight& in : out) {
            in.verdict = false;
            // The waiting rank's collectives hold that wait: it is the late rank's finding.
            if (in.kind == InsightKind::Communication)
                in.stake = std::max<int64_t>(0, in.stake - wait);
        }
        late->verdict = true;
    }
    std::stable_sort(out.begin(), out.end(), [](const Insight& a, const Insight& b) {
        return a.verdict != b.verdict ? a.verdict : a.stake > b.stake;
    });
    phaseInsight(store, steps, out);
    return out;
}

Table insightTable(const TraceStore&, const std::vector<Insight>& insights) {
    Table table({{"Rank", Column::Align::Right, 0},
                 {"Kind", Column::Align::Left, 0},
                 {"Time at Stake (ns)", Column::Align::Right, 0},
                 {"Finding", Column::Align::Left, 0, false, true},
                 {"Numbers", Column::Align::Left, 0, true},
                 {"Events", Column::Align::Right, 0},
                 {"Refs", Column::Align::Left, 0, true}});
    int64_t rank = 0;
    for (const Insight& in : insights) {
        std::string numbers;
        for (const InsightNumber& n : in.numbers)
            numbers += (numbers.empty() ? "" : "; ") + n.name + "=" + formatNumber(n.value);
        std::string refs;
        size_t shown = 0;
        const auto add = [&](const char* family, const std::vector<EventRef>& list) {
            for (const EventRef r : list) {
                if (shown == 10)
                    return;
                refs += (refs.empty() ? "" : "; ") + std::string(family) + " " +
                        std::to_string(r.track) + ":" + std::to_string(r.index);
                ++shown;
            }
        };
        add("api", in.apiCalls);
        add("gpu", in.gpuOps);
        table.addRow({++rank, std::string(insightKindName(in.kind)), in.stake, in.text, numbers,
                      static_cast<int64_t>(in.eventCount), refs});
    }
    return table;
}

} // namespace warpline::model
