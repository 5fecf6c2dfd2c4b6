#include "chromeexport.h"

#include "outputfile.h"
#include "runahead.h"
#include "tablewriter.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <vector>

namespace warpline::model {

namespace {

constexpr size_t kFlushBytes = 1 << 20;
constexpr uint64_t kProgressEvery = 1 << 18;
// Rows that are not an OS thread (NVTX rows, extra API depths, GPU lanes) get tids from here up:
// Linux tids stay below 2^22.
constexpr uint32_t kSyntheticTidBase = 1u << 22;

// Every span of `inner` lies inside a span of `outer`, so the two rows can share one Chrome
// thread: complete events on one thread must nest.
bool nestsInside(const SpanTrack& inner, const SpanTrack& outer) {
    size_t j = 0;
    for (size_t i = 0; i < inner.size(); ++i) {
        while (j < outer.size() && outer.end(j) < inner.start(i))
            ++j;
        if (j == outer.size() || outer.start(j) > inner.start(i) || outer.end(j) < inner.end(i))
            return false;
    }
    return true;
}

template <typename Track>
bool nestsAsStack(const std::vector<Track>& tracks, const std::vector<uint32_t>& rows) {
    for (size_t d = 1; d < rows.size(); ++d) {
        if (!nestsInside(tracks[rows[d]], tracks[rows[d - 1]]))
            return false;
    }
    return true;
}

struct ChromeThread {
    uint32_t pid = 0;
    uint32_t tid = 0;
    std::string name;
};

class ChromeWriter {
public:
    ChromeWriter(std::ostream& out, const TraceStore& store, const ChromeExportOptions& options)
        : m_out(out), m_store(store), m_options(options),
          m_base(options.base ? *options.base : std::min<int64_t>(0, store.beginTime())),
          m_escaped(store.strings().size()), m_total(std::max<uint64_t>(1, store.eventCount())) {
        m_buffer.reserve(kFlushBytes + 4096);
    }

    ChromeExportCounts write() {
        assignRows();
        m_buffer += "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"Warpline\","
                    "\"source\":";
        m_buffer += jsonString(m_store.path());
        m_buffer += ",\"timeBaseNs\":";
        appendInt(m_base);
        m_buffer += "},\"deviceProperties\":[";
        writeDeviceProperties();
        m_buffer += "],\"traceEvents\":[";
        writeMetadata();
        writeApiCalls();
        writeNvtx();
        writeGpuOps();
        if (m_options.queueDepth)
            writeQueueDepth();
        m_buffer += "\n]}\n";
        flush();
        m_out.flush();
        if (!m_out)
            throw std::runtime_error("writing the Chrome trace failed");
        return m_counts;
    }

private:
    // --- rows -------------------------------------------------------------------------------
    uint32_t syntheticTid(uint32_t pid) {
        auto [it, inserted] = m_nextTid.try_emplace(pid, kSyntheticTidBase);
        if (inserted) {
            for (const ThreadInfo& t : m_store.threads()) {
                if (t.pid == pid)
                    it->second = std::max(it->second, t.tid + 1);
            }
        }
        return it->second++;
    }

    uint32_t addRow(uint32_t pid, uint32_t tid, std::string name) {
        m_rows.push_back({pid, tid, std::move(name)});
        return static_cast<uint32_t>(m_rows.size() - 1);
    }

    std::string threadLabel(const ThreadInfo& t) const {
        const std::string& name = m_store.text(t.name);
        return (name.empty() ? std::string("Thread") : name) + " " + std::to_string(t.tid);
    }

