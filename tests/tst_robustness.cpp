// Damaged or wrong input, as a user meets it: each case gives a clear error (TraceError with a
// message naming the file and what to do; warpline-stats exit 2 with that message) or loads with
// a warning the user sees (TraceStore::warnings(); warpline-stats prints it on stderr), and every
// report runs on what loaded. Never a crash, a hang or an empty result without a word.
// Traces open read-only: loading, reports and exports leave the file's bytes as they were and
// create nothing next to it. docs/robustness.md lists the cases and their messages.

#include "reportregistry.h"
#include "tablewriter.h"
#include "testdata.h"
#include "traceerror.h"
#include "traceloader.h"
#include "tst_model_tracebuilder.h"

#include <QCryptographicHash>
#include <QDir>
#include <QElapsedTimer>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <optional>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace warpline::model;

namespace {

constexpr int kNoError = -1;

QByteArray sha256(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    QCryptographicHash h(QCryptographicHash::Sha256);
    h.addData(&f);
    return h.result().toHex();
}

bool hasWarning(const TraceStore& store, const QString& text) {
    for (const std::string& w : store.warnings()) {
        if (QString::fromStdString(w).contains(text))
            return true;
    }
    return false;
}

QString allWarnings(const TraceStore& store) {
    QStringList list;
    for (const std::string& w : store.warnings())
        list << QString::fromStdString(w);
    return list.join(" | ");
}

// Every report, in every format: what warpline-stats and the GUI would run on the store.
void runEveryReport(const TraceStore& store) {
    for (const ReportDef& report : ReportRegistry::all()) {
        const Table table = report.run(store, ReportOptions{});
        for (const TableFormat f :
             {TableFormat::Text, TableFormat::Csv, TableFormat::Json, TableFormat::Markdown}) {
            std::ostringstream out;
            writeTable(out, table, f);
        }
    }
}

// A connection closed on every way out of a test (QCOMPARE returns early).
class Connection {
public:
    explicit Connection(const QString& path) {
        if (sqlite3_open(path.toUtf8().constData(), &m_db) != SQLITE_OK)
            qFatal("cannot open %s", qPrintable(path));
    }
    ~Connection() { sqlite3_close(m_db); }
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;
    bool exec(const char* sql) {
        return sqlite3_exec(m_db, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
    }

private:
    sqlite3* m_db = nullptr;
};

struct StatsRun {
    int exitCode = -1;
    QByteArray out;
    QString err;
    qint64 ms = 0;
};

// Rebuilds tables without their NOT NULL constraints, so a test can put NULLs where a damaged or
// foreign file can have them.
void loosen(TraceBuilder& b, std::initializer_list<const char*> tables) {
    b.exec("PRAGMA legacy_alter_table=ON");
    for (const std::string table : tables)
        b.exec("CREATE TABLE loose AS SELECT * FROM " + table + "; DROP TABLE " + table +
               "; ALTER TABLE loose RENAME TO " + table);
}

// A small, complete trace: one thread launching three kernels and a copy, an NVTX range.
void writeSmallTrace(TraceBuilder& b) {
    b.process("app");
    b.threadName(1, "main");
    b.runtime(100, 150, 1, 1, "cudaLaunchKernel_v7000");
    b.runtime(200, 250, 1, 2, "cudaLaunchKernel_v7000");
    b.runtime(300, 350, 1, 3, "cudaMemcpyAsync_v3020");
    b.runtime(400, 900, 1, 4, "cudaDeviceSynchronize_v3020");
    b.kernel({.start = 160, .end = 400, .correlation = 1, .name = "void gelu(float*, int)"});
    b.kernel({.start = 400, .end = 600, .correlation = 2, .name = "void softmax(float*)"});
    b.memcpy(600, 800, 7, 3, 4096, 2);
    b.nvtx(59, 90, 950, 1, "step");
}

} // namespace

class TestRobustness : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString path(const QString& name) const { return m_dir.filePath(name); }

    // A writable copy of a committed trace; "" (and the test failed) when it is missing.
    QString copyOfRecorded(const QString& trace, const QString& name) {
        const QString to = path(name);
        const QString from = QString(WARPLINE_TEST_DATA) + "/" + trace;
        QFile::remove(to);
        if (!QFileInfo::exists(from)) {
            QTest::qFail(qPrintable("committed test data is missing: " + from), __FILE__, __LINE__);
            return {};
        }
        if (!QFile::copy(from, to))
            return {};
        QFile::setPermissions(to, QFile::ReadOwner | QFile::WriteOwner | QFile::ReadOther);
        return to;
    }

    // A small trace, then `damage` (SQL) applied to it; `loose` tables lose their constraints.
    QString damagedTrace(const QString& name, const std::string& damage,
                         std::initializer_list<const char*> loose = {}) {
        const QString p = path(name);
        TraceBuilder b(p);
        writeSmallTrace(b);
        loosen(b, loose);
        if (!damage.empty())
            b.exec(damage);
        return p;
    }

    static StatsRun stats(const QStringList& args, bool asNobody = false) {
        QProcess p;
        if (asNobody) {
            p.setChildProcessModifier([] {
                // Drop root so that file permissions apply (root reads everything).
                if (::setgid(65534) != 0 || ::setuid(65534) != 0)
                    ::_exit(125);
            });
        }
        QElapsedTimer timer;
        timer.start();
        p.start(WARPLINE_STATS, args);
        StatsRun r;
        if (!p.waitForFinished(120000)) {
            p.kill();
            p.waitForFinished();
            return r;
        }
        r.ms = timer.elapsed();
        r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
        r.out = p.readAllStandardOutput();
        r.err = QString::fromUtf8(p.readAllStandardError());
        return r;
    }

