#include "syncstalls.h"

#include "analysishelpers.h"
#include "saturating.h"
#include "sourcelines.h"

#include <algorithm>
#include <bit>
#include <map>
#include <tuple>
#include <unordered_map>

namespace warpline::model {

std::string_view stallKindName(StallKind kind) {
    switch (kind) {
    case StallKind::DeviceSync:
        return "device sync";
    case StallKind::StreamSync:
        return "stream sync";
    case StallKind::EventSync:
        return "event sync";
    case StallKind::Memcpy:
        return "blocking copy";
    case StallKind::OtherSync:
        return "other sync";
    }
    return "";
}

std::optional<StallKind> stallKindOfCallName(std::string_view apiName) {
    const std::string_view name = stripApiVersion(apiName);
    if (name == "cudaDeviceSynchronize" || name == "cudaThreadSynchronize" ||
        name == "cuCtxSynchronize")
        return StallKind::DeviceSync;
    if (name == "cudaStreamSynchronize" || name == "cuStreamSynchronize")
        return StallKind::StreamSync;
    if (name == "cudaEventSynchronize" || name == "cuEventSynchronize")
        return StallKind::EventSync;
    // Blocking copies (cudaMemcpy, cudaMemcpy2D, cudaMemcpyToSymbol, cuMemcpyDtoH, ...), not the
    // *Async variants, which return before the copy runs.
    if ((name.starts_with("cudaMemcpy") || name.starts_with("cuMemcpy")) &&
        name.find("Async") == std::string_view::npos)
        return StallKind::Memcpy;
    return std::nullopt;
}

namespace {

constexpr uint8_t kNotAStall = 0xff;
constexpr uint8_t kSyncStreamWaitEvent = 2;

uint8_t classifyApiName(std::string_view name) {
    const std::optional<StallKind> kind = stallKindOfCallName(name);
    return kind ? static_cast<uint8_t>(*kind) : kNotAStall;
}

StallKind kindOfSyncType(uint8_t syncType) {
    switch (syncType) {
    case 1:
        return StallKind::EventSync;
    case 3:
        return StallKind::StreamSync;
    case 4:
        return StallKind::DeviceSync;
    default:
        return StallKind::OtherSync;
    }
}

struct Candidate {
    uint32_t thread;
    uint32_t depth;
    int64_t start;
    int64_t end;
    EventRef call;
    int64_t syncIndex;
    uint8_t nameKind; // classifyApiName, or kNotAStall
};

// `inner` sorts after `outer`; it merges into it when it is the same call (a name match and a
// sync record) or a call made inside it on the same thread.
bool nestedIn(const Candidate& inner, const Candidate& outer) {
    if (inner.thread != outer.thread || outer.thread == SyncStall::kNoThread)
        return false;
    if (inner.start == outer.start && inner.end == outer.end)
        return true;
    return inner.start < outer.end && inner.end <= outer.end;
}

// The device tracks a stall looks at.
struct DeviceView {
    std::vector<uint32_t> allTracks;
    std::vector<DeviceTracks> devices;
    const std::vector<uint32_t>& tracksOf(int64_t deviceId) const {
        if (deviceId >= 0) {
            for (const DeviceTracks& d : devices) {
                if (d.deviceId == static_cast<uint32_t>(deviceId))
                    return d.tracks;
            }
        }
        return allTracks;
    }
};

// Fills finished ops and the GPU idle that followed (see the header). `hints` holds, per GPU
// track, where the last search there ended.
void measureGpuSide(const TraceStore& store, const std::vector<uint32_t>& tracks, SyncStall& s,
                    std::vector<OpRun>& runs, std::vector<size_t>& hints) {
    const auto& gpu = store.gpuTracks();
    s.finishedBegin = runs.size();
    bool running = false;
    int64_t idleStart = s.start;
    bool haveNext = false;
    int64_t nextStart = 0;
    for (const uint32_t t : tracks) {
        const GpuTrack& track = gpu[t];
        const auto ends = track.ends();
        const size_t first = upperBoundFrom(ends, hints[t], s.start);
        const size_t last = upperBoundFrom(ends, first, s.end);
        hints[t] = first;
        if (last > first) {
            runs.push_back({t, {first, last}});
            s.finishedOps += last - first;
        }
        if (last > 0)
            idleStart = std::max(idleStart, ends[last - 1]);
        // Ops [last, ...) end after s.end; the first of them runs at s.end if it started by then.
        if (last < track.size()) {
            if (track.start(last) <= s.end) {
                running = true;
            } else if (!haveNext || track.start(last) < nextStart) {
                haveNext = true;
                nextStart = track.start(last);
                s.nextOp = {t, static_cast<uint32_t>(last)};
            }
        }
    }
    s.finishedEnd = runs.size();
    if (running || !haveNext) {
        s.nextOp = {};
        return;
    }
    s.gpuIdleAfter = std::max<int64_t>(0, nextStart - idleStart);
}

// A sync right after a call that started copies (cudaMemcpyAsync, then cudaStreamSynchronize:
// what PyTorch's tensor.item() does) takes those copies as its own, whether or not they were
// still running: reading the copied value is why the program synchronized.
void findAwaitedCopy(const TraceStore& store, SyncStall& s) {
    if (s.call.index == 0)
        return;
    const ApiTrack& track = store.apiTracks()[s.call.track];
    for (const EventRef op : track.gpuOps(s.call.index - 1)) {
        const GpuTrack& gpu = store.gpuTracks()[op.track];
        if (gpu.kind(op.index) != GpuOpKind::Memcpy)
            continue;
        const MemOpInfo& info = store.memOps()[gpu.detail(op.index)];
        if (!s.copyOp.valid()) {
            s.copyOp = op;
            s.copyKind = info.copyKind;
            if (s.deviceId < 0)
                s.deviceId = gpu.deviceId();
        }
        s.bytes += info.bytes;
    }
}

// At most this many calls are looked at, per API depth, for the kernel launched before a stall
// without a stack: a thread that made only copies and syncs for a long time has no kernel there
// worth naming.
constexpr size_t kOriginLookBack = 256;

// The last kernel `thread` launched (by launch call start) among its calls that start before
// `before`; invalid when none.
EventRef lastKernelBefore(const TraceStore& store, uint32_t thread, int64_t before) {
    EventRef best;
    int64_t bestStart = 0;
    for (const uint32_t t : store.threads()[thread].apiTracks) {
        const ApiTrack& track = store.apiTracks()[t];
        const auto starts = track.starts();
        size_t i = static_cast<size_t>(std::lower_bound(starts.begin(), starts.end(), before) -
                                       starts.begin());
        for (size_t seen = 0; i > 0 && seen < kOriginLookBack; --i, ++seen) {
            if (best.valid() && starts[i - 1] <= bestStart)
                break;
            const auto ops = track.gpuOps(i - 1);
            const auto kernel = std::find_if(ops.rbegin(), ops.rend(), [&](const EventRef op) {
                return store.gpuTracks()[op.track].kind(op.index) == GpuOpKind::Kernel;
            });
            if (kernel != ops.rend()) {
                best = *kernel;
                bestStart = starts[i - 1];
                break;
            }
        }
    }
    return best;
}

void findOrigin(const TraceStore& store, UserFrames& userFrames, SyncStall& s) {
    if (!s.call.valid())
        return;
    auto frames = store.callStack(s.call);
    if (frames.empty() && s.copyOp.valid())
        frames = store.callStack(store.launchOf(s.copyOp));
    if (frames.empty()) {
        if (s.thread != SyncStall::kNoThread)
            s.origin.lastKernel = lastKernelBefore(store, s.thread, s.start);
        return;
    }
    s.origin.fromStack = true;
    s.origin.site = frames.front();
    if (userFrames.isUser(frames.front()))
        return;
    const auto user = std::find_if(frames.begin() + 1, frames.end(),
                                   [&](const CallFrame& f) { return userFrames.isUser(f); });
    if (user != frames.end()) {
        s.origin.hasUser = true;
        s.origin.user = *user;
    }
}

} // namespace

std::string originInSentence(const std::string& originText) {
    if (originText.empty())
        return {};
    return (originText.starts_with("after ") ? " " : " at ") + originText;
}

StallOrigin callOrigin(const TraceStore& store, EventRef call) {
    SyncStall s;
    s.call = call;
    if (call.valid()) {
        s.thread = store.apiTracks()[call.track].threadIndex();
        s.start = store.apiTracks()[call.track].start(call.index);
    }
    UserFrames userFrames(store);
    findOrigin(store, userFrames, s);
    return s.origin;
}

std::string stallOriginText(const TraceStore& store, const StallOrigin& origin) {
    if (!origin.fromStack)
        return origin.lastKernel.valid() ? "after " + gpuOpShortName(store, origin.lastKernel)
                                         : std::string();
    const auto location = [&](const CallFrame& f) {
        return f.file != kNoName ? sourceLocation(store, f.file, f.line) : store.text(f.function);
    };
    std::string text = location(origin.site);
    if (origin.hasUser)
        text += " \u2190 " + location(origin.user);
    return text;
}

std::span<const OpRun> SyncStallAnalysis::finishedOps(size_t stall) const {
    const SyncStall& s = stalls[stall];
    return std::span<const OpRun>(finishedRuns)
        .subspan(s.finishedBegin, s.finishedEnd - s.finishedBegin);
}

const ThreadStallShare* SyncStallAnalysis::threadShare(uint32_t thread) const {
    const auto it =
        std::lower_bound(threads.begin(), threads.end(), thread,
                         [](const ThreadStallShare& s, uint32_t t) { return s.thread < t; });
    return it != threads.end() && it->thread == thread ? &*it : nullptr;
}

namespace {

// The threads' shares of `result.stalls` over `window`: each thread with a call starting in it.
void addThreadShares(const TraceStore& store, TimeWindow window, SyncStallAnalysis& result) {
    const auto& apiTracks = store.apiTracks();
    for (uint32_t ti = 0; ti < store.threads().size(); ++ti) {
        const ThreadInfo& thread = store.threads()[ti];
        if (thread.apiTracks.empty())
            continue;
        const ApiTrack& top = apiTracks[thread.apiTracks.front()];
        const IndexRange r = top.startingIn(window.t0, window.t1);
        if (r.empty())
            continue;
        ThreadStallShare share;
        share.thread = ti;
        share.activeStart = top.start(r.first);
        share.activeEnd = top.end(r.last - 1);
        result.threads.push_back(share);
    }
    // Lone sync records have no thread: they are listed, but no thread's share includes them.
    for (const SyncStall& s : result.stalls) {
        if (s.thread == SyncStall::kNoThread)
            continue;
        accumulate(result.stalledTime, s.blocked());
        auto it =
            std::lower_bound(result.threads.begin(), result.threads.end(), s.thread,
                             [](const ThreadStallShare& a, uint32_t t) { return a.thread < t; });
        if (it == result.threads.end() || it->thread != s.thread) {
            // Only nested calls in the window (the outermost started before it): still count.
            ThreadStallShare share;
            share.thread = s.thread;
            share.activeStart = s.start;
            share.activeEnd = s.end;
            it = result.threads.insert(it, share);
        }
        accumulate(it->stalled, s.blocked());
        it->stalls += 1;
        it->activeStart = std::min(it->activeStart, s.start);
        it->activeEnd = std::max(it->activeEnd, s.end);
    }
    for (const ThreadStallShare& t : result.threads)
        accumulate(result.activeTime, t.active());
}

} // namespace

SyncStallAnalysis analyzeSyncStalls(const TraceStore& store, TimeWindow window) {
    SyncStallAnalysis result;
    const auto& apiTracks = store.apiTracks();
    const auto inWindow = [&](int64_t t) { return t >= window.t0 && t < window.t1; };

    // Classify each distinct name once; the per-call loop is then a table look-up.
    std::vector<uint8_t> nameKind(store.strings().size(), kNotAStall);
    std::vector<bool> asyncCopy(store.strings().size(), false);
    for (size_t id = 1; id < nameKind.size(); ++id) {
        const std::string_view name = stripApiVersion(store.text(static_cast<NameId>(id)));
        nameKind[id] = classifyApiName(name);
        asyncCopy[id] = (name.starts_with("cudaMemcpy") || name.starts_with("cuMemcpy")) &&
                        name.find("Async") != std::string_view::npos;
    }
    // An async copy into pageable host memory blocks like a sync (see the top of syncstalls.h).
    const auto intoPageable = [&](const ApiTrack& track, size_t i) {
        for (const EventRef op : track.gpuOps(i)) {
            const GpuTrack& g = store.gpuTracks()[op.track];
            if (g.kind(op.index) == GpuOpKind::Memcpy &&
                g.detail(op.index) < store.memOps().size()) {
                const MemOpInfo& m = store.memOps()[g.detail(op.index)];
                // ... and that returned only once its copy was done: it waited.
                if (m.copyKind == kCopyDtoH && m.dstKind == kMemPageable &&
                    track.end(i) >= g.end(op.index))
                    return true;
            }
        }
        return false;
    };

    // The calls named like a sync, the API tracks split in two halves by calls, one per thread,
    // then put together in track order.
    const auto namedLikeASync = [&](uint32_t firstTrack, uint32_t lastTrack,
                                    std::vector<Candidate>& out) {
        for (uint32_t t = firstTrack; t < lastTrack; ++t) {
            const ApiTrack& track = apiTracks[t];
            for (size_t i = 0; i < track.size(); ++i) {
                const uint8_t kind = nameKind[track.name(i)];
                if ((kind == kNotAStall && !(asyncCopy[track.name(i)] && intoPageable(track, i))) ||
                    !inWindow(track.start(i)))
                    continue;
                out.push_back({track.threadIndex(), track.depth(), track.start(i), track.end(i),
                               EventRef{t, static_cast<uint32_t>(i)}, -1, kind});
            }
        }
    };
    size_t calls = 0;
    for (const ApiTrack& track : apiTracks)
        calls += track.size();
    uint32_t middle = 0;
    for (size_t seen = 0; middle < apiTracks.size() && seen < calls / 2; ++middle)
        seen += apiTracks[middle].size();
    std::vector<Candidate> candidates;
    std::vector<Candidate> secondHalf;
    runBoth([&] { namedLikeASync(0, middle, candidates); },
            [&] { namedLikeASync(middle, static_cast<uint32_t>(apiTracks.size()), secondHalf); });
    candidates.insert(candidates.end(), secondHalf.begin(), secondHalf.end());
    std::vector<Candidate>().swap(secondHalf);
    const auto& syncs = store.syncs();
    for (size_t i = 0; i < syncs.size(); ++i) {
        const SyncEvent& e = syncs[i];
        if (e.syncType == kSyncStreamWaitEvent)
            continue;
        if (e.apiCall.valid()) {
            const ApiTrack& track = apiTracks[e.apiCall.track];
            if (!inWindow(track.start(e.apiCall.index)))
                continue;
            candidates.push_back({track.threadIndex(), track.depth(), track.start(e.apiCall.index),
                                  track.end(e.apiCall.index), e.apiCall, static_cast<int64_t>(i),
                                  nameKind[track.name(e.apiCall.index)]});
        } else if (inWindow(e.start)) {
            candidates.push_back({SyncStall::kNoThread, 0, e.start, e.end, EventRef{},
                                  static_cast<int64_t>(i), kNotAStall});
        }
    }
    // Outer calls first, so nested calls (cudaMemcpy -> cuMemcpyDtoH) merge into them.
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
        return std::tie(a.thread, a.start, b.end, a.depth) <
               std::tie(b.thread, b.start, a.end, b.depth);
    });

    // Context id -> device id, for sync records.
    std::map<uint32_t, uint32_t> contextDevice;
    for (const StreamInfo& s : store.streams())
        contextDevice.emplace(s.contextId, s.deviceId);
    DeviceView view;
    view.devices = tracksByDevice(store);
    for (const DeviceTracks& d : view.devices)
        view.allTracks.insert(view.allTracks.end(), d.tracks.begin(), d.tracks.end());

    const MemOpInfo* memOps = store.memOps().data();
    UserFrames userFrames(store);
    for (size_t c = 0; c < candidates.size();) {
        const Candidate& outer = candidates[c];
        SyncStall s;
        s.call = outer.call;
        s.thread = outer.thread;
        s.start = outer.start;
        s.end = outer.end;
        bool isStall = false;
        bool hasDtoDOnly = true;
        bool sawCopy = false;
        bool toPageable = false; // an async copy into pageable host memory: it blocks
        uint8_t kind = kNotAStall;
        // The outer candidate and every candidate nested in it (same thread, inside its span).
        size_t n = c;
        for (; n < candidates.size(); ++n) {
            const Candidate& inner = candidates[n];
            if (n > c && !nestedIn(inner, outer))
                break;
            if (inner.syncIndex >= 0 && s.syncIndex < 0)
                s.syncIndex = inner.syncIndex;
            if (kind == kNotAStall && inner.nameKind != kNotAStall)
                kind = inner.nameKind;
            if (!inner.call.valid())
                continue;
            for (const EventRef op : store.gpuOpsOf(inner.call)) {
                const GpuTrack& track = store.gpuTracks()[op.track];
                if (track.kind(op.index) != GpuOpKind::Memcpy)
                    continue;
                const MemOpInfo& info = memOps[track.detail(op.index)];
                if (!sawCopy) {
                    s.copyOp = op;
                    s.copyKind = info.copyKind;
                    s.deviceId = track.deviceId();
                    sawCopy = true;
                }
                hasDtoDOnly = hasDtoDOnly && info.copyKind == kCopyDtoD;
                toPageable =
                    toPageable || (info.copyKind == kCopyDtoH && info.dstKind == kMemPageable);
                s.bytes += info.bytes;
            }
        }
        c = std::max(n, c + 1);

        if (s.syncIndex >= 0) {
            isStall = true;
            // A lone record says what it waited for; a call that is not a sync by name (cudaFree)
            // is named in the report, so it is "other".
            if (kind == kNotAStall)
                kind = static_cast<uint8_t>(s.call.valid()
                                                ? StallKind::OtherSync
                                                : kindOfSyncType(syncs[s.syncIndex].syncType));
        } else if (kind != kNotAStall) {
            isStall = !(kind == static_cast<uint8_t>(StallKind::Memcpy) && sawCopy && hasDtoDOnly);
        } else if (toPageable) {
            // cudaMemcpyAsync into pageable memory returns only once the copy is done (CUDA's
            // "API synchronization behavior"): PyTorch's .cpu() waits there.
            kind = static_cast<uint8_t>(StallKind::Memcpy);
            isStall = true;
        }
        if (!isStall)
            continue;
        s.kind = static_cast<StallKind>(kind);
        if (!s.copyOp.valid() && s.call.valid() && s.kind != StallKind::Memcpy)
            findAwaitedCopy(store, s);
        findOrigin(store, userFrames, s);
        if (s.deviceId < 0 && s.syncIndex >= 0) {
            const auto it = contextDevice.find(syncs[s.syncIndex].contextId);
            if (it != contextDevice.end())
                s.deviceId = it->second;
        }
        if (s.deviceId < 0 && view.devices.size() == 1)
            s.deviceId = view.devices.front().deviceId;
        result.stalls.push_back(s);
    }
    // The GPU side of each stall, the stalls split in two halves, one per thread, each with its
    // own runs, then put together in stall order.
    const size_t half = result.stalls.size() / 2;
    std::vector<OpRun> secondRuns;
    const auto measure = [&](size_t first, size_t last, std::vector<OpRun>& runs) {
        std::vector<size_t> hints(store.gpuTracks().size(), 0);
        for (size_t i = first; i < last; ++i) {
            SyncStall& s = result.stalls[i];
            measureGpuSide(store, view.tracksOf(s.deviceId), s, runs, hints);
        }
    };
    runBoth([&] { measure(0, half, result.finishedRuns); },
            [&] { measure(half, result.stalls.size(), secondRuns); });
    const size_t shift = result.finishedRuns.size();
    for (size_t i = half; i < result.stalls.size(); ++i) {
        result.stalls[i].finishedBegin += shift;
        result.stalls[i].finishedEnd += shift;
    }
    result.finishedRuns.insert(result.finishedRuns.end(), secondRuns.begin(), secondRuns.end());

    addThreadShares(store, window, result);
    std::stable_sort(result.stalls.begin(), result.stalls.end(),
                     [](const SyncStall& a, const SyncStall& b) { return a.start < b.start; });
    return result;
}