    void assignRows() {
        const auto& threads = m_store.threads();
        m_apiRow.assign(m_store.apiTracks().size(), 0);
        m_nvtxRow.assign(m_store.nvtxTracks().size(), 0);
        m_gpuRow.assign(m_store.gpuTracks().size(), 0);
        std::set<uint32_t> pids;
        for (const ThreadInfo& t : threads) {
            pids.insert(t.pid);
            const std::string label = threadLabel(t);
            // NVTX rows above the thread's API row, as in Nsight Systems.
            std::vector<uint32_t> pushPop;
            for (const uint32_t track : t.nvtxTracks) {
                if (m_store.nvtxTracks()[track].style() == NvtxStyle::PushPop)
                    pushPop.push_back(track);
            }
            std::sort(pushPop.begin(), pushPop.end(), [&](uint32_t a, uint32_t b) {
                return m_store.nvtxTracks()[a].depth() < m_store.nvtxTracks()[b].depth();
            });
            const bool pushPopNests = nestsAsStack(m_store.nvtxTracks(), pushPop);
            uint32_t sharedPushPop = EventRef::kNone;
            for (const uint32_t track : t.nvtxTracks) {
                const NvtxTrack& nvtx = m_store.nvtxTracks()[track];
                if (nvtx.style() == NvtxStyle::PushPop && pushPopNests) {
                    if (sharedPushPop == EventRef::kNone)
                        sharedPushPop = addRow(t.pid, syntheticTid(t.pid), "NVTX " + label);
                    m_nvtxRow[track] = sharedPushPop;
                    continue;
                }
                const std::string kind = nvtx.style() == NvtxStyle::Mark       ? "marks"
                                         : nvtx.style() == NvtxStyle::StartEnd ? "start/end lane "
                                                                               : "depth ";
                const std::string suffix =
                    nvtx.style() == NvtxStyle::Mark ? "" : std::to_string(nvtx.depth());
                m_nvtxRow[track] =
                    addRow(t.pid, syntheticTid(t.pid), "NVTX " + label + " " + kind + suffix);
            }
            const bool apiNests = nestsAsStack(m_store.apiTracks(), t.apiTracks);
            for (size_t d = 0; d < t.apiTracks.size(); ++d) {
                if (d == 0)
                    m_apiRow[t.apiTracks[d]] = addRow(t.pid, t.tid, label);
                else if (apiNests)
                    m_apiRow[t.apiTracks[d]] = m_apiRow[t.apiTracks[0]];
                else
                    m_apiRow[t.apiTracks[d]] = addRow(t.pid, syntheticTid(t.pid),
                                                      label + " API depth " + std::to_string(d));
            }
            if (t.apiTracks.empty() && t.nvtxTracks.empty())
                addRow(t.pid, t.tid, label);
        }
        for (const uint32_t pid : pids)
            m_processes.push_back({pid, processName(pid)});

        std::map<uint32_t, std::set<uint32_t>> usedTids; // by device
        std::map<uint32_t, uint32_t> nextLaneTid;
        std::set<uint32_t> devices;
        for (const DeviceInfo& d : m_store.devices())
            devices.insert(d.id);
        for (const StreamInfo& s : m_store.streams()) {
            devices.insert(s.deviceId);
            const uint32_t pid = kGpuPidBase + s.deviceId;
            const std::string id = "Stream " + std::to_string(s.streamId);
            const std::string& given = m_store.text(s.name);
            const std::string name = given.empty() || given == id ? id : given + " (" + id + ")";
            for (size_t lane = 0; lane < s.gpuTracks.size(); ++lane) {
                uint32_t tid = s.streamId;
                if (lane > 0 || !usedTids[s.deviceId].insert(tid).second) {
                    auto [it, inserted] = nextLaneTid.try_emplace(s.deviceId, kSyntheticTidBase);
                    tid = it->second++;
                }
                m_gpuRow[s.gpuTracks[lane]] =
                    addRow(pid, tid, lane == 0 ? name : name + " lane " + std::to_string(lane));
            }
        }
        for (const uint32_t d : devices)
            m_processes.push_back({kGpuPidBase + d, deviceName(d)});
    }

    std::string processName(uint32_t pid) const {
        for (const ProcessInfo& p : m_store.processes()) {
            if (p.pid == pid && !m_store.text(p.name).empty())
                return m_store.text(p.name) + " " + std::to_string(pid);
        }
        return "Process " + std::to_string(pid);
    }

    std::string deviceName(uint32_t id) const {
        for (const DeviceInfo& d : m_store.devices()) {
            if (d.id == id && !m_store.text(d.name).empty())
                return "GPU " + std::to_string(id) + ": " + m_store.text(d.name);
        }
        return "GPU " + std::to_string(id);
    }

    // --- output primitives ------------------------------------------------------------------
    void flush() {
        m_out.write(m_buffer.data(), static_cast<std::streamsize>(m_buffer.size()));
        m_buffer.clear();
        if (!m_out)
            throw std::runtime_error("writing the Chrome trace failed");
    }

    void beginEvent() {
        if (m_buffer.size() >= kFlushBytes)
            flush();
        m_buffer += m_firstEvent ? "\n{" : ",\n{";
        m_firstEvent = false;
    }

