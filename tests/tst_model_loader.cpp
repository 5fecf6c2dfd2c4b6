// Loading traces into TraceStore: file errors, odd rows, tracks, nesting, correlation, progress.
// Traces are generated per test (tst_model_tracebuilder.h, TraceWriter); real recorded traces in
// tests/data/*.warpline are checked for the store's invariants.

#include "testdata.h"
#include "traceerror.h"
#include "traceloader.h"
#include "traceopener.h"
#include "tracewriter.h"
#include "tst_model_tracebuilder.h"

#include <QDir>
#include <QTemporaryDir>
#include <QtTest>
#include <random>

using namespace warpline::model;

namespace {

std::string str(const QString& s) {
    return s.toStdString();
}

bool anyWarningContains(const TraceStore& store, const std::string& text) {
    for (const std::string& w : store.warnings()) {
        if (w.find(text) != std::string::npos)
            return true;
    }
    return false;
}

// Every invariant the header promises, checked on any store.
void checkInvariants(const TraceStore& store) {
    const auto checkTrack = [&](const SpanTrack& t) {
        for (size_t i = 0; i < t.size(); ++i) {
            QVERIFY2(t.start(i) <= t.end(i), "start <= end");
            if (i > 0) {
                QVERIFY2(t.start(i - 1) <= t.start(i), "sorted by start");
                QVERIFY2(t.end(i - 1) <= t.start(i), "no overlap on a track");
            }
            QVERIFY(t.start(i) >= store.beginTime());
            QVERIFY(t.end(i) <= store.endTime());
        }
    };
    for (const ApiTrack& t : store.apiTracks()) {
        checkTrack(t);
        for (size_t i = 0; i < t.size(); ++i) {
            for (const EventRef& op : t.gpuOps(i)) {
                const EventRef back = store.gpuTracks()[op.track].launch(op.index);
                QCOMPARE(back.track, static_cast<uint32_t>(&t - store.apiTracks().data()));
                QCOMPARE(back.index, static_cast<uint32_t>(i));
            }
        }
    }
    for (const NvtxTrack& t : store.nvtxTracks())
        checkTrack(t);
    size_t linked = 0;
    for (const GpuTrack& t : store.gpuTracks()) {
        checkTrack(t);
        for (size_t i = 0; i < t.size(); ++i) {
            const EventRef launch = t.launch(i);
            if (!launch.valid())
                continue;
            ++linked;
            const ApiTrack& api = store.apiTracks()[launch.track];
            QCOMPARE(api.correlationId(launch.index), t.correlationId(i));
        }
    }
    size_t reverse = 0;
    for (const ApiTrack& t : store.apiTracks()) {
        for (size_t i = 0; i < t.size(); ++i)
            reverse += t.gpuOps(i).size();
    }
    QCOMPARE(reverse, linked);
}

} // namespace

