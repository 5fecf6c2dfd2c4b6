#include "steps.h"

#include "analysishelpers.h"
#include "saturating.h"
#include "sourcelines.h"
#include "steprepeats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace warpline::model {

TimeWindow StepAnalysis::steadyWindow() const {
    if (empty())
        return {traceBegin, traceEnd};
    return {steps[std::min(firstSteady, steps.size() - 1)].start, steps.back().end};
}

std::string_view StepAnalysis::phaseOf(int64_t t) const {
    if (empty())
        return "whole trace";
    if (t < steps.front().start)
        return "start-up";
    const TimeWindow steady = steadyWindow();
    if (t < steady.t0)
        return "warm-up";
    return t < steady.t1 ? "steady state" : "teardown";
}

TimeWindow StepAnalysis::phaseWindow(std::string_view phase) const {
    if (empty())
        return {};
    const TimeWindow steady = steadyWindow();
    if (phase == "start-up")
        return {TimeWindow{}.t0, steps.front().start};
    if (phase == "warm-up")
        return {steps.front().start, steady.t0};
    if (phase == "steady state")
        return steady;
    if (phase == "teardown")
        return {steady.t1, TimeWindow{}.t1};
    return {};
}

int StepAnalysis::phaseRank(std::string_view phase) {
    constexpr std::string_view kOrder[] = {"steady state", "start-up", "warm-up", "teardown"};
    for (int i = 0; i < 4; ++i) {
        if (phase == kOrder[i])
            return i;
    }
    return 4;
}

TimeWindow StepAnalysis::openingWindow(size_t count) const {
    if (empty())
        return {traceBegin, traceEnd};
    const size_t first = std::min(firstSteady, steps.size() - 1);
    const size_t last = std::min(steps.size(), first + std::max<size_t>(count, 1)) - 1;
    return {steps[first].start, steps[last].end};
}

