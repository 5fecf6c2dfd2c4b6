#include "traceschema.h"

namespace warpline::collector {

const char* traceSchemaSql() {
    return R"SQL(
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);

CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER);

CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);
CREATE TABLE TARGET_INFO_GPU (
    id INTEGER NOT NULL, name TEXT, uuid TEXT, busLocation TEXT, isDiscrete INTEGER,
    l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER, clockRate INTEGER,
    smCount INTEGER, computeMajor INTEGER, computeMinor INTEGER, threadsPerWarp INTEGER,
    maxThreadsPerBlock INTEGER, maxShmemPerBlock INTEGER, maxRegistersPerBlock INTEGER,
    asyncEngineCount INTEGER);
CREATE TABLE TARGET_INFO_CUDA_STREAM (
    streamId INTEGER NOT NULL, hwId INTEGER, vmId INTEGER, processId INTEGER,
    contextId INTEGER NOT NULL, priority INTEGER, flag INTEGER);

CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (
    start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
    globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
    returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_DRIVER (
    start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
    globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
    returnValue INTEGER NOT NULL, callchainId INTEGER);

CREATE TABLE WARPLINE_KERNEL_CONFIGS (
    id INTEGER PRIMARY KEY, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL,
    demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER,
    launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL,
    gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
    blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
    staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL,
    localMemoryPerThread INTEGER, localMemoryTotal INTEGER, sharedMemoryExecuted INTEGER,
    sharedMemoryLimitConfig INTEGER, clusterX INTEGER, clusterY INTEGER, clusterZ INTEGER);
CREATE TABLE WARPLINE_KERNELS (
    start INTEGER NOT NULL, end INTEGER NOT NULL, streamId INTEGER NOT NULL,
    correlationId INTEGER NOT NULL, configId INTEGER NOT NULL, gridId INTEGER,
    graphNodeId INTEGER, graphId INTEGER);
CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS
SELECT k.start AS start, k.end AS end, c.deviceId AS deviceId, c.contextId AS contextId,
       k.streamId AS streamId, k.correlationId AS correlationId,
       (SELECT globalPid FROM PROCESSES LIMIT 1) AS globalPid,
       c.demangledName AS demangledName, c.shortName AS shortName, c.mangledName AS mangledName,
       c.launchType AS launchType, c.cacheConfig AS cacheConfig,
       c.registersPerThread AS registersPerThread,
       c.gridX AS gridX, c.gridY AS gridY, c.gridZ AS gridZ,
       c.blockX AS blockX, c.blockY AS blockY, c.blockZ AS blockZ,
       c.staticSharedMemory AS staticSharedMemory, c.dynamicSharedMemory AS dynamicSharedMemory,
       c.localMemoryPerThread AS localMemoryPerThread, c.localMemoryTotal AS localMemoryTotal,
       k.gridId AS gridId, c.sharedMemoryExecuted AS sharedMemoryExecuted,
       k.graphNodeId AS graphNodeId, c.sharedMemoryLimitConfig AS sharedMemoryLimitConfig,
       k.graphId AS graphId
FROM WARPLINE_KERNELS k JOIN WARPLINE_KERNEL_CONFIGS c ON c.id = k.configId;

CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (
    start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
    contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER,
    globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL,
    srcKind INTEGER, dstKind INTEGER, graphNodeId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (
    start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
    contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER,
    globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL, graphNodeId INTEGER,
    memKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (
    start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER,
    contextId INTEGER NOT NULL, streamId INTEGER, correlationId INTEGER,
    globalPid INTEGER, syncType INTEGER NOT NULL, eventId INTEGER);

CREATE TABLE NVTX_EVENTS (
    start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
    category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER,
    textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value INTEGER,
    doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, floatValue REAL,
    jsonTextId INTEGER, jsonText TEXT);

CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES
    (0,'CUDA_MEMCPY_OPER_UNKNOWN','Unknown'), (1,'CUDA_MEMCPY_OPER_HTOD','Host-to-Device'),
    (2,'CUDA_MEMCPY_OPER_DTOH','Device-to-Host'), (3,'CUDA_MEMCPY_OPER_HTOA','Host-to-Array'),
    (4,'CUDA_MEMCPY_OPER_ATOH','Array-to-Host'), (5,'CUDA_MEMCPY_OPER_ATOA','Array-to-Array'),
    (6,'CUDA_MEMCPY_OPER_ATOD','Array-to-Device'), (7,'CUDA_MEMCPY_OPER_DTOA','Device-to-Array'),
    (8,'CUDA_MEMCPY_OPER_DTOD','Device-to-Device'), (9,'CUDA_MEMCPY_OPER_HTOH','Host-to-Host'),
    (10,'CUDA_MEMCPY_OPER_PTOP','Peer-to-Peer');
CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_CUDA_MEM_KIND VALUES
    (0,'CUDA_MEMOPR_MEMORY_KIND_UNKNOWN','Unknown'), (1,'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE','Pageable'),
    (2,'CUDA_MEMOPR_MEMORY_KIND_PINNED','Pinned'), (3,'CUDA_MEMOPR_MEMORY_KIND_DEVICE','Device'),
    (4,'CUDA_MEMOPR_MEMORY_KIND_ARRAY','Array'), (5,'CUDA_MEMOPR_MEMORY_KIND_MANAGED','Managed'),
    (6,'CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC','Device Static'),
    (7,'CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC','Managed Static');
CREATE TABLE ENUM_CUPTI_SYNC_TYPE (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES
    (0,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN','Unknown'),
    (1,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE','Event sync'),
    (2,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT','Stream wait event'),
    (3,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE','Stream sync'),
    (4,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE','Context sync');
CREATE TABLE ENUM_CUDA_KERNEL_LAUNCH_TYPE (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_CUDA_KERNEL_LAUNCH_TYPE VALUES
    (0,'CUDA_KERNEL_LAUNCH_TYPE_REGULAR','Regular'),
    (1,'CUDA_KERNEL_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE','Cooperative single device'),
    (2,'CUDA_KERNEL_LAUNCH_TYPE_COOPERATIVE_MULTI_DEVICE','Cooperative multi device');
CREATE TABLE ENUM_NSYS_EVENT_TYPE (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES
    (34,'NvtxMark','NVTX mark'), (59,'NvtxPushPopRange','NVTX push/pop range'),
    (60,'NvtxStartEndRange','NVTX start/end range'), (75,'NvtxDomainCreate','NVTX domain create');

CREATE TABLE WARPLINE_META (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
CREATE TABLE WARPLINE_CONTEXTS (contextId INTEGER PRIMARY KEY, deviceId INTEGER NOT NULL,
                                nullStreamId INTEGER);
CREATE TABLE WARPLINE_STREAM_NAMES (contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
                                    nameId INTEGER NOT NULL);
CREATE TABLE WARPLINE_OVERHEAD (start INTEGER NOT NULL, end INTEGER NOT NULL,
                                overheadKind INTEGER NOT NULL, globalTid INTEGER, deviceId INTEGER,
                                correlationId INTEGER);
CREATE TABLE WARPLINE_DROPPED (time INTEGER NOT NULL, contextId INTEGER, streamId INTEGER,
                               dropped INTEGER NOT NULL, reason TEXT NOT NULL);
CREATE TABLE WARPLINE_ERRORS (time INTEGER, source TEXT NOT NULL, message TEXT NOT NULL);
)SQL";
}

const char* traceIndexSql() {
    return R"SQL(
CREATE INDEX IF NOT EXISTS WARPLINE_KERNELS_start ON WARPLINE_KERNELS(start);
CREATE INDEX IF NOT EXISTS RUNTIME_start ON CUPTI_ACTIVITY_KIND_RUNTIME(start);
CREATE INDEX IF NOT EXISTS DRIVER_start ON CUPTI_ACTIVITY_KIND_DRIVER(start);
CREATE INDEX IF NOT EXISTS MEMCPY_start ON CUPTI_ACTIVITY_KIND_MEMCPY(start);
CREATE INDEX IF NOT EXISTS MEMSET_start ON CUPTI_ACTIVITY_KIND_MEMSET(start);
CREATE INDEX IF NOT EXISTS SYNCHRONIZATION_start ON CUPTI_ACTIVITY_KIND_SYNCHRONIZATION(start);
CREATE INDEX IF NOT EXISTS NVTX_EVENTS_start ON NVTX_EVENTS(start);
)SQL";
}

} // namespace warpline::collector
