#include "sourcelines.h"

#include "analysishelpers.h"
#include "saturating.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace warpline::model {

std::string sourceLocation(const TraceStore& store, NameId file, int32_t line) {
    std::string name = store.text(file);
    const auto slash = name.rfind('/');
    if (slash != std::string::npos && slash + 1 < name.size())
        name = name.substr(slash + 1);
    return line > 0 ? name + ":" + std::to_string(line) : name;
}

SourceReport sourceReport(const TraceStore& store, TimeWindow window) {
    SourceReport report;
    std::map<std::tuple<NameId, int32_t, NameId>, SourceRow> lines;
    std::map<std::pair<NameId, NameId>, SourceRow> functions;
    std::vector<std::tuple<NameId, int32_t, NameId>> seenLines;
    std::vector<std::pair<NameId, NameId>> seenFunctions;
    SourceRow withoutStack;
    withoutStack.withoutStack = true;
    UserFrames user(store);
    for (uint32_t t = 0; t < store.gpuTracks().size(); ++t) {
        const GpuTrack& track = store.gpuTracks()[t];
        const IndexRange in = track.startingIn(window.t0, window.t1);
        for (auto i = static_cast<uint32_t>(in.first); i < in.last; ++i) {
            if (track.kind(i) != GpuOpKind::Kernel)
                continue;
            const int64_t time = track.end(i) - track.start(i);
            accumulate(report.kernelTime, time);
            ++report.kernels;
            const auto frames = store.callStack(track.launch(i));
            if (frames.empty()) {
                accumulate(withoutStack.inclusive, time);
                accumulate(withoutStack.self, time);
                accumulate(withoutStack.own, time);
                ++withoutStack.kernels;
                if (withoutStack.ops.size() < SourceReport::kMaxOps)
                    withoutStack.ops.push_back({t, i});
                continue;
            }
            accumulate(report.withStack, time);
            ++report.kernelsWithStack;
            seenLines.clear();
            seenFunctions.clear();
            // Each row once per kernel, however often its line or function is on the stack.
            // The innermost frame of the program's own code, if any.
            size_t own = frames.size();
            for (size_t d = 0; d < frames.size() && own == frames.size(); ++d) {
                if (user.isUser(frames[d]))
                    own = d;
            }
            const auto count = [&](SourceRow& r, const CallFrame& f, int32_t line, bool innermost,
                                   bool ownFrame) {
                r.file = f.file;
                r.line = line;
                r.function = f.function;
                accumulate(r.inclusive, time);
                ++r.kernels;
                if (innermost)
                    accumulate(r.self, time);
                if (ownFrame)
                    accumulate(r.own, time);
                if (r.ops.size() < SourceReport::kMaxOps)
                    r.ops.push_back({t, i});
            };
            for (size_t d = 0; d < frames.size(); ++d) {
                const CallFrame& f = frames[d];
                const auto lineKey = std::tuple{f.file, f.line, f.function};
                const auto functionKey = std::pair{f.file, f.function};
                if (std::find(seenLines.begin(), seenLines.end(), lineKey) == seenLines.end()) {
                    seenLines.push_back(lineKey);
                    count(lines[lineKey], f, f.line, d == 0, d == own);
                }
                if (std::find(seenFunctions.begin(), seenFunctions.end(), functionKey) ==
                    seenFunctions.end()) {
                    seenFunctions.push_back(functionKey);
                    count(functions[functionKey], f, 0, d == 0, d == own);
                }
            }
        }
    }
    const auto byTime = [](const SourceRow& a, const SourceRow& b) {
        if (a.own != b.own)
            return a.own > b.own;
        return a.inclusive != b.inclusive ? a.inclusive > b.inclusive : a.self > b.self;
    };
    for (auto& [key, row] : lines)
        report.lines.push_back(std::move(row));
    for (auto& [key, row] : functions)
        report.functions.push_back(std::move(row));
    if (withoutStack.kernels > 0 && report.kernelsWithStack > 0) {
        report.lines.push_back(withoutStack);
        report.functions.push_back(std::move(withoutStack));
    }
    std::stable_sort(report.lines.begin(), report.lines.end(), byTime);
    std::stable_sort(report.functions.begin(), report.functions.end(), byTime);
    return report;
}

namespace {

Table table(const TraceStore& store, const SourceReport& report, bool byLine) {
    std::vector<Column> columns = {{"Own Code (ns)"}, {"Own Share (%)"}, {"GPU Time (ns)"},
                                   {"Share (%)"},     {"Self (ns)"},     {"Kernels"}};
    if (byLine) {
        columns.push_back({"Location", Column::Align::Left});
        columns.push_back({"Function", Column::Align::Left});
    } else {
        columns.push_back({"Function", Column::Align::Left});
        columns.push_back({"File", Column::Align::Left});
    }
    Table t(columns);
    const double all = static_cast<double>(std::max<int64_t>(1, report.kernelTime));
    for (const SourceRow& r : byLine ? report.lines : report.functions) {
        std::vector<Cell> cells = {r.own,       100.0 * static_cast<double>(r.own) / all,
                                   r.inclusive, 100.0 * static_cast<double>(r.inclusive) / all,
                                   r.self,      static_cast<int64_t>(r.kernels)};
        if (r.withoutStack) {
            cells.emplace_back(std::string("(no Python stack)"));
            cells.emplace_back(std::string(
                "launched with no Python code on the thread (PyTorch's autograd backward, C++ "
                "workers)"));
        } else if (byLine) {
            cells.emplace_back(sourceLocation(store, r.file, r.line));
            cells.emplace_back(store.text(r.function));
        } else {
            cells.emplace_back(store.text(r.function));
            cells.emplace_back(store.text(r.file));
        }
        t.addRow(std::move(cells));
    }
    return t;
}

} // namespace

Table sourceLinesTable(const TraceStore& store, const SourceReport& report) {
    return table(store, report, true);
}

Table sourceFunctionsTable(const TraceStore& store, const SourceReport& report) {
    return table(store, report, false);
}

bool isAutotunerFrame(std::string_view file, std::string_view function) {
    if (function.find("bench") == std::string_view::npos)
        return false;
    for (const std::string_view end :
         {"triton/runtime/autotuner.py", "triton/testing.py", "_inductor/select_algorithm.py",
          "_inductor/autotune_process.py", "_inductor/runtime/triton_heuristics.py"}) {
        if (file.ends_with(end))
            return true;
    }
    return false;
}

bool isAutotunerCall(const TraceStore& store, EventRef call,
                     std::unordered_map<uint32_t, int8_t>& cache) {
    const uint32_t chain = store.chainOfCall(call);
    if (chain == 0)
        return false;
    const auto [it, inserted] = cache.emplace(chain, 0);
    if (inserted)
        for (const CallFrame& f : store.callchains().chain(chain))
            if (isAutotunerFrame(store.text(f.file), store.text(f.function))) {
                it->second = 1;
                break;
            }
    return it->second != 0;
}

} // namespace warpline::model