    // The file fails to load with `kind` and a message containing `message`, in the model and in
    // warpline-stats (exit 2, the message on stderr), leaving the file as it was.
    void expectError(const QString& file, TraceError::Kind kind, const QString& message) {
        const QByteArray before = sha256(file);
        try {
            TraceLoader::load(file.toStdString());
            QFAIL(qPrintable("loaded " + file));
        } catch (const TraceError& e) {
            qInfo("error: %s", e.what());
            QCOMPARE(int(e.kind()), int(kind));
            QVERIFY2(QString::fromUtf8(e.what()).contains(message), e.what());
        }
        const StatsRun r = stats({file, "--report", "kernels"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.startsWith("warpline-stats: ") && r.err.contains(message),
                 qPrintable(r.err));
        QCOMPARE(r.err.count('\n'), 1); // one line
        QVERIFY(r.out.isEmpty());
        QCOMPARE(sha256(file), before);
    }

    // The file loads with a warning containing `warning` (in warnings() and on warpline-stats'
    // stderr), every report runs in and out of process (exit 0), and the file is unchanged. Each
    // condition is a test failure; `out` gets the store for more checks only when all hold.
    void checkLoads(const QString& file, const QString& warning, std::optional<TraceStore>& out) {
        const QByteArray before = sha256(file);
        QVERIFY2(!before.isEmpty(), qPrintable("cannot read " + file));
        TraceStore store;
        try {
            store = TraceLoader::load(file.toStdString());
        } catch (const std::exception& e) {
            QFAIL(qPrintable(QString("did not load: ") + e.what()));
        }
        qInfo("warnings: %s", qPrintable(allWarnings(store)));
        if (!warning.isEmpty())
            QVERIFY2(hasWarning(store, warning), qPrintable("no warning containing \"" + warning +
                                                            "\" among: " + allWarnings(store)));
        runEveryReport(store);
        for (const ReportDef& report : ReportRegistry::all()) {
            const QString name = QString::fromUtf8(report.name.data(), int(report.name.size()));
            const StatsRun r = stats({file, "--report", name});
            QVERIFY2(r.exitCode == 0,
                     qPrintable("warpline-stats --report " + name + ": exit " +
                                QString::number(r.exitCode) + ", stderr: " + r.err));
            if (!warning.isEmpty())
                QVERIFY2(r.err.contains(warning),
                         qPrintable("warpline-stats --report " + name +
                                    " does not print the warning; stderr: " + r.err));
        }
        QVERIFY2(sha256(file) == before, qPrintable(file + " changed"));
        out = std::move(store);
    }
    // checkLoads for a caller that goes on with the store: nullopt when a check failed (the test
    // has failed then; the caller's QVERIFY(store) stops it).
    std::optional<TraceStore> expectLoads(const QString& file, const QString& warning) {
        std::optional<TraceStore> store;
        checkLoads(file, warning, store);
        if (QTest::currentTestFailed())
            return std::nullopt;
        return store;
    }

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    // --- not a trace ------------------------------------------------------------------------

    void notSqlite() {
        const QString p = path("notes.warpline");
        QFile f(p);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("Warpline trace? No: meeting notes.\n");
        f.close();
        expectError(p, TraceError::Kind::NotATrace,
                    "notes.warpline is not a Warpline or Nsight Systems trace: it is not an SQLite "
                    "database");
    }

    void zeroBytes() {
        const QString p = path("zero.warpline");
        QFile f(p);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.close();
        expectError(p, TraceError::Kind::NotATrace, "zero.warpline is empty (0 bytes)");
    }

    void otherApplicationsDatabase() {
        const QString p = path("places.sqlite");
        {
            TraceBuilder b(p);
            b.exec("DROP VIEW CUPTI_ACTIVITY_KIND_KERNEL; DROP TABLE WARPLINE_KERNELS; DROP TABLE "
                   "CUPTI_ACTIVITY_KIND_RUNTIME; DROP TABLE WARPLINE_META");
            b.exec("CREATE TABLE moz_places (url TEXT); INSERT INTO moz_places VALUES ('x')");
            b.exec("PRAGMA user_version=0");
        }
        expectError(p, TraceError::Kind::NotATrace,
                    "places.sqlite is not a Warpline or Nsight Systems trace: no "
                    "CUPTI_ACTIVITY_KIND_KERNEL or CUPTI_ACTIVITY_KIND_RUNTIME table");
    }

    void directory() {
        QVERIFY(QDir(m_dir.path()).mkpath("folder.warpline"));
        expectError(path("folder.warpline"), TraceError::Kind::NotATrace,
                    "folder.warpline is a directory, not a Warpline or Nsight Systems trace");
    }

    void missingFile() {
        expectError(path("gone.warpline"), TraceError::Kind::NotFound,
                    "gone.warpline: no such file");
    }

    void noReadPermission() {
        const QString p = copyOfRecorded("gelu.warpline", "secret.warpline");
        QVERIFY(!p.isEmpty());
        QVERIFY(!p.isEmpty());
        QVERIFY(QFile::setPermissions(p, QFile::WriteOwner));
        const QString message = "secret.warpline: permission denied (you may not read this file";
        if (::geteuid() != 0) {
            expectError(p, TraceError::Kind::NotFound, message);
            return;
        }
        // Root reads every file: check warpline-stats as user nobody instead, which needs a way
        // to the file.
        QVERIFY(QFile::setPermissions(m_dir.path(), QFile::ReadOwner | QFile::WriteOwner |
                                                        QFile::ExeOwner | QFile::ReadOther |
                                                        QFile::ExeOther));
        const StatsRun r = stats({p}, true);
        if (r.exitCode == -1 || r.exitCode == 125 || r.exitCode == 127)
            QSKIP("running as root, and user nobody cannot run " WARPLINE_STATS
                  ": the permission check is untested here");
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(message), qPrintable(r.err));
        qInfo("error (as nobody): %s", qPrintable(r.err.trimmed()));
    }

