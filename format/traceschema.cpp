#include "traceschema.h"

#include <string>

namespace warpline::format {

namespace {

// The schema in pieces: the GPU tables and the event-class enum are also what an upgrade from
// format 1.x creates (traceUpgradeSql).
constexpr const char* kSchemaHead = R"SQL(
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);

CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER);

CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);
)SQL";

constexpr const char* kGpuTables = R"SQL(
CREATE TABLE TARGET_INFO_GPU (
    vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT, isDiscrete INTEGER,
    l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER, clockRate INTEGER,
    smCount INTEGER, pwGpuId INTEGER, uuid TEXT, luid INTEGER, chipName TEXT, cuDevice INTEGER,
    ctxswDevPath TEXT, ctrlDevPath TEXT, revision INTEGER, nodeMask INTEGER,
    constantMemory INTEGER, maxIPC INTEGER, maxRegistersPerBlock INTEGER,
    maxShmemPerBlock INTEGER, maxShmemPerBlockOptin INTEGER, maxShmemPerSm INTEGER,
    maxRegistersPerSm INTEGER, threadsPerWarp INTEGER, asyncEngines INTEGER,
    maxWarpsPerSm INTEGER, maxBlocksPerSm INTEGER, maxThreadsPerBlock INTEGER,
    maxBlockDimX INTEGER, maxBlockDimY INTEGER, maxBlockDimZ INTEGER, maxGridDimX INTEGER,
    maxGridDimY INTEGER, maxGridDimZ INTEGER, computeMajor INTEGER, computeMinor INTEGER,
    smMajor INTEGER, smMinor INTEGER);
CREATE TABLE TARGET_INFO_CUDA_DEVICE (
    gpuId INTEGER NOT NULL, cudaId INTEGER NOT NULL, pid INTEGER, uuid TEXT NOT NULL,
    numMultiprocessors INTEGER);
)SQL";

constexpr const char* kSchemaMiddle = R"SQL(
CREATE TABLE TARGET_INFO_CUDA_STREAM (
    streamId INTEGER NOT NULL, hwId INTEGER, vmId INTEGER, processId INTEGER,
    contextId INTEGER NOT NULL, priority INTEGER, flag INTEGER);

CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (
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
)SQL";

