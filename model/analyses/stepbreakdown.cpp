#include "stepbreakdown.h"

#include "analysishelpers.h"
#include "communication.h"
#include "saturating.h"

#include <algorithm>
#include <limits>

namespace warpline::model {

namespace {

constexpr std::string_view kNames[kStepCauseCount] = {
    "compute", "copy", "memset", "communication", "launch",     "cpu-work",
    "input",   "sync", "memory", "compile",       "host-memory"};
constexpr std::string_view kTitles[kStepCauseCount] = {
    "GPU Compute",  "GPU Copy",       "GPU Memset",       "GPU Communication",
    "Idle: Launch", "Idle: CPU Work", "Idle: Input",      "Idle: Sync",
    "Idle: Memory", "Idle: Compile",  "Idle: Host Memory"};

bool startsWithAny(std::string_view name, std::initializer_list<std::string_view> prefixes) {
    return std::any_of(prefixes.begin(), prefixes.end(),
                       [&](std::string_view p) { return name.starts_with(p); });
}

// Classes of intervals, in the order that decides an instant's cause: GPU ops, then CPU calls.
enum Class : uint8_t {
    kCompute,
    kCopy,
    kMemset,
    kComm,
    kMemory,
    kCompile,
    kSync, // a sync stall, and the refill window after one
    kOther,
    kClasses
};
constexpr std::array<StepCause, kClasses> kCauseOf = {
    StepCause::Compute, StepCause::Copy,    StepCause::Memset, StepCause::Communication,
    StepCause::Memory,  StepCause::Compile, StepCause::Sync,   StepCause::Launch};

struct Interval {
    int64_t start, end;
};

// Intervals gathered track by track: each track's in start order (a run), the runs one after
// another. `close()` ends a run.
struct Runs {
    std::vector<Interval> items;
    std::vector<size_t> ends; // the end of each run in `items`