SyncStallAnalysis stallsWithin(const TraceStore& store, const SyncStallAnalysis& whole,
                               TimeWindow window) {
    SyncStallAnalysis result;
    const auto byStart = [](const SyncStall& s, int64_t t) { return s.start < t; };
    const auto first =
        std::lower_bound(whole.stalls.begin(), whole.stalls.end(), window.t0, byStart);
    const auto last = std::lower_bound(first, whole.stalls.end(), window.t1, byStart);
    result.stalls.assign(first, last);
    for (SyncStall& s : result.stalls) {
        const size_t begin = result.finishedRuns.size();
        result.finishedRuns.insert(
            result.finishedRuns.end(),
            whole.finishedRuns.begin() + static_cast<std::ptrdiff_t>(s.finishedBegin),
            whole.finishedRuns.begin() + static_cast<std::ptrdiff_t>(s.finishedEnd));
        s.finishedBegin = begin;
        s.finishedEnd = result.finishedRuns.size();
    }
    addThreadShares(store, window, result);
    return result;
}

std::vector<StallGroup> groupSyncStalls(const TraceStore& store,
                                        const SyncStallAnalysis& analysis) {
    // Copies group by size class too, so a 4-byte loss.item() per step and a 16 MB weights
    // download at the end are different findings.
    using Key = std::tuple<uint32_t, NameId, uint8_t, uint8_t, int>;
    // An origin as its parts, so that its text is made once per distinct origin, not per stall.
    using OriginKey = std::tuple<bool, NameId, int32_t, NameId, bool, NameId, int32_t, NameId,
                                 uint32_t, uint32_t>;
    std::map<OriginKey, uint32_t> originIds;
    std::map<std::string, uint32_t> textIds;
    std::vector<const std::string*> texts;
    struct Fine {
        Key key;
        uint32_t text;
        int64_t blocked = 0;
        std::vector<uint32_t> stalls;
    };
    std::map<std::pair<Key, uint32_t>, size_t> fineIndex;
    std::vector<Fine> fine;
    for (size_t i = 0; i < analysis.stalls.size(); ++i) {
        const SyncStall& s = analysis.stalls[i];
        const NameId name =
            s.call.valid() ? store.apiTracks()[s.call.track].name(s.call.index) : kNoName;
        const Key key{s.thread, name, static_cast<uint8_t>(s.kind), s.copyKind,
                      std::bit_width(s.bytes)};
        const StallOrigin& o = s.origin;
        // A kernel's origin is its name, whichever launch it was.
        const EventRef k = o.lastKernel;
        const OriginKey originKey{o.fromStack,
                                  o.site.file,
                                  o.site.line,
                                  o.site.file == kNoName ? o.site.function : kNoName,
                                  o.hasUser,
                                  o.user.file,
                                  o.user.line,
                                  o.user.file == kNoName ? o.user.function : kNoName,
                                  k.valid() ? k.track : EventRef::kNone,
                                  k.valid() ? store.gpuTracks()[k.track].name(k.index) : kNoName};
        auto origin = originIds.find(originKey);
        if (origin == originIds.end()) {
            auto text = textIds.emplace(stallOriginText(store, o), texts.size()).first;
            if (text->second == texts.size())
                texts.push_back(&text->first);
            origin = originIds.emplace(originKey, text->second).first;
        }
        auto [it, inserted] = fineIndex.emplace(std::pair{key, origin->second}, fine.size());
        if (inserted)
            fine.push_back({key, origin->second, 0, {}});
        Fine& f = fine[it->second];
        f.stalls.push_back(static_cast<uint32_t>(i));
        accumulate(f.blocked, s.blocked());
    }

    // Per key, the origins by blocked time; past kMaxOrigins, the tail shares one row.
    std::map<Key, std::vector<size_t>> byKey;
    for (size_t f = 0; f < fine.size(); ++f)
        byKey[fine[f].key].push_back(f);
    std::vector<StallGroup> groups;
    const auto addGroup = [&](const Key& key, std::vector<uint32_t> stalls, std::string origin,
                              uint32_t origins) {
        StallGroup g;
        g.thread = std::get<0>(key);
        g.name = std::get<1>(key);
        g.kind = static_cast<StallKind>(std::get<2>(key));
        g.copyKind = std::get<3>(key);
        g.stalls = std::move(stalls);
        g.origin = std::move(origin);
        g.origins = origins;
        groups.push_back(std::move(g));
    };
    for (auto& [key, members] : byKey) {
        std::sort(members.begin(), members.end(), [&](size_t a, size_t b) {
            if (fine[a].blocked != fine[b].blocked)
                return fine[a].blocked > fine[b].blocked;
            return *texts[fine[a].text] < *texts[fine[b].text];
        });
        const size_t kept =
            members.size() > StallGroup::kMaxOrigins ? StallGroup::kMaxOrigins - 1 : members.size();
        for (size_t m = 0; m < kept; ++m) {
            Fine& f = fine[members[m]];
            addGroup(key, std::move(f.stalls), *texts[f.text], 1);
        }
        if (kept == members.size())
            continue;
        std::vector<uint32_t> rest;
        for (size_t m = kept; m < members.size(); ++m)
            rest.insert(rest.end(), fine[members[m]].stalls.begin(), fine[members[m]].stalls.end());
        std::sort(rest.begin(), rest.end());
        const auto others = static_cast<uint32_t>(members.size() - kept);
        addGroup(key, std::move(rest), "(" + std::to_string(others) + " other origins)", others);
    }

    std::vector<int64_t> scratch;
    for (StallGroup& g : groups) {
        scratch.clear();
        g.minBytes = analysis.stalls[g.stalls.front()].bytes;
        g.maxBytes = g.minBytes;
        for (const uint32_t i : g.stalls) {
            const SyncStall& s = analysis.stalls[i];
            scratch.push_back(s.blocked());
            g.minBytes = std::min(g.minBytes, s.bytes);
            g.maxBytes = std::max(g.maxBytes, s.bytes);
            g.totalBytes += s.bytes;
            g.finishedOps += s.finishedOps;
            accumulate(g.gpuIdleAfter, s.gpuIdleAfter);
        }
        g.blocked = DurationStats::compute(scratch);
        if (const ThreadStallShare* t = analysis.threadShare(g.thread); t && t->active() > 0)
            g.shareOfThread =
                static_cast<double>(g.blocked.total) / static_cast<double>(t->active());
    }
    std::sort(groups.begin(), groups.end(), [&](const StallGroup& a, const StallGroup& b) {
        if (a.blocked.total != b.blocked.total)
            return a.blocked.total > b.blocked.total;
        if (a.name != b.name)
            return store.text(a.name) < store.text(b.name);
        return a.origin < b.origin;
    });
    return groups;
}

