#include "mainwindow.h"

#include "charts/rooflinechart.h"
#include "charts/stepchart.h"
#include "chrometraceexport.h"
#include "comparedialog.h"
#include "details/cpusamplespanel.h"
#include "details/detailspanel.h"
#include "details/sourcetext.h"
#include "find/eventsearch.h"
#include "find/findbar.h"
#include "outputfile.h"
#include "pages.h"
#include "recorddialog.h"
#include "reportregistry.h"
#include "tables/reportview.h"
#include "tables/tableexport.h"
#include "tables/tablemodel.h"
#include "timeline/overviewstrip.h"
#include "timeline/timelinelegend.h"
#include "timeline/timelinewidget.h"
#include "trace/traceanalyzer.h"
#include "trace/traceloadcontroller.h"
#include "warpline_version.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QCoreApplication>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPixmap>
#include <QSettings>
#include <QSignalBlocker>
#include <QSplitter>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTimer>
#include <algorithm>

namespace warpline::app {

namespace {

constexpr int kMaxRecent = 10;

// The reports every trace has a table for: docked at start (so saved layouts restore), in the
// registry's order. The others (GPU metrics, Python lines, a session's ranks ...) come and go
// with the trace.
bool everyTraceHas(const model::ReportDef& report) {
    return report.dock == model::Dock::Always;
}

QString qs(std::string_view s) {
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

bool isKnownReport(const QString& id) {
    const model::ReportDef* report = model::ReportRegistry::find(id.toStdString());
    return report && everyTraceHas(*report);
}

} // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setWindowTitle(QStringLiteral("Warpline"));
    setAcceptDrops(true);
    setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks);
    m_loader = new views::TraceLoadController(this);
    connect(m_loader, &views::TraceLoadController::progress, this, &MainWindow::onProgress);
    connect(m_loader, &views::TraceLoadController::storeLoaded, this, &MainWindow::onStoreLoaded);
    connect(m_loader, &views::TraceLoadController::loaded, this, &MainWindow::onLoaded);
    connect(m_loader, &views::TraceLoadController::failed, this, &MainWindow::onFailed);

    createPages();
    createActions();

    m_details = new views::DetailsPanel(this);
    m_detailsDock = new QDockWidget(tr("Details"), this);
    m_detailsDock->setObjectName(QStringLiteral("dock-details"));
    m_detailsDock->setWidget(m_details);
    addDockWidget(Qt::RightDockWidgetArea, m_detailsDock);
    m_viewMenu->addAction(m_detailsDock->toggleViewAction());
    // Under the details: the roofline-style chart of a trace recorded with GPU metrics (shown
    // only for such a trace, like a session's docks).
    m_roofline = new views::RooflineChart(this);
    m_rooflineDock = new QDockWidget(tr("GPU metrics chart"), this);
    m_rooflineDock->setObjectName(QStringLiteral("dock-roofline"));
    m_rooflineDock->setWidget(m_roofline);
    addDockWidget(Qt::RightDockWidgetArea, m_rooflineDock);
    m_viewMenu->addAction(m_rooflineDock->toggleViewAction());
    m_rooflineDock->hide();
    m_rooflineDock->toggleViewAction()->setVisible(false);
    connect(m_roofline, &views::RooflineChart::kernelClicked, this, [this](model::NameId name) {
        if (!m_trace)
            return;
        const model::TraceStore& store = *m_trace->store;
        const QString text = qs(store.text(name));
        setHighlights(views::HighlightSet(views::EventSearch::gpuOpsNamed(store, name), text),
                      text);
        showHighlight(0);
    });
    for (const model::ReportDef& report : model::ReportRegistry::all())
        if (everyTraceHas(report))
            reportDock(qs(report.name), qs(report.title));
    if (m_reportDocks.contains(QStringLiteral("kernels")))
        m_reportDocks.value(QStringLiteral("kernels"))->raise();

    connect(m_timeline, &views::TimelineWidget::selectionChanged, this,
            [this](const model::EventId& e) { m_details->showEvent(e); });
    connect(m_details, &views::DetailsPanel::eventRequested, this,
            [this](const model::EventId& e) { m_timeline->revealEvent(e); });
    connect(m_findBar, &views::FindBar::nextRequested, this, &MainWindow::nextHighlight);
    connect(m_findBar, &views::FindBar::previousRequested, this, &MainWindow::previousHighlight);
    connect(m_findBar, &views::FindBar::closed, this, [this] {
        m_timeline->clearHighlights();
        m_highlightIndex = -1;
        m_timeline->setFocus();
    });
    auto* findTimer = new QTimer(this);
    findTimer->setSingleShot(true);
    findTimer->setInterval(150);
    connect(m_findBar, &views::FindBar::searchChanged, findTimer, qOverload<>(&QTimer::start));
    connect(findTimer, &QTimer::timeout, this, [this] { findChanged(m_findBar->text()); });
    // Statistics over the visible range follow the view: a zoom (a right-drag over a range)
    // recomputes them once it settles.
    auto* scopeTimer = new QTimer(this);
    scopeTimer->setSingleShot(true);
    scopeTimer->setInterval(200);
    connect(m_timeline, &views::TimelineWidget::viewportChanged, scopeTimer, [this, scopeTimer] {
        if (m_scope == QLatin1String("visible range"))
            scopeTimer->start();
    });
    connect(scopeTimer, &QTimer::timeout, this, [this] {
        if (m_scope == QLatin1String("visible range"))
            setStatisticsScope(m_scope);
    });

    QSettings settings;
    m_timeUnit = static_cast<views::TimeUnit>(
        std::clamp(settings.value(QStringLiteral("view/timeUnit"), 0).toInt(), 0, 4));
    setTimeUnit(m_timeUnit);
    resize(1500, 950);
    // A first start: details wide enough for kernel names, tables a third of the height.
    resizeDocks({m_detailsDock}, {440}, Qt::Horizontal);
    if (m_firstTableDock)
        resizeDocks({m_firstTableDock}, {300}, Qt::Vertical);
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    showPage(Page::Welcome);
}

