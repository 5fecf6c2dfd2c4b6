// warpline-stats as a user runs it: reports in each format, and every error path (exit status 2,
// one line "warpline-stats: ..." on stderr). Several traces and folders of them (the ranks of a
// generated job, bench/rankjobgen.h) open as one session.

#include "rankjobgen.h"
#include "sqlitereader.h"
#include "tst_model_tracebuilder.h"
#include "warpline_version.h"

#include <QCryptographicHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <tuple>

namespace {

struct Run {
    int exitCode = -1;
    QByteArray out;
    QByteArray err;
};

Run runStats(const QStringList& args) {
    QProcess p;
    p.start(QString::fromUtf8(WARPLINE_STATS), args);
    if (!p.waitForFinished(60000))
        qFatal("warpline-stats did not finish");
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
            p.readAllStandardError()};
}

} // namespace

class TestStatsCli : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString m_trace;
    QString path(const QString& name) const { return m_dir.filePath(name); }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_trace = path("app.warpline");
        TraceBuilder b(m_trace);
        b.process("app");
        b.nvtx(59, 0, 10000, 1, "train");
        for (int i = 0; i < 20; ++i) {
            b.runtime(i * 100, i * 100 + 10, 1, i + 1, "cudaLaunchKernel_v7000");
            b.kernel({.start = i * 100 + 50,
                      .end = i * 100 + 80 + (i % 2) * 10,
                      .correlation = i + 1,
                      .name = i % 2 ? "gemm, \"fast\"" : "relu",
                      .grid = {i % 2 + 1, 1, 1}});
        }
        b.memcpy(5000, 5100, 7, 0, 1'000'000, 1);
    }

    void helpAndVersion() {
        const Run help = runStats({"--help"});
        QCOMPARE(help.exitCode, 0);
        for (const char* report :
             {"kernels", "api", "nvtx", "nvtx-kernels", "memops", "ranks", "rank-steps"})
            QVERIFY2(help.out.contains(report), report);
        QVERIFY(help.out.contains("TRACE..."));
        const Run version = runStats({"--version"});
        QCOMPARE(version.exitCode, 0);
        QCOMPARE(version.out, QByteArray("warpline-stats " WARPLINE_VERSION "\n"));
    }

    void reports_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QByteArray>("expected");
        QTest::newRow("kernels table") << QStringList{"--report", "kernels"} << QByteArray("relu");
        QTest::newRow("kernels md")
            << QStringList{"--report", "kernels", "--format", "md"} << QByteArray("| Time (%) |");
        QTest::newRow("api") << QStringList{"--report=api"} << QByteArray("cudaLaunchKernel");
        QTest::newRow("nvtx") << QStringList{"--report", "nvtx"} << QByteArray("PushPop");
        QTest::newRow("nvtx-kernels")
            << QStringList{"--report", "nvtx-kernels"} << QByteArray("train");
        QTest::newRow("memops") << QStringList{"--report", "memops"}
                                << QByteArray("[CUDA memcpy Host-to-Device]");
        QTest::newRow("memsize") << QStringList{"--report", "memsize", "--format", "csv"}
                                 << QByteArray("1,1,1,1,1,1,0,[CUDA memcpy Host-to-Device]");
        QTest::newRow("by launch config")
            << QStringList{"--report", "kernels", "--group-by-launch-config", "--format", "csv"}
            << QByteArray("2 1 1,128 1 1,\"gemm, \"\"fast\"\"\"");
    }
    void reports() {
        QFETCH(QStringList, args);
        QFETCH(QByteArray, expected);
        const Run r = runStats(QStringList{m_trace} + args);
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.out.contains(expected), r.out.constData());
        QVERIFY2(r.err.isEmpty(), r.err.constData());
    }

    void jsonOutputToFile() {
        const QString out = path("kernels.json");
        const Run r = runStats({m_trace, "--report", "kernels", "--format", "json", "-o", out});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(r.out.isEmpty());
        QFile f(out);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonArray rows = QJsonDocument::fromJson(f.readAll()).array();
        QCOMPARE(rows.size(), 2);
        QCOMPARE(rows[0].toObject()["Name"].toString(), QString("gemm, \"fast\""));
        QCOMPARE(rows[0].toObject()["Instances"].toInteger(), 10);
        QCOMPARE(rows[0].toObject()["Total Time (ns)"].toInteger(), 400);
    }

    // Several reports at once (as nsys stats takes them): -o BASE writes BASE_NAME.csv for each,
    // each the bytes of that report alone; "all" is every report. Without -o, or where one of the
    // files exists already (without --force), nothing is written.
    void severalReportsGoToFiles() {
        const QString base = path("several");
        Run r = runStats({m_trace, "--report", "kernels,api", "--format", "csv"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("give -o BASE"), r.err.constData());
        r = runStats({m_trace, "--report", "kernels,api", "--format", "csv", "-o", base});
        QCOMPARE(r.exitCode, 0);
        for (const char* id : {"kernels", "api"}) {
            QFile f(base + "_" + id + ".csv");
            QVERIFY2(f.open(QIODevice::ReadOnly), id);
            QCOMPARE(f.readAll(), runStats({m_trace, "--report", id, "--format", "csv"}).out);
        }
        QVERIFY(!QFile::exists(base + "_nvtx.csv"));
        r = runStats({m_trace, "--report", "all", "--format", "md", "-o", base});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(QFile::exists(base + "_insights.md") && QFile::exists(base + "_rank-steps.md"));
        // kernels exists now: refused before anything is written.
        QFile::remove(base + "_api.csv");
        r = runStats({m_trace, "--report", "api,kernels", "--format", "csv", "-o", base});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("several_kernels.csv"), r.err.constData());
        QVERIFY(!QFile::exists(base + "_api.csv"));
        r = runStats({m_trace, "--report", "kernels,bogus", "-o", base});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("unknown report \"bogus\""), r.err.constData());
    }

    void errors_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("message");
        QTest::newRow("no trace") << QStringList{} << "warpline-stats: no trace file given";
        QTest::newRow("missing file") << QStringList{"@DIR@/missing.warpline"}
                                      << "warpline-stats: @DIR@/missing.warpline: no such file";
        QTest::newRow("not a trace") << QStringList{"@DIR@/text.warpline"}
                                     << "warpline-stats: text.warpline is not a Warpline or Nsight "
                                        "Systems trace: it is not an SQLite database";
        QTest::newRow("unknown report") << QStringList{"@TRACE@", "--report", "bogus"}
                                        << "warpline-stats: unknown report \"bogus\" (reports: "
                                           "insights, steps, kernels, gpu-metrics";
        QTest::newRow("unknown format") << QStringList{"@TRACE@", "--format", "xml"}
                                        << "warpline-stats: unknown format \"xml\"";
        QTest::newRow("unknown option") << QStringList{"@TRACE@", "--frobnicate"}
                                        << "warpline-stats: unknown option --frobnicate";
        QTest::newRow("unwritable -o") << QStringList{"@TRACE@", "-o", "/proc/no/such/dir/x.csv"}
                                       << "warpline-stats: cannot write /proc/no/such/dir/x.csv";
        QTest::newRow("-o exists") << QStringList{"@TRACE@", "-o", "@DIR@/exists.txt"}
                                   << "warpline-stats: @DIR@/exists.txt exists; use --force";
        QTest::newRow("-o is a directory")
            << QStringList{"@TRACE@", "-o", "@DIR@", "--force"}
            << "warpline-stats: cannot write @DIR@: it is a directory";
        QTest::newRow("-o missing value")
            << QStringList{"@TRACE@", "-o"} << "warpline-stats: -o needs a value";
    }
    void errors() {
        QFETCH(QStringList, args);
        QFETCH(QString, message);
        {
            QFile text(path("text.warpline"));
            QVERIFY(text.open(QIODevice::WriteOnly));
            text.write("not sqlite at all\n");
            QFile exists(path("exists.txt"));
            QVERIFY(exists.open(QIODevice::WriteOnly));
            exists.write("keep me");
        }
        for (QString& a : args)
            a.replace("@DIR@", m_dir.path()).replace("@TRACE@", m_trace);
        message.replace("@DIR@", m_dir.path());
        const Run r = runStats(args);
        QCOMPARE(r.exitCode, 2);
        QVERIFY(r.out.isEmpty());
        const QString err = QString::fromUtf8(r.err);
        QVERIFY2(err.startsWith(message), qPrintable(err));
        QCOMPARE(err.count('\n'), 1); // one line
        QFile exists(path("exists.txt"));
        QVERIFY(exists.open(QIODevice::ReadOnly));
        QCOMPARE(exists.readAll(), QByteArray("keep me"));
    }

    void forceReplaces() {
        const QString out = path("replace.csv");
        {
            QFile f(out);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("old");
        }
        const Run r = runStats({m_trace, "--format", "csv", "-o", out, "--force"});
        QCOMPARE(r.exitCode, 0);
        QFile f(out);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QVERIFY(f.readAll().startsWith("Time (%),Total Time (ns),Instances"));
    }

    // -o never writes through a symbolic link: without --force a link (even a dangling one) is
    // refused, with --force the link itself is replaced by the output and its target is left as
    // it was. Every -o writes a temporary file renamed into place: none is left behind.
    void outputNeverFollowsALink() {
        const QString target = path("precious.txt");
        {
            QFile f(target);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("recorded by hand");
        }
        const QString link = path("report-link.csv");
        const QString dangling = path("dangling-link.csv");
        QFile::remove(link);
        QFile::remove(dangling);
        QVERIFY(QFile::link(target, link));
        QVERIFY(QFile::link(path("nowhere.txt"), dangling));
        for (const QStringList& extra : {QStringList{}, QStringList{"--export", "chrome"}}) {
            Run r = runStats(QStringList{m_trace, "-o", link} + extra);
            QCOMPARE(r.exitCode, 2);
            QVERIFY2(r.err.startsWith(("warpline-stats: " + link + " is a symbolic link to " +
                                       target + "; use --force to replace the link (" + target +
                                       " is not changed)")
                                          .toUtf8()),
                     r.err.constData());
            r = runStats(QStringList{m_trace, "-o", dangling} + extra);
            QCOMPARE(r.exitCode, 2);
            QVERIFY2(r.err.contains("is a symbolic link to"), r.err.constData());
            QVERIFY(!QFile::exists(path("nowhere.txt")));
        }
        const Run r = runStats({m_trace, "--format", "csv", "-o", link, "--force"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(!QFileInfo(link).isSymLink());
        QFile out(link);
        QVERIFY(out.open(QIODevice::ReadOnly));
        QVERIFY(out.readAll().startsWith("Time (%),Total Time (ns),Instances"));
        QFile kept(target);
        QVERIFY(kept.open(QIODevice::ReadOnly));
        QCOMPARE(kept.readAll(), QByteArray("recorded by hand"));
        QCOMPARE(QDir(m_dir.path()).entryList({"*.part"}, QDir::Files | QDir::Hidden),
                 QStringList());
    }

    // A folder of 8 rank traces, rank 3 slowed: one row per rank, rank 3 the slowest in all 10
    // steps, the others waiting about 2 ms per step.
    void rankFolder() {
        warpline::bench::RankJobSpec spec;
        spec.slowRank = 3;
        const QString dir = path("job");
        warpline::bench::writeRankJob(dir.toStdString(), spec);
        const Run r = runStats({dir, "--report", "ranks", "--format", "csv"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.err.isEmpty(), r.err.constData());
        const QList<QByteArray> lines = r.out.trimmed().split('\n');
        QCOMPARE(lines.size(), 9);
        const QList<QByteArray> header = lines[0].trimmed().split(',');
        const qsizetype slowest = header.indexOf("Slowest Steps");
        const qsizetype wait = header.indexOf("Wait (ns)");
        const qsizetype steps = header.indexOf("Steps");
        QVERIFY(slowest >= 0 && wait >= 0 && steps >= 0);
        for (int rank = 0; rank < 8; ++rank) {
            const QList<QByteArray> cells = lines[rank + 1].trimmed().split(',');
            QCOMPARE(cells[0], "rank " + QByteArray::number(rank));
            QCOMPARE(cells[steps], QByteArray("10"));
            QCOMPARE(cells[slowest], rank == 3 ? QByteArray("10") : QByteArray("0"));
            const qint64 waited = cells[wait].toLongLong();
            if (rank == 3)
                QCOMPARE(waited, 0);
            else
                QVERIFY2(waited > 18'000'000 && waited < 22'000'000, cells[wait].constData());
        }
        const Run steps10 = runStats({dir, "--report", "rank-steps", "--format", "csv"});
        QCOMPARE(steps10.exitCode, 0);
        QCOMPARE(steps10.out.count("\n"), 11);
        QCOMPARE(steps10.out.count(",rank 3,"), 10);
    }

    // Two files of the job are a session of two ranks; one file stays one trace.
    void twoRankFiles() {
        warpline::bench::RankJobSpec spec;
        spec.slowRank = 5;
        const std::vector<std::string> paths =
            warpline::bench::writeRankJob(path("job2").toStdString(), spec);
        const QString a = QString::fromStdString(paths[1]);
        const QString b = QString::fromStdString(paths[5]);
        const Run r = runStats({a, b, "--report", "ranks", "--format", "csv"});
        QCOMPARE(r.exitCode, 0);
        const QList<QByteArray> lines = r.out.trimmed().split('\n');
        QCOMPARE(lines.size(), 3);
        QVERIFY2(lines[1].startsWith("rank 1,"), lines[1].constData());
        QVERIFY2(lines[2].startsWith("rank 5,"), lines[2].constData());
        const qsizetype slowest = lines[0].trimmed().split(',').indexOf("Slowest Steps");
        QCOMPARE(lines[1].trimmed().split(',')[slowest], QByteArray("0"));
        QCOMPARE(lines[2].trimmed().split(',')[slowest], QByteArray("10"));
        // The session's kernels are both ranks' kernels.
        const Run one = runStats({a, "--report", "kernels", "--format", "csv"});
        const Run two = runStats({a, b, "--report", "kernels", "--format", "csv"});
        QCOMPARE(one.exitCode, 0);
        QCOMPARE(two.exitCode, 0);
        const auto allReduces = [](const QByteArray& csv) {
            for (const QByteArray& line : csv.split('\n')) {
                if (line.contains("ncclDevKernel_AllReduce"))
                    return line.split(',')[2]; // Instances
            }
            return QByteArray();
        };
        QCOMPARE(allReduces(one.out), QByteArray("10"));
        QCOMPARE(allReduces(two.out), QByteArray("20"));
        const Run single = runStats({a, "--report", "ranks", "--format", "csv"});
        QCOMPARE(single.exitCode, 0);
        QCOMPARE(single.out.trimmed().split('\n').size(), 2);
    }

    void rankErrors_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("message");
        QTest::newRow("missing second file")
            << QStringList{"@TRACE@", "@DIR@/missing.warpline"}
            << "warpline-stats: @DIR@/missing.warpline: no such file";
        QTest::newRow("folder without traces")
            << QStringList{"@DIR@/empty"} << "warpline-stats: @DIR@/empty is a directory";
        QTest::newRow("missing folder")
            << QStringList{"@DIR@/nowhere/"} << "warpline-stats: @DIR@/nowhere/: no such file";
    }
    void rankErrors() {
        QFETCH(QStringList, args);
        QFETCH(QString, message);
        QVERIFY(QDir(m_dir.path()).mkpath("empty"));
        for (QString& a : args)
            a.replace("@DIR@", m_dir.path()).replace("@TRACE@", m_trace);
        message.replace("@DIR@", m_dir.path());
        const Run r = runStats(args + QStringList{"--report", "ranks"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY(r.out.isEmpty());
        const QString err = QString::fromUtf8(r.err);
        QVERIFY2(err.startsWith(message), qPrintable(err));
        if (QTest::currentDataTag() == QByteArray("folder without traces"))
            QVERIFY2(err.contains("holds no trace files"), qPrintable(err));
        QCOMPARE(err.count('\n'), 1);
    }

    // A trace of format 1.x (a real DDP rank, as Warpline 1.0 recorded it: 306 driver calls in a
    // DRIVER table of their own) is rewritten as 2.0: the driver calls join the RUNTIME table
    // with eventClass 1, so the plain nsys join finds every kernel's launch; every report stays
    // the same; the file read is not changed, and the output is not replaced without --force.
    void upgradesAFormat1Trace() {
        const QString old =
            QStringLiteral(WARPLINE_TEST_DATA "/format-1.0/torch-ddp-one-rank.format-1.0.sqlite");
        const auto hash = [](const QString& file) {
            QFile f(file);
            return f.open(QIODevice::ReadOnly)
                       ? QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha256)
                       : QByteArray();
        };
        const QByteArray before = hash(old);
        const QString out = path("upgraded.warpline");
        Run r = runStats({old, "--export", "warpline", "-o", out});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.err.isEmpty(), r.err.constData());
        QCOMPARE(hash(old), before);
        {
            SqliteReader db(out);
            QCOMPARE(db.value("PRAGMA user_version").toInt(), 200);
            QCOMPARE(db.value("SELECT value FROM WARPLINE_META WHERE key = 'format_version'"),
                     QVariant("2.0"));
            QCOMPARE(db.value("SELECT COUNT(*) FROM sqlite_master WHERE name = "
                              "'CUPTI_ACTIVITY_KIND_DRIVER'")
                         .toInt(),
                     0);
            QCOMPARE(db.value("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass "
                              "= 1")
                         .toInt(),
                     306);
            QCOMPARE(db.value("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE NOT "
                              "EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE "
                              "r.correlationId = k.correlationId)")
                         .toInt(),
                     0);
            QCOMPARE(
                db.value("SELECT g.smCount || ' ' || g.clockRate || ' ' || c.numMultiprocessors "
                         "FROM TARGET_INFO_GPU g JOIN TARGET_INFO_CUDA_DEVICE c ON g.id = "
                         "c.gpuId"),
                QVariant("132 1980000000 132"));
            QVERIFY(!db.value("SELECT uuid FROM TARGET_INFO_GPU").toString().startsWith("GPU-"));
            QCOMPARE(db.value("SELECT label FROM ENUM_NSYS_EVENT_CLASS WHERE id = 1"),
                     QVariant("CUDA driver"));
        }
        for (const char* report : {"kernels", "api", "nvtx", "steps", "insights"})
            QCOMPARE(runStats({out, "--report", report, "--format", "csv"}).out,
                     runStats({old, "--report", report, "--format", "csv"}).out);
        // Not again over the result, not over a trace of the current format.
        r = runStats({old, "--export", "warpline", "-o", out});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("exists"), r.err.constData());
        QCOMPARE(runStats({old, "--export", "warpline", "-o", out, "--force"}).exitCode, 0);
        r = runStats({out, "--export", "warpline", "-o", path("again.warpline")});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("already"), r.err.constData());
        QVERIFY(!QFile::exists(path("again.warpline")));
        // A 1.x file with a trigger (here one that would copy every row a million times) is
        // not upgraded: upgrading writes, and would run it.
        const QString edited = path("trigger.format-1.0.sqlite");
        QFile::remove(edited);
        QVERIFY(QFile::copy(old, edited));
        QFile::setPermissions(edited, QFile::ReadOwner | QFile::WriteOwner);
        QCOMPARE(execSql(edited, "CREATE TRIGGER grow AFTER INSERT ON CUPTI_ACTIVITY_KIND_RUNTIME "
                                 "BEGIN INSERT INTO StringIds SELECT NULL, 'x' FROM (WITH "
                                 "RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c "
                                 "WHERE n < 1000000) SELECT n FROM c); END;"),
                 std::string());
        r = runStats({edited, "--export", "warpline", "-o", path("trigger.warpline")});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("has a trigger named grow, which no Warpline recording has"),
                 r.err.constData());
        QVERIFY(!QFile::exists(path("trigger.warpline")));
        QCOMPARE(execSql(edited, "DROP TRIGGER grow; CREATE VIRTUAL TABLE notes USING fts5(text);"),
                 std::string());
        r = runStats({edited, "--export", "warpline", "-o", path("trigger.warpline")});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("has a virtual table named notes, which no Warpline recording has"),
                 r.err.constData());
    }

    void warningsGoToStderr() {
        const QString p = path("incomplete.warpline");
        {
            TraceBuilder b(p);
            b.kernel({.start = 0, .end = 10});
            b.kernel({.start = 30, .end = 20});
            b.exec("UPDATE WARPLINE_META SET value = 'incomplete' WHERE key = 'status'");
            b.exec("INSERT INTO WARPLINE_DROPPED VALUES (1, 1, 7, 12, 'buffer full')");
        }
        const Run r = runStats({p, "--format", "csv"});
        QCOMPARE(r.exitCode, 0);
        const QString err = QString::fromUtf8(r.err);
        QVERIFY2(err.contains("warpline-stats: warning: The recording is incomplete"),
                 qPrintable(err));
        QVERIFY2(err.contains("warpline-stats: warning: The collector dropped 12 records"),
                 qPrintable(err));
        QVERIFY2(err.contains("1 rows of CUPTI_ACTIVITY_KIND_KERNEL were skipped"),
                 qPrintable(err));
        QVERIFY(!r.out.contains("warning"));
        QVERIFY(r.out.startsWith("Time (%)"));
    }

    // A kernel launched by cudaLaunchKernel in the middle of a long one on its stream is damage:
    // one warning line per command, also when diff opens the same file as A and B. The
    // cudaLaunchKernelExC kernel that starts 1 us before its predecessor ends (programmatic
    // dependent launch) is legal and not warned about.
    void overlapWarnsOncePerCommand() {
        const QString p = path("overlap.warpline");
        {
            TraceBuilder b(p);
            b.runtime(0, 5'000, 1, 1, "cudaLaunchKernel_v7000");
            b.runtime(6'000, 9'000, 1, 2, "cudaLaunchKernel_v7000");
            b.runtime(10'000, 15'000, 1, 3, "cudaLaunchKernelExC_v11060");
            b.kernel({.start = 0, .end = 100'000, .correlation = 1, .name = "long"});
            b.kernel({.start = 50'000, .end = 150'000, .correlation = 2, .name = "middle"});
            b.kernel({.start = 149'000, .end = 250'000, .correlation = 3, .name = "dependent"});
        }
        const QStringList commands[] = {{p, "--format", "csv"},
                                        {p, "--report", "insights", "--format", "csv"},
                                        {"diff", p, p, "--format", "csv"}};
        for (const QStringList& args : commands) {
            const Run r = runStats(args);
            QCOMPARE(r.exitCode, 0);
            const QString err = QString::fromUtf8(r.err);
            QVERIFY2(err.count("GPU operations overlap") == 1, qPrintable(err));
            QVERIFY2(err.contains("1 GPU operations overlap"), qPrintable(err));
        }
    }

    // A report that needs what the trace lacks says so (and how to record it) instead of
    // printing an empty table alone.
    void reportOnATraceWithoutItsDataSaysWhy() {
        for (const char* report : {"python-lines", "python-functions"}) {
            const Run r = runStats({m_trace, "--report", report, "--format", "csv"});
            QCOMPARE(r.exitCode, 0);
            QVERIFY2(r.err.contains("warpline-stats: note: this trace has no Python stacks: "
                                    "record it with 'warpline-record --python-stacks"),
                     r.err.constData());
        }
        const Run kernels = runStats({m_trace, "--report", "kernels"});
        QVERIFY(!kernels.err.contains("note:"));
    }

    // --phase steady on a torch.compile'd training loop recorded on the H100: over the whole
    // trace Triton's autotuner holds most of the GPU time; the steady state (steps 3-19) is the
    // training step itself, and the note says which steps those are.
    void phaseSteadyLeavesOutTheWarmUp() {
        const QString trace =
            QStringLiteral(WARPLINE_TEST_DATA "/torch-gpt-compile-stacks.warpline");
        const auto share = [](const QByteArray& csv, const QByteArray& what) {
            for (const QByteArray& line : csv.split('\n'))
                if (line.contains(what))
                    return line.split(',').value(3).toDouble(); // Share (%): inclusive
            return -1.0;
        };
        const Run all = runStats({trace, "--report", "python-lines", "--format", "csv"});
        QCOMPARE(all.exitCode, 0);
        QVERIFY(share(all.out, "benchmark_all_configs") > 50.0);
        QVERIFY(all.err.isEmpty());
        const Run steady =
            runStats({trace, "--report", "python-lines", "--format", "csv", "--phase", "steady"});
        QCOMPARE(steady.exitCode, 0);
        QVERIFY2(
            steady.err.contains("warpline-stats: note: steady state: 17 of 20 steps (3 to 19), "),
            steady.err.constData());
        QCOMPARE(share(steady.out, "benchmark_all_configs"), -1.0);
        QVERIFY(share(steady.out, "torch_gpt.py:102") > 25.0); // the CUDA graph replays
        QVERIFY(share(steady.out, "CompiledFunction.backward") > 50.0);
        // Kernels too: the steady state has fewer instances than the whole trace.
        const Run kernels = runStats({trace, "--format", "csv", "--phase", "steady"});
        QCOMPARE(kernels.exitCode, 0);
        QVERIFY(kernels.out.size() < runStats({trace, "--format", "csv"}).out.size());
    }

    // --names: base names group every instantiation of a template in one row (nsys's :base),
    // with the same instances and time in all; mangled names are the Itanium ones.
    void kernelNames() {
        const QString trace = QStringLiteral(WARPLINE_TEST_DATA "/torch-gpt-train.warpline");
        // (rows, instances, exit code) of the kernels report under one naming.
        const auto rows = [&](const char* names) {
            const Run r = runStats({trace, "--format", "csv", "--names", names});
            qint64 count = 0, instances = 0;
            for (const QByteArray& line : r.out.split('\n').mid(1)) {
                if (line.isEmpty())
                    continue;
                ++count; // Time (%),Total Time (ns),Instances,...
                instances += line.split(',').value(2).toLongLong();
            }
            return std::make_tuple(count, instances, r.exitCode);
        };
        const auto [full, fullCount, fullExit] = rows("full");
        const auto [base, baseCount, baseExit] = rows("base");
        const auto [mangled, mangledCount, mangledExit] = rows("mangled");
        QCOMPARE(fullExit + baseExit + mangledExit, 0);
        QVERIFY(full > 0 && mangled == full);
        QVERIFY2(base < full, qPrintable(QString("%1 base rows, %2 full").arg(base).arg(full)));
        QCOMPARE(baseCount, fullCount);
        QCOMPARE(mangledCount, fullCount);
        const Run b = runStats({trace, "--names", "base"});
        QVERIFY2(b.out.contains("  vectorized_elementwise_kernel"), b.out.constData());
        QVERIFY(!b.out.contains("at::native::vectorized_elementwise_kernel<"));
        const Run m = runStats({trace, "--names", "mangled"});
        QVERIFY2(m.out.contains("_ZN2at6native"), m.out.constData());
        // Errors: an unknown value, and a report other than kernels.
        const Run bad = runStats({trace, "--names", "short"});
        QCOMPARE(bad.exitCode, 2);
        QVERIFY2(bad.err.contains("unknown --names \"short\" (use full, base or mangled)"),
                 bad.err.constData());
        const Run other = runStats({trace, "--report", "api", "--names", "base"});
        QCOMPARE(other.exitCode, 2);
        QVERIFY2(other.err.contains("--names applies to the kernels report"),
                 other.err.constData());
    }

    void phaseErrors() {
        const QString trace =
            QStringLiteral(WARPLINE_TEST_DATA "/torch-gpt-compile-stacks.warpline");
        const Run bogus = runStats({trace, "--phase", "middle"});
        QCOMPARE(bogus.exitCode, 2);
        QVERIFY(bogus.err.startsWith("warpline-stats: unknown phase \"middle\" (phases: steady"));
        const Run notWindowed = runStats({trace, "--report", "steps", "--phase", "steady"});
        QCOMPARE(notWindowed.exitCode, 2);
        QVERIFY(notWindowed.err.startsWith("warpline-stats: --phase applies to the reports"));
        const Run gpuIdle = runStats({trace, "--report", "kernels", "--gpu-idle"});
        QCOMPARE(gpuIdle.exitCode, 2);
        QVERIFY2(gpuIdle.err.contains("--gpu-idle applies to the cpu-samples and cpu-tree reports"),
                 gpuIdle.err.constData());
        // The unit-test trace has two kernels and no loop: no steps to take a phase of.
        const Run noSteps = runStats({m_trace, "--phase", "steady"});
        QCOMPARE(noSteps.exitCode, 2);
        QVERIFY2(noSteps.err.startsWith("warpline-stats: --phase: no training steps found"),
                 noSteps.err.constData());
    }
};

QTEST_GUILESS_MAIN(TestStatsCli)
#include "tst_stats_cli.moc"
