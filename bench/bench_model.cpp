// warpline-bench-model: how fast the model loads a trace and computes each report, and how much
// memory the load takes.
//
//   warpline-bench-model TRACE [--load-only] [--no-reference] [--sql] [--cancel-at F]
//                        [--report NAME]...
// Prints open+load time, the time SQLite takes for a kernel GROUP BY over the same file (before and
// after the load) and the ratio of the two, peak RSS (VmHWM) and resident memory (VmRSS) after
// the load, store bytes per event, then the time of the kernel summary and of every report in
// ReportRegistry.
// --no-reference skips the GROUP BY (for profiling the load alone, and for A/B runs of two builds).
// --sql loads through SQL only (TraceLoader::Options::readPages off), to compare with the page
// reader in one run. --cancel-at F cancels the load once progress reaches F (0..1) and prints how
// long Cancel took to be honoured, and how long the progress callback went silent at most.
// --report NAME (repeatable) times only the named reports (for profiling one of them).

#include "gpuactivity.h"
#include "reportregistry.h"
#include "summaries.h"
#include "traceerror.h"
#include "traceloader.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sqlite3.h>
#include <string>
#include <vector>

using namespace warpline::model;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

// A /proc/self/status field in kB (VmHWM: peak resident set, VmRSS: resident now), in MiB.
double statusMiB(const char* field) {
    std::ifstream status("/proc/self/status");
    std::string line;
    const size_t n = std::string(field).size();
    while (std::getline(status, line)) {
        if (line.rfind(field, 0) == 0)
            return std::stod(line.substr(n)) / 1024.0; // kB
    }
    return 0;
}
double peakRssMiB() {
    return statusMiB("VmHWM:");
}

// The same question asked of SQLite itself: kernel time per name, as `warpline-stats --report
// kernels` answers it (which also computes medians and deviations). Returns seconds, or -1 when
// the file has no kernel view. Loading is reported as a ratio to this, measured in the same run
// on the same file, so the figure survives a slower or busier machine (issue 16).
double sqliteGroupBySeconds(const std::string& path) {
    static const char* const kQuery =
        "SELECT s.value, SUM(k.end - k.start) AS total, COUNT(*), AVG(k.end - k.start), "
        "MIN(k.end - k.start), MAX(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN "
        "StringIds s ON s.id = k.demangledName GROUP BY s.value ORDER BY total DESC";
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
        sqlite3_close(db);
        return -1;
    }
    const auto t = Clock::now();
    sqlite3_stmt* st = nullptr;
    double seconds = -1;
    if (sqlite3_prepare_v2(db, kQuery, -1, &st, nullptr) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
        }
        seconds = since(t);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return seconds;
}

} // namespace