    // --- damaged SQLite ---------------------------------------------------------------------

    void truncated_data() {
        QTest::addColumn<QString>("trace");
        QTest::addColumn<qint64>("keep"); // bytes kept; negative: all but that many
        QTest::addColumn<QString>("message");
        QTest::addColumn<bool>("loads"); // every page the loader needs is there
        const QString stall = "sync-stall.warpline";
        QTest::newRow("inside the header") << stall << qint64(50) << "cut off" << false;
        QTest::newRow("header only") << stall << qint64(100) << "cut off" << false;
        QTest::newRow("mid first page") << stall << qint64(2000) << "cut off" << false;
        QTest::newRow("mid file") << stall << qint64(80000) << "cut off" << false;
        QTest::newRow("last page missing") << stall << qint64(-4096) << "cut off" << false;
        // sync-stall's last page holds schema rows (since its upgrade to format 2.0); the DDP
        // trace's holds a page of the NVTX_EVENTS_start index, which no read needs.
        QTest::newRow("mid last page, schema") << stall << qint64(-1000) << "cut off" << false;
        QTest::newRow("mid last page, index")
            << "torch-ddp-steps0.warpline" << qint64(-1000) << "cut off" << true;
    }
    void truncated() {
        QFETCH(QString, trace);
        QFETCH(qint64, keep);
        QFETCH(QString, message);
        QFETCH(bool, loads);
        const QString p = copyOfRecorded(trace, "cut.warpline");
        QVERIFY(!p.isEmpty());
        QFile f(p);
        QVERIFY(f.open(QIODevice::ReadWrite));
        QVERIFY(f.resize(keep >= 0 ? keep : f.size() + keep));
        f.close();
        const QByteArray before = sha256(p);
        TraceStore store;
        bool loaded = false;
        try {
            store = TraceLoader::load(p.toStdString());
            loaded = true;
        } catch (const TraceError& e) {
            qInfo("error: %s", e.what());
            QVERIFY2(QString::fromUtf8(e.what()).contains("cut.warpline"), e.what());
            QVERIFY2(QString::fromUtf8(e.what()).contains(message), e.what());
        }
        QCOMPARE(loaded, loads);
        if (loaded) {
            // Every page a table needs was there: a load, with the truncation said.
            qInfo("loaded; warnings: %s", qPrintable(allWarnings(store)));
            QVERIFY2(hasWarning(store, "cut off"), qPrintable(allWarnings(store)));
            runEveryReport(store);
        }
        const StatsRun r = stats({p});
        QCOMPARE(r.exitCode, loaded ? 0 : 2);
        QVERIFY2(r.err.contains(message), qPrintable(r.err));
        QCOMPARE(sha256(p), before);
    }

    void newerFormatVersion() {
        const QString p = copyOfRecorded("gelu.warpline", "future.warpline");
        QVERIFY(!p.isEmpty());
        QVERIFY(Connection(p).exec("PRAGMA user_version=300"));
        expectError(p, TraceError::Kind::NewerVersion,
                    "future.warpline was written by a newer Warpline (trace format 3.0); this "
                    "Warpline reads format 2.x: update Warpline to open it");
    }

    // --- damaged tables ---------------------------------------------------------------------

    void requiredTableMissing() {
        // Names: the trace loads, each unknown name says so.
        {
            const QString p = damagedTrace("nostrings.warpline", "DROP TABLE StringIds");
            const std::optional<TraceStore> loaded =
                expectLoads(p, "names refer to StringIds, which this file lacks");
            QVERIFY(loaded);
            const TraceStore& store = *loaded;
            QVERIFY(store.kernelCount() == 2);
            QCOMPARE(store.text(store.gpuTracks()[0].name(0)).rfind("<unknown string ", 0),
                     size_t(0));
        }
        // Launch configurations: the kernels have no names; they are skipped, and both warnings
        // say why.
        {
            const QString p =
                damagedTrace("noconfigs.warpline", "DROP TABLE WARPLINE_KERNEL_CONFIGS");
            const std::optional<TraceStore> loaded = expectLoads(
                p, "noconfigs.warpline has no WARPLINE_KERNEL_CONFIGS table, which every Warpline "
                   "recording has: its kernel names and launch configurations are missing");
            QVERIFY(loaded);
            const TraceStore& store = *loaded;
            QCOMPARE(store.kernelCount(), size_t(0));
            QVERIFY(std::any_of(store.warnings().begin(), store.warnings().end(),
                                [](const std::string& w) {
                                    return w == "2 kernels were skipped: their configId is not in "
                                                "WARPLINE_KERNEL_CONFIGS.";
                                }));
        }
        // Neither kernels nor API calls: not a trace.
        expectError(damagedTrace("nokernels.warpline",
                                 "DROP VIEW CUPTI_ACTIVITY_KIND_KERNEL; DROP TABLE "
                                 "WARPLINE_KERNELS; DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME"),
                    TraceError::Kind::NotATrace,
                    "nokernels.warpline is not a Warpline or Nsight Systems trace: no "
                    "CUPTI_ACTIVITY_KIND_KERNEL or CUPTI_ACTIVITY_KIND_RUNTIME table");
    }

