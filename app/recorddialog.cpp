#include "recorddialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRadioButton>
#include <QRegularExpression>
#include <QSettings>
#include <QStandardPaths>
#include <QToolButton>
#include <QVBoxLayout>

namespace warpline::app {

namespace {

constexpr int kExitWorkloadFailed = 1;
constexpr int kExitUsage = 2;

// warpline-record prefixes its messages with "warpline-record: "; the dialog shows just the words.
QString plainMessage(const QString& stderrText) {
    QStringList messages;
    for (QString line : stderrText.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
        line = line.trimmed();
        if (line.startsWith(QLatin1String("warpline-record: ")))
            line = line.mid(17);
        if (line.startsWith(QLatin1String("recording ")) ||
            line.startsWith(QLatin1String("wrote ")))
            continue;
        messages << line;
    }
    QString text = messages.isEmpty() ? QString() : messages.last();
    if (!text.isEmpty())
        text[0] = text[0].toUpper();
    return text;
}

} // namespace

QString RecordDialog::findRecorder() {
    const QByteArray env = qgetenv("WARPLINE_RECORD");
    if (!env.isEmpty() && QFileInfo(QString::fromLocal8Bit(env)).isExecutable())
        return QFileInfo(QString::fromLocal8Bit(env)).absoluteFilePath();
    const QString beside =
        QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("warpline-record"));
    if (QFileInfo(beside).isExecutable())
        return beside;
#ifdef WARPLINE_RECORD_BUILD_PATH
    if (QFileInfo(QStringLiteral(WARPLINE_RECORD_BUILD_PATH)).isExecutable())
        return QStringLiteral(WARPLINE_RECORD_BUILD_PATH);
#endif
    return QStandardPaths::findExecutable(QStringLiteral("warpline-record"));
}

QString RecordDialog::unavailableReason() {
#ifdef WARPLINE_RECORD_BUILD_PATH
    return tr("warpline-record was not found. It is built with Warpline when the CUDA toolkit "
              "with CUPTI is present (expected at %1); build the warpline-record target, or put "
              "warpline-record next to warpline or on PATH.")
        .arg(QStringLiteral(WARPLINE_RECORD_BUILD_PATH));
#else
    QString why = QStringLiteral(WARPLINE_COLLECTOR_SKIPPED_WHY);
    if (why.isEmpty())
        why = tr("the CUDA toolkit with CUPTI was not found when Warpline was configured");
    return tr("Recording is not available: this Warpline was built without its collector "
              "(warpline-record), because %1. Install the CUDA toolkit (with CUPTI) and rebuild, "
              "or record on a machine with an NVIDIA GPU and open the trace file here.")
        .arg(why);
#endif
}

