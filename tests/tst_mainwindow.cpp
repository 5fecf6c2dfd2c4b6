// The warpline window as a user meets it: a bad or missing file shows an error page with the
// reason (never an empty window); a trace shows the timeline and the tables; selecting a
// kernel-summary row highlights that kernel's instances and next/previous step through them;
// Ctrl+F finds kernels; exporting writes the same CSV as warpline-stats; loading can be cancelled
// and a newer load wins; the record dialog lists workloads and reports recorder errors in words.
// Several traces (a folder of them, several files, a drop) open as one session grouped by rank; a
// load that fails over a shown trace says why and keeps that trace.

#include "charts/flamegraph.h"
#include "charts/rooflinechart.h"
#include "details/cpusamplespanel.h"
#include "details/detailspanel.h"
#include "find/findbar.h"
#include "mainwindow.h"
#include "rankjobgen.h"
#include "recorddialog.h"
#include "tables/reportview.h"
#include "tables/tablemodel.h"
#include "timeline/overviewstrip.h"
#include "timeline/timelinelegend.h"
#include "timeline/timelineviewport.h"
#include "timeline/timelinewidget.h"
#include "viewstracefixture.h"
#include "workloadcatalog.h"

#include <QDockWidget>
#include <QLabel>
#include <QLineEdit>
#include <QMimeData>
#include <QProcess>
#include <QScopeGuard>
#include <QSettings>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QStatusBar>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

using namespace warpline;
using warpline::app::MainWindow;

class TestMainWindow : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_fixture;

    bool waitLoaded(MainWindow& w) {
        return QTest::qWaitFor(
            [&] {
                // Loaded = the analyses arrived too (the timeline shows before them).
                return (w.page() == MainWindow::Page::Trace && w.trace() &&
                        !w.trace()->reports.empty()) ||
                       w.page() == MainWindow::Page::Error;
            },
            20000);
    }

#ifdef WARPLINE_STATS
    // The window's CSV export of report `id` (into `dir`), and what `warpline-stats TRACE
    // --report id --format csv` with `extra` arguments prints: the two should be the same bytes.
    struct ExportAndStats {
        QString error; // the export's, when it failed
        int exitCode = -1;
        QByteArray exported, printed;
    };
    static ExportAndStats exportAndStats(const MainWindow& w, const QString& trace,
                                         const QString& id, const QStringList& extra,
                                         const QString& dir) {
        ExportAndStats r;
        const QString out = QDir(dir).filePath(id + ".csv");
        if (!w.exportReport(id, out, model::TableFormat::Csv, &r.error))
            return r;
        QProcess stats;
        stats.start(WARPLINE_STATS,
                    QStringList{trace} + extra + QStringList{"--report", id, "--format", "csv"});
        if (stats.waitForFinished(30000))
            r.exitCode = stats.exitCode();
        r.printed = stats.readAllStandardOutput();
        QFile f(out);
        if (f.open(QIODevice::ReadOnly))
            r.exported = f.readAll();
        return r;
    }