    // Found by fuzz_trace_sql: when the main thread's read failed while the helper thread was
    // still reading the API tables, the helper wrote to a flag that had gone out of scope
    // (AddressSanitizer: stack-use-after-scope). Many API rows keep the helper busy; the main
    // thread leaves by Cancel (any exception takes the same path out).
    void readErrorWhileApiTablesAreRead() {
        const QString p = damagedTrace(
            "busyhelper.warpline",
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT start + 1000 * n, \"end\" + 1000 * n, "
            "eventClass, globalTid, correlationId + 10 * n, nameId, returnValue, callchainId FROM "
            "CUPTI_ACTIVITY_KIND_RUNTIME, (WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 "
            "FROM c WHERE n < 50000) SELECT n FROM c);");
        int calls = 0;
        TraceLoader::Options options;
        options.progress = [&calls](double) { return ++calls == 1; };
        QVERIFY_THROWS_EXCEPTION(LoadCancelled, TraceLoader::load(p.toStdString(), options));
    }

    // A file is untrusted: the loader reads only the tables it stores. A view named like a table
    // it reads (here an endless recursive CTE, which hung the loader and warpline-stats before)
    // is skipped with a warning naming it; so is a column the file computes.
    void viewsAndGeneratedColumnsAreNotRead_data() {
        QTest::addColumn<QString>("damage");
        QTest::addColumn<QString>("warning");
        QTest::addColumn<int>("kernels");
        const QString endless =
            " AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT T0.* FROM "
            "T0, c WHERE x < 0;";
        QTest::newRow("WARPLINE_KERNELS endless view")
            << "ALTER TABLE WARPLINE_KERNELS RENAME TO T0; CREATE VIEW WARPLINE_KERNELS" + endless
            << "WARPLINE_KERNELS is a view, not a stored table: Warpline reads only the tables a "
               "file stores (a view runs the file's own query, which may never end or may invent "
               "rows), so its kernels are not shown."
            << 0;
        QTest::newRow("NVTX_EVENTS endless view")
            << "ALTER TABLE NVTX_EVENTS RENAME TO T0; CREATE VIEW NVTX_EVENTS" + endless
            << "NVTX_EVENTS is a view, not a stored table" << 2;
        QTest::newRow("StringIds virtual table")
            << "DROP TABLE StringIds; CREATE VIRTUAL TABLE StringIds USING fts5(id, value);"
            << "StringIds is a virtual table, not a stored table" << 2;
        QTest::newRow("StringIds fan-out view")
            << "ALTER TABLE StringIds RENAME TO T0; CREATE VIEW StringIds AS SELECT a.* FROM T0 a, "
               "T0 b, T0 c, T0 d, T0 e, T0 f, T0 g;"
            << "StringIds is a view, not a stored table" << 2;
        QTest::newRow("generated start") << "ALTER TABLE WARPLINE_KERNELS RENAME TO T0; CREATE "
                                            "TABLE WARPLINE_KERNELS (start0 INTEGER, start "
                                            "INTEGER GENERATED ALWAYS AS (start0 + "
                                            "length(hex(zeroblob(50000000)))) VIRTUAL, \"end\" "
                                            "INTEGER, streamId INTEGER, correlationId INTEGER, "
                                            "configId INTEGER, graphId INTEGER); INSERT INTO "
                                            "WARPLINE_KERNELS (start0, \"end\", streamId, "
                                            "correlationId, configId, graphId) SELECT start, "
                                            "\"end\", streamId, correlationId, configId, graphId "
                                            "FROM T0; DROP TABLE T0;"
                                         << "column start of WARPLINE_KERNELS is computed by the "
                                            "file's own SQL (a generated column), not stored"
                                         << 0;
        QTest::newRow("triggers") << "CREATE TRIGGER t1 AFTER INSERT ON WARPLINE_KERNELS BEGIN "
                                     "DELETE FROM StringIds; END; CREATE TRIGGER t2 BEFORE DELETE "
                                     "ON NVTX_EVENTS BEGIN SELECT RAISE(ABORT, 'no'); END;"
                                  << QString() << 2;
    }
    void viewsAndGeneratedColumnsAreNotRead() {
        QFETCH(QString, damage);
        QFETCH(QString, warning);
        QFETCH(int, kernels);
        const QString p = damagedTrace("hostile.warpline", damage.toStdString());
        QElapsedTimer timer;
        timer.start();
        const std::optional<TraceStore> loaded = expectLoads(p, warning);
        QVERIFY(loaded);
        const TraceStore& store = *loaded;
        QCOMPARE(store.kernelCount(), size_t(kernels));
        QCOMPARE(store.apiCallCount(), size_t(4));
        qInfo("loaded, every report run in and out of process: %lld ms", timer.elapsed());
    }

