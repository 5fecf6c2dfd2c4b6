#pragma once

// Small shared pieces of the run-ahead, sync-stall, gap and insight analyses: order statistics,
// name classification and the plain-language duration format insights use. Pure functions, no
// state; safe on any thread.

#include "tracestore.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace warpline::model {

// Runs a() on this thread and b() on a second one at the same time (both here, one after the
// other, on a machine with one hardware thread); returns when both are done. An exception from
// either is rethrown here (a's first), once both have finished.
void runBoth(const std::function<void()>& a, const std::function<void()>& b);

// Whether a Python frame is the program's own code: not an installed package (site-packages,
// dist-packages), the Python library (lib/pythonX.Y), PyTorch's tree (a torch/ folder, or a path
// starting "torch/" as the PyTorch profiler writes them), or a
// pseudo-frame without a file ("<autograd backward>", "<frozen runpy>"). The one rule for "the
// user's code" (sync-stall origins, Python lines). Cached per file name; one per thread.
class UserFrames {
public:
    explicit UserFrames(const TraceStore& store) : m_store(store) {}
    bool isUser(const CallFrame& f) { return isUserFile(f.file); }
    bool isUserFile(NameId file);

private:
    const TraceStore& m_store;
    std::vector<int8_t> m_byFile; // per NameId: -1 not yet known, else 0 / 1
};

// Median: the middle value, or the mean of the two middle values for an even count (as
// DurationStats). Reorders `values`. 0 for an empty span.
double medianOf(std::span<int64_t> values);

// Nearest-rank percentile: the value of rank ceil(p / 100 * n) in ascending order (rank 1 = the
// smallest), p in (0, 100]. Reorders `values`. 0 for an empty span.
int64_t percentileOf(std::span<int64_t> values, double p);

// std::upper_bound over sorted `a` (the first index whose value is > v), searched forward from
// `hint` in doubling steps when the answer lies at or after it, else in a[0, hint): a series of
// searches for growing values, each started where the last ended, touches a few cache lines
// each instead of log2(n) scattered ones.
size_t upperBoundFrom(std::span<const int64_t> a, size_t hint, int64_t v);
// The same for std::lower_bound (the first index whose value is >= v).
size_t lowerBoundFrom(std::span<const int64_t> a, size_t hint, int64_t v);

// The index of the step of `steps` (sorted by start, not overlapping; each with `start` and
// `end`) whose [start, end) holds `t`; -1 when none does. O(log n).
template <typename Steps> std::ptrdiff_t stepHolding(const Steps& steps, int64_t t) {
    const auto it = std::upper_bound(std::begin(steps), std::end(steps), t,
                                     [](int64_t v, const auto& s) { return v < s.start; });
    if (it == std::begin(steps) || t >= std::prev(it)->end)
        return -1;
    return std::prev(it) - std::begin(steps);
}

// Spans [start, end), sorted by start and merged where they overlap or touch, in place: the
// result is sorted and disjoint (the union). O(n log n).
void mergeSpans(std::vector<std::pair<int64_t, int64_t>>& spans);

// The name of a repeated range without its counter: "step 12" -> "step", "layer_3" -> "layer"
// (trailing digits, then trailing ' ', '_', '-', '#', ':', '=' removed; a name that is all digits
// stays as it is).
std::string normalizedRangeName(std::string_view name);
// The length of name's first n characters without the separators that end them (' ', '_', '-',
// '#', ':', '='): what normalizedRangeName keeps before a counter.
size_t withoutCounterSeparators(std::string_view name, size_t n);

// Both of the above (p >= 50) for the cost of little more than the median: the percentile's rank
// lies in the upper half that the median's selection has already split off.
void medianAndPercentileOf(std::span<int64_t> values, double p, double& median,
                           int64_t& percentile);

// "812 ns", "3.1 us", "12.3 ms", "4.05 s": three significant digits at most, for sentences.
std::string formatDurationText(double ns);
// "41%" (>= 10%), "4.2%", "0.05%": for sentences; `fraction` is 0..1.
std::string formatPercentText(double fraction);
// "4 bytes", "1.5 kB", "12.0 MB" (10^3 steps, as nsys).
std::string formatBytesText(uint64_t bytes);

// The devices the GPU tracks run on, and each device's tracks (indices into
// TraceStore::gpuTracks()), ordered by device id. Devices without a GPU op do not appear.
struct DeviceTracks {
    uint32_t deviceId = 0;
    std::vector<uint32_t> tracks;
};
std::vector<DeviceTracks> tracksByDevice(const TraceStore& store);

// The tracks of one rank (source) of a session: the GPU tracks of its devices (every GPU track of
// a store of one file, or of a device no source claims), and its threads' API tracks.
std::vector<uint32_t> gpuTracksOfSource(const TraceStore& store, uint32_t source);
std::vector<uint32_t> apiTracksOfSource(const TraceStore& store, uint32_t source);

// "Device 0" / "Stream 7" labels for tables and sentences.
std::string deviceLabel(uint32_t deviceId);
std::string streamLabel(const TraceStore& store, uint32_t streamIndex);
std::string threadLabel(const TraceStore& store, uint32_t threadIndex);

// The text shown for a kernel in sentences: KernelConfig::shortName when the loader had one, else
// the demangled name. A short name that only wraps its one template argument, as CUTLASS's
// `cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1>` does, gives that
// argument: "Kernel2" would name every CUTLASS GEMM alike.
// A kernel of PyTorch's generic templates, which launch every element-wise op and reduction,
// also names its op and element type from its template arguments, so that two such kernels read
// apart: "elementwise_kernel[Mul, BFloat16]", "reduce_kernel[Mean, float]",
// "vectorized_elementwise_kernel[add, float]".
std::string gpuOpShortName(const TraceStore& store, EventRef op);
// That label from a kernel's short name and demangled name: the short name itself for any other
// kernel, or when no op is found in the arguments.
std::string pytorchKernelLabel(std::string_view shortName, std::string_view demangled);
// gpuOpShortName's text for a kernel of demangled name `name` and short name `shortName`
// (kNoName: the name itself).
std::string kernelLabel(const TraceStore& store, NameId shortName, NameId name);
// Per demangled kernel name, the short name of its first launch configuration. O(launch
// configurations).
std::unordered_map<NameId, NameId> shortNamesByName(const TraceStore& store);

// nsys memcpy operation direction of ENUM_CUDA_MEMCPY_OPER ("Device-to-Host"); "" when unknown.
std::string_view copyKindText(uint8_t copyKind);

} // namespace warpline::model