    void eventDone() {
        if (++m_written % kProgressEvery == 0 && m_options.progress &&
            !m_options.progress(std::min(1.0, double(m_written) / double(m_total))))
            throw ExportCancelled();
    }

    void appendInt(int64_t v) {
        char buffer[24];
        const auto result = std::to_chars(buffer, buffer + sizeof buffer, v);
        m_buffer.append(buffer, result.ptr);
    }

    // ns -> microseconds with exactly three decimals.
    void appendMicros(int64_t ns) {
        if (ns < 0) {
            m_buffer += '-';
            ns = -ns;
        }
        appendInt(ns / 1000);
        const int frac = static_cast<int>(ns % 1000);
        m_buffer += '.';
        m_buffer += static_cast<char>('0' + frac / 100);
        m_buffer += static_cast<char>('0' + frac / 10 % 10);
        m_buffer += static_cast<char>('0' + frac % 10);
    }

    void appendName(NameId id) {
        std::string& escaped = m_escaped[id];
        if (escaped.empty())
            escaped = jsonString(m_store.text(id));
        m_buffer += escaped;
    }

    // "pid":P,"tid":T,"ts":...
    void appendWhere(uint32_t row, int64_t start) {
        const ChromeThread& r = m_rows[row];
        m_buffer += ",\"pid\":";
        appendInt(r.pid);
        m_buffer += ",\"tid\":";
        appendInt(r.tid);
        m_buffer += ",\"ts\":";
        appendMicros(start - m_base);
    }

    void appendComplete(const char* category, NameId name, uint32_t row, int64_t start,
                        int64_t end) {
        beginEvent();
        m_buffer += "\"ph\":\"X\",\"cat\":\"";
        m_buffer += category;
        m_buffer += "\",\"name\":";
        appendName(name);
        appendWhere(row, start);
        m_buffer += ",\"dur\":";
        appendMicros(end - start);
    }

    void appendArg(const char* key, int64_t value) {
        m_buffer += ",\"";
        m_buffer += key;
        m_buffer += "\":";
        appendInt(value);
    }

    // Flow ids: one per GPU op, the same on both ends.
    uint64_t flowId(EventRef op) const { return m_gpuTrackBase[op.track] + op.index + 1; }

    void appendFlow(char phase, uint64_t id, uint32_t row, int64_t ts) {
        beginEvent();
        m_buffer += "\"ph\":\"";
        m_buffer += phase;
        m_buffer += "\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":";
        appendInt(static_cast<int64_t>(id));
        appendWhere(row, ts);
        if (phase == 'f')
            m_buffer += ",\"bp\":\"e\"";
        m_buffer += '}';
    }

    void appendMetadata(const char* what, uint32_t pid, const uint32_t* tid, const char* key,
                        const std::string* text, int64_t number) {
        beginEvent();
        m_buffer += "\"ph\":\"M\",\"name\":\"";
        m_buffer += what;
        m_buffer += "\",\"pid\":";
        appendInt(pid);
        if (tid) {
            m_buffer += ",\"tid\":";
            appendInt(*tid);
        }
        m_buffer += ",\"args\":{\"";
        m_buffer += key;
        m_buffer += "\":";
        if (text)
            m_buffer += jsonString(*text);
        else
            appendInt(number);
        m_buffer += "}}";
        ++m_counts.metadata;
    }

    // --- sections ---------------------------------------------------------------------------
    void writeDeviceProperties() {
        bool first = true;
        for (const DeviceInfo& d : m_store.devices()) {
            m_buffer += first ? "{" : ",{";
            first = false;
            m_buffer += "\"id\":";
            appendInt(d.id);
            m_buffer += ",\"name\":";
            m_buffer += jsonString(m_store.text(d.name));
            appendArg("totalGlobalMem", static_cast<int64_t>(d.totalMemory));
            appendArg("computeMajor", d.computeMajor);
            appendArg("computeMinor", d.computeMinor);
            appendArg("numSms", d.smCount);
            appendArg("clockRate", d.clockRate);
            m_buffer += '}';
        }
    }