MainWindow::~MainWindow() = default;

// --- construction -----------------------------------------------------------------------------

void MainWindow::createPages() {
    m_pages = new QStackedWidget(this);
    setCentralWidget(m_pages);
    // In Page order.
    auto* welcome = new WelcomePage(m_pages);
    m_loadingPage = new LoadingPage(m_pages);
    m_errorPage = new ErrorPage(m_pages);
    m_tracePage = new TracePage(m_pages);
    for (QWidget* page : {static_cast<QWidget*>(welcome), static_cast<QWidget*>(m_loadingPage),
                          static_cast<QWidget*>(m_errorPage), static_cast<QWidget*>(m_tracePage)})
        m_pages->addWidget(page);
    for (StartPage* page :
         {static_cast<StartPage*>(welcome), static_cast<StartPage*>(m_errorPage)}) {
        connect(page, &StartPage::openRequested, this, &MainWindow::openDialog);
        connect(page, &StartPage::sampleRequested, this, &MainWindow::openSample);
        connect(page, &StartPage::recordRequested, this, &MainWindow::recordDialog);
    }
    connect(m_loadingPage, &LoadingPage::cancelRequested, this, &MainWindow::cancelLoading);
    m_timeline = m_tracePage->timeline();
    m_overview = m_tracePage->overview();
    m_legend = m_tracePage->legend();
    m_findBar = m_tracePage->findBar();
}

void MainWindow::createActions() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("&Open…"), QKeySequence::Open, this, &MainWindow::openDialog);
    file->addAction(tr("Open &Several…"), this, &MainWindow::openSeveralDialog)
        ->setStatusTip(
            tr("Open several traces (one per rank of a distributed job) as one session"));
    file->addAction(tr("Open &Folder…"), this, &MainWindow::openFolderDialog)
        ->setStatusTip(tr("Open every trace in a folder (one per rank) as one session"));
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    connect(m_recentMenu, &QMenu::aboutToShow, this, &MainWindow::rebuildRecentMenu);
    rebuildRecentMenu();
    file->addAction(tr("&Record…"), QKeySequence(Qt::CTRL | Qt::Key_R), this,
                    &MainWindow::recordDialog);
    file->addAction(tr("Compare &With…"), this,
                    [this] { CompareDialog::compareWith(this, m_trace); });
    file->addSeparator();
    m_exportMenu = file->addMenu(tr("&Export"));
    connect(m_exportMenu, &QMenu::aboutToShow, this, &MainWindow::rebuildExportMenu);
    rebuildExportMenu();
    file->addAction(tr("Save &Screenshot…"), this, [this] {
        const QString path = QFileDialog::getSaveFileName(
            this, tr("Save Screenshot"), QStringLiteral("warpline.png"), tr("PNG images (*.png)"));
        if (!path.isEmpty() && !saveScreenshot(path))
            QMessageBox::warning(this, tr("Screenshot"), tr("Could not write %1.").arg(path));
    });
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

    m_viewMenu = menuBar()->addMenu(tr("&View"));
    m_viewMenu->addAction(tr("&Find Kernel…"), QKeySequence::Find, this, [this] {
        if (page() == Page::Trace)
            m_findBar->startFind();
    });
    m_viewMenu
        ->addAction(tr("Fit &All"), QKeySequence(Qt::Key_F), this, [this] { m_timeline->fitAll(); })
        ->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    m_viewMenu->addAction(tr("Fit &Steady State"), this, [this] { m_timeline->fitSteadyState(); });
    m_viewMenu->addAction(tr("Fit &GPU Activity"), this, [this] { m_timeline->fitGpuActivity(); });
    m_viewMenu->addAction(tr("Largest Launch &Lag"), QKeySequence(Qt::CTRL | Qt::Key_L), this,
                          &MainWindow::showLargestLag);
    m_viewMenu->addAction(tr("Zoom &In"), QKeySequence::ZoomIn, this, [this] {
        m_timeline->zoomAt(
            m_timeline->labelWidth() + (m_timeline->width() - m_timeline->labelWidth()) / 2.0, 1.5);
    });
    m_viewMenu->addAction(tr("Zoom &Out"), QKeySequence::ZoomOut, this, [this] {
        m_timeline->zoomAt(m_timeline->labelWidth() +
                               (m_timeline->width() - m_timeline->labelWidth()) / 2.0,
                           1 / 1.5);
    });
    QMenu* units = m_viewMenu->addMenu(tr("Time &Unit"));
    m_unitGroup = new QActionGroup(this);
    for (int u = 0; u <= 4; ++u) {
        const auto unit = static_cast<views::TimeUnit>(u);
        QAction* a = units->addAction(views::TimeFormat::unitName(unit));
        a->setCheckable(true);
        a->setData(u);
        m_unitGroup->addAction(a);
        connect(a, &QAction::triggered, this, [this, unit] { setTimeUnit(unit); });
    }
    QMenu* scopes = m_viewMenu->addMenu(tr("Statistics &Over"));
    m_scopeGroup = new QActionGroup(this);
    for (const QString& scope : {QStringLiteral("whole trace"), QStringLiteral("start-up"),
                                 QStringLiteral("warm-up"), QStringLiteral("steady state"),
                                 QStringLiteral("teardown"), QStringLiteral("visible range")}) {
        QString text = scope;
        text[0] = text[0].toUpper();
        QAction* a = scopes->addAction(text);
        a->setCheckable(true);
        a->setChecked(scope == m_scope);
        a->setData(scope);
        m_scopeGroup->addAction(a);
        connect(a, &QAction::triggered, this, [this, scope] { setStatisticsScope(scope); });
    }
    m_viewMenu->addSeparator();

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("Open &Sample Trace"), this, &MainWindow::openSample);
    help->addAction(tr("&Keyboard and Mouse"), this, &MainWindow::showShortcuts);
    help->addAction(tr("&About Warpline"), this, &MainWindow::showAbout);
}

