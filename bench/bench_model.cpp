// warpline-bench-model: how fast the model loads a trace and computes each report, and how much
// memory the load takes.
//
//   warpline-bench-model TRACE [--load-only]
// Prints open+load time, peak RSS (VmHWM) after the load, store bytes per event, then the time of
// the kernel summary and of every report in ReportRegistry.

#include "reportregistry.h"
#include "summaries.h"
#include "traceerror.h"
#include "traceloader.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

using namespace warpline::model;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

// VmHWM (peak resident set) in MiB, from /proc/self/status.
double peakRssMiB() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmHWM:", 0) == 0)
            return std::stod(line.substr(6)) / 1024.0; // kB
    }
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    std::string path;
    bool loadOnly = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--load-only")
            loadOnly = true;
        else
            path = a;
    }
    if (path.empty()) {
        std::fprintf(stderr, "usage: warpline-bench-model TRACE [--load-only]\n");
        return 2;
    }
    try {
        auto t = Clock::now();
        const TraceStore store = TraceLoader::load(path);
        const double load = since(t);
        const double rss = peakRssMiB();
        const size_t events = store.eventCount();
        std::printf("trace: %s\n", path.c_str());
        std::printf("events: %zu (kernels %zu, API calls %zu, NVTX %zu, memops %zu, syncs %zu)\n",
                    events, store.kernelCount(), store.apiCallCount(), store.nvtxEventCount(),
                    store.memcpyCount() + store.memsetCount(), store.syncs().size());
        std::printf("%-28s %8.3f s\n", "open+load", load);
        std::printf("%-28s %8.0f MiB\n", "peak RSS after load (VmHWM)", rss);
        std::printf("%-28s %8.1f bytes/event (%.0f MiB)\n", "store memory",
                    events ? double(store.memoryBytes()) / double(events) : 0.0,
                    double(store.memoryBytes()) / (1024.0 * 1024.0));
        if (loadOnly)
            return 0;

        t = Clock::now();
        const auto kernels = kernelSummary(store);
        std::printf("%-28s %8.3f s (%zu rows)\n", "kernel summary (rows only)", since(t),
                    kernels.size());
        for (const ReportDef& report : ReportRegistry::all()) {
            t = Clock::now();
            const Table table = report.run(store, ReportOptions{});
            std::printf("report %-21s %8.3f s (%zu rows)\n", std::string(report.name).c_str(),
                        since(t), table.rowCount());
        }
        t = Clock::now();
        const Table grouped = ReportRegistry::find("kernels")->run(store, ReportOptions{true});
        std::printf("report %-21s %8.3f s (%zu rows)\n", "kernels --group-by-lc", since(t),
                    grouped.rowCount());
        std::printf("%-28s %8.0f MiB\n", "peak RSS at end (VmHWM)", peakRssMiB());
    } catch (const TraceError& e) {
        std::fprintf(stderr, "warpline-bench-model: %s\n", e.what());
        return 2;
    }
    return 0;
}
