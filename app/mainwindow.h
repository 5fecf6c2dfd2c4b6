#pragma once

// MainWindow: one trace per window. Opens traces (command line, File > Open, Open Recent, drag and
// drop, the bundled sample), loads them off the GUI thread with progress and Cancel
// (views::TraceLoadController), and shows either the timeline with its docked tables and details,
// or a page that says what went wrong and what to do. Never an empty window. Several files, or a
// folder of them (File > Open Several…, Open Folder…, the command line, a drop of several files),
// open as one session: one trace per rank on one time axis, the timeline grouped by rank. A load
// that fails while a trace is shown keeps that trace and says what failed above it.
//
// Settings (QSettings): recent files, window geometry and dock layout, time unit.

#include "eventid.h"
#include "tablewriter.h"
#include "timeformat.h"
#include "timeline/highlightset.h"
#include "trace/loadedtrace.h"

#include <QMainWindow>
#include <QMap>
#include <memory>

class QActionGroup;
class QDockWidget;
class QMenu;
class QStackedWidget;

namespace warpline::views {
class DetailsPanel;
class RooflineChart;
class StepChart;
class CpuSamplesPanel;
class FindBar;
class OverviewStrip;
class TimelineLegend;
class ReportView;
class TimelineWidget;
class TraceLoadController;
} // namespace warpline::views

namespace warpline::app {

class ErrorPage;
class LoadingPage;
class TracePage;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    enum class Page { Welcome, Loading, Error, Trace };

    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    void openTrace(const QString& path);
    // One file opens as openTrace(); several files, or folders of trace files, as one session.
    // What File > Open Several… and Open Folder… call with the chosen paths.
    void openTraces(const QStringList& paths);
    void openSample();
    void cancelLoading();

    // Where the bundled sample trace is looked for, in order: ../share/warpline next to the
    // executable (an installed warpline), the source tree (a build run in place), the install
    // prefix's share/warpline. WARPLINE_SAMPLE, when set, replaces them all.
    static QStringList sampleCandidates();
    static QString samplePath(); // the first that exists, or empty

    // The summary tables (Kernels, CUDA API, NVTX, Memory operations, Python lines and functions)
    // over a range of the trace: "whole trace", "start-up", "warm-up", "steady state", "teardown"
    // (the steps' phases) or "visible range" (the timeline's window); the docks' titles name it.
    // View > Statistics Over.
    void setStatisticsScope(const QString& scope);
    QString statisticsScope() const { return m_scope; }

    Page page() const;
    // The error shown: the error page's message, or the message above a trace that was kept
    // when a later load failed; empty when there is none.
    QString errorText() const;
    const std::shared_ptr<const views::LoadedTrace>& trace() const { return m_trace; }
    views::TimelineWidget* timeline() const { return m_timeline; }
    views::TimelineLegend* legend() const { return m_legend; }
    views::OverviewStrip* overview() const { return m_overview; }
    views::DetailsPanel* details() const { return m_details; }
    views::FindBar* findBar() const { return m_findBar; }
    views::StepChart* stepChart() const { return m_stepChart; }
    views::CpuSamplesPanel* cpuSamplesPanel() const { return m_cpuPanel; }
    views::ReportView* reportView(const QString& id) const;
    int highlightIndex() const { return m_highlightIndex; }
    views::TimeUnit timeUnit() const { return m_timeUnit; }

    bool exportReport(const QString& id, const QString& path, model::TableFormat format,
                      QString* error) const;
    // Renders the window into a PNG (device pixel ratio aware).
    bool saveScreenshot(const QString& path);

    // Selects the GPU op that started longest after its launch call began (the run-ahead
    // analysis' largest lag) and shows both, with the arrow between them. Once loaded.
    void showLargestLag();

    // Opens the find bar with `text` and, once a trace is shown, selects the first match
    // (EventSearch::eventsMatching: kernels, API calls, NVTX ranges, Python frames); emits
    // searched().
    void find(const QString& text);

    // Brings the report dock `id` (warpline-stats --report's names: "kernels", "python-lines",
    // ...) to the front, once the trace is loaded; says so in the status bar when the trace has
    // no such report.
    void showReport(const QString& id);

