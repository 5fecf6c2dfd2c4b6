// Writer throughput and size on disk: synthetic CUPTI-shaped records through the real decoder and
// TraceWriter on one thread, as the collector's writer thread runs them.
//
//   warpline-bench-writer [--records N] [--dir DIR]
// Prints records per second (decoder + writer, and writer alone) and bytes per kernel record with
// indexes included.

#include "activitydecoder.h"
#include "tracewriter.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <cupti_runtime_cbid.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace warpline::collector;
using namespace warpline::format;
namespace format = warpline::format;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kT0 = 1'000'000'000ULL;

std::vector<std::string> kernelNames(int n) {
    std::vector<std::string> names;
    for (int i = 0; i < n; ++i)
        names.push_back("_Z" + std::to_string(12 + std::to_string(i).size()) + "bench_kernel" +
                        std::to_string(i) + "PKfPfi");
    return names;
}

double seconds(Clock::time_point a) {
    return std::chrono::duration<double>(Clock::now() - a).count();
}

int64_t fileSize(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

// A launch-loop mix: every kernel has its cudaLaunchKernel; an NVTX range every 10 launches.
double decodeAndWrite(const std::string& path, size_t launches) {
    ::unlink(path.c_str());
    const auto names = kernelNames(200);
    format::TraceWriter writer(path);
    writer.setProcess(1000, "bench");
    ActivityDecoder decoder(writer, kT0);
    CUpti_ActivityAPI api;
    std::memset(&api, 0, sizeof api);
    api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    api.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
    api.processId = 1000;
    api.threadId = 1001;
    CUpti_ActivityKernel10 k;
    std::memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.gridX = 1024;
    k.gridY = k.gridZ = 1;
    k.blockX = 256;
    k.blockY = k.blockZ = 1;
    k.registersPerThread = 32;
    CUpti_ActivityMarker2 marker;
    std::memset(&marker, 0, sizeof marker);
    marker.kind = CUPTI_ACTIVITY_KIND_MARKER;
    marker.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    marker.objectId.pt.processId = 1000;
    marker.objectId.pt.threadId = 1001;
    marker.name = "step";

    const auto t = Clock::now();
    uint64_t now = kT0;
    for (size_t i = 0; i < launches; ++i) {
        if (i % 10 == 0) {
            marker.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
            marker.id = static_cast<uint32_t>(i / 10 + 1);
            marker.timestamp = now;
            decoder.decode(reinterpret_cast<CUpti_Activity*>(&marker));
        }
        api.start = now;
        api.end = now + 3000;
        api.correlationId = static_cast<uint32_t>(i + 1);
        decoder.decode(reinterpret_cast<CUpti_Activity*>(&api));
        k.start = now + 20'000;
        k.end = now + 25'000 + (i % 7) * 100;
        k.correlationId = api.correlationId;
        k.streamId = 7 + i % 4;
        k.gridId = static_cast<int64_t>(i);
        k.name = names[i % names.size()].c_str();
        decoder.decode(reinterpret_cast<CUpti_Activity*>(&k));
        if (i % 10 == 9) {
            marker.flags = CUPTI_ACTIVITY_FLAG_MARKER_END;
            marker.timestamp = now + 4000;
            marker.name = nullptr;
            decoder.decode(reinterpret_cast<CUpti_Activity*>(&marker));
            marker.name = "step";
        }
        now += 5000;
        if (i % 4096 == 0)
            writer.commitIfDue();
    }
    decoder.finish();
    writer.finish("complete");
    const double s = seconds(t);
    return static_cast<double>(decoder.recordsDecoded()) / s;
}

// Kernels only, written straight to the writer: bytes on disk per kernel record.
double kernelsOnly(const std::string& path, size_t kernels, double* bytesPerKernel) {
    ::unlink(path.c_str());
    const auto names = kernelNames(200);
    const auto t = Clock::now();
    {
        format::TraceWriter writer(path);
        writer.setProcess(1000, "bench");
        format::KernelRecord k;
        k.gridX = 1024;
        k.blockX = 256;
        k.registersPerThread = 32;
        int64_t now = 0;
        for (size_t i = 0; i < kernels; ++i) {
            k.start = now;
            k.end = now + 5000 + static_cast<int64_t>(i % 7) * 100;
            k.correlationId = static_cast<uint32_t>(i + 1);
            k.streamId = 7 + i % 4;
            k.gridId = static_cast<int64_t>(i);
            k.mangledName = names[i % names.size()];
            writer.addKernel(k);
            now += 5200;
            if (i % 4096 == 0)
                writer.commitIfDue();
        }
        writer.finish("complete");
    }
    const double s = seconds(t);
    const int64_t empty = [&] {
        const std::string e = path + ".empty";
        ::unlink(e.c_str());
        format::TraceWriter w(e);
        w.finish("complete");
        const int64_t size = fileSize(e);
        ::unlink(e.c_str());
        return size;
    }();
    *bytesPerKernel = static_cast<double>(fileSize(path) - empty) / static_cast<double>(kernels);
    return static_cast<double>(kernels) / s;
}

} // namespace

int main(int argc, char** argv) {
    size_t records = 1'000'000;
    std::string dir = "/tmp";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--records"))
            records = std::stoull(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--dir"))
            dir = argv[i + 1];
    }
    const std::string mixed = dir + "/bench-writer-mixed.warpline";
    const std::string kernels = dir + "/bench-writer-kernels.warpline";
    // Each launch is a runtime record and a kernel record, plus an NVTX start/end per 10.
    const size_t launches = records / 2;
    const double mixedRate = decodeAndWrite(mixed, launches);
    double bytesPerKernel = 0;
    const double kernelRate = kernelsOnly(kernels, records, &bytesPerKernel);
    std::printf("decoder+writer, launch mix (%zu launches): %.2f M records/s\n", launches,
                mixedRate / 1e6);
    std::printf("writer, kernels only (%zu kernels):          %.2f M records/s\n", records,
                kernelRate / 1e6);
    std::printf("size on disk per kernel record (indexes included): %.1f bytes\n", bytesPerKernel);
    std::printf("mixed trace: %.1f MB\n", static_cast<double>(fileSize(mixed)) / 1e6);
    ::unlink(mixed.c_str());
    ::unlink(kernels.c_str());
    return 0;
}
