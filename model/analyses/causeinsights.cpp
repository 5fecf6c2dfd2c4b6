#include "causeinsights.h"

#include "analysishelpers.h"
#include "communication.h"
#include "cpuactivity.h"
#include "saturating.h"
#include "syncstalls.h"
#include "tracewriter.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <span>

namespace warpline::model {

namespace {

struct Context {
    const TraceStore& store;
    const StepAnalysis& steps;
    const SyncStallAnalysis& stalls; // over `window`
    const InsightOptions& options;
    uint32_t source = 0;
    TimeWindow window;
    std::span<const Step> steady;
    StepBreakdown causes;
    int64_t total = 0;
    std::vector<uint32_t> gpuTracks; // of the rank
    std::vector<uint32_t> apiTracks; // of the rank's threads

    double share(StepCause c) const {
        return total > 0 ? static_cast<double>(causes[c]) / static_cast<double>(total) : 0.0;
    }
    // The mean over the steady steps: causes that come in some steps only (a recompilation, a
    // log line every N steps) count in full.
    double perStep(StepCause c) const {
        return steady.empty() ? 0.0
                              : static_cast<double>(causes[c]) / static_cast<double>(steady.size());
    }
    // "18% of the steady state (1.2 ms a step on average)"
    std::string amount(StepCause c) const {
        return formatPercentText(share(c)) + " of the steady state (" +
               formatDurationText(perStep(c)) + " a step on average)";
    }
    bool inWindow(int64_t t) const { return t >= window.t0 && t < window.t1; }
    // The rank's sync stalls (`stalls`: the steady state's) per steady step, to one decimal.
    double waitsPerStep() const {
        size_t waits = 0;
        for (const SyncStall& stall : stalls.stalls)
            waits += stall.thread != SyncStall::kNoThread &&
                     store.threads()[stall.thread].source == source;
        const double steps = std::max<double>(1.0, static_cast<double>(steady.size()));
        return std::round(static_cast<double>(waits) / steps * 10) / 10;
    }
    // The kernels set the step time (causeinsights.h).
    bool gpuBound() const {
        const double compute = share(StepCause::Compute);
        if (compute >= 1.0 - kMaxOverheadShare)
            return true;
        if (compute < kMostlyComputeShare)
            return false;
        for (size_t k = 0; k < kStepCauseCount; ++k) {
            const auto cause = static_cast<StepCause>(k);
            if (cause != StepCause::Compute && share(cause) >= kMaxOverheadShare)
                return false;
        }
        return true;
    }
    // The kernels hold most of the steady state and the launch idle beside them is at most a
    // third of their time, with nothing else at kMaxOverheadShare: eager PyTorch's overhead
    // between its large kernels (blind16's ViT: 65% and 14%, blind18's LoRA: 77% and 14%). The
    // kernels set the step time; the launch idle is a finding of its own, not the verdict.
    bool computeOverLaunches() const {
        const double compute = share(StepCause::Compute);
        if (compute < kComputeOverLaunchShare || 3 * share(StepCause::Launch) > compute)
            return false;
        for (size_t k = 0; k < kStepCauseCount; ++k) {
            const auto cause = static_cast<StepCause>(k);
            if (cause != StepCause::Compute && cause != StepCause::Launch &&
                share(cause) >= kMaxOverheadShare)
                return false;
        }
        return true;
    }
};

// "12", "2.5": a count or a rate, at most one decimal.
std::string formatNumber(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, v == std::round(v) ? "%.0f" : "%.1f", v);
    return buf;
}

void addRef(std::vector<EventRef>& refs, EventRef ref, size_t maxRefs) {
    if (ref.valid() && refs.size() < maxRefs)
        refs.push_back(ref);
}

Insight base(const Context& c, InsightKind kind, StepCause cause) {
    Insight in;
    in.kind = kind;
    in.stake = c.causes[cause];
    in.numbers = {{"share", c.share(cause)},
                  {"time_ns", static_cast<double>(c.causes[cause])},
                  {"per_step_ns", c.perStep(cause)},
                  {"steady_steps", static_cast<double>(c.steady.size())},
                  {"median_step_ns", c.steps.medianDuration}};
    return in;
}

// Where a call was made: its Python line when it has a stack, else the op it launched.
std::string whereText(const TraceStore& store, EventRef call) {
    if (!call.valid())
        return {};
    const StallOrigin o = callOrigin(store, call);
    if (o.fromStack)
        return stallOriginText(store, o);
    const auto ops = store.apiTracks()[call.track].gpuOps(call.index);
    return ops.empty() ? std::string(stripApiVersion(
                             store.text(store.apiTracks()[call.track].name(call.index))))
                       : gpuOpShortName(store, ops.front());
}

void gpuBound(const Context& c, std::vector<Insight>& out) {
    CommunicationNames communication(c.store);
    // Per name (NameIds are dense): its kernel time, and one of its kernels.
    std::vector<int64_t> time(c.store.strings().size(), 0);
    std::vector<EventRef> example(c.store.strings().size());
    int64_t all = 0;
    for (const uint32_t t : c.gpuTracks) {
        const GpuTrack& track = c.store.gpuTracks()[t];
        const IndexRange r = track.startingIn(c.window.t0, c.window.t1);
        for (size_t i = r.first; i < r.last; ++i) {
            if (track.kind(i) != GpuOpKind::Kernel || communication.isKernel(track, i))
                continue;
            const NameId name = track.name(i);
            accumulate(time[name], track.duration(i));
            if (!example[name].valid())
                example[name] = EventRef{t, static_cast<uint32_t>(i)};
            accumulate(all, track.duration(i));
        }
    }
    std::vector<std::pair<int64_t, NameId>> top;
    for (NameId name = 0; name < time.size(); ++name) {
        if (example[name].valid())
            top.emplace_back(time[name], name);
    }
    std::sort(top.begin(), top.end(), std::greater<>());
    Insight in = base(c, InsightKind::GpuBound, StepCause::Compute);
    std::string names;
    for (size_t k = 0; k < std::min<size_t>(3, top.size()); ++k) {
        names += (k == 0                                     ? ""
                  : k + 1 == std::min<size_t>(3, top.size()) ? " and "
                                                             : ", ") +
                 gpuOpShortName(c.store, example[top[k].second]) + " (" +
                 formatPercentText(
                     all > 0 ? static_cast<double>(top[k].first) / static_cast<double>(all) : 0.0) +
                 ")";
    }
    const bool alone = c.gpuBound();
    const bool bound = alone || c.computeOverLaunches();
    in.text = bound ? "GPU-bound: the GPU computes " + c.amount(StepCause::Compute) +
                          ", so its kernels set the step time"
                    : "The GPU computes " + c.amount(StepCause::Compute);
    if (!names.empty())
        in.text += "; by kernel time, " + names;
    if (!bound)
        in.text += ". The rest of the step is the other findings' time.";
    else
        in.text += ". Speed those kernels up (a better algorithm or library call, bf16 or TF32, "
                   "fusion); " +
                   std::string(alone ? "work on the CPU side will not shorten the step."
                                     : "the launch overhead beside them (" +
                                           formatPercentText(c.share(StepCause::Launch)) +
                                           ") is the next cost, and smaller.");
    if (!top.empty())
        in.numbers.push_back(
            {"top_kernel_share",
             all > 0 ? static_cast<double>(top[0].first) / static_cast<double>(all) : 0.0});
    for (size_t k = 0; k < std::min<size_t>(3, top.size()); ++k)
        addRef(in.gpuOps, example[top[k].second], c.options.maxRefs);
    in.eventCount = time.size();
    out.push_back(std::move(in));
}

void copies(const Context& c, std::vector<Insight>& out) {
    uint64_t count = 0, pageable = 0, bytesIn = 0, bytesOut = 0, bytesOther = 0;
    Insight in = base(c, InsightKind::Copies, StepCause::Copy);
    accumulate(in.stake, c.causes[StepCause::Memset]);
    // The CPU side of pageable copies (stepbreakdown.h, HostMemory) is theirs: pinned memory is
    // the fix of both.
    const int64_t hostMemory = c.causes[StepCause::HostMemory];
    if (hostMemory > 0) {
        accumulate(in.stake, hostMemory);
        for (InsightNumber& n : in.numbers) {
            if (n.name == "share")
                n.value += c.share(StepCause::HostMemory);
            else if (n.name == "time_ns")
                n.value += static_cast<double>(hostMemory);
            else if (n.name == "per_step_ns")
                n.value += c.perStep(StepCause::HostMemory);
        }
    }
    // The device-wide waits (cudaDeviceSynchronize, torch.cuda.synchronize()), by start: one waits
    // for every stream, so a copy put on a stream of its own to overlap the next step's work
    // still holds the CPU, and the step, until it is done.
    std::vector<const SyncStall*> deviceWaits;
    for (const SyncStall& stall : c.stalls.stalls) {
        if (stall.kind == StallKind::DeviceSync)
            deviceWaits.push_back(&stall);
    }
    std::sort(deviceWaits.begin(), deviceWaits.end(),
              [](const SyncStall* a, const SyncStall* b) { return a->start < b->start; });
    int64_t copyTime = 0, copyInDeviceWait = 0;
    std::map<const SyncStall*, int64_t> heldBy; // copy time in each device-wide wait
    for (const uint32_t t : c.gpuTracks) {
        const GpuTrack& track = c.store.gpuTracks()[t];
        const IndexRange r = track.startingIn(c.window.t0, c.window.t1);
        for (size_t i = r.first; i < r.last; ++i) {
            if (track.kind(i) != GpuOpKind::Memcpy || track.detail(i) >= c.store.memOps().size())
                continue;
            const MemOpInfo& m = c.store.memOps()[track.detail(i)];
            ++count;
            (m.copyKind == kCopyHtoD   ? bytesIn
             : m.copyKind == kCopyDtoH ? bytesOut
                                       : bytesOther) += m.bytes;
            const bool fromPageable = (m.copyKind == kCopyHtoD && m.srcKind == kMemPageable) ||
                                      (m.copyKind == kCopyDtoH && m.dstKind == kMemPageable);
            pageable += fromPageable;
            accumulate(copyTime, track.duration(i));
            // The part of the copy the CPU spent in a device-wide wait.
            auto w = std::upper_bound(deviceWaits.begin(), deviceWaits.end(), track.start(i),
                                      [](int64_t t, const SyncStall* x) { return t < x->start; });
            if (w != deviceWaits.begin())
                --w;
            for (; w != deviceWaits.end() && (*w)->start < track.end(i); ++w) {
                const int64_t held =
                    std::min(track.end(i), (*w)->end) - std::max(track.start(i), (*w)->start);
                if (held > 0) {
                    accumulate(copyInDeviceWait, held);
                    accumulate(heldBy[*w], held);
                }
            }
            if (fromPageable || in.gpuOps.size() < 10)
                addRef(in.gpuOps, {t, static_cast<uint32_t>(i)}, c.options.maxRefs);
        }
    }
    const double steps = std::max<double>(1.0, static_cast<double>(c.steady.size()));
    const auto perStep = [&](uint64_t v) {
        return static_cast<uint64_t>(std::llround(static_cast<double>(v) / steps));
    };
    in.text = "Copies keep the GPU busy " + c.amount(StepCause::Copy) + ": " +
              formatNumber(std::round(static_cast<double>(count) / steps)) + " copies a step";
    std::string moved;
    if (bytesIn > 0)
        moved += formatBytesText(perStep(bytesIn)) + " host to device";
    if (bytesOut > 0)
        moved +=
            (moved.empty() ? "" : ", ") + formatBytesText(perStep(bytesOut)) + " device to host";
    if (bytesOther > 0)
        moved += (moved.empty() ? "" : ", ") + formatBytesText(perStep(bytesOther)) + " on the GPU";
    if (!moved.empty())
        in.text += " (" + moved + " a step)";
    // The blocking copy that moved the most, by where it was made (its call's stack, or the calls
    // before it): the line to change.
    std::string largestAt;
    {
        std::map<std::string, uint64_t> bytesAt;
        for (const SyncStall& stall : c.stalls.stalls)
            if (stall.copyOp.valid() && stall.start >= c.window.t0 && stall.start < c.window.t1)
                if (const std::string where = stallOriginText(c.store, stall.origin);
                    !where.empty())
                    bytesAt[where] += stall.bytes;
        const auto most =
            std::max_element(bytesAt.begin(), bytesAt.end(),
                             [](const auto& a, const auto& b) { return a.second < b.second; });
        if (most != bytesAt.end() && most->second > 0)
            largestAt = most->first;
    }
    if (pageable > 0) {
        in.text += ", " + std::to_string(pageable) + " of the " + std::to_string(count) +
                   " from or to pageable host memory, which the driver copies through a staging "
                   "buffer and which blocks the CPU. Pin that memory (tensor.pin_memory(), "
                   "DataLoader(pin_memory=True)) and copy with non_blocking=True, or keep the data "
                   "on the GPU.";
        if (c.share(StepCause::HostMemory) >= kMinCauseShare)
            in.text += " The launching thread also unmaps host memory (munmap) for " +
                       c.amount(StepCause::HostMemory) +
                       " while the GPU idles: the pageable buffers released after their copies "
                       "(a DataLoader's batches come in shared memory). With "
                       "DataLoader(pin_memory=True) its pin-memory thread does that, off the "
                       "launching thread.";
    } else if (copyTime > 0 && 2 * copyInDeviceWait >= copyTime) {
        // Named by the wait that held the most copy time (heldBy is not empty here).
        const SyncStall* deviceWait =
            std::max_element(heldBy.begin(), heldBy.end(), [](const auto& a, const auto& b) {
                return a.second < b.second;
            })->first;
        const std::string where = stallOriginText(c.store, deviceWait->origin);
        in.text += ". For " +
                   formatPercentText(static_cast<double>(copyInDeviceWait) /
                                     static_cast<double>(copyTime)) +
                   " of the copy time the CPU waits in a device-wide synchronize" +
                   (where.empty() ? std::string() : " (" + where + ")") +
                   ", which waits for every stream, the copies' too: a copy meant to overlap the "
                   "next step stays in this one. Wait only for the stream whose results are "
                   "needed (torch.cuda.current_stream().synchronize(), or an event recorded "
                   "there), and let the copies run on beside the next step.";
        addRef(in.apiCalls, deviceWait->call, c.options.maxRefs);
    } else {
        in.text += ". Copy less (keep data on the GPU), or overlap the copies with computation on "
                   "another stream.";
    }
    if (!largestAt.empty())
        in.text +=
            " The CPU waits for the largest blocking copy" + originInSentence(largestAt) + ".";
    in.numbers.push_back(
        {"copy_in_device_sync_share",
         copyTime > 0 ? static_cast<double>(copyInDeviceWait) / static_cast<double>(copyTime)
                      : 0.0});
    in.numbers.push_back({"copies", static_cast<double>(count)});
    in.numbers.push_back({"pageable_copies", static_cast<double>(pageable)});
    in.numbers.push_back(
        {"bytes_per_step", static_cast<double>(perStep(bytesIn + bytesOut + bytesOther))});
    in.eventCount = count;
    out.push_back(std::move(in));
}

// "AllReduce" from "ncclDevKernel_AllReduce_Sum_f32_RING_LL".
std::string collectiveOf(const std::string& name) {
    for (const char* kind : {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "SendRecv",
                             "Reduce", "AllToAll", "Send", "Recv"}) {
        if (name.find(kind) != std::string::npos)
            return kind;
    }
    return "collective";
}

void communication(const Context& c, std::vector<Insight>& out) {
    CommunicationNames names(c.store);
    std::map<std::string, uint64_t> kinds;
    std::map<std::string, int64_t> timeOf; // kernel time per kind of collective
    int64_t all = 0;
    Insight in = base(c, InsightKind::Communication, StepCause::Communication);
    for (const uint32_t t : c.gpuTracks) {
        const GpuTrack& track = c.store.gpuTracks()[t];
        const IndexRange r = track.startingIn(c.window.t0, c.window.t1);
        for (size_t i = r.first; i < r.last; ++i) {
            if (track.kind(i) == GpuOpKind::Kernel && names.isKernel(track, i)) {
                const std::string kind = collectiveOf(c.store.text(track.name(i)));
                ++kinds[kind];
                accumulate(timeOf[kind], track.duration(i));
                accumulate(all, track.duration(i));
                addRef(in.gpuOps, {t, static_cast<uint32_t>(i)}, c.options.maxRefs);
            }
        }
    }
    std::string list;
    for (const auto& [kind, n] : kinds)
        list += (list.empty() ? "" : ", ") + kind + " x" + std::to_string(n);
    in.text = "Communication: collectives" + (list.empty() ? std::string() : " (" + list + ")") +
              " run with no computation beside them " + c.amount(StepCause::Communication) +
              ": the transfer, or the wait for other ranks inside it, is not hidden behind "
              "computation.";
    // Broadcasts holding most of the collectives' time in a loop that also all-reduces: DDP
    // sends the module's buffers from rank 0 before every forward (broadcast_buffers=True).
    const double broadcastShare =
        all > 0 ? static_cast<double>(timeOf["Broadcast"]) / static_cast<double>(all) : 0.0;
    if (broadcastShare >= 0.5 && kinds.count("AllReduce")) {
        in.text += " Broadcasts hold " + formatPercentText(broadcastShare) +
                   " of the collectives' time: DistributedDataParallel sends the module's "
                   "buffers from rank 0 before each forward (broadcast_buffers=True, the "
                   "default). Buffers that never change need not travel: pass "
                   "broadcast_buffers=False, or keep such tensors out of the module's buffers "
                   "(a plain attribute).";
        in.numbers.push_back({"broadcast_share", broadcastShare});
    } else {
        in.text += " Overlap it (DDP all-reduces gradient buckets during backward; gradient "
                   "accumulation with no_sync()), send less (bf16 gradients, a larger batch per "
                   "GPU), and open every rank's trace together to see whether one rank arrives "
                   "late.";
    }
    in.eventCount = in.gpuOps.size();
    out.push_back(std::move(in));
}

void launchBound(const Context& c, std::vector<Insight>& out) {
    std::vector<int64_t> kernels, launches, perStep;
    size_t fromGraphs = 0; // kernels a CUDA graph launch started
    Insight in = base(c, InsightKind::LaunchBound, StepCause::Launch);
    for (const uint32_t t : c.apiTracks) {
        const ApiTrack& track = c.store.apiTracks()[t];
        const IndexRange r = track.startingIn(c.window.t0, c.window.t1);
        for (size_t i = r.first; i < r.last; ++i) {
            bool kernel = false;
            for (const EventRef& op : track.gpuOps(i)) {
                const GpuTrack& g = c.store.gpuTracks()[op.track];
                if (g.kind(op.index) == GpuOpKind::Kernel) {
                    kernels.push_back(g.duration(op.index));
                    fromGraphs += g.graphId(op.index) != 0;
                    kernel = true;
                }
            }
            if (kernel) {
                launches.push_back(track.duration(i));
                if (in.apiCalls.size() < 20)
                    addRef(in.apiCalls, {t, static_cast<uint32_t>(i)}, c.options.maxRefs);
            }
        }
    }
    for (const Step& s : c.steady)
        perStep.push_back(static_cast<int64_t>(s.kernels));
    const double kernel = medianOf(kernels), launch = medianOf(launches);
    const double waitsPerStep = c.waitsPerStep();
    // A step that already replays CUDA graphs (torch.compile's reduce-overhead mode) is not
    // helped by being told to use them: what is left is the CPU's time around the replays.
    const bool graphs = 2 * fromGraphs >= kernels.size() && fromGraphs > 0;
    in.text = "Launch-bound: the GPU idles " + c.amount(StepCause::Launch) +
              (graphs ? " while the CPU launches work: "
                      : " while the CPU launches work one op at a time: ") +
              formatNumber(medianOf(perStep)) + " kernels a step";
    // Kernels shorter than their launch calls: the calls themselves cannot keep up. Longer: the
    // framework's time between the calls (under 100 us each) is what the GPU waits for.
    in.text +=
        kernel < launch
            ? ", " + formatDurationText(kernel) + " kernels behind " + formatDurationText(launch) +
                  " launch calls, plus the framework's time between them"
            : ", the GPU waiting in the framework's time between launch calls (" +
                  formatDurationText(launch) + " each, kernels " + formatDurationText(kernel) + ")";
    if (graphs)
        in.text += ". The step already replays CUDA graphs (" +
                   formatPercentText(static_cast<double>(fromGraphs) /
                                     static_cast<double>(kernels.size())) +
                   " of its kernels): the time left is the CPU's around the replays (the graph "
                   "launch itself, input copies and the ops outside the graph, the framework's "
                   "checks between calls). Give each replay more work (larger batches), or bring "
                   "the ops around it into the captured region.";
    else if (waitsPerStep >= static_cast<double>(kDenseSyncMinimum) &&
             c.share(StepCause::Sync) >= kMinCauseShare)
        // No CUDA graph holds a wait for the GPU, and torch.compile breaks its graph at a read
        // back: the waits go first (blind19's two-tower trainer: 44 a step, then 26% launch idle).
        in.text += ". The step also waits for the GPU " + formatNumber(waitsPerStep) +
                   " times (see the synchronization finding): no CUDA graph can capture across "
                   "those waits, and the CPU cannot queue work ahead of them. Remove them first "
                   "(synchronize less often, read values back less often or keep them on the "
                   "GPU); then fuse kernels (torch.compile), capture the step in a CUDA graph, or "
                   "give each kernel more work (larger batches).";
    else
        in.text += ". Fuse kernels (torch.compile), capture the step in a CUDA graph "
                   "(torch.compile mode=\"reduce-overhead\", torch.cuda.graphs), or give each "
                   "kernel more work (larger batches).";
    in.numbers.push_back({"waits_per_step", waitsPerStep});
    in.numbers.push_back(
        {"graph_kernel_share",
         kernels.empty() ? 0.0
                         : static_cast<double>(fromGraphs) / static_cast<double>(kernels.size())});
    in.numbers.push_back({"median_kernel_ns", kernel});
    in.numbers.push_back({"median_launch_ns", launch});
    in.numbers.push_back({"kernels_per_step", medianOf(perStep)});
    // The CPU's speed was measured under tracing: how much of the launching thread's time was
    // the recorder's own (CUPTI's callbacks, the Python stack reader).
    if (c.steps.thread < c.store.threads().size()) {
        const RecorderShare recorder = recorderShare(
            c.store, c.store.threads()[c.steps.thread].globalTid, c.window.t0, c.window.t1);
        if (recorder.running >= 100 && recorder.share >= kRecorderNote) {
            in.text += " The recorder's own work (CUPTI's callbacks, Warpline's Python stack "
                       "reader) is in " +
                       formatPercentText(recorder.share) +
                       " of the launching thread's CPU samples: untraced, the CPU issues the "
                       "step faster than here, and this share is smaller.";
            in.numbers.push_back({"recorder_sample_share", recorder.share});
        }
    }
    in.eventCount = launches.size();
    out.push_back(std::move(in));
}

// The steady step with the longest stretch without CUDA calls of the kind asked for.
const Step* longestStretch(const Context& c, bool input) {
    const Step* best = nullptr;
    for (const Step& s : c.steady) {
        if (s.causes.longestIsInput == input &&
            (!best || s.causes.longestStretch > best->causes.longestStretch))
            best = &s;
    }
    return best;
}

void hostWork(const Context& c, bool input, std::vector<Insight>& out) {
    const StepCause cause = input ? StepCause::Input : StepCause::CpuWork;
    Insight in = base(c, input ? InsightKind::InputBound : InsightKind::CpuWork, cause);
    const Step* s = longestStretch(c, input);
    std::string where = s ? whereText(c.store, s->causes.afterLongest) : std::string();
    if (s) {
        addRef(in.apiCalls, s->causes.afterLongest, c.options.maxRefs);
        in.numbers.push_back({"longest_stretch_ns", static_cast<double>(s->causes.longestStretch)});
    }
    const std::string longest =
        s ? " (the longest " + formatDurationText(static_cast<double>(s->causes.longestStretch)) +
                ", in step " + std::to_string(s->number) +
                (where.empty() ? std::string() : ", before " + where) + ")"
          : std::string();
    // What CPU samples say of that stretch (the thread that launched after it).
    const CpuStretch* cpu = s && s->causes.longestCpu.sampled &&
                                    s->causes.longestCpu.running + s->causes.longestCpu.waiting > 0
                                ? &s->causes.longestCpu
                                : nullptr;
    std::string sampled;
    if (cpu) {
        const double span = static_cast<double>(cpu->running + cpu->waiting + cpu->unknown);
        const double waited = static_cast<double>(cpu->waiting) / span;
        in.numbers.push_back({"longest_waiting_share", waited});
        const auto frame = [&](const CallFrame& f) {
            std::string file(c.store.text(f.file));
            file = file.substr(file.rfind('/') + 1);
            // A C++ frame by its function's name alone (format::shortKernelName's rule).
            const std::string& function = c.store.text(f.function);
            const bool cxx = function.find_first_of("(<") != std::string::npos;
            // The recorder's own code (its callbacks, the Python stack reader) is not the
            // program's: said so, not by an address in its library.
            if (isRecorderModule(file))
                return "the recorder's own code (" + file + ")";
            return "`" + (cxx ? format::shortKernelName(function) : function) + "` (" + file + ")";
        };
        const double ran = static_cast<double>(cpu->running) / span;
        std::vector<std::string> parts;
        if (cpu->waiting > 0) {
            std::string w = "waited off its CPU " + formatPercentText(waited) + " of it";
            if (cpu->waitedInNs > 0)
                w += ", last seen running " + frame(cpu->waitedIn) + " before each wait";
            if (cpu->waitedInIoNs * 2 > cpu->waiting)
                w += ", " +
                     formatPercentText(static_cast<double>(cpu->waitedInIoNs) /
                                       static_cast<double>(cpu->waiting)) +
                     " of the wait right after I/O in " + frame(cpu->waitedInIo);
            if (cpu->sleepSamples * 2 > cpu->waitingSamples && cpu->waitingSamples > 0)
                w += ", asleep";
            const EventRef after = s->causes.afterLongest;
            const bool native =
                after.valid() &&
                isNativeProcess(
                    c.store,
                    c.store.threads()[c.store.apiTracks()[after.track].threadIndex()].globalTid);
            if ((cpu->gilSamples * 2 > cpu->waitingSamples && cpu->waitingSamples > 0) ||
                cpu->gilHeldElsewhere > 0.5)
                w += std::string(", while other threads of the process ran") +
                     (native ? "" : " Python") + " (" + formatPercentText(cpu->gilHeldElsewhere) +
                     " of the wait" +
                     (cpu->heldIn.function != kNoName ? ", most often in " + frame(cpu->heldIn)
                                                      : std::string()) +
                     (native ? "): waiting for its worker threads"
                             : "): waiting for the GIL they held");
            parts.push_back(std::move(w));
        }
        if (cpu->running > 0) {
            std::string r = "ran " + formatPercentText(ran) + (cpu->waiting > 0 ? "" : " of it");
            if (cpu->inputSamples * 2 > cpu->runningSamples && cpu->runningSamples > 0)
                r += ", mostly in the DataLoader (torch.utils.data)";
            else if (cpu->ioSamples * 2 > cpu->runningSamples && cpu->runningSamples > 0)
                r += ", " +
                     formatPercentText(static_cast<double>(cpu->ioSamples) /
                                       static_cast<double>(cpu->runningSamples)) +
                     " of that in I/O system calls, most often " + frame(cpu->ioIn);
            else if (cpu->ranInSamples > 0)
                r += ", most often in " + frame(cpu->ranIn);
            parts.push_back(std::move(r));
        }
        sampled = " CPU samples of that stretch: the launching thread " + parts.front() +
                  (parts.size() > 1 ? ", and " + parts[1] : std::string()) + ".";
        const bool loader = cpu->otherProcessesLoader ||
                            2 * cpu->otherProcessLoaderSamples >= cpu->otherProcessSamples;
        // Other processes are worth a sentence when they are the input pipeline, or kept a
        // tenth of a CPU busy (a launcher waiting on its child is not).
        if (cpu->otherProcesses > 0 && cpu->otherProcessSamples > 0 &&
            (loader || cpu->otherProcessCpus >= 0.1)) {
            char cpus[32];
            std::snprintf(cpus, sizeof cpus, "%.1f", cpu->otherProcessCpus);
            sampled += " Meanwhile the program's " + std::to_string(cpu->otherProcesses) +
                       (cpu->otherProcesses == 1 ? " other process" : " other processes") +
                       (loader ? " (a data loader's workers)" : "") + " kept " + cpus +
                       " CPUs busy on average";
            if (cpu->otherProcessesIn.function != kNoName)
                sampled += ", most often in " + frame(cpu->otherProcessesIn);
            sampled += !loader ? "."
                       : cpu->otherProcessCpus >= 0.75 * cpu->otherProcesses
                           ? ": they are CPU-bound, and more of them (or less work each) helps."
                       : cpu->otherProcessCpus <= 0.25 * cpu->otherProcesses
                           ? ": they mostly wait too (I/O, a sleep, a lock), so more of them "
                             "helps only if that wait overlaps."
                           : ".";
        }
    }
    // Mostly I/O: the thread read or wrote files, pipes or sockets (running in those calls, or
    // waiting right after one) for most of the stretch.
    const bool io = cpu && static_cast<double>(cpu->waitedInIoNs) +
                                   static_cast<double>(cpu->running) * cpu->ioSamples /
                                       std::max<double>(1.0, cpu->runningSamples) >
                               0.5 * static_cast<double>(cpu->running + cpu->waiting);
    if (input && io) {
        in.text = "Waiting for I/O: the GPU idles " + c.amount(cause) +
                  " while the thread that launches its work reads or writes files, pipes or "
                  "sockets" +
                  longest + "." + sampled +
                  " The step waits on that I/O, and the GPU waits with it: move reads ahead of "
                  "the step (a DataLoader, prefetching in a thread) and writes out of it (a "
                  "background thread or process; buffered, batched, not flushed or fsynced every "
                  "step); changes to the model or its kernels will not help.";
        in.numbers.push_back({"io", 1.0});
    } else if (input && cpu) {
        in.text = "Waiting for input: the GPU idles " + c.amount(cause) +
                  " while the thread that launches its work waits for what it needs next (a "
                  "queue, a pipe, another thread or process, a sleep) or runs the data "
                  "loader" +
                  longest + "." + sampled +
                  " The loop waits for its next input, and the GPU waits with it: make the "
                  "source faster or run it in parallel and ahead (more DataLoader workers, "
                  "prefetching, batching what arrives); changes to the model or its kernels will "
                  "not help.";
    } else if (input) {
        in.text = "Waiting for input: the GPU idles " + c.amount(cause) +
                  " while the CPU makes no CUDA call, until data is copied to the GPU" + longest +
                  ". The loop waits for, or makes, its next input (a data loader, an environment "
                  "simulation, a file, another process), and the GPU waits with it: make that "
                  "faster or run it in parallel and ahead (more DataLoader workers, prefetching, "
                  "vectorised environments); changes to the model or its kernels will not help.";
    } else {
        in.text = "CPU work outside CUDA calls: the GPU idles " + c.amount(cause) +
                  " while the CPU runs host code and makes no CUDA call" + longest +
                  ". That is Python or other host work between launches (bookkeeping, data "
                  "handling, logging), not launch cost: fusing kernels or CUDA graphs will not "
                  "help. Make that code faster, move it out of the step, or queue the step's GPU "
                  "work before it." +
                  sampled;
        // Host work that ends in a copy to the GPU makes what the step consumes: it can run
        // ahead of the step, which the advice for any CPU work does not say.
        if (s && s->causes.longestEndsInUpload) {
            const EventRef after = s->causes.afterLongest;
            const bool native =
                after.valid() &&
                isNativeProcess(
                    c.store,
                    c.store.threads()[c.store.apiTracks()[after.track].threadIndex()].globalTid);
            in.text += std::string(" That stretch ends in a copy to the GPU: the host work "
                                   "prepares the step's data, so it can run ahead of the step, ") +
                       (native ? "in a thread that fills a queue (double-buffered, pinned "
                                 "memory), or be done on the GPU."
                               : "in DataLoader workers (num_workers > 0) or a thread that "
                                 "fills a queue, be vectorised, or be done on the GPU.");
        }
    }
    // The other kind of stretch without calls, when it matters too: which kind a stretch is
    // depends on the call that ends it, and with several threads that is whichever calls next.
    const StepCause other = input ? StepCause::CpuWork : StepCause::Input;
    if (c.share(other) >= kMinCauseShare) {
        in.text += " With the " + formatPercentText(c.share(other)) +
                   (input ? " of stretches that end in another call (cpu-work)"
                          : " of stretches that end in a copy to the GPU (input)") +
                   ", the CPU makes no CUDA call for " +
                   formatPercentText(c.share(StepCause::CpuWork) + c.share(StepCause::Input)) +
                   " of the steady state.";
        in.numbers.push_back(
            {"no_call_share", c.share(StepCause::CpuWork) + c.share(StepCause::Input)});
    }
    in.eventCount = c.steady.size();
    out.push_back(std::move(in));
}

void syncs(const Context& c, std::vector<Insight>& out) {
    Insight in = base(c, InsightKind::SyncStall, StepCause::Sync);
    std::vector<StallGroup> groups = groupSyncStalls(c.store, c.stalls);
    std::erase_if(groups, [&](const StallGroup& g) {
        return g.thread == SyncStall::kNoThread || c.store.threads()[g.thread].source != c.source;
    });
    std::sort(groups.begin(), groups.end(), [](const StallGroup& a, const StallGroup& b) {
        return a.blocked.count > b.blocked.count;
    });
    uint64_t waits = 0;
    bool scalar = false, gradScaler = false, checkpoint = false;
    // A copy to the GPU every other step or more that waits: in a stream synchronization
    // (PyTorch's copy with non_blocking=False), or a blocking cudaMemcpy.
    bool upload = false, streamUpload = false;
    std::string list;
    // torch.save copies each CUDA tensor to the host (a wait for the GPU), then writes the file
    // while the GPU has nothing queued: the stack of such a copy passes through
    // torch/serialization.py.
    const auto saves = [&](const StallGroup& g) {
        if (g.stalls.empty())
            return false;
        for (const CallFrame& f : c.store.callStack(c.stalls.stalls[g.stalls.front()].call)) {
            if (f.file != kNoName && c.store.text(f.file).ends_with("torch/serialization.py"))
                return true;
        }
        return false;
    };
    for (size_t k = 0; k < groups.size(); ++k) {
        const StallGroup& g = groups[k];
        waits += g.blocked.count;
        scalar |= isScalarReadBack(g.copyKind, g.maxBytes);
        gradScaler |= g.origin.find("grad_scaler") != std::string::npos;
        if (k < 3) {
            checkpoint |= saves(g);
            std::string what(stripApiVersion(c.store.text(g.name)));
            if (g.copyKind == kCopyHtoD && 2 * g.blocked.count >= c.steady.size()) {
                upload = true;
                streamUpload |= g.kind == StallKind::StreamSync;
            }
            if (g.copyKind != 0)
                what += " of " + formatBytesText(g.maxBytes) + " " +
                        std::string(copyKindText(g.copyKind));
            list += (list.empty() ? "" : "; ") + what + originInSentence(g.origin) + " (" +
                    std::to_string(g.blocked.count) + "x)";
        }
        for (const uint32_t i : g.stalls)
            addRef(in.apiCalls, c.stalls.stalls[i].call, c.options.maxRefs);
    }
    in.text =
        "Synchronization: the GPU idles " + c.amount(StepCause::Sync) +
        " around the CPU's waits for it, " + formatNumber(c.waitsPerStep()) + " waits a step" +
        (list.empty() ? std::string() : ": " + list) +
        ". Each wait drains the GPU's queue, and the GPU then idles while the CPU refills it.";
    if (checkpoint) {
        in.text += " torch.save copies every tensor to the host, waiting for the GPU, and writes "
                   "the file while the GPU has nothing queued: save checkpoints less often, or in "
                   "the background (copy the state into pinned host memory with "
                   "non_blocking=True and write it from another thread, or "
                   "torch.distributed.checkpoint.async_save).";
    } else {
        if (gradScaler)
            in.text += " GradScaler reads its found-inf flag back every step unless the "
                       "optimizer is fused (fused=True keeps it on the GPU).";
        if (scalar)
            in.text += " A value read back to the host (.item(), printing a loss, a Python if on "
                       "a GPU value, a boolean mask or nonzero whose size depends on the data) "
                       "waits for everything queued before it: read such values less often, or "
                       "keep them on the GPU (torch.where instead of a mask).";
        else if (!gradScaler && !upload)
            in.text += " Synchronize less often: record an event and wait for it only where the "
                       "result is needed.";
        // PyTorch synchronizes the stream after a copy to the GPU made with non_blocking=False
        // (blind23's U-Net: two of its four waits a step are its cubes' uploads).
        if (streamUpload)
            in.text += " A copy to the GPU with non_blocking=False waits for everything queued "
                       "too: copy from pinned memory (pin_memory()) with non_blocking=True.";
        else if (upload)
            in.text += " A blocking copy to the GPU waits for everything queued too: use "
                       "cudaMemcpyAsync from pinned host memory (cudaMallocHost) on a stream.";
    }
    in.numbers.push_back({"waits", static_cast<double>(waits)});
    in.eventCount = waits;
    out.push_back(std::move(in));
}

// Whether the input shapes change from step to step: one of the five kernels with the most time
// in the steady steps runs with another set of grid sizes in more than half of them (a loop of
// fixed shapes runs each layer's kernels with the same grids every step). That kernel's short
// name in `kernel`.
bool shapesVary(const Context& c, std::string* kernel) {
    if (c.steady.size() < 3)
        return false;
    std::vector<int64_t> time(c.store.strings().size(), 0);
    for (const uint32_t t : c.gpuTracks) {
        const GpuTrack& track = c.store.gpuTracks()[t];
        const IndexRange r = track.startingIn(c.window.t0, c.window.t1);
        for (size_t i = r.first; i < r.last; ++i) {
            if (track.kind(i) == GpuOpKind::Kernel && track.name(i) < time.size())
                accumulate(time[track.name(i)], track.duration(i));
        }
    }
    std::vector<NameId> top;
    for (size_t id = 0; id < time.size(); ++id) {
        if (time[id] > 0)
            top.push_back(static_cast<NameId>(id));
    }
    const size_t count = std::min<size_t>(5, top.size());
    std::partial_sort(top.begin(), top.begin() + static_cast<std::ptrdiff_t>(count), top.end(),
                      [&](NameId a, NameId b) { return time[a] > time[b]; });
    top.resize(count);
    for (const NameId name : top) {
        std::vector<std::vector<std::array<int32_t, 3>>> grids(c.steady.size());
        EventRef example;
        for (const uint32_t t : c.gpuTracks) {
            const GpuTrack& track = c.store.gpuTracks()[t];
            for (size_t k = 0; k < c.steady.size(); ++k) {
                const IndexRange r = track.startingIn(c.steady[k].start, c.steady[k].end);
                for (size_t i = r.first; i < r.last; ++i) {
                    if (track.kind(i) != GpuOpKind::Kernel || track.name(i) != name ||
                        track.detail(i) >= c.store.kernelConfigs().size())
                        continue;
                    const KernelConfig& config = c.store.kernelConfigs()[track.detail(i)];
                    grids[k].push_back({config.gridX, config.gridY, config.gridZ});
                    if (!example.valid())
                        example = {t, static_cast<uint32_t>(i)};
                }
            }
        }
        for (auto& g : grids)
            std::sort(g.begin(), g.end());
        std::sort(grids.begin(), grids.end());
        const auto distinct =
            static_cast<size_t>(std::unique(grids.begin(), grids.end()) - grids.begin());
        if (2 * distinct > c.steady.size()) {
            if (kernel && example.valid())
                *kernel = gpuOpShortName(c.store, example);
            return true;
        }
    }
    return false;
}

// Where the GPU code loaded in the steady steps came from: torch.compile / Triton (a cubin loaded
// from a file, cuModuleLoad), else by the first kernel its thread launched after the load: cuDNN,
// cuBLAS, or unknown.
enum class CodeSource : uint8_t { Triton, Cudnn, Cublas, Unknown };

CodeSource codeSourceOf(std::string_view kernel) {
    const auto has = [&](std::string_view part) { return kernel.find(part) != kernel.npos; };
    if (kernel.starts_with("triton") || has("triton_"))
        return CodeSource::Triton;
    if (has("cudnn") || has("implicit_gemm") || has("fprop") || has("dgrad") || has("wgrad"))
        return CodeSource::Cudnn;
    if (has("nvjet") || has("cublas") || has("gemm"))
        return CodeSource::Cublas;
    return CodeSource::Unknown;
}

void allocator(const Context& c, std::vector<Insight>& out) {
    Insight in = base(c, InsightKind::Allocator, StepCause::Memory);
    std::map<std::string, uint64_t> calls, emptyCacheAt;
    // Memory calls made for torch.cuda.empty_cache(), by their Python stacks (the recorder reads
    // them for memory calls too; CPU samples seldom reach Python inside them: PyTorch's C++ has
    // no frame pointers).
    uint64_t emptyCacheCalls = 0;
    const auto isEmptyCache = [&](const CallFrame& f) {
        return c.store.text(f.function) == "empty_cache" &&
               c.store.text(f.file).ends_with("torch/cuda/memory.py");
    };
    bool native = false; // the calls come from a program without Python (C++)
    for (const uint32_t t : c.apiTracks) {
        const ApiTrack& track = c.store.apiTracks()[t];
        const IndexRange r = track.startingIn(c.window.t0, c.window.t1);
        for (size_t i = r.first; i < r.last; ++i) {
            const std::string& name = c.store.text(track.name(i));
            if (isMemoryCall(name)) {
                if (calls.empty())
                    native =
                        isNativeProcess(c.store, c.store.threads()[track.threadIndex()].globalTid);
                ++calls[std::string(stripApiVersion(name))];
                addRef(in.apiCalls, {t, static_cast<uint32_t>(i)}, c.options.maxRefs);
                // Freed by torch.cuda.empty_cache() (the call's Python stack passes through it):
                // counted by the line that called it.
                const EventRef ref{t, static_cast<uint32_t>(i)};
                const auto stack = c.store.callStack(ref);
                if (std::any_of(stack.begin(), stack.end(), isEmptyCache)) {
                    ++emptyCacheAt[stallOriginText(c.store, callOrigin(c.store, ref))];
                    ++emptyCacheCalls;
                }
            }
        }
    }
    const double steps = std::max<double>(1.0, static_cast<double>(c.steady.size()));
    std::string list;
    uint64_t all = 0;
    for (const auto& [name, n] : calls) {
        list +=
            (list.empty() ? "" : ", ") + formatNumber(std::round(n / steps * 10) / 10) + " " + name;
        all += n;
    }
    in.text = "Memory management: the GPU idles " + c.amount(StepCause::Memory) +
              " while the CPU allocates and frees device memory" +
              (list.empty() ? std::string() : " (" + list + " a step)") +
              "; cudaFree waits for the whole device.";
    std::string kernel;
    if (native) {
        in.text +=
            " The program allocates and frees device memory inside its loop: allocate its "
            "buffers once (outside the loop, sized for the largest input) and reuse them, or "
            "take them from a stream-ordered pool (cudaMallocAsync and cudaFreeAsync, with "
            "a release threshold on the device's memory pool) or a caching allocator "
            "(CUB's CachingDeviceAllocator).";
    } else if (emptyCacheCalls * 4 >= all && all > 0) {
        const auto most =
            std::max_element(emptyCacheAt.begin(), emptyCacheAt.end(),
                             [](const auto& a, const auto& b) { return a.second < b.second; });
        in.text += " " + std::to_string(emptyCacheCalls) + " of the " + std::to_string(all) +
                   " calls free the cache for torch.cuda.empty_cache()" +
                   originInSentence(most->first) +
                   ": it hands every cached block back, so the next step allocates them again. "
                   "Remove it from the loop (it does not lower the peak the step needs; where "
                   "memory is tight, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True lets the "
                   "allocator reuse it).";
        in.numbers.push_back({"empty_cache_calls", static_cast<double>(emptyCacheCalls)});
    } else if (shapesVary(c, &kernel))
        in.text += " The shapes change from step to step (" + kernel +
                   " runs with other grid sizes in most steps), so the caching allocator's "
                   "blocks do not fit the next step's tensors and, near its memory limit, it "
                   "frees them to allocate anew: pad the inputs to a few sizes (buckets), or set "
                   "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; also remove "
                   "torch.cuda.empty_cache() from the loop if it is there.";
    else
        in.text += " PyTorch's caching allocator normally reuses memory: remove "
                   "torch.cuda.empty_cache() from the loop, unset PYTORCH_NO_CUDA_MEMORY_CACHING, "
                   "and elsewhere allocate once, outside the loop.";
    in.numbers.push_back({"calls", static_cast<double>(all)});
    in.eventCount = all;
    out.push_back(std::move(in));
}

// The running CPU samples of the steady steps that loaded GPU code, on the threads that launch
// the steps' work: how many, how many ran in NVRTC (the innermost frame in libnvrtc), and how
// many had one of cuDNN's libraries on their stack.
struct RuntimeCompile {
    uint32_t running = 0, nvrtc = 0, cudnn = 0;
    double share() const { return running ? static_cast<double>(nvrtc) / running : 0.0; }
    // A tenth of the samples in NVRTC and a hundredth with cuDNN: cuDNN compiling at run time
    // (NVRTC without cuDNN is another runtime compiler, such as PyTorch's jiterator).
    bool byCudnn() const {
        return running >= 20 && nvrtc * 10 >= running && cudnn * 100 >= running;
    }
};

RuntimeCompile runtimeCompileIn(const Context& c) {
    RuntimeCompile out;
    const CpuSamples& samples = c.store.cpuSamples();
    if (samples.empty())
        return out;
    std::vector<const ThreadCpuActivity*> threads;
    for (const uint32_t t : c.apiTracks) {
        const uint32_t thread = c.store.apiTracks()[t].threadIndex();
        if (thread >= c.store.threads().size())
            continue;
        const ThreadCpuActivity* a = samples.thread(c.store.threads()[thread].globalTid);
        if (a && std::find(threads.begin(), threads.end(), a) == threads.end())
            threads.push_back(a);
    }
    std::vector<int8_t> isNvrtc(c.store.strings().size(), -1), isCudnn(isNvrtc);
    const auto in = [&](std::vector<int8_t>& memo, NameId file, std::string_view library) {
        if (file >= memo.size())
            return false;
        if (memo[file] < 0)
            memo[file] = c.store.text(file).find(library) != std::string::npos;
        return memo[file] == 1;
    };
    for (const Step& s : c.steady) {
        if (s.causes.moduleLoads == 0)
            continue;
        for (const ThreadCpuActivity* a : threads) {
            const auto [first, last] = a->samplesIn(s.start, s.end);
            for (size_t i = first; i < last; ++i) {
                const auto stack = samples.stack(a->sampleStacks[i]);
                if (a->sampleWaiting[i] || stack.empty())
                    continue;
                ++out.running;
                out.nvrtc += in(isNvrtc, stack.front().file, "libnvrtc");
                out.cudnn += std::any_of(stack.begin(), stack.end(), [&](const CallFrame& f) {
                    return in(isCudnn, f.file, "libcudnn");
                });
            }
        }
    }
    return out;
}

void compilation(const Context& c, std::vector<Insight>& out) {
    Insight in = base(c, InsightKind::Compilation, StepCause::Compile);
    std::string numbers;
    size_t compiling = 0;
    uint64_t loads = 0;
    int64_t longest = 0;
    for (const Step& s : c.steady) {
        if (s.causes.moduleLoads == 0)
            continue;
        if (++compiling <= 6)
            numbers += (numbers.empty() ? "" : ", ") + std::to_string(s.number);
        loads += s.causes.moduleLoads;
        longest = std::max(longest, s.duration());
    }
    if (compiling > 6)
        numbers += ", ...";
    // Each load's code, by the first kernel its thread launched after it (within 64 calls).
    std::array<size_t, 4> bySource{};
    std::array<EventRef, 4> firstKernel{};
    for (const uint32_t t : c.apiTracks) {
        const ApiTrack& track = c.store.apiTracks()[t];
        const IndexRange r = track.startingIn(c.window.t0, c.window.t1);
        for (size_t i = r.first; i < r.last; ++i) {
            if (!isModuleLoadCall(c.store.text(track.name(i))))
                continue;
            addRef(in.apiCalls, {t, static_cast<uint32_t>(i)}, c.options.maxRefs);
            // Triton (torch.compile's kernels among them) loads each compiled kernel from its
            // cache on disk; the libraries load their own code from memory (lazy loading).
            if (stripApiVersion(c.store.text(track.name(i))) == "cuModuleLoad") {
                ++bySource[static_cast<size_t>(CodeSource::Triton)];
                continue;
            }
            for (size_t j = i + 1; j < track.size() && j < i + 64; ++j) {
                const auto ops = track.gpuOps(j);
                const auto kernelOp = std::find_if(ops.begin(), ops.end(), [&](EventRef op) {
                    return c.store.gpuTracks()[op.track].kind(op.index) == GpuOpKind::Kernel;
                });
                if (kernelOp == ops.end())
                    continue;
                const auto source = static_cast<size_t>(codeSourceOf(
                    c.store.text(c.store.gpuTracks()[kernelOp->track].name(kernelOp->index))));
                ++bySource[source];
                if (!firstKernel[source].valid())
                    firstKernel[source] = *kernelOp;
                break;
            }
        }
    }
    auto source = static_cast<CodeSource>(std::max_element(bySource.begin(), bySource.end()) -
                                          bySource.begin());
    size_t sourced = bySource[static_cast<size_t>(source)];
    // What the CPU samples of the compiling steps say: running in NVRTC (libnvrtc) is code
    // compiled at run time; with cuDNN's libraries on the stacks, cuDNN compiles it (its
    // runtime-fused engines, built for each new shape), whatever the kernel is called.
    const RuntimeCompile rtc = runtimeCompileIn(c);
    if (rtc.byCudnn()) {
        source = CodeSource::Cudnn;
        sourced = std::max<size_t>(sourced, 1);
    }
    const EventRef first = firstKernel[static_cast<size_t>(source)];
    const std::string firstUse = first.valid() ? gpuOpShortName(c.store, first) : std::string();
    // Once: the first use of a code path (a kernel compiled or loaded the first time a branch
    // ran), which a longer run pays no more often; again and again: recompilation.
    const bool once = compiling == 1;
    in.text = std::string(once ? "One-time compilation in the loop" : "Compilation in the loop") +
              ": the GPU idles " + c.amount(StepCause::Compile) +
              " while new GPU code is compiled and loaded";
    if (compiling > 0)
        in.text += ": " + std::to_string(compiling) + " of the " + std::to_string(c.steady.size()) +
                   " steady steps (" + numbers + ") loaded " + std::to_string(loads) +
                   " GPU modules and took up to " +
                   formatDurationText(static_cast<double>(longest)) + ", against a median of " +
                   formatDurationText(c.steps.medianDuration);
    if (once)
        in.text += ". It happened once, the first time that code ran (a kernel compiled on first "
                   "use, a module loaded lazily), so a longer run pays it no more often: run "
                   "every code path once before timing, or load modules at start-up "
                   "(CUDA_MODULE_LOADING=EAGER).";
    else if (rtc.byCudnn()) {
        // Its attention (fused SDPA kernels, built per sequence length) or its convolutions
        // (depthwise, grouped, fused with a normalisation, in channels_last): the advice differs.
        const bool attention = firstUse.find("sdpa") != std::string::npos ||
                               firstUse.find("fmha") != std::string::npos ||
                               firstUse.find("attention") != std::string::npos;
        in.text +=
            ". The code is cuDNN's, compiled at run time: the CPU ran in NVRTC " +
            formatPercentText(rtc.share()) + " of those steps' samples, with cuDNN on the " +
            "stacks" + (firstUse.empty() ? std::string() : " (" + firstUse + " ran next)") +
            (attention ? ". cuDNN builds and compiles its fused attention kernels for each new "
                         "sequence length. Pad or bucket the lengths to a few sizes and run "
                         "each once before timing, or pick another attention backend "
                         "(torch.nn.attention.sdpa_kernel) where the lengths must vary."
                       : ". cuDNN builds and compiles a kernel for each new input shape its "
                         "precompiled kernels do not cover (depthwise and grouped "
                         "convolutions, normalisation fused into them, in channels_last and "
                         "bf16 among them). Pad or bucket the inputs to a few shapes and run "
                         "each once before timing; where the shapes must vary, try the layer "
                         "in torch.contiguous_format or float32, or without cuDNN "
                         "(torch.backends.cudnn.enabled = False) for that layer, and measure.");
    } else if (sourced > 0 && source == CodeSource::Cudnn)
        in.text += ". The code is cuDNN's (" + firstUse +
                   " ran next): cuDNN builds kernels for each new input shape (convolutions "
                   "tuned under torch.backends.cudnn.benchmark = True, its attention kernels "
                   "compiled per sequence length). Pad or bucket the inputs to a few shapes; with "
                   "shapes that keep changing, turn cudnn.benchmark off, or pick another attention "
                   "backend (torch.nn.attention.sdpa_kernel).";
    else if (sourced > 0 && source == CodeSource::Cublas)
        in.text += ". The code is cuBLAS's (" + firstUse +
                   " ran next): its kernels are loaded the first time each matrix shape "
                   "needs them. Pad or bucket the inputs to a few shapes, or load modules at "
                   "start-up (CUDA_MODULE_LOADING=EAGER).";
    else
        in.text += std::string(". That is ") +
                   (sourced > 0 && source == CodeSource::Triton
                        ? "torch.compile recompiling, or Triton autotuning (the code is loaded "
                          "from Triton's cache, cuModuleLoad)"
                        : "most likely torch.compile recompiling, or Triton autotuning") +
                   ". torch.compile recompiles when a guard of its graph fails: a new input "
                   "shape, or a Python value it specialised on (a flag, a tuple, a scalar "
                   "argument); TORCH_LOGS=recompiles names the guard each time. For shapes, mark "
                   "the varying dimensions dynamic (torch.compile(dynamic=True), "
                   "torch._dynamo.mark_dynamic) or pad inputs to a few shapes; for a Python "
                   "value, pass it as a tensor or keep it constant through the loop.";
    in.numbers.push_back({"once", once ? 1.0 : 0.0});
    if (rtc.running > 0)
        in.numbers.push_back({"nvrtc_sample_share", rtc.share()});
    in.numbers.push_back({"compiling_steps", static_cast<double>(compiling)});
    in.numbers.push_back({"module_loads", static_cast<double>(loads)});
    in.eventCount = loads;
    out.push_back(std::move(in));
}

} // namespace

