-- Upgrades a Warpline trace of format 1.x to format 2.0 in place (run it on a copy):
--   cp old.warpline new.warpline && sqlite3 new.warpline < tools/upgrade-trace-1-to-2.sql
-- Warpline itself opens 1.x traces as they are; this is for SQL and tools written for nsys
-- exports, which expect driver calls in CUPTI_ACTIVITY_KIND_RUNTIME (eventClass 1) and nsys's
-- TARGET_INFO_GPU and TARGET_INFO_CUDA_DEVICE. tst_tracewriter checks that the result has the
-- schema a 2.0 recording has.
.bail on
BEGIN;
-- Only 1.x traces have CUPTI_ACTIVITY_KIND_DRIVER: on any other file the first statement fails
-- ("no such table") and .bail stops before anything changes.

INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME
SELECT start, end, 1, globalTid, correlationId, nameId, returnValue, callchainId
FROM CUPTI_ACTIVITY_KIND_DRIVER;
DROP TABLE CUPTI_ACTIVITY_KIND_DRIVER;
DROP INDEX IF EXISTS RUNTIME_start;
CREATE INDEX RUNTIME_start ON CUPTI_ACTIVITY_KIND_RUNTIME(start);

ALTER TABLE TARGET_INFO_GPU RENAME TO WARPLINE_UPGRADE_GPU;
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

CREATE TABLE TARGET_INFO_CUDA_DEVICE (
    gpuId INTEGER NOT NULL, cudaId INTEGER NOT NULL, pid INTEGER, uuid TEXT NOT NULL,
    numMultiprocessors INTEGER);
INSERT INTO TARGET_INFO_CUDA_DEVICE
SELECT id, id, (SELECT pid FROM PROCESSES LIMIT 1), uuid, smCount FROM TARGET_INFO_GPU;

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

UPDATE WARPLINE_META SET value = '2.0' WHERE key = 'format_version';
PRAGMA user_version = 200;
COMMIT;
VACUUM;