namespace {

constexpr double kWarmupFactor = 1.5;
constexpr size_t kWarmupLookahead = 5;

// Gradient accumulation annotated per micro-batch: the step range ("micro_step") K times, then
// the optimizer in a range of its own ("optimizer_step"; Lightning's "training_step" and
// "optimizer_step", where the last training_step runs inside it). Another repeated range name
// with a step word, on the same thread, is the optimizer's when at least three of its instances
// come, at most one per two step ranges, 80% of them launch a kernel of PyTorch's optimizers
// (isOptimizerKernel) and at most 10% of the step ranges do, and 80% of those after the first
// follow the same number K >= 2 of step ranges (those starting after the previous one's end).
// Then each of its instances ends a step, which begins at the first step range after the
// previous one; the step ranges after the last are left out (an evaluation at the end). An
// evaluation every N steps under a name of its own does not take part. Empty when none is.
std::vector<StepRange> accumulationSteps(const TraceStore& store, const StepRanges& ranges,
                                         uint32_t thread, const std::vector<StepRange>& micro) {
    const auto asSteps = [](const std::vector<StepRange>& r) {
        std::vector<Step> steps(r.size());
        for (size_t k = 0; k < r.size(); ++k) {
            steps[k].start = r[k].start;
            steps[k].end = r[k].end;
        }
        return steps;
    };
    const auto share = [](const std::vector<bool>& v) {
        return v.empty() ? 0.0
                         : static_cast<double>(std::count(v.begin(), v.end(), true)) /
                               static_cast<double>(v.size());
    };
    std::vector<Launch> launches;
    for (const std::vector<NameId>& names : ranges.others) {
        StepRanges other;
        other.found = true;
        other.names = names;
        const std::vector<StepRange> closes = stepRangesOn(store, other, thread, {});
        if (closes.size() < 3 || 2 * closes.size() > micro.size())
            continue;
        if (launches.empty())
            launches = launchesOf(store, store.threads()[thread].source);
        if (share(holdsOptimizer(store, launches, asSteps(closes))) < 0.8 ||
            share(holdsOptimizer(store, launches, asSteps(micro))) > 0.1)
            continue;
        // The step ranges of each instance: from the previous instance's end to this one's end.
        std::vector<std::pair<size_t, size_t>> groups; // [first, last) into micro
        size_t at = 0;
        for (const StepRange& close : closes) {
            const size_t first = at;
            while (at < micro.size() && micro[at].start < close.end)
                ++at;
            groups.emplace_back(first, at);
        }
        std::map<size_t, size_t> sizes;
        for (size_t g = 1; g < groups.size(); ++g)
            ++sizes[groups[g].second - groups[g].first];
        const auto mode = std::max_element(sizes.begin(), sizes.end(),
                                           [](auto& a, auto& b) { return a.second < b.second; });
        if (mode->first < 2 || 10 * mode->second < 8 * (groups.size() - 1))
            continue;
        std::vector<StepRange> steps;
        for (size_t g = 0; g < groups.size(); ++g) {
            const auto [first, last] = groups[g];
            if (first == last)
                continue;
            StepRange s = micro[first];
            s.start = std::min(s.start, closes[g].start);
            s.end = std::max(closes[g].end, micro[last - 1].end);
            steps.push_back(s);
        }
        return steps;
    }
    return {};
}

// Steps from the NVTX step range; on a session, those of the rank with the most of them.
std::vector<Step> nvtxSteps(const TraceStore& store, StepAnalysis& out) {
    const size_t sources = std::max<size_t>(1, store.sources().size());
    const std::vector<uint32_t> threadSource = threadSources(store, sources);
    StepRanges ranges = findStepRanges(store, threadSource, sources, {});
    // "replay 3" or "layer_2" repeat too, but are not the steps of a loop; a counter that counts
    // up through the run is.
    if (!ranges.found || !hasStepWord(ranges.name))
        ranges = counterRanges(store, threadSource, sources);
    if (!ranges.found)
        ranges = loopRanges(store, threadSource, sources);
    if (!ranges.found)
        return {};
    std::vector<StepRange> best;
    for (const uint32_t thread : ranges.threadOfRank) {
        if (thread == EventRef::kNone)
            continue;
        std::vector<StepRange> found = stepRangesOn(store, ranges, thread, {});
        if (found.size() > best.size()) {
            best = std::move(found);
            out.thread = thread;
        }
    }
    out.name = ranges.name;
    // blind18's LoRA fine-tune: 220 micro-steps, 2 for each of its 110 optimizer steps.
    // Each keeps its first micro-step's counter (none: numbered by position below).
    if (std::vector<StepRange> accumulated = accumulationSteps(store, ranges, out.thread, best);
        !accumulated.empty())
        best = std::move(accumulated);
    // A step lasts until the next starts: a loop that waits for its next batch outside the
    // range spends that time in the loop all the same. Not across a gap far longer than the
    // loop's usual ones (4x the gaps' 75th percentile, at least the median range): that is
    // another phase of the program (set-up of a second loop, an evaluation pass). The 75th
    // percentile, not the median: two DataLoader workers deliver batches in pairs, so half the
    // waits are long.
    std::vector<int64_t> gaps, durations;
    for (size_t k = 0; k < best.size(); ++k) {
        durations.push_back(best[k].end - best[k].start);
        if (k + 1 < best.size())
            gaps.push_back(std::max<int64_t>(0, best[k + 1].start - best[k].end));
    }
    const double longestGap = std::max(
        4.0 * static_cast<double>(gaps.empty() ? 0 : percentileOf(gaps, 75)), medianOf(durations));
    std::vector<Step> steps;
    for (size_t k = 0; k < best.size(); ++k) {
        Step s;
        s.number = best[k].number.value_or(static_cast<int64_t>(k));
        s.start = best[k].start;
        s.end = best[k].end;
        if (k + 1 < best.size() &&
            static_cast<double>(best[k + 1].start - best[k].end) <= longestGap)
            s.end = std::max(s.end, best[k + 1].start);
        s.range = best[k].range;
        steps.push_back(s);
    }
    return steps;
}

// Why neither NVTX ranges nor repeats gave steps, in one line.
std::string whyNoSteps(const TraceStore& store) {
    const size_t sources = std::max<size_t>(1, store.sources().size());
    const StepRanges ranges = findStepRanges(store, threadSources(store, sources), sources, {});
    std::string nvtx = ranges.found ? "the repeated NVTX range \"" + ranges.name +
                                          " N\" holds no step word (step, iter, batch)"
                                    : "no NVTX range named for a step (\"step N\", \"train_step\") "
                                      "repeats";
    const std::vector<size_t> perThread = launchesPerThread(store);
    size_t launches = 0;
    for (const size_t n : perThread)
        launches += n;
    if (launches == 0)
        return {}; // nothing ran on the GPU: nothing to explain
    std::string repeats =
        launches < 3 * kMinPeriod
            ? "only " + std::to_string(launches) + " launches"
            : "the " + std::to_string(launches) + " launches do not repeat (no sequence of " +
                  std::to_string(kMinPeriod) + " to " + std::to_string(kMaxPeriod) +
                  " launches recurs, no launch recurs at a regular spacing, no regular waits)";
    return "No training steps: " + nvtx + ", and " + repeats + ".";
}

// Moves the steps onto the GPU's timeline when the CPU runs more than a step ahead (a loop
// without a sync queues every step before the GPU runs the first): step k then runs from the GPU
// start of the first op launched in it to that of step k + 1 (the last: to its ops' end).
void projectOntoGpu(const TraceStore& store, StepAnalysis& a) {
    const std::vector<uint32_t> apiTracks =
        apiTracksOfSource(store, store.threads()[a.thread].source);
    constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
    std::vector<int64_t> gpuStart(a.steps.size(), kNone), gpuEnd(a.steps.size(), 0);
    std::vector<IndexRange> hint(apiTracks.size());
    for (size_t k = 0; k < a.steps.size(); ++k) {
        for (size_t at = 0; at < apiTracks.size(); ++at) {
            const ApiTrack& track = store.apiTracks()[apiTracks[at]];
            const IndexRange r = hint[at] =
                track.startingIn(a.steps[k].start, a.steps[k].end, hint[at]);
            for (size_t i = r.first; i < r.last; ++i) {
                for (const EventRef& op : track.gpuOps(i)) {
                    const GpuTrack& g = store.gpuTracks()[op.track];
                    gpuStart[k] = std::min(gpuStart[k], g.start(op.index));
                    gpuEnd[k] = std::max(gpuEnd[k], g.end(op.index));
                }
            }
        }
    }
    std::vector<int64_t> lags, durations;
    for (size_t k = 0; k < a.steps.size(); ++k) {
        if (gpuStart[k] == kNone)
            return; // a step without GPU work: keep the CPU's steps
        lags.push_back(gpuStart[k] - a.steps[k].start);
        durations.push_back(a.steps[k].duration());
    }
    if (medianOf(lags) <= medianOf(durations))
        return;
    for (size_t k = 0; k < a.steps.size(); ++k) {
        a.steps[k].start = gpuStart[k];
        a.steps[k].end = k + 1 < a.steps.size() ? std::max(gpuStart[k + 1], gpuStart[k] + 1)
                                                : std::max(gpuEnd[k], gpuStart[k] + 1);
    }
    a.measuredOnGpu = true;
}

void fillBreakdown(const TraceStore& store, const SyncStallAnalysis& stalls, StepAnalysis& a) {
    const uint32_t source = store.threads()[a.thread].source;
    const std::vector<uint32_t> tracks = gpuTracksOfSource(store, source);
    const std::vector<uint32_t> apiTracks = apiTracksOfSource(store, source);
    // Each half of the steps on one of two threads.
    const auto fill = [&](size_t first, size_t last) {
        std::vector<int8_t> launchName(store.strings().size(), -1);
        const auto isLaunch = [&](NameId id) {
            if (launchName[id] < 0)
                launchName[id] = isLaunchCall(store.text(id)) ? 1 : 0;
            return launchName[id] == 1;
        };
        // Each track's ranges for the last step: the next step's are searched from there.
        std::vector<IndexRange> gpuHint(tracks.size()), launchHint(apiTracks.size()),
            startHint(apiTracks.size());
        for (size_t k = first; k < last; ++k) {
            Step& s = a.steps[k];
            for (size_t g = 0; g < tracks.size(); ++g) {
                const GpuTrack& track = store.gpuTracks()[tracks[g]];
                const IndexRange r = gpuHint[g] = track.visibleRange(s.start, s.end, gpuHint[g]);
                for (size_t i = r.first; i < r.last; ++i) {
                    const int64_t from = std::max(track.start(i), s.start);
                    const int64_t to = std::min(track.end(i), s.end);
                    if (to <= from)
                        continue;
                    switch (track.kind(i)) {
                    case GpuOpKind::Kernel:
                        accumulate(s.kernel, to - from);
                        break;
                    case GpuOpKind::Memcpy:
                        accumulate(s.memcpy, to - from);
                        break;
                    case GpuOpKind::Memset:
                        accumulate(s.memset, to - from);
                        break;
                    }
                }
            }
            for (size_t at = 0; at < apiTracks.size(); ++at) {
                const ApiTrack& track = store.apiTracks()[apiTracks[at]];
                if (track.depth() == 0) {
                    const IndexRange r = launchHint[at] =
                        track.visibleRange(s.start, s.end, launchHint[at]);
                    for (size_t i = r.first; i < r.last; ++i) {
                        if (isLaunch(track.name(i)))
                            accumulate(s.launch, std::min(track.end(i), s.end) -
                                                     std::max(track.start(i), s.start));
                    }
                }
                const IndexRange r = startHint[at] =
                    track.startingIn(s.start, s.end, startHint[at]);
                for (size_t i = r.first; i < r.last; ++i) {
                    const auto ops = track.gpuOps(i);
                    if (ops.empty())
                        continue;
                    const double cost =
                        static_cast<double>(track.duration(i)) / static_cast<double>(ops.size());
                    for (const EventRef& op : ops) {
                        const GpuTrack& g = store.gpuTracks()[op.track];
                        if (g.kind(op.index) != GpuOpKind::Kernel)
                            continue;
                        ++s.kernels;
                        if (static_cast<double>(g.duration(op.index)) < cost)
                            ++s.launchBoundKernels;
                    }
                }
            }
        }
    };
    runBoth([&] { fill(0, a.steps.size() / 2); },
            [&] { fill(a.steps.size() / 2, a.steps.size()); });
    for (const SyncStall& stall : stalls.stalls) {
        if (stall.thread == SyncStall::kNoThread || store.threads()[stall.thread].source != source)
            continue;
        auto it = std::upper_bound(a.steps.begin(), a.steps.end(), stall.start,
                                   [](int64_t t, const Step& s) { return t < s.start; });
        if (it != a.steps.begin())
            --it;
        for (; it != a.steps.end() && it->start < stall.end; ++it) {
            const int64_t from = std::max(it->start, stall.start);
            const int64_t to = std::min(it->end, stall.end);
            if (to > from)
                accumulate(it->syncWait, to - from);
        }
    }
    std::vector<std::pair<int64_t, int64_t>> windows;
    for (const Step& s : a.steps)
        windows.emplace_back(s.start, s.end);
    const std::vector<StepBreakdown> causes = breakDownSteps(store, source, stalls, windows);
    for (size_t k = 0; k < a.steps.size(); ++k) {
        Step& s = a.steps[k];
        s.causes = causes[k];
        // The GPU's causes come first and cover the union of its ops.
        for (const StepCause c :
             {StepCause::Compute, StepCause::Copy, StepCause::Memset, StepCause::Communication})
            accumulate(s.gpuBusy, s.causes[c]);
    }
}

// Warm-up: the leading steps each longer than 1.5x the median of the (up to) five steps after
// it. Looking ahead, not at the whole run, keeps a program whose later phase is faster (another
// loop, another batch size) from passing its whole first phase for warm-up.
void flagWarmup(StepAnalysis& a) {
    std::vector<int64_t> durations;
    for (const Step& s : a.steps)
        durations.push_back(s.duration());
    const size_t k = warmupSteps(durations);
    for (size_t i = 0; i < k; ++i)
        a.steps[i].warmup = true;
    a.firstSteady = k;
    std::vector<int64_t> steady;
    for (size_t i = k; i < a.steps.size(); ++i)
        steady.push_back(a.steps[i].duration());
    medianAndPercentileOf(steady, 95, a.medianDuration, a.p95Duration);
}

} // namespace

