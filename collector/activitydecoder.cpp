#include "activitydecoder.h"

#include "tracewriter.h"

#include <algorithm>
#include <cstdio>
#include <cupti_callbacks.h>
#include <fstream>
#include <string>

namespace warpline::collector {

namespace {

std::optional<uint32_t> validOrNone(uint32_t v) {
    if (v == CUPTI_SYNCHRONIZATION_INVALID_VALUE)
        return std::nullopt;
    return v;
}

std::optional<uint64_t> graphNode(uint64_t id) {
    if (id == 0)
        return std::nullopt;
    return id;
}

} // namespace

ActivityDecoder::ActivityDecoder(format::TraceWriter& writer, uint64_t sessionStartTimestamp)
    : m_writer(writer), m_start(sessionStartTimestamp) {}

int64_t ActivityDecoder::rel(uint64_t timestamp) const {
    return static_cast<int64_t>(timestamp - m_start);
}

void ActivityDecoder::noteThread(uint32_t pid, uint32_t tid) {
    if (!m_threadsSeen.insert({pid, tid}).second)
        return;
    std::ifstream comm("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/comm");
    std::string name;
    if (std::getline(comm, name) && !name.empty()) {
        format::NameRecord r;
        r.object = format::NameRecord::Object::Thread;
        r.processId = pid;
        r.threadId = tid;
        r.name = name;
        m_writer.addName(r);
    }
}

void ActivityDecoder::decodeApi(const CUpti_ActivityAPI& api, bool runtime) {
    const CUpti_CallbackDomain domain =
        runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
    const uint64_t key = (static_cast<uint64_t>(domain) << 32) | api.cbid;
    auto name = m_apiNames.find(key);
    if (name == m_apiNames.end()) {
        const char* n = nullptr;
        std::string s;
        if (cuptiGetCallbackName(domain, api.cbid, &n) == CUPTI_SUCCESS && n)
            s = n;
        else
            s = (runtime ? "cudaRuntimeApi#" : "cuDriverApi#") + std::to_string(api.cbid);
        name = m_apiNames.emplace(key, s).first;
    }
    format::ApiRecord r;
    r.domain = runtime ? format::ApiRecord::Domain::Runtime : format::ApiRecord::Domain::Driver;
    r.start = rel(api.start);
    r.end = rel(api.end);
    r.processId = api.processId;
    r.threadId = api.threadId;
    r.correlationId = api.correlationId;
    r.callbackId = api.cbid;
    r.name = name->second;
    r.returnValue = api.returnValue;
    if (m_callchainOf)
        r.callchainId = m_callchainOf(api.correlationId);
    noteThread(api.processId, api.threadId);
    m_latest = std::max(m_latest, r.end);

    auto& held = m_heldDriverCalls[api.threadId];
    if (!runtime) {
        held.push_back(std::move(r));
        return;
    }
    // Driver calls inside this runtime call were made by the runtime: drop them. Older ones were
    // the program's own: write them.
    while (!held.empty()) {
        format::ApiRecord& d = held.front();
        if (d.start >= r.start && d.end <= r.end) {
            held.pop_front();
            continue;
        }
        if (d.end <= r.start) {
            m_writer.addApi(d);
            held.pop_front();
            continue;
        }
        break;
    }
    m_writer.addApi(r);
}

void ActivityDecoder::flushHeldDriverCalls() {
    writeHeldDriverCalls(m_latest - 1'000'000'000);
}

void ActivityDecoder::finish() {
    writeHeldDriverCalls(INT64_MAX);
}

void ActivityDecoder::writeHeldDriverCalls(int64_t endedBefore) {
    for (auto& [tid, held] : m_heldDriverCalls) {
        while (!held.empty() && held.front().end < endedBefore) {
            m_writer.addApi(held.front());
            held.pop_front();
        }
    }
}

void ActivityDecoder::decode(const CUpti_Activity* record) {
    ++m_decoded;
    switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto& k = *reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        if (k.start == CUPTI_TIMESTAMP_UNKNOWN || k.end == CUPTI_TIMESTAMP_UNKNOWN)
            break;
        format::KernelRecord r;
        r.start = rel(k.start);
        r.end = rel(k.end);
        r.deviceId = k.deviceId;
        r.contextId = k.contextId;
        r.streamId = k.streamId;
        r.correlationId = k.correlationId;
        r.mangledName = k.name ? k.name : "<unnamed kernel>";
        r.gridId = k.gridId;
        r.gridX = k.gridX;
        r.gridY = k.gridY;
        r.gridZ = k.gridZ;
        r.blockX = k.blockX;
        r.blockY = k.blockY;
        r.blockZ = k.blockZ;
        r.registersPerThread = k.registersPerThread;
        r.staticSharedMemory = k.staticSharedMemory;
        r.dynamicSharedMemory = k.dynamicSharedMemory;
        r.localMemoryPerThread = k.localMemoryPerThread;
        r.localMemoryTotal = k.localMemoryTotal_v2 ? k.localMemoryTotal_v2 : k.localMemoryTotal;
        r.sharedMemoryExecuted = k.sharedMemoryExecuted;
        r.launchType = k.launchType;
        r.cacheConfig = k.cacheConfig.both;
        r.sharedMemoryLimitConfig = static_cast<uint8_t>(k.shmemLimitConfig);
        r.clusterX = k.clusterX;
        r.clusterY = k.clusterY;
        r.clusterZ = k.clusterZ;
        r.graphNodeId = graphNode(k.graphNodeId);
        if (k.graphId != 0)
            r.graphId = k.graphId;
        m_writer.addKernel(r);
        break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
        decodeApi(*reinterpret_cast<const CUpti_ActivityAPI*>(record), true);
        break;
    case CUPTI_ACTIVITY_KIND_DRIVER:
        decodeApi(*reinterpret_cast<const CUpti_ActivityAPI*>(record), false);
        break;
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto& m = *reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        format::MemcpyRecord r;
        r.start = rel(m.start);
        r.end = rel(m.end);
        r.deviceId = m.deviceId;
        r.contextId = m.contextId;
        r.streamId = m.streamId;
        r.correlationId = m.correlationId;
        r.bytes = m.bytes;
        r.copyKind = m.copyKind;
        r.srcKind = m.srcKind;
        r.dstKind = m.dstKind;
        r.graphNodeId = graphNode(m.graphNodeId);
        m_writer.addMemcpy(r);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto& m = *reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        format::MemsetRecord r;
        r.start = rel(m.start);
        r.end = rel(m.end);
        r.deviceId = m.deviceId;
        r.contextId = m.contextId;
        r.streamId = m.streamId;
        r.correlationId = m.correlationId;
        r.bytes = m.bytes;
        r.value = m.value;
        r.memKind = m.memoryKind;
        r.graphNodeId = graphNode(m.graphNodeId);
        m_writer.addMemset(r);
        break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        const auto& s = *reinterpret_cast<const CUpti_ActivitySynchronization2*>(record);
        format::SyncRecord r;
        r.start = rel(s.start);
        r.end = rel(s.end);
        r.contextId = s.contextId;
        r.streamId = validOrNone(s.streamId);
        r.correlationId = s.correlationId;
        r.syncType = static_cast<uint8_t>(s.type);
        r.eventId = validOrNone(s.cudaEventId);
        m_writer.addSync(r);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
        const auto& m = *reinterpret_cast<const CUpti_ActivityMarker2*>(record);
        format::MarkerRecord r;
        if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_START)
            r.kind = format::MarkerRecord::Kind::Start;
        else if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_END)
            r.kind = format::MarkerRecord::Kind::End;
        else
            r.kind = format::MarkerRecord::Kind::Instant;
        r.timestamp = rel(m.timestamp);
        r.id = m.id;
        if (m.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS ||
            m.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD) {
            r.processId = m.objectId.pt.processId;
            r.threadId = m.objectId.pt.threadId;
            noteThread(r.processId, r.threadId);
        }
        if (m.name)
            r.name = m.name;
        if (m.domain)
            r.domain = m.domain;
        m_writer.addMarker(r);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MARKER_DATA: {
        const auto& d = *reinterpret_cast<const CUpti_ActivityMarkerData2*>(record);
        format::MarkerDataRecord r;
        r.id = d.id;
        r.color = d.color;
        r.hasColor = (d.flags & CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB) != 0;
        r.category = d.category;
        m_writer.addMarkerData(r);
        break;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
        const auto& o = *reinterpret_cast<const CUpti_ActivityOverhead3*>(record);
        format::OverheadRecord r;
        r.start = rel(o.start);
        r.end = rel(o.end);
        r.overheadKind = o.overheadKind;
        if (o.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS ||
            o.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD) {
            r.processId = o.objectId.pt.processId;
            r.threadId = o.objectId.pt.threadId;
        } else {
            r.deviceId = o.objectId.dcs.deviceId;
        }
        r.correlationId = o.correlationId;
        m_writer.addOverhead(r);
        break;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: {
        const auto& d = *reinterpret_cast<const CUpti_ActivityDevice5*>(record);
        format::DeviceRecord r;
        r.id = d.id;
        r.name = d.name ? d.name : "";
        r.uuid = format::formatGpuUuid(d.uuid.bytes);
        r.totalMemory = d.globalMemorySize;
        r.memoryBandwidth = d.globalMemoryBandwidth * 1000; // CUPTI reports KB/s
        r.l2CacheSize = d.l2CacheSize;
        r.clockRate = d.coreClockRate;
        r.smCount = d.numMultiprocessors;
        r.computeMajor = d.computeCapabilityMajor;
        r.computeMinor = d.computeCapabilityMinor;
        r.threadsPerWarp = d.numThreadsPerWarp;
        r.maxThreadsPerBlock = d.maxThreadsPerBlock;
        r.maxSharedMemoryPerBlock = d.maxSharedMemoryPerBlock;
        r.maxRegistersPerBlock = d.maxRegistersPerBlock;
        r.numMemcpyEngines = d.numMemcpyEngines;
        r.maxRegistersPerSm = d.maxRegistersPerMultiprocessor;
        r.maxSharedMemoryPerSm = d.maxSharedMemoryPerMultiprocessor;
        r.maxWarpsPerSm = d.maxWarpsPerMultiprocessor;
        r.maxBlocksPerSm = d.maxBlocksPerMultiprocessor;
        m_writer.addDevice(r); // CUPTI gives no opt-in shared memory limit: left NULL
        break;
    }
    case CUPTI_ACTIVITY_KIND_CONTEXT: {
        const auto& c = *reinterpret_cast<const CUpti_ActivityContext3*>(record);
        m_writer.addContext(format::ContextRecord{c.contextId, c.deviceId, c.nullStreamId});
        break;
    }
    case CUPTI_ACTIVITY_KIND_STREAM: {
        const auto& s = *reinterpret_cast<const CUpti_ActivityStream*>(record);
        m_writer.addStream(format::StreamRecord{s.contextId, s.streamId, s.priority,
                                                static_cast<uint32_t>(s.flag)});
        break;
    }
    case CUPTI_ACTIVITY_KIND_NAME: {
        const auto& n = *reinterpret_cast<const CUpti_ActivityName*>(record);
        if (!n.name)
            break;
        format::NameRecord r;
        r.name = n.name;
        if (n.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD) {
            r.object = format::NameRecord::Object::Thread;
            r.processId = n.objectId.pt.processId;
            r.threadId = n.objectId.pt.threadId;
        } else if (n.objectKind == CUPTI_ACTIVITY_OBJECT_STREAM) {
            r.object = format::NameRecord::Object::Stream;
            r.contextId = n.objectId.dcs.contextId;
            r.streamId = n.objectId.dcs.streamId;
        } else {
            break;
        }
        m_writer.addName(r);
        break;
    }
    default:
        --m_decoded;
        break;
    }
}

} // namespace warpline::collector