    // An nsys export whose kernel and runtime tables are both views is not read at all, and the
    // message says why.
    void onlyViewsIsNotATrace() {
        const QString p = path("views.sqlite");
        {
            TraceBuilder b(p, TraceBuilder::Kind::Nsys);
            b.runtime(100, 150, 1, 1, "cudaLaunchKernel_v7000");
            b.exec("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME TO K0; CREATE VIEW "
                   "CUPTI_ACTIVITY_KIND_KERNEL AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL "
                   "SELECT x + 1 FROM c) SELECT K0.* FROM K0, c WHERE x < 0; ALTER TABLE "
                   "CUPTI_ACTIVITY_KIND_RUNTIME RENAME TO R0; CREATE VIEW "
                   "CUPTI_ACTIVITY_KIND_RUNTIME AS SELECT * FROM R0;");
        }
        expectError(p, TraceError::Kind::NotATrace,
                    "views.sqlite is not a Warpline or Nsight Systems trace: no "
                    "CUPTI_ACTIVITY_KIND_KERNEL or CUPTI_ACTIVITY_KIND_RUNTIME table; "
                    "CUPTI_ACTIVITY_KIND_KERNEL is a view, not a stored table");
    }

    // A query that runs past its budget without a row is stopped with a message naming the table;
    // Cancel reaches inside such a query. NVTX rows of a type the loader does not read make both
    // NVTX queries scan the whole table without returning a row.
    QString longScanTrace() {
        const QString p = path("longscan.warpline");
        if (QFile::exists(p))
            return p;
        TraceBuilder b(p);
        writeSmallTrace(b);
        b.exec("INSERT INTO NVTX_EVENTS (start, \"end\", eventType, globalTid) WITH RECURSIVE "
               "c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 400000) SELECT n, n + "
               "1, 99, 1 FROM c");
        return p;
    }
    // The guards on SQL (the page reader, which reads the NVTX rows here without a query, is
    // bounded by the file's size instead: tst_pagereader).
    void queryPastItsBudgetIsStopped() {
        TraceLoader::Options options;
        options.queryBudget = std::chrono::milliseconds(1);
        options.readPages = false;
        try {
            TraceLoader::load(longScanTrace().toStdString(), options);
            QFAIL("loaded");
        } catch (const TraceError& e) {
            QCOMPARE(int(e.kind()), int(TraceError::Kind::Corrupt));
            QVERIFY2(QString(e.what()).startsWith(
                         "cannot read longscan.warpline: reading NVTX_EVENTS ran for 1 ms without "
                         "returning a row"),
                     e.what());
        }
        // The default budget (5 s and more) lets the same scans finish.
        QCOMPARE(TraceLoader::load(longScanTrace().toStdString()).kernelCount(), size_t(2));
    }
    void cancelReachesInsideAQuery() {
        // The first call is the load's start; the next can only come from inside the NVTX scans
        // (at fraction 0: no row has been counted since), since between rows the loader reports
        // only every 16384 rows and the end of reading reports more than 0.
        // Read from the pages, the cancel arrives between the first batches of pages.
        for (const bool pages : {false, true}) {
            std::vector<double> calls;
            TraceLoader::Options options;
            options.readPages = pages;
            options.progress = [&calls](double f) {
                calls.push_back(f);
                return calls.size() == 1;
            };
            QVERIFY_THROWS_EXCEPTION(LoadCancelled,
                                     TraceLoader::load(longScanTrace().toStdString(), options));
            QCOMPARE(calls.size(), size_t(2));
            QCOMPARE(calls[1], 0.0);
        }
    }

    // A file whose events need more memory than is available is refused before reading, with
    // how much it needs; a crafted rowid of 2^62 does not make a small file look large.
    void tooLargeForMemoryIsRefusedUpFront() {
        TraceLoader::Options options;
        options.availableMemory = 1 << 20;
        try {
            TraceLoader::load(longScanTrace().toStdString(), options);
            QFAIL("loaded");
        } catch (const TraceError& e) {
            QCOMPARE(int(e.kind()), int(TraceError::Kind::TooLarge));
            qInfo("error: %s", e.what());
            QVERIFY2(QRegularExpression("^cannot open longscan.warpline: its \\d+ events need "
                                        "about \\d+ MiB of memory \\(48 bytes each while "
                                        "loading\\), more than this machine has available \\(1 "
                                        "MiB\\): close other programs, or open it on a machine "
                                        "with more memory$")
                         .match(e.what())
                         .hasMatch(),
                     e.what());
        }
        options.availableMemory = uint64_t(1) << 30;
        QCOMPARE(TraceLoader::load(longScanTrace().toStdString(), options).kernelCount(),
                 size_t(2));
        const QString p = damagedTrace("bigrowid.warpline",
                                       "INSERT INTO NVTX_EVENTS (rowid, start, \"end\", eventType, "
                                       "globalTid) VALUES (4611686018427387904, 1, 2, 59, 1)");
        options.availableMemory = 64 << 20;
        QCOMPARE(TraceLoader::load(p.toStdString(), options).kernelCount(), size_t(2));
    }

    void danglingStringIds() {
        const QString p = damagedTrace("dangling.warpline",
                                       "UPDATE WARPLINE_KERNEL_CONFIGS SET demangledName = 9999, "
                                       "shortName = 9999; UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET "
                                       "nameId = -5 WHERE correlationId = 2");
        const std::optional<TraceStore> loaded =
            expectLoads(p, "names refer to string ids missing from StringIds");
        QVERIFY(loaded);
        const TraceStore& store = *loaded;
        QCOMPARE(store.kernelCount(), size_t(2));
    }

