#pragma once

// ReportRegistry: every report, defined once: its id (warpline-stats --report ID), its title (the
// window's tab), its table and each row's target. warpline-stats prints a report's table; the
// window docks the reports marked to be docked, in this order, and exports the same bytes
// warpline-stats writes. Where the window wants another table, it is
// another report here (sync-stalls beside syncs), never a second definition.
//
// To add a report, write a function `Report build(TraceAnalyses&, const ReportOptions&)` and add
// one row to the table in reportregistry.cpp; --help, --report, the window's tabs and its export
// menu pick it up with no other change. A report reads the analyses it needs from TraceAnalyses,
// so each is computed once per trace however many reports use it.

#include "report.h"
#include "summaries.h"
#include "traceanalyses.h"
#include "tracestore.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace warpline::model {

struct ReportOptions {
    bool groupByLaunchConfig = false;              // kernels: group by name + grid + block
    KernelNaming kernelNames = KernelNaming::Full; // kernels: --names full|base|mangled
    // Only the work starting in it (GPU ops, API calls, NVTX ranges), for the reports marked
    // `windowed`: warpline-stats --phase, the window's Statistics Over. The whole trace by
    // default.
    TimeWindow window;
    // cpu-samples: only the samples taken while no GPU op ran (warpline-stats --gpu-idle).
    bool gpuIdleOnly = false;
};

// Whether the window shows a report: never (warpline-stats and the export menu only), always, or
// when the trace has what it needs (ReportDef::missing says nothing).
enum class Dock : uint8_t { No, Always, WhenAvailable };

struct ReportDef {
    std::string_view name;        // "kernels": the --report argument
    std::string_view title;       // "Kernels": the window's tab
    std::string_view description; // one line for --help
    Report (*build)(TraceAnalyses& analyses, const ReportOptions& options);
    // Why this trace gives no rows (it lacks what the report needs: how to record it; no steps
    // were found: why), or empty. May be null: every trace has what it needs.
    std::string (*missing)(TraceAnalyses& analyses) = nullptr;
    bool windowed = false; // honours ReportOptions::window
    Dock dock = Dock::No;

    // The table alone, from analyses of its own: for one report of a store (tests, tools).
    Table run(const TraceStore& store, const ReportOptions& options = {}) const;
};

class ReportRegistry {
public:
    // Every report, in --help order (the window's tab order too).
    static std::span<const ReportDef> all();
    // The report called `name`, or nullptr.
    static const ReportDef* find(std::string_view name);
    // Whether the window shows `report` for the trace of `analyses`.
    static bool docked(const ReportDef& report, TraceAnalyses& analyses);
};

} // namespace warpline::model