RecordDialog::RecordDialog(QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("Record a Trace"));
    setMinimumSize(640, 520);
    auto* layout = new QVBoxLayout(this);

    m_unavailable = new QLabel(this);
    m_unavailable->setTextFormat(Qt::PlainText);
    m_unavailable->setWordWrap(true);
    m_unavailable->hide();
    layout->addWidget(m_unavailable);

    // Where to record: here, or on a GPU host over SSH (warpline-record --host).
    auto* hostRow = new QHBoxLayout;
    m_host = new QLineEdit(this);
    m_host->setPlaceholderText(tr("this machine; or a GPU host over SSH: user@gpu-server, or a "
                                  "Host of ~/.ssh/config"));
    m_host->setToolTip(tr("Records with the host's warpline-record over SSH, with your keys, agent "
                          "and ~/.ssh/config (never a password), then copies the trace here."));
    m_host->setText(QSettings().value(QStringLiteral("record/host")).toString());
    hostRow->addWidget(new QLabel(tr("Record on:"), this));
    hostRow->addWidget(m_host, 1);
    layout->addLayout(hostRow);
    connect(m_host, &QLineEdit::editingFinished, this, [this] {
        if (m_host->text().trimmed() != m_listedHost)
            loadWorkloads();
    });

    auto* modes = new QHBoxLayout;
    m_workloadMode = new QRadioButton(tr("A bundled workload"), this);
    m_programMode = new QRadioButton(tr("A CUDA program of your own"), this);
    m_workloadMode->setChecked(true);
    modes->addWidget(m_workloadMode);
    modes->addWidget(m_programMode);
    modes->addStretch(1);
    layout->addLayout(modes);

    m_workloadBox = new QWidget(this);
    auto* workloadLayout = new QVBoxLayout(m_workloadBox);
    workloadLayout->setContentsMargins(0, 0, 0, 0);
    auto* form = new QFormLayout;
    m_workload = new QComboBox(m_workloadBox);
    form->addRow(tr("Workload:"), m_workload);
    m_description = new QLabel(m_workloadBox);
    m_description->setTextFormat(Qt::PlainText);
    m_description->setWordWrap(true);
    form->addRow(QString(), m_description);
    workloadLayout->addLayout(form);
    auto* optionsGroup = new QGroupBox(tr("Options"), m_workloadBox);
    m_options = new QFormLayout(optionsGroup);
    m_optionsBox = optionsGroup;
    workloadLayout->addWidget(optionsGroup);
    layout->addWidget(m_workloadBox);

    m_programBox = new QWidget(this);
    {
        auto* programForm = new QFormLayout(m_programBox);
        programForm->setContentsMargins(0, 0, 0, 0);
        auto* programRow = new QHBoxLayout;
        m_program = new QLineEdit(m_programBox);
        m_program->setPlaceholderText(tr("e.g. python3, or ./my_cuda_app"));
        auto* browseProgram = new QToolButton(m_programBox);
        browseProgram->setText(tr("Browse…"));
        programRow->addWidget(m_program, 1);
        programRow->addWidget(browseProgram);
        programForm->addRow(tr("Program:"), programRow);
        m_arguments = new QLineEdit(m_programBox);
        m_arguments->setPlaceholderText(tr("e.g. train.py --epochs 1 (quotes group words)"));
        programForm->addRow(tr("Arguments:"), m_arguments);
        auto* directoryRow = new QHBoxLayout;
        m_directory = new QLineEdit(QDir::homePath(), m_programBox);
        auto* browseDirectory = new QToolButton(m_programBox);
        browseDirectory->setText(tr("Browse…"));
        directoryRow->addWidget(m_directory, 1);
        directoryRow->addWidget(browseDirectory);
        programForm->addRow(tr("Working directory:"), directoryRow);
        m_pythonStacks = new QCheckBox(
            tr("Record Python call stacks (GPU time by source line, the line of each sync)"),
            m_programBox);
        m_pythonStacks->setToolTip(
            tr("Adds warpline-record --python-stacks: the Python stack (file, line, function) of "
               "every CUDA call made from Python, read from the interpreter (CPython 3.9+). "
               "Costs a few percent on a launch-bound loop; no effect on other programs."));
        m_pythonStacks->setChecked(
            QSettings().value(QStringLiteral("record/pythonStacks"), true).toBool());
        programForm->addRow(QString(), m_pythonStacks);
        auto* note = new QLabel(tr("The program runs under the CUPTI collector (via "
                                   "CUDA_INJECTION64_PATH); its own output appears below."),
                                m_programBox);
        note->setTextFormat(Qt::PlainText);
        note->setWordWrap(true);
        programForm->addRow(QString(), note);
        connect(browseProgram, &QToolButton::clicked, this, [this] {
            const QString path =
                QFileDialog::getOpenFileName(this, tr("Program to Record"), m_directory->text());
            if (!path.isEmpty())
                m_program->setText(path);
        });
        connect(browseDirectory, &QToolButton::clicked, this, [this] {
            const QString dir = QFileDialog::getExistingDirectory(this, tr("Working Directory"),
                                                                  m_directory->text());
            if (!dir.isEmpty())
                m_directory->setText(dir);
        });
        connect(m_program, &QLineEdit::editingFinished, this, [this] {
            if (!m_program->text().trimmed().isEmpty() && programMode())
                m_output->setText(QDir(m_directory->text())
                                      .filePath(QFileInfo(m_program->text().trimmed()).baseName() +
                                                QStringLiteral(".warpline")));
        });
    }
    m_programBox->hide();
    layout->addWidget(m_programBox);
    connect(m_programMode, &QRadioButton::toggled, this, [this](bool program) {
        m_programBox->setVisible(program);
        m_workloadBox->setVisible(!program);
        m_record->setEnabled(!m_recorder.isEmpty() && (program || !m_workloads.empty()));
    });

    auto* outputRow = new QHBoxLayout;
    m_output = new QLineEdit(this);
    auto* browse = new QToolButton(this);
    browse->setText(tr("Browse…"));
    outputRow->addWidget(new QLabel(tr("Output file:"), this));
    outputRow->addWidget(m_output, 1);
    outputRow->addWidget(browse);
    layout->addLayout(outputRow);
    m_gpuMetrics = new QCheckBox(
        tr("Sample GPU metrics (SM and warp activity, tensor/FMA pipes, DRAM and L2 bandwidth)"),
        this);
    m_gpuMetrics->setToolTip(
        tr("Adds warpline-record --gpu-metrics: CUPTI PM sampling at 10 kHz, drawn as counter "
           "rows under each GPU and summarised per kernel (memory- or compute-bound). Where the "
           "driver restricts counters to administrators, the recording goes on without them "
           "and says why."));
    m_gpuMetrics->setChecked(
        QSettings().value(QStringLiteral("record/gpuMetrics"), false).toBool());
    layout->addWidget(m_gpuMetrics);
    m_open = new QCheckBox(tr("Open the trace when recording is done"), this);
    m_open->setChecked(true);
    layout->addWidget(m_open);

    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 0);
    m_progress->hide();
    layout->addWidget(m_progress);
    m_status = new QLabel(this);
    m_status->setTextFormat(Qt::PlainText);
    layout->addWidget(m_status);
    m_error = new QLabel(this);
    m_error->setTextFormat(Qt::PlainText);
    m_error->setWordWrap(true);
    m_error->setTextInteractionFlags(Qt::TextSelectableByMouse);
    QPalette errorPalette = m_error->palette();
    errorPalette.setColor(QPalette::WindowText, QColor(200, 30, 30));
    m_error->setPalette(errorPalette);
    m_error->hide();
    layout->addWidget(m_error);
    m_log = new QPlainTextEdit(this);
    m_log->setReadOnly(true);
    m_log->setMaximumBlockCount(2000);
    m_log->setPlaceholderText(tr("warpline-record's progress appears here."));
    layout->addWidget(m_log, 1);

    auto* buttons = new QDialogButtonBox(this);
    m_record = buttons->addButton(tr("Record"), QDialogButtonBox::AcceptRole);
    m_stop = buttons->addButton(tr("Stop"), QDialogButtonBox::ActionRole);
    m_stop->setEnabled(false);
    buttons->addButton(QDialogButtonBox::Close);
    layout->addWidget(buttons);

    connect(m_record, &QPushButton::clicked, this, &RecordDialog::startRecording);
    connect(m_stop, &QPushButton::clicked, this, [this] {
        if (m_process && m_process->state() != QProcess::NotRunning) {
            m_stopped = true;
            m_process->terminate();
            m_status->setText(tr("Stopping…"));
        }
    });
    connect(buttons, &QDialogButtonBox::rejected, this, &RecordDialog::reject);
    connect(m_workload, &QComboBox::currentIndexChanged, this, &RecordDialog::showWorkload);
    connect(browse, &QToolButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(
            this, tr("Trace File"), m_output->text(), tr("Warpline traces (*.warpline)"), nullptr,
            QFileDialog::DontConfirmOverwrite);
        if (!path.isEmpty())
            m_output->setText(path);
    });

    setRecorder(findRecorder());
}

