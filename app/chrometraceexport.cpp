#include "chrometraceexport.h"

#include "chromeexport.h"

#include <QApplication>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QMessageBox>
#include <QProgressDialog>
#include <QSettings>
#include <QWidget>
#include <cmath>

namespace warpline::app {

QString ChromeTraceExport::write(const model::TraceStore& store, const QString& path,
                                 QWidget* progressParent) {
    std::unique_ptr<QProgressDialog> progress;
    if (progressParent) {
        progress = std::make_unique<QProgressDialog>(
            QObject::tr("Writing %1…").arg(QFileInfo(path).fileName()), QObject::tr("Cancel"), 0,
            1000, progressParent);
        progress->setWindowModality(Qt::WindowModal);
        progress->setMinimumDuration(500);
    }
    model::ChromeExportOptions options;
    options.progress = [&](double fraction) {
        if (!progress)
            return true;
        progress->setValue(static_cast<int>(std::lround(fraction * 1000)));
        QApplication::processEvents();
        return !progress->wasCanceled();
    };
    try {
        model::writeChromeTraceFile(QFile::encodeName(path).toStdString(), store, options);
    } catch (const model::ExportCancelled&) {
        return QObject::tr("The export was cancelled; %1 was not written.").arg(path);
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

QString ChromeTraceExport::run(QWidget* parent,
                               const std::shared_ptr<const views::LoadedTrace>& trace) {
    if (!trace || !trace->store)
        return {};
    QSettings settings;
    const QString dir =
        settings.value(QStringLiteral("lastDirectory"), QDir::homePath()).toString();
    const QString suggested =
        QDir(dir).filePath(QFileInfo(trace->path).completeBaseName() + QStringLiteral(".json"));
    QString path = QFileDialog::getSaveFileName(
        parent, QObject::tr("Export Chrome Trace"), suggested,
        QObject::tr("Chrome trace JSON for Perfetto and chrome://tracing (*.json)"));
    if (path.isEmpty())
        return {};
    if (QFileInfo(path).suffix().isEmpty())
        path += QStringLiteral(".json");
    const QString error = write(*trace->store, path, parent);
    if (!error.isEmpty()) {
        QMessageBox::warning(parent, QObject::tr("Export Chrome Trace"), error);
        return {};
    }
    return path;
}

} // namespace warpline::app
