#pragma once

// Test helper for the views and app tests: a trace the way a real recording looks (written with the
// collector's TraceWriter), small enough to reason about:
//  - process "fixture" (pid 4242), thread "main" (tid 100), device 0 "Fixture GPU";
//  - `launches` cudaLaunchKernel calls, 2 us apart, 1.5 us long; each launches a 3 us kernel on
//    stream 7 (alternately "gemm_kernel" and "relu_kernel"), so the GPU falls behind and the
//    launch queue grows (run-ahead);
//  - then cudaDeviceSynchronize until the last kernel ends (a sync stall), a blocking cudaMemcpy
//    with a Device-to-Host copy on stream 13 ("copy stream");
//  - NVTX ranges "step" (around everything) and "launch loop" (around the launches).
// Real recordings (tests/data/*.warpline) are preferred where a test can use them.

#include "tracewriter.h"

#include <QString>

namespace viewsfixture {

struct Fixture {
    static constexpr uint32_t kPid = 4242;
    static constexpr uint32_t kTid = 100;
    static constexpr int64_t kLaunchPeriod = 2000;
    static constexpr int64_t kLaunchDuration = 1500;
    static constexpr int64_t kKernelDuration = 3000;
    static constexpr int64_t kFirstLaunch = 10'000;
};

inline int64_t kernelStart(int i) {
    // The first kernel starts 4 us after its launch; each then waits for the one before it.
    return Fixture::kFirstLaunch + 4000 + int64_t{i} * Fixture::kKernelDuration;
}

inline void writeTrace(const QString& path, int launches = 200) {
    using namespace warpline::format;
    TraceWriter::Options options;
    options.overwrite = true;
    TraceWriter w(path.toStdString(), options);
    w.setProcess(Fixture::kPid, "fixture");
    w.setMeta("workload", "fixture");
    DeviceRecord device;
    device.id = 0;
    device.name = "Fixture GPU";
    device.smCount = 132;
    device.computeMajor = 9;
    w.addDevice(device);
    w.addContext({1, 0, 7});
    w.addStream({1, 7, 0, 1});
    w.addStream({1, 13, 0, 2});
    NameRecord threadName;
    threadName.object = NameRecord::Object::Thread;
    threadName.processId = Fixture::kPid;
    threadName.threadId = Fixture::kTid;
    threadName.name = "main";
    w.addName(threadName);
    NameRecord streamName;
    streamName.object = NameRecord::Object::Stream;
    streamName.contextId = 1;
    streamName.streamId = 13;
    streamName.name = "copy stream";
    w.addName(streamName);

    const auto api = [&](int64_t start, int64_t end, uint32_t correlation, const char* name) {
        ApiRecord r;
        r.start = start;
        r.end = end;
        r.processId = Fixture::kPid;
        r.threadId = Fixture::kTid;
        r.correlationId = correlation;
        r.name = name;
        w.addApi(r);
    };
    const auto marker = [&](MarkerRecord::Kind kind, int64_t t, uint32_t id, const char* name) {
        MarkerRecord m;
        m.kind = kind;
        m.timestamp = t;
        m.id = id;
        m.processId = Fixture::kPid;
        m.threadId = Fixture::kTid;
        m.name = name;
        w.addMarker(m);
    };

    marker(MarkerRecord::Kind::Start, 1000, 1, "step");
    marker(MarkerRecord::Kind::Start, Fixture::kFirstLaunch - 500, 2, "launch loop");
    uint32_t correlation = 1;
    for (int i = 0; i < launches; ++i, ++correlation) {
        const int64_t start = Fixture::kFirstLaunch + int64_t{i} * Fixture::kLaunchPeriod;
        api(start, start + Fixture::kLaunchDuration, correlation, "cudaLaunchKernel_v7000");
        KernelRecord k;
        k.start = kernelStart(i);
        k.end = k.start + Fixture::kKernelDuration;
        k.contextId = 1;
        k.streamId = 7;
        k.correlationId = correlation;
        k.mangledName = i % 2 == 0 ? "_Z11gemm_kernelPfS_i" : "_Z11relu_kernelPfi";
        k.gridX = 256;
        k.blockX = 128;
        k.registersPerThread = 40;
        k.staticSharedMemory = 4096;
        k.dynamicSharedMemory = 1024;
        w.addKernel(k);
    }
    const int64_t loopEnd = Fixture::kFirstLaunch + int64_t{launches - 1} * Fixture::kLaunchPeriod +
                            Fixture::kLaunchDuration;
    marker(MarkerRecord::Kind::End, loopEnd + 100, 2, "launch loop");
    const int64_t lastKernelEnd = kernelStart(launches - 1) + Fixture::kKernelDuration;
    const int64_t syncStart = loopEnd + 500;
    const int64_t syncEnd = lastKernelEnd + 800;
    api(syncStart, syncEnd, correlation, "cudaDeviceSynchronize_v3020");
    SyncRecord sync;
    sync.start = syncStart + 200;
    sync.end = syncEnd - 100;
    sync.contextId = 1;
    sync.correlationId = correlation;
    sync.syncType = 4;
    w.addSync(sync);
    ++correlation;

    const int64_t copyCall = syncEnd + 2000;
    api(copyCall, copyCall + 30'000, correlation, "cudaMemcpy_v3020");
    MemcpyRecord copy;
    copy.start = copyCall + 5000;
    copy.end = copyCall + 28'000;
    copy.contextId = 1;
    copy.streamId = 13;
    copy.correlationId = correlation;
    copy.bytes = 64 << 20;
    copy.copyKind = 2; // Device-to-Host
    copy.srcKind = 3;
    copy.dstKind = 1;
    w.addMemcpy(copy);
    marker(MarkerRecord::Kind::End, copyCall + 31'000, 1, "step");
    w.finish("complete");
}

} // namespace viewsfixture