RecordDialog::~RecordDialog() {
    stopListing();
    if (m_process && m_process->state() != QProcess::NotRunning) {
        m_process->kill();
        m_process->waitForFinished(3000);
    }
}

void RecordDialog::setRecorder(const QString& path) {
    // Absolute: a program is recorded in its own working directory, where a relative path to the
    // recorder (WARPLINE_RECORD=bin/warpline-record) would name nothing.
    m_recorder = path.contains(QLatin1Char('/')) ? QFileInfo(path).absoluteFilePath() : path;
    loadWorkloads();
}

void RecordDialog::loadWorkloads() {
    m_workloads.clear();
    m_workload->clear();
    m_unavailable->hide();
    stopListing(); // one still under way is for a host no longer asked for
    if (m_recorder.isEmpty()) {
        showWorkloads(unavailableReason());
        return;
    }
    const QString host = m_host->text().trimmed();
    m_listedHost = host;
    if (host.isEmpty()) {
        QProcess list;
        list.start(m_recorder, {QStringLiteral("--list")});
        list.waitForFinished(15000);
        showWorkloads(listProblem(list, host));
        return;
    }
    // Over SSH the answer may take seconds (ssh gives up connecting after 20): the window stays
    // responsive meanwhile.
    m_record->setEnabled(false);
    m_status->setText(tr("Asking %1 for its workloads…").arg(host));
    m_lister = new QProcess(this);
    QProcess* lister = m_lister;
    connect(lister, &QProcess::finished, this, [this, lister, host] {
        if (lister != m_lister)
            return;
        m_status->clear();
        showWorkloads(listProblem(*lister, host));
        m_lister->deleteLater();
        m_lister = nullptr;
    });
    connect(lister, &QProcess::errorOccurred, this, [this, lister, host](QProcess::ProcessError e) {
        if (lister != m_lister || e != QProcess::FailedToStart)
            return;
        m_status->clear();
        showWorkloads(listProblem(*lister, host));
        m_lister->deleteLater();
        m_lister = nullptr;
    });
    lister->start(m_recorder, hostArguments() << QStringLiteral("--list"));
}

