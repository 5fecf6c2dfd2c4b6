// warpline-record's command line: help, version, list, and every usage or environment error
// gives one clear line, exit code 2, and leaves no file behind (or an existing file untouched).

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

class TestRecordCli : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;

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
        QTest::newRow("unknown recorder option") << QStringList{"--frobnicate"} << "unknown option";
        QTest::newRow("unknown workload option")
            << QStringList{"--workload", "gelu", "--frobnicate", "3"} << "frobnicate";
        QTest::newRow("non-numeric workload option")
            << QStringList{"--workload", "gelu", "--repeats", "many"} << "repeats";
        QTest::newRow("missing value") << QStringList{"--workload", "gelu", "-o"} << "needs a value";
        QTest::newRow("unwritable directory")
            << QStringList{"--workload", "gelu", "-o", "/nonexistent-dir/x.warpline"}
            << "does not exist or is not writable";
    }
    void usageErrors() {
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