void stepCauseInsights(const TraceStore& store, const StepAnalysis& steps,
                       const SyncStallAnalysis& steadyStalls, const InsightOptions& options,
                       std::vector<Insight>& out) {
    if (steps.empty() || steps.thread >= store.threads().size())
        return;
    Context c{store, steps, steadyStalls, options, 0, {}, {}, {}, 0, {}, {}};
    c.source = store.threads()[steps.thread].source;
    c.window = steps.steadyWindow();
    c.steady =
        std::span<const Step>(steps.steps).subspan(std::min(steps.firstSteady, steps.steps.size()));
    c.causes = steps.steadyCauses();
    c.total = c.causes.total();
    if (c.total <= 0 || c.steady.empty())
        return;
    c.gpuTracks = gpuTracksOfSource(store, c.source);
    c.apiTracks = apiTracksOfSource(store, c.source);
    const size_t first = out.size();
    const auto worth = [&](StepCause cause) { return c.share(cause) >= kMinCauseShare; };
    const bool kernelsSetTheTime = c.gpuBound();
    const bool verdictIsCompute = kernelsSetTheTime || c.computeOverLaunches();
    if (worth(StepCause::Compute))
        gpuBound(c, out);
    if (c.share(StepCause::Copy) + c.share(StepCause::Memset) + c.share(StepCause::HostMemory) >=
        kMinCauseShare)
        copies(c, out);
    if (worth(StepCause::Communication))
        communication(c, out);
    // With the kernels setting the step time, the launch idle is the refill after a sync or a
    // pause, not a loop bound by its launches: "launch-bound" would contradict the verdict.
    if (worth(StepCause::Launch) && !kernelsSetTheTime)
        launchBound(c, out);
    if (worth(StepCause::CpuWork))
        hostWork(c, false, out);
    if (worth(StepCause::Input))
        hostWork(c, true, out);
    if (worth(StepCause::Sync))
        syncs(c, out);
    if (worth(StepCause::Memory))
        allocator(c, out);
    if (worth(StepCause::Compile))
        compilation(c, out);
    // The verdict: GPU-bound when little else holds time, else the largest other cause.
    // Host work is weighed whole: stretches without calls are input or cpu-work by the call
    // that ends them, so each half is compared as their sum (the larger half is named).
    const int64_t hostWork = c.causes[StepCause::CpuWork] + c.causes[StepCause::Input];
    const auto weight = [&](const Insight& in) {
        const bool host = in.kind == InsightKind::CpuWork || in.kind == InsightKind::InputBound;
        return std::make_pair(host ? hostWork : in.stake, in.stake);
    };
    Insight* verdict = nullptr;
    for (size_t k = first; k < out.size(); ++k) {
        Insight& in = out[k];
        const bool compute = in.kind == InsightKind::GpuBound;
        if (in.kind == InsightKind::Compilation && in.number("once") > 0)
            continue; // a cost of this run's start, not of the loop's steps
        if (verdictIsCompute ? compute : !compute && (!verdict || weight(in) > weight(*verdict)))
            verdict = &in;
    }
    // A launch-bound step that also waits for the GPU kDenseSyncMinimum times or more cannot
    // take the launch-bound remedy until those reads go (no CUDA graph captures across them, and
    // the CPU cannot queue work ahead of them): when their own idle is at least
    // kSyncBeforeLaunchShare of the launch idle, the synchronization is the verdict (blind19's
    // two-tower trainer, 44 waits a step: 22% beside 26%; blind-moe-routing, 30% beside 39%).
    if (verdict && verdict->kind == InsightKind::LaunchBound &&
        verdict->number("waits_per_step") >= static_cast<double>(kDenseSyncMinimum)) {
        for (size_t k = first; k < out.size(); ++k) {
            if (out[k].kind == InsightKind::SyncStall &&
                static_cast<double>(out[k].stake) >=
                    kSyncBeforeLaunchShare * static_cast<double>(verdict->stake))
                verdict = &out[k];
        }
    }
    if (verdict)
        verdict->verdict = true;
}

