// warpline-record's command line: help, version, list, and every usage or environment error
// gives one clear line, exit code 2, and leaves no file behind (or an existing file untouched).

#include "sqlitereader.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

class TestRecordCli : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_parent;
    QTemporaryDir m_dir{m_parent.filePath("work")};

    struct Result {
        int exitCode;
        QString out;
        QString err;
    };
    Result run(const QStringList& args) {
        QProcess p;
        p.setWorkingDirectory(m_dir.path());
        p.start(WARPLINE_RECORD, args);
        if (!p.waitForFinished(60000))
            qFatal("warpline-record did not finish");
        return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()),
                QString::fromUtf8(p.readAllStandardError())};
    }
    static bool machineHasGpu() { return QFile::exists("/dev/nvidiactl"); }

private slots:
    void helpAndVersion() {
        const auto help = run({"--help"});
        QCOMPARE(help.exitCode, 0);
        QVERIFY(help.out.contains("--workload NAME"));
        QVERIFY(help.out.contains("Exit codes"));
        const auto version = run({"--version"});
        QCOMPARE(version.exitCode, 0);
        QVERIFY(version.out.startsWith("warpline-record "));
    }

    void listNamesEveryBundledWorkload() {
        const auto list = run({"--list"});
        QCOMPARE(list.exitCode, 0);
        for (const char* name :
             {"runahead", "sync-stall", "gelu", "softmax", "matmul", "streams", "graphs", "mlp"})
            QVERIFY2(list.out.contains(QRegularExpression(QString("^%1 ").arg(name),
                                                          QRegularExpression::MultilineOption)),
                     name);
    }

    void usageErrors_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("message");
        QTest::newRow("nothing to do") << QStringList{} << "nothing to record";
        QTest::newRow("unknown workload")
            << QStringList{"--workload", "nope"} << "unknown workload 'nope'";
        // A workload's name never becomes a path (../../x.warpline, a/b.warpline): refused first.
        QTest::newRow("workload name climbing out")
            << QStringList{"--workload", "../../x"} << "unknown workload '../../x'";
        QTest::newRow("workload name with a folder")
            << QStringList{"--workload", "a/b"} << "unknown workload 'a/b'";
        QTest::newRow("unknown recorder option") << QStringList{"--frobnicate"} << "unknown option";
        QTest::newRow("unknown workload option")
            << QStringList{"--workload", "gelu", "--frobnicate", "3"} << "frobnicate";
        QTest::newRow("non-numeric workload option")
            << QStringList{"--workload", "gelu", "--repeats", "many"} << "repeats";
        QTest::newRow("missing value")
            << QStringList{"--workload", "gelu", "-o"} << "needs a value";
        QTest::newRow("program not found")
            << QStringList{"--", "no-such-program-here"} << "not found in PATH";
        QTest::newRow("program path not found")
            << QStringList{"--", "./no-such-program"} << "program './no-such-program' not found";
        QTest::newRow("program not executable")
            << QStringList{"--", "../not-executable.txt"} << "is not executable";
        QTest::newRow("program not a program")
            << QStringList{"--", "../not-a-program.sh"} << "Exec format error";
        QTest::newRow("nothing after --") << QStringList{"--"} << "must be followed by the program";
        QTest::newRow("workload and program")
            << QStringList{"--workload", "gelu", "--", "true"} << "not both";
        QTest::newRow("bad output pattern")
            << QStringList{"-o", "run-%z.warpline", "--", "true"} << "unknown sequence %z";
        QTest::newRow("bad --api") << QStringList{"--api", "some", "--", "true"} << "--api takes";
        QTest::newRow("unwritable directory")
            << QStringList{"--workload", "gelu", "-o", "/nonexistent-dir/x.warpline"}
            << "does not exist or is not writable";
        QTest::newRow("gpu metrics too often")
            << QStringList{"--workload", "gelu", "--gpu-metrics-frequency", "50001"}
            << "--gpu-metrics-frequency takes samples per second from 10 to 20000, not '50001'";
        QTest::newRow("gpu metrics frequency not a number")
            << QStringList{"--gpu-metrics-frequency=fast", "--", "true"}
            << "--gpu-metrics-frequency takes samples per second";
        QTest::newRow("gpu metrics of a multi-GPU job")
            << QStringList{"--workload", "allreduce", "--gpu-metrics"}
            << "--gpu-metrics is not available for multi-GPU workloads";
    }
    void usageErrors() {
        // Files the program rows refer to live beside the working directory, so the check that
        // nothing was written there stays exact.
        for (const auto& [name, mode] :
             {std::pair{"not-executable.txt", QFileDevice::ReadOwner | QFileDevice::WriteOwner},
              std::pair{"not-a-program.sh", QFileDevice::ReadOwner | QFileDevice::WriteOwner |
                                                QFileDevice::ExeOwner}}) {
            QFile f(m_parent.filePath(name));
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("\x7f\x01 not a program\n");
            f.close();
            QVERIFY(f.setPermissions(mode));
        }
        QFETCH(QStringList, args);
        QFETCH(QString, message);
        const auto r = run(args);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(message), qPrintable(r.err));
        QCOMPARE(r.err.count('\n'), 1); // one line
        QVERIFY(r.err.startsWith("warpline-record: "));
        QCOMPARE(QDir(m_dir.path()).entryList(QDir::Files), QStringList{});
    }

    void existingOutputIsNotOverwritten() {
        const QString file = m_dir.filePath("mine.warpline");
        {
            QFile f(file);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("a recording I care about");
        }
        const auto r = run({"--workload", "gelu", "-o", file});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("already exists") && r.err.contains("--force"), qPrintable(r.err));
        QFile f(file);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll(), QByteArray("a recording I care about"));
        QVERIFY(f.remove());
    }

    void programExitStatusPassesThroughAndIsKept() {
        // A program that never initialises CUDA: its exit status passes through and is kept in
        // a trace that says no CUDA activity was recorded.
        const QString file = m_dir.filePath("shell.warpline");
        const auto r = run({"-o", file, "--", "sh", "-c", "exit 7"});
        QCOMPARE(r.exitCode, 7);
        QVERIFY2(r.err.contains("no CUDA activity recorded"), qPrintable(r.err));
        SqliteReader db(file);
        QCOMPARE(db.value("SELECT value FROM WARPLINE_META WHERE key = 'exit_code'").toString(),
                 QString("7"));
        QCOMPARE(db.value("SELECT value FROM WARPLINE_META WHERE key = 'status'").toString(),
                 QString("no-cuda"));
        QVERIFY(QFile::remove(file));
    }

    // CUPTI's synchronization records are off for programs unless asked for: the flag reaches the
    // injection library through the program's environment.
    void syncRecordsFlagReachesTheProgram() {
        const QString file = m_dir.filePath("sync.warpline");
        auto r = run({"-o", file, "--", "sh", "-c", "test -z \"$WARPLINE_SYNC_RECORDS\""});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(QFile::remove(file));
        r = run({"--sync-records", "-o", file, "--", "sh", "-c",
                 "test \"$WARPLINE_SYNC_RECORDS\" = 1"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(QFile::remove(file));
    }

    void programModeNeverOverwritesWithoutForce() {
        const QString file = m_dir.filePath("keep.warpline");
        {
            QFile f(file);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("mine");
        }
        const auto r = run({"-o", file, "--", "true"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY(r.err.contains("already exists"));
        QFile f(file);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll(), QByteArray("mine"));
        f.close();
        QCOMPARE(run({"-o", file, "--force", "--", "true"}).exitCode, 0);
        QCOMPARE(SqliteReader(file)
                     .value("SELECT value FROM WARPLINE_META WHERE key = 'status'")
                     .toString(),
                 QString("no-cuda"));
        QVERIFY(QFile::remove(file));
    }

    // warpline-record does not link CUPTI: it loads the recorder library, which does. Here that
    // library's CUPTI cannot be found, as on a machine without the CUDA toolkit's CUPTI.
    void missingCuptiIsAClearEnvironmentError() {
        const QString file = m_dir.filePath("gelu.warpline");
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("WARPLINE_INJECTION_LIBRARY", WARPLINE_STUB_NEEDS_CUPTI);
        env.remove("LD_LIBRARY_PATH");
        p.setProcessEnvironment(env);
        p.setWorkingDirectory(m_dir.path());
        p.start(WARPLINE_RECORD, {"--workload", "gelu", "-o", file});
        QVERIFY(p.waitForFinished(60000));
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QCOMPARE(p.exitCode(), 2);
        QVERIFY2(err.startsWith("warpline-record: CUPTI (libcupti"), qPrintable(err));
        QVERIFY2(err.contains("libcupti.so.999") && err.contains("LD_LIBRARY_PATH"),
                 qPrintable(err));
        QCOMPARE(err.count('\n'), 1);
        QVERIFY(!QFile::exists(file));
    }

    void noGpuIsAClearEnvironmentError() {
        if (machineHasGpu())
            QSKIP("this machine has an NVIDIA GPU; the no-GPU message is checked on CI");
        const QString file = m_dir.filePath("gelu.warpline");
        const auto r = run({"--workload", "gelu", "-o", file});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("NVIDIA driver") || r.err.contains("no CUDA GPU"),
                 qPrintable(r.err));
        QCOMPARE(r.err.count('\n'), 1);
        QVERIFY(!QFile::exists(file));
    }
};

QTEST_GUILESS_MAIN(TestRecordCli)
#include "tst_recordcli.moc"
