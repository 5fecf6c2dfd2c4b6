// CPU sampling: the perf-event sampler on a real child process (no GPU needed), the samples'
// way into a trace in nsys's tables, the loader's reading of them, and what the analyses read
// from a stretch of a thread's time (cpuactivity.h).

#include "cpuactivity.h"
#include "cpusamplesdata.h"
#include "cpusampling.h"
#include "elfsymbols.h"
#include "traceloader.h"
#include "tracesession.h"
#include "tracewriter.h"

#include <QFile>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <map>
#include <set>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace warpline;
using warpline::format::CpuSampleData;
using warpline::format::SampledThreadState;

namespace {

constexpr uint32_t kPid = 4242;

int64_t queryInt(const std::string& path, const std::string& sql) {
    sqlite3* db = nullptr;
    sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_stmt* st = nullptr;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

// A trace as the collector leaves it: session start S = 1e12 on CUPTI's clock, taken when
// CLOCK_MONOTONIC read 5e9 (so monotonic m is trace time m - 5e9), one CUDA call.
std::string makeTrace(const QTemporaryDir& dir, const std::string& name, bool clockPair) {
    const std::string path = dir.filePath(QString::fromStdString(name)).toStdString();
    warpline::format::TraceWriter w(path);
    w.setProcess(kPid, "python3");
    w.setMeta("session_start_timestamp", "1000000000000");
    if (clockPair)
        w.setMeta("cupti_monotonic_start", "1000000000000 5000000000");
    warpline::format::ApiRecord call{};
    call.start = 0;
    call.end = 1000;
    call.processId = kPid;
    call.threadId = kPid;
    call.correlationId = 1;
    call.name = "cudaLaunchKernel";
    w.addApi(call);
    w.finish("complete");
    return path;
}

} // namespace

class TestCpuSampling : public QObject {
    Q_OBJECT
private slots:
    void samplesARunningThenSleepingChild_data() {
        QTest::addColumn<QByteArray>("tuning");
        QTest::newRow("default clock") << QByteArray();
        QTest::newRow("per-thread clock") << QByteArray("perthread");
    }
    // The sampler on a real program: it runs, then sleeps. The kernel either gives the events
    // (samples while it ran, a wait while it slept) or refuses them with a line saying what to
    // change; both are checked, nothing is skipped.
    // Both clocks: per CPU (the default where the kernel allows it, e.g. as root) and per thread
    // (elsewhere, or forced). A busy process beside the program, not started by it, must leave
    // no sample or switch in the data: a per-CPU clock samples it too.
    void samplesARunningThenSleepingChild() {
        QFETCH(QByteArray, tuning);
        if (tuning.isEmpty())
            qunsetenv("WARPLINE_CPU_SAMPLING_TUNING");
        else
            qputenv("WARPLINE_CPU_SAMPLING_TUNING", tuning);
        const pid_t bystander = ::fork();
        QVERIFY(bystander >= 0);
        if (bystander == 0) {
            ::execl("/bin/sh", "sh", "-c", "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done",
                    nullptr);
            ::_exit(127);
        }
        int go[2];
        QVERIFY(::pipe(go) == 0);
        const pid_t child = ::fork();
        QVERIFY(child >= 0);
        if (child == 0) {
            ::close(go[1]);
            char c;
            [[maybe_unused]] const ssize_t r = ::read(go[0], &c, 1);
            // A busy subshell in the background, which forks a busy one of its own: processes
            // the program forks, two generations, sampled too.
            ::execl("/bin/sh", "sh", "-c",
                    "((k=0; while [ $k -lt 150000 ]; do k=$((k+1)); done) & "
                    "j=0; while [ $j -lt 200000 ]; do j=$((j+1)); done; wait) & "
                    "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; wait; sleep 0.4",
                    nullptr);
            ::_exit(127);
        }
        ::close(go[0]);
        collector::CpuSampler sampler;
        collector::CpuSampler::Options options;
        std::string whyNot;
        const bool started = sampler.start(child, options, &whyNot);
        ::close(go[1]);
        int status = 0;
        ::waitpid(child, &status, 0);
        QCOMPARE(WEXITSTATUS(status), 0);
        ::waitpid(bystander, &status, 0);
        qunsetenv("WARPLINE_CPU_SAMPLING_TUNING");
        if (!started) {
            QVERIFY2(whyNot.find("perf") != std::string::npos, whyNot.c_str());
            qInfo("the kernel refused perf events here: %s", whyNot.c_str());
            return;
        }
        const CpuSampleData d = sampler.stop();
        if (!tuning.isEmpty())
            QVERIFY(!d.perCpu);
        qInfo("%s", d.perCpu ? "a clock per CPU" : "a clock per thread");
        for (const auto& s : d.samples)
            QVERIFY2(s.pid != static_cast<uint32_t>(bystander) &&
                         s.pid != static_cast<uint32_t>(::getpid()),
                     "a sample of a process the program did not start");
        for (const auto& s : d.switches)
            QVERIFY2(s.pid != static_cast<uint32_t>(bystander), "a switch of another process");
        QVERIFY(!d.threadNames.count(
            {static_cast<uint32_t>(bystander), static_cast<uint32_t>(bystander)}));
        std::map<uint32_t, size_t> forkedSamples; // by process, the child's own left out
        for (const auto& s : d.samples)
            if (s.pid != static_cast<uint32_t>(child))
                ++forkedSamples[s.pid];
        size_t busyForked = 0;
        for (const auto& [pid, n] : forkedSamples)
            busyForked += n >= 20;
        QVERIFY2(busyForked >= 2, qPrintable(QString::number(busyForked)));
        size_t childSamples = 0, mapped = 0;
        for (const auto& s : d.samples) {
            if (s.pid != static_cast<uint32_t>(child) || s.state != SampledThreadState::Running)
                continue;
            ++childSamples;
            QVERIFY(s.chain < d.chains.size());
            // The shell is stripped (no symbols for its own functions), but every innermost
            // frame lies in a file it mapped: /bin/dash or a library.
            if (!d.chains[s.chain].empty() &&
                d.frames[d.chains[s.chain][0]].module.starts_with("/"))
                ++mapped;
        }
        // The loop runs for well over 100 ms of CPU time at 1 kHz.
        QVERIFY2(childSamples >= 50, qPrintable(QString::number(childSamples)));
        QVERIFY2(mapped * 10 >= childSamples * 9, "innermost frames lie in a mapped file");
        // The sleep: one switch off the CPU (not a preemption) followed 300+ ms later by the
        // next switch on.
        int64_t longestWait = 0, offAt = -1;
        for (const auto& s : d.switches) {
            if (s.pid != static_cast<uint32_t>(child))
                continue;
            if (!s.in && !s.preempted)
                offAt = s.monotonicNs;
            else if (s.in && offAt >= 0) {
                longestWait = std::max(longestWait, s.monotonicNs - offAt);
                offAt = -1;
            }
        }
        QVERIFY2(longestWait >= 300'000'000, qPrintable(QString::number(longestWait)));
        QCOMPARE(d.threadNames.count({static_cast<uint32_t>(child), static_cast<uint32_t>(child)}),
                 size_t(1));
    }

