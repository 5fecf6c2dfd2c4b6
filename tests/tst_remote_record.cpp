// Recording on another machine over SSH (collector/remoterecord.h): a real OpenSSH server on
// 127.0.0.1 with keys made here, a stand-in recorder on the "remote" side (a script that answers
// --version and --list, and "records" by copying a committed trace, or fails as asked), and the
// real warpline-record --host, driven from the command line and from the Record dialog through
// the success path and every failure the issue names. Needs Debian's openssh-server and
// openssh-client (`make test` installs them).

#include "recorddialog.h"

#include <QCoreApplication>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <arpa/inet.h>
#include <csignal>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace warpline;

namespace {

const QString kSshd = QStringLiteral("/usr/sbin/sshd");

// Without a recorder (a build without the CUDA toolkit) the test only skips: none of this is used.
#ifdef WARPLINE_RECORD
sockaddr_in loopback(quint16 port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

// A port on 127.0.0.1 that nothing listens on (the kernel's pick, given back).
quint16 freePort() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = loopback(0);
    socklen_t size = sizeof a;
    const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &size) == 0;
    if (fd >= 0)
        ::close(fd);
    return ok ? ntohs(a.sin_port) : 0;
}

bool accepts(quint16 port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    const sockaddr_in a = loopback(port);
    const bool ok = fd >= 0 && ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0;
    if (fd >= 0)
        ::close(fd);
    return ok;
}

bool run(const QString& program, const QStringList& args) {
    QProcess p;
    p.start(program, args);
    return p.waitForFinished(30000) && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
}

QByteArray readFile(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

bool writeFile(const QString& path, const QByteArray& text, bool executable = false) {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(text) != text.size())
        return false;
    f.close();
    return !executable || f.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner |
                                           QFile::ReadGroup | QFile::ExeGroup);
}
#endif

struct Result {
    int exitCode = -1;
    QString err;
    QString out;
};

} // namespace

class TestRemoteRecord : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QProcess m_sshd;
    QString m_fixture;
    QString m_fake;
    QString m_oldFake; // answers --version with another version
    QString m_remoteDir;
    QString m_version;

    QString path(const QString& name) const { return m_dir.filePath(name); }

#ifdef WARPLINE_RECORD
    Result record(const QStringList& args, std::function<void(QProcess&)> during = {}) {
        QProcess p;
        p.start(QStringLiteral(WARPLINE_RECORD), args);
        if (!p.waitForStarted(10000))
            return {};
        if (during)
            during(p);
        p.waitForFinished(90000);
        return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
                QString::fromLocal8Bit(p.readAllStandardError()),
                QString::fromLocal8Bit(p.readAllStandardOutput())};
    }
#endif

    QStringList remote(const QString& host, const QString& recorder, const QStringList& rest) {
        return QStringList{"--host",   host, "--remote-recorder", recorder, "--remote-trace-dir",
                           m_remoteDir} +
               rest;
    }

