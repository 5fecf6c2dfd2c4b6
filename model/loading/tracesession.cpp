#include "tracesession.h"

#include "communication.h"
#include "traceerror.h"
#include "traceopener.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

namespace warpline::model {

namespace {

constexpr int kSourceShift = 48; // globalPid / globalTid bits that carry the source index
constexpr int64_t kTimeLimit = int64_t(1) << 62; // tracestore.h: every time within +-2^62 ns
constexpr int64_t kOffsetLimit = int64_t(1) << 61;
constexpr double kLoadShare = 0.95; // of open()'s progress; merging is the rest

bool isTraceFileName(const std::string& name) {
    // .pt.trace.json and .pt.trace.json.gz end like the JSON ones.
    for (const std::string_view extension : {".warpline", ".sqlite", ".json", ".json.gz"}) {
        if (name.size() > extension.size() && name.ends_with(extension))
            return true;
    }
    return false;
}

// Sessions order their sources by rank (unknown last), then host, then path.
bool sourceBefore(const TraceSource& a, const TraceSource& b) {
    const auto key = [](const TraceSource& s) {
        return std::make_tuple(s.rank < 0, s.rank, std::cref(s.host), std::cref(s.path));
    };
    return key(a) < key(b);
}

} // namespace

// Merges stores into one. Every entity and track of an input belongs to one of its sources (a
// "unit"); units are put in session order, each is aligned to the first, and the input's arrays
// are moved (not copied) into the result with their indices, ids, names and times rewritten.
class TraceSession::Merger {
public:
    explicit Merger(std::vector<TraceStore> stores);
    TraceStore run();

private:
    struct Input {
        TraceStore store;
        // Local source (index into store.m_sources) of each process, thread, device (by index),
        // stream and track.
        std::vector<uint32_t> processSource, threadSource, deviceSource, streamSource;
        std::vector<uint32_t> apiSource, nvtxSource, gpuSource;
        std::unordered_map<uint32_t, uint32_t> deviceIndex; // DeviceInfo::id -> index
        std::vector<bool>
            deviceUsed; // by index: a stream, kernel configuration or track runs on it
        std::vector<uint32_t> unitOf; // local source -> unit
        // Where this input's parts go in the result.
        std::vector<NameId> names;
        std::vector<uint32_t> threads, streams, apiTracks, nvtxTracks, gpuTracks;
        std::unordered_map<uint32_t, uint32_t> deviceIds; // old DeviceInfo::id -> new
        uint32_t configBase = 0;
        uint32_t memOpBase = 0;
    };
    struct Unit {
        size_t input = 0;
        uint32_t local = 0;
        TraceSource source;
        int64_t oldOffset = 0; // source.clockOffset as the input had it
        int64_t shift = 0;     // added to the input's times: new offset - old offset
        // Raw times (as in the file): extent, and the end of the first communication kernel.
        bool haveTime = false;
        int64_t begin = 0;
        int64_t end = 0;
        std::optional<int64_t> firstCommEnd;
    };

    void prepare(Input& in);
    void measure(size_t input);
    void align();
    bool place(Unit& unit, int64_t offset) const;
    void assign();
    void moveTracks(Input& in);
    void finish();

