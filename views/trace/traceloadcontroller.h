#pragma once

// TraceLoadController: loads traces off the GUI thread. start() runs TraceOpener::open (one file)
// or TraceSession::open (several files, or a folder of them: one session) and TraceAnalyzer on a
// new QThread and reports back by queued signals on the controller's thread.
// Results come in two stages, as hotspot does: `storeLoaded` as soon as the trace is in memory
// (the timeline can paint), then `loaded` with the summaries and analyses. Every start() gets a
// new job id; a newer start() or cancel() makes older jobs stale: their
// results are dropped, never delivered. The destructor cancels and waits for running jobs.
//
// Thread affinity: create and call on the GUI thread; signals arrive there.

#include "trace/loadedtrace.h"

#include <QObject>
#include <QString>
#include <QStringList>
#include <atomic>
#include <memory>
#include <vector>

class QThread;

namespace warpline::views {

class TraceLoadController : public QObject {
    Q_OBJECT
public:
    explicit TraceLoadController(QObject* parent = nullptr);
    ~TraceLoadController() override;

    // Starts loading `path`; cancels the job in flight. Returns the new job's id.
    int start(const QString& path) { return start(QStringList{path}); }
    // Starts loading `paths` as one trace: one file as it is; several files, or folders of trace
    // files (TraceSession::expandPaths), as one session on one time axis. A failure names the file
    // that failed; `failed`'s path is the first of `paths`.
    int start(const QStringList& paths);
    // Cancels the current job (its thread stops at its next progress check).
    void cancel();
    bool isLoading() const { return m_loading; }
    int currentJob() const { return m_job; }

    // Blocks until no job thread runs (tests, shutdown).
    void waitForIdle();

signals:
    void progress(int job, double fraction, const QString& stage);
    // The store alone (reports empty, analyses null): enough to paint the timeline.
    void storeLoaded(int job, std::shared_ptr<const warpline::views::LoadedTrace> trace);
    // Everything: the same store with its reports and analyses.
    void loaded(int job, std::shared_ptr<const warpline::views::LoadedTrace> trace);
    void failed(int job, const QString& path, const QString& message);
    void cancelled(int job);

private:
    struct Job {
        int id = 0;
        std::shared_ptr<std::atomic<bool>> cancel;
        QThread* thread = nullptr;
    };
    void deliver(int job, std::shared_ptr<const LoadedTrace> trace, const QString& path,
                 const QString& error, bool wasCancelled);

    int m_job = 0;
    bool m_loading = false;
    std::vector<Job> m_jobs; // threads still running (stale ones included)
};

} // namespace warpline::views