QDockWidget* MainWindow::reportDock(const QString& id, const QString& title) {
    if (QDockWidget* dock = m_reportDocks.value(id))
        return dock;
    auto* view = new views::ReportView(this);
    auto* dock = new QDockWidget(title, this);
    dock->setObjectName(QStringLiteral("dock-") + id);
    if (id == QLatin1String("steps")) {
        // The step-time chart left of the table: the picture and its numbers seen together.
        auto* split = new QSplitter(Qt::Horizontal, dock);
        m_stepChart = new views::StepChart(split);
        split->addWidget(m_stepChart);
        split->addWidget(view);
        split->setStretchFactor(0, 2);
        split->setStretchFactor(1, 3);
        split->setChildrenCollapsible(false);
        dock->setWidget(split);
        connect(m_stepChart, &views::StepChart::stepRangeClicked, this,
                [this](qint64 start, qint64 end) {
                    m_timeline->setVisibleRange(static_cast<double>(start),
                                                static_cast<double>(end));
                });
        connect(m_stepChart, &views::StepChart::exportFailed, this, [this](const QString& message) {
            QMessageBox::warning(this, tr("Export"), message);
        });
    } else if (id == QLatin1String("cpu-samples")) {
        // The flame graph of a scope (the whole trace, the visible range, the steady state's
        // GPU idle time) left of the table by function over the whole trace.
        auto* split = new QSplitter(Qt::Horizontal, dock);
        m_cpuPanel = new views::CpuSamplesPanel(split);
        split->addWidget(m_cpuPanel);
        split->addWidget(view);
        split->setStretchFactor(0, 3);
        split->setStretchFactor(1, 2);
        split->setChildrenCollapsible(false);
        dock->setWidget(split);
        const auto followView = [this] {
            m_cpuPanel->setVisibleRange(static_cast<int64_t>(m_timeline->viewport().visibleStart()),
                                        static_cast<int64_t>(m_timeline->viewport().visibleEnd()));
        };
        followView();
        connect(m_timeline, &views::TimelineWidget::viewportChanged, m_cpuPanel, followView);
    } else {
        dock->setWidget(view);
    }
    addDockWidget(Qt::BottomDockWidgetArea, dock);
    if (m_firstTableDock)
        tabifyDockWidget(m_firstTableDock, dock);
    else
        m_firstTableDock = dock;
    m_reportDocks.insert(id, dock);
    m_reportViews.insert(id, view);
    m_viewMenu->addAction(dock->toggleViewAction());
    connect(view, &views::ReportView::sourceRowSelected, this,
            [this, id](int row) { reportRowSelected(id, row); });
    connect(view, &views::ReportView::sourceRowActivated, this,
            [this, id](int row) { reportRowActivated(id, row); });
    connect(view, &views::ReportView::exportFailed, this,
            [this](const QString& message) { QMessageBox::warning(this, tr("Export"), message); });
    return dock;
}

views::ReportView* MainWindow::reportView(const QString& id) const {
    return m_reportViews.value(id);
}

// --- pages --------------------------------------------------------------------------------------

MainWindow::Page MainWindow::page() const {
    return static_cast<Page>(m_pages->currentIndex());
}

QString MainWindow::errorText() const {
    if (page() == Page::Error)
        return m_errorPage->text();
    if (page() == Page::Trace)
        return m_tracePage->loadError();
    return {};
}

void MainWindow::showPage(Page page) {
    m_pages->setCurrentIndex(static_cast<int>(page));
    const bool trace = page == Page::Trace;
    // Without a trace the docks would be empty boxes around the message: hide them until one
    // is shown, and bring back exactly those that were open.
    if (!trace && !m_docksHidden) {
        m_docksHiddenByPage.clear();
        for (QDockWidget* dock : findChildren<QDockWidget*>()) {
            if (!dock->isHidden()) {
                m_docksHiddenByPage << dock;
                dock->hide();
            }
        }
        m_docksHidden = true;
    } else if (trace && m_docksHidden) {
        for (QDockWidget* dock : std::as_const(m_docksHiddenByPage))
            dock->show();
        m_docksHiddenByPage.clear();
        m_docksHidden = false;
        if (QDockWidget* kernels = m_reportDocks.value(QStringLiteral("kernels")))
            kernels->raise();
    }
}

void MainWindow::showError(const QString& title, const QString& message) {
    m_errorPage->setError(title, message);
    showPage(Page::Error);
}

void MainWindow::clearLoadError() {
    m_tracePage->clearLoadError();
}

QString MainWindow::titleFor(const QStringList& paths) const {
    if (paths.isEmpty())
        return QString();
    const QString first = QFileInfo(paths.front()).fileName();
    return paths.size() == 1 ? first : tr("%1 + %2 more").arg(first).arg(paths.size() - 1);
}

QString MainWindow::traceName() const {
    return m_trace->store->isSession() ? titleFor(m_trace->paths)
                                       : QFileInfo(m_trace->path).fileName();
}

void MainWindow::updateTitle() {
    if (m_loader->isLoading()) {
        setWindowTitle(tr("%1 — Warpline").arg(titleFor(m_loadingPaths)));
    } else if (m_trace && m_trace->store->isSession()) {
        // "rank0.warpline + 7 more — 8 ranks — Warpline"
        setWindowTitle(
            tr("%1 — %2 — Warpline").arg(traceName(), views::SourceText::count(*m_trace->store)));
    } else if (m_trace) {
        setWindowTitle(tr("%1 — Warpline").arg(traceName()));
    } else {
        setWindowTitle(QStringLiteral("Warpline"));
    }
}

// --- loading ------------------------------------------------------------------------------------

QStringList MainWindow::sampleCandidates() {
    // Next to the executable first: an installed (or relocated, or packaged) warpline opens its own
    // sample, never the source tree it was built from; a build-tree warpline has none there.
    // WARPLINE_SAMPLE, when set, is the only place looked in (a packager's layout, a test).
    const QString chosen = qEnvironmentVariable("WARPLINE_SAMPLE");
    if (!chosen.isEmpty())
        return {chosen};
    QStringList out;
    out << QDir(QCoreApplication::applicationDirPath())
               .filePath(QStringLiteral("../share/warpline/sample.warpline"));
#ifdef WARPLINE_SAMPLE_SOURCE
    out << QStringLiteral(WARPLINE_SAMPLE_SOURCE);
#endif
#ifdef WARPLINE_SAMPLE_INSTALLED
    out << QStringLiteral(WARPLINE_SAMPLE_INSTALLED);
#endif
    out.removeDuplicates();
    return out;
}