    std::vector<Input> m_inputs;
    std::vector<Unit> m_units; // in session order once sorted
    TraceStore m_out;
};

TraceSession::Merger::Merger(std::vector<TraceStore> stores) {
    m_inputs.resize(stores.size());
    for (size_t i = 0; i < stores.size(); ++i)
        m_inputs[i].store = std::move(stores[i]);
}

// Gives a store without sources its one source, gives every device id that a stream, kernel
// configuration or GPU track refers to a row, and works out which source each part belongs to.
void TraceSession::Merger::prepare(Input& in) {
    TraceStore& s = in.store;
    if (s.m_sources.empty()) {
        TraceSource source;
        source.path = s.m_path;
        source.host = s.metaValue("hostname");
        source.meta = s.m_meta;
        source.warnings = s.m_warnings;
        s.m_sources.push_back(std::move(source));
    }
    const auto sources = static_cast<int64_t>(s.m_sources.size());
    const auto localOf = [sources](int64_t value) {
        return sources == 1 ? 0u
                            : static_cast<uint32_t>(std::clamp<int64_t>(value, 0, sources - 1));
    };
    for (size_t d = 0; d < s.m_devices.size(); ++d)
        in.deviceIndex.emplace(s.m_devices[d].id, static_cast<uint32_t>(d));
    in.deviceUsed.assign(s.m_devices.size(), false);
    const auto needDevice = [&](uint32_t id) {
        const auto [it, added] =
            in.deviceIndex.emplace(id, static_cast<uint32_t>(s.m_devices.size()));
        if (added) {
            DeviceInfo d;
            d.id = id;
            d.cudaId = id;
            d.name = s.m_strings.intern("GPU " + std::to_string(id));
            s.m_devices.push_back(d);
            in.deviceUsed.push_back(false);
        }
        in.deviceUsed[it->second] = true;
    };
    for (const StreamInfo& stream : s.m_streams)
        needDevice(stream.deviceId);
    for (const KernelConfig& config : s.m_kernelConfigs)
        needDevice(config.deviceId);
    for (const GpuTrack& track : s.m_gpuTracks)
        needDevice(track.m_deviceId);

    for (const ProcessInfo& p : s.m_processes)
        in.processSource.push_back(localOf(p.source));
    for (const ThreadInfo& t : s.m_threads)
        in.threadSource.push_back(localOf(t.source));
    for (const DeviceInfo& d : s.m_devices)
        in.deviceSource.push_back(localOf(d.source));
    for (const StreamInfo& stream : s.m_streams)
        in.streamSource.push_back(in.deviceSource[in.deviceIndex.at(stream.deviceId)]);
    for (const ApiTrack& t : s.m_apiTracks)
        in.apiSource.push_back(in.threadSource[t.m_thread]);
    for (const NvtxTrack& t : s.m_nvtxTracks)
        in.nvtxSource.push_back(in.threadSource[t.m_thread]);
    for (const GpuTrack& t : s.m_gpuTracks)
        in.gpuSource.push_back(in.streamSource[t.m_stream]);
}

// Each unit's raw extent and first communication kernel, for aligning it.
void TraceSession::Merger::measure(size_t input) {
    Input& in = m_inputs[input];
    const TraceStore& s = in.store;
    const auto note = [&](uint32_t local, int64_t begin, int64_t end) {
        Unit& u = m_units[in.unitOf[local]];
        begin -= u.oldOffset;
        end -= u.oldOffset;
        u.begin = u.haveTime ? std::min(u.begin, begin) : begin;
        u.end = u.haveTime ? std::max(u.end, end) : end;
        u.haveTime = true;
    };
    if (s.m_sources.size() == 1) {
        if (s.m_beginTime != 0 || s.m_endTime != 0 || s.eventCount() != 0)
            note(0, s.m_beginTime, s.m_endTime);
    } else {
        const auto noteTracks = [&](const auto& tracks, const std::vector<uint32_t>& source) {
            for (size_t t = 0; t < tracks.size(); ++t) {
                if (!tracks[t].empty())
                    note(source[t], tracks[t].firstStart(), tracks[t].lastEnd());
            }
        };
        noteTracks(s.m_apiTracks, in.apiSource);
        noteTracks(s.m_nvtxTracks, in.nvtxSource);
        noteTracks(s.m_gpuTracks, in.gpuSource);
    }

    CommunicationNames comm(s);
    std::vector<std::optional<std::pair<int64_t, int64_t>>> first(s.m_sources.size());
    for (size_t t = 0; t < s.m_gpuTracks.size(); ++t) {
        const GpuTrack& track = s.m_gpuTracks[t];
        for (size_t i = 0; i < track.size(); ++i) {
            if (track.kind(i) != GpuOpKind::Kernel)
                continue;
            if (!comm.isName(track.m_name[i]))
                continue;
            auto& best = first[in.gpuSource[t]];
            const std::pair<int64_t, int64_t> span(track.start(i), track.end(i));
            if (!best || span < *best)
                best = span;
            break; // the track is sorted by start: its first one is found
        }
    }
    for (uint32_t local = 0; local < first.size(); ++local) {
        if (first[local]) {
            Unit& u = m_units[in.unitOf[local]];
            u.firstCommEnd = first[local]->second - u.oldOffset;
        }
    }
}

// Puts a unit at `offset` from the reference's time axis when its times stay in range.
bool TraceSession::Merger::place(Unit& unit, int64_t offset) const {
    if (offset < -kOffsetLimit || offset > kOffsetLimit)
        return false;
    if (unit.haveTime && (unit.begin + offset <= -kTimeLimit || unit.end + offset >= kTimeLimit))
        return false;
    unit.source.clockOffset = offset;
    return true;
}

// tracesession.h: the same host shares a clock; another host is matched at its first
// communication kernel's end; else wall clock; else nothing.
void TraceSession::Merger::align() {
    Unit& ref = m_units.front();
    ref.source.clockOffset = 0;
    ref.source.alignment = ClockAlignment::Reference;
    const std::optional<int64_t> refStart = metaInteger(ref.source.meta, "session_start_timestamp");
    for (size_t k = 1; k < m_units.size(); ++k) {
        Unit& u = m_units[k];
        const std::optional<int64_t> start = metaInteger(u.source.meta, "session_start_timestamp");
        int64_t offset = 0;
        if (!u.source.host.empty() && u.source.host == ref.source.host && start && refStart &&
            !__builtin_sub_overflow(*start, *refStart, &offset) && place(u, offset))
            u.source.alignment = ClockAlignment::SharedClock;
        else if (u.firstCommEnd && ref.firstCommEnd &&
                 place(u, *ref.firstCommEnd - *u.firstCommEnd))
            u.source.alignment = ClockAlignment::SyncPoint;
        else if (u.source.utcEpochNs != 0 && ref.source.utcEpochNs != 0 &&
                 !__builtin_sub_overflow(u.source.utcEpochNs, ref.source.utcEpochNs, &offset) &&
                 place(u, offset))
            u.source.alignment = ClockAlignment::WallClock;
        else {
            u.source.clockOffset = 0;
            u.source.alignment = ClockAlignment::Unaligned;
        }
    }
    for (Unit& u : m_units)
        u.shift = u.source.clockOffset - u.oldOffset;
}

// Gives every entity and track its place in the result, unit by unit, and moves the entities.
void TraceSession::Merger::assign() {
    for (Input& in : m_inputs) {
        const StringTable& strings = in.store.m_strings;
        in.names.resize(strings.size());
        for (size_t id = 0; id < strings.size(); ++id)
            in.names[id] = m_out.m_strings.intern(strings.text(static_cast<NameId>(id)));
    }
    // Devices: a session keeps those its sources used (each file lists every GPU of its host).
    const bool session = m_units.size() > 1;
    for (uint32_t k = 0; k < m_units.size(); ++k) {
        const Unit& u = m_units[k];
        Input& in = m_inputs[u.input];
        TraceStore& s = in.store;
        const int64_t idShift = (int64_t(k) - int64_t(u.local)) * (int64_t(1) << kSourceShift);
        for (size_t i = 0; i < s.m_processes.size(); ++i) {
            const ProcessInfo& p = s.m_processes[i];
            if (in.processSource[i] != u.local)
                continue;
            ProcessInfo q = p;
            q.globalPid += idShift;
            q.name = in.names[p.name];
            q.source = k;
            m_out.m_processes.push_back(q);
        }
        in.threads.resize(s.m_threads.size());
        for (size_t t = 0; t < s.m_threads.size(); ++t) {
            if (in.threadSource[t] != u.local)
                continue;
            in.threads[t] = static_cast<uint32_t>(m_out.m_threads.size());
            ThreadInfo thread = std::move(s.m_threads[t]);
            thread.globalTid += idShift;
            thread.name = in.names[thread.name];
            thread.source = k;
            m_out.m_threads.push_back(std::move(thread));
        }
        for (size_t d = 0; d < s.m_devices.size(); ++d) {
            if (in.deviceSource[d] != u.local || (session && !in.deviceUsed[d]))
                continue;
            DeviceInfo device = s.m_devices[d];
            in.deviceIds[device.id] = static_cast<uint32_t>(m_out.m_devices.size());
            device.id = static_cast<uint32_t>(m_out.m_devices.size());
            device.source = k;
            device.name = in.names[device.name];
            m_out.m_devices.push_back(std::move(device));
        }
        in.streams.resize(s.m_streams.size());
        for (size_t st = 0; st < s.m_streams.size(); ++st) {
            if (in.streamSource[st] != u.local)
                continue;
            in.streams[st] = static_cast<uint32_t>(m_out.m_streams.size());
            StreamInfo stream = std::move(s.m_streams[st]);
            stream.deviceId = in.deviceIds.at(stream.deviceId);
            stream.name = in.names[stream.name];
            m_out.m_streams.push_back(std::move(stream));
        }
        const auto number = [](std::vector<uint32_t>& map, const std::vector<uint32_t>& source,
                               uint32_t local, uint32_t& next) {
            map.resize(source.size());
            for (size_t t = 0; t < source.size(); ++t) {
                if (source[t] == local)
                    map[t] = next++;
            }
        };
        auto apiNext = static_cast<uint32_t>(m_out.m_apiTracks.size());
        auto nvtxNext = static_cast<uint32_t>(m_out.m_nvtxTracks.size());
        auto gpuNext = static_cast<uint32_t>(m_out.m_gpuTracks.size());
        number(in.apiTracks, in.apiSource, u.local, apiNext);
        number(in.nvtxTracks, in.nvtxSource, u.local, nvtxNext);
        number(in.gpuTracks, in.gpuSource, u.local, gpuNext);
        m_out.m_apiTracks.resize(apiNext);
        m_out.m_nvtxTracks.resize(nvtxNext);
        m_out.m_gpuTracks.resize(gpuNext);
    }
    for (Input& in : m_inputs) {
        TraceStore& s = in.store;
        in.configBase = static_cast<uint32_t>(m_out.m_kernelConfigs.size());
        for (KernelConfig config : s.m_kernelConfigs) {
            config.deviceId = in.deviceIds.at(config.deviceId);
            config.demangledName = in.names[config.demangledName];
            config.shortName = in.names[config.shortName];
            config.mangledName = in.names[config.mangledName];
            m_out.m_kernelConfigs.push_back(config);
        }
        in.memOpBase = static_cast<uint32_t>(m_out.m_memOps.size());
        m_out.m_memOps.insert(m_out.m_memOps.end(), s.m_memOps.begin(), s.m_memOps.end());
    }
}

// Moves an input's tracks and syncs to their places, rewriting references, names and times.
void TraceSession::Merger::moveTracks(Input& in) {
    TraceStore& s = in.store;
    const auto shiftOf = [&](uint32_t local) { return m_units[in.unitOf[local]].shift; };
    const auto shiftTimes = [](SpanTrack& track, int64_t shift) {
        if (shift == 0)
            return;
        for (int64_t& t : track.m_start)
            t += shift;
        for (int64_t& t : track.m_end)
            t += shift;
    };
    const auto rename = [&in](std::vector<NameId>& names) {
        for (NameId& name : names)
            name = in.names[name];
    };
    for (size_t t = 0; t < s.m_threads.size(); ++t) {
        ThreadInfo& thread = m_out.m_threads[in.threads[t]];
        for (uint32_t& track : thread.apiTracks)
            track = in.apiTracks[track];
        for (uint32_t& track : thread.nvtxTracks)
            track = in.nvtxTracks[track];
    }
    for (size_t t = 0; t < s.m_apiTracks.size(); ++t) {
        ApiTrack& track = m_out.m_apiTracks[in.apiTracks[t]];
        track = std::move(s.m_apiTracks[t]);
        track.m_thread = in.threads[track.m_thread];
        shiftTimes(track, shiftOf(in.apiSource[t]));
        rename(track.m_name);
        for (EventRef& op : track.m_ops)
            op.track = in.gpuTracks[op.track];
    }
    for (size_t t = 0; t < s.m_nvtxTracks.size(); ++t) {
        NvtxTrack& track = m_out.m_nvtxTracks[in.nvtxTracks[t]];
        track = std::move(s.m_nvtxTracks[t]);
        track.m_thread = in.threads[track.m_thread];
        shiftTimes(track, shiftOf(in.nvtxSource[t]));
        rename(track.m_name);
        rename(track.m_domain);
    }
    for (size_t st = 0; st < in.streams.size(); ++st) {
        for (uint32_t& track : m_out.m_streams[in.streams[st]].gpuTracks)
            track = in.gpuTracks[track];
    }
    for (size_t t = 0; t < s.m_gpuTracks.size(); ++t) {
        GpuTrack& track = m_out.m_gpuTracks[in.gpuTracks[t]];
        track = std::move(s.m_gpuTracks[t]);
        track.m_stream = in.streams[track.m_stream];
        track.m_deviceId = in.deviceIds.at(track.m_deviceId);
        shiftTimes(track, shiftOf(in.gpuSource[t]));
        rename(track.m_name);
        for (size_t i = 0; i < track.size(); ++i)
            track.m_detail[i] += track.kind(i) == GpuOpKind::Kernel ? in.configBase : in.memOpBase;
        for (EventRef& launch : track.m_launch) {
            if (launch.valid())
                launch.track = in.apiTracks[launch.track];
        }
    }
    for (SyncEvent sync : s.m_syncs) {
        // CUPTI gives a sync no process: it belongs where its API call is (a file has one process).
        const uint32_t local = sync.apiCall.valid() ? in.apiSource[sync.apiCall.track] : 0;
        const int64_t shift = shiftOf(local);
        sync.start += shift;
        sync.end += shift;
        if (sync.apiCall.valid())
            sync.apiCall.track = in.apiTracks[sync.apiCall.track];
        m_out.m_syncs.push_back(sync);
    }
    // Call stacks: chain ids after those already merged, each call keyed by its new source.
    if (!s.m_callchains.empty()) {
        const Callchains& from = s.m_callchains;
        Callchains& to = m_out.m_callchains;
        uint32_t chainBase = 0;
        for (const auto& [id, range] : to.m_chains)
            chainBase = std::max(chainBase, id);
        uint32_t highest = 0;
        for (const auto& [id, range] : from.m_chains)
            highest = std::max(highest, id);
        // Ids are read as 32 bits; a session whose ids would overflow keeps the first ones.
        if (uint64_t(chainBase) + highest <= UINT32_MAX) {
            const auto frameBase = static_cast<uint32_t>(to.m_frames.size());
            for (CallFrame f : from.m_frames) {
                f.function = in.names[f.function];
                f.file = in.names[f.file];
                to.m_frames.push_back(f);
            }
            for (const auto& [id, range] : from.m_chains)
                to.m_chains[chainBase + id] = {frameBase + range.first, frameBase + range.second};
            for (const auto& [key, chain] : from.m_byCorrelation) {
                const auto local = static_cast<uint32_t>(key >> 32);
                if (local < in.unitOf.size())
                    to.m_byCorrelation[Callchains::callKey(
                        in.unitOf[local], static_cast<uint32_t>(key))] = chainBase + chain;
            }
        }
    }
    // CPU samples of a file of one process (a rank's trace): its threads under the session's
    // ids and clock, its stacks after those already merged.
    if (!s.m_cpuSamples.empty() && s.m_sources.size() == 1) {
        const CpuSamples& from = s.m_cpuSamples;
        CpuSamples& to = m_out.m_cpuSamples;
        const auto stackBase = static_cast<uint32_t>(to.stackCount());
        const auto frameBase = static_cast<uint32_t>(to.m_frames.size());
        if (to.m_stackBegin.empty())
            to.m_stackBegin.push_back(0);
        for (CallFrame f : from.m_frames) {
            f.function = in.names[f.function];
            f.file = in.names[f.file];
            to.m_frames.push_back(f);
        }
        for (size_t k = 1; k < from.m_stackBegin.size(); ++k)
            to.m_stackBegin.push_back(frameBase + from.m_stackBegin[k]);
        const uint32_t unit = in.unitOf[0];
        const int64_t idShift = int64_t(unit) * (int64_t(1) << kSourceShift);
        const int64_t shift = shiftOf(0);
        for (ThreadCpuActivity t : from.m_threads) {
            t.globalTid += idShift;
            t.name = in.names[t.name];
            for (int64_t& time : t.stateTimes)
                time += shift;
            for (int64_t& time : t.sampleTimes)
                time += shift;
            for (uint32_t& stack : t.sampleStacks)
                stack = stack == UINT32_MAX ? stack : stackBase + stack;
            to.m_threads.push_back(std::move(t));
        }
    }
    m_out.m_kernelCount += s.m_kernelCount;
    m_out.m_memcpyCount += s.m_memcpyCount;
    m_out.m_memsetCount += s.m_memsetCount;
    m_out.m_allowedOverlapCount += s.m_allowedOverlapCount;
    s = TraceStore();
}

void TraceSession::Merger::finish() {
    std::stable_sort(m_out.m_syncs.begin(), m_out.m_syncs.end(),
                     [](const SyncEvent& a, const SyncEvent& b) { return a.start < b.start; });
    std::sort(m_out.m_cpuSamples.m_threads.begin(), m_out.m_cpuSamples.m_threads.end(),
              [](const ThreadCpuActivity& a, const ThreadCpuActivity& b) {
                  return a.globalTid < b.globalTid;
              });
    bool haveTime = false;
    for (const Unit& u : m_units) {
        if (!u.haveTime)
            continue;
        const int64_t begin = u.begin + u.source.clockOffset;
        const int64_t end = u.end + u.source.clockOffset;
        m_out.m_beginTime = haveTime ? std::min(m_out.m_beginTime, begin) : begin;
        m_out.m_endTime = haveTime ? std::max(m_out.m_endTime, end) : end;
        haveTime = true;
    }
    // nvtxtrack.h: a range never closed ends at the end of the trace, now the session's.
    for (NvtxTrack& track : m_out.m_nvtxTracks) {
        if (!track.empty() && track.isUnclosed(track.size() - 1))
            track.m_end.back() = std::max(track.m_end.back(), m_out.m_endTime);
    }

    std::map<int, std::vector<std::string>> filesOfRank;
    for (const Unit& u : m_units) {
        const TraceSource& source = u.source;
        const std::string label = source.label();
        for (const std::string& warning : source.warnings)
            m_out.m_warnings.push_back(label + ": " + warning);
        if (source.alignment == ClockAlignment::WallClock)
            m_out.m_warnings.push_back(
                label + ": no clock shared with " + m_units.front().source.label() +
                " and no communication kernel to align by: placed by its wall-clock start time, "
                "which hosts agree on only to about a millisecond.");
        else if (source.alignment == ClockAlignment::Unaligned)
            m_out.m_warnings.push_back(
                label + ": nothing to align its clock by (no clock shared with " +
                m_units.front().source.label() +
                ", no communication kernel, no wall-clock start time): its times are shown as "
                "recorded.");
        if (source.rank >= 0)
            filesOfRank[source.rank].push_back(
                std::filesystem::path(source.path).filename().string());
    }
    for (const auto& [rank, files] : filesOfRank) {
        if (files.size() < 2)
            continue;
        std::string list;
        for (const std::string& file : files)
            list += (list.empty() ? "" : ", ") + file;
        m_out.m_warnings.push_back("rank " + std::to_string(rank) + " is in " +
                                   std::to_string(files.size()) + " files (" + list +
                                   "): they may come from different jobs.");
    }
    for (Unit& u : m_units)
        m_out.m_sources.push_back(std::move(u.source));
    m_out.m_path = m_out.m_sources.front().path;
    m_out.m_meta = m_out.m_sources.front().meta;
}

TraceStore TraceSession::Merger::run() {
    if (m_inputs.empty())
        throw TraceError(TraceError::Kind::NotFound, "no trace files to open");
    for (Input& in : m_inputs)
        prepare(in);
    if (m_inputs.size() == 1)
        return std::move(m_inputs.front().store);

    for (size_t i = 0; i < m_inputs.size(); ++i) {
        const TraceStore& s = m_inputs[i].store;
        for (uint32_t local = 0; local < s.m_sources.size(); ++local) {
            Unit u;
            u.input = i;
            u.local = local;
            u.source = s.m_sources[local];
            u.oldOffset = u.source.clockOffset;
            m_units.push_back(std::move(u));
        }
    }
    std::stable_sort(m_units.begin(), m_units.end(),
                     [](const Unit& a, const Unit& b) { return sourceBefore(a.source, b.source); });
    for (size_t k = 0; k < m_units.size(); ++k) {
        Input& in = m_inputs[m_units[k].input];
        in.unitOf.resize(in.store.m_sources.size());
        in.unitOf[m_units[k].local] = static_cast<uint32_t>(k);
    }
    for (size_t i = 0; i < m_inputs.size(); ++i)
        measure(i);
    align();

    const TraceStore& first = m_inputs[m_units.front().input].store;
    m_out.m_origin = first.m_origin;
    m_out.m_formatVersion = first.m_formatVersion;
    assign();
    for (Input& in : m_inputs)
        moveTracks(in);
    finish();
    return std::move(m_out);
}

TraceStore TraceSession::merge(std::vector<TraceStore> stores) {
    return Merger(std::move(stores)).run();
}

TraceStore TraceSession::open(const std::vector<std::string>& paths,
                              const TraceLoader::Options& options) {
    if (paths.empty())
        throw TraceError(TraceError::Kind::NotFound, "no trace files to open");
    const size_t n = paths.size();
    // Progress over all files together, each weighted by its size.
    std::vector<double> weight(n, 1.0);
    double totalWeight = 0;
    for (size_t i = 0; i < n; ++i) {
        std::error_code ec;
        const auto size = std::filesystem::file_size(paths[i], ec);
        if (!ec && size > 0)
            weight[i] = static_cast<double>(size);
        totalWeight += weight[i];
    }
    std::vector<double> done(n, 0.0);
    std::mutex progressMutex;
    double reported = 0;
    std::atomic<bool> stop{false};
    bool cancelled = false; // by the caller's progress callback
    const auto report = [&](size_t i, double fraction) {
        if (stop)
            return false;
        if (!options.progress)
            return true;
        const std::lock_guard lock(progressMutex);
        done[i] = fraction;
        double sum = 0;
        for (size_t j = 0; j < n; ++j)
            sum += weight[j] * done[j];
        reported = std::max(reported, sum / totalWeight);
        if (!options.progress(kLoadShare * reported)) {
            cancelled = true;
            stop = true;
            return false;
        }
        return true;
    };

    std::vector<TraceStore> stores(n);
    std::vector<std::exception_ptr> errors(n);
    std::atomic<size_t> next{0};
    const auto work = [&] {
        for (size_t i = next++; i < n && !stop; i = next++) {
            try {
                TraceLoader::Options fileOptions = options;
                fileOptions.progress = [&report, i](double f) { return report(i, f); };
                stores[i] = TraceOpener::open(paths[i], fileOptions);
            } catch (...) {
                errors[i] = std::current_exception();
                stop = true; // one file failed: the session fails, stop the others early
            }
        }
    };
    // Each load reads on two threads of its own (traceloader.h).
    const size_t workers = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, n);
    {
        std::vector<std::jthread> pool;
        for (size_t w = 1; w < workers; ++w)
            pool.emplace_back(work);
        work();
    }
    if (cancelled)
        throw LoadCancelled();
    for (size_t i = 0; i < n; ++i) {
        if (!errors[i])
            continue;
        try {
            std::rethrow_exception(errors[i]);
        } catch (const LoadCancelled&) {
            continue; // stopped because another file failed
        } catch (const TraceError& e) {
            const std::string what = e.what();
            const std::string name = std::filesystem::path(paths[i]).filename().string();
            if (what.find(name) != std::string::npos)
                throw;
            throw TraceError(e.kind(), paths[i] + ": " + what);
        }
    }
    if (options.progress && !options.progress(kLoadShare))
        throw LoadCancelled();
    TraceStore store = merge(std::move(stores));
    if (options.progress && !options.progress(1.0))
        throw LoadCancelled();
    return store;
}

