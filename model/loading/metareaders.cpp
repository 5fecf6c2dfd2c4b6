#include "metareaders.h"

#include <algorithm>
#include <limits>

namespace warpline::model {

int64_t readSessionStart(const ReadSource& in) {
    if (!in.schema.hasTable("TARGET_INFO_SESSION_START_TIME"))
        return 0;
    Statement st(in.db, in.select("TARGET_INFO_SESSION_START_TIME", {"utcEpochNs"}));
    return st.step() ? st.i64(0) : 0;
}

void readMeta(const ReadSource& in, std::map<std::string, std::string>& meta,
              std::vector<std::string>& warnings) {
    if (!in.schema.hasTable("WARPLINE_META"))
        return;
    Statement st(in.db, in.select("WARPLINE_META", {"key", "value"}));
    while (st.step())
        meta[std::string(st.text(0))] = std::string(st.text(1));
    const auto value = [&meta](const std::string& key) {
        const auto it = meta.find(key);
        return it == meta.end() ? std::string() : it->second;
    };
    const std::string status = value("status");
    if (status == "recording")
        warnings.push_back(
            "The recording had not finished when this file was read (status \"recording\"): "
            "events after the last commit are missing.");
    else if (status == "failed")
        warnings.push_back("The recording failed (status \"failed\"): the trace may be "
                           "incomplete; see the collector errors.");
    else if (status == "incomplete")
        warnings.push_back("The recording is incomplete (status \"incomplete\"): the "
                           "traced program ended before the collector finished.");
    else if (status == "no-cuda")
        warnings.push_back("No CUDA activity was recorded: the traced program never "
                           "initialised CUDA.");
    // A traced program's own exit status (warpline-record -- PROGRAM), when it was not success.
    const std::string signal = value("exit_signal");
    const std::string exitCode = value("exit_code");
    if (!signal.empty())
        warnings.push_back("The traced program was killed by signal " + signal + " (exit status " +
                           exitCode + ").");
    else if (!exitCode.empty() && exitCode != "0")
        warnings.push_back("The traced program exited with status " + exitCode + ".");
}

void readStrings(const ReadSource& in, TraceStrings& strings) {
    if (!in.schema.hasTable("StringIds"))
        return;
    Statement st(in.db, in.select("StringIds", {"id", "value"}));
    int64_t maxId = -1;
    while (st.step()) {
        maxId = std::max(maxId, st.i64(0));
        strings.add(st.i64(0), std::string(st.text(1)));
        in.progress.rowRead();
    }
    strings.indexDense(maxId);
}

void readProcesses(const ReadSource& in, TraceStrings& strings,
                   std::vector<ProcessInfo>& processes) {
    if (!in.schema.hasTable("PROCESSES"))
        return;
    Statement st(in.db, in.select("PROCESSES", {"globalPid", "pid", "name"}));
    while (st.step()) {
        ProcessInfo p;
        p.globalPid = st.i64(0);
        p.pid = st.isNull(1) ? pidOf(p.globalPid) : static_cast<uint32_t>(st.i64(1));
        p.name = strings.intern(st.text(2));
        processes.push_back(p);
    }
    std::sort(processes.begin(), processes.end(),
              [](const ProcessInfo& a, const ProcessInfo& b) { return a.globalPid < b.globalPid; });
}

void readThreadNames(const ReadSource& in, TraceStrings& strings,
                     std::map<int64_t, NameId>& threadNames) {
    if (!in.schema.hasTable("ThreadNames"))
        return;
    Statement st(in.db, in.select("ThreadNames", {"nameId", "priority", "globalTid"}));
    std::map<int64_t, int64_t> bestPriority;
    while (st.step()) {
        if (st.isNull(2) || st.isNull(0))
            continue;
        const int64_t tid = st.i64(2);
        const int64_t priority = st.isNull(1) ? 0 : st.i64(1);
        const auto it = bestPriority.find(tid);
        if (it != bestPriority.end() && it->second >= priority)
            continue;
        bestPriority[tid] = priority;
        threadNames[tid] = strings.name(st.i64(0));
    }
}

void readDevices(const ReadSource& in, TraceStrings& strings, std::vector<DeviceInfo>& devices) {
    if (!in.schema.hasTable("TARGET_INFO_GPU"))
        return;
    Statement st(in.db, in.select("TARGET_INFO_GPU",
                                  {"id", "name", "uuid", "totalMemory", "memoryBandwidth",
                                   "smCount", "computeMajor", "computeMinor", "clockRate",
                                   "threadsPerWarp", "maxThreadsPerBlock", "maxRegistersPerBlock",
                                   "maxRegistersPerSm", "maxShmemPerBlock", "maxShmemPerBlockOptin",
                                   "maxShmemPerSm", "maxWarpsPerSm", "maxBlocksPerSm"}));
    // kHz in Warpline 1.x traces; Hz, as nsys writes it, in nsys exports and from 2.0.
    const bool hertz =
        in.schema.origin() != TraceOrigin::Warpline || in.schema.formatVersion() >= 200;
    while (st.step()) {
        DeviceInfo d;
        d.id = static_cast<uint32_t>(st.i64(0));
        d.name = strings.intern(st.text(1));
        d.uuid = std::string(st.text(2));
        d.totalMemory = static_cast<uint64_t>(st.i64(3));
        d.memoryBandwidth = static_cast<uint64_t>(st.i64(4));
        d.smCount = static_cast<uint32_t>(st.i64(5));
        d.computeMajor = static_cast<uint32_t>(st.i64(6));
        d.computeMinor = static_cast<uint32_t>(st.i64(7));
        const int64_t clock = st.i64(8);
        d.clockRate = static_cast<uint32_t>(std::clamp<int64_t>(
            hertz ? clock / 1000 : clock, 0, std::numeric_limits<uint32_t>::max()));
        // NULL reads as 0: not known.
        const auto limit = [&](int column) {
            return static_cast<uint32_t>(
                std::clamp<int64_t>(st.i64(column), 0, std::numeric_limits<uint32_t>::max()));
        };
        d.threadsPerWarp = limit(9);
        d.maxThreadsPerBlock = limit(10);
        d.maxRegistersPerBlock = limit(11);
        d.maxRegistersPerSm = limit(12);
        d.maxSharedMemoryPerBlock = limit(13);
        d.maxSharedMemoryPerBlockOptin = limit(14);
        d.maxSharedMemoryPerSm = limit(15);
        d.maxWarpsPerSm = limit(16);
        d.maxBlocksPerSm = limit(17);
        devices.push_back(d);
    }
}

void readStreamDetails(const ReadSource& in, TraceStrings& strings, StreamPriorities& priorities,
                       StreamNames& names) {
    if (in.schema.hasTable("TARGET_INFO_CUDA_STREAM")) {
        Statement st(in.db,
                     in.select("TARGET_INFO_CUDA_STREAM", {"streamId", "contextId", "priority"}));
        while (st.step())
            priorities[{static_cast<uint32_t>(st.i64(1)), static_cast<uint32_t>(st.i64(0))}] =
                static_cast<int32_t>(st.i64(2));
    }
    if (in.schema.hasTable("WARPLINE_STREAM_NAMES")) {
        Statement st(in.db,
                     in.select("WARPLINE_STREAM_NAMES", {"contextId", "streamId", "nameId"}));
        while (st.step())
            names[{static_cast<uint32_t>(st.i64(0)), static_cast<uint32_t>(st.i64(1))}] =
                strings.name(st.i64(2));
    }
}

void readDiagnostics(const ReadSource& in, std::vector<std::string>& warnings) {
    if (in.schema.hasTable("WARPLINE_DROPPED")) {
        Statement st(in.db, "SELECT reason, SUM(dropped) FROM WARPLINE_DROPPED GROUP BY reason "
                            "ORDER BY reason");
        while (st.step()) {
            if (st.i64(1) <= 0)
                continue;
            warnings.push_back("The collector dropped " + std::to_string(st.i64(1)) + " records (" +
                               std::string(st.text(0)) +
                               "): totals and timelines miss those events.");
        }
    }
    if (in.schema.hasTable("WARPLINE_ERRORS")) {
        Statement st(in.db, in.select("WARPLINE_ERRORS", {"source", "message"}));
        int count = 0;
        constexpr int kShown = 20;
        while (st.step()) {
            if (++count <= kShown)
                warnings.push_back("Collector error (" + std::string(st.text(0)) +
                                   "): " + std::string(st.text(1)));
        }
        if (count > kShown)
            warnings.push_back("... and " + std::to_string(count - kShown) +
                               " more collector errors (table WARPLINE_ERRORS).");
    }
}

} // namespace warpline::model