    // Steps through the highlighted events (find results or a table row's instances).
    void showHighlight(int index);
    void nextHighlight();
    void previousHighlight();

signals:
    void traceLoaded(const QString& path);
    void loadFailed(const QString& path, const QString& message);
    // A search of find() ran: `matches` events match `text`.
    void searched(const QString& text, int matches);

protected:
    void closeEvent(QCloseEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void createActions();
    void createPages();
    QDockWidget* reportDock(const QString& id, const QString& title);
    void showPage(Page page);
    void showError(const QString& title, const QString& message);
    void clearLoadError();
    QString titleFor(const QStringList& paths) const;
    // The shown trace's name: its file's, or titleFor() its files for a session.
    QString traceName() const;
    void updateTitle();
    void syncSessionDocks();
    void onStoreLoaded(int job, std::shared_ptr<const views::LoadedTrace> trace);
    void onLoaded(int job, std::shared_ptr<const views::LoadedTrace> trace);
    void onFailed(int job, const QString& path, const QString& message);
    void onProgress(int job, double fraction, const QString& stage);
    void applyTrace(std::shared_ptr<const views::LoadedTrace> trace);
    void updateHeader();
    void addRecent(const QString& path);
    void rebuildRecentMenu();
    void rebuildExportMenu();
    void setTimeUnit(views::TimeUnit unit);
    void reportRowSelected(const QString& id, int row);
    void reportRowActivated(const QString& id, int row);
    void setHighlights(views::HighlightSet set, const QString& what);
    void findChanged(const QString& text);
    void openDialog();
    void openSeveralDialog();
    void openFolderDialog();
    void recordDialog();
    void exportDialog(const QString& id);
    void showShortcuts();
    void showAbout();

    views::TraceLoadController* m_loader = nullptr;
    std::shared_ptr<const views::LoadedTrace> m_trace;
    QString m_loadingPath;      // what is being opened, for messages
    QStringList m_loadingPaths; // every path given to the load in flight
    views::TimeUnit m_timeUnit = views::TimeUnit::Auto;

    QStackedWidget* m_pages = nullptr; // in Page order
    LoadingPage* m_loadingPage = nullptr;
    ErrorPage* m_errorPage = nullptr;
    TracePage* m_tracePage = nullptr;
    // The trace page's widgets, which the window drives.
    views::TimelineWidget* m_timeline = nullptr;
    views::OverviewStrip* m_overview = nullptr;
    views::TimelineLegend* m_legend = nullptr;
    views::FindBar* m_findBar = nullptr;
    views::DetailsPanel* m_details = nullptr;
    views::RooflineChart* m_roofline = nullptr;
    views::StepChart* m_stepChart = nullptr; // in the Steps dock, beside its table
    // In the CPU samples dock, beside its table: the flame graph and top-down table of a scope.
    views::CpuSamplesPanel* m_cpuPanel = nullptr;
    QDockWidget* m_rooflineDock = nullptr;
    QDockWidget* m_detailsDock = nullptr;
    QMap<QString, QDockWidget*> m_reportDocks;
    QMap<QString, views::ReportView*> m_reportViews;
    QDockWidget* m_firstTableDock = nullptr;
    // Docks hidden while no trace is shown (welcome, loading and error pages), to show again.
    QList<QDockWidget*> m_docksHiddenByPage;
    bool m_docksHidden = false;

    QMenu* m_recentMenu = nullptr;
    QMenu* m_exportMenu = nullptr;
    QMenu* m_viewMenu = nullptr;
    QActionGroup* m_scopeGroup = nullptr;
    QString m_scope = QStringLiteral("whole trace");
    model::TimeWindow m_statisticsWindow; // the range m_scope stands for; all: the whole trace
    QActionGroup* m_unitGroup = nullptr;

    int m_highlightIndex = -1;
    QString m_pendingFind;            // find() before the trace was loaded
    bool m_pendingLargestLag = false; // showLargestLag() before the trace was loaded
    QString m_pendingReport;          // showReport() before the trace was loaded
};

} // namespace warpline::app