    void nullsInRequiredColumns() {
        const QString p = damagedTrace(
            "nulls.warpline",
            "UPDATE WARPLINE_KERNELS SET start = NULL WHERE correlationId = 1;"
            "UPDATE WARPLINE_KERNELS SET streamId = NULL, correlationId = NULL WHERE "
            "correlationId = 2;"
            "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET \"end\" = NULL WHERE correlationId = 1;"
            "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET globalTid = NULL, nameId = NULL, "
            "returnValue = NULL WHERE correlationId = 4;"
            "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET bytes = NULL, copyKind = NULL, deviceId = NULL;"
            "UPDATE NVTX_EVENTS SET eventType = NULL;"
            "UPDATE StringIds SET value = NULL WHERE id = 1;"
            "UPDATE WARPLINE_META SET value = NULL WHERE key = 'status'",
            {"WARPLINE_KERNELS", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY",
             "NVTX_EVENTS", "StringIds", "WARPLINE_META"});
        const std::optional<TraceStore> loaded = expectLoads(
            p, "1 rows of CUPTI_ACTIVITY_KIND_KERNEL were skipped: missing times, end before "
               "start, or times beyond 146 years.");
        QVERIFY(loaded);
        const TraceStore& store = *loaded;
        QVERIFY(hasWarning(store, "1 rows of CUPTI_ACTIVITY_KIND_RUNTIME were skipped"));
        QCOMPARE(store.kernelCount(), size_t(1));
        QCOMPARE(store.memcpyCount(), size_t(1));
    }

    void endBeforeStart() {
        const QString p =
            damagedTrace("backwards.warpline",
                         "UPDATE WARPLINE_KERNELS SET \"end\" = start - 1 WHERE correlationId = 2;"
                         "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET \"end\" = -9223372036854775808;"
                         "UPDATE NVTX_EVENTS SET start = 9223372036854775807");
        const std::optional<TraceStore> loaded =
            expectLoads(p, "rows of CUPTI_ACTIVITY_KIND_KERNEL were skipped");
        QVERIFY(loaded);
        const TraceStore& store = *loaded;
        QVERIFY(hasWarning(store, "1 rows of CUPTI_ACTIVITY_KIND_MEMCPY were skipped"));
        QVERIFY(hasWarning(store, "1 rows of NVTX_EVENTS were skipped"));
        QCOMPARE(store.kernelCount(), size_t(1));
    }

    // Found by fuzz_trace_sql (tests/fuzz/regressions/fuzz_trace_sql/int64-min-start): a kernel
    // starting at INT64_MIN made its duration overflow. Times beyond +-2^62 ns are skipped like
    // rows that end before they start; the widest span kept still has a duration that fits.
    void extremeTimes() {
        const QString p = damagedTrace(
            "extreme.warpline",
            "UPDATE WARPLINE_KERNELS SET start = -9223372036854775808 WHERE correlationId = 1;"
            "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET \"end\" = 9223372036854775807 WHERE "
            "correlationId = 4;"
            "UPDATE NVTX_EVENTS SET start = -4611686018427387904;"
            "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET start = -4611686018427387903, \"end\" = "
            "4611686018427387903;"
            // Two kernels of 2^63 - 2 ns: their total saturates (fuzz_trace_sql found the kernel
            // insight then converting 2^63 as a double to int64: regressions/saturated-total).
            "INSERT INTO WARPLINE_KERNELS SELECT -4611686018427387903, 4611686018427387903, "
            "streamId + n, 50 + n, configId, gridId, graphNodeId, graphId FROM WARPLINE_KERNELS, "
            "(SELECT 1 AS n UNION ALL SELECT 2) WHERE correlationId = 2");
        const std::optional<TraceStore> loaded =
            expectLoads(p, "1 rows of CUPTI_ACTIVITY_KIND_KERNEL were skipped");
        QVERIFY(loaded);
        const TraceStore& store = *loaded;
        QVERIFY(hasWarning(store, "1 rows of CUPTI_ACTIVITY_KIND_RUNTIME were skipped"));
        QVERIFY(hasWarning(store, "1 rows of NVTX_EVENTS were skipped"));
        QCOMPARE(store.memcpyCount(), size_t(1));
        QCOMPARE(store.kernelCount(), size_t(3));
        QCOMPARE(store.endTime() - store.beginTime(), 2 * ((int64_t(1) << 62) - 1));
    }

    void duplicateCorrelationIds() {
        const QString p = damagedTrace(
            "dupes.warpline",
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT start + 1000, \"end\" + 1000, "
            "eventClass, globalTid, correlationId, nameId, returnValue, callchainId FROM "
            "CUPTI_ACTIVITY_KIND_RUNTIME;"
            "INSERT INTO WARPLINE_KERNELS SELECT start + 1000, \"end\" + 1000, streamId, "
            "correlationId, configId, gridId, graphNodeId, graphId FROM WARPLINE_KERNELS");
        const std::optional<TraceStore> loaded =
            expectLoads(p, "4 CUDA API calls repeat the correlation id of another call");
        QVERIFY(loaded);
        const TraceStore& store = *loaded;
        QCOMPARE(store.kernelCount(), size_t(4));
        // Each kernel links to a call with its id, and the links go both ways.
        size_t linked = 0, reverse = 0;
        for (const GpuTrack& t : store.gpuTracks()) {
            for (size_t i = 0; i < t.size(); ++i) {
                const EventRef launch = t.launch(i);
                QVERIFY(launch.valid());
                QCOMPARE(store.apiTracks()[launch.track].correlationId(launch.index),
                         t.correlationId(i));
                ++linked;
            }
        }
        for (const ApiTrack& t : store.apiTracks()) {
            for (size_t i = 0; i < t.size(); ++i)
                reverse += t.gpuOps(i).size();
        }
        QCOMPARE(reverse, linked);
    }

