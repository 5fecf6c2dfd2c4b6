// gpu-labelled test of the Record dialog with the real warpline-record, on a machine with an
// NVIDIA GPU: it records a bundled workload and a `-- python3` PyTorch program from the dialog, as
// a user would, and checks that each trace is handed over, complete and full of GPU work. With
// WARPLINE_TEST_SHOTS set, it saves the dialog while recording and after (record-*.png) there,
// with a copy of each trace it recorded.
// The recorder is WARPLINE_RECORD (environment), else the one built with this test. With
// WARPLINE_TEST_SSH_HOST set (tests/gpu/device_visit_remote.sh runs an sshd on the GPU machine's
// localhost), it also records a workload on that host over SSH from the dialog, with
// WARPLINE_TEST_REMOTE_RECORDER as the recorder there.
// Without a GPU it skips (exit 77) and says so.

#include "recorddialog.h"
#include "traceloader.h"

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <cstdio>

using namespace warpline;

namespace {

bool haveGpu() {
    QProcess smi;
    smi.start(QStringLiteral("nvidia-smi"), {QStringLiteral("-L")});
    return smi.waitForFinished(20000) && smi.exitStatus() == QProcess::NormalExit &&
           smi.exitCode() == 0 && smi.readAllStandardOutput().contains("GPU");
}

bool havePythonWithTorch() {
    QProcess py;
    py.start(
        QStringLiteral("python3"),
        {QStringLiteral("-c"), QStringLiteral("import torch; assert torch.cuda.is_available()")});
    return py.waitForFinished(120000) && py.exitStatus() == QProcess::NormalExit &&
           py.exitCode() == 0;
}

void shoot(QWidget& w, const QString& name) {
    const QString dir = qEnvironmentVariable("WARPLINE_TEST_SHOTS");
    if (!dir.isEmpty())
        QVERIFY(w.grab().save(QDir(dir).filePath(name)));
}

void keep(const QString& trace) {
    const QString dir = qEnvironmentVariable("WARPLINE_TEST_SHOTS");
    if (!dir.isEmpty()) {
        const QString copy = QDir(dir).filePath(QFileInfo(trace).fileName());
        QFile::remove(copy);
        QVERIFY(QFile::copy(trace, copy));
    }
}

// A small training loop: a few Linear layers, AdamW, loss.item() every step, NVTX step ranges.
constexpr const char* kTrainPy = R"(import torch
torch.manual_seed(0)
model = torch.nn.Sequential(*[torch.nn.Linear(512, 512) for _ in range(8)]).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(256, 512, device="cuda")
for step in range(30):
    torch.cuda.nvtx.range_push(f"step {step}")
    loss = model(x).square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.4f}", flush=True)
    torch.cuda.nvtx.range_pop()
)";

} // namespace

class GpuRecordDialog : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;

    QString recorder() const {
        const QString found = app::RecordDialog::findRecorder();
#ifdef WARPLINE_RECORD
        if (found.isEmpty())
            return QStringLiteral(WARPLINE_RECORD);
#endif
        return found;
    }

    // Waits for the recording to end, with a shot of the dialog once the recorder has reported
    // progress (a line of the log after its command line), or after 30 s.
    void recordAndShoot(app::RecordDialog& dialog, const QString& runningShot) {
        dialog.startRecording();
        QVERIFY(dialog.isRecording());
        (void)QTest::qWaitFor(
            [&] { return !dialog.isRecording() || dialog.logText().count(QLatin1Char('\n')) >= 2; },
            30000);
        if (dialog.isRecording())
            shoot(dialog, runningShot);
        QVERIFY(QTest::qWaitFor([&] { return !dialog.isRecording(); }, 300000));
    }

    static void checkTrace(const QString& path, size_t minKernels) {
        const model::TraceStore store = model::TraceLoader::load(path.toStdString());
        QVERIFY2(store.kernelCount() >= minKernels,
                 qPrintable(QString("%1 kernels").arg(store.kernelCount())));
        QVERIFY(store.apiCallCount() >= store.kernelCount());
        QVERIFY2(store.warnings().empty(),
                 store.warnings().empty() ? "" : store.warnings().front().c_str());
    }