    void pythonTrampolinesNameFunctionAndFile() {
        std::string function, file;
        QVERIFY(collector::splitPythonTrampoline("py::forward:/work/train.py", &function, &file));
        QCOMPARE(function, std::string("forward"));
        QCOMPARE(file, std::string("/work/train.py"));
        QVERIFY(!collector::splitPythonTrampoline("PyObject_Call", &function, &file));
    }

    void elfSymbolsOfThisBinary() {
        // This test's own executable: a function of it is found at its own address.
        const collector::ElfSymbols symbols("/proc/self/exe");
        QVERIFY(!symbols.empty());
        QVERIFY(collector::ElfSymbols("/nonexistent").empty());
        QVERIFY(collector::ElfSymbols("/proc/self/status").empty()); // not ELF
    }

    // The samples' way into a trace and back: nsys's tables, times on the trace's clock, the
    // loader's threads, states and stacks.
    void samplesRoundTripThroughTheTrace() {
        QTemporaryDir dir;
        const std::string path = makeTrace(dir, "t.warpline", true);
        CpuSampleData d;
        d.rateHz = 1000;
        d.frames = {
            {"read", "/usr/lib/libc.so.6", 0x10, true},
            {"__next__", "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py", 0, true},
            {"main", "/work/train.py", 0, true},
            {"take_gil", "/usr/bin/python3.12", 0, true},
            {"0x1234", "[unknown]", 0x1234, false}};
        d.chains = {{0, 1, 2}, {3, 2}, {4}};
        // Thread kPid: runs in the DataLoader 6.000-6.002 s, waits 6.002-6.010 s; another
        // thread of another process is left out.
        for (int i = 0; i < 2; ++i)
            d.samples.push_back(
                {6'000'000'000 + i * 1'000'000, kPid, kPid, 0, SampledThreadState::Running, 0});
        d.samples.push_back({6'002'000'000, kPid, kPid, 0, SampledThreadState::Interruptible, 1});
        d.samples.push_back({6'003'000'000, 99, 99, 0, SampledThreadState::Running, 2});
        d.switches = {{6'000'000'000, kPid, kPid, 0, true, false},
                      {6'002'000'000, kPid, kPid, 0, false, false},
                      {6'010'000'000, kPid, kPid, 0, true, false}};
        d.threadNames[{kPid, kPid + 1}] = "pt_data_worker";
        QCOMPARE(warpline::format::appendCpuSamples(path, {kPid}, d), uint64_t(3));
        // nsys's own query shape works on the file.
        QCOMPARE(queryInt(path, "SELECT COUNT(*) FROM COMPOSITE_EVENTS"), int64_t(3));
        QCOMPARE(queryInt(path, "SELECT COUNT(*) FROM SAMPLING_CALLCHAINS c JOIN COMPOSITE_EVENTS "
                                "e ON e.id = c.id WHERE e.threadState = 1"),
                 int64_t(6));
        QCOMPARE(queryInt(path, "SELECT MIN(start) FROM COMPOSITE_EVENTS"), int64_t(1'000'000'000));
        QCOMPARE(queryInt(path, "SELECT COUNT(*) FROM SCHED_EVENTS WHERE isSchedIn = 0 AND "
                                "threadState = 2"),
                 int64_t(1));
        QCOMPARE(queryInt(path, "SELECT unresolved FROM SAMPLING_CALLCHAINS WHERE originalIP = "
                                "4660"),
                 int64_t(-1)); // the unresolved frame belongs to the other process's sample

        const model::TraceStore store = model::TraceLoader::load(path);
        const model::CpuSamples& samples = store.cpuSamples();
        QCOMPARE(samples.threads().size(), size_t(1));
        const int64_t tid = (int64_t(kPid) << 24) | kPid;
        const model::ThreadCpuActivity* t = samples.thread(tid);
        QVERIFY(t);
        QCOMPARE(t->sampleTimes.size(), size_t(3));
        QCOMPARE(t->stateAt(1'001'000'000), model::CpuState::Running);
        QCOMPARE(t->stateAt(1'005'000'000), model::CpuState::Waiting);
        const auto times = t->timeIn(1'000'000'000, 1'010'000'000);
        QCOMPARE(times.running, int64_t(2'000'000));
        QCOMPARE(times.waiting, int64_t(8'000'000));
        const auto stack = samples.stack(t->sampleStacks[0]);
        QCOMPARE(stack.size(), size_t(3));
        QCOMPARE(store.text(stack[0].function), std::string("read"));
        QCOMPARE(store.text(stack[2].file), std::string("/work/train.py"));

        // What the analyses read: 2 running samples in the DataLoader, 1 waiting for the GIL.
        const model::CpuStretch s = model::readCpuStretch(store, tid, 1'000'000'000, 1'010'000'000);
        QVERIFY(s.sampled);
        QCOMPARE(s.running, int64_t(2'000'000));
        QCOMPARE(s.waiting, int64_t(8'000'000));
        QCOMPARE(s.runningSamples, 2u);
        QCOMPARE(s.inputSamples, 2u);
        QCOMPARE(s.waitingSamples, 1u);
        QCOMPARE(s.gilSamples, 1u);
        QCOMPARE(s.inputShareOfWaiting(), 0.0);
        QCOMPARE(s.inputShareOfRunning(false), 1.0);
        QCOMPARE(s.opaqueSamples, 0u);
        QCOMPARE(store.text(s.ranIn.file), std::string("/work/train.py"));
        QVERIFY(!model::readCpuStretch(store, tid + 1, 0, 10).sampled);

        // The call tree under the thread, outermost first: main (3 samples) -> __next__ -> read
        // (2, running) and main -> take_gil (1, waiting).
        const model::CpuSampleTree tree = model::cpuSampleTree(store, model::TimeWindow{});
        QCOMPARE(tree.samples(), uint64_t(3));
        QCOMPARE(tree.nodes.size(), size_t(6));
        QCOMPARE(tree.nodes[0].children.size(), size_t(1));
        const model::CpuTreeNode& thread = tree.nodes[tree.nodes[0].children[0]];
        QCOMPARE(thread.thread, tid);
        QCOMPARE(model::cpuTreeLabel(store, thread), "thread [tid " + std::to_string(kPid) + "]");
        QCOMPARE(thread.samples, uint64_t(3));
        QCOMPARE(thread.children.size(), size_t(1));
        const model::CpuTreeNode& main = tree.nodes[thread.children[0]];
        QCOMPARE(store.text(main.frame.function), std::string("main"));
        QCOMPARE(main.samples, uint64_t(3));
        QCOMPARE(main.waits, uint64_t(1));
        QCOMPARE(main.self, uint64_t(0));
        QCOMPARE(main.children.size(), size_t(2));
        const model::CpuTreeNode& next = tree.nodes[main.children[0]];
        QCOMPARE(store.text(next.frame.function), std::string("__next__"));
        QCOMPARE(next.samples, uint64_t(2));
        const model::CpuTreeNode& read = tree.nodes[next.children[0]];
        QCOMPARE(store.text(read.frame.function), std::string("read"));
        QCOMPARE(read.self, uint64_t(2));
        QCOMPARE(read.depth, 4u);
        const model::CpuTreeNode& gil = tree.nodes[main.children[1]];
        QCOMPARE(store.text(gil.frame.function), std::string("take_gil"));
        QCOMPARE(gil.waits, uint64_t(1));
        // Top-down table: depth first, the function indented by its depth.
        const model::Table table = model::cpuTreeTable(store, tree);
        QCOMPARE(table.rowCount(), size_t(5));
        const std::vector<std::string> names = {"thread [tid " + std::to_string(kPid) + "]",
                                                "  main", "    __next__", "      read",
                                                "    take_gil"};
        for (size_t r = 0; r < names.size(); ++r)
            QCOMPARE(std::get<std::string>(table.cell(r, 1)), names[r]);
        QCOMPARE(std::get<int64_t>(table.cell(3, 0)), int64_t(4));
        // Outside the samples' time: an empty tree.
        QCOMPARE(model::cpuSampleTree(store, model::TimeWindow{0, 10}).samples(), uint64_t(0));
    }

    // Samples in system calls: reading or writing a file (I/O: input, and a wait right after
    // such a sample follows that call) and unmapping memory (host memory), outside the
    // DataLoader; the same call under the DataLoader stays the DataLoader's.
    void ioAndHostMemorySamples() {
        QTemporaryDir dir;
        const std::string path = makeTrace(dir, "io.warpline", true);
        CpuSampleData d;
        d.rateHz = 1000;
        d.frames = {
            {"__write", "/usr/lib/libc.so.6", 0x10, true},
            {"fsync", "/usr/lib/libc.so.6", 0x20, true},
            {"__munmap", "/usr/lib/libc.so.6", 0x30, true},
            {"main", "/work/train.py", 0, true},
            {"__next__", "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py", 0, true}};
        d.chains = {{0, 3}, {1, 3}, {2, 3}, {0, 4, 3}};
        // Running 6.000-6.0025 s (write, munmap, fsync), then waiting until 6.010 s; 6.020 s a
        // write under the DataLoader.
        for (uint32_t i = 0; i < 3; ++i)
            d.samples.push_back({6'000'000'000 + i * 1'000'000, kPid, kPid, 0,
                                 SampledThreadState::Running,
                                 i == 0   ? 0u
                                 : i == 1 ? 2u
                                          : 1u});
        d.samples.push_back({6'020'000'000, kPid, kPid, 0, SampledThreadState::Running, 3});
        d.switches = {{6'000'000'000, kPid, kPid, 0, true, false},
                      {6'002'500'000, kPid, kPid, 0, false, false},
                      {6'010'000'000, kPid, kPid, 0, true, false}};
        QCOMPARE(warpline::format::appendCpuSamples(path, {kPid}, d), uint64_t(4));
        const model::TraceStore store = model::TraceLoader::load(path);
        const int64_t tid = (int64_t(kPid) << 24) | kPid;
        const model::CpuStretch s = model::readCpuStretch(store, tid, 1'000'000'000, 1'010'000'000);
        QCOMPARE(s.runningSamples, 3u);
        QCOMPARE(s.ioSamples, 2u);
        QCOMPARE(s.hostMemorySamples, 1u);
        QCOMPARE(s.inputSamples, 0u);
        QCOMPARE(s.opaqueSamples, 0u);
        QCOMPARE(store.text(s.ioIn.function), std::string("__write")); // the first of a tie
        QCOMPARE(s.inputShareOfRunning(false), 2.0 / 3.0);
        QCOMPARE(s.hostMemoryShare(), 1.0 / 3.0);
        // The wait began 0.5 ms after the fsync sample: it waited for that call.
        QCOMPARE(s.waitedInIoNs, int64_t(7'500'000));
        QCOMPARE(store.text(s.waitedInIo.function), std::string("fsync"));
        // Under the DataLoader, a write is the DataLoader's.
        const model::CpuStretch later =
            model::readCpuStretch(store, tid, 1'015'000'000, 1'025'000'000);
        QCOMPARE(later.inputSamples, 1u);
        QCOMPARE(later.ioSamples, 0u);
    }

    // A process with no trace of its own (a DataLoader worker) goes into the trace it is given
    // to, each thread under its own globalTid.
    void workerProcessesJoinTheTrace() {
        QTemporaryDir dir;
        const std::string path = makeTrace(dir, "w.warpline", true);
        CpuSampleData d;
        d.frames = {{"augment", "/work/data.py", 0, true}};
        d.chains = {{0}};
        d.samples.push_back({6'000'000'000, kPid, kPid, 0, SampledThreadState::Running, 0});
        d.samples.push_back({6'001'000'000, 99, 100, 0, SampledThreadState::Running, 0});
        d.samples.push_back({6'002'000'000, 77, 77, 0, SampledThreadState::Running, 0});
        d.threadNames[{99, 100}] = "pt_data_worker";
        QCOMPARE(warpline::format::appendCpuSamples(path, {kPid, 99}, d), uint64_t(2));
        QCOMPARE(queryInt(path, "SELECT COUNT(*) FROM COMPOSITE_EVENTS WHERE globalTid = " +
                                    std::to_string((int64_t(99) << 24) | 100)),
                 int64_t(1));
        QCOMPARE(queryInt(path, "SELECT COUNT(*) FROM ThreadNames t JOIN StringIds s ON s.id = "
                                "t.nameId WHERE s.value = 'pt_data_worker'"),
                 int64_t(1));
        const model::TraceStore store = model::TraceLoader::load(path);
        QCOMPARE(store.cpuSamples().threads().size(), size_t(2));
        // What the analyses read of the main thread's stretch: where the worker ran.
        const int64_t tid = (int64_t(kPid) << 24) | kPid;
        const model::CpuStretch s = model::readCpuStretch(store, tid, 0, 1'000'000'000'000);
        QCOMPARE(s.otherProcessSamples, 1u);
        QCOMPARE(store.text(s.otherProcessesIn.function), std::string("augment"));
    }

    // A trace that does not say how its clock relates to CLOCK_MONOTONIC gets no samples, and
    // says why.
    void noClockPairNoSamples() {
        QTemporaryDir dir;
        const std::string path = makeTrace(dir, "old.warpline", false);
        CpuSampleData d;
        d.frames = {{"f", "/lib/x.so", 0, true}};
        d.chains = {{0}};
        d.samples.push_back({6'000'000'000, kPid, kPid, 0, SampledThreadState::Running, 0});
        QCOMPARE(warpline::format::appendCpuSamples(path, {kPid}, d), uint64_t(0));
        QCOMPARE(queryInt(path, "SELECT COUNT(*) FROM WARPLINE_ERRORS WHERE source = "
                                "'cpu-sampling'"),
                 int64_t(1));
        QVERIFY(model::TraceLoader::load(path).cpuSamples().empty());
    }

    // A real recording (tests/data/gpt-sampled.warpline: torch_gpt.py, 30 steps, on the H100):
    // every thread's samples on the trace's clock, Python functions named through CPython's perf
    // trampolines, and the report's rows.
    void recordedGptTraceHoldsSamples() {
        const std::string path = WARPLINE_TEST_DATA "/gpt-sampled.warpline";
        QVERIFY2(QFile::exists(QString::fromStdString(path)), path.c_str());
        const model::TraceStore store = model::TraceLoader::load(path);
        const model::CpuSamples& samples = store.cpuSamples();
        QVERIFY(samples.threads().size() >= 5);
        const model::ThreadCpuActivity* busiest = &samples.threads().front();
        for (const auto& t : samples.threads())
            if (t.sampleTimes.size() > busiest->sampleTimes.size())
                busiest = &t;
        QVERIFY(busiest->sampleTimes.size() >= 10'000);
        QVERIFY(!busiest->stateTimes.empty());
        // Its samples cover the CUDA work: the first before the first call, the last after it.
        QVERIFY(busiest->sampleTimes.front() < store.beginTime());
        QVERIFY(busiest->sampleTimes.back() >
                store.beginTime() + (store.endTime() - store.beginTime()) / 2);
        // Stacks reach Python code (a .py frame) in most samples: import time and the loop's
        // Python; inside PyTorch's C++ (built without frame pointers) the walk stops before it,
        // so the program's own torch_gpt.py is on fewer (11% at recording).
        size_t python = 0, own = 0;
        for (const uint32_t id : busiest->sampleStacks) {
            bool py = false, mine = false;
            for (const auto& f : samples.stack(id)) {
                py = py || store.text(f.file).ends_with(".py");
                mine = mine || store.text(f.file).ends_with("torch_gpt.py");
            }
            python += py;
            own += mine;
        }
        const size_t n = busiest->sampleTimes.size();
        QVERIFY2(python * 2 > n, qPrintable(QStringLiteral("%1 of %2").arg(python).arg(n)));
        QVERIFY2(own * 20 > n, qPrintable(QStringLiteral("%1 of %2").arg(own).arg(n)));
        const model::CpuSampleSummary summary = model::cpuSampleSummary(store, model::TimeWindow{});
        QVERIFY(summary.running >= 10'000);
        QVERIFY(!summary.rows.empty());
        QVERIFY(summary.rows.front().self > 0);
        const model::Table table = model::cpuSamplesTable(store, summary);
        QCOMPARE(table.rowCount(), summary.rows.size());
        // --gpu-idle: the samples taken while no GPU op ran, a part of them all.
        const model::CpuSampleSummary idle =
            model::cpuSampleSummary(store, model::TimeWindow{}, true);
        QVERIFY(idle.running > 0);
        QVERIFY(idle.running < summary.running);
    }

    // A session (one trace per rank) keeps each rank's CPU samples: under the session's thread
    // ids and clock, with their stacks. The DDP job of blind batch 9, recorded on two H100s.
    void sessionKeepsEachRanksSamples() {
        const std::string dir = WARPLINE_TEST_DATA "/corpus/";
        const model::TraceStore r0 =
            model::TraceLoader::load(dir + "blind9-ddp-rank0-metrics.rank0.warpline");
        const model::TraceStore r1 =
            model::TraceLoader::load(dir + "blind9-ddp-rank0-metrics.rank1.warpline");
        const model::TraceStore session =
            model::TraceSession::open({dir + "blind9-ddp-rank0-metrics.rank0.warpline",
                                       dir + "blind9-ddp-rank0-metrics.rank1.warpline"});
        const model::CpuSamples& samples = session.cpuSamples();
        QCOMPARE(samples.sampleCount(),
                 r0.cpuSamples().sampleCount() + r1.cpuSamples().sampleCount());
        QCOMPARE(samples.threads().size(),
                 r0.cpuSamples().threads().size() + r1.cpuSamples().threads().size());
        // Both ranks' threads, each a thread of its own rank's processes; by globalTid.
        std::set<uint32_t> sources;
        for (const model::ThreadCpuActivity& t : samples.threads()) {
            QVERIFY(samples.thread(t.globalTid) == &t);
            sources.insert(static_cast<uint32_t>(t.globalTid >> 48));
            // Every sample's stack is one the session holds, its frames named.
            for (const uint32_t id : t.sampleStacks)
                QVERIFY(id == UINT32_MAX || id < samples.stackCount());
        }
        QCOMPARE(sources.size(), size_t(2));
        // On the session's clock: each file's samples move by the shift its API calls moved by.
        constexpr int64_t kLocal = (int64_t(1) << 48) - 1;
        for (const model::TraceStore* file : {&r0, &r1}) {
            int64_t apiShift = 0;
            bool found = false;
            for (const model::ThreadInfo& t : file->threads()) {
                for (const model::ThreadInfo& u : session.threads()) {
                    if ((u.globalTid & kLocal) != t.globalTid || t.apiTracks.empty() ||
                        u.apiTracks.empty() || found)
                        continue;
                    apiShift = session.apiTracks()[u.apiTracks[0]].start(0) -
                               file->apiTracks()[t.apiTracks[0]].start(0);
                    found = true;
                }
            }
            QVERIFY(found);
            for (const model::ThreadCpuActivity& t : file->cpuSamples().threads()) {
                const model::ThreadCpuActivity* u = nullptr;
                for (const model::ThreadCpuActivity& v : samples.threads())
                    if ((v.globalTid & kLocal) == t.globalTid &&
                        v.sampleTimes.size() == t.sampleTimes.size())
                        u = &v;
                QVERIFY(u);
                for (size_t i = 0; i < t.sampleTimes.size(); ++i)
                    QCOMPARE(u->sampleTimes[i] - t.sampleTimes[i], apiShift);
            }
        }
        // The rank that makes the metrics in Python: its samples name the program's file.
        bool metrics = false;
        for (const model::ThreadCpuActivity& t : samples.threads())
            for (const uint32_t id : t.sampleStacks)
                for (const model::CallFrame& f : samples.stack(id))
                    metrics =
                        metrics || session.text(f.file).ends_with("blind9_ddp_rank0_metrics.py");
        QVERIFY(metrics);
        QVERIFY(model::cpuSampleSummary(session, model::TimeWindow{}).running > 0);
    }

    // Sample tables as a crafted file may hold them: nsys's older shapes (no threadState), text
    // where integers belong, times beyond the trace's range, depths out of range, frames naming
    // strings that do not exist, duplicate ids. The trace loads; only plausible rows count.
    void hostileSampleTablesLoad() {
        QTemporaryDir dir;
        const std::string path = makeTrace(dir, "h.warpline", false);
        sqlite3* db = nullptr;
        QCOMPARE(sqlite3_open(path.c_str(), &db), SQLITE_OK);
        const char* sql = R"SQL(
CREATE TABLE COMPOSITE_EVENTS (id, start, cpu, threadState, globalTid, cpuCycles);
CREATE TABLE SAMPLING_CALLCHAINS (id, symbol, module, stackDepth);
CREATE TABLE SCHED_EVENTS (start, cpu, isSchedIn, globalTid);
INSERT INTO COMPOSITE_EVENTS VALUES (1, 1000, 0, 1, 77, 0), (1, 2000, 0, 'x', 77, 0),
    (2, 9223372036854775807, 0, 1, 77, 0), (3, -9223372036854775807, 0, 1, 77, 0),
    (4, 'text', 0, 1, 'tid', 0), (5, 3000, 0, 7, 77, 0);
INSERT INTO SAMPLING_CALLCHAINS VALUES (1, 999999, 888888, 0), (1, 1, 1, -1), (1, 1, 1, 5000),
    (1, 1, 1, 0), (5, 'a', NULL, 0), (9, 1, 1, 0);
INSERT INTO SCHED_EVENTS VALUES (500, 0, 1, 77), (4000, 0, 0, 77), (9223372036854775807, 0, 0, 77),
    (5000, 0, 7, 77), ('x', 0, 1, 77);
)SQL";
        QCOMPARE(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK);
        sqlite3_close(db);
        const model::TraceStore store = model::TraceLoader::load(path);
        const model::CpuSamples& samples = store.cpuSamples();
        const model::ThreadCpuActivity* t = samples.thread(77);
        QVERIFY(t);
        // Times within the range; the text time reads as 0 (SQLite's conversion) and counts.
        for (const int64_t time : t->sampleTimes)
            QVERIFY(time > -(int64_t(1) << 62) && time < (int64_t(1) << 62));
        QVERIFY(std::is_sorted(t->sampleTimes.begin(), t->sampleTimes.end()));
        for (const uint32_t stack : t->sampleStacks)
            QVERIFY(stack == UINT32_MAX || stack < samples.stackCount());
        // Without threadState a switch off a CPU is a wait.
        QCOMPARE(t->stateAt(600), model::CpuState::Running);
        QCOMPARE(t->stateAt(4500), model::CpuState::Waiting);
        QCOMPARE(t->stateAt(5500), model::CpuState::Running); // isSchedIn 7: on a CPU
        QVERIFY(model::cpuSampleSummary(store, model::TimeWindow{}).running > 0);
    }

    void clockPairsGiveTheRate() {
        warpline::format::MonotonicToTrace m;
        QVERIFY(warpline::format::parseClockPairs("1000 500", "2000001000 2000000500", 1000, m));
        QCOMPARE(m(500), int64_t(0));
        QCOMPARE(m(2'000'000'500), int64_t(2'000'000'000));
        QVERIFY(warpline::format::parseClockPairs("1000 500", "", 900, m));
        QCOMPARE(m(600), int64_t(200));
        QVERIFY(!warpline::format::parseClockPairs("x 500", "", 900, m));
        QVERIFY(!warpline::format::parseClockPairs("1000", "", 900, m));
    }
};

QTEST_GUILESS_MAIN(TestCpuSampling)
#include "tst_cpusampling.moc"
