#include "trackbuilder.h"

#include "correlationlinker.h"

#include <algorithm>
#include <set>
#include <string>

namespace warpline::model {

namespace {

template <typename Row> bool byStartThenLongest(const Row& a, const Row& b) {
    return a.start != b.start ? a.start < b.start : a.end > b.end;
}

// Nesting depth of each span, spans sorted by byStartThenLongest: a span's depth is the number of
// spans still open when it starts. Spans at one depth never overlap (a depth is reused only after
// its previous span ended), which is the invariant SpanTrack needs.
template <typename Row> std::vector<uint32_t> nestingDepths(const std::vector<Row>& rows) {
    std::vector<uint32_t> depth(rows.size());
    std::vector<int64_t> openEnds;
    for (size_t i = 0; i < rows.size(); ++i) {
        while (!openEnds.empty() && openEnds.back() <= rows[i].start)
            openEnds.pop_back();
        depth[i] = static_cast<uint32_t>(openEnds.size());
        openEnds.push_back(rows[i].end);
    }
    return depth;
}

// First-fit lanes for spans that may overlap without nesting (start/end ranges, overlapping GPU
// ops): each span goes to the first lane whose last span ended by its start.
template <typename Row> std::vector<uint32_t> firstFitLanes(const std::vector<Row>& rows) {
    std::vector<uint32_t> lane(rows.size());
    std::vector<int64_t> laneEnds;
    for (size_t i = 0; i < rows.size(); ++i) {
        size_t l = 0;
        while (l < laneEnds.size() && laneEnds[l] > rows[i].start)
            ++l;
        if (l == laneEnds.size())
            laneEnds.push_back(rows[i].end);
        else
            laneEnds[l] = rows[i].end;
        lane[i] = static_cast<uint32_t>(l);
    }
    return lane;
}

template <typename Row> void sortRows(std::vector<Row>& rows) {
    if (!std::is_sorted(rows.begin(), rows.end(), byStartThenLongest<Row>))
        std::stable_sort(rows.begin(), rows.end(), byStartThenLongest<Row>);
}

} // namespace

void TraceLoader::TrackBuilder::take(ApiTrack& t, ApiColumns& c) {
    t.m_start = std::move(c.start);
    t.m_end = std::move(c.end);
    t.m_name = std::move(c.name);
    t.m_correlation = std::move(c.correlation);
    t.m_returnValue = std::move(c.returnValue);
    t.m_domain = std::move(c.domain);
}

void TraceLoader::TrackBuilder::take(GpuTrack& t, GpuColumns& c) {
    t.m_start = std::move(c.start);
    t.m_end = std::move(c.end);
    t.m_kind = std::move(c.kind);
    t.m_name = std::move(c.name);
    t.m_correlation = std::move(c.correlation);
    t.m_detail = std::move(c.detail);
    t.m_graphId = std::move(c.graphId);
}

void TraceLoader::TrackBuilder::take(NvtxTrack& t, NvtxColumns& c) {
    t.m_start = std::move(c.start);
    t.m_end = std::move(c.end);
    t.m_name = std::move(c.name);
    t.m_color = std::move(c.color);
    t.m_domain = std::move(c.domain);
    t.m_flags = std::move(c.flags);
}

// Moves rows into one track per level (depth or lane): the columns of each level are reserved
// to their exact size and filled, then taken by a new track that setup(track, level) names.
template <typename Row, typename Track, typename Setup>
void TraceLoader::TrackBuilder::distribute(std::vector<Row>& rows,
                                           const std::vector<uint32_t>& level,
                                           std::vector<Track>& tracks,
                                           std::vector<uint32_t>& trackOfLevel, Setup setup) {
    using Columns = typename ColumnsFor<Row>::type;
    std::vector<size_t> counts;
    for (const uint32_t l : level) {
        if (l >= counts.size())
            counts.resize(l + 1, 0);
        ++counts[l];
    }
    std::vector<Columns> columns(counts.size());
    for (size_t l = 0; l < counts.size(); ++l)
        columns[l].forEach([&](auto& column) { column.reserve(counts[l]); });
    for (size_t i = 0; i < rows.size(); ++i)
        columns[level[i]].append(rows[i]);
    std::vector<Row>().swap(rows);
    for (size_t l = 0; l < counts.size(); ++l) {
        trackOfLevel.push_back(static_cast<uint32_t>(tracks.size()));
        Track& t = tracks.emplace_back();
        setup(t, static_cast<uint32_t>(l));
        take(t, columns[l]);
    }
}

void TraceLoader::TrackBuilder::buildThreads(std::map<int64_t, ThreadStage>& threads,
                                             const std::map<int64_t, NameId>& names,
                                             TraceStore& store) {
    for (auto& [globalTid, stage] : threads) {
        const auto threadIndex = static_cast<uint32_t>(store.m_threads.size());
        ThreadInfo info;
        info.globalTid = globalTid;
        info.pid = pidOf(globalTid);
        info.tid = static_cast<uint32_t>(globalTid & kIdMask);
        if (const auto it = names.find(globalTid); it != names.end())
            info.name = it->second;

        if (stage.api.inColumns()) {
            if (stage.api.size() > 0) {
                info.apiTracks.push_back(static_cast<uint32_t>(store.m_apiTracks.size()));
                ApiTrack& t = store.m_apiTracks.emplace_back();
                t.m_thread = threadIndex;
                t.m_depth = 0;
                take(t, stage.api.columns());
            }
        } else {
            std::vector<ApiRow>& rows = stage.api.rows();
            sortRows(rows);
            const std::vector<uint32_t> apiDepth = nestingDepths(rows);
            distribute(rows, apiDepth, store.m_apiTracks, info.apiTracks,
                       [&](ApiTrack& t, uint32_t depth) {
                           t.m_thread = threadIndex;
                           t.m_depth = depth;
                       });
        }

        store.m_threads.push_back(std::move(info));
    }
}

// Runs while linking, which reads only API and GPU tracks, runs on the helper.
void TraceLoader::TrackBuilder::buildNvtx(std::map<int64_t, ThreadStage>& threads, int64_t traceEnd,
                                          LoadProgress& progress, TraceStore& store) {
    static_assert(kUnclosedNvtx == NvtxTrack::kUnclosed);
    uint32_t threadIndex = 0;
    // Progress moves from where it is to 0.9 of the building share as threads are done.
    const double from = progress.fraction();
    const double to = kReadShare + (1 - kReadShare) * 0.9;
    double total = 0;
    for (const auto& [tid, stage] : threads)
        total +=
            static_cast<double>(stage.pushPop.size() + stage.startEnd.size() + stage.marks.size());
    double done = 0;
    for (auto& [globalTid, stage] : threads) {
        (void)globalTid;
        ThreadInfo& info = store.m_threads[threadIndex];
        const auto rows =
            static_cast<double>(stage.pushPop.size() + stage.startEnd.size() + stage.marks.size());
        const auto setupNvtx = [&](NvtxStyle style) {
            return [&, style](NvtxTrack& t, uint32_t depth) {
                t.m_thread = threadIndex;
                t.m_style = style;
                t.m_depth = depth;
            };
        };
        // Unclosed ranges end where the trace ends (known now: every table has been read).
        for (auto* rows : {&stage.pushPop, &stage.startEnd}) {
            for (NvtxRow& r : *rows) {
                if (r.flags & NvtxTrack::kUnclosed)
                    r.end = std::max(r.start, traceEnd);
            }
            sortRows(*rows);
        }
        sortRows(stage.marks);
        progress.set(progress.fraction()); // Cancel between the steps of a large thread's build
        distribute(stage.pushPop, nestingDepths(stage.pushPop), store.m_nvtxTracks, info.nvtxTracks,
                   setupNvtx(NvtxStyle::PushPop));
        progress.set(progress.fraction());
        distribute(stage.startEnd, firstFitLanes(stage.startEnd), store.m_nvtxTracks,
                   info.nvtxTracks, setupNvtx(NvtxStyle::StartEnd));
        distribute(stage.marks, std::vector<uint32_t>(stage.marks.size(), 0), store.m_nvtxTracks,
                   info.nvtxTracks, setupNvtx(NvtxStyle::Mark));
        done += rows;
        progress.set(from + (to - from) * (total > 0 ? done / total : 1.0));
        ++threadIndex;
    }
    threads.clear();
}

TraceLoader::TrackBuilder::Streams
TraceLoader::TrackBuilder::buildStreams(std::map<StreamKey, StreamStage>& streams,
                                        const StreamNames& names,
                                        const StreamPriorities& priorities, TraceStore& store) {
    Streams built;
    // Ops whose table gave no process (Warpline's kernel view without a PROCESSES row) belong to
    // the stream with the same device, stream and context from a table that did, if there is one.
    for (auto it = streams.begin(); it != streams.end();) {
        const auto [device, streamId, context, pid] = it->first;
        if (pid != kUnknownPid) {
            ++it;
            continue;
        }
        auto known = streams.end();
        int matches = 0;
        for (auto other = streams.lower_bound({device, streamId, context, 0});
             other != streams.end() && std::get<0>(other->first) == device &&
             std::get<1>(other->first) == streamId && std::get<2>(other->first) == context;
             ++other) {
            if (std::get<3>(other->first) != kUnknownPid) {
                known = other;
                ++matches;
            }
        }
        if (matches != 1) {
            ++it;
            continue;
        }
        GpuStage& into = known->second.ops;
        GpuStage& from = it->second.ops;
        if (from.inColumns()) {
            for (size_t i = 0; i < from.size(); ++i)
                into.add(from.columns().row(i));
        } else {
            for (const GpuRow& r : from.rows())
                into.add(r);
        }
        it = streams.erase(it);
    }
    for (auto& [key, stage] : streams) {
        const auto [device, streamId, context, pid] = key;
        const auto streamIndex = static_cast<uint32_t>(store.m_streams.size());
        built.pids.push_back(pid);
        StreamInfo info;
        info.deviceId = device;
        info.contextId = context;
        info.streamId = streamId;
        const auto named = names.find({context, streamId});
        info.name = named != names.end()
                        ? named->second
                        : store.m_strings.intern("Stream " + std::to_string(streamId));
        if (const auto p = priorities.find({context, streamId}); p != priorities.end())
            info.priority = p->second;

        const auto countKind = [&store](uint8_t kind) {
            if (kind == static_cast<uint8_t>(GpuOpKind::Kernel))
                ++store.m_kernelCount;
            else if (kind == static_cast<uint8_t>(GpuOpKind::Memcpy))
                ++store.m_memcpyCount;
            else
                ++store.m_memsetCount;
        };
        if (stage.ops.inColumns()) {
            if (stage.ops.size() > 0) {
                GpuColumns& c = stage.ops.columns();
                for (const uint8_t kind : c.kind)
                    countKind(kind);
                info.gpuTracks.push_back(static_cast<uint32_t>(store.m_gpuTracks.size()));
                GpuTrack& t = store.m_gpuTracks.emplace_back();
                t.m_stream = streamIndex;
                t.m_deviceId = device;
                t.m_lane = 0;
                take(t, c);
            }
            store.m_streams.push_back(std::move(info));
            continue;
        }
        std::vector<GpuRow>& rows = stage.ops.rows();
        sortRows(rows);
        const std::vector<uint32_t> lanes = firstFitLanes(rows);
        noteOverlaps(rows, lanes, static_cast<uint32_t>(store.m_gpuTracks.size()), built.overlaps);
        for (const GpuRow& r : rows)
            countKind(r.kind);
        distribute(rows, lanes, store.m_gpuTracks, info.gpuTracks,
                   [&, deviceId = device](GpuTrack& t, uint32_t lane) {
                       t.m_stream = streamIndex;
                       t.m_deviceId = deviceId;
                       t.m_lane = lane;
                   });
        store.m_streams.push_back(std::move(info));
    }

    // Devices seen only in GPU records get a row with just their id.
    std::set<uint32_t> known;
    for (const DeviceInfo& d : store.m_devices)
        known.insert(d.id);
    for (const StreamInfo& s : store.m_streams) {
        if (known.insert(s.deviceId).second) {
            DeviceInfo d;
            d.id = s.deviceId;
            d.name = store.m_strings.intern("GPU " + std::to_string(s.deviceId));
            store.m_devices.push_back(d);
        }
    }
    std::sort(store.m_devices.begin(), store.m_devices.end(),
              [](const DeviceInfo& a, const DeviceInfo& b) { return a.id < b.id; });
    streams.clear();
    return built;
}

} // namespace warpline::model
