#include "details/eventdetails.h"

#include "analysishelpers.h"
#include "communication.h"
#include "details/sourcetext.h"
#include "find/eventsearch.h"
#include "kernelmetrics.h"
#include "occupancy.h"
#include "sourcelines.h"

#include <QFileInfo>
#include <QLocale>
#include <algorithm>
#include <cmath>

namespace warpline::views {

namespace {

QString qs(const std::string& s) {
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

QString qs(std::string_view s) {
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

QString number(qint64 v) {
    return QLocale::c().toString(v).replace(QLatin1Char(','), QChar(0x202F)); // narrow space
}

// Where the theoretical occupancy's numbers come from, for its tooltip.
QString occupancyHelp(const model::TraceStore& store, const model::KernelConfig& c) {
    QString help = QStringLiteral(
        "The most warps of this kernel one SM can hold at once, as a share of the SM's maximum: "
        "what its block size, registers per thread and shared memory per block leave room for "
        "(the CUDA occupancy calculator's rules). Achieved occupancy is at most this.");
    const model::Occupancy o = model::theoreticalOccupancy(store, c);
    if (!o.known)
        return help;
    help += QStringLiteral("\n%1 resident blocks per SM: %2 by warps, %3 by registers, %4 by "
                           "shared memory, %5 by the block limit.")
                .arg(o.activeBlocks)
                .arg(o.blocksByWarps)
                .arg(o.blocksByRegisters == UINT32_MAX ? QStringLiteral("no limit")
                                                       : QString::number(o.blocksByRegisters))
                .arg(o.blocksBySharedMemory == UINT32_MAX ? QStringLiteral("no limit")
                                                          : QString::number(o.blocksBySharedMemory))
                .arg(o.blocksByBlockLimit);
    help += o.limitsFromTrace ? QStringLiteral("\nGPU limits as recorded in the trace.")
                              : QStringLiteral("\nGPU limits from its compute capability's "
                                               "documented values (the trace does not record "
                                               "them).");
    if (o.carveoutFromTrace)
        help += QStringLiteral("\nShared memory per SM: %1 B, the carveout the driver chose "
                               "for this launch.")
                    .arg(number(static_cast<qint64>(o.sharedMemoryPerSm)));
    return help;
}

// The Python stack (--python-stacks) of an API call: one field per frame, innermost first,
// "Block.forward  train.py:42".
template <typename Add>
void addStack(const model::TraceStore& store, model::EventRef apiCall, const Add& add,
              const QString& whose) {
    if (store.callchains().empty())
        return;
    const auto frames = store.callStack(apiCall);
    if (frames.empty()) {
        add(QStringLiteral("Python stack"), QStringLiteral("none (%1)").arg(whose), {},
            QStringLiteral("Stacks are read for launches, copies, memsets and syncs made on a "
                           "Python thread; PyTorch's backward runs on C++ threads."));
        return;
    }
    add(QStringLiteral("Python stack"),
        QStringLiteral("%1 frames (%2), innermost first").arg(frames.size()).arg(whose));
    constexpr size_t kShown = 24;
    for (size_t d = 0; d < frames.size() && d < kShown; ++d)
        add(QStringLiteral("  #%1").arg(d),
            QStringLiteral("%1  %2").arg(QString::fromStdString(store.text(frames[d].function)),
                                         QString::fromStdString(model::sourceLocation(
                                             store, frames[d].file, frames[d].line))),
            {}, QString::fromStdString(store.text(frames[d].file)));
    if (frames.size() > kShown)
        add(QStringLiteral("  …"), QStringLiteral("%1 more").arg(frames.size() - kShown));
}

// The GPU metric samples inside one kernel: its achieved occupancy beside the theoretical one,
// and whether it is memory- or compute-bound (kernelmetrics.h).
template <typename Add>
void addInstanceMetrics(const model::TraceStore& store, model::EventRef op, const Add& add) {
    const model::KernelMetricsRow m = model::instanceMetrics(store, op);
    if (m.bound == model::KernelBound::NotSampled)
        return;
    const model::GpuMetricSamples* set = store.gpuMetricsOf(m.deviceId);
    const QString interval =
        set ? QStringLiteral("%1 us").arg((set->interval + 500) / 1000) : QStringLiteral("?");
    if (m.bound == model::KernelBound::TooShort) {
        add(QStringLiteral("GPU metrics"),
            QStringLiteral("too short to sample (no whole %1 sample inside this kernel)")
                .arg(interval),
            {},
            QStringLiteral("Record with a higher --gpu-metrics-frequency, or see the GPU metrics "
                           "report, which pools all instances of a kernel name."));
        return;
    }
    const auto pct = [](double v) {
        return std::isnan(v) ? QStringLiteral("–") : QStringLiteral("%1%").arg(v, 0, 'f', 0);
    };
    if (!std::isnan(m.warpsActive))
        add(QStringLiteral("Achieved occupancy"),
            QStringLiteral("%1 (warps active, mean of %2 samples of %3 inside this kernel)")
                .arg(pct(m.warpsActive))
                .arg(m.samples)
                .arg(interval));
    QString text = QStringLiteral("%1: SM %2 · DRAM %3")
                       .arg(QString::fromStdString(model::kernelBoundName(m.bound)),
                            pct(m.smActive), pct(m.dram()));
    if (!std::isnan(m.achievedBandwidth))
        text += QStringLiteral(" (%1 GB/s)").arg(m.achievedBandwidth / 1e9, 0, 'f', 0);
    text +=
        QStringLiteral(" · L2 %1 · FMA %2 · tensor %3").arg(pct(m.l2), pct(m.fma), pct(m.tensor));
    add(QStringLiteral("GPU metrics"), text, {},
        QStringLiteral("Means over the samples inside this kernel, in % of the GPU's peak. "
                       "Memory-bound: DRAM or L2 at 60% or more; compute-bound: the FMA or "
                       "tensor pipe at 60% or more; latency-bound: neither."));
}

QString bytesText(uint64_t bytes) {
    const QString rounded = qs(model::formatBytesText(bytes));
    if (bytes < 1000)
        return rounded;
    return QStringLiteral("%1 (%2 bytes)").arg(rounded, number(static_cast<qint64>(bytes)));
}

QString threadText(const model::TraceStore& store, uint32_t thread) {
    if (thread >= store.threads().size())
        return QStringLiteral("?");
    const model::ThreadInfo& t = store.threads()[thread];
    const QString name = qs(store.text(t.name));
    return name.isEmpty() ? QStringLiteral("tid %1").arg(t.tid)
                          : QStringLiteral("%1 (tid %2)").arg(name).arg(t.tid);
}

QString streamText(const model::TraceStore& store, uint32_t streamIndex) {
    if (streamIndex >= store.streams().size())
        return QStringLiteral("?");
    const model::StreamInfo& s = store.streams()[streamIndex];
    const QString plain = QStringLiteral("Stream %1").arg(s.streamId);
    const QString name = qs(store.text(s.name));
    return name.isEmpty() || name == plain ? plain : QStringLiteral("%1 (%2)").arg(plain, name);
}

QString deviceText(const model::TraceStore& store, uint32_t deviceId) {
    const model::DeviceInfo* device = store.device(deviceId);
    return device ? SourceText::deviceLabel(store, *device)
                  : QStringLiteral("GPU %1").arg(deviceId);
}

// The source (rank) of an event: its device's for a GPU op, its thread's otherwise.
uint32_t sourceOf(const model::TraceStore& store, const model::EventId& e) {
    switch (e.family) {
    case model::EventFamily::Gpu:
        if (const model::DeviceInfo* device =
                store.device(store.gpuTracks()[e.ref.track].deviceId()))
            return SourceText::ofDevice(store,
                                        static_cast<uint32_t>(device - store.devices().data()));
        return 0;
    case model::EventFamily::Api:
        return SourceText::ofThread(store, store.apiTracks()[e.ref.track].threadIndex());
    case model::EventFamily::Nvtx:
        return SourceText::ofThread(store, store.nvtxTracks()[e.ref.track].threadIndex());
    case model::EventFamily::None:
        break;
    }
    return 0;
}

// For the arrival kernel of a rank's step in a session (its first communication kernel there):
// how long it waited for the rank(s) that reached the collective last. Empty for any other op
// and for a rank that was itself the last. O(steps of all ranks).
QString collectiveWaitText(const model::TraceStore& store, const model::CrossRankAnalysis& a,
                           const model::EventRef& op, TimeUnit unit) {
    for (size_t rank = 0; rank < a.ranks.size(); ++rank) {
        const auto steps = a.stepsOf(rank);
        for (size_t k = 0; k < steps.size(); ++k) {
            const model::RankStep& s = steps[k];
            if (!s.arrived() || s.wait <= 0 || !(s.arrivalOp == op) || k >= a.steps.size())
                continue;
            const model::CrossRankStep& step = a.steps[k];
            // The slowest rank, or the ranks tied for the last arrival when none is.
            QStringList late;
            for (size_t other = 0; other < a.ranks.size(); ++other) {
                const model::RankStep* o = a.step(other, k);
                const bool last = step.slowest != model::CrossRankStep::kNoRank
                                      ? other == step.slowest
                                      : o && o->arrived() && o->arrival == step.lastArrival;
                if (last)
                    late << SourceText::label(store, a.ranks[other].source);
            }
            const QString stepText =
                s.number ? QStringLiteral("step %1").arg(*s.number)
                         : QStringLiteral("step %1").arg(static_cast<qulonglong>(k));
            return QStringLiteral("Waited %1 for %2 (the last to reach %3's collective)")
                .arg(TimeFormat::duration(double(s.wait), unit),
                     late.isEmpty() ? QStringLiteral("the other ranks")
                                    : late.join(QStringLiteral(" and ")),
                     stepText);
        }
    }
    return {};
}

QString stallKindText(model::StallKind kind) {
    return qs(model::stallKindName(kind));
}

} // namespace

QString EventDetails::kindText(const model::TraceStore& store, const model::EventId& e) {
    switch (e.family) {
    case model::EventFamily::Api:
        return QStringLiteral("CUDA API call");
    case model::EventFamily::Nvtx: {
        const auto style = store.nvtxTracks()[e.ref.track].style();
        return style == model::NvtxStyle::Mark ? QStringLiteral("NVTX mark")
                                               : QStringLiteral("NVTX range");
    }
    case model::EventFamily::Gpu:
        switch (store.gpuTracks()[e.ref.track].kind(e.ref.index)) {
        case model::GpuOpKind::Kernel: {
            const std::string& name = store.text(store.gpuTracks()[e.ref.track].name(e.ref.index));
            if (!model::isCommunicationKernel(name))
                return QStringLiteral("Kernel");
            const QString library = qs(model::communicationLibrary(name)).toUpper();
            return library.isEmpty() ? QStringLiteral("Communication kernel")
                                     : QStringLiteral("Communication kernel (%1)").arg(library);
        }
        case model::GpuOpKind::Memcpy:
            return QStringLiteral("Memory copy");
        case model::GpuOpKind::Memset:
            return QStringLiteral("Memory set");
        }
        break;
    case model::EventFamily::None:
        break;
    }
    return {};
}

std::vector<DetailField> EventDetails::describe(const LoadedTrace& trace, const model::EventId& e,
                                                TimeUnit unit) {
    std::vector<DetailField> out;
    if (!e.valid())
        return out;
    const model::TraceStore& store = *trace.store;
    const auto add = [&](QString name, QString value, model::EventId link = {}, QString help = {}) {
        out.push_back({std::move(name), std::move(value), link, std::move(help)});
    };
    // Exact to the nanosecond, in the unit that suits the value (or the user's unit).
    const auto duration = [&](int64_t ns) { return TimeFormat::timestamp(double(ns), 1, unit); };
    const auto time = [&](int64_t ns) { return TimeFormat::timestamp(double(ns), 1, unit); };
    const int64_t start = model::eventStart(store, e);
    const int64_t end = model::eventEnd(store, e);
    add(QStringLiteral("Name"), qs(store.text(EventSearch::nameOf(store, e))));
    add(QStringLiteral("Kind"), kindText(store, e));
    add(QStringLiteral("Start"), time(start));
    add(QStringLiteral("Duration"), duration(end - start));
    add(QStringLiteral("End"), time(end));
    if (store.isSession()) {
        const uint32_t source = sourceOf(store, e);
        add(QStringLiteral("Rank"), SourceText::label(store, source), {},
            QStringLiteral("The trace file (rank and host) this event was read from: %1")
                .arg(qs(store.sources()[source].path)));
    }

    if (e.family == model::EventFamily::Gpu) {
        const model::GpuTrack& t = store.gpuTracks()[e.ref.track];
        const size_t i = e.ref.index;
        add(QStringLiteral("Device"), deviceText(store, t.deviceId()));
        add(QStringLiteral("Stream"), streamText(store, t.streamIndex()));
        if (t.kind(i) == model::GpuOpKind::Kernel && t.detail(i) < store.kernelConfigs().size()) {
            const model::KernelConfig& c = store.kernelConfigs()[t.detail(i)];
            add(QStringLiteral("Grid"),
                QStringLiteral("%1 × %2 × %3").arg(c.gridX).arg(c.gridY).arg(c.gridZ));
            add(QStringLiteral("Block"),
                QStringLiteral("%1 × %2 × %3").arg(c.blockX).arg(c.blockY).arg(c.blockZ));
            add(QStringLiteral("Registers/thread"), QString::number(c.registersPerThread));
            add(QStringLiteral("Shared mem (static)"),
                QStringLiteral("%1 B/block").arg(number(c.staticSharedMemory)));
            add(QStringLiteral("Shared mem (dynamic)"),
                QStringLiteral("%1 B/block").arg(number(c.dynamicSharedMemory)));
            add(QStringLiteral("Theoretical occupancy"),
                qs(model::occupancySentence(model::theoreticalOccupancy(store, c))), {},
                occupancyHelp(store, c));
            if (!store.gpuMetrics().empty())
                addInstanceMetrics(store, e.ref, add);
            if (const model::EventRef l = t.launch(i); l.valid())
                addStack(store, l, add, QStringLiteral("of its launch"));
            if (c.shortName != model::kNoName)
                add(QStringLiteral("Short name"), qs(store.text(c.shortName)));
            if (c.mangledName != model::kNoName)
                add(QStringLiteral("Mangled name"), qs(store.text(c.mangledName)));
        } else if (t.detail(i) < store.memOps().size()) {
            const model::MemOpInfo& m = store.memOps()[t.detail(i)];
            add(QStringLiteral("Size"), bytesText(m.bytes));
            if (t.kind(i) == model::GpuOpKind::Memcpy) {
                const auto direction = model::copyKindText(m.copyKind);
                if (!direction.empty())
                    add(QStringLiteral("Direction"), qs(direction));
                if (end > start)
                    add(QStringLiteral("Throughput"),
                        QStringLiteral("%1 GB/s").arg(double(m.bytes) / double(end - start), 0, 'f',
                                                      2));
            } else {
                add(QStringLiteral("Value"), QString::number(m.value));
            }
        }
        if (const QString wait = collectiveWait(trace, e.ref, unit); !wait.isEmpty()) {
            add(QStringLiteral("Collective wait"), wait, {},
                QStringLiteral("How long this rank's collective sat waiting for the last rank "
                               "to reach it: the last arrival at the step's collective − this "
                               "kernel's start (the hatched part of the kernel on the "
                               "timeline)"));
        }
        add(QStringLiteral("Correlation ID"), QString::number(t.correlationId(i)));
        if (t.graphId(i) != 0)
            add(QStringLiteral("CUDA graph"), QString::number(t.graphId(i)));
        const model::EventRef launch = t.launch(i);
        if (launch.valid()) {
            const model::ApiTrack& a = store.apiTracks()[launch.track];
            add(QStringLiteral("Launched by"),
                QStringLiteral("%1 on %2")
                    .arg(qs(store.text(a.name(launch.index))), threadText(store, a.threadIndex())),
                model::EventId::api(launch));
            add(QStringLiteral("Launch start"), time(a.start(launch.index)));
            add(QStringLiteral("Launch lag"), duration(start - a.start(launch.index)), {},
                QStringLiteral("How far the CPU ran ahead: this op's start − the start of the call "
                               "that launched it"));
            add(QStringLiteral("Queue delay"), duration(start - a.end(launch.index)), {},
                QStringLiteral("How long the op waited after its launch call returned: its start − "
                               "the call's end (negative: it started before the call returned)"));
        } else {
            add(QStringLiteral("Launched by"), QStringLiteral("not in the trace"));
        }
    } else if (e.family == model::EventFamily::Api) {
        const model::ApiTrack& t = store.apiTracks()[e.ref.track];
        const size_t i = e.ref.index;
        add(QStringLiteral("Thread"), threadText(store, t.threadIndex()));
        add(QStringLiteral("API"), t.domain(i) == model::ApiDomain::Runtime
                                       ? QStringLiteral("CUDA runtime")
                                       : QStringLiteral("CUDA driver"));
        if (t.depth() > 0)
            add(QStringLiteral("Nesting depth"), QString::number(t.depth()));
        add(QStringLiteral("Correlation ID"), QString::number(t.correlationId(i)));
        add(QStringLiteral("Return value"), QString::number(t.returnValue(i)));
        addStack(store, e.ref, add, QStringLiteral("of this call"));
        const auto ops = t.gpuOps(i);
        if (!ops.empty()) {
            const model::GpuTrack& g = store.gpuTracks()[ops[0].track];
            const QString opName = qs(store.text(g.name(ops[0].index)));
            add(QStringLiteral("Launched"),
                ops.size() == 1 ? opName
                                : QStringLiteral("%1 and %2 more").arg(opName).arg(ops.size() - 1),
                model::EventId::gpu(ops[0]));
            add(QStringLiteral("Launch lag"), duration(g.start(ops[0].index) - start), {},
                QStringLiteral("How far the CPU ran ahead: the GPU start of the first op − this "
                               "call's start"));
        }
        if (trace.syncStalls) {
            const auto& stalls = trace.syncStalls->stalls;
            const auto it = std::find_if(stalls.begin(), stalls.end(),
                                         [&](const auto& s) { return s.call == e.ref; });
            if (it != stalls.end()) {
                add(QStringLiteral("Sync stall"),
                    QStringLiteral("the CPU waited %1 (%2)")
                        .arg(TimeFormat::duration(double(it->blocked()), unit),
                             stallKindText(it->kind)));
                add(QStringLiteral("Ops finished meanwhile"), QString::number(it->finishedOps), {},
                    QStringLiteral("GPU ops of the device that ended while the CPU waited"));
                add(QStringLiteral("GPU idle after"), duration(it->gpuIdleAfter),
                    it->nextOp.valid() ? model::EventId::gpu(it->nextOp) : model::EventId{},
                    QStringLiteral("How long the device then sat idle until the CPU gave it new "
                                   "work (click: the op that ended the idle time)"));
            }
        }
    } else if (e.family == model::EventFamily::Nvtx) {
        const model::NvtxTrack& t = store.nvtxTracks()[e.ref.track];
        const size_t i = e.ref.index;
        add(QStringLiteral("Thread"), threadText(store, t.threadIndex()));
        add(QStringLiteral("Style"),
            t.style() == model::NvtxStyle::PushPop    ? QStringLiteral("push/pop")
            : t.style() == model::NvtxStyle::StartEnd ? QStringLiteral("start/end")
                                                      : QStringLiteral("mark"));
        add(QStringLiteral("Depth"), QString::number(t.depth()));
        if (t.domain(i) != model::kNoName)
            add(QStringLiteral("Domain"), qs(store.text(t.domain(i))));
        if (t.color(i) != 0)
            add(QStringLiteral("Colour"),
                QStringLiteral("#%1").arg(t.color(i) & 0xffffffu, 6, 16, QLatin1Char('0')));
        if (t.isUnclosed(i))
            add(QStringLiteral("Unclosed"), QStringLiteral("never ended; shown to the trace end"));
    }
    return out;
}

QString EventDetails::collectiveWait(const LoadedTrace& trace, const model::EventRef& op,
                                     TimeUnit unit) {
    return trace.crossRank ? collectiveWaitText(*trace.store, *trace.crossRank, op, unit)
                           : QString();
}

std::vector<DetailField> EventDetails::traceSummary(const LoadedTrace& trace, TimeUnit unit) {
    std::vector<DetailField> out;
    const model::TraceStore& store = *trace.store;
    const auto add = [&](QString name, QString value) {
        if (!value.isEmpty())
            out.push_back({std::move(name), std::move(value), {}, {}});
    };
    add(QStringLiteral("File"), trace.path);
    add(QStringLiteral("Format"), store.origin() == model::TraceOrigin::NsightSystemsExport
                                      ? QStringLiteral("Nsight Systems SQLite export")
                                      : QStringLiteral("Warpline trace %1.%2")
                                            .arg(store.formatVersion() / 100)
                                            .arg(store.formatVersion() % 100));
    add(QStringLiteral("Duration"),
        TimeFormat::duration(double(store.endTime() - store.beginTime()), unit));
    add(QStringLiteral("Events"), number(static_cast<qint64>(store.eventCount())));
    add(QStringLiteral("Kernels"), number(static_cast<qint64>(store.kernelCount())));
    add(QStringLiteral("Copies and sets"),
        number(static_cast<qint64>(store.memcpyCount() + store.memsetCount())));
    add(QStringLiteral("API calls"), number(static_cast<qint64>(store.apiCallCount())));
    add(QStringLiteral("NVTX events"), number(static_cast<qint64>(store.nvtxEventCount())));
    if (store.isSession()) {
        add(QStringLiteral("Session"), SourceText::count(store));
        for (uint32_t s = 0; s < store.sources().size(); ++s) {
            add(SourceText::label(store, s),
                QStringLiteral("%1 · %2").arg(QFileInfo(qs(store.sources()[s].path)).fileName(),
                                              SourceText::detail(store, s)));
        }
    } else {
        for (const model::DeviceInfo& d : store.devices())
            add(QStringLiteral("GPU %1").arg(d.id), qs(store.text(d.name)));
    }
    add(QStringLiteral("Memory"),
        QStringLiteral("%1 MB").arg(double(store.memoryBytes()) / 1e6, 0, 'f', 1));
    if (trace.loadSeconds > 0)
        add(QStringLiteral("Opened in"), QStringLiteral("%1 s (+ %2 s analyses)")
                                             .arg(trace.loadSeconds, 0, 'f', 2)
                                             .arg(trace.analysisSeconds, 0, 'f', 2));
    for (const auto& [key, value] : store.meta())
        add(qs(key), qs(value));
    int n = 0;
    for (const std::string& warning : store.warnings())
        add(QStringLiteral("Warning %1").arg(++n), qs(warning));
    return out;
}

} // namespace warpline::views
