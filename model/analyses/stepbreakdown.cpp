#include "stepbreakdown.h"

#include "analysishelpers.h"
#include "communication.h"
#include "saturating.h"

#include <algorithm>
#include <limits>

namespace warpline::model {

namespace {

constexpr std::string_view kNames[kStepCauseCount] = {
    "compute",  "copy",  "memset", "communication", "launch",
    "cpu-work", "input", "sync",   "memory",        "compile"};
constexpr std::string_view kTitles[kStepCauseCount] = {
    "GPU Compute",    "GPU Copy",    "GPU Memset", "GPU Communication", "Idle: Launch",
    "Idle: CPU Work", "Idle: Input", "Idle: Sync", "Idle: Memory",      "Idle: Compile"};

bool startsWithAny(std::string_view name, std::initializer_list<std::string_view> prefixes) {
    return std::any_of(prefixes.begin(), prefixes.end(),
                       [&](std::string_view p) { return name.starts_with(p); });
}

// Interval classes of the sweep: GPU ops, then CPU calls.
enum Class : uint8_t {
    kCompute,
    kCopy,
    kMemset,
    kComm,
    kMemory,
    kCompile,
    kSync,
    kRefill, // the refill window after a stall
    kOther,
    kClasses
};

struct Event {
    int64_t t;
    int8_t delta;
    uint8_t cls;
};

struct Interval {
    int64_t start, end;
};

// Sorted, disjoint union of intervals (sorted in place).
std::vector<Interval> unionOf(std::vector<Interval>& v) {
    std::sort(v.begin(), v.end(),
              [](const Interval& x, const Interval& y) { return x.start < y.start; });
    std::vector<Interval> out;
    for (const Interval& i : v) {
        if (!out.empty() && i.start <= out.back().end)
            out.back().end = std::max(out.back().end, i.end);
        else
            out.push_back(i);
    }
    return out;
}

} // namespace

std::string_view stepCauseName(StepCause cause) {
    return kNames[static_cast<size_t>(cause)];
}
std::string_view stepCauseTitle(StepCause cause) {
    return kTitles[static_cast<size_t>(cause)];
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
                const GpuTrack& g = store.gpuTracks()[op.track];
                if (g.kind(op.index) != GpuOpKind::Kernel &&
                    g.detail(op.index) < store.memOps().size() &&
                    store.memOps()[g.detail(op.index)].copyKind == 1)
                    return true;
            }
        }
        return false;
    };

    // The windows [from, to), on one thread: each half of the steps on one of two.
    const auto process = [&](size_t from, size_t to) {
        // Per name: its class (CPU: memory, compile or other); kernels: communication or compute.
        std::vector<int8_t> classOf(store.strings().size(), -1);
        CommunicationNames communication(store);
        const auto callClass = [&](NameId id) {
            if (classOf[id] < 0) {
                const std::string& n = store.text(id);
                classOf[id] = isMemoryCall(n) ? kMemory : isModuleLoadCall(n) ? kCompile : kOther;
            }
            return static_cast<uint8_t>(classOf[id]);
        };
        std::vector<Event> events;
        std::vector<Interval> busyCpu, refill;
        for (size_t w = from; w < to; ++w) {
            const int64_t a = windows[w].first;
            const int64_t b = windows[w].second;
            StepBreakdown& bd = out[w];
            if (b <= a)
                continue;
            events.clear();
            busyCpu.clear();
            refill.clear();
            const auto add = [&](int64_t from, int64_t to, uint8_t cls) {
                from = std::max(from, a);
                to = std::min(to, b);
                if (to > from) {
                    events.push_back({from, 1, cls});
                    events.push_back({to, -1, cls});
                }
            };
            for (const uint32_t t : gpuTracks) {
                const GpuTrack& track = store.gpuTracks()[t];
                const IndexRange r = track.visibleRange(a, b);
                for (size_t i = r.first; i < r.last; ++i) {
                    const GpuOpKind kind = track.kind(i);
                    add(track.start(i), track.end(i),
                        kind == GpuOpKind::Kernel
                            ? uint8_t{communication.isKernel(track, i) ? kComm : kCompute}
                        : kind == GpuOpKind::Memcpy ? uint8_t{kCopy}
                                                    : uint8_t{kMemset});
                }
            }
            // CPU calls, over a margin so that a stretch without calls is measured whole.
            const int64_t m0 = addSaturated(a, -kCpuStretch), m1 = addSaturated(b, kCpuStretch);
            for (const uint32_t t : outerTracks) {
                const ApiTrack& track = store.apiTracks()[t];
                const IndexRange r = track.visibleRange(m0, m1);
                const std::vector<uint32_t>& stallsHere = stallCalls[t];
                auto nextStall = std::lower_bound(stallsHere.begin(), stallsHere.end(), r.first);
                for (size_t i = r.first; i < r.last; ++i) {
                    busyCpu.push_back({track.start(i), track.end(i)});
                    const uint8_t cls = callClass(track.name(i));
                    if (track.start(i) >= a && track.start(i) < b) {
                        bd.memoryCalls += cls == kMemory;
                        bd.moduleLoads += cls == kCompile;
                    }
                    const bool stall = nextStall != stallsHere.end() && *nextStall == i;
                    nextStall += stall;
                    add(track.start(i), track.end(i),
                        cls == kOther && stall ? uint8_t{kSync} : cls);
                }
            }
            // Stalls without a call (a lone sync record) and the refill after each stall.
            const auto firstStall =
                std::lower_bound(rankStalls.begin(), rankStalls.end(), a,
                                 [](const SyncStall* s, int64_t t) { return s->start < t; });
            for (auto it = rankStalls.begin() +
                           std::max<std::ptrdiff_t>(0, (firstStall - rankStalls.begin()) - 64);
                 it != rankStalls.end() && (*it)->start < b; ++it) {
                const SyncStall& s = **it;
                if (!s.call.valid())
                    add(s.start, s.end, kSync);
                const int64_t refillEnd = addSaturated(s.end, s.blocked());

                if (refillEnd > a && s.end < b)
                    refill.push_back({std::max(a, s.end), std::min(b, refillEnd)});
            }
            const std::vector<Interval> cpu = unionOf(busyCpu);
            for (const Interval& r : unionOf(refill))
                add(r.start, r.end, kRefill);

            // The stretch without calls around t: [previous call's end, next call's start).
            const auto stretchAt = [&](int64_t t) {
                const auto it =
                    std::upper_bound(cpu.begin(), cpu.end(), t,
                                     [](int64_t x, const Interval& i) { return x < i.start; });
                const int64_t from = it == cpu.begin() ? m0 : (it - 1)->end;
                const int64_t to = it == cpu.end() ? m1 : it->start;
                return Interval{from, to};
            };
            std::sort(events.begin(), events.end(),
                      [](const Event& x, const Event& y) { return x.t < y.t; });
            std::array<int32_t, kClasses> active{};
            int64_t at = a;
            Interval lastStretch{0, 0};
            bool lastInput = false;
            const auto account = [&](int64_t x, int64_t y) {
                if (y <= x)
                    return;
                StepCause cause;
                if (active[kCompute] > 0)
                    cause = StepCause::Compute;
                else if (active[kCopy] > 0)
                    cause = StepCause::Copy;
                else if (active[kMemset] > 0)
                    cause = StepCause::Memset;
                else if (active[kComm] > 0)
                    cause = StepCause::Communication;
                else if (active[kMemory] > 0)
                    cause = StepCause::Memory;
                else if (active[kCompile] > 0)
                    cause = StepCause::Compile;
                else if (active[kSync] > 0 || active[kRefill] > 0)
                    cause = StepCause::Sync;
                else if (active[kOther] > 0)
                    cause = StepCause::Launch;
                else {
                    const Interval s = stretchAt(x);
                    if (s.end - s.start < kCpuStretch) {
                        cause = StepCause::Launch;
                    } else if (bd.moduleLoads > 0) {
                        cause = StepCause::Compile;
                    } else {
                        if (s.start != lastStretch.start || s.end != lastStretch.end) {
                            EventRef after;
                            lastInput = inputFollows(s.end, after);
                            lastStretch = s;
                            if (s.end - s.start > bd.longestStretch) {
                                bd.longestStretch = s.end - s.start;
                                bd.longestStretchStart = s.start;
                                bd.afterLongest = after;
                                bd.longestIsInput = lastInput;
                            }
                        }
                        cause = lastInput ? StepCause::Input : StepCause::CpuWork;
                    }
                }

                accumulate(bd[cause], y - x);
            };
            for (const Event& e : events) {
                account(at, e.t);
                at = std::max(at, e.t);
                active[e.cls] += e.delta;
            }
            account(at, b);
        }
    };
    const size_t half = windows.size() / 2;
    runBoth([&] { process(0, half); }, [&] { process(half, windows.size()); });
    return out;
}

} // namespace warpline::model