void RecordDialog::stopListing() {
    if (!m_lister)
        return;
    QProcess* lister = m_lister;
    m_lister = nullptr;
    lister->disconnect(this);
    lister->kill();
    lister->waitForFinished(3000);
    delete lister;
}

bool RecordDialog::isListing() const {
    return m_lister != nullptr;
}

QString RecordDialog::listProblem(QProcess& list, const QString& host) {
    if (list.state() != QProcess::NotRunning || list.exitStatus() != QProcess::NormalExit ||
        list.exitCode() != 0 || list.error() == QProcess::FailedToStart) {
        const QString why = list.error() == QProcess::FailedToStart
                                ? list.errorString()
                                : plainMessage(QString::fromLocal8Bit(list.readAllStandardError()));
        return host.isEmpty() ? tr("%1 --list did not work (%2). Rebuild warpline-record, or "
                                   "record from the command line.")
                                    .arg(m_recorder, why)
                              : tr("Cannot record on %1: %2").arg(host, why);
    }
    m_workloads = WorkloadCatalog::parse(QString::fromLocal8Bit(list.readAllStandardOutput()));
    return m_workloads.empty() ? tr("%1 --list printed no workloads.").arg(m_recorder) : QString();
}

void RecordDialog::showWorkloads(const QString& problem) {
    const bool ok = problem.isEmpty();
    m_unavailable->setText(problem);
    m_unavailable->setVisible(!ok);
    m_record->setEnabled(ok);
    m_workload->setEnabled(ok);
    m_optionsBox->setEnabled(ok);
    m_output->setEnabled(ok);
    for (const WorkloadInfo& w : m_workloads)
        m_workload->addItem(w.name);
    const QString last = QSettings().value(QStringLiteral("record/workload")).toString();
    const int index = m_workload->findText(last);
    if (index >= 0)
        m_workload->setCurrentIndex(index);
    showWorkload(m_workload->currentIndex());
}

void RecordDialog::selectWorkload(const QString& name) {
    const int index = m_workload->findText(name);
    if (index >= 0)
        m_workload->setCurrentIndex(index);
}

QStringList RecordDialog::hostArguments() const {
    const QString host = m_host->text().trimmed();
    if (host.isEmpty())
        return {};
    QStringList args = {QStringLiteral("--host"), host};
    if (!m_remoteRecorder.isEmpty())
        args << QStringLiteral("--remote-recorder") << m_remoteRecorder;
    return args;
}

void RecordDialog::setHost(const QString& host, const QString& remoteRecorder) {
    m_host->setText(host);
    m_remoteRecorder = remoteRecorder;
    loadWorkloads();
}

void RecordDialog::setGpuMetrics(bool on) {
    m_gpuMetrics->setChecked(on);
}

void RecordDialog::setPythonStacks(bool on) {
    m_pythonStacks->setChecked(on);
}

void RecordDialog::setOutputPath(const QString& path) {
    m_output->setText(path);
}

void RecordDialog::showWorkload(int index) {
    while (m_options->rowCount() > 0)
        m_options->removeRow(0);
    m_optionEdits.clear();
    if (index < 0 || static_cast<size_t>(index) >= m_workloads.size()) {
        m_description->clear();
        return;
    }
    const WorkloadInfo& w = m_workloads[static_cast<size_t>(index)];
    m_description->setText(w.description);
    for (const WorkloadOption& o : w.options) {
        auto* edit = new QLineEdit(o.defaultValue, m_optionsBox);
        edit->setPlaceholderText(o.defaultValue);
        edit->setToolTip(o.help);
        auto* help = new QLabel(o.help, m_optionsBox);
        help->setTextFormat(Qt::PlainText);
        help->setWordWrap(true);
        auto* row = new QWidget(m_optionsBox);
        auto* rowLayout = new QHBoxLayout(row);
        rowLayout->setContentsMargins(0, 0, 0, 0);
        rowLayout->addWidget(edit);
        rowLayout->addWidget(help, 1);
        m_options->addRow(QStringLiteral("--%1").arg(o.name), row);
        m_optionEdits.emplace_back(o.name, edit);
    }
    m_optionsBox->setVisible(!w.options.empty());
    const QString dir = QSettings()
                            .value(QStringLiteral("record/directory"),
                                   QStandardPaths::writableLocation(QStandardPaths::HomeLocation))
                            .toString();
    QString path = QDir(dir).filePath(w.name + QStringLiteral(".warpline"));
    for (int n = 2; QFileInfo::exists(path); ++n)
        path = QDir(dir).filePath(QStringLiteral("%1-%2.warpline").arg(w.name).arg(n));
    m_output->setText(path);
}