    void writeMetadata() {
        int64_t sort = 0;
        for (const auto& [pid, name] : m_processes) {
            appendMetadata("process_name", pid, nullptr, "name", &name, 0);
            appendMetadata("process_sort_index", pid, nullptr, "sort_index", nullptr, sort++);
        }
        for (size_t i = 0; i < m_rows.size(); ++i) {
            const ChromeThread& r = m_rows[i];
            appendMetadata("thread_name", r.pid, &r.tid, "name", &r.name, 0);
            appendMetadata("thread_sort_index", r.pid, &r.tid, "sort_index", nullptr,
                           static_cast<int64_t>(i));
        }
    }

    void writeApiCalls() {
        // Flow ids are numbered by GPU track, so both ends agree without a lookup table.
        m_gpuTrackBase.assign(m_store.gpuTracks().size(), 0);
        uint64_t base = 0;
        for (size_t t = 0; t < m_store.gpuTracks().size(); ++t) {
            m_gpuTrackBase[t] = base;
            base += m_store.gpuTracks()[t].size();
        }
        const auto& tracks = m_store.apiTracks();
        for (size_t t = 0; t < tracks.size(); ++t) {
            const ApiTrack& track = tracks[t];
            const uint32_t row = m_apiRow[t];
            for (size_t i = 0; i < track.size(); ++i) {
                const bool driver = track.domain(i) == ApiDomain::Driver;
                appendComplete(driver ? "cuda_driver" : "cuda_runtime", track.name(i), row,
                               track.start(i), track.end(i));
                m_buffer += ",\"args\":{\"correlation\":";
                appendInt(track.correlationId(i));
                appendArg("return value", track.returnValue(i));
                m_buffer += "}}";
                ++m_counts.apiCalls;
                eventDone();
                if (!m_options.flows)
                    continue;
                for (const EventRef op : track.gpuOps(i)) {
                    appendFlow('s', flowId(op), row, track.start(i));
                    ++m_counts.flows;
                }
            }
        }
    }

    void writeNvtx() {
        const auto& tracks = m_store.nvtxTracks();
        for (size_t t = 0; t < tracks.size(); ++t) {
            const NvtxTrack& track = tracks[t];
            const uint32_t row = m_nvtxRow[t];
            for (size_t i = 0; i < track.size(); ++i) {
                if (track.style() == NvtxStyle::Mark) {
                    beginEvent();
                    m_buffer += "\"ph\":\"i\",\"s\":\"t\",\"cat\":\"nvtx\",\"name\":";
                    appendName(track.name(i));
                    appendWhere(row, track.start(i));
                    ++m_counts.nvtxMarks;
                } else {
                    appendComplete("nvtx", track.name(i), row, track.start(i), track.end(i));
                    ++m_counts.nvtxRanges;
                }
                m_buffer += ",\"args\":{\"style\":\"";
                m_buffer += track.style() == NvtxStyle::PushPop    ? "push/pop"
                            : track.style() == NvtxStyle::StartEnd ? "start/end"
                                                                   : "mark";
                m_buffer += '"';
                if (track.domain(i) != kNoName) {
                    m_buffer += ",\"domain\":";
                    appendName(track.domain(i));
                }
                if (track.color(i) != 0) {
                    char color[16];
                    std::snprintf(color, sizeof color, "#%06x", track.color(i) & 0xFFFFFFu);
                    m_buffer += ",\"color\":\"";
                    m_buffer += color;
                    m_buffer += '"';
                }
                if (track.isUnclosed(i))
                    m_buffer += ",\"unclosed\":true";
                m_buffer += "}}";
                eventDone();
            }
        }
    }