QString MainWindow::samplePath() {
    for (const QString& path : sampleCandidates()) {
        if (QFileInfo(path).isFile())
            return QFileInfo(path).absoluteFilePath();
    }
    return {};
}

void MainWindow::openSample() {
    const QString path = samplePath();
    if (path.isEmpty()) {
        const QString message =
            tr("This Warpline has no bundled sample trace. It looked in:\n%1\n\nThe sample is "
               "recorded on a machine with an NVIDIA GPU and ships with Warpline. Meanwhile, open "
               "a trace of your own (File > Open), or record one (File > Record…).")
                .arg(sampleCandidates().join(QLatin1Char('\n')));
        showError(tr("The sample trace is not installed"), message);
        emit loadFailed(QString(), message);
        return;
    }
    openTrace(path);
}

void MainWindow::openTrace(const QString& path) {
    openTraces({path});
}

void MainWindow::openTraces(const QStringList& paths) {
    if (paths.isEmpty())
        return;
    QStringList absolute;
    for (const QString& path : paths)
        absolute << QFileInfo(path).absoluteFilePath();
    m_loadingPaths = absolute;
    m_loadingPath = absolute.size() == 1
                        ? absolute.front()
                        : tr("%1 traces (%2)").arg(absolute.size()).arg(titleFor(absolute));
    m_loadingPage->setText(tr("Opening %1…").arg(m_loadingPath));
    m_loadingPage->setProgress(0);
    showPage(Page::Loading);
    m_loader->start(absolute);
    updateTitle();
}

void MainWindow::cancelLoading() {
    if (!m_loader->isLoading())
        return;
    m_loader->cancel();
    statusBar()->showMessage(tr("Cancelled opening %1").arg(m_loadingPath), 5000);
    updateTitle();
    showPage(m_trace ? Page::Trace : Page::Welcome);
}

void MainWindow::onProgress(int job, double fraction, const QString& stage) {
    if (job != m_loader->currentJob())
        return;
    m_loadingPage->setProgress(fraction);
    m_loadingPage->setText(tr("%1 %2…").arg(stage, m_loadingPath));
}

void MainWindow::onStoreLoaded(int job, std::shared_ptr<const views::LoadedTrace> trace) {
    if (job != m_loader->currentJob() || !trace)
        return;
    // The timeline paints now; the tables follow when the analyses are done.
    applyTrace(std::move(trace));
    showPage(Page::Trace);
    m_timeline->setFocus();
    statusBar()->showMessage(tr("Analysing %1…").arg(m_trace->path));
}

void MainWindow::onLoaded(int job, std::shared_ptr<const views::LoadedTrace> trace) {
    if (job != m_loader->currentJob() || !trace)
        return;
    const bool wasShown = page() == Page::Trace;
    applyTrace(std::move(trace));
    // Recent files remember what was opened: a file or a folder (several files have no one path).
    if (m_loadingPaths.size() <= 1)
        addRecent(m_trace->path);
    showPage(Page::Trace);
    if (m_trace->store->isSession()) {
        if (QDockWidget* ranks = m_reportDocks.value(QStringLiteral("ranks")))
            ranks->raise();
    }
    if (!wasShown)
        m_timeline->setFocus();
    if (m_pendingLargestLag)
        showLargestLag();
    if (!m_pendingFind.isEmpty())
        find(QString(m_pendingFind)); // a copy: find() clears m_pendingFind
    if (!m_pendingReport.isEmpty())
        showReport(QString(m_pendingReport));
    emit traceLoaded(m_trace->path);
}

void MainWindow::onFailed(int job, const QString& path, const QString& message) {
    if (job != m_loader->currentJob())
        return;
    const QString what = titleFor(m_loadingPaths); // `path` is the first of them
    const bool folder = m_loadingPaths.size() == 1 && QFileInfo(path).isDir();
    const QString hint =
        folder ? tr("Check that the folder holds the traces of the job (.warpline, .sqlite, "
                    ".json or .json.gz files, one per rank), then open it again.")
        : m_loadingPaths.size() > 1
            ? tr("Check that every file is a Warpline trace, an Nsight Systems SQLite export or "
                 "a PyTorch profiler trace, then open them again.")
            : tr("Check that the file is a Warpline trace (.warpline, written by "
                 "warpline-record), an Nsight Systems SQLite export (nsys export --type "
                 "sqlite) or a PyTorch profiler trace (.json, .json.gz), then open it "
                 "again.");
    if (m_trace) {
        // Keep the trace the user was looking at; say above it what failed.
        m_tracePage->showLoadError(tr("Could not open %1: %2\n%3 The trace shown is still %4.")
                                       .arg(what, message, hint, traceName()));
        updateTitle();
        showPage(Page::Trace);
    } else {
        setWindowTitle(tr("%1 — Warpline").arg(what));
        showError(tr("Could not open %1").arg(what), message + QStringLiteral("\n\n") + hint);
    }
    emit loadFailed(path, message);
}