private slots:
    void initTestCase() {
#ifndef WARPLINE_RECORD
        QSKIP("warpline-record is not built here (no CUDA toolkit): nothing to record with");
#else
        if (!QFileInfo(kSshd).isExecutable() ||
            QStandardPaths::findExecutable(QStringLiteral("ssh")).isEmpty() ||
            QStandardPaths::findExecutable(QStringLiteral("ssh-keygen")).isEmpty())
            QSKIP("OpenSSH's server and client are not installed (apt-get install "
                  "openssh-server openssh-client; `make test` does)");
        QCoreApplication::setOrganizationName(QStringLiteral("WarplineRemoteTest"));
        QSettings().remove(QStringLiteral("record/host")); // the dialog remembers the last host
        QVERIFY(m_dir.isValid());
        m_fixture = QDir(QStringLiteral(WARPLINE_TEST_DATA)).filePath("gelu.warpline");
        m_remoteDir = path("remote");
        QVERIFY(QDir().mkpath(m_remoteDir));
        const QString user = QString::fromLocal8Bit(::getpwuid(::getuid())->pw_name);

        for (const char* key : {"host_key", "user_key", "other_key"})
            QVERIFY(
                run("ssh-keygen", {"-q", "-t", "ed25519", "-N", "", "-C", key, "-f", path(key)}));
        QVERIFY(writeFile(path("authorized_keys"), readFile(path("user_key.pub"))));
        const quint16 port = freePort();
        const quint16 closedPort = freePort();
        QVERIFY(port && closedPort && port != closedPort);
        QVERIFY(writeFile(path("sshd_config"),
                          QStringLiteral("Port %1\nListenAddress 127.0.0.1\nHostKey %2\n"
                                         "AuthorizedKeysFile %3\nPidFile %4\nStrictModes no\n"
                                         "PasswordAuthentication no\n"
                                         "KbdInteractiveAuthentication no\nUsePAM no\n"
                                         "PermitRootLogin prohibit-password\nLogLevel ERROR\n")
                              .arg(port)
                              .arg(path("host_key"), path("authorized_keys"), path("sshd.pid"))
                              .toUtf8()));
        if (::getuid() == 0)
            QDir().mkpath(QStringLiteral("/run/sshd")); // sshd's privilege separation
        m_sshd.setProcessChannelMode(QProcess::MergedChannels);
        m_sshd.start(kSshd, {"-D", "-e", "-f", path("sshd_config")});
        QVERIFY(m_sshd.waitForStarted(10000));
        QVERIFY2(
            QTest::qWaitFor([&] { return accepts(port) || m_sshd.state() == QProcess::NotRunning; },
                            10000) &&
                m_sshd.state() == QProcess::Running,
            m_sshd.readAll().constData());

        const QByteArray hostKey = readFile(path("host_key.pub")).trimmed();
        QVERIFY(writeFile(path("known_hosts"),
                          QStringLiteral("[127.0.0.1]:%1 ").arg(port).toUtf8() + hostKey + "\n"));
        QVERIFY(writeFile(path("empty_known_hosts"), ""));
        const auto host = [&](const QString& name, quint16 p, const QString& key,
                              const QString& knownHosts) {
            return QStringLiteral("Host %1\n  HostName 127.0.0.1\n  Port %2\n  User %3\n"
                                  "  IdentityFile %4\n  IdentitiesOnly yes\n"
                                  "  UserKnownHostsFile %5\n  GlobalKnownHostsFile /dev/null\n"
                                  "  StrictHostKeyChecking yes\n")
                .arg(name)
                .arg(p)
                .arg(user, path(key), path(knownHosts));
        };
        QVERIFY(writeFile(path("ssh_config"),
                          (host("wl-test", port, "user_key", "known_hosts") +
                           host("wl-down", closedPort, "user_key", "known_hosts") +
                           host("wl-badkey", port, "other_key", "known_hosts") +
                           host("wl-unknown", port, "user_key", "empty_known_hosts"))
                              .toUtf8()));
        qputenv("WARPLINE_SSH_COMMAND", ("ssh -F " + path("ssh_config")).toLocal8Bit());

        QProcess version;
        version.start(QStringLiteral(WARPLINE_RECORD), {"--version"});
        QVERIFY(version.waitForFinished(10000));
        m_version = QString::fromLocal8Bit(version.readAllStandardOutput()).trimmed().mid(16);
        QVERIFY(!m_version.isEmpty());

        // The stand-in recorder "there". --workload picks what it does: gelu records (copies the
        // fixture), nogpu and diskfull fail as the real one does, slow records until SIGINT,
        // drop kills its SSH session mid-recording.
        const QString script = QStringLiteral(R"(#!/bin/sh
case "$1" in
--version) echo "warpline-record @VERSION@"; exit 0;;
--list) echo 'gelu         fused vs unfused GELU'
        echo '    --size             elements (default 1024)'
        for w in nogpu diskfull drop; do echo "$w       fails as asked"; done; exit 0;;
esac
out=''; work=''
while [ $# -gt 0 ]; do
  case "$1" in -o) out=$2; shift;; --workload) work=$2; shift;; esac; shift
done
case "$work" in
nogpu) echo 'warpline-record: no CUDA GPU found; record on a machine with an NVIDIA GPU' >&2
       exit 2;;
