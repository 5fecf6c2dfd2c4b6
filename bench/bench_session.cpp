// warpline-bench-session: how long a multi-rank job takes to open as one session
// (TraceSession::open: files loaded in parallel, then merged) against loading its files one after
// another (TraceLoader::load each, every store kept), and what the merge alone costs.
//
//   warpline-bench-session DIR|FILE... [--rounds N]
// Each round runs both, alternating which goes first; prints each time, then the medians, the
// events, and the bytes the stores hold (memoryBytes) before and after merging.

#include "traceerror.h"
#include "traceloader.h"
#include "tracesession.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

using namespace warpline::model;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args;
    int rounds = 3;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--rounds" && i + 1 < argc)
            rounds = std::max(1, std::atoi(argv[++i]));
        else
            args.push_back(a);
    }
    if (args.empty()) {
        std::fprintf(stderr, "usage: warpline-bench-session DIR|FILE... [--rounds N]\n");
        return 2;
    }
    try {
        const std::vector<std::string> paths = TraceSession::expandPaths(args);
        std::printf("%zu files, %u hardware threads\n", paths.size(),
                    std::thread::hardware_concurrency());
        std::vector<double> sequential, session, merge;
        size_t events = 0;
        size_t bytesApart = 0, bytesMerged = 0;
        const auto loadAll = [&] {
            const auto t0 = Clock::now();
            std::vector<TraceStore> stores;
            for (const std::string& p : paths)
                stores.push_back(TraceLoader::load(p));
            sequential.push_back(since(t0));
            bytesApart = 0;
            for (const TraceStore& s : stores)
                bytesApart += s.memoryBytes();
            const auto t1 = Clock::now();
            const TraceStore merged = TraceSession::merge(std::move(stores));
            merge.push_back(since(t1));
            bytesMerged = merged.memoryBytes();
        };
        const auto openSession = [&] {
            const auto t0 = Clock::now();
            const TraceStore store = TraceSession::open(paths);
            session.push_back(since(t0));
            events = store.eventCount();
        };
        for (int r = 0; r < rounds; ++r) {
            if (r % 2 == 0) {
                loadAll();
                openSession();
            } else {
                openSession();
                loadAll();
            }
            std::printf("round %d: one after another %.2f s (merge of those %.3f s), "
                        "TraceSession::open %.2f s\n",
                        r + 1, sequential.back(), merge.back(), session.back());
            std::fflush(stdout);
        }
        std::printf("median: one after another %.2f s, TraceSession::open %.2f s (%.2fx), merge "
                    "alone %.3f s\n",
                    median(sequential), median(session), median(sequential) / median(session),
                    median(merge));
        std::printf("%zu events; store bytes %.1f MiB apart, %.1f MiB merged (%.1f bytes per "
                    "event)\n",
                    events, bytesApart / 1048576.0, bytesMerged / 1048576.0,
                    static_cast<double>(bytesMerged) /
                        static_cast<double>(std::max<size_t>(1, events)));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "warpline-bench-session: %s\n", e.what());
        return 2;
    }
    return 0;
}