StepAnalysis analyzeSteps(const TraceStore& store, StepDetail detail) {
    return analyzeSteps(store, analyzeSyncStalls(store), detail);
}

StepAnalysis analyzeSteps(const TraceStore& store, const SyncStallAnalysis& stalls,
                          StepDetail detail) {
    StepAnalysis a;
    a.traceBegin = store.beginTime();
    a.traceEnd = store.endTime();
    a.steps = nvtxSteps(store, a);
    a.source = StepSource::Nvtx;
    if (a.steps.size() < 2) {
        a = StepAnalysis{};
        a.traceBegin = store.beginTime();
        a.traceEnd = store.endTime();
        a.steps = repeatSteps(store, stalls, a);
        a.source = StepSource::Repeats;
    }
    if (a.steps.size() < 2) {
        const int64_t begin = a.traceBegin, end = a.traceEnd;
        a = StepAnalysis{};
        a.traceBegin = begin;
        a.traceEnd = end;
        a.noStepsReason = whyNoSteps(store);
        return a;
    }
    projectOntoGpu(store, a);
    if (detail == StepDetail::Full)
        fillBreakdown(store, stalls, a);
    flagWarmup(a);
    return a;
}

size_t warmupSteps(std::span<const int64_t> durations) {
    size_t k = 0;
    std::vector<int64_t> next;
    while (k + 1 < durations.size()) {
        next.assign(durations.begin() + static_cast<ptrdiff_t>(k + 1),
                    durations.begin() + static_cast<ptrdiff_t>(
                                            std::min(durations.size(), k + 1 + kWarmupLookahead)));
        if (static_cast<double>(durations[k]) <= kWarmupFactor * medianOf(next))
            break;
        ++k;
    }
    return k;
}