diskfull) echo "warpline-record: cannot create $out: No space left on device" >&2; exit 2;;
slow) trap 'cp "@FIXTURE@" "$out"; echo "warpline-record: stopped by TERM" >&2; exit 143' TERM
      trap 'cp "@FIXTURE@" "$out"; echo "warpline-record: stopped by INT" >&2; exit 130' INT
      i=0
      while [ $i -lt 900 ]; do
        i=$((i+1)); echo "warpline-record: slow: $i/900 launches" >&2; sleep 0.1
      done
      exit 0;;
stubborn) trap '' TERM INT; cp "@FIXTURE@" "$out"; i=0
      while [ $i -lt 150 ]; do
        i=$((i+1)); echo "warpline-record: stubborn: $i/150 launches" >&2; sleep 0.1
      done
      exit 0;;
drop) echo "warpline-record: recording drop into $out" >&2; cp "@FIXTURE@" "$out"; sleep 0.3
      kill -9 $PPID; sleep 5; exit 0;;
esac
echo "warpline-record: recording $work into $out" >&2
for i in 1 2 3 4; do echo "warpline-record: $work: phase fused: $i/4 launches" >&2; done
cp "@FIXTURE@" "$out"
echo "warpline-record: wrote 404 records in 0.10 s to $out" >&2
)");
        QString fake = script;
        fake.replace("@VERSION@", m_version).replace("@FIXTURE@", m_fixture);
        m_fake = path("fake-record");
        QVERIFY(writeFile(m_fake, fake.toUtf8(), true));
        QString old = script;
        old.replace("@VERSION@", "0.0.1-old").replace("@FIXTURE@", m_fixture);
        m_oldFake = path("old-record");
        QVERIFY(writeFile(m_oldFake, old.toUtf8(), true));
#endif
    }

    void cleanupTestCase() {
        if (m_sshd.state() != QProcess::NotRunning) {
            m_sshd.terminate();
            if (!m_sshd.waitForFinished(5000))
                m_sshd.kill();
        }
    }