std::vector<std::string> TraceSession::expandPaths(const std::vector<std::string>& paths) {
    namespace fs = std::filesystem;
    std::vector<std::string> files;
    for (const std::string& path : paths) {
        std::error_code ec;
        const fs::file_status status = fs::status(path, ec);
        if (!fs::exists(status))
            throw TraceError(TraceError::Kind::NotFound, path + ": no such file or folder");
        if (!fs::is_directory(status)) {
            files.push_back(path);
            continue;
        }
        std::vector<fs::path> found;
        fs::directory_iterator it(path, ec);
        for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
            std::error_code fileError;
            if (it->is_regular_file(fileError) && isTraceFileName(it->path().filename().string()))
                found.push_back(it->path());
        }
        if (ec)
            throw TraceError(TraceError::Kind::NotFound,
                             "cannot read the folder " + path + ": " + ec.message());
        if (found.empty())
            throw TraceError(TraceError::Kind::NotATrace,
                             path + " is a directory, not a Warpline or Nsight Systems trace, "
                                    "and holds no trace files (*.warpline, *.sqlite, *.json, "
                                    "*.json.gz)");
        std::sort(found.begin(), found.end(), [](const fs::path& a, const fs::path& b) {
            return a.filename().string() < b.filename().string();
        });
        for (const fs::path& file : found)
            files.push_back(file.string());
    }
    return files;
}

} // namespace warpline::model
