#pragma once

// ReportRegistry: the named reports warpline-stats offers (--report NAME) and the GUI can list.
// To add a report (run-ahead, syncs, gaps, insights ...), write a function
// `Table run(const TraceStore&, const ReportOptions&)` and add one row to the table in
// reportregistry.cpp; the CLI's --help and --report pick it up with no other change.

#include "summaries.h"
#include "table.h"
#include "tracestore.h"

#include <span>
#include <string>
#include <string_view>

namespace warpline::model {

struct ReportOptions {
    bool groupByLaunchConfig = false;              // kernels: group by name + grid + block
    KernelNaming kernelNames = KernelNaming::Full; // kernels: --names full|base|mangled
    // Only the work starting in it (GPU ops, API calls, NVTX ranges), for the reports marked
    // `windowed`: warpline-stats --phase (a phase of the training steps). The whole trace by
    // default.
    TimeWindow window;
    // cpu-samples: only the samples taken while no GPU op ran (warpline-stats --gpu-idle).
    bool gpuIdleOnly = false;
};

struct ReportDef {
    std::string_view name;        // "kernels": the --report argument
    std::string_view description; // one line for --help
    Table (*run)(const TraceStore& store, const ReportOptions& options);
    // For a report that needs something not every trace has: why this trace gives no rows and
    // how to record what it needs, or empty when it has it. May be null.
    std::string (*missing)(const TraceStore& store) = nullptr;
    bool windowed = false; // honours ReportOptions::window
};

class ReportRegistry {
public:
    // Every report, in --help order.
    static std::span<const ReportDef> all();
    // The report called `name`, or nullptr.
    static const ReportDef* find(std::string_view name);
};

} // namespace warpline::model
