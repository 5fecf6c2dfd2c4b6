#include "gpureaders.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>

namespace warpline::model {

namespace {

// ENUM_CUDA_MEMCPY_OPER labels; nsys names memcpy operations "[CUDA memcpy <label>]".
std::string memcpyOperationName(int64_t copyKind) {
    static const char* const labels[] = {"Unknown",         "Host-to-Device",  "Device-to-Host",
                                         "Host-to-Array",   "Array-to-Host",   "Array-to-Array",
                                         "Array-to-Device", "Device-to-Array", "Device-to-Device",
                                         "Host-to-Host",    "Peer-to-Peer"};
    const char* label = (copyKind >= 0 && copyKind < 11) ? labels[copyKind] : "Unknown";
    return std::string("[CUDA memcpy ") + label + "]";
}

// The store's launch configurations, each once: add() gives the index of an equal one already
// there, or appends it.
class KernelConfigIndex {
public:
    explicit KernelConfigIndex(std::vector<KernelConfig>& configs) : m_configs(configs) {}

    uint32_t add(const KernelConfig& c) {
        const auto key = std::make_tuple(
            c.deviceId, c.contextId, c.demangledName, c.shortName, c.mangledName, c.gridX, c.gridY,
            c.gridZ, c.blockX, c.blockY, c.blockZ, c.registersPerThread, c.staticSharedMemory,
            c.dynamicSharedMemory, c.launchType, c.sharedMemoryExecuted);
        const auto [it, inserted] = m_index.emplace(key, static_cast<uint32_t>(m_configs.size()));
        if (inserted)
            m_configs.push_back(c);
        return it->second;
    }

private:
    std::vector<KernelConfig>& m_configs;
    std::map<std::tuple<uint32_t, uint32_t, NameId, NameId, NameId, int32_t, int32_t, int32_t,
                        int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t>,
             uint32_t>
        m_index;
};

} // namespace

// Measured in bench/: see docs/analyses.md "Loading".
void readKernelsFast(const ReadSource& in, TraceStrings& strings,
                     const std::vector<ProcessInfo>& processes, std::vector<KernelConfig>& configs,
                     LoadStage& stage) {
    KernelConfigIndex index(configs);
    std::unordered_map<int64_t, uint32_t> fileConfigs;   // file config id -> store config index
    if (in.schema.hasTable("WARPLINE_KERNEL_CONFIGS")) { // without it every config is unknown
        Statement st(in.db,
                     in.select("WARPLINE_KERNEL_CONFIGS",
                               {"id", "deviceId", "contextId", "demangledName", "shortName",
                                "mangledName", "gridX", "gridY", "gridZ", "blockX", "blockY",
                                "blockZ", "registersPerThread", "staticSharedMemory",
                                "dynamicSharedMemory", "launchType", "sharedMemoryExecuted"}));
        while (st.step()) {
            KernelConfig c;
            c.deviceId = static_cast<uint32_t>(st.i64(1));
            c.contextId = static_cast<uint32_t>(st.i64(2));
            c.demangledName = strings.name(st.i64(3));
            c.shortName = strings.name(st.i64(4));
            c.mangledName = st.isNull(5) ? kNoName : strings.name(st.i64(5));
            c.gridX = static_cast<int32_t>(st.i64(6));
            c.gridY = static_cast<int32_t>(st.i64(7));
            c.gridZ = static_cast<int32_t>(st.i64(8));
            c.blockX = static_cast<int32_t>(st.i64(9));
            c.blockY = static_cast<int32_t>(st.i64(10));
            c.blockZ = static_cast<int32_t>(st.i64(11));
            c.registersPerThread = static_cast<int32_t>(st.i64(12));
            c.staticSharedMemory = static_cast<int32_t>(st.i64(13));
            c.dynamicSharedMemory = static_cast<int32_t>(st.i64(14));
            c.launchType = static_cast<int32_t>(st.i64(15));
            c.sharedMemoryExecuted = static_cast<int32_t>(st.i64(16));
            fileConfigs[st.i64(0)] = index.add(c);
        }
    }
    // Config ids count up from 0: look them up per kernel in an array, not the hash.
    std::vector<uint32_t> dense;
    for (const auto& [id, config] : fileConfigs) {
        if (id < 0 || id >= (int64_t(1) << 24))
            continue;
        if (static_cast<size_t>(id) >= dense.size())
            dense.resize(static_cast<size_t>(id) + 1, kUnresolved);
        dense[static_cast<size_t>(id)] = config;
    }
    // The view gives every kernel the first process's globalPid; so does this path.
    const uint32_t pid = processes.empty() ? kUnknownPid : pidOf(processes.front().globalPid);
    const auto st = in.rows("WARPLINE_KERNELS",
                            {"start", "end", "streamId", "correlationId", "configId", "graphId"});
    int64_t lastConfigId = std::numeric_limits<int64_t>::min();
    int64_t lastStreamId = std::numeric_limits<int64_t>::min();
    uint32_t config = 0;
    StreamStage* current = nullptr;
    // Streams are few: a short list beats the map lookup per row.
    struct CachedStream {
        uint32_t device, context, stream;
        StreamStage* stage;
    };
    std::vector<CachedStream> streams;
    while (st->step()) {
        in.progress.rowRead();
        const int64_t start = st->i64(0);
        const int64_t end = st->i64(1);
        if (!stage.keepSpan(start, end, st->isNull(0, start), st->isNull(1, end),
                            "CUPTI_ACTIVITY_KIND_KERNEL"))
            continue;
        const int64_t configId = st->i64(4);
        const int64_t streamId = st->i64(2);
        if (configId != lastConfigId || !current || streamId != lastStreamId) {
            const bool inDense = configId >= 0 && static_cast<uint64_t>(configId) < dense.size();
            const auto it = inDense ? fileConfigs.end() : fileConfigs.find(configId);
            if (inDense ? dense[static_cast<size_t>(configId)] == kUnresolved
                        : it == fileConfigs.end()) {
                ++stage.unknownConfigs;
                continue;
            }
            config = inDense ? dense[static_cast<size_t>(configId)] : it->second;
            const KernelConfig& c = configs[config];
            const auto sid = static_cast<uint32_t>(streamId);
            const auto cached =
                std::find_if(streams.begin(), streams.end(), [&](const CachedStream& x) {
                    return x.stream == sid && x.device == c.deviceId && x.context == c.contextId;
                });
            if (cached != streams.end()) {
                current = cached->stage;
            } else {
                current = &stage.stream(c.deviceId, c.contextId, sid, pid);
                if (streams.size() < kReservedStages)
                    current->ops.expect(stage.expected.kernels);
                streams.push_back({c.deviceId, c.contextId, sid, current});
            }
            lastConfigId = configId;
            lastStreamId = streamId;
        }
        stage.noteTime(start, end);
        current->ops.add(GpuRow{
            start, end, configs[config].demangledName, static_cast<uint32_t>(st->i64(3)), config,
            static_cast<uint32_t>(st->i64(5)), static_cast<uint8_t>(GpuOpKind::Kernel)});
    }
}

void readKernelsGeneric(const ReadSource& in, TraceStrings& strings,
                        std::vector<KernelConfig>& configs, LoadStage& stage) {
    KernelConfigIndex index(configs);
    const char* table = "CUPTI_ACTIVITY_KIND_KERNEL";
    const auto st = in.rows(table, {"start",
                                    "end",
                                    "deviceId",
                                    "contextId",
                                    "streamId",
                                    "correlationId",
                                    "globalPid",
                                    "demangledName",
                                    "shortName",
                                    "mangledName",
                                    "gridX",
                                    "gridY",
                                    "gridZ",
                                    "blockX",
                                    "blockY",
                                    "blockZ",
                                    "registersPerThread",
                                    "staticSharedMemory",
                                    "dynamicSharedMemory",
                                    "launchType",
                                    "graphId",
                                    "sharedMemoryExecuted"});
    while (st->step()) {
        in.progress.rowRead();
        const int64_t start = st->i64(0);
        const int64_t end = st->i64(1);
        if (!stage.keepSpan(start, end, st->isNull(0, start), st->isNull(1, end), table))
            continue;
        KernelConfig c;
        c.deviceId = static_cast<uint32_t>(st->i64(2));
        c.contextId = static_cast<uint32_t>(st->i64(3));
        c.demangledName = strings.name(st->i64(7));
        c.shortName = st->isNull(8) ? c.demangledName : strings.name(st->i64(8));
        c.mangledName = st->isNull(9) ? kNoName : strings.name(st->i64(9));
        c.gridX = static_cast<int32_t>(st->i64(10));
        c.gridY = static_cast<int32_t>(st->i64(11));
        c.gridZ = static_cast<int32_t>(st->i64(12));
        c.blockX = static_cast<int32_t>(st->i64(13));
        c.blockY = static_cast<int32_t>(st->i64(14));
        c.blockZ = static_cast<int32_t>(st->i64(15));
        c.registersPerThread = static_cast<int32_t>(st->i64(16));
        c.staticSharedMemory = static_cast<int32_t>(st->i64(17));
        c.dynamicSharedMemory = static_cast<int32_t>(st->i64(18));
        c.launchType = static_cast<int32_t>(st->i64(19));
        c.sharedMemoryExecuted = static_cast<int32_t>(st->i64(21));
        const uint32_t config = index.add(c);
        const uint32_t pid = st->isNull(6) ? kUnknownPid : pidOf(st->i64(6));
        stage.noteTime(start, end);
        stage.stream(c.deviceId, c.contextId, static_cast<uint32_t>(st->i64(4)), pid)
            .ops.add(GpuRow{start, end, c.demangledName, static_cast<uint32_t>(st->i64(5)), config,
                            static_cast<uint32_t>(st->i64(20)),
                            static_cast<uint8_t>(GpuOpKind::Kernel)});
    }
}

void readMemcpy(const ReadSource& in, TraceStrings& strings, std::vector<MemOpInfo>& memOps,
                LoadStage& stage) {
    const char* table = "CUPTI_ACTIVITY_KIND_MEMCPY";
    if (!in.schema.hasTable(table))
        return;
    const auto st =
        in.rows(table, {"start", "end", "deviceId", "contextId", "streamId", "correlationId",
                        "globalPid", "bytes", "copyKind", "srcKind", "dstKind"});
    std::unordered_map<int64_t, NameId> names;
    while (st->step()) {
        in.progress.rowRead();
        const int64_t start = st->i64(0);
        const int64_t end = st->i64(1);
        if (!stage.keepSpan(start, end, st->isNull(0, start), st->isNull(1, end), table))
            continue;
        const int64_t copyKind = st->i64(8);
        auto name = names.find(copyKind);
        if (name == names.end())
            name = names.emplace(copyKind, strings.intern(memcpyOperationName(copyKind))).first;
        MemOpInfo info;
        info.bytes = static_cast<uint64_t>(st->i64(7));
        info.copyKind = static_cast<uint8_t>(copyKind);
        info.srcKind = static_cast<uint8_t>(st->i64(9));
        info.dstKind = static_cast<uint8_t>(st->i64(10));
        const auto detail = static_cast<uint32_t>(memOps.size());
        memOps.push_back(info);
        const uint32_t pid = st->isNull(6) ? kUnknownPid : pidOf(st->i64(6));
        stage.noteTime(start, end);
        stage
            .stream(static_cast<uint32_t>(st->i64(2)), static_cast<uint32_t>(st->i64(3)),
                    static_cast<uint32_t>(st->i64(4)), pid)
            .ops.add(GpuRow{start, end, name->second, static_cast<uint32_t>(st->i64(5)), detail, 0,
                            static_cast<uint8_t>(GpuOpKind::Memcpy)});
    }
}

void readMemset(const ReadSource& in, TraceStrings& strings, std::vector<MemOpInfo>& memOps,
                LoadStage& stage) {
    const char* table = "CUPTI_ACTIVITY_KIND_MEMSET";
    if (!in.schema.hasTable(table))
        return;
    const auto st = in.rows(table, {"start", "end", "deviceId", "contextId", "streamId",
                                    "correlationId", "globalPid", "bytes", "value", "memKind"});
    const NameId name = strings.intern("[CUDA memset]");
    while (st->step()) {
        in.progress.rowRead();
        const int64_t start = st->i64(0);
        const int64_t end = st->i64(1);
        if (!stage.keepSpan(start, end, st->isNull(0, start), st->isNull(1, end), table))
            continue;
        MemOpInfo info;
        info.bytes = static_cast<uint64_t>(st->i64(7));
        info.value = static_cast<uint32_t>(st->i64(8));
        info.dstKind = static_cast<uint8_t>(st->i64(9));
        const auto detail = static_cast<uint32_t>(memOps.size());
        memOps.push_back(info);
        const uint32_t pid = st->isNull(6) ? kUnknownPid : pidOf(st->i64(6));
        stage.noteTime(start, end);
        stage
            .stream(static_cast<uint32_t>(st->i64(2)), static_cast<uint32_t>(st->i64(3)),
                    static_cast<uint32_t>(st->i64(4)), pid)
            .ops.add(GpuRow{start, end, name, static_cast<uint32_t>(st->i64(5)), detail, 0,
                            static_cast<uint8_t>(GpuOpKind::Memset)});
    }
}

void readSyncs(const ReadSource& in, std::vector<SyncEvent>& syncs, LoadStage& stage) {
    const char* table = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
    if (!in.schema.hasTable(table))
        return;
    const auto st =
        in.rows(table, {"start", "end", "contextId", "streamId", "correlationId", "syncType"});
    while (st->step()) {
        in.progress.rowRead();
        const int64_t start = st->i64(0);
        const int64_t end = st->i64(1);
        if (!stage.keepSpan(start, end, st->isNull(0, start), st->isNull(1, end), table))
            continue;
        SyncEvent s;
        s.start = start;
        s.end = end;
        s.contextId = static_cast<uint32_t>(st->i64(2));
        s.streamId = st->isNull(3) ? -1 : st->i64(3);
        s.correlationId = static_cast<uint32_t>(st->i64(4));
        s.syncType = static_cast<uint8_t>(st->i64(5));
        stage.noteTime(start, end);
        syncs.push_back(s);
    }
    std::stable_sort(syncs.begin(), syncs.end(),
                     [](const SyncEvent& a, const SyncEvent& b) { return a.start < b.start; });
}

void readGpuMetrics(const ReadSource& in, std::vector<GpuMetricSamples>& sets,
                    std::vector<std::string>& warnings) {
    if (!in.schema.hasTable("GPU_METRICS") || !in.schema.hasTable("TARGET_INFO_GPU_METRICS"))
        return;
    constexpr size_t kMaxMetrics = 512;
    std::map<std::pair<int64_t, int64_t>, std::pair<size_t, uint32_t>> index; // -> (set, metric)
    {
        Statement st(in.db,
                     in.select("TARGET_INFO_GPU_METRICS", {"typeId", "metricId", "metricName"}));
        while (st.step() && index.size() < kMaxMetrics) {
            const std::pair<int64_t, int64_t> key{st.i64(0), st.i64(1)};
            if (index.count(key))
                continue;
            const auto device = static_cast<uint32_t>(key.first & 0xFF);
            size_t set = 0;
            while (set < sets.size() && sets[set].deviceId != device)
                ++set;
            if (set == sets.size())
                sets.emplace_back().deviceId = device;
            GpuMetricSeries series;
            series.name = std::string(st.text(2)).substr(0, 200);
            splitMetricName(series);
            index[key] = {set, static_cast<uint32_t>(sets[set].metrics.size())};
            sets[set].metrics.push_back(std::move(series));
        }
    }
    if (index.empty())
        return;
    struct Raw {
        int64_t time;
        uint32_t metric;
        float value;
    };
    std::vector<std::vector<Raw>> raw(sets.size());
    uint64_t skipped = 0;
    {
        Statement st(in.db, in.select("GPU_METRICS", {"timestamp", "typeId", "metricId", "value"}));
        while (st.step()) {
            in.progress.rowRead();
            const int64_t t = st.i64(0);
            const auto it = index.find({st.i64(1), st.i64(2)});
            if (st.isNull(0, t) || !plausibleTime(t) || it == index.end()) {
                ++skipped;
                continue;
            }
            raw[it->second.first].push_back({t, it->second.second, static_cast<float>(st.f64(3))});
        }
    }
    for (size_t set = 0; set < sets.size(); ++set) {
        std::vector<Raw>& rows = raw[set];
        std::stable_sort(rows.begin(), rows.end(),
                         [](const Raw& a, const Raw& b) { return a.time < b.time; });
        GpuMetricSamples& out = sets[set];
        for (const Raw& r : rows) {
            if (out.times.empty() || out.times.back() != r.time) {
                out.times.push_back(r.time);
                for (auto& m : out.metrics)
                    m.values.push_back(std::nanf(""));
            }
            out.metrics[r.metric].values.back() = r.value;
        }
        std::vector<int64_t> gaps;
        for (size_t i = 1; i < out.times.size(); ++i)
            gaps.push_back(out.times[i] - out.times[i - 1]);
        if (!gaps.empty()) {
            std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
            // At most 1000 s: a crafted file's spacing must not overflow sampleBegin().
            out.interval = std::min<int64_t>(gaps[gaps.size() / 2], 1'000'000'000'000);
        }
    }
    sets.erase(std::remove_if(sets.begin(), sets.end(),
                              [](const GpuMetricSamples& s) { return s.times.empty(); }),
               sets.end());
    if (skipped > 0)
        warnings.push_back("Skipped " + std::to_string(skipped) +
                           " GPU_METRICS rows (no time, a time out of range, or a metric "
                           "TARGET_INFO_GPU_METRICS does not name).");
}

} // namespace warpline::model