int main(int argc, char** argv) {
    std::string path;
    bool loadOnly = false;
    bool reference = true;
    TraceLoader::Options options;
    double cancelAt = -1;
    std::vector<std::string> only;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--load-only")
            loadOnly = true;
        else if (a == "--no-reference")
            reference = false;
        else if (a == "--sql")
            options.readPages = false;
        else if (a == "--cancel-at" && i + 1 < argc)
            cancelAt = std::stod(argv[++i]);
        else if (a == "--report" && i + 1 < argc)
            only.emplace_back(argv[++i]);
        else
            path = a;
    }
    if (path.empty()) {
        std::fprintf(stderr, "usage: warpline-bench-model TRACE [--load-only] [--no-reference] "
                             "[--sql] [--cancel-at F] [--report NAME]...\n");
        return 2;
    }
    try {
        if (cancelAt >= 0) {
            Clock::time_point asked{};
            Clock::time_point last = Clock::now();
            double longestSilence = 0;
            options.progress = [&](double f) {
                const auto now = Clock::now();
                longestSilence =
                    std::max(longestSilence, std::chrono::duration<double>(now - last).count());
                last = now;
                if (f < cancelAt)
                    return true;
                if (asked == Clock::time_point{})
                    asked = now;
                return false;
            };
            const auto t = Clock::now();
            try {
                TraceLoader::load(path, options);
                std::printf("loaded before progress reached %.2f (%.3f s); progress silent at "
                            "most %.3f s\n",
                            cancelAt, since(t), longestSilence);
            } catch (const LoadCancelled&) {
                std::printf("cancel at %.2f: asked after %.3f s, honoured %.3f s later; progress "
                            "silent at most %.3f s\n",
                            cancelAt, std::chrono::duration<double>(asked - t).count(),
                            since(asked), longestSilence);
            }
            return 0;
        }
        // SQLite's GROUP BY before and after the load; the faster of the two is the reference.
        const double groupByBefore = reference ? sqliteGroupBySeconds(path) : -1;
        auto t = Clock::now();
        const TraceStore store = TraceLoader::load(path, options);
        const double load = since(t);
        const double rss = peakRssMiB();
        const double resident = statusMiB("VmRSS:");
        const double groupByAfter = reference ? sqliteGroupBySeconds(path) : -1;
        const double groupBy = std::min(groupByBefore, groupByAfter);
        const size_t events = store.eventCount();
        std::printf("trace: %s\n", path.c_str());
        std::printf("events: %zu (kernels %zu, API calls %zu, NVTX %zu, memops %zu, syncs %zu)\n",
                    events, store.kernelCount(), store.apiCallCount(), store.nvtxEventCount(),
                    store.memcpyCount() + store.memsetCount(), store.syncs().size());
        std::printf("%-28s %8.3f s\n", "open+load", load);
        if (groupBy > 0)
            std::printf("%-28s %8.3f s (before the load %.3f s, after %.3f s)\n"
                        "%-28s %8.2fx\n",
                        "SQLite kernel GROUP BY", groupBy, groupByBefore, groupByAfter,
                        "load / SQLite GROUP BY", load / groupBy);
        std::printf("%-28s %8.0f MiB\n", "peak RSS after load (VmHWM)", rss);
        std::printf("%-28s %8.0f MiB (%.1f bytes/event)\n", "resident after load (VmRSS)", resident,
                    events ? resident * 1024 * 1024 / double(events) : 0.0);
        std::printf("%-28s %8.1f bytes/event (%.0f MiB)\n", "store memory",
                    events ? double(store.memoryBytes()) / double(events) : 0.0,
                    double(store.memoryBytes()) / (1024.0 * 1024.0));
        if (loadOnly)
            return 0;

        for (const std::string& name : only) {
            if (!ReportRegistry::find(name)) {
                std::fprintf(stderr, "warpline-bench-model: no report named %s\n", name.c_str());
                return 2;
            }
        }
        if (only.empty()) {
            // What the loader computes for the overview strip and the opening view.
            t = Clock::now();
            const GpuActivity activity = gpuActivity(store);
            std::printf("%-28s %8.3f s (window %.0f-%.0f ns)\n", "GPU activity (strip, view)",
                        since(t), activity.t0, activity.t1);
            t = Clock::now();
            const auto kernels = kernelSummary(store);
            std::printf("%-28s %8.3f s (%zu rows)\n", "kernel summary (rows only)", since(t),
                        kernels.size());
        }
        for (const ReportDef& report : ReportRegistry::all()) {
            if (!only.empty() &&
                std::find(only.begin(), only.end(), std::string(report.name)) == only.end())
                continue;
            t = Clock::now();
            const Table table = report.run(store, ReportOptions{});
            std::printf("report %-21s %8.3f s (%zu rows)\n", std::string(report.name).c_str(),
                        since(t), table.rowCount());
        }
        if (!only.empty()) {
            std::printf("%-28s %8.0f MiB\n", "peak RSS at end (VmHWM)", peakRssMiB());
            return 0;
        }
        t = Clock::now();
        ReportOptions byLaunchConfig;
        byLaunchConfig.groupByLaunchConfig = true;
        const Table grouped = ReportRegistry::find("kernels")->run(store, byLaunchConfig);
        std::printf("report %-21s %8.3f s (%zu rows)\n", "kernels --group-by-lc", since(t),
                    grouped.rowCount());
        std::printf("%-28s %8.0f MiB\n", "peak RSS at end (VmHWM)", peakRssMiB());
    } catch (const TraceError& e) {
        std::fprintf(stderr, "warpline-bench-model: %s\n", e.what());
        return 2;
    }
    return 0;
}
