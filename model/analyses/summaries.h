#pragma once

// Summaries over a TraceStore, with the columns and order of the `nsys stats` reports they mirror.
// Each comes as typed rows (for the GUI: ids to select the matching spans) and as a Table (for
// export and warpline-stats). Formulas and definitions: docs/analyses.md.
//
// Every function is a pure function of the store (and window): safe to run on a worker thread
// while other threads read the same store.

#include "durationstats.h"
#include "table.h"
#include "tracestore.h"

#include <array>
#include <cstdint>
#include <limits>
#include <vector>

namespace warpline::model {

// Restricts a summary to events whose start lies in [t0, t1) (ns). Default: everything.
struct TimeWindow {
    int64_t t0 = std::numeric_limits<int64_t>::min();
    int64_t t1 = std::numeric_limits<int64_t>::max();

    friend bool operator==(const TimeWindow&, const TimeWindow&) = default;
};

// --- kernels (nsys cuda_gpu_kern_sum, cuda_gpu_kern_gb_sum) -----------------------------------

enum class KernelGrouping { Name, NameAndLaunchConfig };
// Which name a kernel row has (nsys stats' :base and :mangled options): the demangled name
// ("void at::native::reduce_kernel<512, 1, ...>(...)"), its base (nsys's shortName column:
// "reduce_kernel", so every instantiation of a template is one row), or the mangled name. A
// kernel without the name asked for keeps its demangled one.
enum class KernelNaming { Full, Base, Mangled };

struct KernelSummaryRow {
    NameId name = kNoName;          // demangled name (or another, KernelNaming)
    std::array<int32_t, 3> grid{};  // set for KernelGrouping::NameAndLaunchConfig
    std::array<int32_t, 3> block{}; // "
    double timePercent = 0;         // of the total kernel time in the summary
    DurationStats stats;
    // Theoretical occupancy (occupancy.h) over the launch configurations of the row's kernels:
    // the lowest and highest, and what limits the lowest. Not set when no config's is known.
    bool occupancyKnown = false;
    double occupancyMin = 0;       // %
    double occupancyMax = 0;       // %
    uint8_t occupancyLimiters = 0; // OccupancyLimiter bits of the configs at occupancyMin
};

// Sorted by total time descending, then name ascending.
std::vector<KernelSummaryRow> kernelSummary(const TraceStore& store,
                                            KernelGrouping grouping = KernelGrouping::Name,
                                            TimeWindow window = {},
                                            KernelNaming naming = KernelNaming::Full);
// Time (%), Total Time (ns), Instances, Avg (ns), Med (ns), Min (ns), Max (ns), StdDev (ns),
// [GridXYZ, BlockXYZ,] Name, Theoretical Occupancy ("75%", "50–100%" or "unknown"), Occupancy
// Limiter. The last two are Warpline's, after nsys's columns.
Table kernelSummaryTable(const TraceStore& store, const std::vector<KernelSummaryRow>& rows,
                         KernelGrouping grouping = KernelGrouping::Name);

// --- CUDA API calls (nsys cuda_api_sum) -------------------------------------------------------

struct ApiSummaryRow {
    NameId name = kNoName; // without the _vNNNN suffix
    double timePercent = 0;
    DurationStats stats;
};

// Runtime and driver calls at every nesting depth; sorted by total time descending, then name.
std::vector<ApiSummaryRow> apiSummary(const TraceStore& store, TimeWindow window = {});
// Time (%), Total Time (ns), Num Calls, Avg (ns), Med (ns), Min (ns), Max (ns), StdDev (ns), Name
Table apiSummaryTable(const TraceStore& store, const std::vector<ApiSummaryRow>& rows);

// --- NVTX ranges (nsys nvtx_sum) --------------------------------------------------------------

struct NvtxSummaryRow {
    NameId name = kNoName;   // the range's text (with NvtxGrouping::Numbered, of one instance)
    NameId domain = kNoName; // kNoName: default domain
    NvtxStyle style = NvtxStyle::PushPop;
    double timePercent = 0;
    DurationStats stats;
    bool numbered = false;           // NvtxGrouping::Numbered: ranges "step 0", "step 1", ...
    std::vector<EventRef> instances; // NvtxSummaryOptions::instances: nvtxTracks(), by start
};

// Name: by exact text, as nsys nvtx_sum. Numbered: a range name with a trailing counter groups
// with its siblings ("step 0" ... "step 29" -> one row "step N"; normalizedRangeName()).
enum class NvtxGrouping { Name, Numbered };
struct NvtxSummaryOptions {
    TimeWindow window;
    NvtxGrouping grouping = NvtxGrouping::Name;
    bool instances = false; // fill NvtxSummaryRow::instances
};

// Push/pop and start/end ranges (not marks), grouped by (domain, text, style); unclosed ranges
// count up to the trace end. Sorted by total time descending, then range name.
std::vector<NvtxSummaryRow> nvtxSummary(const TraceStore& store, TimeWindow window = {});
std::vector<NvtxSummaryRow> nvtxSummary(const TraceStore& store, const NvtxSummaryOptions& options);
// Time (%), Total Time (ns), Instances, Avg (ns), Med (ns), Min (ns), Max (ns), StdDev (ns),
// Style, Range  (Range is "domain:text" outside the default domain; "step N" for a numbered row)
Table nvtxSummaryTable(const TraceStore& store, const std::vector<NvtxSummaryRow>& rows);

// --- kernels per NVTX range (nsys nvtx_kern_sum) ----------------------------------------------

struct NvtxKernelRow {
    NameId range = kNoName;
    NameId domain = kNoName;
    NvtxStyle style = NvtxStyle::PushPop;
    uint64_t rangeInstances = 0; // instances of the range that launched this kernel at least once
    NameId kernel = kNoName;     // demangled name
    DurationStats stats;         // GPU durations of those kernels
};

// A kernel belongs to a range instance when its launching API call starts inside the range on the
// range's thread (range.start <= call.start < range.end). A kernel counts once per range name even
// when same-named ranges nest or overlap. Sorted by range name, style, then kernel total time
// descending, then kernel name.
std::vector<NvtxKernelRow> nvtxKernelSummary(const TraceStore& store, TimeWindow window = {});
// Range, Style, Range Instances, Kernel Instances, Total Time (ns), Avg (ns), Med (ns), Min (ns),
// Max (ns), StdDev (ns), Kernel Name
Table nvtxKernelSummaryTable(const TraceStore& store, const std::vector<NvtxKernelRow>& rows);

// --- memory operations (nsys cuda_gpu_mem_time_sum, cuda_gpu_mem_size_sum) --------------------

struct MemOpSummaryRow {
    NameId operation = kNoName; // "[CUDA memcpy Host-to-Device]", "[CUDA memset]", ...
    double timePercent = 0;
    DurationStats time; // ns
    DurationStats size; // bytes (same statistics over the byte counts)
};

// Sorted by total time descending, then operation name.
std::vector<MemOpSummaryRow> memOpSummary(const TraceStore& store, TimeWindow window = {});
// Time (%), Total Time (ns), Count, Avg (ns), Med (ns), Min (ns), Max (ns), StdDev (ns), Operation
Table memTimeSummaryTable(const TraceStore& store, const std::vector<MemOpSummaryRow>& rows);
// Total (MB), Count, Avg (MB), Med (MB), Min (MB), Max (MB), StdDev (MB), Operation; MB = 10^6
// bytes as in nsys; rows sorted by total bytes descending.
Table memSizeSummaryTable(const TraceStore& store, const std::vector<MemOpSummaryRow>& rows);

} // namespace warpline::model
