#include "stackreaders.h"

#include "cpusamplesdata.h"
#include "loaderstage.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

namespace warpline::model {

// CUDA_CALLCHAINS and the API calls that refer to them. Read only when the table has rows, so a
// trace without stacks pays no second pass over CUPTI_ACTIVITY_KIND_RUNTIME. A module
// "file.py:123" (a Python frame, --python-stacks) splits into file and line.
void TraceLoader::StackReaders::readCallchains(const ReadSource& in, TraceStrings& strings,
                                               Callchains& out) {
    if (!in.schema.hasTable("CUDA_CALLCHAINS") ||
        !in.schema.hasTable("CUPTI_ACTIVITY_KIND_RUNTIME") ||
        !in.schema.hasColumn("CUPTI_ACTIVITY_KIND_RUNTIME", "callchainId"))
        return;
    constexpr size_t kMaxFrames = 10'000'000;
    {
        struct Row {
            int64_t id, depth;
            NameId function, file;
            int32_t line;
        };
        std::vector<Row> rows;
        std::unordered_map<int64_t, std::pair<NameId, int32_t>> modules; // StringIds id -> split
        Statement st(in.db, in.select("CUDA_CALLCHAINS", {"id", "symbol", "module", "stackDepth"}));
        while (st.step() && rows.size() < kMaxFrames) {
            in.progress.rowRead();
            const int64_t id = st.i64(0), depth = st.i64(3);
            if (id <= 0 || id > UINT32_MAX || depth < 0 || depth > 4096)
                continue;
            auto known = modules.find(st.i64(2));
            if (known == modules.end()) {
                const std::string module = strings.text(strings.name(st.i64(2)));
                const auto colon = module.rfind(':');
                int32_t line = 0;
                std::string file = module;
                if (colon != std::string::npos && colon + 1 < module.size() &&
                    module.size() - colon <= 10 &&
                    module.find_first_not_of("0123456789", colon + 1) == std::string::npos) {
                    line = static_cast<int32_t>(std::stol(module.substr(colon + 1)));
                    file = module.substr(0, colon);
                }
                known = modules.emplace(st.i64(2), std::pair{strings.intern(file), line}).first;
            }
            rows.push_back(
                {id, depth, strings.name(st.i64(1)), known->second.first, known->second.second});
        }
        std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
            return a.id != b.id ? a.id < b.id : a.depth < b.depth;
        });
        for (size_t i = 0; i < rows.size();) {
            size_t j = i;
            const auto begin = static_cast<uint32_t>(out.m_frames.size());
            for (; j < rows.size() && rows[j].id == rows[i].id; ++j)
                if (j == i || rows[j].depth != rows[j - 1].depth) // a repeated depth: first kept
                    out.m_frames.push_back({rows[j].function, rows[j].file, rows[j].line});
            out.m_chains[static_cast<uint32_t>(rows[i].id)] = {
                begin, static_cast<uint32_t>(out.m_frames.size())};
            i = j;
        }
    }
    if (out.m_chains.empty())
        return;
    Statement st(in.db, "SELECT correlationId, callchainId FROM CUPTI_ACTIVITY_KIND_RUNTIME "
                        "WHERE callchainId IS NOT NULL");
    while (st.step()) {
        in.progress.rowRead();
        const int64_t chain = st.i64(1);
        if (chain > 0 && chain <= UINT32_MAX && out.m_chains.count(static_cast<uint32_t>(chain)))
            out.m_byCorrelation[Callchains::callKey(0, static_cast<uint32_t>(st.i64(0)))] =
                static_cast<uint32_t>(chain);
    }
}