constexpr const char* kEventClassEnum = R"SQL(
CREATE TABLE ENUM_NSYS_EVENT_CLASS (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES
    (0,'TRACE_PROCESS_EVENT_CUDA_RUNTIME','CUDA runtime'),
    (1,'TRACE_PROCESS_EVENT_CUDA_DRIVER','CUDA driver'), (2,'TRACE_PROCESS_EVENT_GL','GL'),
    (3,'TRACE_PROCESS_EVENT_TSP_OVERHEAD','TSP overhead'),
    (4,'TRACE_PROCESS_EVENT_GL_DEBUG','GL debug'),
    (5,'TRACE_PROCESS_EVENT_GL_WORKLOAD','GL workload'),
    (6,'TRACE_PROCESS_EVENT_NVTX_START','NVTX start'),
    (7,'TRACE_PROCESS_EVENT_NVTX_FINISH','NVTX finish'),
    (8,'TRACE_PROCESS_EVENT_GL_START','GL start'), (9,'TRACE_PROCESS_EVENT_GL_FINISH','GL finish'),
    (10,'TRACE_PROCESS_EVENT_CUDA_START','CUDA start'),
    (11,'TRACE_PROCESS_EVENT_CUDA_FINISH','CUDA finish'),
    (12,'TRACE_PROCESS_EVENT_CUDA_INIT_ERROR','CUDA init error'),
    (13,'TRACE_PROCESS_EVENT_CUDA_EGL_DRIVER','CUDA EGL driver'),
    (18,'TRACE_PROCESS_EVENT_VSYNC','Vsync'), (26,'TRACE_PROCESS_EVENT_CUDA_API','CUDA API'),
    (27,'TRACE_PROCESS_EVENT_OS_RUNTIME','OSRT runtime'), (28,'TRACE_PROCESS_EVENT_CUDNN','cuDNN'),
    (29,'TRACE_PROCESS_EVENT_CUBLAS','cuBLAS'),
    (31,'TRACE_PROCESS_EVENT_OS_RUNTIME_START','OSRT start'),
    (32,'TRACE_PROCESS_EVENT_OS_RUNTIME_FINISH','OSRT finish'),
    (33,'TRACE_PROCESS_EVENT_CUDNN_START','cuDNN start'),
    (34,'TRACE_PROCESS_EVENT_CUDNN_FINISH','cuDNN finish'),
    (35,'TRACE_PROCESS_EVENT_CUBLAS_START','cuBLAS start'),
    (36,'TRACE_PROCESS_EVENT_CUBLAS_FINISH','cuBLAS finish'),
    (37,'TRACE_PROCESS_EVENT_THREAD_BLOCK','Thread block'),
    (38,'TRACE_PROCESS_EVENT_NVMEDIA','NVmedia'),
    (39,'TRACE_PROCESS_EVENT_NVMEDIA_START','NVmedia start'),
    (40,'TRACE_PROCESS_EVENT_NVMEDIA_FINISH','NVmedia finish'),
    (41,'TRACE_PROCESS_EVENT_DX12_API','DX12 API'),
    (42,'TRACE_PROCESS_EVENT_DX12_WORKLOAD','DX12 workload'),
    (43,'TRACE_PROCESS_EVENT_DX12_START','DX12 start'),
    (44,'TRACE_PROCESS_EVENT_DX12_FINISH','DX12 finish'),
    (45,'TRACE_PROCESS_EVENT_OPENACC_START','OpenACC start'),
    (46,'TRACE_PROCESS_EVENT_OPENACC_FINISH','OpenACC finish'),
    (47,'TRACE_PROCESS_EVENT_OPENACC_INIT_ERROR','OpenACC init error'),
    (48,'TRACE_PROCESS_EVENT_OPENACC','OpenACC'), (49,'TRACE_PROCESS_EVENT_CPU_FPS','CPU FPS'),
    (50,'TRACE_PROCESS_EVENT_GPU_FPS','GPU FPS'),
    (51,'TRACE_PROCESS_EVENT_GL_MULTI_ERROR','GL multi-error'),
    (52,'TRACE_PROCESS_EVENT_DX12_DISPLAY','DX12 display'),
    (53,'TRACE_PROCESS_EVENT_VULKAN_API','Vulkan API'),
    (54,'TRACE_PROCESS_EVENT_VULKAN_WORKLOAD','Vulkan workload'),
    (55,'TRACE_PROCESS_EVENT_VULKAN_START','Vulkan start'),
    (56,'TRACE_PROCESS_EVENT_VULKAN_FINISH','Vulkan finish'),
    (57,'TRACE_PROCESS_EVENT_SYSTEM_EVENT','System event'),
    (58,'TRACE_PROCESS_EVENT_GPU_MEMORY','GPU memory'),
    (59,'TRACE_PROCESS_EVENT_DX12_CREATE_OBJECT','DX12 create object'),
    (60,'TRACE_PROCESS_EVENT_VULKAN_CREATE_OBJECT','Vulkan create object'),
    (61,'TRACE_PROCESS_EVENT_CUSTOM_ETW_TRACE','Custom ETW trace'),
    (62,'TRACE_PROCESS_EVENT_SLI','SLI'), (63,'TRACE_PROCESS_EVENT_SLI_START','SLI start'),
    (64,'TRACE_PROCESS_EVENT_SLI_FINISH','SLI finish'),
    (65,'TRACE_PROCESS_EVENT_DX12_DEBUG_API','DX12 debug API'),
    (66,'TRACE_PROCESS_EVENT_VULKAN_DEBUG_API','Vulkan debug API'),
    (67,'TRACE_PROCESS_EVENT_CUDABACKTRACE','CUDA backtrace'),
    (68,'TRACE_PROCESS_EVENT_CUDABACKTRACE_START','CUDA backtrace start'),
    (69,'TRACE_PROCESS_EVENT_CUDABACKTRACE_FINISH','CUDA backtrace finish'),
    (70,'TRACE_PROCESS_EVENT_WDDM','WDDM'), (71,'TRACE_PROCESS_EVENT_DX11_API','DX11 API'),
    (72,'TRACE_PROCESS_EVENT_DX11_START','DX11 start'),
    (73,'TRACE_PROCESS_EVENT_DX11_FINISH','DX11 finish'),
    (74,'TRACE_PROCESS_EVENT_DX11_CREATE_OBJECT','DX11 create object'),
    (75,'TRACE_PROCESS_EVENT_DX11_DEBUG_API','DX11 debug API'),
    (76,'TRACE_PROCESS_EVENT_DXCOMMON_API','DX common API'),
    (77,'TRACE_PROCESS_EVENT_CUDA_GRAPH_NODE_CREATION','CUDA graph node creation'),
    (78,'TRACE_PROCESS_EVENT_OPENMP','OpenMP'),
    (79,'TRACE_PROCESS_EVENT_OPENMP_START','OpenMP start'),
    (80,'TRACE_PROCESS_EVENT_OPENMP_FINISH','OpenMP finish'),
    (81,'TRACE_PROCESS_EVENT_NVAPI','NV API'),
    (82,'TRACE_PROCESS_EVENT_ETWDXGKRNL','ETW DXG KRNL'), (83,'TRACE_PROCESS_EVENT_NVENC','NVENC'),
    (84,'TRACE_PROCESS_EVENT_NVENC_START','NVENC start'),
    (85,'TRACE_PROCESS_EVENT_NVENC_FINISH','NVENC finish'),
    (86,'TRACE_PROCESS_EVENT_NVDEC','NVDEC'), (87,'TRACE_PROCESS_EVENT_NVDEC_START','NVDEC start'),
    (88,'TRACE_PROCESS_EVENT_NVDEC_FINISH','NVDEC finish'),
    (89,'TRACE_PROCESS_EVENT_NVJPEG','nvJPEG'),
    (90,'TRACE_PROCESS_EVENT_NVJPEG_START','nvJPEG start'),
    (91,'TRACE_PROCESS_EVENT_NVJPEG_FINISH','nvJPEG finish'),
    (92,'TRACE_PROCESS_EVENT_DX12_BATCH_WORKLOAD','DX12 batch workload'),
    (93,'TRACE_PROCESS_EVENT_VULKAN_BATCH_WORKLOAD','Vulkan batch workload'),
    (94,'TRACE_PROCESS_EVENT_CUDA_GRAPHEXEC_CREATION','CUDA graph exec creation'),
    (95,'TRACE_PROCESS_EVENT_CUDA_GRAPH_CREATION','CUDA graph creation'),
    (96,'TRACE_PROCESS_EVENT_CUDA_GRAPH_CLONE','CUDA graph clone'),
    (107,'TRACE_PROCESS_EVENT_SYSCALL','Syscall'),
    (108,'TRACE_PROCESS_EVENT_TEGRA_INTERNAL','Tegra Internal API'),
    (109,'TRACE_PROCESS_EVENT_TEGRA_INTERNAL_START','Tegra Internal API start'),
    (110,'TRACE_PROCESS_EVENT_TEGRA_INTERNAL_FINISH','Tegra Internal API finish');
)SQL";