bool RecordDialog::isRecording() const {
    return m_process && m_process->state() != QProcess::NotRunning;
}

QString RecordDialog::errorText() const {
    return m_error->isHidden() ? QString() : m_error->text();
}

QString RecordDialog::problemText() const {
    return m_unavailable->isHidden() ? QString() : m_unavailable->text();
}

QString RecordDialog::logText() const {
    return m_log->toPlainText();
}

void RecordDialog::showError(const QString& message) {
    m_error->setText(message);
    m_error->setVisible(!message.isEmpty());
}

void RecordDialog::setRunning(bool running) {
    m_record->setEnabled(!running && !m_workloads.empty());
    m_stop->setEnabled(running);
    m_workload->setEnabled(!running);
    m_optionsBox->setEnabled(!running);
    m_output->setEnabled(!running);
    m_programBox->setEnabled(!running);
    m_workloadMode->setEnabled(!running);
    m_programMode->setEnabled(!running);
    m_host->setEnabled(!running);
    m_progress->setVisible(running);
}

bool RecordDialog::programMode() const {
    return m_programMode->isChecked();
}

void RecordDialog::setProgram(const QString& program, const QString& arguments,
                              const QString& directory) {
    m_programMode->setChecked(true);
    m_program->setText(program);
    m_arguments->setText(arguments);
    m_directory->setText(directory);
}

void RecordDialog::startRecording() {
    if (isRecording() || m_recorder.isEmpty())
        return;
    if (!programMode() && m_workload->currentIndex() < 0)
        return;
    if (programMode() && m_program->text().trimmed().isEmpty()) {
        showError(tr("Name the program to record (and its arguments)."));
        return;
    }
    showError({});
    QString output = m_output->text().trimmed();
    if (!output.isEmpty() && QFileInfo(output).isRelative())
        output = QDir(programMode() && m_host->text().trimmed().isEmpty() ? m_directory->text()
                                                                          : QDir::currentPath())
                     .filePath(output);
    if (output.isEmpty()) {
        showError(tr("Choose the file to write the trace to."));
        return;
    }
    bool overwrite = false;
    if (QFileInfo::exists(output)) {
        if (QMessageBox::question(
                this, tr("Replace File?"),
                tr("%1 exists. Replace it with the new recording?").arg(output)) !=
            QMessageBox::Yes)
            return;
        overwrite = true;
    }
    std::vector<std::pair<QString, QString>> options;
    for (const auto& [name, edit] : m_optionEdits)
        options.emplace_back(name, edit->text());
    const QString workload = programMode() ? QFileInfo(m_program->text().trimmed()).fileName()
                                           : m_workload->currentText();
    const QString host = m_host->text().trimmed();
    QStringList args = hostArguments();
    if (m_gpuMetrics->isChecked())
        args << QStringLiteral("--gpu-metrics");
    if (programMode() && m_pythonStacks->isChecked())
        args << QStringLiteral("--python-stacks");
    // On a host, the working directory is one there (the home directory when left as it is).
    if (!host.isEmpty() && programMode() && !m_directory->text().trimmed().isEmpty() &&
        QDir::cleanPath(m_directory->text().trimmed()) != QDir::cleanPath(QDir::homePath()))
        args << QStringLiteral("--remote-dir") << m_directory->text().trimmed();
    args << (programMode()
                 ? WorkloadCatalog::programArguments(m_program->text().trimmed(),
                                                     m_arguments->text(), output, overwrite)
                 : WorkloadCatalog::recordArguments(workload, options, output, overwrite));
    QSettings settings;
    settings.setValue(QStringLiteral("record/host"), host);
    settings.setValue(QStringLiteral("record/gpuMetrics"), m_gpuMetrics->isChecked());
    settings.setValue(QStringLiteral("record/pythonStacks"), m_pythonStacks->isChecked());
    if (!programMode())
        settings.setValue(QStringLiteral("record/workload"), workload);
    settings.setValue(QStringLiteral("record/directory"), QFileInfo(output).absolutePath());

    m_log->clear();
    m_log->appendPlainText(QStringLiteral("$ warpline-record %1").arg(args.join(QLatin1Char(' '))));
    m_stderr.clear();
    m_stopped = false;
    m_outputInFlight = output;
    m_progress->setRange(0, 0);
    m_status->setText(tr("Recording %1…").arg(workload));
    delete m_process;
    m_process = new QProcess(this);
    m_process->setProcessChannelMode(QProcess::SeparateChannels);
    if (programMode() && host.isEmpty())
        m_process->setWorkingDirectory(m_directory->text());
    connect(m_process, &QProcess::readyReadStandardError, this, &RecordDialog::readProgress);
    connect(m_process, &QProcess::readyReadStandardOutput, this, [this] {
        m_log->appendPlainText(
            QString::fromLocal8Bit(m_process->readAllStandardOutput()).trimmed());
    });
    connect(m_process, &QProcess::finished, this, &RecordDialog::finished);
    connect(m_process, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
        if (error == QProcess::FailedToStart) {
            setRunning(false);
            m_status->clear();
            showError(tr("Could not start %1: %2").arg(m_recorder, m_process->errorString()));
        }
    });
    setRunning(true);
    m_process->start(m_recorder, args);
}

