#include "trace/traceloadcontroller.h"

#include "timeline/overviewstrip.h"
#include "timeline/timelinewidget.h"
#include "trace/traceanalyzer.h"
#include "traceerror.h"
#include "traceloader.h"
#include "traceopener.h"
#include "tracesession.h"

#include <QFileInfo>
#include <QPointer>
#include <QThread>
#include <chrono>

namespace warpline::views {

TraceLoadController::TraceLoadController(QObject* parent) : QObject(parent) {
    qRegisterMetaType<std::shared_ptr<const LoadedTrace>>();
}

TraceLoadController::~TraceLoadController() {
    for (Job& job : m_jobs)
        job.cancel->store(true);
    waitForIdle();
    for (Job& job : m_jobs)
        delete job.thread;
}

void TraceLoadController::waitForIdle() {
    for (Job& job : m_jobs) {
        if (job.thread)
            job.thread->wait();
    }
}

void TraceLoadController::cancel() {
    for (Job& job : m_jobs)
        job.cancel->store(true);
    if (m_loading) {
        m_loading = false;
        const int job = m_job;
        ++m_job; // the cancelled job's results are stale from now on
        emit cancelled(job);
    }
}

int TraceLoadController::start(const QStringList& paths) {
    for (Job& job : m_jobs)
        job.cancel->store(true);
    const int id = ++m_job;
    m_loading = true;
    auto cancelFlag = std::make_shared<std::atomic<bool>>(false);
    QPointer<TraceLoadController> self(this);
    const QString path = paths.value(0);
    std::vector<std::string> inputs;
    for (const QString& p : paths)
        inputs.push_back(p.toStdString());
    // One file opens exactly as it always has; anything else goes through the session.
    const bool single = paths.size() == 1 && !QFileInfo(path).isDir();

    QThread* thread = QThread::create([self, id, cancelFlag, inputs, single, path] {
        using Clock = std::chrono::steady_clock;
        std::shared_ptr<const LoadedTrace> result;
        QString error;
        bool wasCancelled = false;
        // Progress reports at most every 50 ms, so a fast loader does not flood the event loop.
        auto lastReport = Clock::now() - std::chrono::seconds(1);
        const auto report = [&](double fraction, const QString& stage) {
            const auto now = Clock::now();
            if (now - lastReport < std::chrono::milliseconds(50))
                return;
            lastReport = now;
            if (self) {
                QMetaObject::invokeMethod(
                    self.data(),
                    [self, id, fraction, stage] {
                        if (self && self->m_job == id && self->m_loading)
                            emit self->progress(id, fraction, stage);
                    },
                    Qt::QueuedConnection);
            }
        };
        try {
            const auto begin = Clock::now();
            model::TraceLoader::Options options;
            options.progress = [&](double fraction) {
                report(0.9 * fraction, QStringLiteral("Reading"));
                return !cancelFlag->load();
            };
            std::vector<std::string> files = inputs;
            if (!single)
                files = model::TraceSession::expandPaths(inputs);
            auto store = std::make_shared<const model::TraceStore>(
                files.size() == 1 ? model::TraceOpener::open(files.front(), options)
                                  : model::TraceSession::open(files, options));
            QStringList filePaths;
            for (const std::string& f : files)
                filePaths << QString::fromStdString(f);
            const double loadSeconds = std::chrono::duration<double>(Clock::now() - begin).count();
            model::GpuActivity gpuActivity = model::gpuActivity(*store);
            if (self) {
                auto partial = std::make_shared<LoadedTrace>();
                partial->path = path;
                partial->paths = filePaths;
                partial->store = store;
                partial->loadSeconds = loadSeconds;
                partial->gpuActivity = gpuActivity;
                std::shared_ptr<const LoadedTrace> stage = std::move(partial);
                QMetaObject::invokeMethod(
                    self.data(),
                    [self, id, stage] {
                        if (self && self->m_job == id && self->m_loading)
                            emit self->storeLoaded(id, stage);
                    },
                    Qt::QueuedConnection);
            }
            report(0.9, QStringLiteral("Analysing"));
            auto trace =
                TraceAnalyzer::analyze(std::move(store), [&] { return cancelFlag->load(); });
            if (!trace) {
                wasCancelled = true;
            } else {
                trace->path = path;
                trace->paths = filePaths;
                trace->loadSeconds = loadSeconds;
                trace->gpuActivity = std::move(gpuActivity);
                result = std::move(trace);
            }
        } catch (const model::LoadCancelled&) {
            wasCancelled = true;
        } catch (const model::TraceError& e) {
            error = QString::fromUtf8(e.what());
        } catch (const std::bad_alloc&) {
            error = QStringLiteral("Not enough memory to load %1.").arg(path);
        } catch (const std::exception& e) {
            error = QString::fromUtf8(e.what());
        }
        if (self) {
            QMetaObject::invokeMethod(
                self.data(),
                [self, id, result, path, error, wasCancelled] {
                    if (self)
                        self->deliver(id, result, path, error, wasCancelled);
                },
                Qt::QueuedConnection);
        }
    });
    m_jobs.push_back({id, cancelFlag, thread});
    connect(thread, &QThread::finished, this, [this, thread] {
        for (auto it = m_jobs.begin(); it != m_jobs.end(); ++it) {
            if (it->thread == thread) {
                m_jobs.erase(it);
                break;
            }
        }
        thread->deleteLater();
    });
    thread->start();
    return id;
}

void TraceLoadController::deliver(int job, std::shared_ptr<const LoadedTrace> trace,
                                  const QString& path, const QString& error, bool wasCancelled) {
    if (job != m_job || !m_loading)
        return; // stale: a newer job started or this one was cancelled
    m_loading = false;
    if (wasCancelled)
        emit cancelled(job);
    else if (!error.isEmpty())
        emit failed(job, path, error);
    else
        emit loaded(job, std::move(trace));
}

} // namespace warpline::views