void TraceLoader::StackReaders::readCpuSamples(const ReadSource& in, TraceStrings& strings,
                                               const std::map<int64_t, NameId>& threadNames,
                                               const std::string& fileName, CpuSamples& out,
                                               std::vector<std::string>& warnings) {
    // Bounds on what a file can make the loader hold (a 1 kHz sample a thread is 3.6 million
    // an hour of one busy thread).
    constexpr size_t kMaxSamples = 20'000'000, kMaxFrames = 20'000'000, kMaxSwitches = 50'000'000;
    bool cut = false; // a bound was reached: the rest is left out, with a warning
    std::map<int64_t, ThreadCpuActivity> threads;
    if (in.schema.hasTable("COMPOSITE_EVENTS") && in.schema.hasTable("SAMPLING_CALLCHAINS")) {
        // The frames of every sample, deduplicated into stacks.
        struct Row {
            int64_t id, depth;
            NameId function, file;
        };
        std::vector<Row> rows;
        {
            Statement st(
                in.db, in.select("SAMPLING_CALLCHAINS", {"id", "stackDepth", "symbol", "module"}));
            while (st.step()) {
                if (rows.size() >= kMaxFrames) {
                    cut = true;
                    break;
                }
                in.progress.rowRead();
                const int64_t depth = st.i64(1);
                if (depth < 0 || depth > 4096)
                    continue;
                rows.push_back(
                    {st.i64(0), depth, strings.name(st.i64(2)), strings.name(st.i64(3))});
            }
        }
        std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
            return a.id != b.id ? a.id < b.id : a.depth < b.depth;
        });
        std::unordered_map<int64_t, uint32_t> stackOfSample;
        std::map<std::vector<std::pair<NameId, NameId>>, uint32_t> stacks;
        std::vector<std::pair<NameId, NameId>> frames;
        for (size_t i = 0; i < rows.size();) {
            size_t j = i;
            frames.clear();
            for (; j < rows.size() && rows[j].id == rows[i].id; ++j)
                if ((j == i || rows[j].depth != rows[j - 1].depth) && frames.size() < 512)
                    frames.emplace_back(rows[j].function, rows[j].file);
            const auto [it, added] =
                stacks.try_emplace(frames, static_cast<uint32_t>(stacks.size()));
            if (added) {
                if (out.m_stackBegin.empty())
                    out.m_stackBegin.push_back(0);
                for (const auto& [function, file] : frames)
                    out.m_frames.push_back({function, file, 0});
                out.m_stackBegin.push_back(static_cast<uint32_t>(out.m_frames.size()));
            }
            stackOfSample[rows[i].id] = it->second;
            i = j;
        }
        rows = {};
        Statement st(in.db,
                     in.select("COMPOSITE_EVENTS", {"id", "start", "globalTid", "threadState"}));
        uint64_t kept = 0;
        while (st.step()) {
            if (kept >= kMaxSamples) {
                cut = true;
                break;
            }
            in.progress.rowRead();
            const int64_t start = st.i64(1);
            if (!plausibleTime(start))
                continue;
            const auto stack = stackOfSample.find(st.i64(0));
            ThreadCpuActivity& t = threads[st.i64(2)];
            t.sampleTimes.push_back(start);
            t.sampleStacks.push_back(stack == stackOfSample.end() ? UINT32_MAX : stack->second);
            // nsys: 1 Running; 2 and 3 (interruptible, uninterruptible sleep), 7 waiting.
            const int64_t state = st.i64(3);
            t.sampleWaiting.push_back(state == 2 || state == 3 || state == 7);
            ++kept;
        }
    }
    if (in.schema.hasTable("SCHED_EVENTS")) {
        struct Switch {
            int64_t time;
            CpuState state;
        };
        std::map<int64_t, std::vector<Switch>> switches;
        Statement st(in.db,
                     in.select("SCHED_EVENTS", {"start", "isSchedIn", "globalTid", "threadState"}));
        uint64_t kept = 0;
        while (st.step()) {
            if (kept >= kMaxSwitches) {
                cut = true;
                break;
            }
            in.progress.rowRead();
            const int64_t start = st.i64(0);
            if (!plausibleTime(start))
                continue;
            // Off a CPU while still runnable (state Running) is a preemption: it still wants to
            // run. Older exports have no threadState: every switch off counts as a wait.
            CpuState state = CpuState::Running;
            if (st.i64(1) == 0)
                state = st.isNull(3) || st.i64(3) != 1 ? CpuState::Waiting : CpuState::Running;
            switches[st.i64(2)].push_back({start, state});
            ++kept;
        }
        for (auto& [tid, list] : switches) {
            std::stable_sort(list.begin(), list.end(),
                             [](const Switch& a, const Switch& b) { return a.time < b.time; });
            ThreadCpuActivity& t = threads[tid];
            for (const Switch& s : list) {
                if (!t.states.empty() && t.states.back() == s.state)
                    continue;
                if (!t.stateTimes.empty() && t.stateTimes.back() == s.time) {
                    t.states.back() = s.state;
                    continue;
                }
                t.stateTimes.push_back(s.time);
                t.states.push_back(s.state);
            }
        }
    }
    if (cut)
        warnings.push_back(fileName + " holds more CPU samples than Warpline reads (" +
                           std::to_string(kMaxSamples) + " samples, " + std::to_string(kMaxFrames) +
                           " stack frames, " + std::to_string(kMaxSwitches) +
                           " thread switches): the rest are left out");
    // Per stack: whether it holds a Python frame (-1: not yet known).
    std::vector<int8_t> pythonStack(out.stackCount(), -1);
    const auto hasPython = [&](uint32_t id) {
        if (id >= pythonStack.size())
            return false;
        if (pythonStack[id] < 0) {
            pythonStack[id] = 0;
            for (const CallFrame& f : out.stack(id)) {
                const std::string& file = strings.text(f.file);
                if (file.ends_with(".py") || format::isPythonInterpreterModule(file)) {
                    pythonStack[id] = 1;
                    break;
                }
            }
        }
        return pythonStack[id] == 1;
    };
    for (auto& entry : threads) {
        const int64_t tid = entry.first;
        ThreadCpuActivity& t = entry.second;
        t.globalTid = tid;
        // Samples by time (rows need not come in order).
        std::vector<size_t> order(t.sampleTimes.size());
        for (size_t i = 0; i < order.size(); ++i)
            order[i] = i;
        std::stable_sort(order.begin(), order.end(),
                         [&t](size_t a, size_t b) { return t.sampleTimes[a] < t.sampleTimes[b]; });
        ThreadCpuActivity sorted;
        sorted.globalTid = tid;
        if (const auto name = threadNames.find(tid); name != threadNames.end())
            sorted.name = name->second;
        sorted.stateTimes = std::move(t.stateTimes);
        sorted.states = std::move(t.states);
        for (size_t i : order) {
            sorted.sampleTimes.push_back(t.sampleTimes[i]);
            sorted.sampleStacks.push_back(t.sampleStacks[i]);
            sorted.sampleWaiting.push_back(t.sampleWaiting[i]);
            sorted.python = sorted.python || hasPython(t.sampleStacks[i]);
        }
        out.m_threads.push_back(std::move(sorted));
    }
}

} // namespace warpline::model
