// warpline-record and signals, without a GPU (`-- PROGRAM` mode with ordinary programs): SIGTERM
// sent to the recorder reaches the program, SIGINT sent to the recorder alone is ignored (the
// terminal sends Ctrl+C to the program too, and the recorder stays to finish its traces), and
// the program starts with the signal mask and dispositions the recorder was given, not the
// recorder's own (it blocks SIGINT and SIGTERM for its signal thread). With a GPU,
// tests/gpu/record_interrupt.sh checks interrupted workload recordings.

#include "sqlitereader.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <csignal>

class TestRobustnessRecord : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

    // Starts `warpline-record -o NAME -- PROGRAM...` and waits until the program runs.
    bool startRecording(QProcess& p, const QString& name, const QStringList& program) {
        p.setWorkingDirectory(m_dir.path());
        p.setReadChannel(QProcess::StandardError);
        p.start(WARPLINE_RECORD, QStringList{"-o", name, "--"} + program);
        if (!p.waitForStarted())
            return false;
        // The recorder says so once the program's exec succeeded.
        QByteArray err;
        while (!err.contains("recording ") && p.waitForReadyRead(10000))
            err += p.readAllStandardError();
        return err.contains("recording ");
    }

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void sigtermReachesTheProgramSigintAloneIsIgnored() {
        QProcess p;
        QVERIFY(startRecording(p, "sleep.warpline", {"sleep", "60"}));
        const auto pid = static_cast<pid_t>(p.processId());
        QCOMPARE(::kill(pid, SIGINT), 0);
        QVERIFY2(!p.waitForFinished(700), "a SIGINT to the recorder alone is not passed on");
        QCOMPARE(::kill(pid, SIGTERM), 0);
        QVERIFY2(p.waitForFinished(10000), "SIGTERM reached the program");
        QCOMPARE(p.exitStatus(), QProcess::NormalExit);
        QCOMPARE(p.exitCode(), 128 + SIGTERM);
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QVERIFY2(err.contains("sleep was killed by signal 15"), qPrintable(err));
        // sleep never initialised CUDA: a "no-cuda" trace keeps its exit status.
        SqliteReader trace(m_dir.filePath("sleep.warpline"));
        QCOMPARE(trace.value("SELECT value FROM WARPLINE_META WHERE key = 'exit_code'").toString(),
                 QString("143"));
    }

    void theProgramGetsAnOrdinarySignalMask() {
        QProcess p;
        p.setWorkingDirectory(m_dir.path());
        p.start(WARPLINE_RECORD, {"-o", "status.warpline", "--", "cat", "/proc/self/status"});
        QVERIFY(p.waitForFinished(30000));
        QCOMPARE(p.exitCode(), 0);
        const QString status = QString::fromUtf8(p.readAllStandardOutput());
        const auto mask = [&status](const QString& field) {
            const QRegularExpressionMatch m =
                QRegularExpression("^" + field + ":\\s*([0-9a-f]+)$",
                                   QRegularExpression::MultilineOption)
                    .match(status);
            return m.hasMatch() ? m.captured(1).toULongLong(nullptr, 16) : ~0ULL;
        };
        const auto bit = [](int sig) { return 1ULL << (sig - 1); };
        QCOMPARE(mask("SigBlk") & (bit(SIGINT) | bit(SIGTERM) | bit(SIGQUIT)), 0ULL);
        QCOMPARE(mask("SigIgn") & (bit(SIGINT) | bit(SIGTERM) | bit(SIGQUIT)), 0ULL);
    }
};

QTEST_GUILESS_MAIN(TestRobustnessRecord)
#include "tst_robustness_record.moc"
