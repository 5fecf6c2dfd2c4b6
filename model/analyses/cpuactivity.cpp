#include "cpuactivity.h"

#include "analysishelpers.h"
#include "cpusamplesdata.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>

namespace warpline::model {

namespace {

// Frames of CPython taking the GIL back (a thread that waits for another Python thread).
bool isGilFrame(std::string_view function) {
    return function == "take_gil" || function == "PyEval_RestoreThread" ||
           function == "PyEval_AcquireThread" || function == "PyGILState_Ensure" ||
           function == "PyEval_AcquireLock" || function == "_PyEval_AcquireLock";
}

bool isSleepFrame(std::string_view function) {
    return function == "clock_nanosleep" || function == "nanosleep" || function == "usleep" ||
           function == "pysleep" || function == "time_sleep";
}

// System calls that unmap or remap host memory (glibc's names): the cost of releasing a large
// buffer, which the kernel pays page by page.
bool isHostMemoryFrame(std::string_view function) {
    return function == "munmap" || function == "__munmap" || function == "madvise" ||
           function == "__madvise" || function == "mremap" || function == "__mremap";
}

// System calls that read or write files, pipes and sockets (glibc's names): a thread in one is
// doing I/O, running (copying data in the kernel) or about to wait for it.
bool isIoFrame(std::string_view function) {
    static constexpr std::string_view kNames[] = {
        "read",           "__read",       "__libc_read", "pread64",         "__pread64",
        "readv",          "preadv",       "preadv64",    "preadv2",         "write",
        "__write",        "__libc_write", "pwrite64",    "__pwrite64",      "writev",
        "pwritev",        "pwritev64",    "pwritev2",    "fsync",           "__fsync",
        "fdatasync",      "__fdatasync",  "msync",       "__msync",         "sync_file_range",
        "recv",           "__libc_recv",  "recvfrom",    "__libc_recvfrom", "recvmsg",
        "__libc_recvmsg", "send",         "__libc_send", "sendto",          "sendmsg",
        "__libc_sendmsg", "sendfile",     "sendfile64",  "splice",          "copy_file_range"};
    return std::find(std::begin(kNames), std::end(kNames), function) != std::end(kNames);
}

// Counts (samples or ns) per frame (function, file).
template <typename Count> using FrameCounts = std::map<std::pair<NameId, NameId>, Count>;

// The frame with the largest count (the first on ties, in key order), and that count into `most`.
template <typename Count> CallFrame mostCounted(const FrameCounts<Count>& counts, Count& most) {
    CallFrame frame;
    for (const auto& [key, n] : counts)
        if (n > most) {
            most = n;
            frame = CallFrame{key.first, key.second, 0};
        }
    return frame;
}

// The time one sample stands for: WARPLINE_META cpu_sampling_rate_hz, else 1 ms (nsys's default
// rate is about 1 kHz too).
double samplingPeriod(const TraceStore& store) {
    const auto rate = metaInteger(store.meta(), "cpu_sampling_rate_hz");
    return rate && *rate > 0 && *rate <= 1'000'000 ? 1e9 / static_cast<double>(*rate) : 1e6;
}

} // namespace

const CallFrame* frameOf(const TraceStore& store, std::span<const CallFrame> stack) {
    const CallFrame* python = nullptr;
    for (const CallFrame& f : stack) {
        if (isProgramFrame(store, f))
            return &f;
        if (!python && store.text(f.file).ends_with(".py"))
            python = &f;
    }
    return python ? python : stack.empty() ? nullptr : &stack.front();
}

bool isProgramFrame(const TraceStore& store, const CallFrame& frame) {
    const std::string_view file = store.text(frame.file);
    if (!file.ends_with(".py") || file.starts_with("<"))
        return false;
    return file.find("/site-packages/") == std::string_view::npos &&
           file.find("/dist-packages/") == std::string_view::npos &&
           file.find("/lib/python3") == std::string_view::npos;
}

bool isRecorderModule(std::string_view module) {
    const std::string_view name = module.substr(module.rfind('/') + 1);
    return name.starts_with("libwarpline-inject") || name.starts_with("libcupti");
}

RecorderShare recorderShare(const TraceStore& store, int64_t globalTid, int64_t from, int64_t to) {
    RecorderShare out;
    const ThreadCpuActivity* t = store.cpuSamples().thread(globalTid);
    if (!t || to <= from)
        return out;
    uint32_t recorder = 0;
    const auto [first, last] = t->samplesIn(from, to);
    for (size_t i = first; i < last; ++i) {
        if (t->sampleWaiting[i] != 0)
            continue;
        ++out.running;
        const auto stack = store.cpuSamples().stack(t->sampleStacks[i]);
        recorder += std::any_of(stack.begin(), stack.end(), [&](const CallFrame& f) {
            return isRecorderModule(store.text(f.file));
        });
    }
    out.share = out.running ? static_cast<double>(recorder) / out.running : 0.0;
    return out;
}

CpuStretch readCpuStretch(const TraceStore& store, int64_t globalTid, int64_t from, int64_t to) {
    CpuStretch out;
    const ThreadCpuActivity* t = store.cpuSamples().thread(globalTid);
    if (!t || to <= from)
        return out;
    out.sampled = true;
    if (!t->stateTimes.empty()) {
        const ThreadCpuActivity::StateTimes s = t->timeIn(from, to);
        out.running = s.running;
        out.waiting = s.waiting;
        out.unknown = s.unknown;
    } else {
        out.unknown = to - from;
    }
    FrameCounts<uint32_t> ranIn, ioIn;
    FrameCounts<int64_t> waitedIn, waitedInIo;
    const auto [first, last] = t->samplesIn(from, to);
    for (size_t i = first; i < last; ++i) {
        const auto stack = store.cpuSamples().stack(t->sampleStacks[i]);
        const bool waiting = t->sampleWaiting[i] != 0;
        bool input = false, gil = false, sleep = false;
        bool python = false;
        for (const CallFrame& f : stack) {
            const std::string_view function = store.text(f.function);
            gil = gil || isGilFrame(function);
            sleep = sleep || isSleepFrame(function);
            input = input || store.text(f.file).find("/torch/utils/data/") != std::string::npos;
            python = python || store.text(f.file).ends_with(".py") ||
                     format::isPythonInterpreterModule(store.text(f.file));
        }
        const CallFrame* program = frameOf(store, stack);
        if (waiting) {
            ++out.waitingSamples;
            out.gilSamples += gil;
            out.sleepSamples += sleep && !gil;
        } else if (input) { // the DataLoader, whatever it does (reading, unmapping)
            ++out.runningSamples;
            ++out.inputSamples;
        } else if (!stack.empty() && isHostMemoryFrame(store.text(stack.front().function))) {
            ++out.runningSamples;
            ++out.hostMemorySamples;
        } else if (!stack.empty() && isIoFrame(store.text(stack.front().function))) {
            ++out.runningSamples;
            ++out.ioSamples;
            ++ioIn[{stack.front().function, stack.front().file}];
        } else {
            ++out.runningSamples;
            out.opaqueSamples += !python;
        }
        if (program && !waiting)
            ++ranIn[{program->function, program->file}];
    }
    // Each wait in the stretch, by the code the thread last ran before it (see waitedIn). The
    // intervals from the one holding `from`: a binary search, not a walk over the whole trace's.
    constexpr int64_t kRecent = 5'000'000;
    const auto kIoRecent = static_cast<int64_t>(samplingPeriod(store));
    const auto firstState = std::upper_bound(t->stateTimes.begin(), t->stateTimes.end(), from);
    for (size_t k = static_cast<size_t>(
             std::max<std::ptrdiff_t>(0, (firstState - t->stateTimes.begin()) - 1));
         k < t->stateTimes.size(); ++k) {
        if (t->states[k] != CpuState::Waiting)
            continue;
        const int64_t begin = t->stateTimes[k];
        const int64_t end = k + 1 < t->stateTimes.size() ? t->stateTimes[k + 1] : begin;
        const int64_t overlap = std::min(end, to) - std::max(begin, from);
        if (begin >= to)
            break;
        if (overlap <= 0)
            continue;
        auto it = std::upper_bound(t->sampleTimes.begin(), t->sampleTimes.end(), begin);
        if (it == t->sampleTimes.begin())
            continue;
        // A wait right after a sample in an I/O system call (within one sampling period, so
        // most likely in that call) waits for that I/O.
        {
            const size_t i = static_cast<size_t>(it - t->sampleTimes.begin()) - 1;
            const auto stack = store.cpuSamples().stack(t->sampleStacks[i]);
            if (begin - t->sampleTimes[i] <= kIoRecent && !stack.empty() &&
                isIoFrame(store.text(stack.front().function)))
                waitedInIo[{stack.front().function, stack.front().file}] += overlap;
        }
        // The latest recent sample whose stack reaches Python code: a native innermost frame
        // (the spin of the CUDA call before it) would name the wrong thing; none names nothing.
        for (size_t i = static_cast<size_t>(it - t->sampleTimes.begin()); i-- > 0;) {
            if (begin - t->sampleTimes[i] > kRecent)
                break;
            const CallFrame* where = frameOf(store, store.cpuSamples().stack(t->sampleStacks[i]));
            if (where && store.text(where->file).ends_with(".py")) {
                waitedIn[{where->function, where->file}] += overlap;
                break;
            }
        }
    }
    // Other processes (a DataLoader's workers) over the stretch: where they ran.
    {
        const int64_t pid = globalTid >> 24;
        FrameCounts<uint32_t> where;
        std::set<int64_t> processes;
        int64_t running = 0;
        for (const ThreadCpuActivity& other : store.cpuSamples().threads()) {
            // Another process of the same trace (in a session, the same rank's file: bits 48
            // and up), not another rank.
            if ((other.globalTid >> 24) == pid || (other.globalTid >> 48) != (globalTid >> 48))
                continue;
            processes.insert(other.globalTid >> 24);
            running += other.timeIn(from, to).running;
            out.otherProcessesLoader =
                out.otherProcessesLoader ||
                (other.name != kNoName && store.text(other.name).starts_with("pt_data_worker"));
            const auto [a, b] = other.samplesIn(from, to);
            for (size_t i = a; i < b; ++i) {
                if (other.sampleWaiting[i])
                    continue;
                ++out.otherProcessSamples;
                const auto stack = store.cpuSamples().stack(other.sampleStacks[i]);
                if (const CallFrame* f = frameOf(store, stack))
                    ++where[{f->function, f->file}];
                out.otherProcessLoaderSamples +=
                    std::any_of(stack.begin(), stack.end(), [&](const CallFrame& f) {
                        return store.text(f.file).find("/torch/utils/data/") != std::string::npos;
                    });
            }
        }
        uint32_t most = 0;
        out.otherProcessesIn = mostCounted(where, most);
        out.otherProcesses = static_cast<uint32_t>(processes.size());
        out.otherProcessCpus = static_cast<double>(running) / static_cast<double>(to - from);
    }
    // A process without Python (a C++ program): its frames name its own functions, so none is
    // opaque, and its other threads running while this one waits do its CPU work (a join).
    const int64_t pid = globalTid >> 24;
    const bool native = isNativeProcess(store, globalTid);
    if (native)
        out.opaqueSamples = 0;
    // The GIL held elsewhere: other threads of the process running Python (any code, in a
    // native process) while this one waited, each sample one sampling period.
    if (out.waiting > 0) {
        const double period = samplingPeriod(store);
        double pythonTime = 0;
        FrameCounts<uint32_t> heldIn;
        for (const ThreadCpuActivity& other : store.cpuSamples().threads()) {
            if (other.globalTid == globalTid || (other.globalTid >> 24) != pid)
                continue;
            const auto [a, b] = other.samplesIn(from, to);
            for (size_t i = a; i < b; ++i) {
                if (other.sampleWaiting[i] || t->stateAt(other.sampleTimes[i]) != CpuState::Waiting)
                    continue;
                const auto stack = store.cpuSamples().stack(other.sampleStacks[i]);
                if (!stack.empty() &&
                    (native || format::isPythonInterpreterModule(store.text(stack.front().file)) ||
                     store.text(stack.front().file).ends_with(".py"))) {
                    pythonTime += period;
                    if (const CallFrame* f = frameOf(store, stack))
                        ++heldIn[{f->function, f->file}];
                }
            }
        }
        out.gilHeldElsewhere = std::min(1.0, pythonTime / static_cast<double>(out.waiting));
        uint32_t most = 0;
        out.heldIn = mostCounted(heldIn, most);
    }
    out.waitedIn = mostCounted(waitedIn, out.waitedInNs);
    out.waitedInIo = mostCounted(waitedInIo, out.waitedInIoNs);
    uint32_t most = 0;
    out.ioIn = mostCounted(ioIn, most);
    out.ranIn = mostCounted(ranIn, out.ranInSamples);
    return out;
}

bool isNativeProcess(const TraceStore& store, int64_t globalTid) {
    const int64_t pid = globalTid >> 24;
    bool sampled = false;
    for (const ThreadCpuActivity& t : store.cpuSamples().threads()) {
        if ((t.globalTid >> 24) != pid)
            continue;
        if (t.python)
            return false;
        sampled = true;
    }
    return sampled;
}

namespace {

// The GPUs' busy time over a window, as sorted disjoint intervals, and whether a time lies in it.
class GpuBusy {
public:
    GpuBusy(const TraceStore& store, TimeWindow window) {
        for (const GpuTrack& track : store.gpuTracks()) {
            const IndexRange r = track.visibleRange(window.t0, window.t1);
            for (size_t i = r.first; i < r.last; ++i)
                m_busy.emplace_back(track.start(i), track.end(i));
        }
        mergeSpans(m_busy);
    }
    bool at(int64_t t) const {
        const auto it = std::upper_bound(
            m_busy.begin(), m_busy.end(), t,
            [](int64_t x, const std::pair<int64_t, int64_t>& b) { return x < b.first; });
        return it != m_busy.begin() && (it - 1)->second > t;
    }

private:
    std::vector<std::pair<int64_t, int64_t>> m_busy;
};

} // namespace

CpuSampleSummary cpuSampleSummary(const TraceStore& store, TimeWindow window, bool gpuIdleOnly) {
    CpuSampleSummary out;
    const CpuSamples& samples = store.cpuSamples();
    const std::optional<GpuBusy> busy =
        gpuIdleOnly ? std::optional<GpuBusy>(GpuBusy(store, window)) : std::nullopt;
    std::map<std::pair<NameId, NameId>, CpuSampleRow> rows;
    std::set<std::pair<NameId, NameId>> seen; // frames counted for this sample already
    for (const ThreadCpuActivity& t : samples.threads()) {
        const auto [first, last] = t.samplesIn(window.t0, window.t1);
        for (size_t i = first; i < last; ++i) {
            if (busy && busy->at(t.sampleTimes[i]))
                continue;
            const bool waiting = t.sampleWaiting[i] != 0;
            ++(waiting ? out.waiting : out.running);
            const auto stack = samples.stack(t.sampleStacks[i]);
            seen.clear();
            for (size_t d = 0; d < stack.size(); ++d) {
                const std::pair<NameId, NameId> key{stack[d].function, stack[d].file};
                CpuSampleRow& row = rows[key];
                row.frame = CallFrame{key.first, key.second, 0};
                if (waiting) {
                    row.waits += seen.insert(key).second;
                    continue;
                }
                row.self += d == 0;
                row.total += seen.insert(key).second;
            }
        }
    }
    for (auto& [key, row] : rows)
        out.rows.push_back(row);
    std::stable_sort(out.rows.begin(), out.rows.end(),
                     [](const CpuSampleRow& a, const CpuSampleRow& b) {
                         return a.self != b.self     ? a.self > b.self
                                : a.total != b.total ? a.total > b.total
                                                     : a.waits > b.waits;
                     });
    return out;
}

Table cpuSamplesTable(const TraceStore& store, const CpuSampleSummary& summary) {
    Table t({{"Self"},
             {"Self (%)"},
             {"Total"},
             {"Total (%)"},
             {"Waits"},
             {"Function", Column::Align::Left},
             {"Module", Column::Align::Left}});
    const double running = static_cast<double>(std::max<uint64_t>(1, summary.running));
    for (const CpuSampleRow& r : summary.rows)
        t.addRow({static_cast<int64_t>(r.self), 100.0 * static_cast<double>(r.self) / running,
                  static_cast<int64_t>(r.total), 100.0 * static_cast<double>(r.total) / running,
                  static_cast<int64_t>(r.waits), store.text(r.frame.function),
                  store.text(r.frame.file)});
    return t;
}

CpuSampleTree cpuSampleTree(const TraceStore& store, TimeWindow window, bool gpuIdleOnly) {
    const CpuSamples& samples = store.cpuSamples();
    const std::optional<GpuBusy> busy =
        gpuIdleOnly ? std::optional<GpuBusy>(GpuBusy(store, window)) : std::nullopt;
    CpuSampleTree tree;
    tree.nodes.emplace_back();
    // (parent, function, module) -> node
    std::map<std::tuple<uint32_t, NameId, NameId>, uint32_t> index;
    const auto add = [&](uint32_t parent, CpuTreeNode node) {
        node.parent = parent;
        node.depth = tree.nodes[parent].depth + 1;
        tree.nodes[parent].children.push_back(static_cast<uint32_t>(tree.nodes.size()));
        tree.nodes.push_back(std::move(node));
        return static_cast<uint32_t>(tree.nodes.size() - 1);
    };
    for (const ThreadCpuActivity& t : samples.threads()) {
        const auto [first, last] = t.samplesIn(window.t0, window.t1);
        // Samples per distinct stack, running and waiting apart, in the order first seen.
        std::unordered_map<uint32_t, std::pair<uint64_t, uint64_t>> perStack;
        std::vector<uint32_t> order;
        for (size_t i = first; i < last; ++i) {
            if (busy && busy->at(t.sampleTimes[i]))
                continue;
            auto [it, added] = perStack.try_emplace(t.sampleStacks[i]);
            if (added)
                order.push_back(t.sampleStacks[i]);
            ++(t.sampleWaiting[i] != 0 ? it->second.second : it->second.first);
        }
        if (order.empty())
            continue;
        CpuTreeNode threadNode;
        threadNode.thread = t.globalTid;
        threadNode.frame.function = t.name;
        const uint32_t root = add(0, threadNode);
        for (const uint32_t id : order) {
            const auto [running, waiting] = perStack[id];
            const uint64_t n = running + waiting;
            const auto stack = samples.stack(id);
            uint32_t node = root;
            for (const uint32_t on : {0u, root}) {
                tree.nodes[on].samples += n;
                tree.nodes[on].waits += waiting;
            }
            for (size_t d = stack.size(); d-- > 0;) {
                const CallFrame& f = stack[d];
                const auto key = std::make_tuple(node, f.function, f.file);
                auto it = index.find(key);
                if (it == index.end()) {
                    CpuTreeNode child;
                    child.frame = CallFrame{f.function, f.file, 0};
                    it = index.emplace(key, add(node, child)).first;
                }
                node = it->second;
                tree.nodes[node].samples += n;
                tree.nodes[node].waits += waiting;
            }
            tree.nodes[node].self += n;
        }
    }
    for (CpuTreeNode& node : tree.nodes)
        std::stable_sort(node.children.begin(), node.children.end(), [&](uint32_t a, uint32_t b) {
            return tree.nodes[a].samples > tree.nodes[b].samples;
        });
    return tree;
}

std::string cpuTreeLabel(const TraceStore& store, const CpuTreeNode& node) {
    if (node.depth == 0)
        return "all samples";
    if (node.depth == 1) {
        const std::string tid = "tid " + std::to_string(node.thread & 0xffffff);
        return node.frame.function != kNoName ? store.text(node.frame.function) + " [" + tid + "]"
                                              : "thread [" + tid + "]";
    }
    return store.text(node.frame.function);
}

Table cpuTreeTable(const TraceStore& store, const CpuSampleTree& tree) {
    Table t({{"Depth"},
             {"Function", Column::Align::Left},
             {"Samples"},
             {"Samples (%)"},
             {"Self"},
             {"Waits"},
             {"Module", Column::Align::Left}});
    const uint64_t all = tree.samples();
    if (all == 0)
        return t;
    const uint64_t least = std::max<uint64_t>(1, all / 1000);
    constexpr uint32_t kMaxIndent = 24; // levels: deeper frames keep their Depth, not their indent
    std::vector<uint32_t> todo(tree.nodes[0].children.rbegin(), tree.nodes[0].children.rend());
    while (!todo.empty()) {
        const CpuTreeNode& node = tree.nodes[todo.back()];
        todo.pop_back();
        if (node.samples < least)
            continue;
        t.addRow({static_cast<int64_t>(node.depth),
                  std::string(2 * std::min<uint32_t>(node.depth - 1, kMaxIndent), ' ') +
                      cpuTreeLabel(store, node),
                  static_cast<int64_t>(node.samples),
                  100.0 * static_cast<double>(node.samples) / static_cast<double>(all),
                  static_cast<int64_t>(node.self), static_cast<int64_t>(node.waits),
                  store.text(node.frame.file)});
        todo.insert(todo.end(), node.children.rbegin(), node.children.rend());
    }
    return t;
}

} // namespace warpline::model