void RecordDialog::readProgress() {
    const QString text = QString::fromLocal8Bit(m_process->readAllStandardError());
    m_stderr += text;
    for (const QString& line : text.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
        m_log->appendPlainText(line);
        // Workload progress lines carry "N/M" ("phase unfused: 200/1000 launches").
        static const QRegularExpression fraction(QStringLiteral("(\\d+)/(\\d+)"));
        const auto m = fraction.match(line);
        if (m.hasMatch() && m.captured(2).toLongLong() > 0) {
            m_progress->setRange(0, 1000);
            m_progress->setValue(
                static_cast<int>(1000 * m.captured(1).toDouble() / m.captured(2).toDouble()));
        }
        QString status = line.trimmed();
        if (status.startsWith(QLatin1String("warpline-record: ")))
            status = status.mid(17);
        m_status->setText(status);
    }
}

void RecordDialog::finished(int exitCode, QProcess::ExitStatus status) {
    readProgress();
    setRunning(false);
    const QString output = m_outputInFlight;
    if (m_stopped) {
        m_status->setText(tr("Stopped."));
        if (QFileInfo::exists(output)) {
            showError(tr("Recording stopped. The part recorded so far is in %1.").arg(output));
        }
        return;
    }
    if (status != QProcess::NormalExit) {
        m_status->clear();
        showError(tr("warpline-record crashed. Its last words: %1").arg(plainMessage(m_stderr)));
        return;
    }
    if (programMode() && exitCode != 0 && QFileInfo::exists(output)) {
        // With -- PROGRAM the status is the program's own; the trace shows what it did.
        m_status->clear();
        showError(tr("The program exited with status %1. The trace of what it ran is in %2.")
                      .arg(exitCode)
                      .arg(output));
        if (m_open->isChecked()) {
            emit traceRecorded(output);
            accept();
        }
        return;
    }
    if (exitCode == kExitUsage) {
        m_status->clear();
        showError(tr("Recording failed, nothing was written: %1").arg(plainMessage(m_stderr)));
        return;
    }
    if (exitCode == kExitWorkloadFailed) {
        m_status->clear();
        showError(tr("The workload failed: %1 The trace was kept in %2 and shows what ran.")
                      .arg(plainMessage(m_stderr), output));
        return;
    }
    if (exitCode != 0) {
        showError(tr("warpline-record exited with status %1: %2")
                      .arg(exitCode)
                      .arg(plainMessage(m_stderr)));
        return;
    }
    m_status->setText(tr("Recorded %1.").arg(output));
    if (m_open->isChecked()) {
        emit traceRecorded(output);
        accept();
    }
}

void RecordDialog::reject() {
    if (isRecording()) {
        if (QMessageBox::question(this, tr("Stop Recording?"),
                                  tr("A recording is running. Stop it and close?")) !=
            QMessageBox::Yes)
            return;
        m_stopped = true;
        m_process->terminate();
        if (!m_process->waitForFinished(5000))
            m_process->kill();
    }
    QDialog::reject();
}

} // namespace warpline::app