void MainWindow::applyTrace(std::shared_ptr<const views::LoadedTrace> trace) {
    const bool sameStore = m_trace && trace && m_trace->store == trace->store;
    m_trace = std::move(trace);
    if (!sameStore) {
        clearLoadError();
        m_highlightIndex = -1;
        m_findBar->hide();
        for (views::ReportView* view : std::as_const(m_reportViews))
            view->setReport({});
        m_scope = QStringLiteral("whole trace");
        m_statisticsWindow = {};
        for (QAction* a : m_scopeGroup->actions())
            a->setChecked(a->data().toString() == m_scope);
    }
    m_overview->setTrace(m_trace);
    m_timeline->setTrace(m_trace);
    m_timeline->setTimeUnit(m_timeUnit);
    m_details->setTrace(m_trace);
    m_details->setTimeUnit(m_timeUnit);
    m_roofline->setReport(m_trace->store, m_trace->kernelMetrics);
    if (m_stepChart)
        m_stepChart->setSteps(m_trace->store, m_trace->steps);
    for (const views::ReportTable& report : m_trace->reports) {
        reportDock(report.id, report.title)->setWindowTitle(report.title);
        m_reportViews.value(report.id)->setReport(report);
    }
    if (m_scope != QLatin1String("whole trace"))
        setStatisticsScope(m_scope); // the same store analysed again: keep the range
    if (m_cpuPanel)
        m_cpuPanel->setTrace(m_trace);
    syncSessionDocks();
    updateTitle();
    updateHeader();
}

void MainWindow::syncSessionDocks() {
    // Docks beyond the ones every trace has (a session's "ranks" and "rank-steps", the GPU
    // metrics report and chart) show only while the trace has their report.
    if (!m_trace)
        return;
    std::vector<std::pair<QDockWidget*, bool>> docks;
    for (auto it = m_reportDocks.cbegin(); it != m_reportDocks.cend(); ++it)
        if (!isKnownReport(it.key()))
            docks.emplace_back(it.value(), m_trace->report(it.key()) != nullptr);
    docks.emplace_back(m_rooflineDock, m_trace->kernelMetrics != nullptr);
    for (const auto& [dock, present] : docks) {
        dock->toggleViewAction()->setVisible(present);
        if (m_docksHidden) {
            if (!present)
                m_docksHiddenByPage.removeAll(dock);
            else if (!m_docksHiddenByPage.contains(dock))
                m_docksHiddenByPage << dock;
        } else {
            dock->setVisible(present);
        }
    }
}

void MainWindow::updateHeader() {
    if (!m_trace)
        return;
    const model::TraceStore& store = *m_trace->store;
    QStringList parts{traceName()};
    if (store.isSession())
        parts << views::SourceText::count(store);
    const QString workload = qs(store.metaValue("workload"));
    if (!workload.isEmpty())
        parts << tr("workload %1").arg(workload);
    parts << views::TimeFormat::duration(double(store.endTime() - store.beginTime()), m_timeUnit);
    parts << tr("%L1 kernels").arg(qulonglong(store.kernelCount()));
    if (store.memcpyCount() + store.memsetCount() > 0)
        parts << tr("%L1 copies/sets").arg(qulonglong(store.memcpyCount() + store.memsetCount()));
    parts << tr("%L1 API calls").arg(qulonglong(store.apiCallCount()));
    // Each GPU model once: "8 × NVIDIA H200" for a session of eight ranks.
    QStringList models;
    QMap<QString, int> perModel;
    for (const model::DeviceInfo& d : store.devices()) {
        if (d.name == model::kNoName)
            continue;
        const QString name = qs(store.text(d.name));
        if (!perModel.contains(name))
            models << name;
        ++perModel[name];
    }
    for (const QString& name : std::as_const(models))
        parts << (perModel.value(name) > 1 && store.isSession()
                      ? tr("%1 × %2").arg(perModel.value(name)).arg(name)
                      : name);
    if (store.origin() == model::TraceOrigin::NsightSystemsExport)
        parts << tr("Nsight Systems export");
    m_tracePage->setHeader(parts.join(QStringLiteral("  ·  ")));

    QStringList lines;
    if (store.isSession()) {
        // Every rank repeats the same findings: lead with which rank the others wait for, then
        // the top finding of another kind.
        std::vector<const model::Insight*> shown;
        for (const model::Insight& insight : m_trace->insights) {
            if (insight.kind == model::InsightKind::LateRank) {
                shown.push_back(&insight);
                break;
            }
        }
        for (const model::Insight& insight : m_trace->insights) {
            if (shown.size() >= 2)
                break;
            if (std::none_of(shown.begin(), shown.end(),
                             [&](const model::Insight* s) { return s->kind == insight.kind; }))
                shown.push_back(&insight);
        }
        for (const model::Insight* insight : shown)
            lines << QStringLiteral("▸ ") + qs(insight->text);
    } else {
        for (size_t i = 0; i < std::min<size_t>(2, m_trace->insights.size()); ++i)
            lines << QStringLiteral("▸ ") + qs(m_trace->insights[i].text);
    }
    if (!store.warnings().empty())
        lines << tr("⚠ %1").arg(qs(store.warnings().front())) +
                     (store.warnings().size() > 1
                          ? tr(" (and %1 more)").arg(store.warnings().size() - 1)
                          : QString());
    m_tracePage->setFindings(lines);
    statusBar()->showMessage(tr("Opened %1 in %2 s (%L3 events)")
                                 .arg(m_trace->path)
                                 .arg(m_trace->loadSeconds + m_trace->analysisSeconds, 0, 'f', 2)
                                 .arg(qulonglong(store.eventCount())));
}

// --- recent files and settings -----------------------------------------------------------------

void MainWindow::addRecent(const QString& path) {
    QSettings settings;
    QStringList recent = settings.value(QStringLiteral("recentFiles")).toStringList();
    recent.removeAll(path);
    recent.prepend(path);
    while (recent.size() > kMaxRecent)
        recent.removeLast();
    settings.setValue(QStringLiteral("recentFiles"), recent);
    settings.setValue(QStringLiteral("lastDirectory"), QFileInfo(path).absolutePath());
}

void MainWindow::rebuildRecentMenu() {
    m_recentMenu->clear();
    const QStringList recent = QSettings().value(QStringLiteral("recentFiles")).toStringList();
    for (const QString& path : recent) {
        QAction* a = m_recentMenu->addAction(QFileInfo(path).fileName() + QStringLiteral("  (") +
                                             QFileInfo(path).absolutePath() + QLatin1Char(')'));
        a->setEnabled(QFileInfo::exists(path));
        connect(a, &QAction::triggered, this, [this, path] { openTrace(path); });
    }
    if (recent.isEmpty())
        m_recentMenu->addAction(tr("No recent traces"))->setEnabled(false);
    else {
        m_recentMenu->addSeparator();
        m_recentMenu->addAction(tr("Clear List"), this,
                                [] { QSettings().remove(QStringLiteral("recentFiles")); });
    }
}

