#pragma once

// LoadedTrace: everything the window shows for one trace, built off the GUI thread by
// TraceAnalyzer and then read-only (shared between the timeline, the tables and the details
// panel as std::shared_ptr<const LoadedTrace>).

#include "gpuactivity.h"
#include "tables/reporttable.h"
#include "traceanalyses.h"
#include "tracestore.h"

#include <QString>
#include <QStringList>
#include <memory>
#include <optional>
#include <vector>

namespace warpline::views {

struct LoadedTrace {
    // What was opened: the file, or for a session the folder (or the first of several files).
    QString path;
    // The trace files read: one, or one per source of a session (store->sources() order is by
    // rank; this is the order they were given in).
    QStringList paths;
    std::shared_ptr<const model::TraceStore> store;
    // The analyses of `store`, each computed once: the reports below were built from them, and a
    // report the window does not dock is built from them when it is exported.
    std::shared_ptr<model::TraceAnalyses> analyses;
    std::vector<ReportTable> reports; // in the order the window docks them
    // Queue depth per stream (the run-ahead rows); null when the analysis is unavailable.
    std::shared_ptr<const model::RunAheadAnalysis> runAhead;
    // Sync stalls (marks on the CPU rows); null when unavailable.
    std::shared_ptr<const model::SyncStallAnalysis> syncStalls;
    // A session's ranks at their collectives (arrival, wait per step: the wait overlays on the
    // communication kernels and their details, the late-rank insight); null for a single trace.
    std::shared_ptr<const model::CrossRankAnalysis> crossRank;
    // Training steps and the steady state (the view opens on it); null until analysed.
    std::shared_ptr<const model::StepAnalysis> steps;
    std::vector<model::Insight> insights;
    // GPU metrics per kernel name (the gpu-metrics report, the roofline chart); null when the
    // trace has no GPU metric samples.
    std::shared_ptr<const model::KernelMetricsReport> kernelMetrics;
    // Where the GPU's time is (model::gpuActivity of the store: the overview strip's busy shares,
    // the window the view opens on), computed with the store off the GUI thread; unset: the
    // widgets compute it.
    std::optional<model::GpuActivity> gpuActivity;
    double loadSeconds = 0;     // TraceLoader::load
    double analysisSeconds = 0; // summaries and analyses

    const ReportTable* report(const QString& id) const {
        for (const ReportTable& r : reports) {
            if (r.id == id)
                return &r;
        }
        return nullptr;
    }
};

} // namespace warpline::views