class TestModelLoader : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString path(const QString& name) const { return m_dir.filePath(name); }

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void badFiles_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<int>("kind");
        QTest::addColumn<QString>("message");
        QTest::newRow("zero bytes")
            << "empty.warpline" << QByteArray() << int(TraceError::Kind::NotATrace)
            << "empty.warpline is empty (0 bytes)";
        QTest::newRow("text file") << "notes.warpline" << QByteArray("hello, this is not SQLite\n")
                                   << int(TraceError::Kind::NotATrace)
                                   << "notes.warpline is not a Warpline or Nsight Systems trace: "
                                      "it is not an SQLite database";
        QTest::newRow("truncated SQLite header")
            << "cut.warpline" << QByteArray("SQLite format 3\0\x10\x00", 19)
            << int(TraceError::Kind::NotATrace) << "cut.warpline is not a Warpline";
    }
    void badFiles() {
        QFETCH(QString, name);
        QFETCH(QByteArray, content);
        QFETCH(int, kind);
        QFETCH(QString, message);
        QFile f(path(name));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(content);
        f.close();
        try {
            TraceLoader::load(str(path(name)));
            QFAIL("loaded a file that is not a trace");
        } catch (const TraceError& e) {
            QCOMPARE(int(e.kind()), kind);
            QVERIFY2(QString::fromUtf8(e.what()).contains(message), e.what());
        }
    }

    void missingFile() {
        try {
            TraceLoader::load(str(path("nowhere.warpline")));
            QFAIL("loaded a missing file");
        } catch (const TraceError& e) {
            QCOMPARE(e.kind(), TraceError::Kind::NotFound);
            QVERIFY2(QString::fromUtf8(e.what()).contains("nowhere.warpline: no such file"),
                     e.what());
        }
    }

    void otherApplicationsSqlite() {
        const QString p = path("other.sqlite");
        QFile::remove(p);
        sqlite3* db = nullptr;
        QCOMPARE(sqlite3_open(p.toUtf8().constData(), &db), SQLITE_OK);
        QCOMPARE(sqlite3_exec(db,
                              "CREATE TABLE contacts (name TEXT); INSERT INTO contacts "
                              "VALUES ('Ada');",
                              nullptr, nullptr, nullptr),
                 SQLITE_OK);
        sqlite3_close(db);
        try {
            TraceLoader::load(str(p));
            QFAIL("loaded another application's database");
        } catch (const TraceError& e) {
            QCOMPARE(e.kind(), TraceError::Kind::NotATrace);
            QCOMPARE(QString::fromUtf8(e.what()),
                     QString("other.sqlite is not a Warpline or Nsight Systems trace: no "
                             "CUPTI_ACTIVITY_KIND_KERNEL or CUPTI_ACTIVITY_KIND_RUNTIME table"));
        }
    }

    void newerMajorVersionIsRefused() {
        const QString p = path("future.warpline");
        {
            TraceBuilder b(p);
            b.kernel({.start = 10, .end = 20});
            b.exec("PRAGMA user_version=301");
        }
        try {
            TraceLoader::load(str(p));
            QFAIL("loaded a trace of a newer major version");
        } catch (const TraceError& e) {
            QCOMPARE(e.kind(), TraceError::Kind::NewerVersion);
            QVERIFY2(QString::fromUtf8(e.what()).contains("newer Warpline (trace format 3.1)"),
                     e.what());
            QVERIFY2(QString::fromUtf8(e.what()).contains("update Warpline"), e.what());
        }
        // A newer minor version of the same major still loads.
        {
            TraceBuilder b(p);
            b.kernel({.start = 10, .end = 20});
            b.exec("PRAGMA user_version=207");
        }
        QCOMPARE(TraceLoader::load(str(p)).kernelCount(), size_t(1));
    }

    void emptyTrace() {
        const QString p = path("emptytrace.warpline");
        { TraceBuilder b(p); }
        const TraceStore store = TraceLoader::load(str(p));
        QCOMPARE(store.eventCount(), size_t(0));
        QVERIFY(store.gpuTracks().empty());
        QVERIFY(store.apiTracks().empty());
        QCOMPARE(store.beginTime(), 0);
        QCOMPARE(store.endTime(), 0);
        QCOMPARE(store.origin(), TraceOrigin::Warpline);
        QCOMPARE(store.metaValue("status"), std::string("complete"));
        QVERIFY(store.warnings().empty());
    }

    void singleKernel() {
        const QString p = path("single.warpline");
        {
            TraceBuilder b(p);
            b.process("app");
            b.kernel({.start = 1000,
                      .end = 1500,
                      .stream = 13,
                      .correlation = 5,
                      .name = "void gelu<float>(float*, int)"});
        }
        const TraceStore store = TraceLoader::load(str(p));
        QCOMPARE(store.kernelCount(), size_t(1));
        QCOMPARE(store.gpuTracks().size(), size_t(1));
        QCOMPARE(store.streams().size(), size_t(1));
        QCOMPARE(store.streams()[0].streamId, 13u);
        QCOMPARE(store.text(store.streams()[0].name), std::string("Stream 13"));
        const GpuTrack& t = store.gpuTracks()[0];
        QCOMPARE(t.start(0), 1000);
        QCOMPARE(t.end(0), 1500);
        QCOMPARE(t.kind(0), GpuOpKind::Kernel);
        QCOMPARE(store.text(t.name(0)), std::string("void gelu<float>(float*, int)"));
        QVERIFY(!t.launch(0).valid()); // no runtime call with correlation 5
        QCOMPARE(store.beginTime(), 1000);
        QCOMPARE(store.endTime(), 1500);
        QCOMPARE(store.devices().size(), size_t(1));
        checkInvariants(store);
    }

    void kernelsWithoutLaunches() {
        const QString p = path("nolaunch.warpline");
        {
            TraceBuilder b(p);
            for (int i = 0; i < 5; ++i)
                b.kernel({.start = i * 100, .end = i * 100 + 50, .correlation = 100 + i});
            b.runtime(0, 10, 1, 1, "cudaMalloc_v3020"); // correlates with nothing
        }
        const TraceStore store = TraceLoader::load(str(p));
        QCOMPARE(store.kernelCount(), size_t(5));
        for (size_t i = 0; i < 5; ++i)
            QVERIFY(!store.gpuTracks()[0].launch(i).valid());
        QVERIFY(store.apiTracks()[0].gpuOps(0).empty());
        checkInvariants(store);
    }

    void noNvtxAndMissingOptionalTables_data() {
        QTest::addColumn<QString>("drop");
        // Tables every Warpline recording has, whose absence the store warns about.
        QTest::addColumn<QStringList>("named");
        QTest::newRow("no NVTX rows") << "" << QStringList{};
        QTest::newRow("no NVTX table") << "DROP TABLE NVTX_EVENTS;" << QStringList{"NVTX_EVENTS"};
        QTest::newRow("no WARPLINE_ tables but kernels")
            << "DROP TABLE WARPLINE_META; DROP TABLE WARPLINE_DROPPED; DROP TABLE "
               "WARPLINE_ERRORS; DROP TABLE WARPLINE_STREAM_NAMES; DROP TABLE WARPLINE_CONTEXTS;"
            << QStringList{"WARPLINE_META"};
        QTest::newRow("no memcpy/memset/sync/names")
            << "DROP TABLE CUPTI_ACTIVITY_KIND_MEMCPY; DROP TABLE CUPTI_ACTIVITY_KIND_MEMSET; "
               "DROP TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION; DROP TABLE ThreadNames; DROP "
               "TABLE PROCESSES; DROP TABLE TARGET_INFO_GPU; DROP TABLE StringIds;"
            << QStringList{"CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                           "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "TARGET_INFO_GPU"};
        // The kernels dropped: said in a warning, not shown as a trace without kernels.
        QTest::newRow("runtime only") << "DROP VIEW CUPTI_ACTIVITY_KIND_KERNEL; DROP TABLE "
                                         "WARPLINE_KERNELS; DROP TABLE WARPLINE_KERNEL_CONFIGS;"
                                      << QStringList{"WARPLINE_KERNELS", "WARPLINE_KERNEL_CONFIGS"};
    }
    void noNvtxAndMissingOptionalTables() {
        QFETCH(QString, drop);
        QFETCH(QStringList, named);
        const QString p = path("optional.warpline");
        {
            TraceBuilder b(p);
            b.runtime(0, 100, 1, 1, "cudaLaunchKernel_v7000");
            b.kernel({.start = 150, .end = 300, .correlation = 1});
            b.exec("COMMIT");
            b.exec(drop.toStdString());
            b.exec("BEGIN");
        }
        const TraceStore store = TraceLoader::load(str(p));
        QCOMPARE(store.apiCallCount(), size_t(1));
        QCOMPARE(store.nvtxEventCount(), size_t(0));
        QStringList missing;
        for (const std::string& w : store.warnings()) {
            const QString warning = QString::fromStdString(w);
            if (warning.contains("which every Warpline recording has"))
                missing << warning.section(" has no ", 1).section(' ', 0, 0);
        }
        QCOMPARE(missing, named);
        const bool kernelsKept = !drop.contains("KERNEL");
        QCOMPARE(store.kernelCount(), size_t(kernelsKept ? 1 : 0));
        if (kernelsKept)
            QVERIFY(store.gpuTracks()[0].launch(0).valid());
        // Without StringIds the name is still a readable placeholder, never a crash.
        if (drop.contains("StringIds"))
            QVERIFY(store.text(store.apiTracks()[0].name(0)).find("unknown string") !=
                    std::string::npos);
        else
            QCOMPARE(store.text(store.apiTracks()[0].name(0)), std::string("cudaLaunchKernel"));
        checkInvariants(store);
    }

    void unsortedInputIsSorted() {
        const QString p = path("unsorted.warpline");
        const QList<int64_t> starts = {900, 100, 500, 300, 700, 0, 800};
        {
            TraceBuilder b(p);
            int corr = 1;
            for (const int64_t s : starts) {
                b.runtime(s, s + 40, 1, corr, "cudaLaunchKernel_v7000");
                b.kernel({.start = s + 50, .end = s + 90, .correlation = corr});
                b.nvtx(59, s, s + 95, 1, "step");
                ++corr;
            }
        }
        const TraceStore store = TraceLoader::load(str(p));
        QCOMPARE(store.gpuTracks().size(), size_t(1));
        QCOMPARE(store.apiTracks().size(), size_t(1));
        QCOMPARE(store.nvtxTracks().size(), size_t(1));
        QList<int64_t> sorted = starts;
        std::sort(sorted.begin(), sorted.end());
        for (int i = 0; i < sorted.size(); ++i) {
            QCOMPARE(store.apiTracks()[0].start(i), sorted[i]);
            QCOMPARE(store.gpuTracks()[0].start(i), sorted[i] + 50);
            QCOMPARE(store.nvtxTracks()[0].start(i), sorted[i]);
            // The link survives sorting: the call at the same position launched the kernel.
            QCOMPARE(store.gpuTracks()[0].launch(i), (EventRef{0, uint32_t(i)}));
        }
        checkInvariants(store);
    }

    void endBeforeStartRowsAreSkipped() {
        const QString p = path("bad rows.warpline");
        {
            TraceBuilder b(p);
            b.kernel({.start = 100, .end = 200});
            b.kernel({.start = 300, .end = 250}); // end < start
            b.kernel({.start = 400, .end = 400}); // zero length is fine
            b.runtime(10, 5, 1, 0, "cudaFree_v3020");
            b.runtime(10, 15, 1, 0, "cudaFree_v3020");
            b.nvtx(59, 50, 40, 1, "backwards");
        }
        const TraceStore store = TraceLoader::load(str(p));
        QCOMPARE(store.kernelCount(), size_t(2));
        QCOMPARE(store.apiCallCount(), size_t(1));
        QCOMPARE(store.nvtxEventCount(), size_t(0));
        QVERIFY(anyWarningContains(store, "1 rows of CUPTI_ACTIVITY_KIND_KERNEL were skipped"));
        QVERIFY(anyWarningContains(store, "1 rows of CUPTI_ACTIVITY_KIND_RUNTIME were skipped"));
        QVERIFY(anyWarningContains(store, "1 rows of NVTX_EVENTS were skipped"));
        checkInvariants(store);
    }

    void overlappingStreams() {
        const QString p = path("streams.warpline");
        {
            TraceBuilder b(p);
            // Streams 7 and 9 run at the same time: separate tracks, no warning.
            for (int i = 0; i < 4; ++i) {
                b.kernel({.start = i * 100, .end = i * 100 + 90, .stream = 7});
                b.kernel({.start = i * 100 + 10, .end = i * 100 + 95, .stream = 9});
            }
            b.memcpy(500, 600, 9, 0, 4096, 1);
        }
        const TraceStore store = TraceLoader::load(str(p));
        QCOMPARE(store.streams().size(), size_t(2));
        QCOMPARE(store.gpuTracks().size(), size_t(2));
        QCOMPARE(store.streams()[0].streamId, 7u);
        QCOMPARE(store.streams()[1].streamId, 9u);
        QCOMPARE(store.gpuTracks()[1].size(), size_t(5));
        QCOMPARE(store.gpuTracks()[1].kind(4), GpuOpKind::Memcpy);
        QCOMPARE(store.text(store.gpuTracks()[1].name(4)),
                 std::string("[CUDA memcpy Host-to-Device]"));
        QCOMPARE(store.memOps()[store.gpuTracks()[1].detail(4)].bytes, uint64_t(4096));
        QVERIFY(!anyWarningContains(store, "overlap"));
        checkInvariants(store);
    }

    void overlapOnOneStreamGetsALane() {
        const QString p = path("lanes.warpline");
        {
            TraceBuilder b(p);
            b.kernel({.start = 0, .end = 100});
            b.kernel({.start = 50, .end = 150}); // overlaps on the same stream: bad data
            b.kernel({.start = 200, .end = 300});
        }
        const TraceStore store = TraceLoader::load(str(p));
        QCOMPARE(store.streams().size(), size_t(1));
        QCOMPARE(store.streams()[0].gpuTracks.size(), size_t(2));
        QCOMPARE(store.gpuTracks()[0].size(), size_t(2));
        QCOMPARE(store.gpuTracks()[1].lane(), 1u);
        QVERIFY(anyWarningContains(store, "1 GPU operations overlap"));
        checkInvariants(store);
    }

    // The rule itself (gputrack.h): which same-stream overlaps CUDA allows. Times in us.
    void dependentLaunchRule_data() {
        QTest::addColumn<int>("earlierKind"); // GpuOpKind
        QTest::addColumn<int>("earlierStart");
        QTest::addColumn<int>("earlierEnd");
        QTest::addColumn<int>("laterKind");
        QTest::addColumn<int>("laterStart");
        QTest::addColumn<bool>("launchedEx");
        QTest::addColumn<bool>("legal");
        const int k = int(GpuOpKind::Kernel);
        const int copy = int(GpuOpKind::Memcpy);
        // As recorded on an H100: cuDNN's kernels start up to 2.4 us before the previous ends.
        QTest::newRow("Ex, 2 us before the end") << k << 0 << 100 << k << 98 << true << true;
        QTest::newRow("Ex, in the middle") << k << 0 << 100 << k << 50 << true << true;
        QTest::newRow("Ex, same start") << k << 0 << 100 << k << 0 << true << false;
        QTest::newRow("Ex after a copy") << copy << 0 << 100 << k << 98 << true << false;
        QTest::newRow("Ex copy") << k << 0 << 100 << copy << 98 << true << false;
        QTest::newRow("tail, 1 us of 55") << k << 0 << 55 << k << 54 << false << true;
        QTest::newRow("tail, 5 us") << k << 0 << 100 << k << 95 << false << true;
        QTest::newRow("6 us before the end") << k << 0 << 100 << k << 94 << false << false;
        QTest::newRow("in the middle") << k << 0 << 100 << k << 50 << false << false;
        QTest::newRow("2 us of a 20 us kernel") << k << 0 << 20 << k << 18 << false << true;
        QTest::newRow("3 us of a 20 us kernel") << k << 0 << 20 << k << 17 << false << false;
        QTest::newRow("after the end") << k << 0 << 100 << k << 100 << true << false;
    }
    void dependentLaunchRule() {
        QFETCH(int, earlierKind);
        QFETCH(int, earlierStart);
        QFETCH(int, earlierEnd);
        QFETCH(int, laterKind);
        QFETCH(int, laterStart);
        QFETCH(bool, launchedEx);
        QFETCH(bool, legal);
        const auto ns = [](int us) { return int64_t(us) * 1000; };
        QCOMPARE(isDependentLaunchOverlap(GpuOpKind(earlierKind), ns(earlierStart), ns(earlierEnd),
                                          GpuOpKind(laterKind), ns(laterStart), launchedEx),
                 legal);
    }

    // The other overlaps CUDA allows: branches of one graph launch run at once (CUPTI puts every
    // node on the launch's stream), and a host-to-host copy is timed by the host.
    void allowedOverlapRule() {
        const auto k = GpuOpKind::Kernel;
        const auto copy = GpuOpKind::Memcpy;
        // A kernel in the middle of another, launched plainly: damage, unless both ran in one
        // graph launch.
        QVERIFY(!isAllowedOverlap(k, 0, 100'000, k, 50'000, false, false, false));
        QVERIFY(isAllowedOverlap(k, 0, 100'000, k, 50'000, false, true, false));
        QVERIFY(isConcurrentGraphOverlap(5, 42, 5, 42));
        QVERIFY(!isConcurrentGraphOverlap(5, 42, 5, 43)); // two launches of one graph
        QVERIFY(!isConcurrentGraphOverlap(0, 42, 0, 42)); // not from a graph
        QVERIFY(!isConcurrentGraphOverlap(5, 42, 6, 42));
        // A copy inside a kernel, or a kernel inside a copy: legal when the copy is host to host.
        QVERIFY(isAllowedOverlap(k, 0, 100'000, copy, 50'000, false, false, true));
        QVERIFY(isAllowedOverlap(copy, 0, 100'000, k, 50'000, false, false, true));
        QVERIFY(!isAllowedOverlap(k, 0, 100'000, copy, 50'000, false, false, false));
        // A dependent launch is still one.
        QVERIFY(isAllowedOverlap(k, 0, 100'000, k, 99'000, true, false, false));
    }

    // Recorded on an H100 (tests/data/corpus): cuDNN's kernels, launched by cudaLaunchKernelExC,
    // start 0.1 to 2.4 us before the kernel before them on their stream ends (programmatic
    // dependent launch); a graph's kernel and a PyTorch trace's kernels without their launch
    // do the same by a few tenths of a us. Legal: counted, drawn, never warned about.
    void allowedOverlapsInRecordedTraces_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("dependent");
        QTest::newRow("loop-logging-eval") << "loop-logging-eval.warpline" << 238;
        QTest::newRow("input-main-process") << "input-main-process.warpline" << 78;
        QTest::newRow("input-slow-loader") << "input-slow-loader.warpline" << 78;
        QTest::newRow("no-caching-allocator") << "no-caching-allocator.warpline" << 78;
        QTest::newRow("cuda-graph-step") << "cuda-graph-step.warpline" << 1;
        QTest::newRow("profiler-cnn") << "profiler-cnn.pt.trace.json.gz" << 36;
        QTest::newRow("gemm-steps") << "gemm-steps.warpline" << 0;
        // XLA: 120 kernels beside another branch of their jitted step's graph, 452 host-to-host
        // read-backs of its autotuner inside a kernel and 420 kernels inside one, and 35
        // kernels launched by cuLaunchKernelEx.
        QTest::newRow("blind-jax-mlp") << "blind-jax-mlp.warpline" << 1027;
    }
    void allowedOverlapsInRecordedTraces() {
        QFETCH(QString, file);
        QFETCH(int, dependent);
        const QString f = QDir(QString::fromUtf8(WARPLINE_TEST_DATA)).filePath("corpus/" + file);
        WARPLINE_REQUIRE_DATA(f);
        const TraceStore store = TraceOpener::open(str(f));
        QVERIFY2(!anyWarningContains(store, "overlap"),
                 store.warnings().empty() ? "" : store.warnings().front().c_str());
        QCOMPARE(store.allowedOverlapCount(), size_t(dependent));
        checkInvariants(store);
    }

    // Damage next to legal overlap: a kernel launched by cudaLaunchKernel that starts in the
    // middle of a long one, and a copy in a kernel's tail, warn (one warning, counting both);
    // a kernel launched by cudaLaunchKernelExC 1 us before its predecessor ends, and a kernel
    // without a launch 1 us before the end of that one (on lane 0: it only overlaps lane 1), do
    // not.
    void illegalOverlapWarnsOnceBesideDependentLaunches() {
        const QString p = path("pdl.warpline");
        {
            TraceBuilder b(p);
            b.runtime(0, 5'000, 1, 1, "cudaLaunchKernel_v7000");
            b.runtime(6'000, 9'000, 1, 2, "cudaLaunchKernel_v7000");
            b.runtime(10'000, 15'000, 1, 3, "cudaLaunchKernel_v7000");
            b.runtime(16'000, 20'000, 1, 4, "cudaLaunchKernelExC_v11060");
            b.kernel({.start = 0, .end = 100'000, .correlation = 1, .name = "long"});
            b.kernel({.start = 50'000, .end = 150'000, .correlation = 2, .name = "in the middle"});
            b.kernel({.start = 200'000, .end = 300'000, .correlation = 3, .name = "primary"});
            b.kernel({.start = 299'000, .end = 400'000, .correlation = 4, .name = "secondary"});
            b.kernel({.start = 399'000, .end = 450'000, .name = "graph node"});
            b.memcpy(449'000, 460'000, 7, 0, 4096, 1);
        }
        const TraceStore store = TraceLoader::load(str(p));
        QCOMPARE(store.streams().size(), size_t(1));
        QCOMPARE(store.allowedOverlapCount(), size_t(2));
        int overlapWarnings = 0;
        for (const std::string& w : store.warnings())
            overlapWarnings += w.find("overlap") != std::string::npos;
        QCOMPARE(overlapWarnings, 1);
        QVERIFY(anyWarningContains(store, "2 GPU operations overlap"));
        checkInvariants(store);
    }

    void apiNestingAndCorrelation() {
        const QString p = path("nesting.warpline");
        {
            TraceBuilder b(p);
            b.threadName(1, "main");
            // cudaLaunchKernel (runtime) wraps cuLaunchKernel (driver) with the same correlation.
            b.runtime(0, 100, 1, 1, "cudaLaunchKernel_v7000");
            b.driver(20, 80, 1, 1, "cuLaunchKernel");
            b.kernel({.start = 200, .end = 300, .correlation = 1, .name = "a"});
            // A graph launch: one call, three kernels on two streams.
            b.runtime(400, 450, 1, 2, "cudaGraphLaunch_v10000");
            b.kernel({.start = 500,
                      .end = 600,
                      .stream = 7,
                      .correlation = 2,
                      .name = "g1",
                      .graphId = 3});
            b.kernel({.start = 510,
                      .end = 520,
                      .stream = 8,
                      .correlation = 2,
                      .name = "g2",
                      .graphId = 3});
            b.kernel({.start = 600,
                      .end = 700,
                      .stream = 7,
                      .correlation = 2,
                      .name = "g3",
                      .graphId = 3});
            b.memset(800, 810, 7, 3, 64);
            b.runtime(790, 795, 1, 3, "cudaMemsetAsync_v3020");
            b.runtime(1000, 1100, 2, 4, "cudaStreamSynchronize_v3020");
            b.exec("INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES "
                   "(1000, 1090, 0, 1, 7, 4, NULL, 3, NULL)");
        }
        const TraceStore store = TraceLoader::load(str(p));
        QCOMPARE(store.threads().size(), size_t(2));
        const ThreadInfo& main = store.threads()[0];
        QCOMPARE(store.text(main.name), std::string("main"));
        QCOMPARE(main.tid, 1u);
        QCOMPARE(main.pid, uint32_t(TraceBuilder::kPid));
        QCOMPARE(main.apiTracks.size(), size_t(2)); // depth 0 and the nested driver call
        const ApiTrack& outer = store.apiTracks()[main.apiTracks[0]];
        const ApiTrack& inner = store.apiTracks()[main.apiTracks[1]];
        QCOMPARE(outer.depth(), 0u);
        QCOMPARE(inner.depth(), 1u);
        QCOMPARE(store.text(inner.name(0)), std::string("cuLaunchKernel"));
        QCOMPARE(inner.domain(0), ApiDomain::Driver);
        QCOMPARE(store.text(outer.name(1)),
                 std::string("cudaGraphLaunch_v10000")); // as nsys shows it
        // The one suffix rule (apitrack.h): a version has four or five digits; _v2 is a name.
        static_assert(apiDisplayName("cudaLaunchKernel_v7000") == "cudaLaunchKernel");
        static_assert(apiDisplayName("cudaGraphLaunch_v10000") == "cudaGraphLaunch_v10000");
        static_assert(stripApiVersion("cudaGraphLaunch_v10000") == "cudaGraphLaunch");
        static_assert(stripApiVersion("cudaGetDeviceProperties_v2") ==
                      "cudaGetDeviceProperties_v2");
        static_assert(stripApiVersion("cuMemAlloc_v2_v3020") == "cuMemAlloc_v2");
        static_assert(stripApiVersion("cudaFoo_v123456") == "cudaFoo_v123456");
        static_assert(stripApiVersion("_v1234") == "");

        // The runtime call wins over the nested driver call with the same correlation id.
        QCOMPARE(outer.gpuOps(0).size(), size_t(1));
        QVERIFY(inner.gpuOps(0).empty());
        // The graph launch lists its kernels in start order across streams.
        const auto graph = outer.gpuOps(1);
        QCOMPARE(graph.size(), size_t(3));
        QStringList names;
        for (const EventRef& op : graph) {
            names << QString::fromStdString(store.text(store.gpuTracks()[op.track].name(op.index)));
            QCOMPARE(store.gpuTracks()[op.track].graphId(op.index), 3u);
        }
        QCOMPARE(names, QStringList({"g1", "g2", "g3"}));
        // Memset link.
        const auto memset = outer.gpuOps(2);
        QCOMPARE(memset.size(), size_t(1));
        QCOMPARE(store.gpuTracks()[memset[0].track].kind(memset[0].index), GpuOpKind::Memset);
        // Sync linked to its API call on the other thread.
        QCOMPARE(store.syncs().size(), size_t(1));
        const EventRef sync = store.syncs()[0].apiCall;
        QVERIFY(sync.valid());
        QCOMPARE(store.text(store.apiTracks()[sync.track].name(sync.index)),
                 std::string("cudaStreamSynchronize"));
        QCOMPARE(store.syncs()[0].syncType, uint8_t(3));
        checkInvariants(store);
    }

    // Driver calls are RUNTIME rows with eventClass 1 (format 2.0, nsys exports); a 1.x trace
    // kept them in a DRIVER table and its clock in kHz. All three read the same.
    void driverCallsAndGpuClockInEveryFormat_data() {
        QTest::addColumn<int>("userVersion");
        QTest::addColumn<bool>("nsys");
        QTest::newRow("warpline 2.0") << 200 << false;
        QTest::newRow("warpline 1.0") << 100 << false;
        QTest::newRow("nsys export") << 0 << true;
    }
    void driverCallsAndGpuClockInEveryFormat() {
        QFETCH(int, userVersion);
        QFETCH(bool, nsys);
        const QString p = path("driverformats.warpline");
        {
            TraceBuilder b(p, nsys ? TraceBuilder::Kind::Nsys : TraceBuilder::Kind::Warpline);
            b.exec("PRAGMA user_version=" + std::to_string(userVersion));
            b.runtime(0, 10, 1, 1, "cudaLaunchKernel_v7000");
            if (userVersion == 100)
                b.legacyDriver(20, 30, 1, 2, "cuLaunchKernelEx");
            else
                b.driver(20, 30, 1, 2, "cuLaunchKernelEx");
            b.kernel({.start = 40, .end = 50, .correlation = 1, .name = "a"});
            b.kernel({.start = 60, .end = 70, .correlation = 2, .name = "triton_poi"});
            const int64_t clock = userVersion == 100 ? 1'980'000 : 1'980'000'000;
            b.exec("INSERT INTO TARGET_INFO_GPU (vmId, id, name, clockRate, smCount) VALUES (0, 0, "
                   "'NVIDIA H100 80GB HBM3', " +
                   std::to_string(clock) + ", 132)");
        }
        const TraceStore store = TraceLoader::load(str(p));
        QCOMPARE(store.devices().size(), size_t(1));
        QCOMPARE(store.devices()[0].clockRate, 1'980'000u); // kHz
        std::map<std::string, ApiDomain> domains;
        for (const ApiTrack& t : store.apiTracks())
            for (size_t i = 0; i < t.size(); ++i)
                domains[store.text(t.name(i))] = t.domain(i);
        QCOMPARE(domains.size(), size_t(2));
        QCOMPARE(domains["cudaLaunchKernel"], ApiDomain::Runtime);
        QCOMPARE(domains["cuLaunchKernelEx"], ApiDomain::Driver);
        // Both kernels know their launch.
        for (const ApiTrack& t : store.apiTracks())
            for (size_t i = 0; i < t.size(); ++i)
                QCOMPARE(t.gpuOps(i).size(), size_t(1));
    }

    // Ranges find their domain's name wherever its row is in the file (NVTX_EVENTS is read in one
    // pass): before or after them, renamed later (the last name wins, as before), ids beyond 32
    // bits or negative, and an id no domain row names (the default domain).
    void nvtxDomainsFromAnywhereInTheTable() {
        const QString p = path("domains.warpline");
        {
            TraceBuilder b(p);
            b.nvtxDomain(7, "early");
            b.nvtx(59, 0, 10, 1, "a", false, 7);
            b.nvtx(59, 20, 30, 1, "b", false, 9);          // named below
            b.nvtx(59, 40, 50, 1, "c", false, 5000000000); // beyond 32 bits
            b.nvtx(59, 60, 70, 1, "d", false, -3);         // negative
            b.nvtx(59, 80, 90, 1, "e", false, 12);         // never named
            b.nvtx(34, 95, 0, 1, "m", false, 9);           // a mark
            b.nvtxDomain(9, "late");
            b.nvtxDomain(5000000000, "wide");
            b.nvtxDomain(-3, "negative");
            b.nvtxDomain(7, "renamed");
            b.kernel({.start = 0, .end = 100});
        }
        for (const bool pages : {true, false}) {
            TraceLoader::Options options;
            options.readPages = pages;
            const TraceStore store = TraceLoader::load(str(p), options);
            std::map<std::string, std::string> domainOf;
            for (const NvtxTrack& t : store.nvtxTracks())
                for (size_t i = 0; i < t.size(); ++i)
                    domainOf[store.text(t.name(i))] = store.text(t.domain(i));
            QCOMPARE(domainOf["a"], std::string("renamed"));
            QCOMPARE(domainOf["b"], std::string("late"));
            QCOMPARE(domainOf["c"], std::string("wide"));
            QCOMPARE(domainOf["d"], std::string("negative"));
            QCOMPARE(domainOf["e"], std::string());
            QCOMPARE(domainOf["m"], std::string("late"));
        }
    }

    void nvtxDepthsLanesAndUnclosed() {
        const QString p = path("nvtx.warpline");
        {
            TraceBuilder b(p);
            b.nvtxDomain(5, "torch");
            b.nvtx(59, 0, 1000, 1, "epoch");
            b.nvtx(59, 10, 400, 1, "step", true);
            b.nvtx(59, 20, 100, 1, "forward");
            b.nvtx(59, 500, 900, 1, "step", true);
            b.nvtx(60, 100, 600, 1, "io", false, 5);
            b.nvtx(60, 200, 700, 1, "io", false, 5); // overlaps the first: second lane
            b.nvtx(60, 650, 800, 1, "io", false, 5); // fits lane 0 again
            b.nvtx(34, 300, 0, 1, "checkpoint");
            b.nvtx(59, 1500, -1, 1, "never closed");
            b.kernel({.start = 0, .end = 2000});
        }
        const TraceStore store = TraceLoader::load(str(p));
        QCOMPARE(store.threads().size(), size_t(1));
        const ThreadInfo& t = store.threads()[0];
        // 3 push/pop depths, 2 start/end lanes, 1 mark track.
        QCOMPARE(t.nvtxTracks.size(), size_t(6));
        const auto track = [&](size_t i) -> const NvtxTrack& {
            return store.nvtxTracks()[t.nvtxTracks[i]];
        };
        QCOMPARE(track(0).style(), NvtxStyle::PushPop);
        QCOMPARE(track(0).size(), size_t(2));                        // epoch, never closed
        QCOMPARE(track(1).size(), size_t(2));                        // step, step
        QCOMPARE(store.text(track(1).name(0)), std::string("step")); // via StringIds
        QCOMPARE(track(2).depth(), 2u);
        QCOMPARE(store.text(track(2).name(0)), std::string("forward"));
        QCOMPARE(track(3).style(), NvtxStyle::StartEnd);
        QCOMPARE(track(3).size(), size_t(2));
        QCOMPARE(track(4).size(), size_t(1));
        QCOMPARE(track(4).depth(), 1u);
        QCOMPARE(store.text(track(3).domain(0)), std::string("torch"));
        QCOMPARE(track(5).style(), NvtxStyle::Mark);
        QCOMPARE(track(5).duration(0), 0);
        QCOMPARE(track(0).color(0), 0xFF00FF00u);
        // The unclosed range ends where the trace ends, flagged and warned about.
        QVERIFY(track(0).isUnclosed(1));
        QVERIFY(!track(0).isUnclosed(0));
        QCOMPARE(track(0).end(1), store.endTime());
        QCOMPARE(store.endTime(), 2000);
        QVERIFY(anyWarningContains(store, "1 NVTX ranges were never closed"));
        checkInvariants(store);
    }

    void visibleRange_data() {
        QTest::addColumn<qint64>("t0");
        QTest::addColumn<qint64>("t1");
        QTest::addColumn<qint64>("first");
        QTest::addColumn<qint64>("last");
        // Spans: [0,10) [10,20) [30,40) [40,40) [50,100)
        QTest::newRow("all") << qint64(-5) << qint64(1000) << qint64(0) << qint64(5);
        QTest::newRow("before") << qint64(-5) << qint64(0) << qint64(0) << qint64(0);
        QTest::newRow("after") << qint64(100) << qint64(200) << qint64(5) << qint64(5);
        QTest::newRow("inside one") << qint64(12) << qint64(15) << qint64(1) << qint64(2);
        QTest::newRow("gap") << qint64(20) << qint64(30) << qint64(2) << qint64(2);
        QTest::newRow("touching ends") << qint64(10) << qint64(31) << qint64(1) << qint64(3);
        QTest::newRow("zero-length span") << qint64(40) << qint64(41) << qint64(3) << qint64(4);
        QTest::newRow("inside the long one") << qint64(60) << qint64(70) << qint64(4) << qint64(5);
        QTest::newRow("empty window") << qint64(15) << qint64(15) << qint64(0) << qint64(0);
    }
    void visibleRange() {
        QFETCH(qint64, t0);
        QFETCH(qint64, t1);
        QFETCH(qint64, first);
        QFETCH(qint64, last);
        const QString p = path("visible.warpline");
        {
            TraceBuilder b(p);
            for (const auto& [s, e] :
                 QList<std::pair<int, int>>{{0, 10}, {10, 20}, {30, 40}, {40, 40}, {50, 100}})
                b.kernel({.start = s, .end = e});
        }
        const TraceStore store = TraceLoader::load(str(p));
        const IndexRange r = store.gpuTracks()[0].visibleRange(t0, t1);
        if (first == last) {
            QVERIFY(r.empty());
        } else {
            QCOMPARE(qint64(r.first), first);
            QCOMPARE(qint64(r.last), last);
        }
        // Brute force agrees.
        const GpuTrack& t = store.gpuTracks()[0];
        size_t brute = 0;
        for (size_t i = 0; i < t.size(); ++i) {
            const int64_t effectiveEnd = std::max(t.end(i), t.start(i) + 1);
            if (t0 < t1 && t.start(i) < t1 && effectiveEnd > t0)
                ++brute;
        }
        QCOMPARE(r.size(), brute);
        QCOMPARE(t.indexAt(55), std::ptrdiff_t(4));
        QCOMPARE(t.indexAt(25), std::ptrdiff_t(-1));
    }

    // The searches that start from an earlier result equal the plain ones, whatever the hint:
    // windows in time order (as the step analyses visit them), and hints from later windows and
    // out of range.
    void hintedQueriesEqualPlainOnes() {
        const QString p = path("hinted.warpline");
        std::mt19937 rng(7);
        {
            TraceBuilder b(p);
            int64_t t = 0;
            for (int i = 0; i < 3000; ++i) {
                t += static_cast<int64_t>(rng() % 50);
                const int64_t length = rng() % 8 == 0 ? 0 : static_cast<int64_t>(rng() % 40);
                b.kernel({.start = t, .end = t + length});
                t += length;
            }
        }
        const TraceStore store = TraceLoader::load(str(p));
        const GpuTrack& track = store.gpuTracks()[0];
        QVERIFY(track.size() > 2900); // a few zero-length spans go to a lane of their own
        const int64_t span = track.lastEnd() + 100;
        IndexRange visible, starting;
        size_t checked = 0;
        for (int64_t t0 = -50; t0 < span; t0 += static_cast<int64_t>(rng() % 300)) {
            const int64_t t1 = t0 + static_cast<int64_t>(rng() % 500);
            visible = track.visibleRange(t0, t1, visible);
            starting = track.startingIn(t0, t1, starting);
            QCOMPARE(visible, track.visibleRange(t0, t1));
            QCOMPARE(starting, track.startingIn(t0, t1));
            const IndexRange any{rng() % 3100, rng() % 3100};
            QCOMPARE(track.visibleRange(t0, t1, any), track.visibleRange(t0, t1));
            QCOMPARE(track.startingIn(t0, t1, any), track.startingIn(t0, t1));
            ++checked;
        }
        QVERIFY(checked > 100);
    }

    void nsysExportLoadsLikeWarpline() {
        const QString warp = path("same.warpline");
        const QString nsys = path("same.sqlite");
        for (const QString& p : {warp, nsys}) {
            TraceBuilder b(p, p == nsys ? TraceBuilder::Kind::Nsys : TraceBuilder::Kind::Warpline);
            b.process("app");
            for (int i = 0; i < 50; ++i) {
                b.runtime(i * 100, i * 100 + 20, 1, i + 1, "cudaLaunchKernel_v7000");
                b.kernel({.start = i * 100 + 30,
                          .end = i * 100 + 60 + i,
                          .stream = 7 + i % 2,
                          .correlation = i + 1,
                          .name = i % 3 ? "k1" : "k2",
                          .grid = {i % 2 + 1, 1, 1}});
            }
        }
        const TraceStore a = TraceLoader::load(str(warp));
        const TraceStore b = TraceLoader::load(str(nsys));
        QCOMPARE(a.origin(), TraceOrigin::Warpline);
        QCOMPARE(b.origin(), TraceOrigin::NsightSystemsExport);
        QCOMPARE(a.kernelCount(), b.kernelCount());
        QCOMPARE(a.gpuTracks().size(), b.gpuTracks().size());
        QCOMPARE(a.kernelConfigs().size(), b.kernelConfigs().size());
        for (size_t t = 0; t < a.gpuTracks().size(); ++t) {
            const GpuTrack& x = a.gpuTracks()[t];
            const GpuTrack& y = b.gpuTracks()[t];
            QCOMPARE(x.size(), y.size());
            for (size_t i = 0; i < x.size(); ++i) {
                QCOMPARE(x.start(i), y.start(i));
                QCOMPARE(x.end(i), y.end(i));
                QCOMPARE(a.text(x.name(i)), b.text(y.name(i)));
                QCOMPARE(x.launch(i), y.launch(i));
                QVERIFY(x.launch(i).valid());
            }
        }
        checkInvariants(a);
        checkInvariants(b);
    }

    // Warpline's CUPTI_ACTIVITY_KIND_KERNEL view gives users' nsys SQL the kernels the loader reads
    // from WARPLINE_KERNELS and WARPLINE_KERNEL_CONFIGS: stored as a table (as in an nsys export,
    // the Warpline tables dropped), the same kernels load.
    void kernelViewEqualsStoredTables() {
        const QString p = path("fast.warpline");
        {
            TraceBuilder b(p);
            b.process("app");
            for (int i = 0; i < 200; ++i) {
                b.runtime(i * 10, i * 10 + 5, 1 + i % 3, i + 1, "cudaLaunchKernel_v7000");
                b.kernel({.start = 5000 - i * 10,
                          .end = 5000 - i * 10 + 7,
                          .stream = 1 + i % 4,
                          .correlation = i + 1,
                          .name = "k" + std::to_string(i % 7),
                          .block = {32 * (i % 2 + 1), 1, 1}});
            }
        }
        const QString n = path("fast-as-nsys.sqlite");
        QFile::remove(n);
        QVERIFY(QFile::copy(p, n));
        QCOMPARE(execSql(n, "CREATE TABLE K AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL; DROP "
                            "VIEW CUPTI_ACTIVITY_KIND_KERNEL; ALTER TABLE K RENAME TO "
                            "CUPTI_ACTIVITY_KIND_KERNEL; DROP TABLE WARPLINE_KERNELS; DROP TABLE "
                            "WARPLINE_KERNEL_CONFIGS;"),
                 std::string());
        const TraceStore fast = TraceLoader::load(str(p));
        const TraceStore view = TraceLoader::load(str(n));
        QCOMPARE(fast.kernelCount(), view.kernelCount());
        QCOMPARE(fast.kernelConfigs().size(), view.kernelConfigs().size());
        for (size_t t = 0; t < fast.gpuTracks().size(); ++t) {
            const GpuTrack& x = fast.gpuTracks()[t];
            const GpuTrack& y = view.gpuTracks()[t];
            QCOMPARE(x.size(), y.size());
            for (size_t i = 0; i < x.size(); ++i) {
                QCOMPARE(x.start(i), y.start(i));
                QCOMPARE(fast.text(x.name(i)), view.text(y.name(i)));
                QCOMPARE(x.launch(i), y.launch(i));
                const KernelConfig& cx = fast.kernelConfigs()[x.detail(i)];
                const KernelConfig& cy = view.kernelConfigs()[y.detail(i)];
                QCOMPARE(cx.blockX, cy.blockX);
            }
        }
    }

    void metaAndDiagnosticsBecomeWarnings() {
        const QString p = path("diag.warpline");
        {
            TraceBuilder b(p);
            b.kernel({.start = 0, .end = 10});
            b.exec("UPDATE WARPLINE_META SET value = 'recording' WHERE key = 'status'");
            b.exec("INSERT INTO WARPLINE_META VALUES ('workload', 'runahead')");
            b.exec("INSERT INTO WARPLINE_DROPPED VALUES (5, 1, 7, 120, 'activity buffer full'), "
                   "(9, 1, 7, 30, 'activity buffer full')");
            b.exec(
                "INSERT INTO WARPLINE_ERRORS VALUES (3, 'cupti', 'CUPTI_ERROR_NOT_INITIALIZED')");
        }
        const TraceStore store = TraceLoader::load(str(p));
        QCOMPARE(store.metaValue("workload"), std::string("runahead"));
        QCOMPARE(store.metaValue("absent"), std::string());
        QVERIFY(anyWarningContains(store, "status \"recording\""));
        QVERIFY(anyWarningContains(store, "dropped 150 records (activity buffer full)"));
        QVERIFY(anyWarningContains(store, "Collector error (cupti): CUPTI_ERROR_NOT_INITIALIZED"));
    }

    void tracedProgramsExitStatusIsShown_data() {
        QTest::addColumn<QString>("status");
        QTest::addColumn<QString>("exitCode");
        QTest::addColumn<QString>("signal");
        QTest::addColumn<QString>("warning"); // empty: no exit-status warning
        QTest::newRow("success") << "complete"
                                 << "0"
                                 << ""
                                 << "";
        QTest::newRow("non-zero exit") << "complete"
                                       << "3"
                                       << ""
                                       << "The traced program exited with status 3.";
        QTest::newRow("killed") << "incomplete"
                                << "137"
                                << "9"
                                << "The traced program was killed by signal 9 (exit status 137).";
        QTest::newRow("no CUDA") << "no-cuda"
                                 << "0"
                                 << ""
                                 << "No CUDA activity was recorded";
    }
    void tracedProgramsExitStatusIsShown() {
        QFETCH(QString, status);
        QFETCH(QString, exitCode);
        QFETCH(QString, signal);
        QFETCH(QString, warning);
        const QString p = path("exit-" + status + exitCode + ".warpline");
        {
            TraceBuilder b(p);
            b.kernel({.start = 0, .end = 10});
            b.exec("UPDATE WARPLINE_META SET value = '" + status.toStdString() +
                   "' WHERE key = 'status'");
            b.exec("INSERT INTO WARPLINE_META VALUES ('exit_code', '" + exitCode.toStdString() +
                   "')");
            if (!signal.isEmpty())
                b.exec("INSERT INTO WARPLINE_META VALUES ('exit_signal', '" + signal.toStdString() +
                       "')");
        }
        const TraceStore store = TraceLoader::load(str(p));
        if (warning.isEmpty())
            QVERIFY(!anyWarningContains(store, "traced program"));
        else
            QVERIFY2(anyWarningContains(store, warning.toStdString()), qPrintable(warning));
    }

    void progressAndCancel() {
        const QString p = path("progress.warpline");
        {
            TraceBuilder b(p);
            for (int i = 0; i < 100000; ++i)
                b.exec("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (" + std::to_string(i * 10) +
                       ", " + std::to_string(i * 10 + 5) + ", 0, 1, " + std::to_string(i + 1) +
                       ", 1, 0, NULL)");
            b.string("cudaLaunchKernel_v7000");
        }
        QList<double> seen;
        const TraceStore store = TraceLoader::load(str(p), {.progress = [&](double f) {
                                                       seen << f;
                                                       return true;
                                                   }});
        QCOMPARE(store.apiCallCount(), size_t(100000));
        QVERIFY(seen.size() >= 5);
        QCOMPARE(seen.first(), 0.0);
        QCOMPARE(seen.last(), 1.0);
        QVERIFY(std::is_sorted(seen.begin(), seen.end()));
        QVERIFY2(
            std::any_of(seen.begin(), seen.end(), [](double f) { return f > 0.2 && f < 0.85; }),
            "progress moves while rows are read");

        int calls = 0;
        QVERIFY_THROWS_EXCEPTION(LoadCancelled, TraceLoader::load(str(p), {.progress = [&](double) {
                                                                      return ++calls < 3;
                                                                  }}));
        QCOMPARE(calls, 3);
    }

    void traceWriterOutputLoads() {
        const QString p = path("writer.warpline");
        QFile::remove(p);
        {
            using namespace warpline::format;
            TraceWriter w(str(p));
            w.setProcess(77, "python3");
            ApiRecord api;
            api.start = 100;
            api.end = 150;
            api.processId = 77;
            api.threadId = 78;
            api.correlationId = 9;
            api.name = "cudaLaunchKernel_v7000";
            w.addApi(api);
            KernelRecord k;
            k.start = 200;
            k.end = 260;
            k.streamId = 13;
            k.correlationId = 9;
            k.mangledName = "_Z4geluPfi";
            w.addKernel(k);
            MarkerRecord start;
            start.kind = MarkerRecord::Kind::Start;
            start.timestamp = 50;
            start.id = 1;
            start.processId = 77;
            start.threadId = 78;
            start.name = "forward";
            w.addMarker(start);
            MarkerRecord end = start;
            end.kind = MarkerRecord::Kind::End;
            end.timestamp = 300;
            end.name = {};
            w.addMarker(end);
            w.finish("complete");
        }
        const TraceStore store = TraceLoader::load(str(p));
        QCOMPARE(store.kernelCount(), size_t(1));
        QCOMPARE(store.text(store.gpuTracks()[0].name(0)), std::string("gelu(float*, int)"));
        QCOMPARE(store.threads().size(), size_t(1));
        QCOMPARE(store.threads()[0].pid, 77u);
        QCOMPARE(store.threads()[0].tid, 78u);
        const EventRef launch = store.gpuTracks()[0].launch(0);
        QVERIFY(launch.valid());
        QCOMPARE(store.text(store.apiTracks()[launch.track].name(launch.index)),
                 std::string("cudaLaunchKernel"));
        QCOMPARE(store.nvtxEventCount(), size_t(1));
        QCOMPARE(store.processes().size(), size_t(1));
        QCOMPARE(store.text(store.processes()[0].name), std::string("python3"));
        QCOMPARE(store.metaValue("status"), std::string("complete"));
        checkInvariants(store);
    }

    void recordedTraces() {
        const QStringList files = ::recordedTraces();
        if (files.isEmpty())
            QFAIL("no recorded traces in " WARPLINE_TEST_DATA " (committed test data is missing)");
        for (const QString& f : files) {
            const TraceStore store = TraceLoader::load(str(f));
            QVERIFY2(store.eventCount() > 0, qPrintable(f));
            checkInvariants(store);
        }
    }
};

QTEST_GUILESS_MAIN(TestModelLoader)
#include "tst_model_loader.moc"