#ifdef WARPLINE_RECORD
    void recordsOnTheHostAndCopiesTheTraceBack() {
        const QString out = path("gelu.warpline");
        const Result r = record(remote("wl-test", m_fake, {"--workload", "gelu", "-o", out}));
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QVERIFY2(r.err.contains("phase fused: 4/4 launches"), qPrintable(r.err));
        QVERIFY2(r.err.contains("copied wl-test:" + m_remoteDir + "/gelu-"), qPrintable(r.err));
        QCOMPARE(readFile(out), readFile(m_fixture));
        QVERIFY(!r.err.contains("warpline-remote-pid")); // the stop handle is not shown
        QVERIFY2(QDir(m_remoteDir).isEmpty(), "the remote copy is removed once home");
        // Never over an existing file without --force, checked before connecting.
        const Result again = record(remote("wl-test", m_fake, {"--workload", "gelu", "-o", out}));
        QCOMPARE(again.exitCode, 2);
        QVERIFY2(again.err.contains("exists"), qPrintable(again.err));
    }

    // The trace copied back never goes through a link planted next to the output: not at the
    // output itself, nor at OUTPUT.part, where the copy used to be written (opened with O_TRUNC,
    // it overwrote the link's target).
    void theCopyBackNeverWritesThroughALink() {
        const QString precious = path("precious.txt");
        const QString preciousToo = path("precious-too.txt");
        QVERIFY(writeFile(precious, "mine"));
        QVERIFY(writeFile(preciousToo, "mine too"));
        const QString out = path("linked.warpline");
        QVERIFY(QFile::link(precious, out + ".part"));
        QVERIFY(QFile::link(preciousToo, out));
        // --force replaces the link at the output, never its target.
        const Result r =
            record(remote("wl-test", m_fake, {"--workload", "gelu", "-o", out, "--force"}));
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QCOMPARE(readFile(precious), QByteArray("mine"));
        QCOMPARE(readFile(preciousToo), QByteArray("mine too"));
        QVERIFY(!QFileInfo(out).isSymLink());
        QCOMPARE(readFile(out), readFile(m_fixture));
        QCOMPARE(QDir(m_dir.path()).entryList({".linked.warpline.*"}, QDir::Files | QDir::Hidden),
                 QStringList{}); // no temporary file left

        // Without --force, a link at the output, even one pointing nowhere, is refused before
        // connecting, and what it points to is not created.
        const QString dangling = path("dangling.warpline");
        QVERIFY(QFile::link(path("nowhere.txt"), dangling));
        const Result refused =
            record(remote("wl-test", m_fake, {"--workload", "gelu", "-o", dangling}));
        QCOMPARE(refused.exitCode, 2);
        QVERIFY2(refused.err.contains("is a symbolic link to") && refused.err.contains("--force"),
                 qPrintable(refused.err));
        QVERIFY(!QFile::exists(path("nowhere.txt")));
        QVERIFY(QFileInfo(dangling).isSymLink());
    }

    // A workload's name is not a path: one that climbs out of the working directory (and out of
    // the trace folder on the host), or goes down into a folder, is refused before any file is
    // named after it, here or there.
    void workloadNamesThatArePathsAreRefused_data() {
        QTest::addColumn<QStringList>("workload");
        QTest::newRow("../../x") << QStringList{"--workload", "../../x"};
        QTest::newRow("a/b") << QStringList{"--workload", "a/b"};
        QTest::newRow("--workload=../x") << QStringList{"--workload=../x"};
    }

    void workloadNamesThatArePathsAreRefused() {
        QFETCH(QStringList, workload);
        // Where the names would lead without the check: folders that exist, so that the
        // recording there and the copy here would succeed.
        const QString work = path("names/work/deep");
        const QString traces = path("names/traces/deep");
        for (const QString& dir : {work + "/a", traces + "/a"})
            QVERIFY(QDir().mkpath(dir));
        const auto files = [this] {
            QStringList all;
            QDirIterator it(m_dir.path(), QDir::Files | QDir::Hidden | QDir::System,
                            QDirIterator::Subdirectories);
            while (it.hasNext())
                all << it.next();
            all.sort();
            return all;
        };
        const QStringList before = files();
        QProcess p;
        p.setWorkingDirectory(work);
        p.start(QStringLiteral(WARPLINE_RECORD),
                QStringList{"--host", "wl-test", "--remote-recorder", m_fake, "--remote-trace-dir",
                            traces} +
                    workload);
        QVERIFY(p.waitForFinished(90000));
        const QString err = QString::fromLocal8Bit(p.readAllStandardError());
        QCOMPARE(p.exitCode(), 2);
        QVERIFY2(err.startsWith("warpline-record: unknown workload '") &&
                     err.contains("without '/' or '..'") && err.count('\n') == 1,
                 qPrintable(err));
        QCOMPARE(files(), before);
    }

    void listsTheHostsWorkloads() {
        const Result r = record(remote("wl-test", m_fake, {"--list"}));
        QCOMPARE(r.exitCode, 0);
        QVERIFY(r.out.startsWith("gelu "));
        QVERIFY(r.out.contains("\ndrop "));
    }

    void failuresSayWhatToDo_data() {
        QTest::addColumn<QString>("host");
        QTest::addColumn<QString>("recorder");
        QTest::addColumn<QString>("workload");
        QTest::addColumn<QStringList>("words");
        const QString fake = path("fake-record");
        QTest::newRow("host unreachable")
            << "wl-down" << fake << "gelu"
            << QStringList{"cannot reach wl-down", "Connection refused", "runs an SSH server"};
        QTest::newRow("name unknown") << "no-such-host.invalid" << fake << "gelu"
                                      << QStringList{"does not resolve", "~/.ssh/config"};
        QTest::newRow("login refused")
            << "wl-badkey" << fake << "gelu"
            << QStringList{"wl-badkey refused the login", "never a password", "ssh-copy-id"};
        QTest::newRow("host key unknown")
            << "wl-unknown" << fake << "gelu"
            << QStringList{"host key is not known", "`ssh wl-unknown`"};
        QTest::newRow("no recorder there")
            << "wl-test" << path("nowhere/warpline-record") << "gelu"
            << QStringList{"there is no", "install Warpline on wl-test", "--remote-recorder"};
        QTest::newRow("another version there")
            << "wl-test" << path("old-record") << "gelu"
            << QStringList{"wl-test has warpline-record 0.0.1-old", "same version"};
        QTest::newRow("no GPU there")
            << "wl-test" << fake << "nogpu" << QStringList{"on wl-test: no CUDA GPU found"};
        QTest::newRow("disk full there")
            << "wl-test" << fake << "diskfull"
            << QStringList{"on wl-test:", "No space left", "free space on wl-test"};
    }

    void failuresSayWhatToDo() {
        QFETCH(QString, host);
        QFETCH(QString, recorder);
        QFETCH(QString, workload);
        QFETCH(QStringList, words);
        const QString out = path("failed.warpline");
        const Result r = record(remote(host, recorder, {"--workload", workload, "-o", out}));
        QCOMPARE(r.exitCode, 2);
        // The last line says it all, without ssh's own noise around it.
        const QString last = r.err.trimmed().split('\n').last();
        QVERIFY2(last.startsWith("warpline-record: "), qPrintable(r.err));
        for (const QString& w : words)
            QVERIFY2(last.contains(w), qPrintable(QString("'%1' not in: %2").arg(w, r.err)));
        QVERIFY(!QFile::exists(out));
        QVERIFY(!QFile::exists(out + ".part"));
    }

    void stopStopsTheRecordingThereAndCopiesItBack_data() {
        QTest::addColumn<int>("signal");
        QTest::addColumn<int>("exitCode");
        QTest::newRow("SIGTERM (the dialog's Stop)") << int(SIGTERM) << 143;
        QTest::newRow("SIGINT (Ctrl+C)") << int(SIGINT) << 130;
    }

    void stopStopsTheRecordingThereAndCopiesItBack() {
        QFETCH(int, signal);
        QFETCH(int, exitCode);
        const QString out = path(QString("slow-%1.warpline").arg(signal));
        QString seen;
        const Result r =
            record(remote("wl-test", m_fake, {"--workload", "slow", "-o", out}), [&](QProcess& p) {
                QVERIFY(QTest::qWaitFor(
                    [&] {
                        p.waitForReadyRead(100);
                        seen += QString::fromLocal8Bit(p.readAllStandardError());
                        return seen.contains("slow: 5/900");
                    },
                    20000));
                ::kill(static_cast<pid_t>(p.processId()), signal);
            });
        QVERIFY2(r.exitCode == exitCode, qPrintable(seen + r.err));
        // The recorder there got the same signal.
        QVERIFY2(r.err.contains(signal == SIGTERM ? "stopped by TERM" : "stopped by INT"),
                 qPrintable(r.err));
        QCOMPARE(readFile(out), readFile(m_fixture));
    }

    // A file that appears at the output while recording is not replaced without --force, and
    // the recording is not lost: it stays on the host, and the last line says where.
    void anOutputThatAppearedMeanwhileIsKeptAndSoIsTheTrace() {
        const QString out = path("meanwhile.warpline");
        QString seen;
        const Result r =
            record(remote("wl-test", m_fake, {"--workload", "slow", "-o", out}), [&](QProcess& p) {
                QVERIFY(QTest::qWaitFor(
                    [&] {
                        p.waitForReadyRead(100);
                        seen += QString::fromLocal8Bit(p.readAllStandardError());
                        return seen.contains("slow: 5/900");
                    },
                    20000));
                QVERIFY(writeFile(out, "someone else's"));
                p.terminate();
            });
        QCOMPARE(r.exitCode, 2);
        const QString last = r.err.trimmed().split('\n').last();
        QVERIFY2(last.contains(out + " exists") && last.contains("--force"), qPrintable(last));
        QCOMPARE(readFile(out), QByteArray("someone else's"));
        const QStringList kept = QDir(m_remoteDir).entryList({"slow-*.warpline"}, QDir::Files);
        QCOMPARE(kept.size(), 1);
        QVERIFY2(last.contains("kept at wl-test:" + m_remoteDir + "/" + kept.front()) &&
                     last.contains("scp wl-test:"),
                 qPrintable(last));
        QCOMPARE(readFile(QDir(m_remoteDir).filePath(kept.front())), readFile(m_fixture));
        QVERIFY(QFile::remove(QDir(m_remoteDir).filePath(kept.front())));
    }

    // A recording there that does not stop: a second Stop stops waiting for it, and says where its
    // trace is.
    void aSecondStopGivesUpWaiting() {
        const QString out = path("stubborn.warpline");
        QString seen;
        const Result r = record(
            remote("wl-test", m_fake, {"--workload", "stubborn", "-o", out}), [&](QProcess& p) {
                QVERIFY(QTest::qWaitFor(
                    [&] {
                        p.waitForReadyRead(100);
                        seen += QString::fromLocal8Bit(p.readAllStandardError());
                        return seen.contains("stubborn: 5/150");
                    },
                    20000));
                p.terminate();
                QVERIFY(QTest::qWaitFor(
                    [&] {
                        p.waitForReadyRead(100);
                        seen += QString::fromLocal8Bit(p.readAllStandardError());
                        return seen.contains("stubborn: 10/150");
                    },
                    20000));
                p.terminate(); // again: the recorder there ignored the first
            });
        QCOMPARE(r.exitCode, 2);
        const QString last = r.err.trimmed().split('\n').last();
        QVERIFY2(last.contains("stopped waiting for wl-test") && last.contains(m_remoteDir),
                 qPrintable(seen + r.err));
        QVERIFY(!QFile::exists(out));
    }

    void aLostConnectionKeepsTheTraceThereAndSaysWhere() {
        const QString out = path("drop.warpline");
        const Result r = record(remote("wl-test", m_fake, {"--workload", "drop", "-o", out}));
        QCOMPARE(r.exitCode, 2);
        const QString last = r.err.trimmed().split('\n').last();
        QVERIFY2(last.contains("connection to wl-test was lost"), qPrintable(r.err));
        QVERIFY(!QFile::exists(out));
        const QStringList kept = QDir(m_remoteDir).entryList({"drop-*.warpline"}, QDir::Files);
        QCOMPARE(kept.size(), 1);
        QVERIFY2(last.contains("wl-test:" + m_remoteDir + "/" + kept.front()), qPrintable(last));
        QVERIFY(last.contains("scp wl-test:"));
        QCOMPARE(readFile(QDir(m_remoteDir).filePath(kept.front())), readFile(m_fixture));
    }

    // The dialog runs the same recorder and shows its last line: each failure in its words, the
    // ones found while listing the host's workloads above the form, the others after Record.
    void theDialogShowsEachFailure_data() {
        failuresSayWhatToDo_data();
    }

    void theDialogShowsEachFailure() {
        QFETCH(QString, host);
        QFETCH(QString, recorder);
        QFETCH(QString, workload);
        QFETCH(QStringList, words);
        app::RecordDialog dialog;
        dialog.setRecorder(WARPLINE_RECORD);
        dialog.setHost(host, recorder);
        QVERIFY(QTest::qWaitFor([&] { return !dialog.isListing(); }, 60000));
        QString shown = dialog.problemText();
        if (shown.isEmpty()) {
            dialog.selectWorkload(workload);
            dialog.setOutputPath(path("dialog-failed.warpline"));
            QSignalSpy recorded(&dialog, &app::RecordDialog::traceRecorded);
            dialog.startRecording();
            QVERIFY(QTest::qWaitFor([&] { return !dialog.isRecording(); }, 60000));
            QCOMPARE(recorded.size(), 0);
            shown = dialog.errorText();
        }
        for (const QString& w : words)
            QVERIFY2(shown.contains(w, Qt::CaseInsensitive),
                     qPrintable(QString("'%1' not in: %2").arg(w, shown)));
        QVERIFY(!shown.contains("warpline-record: "));
    }

    void theDialogSaysWhereALostRecordingIs() {
        app::RecordDialog dialog;
        dialog.setRecorder(WARPLINE_RECORD);
        dialog.setHost("wl-test", m_fake);
        QVERIFY(QTest::qWaitFor([&] { return !dialog.isListing(); }, 60000));
        dialog.selectWorkload("drop");
        dialog.setOutputPath(path("dialog-drop.warpline"));
        dialog.startRecording();
        QVERIFY(QTest::qWaitFor([&] { return !dialog.isRecording(); }, 60000));
        QVERIFY2(dialog.errorText().contains("connection to wl-test was lost") &&
                     dialog.errorText().contains("scp wl-test:"),
                 qPrintable(dialog.errorText()));
    }

    void theDialogRecordsOnTheHost() {
        app::RecordDialog dialog;
        dialog.setRecorder(WARPLINE_RECORD);
        dialog.setHost("wl-test", m_fake);
        QVERIFY(dialog.isListing()); // in the background: the window stays responsive
        QVERIFY(QTest::qWaitFor([&] { return !dialog.isListing(); }, 60000));
        QVERIFY2(dialog.problemText().isEmpty(), qPrintable(dialog.problemText()));
        QCOMPARE(dialog.workloads().size(), size_t{4}); // the host's, not this machine's
        QCOMPARE(dialog.workloads()[0].name, QString("gelu"));
        dialog.selectWorkload("gelu");
        const QString out = path("dialog-gelu.warpline");
        dialog.setOutputPath(out);
        QSignalSpy recorded(&dialog, &app::RecordDialog::traceRecorded);
        dialog.startRecording();
        QVERIFY(QTest::qWaitFor([&] { return !dialog.isRecording(); }, 60000));
        QVERIFY2(dialog.errorText().isEmpty(), qPrintable(dialog.errorText()));
        QCOMPARE(recorded.size(), 1);
        QCOMPARE(recorded.at(0).at(0).toString(), out);
        QCOMPARE(readFile(out), readFile(m_fixture));
        QVERIFY(dialog.logText().contains("--host wl-test"));
        QVERIFY(dialog.logText().contains("phase fused: 4/4 launches"));
        if (!qEnvironmentVariableIsEmpty("WARPLINE_TEST_SHOTS")) {
            dialog.resize(760, 640);
            dialog.grab().save(qEnvironmentVariable("WARPLINE_TEST_SHOTS") + "/record-remote.png");
        }
    }

    void theDialogSaysWhyAHostFails() {
        app::RecordDialog dialog;
        dialog.setRecorder(WARPLINE_RECORD);
        dialog.setHost("wl-down", m_fake);
        QVERIFY(QTest::qWaitFor([&] { return !dialog.isListing(); }, 60000));
        QVERIFY2(dialog.problemText().contains("Cannot record on wl-down: Cannot reach wl-down"),
                 qPrintable(dialog.problemText()));
        QVERIFY(dialog.workloads().empty());
        // Once the host answers, it records there: here a program of the user's, in a working
        // directory on the host.
        dialog.setHost("wl-test", m_fake);
        QVERIFY(QTest::qWaitFor([&] { return !dialog.isListing(); }, 60000));
        QVERIFY(dialog.problemText().isEmpty());
        dialog.setProgram("python3", "train.py", "/srv/work");
        const QString out = path("dialog-program.warpline");
        dialog.setOutputPath(out);
        QSignalSpy recorded(&dialog, &app::RecordDialog::traceRecorded);
        dialog.startRecording();
        QVERIFY(QTest::qWaitFor([&] { return !dialog.isRecording(); }, 60000));
        QVERIFY2(dialog.logText().contains("--remote-dir /srv/work"), qPrintable(dialog.logText()));
        QVERIFY2(dialog.logText().contains("-- python3 train.py"), qPrintable(dialog.logText()));
        // The stand-in cannot cd into /srv/work, so the shell there says so: in words here.
        QCOMPARE(recorded.size(), 0);
        QVERIFY2(dialog.errorText().contains("wl-test"), qPrintable(dialog.errorText()));
    }
#endif
};

QTEST_MAIN(TestRemoteRecord)
#include "tst_remote_record.moc"