    void missingAndHugeCorrelationIds() {
        const QString p = damagedTrace(
            "orphans.warpline",
            "UPDATE WARPLINE_KERNELS SET correlationId = 77 WHERE correlationId = 1;"
            "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET correlationId = 4294967295 WHERE "
            "correlationId = 4;"
            "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET correlationId = -1 WHERE correlationId = 3;"
            "UPDATE WARPLINE_KERNELS SET correlationId = 4294967295 WHERE correlationId = 2");
        QElapsedTimer timer;
        timer.start();
        // Two calls now carry 2^32 - 1 (-1 reads as that too).
        const std::optional<TraceStore> loaded =
            expectLoads(p, "1 CUDA API calls repeat the correlation id of another call");
        QVERIFY(loaded);
        const TraceStore& store = *loaded;
        QVERIFY(store.kernelCount() == 2);
        QVERIFY2(timer.elapsed() < 60000, "no table of 2^32 entries");
        size_t launched = 0;
        for (const GpuTrack& t : store.gpuTracks()) {
            for (size_t i = 0; i < t.size(); ++i)
                launched += t.launch(i).valid();
        }
        QCOMPARE(launched, size_t(1)); // the kernel with 2^32 - 1; id 77 and the copy's 3: none
    }

    void megabyteKernelName() {
        const std::string huge = "void " + std::string(4 << 20, 'k') + "(float*)";
        const QString p = path("hugename.warpline");
        {
            TraceBuilder b(p);
            writeSmallTrace(b);
            b.kernel({.start = 700, .end = 800, .correlation = 9, .name = huge});
        }
        QElapsedTimer timer;
        timer.start();
        const std::optional<TraceStore> loaded = expectLoads(p, QString());
        QVERIFY(loaded);
        const TraceStore& store = *loaded;
        QCOMPARE(store.kernelCount(), size_t(3));
        const StatsRun r = stats({p, "--report", "kernels", "--format", "csv"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(r.out.contains(QByteArray::fromStdString(huge)));
        // The text table: the name whole, once; the other rows are not padded to its width
        // (fuzz_trace_sql: a 1 MB name made every report's text as many MB as it had rows).
        const StatsRun text = stats({p, "--report", "kernels"});
        QCOMPARE(text.exitCode, 0);
        QVERIFY(text.out.contains(QByteArray::fromStdString(huge)));
        QVERIFY2(text.out.size() < qsizetype(huge.size()) + 10000,
                 qPrintable(QString::number(text.out.size()) + " bytes"));
        QVERIFY2(timer.elapsed() < 60000, qPrintable(QString::number(timer.elapsed()) + " ms"));
    }

    void htmlAndControlCharactersStayText() {
        const std::string name = "<b>x</b>\n\x07<script>alert(1)</script>";
        const QString p = path("html.warpline");
        {
            TraceBuilder b(p);
            writeSmallTrace(b);
            b.kernel({.start = 700, .end = 800, .correlation = 9, .name = name});
        }
        const std::optional<TraceStore> loaded = expectLoads(p, QString());
        QVERIFY(loaded);
        const TraceStore& store = *loaded;
        bool found = false;
        for (const GpuTrack& t : store.gpuTracks()) {
            for (size_t i = 0; i < t.size(); ++i)
                found |= store.text(t.name(i)) == name;
        }
        QVERIFY2(found, "the name is kept byte for byte");
        // The text table shows control characters as spaces, the rest as it is.
        StatsRun r = stats({p, "--report", "kernels"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.out.contains("<b>x</b>  <script>alert(1)</script>"), r.out.constData());
        r = stats({p, "--report", "kernels", "--format", "json"});
        QVERIFY2(r.out.contains("<b>x</b>\\n\\u0007<script>alert(1)</script>"), r.out.constData());
    }

    // --- files in use -----------------------------------------------------------------------

    void lockedByAnotherWriter() {
        const QString p = copyOfRecorded("gelu.warpline", "locked.warpline");
        QVERIFY(!p.isEmpty());
        Connection writer(p);
        QVERIFY(writer.exec("BEGIN EXCLUSIVE"));
        QElapsedTimer timer;
        timer.start();
        try {
            TraceLoader::load(p.toStdString());
            QFAIL("read a file under an exclusive lock");
        } catch (const TraceError& e) {
            qInfo("error: %s", e.what());
            QCOMPARE(e.kind(), TraceError::Kind::Locked);
            QVERIFY2(QString::fromUtf8(e.what()).contains(
                         "locked.warpline is locked by another program that is writing to it"),
                     e.what());
        }
        QVERIFY2(timer.elapsed() < 10000, "waits a moment, not forever");
        const StatsRun r = stats({p});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("is locked by another program"), qPrintable(r.err));
    }

    void beingWritten() {
        // A live recorder: an open transaction (journal present, not hot) and status
        // "recording". What was committed loads, with a warning; the uncommitted rows do not.
        const QString p = copyOfRecorded("gelu.warpline", "live.warpline");
        QVERIFY(!p.isEmpty());
        size_t committedKernels = 0;
        {
            const TraceStore before = TraceLoader::load(p.toStdString());
            committedKernels = before.kernelCount();
        }
        Connection writer(p);
        QVERIFY(writer.exec("UPDATE WARPLINE_META SET value = 'recording' WHERE key = 'status';"
                            "BEGIN; INSERT INTO WARPLINE_KERNELS SELECT * FROM WARPLINE_KERNELS"));
        QVERIFY(QFile::exists(p + "-journal"));
        const std::optional<TraceStore> loaded = expectLoads(p, "The recording had not finished");
        QVERIFY(loaded);
        const TraceStore& store = *loaded;
        QCOMPARE(store.kernelCount(), committedKernels);
    }

    void hotJournalOfAKilledRecorder() {
        // A recorder killed in the middle of a batch leaves the file and a hot journal; with a
        // small page cache the unfinished batch has already reached the file itself.
        const QString source = copyOfRecorded("gelu.warpline", "source.warpline");
        QVERIFY(!source.isEmpty());
        const QString p = path("killed.warpline");
        size_t kernels = 0;
        {
            const TraceStore store = TraceLoader::load(source.toStdString());
            kernels = store.kernelCount();
        }
        {
            Connection writer(source);
            QVERIFY(writer.exec("PRAGMA cache_size=2; UPDATE WARPLINE_META SET value = "
                                "'recording' WHERE key = 'status'; BEGIN; DELETE FROM "
                                "WARPLINE_KERNELS; INSERT INTO StringIds SELECT id + 100000, "
                                "value || value || value FROM StringIds"));
            // What a SIGKILL leaves: the files as they are now, and no process holding a lock.
            QFile::remove(p);
            QFile::remove(p + "-journal");
            QVERIFY(QFile::copy(source, p));
            QVERIFY(QFile::copy(source + "-journal", p + "-journal"));
        }
        QVERIFY2(sha256(p) != sha256(source), "the unfinished batch reached the file");
        const QByteArray journalBefore = sha256(p + "-journal");

        const std::optional<TraceStore> loaded = expectLoads(p, "hot journal");
        QVERIFY(loaded);
        const TraceStore& store = *loaded;
        QVERIFY(hasWarning(store, "The recording had not finished"));
        QCOMPARE(store.kernelCount(), kernels); // the batch that deleted them is rolled back
        QCOMPARE(sha256(p + "-journal"), journalBefore);
        const QStringList rollbacks =
            QDir(QDir::tempPath()).entryList({"warpline-read-*"}, QDir::Dirs);
        QVERIFY2(rollbacks.isEmpty(), qPrintable(rollbacks.join(", ")));
    }

    // --- warnings the recorder leaves -------------------------------------------------------

    void droppedRecordsAreAWarning() {
        const QString p = damagedTrace(
            "dropped.warpline",
            "INSERT INTO WARPLINE_DROPPED VALUES (0, 1, 7, 1200, 'CUPTI activity buffer full'),"
            "(0, 1, 7, 34, 'CUPTI activity buffer full');"
            "UPDATE WARPLINE_META SET value = 'complete' WHERE key = 'status'");
        const std::optional<TraceStore> loaded = expectLoads(
            p, "The collector dropped 1234 records (CUPTI activity buffer full): totals "
               "and timelines miss those events.");
        QVERIFY(loaded);
        // One warning for the reason, not one per buffer; the trace itself is whole.
        QCOMPARE(std::count_if(loaded->warnings().begin(), loaded->warnings().end(),
                               [](const std::string& w) {
                                   return w.find("The collector dropped") != std::string::npos;
                               }),
                 std::ptrdiff_t(1));
        QCOMPARE(loaded->kernelCount(), size_t(2));
    }

    // --- read-only --------------------------------------------------------------------------

    void tracesOpenReadOnly_data() {
        QTest::addColumn<QString>("trace");
        for (const QString& f :
             warpline::testdata::committedFiles(WARPLINE_TEST_DATA, {"*.warpline"}))
            QTest::newRow(qPrintable(QFileInfo(f).fileName())) << QFileInfo(f).fileName();
    }
    void tracesOpenReadOnly() {
        QFETCH(QString, trace);
        WARPLINE_REQUIRE_DATA(QString(WARPLINE_TEST_DATA) + "/" + trace);
        const QString dir = path("ro-" + trace);
        QVERIFY(QDir().mkpath(dir));
        const QString p = dir + "/" + trace;
        QFile::remove(p);
        QVERIFY(QFile::copy(QString(WARPLINE_TEST_DATA) + "/" + trace, p));
        const QByteArray before = sha256(p);
        const QFileInfo info(p);
        const QDateTime modified = info.lastModified();

        runEveryReport(TraceLoader::load(p.toStdString()));
        const QString exports = path("exports-" + trace);
        QVERIFY(QDir().mkpath(exports));
        for (const ReportDef& report : ReportRegistry::all()) {
            for (const char* format : {"table", "csv", "json", "md"}) {
                const QString name = QString::fromUtf8(report.name.data(), int(report.name.size()));
                const StatsRun r = stats({p, "--report", name, "--format", format, "-o",
                                          exports + "/" + name + "." + format});
                QCOMPARE(r.exitCode, 0);
            }
        }
        QCOMPARE(sha256(p), before);
        QCOMPARE(QFileInfo(p).lastModified(), modified);
        // Nothing next to it: no -journal, -wal or -shm.
        QCOMPARE(QDir(dir).entryList(QDir::Files | QDir::Hidden | QDir::System),
                 QStringList{trace});
    }
};

QTEST_GUILESS_MAIN(TestRobustness)
#include "tst_robustness.moc"
