#include "timeline/timelinerows.h"

#include "details/sourcetext.h"

#include <algorithm>
#include <map>

namespace warpline::views {

namespace {

QString fromUtf8(const std::string& s) {
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

QString streamLabel(const model::TraceStore& store, const model::StreamInfo& stream) {
    const QString plain = QStringLiteral("Stream %1").arg(stream.streamId);
    const QString name = fromUtf8(store.text(stream.name));
    if (name.isEmpty() || name == plain)
        return plain;
    return QStringLiteral("%1 (%2)").arg(plain, name);
}

// What a track's ranges are called: a torch.profiler trace's operators are NVTX ranges of the
// domain "cpu_op" (kinetoimport.h).
QString nvtxKind(const model::TraceStore& store, const model::NvtxTrack& track) {
    return track.size() > 0 && store.text(track.domain(0)) == "cpu_op"
               ? QStringLiteral("PyTorch ops")
               : QStringLiteral("NVTX");
}

QString nvtxLabel(const model::TraceStore& store, const model::NvtxTrack& track) {
    const QString base = nvtxKind(store, track);
    switch (track.style()) {
    case model::NvtxStyle::PushPop:
        return track.depth() == 0 ? base
                                  : QStringLiteral("%1 · depth %2").arg(base).arg(track.depth());
    case model::NvtxStyle::StartEnd:
        return QStringLiteral("NVTX start/end · lane %1").arg(track.depth());
    case model::NvtxStyle::Mark:
        return QStringLiteral("NVTX marks");
    }
    return {};
}

} // namespace

void TimelineRows::build(const model::TraceStore& store, const Options& options) {
    m_options = options;
    m_rows.clear();
    int y = 0;
    int group = 0;
    const auto add = [&](RowKind kind, uint32_t index, int indent, QString label, int height) {
        TimelineRow row;
        row.kind = kind;
        row.index = index;
        row.indent = indent;
        row.label = std::move(label);
        row.y = y;
        row.height = height;
        row.group = group;
        row.collapsed = kind == RowKind::NvtxDepths ? m_openDepths.count(index) == 0
                                                    : m_collapsed.count({kind, index}) != 0;
        row.idle = std::binary_search(options.idle.begin(), options.idle.end(),
                                      std::pair<RowKind, uint32_t>{kind, index});
        if (row.idle)
            row.height = height = options.idleHeight;
        y += height;
        m_rows.push_back(std::move(row));
        return m_rows.back().collapsed;
    };

    // Threads grouped by (source, process), in the store's order (by globalTid). A store read
    // from one file has one source, so this is by process.
    using ProcessKey = std::pair<uint32_t, uint32_t>; // source, pid
    std::map<ProcessKey, std::vector<uint32_t>> threadsByProcess;
    for (uint32_t t = 0; t < store.threads().size(); ++t)
        threadsByProcess[{SourceText::ofThread(store, t), store.threads()[t].pid}].push_back(t);
    std::map<ProcessKey, uint32_t> processIndex;
    for (uint32_t p = 0; p < store.processes().size(); ++p) {
        const model::ProcessInfo& process = store.processes()[p];
        processIndex.emplace(ProcessKey{store.isSession() ? process.source : 0, process.pid}, p);
    }

    const auto addProcesses = [&](uint32_t source, int base) {
        for (const auto& [key, threads] : threadsByProcess) {
            if (key.first != source)
                continue;
            const uint32_t pid = key.second;
            const auto found = processIndex.find(key);
            QString label = QStringLiteral("Process %1").arg(pid);
            uint32_t index = pid;
            if (found != processIndex.end()) {
                index = found->second;
                const QString name = fromUtf8(store.text(store.processes()[found->second].name));
                if (!name.isEmpty())
                    label = QStringLiteral("%1 (pid %2)").arg(name).arg(pid);
            }
            if (add(RowKind::ProcessHeader, index, base, label, options.headerHeight))
                continue;
            for (const uint32_t t : threads) {
                const model::ThreadInfo& thread = store.threads()[t];
                if (thread.apiTracks.empty() && thread.nvtxTracks.empty())
                    continue;
                ++group;
                const QString name = fromUtf8(store.text(thread.name));
                const QString threadLabel =
                    name.isEmpty() ? QStringLiteral("Thread %1").arg(thread.tid)
                                   : QStringLiteral("%1 (tid %2)").arg(name).arg(thread.tid);
                if (add(RowKind::ThreadHeader, t, base + 1, threadLabel, options.headerHeight))
                    continue;
                if (store.cpuSamples().thread(thread.globalTid))
                    add(RowKind::CpuSamples, t, base + 2, QStringLiteral("CPU · running / waiting"),
                        options.spanHeight);
                for (const uint32_t a : thread.apiTracks) {
                    const uint32_t depth = store.apiTracks()[a].depth();
                    add(RowKind::Api, a, base + 2,
                        depth == 0 ? QStringLiteral("CUDA API")
                                   : QStringLiteral("CUDA API · depth %1").arg(depth),
                        options.spanHeight);
                }
                // Depths 1 and deeper, when there are two or more, under one folded header
                // after depth 0.
                std::vector<uint32_t> deeper;
                for (const uint32_t n : thread.nvtxTracks) {
                    const model::NvtxTrack& track = store.nvtxTracks()[n];
                    if (track.style() == model::NvtxStyle::PushPop && track.depth() > 0)
                        deeper.push_back(n);
                }
                const bool fold = deeper.size() >= 2;
                for (const uint32_t n : thread.nvtxTracks) {
                    const model::NvtxTrack& track = store.nvtxTracks()[n];
                    if (fold && n == deeper.front()) {
                        uint32_t maxDepth = 0;
                        for (const uint32_t d : deeper)
                            maxDepth = std::max(maxDepth, store.nvtxTracks()[d].depth());
                        if (add(RowKind::NvtxDepths, t, base + 2,
                                QStringLiteral("%1 · depths 1-%2")
                                    .arg(nvtxKind(store, track))
                                    .arg(maxDepth),
                                options.headerHeight))
                            continue;
                        for (const uint32_t d : deeper)
                            add(RowKind::Nvtx, d, base + 3, nvtxLabel(store, store.nvtxTracks()[d]),
                                options.spanHeight);
                        continue;
                    }
                    if (fold && std::find(deeper.begin(), deeper.end(), n) != deeper.end())
                        continue;
                    add(RowKind::Nvtx, n, base + 2, nvtxLabel(store, track), options.spanHeight);
                }
            }
        }
    };

    const auto addDevices = [&](uint32_t source, int base) {
        for (uint32_t d = 0; d < store.devices().size(); ++d) {
            if (SourceText::ofDevice(store, d) != source)
                continue;
            const model::DeviceInfo& device = store.devices()[d];
            std::vector<uint32_t> streams;
            for (uint32_t s = 0; s < store.streams().size(); ++s) {
                if (store.streams()[s].deviceId == device.id &&
                    !store.streams()[s].gpuTracks.empty())
                    streams.push_back(s);
            }
            if (streams.empty())
                continue;
            ++group;
            if (add(RowKind::DeviceHeader, d, base, SourceText::deviceLabel(store, device),
                    options.headerHeight))
                continue;
            for (const uint32_t s : streams) {
                ++group;
                const model::StreamInfo& stream = store.streams()[s];
                const QString streamBase = streamLabel(store, stream);
                for (const uint32_t g : stream.gpuTracks) {
                    const uint32_t lane = store.gpuTracks()[g].lane();
                    add(RowKind::Gpu, g, base + 1,
                        lane == 0 ? streamBase
                                  : QStringLiteral("%1 · lane %2").arg(streamBase).arg(lane),
                        options.spanHeight);
                }
                if (s < options.queueDepthRows.size() && options.queueDepthRows[s])
                    add(RowKind::QueueDepth, s, base + 2, QStringLiteral("Launch queue depth"),
                        options.queueDepthHeight);
            }
            for (uint32_t m = 0; m < store.gpuMetrics().size(); ++m) {
                const model::GpuMetricSamples& set = store.gpuMetrics()[m];
                if (set.deviceId != device.id || set.metrics.size() > 256)
                    continue;
                ++group;
                // "every 100 us": the median spacing, to the microsecond (or to the ns below 1 us).
                const QString rate =
                    set.interval >= 1000
                        ? QStringLiteral(" · every %1 us").arg((set.interval + 500) / 1000)
                    : set.interval > 0 ? QStringLiteral(" · every %1 ns").arg(set.interval)
                                       : QString();
                if (add(RowKind::MetricsHeader, m, base + 1,
                        QStringLiteral("GPU metrics%1").arg(rate), options.headerHeight))
                    continue;
                for (uint32_t i = 0; i < set.metrics.size(); ++i)
                    add(RowKind::GpuMetric, m * 256 + i, base + 2, fromUtf8(set.metrics[i].label),
                        options.metricHeight);
            }
        }
    };

    if (!store.isSession()) {
        addProcesses(0, 0);
        addDevices(0, 0);
        return;
    }
    for (uint32_t source = 0; source < store.sources().size(); ++source) {
        ++group;
        const bool collapsed = add(RowKind::SourceHeader, source, 0,
                                   SourceText::label(store, source), options.headerHeight);
        TimelineRow& header = m_rows.back();
        header.detail = SourceText::detail(store, source);
        header.warning = SourceText::isUnaligned(store.sources()[source]);
        if (collapsed)
            continue;
        addProcesses(source, 1);
        addDevices(source, 1);
    }
}

std::vector<std::pair<RowKind, uint32_t>> TimelineRows::idleIn(const model::TraceStore& store,
                                                               int64_t t0, int64_t t1) {
    const auto empty = [&](const model::SpanTrack& track) {
        return track.visibleRange(t0, t1).empty();
    };
    std::vector<std::pair<RowKind, uint32_t>> idle;
    for (uint32_t a = 0; a < store.apiTracks().size(); ++a)
        if (empty(store.apiTracks()[a]))
            idle.emplace_back(RowKind::Api, a);
    for (uint32_t g = 0; g < store.gpuTracks().size(); ++g)
        if (empty(store.gpuTracks()[g]))
            idle.emplace_back(RowKind::Gpu, g);
    for (uint32_t s = 0; s < store.streams().size(); ++s) {
        const auto& tracks = store.streams()[s].gpuTracks;
        if (!tracks.empty() && std::all_of(tracks.begin(), tracks.end(),
                                           [&](uint32_t g) { return empty(store.gpuTracks()[g]); }))
            idle.emplace_back(RowKind::QueueDepth, s);
    }
    std::sort(idle.begin(), idle.end());
    return idle;
}

int TimelineRows::totalHeight() const {
    return m_rows.empty() ? 0 : m_rows.back().y + m_rows.back().height;
}

int TimelineRows::rowAt(int y) const {
    const auto it = std::upper_bound(m_rows.begin(), m_rows.end(), y,
                                     [](int v, const TimelineRow& r) { return v < r.y; });
    if (it == m_rows.begin())
        return -1;
    const auto row = static_cast<int>(it - m_rows.begin()) - 1;
    return y < m_rows[row].y + m_rows[row].height ? row : -1;
}

int TimelineRows::rowOfTrack(RowKind kind, uint32_t trackIndex) const {
    for (size_t r = 0; r < m_rows.size(); ++r) {
        if (m_rows[r].kind == kind && m_rows[r].index == trackIndex)
            return static_cast<int>(r);
    }
    return -1;
}

void TimelineRows::setCollapsed(const model::TraceStore& store, int row, bool collapsed) {
    if (row < 0 || row >= static_cast<int>(m_rows.size()) || !m_rows[row].isHeader())
        return;
    const std::pair<RowKind, uint32_t> key{m_rows[row].kind, m_rows[row].index};
    if (key.first == RowKind::NvtxDepths) {
        if (collapsed)
            m_openDepths.erase(key.second);
        else
            m_openDepths.insert(key.second);
    } else if (collapsed) {
        m_collapsed.insert(key);
    } else {
        m_collapsed.erase(key);
    }
    build(store, m_options);
}

bool TimelineRows::expandTo(const model::TraceStore& store, RowKind kind, uint32_t trackIndex) {
    if (kind != RowKind::Nvtx && kind != RowKind::Api)
        return false;
    for (uint32_t t = 0; t < store.threads().size(); ++t) {
        const model::ThreadInfo& thread = store.threads()[t];
        const auto& tracks = kind == RowKind::Nvtx ? thread.nvtxTracks : thread.apiTracks;
        if (std::find(tracks.begin(), tracks.end(), trackIndex) == tracks.end())
            continue;
        bool changed = m_collapsed.erase({RowKind::ThreadHeader, t}) > 0;
        if (kind == RowKind::Nvtx)
            changed = m_openDepths.insert(t).second || changed;
        return changed;
    }
    return false;
}

} // namespace warpline::views