    void writeGpuOps() {
        const auto& tracks = m_store.gpuTracks();
        for (size_t t = 0; t < tracks.size(); ++t) {
            const GpuTrack& track = tracks[t];
            const StreamInfo& stream = m_store.streams()[track.streamIndex()];
            const uint32_t row = m_gpuRow[t];
            for (size_t i = 0; i < track.size(); ++i) {
                const GpuOpKind kind = track.kind(i);
                appendComplete(kind == GpuOpKind::Kernel   ? "kernel"
                               : kind == GpuOpKind::Memcpy ? "gpu_memcpy"
                                                           : "gpu_memset",
                               track.name(i), row, track.start(i), track.end(i));
                m_buffer += ",\"args\":{\"correlation\":";
                appendInt(track.correlationId(i));
                appendArg("device", stream.deviceId);
                appendArg("context", stream.contextId);
                appendArg("stream", stream.streamId);
                if (kind == GpuOpKind::Kernel) {
                    const KernelConfig& k = m_store.kernelConfigs()[track.detail(i)];
                    m_buffer += ",\"grid\":[";
                    appendInt(k.gridX);
                    m_buffer += ',';
                    appendInt(k.gridY);
                    m_buffer += ',';
                    appendInt(k.gridZ);
                    m_buffer += "],\"block\":[";
                    appendInt(k.blockX);
                    m_buffer += ',';
                    appendInt(k.blockY);
                    m_buffer += ',';
                    appendInt(k.blockZ);
                    m_buffer += ']';
                    appendArg("registers per thread", k.registersPerThread);
                    appendArg("shared memory",
                              int64_t(k.staticSharedMemory) + int64_t(k.dynamicSharedMemory));
                    appendArg("static shared memory", k.staticSharedMemory);
                    appendArg("dynamic shared memory", k.dynamicSharedMemory);
                } else {
                    const MemOpInfo& m = m_store.memOps()[track.detail(i)];
                    appendArg("bytes", static_cast<int64_t>(m.bytes));
                    if (kind == GpuOpKind::Memcpy) {
                        appendArg("copy kind", m.copyKind);
                        appendArg("src kind", m.srcKind);
                        appendArg("dst kind", m.dstKind);
                    } else {
                        appendArg("value", m.value);
                        appendArg("mem kind", m.dstKind);
                    }
                }
                if (track.graphId(i) != 0)
                    appendArg("graph id", track.graphId(i));
                m_buffer += "}}";
                ++m_counts.gpuOps;
                eventDone();
                if (m_options.flows && track.launch(i).valid()) {
                    appendFlow('f', flowId({static_cast<uint32_t>(t), static_cast<uint32_t>(i)}),
                               row, track.start(i));
                }
            }
        }
    }

    void writeQueueDepth() {
        const RunAheadAnalysis analysis = analyzeRunAhead(m_store);
        for (size_t s = 0; s < analysis.streams.size(); ++s) {
            const StreamInfo& stream = m_store.streams()[analysis.streams[s].streamIndex];
            if (stream.gpuTracks.empty())
                continue;
            const uint32_t row = m_gpuRow[stream.gpuTracks.front()];
            const std::string name = jsonString(m_rows[row].name + " queue");
            for (const DepthStep& step : analysis.depthSteps(s)) {
                beginEvent();
                m_buffer += "\"ph\":\"C\",\"name\":";
                m_buffer += name;
                appendWhere(row, step.time);
                m_buffer += ",\"args\":{\"depth\":";
                appendInt(step.depth);
                m_buffer += "}}";
                ++m_counts.counters;
            }
        }
    }

    std::ostream& m_out;
    const TraceStore& m_store;
    const ChromeExportOptions& m_options;
    int64_t m_base = 0;
    std::string m_buffer;
    bool m_firstEvent = true;
    std::vector<std::string> m_escaped; // by NameId, filled on first use
    std::vector<ChromeThread> m_rows;
    std::vector<std::pair<uint32_t, std::string>> m_processes; // pid, name, in display order
    std::map<uint32_t, uint32_t> m_nextTid;                    // by pid
    std::vector<uint32_t> m_apiRow, m_nvtxRow, m_gpuRow;       // track -> index into m_rows
    std::vector<uint64_t> m_gpuTrackBase;
    ChromeExportCounts m_counts;
    uint64_t m_written = 0;
    uint64_t m_total = 1;
};

} // namespace

ChromeExportCounts writeChromeTrace(std::ostream& out, const TraceStore& store,
                                    const ChromeExportOptions& options) {
    ChromeWriter writer(out, store, options);
    return writer.write();
}

ChromeExportCounts writeChromeTraceFile(const std::string& path, const TraceStore& store,
                                        const ChromeExportOptions& options) {
    format::OutputFile output(path, options.replace);
    std::ofstream file(output.tempPath(), std::ios::binary | std::ios::trunc);
    if (!file)
        throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
    ChromeExportCounts counts;
    try {
        counts = writeChromeTrace(file, store, options);
    } catch (const ExportCancelled&) {
        throw;
    } catch (const std::exception& e) {
        throw std::runtime_error("cannot write " + path + ": " + e.what());
    }
    file.close();
    if (!file)
        throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
    output.commit();
    return counts;
}

} // namespace warpline::model
