#include "reportregistry.h"

#include "analysishelpers.h"
#include "cpuactivity.h"
#include "crossrank.h"
#include "gpugaps.h"
#include "insights.h"
#include "kernelmetrics.h"
#include "runahead.h"
#include "sourcelines.h"
#include "steps.h"
#include "summaries.h"
#include "syncstalls.h"

#include <algorithm>
#include <array>

namespace warpline::model {

namespace {

RowTarget rangeTarget(int64_t t0, int64_t t1, EventId event = {}) {
    RowTarget target;
    target.t0 = t0;
    target.t1 = std::max(t1, t0 + 1);
    target.event = event;
    return target;
}

// A report whose rows each point at one name: selecting a row finds that kernel, API function or
// memory operation on the timeline.
template <typename Rows, typename Aim> Report named(Table table, const Rows& rows, Aim aim) {
    Report report{std::move(table), {}};
    for (const auto& row : rows) {
        RowTarget target;
        aim(target, row);
        report.targets.push_back(target);
    }
    return report;
}

// Targets for a table of one row per analysed item and then summary rows (which get none); a
// table whose rows do not match its items gets none at all.
void padTargets(Report& report) {
    if (report.targets.size() > report.table.rowCount())
        report.targets.clear(); // not one per row: none at all
    else
        report.targets.resize(report.table.rowCount());
}

// The window's label for a row of one demangled kernel name (shortNamesByName), where it differs
// from the name.
void labelKernel(const TraceStore& store, const std::unordered_map<NameId, NameId>& shortNames,
                 RowTarget& t) {
    const auto it = shortNames.find(t.kernel);
    if (it == shortNames.end() || it->second == kNoName)
        return;
    std::string label = kernelLabel(store, it->second, t.kernel);
    if (label != store.text(t.kernel))
        t.label = std::move(label);
}

Report untargeted(Table table) {
    return {std::move(table), {}};
}

// --- the nsys-style summaries, over options.window --------------------------------------------

Report kernelsReport(TraceAnalyses& a, const ReportOptions& o) {
    const KernelGrouping grouping =
        o.groupByLaunchConfig ? KernelGrouping::NameAndLaunchConfig : KernelGrouping::Name;
    const auto rows = kernelSummary(a.store(), grouping, o.window, o.kernelNames);
    const auto shortNames = o.kernelNames == KernelNaming::Full
                                ? shortNamesByName(a.store())
                                : std::unordered_map<NameId, NameId>();
    return named(kernelSummaryTable(a.store(), rows, grouping), rows,
                 [&](RowTarget& t, const auto& row) {
                     t.kernel = row.name;
                     labelKernel(a.store(), shortNames, t);
                 });
}

Report apiReport(TraceAnalyses& a, const ReportOptions& o) {
    const auto rows = apiSummary(a.store(), o.window);
    return named(apiSummaryTable(a.store(), rows), rows,
                 [](RowTarget& t, const auto& row) { t.apiName = row.name; });
}

// One row per NVTX range name (nsys nvtx_sum), or with numbered names grouped ("step 0" ...
// "step 29" as "step N"). A row highlights every instance and zooms to the one of median
// duration.
Report nvtxRanges(TraceAnalyses& a, const ReportOptions& o, NvtxGrouping grouping) {
    const TraceStore& store = a.store();
    NvtxSummaryOptions options;
    options.window = o.window;
    options.grouping = grouping;
    options.instances = true;
    const auto rows = nvtxSummary(store, options);
    Report report{nvtxSummaryTable(store, rows), {}};
    const auto duration = [&](EventRef r) { return store.nvtxTracks()[r.track].duration(r.index); };
    std::vector<EventRef> byDuration;
    for (const NvtxSummaryRow& row : rows) {
        RowTarget target;
        byDuration = row.instances;
        if (!byDuration.empty()) {
            const auto middle = byDuration.begin() + static_cast<long>(byDuration.size() / 2);
            std::nth_element(byDuration.begin(), middle, byDuration.end(),
                             [&](EventRef x, EventRef y) { return duration(x) < duration(y); });
            const NvtxTrack& track = store.nvtxTracks()[middle->track];
            target = rangeTarget(track.start(middle->index), track.end(middle->index),
                                 EventId::nvtx(*middle));
        }
        for (const EventRef& ref : row.instances)
            target.related.push_back(EventId::nvtx(ref));
        report.targets.push_back(std::move(target));
    }
    return report;
}

Report nvtxKernelsReport(TraceAnalyses& a, const ReportOptions& o) {
    return untargeted(nvtxKernelSummaryTable(a.store(), nvtxKernelSummary(a.store(), o.window)));
}

Report memopsReport(TraceAnalyses& a, const ReportOptions& o) {
    const auto rows = a.memOps(o.window);
    return named(memTimeSummaryTable(a.store(), *rows), *rows,
                 [](RowTarget& t, const auto& row) { t.kernel = row.operation; });
}

Report memsizeReport(TraceAnalyses& a, const ReportOptions& o) {
    const auto rows = a.memOps(o.window);
    return named(memSizeSummaryTable(a.store(), *rows), *rows,
                 [](RowTarget& t, const auto& row) { t.kernel = row.operation; });
}

// GPU time by Python line or function; a row selects its kernels.
Report sourceRows(Table table, const std::vector<SourceRow>& rows) {
    Report report{std::move(table), {}};
    for (const SourceRow& row : rows) {
        RowTarget target;
        for (const EventRef& op : row.ops)
            target.related.push_back(EventId::gpu(op));
        report.targets.push_back(std::move(target));
    }
    return report;
}

Report pythonLinesReport(TraceAnalyses& a, const ReportOptions& o) {
    const auto report = a.sourceLines(o.window);
    return sourceRows(sourceLinesTable(a.store(), *report), report->lines);
}

Report pythonFunctionsReport(TraceAnalyses& a, const ReportOptions& o) {
    const auto report = a.sourceLines(o.window);
    return sourceRows(sourceFunctionsTable(a.store(), *report), report->functions);
}

Report cpuSamplesReport(TraceAnalyses& a, const ReportOptions& o) {
    return untargeted(
        cpuSamplesTable(a.store(), cpuSampleSummary(a.store(), o.window, o.gpuIdleOnly)));
}

Report cpuTreeReport(TraceAnalyses& a, const ReportOptions& o) {
    return untargeted(cpuTreeTable(a.store(), cpuSampleTree(a.store(), o.window, o.gpuIdleOnly)));
}

// --- the analyses, over the whole trace ---------------------------------------------------------

Report gpuMetricsReport(TraceAnalyses& a, const ReportOptions&) {
    const auto metrics = a.kernelMetrics();
    const auto shortNames = shortNamesByName(a.store());
    return named(kernelMetricsTable(a.store(), *metrics), metrics->rows,
                 [&](RowTarget& t, const auto& row) {
                     t.kernel = row.name;
                     labelKernel(a.store(), shortNames, t);
                 });
}

// One row per stream, then "All streams": a stream's row zooms to its deepest backlog, from the
// moment it peaked until it drained.
Report runAheadReport(TraceAnalyses& a, const ReportOptions& options) {
    const auto analysis = a.runAhead(options.window);
    Report report{runAheadTable(a.store(), *analysis), {}};
    for (const StreamRunAhead& stream : analysis->streams) {
        RowTarget target;
        if (stream.maxDepth > 0)
            target = rangeTarget(stream.maxDepthTime, stream.drainTime);
        report.targets.push_back(target);
    }
    padTargets(report);
    return report;
}

// The stalls grouped by thread, call and origin; a row highlights its calls and zooms to the
// longest.
Report syncsReport(TraceAnalyses& a, const ReportOptions& options) {
    const auto analysis = a.syncStalls(options.window);
    const std::vector<StallGroup> groups = groupSyncStalls(a.store(), *analysis);
    Report report{syncStallGroupTable(a.store(), *analysis, groups), {}};
    for (const StallGroup& group : groups) {
        RowTarget target;
        const SyncStall* longest = nullptr;
        for (const uint32_t k : group.stalls) {
            const SyncStall& stall = analysis->stalls[k];
            if (stall.call.valid())
                target.related.push_back(EventId::api(stall.call));
            if (!longest || stall.blocked() > longest->blocked())
                longest = &stall;
        }
        if (longest) {
            const std::vector<EventId> related = std::move(target.related);
            target = rangeTarget(longest->start, longest->end,
                                 longest->call.valid() ? EventId::api(longest->call) : EventId{});
            target.related = related;
        }
        report.targets.push_back(std::move(target));
    }
    padTargets(report);
    return report;
}

// One row per stall; a row zooms to it.
Report syncStallsReport(TraceAnalyses& a, const ReportOptions& options) {
    const auto analysis = a.syncStalls(options.window);
    Report report{syncStallTable(a.store(), *analysis), {}};
    for (const SyncStall& stall : analysis->stalls)
        report.targets.push_back(rangeTarget(
            stall.start, stall.end, stall.call.valid() ? EventId::api(stall.call) : EventId{}));
    padTargets(report);
    return report;
}

// The steps' phases and the GPU gaps (`gaps`), computed side by side: the gap reports say
// which phase each gap lies in.
template <typename Gaps>
std::pair<std::shared_ptr<const StepAnalysis>, std::shared_ptr<const GpuGapAnalysis>>
phasesAndGaps(TraceAnalyses& a, Gaps gaps) {
    std::shared_ptr<const StepAnalysis> steps;
    std::shared_ptr<const GpuGapAnalysis> found;
    runBoth([&] { steps = a.steps(StepDetail::Phases); }, [&] { found = gaps(); });
    return {std::move(steps), std::move(found)};
}

// The gaps that start in the window (the summary does not show the launch-bound check).
Report gapsReport(TraceAnalyses& a, const ReportOptions& options) {
    const auto [steps, gaps] = phasesAndGaps(a, [&] { return a.gaps(options.window); });
    return untargeted(gapSummaryTable(a.store(), *gaps, steps.get()));
}

// One row per gap, with the phase it lies in; a row zooms to it.
Report gapListReport(TraceAnalyses& a, const ReportOptions& options) {
    const auto [steps, gaps] = phasesAndGaps(a, [&] { return a.gaps(options.window); });
    Report report{gapTable(a.store(), *gaps, steps.get()), {}};
    for (const GpuGap& gap : gaps->gaps)
        report.targets.push_back(rangeTarget(
            gap.start, gap.end, gap.after.valid() ? EventId::gpu(gap.after) : EventId{}));
    padTargets(report);
    return report;
}

Report utilizationReport(TraceAnalyses& a, const ReportOptions&) {
    const auto [steps, gaps] =
        phasesAndGaps(a, [&] { return a.gaps(GapOptions::LaunchBound::AllKernels); });
    return untargeted(utilizationByPhase(a.store(), *steps, *gaps));
}

// One row per step (a row zooms to it), then the median and p95 rows.
Report stepsReport(TraceAnalyses& a, const ReportOptions&) {
    const auto analysis = a.steps();
    Report report{stepTable(a.store(), *analysis), {}};
    for (const Step& step : analysis->steps)
        report.targets.push_back(rangeTarget(
            step.start, step.end, step.range.valid() ? EventId::nvtx(step.range) : EventId{}));
    padTargets(report);
    return report;
}

// A finding highlights its events and zooms to them.
Report insightsReport(TraceAnalyses& a, const ReportOptions&) {
    const TraceStore& store = a.store();
    const auto insights = a.insights();
    Report report{insightTable(store, *insights), {}};
    for (const Insight& insight : *insights) {
        RowTarget target;
        for (const EventRef& ref : insight.apiCalls)
            target.related.push_back(EventId::api(ref));
        for (const EventRef& ref : insight.gpuOps)
            target.related.push_back(EventId::gpu(ref));
        std::stable_sort(target.related.begin(), target.related.end(),
                         [&](const EventId& x, const EventId& y) {
                             return eventStart(store, x) < eventStart(store, y);
                         });
        if (!target.related.empty()) {
            const int64_t t0 = eventStart(store, target.related.front());
            int64_t t1 = t0;
            for (const EventId& e : target.related)
                t1 = std::max(t1, eventEnd(store, e));
            target.t0 = t0;
            target.t1 = std::max(t1, t0 + 1);
            target.event = target.related.front();
        }
        report.targets.push_back(std::move(target));
    }
    padTargets(report);
    return report;
}

Report ranksReport(TraceAnalyses& a, const ReportOptions&) {
    return untargeted(crossRankTable(a.store(), *a.crossRank()));
}

Report rankStepsReport(TraceAnalyses& a, const ReportOptions&) {
    return untargeted(rankStepTable(a.store(), *a.crossRank()));
}

// --- what a trace may lack
// ------------------------------------------------------------------------

std::string missingPythonStacks(TraceAnalyses& a) {
    const TraceStore& store = a.store();
    if (!store.callchains().empty())
        return {};
    return "this trace has no Python stacks: record it with 'warpline-record --python-stacks -- "
           "python3 ...', or import a torch.profiler trace recorded with with_stack=True";
}

std::string missingCpuSamples(TraceAnalyses& a) {
    const TraceStore& store = a.store();
    if (!store.cpuSamples().empty())
        return {};
    return "this trace has no CPU samples: record it with 'warpline-record -- PROGRAM' (CPU "
           "sampling is on by default; a trace recorded before it, with --no-cpu-sampling or "
           "where the kernel refused perf events has none), or export an nsys report recorded "
           "with --sample=process-tree";
}

std::string missingGpuMetrics(TraceAnalyses& a) {
    const TraceStore& store = a.store();
    if (!store.gpuMetrics().empty())
        return {};
    return "this trace has no GPU metrics: record it with 'warpline-record --gpu-metrics'";
}

std::string missingSession(TraceAnalyses& a) {
    const TraceStore& store = a.store();
    if (store.isSession())
        return {};
    return "one trace is one rank: open the traces of all ranks together (several files, or "
           "their folder) to compare them";
}

std::string missingSteps(TraceAnalyses& a) {
    return a.steps(StepDetail::Phases)->noStepsReason;
}

// Add new reports here (one row each); warpline-stats --help lists them in this order and the
// window docks those marked docked in it.
constexpr bool kWindowed = true;
constexpr Dock kDocked = Dock::Always;
constexpr Dock kIfAvailable = Dock::WhenAvailable;
const std::array kReports = {
    ReportDef{"insights", "Insights", "plain-language findings ranked by the time at stake",
              insightsReport, nullptr, false, kDocked},
    ReportDef{"steps", "Steps",
              "training steps: time, GPU busy, kernel/copy/set, sync wait, where the time went",
              stepsReport, missingSteps, false, kDocked},
    ReportDef{"kernels", "Kernels", "GPU kernels by total time (nsys cuda_gpu_kern_sum)",
              kernelsReport, nullptr, kWindowed, kDocked},
    ReportDef{"gpu-metrics", "GPU metrics",
              "GPU metrics per kernel: SM, warps, tensor/FMA pipes, DRAM, L2; memory- or "
              "compute-bound (record with --gpu-metrics)",
              gpuMetricsReport, missingGpuMetrics, false, kIfAvailable},
    ReportDef{"python-lines", "Python lines",
              "GPU time by Python source line, inclusive and self (record with --python-stacks)",
              pythonLinesReport, missingPythonStacks, kWindowed, kIfAvailable},
    ReportDef{"python-functions", "Python functions",
              "GPU time by Python function, inclusive and self", pythonFunctionsReport,
              missingPythonStacks, kWindowed, kIfAvailable},
    ReportDef{"cpu-samples", "CPU samples",
              "CPU samples by function: where the program's threads ran (self, total) and waited",
              cpuSamplesReport, missingCpuSamples, kWindowed, kIfAvailable},
    ReportDef{"cpu-tree", "CPU call tree",
              "CPU samples top-down: the call tree of the program's threads' stacks, running and "
              "waiting",
              cpuTreeReport, missingCpuSamples, kWindowed},
    ReportDef{"api", "CUDA API", "CUDA runtime and driver API calls (nsys cuda_api_sum)", apiReport,
              nullptr, kWindowed, kDocked},
    ReportDef{"nvtx", "NVTX by name", "NVTX ranges by name (nsys nvtx_sum)",
              [](TraceAnalyses& a, const ReportOptions& o) {
                  return nvtxRanges(a, o, NvtxGrouping::Name);
              },
              nullptr, kWindowed},
    ReportDef{"nvtx-grouped", "NVTX",
              "NVTX ranges, numbered names grouped (\"step 0\", \"step 1\" ... as \"step N\")",
              [](TraceAnalyses& a, const ReportOptions& o) {
                  return nvtxRanges(a, o, NvtxGrouping::Numbered);
              },
              nullptr, kWindowed, kDocked},
    ReportDef{"nvtx-kernels", "NVTX kernels",
              "kernels launched inside each NVTX range (nsys nvtx_kern_sum)", nvtxKernelsReport,
              nullptr, kWindowed},
    ReportDef{"memops", "Memory operations",
              "memory copies and sets by time (nsys cuda_gpu_mem_time_sum)", memopsReport, nullptr,
              kWindowed, kDocked},
    ReportDef{"memsize", "Memory sizes",
              "memory copies and sets by size (nsys cuda_gpu_mem_size_sum)", memsizeReport, nullptr,
              kWindowed},
    ReportDef{"runahead", "Run-ahead",
              "launch lag and queue depth per stream: how far the CPU ran ahead", runAheadReport,
              nullptr, kWindowed, kDocked},
    ReportDef{"syncs", "Syncs by call",
              "calls where the CPU waited for the GPU, grouped, with the stalled share",
              syncsReport, nullptr, kWindowed},
    ReportDef{"sync-stalls", "Sync stalls",
              "every call where the CPU waited for the GPU: how long, what it waited for",
              syncStallsReport, nullptr, kWindowed, kDocked},
    ReportDef{"utilization", "GPU utilization",
              "GPU busy and idle time per device; launch-bound check", utilizationReport, nullptr,
              false, kDocked},
    ReportDef{"gaps", "GPU gaps by cause",
              "GPU idle gaps over 10 us by cause (host-wait or other) and next op", gapsReport,
              nullptr, kWindowed},
    ReportDef{"gap-list", "GPU idle gaps",
              "every GPU idle gap over 10 us: when, its cause, the ops around it, its phase",
              gapListReport, nullptr, kWindowed, kDocked},
    ReportDef{"ranks", "Ranks",
              "per rank of a distributed job: steps, comm time, wait, times slowest", ranksReport,
              missingSession, false, kIfAvailable},
    ReportDef{"rank-steps", "Rank steps",
              "per step across ranks: the slowest rank, its lateness, arrivals", rankStepsReport,
              missingSession, false, kIfAvailable},
};

} // namespace

std::span<const ReportDef> ReportRegistry::all() {
    return kReports;
}

const ReportDef* ReportRegistry::find(std::string_view name) {
    for (const ReportDef& report : kReports) {
        if (report.name == name)
            return &report;
    }
    return nullptr;
}

Table ReportDef::run(const TraceStore& store, const ReportOptions& options) const {
    TraceAnalyses analyses(store);
    return build(analyses, options).table;
}

bool ReportRegistry::docked(const ReportDef& report, TraceAnalyses& analyses) {
    return report.dock == Dock::Always || (report.dock == Dock::WhenAvailable &&
                                           (!report.missing || report.missing(analyses).empty()));
}

} // namespace warpline::model