void MainWindow::rebuildExportMenu() {
    m_exportMenu->clear();
    // Every report: those the window docks, and those only warpline-stats prints otherwise
    // (built when exported). A report the trace lacks the recording for is left out.
    for (const model::ReportDef& report : model::ReportRegistry::all()) {
        if (m_trace && report.missing && report.dock != model::Dock::Always &&
            !report.missing(*m_trace->analyses).empty())
            continue;
        QAction* a = m_exportMenu->addAction(tr("%1…").arg(qs(report.title)), this,
                                             [this, id = qs(report.name)] { exportDialog(id); });
        a->setEnabled(m_trace != nullptr);
    }
    m_exportMenu->addSeparator();
    m_exportMenu
        ->addAction(tr("Chrome Trace (Perfetto)…"), this,
                    [this] { ChromeTraceExport::run(this, m_trace); })
        ->setEnabled(m_trace != nullptr);
}

void MainWindow::setTimeUnit(views::TimeUnit unit) {
    m_timeUnit = unit;
    for (QAction* a : m_unitGroup->actions())
        a->setChecked(a->data().toInt() == static_cast<int>(unit));
    m_timeline->setTimeUnit(unit);
    if (m_details)
        m_details->setTimeUnit(unit);
    if (m_stepChart)
        m_stepChart->setTimeUnit(unit);
    QSettings().setValue(QStringLiteral("view/timeUnit"), static_cast<int>(unit));
    updateHeader();
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (m_docksHidden) {
        // Save the layout the user had with a trace, not the empty page's.
        for (QDockWidget* dock : std::as_const(m_docksHiddenByPage))
            dock->show();
    }
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    m_loader->cancel();
    QMainWindow::closeEvent(event);
}

// --- drag and drop
// --------------------------------------------------------------------------------

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (event->mimeData()->hasUrls()) {
        for (const QUrl& url : event->mimeData()->urls()) {
            if (url.isLocalFile()) {
                event->acceptProposedAction();
                return;
            }
        }
    }
}

void MainWindow::dropEvent(QDropEvent* event) {
    // Several files (or a folder) dropped at once open as one session.
    QStringList paths;
    for (const QUrl& url : event->mimeData()->urls()) {
        if (url.isLocalFile())
            paths << url.toLocalFile();
    }
    if (paths.isEmpty())
        return;
    openTraces(paths);
    event->acceptProposedAction();
}

// --- tables, highlights and find -----------------------------------------------------------------

void MainWindow::setHighlights(views::HighlightSet set, const QString& what) {
    m_highlightIndex = -1;
    const int count = static_cast<int>(set.size());
    m_timeline->setHighlights(std::move(set));
    if (!what.isEmpty())
        m_findBar->showInstances(what);
    m_findBar->setPosition(-1, count);
}

void MainWindow::reportRowSelected(const QString& id, int row) {
    if (!m_trace || row < 0)
        return;
    const views::ReportView* view = m_reportViews.value(id);
    const model::RowTarget target = view->model()->target(row);
    const model::TraceStore& store = *m_trace->store;
    if (target.kernel != model::kNoName) {
        const QString name = qs(store.text(target.kernel));
        setHighlights(
            views::HighlightSet(views::EventSearch::gpuOpsNamed(store, target.kernel), name), name);
    } else if (target.apiName != model::kNoName) {
        const QString name = qs(store.text(target.apiName));
        setHighlights(
            views::HighlightSet(views::EventSearch::apiCallsNamed(store, target.apiName), name),
            name);
    } else if (!target.related.empty()) {
        setHighlights(views::HighlightSet(target.related, view->report().title),
                      tr("this finding (%1 events)").arg(target.related.size()));
    } else if (target.event.valid()) {
        m_timeline->setSelection(target.event);
    }
}

void MainWindow::reportRowActivated(const QString& id, int row) {
    if (!m_trace || row < 0)
        return;
    const model::RowTarget target = m_reportViews.value(id)->model()->target(row);
    // A finding about where the CPU was while the GPU waited: its samples over the steady
    // state's GPU idle time, beside the timeline's evidence.
    if (id == QLatin1String("insights") && m_cpuPanel &&
        static_cast<size_t>(row) < m_trace->insights.size()) {
        const model::InsightKind kind = m_trace->insights[static_cast<size_t>(row)].kind;
        if (kind == model::InsightKind::CpuWork || kind == model::InsightKind::InputBound ||
            kind == model::InsightKind::GpuIdle) {
            m_cpuPanel->setScope(views::CpuSamplesPanel::Scope::GpuIdleSteady);
            m_cpuPanel->showFlameGraph();
            showReport(QStringLiteral("cpu-samples"));
        }
    }
    if (target.hasRange()) {
        m_timeline->zoomToRange(target.t0, target.t1);
        if (target.event.valid())
            m_timeline->setSelection(target.event);
    } else if (m_timeline->highlights().size() > 0) {
        showHighlight(0);
    }
}

