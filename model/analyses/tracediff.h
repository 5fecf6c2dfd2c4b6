#pragma once

// Comparing two traces (a "before" A and an "after" B): kernel, API and NVTX summaries side by
// side, matched by name, each row judged added, removed, faster, slower or unchanged.
//
//  - Rows are matched by their text: kernels by demangled name, API calls by name without the
//    _vNNNN suffix, NVTX ranges by (domain, text, style) shown as the nvtx report shows them.
//  - ratio = average duration in B / average in A (both present only); below 1 is faster.
//    A row present on both sides is Unchanged when |ratio - 1| <= tolerance, else Faster or
//    Slower. Present only in B: Added; only in A: Removed.
//  - Time at stake = total time in B - total time in A (ns): what the change gained (negative) or
//    cost (positive) over the whole scope, counts included. Rows are sorted by its magnitude,
//    largest first, then by name.
//  - A scope restricts one side: a time window (events whose start lies in it, as the summaries)
//    and/or an NVTX range name: then only work launched inside instances of that range counts
//    (a kernel, copy or set whose launch call starts inside the range on the range's thread, as
//    nvtx-kernels attributes them; API calls and NVTX ranges that start inside it on its thread,
//    the range instances themselves excluded). That compares two phases of one trace, e.g. the
//    "unfused" against the "fused" range of the gelu workload.
//
// Pure functions of the stores: safe on a worker thread while other threads read them.

#include "durationstats.h"
#include "summaries.h"
#include "table.h"
#include "tracestore.h"

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace warpline::model {

enum class DiffSubject { Kernels, Api, Nvtx };
enum class DiffStatus { Unchanged, Faster, Slower, Added, Removed };

// "kernels", "api", "nvtx"; nullopt for anything else.
std::optional<DiffSubject> parseDiffSubject(std::string_view name);
// "unchanged", "faster", "slower", "added", "removed".
const char* diffStatusName(DiffStatus status);

struct DiffScope {
    TimeWindow window;
    std::string nvtxRange; // empty: no range restriction
};

struct DiffOptions {
    DiffScope a, b;
    double tolerance = 0.05; // relative change of the average that still counts as unchanged
};

struct TraceDiffRow {
    std::string name;
    DiffStatus status = DiffStatus::Unchanged;
    DurationStats a;         // count 0 when absent from A
    DurationStats b;         // count 0 when absent from B
    double ratio = 0;        // b.average / a.average; 0 unless present on both sides
    int64_t timeAtStake = 0; // b.total - a.total (ns)
};

// Thrown when a scope names an NVTX range the trace does not have.
class DiffScopeError : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

std::vector<TraceDiffRow> diffTraces(const TraceStore& a, const TraceStore& b, DiffSubject subject,
                                     const DiffOptions& options = {});

// Status, Time at Stake (ns), Ratio (B/A), Count A, Count B, Total A (ns), Total B (ns),
// Avg A (ns), Avg B (ns), Name. Empty cells for the side a row is absent from.
Table traceDiffTable(const std::vector<TraceDiffRow>& rows);

} // namespace warpline::model