namespace {

Column textColumn(std::string name) {
    return {std::move(name), Column::Align::Left, 0};
}
Column intColumn(std::string name) {
    return {std::move(name), Column::Align::Right, 0};
}
Column realColumn(std::string name, int decimals = 1) {
    return {std::move(name), Column::Align::Right, decimals};
}

std::string stallName(const TraceStore& store, const SyncStall& s) {
    if (s.call.valid())
        return std::string(
            stripApiVersion(store.text(store.apiTracks()[s.call.track].name(s.call.index))));
    return "(synchronization record)";
}

} // namespace

Table syncStallGroupTable(const TraceStore& store, const SyncStallAnalysis& analysis,
                          const std::vector<StallGroup>& groups) {
    Table table({realColumn("Time (%)"), intColumn("Total Time (ns)"), intColumn("Stalls"),
                 realColumn("Avg (ns)"), realColumn("Med (ns)"), intColumn("Min (ns)"),
                 intColumn("Max (ns)"), intColumn("GPU Ops Finished"),
                 intColumn("GPU Idle After (ns)"), textColumn("Copy"), intColumn("Min Bytes"),
                 intColumn("Max Bytes"), textColumn("Kind"), textColumn("Thread"),
                 textColumn("Name"), textColumn("Origin")});
    for (const StallGroup& g : groups) {
        const std::string name = g.name != kNoName
                                     ? std::string(stripApiVersion(store.text(g.name)))
                                     : std::string("(synchronization record)");
        const bool copy = g.kind == StallKind::Memcpy || g.totalBytes > 0;
        table.addRow(
            {g.shareOfThread * 100, g.blocked.total, static_cast<int64_t>(g.blocked.count),
             g.blocked.average, g.blocked.median, g.blocked.minimum, g.blocked.maximum,
             static_cast<int64_t>(g.finishedOps), g.gpuIdleAfter,
             copy ? Cell(std::string(copyKindText(g.copyKind))) : Cell(),
             copy ? Cell(static_cast<int64_t>(g.minBytes)) : Cell(),
             copy ? Cell(static_cast<int64_t>(g.maxBytes)) : Cell(),
             std::string(stallKindName(g.kind)),
             g.thread == SyncStall::kNoThread ? std::string() : threadLabel(store, g.thread), name,
             g.origin});
    }
    std::vector<int64_t> scratch;
    for (const ThreadStallShare& t : analysis.threads) {
        if (t.stalls == 0)
            continue;
        scratch.clear();
        uint64_t ops = 0;
        int64_t idle = 0;
        for (const SyncStall& s : analysis.stalls) {
            if (s.thread != t.thread)
                continue;
            scratch.push_back(s.blocked());
            ops += s.finishedOps;
            accumulate(idle, s.gpuIdleAfter);
        }
        const DurationStats d = DurationStats::compute(scratch);
        table.addRow({t.share() * 100, d.total, static_cast<int64_t>(d.count), d.average, d.median,
                      d.minimum, d.maximum, static_cast<int64_t>(ops), idle, Cell(), Cell(), Cell(),
                      std::string("all"), threadLabel(store, t.thread),
                      std::string("All synchronizing calls"), Cell()});
    }
    return table;
}