constexpr const char* kSchemaTail = R"SQL(
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

// Format 1.x -> 2.0, before the GPU tables: driver calls join the runtime calls (eventClass 1),
// the old GPU table is set aside.
constexpr const char* kUpgradeHead = R"SQL(
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME
SELECT start, end, 1, globalTid, correlationId, nameId, returnValue, callchainId
FROM CUPTI_ACTIVITY_KIND_DRIVER;
DROP TABLE CUPTI_ACTIVITY_KIND_DRIVER;
DROP INDEX IF EXISTS DRIVER_start;
ALTER TABLE TARGET_INFO_GPU RENAME TO WARPLINE_UPGRADE_GPU;
)SQL";

// ... after them: the GPUs in nsys's columns (clock kHz -> Hz, UUID without "GPU-").
constexpr const char* kUpgradeGpus = R"SQL(
INSERT INTO TARGET_INFO_GPU (vmId, id, cuDevice, name, uuid, isDiscrete, l2CacheSize,
    totalMemory, memoryBandwidth, clockRate, smCount, computeMajor, computeMinor, smMajor,
    smMinor, threadsPerWarp, maxThreadsPerBlock, maxShmemPerBlock, maxRegistersPerBlock,
    asyncEngines)
SELECT 0, id, id, name, CASE WHEN uuid LIKE 'GPU-%' THEN substr(uuid, 5) ELSE uuid END,
    isDiscrete, l2CacheSize, totalMemory, memoryBandwidth, clockRate * 1000, smCount,
    computeMajor, computeMinor, computeMajor, computeMinor, threadsPerWarp, maxThreadsPerBlock,
    maxShmemPerBlock, maxRegistersPerBlock, asyncEngineCount
FROM WARPLINE_UPGRADE_GPU;
DROP TABLE WARPLINE_UPGRADE_GPU;
INSERT INTO TARGET_INFO_CUDA_DEVICE
SELECT id, id, (SELECT pid FROM PROCESSES LIMIT 1), uuid, smCount FROM TARGET_INFO_GPU;
)SQL";

constexpr const char* kUpgradeTail = R"SQL(
UPDATE WARPLINE_META SET value = '2.0' WHERE key = 'format_version';
)SQL";

} // namespace

const char* traceSchemaSql() {
    static const std::string sql =
        std::string(kSchemaHead) + kGpuTables + kSchemaMiddle + kEventClassEnum + kSchemaTail;
    return sql.c_str();
}

const char* traceUpgradeSql() {
    static const std::string sql =
        std::string(kUpgradeHead) + kGpuTables + kUpgradeGpus + kEventClassEnum + kUpgradeTail;
    return sql.c_str();
}

const char* traceIndexSql() {
    return R"SQL(
CREATE INDEX IF NOT EXISTS WARPLINE_KERNELS_start ON WARPLINE_KERNELS(start);
CREATE INDEX IF NOT EXISTS RUNTIME_start ON CUPTI_ACTIVITY_KIND_RUNTIME(start);
CREATE INDEX IF NOT EXISTS MEMCPY_start ON CUPTI_ACTIVITY_KIND_MEMCPY(start);
CREATE INDEX IF NOT EXISTS MEMSET_start ON CUPTI_ACTIVITY_KIND_MEMSET(start);
CREATE INDEX IF NOT EXISTS SYNCHRONIZATION_start ON CUPTI_ACTIVITY_KIND_SYNCHRONIZATION(start);
CREATE INDEX IF NOT EXISTS NVTX_EVENTS_start ON NVTX_EVENTS(start);
)SQL";
}

} // namespace warpline::format