#endif

    QString writeScript(const QString& name, const QString& body) {
        const QString path = m_dir.filePath(name);
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly))
            return {};
        f.write(("#!/bin/sh\n" + body).toUtf8());
        f.close();
        f.setPermissions(f.permissions() | QFileDevice::ExeOwner);
        return path;
    }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        // Settings go to a throwaway place, not the user's.
        qputenv("XDG_CONFIG_HOME", m_dir.filePath("config").toUtf8());
        QCoreApplication::setOrganizationName("WarplineTest");
        QSettings().remove("record/host"); // the Record dialog would list that host's workloads
        QCoreApplication::setApplicationName("tst_mainwindow");
        m_fixture = m_dir.filePath("fixture.warpline");
        viewsfixture::writeTrace(m_fixture);
    }

    void badFilesShowAnErrorPage_data() {
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<QString>("name");
        QTest::newRow("not SQLite") << QByteArray("this is not a trace\n") << "notes.warpline";
        QTest::newRow("empty file") << QByteArray() << "empty.warpline";
        QTest::newRow("missing file") << QByteArray("<missing>") << "missing.warpline";
    }
    void badFilesShowAnErrorPage() {
        QFETCH(QByteArray, content);
        QFETCH(QString, name);
        const QString path = m_dir.filePath(name);
        if (content != "<missing>") {
            QFile f(path);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(content);
        }
        MainWindow w;
        w.resize(1200, 800);
        w.show();
        QSignalSpy failed(&w, &MainWindow::loadFailed);
        w.openTrace(path);
        QVERIFY(waitLoaded(w));
        QCOMPARE(w.page(), MainWindow::Page::Error);
        QCOMPARE(failed.size(), 1);
        QVERIFY2(w.errorText().contains(name), qPrintable(w.errorText()));
        QVERIFY2(w.errorText().contains("Check that the file"), qPrintable(w.errorText()));
        // The window shows the error, not an empty page: the grabbed image has text pixels.
        const QImage image = w.grab().toImage();
        QVERIFY(!image.isNull());
    }

    void aTraceShowsTimelineAndTables() {
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        QSignalSpy loaded(&w, &MainWindow::traceLoaded);
        w.openTrace(m_fixture);
        QVERIFY(waitLoaded(w));
        QCOMPARE(w.page(), MainWindow::Page::Trace);
        QCOMPARE(loaded.size(), 1);
        QVERIFY(w.trace());
        QCOMPARE(w.reportView("kernels")->model()->rowCount(), 2);
        QVERIFY(w.reportView("sync-stalls")->model()->rowCount() >= 1);
        QVERIFY(w.reportView("insights"));
        // The fixture has no training steps: its last finding, as in warpline-stats, says why.
        QVERIFY(!w.trace()->insights.empty());
        QCOMPARE(w.trace()->insights.back().kind, model::InsightKind::NoSteps);
        QVERIFY(w.trace()->insights.back().text.starts_with("No training steps: "));
        // It opens on the GPU's busy time: every GPU op is in view.
        const model::TraceStore& store = *w.trace()->store;
        for (const model::GpuTrack& t : store.gpuTracks()) {
            QVERIFY(t.firstStart() >= w.timeline()->viewport().visibleStart());
            QVERIFY(t.lastEnd() <= w.timeline()->viewport().visibleEnd());
        }
        // Recent files remember it.
        QVERIFY(QSettings()
                    .value("recentFiles")
                    .toStringList()
                    .contains(QFileInfo(m_fixture).absoluteFilePath()));
        const QString shot = m_dir.filePath("shot.png");
        QVERIFY(w.saveScreenshot(shot));
        QImage image(shot);
        QCOMPARE(image.size(), w.size() * w.devicePixelRatio());
    }

    void kernelRowHighlightsItsInstances() {
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        w.openTrace(m_fixture);
        QVERIFY(waitLoaded(w));
        views::ReportView* kernels = w.reportView("kernels");
        const int nameColumn = kernels->report().table.columnIndex("Name");
        int gemmRow = -1;
        for (int r = 0; r < kernels->model()->rowCount(); ++r) {
            if (kernels->model()->index(r, nameColumn).data().toString().startsWith("gemm_kernel"))
                gemmRow = r;
        }
        QVERIFY(gemmRow >= 0);
        kernels->selectSourceRow(gemmRow);
        const views::HighlightSet& set = w.timeline()->highlights();
        QCOMPARE(set.size(), size_t{100});
        const model::TraceStore& store = *w.trace()->store;
        for (const model::EventId& e : set.events())
            QCOMPARE(QString::fromStdString(
                         store.text(store.gpuTracks()[e.ref.track].name(e.ref.index))),
                     QString("gemm_kernel(float*, float*, int)"));
        QVERIFY(w.findBar()->isVisible());
        QCOMPARE(w.findBar()->statusText(), QString("100 matches"));
        // Next from the fitted view: the first instance, then the second; previous goes back.
        w.nextHighlight();
        QCOMPARE(w.highlightIndex(), 0);
        QCOMPARE(w.timeline()->selection(), set.at(0));
        QCOMPARE(w.details()->value("Name"), QString("gemm_kernel(float*, float*, int)"));
        w.nextHighlight();
        QCOMPARE(w.timeline()->selection(), set.at(1));
        QCOMPARE(w.findBar()->statusText(), QString("2 of 100"));
        w.previousHighlight();
        w.previousHighlight();
        QCOMPARE(w.highlightIndex(), 99); // wraps around
        // The selected instance is on screen and wide enough to click.
        const QRectF r = w.timeline()->eventRect(set.at(99));
        QVERIFY(r.width() >= 4);
        QVERIFY(r.left() >= w.timeline()->labelWidth());
    }

    void doubleClickingAStallZoomsToIt() {
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        w.openTrace(m_fixture);
        QVERIFY(waitLoaded(w));
        views::ReportView* syncs = w.reportView("sync-stalls");
        QVERIFY(syncs->model()->rowCount() >= 1);
        const model::RowTarget target = syncs->model()->target(0);
        QVERIFY(target.hasRange());
        QVERIFY(target.event.valid());
        w.findChild<QDockWidget*>("dock-sync-stalls")->raise();
        QVERIFY(QTest::qWaitFor([&] { return syncs->view()->isVisible(); }, 2000));
        const QModelIndex index = syncs->proxy()->mapFromSource(syncs->model()->index(0, 0));
        syncs->view()->scrollTo(index);
        const QRect cell = syncs->view()->visualRect(index);
        // A double-click as the window system delivers it: press, release, then the double click.
        QTest::mouseClick(syncs->view()->viewport(), Qt::LeftButton, {}, cell.center());
        QTest::mouseDClick(syncs->view()->viewport(), Qt::LeftButton, {}, cell.center());
        const views::TimelineViewport& vp = w.timeline()->viewport();
        QVERIFY(vp.visibleStart() <= target.t0 && vp.visibleEnd() >= target.t1);
        QVERIFY(vp.visibleDuration() < 2 * (target.t1 - target.t0));
        QCOMPARE(w.timeline()->selection(), target.event);
        QCOMPARE(w.details()->value("Name"), QString("cudaDeviceSynchronize"));

        // An insight row highlights the events that show it.
        views::ReportView* insights = w.reportView("insights");
        int linked = -1;
        for (int r = 0; r < insights->model()->rowCount() && linked < 0; ++r) {
            if (!insights->model()->target(r).related.empty())
                linked = r;
        }
        QVERIFY2(linked >= 0, "no insight row of the fixture links to its events");
        insights->selectSourceRow(linked);
        QCOMPARE(w.timeline()->highlights().size(),
                 insights->model()->target(linked).related.size());
    }

    // A real PyTorch training loop (tests/data/torch-gpt-train.warpline: 5 s of start-up, then 30
    // steps): the window opens on steps of the steady state, not on start-up; the overview strip
    // shows where that is in the whole trace and moves the view on a click; the Steps table lists
    // every step and zooms to one on a double-click, as the NVTX table does for "step N".
    // Statistics over a range: the Kernels, CUDA API, Memory operations, sync-stall, GPU-gap and
    // run-ahead tables recompute over the steady state (or the visible range), their docks'
    // titles name it, and an export writes what the table shows. Back to the whole trace: the
    // tables as loaded.
    void statisticsOverARange() {
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        w.openTrace(WARPLINE_TEST_DATA "/torch-gpt-train.warpline");
        QVERIFY(waitLoaded(w));
        const model::TraceStore& store = *w.trace()->store;
        QVERIFY(w.trace()->steps && !w.trace()->steps->empty());
        const auto instances = [](const model::Table& table) {
            size_t column = 0;
            while (column < table.columnCount() && table.columns()[column].name != "Instances")
                ++column;
            uint64_t n = 0;
            for (size_t r = 0; r < table.rowCount(); ++r)
                if (const auto* v = std::get_if<int64_t>(&table.cell(r, column)))
                    n += static_cast<uint64_t>(*v);
            return n;
        };
        const uint64_t whole = instances(w.reportView("kernels")->report().table);
        QCOMPARE(whole, uint64_t(store.kernelCount()));

        w.setStatisticsScope(QStringLiteral("steady state"));
        QCOMPARE(w.statisticsScope(), QStringLiteral("steady state"));
        const model::TimeWindow steady = w.trace()->steps->steadyWindow();
        uint64_t expected = 0;
        for (const auto& row : model::kernelSummary(store, model::KernelGrouping::Name, steady))
            expected += row.stats.count;
        const uint64_t shown = instances(w.reportView("kernels")->report().table);
        QCOMPARE(shown, expected);
        QVERIFY(shown < whole);
        auto* dock = w.findChild<QDockWidget*>("dock-kernels");
        QVERIFY(dock);
        QVERIFY2(dock->windowTitle().startsWith("Kernels · steady state, "),
                 qPrintable(dock->windowTitle()));
        QVERIFY(w.findChild<QDockWidget*>("dock-api")->windowTitle().contains("steady state"));
        // The NVTX table counts the ranges that start in the steady state only: 4 a step in the
        // 29 steady steps, of the 120.
        QVERIFY(
            w.findChild<QDockWidget*>("dock-nvtx-grouped")->windowTitle().contains("steady state"));
        uint64_t ranges = 0;
        for (const auto& row : model::nvtxSummary(store, steady))
            ranges += row.stats.count;
        QCOMPARE(instances(w.reportView("nvtx-grouped")->report().table), ranges);
        QVERIFY(ranges < store.nvtxEventCount());
        // The sync stalls and the GPU gaps are those that start in the steady state: start-up's
        // and teardown's are gone.
        size_t stallsIn = 0;
        for (const model::SyncStall& s : w.trace()->syncStalls->stalls)
            stallsIn += s.start >= steady.t0 && s.start < steady.t1;
        const model::Table& stalls = w.reportView("sync-stalls")->report().table;
        QCOMPARE(size_t(stalls.rowCount()), stallsIn);
        QVERIFY(stallsIn > 0 && stallsIn < w.trace()->syncStalls->stalls.size());
        QVERIFY(
            w.findChild<QDockWidget*>("dock-sync-stalls")->windowTitle().contains("steady state"));
        const model::Table& gaps = w.reportView("gap-list")->report().table;
        QVERIFY(gaps.rowCount() > 0);
        for (size_t r = 0; r < gaps.rowCount(); ++r) {
            const int64_t start = std::get<int64_t>(gaps.cell(r, 1)); // Start (ns)
            QVERIFY2(start >= steady.t0 && start < steady.t1, qPrintable(QString::number(r)));
        }
        // The export is the table shown.
        QTemporaryDir dir;
        const QString csv = dir.filePath("kernels.csv");
        QString error;
        QVERIFY2(w.exportReport("kernels", csv, model::TableFormat::Csv, &error),
                 qPrintable(error));
        QFile f(csv);
        QVERIFY(f.open(QIODevice::ReadOnly));
#ifdef WARPLINE_STATS
        // The same bytes as warpline-stats over the same phase: the tabs, and the NVTX ranges by
        // name (no tab: built for the export over the same range).
        for (const char* id : {"kernels", "api", "memops", "nvtx-grouped", "nvtx", "sync-stalls",
                               "syncs", "gap-list", "gaps", "runahead"}) {
            const auto r = exportAndStats(w, WARPLINE_TEST_DATA "/torch-gpt-train.warpline", id,
                                          {"--phase", "steady"}, dir.path());
            QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
            QCOMPARE(r.exitCode, 0);
            QCOMPARE(r.exported, r.printed);
        }
#else
        QCOMPARE(QString::fromUtf8(f.readAll()).count('\n'),
                 int(w.reportView("kernels")->report().table.rowCount()) + 1);
#endif

        // The visible range: the opening window's five steps hold fewer kernels still.
        w.timeline()->fitOpeningView();
        w.setStatisticsScope(QStringLiteral("visible range"));
        const uint64_t visible = instances(w.reportView("kernels")->report().table);
        QVERIFY2(visible > 0 && visible < shown, qPrintable(QString::number(visible)));
        QVERIFY(dock->windowTitle().contains("visible range"));
        // They follow the view: zoomed to one step, fewer again.
        const model::Step& one = w.trace()->steps->steps[w.trace()->steps->warmupSteps()];
        w.timeline()->setVisibleRange(double(one.start), double(one.end));
        QTRY_VERIFY(instances(w.reportView("kernels")->report().table) < visible);

        w.setStatisticsScope(QStringLiteral("whole trace"));
        QCOMPARE(instances(w.reportView("kernels")->report().table), whole);
        QCOMPARE(dock->windowTitle(), QStringLiteral("Kernels"));

#ifdef WARPLINE_STATS
        // A trace with Python stacks: its Python lines and functions over the steady state too.
        const QString stacks = QStringLiteral(WARPLINE_TEST_DATA "/torch-gpt-stacks.warpline");
        w.openTrace(stacks);
        QVERIFY(waitLoaded(w));
        QCOMPARE(w.statisticsScope(), QStringLiteral("whole trace")); // a new trace: reset
        w.setStatisticsScope(QStringLiteral("steady state"));
        for (const char* id : {"python-lines", "python-functions"}) {
            QVERIFY(w.findChild<QDockWidget*>(QString("dock-") + id)
                        ->windowTitle()
                        .contains("steady state"));
            const auto r = exportAndStats(w, stacks, id, {"--phase", "steady"}, dir.path());
            QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
            QCOMPARE(r.exitCode, 0);
            QCOMPARE(r.exported, r.printed);
        }
#endif
    }

    // A trace recorded with --gpu-metrics on the H100: the GPU metrics tab and chart appear (and
    // go again for a trace without metrics); a dot selects its kernels on the timeline.
    void gpuMetricsChartSelectsKernels() {
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        w.openTrace(WARPLINE_TEST_DATA "/gelu-metrics.warpline");
        QVERIFY(waitLoaded(w));
        QVERIFY(w.trace()->kernelMetrics);
        QVERIFY(w.trace()->report("gpu-metrics"));
        auto* dock = w.findChild<QDockWidget*>("dock-roofline");
        QVERIFY(dock && dock->isVisible());
        auto* chart = qobject_cast<views::RooflineChart*>(dock->widget());
        QVERIFY(chart);
        QCOMPARE(chart->points().size(), size_t(7)); // every GeLU kernel name was sampled
        for (const auto& p : chart->points()) {
            QCOMPARE(p.bound, model::KernelBound::Memory);
            QVERIFY(p.dram > 60 && p.compute < 20);
        }
        // The smallest dot is drawn last (on top): click it.
        const auto& target = chart->points().back();
        const QPoint at = chart->centreOf(target).toPoint();
        QCOMPARE(chart->pointAt(at), static_cast<int>(chart->points().size() - 1));
        QTest::mouseClick(chart, Qt::LeftButton, {}, at);
        size_t instances = 0;
        for (const auto& r : w.trace()->kernelMetrics->rows)
            if (r.name == target.name)
                instances = r.instances;
        QVERIFY(instances > 0);
        QCOMPARE(w.timeline()->highlights().size(), instances);

        w.openTrace(m_fixture); // no metrics: the chart's dock goes
        QVERIFY(QTest::qWaitFor(
            [&] { return w.trace() && !w.trace()->kernelMetrics && !w.trace()->reports.empty(); },
            20000));
        QVERIFY(!dock->isVisible());
    }

    // A trace recorded with --python-stacks: the Python lines and functions tabs; a line's row
    // selects the kernels launched through it.
    void pythonLinesSelectTheirKernels() {
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        w.openTrace(WARPLINE_TEST_DATA "/torch-gpt-stacks.warpline");
        QVERIFY(waitLoaded(w));
        QVERIFY(w.trace()->report("python-functions"));
        const views::ReportTable* lines = w.trace()->report("python-lines");
        QVERIFY(lines && lines->table.rowCount() > 10);
        auto* dock = w.findChild<QDockWidget*>("dock-python-lines");
        QVERIFY(dock && dock->isVisible());
        // The row of torch_gpt.py's MLP line.
        const int location = lines->table.columnIndex("Location");
        int row = -1;
        for (size_t r = 0; r < lines->table.rowCount(); ++r)
            if (std::get<std::string>(lines->table.cell(r, static_cast<size_t>(location))) ==
                "torch_gpt.py:57")
                row = static_cast<int>(r);
        QVERIFY(row >= 0);
        w.reportView("python-lines")->selectSourceRow(row);
        QCOMPARE(w.timeline()->highlights().size(),
                 lines->targets[static_cast<size_t>(row)].related.size());
        QVERIFY(w.timeline()->highlights().size() >= 160);
        // The backward kernels, launched by the autograd engine's thread, are the
        // loss.backward() line's (torch_gpt.py:103): its row selects them all.
        const size_t backward = [&] {
            for (size_t r = 0; r < lines->table.rowCount(); ++r)
                if (std::get<std::string>(lines->table.cell(r, static_cast<size_t>(location))) ==
                    "torch_gpt.py:103")
                    return r;
            return size_t(0);
        }();
        QCOMPARE(std::get<std::string>(lines->table.cell(backward, static_cast<size_t>(location))),
                 std::string("torch_gpt.py:103"));
        QVERIFY(std::get<double>(lines->table.cell(backward, 1)) > 50.0);
        w.reportView("python-lines")->selectSourceRow(static_cast<int>(backward));
        QCOMPARE(w.timeline()->highlights().size(), lines->targets[backward].related.size());
        QVERIFY(w.timeline()->highlights().size() > 3000);
    }

    // warpline --report ID: the report's tab comes to the front once the trace is loaded; an id
    // the trace has no report for says so.
    void showReportBringsItsTabToTheFront() {
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        w.showReport(QStringLiteral("python-lines")); // before the trace, as from the command line
        w.openTrace(WARPLINE_TEST_DATA "/torch-gpt-stacks.warpline");
        QVERIFY(waitLoaded(w));
        auto* lines = w.findChild<QDockWidget*>("dock-python-lines");
        auto* kernels = w.findChild<QDockWidget*>("dock-kernels");
        QVERIFY(lines && kernels);
        QVERIFY(QTest::qWaitFor([&] { return !lines->visibleRegion().isEmpty(); }, 5000));
        QVERIFY(kernels->visibleRegion().isEmpty()); // tabbed behind it
        w.showReport(QStringLiteral("kernels"));
        QVERIFY(QTest::qWaitFor([&] { return !kernels->visibleRegion().isEmpty(); }, 5000));
        w.showReport(QStringLiteral("bogus"));
        QVERIFY2(w.statusBar()->currentMessage().contains("no \"bogus\" report"),
                 qPrintable(w.statusBar()->currentMessage()));
    }

    // A trace with CPU samples: its dock holds the flame graph and top-down table of a scope
    // beside the table by function; activating the input-bound finding shows the samples of the
    // steady state's GPU idle time, the rows `warpline-stats --report cpu-tree --phase steady
    // --gpu-idle` prints.
    void idleFindingOpensTheFlameGraphOfItsSamples() {
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        w.openTrace(WARPLINE_TEST_DATA "/corpus/input-slow-loader-sampled.warpline");
        QVERIFY(waitLoaded(w));
        views::CpuSamplesPanel* panel = w.cpuSamplesPanel();
        QVERIFY(panel);
        QCOMPARE(panel->scope(), views::CpuSamplesPanel::Scope::WholeTrace);
        const model::TraceStore& store = *w.trace()->store;
        // Hidden behind another dock, the panel builds nothing; shown, the whole trace's tree.
        QVERIFY(panel->visibleRegion().isEmpty());
        QCOMPARE(panel->flameGraph()->tree().samples(), uint64_t{0});
        w.showReport(QStringLiteral("cpu-samples"));
        QVERIFY(QTest::qWaitFor([&] { return panel->flameGraph()->tree().samples() > 0; }, 5000));
        const uint64_t all = panel->flameGraph()->tree().samples();
        QCOMPARE(all, model::cpuSampleTree(store, model::TimeWindow{}).samples());
        int row = -1;
        for (size_t i = 0; i < w.trace()->insights.size(); ++i)
            if (row < 0 && w.trace()->insights[i].kind == model::InsightKind::InputBound)
                row = static_cast<int>(i);
        QVERIFY(row >= 0);
        emit w.reportView("insights")->sourceRowActivated(row);
        QCOMPARE(panel->scope(), views::CpuSamplesPanel::Scope::GpuIdleSteady);
        const model::CpuSampleTree expected =
            model::cpuSampleTree(store, w.trace()->steps->steadyWindow(), true);
        const views::FlameGraph* flame = panel->flameGraph();
        QCOMPARE(flame->tree().samples(), expected.samples());
        QVERIFY(expected.samples() > 0 && expected.samples() < all);
        QVERIFY2(flame->caption().contains("GPU's idle time in the steady state"),
                 qPrintable(flame->caption()));
        QCOMPARE(panel->table()->report().table.rowCount(),
                 model::cpuTreeTable(store, expected).rowCount());
        auto* dock = w.findChild<QDockWidget*>("dock-cpu-samples");
        QVERIFY(dock);
        QVERIFY(QTest::qWaitFor([&] { return !flame->visibleRegion().isEmpty(); }, 5000));
        // The widest frame under the root is drawn, and clicking it focuses it.
        const uint32_t top = flame->tree().nodes[0].children.front();
        const QRectF box = flame->nodeRect(top);
        QVERIFY(box.width() > 100);
        QCOMPARE(flame->nodeAt(box.center()), static_cast<int>(top));
        QTest::mouseClick(const_cast<views::FlameGraph*>(flame), Qt::LeftButton, {},
                          box.center().toPoint());
        QCOMPARE(flame->focusedNode(), top);
        QVERIFY(flame->toolTipFor(top).contains("samples"));
        if (const QByteArray dir = qgetenv("WARPLINE_SCREENSHOT_DIR"); !dir.isEmpty())
            w.grab().save(QString::fromLocal8Bit(dir) + "/cpu-samples-dock.png");
    }

    void realTrainingLoopOpensOnItsSteadyState() {
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        w.openTrace(WARPLINE_TEST_DATA "/torch-gpt-train.warpline");
        QVERIFY(waitLoaded(w));
        QVERIFY(w.trace()->steps);
        const model::StepAnalysis& steps = *w.trace()->steps;
        QCOMPARE(steps.steps.size(), size_t(30));
        const views::TimelineViewport& vp = w.timeline()->viewport();
        const model::Step& first = steps.steps[steps.firstSteady];
        // Five steady steps, with a small margin; no start-up, no warm-up step.
        const double warmupMiddle = 0.5 * double(steps.steps[0].start + steps.steps[0].end);
        QVERIFY(vp.visibleStart() > warmupMiddle);
        QVERIFY(vp.visibleStart() <= double(first.start));
        QVERIFY(vp.visibleEnd() >= double(steps.steps[steps.firstSteady + 4].end));
        QVERIFY(vp.visibleDuration() < 0.2 * double(steps.steadyWindow().t1 - steps.traceBegin));
        // The overview marks the view and moves it: a click at the middle of the start-up.
        views::OverviewStrip* overview = w.overview();
        QVERIFY(overview->isVisible());
        // Its histogram came with the trace, computed on the loading thread, not the GUI's.
        QVERIFY(w.trace()->gpuActivity.has_value());
        const model::GpuActivity activity = model::gpuActivity(*w.trace()->store);
        QCOMPARE(w.trace()->gpuActivity->busyShares.size(), views::OverviewStrip::kBins);
        QVERIFY(w.trace()->gpuActivity->busyShares == activity.busyShares);
        // So did the range "Fit GPU Activity" shows.
        QVERIFY(!activity.empty);
        QCOMPARE(w.trace()->gpuActivity->t0, activity.t0);
        QCOMPARE(w.trace()->gpuActivity->t1, activity.t1);
        QCOMPARE(overview->viewStart(), vp.visibleStart());
        QCOMPARE(overview->viewEnd(), vp.visibleEnd());
        const double duration = vp.visibleDuration();
        const double startupMiddle = 0.5 * double(steps.traceBegin + steps.steps[0].start);
        QTest::mouseClick(overview, Qt::LeftButton, {},
                          QPoint(int(overview->xOfTime(startupMiddle)), overview->height() / 2));
        QVERIFY(std::abs(0.5 * (vp.visibleStart() + vp.visibleEnd()) - startupMiddle) <
                2 * (double(steps.traceEnd - steps.traceBegin) / overview->width()));
        QVERIFY(std::abs(vp.visibleDuration() - duration) < 1e-6 * duration);
        QCOMPARE(overview->viewStart(), vp.visibleStart());
        // G fits the whole steady state.
        w.timeline()->setFocus();
        QTest::keyClick(w.timeline(), Qt::Key_G);
        QVERIFY(vp.visibleStart() <= double(first.start));
        QVERIFY(vp.visibleEnd() >= double(steps.steps.back().end));
        QVERIFY(vp.visibleStart() > warmupMiddle);

        // Steps: one row a step, then median and p95; step 0 is warm-up.
        views::ReportView* table = w.reportView("steps");
        QVERIFY(table);
        QCOMPARE(table->model()->rowCount(), 32);
        const model::RowTarget target = table->model()->target(7);
        QCOMPARE(target.t0, steps.steps[7].start);
        QCOMPARE(target.event, model::EventId::nvtx(steps.steps[7].range));
        w.findChild<QDockWidget*>("dock-steps")->raise();
        QVERIFY(QTest::qWaitFor([&] { return table->view()->isVisible(); }, 2000));
        const QModelIndex index = table->proxy()->mapFromSource(table->model()->index(7, 0));
        table->view()->scrollTo(index);
        const QRect cell = table->view()->visualRect(index);
        QTest::mouseClick(table->view()->viewport(), Qt::LeftButton, {}, cell.center());
        QTest::mouseDClick(table->view()->viewport(), Qt::LeftButton, {}, cell.center());
        QVERIFY(vp.visibleStart() <= double(steps.steps[7].start));
        QVERIFY(vp.visibleEnd() >= double(steps.steps[7].end));
        QVERIFY(vp.visibleDuration() < 2 * double(steps.steps[7].duration()));
        QCOMPARE(w.timeline()->selection(), target.event);

        // NVTX: "step 0" ... "step 29" are one row, "step N", whose instances it highlights and
        // whose median instance a double-click shows.
        views::ReportView* nvtx = w.reportView("nvtx-grouped");
        int stepRow = -1;
        for (int r = 0; r < nvtx->model()->rowCount(); ++r) {
            if (nvtx->model()
                    ->data(nvtx->model()->index(r, nvtx->model()->columnCount() - 1))
                    .toString() == "step N")
                stepRow = r;
        }
        QVERIFY(stepRow >= 0);
        const model::RowTarget steprow = nvtx->model()->target(stepRow);
        QCOMPARE(steprow.related.size(), size_t(30));
        QVERIFY(steprow.hasRange());
        nvtx->selectSourceRow(stepRow);
        QCOMPARE(w.timeline()->highlights().size(), size_t(30));
    }

    void findStepsThroughMatches() {
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        w.openTrace(m_fixture);
        QVERIFY(waitLoaded(w));
        QTest::keyClick(&w, Qt::Key_F, Qt::ControlModifier);
        QVERIFY(w.findBar()->isVisible());
        QTest::keyClicks(w.findBar()->edit(), "relu");
        QVERIFY(QTest::qWaitFor([&] { return w.timeline()->highlights().size() == 100; }, 3000));
        QTest::keyClick(w.findBar()->edit(), Qt::Key_Return);
        QCOMPARE(w.details()->value("Name"), QString("relu_kernel(float*, int)"));
        const model::EventId first = w.timeline()->selection();
        QTest::keyClick(w.findBar()->edit(), Qt::Key_Return);
        QVERIFY(w.timeline()->selection() != first);
        QTest::keyClick(w.findBar()->edit(), Qt::Key_Return, Qt::ShiftModifier);
        QCOMPARE(w.timeline()->selection(), first);
        QTest::keyClick(w.findBar()->edit(), Qt::Key_Escape);
        QVERIFY(!w.findBar()->isVisible());
        QVERIFY(w.timeline()->highlights().empty());
    }

    void exportWritesTheSameCsvAsWarplineStats() {
#ifndef WARPLINE_STATS
        QSKIP("warpline-stats is not built");
#else
        MainWindow w;
        w.openTrace(m_fixture);
        QVERIFY(waitLoaded(w));
        for (const char* id : {"kernels", "api", "nvtx"}) {
            const auto r = exportAndStats(w, m_fixture, id, {}, m_dir.path());
            QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
            QCOMPARE(r.exitCode, 0);
            QCOMPARE(r.exported, r.printed);
        }
#endif
    }

    void droppingAFileOpensIt() {
        MainWindow w;
        w.resize(1200, 800);
        w.show();
        QMimeData mime;
        mime.setUrls({QUrl::fromLocalFile(m_fixture)});
        QDragEnterEvent enter(QPoint(400, 300), Qt::CopyAction, &mime, Qt::LeftButton,
                              Qt::NoModifier);
        QApplication::sendEvent(&w, &enter);
        QVERIFY(enter.isAccepted());
        QDropEvent drop(QPointF(400, 300), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(&w, &drop);
        QVERIFY(waitLoaded(w));
        QCOMPARE(w.page(), MainWindow::Page::Trace);
        QCOMPARE(w.trace()->path, QFileInfo(m_fixture).absoluteFilePath());
    }

    // Writes a generated rank job (4 ranks, rank 2 slow) into a new folder and returns its files.
    QStringList writeRanks(const QString& folder, int ranks = 4) {
        bench::RankJobSpec spec;
        spec.ranks = ranks;
        spec.steps = 4;
        spec.kernelsPerStep = 6;
        spec.slowRank = 2;
        QStringList out;
        for (const std::string& f : bench::writeRankJob(m_dir.filePath(folder).toStdString(), spec))
            out << QString::fromStdString(f);
        return out;
    }

    static int rankHeaders(const MainWindow& w) {
        int n = 0;
        for (const views::TimelineRow& r : w.timeline()->rows().rows())
            n += r.kind == views::RowKind::SourceHeader;
        return n;
    }

    void openingAFolderOfRanksLoadsOneSession() {
        const QStringList files = writeRanks("job");
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        QSignalSpy loaded(&w, &MainWindow::traceLoaded);
        w.openTraces({m_dir.filePath("job")});
        QVERIFY(waitLoaded(w));
        QCOMPARE(w.page(), MainWindow::Page::Trace);
        QCOMPARE(loaded.size(), 1);
        const model::TraceStore& store = *w.trace()->store;
        QVERIFY(store.isSession());
        QCOMPARE(store.sources().size(), size_t{4});
        QCOMPARE(w.trace()->paths.size(), 4);
        QCOMPARE(w.windowTitle(), QString("rank_0.warpline + 3 more — 4 ranks — Warpline"));
        QCOMPARE(rankHeaders(w), 4);
        // Above the timeline, the first finding is which rank the others wait for.
        QString findings;
        for (const QLabel* label : w.findChildren<QLabel*>()) {
            if (label->text().startsWith(QStringLiteral("▸ ")))
                findings = label->text();
        }
        QVERIFY2(findings.section('\n', 0, 0).contains("rank 2"), qPrintable(findings));
        // One store over every rank: 4 ranks x 4 steps x (6 compute kernels + an all-reduce).
        QCOMPARE(store.kernelCount(), size_t{4 * 4 * (6 + 1)});
        // The cross-rank reports are docked like every other report, and raised.
        views::ReportView* ranks = w.reportView("ranks");
        QVERIFY2(
            ranks,
            "no Ranks report: the cross-rank reports (model/analyses/crossrank.h) are missing");
        QCOMPARE(ranks->model()->rowCount(), 4);
        QVERIFY(w.reportView("rank-steps"));
        QVERIFY(w.reportView("rank-steps")->model()->rowCount() > 0);
        auto* dock = qobject_cast<QDockWidget*>(ranks->parentWidget());
        QVERIFY(dock);
        QVERIFY(dock->isVisible());
        // The folder is remembered, and opens again from Open Recent.
        QVERIFY(QSettings()
                    .value("recentFiles")
                    .toStringList()
                    .contains(QFileInfo(m_dir.filePath("job")).absoluteFilePath()));

        // A single trace after it: no rank headers, the session's docks go away.
        w.openTrace(m_fixture);
        QVERIFY(QTest::qWaitFor(
            [&] {
                return w.trace() && !w.trace()->store->isSession() && !w.trace()->reports.empty();
            },
            20000));
        QCOMPARE(rankHeaders(w), 0);
        QCOMPARE(w.windowTitle(), QString("fixture.warpline — Warpline"));
        QVERIFY(!dock->isVisible());
    }

    void openingSeveralFilesLoadsOneSession() {
        const QStringList files = writeRanks("several", 3);
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        // What File > Open Several… does with the dialog's answer.
        w.openTraces({files[2], files[0], files[1]});
        QVERIFY(waitLoaded(w));
        QCOMPARE(w.page(), MainWindow::Page::Trace);
        const model::TraceStore& store = *w.trace()->store;
        QCOMPARE(store.sources().size(), size_t{3});
        for (int r = 0; r < 3; ++r)
            QCOMPARE(store.sources()[r].rank, r);
        QCOMPARE(w.windowTitle(), QString("rank_2.warpline + 2 more — 3 ranks — Warpline"));
        QCOMPARE(rankHeaders(w), 3);
        // Several files are not one recent entry.
        QVERIFY(!QSettings().value("recentFiles").toStringList().contains(files[2]));
    }

    void droppingSeveralFilesOpensOneSession() {
        const QStringList files = writeRanks("dropped", 2);
        MainWindow w;
        w.resize(1200, 800);
        w.show();
        QMimeData mime;
        mime.setUrls({QUrl::fromLocalFile(files[0]), QUrl::fromLocalFile(files[1])});
        QDragEnterEvent enter(QPoint(400, 300), Qt::CopyAction, &mime, Qt::LeftButton,
                              Qt::NoModifier);
        QApplication::sendEvent(&w, &enter);
        QVERIFY(enter.isAccepted());
        QDropEvent drop(QPointF(400, 300), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(&w, &drop);
        QVERIFY(waitLoaded(w));
        QCOMPARE(w.page(), MainWindow::Page::Trace);
        QCOMPARE(w.trace()->store->sources().size(), size_t{2});
    }

    void aFailedOpenKeepsTheShownTrace_data() {
        QTest::addColumn<QString>("what");
        QTest::addColumn<QString>("named");
        QTest::newRow("folder without traces") << "empty-folder"
                                               << "empty-folder";
        QTest::newRow("missing file among several") << "missing"
                                                    << "no-such-rank.warpline";
        QTest::newRow("missing folder") << "missing-folder"
                                        << "no-such-job";
    }
    void aFailedOpenKeepsTheShownTrace() {
        QFETCH(QString, what);
        QFETCH(QString, named);
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        w.openTrace(m_fixture);
        QVERIFY(waitLoaded(w));
        const auto shown = w.trace();
        QSignalSpy failed(&w, &MainWindow::loadFailed);
        if (what == "empty-folder") {
            QVERIFY(QDir(m_dir.path()).mkpath("empty-folder"));
            QFile notes(m_dir.filePath("empty-folder/notes.txt"));
            QVERIFY(notes.open(QIODevice::WriteOnly));
            w.openTraces({m_dir.filePath("empty-folder")});
        } else if (what == "missing") {
            w.openTraces({m_fixture, m_dir.filePath("no-such-rank.warpline")});
        } else {
            w.openTraces({m_dir.filePath("no-such-job")});
        }
        QVERIFY(QTest::qWaitFor([&] { return failed.size() == 1; }, 20000));
        // The window says what failed, over the trace it still shows.
        QCOMPARE(w.page(), MainWindow::Page::Trace);
        QCOMPARE(w.trace(), shown);
        QVERIFY2(w.errorText().contains(named), qPrintable(w.errorText()));
        QVERIFY2(w.errorText().contains("fixture.warpline"), qPrintable(w.errorText()));
        QCOMPARE(w.windowTitle(), QString("fixture.warpline — Warpline"));
        const QString message = failed.front().at(1).toString();
        QVERIFY2(w.errorText().contains(message), qPrintable(w.errorText()));
        // The next trace clears it.
        w.openTrace(m_fixture);
        QVERIFY(waitLoaded(w));
        QVERIFY(QTest::qWaitFor([&] { return w.trace() != shown; }, 20000));
        QCOMPARE(w.errorText(), QString());
    }

    void timeUnitPersists() {
        {
            MainWindow w;
            QAction* ms = nullptr;
            for (QAction* a : w.findChildren<QAction*>()) {
                if (a->text() == "Milliseconds")
                    ms = a;
            }
            QVERIFY(ms);
            ms->trigger();
            QCOMPARE(w.timeUnit(), views::TimeUnit::Milliseconds);
        }
        MainWindow again;
        QCOMPARE(again.timeUnit(), views::TimeUnit::Milliseconds);
        QSettings().remove("view/timeUnit");
    }

    void cancelAndStaleLoads() {
        MainWindow w;
        w.show();
        QSignalSpy loaded(&w, &MainWindow::traceLoaded);
        w.openTrace(m_fixture);
        w.cancelLoading();
        QCOMPARE(w.page(), MainWindow::Page::Welcome);
        QTest::qWait(300);
        QCOMPARE(loaded.size(), 0); // the cancelled job's result never arrives

        // A newer load wins over one still in flight.
        const QString second = m_dir.filePath("second.warpline");
        viewsfixture::writeTrace(second, 20);
        w.openTrace(m_fixture);
        w.openTrace(second);
        QVERIFY(waitLoaded(w));
        QTest::qWait(300);
        QCOMPARE(loaded.size(), 1);
        QCOMPARE(w.trace()->store->kernelCount(), size_t{20});
    }

    // Under the timeline, a legend says what each colour means, in the colours it paints.
    void legendNamesTheTimelinesColours() {
        MainWindow w;
        w.resize(1400, 900);
        w.openTrace(m_fixture);
        QVERIFY(waitLoaded(w));
        w.show();
        const views::TimelineLegend* legend = w.legend();
        QVERIFY(legend && legend->isVisible());
        const views::SpanPalette palette(legend->palette());
        QStringList labels;
        for (const auto& e : legend->entries()) {
            labels << e.label;
            QVERIFY(!e.colors.empty());
        }
        for (const char* label : {"Kernels (colour per name)", "Communication", "Copy", "Memset",
                                  "CUDA call", "Launch", "Waits for the GPU", "Launch queue depth"})
            QVERIFY2(labels.contains(label), qPrintable(labels.join(", ")));
        const auto colourOf = [&](const QString& label) {
            for (const auto& e : legend->entries())
                if (e.label == label)
                    return e.colors.front();
            return QColor();
        };
        QCOMPARE(colourOf("Copy"), palette.memcpy());
        QCOMPARE(colourOf("Waits for the GPU"), palette.stall());
        QCOMPARE(colourOf("Launch queue depth"), palette.queueDepth());
        QVERIFY(legend->entries().back().partial);
        QVERIFY(legend->toolTip().contains("Waits for the GPU"));
        // A narrow window wraps the entries onto more lines instead of cutting them off.
        QVERIFY(legend->heightForWidth(300) > legend->heightForWidth(4000));
        QCOMPARE(legend->height(), legend->heightForWidth(legend->width()));
    }

    void missingSampleSaysWhatToDo() {
        const QString missing = m_dir.filePath("nowhere/sample.warpline");
        qputenv("WARPLINE_SAMPLE", missing.toUtf8());
        const auto restore = qScopeGuard([] { qunsetenv("WARPLINE_SAMPLE"); });
        QCOMPARE(MainWindow::sampleCandidates(), QStringList{missing});
        QVERIFY(MainWindow::samplePath().isEmpty());
        {
            MainWindow w;
            w.openSample();
            QCOMPARE(w.page(), MainWindow::Page::Error);
            QVERIFY(w.errorText().contains("no bundled sample"));
            QVERIFY(w.errorText().contains(missing)); // where it looked
            QVERIFY(w.errorText().contains("File > Open"));
        }
        // The same path, once a trace is there, opens.
        qputenv("WARPLINE_SAMPLE", m_fixture.toUtf8());
        QCOMPARE(MainWindow::samplePath(), QFileInfo(m_fixture).absoluteFilePath());
        MainWindow w;
        w.openSample();
        QVERIFY(waitLoaded(w));
        QCOMPARE(w.page(), MainWindow::Page::Trace);
    }

    void workloadListParses() {
        const QString list = "runahead     CPU launches many tiny kernels\n"
                             "    --iterations       launches per phase (default 1000)\n"
                             "    --size             elements (default 4096)\n"
                             "sync-stall   synchronizes after every step\n";
        const auto workloads = app::WorkloadCatalog::parse(list);
        QCOMPARE(workloads.size(), size_t{2});
        QCOMPARE(workloads[0].name, QString("runahead"));
        QCOMPARE(workloads[0].description, QString("CPU launches many tiny kernels"));
        QCOMPARE(workloads[0].options.size(), size_t{2});
        QCOMPARE(workloads[0].options[0].name, QString("iterations"));
        QCOMPARE(workloads[0].options[0].help, QString("launches per phase"));
        QCOMPARE(workloads[0].options[0].defaultValue, QString("1000"));
        QCOMPARE(workloads[1].name, QString("sync-stall"));
        QVERIFY(workloads[1].options.empty());
        QCOMPARE(app::WorkloadCatalog::splitArguments("a 'b c' \"d \\\"e\\\"\" f\\ g '' h"),
                 QStringList({"a", "b c", "d \"e\"", "f g", "", "h"}));
        QCOMPARE(app::WorkloadCatalog::recordArguments("runahead", {{"iterations", "10"}},
                                                       "/tmp/x.warpline", true),
                 QStringList({"--workload", "runahead", "--iterations=10", "-o", "/tmp/x.warpline",
                              "--force"}));
    }

    void recordDialogShowsRecorderErrorsInWords() {
        const QString fake = writeScript("fake-record-nogpu",
                                         "if [ \"$1\" = --list ]; then\n"
                                         "  echo 'gelu         fused vs unfused GELU'\n"
                                         "  echo '    --size             elements (default 1024)'\n"
                                         "  exit 0\nfi\n"
                                         "echo 'warpline-record: no CUDA GPU found; record on a "
                                         "machine with an NVIDIA GPU' >&2\n"
                                         "exit 2\n");
        app::RecordDialog dialog;
        dialog.setRecorder(fake);
        QCOMPARE(dialog.workloads().size(), size_t{1});
        dialog.setOutputPath(m_dir.filePath("rec.warpline"));
        dialog.startRecording();
        QVERIFY(QTest::qWaitFor([&] { return !dialog.isRecording(); }, 10000));
        QVERIFY2(dialog.errorText().contains("No CUDA GPU found"), qPrintable(dialog.errorText()));
        QVERIFY2(dialog.errorText().startsWith("Recording failed"), qPrintable(dialog.errorText()));
    }

    void recordDialogHandsOverTheNewTrace() {
        // A fake recorder that "records" by copying the fixture to the -o path.
        const QString fake = writeScript(
            "fake-record-ok",
            "if [ \"$1\" = --list ]; then echo 'gelu         fused vs unfused GELU'; exit 0; fi\n"
            "out=''\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=$2; shift; done\n"
            "echo 'warpline-record: phase fused: 5/10 launches' >&2\n"
            "cp '" +
                m_fixture +
                "' \"$out\"\n"
                "echo \"warpline-record: wrote 404 records in 0.1 s to $out\" >&2\n");
        app::RecordDialog dialog;
        dialog.setRecorder(fake);
        const QString out = m_dir.filePath("recorded.warpline");
        dialog.setOutputPath(out);
        QSignalSpy recorded(&dialog, &app::RecordDialog::traceRecorded);
        dialog.startRecording();
        QVERIFY(QTest::qWaitFor([&] { return recorded.size() == 1; }, 10000));
        QCOMPARE(recorded.at(0).at(0).toString(), out);
        QVERIFY(dialog.logText().contains("phase fused: 5/10"));
        QVERIFY(dialog.errorText().isEmpty());
    }

    void recordDialogRecordsAProgram() {
        // A fake recorder: notes its arguments and working directory, "records" by copying the
        // fixture, and exits with the program's status (3), as warpline-record -- PROGRAM does.
        const QString argsFile = m_dir.filePath("program-args.txt");
        const QString fake = writeScript(
            "fake-record-program",
            "if [ \"$1\" = --list ]; then echo 'gelu         fused vs unfused GELU'; exit 0; fi\n"
            "pwd > '" +
                argsFile + "'\nfor a in \"$@\"; do echo \"$a\" >> '" + argsFile +
                "'; done\n"
                "while [ $# -gt 0 ] && [ \"$1\" != -o ]; do shift; done\n"
                "cp '" +
                m_fixture + "' \"$2\"\nexit 3\n");
        app::RecordDialog dialog;
        // Given relative to this process' directory, the recorder must still start from the
        // program's (found on the H100: WARPLINE_RECORD=.device/bin/warpline-record).
        dialog.setRecorder(QDir::current().relativeFilePath(fake));
        QCOMPARE(dialog.recorder(), QFileInfo(fake).absoluteFilePath());
        QDir(m_dir.path()).mkpath("work");
        dialog.setProgram("python3", "train.py --name 'two words'", m_dir.filePath("work"));
        dialog.setOutputPath("train.warpline"); // relative: in the working directory
        dialog.setGpuMetrics(true);
        dialog.setPythonStacks(true);
        QSignalSpy recorded(&dialog, &app::RecordDialog::traceRecorded);
        dialog.startRecording();
        QVERIFY(QTest::qWaitFor([&] { return !dialog.isRecording(); }, 10000));
        const QString out = QDir(m_dir.filePath("work")).filePath("train.warpline");
        QCOMPARE(recorded.size(), 1);
        QCOMPARE(recorded.at(0).at(0).toString(), out);
        QVERIFY2(dialog.errorText().contains("status 3"), qPrintable(dialog.errorText()));
        QFile f(argsFile);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QStringList lines = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
        QCOMPARE(lines, QStringList({QFileInfo(m_dir.filePath("work")).canonicalFilePath(),
                                     "--gpu-metrics", "--python-stacks", "-o", out, "--", "python3",
                                     "train.py", "--name", "two words"}));
        QSettings().setValue("record/gpuMetrics", false); // remembered for the next dialog
    }

    void recordDialogWithTheRealRecorder() {
#ifndef WARPLINE_RECORD
        QSKIP("warpline-record is not built here");
#else
        app::RecordDialog dialog;
        dialog.setRecorder(WARPLINE_RECORD);
        QVERIFY(dialog.workloads().size() >= 8);
        QCOMPARE(dialog.workloads()[0].name, QString("runahead"));
        QVERIFY(!dialog.workloads()[0].options.empty());
        dialog.selectWorkload("gelu");
        const QString out = m_dir.filePath("gelu-real.warpline");
        dialog.setOutputPath(out);
        dialog.resize(760, 620);
        dialog.show();
        QSignalSpy recorded(&dialog, &app::RecordDialog::traceRecorded);
        dialog.startRecording();
        QVERIFY(QTest::qWaitFor([&] { return !dialog.isRecording(); }, 120000));
        if (recorded.isEmpty()) {
            // No GPU here: the reason is in plain words, without the tool's prefix.
            QVERIFY2(!dialog.errorText().isEmpty(), qPrintable(dialog.logText()));
            QVERIFY2(dialog.errorText().contains("GPU") || dialog.errorText().contains("driver"),
                     qPrintable(dialog.errorText()));
            QVERIFY(!dialog.errorText().contains("warpline-record: "));
            QVERIFY(!QFile::exists(out)); // exit 2: nothing written
        } else {
            QCOMPARE(recorded.at(0).at(0).toString(), out);
            QVERIFY(QFile::exists(out));
        }
        if (!qEnvironmentVariableIsEmpty("WARPLINE_TEST_SHOTS"))
            dialog.grab().save(qEnvironmentVariable("WARPLINE_TEST_SHOTS") + "/record-dialog.png");
#endif
    }

    void recordDialogWithoutRecorderSaysWhy() {
        app::RecordDialog dialog;
        dialog.setRecorder(QString());
        QVERIFY(dialog.workloads().empty());
        QVERIFY(!app::RecordDialog::unavailableReason().isEmpty());
    }
};

QTEST_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