Table syncStallTable(const TraceStore& store, const SyncStallAnalysis& analysis) {
    Table table({intColumn("Start (ns)"), intColumn("Blocked (ns)"), textColumn("Kind"),
                 textColumn("Name"), textColumn("Thread"), intColumn("Device"), textColumn("Copy"),
                 intColumn("Bytes"), intColumn("GPU Ops Finished"),
                 intColumn("GPU Idle After (ns)"), textColumn("Next Op"), textColumn("Origin")});
    for (const SyncStall& s : analysis.stalls) {
        const bool copy = s.copyOp.valid();
        table.addRow(
            {s.start, s.blocked(), std::string(stallKindName(s.kind)), stallName(store, s),
             s.thread == SyncStall::kNoThread ? std::string() : threadLabel(store, s.thread),
             s.deviceId >= 0 ? Cell(s.deviceId) : Cell(),
             copy ? Cell(std::string(copyKindText(s.copyKind))) : Cell(),
             copy ? Cell(static_cast<int64_t>(s.bytes)) : Cell(),
             static_cast<int64_t>(s.finishedOps), s.gpuIdleAfter,
             s.nextOp.valid() ? Cell(gpuOpShortName(store, s.nextOp)) : Cell(),
             stallOriginText(store, s.origin)});
    }
    return table;
}

} // namespace warpline::model