std::vector<std::pair<int64_t, int64_t>>
repeatStepSpans(const TraceStore& store, const SyncStallAnalysis& stalls, uint32_t source) {
    StepAnalysis a;
    std::vector<std::pair<int64_t, int64_t>> spans;
    for (const Step& s : repeatStepsOf(store, stalls, source, launchesPerThread(store, source), a))
        spans.emplace_back(s.start, s.end);
    if (spans.size() < 2)
        spans.clear();
    return spans;
}

StepBreakdown StepAnalysis::steadyCauses() const {
    StepBreakdown sum;
    for (size_t k = std::min(firstSteady, steps.size()); k < steps.size(); ++k) {
        for (size_t c = 0; c < kStepCauseCount; ++c)
            accumulate(sum.time[c], steps[k].causes.time[c]);
        sum.memoryCalls += steps[k].causes.memoryCalls;
        sum.moduleLoads += steps[k].causes.moduleLoads;
    }
    return sum;
}

Table stepTable(const TraceStore&, const StepAnalysis& analysis) {
    std::vector<Column> columns = {{"Step", Column::Align::Right},
                                   {"Start (ns)"},
                                   {"Duration (ns)"},
                                   {"GPU Busy (ns)"},
                                   {"GPU Busy (%)"},
                                   {"Kernel (ns)"},
                                   {"Memcpy (ns)"},
                                   {"Memset (ns)"},
                                   {"Sync Wait (ns)"},
                                   {"Launch (ns)"},
                                   {"Kernels"},
                                   {"Launch Bound (%)"},
                                   {"Warm-up", Column::Align::Left},
                                   {"Main Cause", Column::Align::Left}};
    for (size_t c = 0; c < kStepCauseCount; ++c)
        columns.push_back({std::string(stepCauseTitle(static_cast<StepCause>(c))) + " (ns)"});
    Table t(std::move(columns));
    const auto percent = [](int64_t part, int64_t whole) {
        return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
    };
    for (const Step& s : analysis.steps) {
        std::vector<Cell> row = {std::to_string(s.number),
                                 s.start,
                                 s.duration(),
                                 s.gpuBusy,
                                 percent(s.gpuBusy, s.duration()),
                                 s.kernel,
                                 s.memcpy,
                                 s.memset,
                                 s.syncWait,
                                 s.launch,
                                 static_cast<int64_t>(s.kernels),
                                 100.0 * s.launchBoundShare(),
                                 std::string(s.warmup ? "warm-up" : ""),
                                 std::string(stepCauseName(mainCause(s.causes)))};
        for (const int64_t v : s.causes.time)
            row.emplace_back(v);
        t.addRow(std::move(row));
    }
    if (analysis.steps.empty())
        return t;
    // median and p95 of every time column over the steady steps.
    const auto steady = std::span<const Step>(analysis.steps).subspan(analysis.firstSteady);
    const auto column = [&](auto get) {
        std::vector<int64_t> v;
        for (const Step& s : steady)
            v.push_back(get(s));
        double median = 0;
        int64_t p95 = 0;
        medianAndPercentileOf(v, 95, median, p95);
        return std::pair(median, p95);
    };
    const auto dur = column([](const Step& s) { return s.duration(); });
    const auto busy = column([](const Step& s) { return s.gpuBusy; });
    const auto kernel = column([](const Step& s) { return s.kernel; });
    const auto memcpy = column([](const Step& s) { return s.memcpy; });
    const auto memset = column([](const Step& s) { return s.memset; });
    const auto sync = column([](const Step& s) { return s.syncWait; });
    const auto launch = column([](const Step& s) { return s.launch; });
    const auto kernels = column([](const Step& s) { return static_cast<int64_t>(s.kernels); });
    const auto bound = column([](const Step& s) {
        return static_cast<int64_t>(std::llround(1e6 * s.launchBoundShare()));
    });
    const auto asInt = [](double v) { return static_cast<int64_t>(std::llround(v)); };
    std::vector<Cell> median = {std::string("median"),
                                Cell{},
                                asInt(dur.first),
                                asInt(busy.first),
                                dur.first > 0 ? 100.0 * busy.first / dur.first : 0.0,
                                asInt(kernel.first),
                                asInt(memcpy.first),
                                asInt(memset.first),
                                asInt(sync.first),
                                asInt(launch.first),
                                asInt(kernels.first),
                                bound.first / 1e4,
                                std::string(),
                                std::string(stepCauseName(mainCause(analysis.steadyCauses())))};
    std::vector<Cell> p95 = {
        std::string("p95"), Cell{},         dur.second,
        busy.second,        Cell{},         kernel.second,
        memcpy.second,      memset.second,  sync.second,
        launch.second,      kernels.second, static_cast<double>(bound.second) / 1e4,
        std::string(),      std::string()};
    for (size_t c = 0; c < kStepCauseCount; ++c) {
        const auto cause = column([c](const Step& s) { return s.causes.time[c]; });
        median.emplace_back(asInt(cause.first));
        p95.emplace_back(cause.second);
    }
    t.addRow(std::move(median));
    t.addRow(std::move(p95));
    return t;
}

} // namespace warpline::model
