#pragma once

// RecordDialog (File > Record...): records a bundled workload, or a CUDA program of the user's
// (with arguments and working directory), with warpline-record and hands the new trace to the
// window. The workloads and their options come from `warpline-record --list`;
// recording runs warpline-record as a child process (QProcess) with its stderr shown live and a
// Stop button. Failures are shown in words: exit 2 (no GPU, bad option: nothing written) and
// exit 1 (the workload failed; the trace was kept). When warpline-record was not built, the dialog
// says why and how to get it. "Record on" names a GPU host reached over SSH: the local recorder
// runs with --host (collector/remoterecord.h), lists the host's workloads, records there and
// copies the trace back; its failures (unreachable, login refused, unknown host key, no recorder
// or another version there, no GPU or a full disk there, the connection lost) arrive as its last
// line and are shown in words like the others.

#include "workloadcatalog.h"

#include <QDialog>
#include <QProcess>
#include <vector>

class QCheckBox;
class QRadioButton;
class QComboBox;
class QDialogButtonBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;

namespace warpline::app {

class RecordDialog : public QDialog {
    Q_OBJECT
public:
    explicit RecordDialog(QWidget* parent = nullptr);
    ~RecordDialog() override;

    // The recorder this dialog runs: next to the warpline executable, else the build tree's, else
    // on PATH; empty when none exists. WARPLINE_RECORD (environment) overrides.
    static QString findRecorder();
    // Why recording is unavailable in this build (empty when the collector was built).
    static QString unavailableReason();

    // Tests: the recorder to use (instead of findRecorder()).
    void setRecorder(const QString& path);
    QString recorder() const { return m_recorder; }
    const std::vector<WorkloadInfo>& workloads() const { return m_workloads; }
    // Also sample the GPUs' performance counters (warpline-record --gpu-metrics).
    void setGpuMetrics(bool on);
    // With a program of one's own: record its Python stacks (--python-stacks); on by default.
    void setPythonStacks(bool on);
    void setOutputPath(const QString& path);
    // Records on `host` over SSH ("" : here), with `remoteRecorder` there ("" : its PATH's);
    // lists that host's workloads, in the background (isListing() until they are there, or
    // problemText() says why not).
    void setHost(const QString& host, const QString& remoteRecorder = QString());
    bool isListing() const;
    void selectWorkload(const QString& name);
    // Program mode: records `program` with `arguments` in `directory` instead of a workload.
    void setProgram(const QString& program, const QString& arguments, const QString& directory);
    void startRecording();
    bool isRecording() const;
    QString errorText() const;
    // Why recording is not possible right now (no recorder, its --list failed, the host cannot
    // be reached); empty when it is.
    QString problemText() const;
    QString logText() const;

signals:
    void traceRecorded(const QString& path);

protected:
    void reject() override;

private:
    void loadWorkloads();
    // The workloads `list` (warpline-record [--host HOST] --list, ended) printed into
    // m_workloads; or why there are none.
    QString listProblem(QProcess& list, const QString& host);
    void showWorkloads(const QString& problem);
    void stopListing();
    void showWorkload(int index);
    void showError(const QString& message);
    void finished(int exitCode, QProcess::ExitStatus status);
    void readProgress();
    void setRunning(bool running);
    bool programMode() const;
    QStringList hostArguments() const; // --host HOST [--remote-recorder PATH], or none

    QString m_recorder;
    std::vector<WorkloadInfo> m_workloads;
    QProcess* m_process = nullptr;
    QString m_stderr;
    QString m_outputInFlight;
    bool m_stopped = false;

    QString m_remoteRecorder;
    QProcess* m_lister = nullptr; // warpline-record --host HOST --list, while it runs
    QString m_listedHost;         // the host whose workloads are listed ("" : here)
    QLineEdit* m_host = nullptr;
    QLabel* m_unavailable = nullptr;
    QRadioButton* m_workloadMode = nullptr;
    QRadioButton* m_programMode = nullptr;
    QWidget* m_workloadBox = nullptr;
    QWidget* m_programBox = nullptr;
    QLineEdit* m_program = nullptr;
    QLineEdit* m_arguments = nullptr;
    QLineEdit* m_directory = nullptr;
    QComboBox* m_workload = nullptr;
    QLabel* m_description = nullptr;
    QWidget* m_optionsBox = nullptr;
    QFormLayout* m_options = nullptr;
    std::vector<std::pair<QString, QLineEdit*>> m_optionEdits;
    QLineEdit* m_output = nullptr;
    QCheckBox* m_open = nullptr;
    QCheckBox* m_gpuMetrics = nullptr;
    QCheckBox* m_pythonStacks = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_status = nullptr;
    QLabel* m_error = nullptr;
    QPlainTextEdit* m_log = nullptr;
    QPushButton* m_record = nullptr;
    QPushButton* m_stop = nullptr;
};

} // namespace warpline::app