namespace {

// One part of a phase's time, in words: "1.2 s loading GPU code (212 loads)".
struct PhasePart {
    int64_t time = 0;
    std::string what;
};

// The parts worth naming (each at least kMinCauseShare of `total`), largest first, at most
// `most`, joined: "4.1 s with no CUDA call (...), 1.5 s in CUDA calls (...)".
std::string partsText(std::vector<PhasePart> parts, int64_t total, size_t most) {
    std::erase_if(parts, [&](const PhasePart& p) {
        return p.time <= 0 ||
               static_cast<double>(p.time) < kMinCauseShare * static_cast<double>(total);
    });
    std::stable_sort(parts.begin(), parts.end(),
                     [](const PhasePart& a, const PhasePart& b) { return a.time > b.time; });
    std::string text;
    for (size_t k = 0; k < parts.size() && k < most; ++k)
        text += (k ? ", " : "") + formatDurationText(static_cast<double>(parts[k].time)) + " " +
                parts[k].what;
    return text;
}

// What a phase outside the steps (start-up, teardown) spent its time on, as its CPU threads saw
// it: in CUDA calls (outermost calls of the rank's threads, and the gaps shorter than kCpuStretch
// between them: the cost of making calls) or with no CUDA call (the longer gaps: the program's
// own work). The two add up to the phase; the GPU's work in it is said beside them.
struct PhaseReading {
    int64_t inCalls = 0, noCall = 0, gpuBusy = 0;
    int64_t longestStretch = 0;
    EventRef afterLongest; // the call that ended the longest stretch without calls
    uint64_t kernels = 0, copies = 0, copiedBytes = 0, moduleLoads = 0;
    std::string text; // "" for an empty phase
};

// The length of the union of `spans` (merged on return).
int64_t unionLength(std::vector<std::pair<int64_t, int64_t>>& spans) {
    mergeSpans(spans);
    int64_t total = 0;
    for (const auto& [a, b] : spans)
        accumulate(total, b - a);
    return total;
}

PhaseReading readPhase(const TraceStore& store, uint32_t source, int64_t t0, int64_t t1,
                       size_t mostParts) {
    PhaseReading r;
    if (t1 <= t0)
        return r;
    // Calls overlapping the phase, clipped to it; their time by name (calls starting in it).
    struct Call {
        int64_t start, end;
        EventRef ref;
    };
    std::vector<Call> calls;
    std::map<NameId, std::pair<int64_t, uint64_t>> byName; // (time, calls) per display name
    for (const uint32_t t : apiTracksOfSource(store, source)) {
        const ApiTrack& track = store.apiTracks()[t];
        if (track.depth() != 0)
            continue;
        const IndexRange range = track.visibleRange(t0, t1);
        for (size_t i = range.first; i < range.last; ++i) {
            const int64_t a = std::max(track.start(i), t0), b = std::min(track.end(i), t1);
            calls.push_back({a, b, EventRef{t, static_cast<uint32_t>(i)}});
            auto& [time, count] = byName[track.name(i)];
            accumulate(time, b - a);
            ++count;
        }
    }
    std::sort(calls.begin(), calls.end(),
              [](const Call& x, const Call& y) { return x.start < y.start; });
    // The gaps between calls (and the phase's ends): kCpuStretch or longer is no call.
    int64_t at = t0;
    for (size_t k = 0; k <= calls.size(); ++k) {
        const int64_t next = k < calls.size() ? calls[k].start : t1;
        if (next - at >= kCpuStretch) {
            accumulate(r.noCall, next - at);
            if (next - at > r.longestStretch && k < calls.size()) {
                r.longestStretch = next - at;
                // Named by its Python line: the first of the next calls that has a stack (a
                // module load or an allocation has none), else by the call itself.
                r.afterLongest = calls[k].ref;
                for (size_t n = k; n < calls.size() && n < k + 16; ++n) {
                    if (callOrigin(store, calls[n].ref).fromStack) {
                        r.afterLongest = calls[n].ref;
                        break;
                    }
                }
            }
        }
        if (k < calls.size())
            at = std::max(at, calls[k].end);
    }
    r.inCalls = (t1 - t0) - r.noCall;
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (const uint32_t t : gpuTracksOfSource(store, source)) {
        const GpuTrack& track = store.gpuTracks()[t];
        const IndexRange range = track.visibleRange(t0, t1);
        for (size_t i = range.first; i < range.last; ++i) {
            busy.emplace_back(std::max(track.start(i), t0), std::min(track.end(i), t1));
            if (track.start(i) < t0)
                continue; // counted in the phase it started in
            if (track.kind(i) == GpuOpKind::Kernel) {
                ++r.kernels;
            } else if (track.kind(i) == GpuOpKind::Memcpy &&
                       track.detail(i) < store.memOps().size()) {
                ++r.copies;
                r.copiedBytes += store.memOps()[track.detail(i)].bytes;
            }
        }
    }
    r.gpuBusy = unionLength(busy);

    std::vector<std::pair<int64_t, std::string>> named;
    for (const auto& [name, tc] : byName) {
        r.moduleLoads += isModuleLoadCall(store.text(name)) ? tc.second : 0;
        named.emplace_back(tc.first, std::string(stripApiVersion(store.text(name))) + " " +
                                         formatDurationText(static_cast<double>(tc.first)) +
                                         (tc.second > 1 ? " ×" + std::to_string(tc.second) : ""));
    }
    std::stable_sort(named.begin(), named.end(),
                     [](const auto& x, const auto& y) { return x.first > y.first; });
    std::string callNames;
    for (size_t k = 0; k < named.size() && k < 3; ++k)
        callNames += (k ? ", " : "") + named[k].second;
    const std::string where = whereText(store, r.afterLongest);
    std::string noCallWhat = "with no CUDA call";
    if (r.longestStretch > 0 && static_cast<double>(r.longestStretch) >= 0.5 * r.noCall)
        noCallWhat += " (the longest stretch " +
                      formatDurationText(static_cast<double>(r.longestStretch)) +
                      (where.empty() ? std::string() : ", before " + where) + ")";
    r.text =
        partsText({{r.noCall, noCallWhat},
                   {r.inCalls, "in CUDA calls" +
                                   (callNames.empty() ? std::string() : " (" + callNames + ")")}},
                  t1 - t0, mostParts);
    // The GPU's part, when it is one: what ran.
    if (static_cast<double>(r.gpuBusy) >= kMinCauseShare * static_cast<double>(t1 - t0)) {
        std::string what;
        if (r.kernels > 0)
            what = std::to_string(r.kernels) + " kernel" + (r.kernels == 1 ? "" : "s");
        if (r.copies > 0)
            what += (what.empty() ? "" : ", ") + std::to_string(r.copies) + " cop" +
                    (r.copies == 1 ? "y" : "ies") + " of " + formatBytesText(r.copiedBytes);
        r.text += "; the GPU worked " + formatDurationText(static_cast<double>(r.gpuBusy)) +
                  " of it" + (what.empty() ? std::string() : " (" + what + ")");
    }
    return r;
}

// What warm-up steps spent beyond as many steady steps: "1.2 s more compiling and loading GPU
// code, 0.2 s more in memory calls".
std::string warmupExtraText(const StepAnalysis& steps, int64_t& extraTotal) {
    StepBreakdown warm;
    for (size_t k = 0; k < steps.firstSteady && k < steps.steps.size(); ++k)
        for (size_t c = 0; c < kStepCauseCount; ++c)
            accumulate(warm.time[c], steps.steps[k].causes.time[c]);
    const StepBreakdown steady = steps.steadyCauses();
    const size_t steadyCount = steps.steps.size() - steps.firstSteady;
    const auto extra = [&](std::initializer_list<StepCause> causes) {
        double e = 0;
        for (const StepCause c : causes)
            e += static_cast<double>(warm[c]) -
                 static_cast<double>(steady[c]) * static_cast<double>(steps.firstSteady) /
                     static_cast<double>(std::max<size_t>(steadyCount, 1));
        return static_cast<int64_t>(std::max(0.0, e));
    };
    const std::vector<PhasePart> parts = {
        {extra({StepCause::Compile}), "more compiling and loading GPU code"},
        {extra({StepCause::Memory}), "more in memory calls"},
        {extra({StepCause::Compute}), "more GPU compute (autotuning, first-call set-up)"},
        {extra({StepCause::Copy, StepCause::Memset, StepCause::HostMemory}), "more in copies"},
        {extra({StepCause::CpuWork, StepCause::Input}), "more with no CUDA call"},
        {extra({StepCause::Launch}), "more in other CUDA calls"},
        {extra({StepCause::Sync}), "more waiting in synchronizations"},
        {extra({StepCause::Communication}), "more in collectives"}};
    extraTotal = 0;
    for (const PhasePart& p : parts)
        accumulate(extraTotal, p.time);
    return partsText(parts, extraTotal, 2);
}

} // namespace

