#include "reportregistry.h"

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

#include <array>

namespace warpline::model {

namespace {

Table kernelsReport(const TraceStore& store, const ReportOptions& options) {
    const KernelGrouping grouping =
        options.groupByLaunchConfig ? KernelGrouping::NameAndLaunchConfig : KernelGrouping::Name;
    return kernelSummaryTable(
        store, kernelSummary(store, grouping, options.window, options.kernelNames), grouping);
}

Table apiReport(const TraceStore& store, const ReportOptions& options) {
    return apiSummaryTable(store, apiSummary(store, options.window));
}

Table nvtxReport(const TraceStore& store, const ReportOptions& options) {
    return nvtxSummaryTable(store, nvtxSummary(store, options.window));
}

Table nvtxKernelsReport(const TraceStore& store, const ReportOptions& options) {
    return nvtxKernelSummaryTable(store, nvtxKernelSummary(store, options.window));
}

Table memopsReport(const TraceStore& store, const ReportOptions& options) {
    return memTimeSummaryTable(store, memOpSummary(store, options.window));
}

Table memsizeReport(const TraceStore& store, const ReportOptions& options) {
    return memSizeSummaryTable(store, memOpSummary(store, options.window));
}

std::string missingPythonStacks(const TraceStore& store) {
    if (!store.callchains().empty())
        return {};
    return "this trace has no Python stacks: record it with 'warpline-record --python-stacks -- "
           "python3 ...', or import a torch.profiler trace recorded with with_stack=True";
}

std::string missingCpuSamples(const TraceStore& store) {
    if (!store.cpuSamples().empty())
        return {};
    return "this trace has no CPU samples: record it with 'warpline-record -- PROGRAM' (CPU "
           "sampling is on by default; a trace recorded before it, with --no-cpu-sampling or "
           "where the kernel refused perf events has none), or export an nsys report recorded "
           "with --sample=process-tree";
}

// Add new reports here (one row each); warpline-stats --help lists them in this order.
const std::array kReports = {
    ReportDef{"kernels", "GPU kernels by total time (nsys cuda_gpu_kern_sum)", kernelsReport,
              nullptr, true},
    ReportDef{"gpu-metrics",
              "GPU metrics per kernel: SM, warps, tensor/FMA pipes, DRAM, L2; memory- or "
              "compute-bound (record with --gpu-metrics)",
              [](const TraceStore& s, const ReportOptions&) {
                  return kernelMetricsTable(s, kernelMetrics(s));
              }},
    ReportDef{"python-lines",
              "GPU time by Python source line, inclusive and self (record with --python-stacks)",
              [](const TraceStore& s, const ReportOptions& o) {
                  return sourceLinesTable(s, sourceReport(s, o.window));
              },
              missingPythonStacks, true},
    ReportDef{"python-functions", "GPU time by Python function, inclusive and self",
              [](const TraceStore& s, const ReportOptions& o) {
                  return sourceFunctionsTable(s, sourceReport(s, o.window));
              },
              missingPythonStacks, true},
    ReportDef{"cpu-samples",
              "CPU samples by function: where the program's threads ran (self, total) and waited",
              [](const TraceStore& s, const ReportOptions& o) {
                  return cpuSamplesTable(s, cpuSampleSummary(s, o.window, o.gpuIdleOnly));
              },
              missingCpuSamples, true},
    ReportDef{"cpu-tree",
              "CPU samples top-down: the call tree of the program's threads' stacks, running and "
              "waiting",
              [](const TraceStore& s, const ReportOptions& o) {
                  return cpuTreeTable(s, cpuSampleTree(s, o.window, o.gpuIdleOnly));
              },
              missingCpuSamples, true},
    ReportDef{"api", "CUDA runtime and driver API calls (nsys cuda_api_sum)", apiReport, nullptr,
              true},
    ReportDef{"nvtx", "NVTX ranges (nsys nvtx_sum)", nvtxReport, nullptr, true},
    ReportDef{"nvtx-kernels", "kernels launched inside each NVTX range (nsys nvtx_kern_sum)",
              nvtxKernelsReport, nullptr, true},
    ReportDef{"memops", "memory copies and sets by time (nsys cuda_gpu_mem_time_sum)", memopsReport,
              nullptr, true},
    ReportDef{"memsize", "memory copies and sets by size (nsys cuda_gpu_mem_size_sum)",
              memsizeReport, nullptr, true},
    ReportDef{"runahead", "launch lag and queue depth per stream: how far the CPU ran ahead",
              [](const TraceStore& s, const ReportOptions&) { return runAheadReport(s); }},
    ReportDef{"syncs", "calls where the CPU waited for the GPU, grouped, with the stalled share",
              [](const TraceStore& s, const ReportOptions&) { return syncStallReport(s); }},
    ReportDef{"gaps", "GPU idle gaps over 10 us by cause (host-wait or other) and next op",
              [](const TraceStore& s, const ReportOptions&) { return gapReport(s); }},
    ReportDef{"utilization", "GPU busy and idle time per device; launch-bound check",
              [](const TraceStore& s, const ReportOptions&) { return utilizationReport(s); }},
    ReportDef{
        "steps", "training steps: time, GPU busy, kernel/copy/set, sync wait, where the time went",
        [](const TraceStore& s, const ReportOptions&) { return stepReport(s); },
        [](const TraceStore& s) { return analyzeSteps(s, StepDetail::Phases).noStepsReason; }},
    ReportDef{"insights", "plain-language findings ranked by the time at stake",
              [](const TraceStore& s, const ReportOptions&) { return insightReport(s); }},
    ReportDef{"ranks", "per rank of a distributed job: steps, comm time, wait, times slowest",
              [](const TraceStore& s, const ReportOptions&) { return crossRankReport(s); }},
    ReportDef{"rank-steps", "per step across ranks: the slowest rank, its lateness, arrivals",
              [](const TraceStore& s, const ReportOptions&) { return rankStepReport(s); }},
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

} // namespace warpline::model