private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName(QStringLiteral("WarplineGpuTest"));
        QSettings().remove(QStringLiteral("record/host")); // the dialog remembers the last host
        QVERIFY(m_dir.isValid());
        QVERIFY2(!recorder().isEmpty(), "no warpline-record: set WARPLINE_RECORD");
        if (!qEnvironmentVariableIsEmpty("WARPLINE_TEST_SHOTS"))
            QDir().mkpath(qEnvironmentVariable("WARPLINE_TEST_SHOTS"));
    }

    void recordsABundledWorkload() {
        app::RecordDialog dialog;
        dialog.setRecorder(recorder());
        QVERIFY(dialog.workloads().size() >= 8);
        dialog.selectWorkload(QStringLiteral("sync-stall"));
        const QString out = m_dir.filePath(QStringLiteral("sync-stall.warpline"));
        dialog.setOutputPath(out);
        dialog.resize(760, 640);
        dialog.show();
        QSignalSpy recorded(&dialog, &app::RecordDialog::traceRecorded);
        recordAndShoot(dialog, QStringLiteral("record-workload-running.png"));
        shoot(dialog, QStringLiteral("record-workload-done.png"));
        QVERIFY2(dialog.errorText().isEmpty(), qPrintable(dialog.errorText()));
        QCOMPARE(recorded.size(), 1);
        QCOMPARE(recorded.at(0).at(0).toString(), out);
        checkTrace(out, 100);
        keep(out);
    }

    void recordsAPythonProgram() {
        if (!havePythonWithTorch())
            QSKIP("python3 with CUDA PyTorch is not installed here");
        const QString work = m_dir.filePath(QStringLiteral("work"));
        QVERIFY(QDir().mkpath(work));
        QFile script(QDir(work).filePath(QStringLiteral("train.py")));
        QVERIFY(script.open(QIODevice::WriteOnly));
        script.write(kTrainPy);
        script.close();

        app::RecordDialog dialog;
        dialog.setRecorder(recorder());
        dialog.setProgram(QStringLiteral("python3"), QStringLiteral("train.py"), work);
        dialog.setOutputPath(QStringLiteral("train.warpline")); // relative: in the working dir
        dialog.resize(760, 640);
        dialog.show();
        QSignalSpy recorded(&dialog, &app::RecordDialog::traceRecorded);
        recordAndShoot(dialog, QStringLiteral("record-python-running.png"));
        shoot(dialog, QStringLiteral("record-python-done.png"));
        QVERIFY2(dialog.errorText().isEmpty(), qPrintable(dialog.errorText()));
        const QString out = QDir(work).filePath(QStringLiteral("train.warpline"));
        QCOMPARE(recorded.size(), 1);
        QCOMPARE(recorded.at(0).at(0).toString(), out);
        QVERIFY2(dialog.logText().contains(QStringLiteral("step 29 loss")),
                 qPrintable(dialog.logText().right(800)));
        checkTrace(out, 30 * 8);
        keep(out);
    }

    void recordsOnAHostOverSsh() {
        const QString host = qEnvironmentVariable("WARPLINE_TEST_SSH_HOST");
        if (host.isEmpty())
            QSKIP("WARPLINE_TEST_SSH_HOST names no SSH host to record on");
        app::RecordDialog dialog;
        dialog.setRecorder(recorder());
        dialog.setHost(host, qEnvironmentVariable("WARPLINE_TEST_REMOTE_RECORDER"));
        QVERIFY(QTest::qWaitFor([&] { return !dialog.isListing(); }, 60000));
        QVERIFY2(dialog.problemText().isEmpty(), qPrintable(dialog.problemText()));
        QVERIFY(dialog.workloads().size() >= 8);
        dialog.selectWorkload(QStringLiteral("gelu"));
        const QString out = m_dir.filePath(QStringLiteral("remote-gelu.warpline"));
        dialog.setOutputPath(out);
        dialog.resize(760, 640);
        dialog.show();
        QSignalSpy recorded(&dialog, &app::RecordDialog::traceRecorded);
        recordAndShoot(dialog, QStringLiteral("record-remote-running.png"));
        shoot(dialog, QStringLiteral("record-remote-done.png"));
        QVERIFY2(dialog.errorText().isEmpty(), qPrintable(dialog.errorText()));
        QCOMPARE(recorded.size(), 1);
        QVERIFY2(dialog.logText().contains(QStringLiteral("copied ") + host + QStringLiteral(":")),
                 qPrintable(dialog.logText().right(800)));
        checkTrace(out, 100);
        keep(out);
    }
};

int main(int argc, char** argv) {
    if (!haveGpu()) {
        std::printf("SKIP: no NVIDIA GPU here (nvidia-smi -L found none); the gpu-labelled tests "
                    "run on a machine with one (ctest -L gpu)\n");
        return 77;
    }
    QApplication app(argc, argv);
    GpuRecordDialog test;
    return QTest::qExec(&test, argc, argv);
}

#include "gpu_record_dialog.moc"