void phaseInsight(const TraceStore& store, const StepAnalysis& steps, std::vector<Insight>& out) {
    if (steps.empty())
        return;
    const uint32_t source =
        steps.thread < store.threads().size() ? store.threads()[steps.thread].source : 0;
    const Step& first = steps.steps.front();
    const Step& steadyFirst = steps.steps[std::min(steps.firstSteady, steps.steps.size() - 1)];
    const int64_t warmup = steadyFirst.start - first.start;
    const PhaseReading startUp = readPhase(store, source, steps.traceBegin, first.start, 2);
    const PhaseReading teardown =
        readPhase(store, source, steps.steps.back().end, steps.traceEnd, 2);
    Insight in;
    in.kind = InsightKind::StartUp;
    in.stake = steps.startup() + warmup;
    in.text = formatDurationText(static_cast<double>(steps.startup())) +
              " before the first step: start-up (the process, CUDA and the model being set up)";
    if (!startUp.text.empty())
        in.text += ": " + startUp.text;
    int64_t warmupExtra = 0;
    if (steps.warmupSteps() > 0) {
        const std::string extra = warmupExtraText(steps, warmupExtra);
        in.text += ". Then " + std::to_string(steps.warmupSteps()) + " warm-up step" +
                   (steps.warmupSteps() > 1 ? "s" : "") + " taking " +
                   formatDurationText(static_cast<double>(warmup));
        if (!extra.empty())
            in.text += ", with " + extra + " than as many steady steps";
    }
    in.text += ". The findings above are about the steady state: steps " +
               std::to_string(steadyFirst.number) + " to " +
               std::to_string(steps.steps.back().number) + ", " +
               formatDurationText(steps.medianDuration) + " a step (median; p95 " +
               formatDurationText(static_cast<double>(steps.p95Duration)) + ")";
    // Tear-down is named when it is long enough to matter beside a step.
    if (!teardown.text.empty() &&
        static_cast<double>(steps.teardown()) >= std::max(1e6, steps.medianDuration))
        in.text += ". After the last step, " +
                   formatDurationText(static_cast<double>(steps.teardown())) +
                   " of teardown: " + teardown.text;
    in.text += ".";
    in.numbers = {{"startup_ns", static_cast<double>(steps.startup())},
                  {"startup_no_call_ns", static_cast<double>(startUp.noCall)},
                  {"startup_in_calls_ns", static_cast<double>(startUp.inCalls)},
                  {"startup_gpu_ns", static_cast<double>(startUp.gpuBusy)},
                  {"startup_kernels", static_cast<double>(startUp.kernels)},
                  {"startup_module_loads", static_cast<double>(startUp.moduleLoads)},
                  {"warmup_steps", static_cast<double>(steps.warmupSteps())},
                  {"warmup_ns", static_cast<double>(warmup)},
                  {"warmup_extra_ns", static_cast<double>(warmupExtra)},
                  {"steady_steps", static_cast<double>(steps.steps.size() - steps.firstSteady)},
                  {"median_step_ns", steps.medianDuration},
                  {"p95_step_ns", static_cast<double>(steps.p95Duration)},
                  {"teardown_ns", static_cast<double>(steps.teardown())}};
    // The trace's first GPU op and the steady state's first, so that showing it spans the
    // start-up; the call after start-up's longest stretch without calls.
    EventRef earliest, steadyOp;
    for (uint32_t t = 0; t < store.gpuTracks().size(); ++t) {
        const GpuTrack& track = store.gpuTracks()[t];
        if (track.empty())
            continue;
        if (!earliest.valid() ||
            track.start(0) < store.gpuTracks()[earliest.track].start(earliest.index))
            earliest = {t, 0};
        const IndexRange r = track.startingIn(steadyFirst.start, steadyFirst.end);
        if (!r.empty() &&
            (!steadyOp.valid() ||
             track.start(r.first) < store.gpuTracks()[steadyOp.track].start(steadyOp.index)))
            steadyOp = {t, static_cast<uint32_t>(r.first)};
    }
    for (const EventRef ref : {earliest, steadyOp}) {
        if (ref.valid() && (in.gpuOps.empty() || !(in.gpuOps.back() == ref)))
            in.gpuOps.push_back(ref);
    }
    if (startUp.afterLongest.valid())
        in.apiCalls.push_back(startUp.afterLongest);
    in.eventCount = in.gpuOps.size() + in.apiCalls.size();
    out.push_back(std::move(in));
}

} // namespace warpline::model