void MainWindow::showLargestLag() {
    if (!m_trace || m_trace->reports.empty()) {
        m_pendingLargestLag = true;
        return;
    }
    m_pendingLargestLag = false;
    const model::RunAheadAnalysis* ra = m_trace->runAhead.get();
    if (!ra || ra->overall.count == 0) {
        statusBar()->showMessage(tr("No GPU op in this trace has its launch call."), 5000);
        return;
    }
    // The launch queued longest: a call slow in itself (a first launch loading its module) has
    // a long lag without having run ahead.
    const bool queued = ra->overall.queued > 0;
    const model::LaunchLag& launch =
        queued ? ra->overall.maxQueuedLaunch : ra->overall.maxLagLaunch;
    const model::TraceStore& store = *m_trace->store;
    const int64_t opEnd = store.gpuTracks()[launch.op.track].end(launch.op.index);
    // Zoom only when the pair is not in view already: the arrow shows the lag at any zoom.
    const views::TimelineViewport& vp = m_timeline->viewport();
    if (double(launch.callStart) < vp.visibleStart() || double(opEnd) > vp.visibleEnd())
        m_timeline->zoomToRange(launch.callStart, opEnd);
    m_timeline->setSelection(model::EventId::gpu(launch.op));
    const auto time = [&](int64_t ns) {
        return views::TimeFormat::duration(double(ns), m_timeUnit);
    };
    statusBar()->showMessage(
        queued ? tr("Largest launch lag: %1 from the launch call to the GPU start, %2 of it "
                    "queued after the call returned")
                     .arg(time(launch.lag()), time(launch.delay()))
               : tr("Largest launch lag: %1, no launch was queued: the GPU started every op "
                    "before its call returned (this call took %2)")
                     .arg(time(launch.lag()), time(launch.callEnd - launch.callStart)),
        8000);
}

void MainWindow::showReport(const QString& id) {
    if (!m_trace || m_trace->reports.empty()) {
        m_pendingReport = id;
        return;
    }
    m_pendingReport.clear();
    QDockWidget* dock = m_reportDocks.value(id);
    if (!dock || !m_trace->report(id)) {
        statusBar()->showMessage(tr("This trace has no \"%1\" report.").arg(id), 8000);
        return;
    }
    dock->show();
    dock->raise();
}

void MainWindow::find(const QString& text) {
    if (!m_trace || m_trace->reports.empty()) {
        m_pendingFind = text;
        return;
    }
    m_pendingFind.clear();
    m_findBar->startFind();
    {
        const QSignalBlocker block(m_findBar); // searched right here, not after the debounce
        m_findBar->edit()->setText(text);
    }
    findChanged(text);
    nextHighlight();
    emit searched(text, static_cast<int>(m_timeline->highlights().size()));
}

void MainWindow::findChanged(const QString& text) {
    if (!m_trace)
        return;
    auto matches = views::EventSearch::eventsMatching(*m_trace->store, text);
    m_highlightIndex = -1;
    const int count = static_cast<int>(matches.size());
    m_timeline->setHighlights(views::HighlightSet(std::move(matches), text));
    m_findBar->setPosition(-1, count);
}

void MainWindow::showHighlight(int index) {
    const views::HighlightSet& set = m_timeline->highlights();
    if (set.empty())
        return;
    const int count = static_cast<int>(set.size());
    m_highlightIndex = ((index % count) + count) % count;
    m_timeline->revealEvent(set.at(static_cast<size_t>(m_highlightIndex)));
    m_findBar->setPosition(m_highlightIndex, count);
}

void MainWindow::nextHighlight() {
    const views::HighlightSet& set = m_timeline->highlights();
    if (set.empty() || !m_trace)
        return;
    if (m_highlightIndex >= 0) {
        showHighlight(m_highlightIndex + 1);
        return;
    }
    // The first match at or after the left edge of the view.
    const double t0 = m_timeline->viewport().visibleStart();
    const auto it = std::partition_point(
        set.events().begin(), set.events().end(), [&](const model::EventId& e) {
            return double(model::eventStart(*m_trace->store, e)) < t0;
        });
    showHighlight(it == set.events().end() ? 0 : static_cast<int>(it - set.events().begin()));
}

void MainWindow::previousHighlight() {
    const views::HighlightSet& set = m_timeline->highlights();
    if (set.empty())
        return;
    showHighlight(m_highlightIndex < 0 ? static_cast<int>(set.size()) - 1 : m_highlightIndex - 1);
}

// --- dialogs ------------------------------------------------------------------------------------

void MainWindow::openDialog() {
    const QString dir = QSettings().value(QStringLiteral("lastDirectory")).toString();
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Open Trace"), dir,
        tr("Traces (*.warpline *.sqlite *.db *.json *.json.gz);;Warpline traces (*.warpline);;"
           "Nsight Systems SQLite exports (*.sqlite);;PyTorch profiler traces (*.json "
           "*.json.gz);;All files (*)"));
    if (!path.isEmpty())
        openTrace(path);
}

void MainWindow::openSeveralDialog() {
    const QString dir = QSettings().value(QStringLiteral("lastDirectory")).toString();
    const QStringList paths = QFileDialog::getOpenFileNames(
        this, tr("Open Several Traces (One per Rank)"), dir,
        tr("Traces (*.warpline *.sqlite *.db *.json *.json.gz);;All files (*)"));
    if (!paths.isEmpty())
        openTraces(paths);
}

void MainWindow::openFolderDialog() {
    const QString dir = QSettings().value(QStringLiteral("lastDirectory")).toString();
    const QString folder =
        QFileDialog::getExistingDirectory(this, tr("Open a Folder of Traces (One per Rank)"), dir);
    if (!folder.isEmpty())
        openTraces({folder});
}

void MainWindow::recordDialog() {
    RecordDialog dialog(this);
    connect(&dialog, &RecordDialog::traceRecorded, this, &MainWindow::openTrace);
    dialog.exec();
}

