// The window's tables are warpline-stats' reports (issue 29: one report pipeline, two front ends):
// for every committed trace (the corpus, the PyTorch and nsys imports and the sessions of several
// ranks included) and every report of the registry, what the window exports as CSV is byte for
// byte what `warpline-stats TRACE --report all --format csv` writes. A docked report is exported
// from its tab; the others are built on demand from the trace's analyses, as the export menu does.

#include "mainwindow.h"
#include "reportregistry.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace warpline;
using warpline::app::MainWindow;

namespace {

// Each trace file under the test data, and each session in ranks/ (NAME.rankN.warpline or
// NAME-rankN.warpline: the files of one job, opened together).
QList<QStringList> committedTraces() {
    QList<QStringList> traces;
    const QStringList patterns = {"*.warpline", "*.sqlite", "*.json", "*.json.gz"};
    QDirIterator files(WARPLINE_TEST_DATA, patterns, QDir::Files, QDirIterator::Subdirectories);
    QStringList all;
    while (files.hasNext())
        all << files.next();
    all.sort();
    QMap<QString, QStringList> sessions;
    for (const QString& path : std::as_const(all)) {
        if (!path.contains(QLatin1String("/ranks/"))) {
            traces << QStringList{path};
            continue;
        }
        QString job = path;
        job.remove(QRegularExpression(QStringLiteral("rank\\d+\\.warpline$")));
        sessions[job] << path;
    }
    for (const QStringList& session : std::as_const(sessions))
        traces << session;
    return traces;
}

// The traces the test compares: all of them, or under the sanitizers those of at most
// WARPLINE_PARITY_MAX_BYTES in all (tests/app.cmake says why).
QList<QStringList> comparedTraces() {
    QList<QStringList> traces = committedTraces();
#ifdef WARPLINE_PARITY_MAX_BYTES
    const qsizetype all = traces.size();
    traces.removeIf([](const QStringList& paths) {
        qint64 bytes = 0;
        for (const QString& path : paths)
            bytes += QFileInfo(path).size();
        return bytes > WARPLINE_PARITY_MAX_BYTES;
    });
    qInfo("Sanitizer build: %lld of %lld traces compared, those of at most %lld bytes (make test "
          "compares all of them)",
          qlonglong(traces.size()), qlonglong(all), qlonglong(WARPLINE_PARITY_MAX_BYTES));
#endif
    return traces;
}

QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll()
                                       : QByteArray("(missing: " + path.toUtf8() + ")");
}

} // namespace

class TestReportParity : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
#ifndef WARPLINE_STATS
        QSKIP("warpline-stats is not built");
#endif
    }

    void windowExportsAreTheCliReports_data() {
        QTest::addColumn<QStringList>("paths");
        const QList<QStringList> traces = comparedTraces();
        QVERIFY(!traces.isEmpty());
        for (const QStringList& paths : traces) {
            const QString name = QDir(WARPLINE_TEST_DATA).relativeFilePath(paths.front());
            QTest::newRow(qPrintable(name)) << paths;
        }
    }

    void windowExportsAreTheCliReports() {
#ifdef WARPLINE_STATS
        QFETCH(QStringList, paths);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QProcess stats;
        stats.start(WARPLINE_STATS, paths + QStringList{"--report", "all", "--format", "csv", "-o",
                                                        dir.filePath("cli")});
        QVERIFY(stats.waitForFinished(300000));
        QVERIFY2(stats.exitCode() == 0, stats.readAllStandardError().constData());

        MainWindow w;
        if (paths.size() == 1)
            w.openTrace(paths.front());
        else
            w.openTraces(paths);
        QVERIFY(QTest::qWaitFor(
            [&] {
                return (w.page() == MainWindow::Page::Trace && w.trace() &&
                        !w.trace()->reports.empty()) ||
                       w.page() == MainWindow::Page::Error;
            },
            300000));
        QCOMPARE(w.page(), MainWindow::Page::Trace);
        int docked = 0;
        for (const model::ReportDef& report : model::ReportRegistry::all()) {
            const QString id = QString::fromUtf8(report.name.data(), qsizetype(report.name.size()));
            const QString out = dir.filePath(QStringLiteral("window_%1.csv").arg(id));
            QString error;
            QVERIFY2(w.exportReport(id, out, model::TableFormat::Csv, &error), qPrintable(error));
            const QByteArray cli = readAll(dir.filePath(QStringLiteral("cli_%1.csv").arg(id)));
            QVERIFY2(readAll(out) == cli, qPrintable(QStringLiteral("%1 differs").arg(id)));
            docked += w.trace()->report(id) != nullptr;
        }
        QVERIFY(docked >= 10); // most of them came from the window's own tabs
#endif
    }
};

QTEST_MAIN(TestReportParity)
#include "tst_reportparity.moc"