    void clear() {
        items.clear();
        ends.clear();
    }
    void add(int64_t from, int64_t to) { items.push_back({from, to}); }
    void close() {
        if (items.size() > (ends.empty() ? 0 : ends.back()))
            ends.push_back(items.size());
    }
};

// The sorted, disjoint union of the runs: merged pairwise (O(n log runs), no sort), then joined.
void unionOf(Runs& runs, std::vector<Interval>& out) {
    runs.close();
    std::vector<Interval>& v = runs.items;
    const std::vector<size_t>& ends = runs.ends;
    const auto byStart = [](const Interval& x, const Interval& y) { return x.start < y.start; };
    for (size_t width = 1; width < ends.size(); width *= 2) {
        for (size_t k = 0; k + width < ends.size(); k += 2 * width) {
            const size_t lo = k == 0 ? 0 : ends[k - 1];
            const size_t mid = ends[k + width - 1];
            const size_t hi = ends[std::min(k + 2 * width, ends.size()) - 1];
            std::inplace_merge(v.begin() + static_cast<std::ptrdiff_t>(lo),
                               v.begin() + static_cast<std::ptrdiff_t>(mid),
                               v.begin() + static_cast<std::ptrdiff_t>(hi), byStart);
        }
    }
    out.clear();
    for (const Interval& i : v) {
        if (!out.empty() && i.start <= out.back().end)
            out.back().end = std::max(out.back().end, i.end);
        else
            out.push_back(i);
    }
}

int64_t lengthOf(const std::vector<Interval>& v) {
    int64_t sum = 0;
    for (const Interval& i : v)
        accumulate(sum, i.end - i.start);
    return sum;
}

// `into` becomes the union of itself and `other` (both sorted and disjoint); `scratch` is reused.
void addTo(std::vector<Interval>& into, const std::vector<Interval>& other,
           std::vector<Interval>& scratch) {
    if (other.empty())
        return;
    scratch.clear();
    size_t i = 0, j = 0;
    while (i < into.size() || j < other.size()) {
        const Interval next =
            j == other.size() || (i < into.size() && into[i].start <= other[j].start) ? into[i++]
                                                                                      : other[j++];
        if (!scratch.empty() && next.start <= scratch.back().end)
            scratch.back().end = std::max(scratch.back().end, next.end);
        else
            scratch.push_back(next);
    }
    into.swap(scratch);
}

} // namespace

std::string_view stepCauseName(StepCause cause) {
    return kNames[static_cast<size_t>(cause)];
}
std::string_view stepCauseTitle(StepCause cause) {
    return kTitles[static_cast<size_t>(cause)];
}
bool isLaunchCall(std::string_view apiName) {
    return apiName.find("Launch") != std::string_view::npos;
}

bool isMemoryCall(std::string_view name) {
    return startsWithAny(name, {"cudaMalloc", "cudaFree", "cudaHostAlloc", "cudaHostRegister",
                                "cudaHostUnregister", "cuMemAlloc", "cuMemFree", "cuMemHostAlloc",
                                "cuMemCreate", "cuMemRelease", "cuMemMap", "cuMemUnmap",
                                "cuMemAddressReserve", "cuMemAddressFree", "cuMemSetAccess"});
}

bool isModuleLoadCall(std::string_view name) {
    return startsWithAny(name,
                         {"cuModuleLoad", "cuLibraryLoad", "cudaLibraryLoad", "cuLinkComplete"});
}

StepCause mainCause(const StepBreakdown& b) {
    size_t best = 0;
    for (size_t c = 1; c < kStepCauseCount; ++c) {
        if (b.time[c] > b.time[best])
            best = c;
    }
    return static_cast<StepCause>(best);
}

int64_t StepBreakdown::total() const {
    int64_t sum = 0;
    for (const int64_t t : time)
        accumulate(sum, t);
    return sum;
}

std::vector<StepBreakdown> breakDownSteps(const TraceStore& store, uint32_t source,
                                          const SyncStallAnalysis& stalls,
                                          const std::vector<std::pair<int64_t, int64_t>>& windows) {
    std::vector<StepBreakdown> out(windows.size());
    if (windows.empty())
        return out;
    // The rank's GPU tracks, and its threads' API tracks (the outermost calls apart).
    const std::vector<uint32_t> gpuTracks = gpuTracksOfSource(store, source);
    const std::vector<uint32_t> allTracks = apiTracksOfSource(store, source);
    std::vector<uint32_t> outerTracks;
    for (const uint32_t t : allTracks) {
        if (store.apiTracks()[t].depth() == 0)
            outerTracks.push_back(t);
    }
    // The rank's stalls by start, and their calls (which the sweep counts as Sync, not Other).
    std::vector<const SyncStall*> rankStalls;
    for (const SyncStall& s : stalls.stalls) {
        if (s.thread != SyncStall::kNoThread && store.threads()[s.thread].source == source)
            rankStalls.push_back(&s);
    }
    std::sort(rankStalls.begin(), rankStalls.end(),
              [](const SyncStall* x, const SyncStall* y) { return x->start < y->start; });
    // Per API track, the indices of its stall calls, sorted: walked beside the track's calls.
    std::vector<std::vector<uint32_t>> stallCalls(store.apiTracks().size());
    for (const SyncStall* s : rankStalls) {
        if (s->call.valid())
            stallCalls[s->call.track].push_back(s->call.index);
    }
    for (std::vector<uint32_t>& v : stallCalls)
        std::sort(v.begin(), v.end());
    // How long a stall waited for work queued before it: its blocked time less the time its own
    // copy ran on the GPU (a blocking 64 MB read-back waits mostly for its copy, which no sync
    // placement would take away). The refill after it is capped by this.
    const auto queueWait = [&](const SyncStall& s) {
        int64_t own = 0;
        if (s.copyOp.valid()) {
            const GpuTrack& g = store.gpuTracks()[s.copyOp.track];
            own = std::max<int64_t>(0, std::min(g.end(s.copyOp.index), s.end) -
                                           std::max(g.start(s.copyOp.index), s.start));
        }
        return std::max<int64_t>(0, s.blocked() - own);
    };
    // The copy a GPU op made (its direction and size); null for a kernel or a memset.
    const auto copyOf = [&](EventRef op) -> const MemOpInfo* {
        const GpuTrack& g = store.gpuTracks()[op.track];
        return g.kind(op.index) == GpuOpKind::Memcpy && g.detail(op.index) < store.memOps().size()
                   ? &store.memOps()[g.detail(op.index)]
                   : nullptr;
    };
    // Whether one of the first three launches at or after t copies host to device.
    const auto inputFollows = [&](int64_t t, EventRef& first) {
        std::vector<std::pair<int64_t, EventRef>> next;
        for (const uint32_t at : allTracks) {
            const ApiTrack& track = store.apiTracks()[at];
            const IndexRange r = track.startingIn(t, std::numeric_limits<int64_t>::max());
            size_t found = 0;
            for (size_t i = r.first; i < r.last && found < 3; ++i) {
                if (!track.gpuOps(i).empty()) {
                    next.emplace_back(track.start(i), EventRef{at, static_cast<uint32_t>(i)});
                    ++found;
                }
            }
        }
        std::sort(next.begin(), next.end(),
                  [](const auto& x, const auto& y) { return x.first < y.first; });
        first = next.empty() ? EventRef{} : next.front().second;
        for (size_t k = 0; k < std::min<size_t>(3, next.size()); ++k) {
            const ApiTrack& track = store.apiTracks()[next[k].second.track];
            for (const EventRef& op : track.gpuOps(next[k].second.index)) {
                if (const MemOpInfo* m = copyOf(op); m && m->copyKind == kCopyHtoD)
                    return true;
            }
        }
        return false;
    };

    // Whether the last launch before t copied more than one value device to host: the CPU then
    // works on the GPU's results (a loss or metrics computed on the CPU, an environment stepped
    // with the actions) before it copies anything back. That round trip is CPU work on the
    // step's own data, not waiting for the next input; a scalar read (loss.item()) is not one.
    const auto readBackBefore = [&](int64_t t) {
        EventRef last;
        int64_t lastStart = std::numeric_limits<int64_t>::min();
        for (const uint32_t at : allTracks) {
            const ApiTrack& track = store.apiTracks()[at];
            const IndexRange r = track.startingIn(std::numeric_limits<int64_t>::min(), t);
            for (size_t i = r.last; i > r.first; --i) {
                if (track.gpuOps(i - 1).empty())
                    continue;
                if (track.start(i - 1) > lastStart) {
                    lastStart = track.start(i - 1);
                    last = EventRef{at, static_cast<uint32_t>(i - 1)};
                }
                break;
            }
        }
        if (!last.valid())
            return false;
        for (const EventRef& op : store.apiTracks()[last.track].gpuOps(last.index)) {
            if (const MemOpInfo* m = copyOf(op);
                m && m->copyKind == kCopyDtoH && m->bytes > kScalarReadBackBytes)
                return true;
        }
        return false;
    };

    // The windows [from, to), on one thread: each half of the steps on one of two.
    const auto process = [&](size_t from, size_t to) {
        // Per name: its class (CPU: memory, compile or other); kernels: communication or compute.
        std::vector<int8_t> classOf(store.strings().size(), -1), launchName(classOf);
        CommunicationNames communication(store);
        const auto callClass = [&](NameId id) {
            if (classOf[id] < 0) {
                const std::string& n = store.text(id);
                classOf[id] = isMemoryCall(n) ? kMemory : isModuleLoadCall(n) ? kCompile : kOther;
            }
            return static_cast<uint8_t>(classOf[id]);
        };
        const auto isLaunch = [&](NameId id) {
            if (launchName[id] < 0)
                launchName[id] = isLaunchCall(store.text(id));
            return launchName[id] == 1;
        };
        // Each track's range for the last window: the next window's is searched from there.
        std::vector<IndexRange> gpuHint(gpuTracks.size()), cpuHint(outerTracks.size());
        std::array<Runs, kClasses> runs;
        Runs busyRuns, refillRuns;
        std::vector<Interval> cpu, refill, covered, classUnion, scratch, stallSpans, dense,
            launchCalls;
        for (size_t w = from; w < to; ++w) {
            const int64_t a = windows[w].first;
            const int64_t b = windows[w].second;
            StepBreakdown& bd = out[w];
            if (b <= a)
                continue;
            for (Runs& r : runs)
                r.clear();
            busyRuns.clear();
            refillRuns.clear();
            stallSpans.clear();
            dense.clear();
            launchCalls.clear();
            bool pageableCopies = false; // a copy from or to pageable memory runs in the step
            size_t stallCount = 0;       // starting in the step
            const auto add = [&](int64_t from, int64_t to, uint8_t cls) {
                from = std::max(from, a);
                to = std::min(to, b);
                if (to > from)
                    runs[cls].add(from, to);
            };
            const auto closeRuns = [&] {
                for (Runs& r : runs)
                    r.close();
            };
            for (size_t g = 0; g < gpuTracks.size(); ++g) {
                const GpuTrack& track = store.gpuTracks()[gpuTracks[g]];
                const IndexRange r = gpuHint[g] = track.visibleRange(a, b, gpuHint[g]);
                for (size_t i = r.first; i < r.last; ++i) {
                    const GpuOpKind kind = track.kind(i);
                    if (kind == GpuOpKind::Memcpy && !pageableCopies)
                        if (const MemOpInfo* m = copyOf({gpuTracks[g], static_cast<uint32_t>(i)}))
                            pageableCopies =
                                (m->copyKind == kCopyHtoD && m->srcKind == kMemPageable) ||
                                (m->copyKind == kCopyDtoH && m->dstKind == kMemPageable);
                    add(track.start(i), track.end(i),
                        kind == GpuOpKind::Kernel
                            ? uint8_t{communication.isKernel(track, i) ? kComm : kCompute}
                        : kind == GpuOpKind::Memcpy ? uint8_t{kCopy}
                                                    : uint8_t{kMemset});
                }
                closeRuns();
            }
            // CPU calls, over a margin so that a stretch without calls is measured whole.
            const int64_t m0 = addSaturated(a, -kCpuStretch), m1 = addSaturated(b, kCpuStretch);
            for (size_t o = 0; o < outerTracks.size(); ++o) {
                const uint32_t t = outerTracks[o];
                const ApiTrack& track = store.apiTracks()[t];
                const IndexRange r = cpuHint[o] = track.visibleRange(m0, m1, cpuHint[o]);
                const std::vector<uint32_t>& stallsHere = stallCalls[t];
                auto nextStall = std::lower_bound(stallsHere.begin(), stallsHere.end(), r.first);
                for (size_t i = r.first; i < r.last; ++i) {
                    busyRuns.add(track.start(i), track.end(i));
                    const uint8_t cls = callClass(track.name(i));
                    if (track.start(i) >= a && track.start(i) < b) {
                        bd.memoryCalls += cls == kMemory;
                        bd.moduleLoads += cls == kCompile;
                        if (isLaunch(track.name(i)))
                            launchCalls.push_back({track.start(i), track.end(i)});
                    }
                    const bool stall = nextStall != stallsHere.end() && *nextStall == i;
                    nextStall += stall;
                    add(track.start(i), track.end(i),
                        cls == kOther && stall ? uint8_t{kSync} : cls);
                }
                busyRuns.close();
                closeRuns();
            }
            // Stalls without a call (a lone sync record) and the refill after each stall: each in
            // the stalls' start order.
            const auto firstStall =
                std::lower_bound(rankStalls.begin(), rankStalls.end(), a,
                                 [](const SyncStall* s, int64_t t) { return s->start < t; });
            for (auto it = rankStalls.begin() +
                           std::max<std::ptrdiff_t>(0, (firstStall - rankStalls.begin()) - 64);
                 it != rankStalls.end() && (*it)->start < b; ++it) {
                const SyncStall& s = **it;
                stallCount += s.start >= a;
                if (s.start >= a)
                    stallSpans.push_back({s.start, s.end});
                if (!s.call.valid())
                    add(s.start, s.end, kSync);
                const int64_t refillEnd = addSaturated(s.end, queueWait(s));
                if (refillEnd > a && s.end < b)
                    refillRuns.add(std::max(a, s.end), std::min(b, refillEnd));
            }
            closeRuns();
            refillRuns.close();
            // Stall ends are not in start order where stalls overlap: one run each then.
            if (!std::is_sorted(
                    refillRuns.items.begin(), refillRuns.items.end(),
                    [](const Interval& x, const Interval& y) { return x.start < y.start; })) {
                refillRuns.ends.clear();
                for (size_t k = 1; k <= refillRuns.items.size(); ++k)
                    refillRuns.ends.push_back(k);
            }
            // The stretches between consecutive waits (and before the first, after the last)
            // with at most kDenseStretchLaunches launch calls: the GPU's idle time between launches
            // there is the waits' cost (below).
            const size_t launches = launchCalls.size();
            const auto byStart = [](const Interval& x, const Interval& y) {
                return x.start < y.start;
            };
            if (stallCount >= kDenseSyncMinimum) {
                std::sort(launchCalls.begin(), launchCalls.end(), byStart);
                const auto firstFrom = [&](int64_t t) {
                    return std::lower_bound(launchCalls.begin(), launchCalls.end(), Interval{t, t},
                                            byStart);
                };
                for (size_t k = 0; k <= stallSpans.size(); ++k) {
                    const int64_t x = k == 0 ? a : stallSpans[k - 1].end;
                    const int64_t y = k == stallSpans.size() ? b : stallSpans[k].start;
                    const auto n = firstFrom(y) - firstFrom(x);
                    if (y > x && n <= static_cast<std::ptrdiff_t>(kDenseStretchLaunches))
                        dense.push_back({x, y});
                }
                std::sort(dense.begin(), dense.end(), byStart);
            }
            const auto inDense = [&](int64_t t) {
                const auto it =
                    std::upper_bound(dense.begin(), dense.end(), t,
                                     [](int64_t x, const Interval& i) { return x < i.start; });
                return it != dense.begin() && (it - 1)->end > t;
            };
            unionOf(busyRuns, cpu);
            unionOf(refillRuns, refill);
            for (const Interval& r : refill)
                runs[kSync].add(r.start, r.end);
            runs[kSync].close();
            // Launch calls between waits a few launches apart are the waits' cost too.
            if (!dense.empty()) {
                for (const Interval& l : launchCalls)
                    if (inDense(l.start))
                        add(l.start, l.end, kSync);
                runs[kSync].close();
            }

            // Each class takes the time it covers that no class before it does.
            covered.clear();
            int64_t coveredLength = 0;
            for (size_t c = 0; c < kClasses; ++c) {
                unionOf(runs[c], classUnion);
                if (classUnion.empty())
                    continue;
                addTo(covered, classUnion, scratch);
                const int64_t length = lengthOf(covered);
                accumulate(bd[kCauseOf[c]], length - coveredLength);
                coveredLength = length;
            }
            // The rest: no GPU op and no CPU call. Each such gap lies in one stretch without
            // calls, or in the short wait between two calls: [previous call's end, next call's
            // start).
            const auto stretchAt = [&](int64_t t) {
                const auto it =
                    std::upper_bound(cpu.begin(), cpu.end(), t,
                                     [](int64_t x, const Interval& i) { return x < i.start; });
                const int64_t from = it == cpu.begin() ? m0 : (it - 1)->end;
                const int64_t to = it == cpu.end() ? m1 : it->start;
                return Interval{from, to};
            };
            Interval lastStretch{0, 0};
            bool lastInput = false;
            const ThreadCpuActivity* lastActivity = nullptr;
            CpuStretch lastCpu;
            const auto idle = [&](int64_t x, int64_t y) {
                if (y <= x)
                    return;
                StepCause cause;
                const Interval s = stretchAt(x);
                if (s.end - s.start < kCpuStretch) {
                    cause = inDense(x) ? StepCause::Sync : StepCause::Launch;
                } else if (bd.moduleLoads > 0) {
                    cause = StepCause::Compile;
                } else {
                    if (s.start != lastStretch.start || s.end != lastStretch.end) {
                        EventRef after;
                        lastInput = inputFollows(s.end, after) && !readBackBefore(s.start);
                        lastStretch = s;
                        // The thread that launches next: what it did in the stretch.
                        lastActivity = nullptr;
                        lastCpu = CpuStretch{};
                        if (after.valid() && !store.cpuSamples().empty()) {
                            const int64_t tid =
                                store.threads()[store.apiTracks()[after.track].threadIndex()]
                                    .globalTid;
                            lastActivity = store.cpuSamples().thread(tid);
                            if (lastActivity)
                                lastCpu = readCpuStretch(store, tid, s.start, s.end);
                        }
                        if (s.end - s.start > bd.longestStretch) {
                            bd.longestStretch = s.end - s.start;
                            bd.longestStretchStart = s.start;
                            bd.afterLongest = after;
                            bd.longestIsInput = lastInput;
                            bd.longestEndsInUpload = lastInput;
                            bd.longestCpu = lastCpu;
                            if (lastCpu.running + lastCpu.waiting > 0) {
                                const double input =
                                    lastCpu.waiting * lastCpu.inputShareOfWaiting() +
                                    lastCpu.running * lastCpu.inputShareOfRunning(lastInput);
                                bd.longestIsInput = input + (lastInput ? lastCpu.unknown : 0) >
                                                    0.5 * static_cast<double>(s.end - s.start);
                            }
                        }
                    }
                    cause = lastInput ? StepCause::Input : StepCause::CpuWork;
                    if (lastActivity && !lastActivity->stateTimes.empty()) {
                        // The samples decide where the thread's state is known.
                        const ThreadCpuActivity::StateTimes st = lastActivity->timeIn(x, y);
                        const auto part = [](int64_t t, double share) {
                            return static_cast<int64_t>(static_cast<double>(t) * share + 0.5);
                        };
                        const int64_t waitInput = part(st.waiting, lastCpu.inputShareOfWaiting());
                        const int64_t runInput =
                            part(st.running, lastCpu.inputShareOfRunning(lastInput));
                        const int64_t runHostMemory =
                            pageableCopies ? std::min(st.running - runInput,
                                                      part(st.running, lastCpu.hostMemoryShare()))
                                           : 0;
                        accumulate(bd[StepCause::Input], waitInput + runInput);
                        accumulate(bd[StepCause::HostMemory], runHostMemory);
                        accumulate(bd[StepCause::CpuWork],
                                   st.waiting - waitInput + st.running - runInput - runHostMemory);
                        accumulate(bd[cause], (y - x) - st.waiting - st.running);
                        return;
                    }
                }
                accumulate(bd[cause], y - x);
            };
            int64_t at = a;
            for (const Interval& i : covered) {
                idle(at, i.start);
                at = std::max(at, i.end);
            }
            idle(at, b);
            // A step that waits for the GPU every few launches cannot queue work ahead: the GPU
            // idles between the waits while the CPU issues the next op, which is the syncs'
            // cost (removing them lets the launches run ahead, fuse, or be captured), not
            // launching's.
            if (stallCount >= kDenseSyncMinimum && stallCount * kDenseSyncLaunches >= launches) {
                accumulate(bd[StepCause::Sync], bd[StepCause::Launch]);
                bd[StepCause::Launch] = 0;
            }
        }
    };
    const size_t half = windows.size() / 2;
    runBoth([&] { process(0, half); }, [&] { process(half, windows.size()); });
    return out;
}

} // namespace warpline::model