void MainWindow::setStatisticsScope(const QString& scope) {
    if (!m_trace)
        return;
    const model::TraceStore& store = *m_trace->store;
    const bool steps = m_trace->steps && !m_trace->steps->empty();
    QString chosen = scope;
    if (!steps && chosen != QLatin1String("visible range")) {
        if (chosen != QLatin1String("whole trace"))
            statusBar()->showMessage(
                tr("This trace has no steps: the statistics cover the whole trace"), 5000);
        chosen = QStringLiteral("whole trace");
    }
    m_scope = chosen;
    for (QAction* a : m_scopeGroup->actions())
        a->setChecked(a->data().toString() == m_scope);
    model::TimeWindow window;
    if (m_scope == QLatin1String("visible range"))
        window = {static_cast<int64_t>(m_timeline->viewport().visibleStart()),
                  static_cast<int64_t>(m_timeline->viewport().visibleEnd())};
    else if (m_scope != QLatin1String("whole trace"))
        window = m_trace->steps->phaseWindow(m_scope.toStdString());
    // The range named in each table's title (its tab): its phase and how long it lasts; where
    // it lies in the status bar.
    const int64_t t0 = std::max(window.t0, store.beginTime());
    const int64_t t1 = std::min(window.t1, store.endTime());
    const QString span = views::TimeFormat::duration(double(std::max<int64_t>(0, t1 - t0)));
    const bool whole = m_scope == QLatin1String("whole trace");
    const QString label = whole ? QString() : tr(" · %1, %2").arg(m_scope, span);
    QStringList titles;
    m_statisticsWindow = window;
    for (views::ReportTable& report : views::TraceAnalyzer::summaries(*m_trace, window)) {
        views::ReportView* view = m_reportViews.value(report.id);
        if (!view)
            continue;
        titles << report.title;
        m_reportDocks.value(report.id)->setWindowTitle(report.title + label);
        view->setReport(std::move(report));
    }
    if (!whole)
        statusBar()->showMessage(
            tr("%1 over the %2: %3 to %4 (%5)")
                .arg(titles.join(QStringLiteral(", ")), m_scope,
                     views::TimeFormat::duration(double(t0 - store.beginTime())),
                     views::TimeFormat::duration(double(t1 - store.beginTime())), span));
}

bool MainWindow::exportReport(const QString& id, const QString& path, model::TableFormat format,
                              QString* error) const {
    // What the table shows: over the range the statistics cover (setStatisticsScope). A report
    // the window does not dock is built now, over the same range, from the trace's analyses.
    const views::ReportView* view = m_reportViews.value(id);
    const model::ReportDef* def = model::ReportRegistry::find(id.toStdString());
    if (view && view->report().id == id)
        return views::TableExport::write(view->report().table, path, format, error);
    if (!m_trace || !def) {
        if (error)
            *error = tr("There is no %1 report for this trace.").arg(id);
        return false;
    }
    const views::ReportTable* docked = m_trace->report(id);
    const views::ReportTable report =
        docked ? *docked : views::TraceAnalyzer::report(*m_trace, *def, m_statisticsWindow);
    return views::TableExport::write(report.table, path, format, error);
}

void MainWindow::exportDialog(const QString& id) {
    const model::ReportDef* report = model::ReportRegistry::find(id.toStdString());
    if (!m_trace || !report)
        return;
    const QString title = qs(report->title);
    const QString csv = tr("CSV (*.csv)");
    const QString json = tr("JSON (*.json)");
    const QString markdown = tr("Markdown (*.md)");
    QString filter = csv;
    const QString dir = QSettings().value(QStringLiteral("lastDirectory")).toString();
    QString path = QFileDialog::getSaveFileName(
        this, tr("Export %1").arg(title), QDir(dir).filePath(id + QStringLiteral(".csv")),
        QStringList{csv, json, markdown}.join(QStringLiteral(";;")), &filter);
    if (path.isEmpty())
        return;
    const model::TableFormat byFilter = filter == json       ? model::TableFormat::Json
                                        : filter == markdown ? model::TableFormat::Markdown
                                                             : model::TableFormat::Csv;
    const model::TableFormat format = views::TableExport::formatForPath(path, byFilter);
    if (QFileInfo(path).suffix().isEmpty())
        path += QLatin1Char('.') + views::TableExport::suffix(format);
    QString error;
    if (!exportReport(id, path, format, &error))
        QMessageBox::warning(this, tr("Export"), error);
    else
        statusBar()->showMessage(tr("Exported %1 to %2").arg(title, path), 5000);
}

// Through OutputFile like every export: whole or not at all, never through a symbolic link (the
// save dialog asked before replacing).
bool MainWindow::saveScreenshot(const QString& path) {
    const QPixmap pixmap = grab();
    try {
        format::OutputFile output(QFile::encodeName(path).toStdString(), true);
        if (!pixmap.save(QFile::decodeName(output.tempPath().c_str()), "PNG"))
            return false;
        output.commit();
    } catch (const std::exception&) {
        return false;
    }
    return true;
}

void MainWindow::showShortcuts() {
    QMessageBox box(this);
    box.setWindowTitle(tr("Keyboard and Mouse"));
    box.setTextFormat(Qt::PlainText);
    box.setText(tr("Timeline\n"
                   "  Wheel: zoom around the cursor          W / S: zoom in / out\n"
                   "  Drag: pan                              A / D: pan left / right\n"
                   "  Shift+drag or right-drag: zoom to a range\n"
                   "  F or Home: fit the whole trace         G: fit the GPU's busy time\n"
                   "  Shift+wheel or wheel over labels: scroll rows\n"
                   "  Click: select and show details         Double-click: zoom to the span\n"
                   "  Click a group label: fold or unfold it\n"
                   "Find\n"
                   "  Ctrl+F: find kernels by name           Enter / Shift+Enter: next / previous\n"
                   "Tables\n"
                   "  Select a row: highlight its events     Double-click: zoom to it\n"
                   "  Ctrl+C: copy rows (tab-separated)      Right-click: export\n"
                   "Step chart (Steps tab)\n"
                   "  Hover a bar: its step's numbers        Click: zoom to the step\n"
                   "  Right-click: save as PNG, numbers as CSV"));
    box.exec();
}

void MainWindow::showAbout() {
    QString text = tr("Warpline %1\nA GPU trace viewer: CPU run-ahead, sync stalls, and where the "
                      "GPU's time goes.")
                       .arg(QStringLiteral(WARPLINE_VERSION));
    if (m_trace)
        text += tr("\n\nThis trace holds %L1 events in %2 MB of memory.")
                    .arg(qulonglong(m_trace->store->eventCount()))
                    .arg(double(m_trace->store->memoryBytes()) / 1e6, 0, 'f', 1);
    QMessageBox box(this);
    box.setWindowTitle(tr("About Warpline"));
    box.setTextFormat(Qt::PlainText);
    box.setText(text);
    box.exec();
}

} // namespace warpline::app
