#include "analysishelpers.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <exception>
#include <map>
#include <system_error>
#include <thread>
#include <unordered_map>

namespace warpline::model {

bool UserFrames::isUserFile(NameId fileId) {
    if (fileId >= m_byFile.size())
        m_byFile.resize(std::max<size_t>(fileId + 1, m_store.strings().size()), -1);
    int8_t& known = m_byFile[fileId];
    if (known < 0) {
        const std::string& file = m_store.text(fileId);
        const auto has = [&](std::string_view part) {
            return file.find(part) != std::string::npos;
        };
        // PyTorch profiler traces name files relative to sys.path: "torch/nn/functional.py".
        known = !file.empty() && file.front() != '<' && !file.starts_with("torch/") &&
                !has("site-packages") && !has("dist-packages") && !has("/lib/python") &&
                !has("/torch/") && !has("\\torch\\") && !has("\\Lib\\");
    }
    return known == 1;
}

void runBoth(const std::function<void()>& a, const std::function<void()>& b) {
    if (std::thread::hardware_concurrency() < 2) {
        a();
        b();
        return;
    }
    std::exception_ptr bError;
    std::thread other;
    try {
        other = std::thread([&] {
            try {
                b();
            } catch (...) {
                bError = std::current_exception();
            }
        });
    } catch (const std::system_error&) { // no thread to be had: one after the other
        a();
        b();
        return;
    }
    std::exception_ptr aError;
    try {
        a();
    } catch (...) {
        aError = std::current_exception();
    }
    other.join();
    if (aError)
        std::rethrow_exception(aError);
    if (bError)
        std::rethrow_exception(bError);
}

namespace {

// upperBoundFrom (before(x, v) = x <= v) and lowerBoundFrom (before(x, v) = x < v): the first
// index whose value is not `before` v.
template <typename Before>
size_t boundFrom(std::span<const int64_t> a, size_t hint, int64_t v, Before before) {
    const size_t n = a.size();
    hint = std::min(hint, n);
    const auto search = [&](size_t lo, size_t hi) {
        return static_cast<size_t>(std::partition_point(a.begin() + static_cast<std::ptrdiff_t>(lo),
                                                        a.begin() + static_cast<std::ptrdiff_t>(hi),
                                                        [&](int64_t x) { return before(x, v); }) -
                                   a.begin());
    };
    if (hint > 0 && !before(a[hint - 1], v))
        return search(0, hint);
    size_t lo = hint; // before(a[i], v) for every i < lo
    size_t hi = lo;
    size_t step = 1;
    while (hi < n && before(a[hi], v)) {
        lo = hi + 1;
        hi = lo + step;
        step *= 2;
    }
    return search(lo, std::min(hi, n));
}

} // namespace

size_t upperBoundFrom(std::span<const int64_t> a, size_t hint, int64_t v) {
    return boundFrom(a, hint, v, [](int64_t x, int64_t y) { return x <= y; });
}

size_t lowerBoundFrom(std::span<const int64_t> a, size_t hint, int64_t v) {
    return boundFrom(a, hint, v, [](int64_t x, int64_t y) { return x < y; });
}

void mergeSpans(std::vector<std::pair<int64_t, int64_t>>& spans) {
    std::sort(spans.begin(), spans.end());
    size_t n = 0;
    for (const auto& s : spans) {
        if (n > 0 && s.first <= spans[n - 1].second)
            spans[n - 1].second = std::max(spans[n - 1].second, s.second);
        else
            spans[n++] = s;
    }
    spans.resize(n);
}

std::string normalizedRangeName(std::string_view name) {
    size_t n = name.size();
    while (n > 0 && name[n - 1] >= '0' && name[n - 1] <= '9')
        --n;
    if (n == name.size())
        return std::string(name);
    n = withoutCounterSeparators(name, n);
    return std::string(name.substr(0, n == 0 ? name.size() : n));
}

size_t withoutCounterSeparators(std::string_view name, size_t n) {
    while (n > 0 && std::string_view(" _-#:=").find(name[n - 1]) != std::string_view::npos)
        --n;
    return n;
}

double medianOf(std::span<int64_t> values) {
    const size_t n = values.size();
    if (n == 0)
        return 0;
    const auto mid = values.begin() + static_cast<std::ptrdiff_t>(n / 2);
    std::nth_element(values.begin(), mid, values.end());
    const double upper = static_cast<double>(*mid);
    if (n % 2 == 1)
        return upper;
    const double lower = static_cast<double>(*std::max_element(values.begin(), mid));
    return (lower + upper) / 2;
}

int64_t percentileOf(std::span<int64_t> values, double p) {
    const size_t n = values.size();
    if (n == 0)
        return 0;
    const double rank = std::ceil(std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(n));
    const size_t index = std::clamp<size_t>(static_cast<size_t>(rank), 1, n) - 1;
    const auto it = values.begin() + static_cast<std::ptrdiff_t>(index);
    std::nth_element(values.begin(), it, values.end());
    return *it;
}

void medianAndPercentileOf(std::span<int64_t> values, double p, double& median,
                           int64_t& percentile) {
    const size_t n = values.size();
    median = medianOf(values);
    if (n == 0) {
        percentile = 0;
        return;
    }
    // medianOf left values[n / 2] in place with everything after it >= it.
    const double rank = std::ceil(std::clamp(p, 50.0, 100.0) / 100.0 * static_cast<double>(n));
    const size_t index = std::clamp<size_t>(static_cast<size_t>(rank), 1, n) - 1;
    const size_t mid = n / 2;
    if (index < mid) { // p = 50 with an even count: the largest of the lower half
        percentile =
            *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
        return;
    }
    if (index == mid) {
        percentile = values[mid];
        return;
    }
    const auto it = values.begin() + static_cast<std::ptrdiff_t>(index);
    std::nth_element(values.begin() + static_cast<std::ptrdiff_t>(mid + 1), it, values.end());
    percentile = *it;
}

namespace {

// "3.1", "12.3", "812": one decimal below 100, none above (v >= 0).
std::string shortNumber(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, v < 99.95 ? "%.1f" : "%.0f", v);
    return buf;
}

} // namespace

std::string formatDurationText(double ns) {
    const double a = std::fabs(ns);
    const std::string sign = ns < 0 ? "-" : "";
    // Thresholds at 999.5 so that rounding never prints "1000 us" instead of "1.0 ms".
    if (a < 999.5)
        return sign + std::to_string(static_cast<int64_t>(std::llround(a))) + " ns";
    if (a < 999.5e3)
        return sign + shortNumber(a / 1e3) + " us";
    if (a < 999.5e6)
        return sign + shortNumber(a / 1e6) + " ms";
    return sign + shortNumber(a / 1e9) + " s";
}

std::string formatPercentText(double fraction) {
    const double pct = fraction * 100;
    char buf[32];
    if (pct >= 9.95)
        std::snprintf(buf, sizeof buf, "%.0f%%", pct);
    else if (pct >= 0.995)
        std::snprintf(buf, sizeof buf, "%.1f%%", pct);
    else
        std::snprintf(buf, sizeof buf, "%.2f%%", pct);
    return buf;
}

std::string formatBytesText(uint64_t bytes) {
    if (bytes < 1000)
        return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
    const double b = static_cast<double>(bytes);
    char buf[32];
    if (b < 1e6)
        std::snprintf(buf, sizeof buf, "%.1f kB", b / 1e3);
    else if (b < 1e9)
        std::snprintf(buf, sizeof buf, "%.1f MB", b / 1e6);
    else
        std::snprintf(buf, sizeof buf, "%.2f GB", b / 1e9);
    return buf;
}

std::vector<DeviceTracks> tracksByDevice(const TraceStore& store) {
    std::map<uint32_t, std::vector<uint32_t>> byDevice;
    const auto& tracks = store.gpuTracks();
    for (size_t t = 0; t < tracks.size(); ++t) {
        if (!tracks[t].empty())
            byDevice[tracks[t].deviceId()].push_back(static_cast<uint32_t>(t));
    }
    std::vector<DeviceTracks> out;
    out.reserve(byDevice.size());
    for (auto& [id, list] : byDevice)
        out.push_back({id, std::move(list)});
    return out;
}

std::string deviceLabel(uint32_t deviceId) {
    return "Device " + std::to_string(deviceId);
}

std::string streamLabel(const TraceStore& store, uint32_t streamIndex) {
    if (streamIndex >= store.streams().size())
        return "Stream ?";
    const StreamInfo& s = store.streams()[streamIndex];
    if (s.name != kNoName)
        return store.text(s.name);
    return "Stream " + std::to_string(s.streamId);
}

std::string threadLabel(const TraceStore& store, uint32_t threadIndex) {
    if (threadIndex >= store.threads().size())
        return "(unknown thread)";
    const ThreadInfo& t = store.threads()[threadIndex];
    std::string label = t.name != kNoName ? store.text(t.name) : std::string("Thread");
    return label + " [" + std::to_string(t.tid) + "]";
}

namespace {

bool isIdentifierChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// The one template argument of `short` in `demangled` ("void ns::Kernel2<arg>(arg::Params)") when
// it is a plain identifier of at least 8 characters; empty otherwise.
std::string_view wrappedKernelName(std::string_view shortName, std::string_view demangled) {
    const size_t at = demangled.find(std::string(shortName) + "<");
    if (at == std::string_view::npos)
        return {};
    const size_t begin = at + shortName.size() + 1;
    const size_t close = demangled.find('>', begin);
    if (close == std::string_view::npos || close - begin < 8)
        return {};
    const std::string_view arg = demangled.substr(begin, close - begin);
    const bool identifier = !std::isdigit(static_cast<unsigned char>(arg.front())) &&
                            std::all_of(arg.begin(), arg.end(), isIdentifierChar);
    return identifier ? arg : std::string_view();
}

// The identifier of `text` that holds position `at`.
std::string_view identifierAt(std::string_view text, size_t at) {
    size_t begin = at, end = at;
    while (begin > 0 && isIdentifierChar(text[begin - 1]))
        --begin;
    while (end < text.size() && isIdentifierChar(text[end]))
        ++end;
    return text.substr(begin, end - begin);
}

void eraseAll(std::string& s, std::string_view piece) {
    for (size_t at = s.find(piece); at != std::string::npos; at = s.find(piece))
        s.erase(at, piece.size());
}

void trimUnderscores(std::string& s) {
    while (!s.empty() && s.front() == '_')
        s.erase(0, 1);
    while (!s.empty() && s.back() == '_')
        s.pop_back();
}

// The op of a PyTorch kernel template, from its arguments: a functor ("MulFunctor<float>" ->
// "Mul", "CUDAFunctor_add<float>" -> "add"; the generic wrappers BinaryFunctor, AUnaryFunctor
// ... skipped), a reduction's ops ("MeanOps<" -> "Mean"), a functor struct ("sum_functor<" ->
// "sum"), else the function whose lambda it runs ("direct_copy_kernel_cuda(...)::{lambda" ->
// "direct_copy"; the gpu_kernel wrappers skipped). Empty when none is found.
std::string pytorchKernelOp(std::string_view name) {
    for (size_t at = name.find("Functor"); at != std::string_view::npos;
         at = name.find("Functor", at + 7)) {
        std::string op(identifierAt(name, at));
        for (const std::string_view piece :
             {"CUDA", "Functor", "OnSelf", "OnOther", "Binary", "Unary"})
            eraseAll(op, piece);
        trimUnderscores(op);
        if (op.size() > 1)
            return op;
    }
    for (const std::string_view suffix : {"Ops<", "_functor<"}) {
        const size_t at = name.find(suffix);
        if (at != std::string_view::npos && at > 0 && isIdentifierChar(name[at - 1])) {
            std::string op(identifierAt(name, at - 1));
            op.resize(op.size() - (suffix.size() - 1));
            if (op.size() > 1)
                return op;
        }
    }
    for (size_t at = name.find(")::{lambda"); at != std::string_view::npos;
         at = name.find(")::{lambda", at + 1)) {
        // The '(' that opens this parameter list, then the function name before it.
        int depth = 0;
        size_t open = at;
        for (; open > 0; --open) {
            const char c = name[open];
            depth += c == ')' ? 1 : c == '(' ? -1 : 0;
            if (depth == 0)
                break;
        }
        if (open == 0)
            continue;
        size_t end = open;
        if (name[end - 1] == '>') { // a function template: skip its arguments
            int angle = 0;
            for (; end > 0; --end) {
                const char c = name[end - 1];
                angle += c == '>' ? 1 : c == '<' ? -1 : 0;
                if (angle == 0)
                    break;
            }
            if (end == 0)
                continue;
            --end;
        }
        std::string op(identifierAt(name, end - 1));
        if (op.empty() || op.starts_with("gpu_kernel") || op == "operator")
            continue;
        if (op.starts_with("launch_"))
            op.erase(0, 7);
        for (bool trimmed = true; trimmed;) {
            trimmed = false;
            for (const std::string_view suffix :
                 {"_cuda", "_impl", "_kernel", "_out", "CUDAKernelImpl", "KernelImplInternal",
                  "KernelImpl"}) {
                if (op.size() > suffix.size() && op.ends_with(suffix)) {
                    op.resize(op.size() - suffix.size());
                    trimmed = true;
                }
            }
        }
        if (op.size() > 1)
            return op;
    }
    return {};
}

// The first element type among a PyTorch kernel's template arguments ("c10::BFloat16" ->
// "BFloat16"); empty when none is found.
std::string_view pytorchKernelType(std::string_view name) {
    // "unsigned int" is left out: it is the index type of PyTorch's offset calculators, in most
    // of its kernels.
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 14> kTypes{{
        {"c10::BFloat16", "BFloat16"},
        {"c10::Half", "Half"},
        {"c10::Float8_e4m3fn", "Float8_e4m3fn"},
        {"c10::Float8_e5m2", "Float8_e5m2"},
        {"c10::complex<float>", "complex<float>"},
        {"c10::complex<double>", "complex<double>"},
        {"float", "float"},
        {"double", "double"},
        {"long", "long"},
        {"int", "int"},
        {"short", "short"},
        {"bool", "bool"},
        {"signed char", "signed char"},
        {"unsigned char", "unsigned char"},
    }};
    size_t best = std::string_view::npos;
    std::string_view type;
    for (const auto& [spelled, shown] : kTypes) {
        for (size_t at = name.find(spelled); at != std::string_view::npos && at < best;
             at = name.find(spelled, at + 1)) {
            const size_t end = at + spelled.size();
            // After '<' or ' ' (a template argument), or the parameter of a lambda
            // ("{lambda(c10::BFloat16)#1}"), not of the kernel itself ("(int, ...").
            const bool starts = at > 0 && (name[at - 1] == '<' || name[at - 1] == ' ' ||
                                           (at >= 7 && name.substr(at - 7, 7) == "lambda("));
            const bool ends = end < name.size() && (name[end] == ',' || name[end] == '>' ||
                                                    name[end] == ' ' || name[end] == ')');
            // "unsigned int" is not "int"; "long long" reads as "long".
            const bool inWord = at >= 9 && name.substr(at - 9, 9) == "unsigned ";
            if (starts && ends && !inWord) {
                best = at;
                type = shown;
                break;
            }
        }
    }
    return type;
}

} // namespace

std::string pytorchKernelLabel(std::string_view shortName, std::string_view demangled) {
    static constexpr std::array<std::string_view, 8> kGeneric{
        "elementwise_kernel",
        "vectorized_elementwise_kernel",
        "unrolled_elementwise_kernel",
        "vectorized_templated_elementwise_kernel",
        "elementwise_kernel_with_index",
        "index_elementwise_kernel",
        "distribution_elementwise_grid_stride_kernel",
        "reduce_kernel",
    };
    std::string label(shortName);
    if (std::find(kGeneric.begin(), kGeneric.end(), shortName) == kGeneric.end() ||
        demangled.find("at::native::") == std::string_view::npos)
        return label;
    // What follows the kernel's own name: its template arguments and parameters.
    const size_t at = demangled.find(std::string(shortName) + "<");
    if (at == std::string_view::npos)
        return label;
    const std::string_view rest = demangled.substr(at + shortName.size());
    const std::string op = pytorchKernelOp(rest);
    if (op.empty())
        return label;
    const std::string_view type = pytorchKernelType(rest);
    label += "[" + op;
    if (!type.empty())
        label += ", " + std::string(type);
    return label + "]";
}

std::string kernelLabel(const TraceStore& store, NameId shortName, NameId name) {
    const std::string& full = store.text(name);
    if (shortName == kNoName)
        return full;
    const std::string& text = store.text(shortName);
    const std::string_view wrapped = wrappedKernelName(text, full);
    return wrapped.empty() ? pytorchKernelLabel(text, full) : std::string(wrapped);
}

std::string gpuOpShortName(const TraceStore& store, EventRef op) {
    const GpuTrack& track = store.gpuTracks()[op.track];
    const NameId name = track.name(op.index);
    if (track.kind(op.index) == GpuOpKind::Kernel) {
        const uint32_t detail = track.detail(op.index);
        if (detail < store.kernelConfigs().size())
            return kernelLabel(store, store.kernelConfigs()[detail].shortName, name);
    }
    return store.text(name);
}

std::unordered_map<NameId, NameId> shortNamesByName(const TraceStore& store) {
    std::unordered_map<NameId, NameId> out;
    for (const KernelConfig& c : store.kernelConfigs())
        out.try_emplace(c.demangledName, c.shortName);
    return out;
}

std::string_view copyKindText(uint8_t copyKind) {
    static constexpr std::array<std::string_view, 11> labels{"",
                                                             "Host-to-Device",
                                                             "Device-to-Host",
                                                             "Host-to-Array",
                                                             "Array-to-Host",
                                                             "Array-to-Array",
                                                             "Array-to-Device",
                                                             "Device-to-Array",
                                                             "Device-to-Device",
                                                             "Host-to-Host",
                                                             "Peer-to-Peer"};
    return copyKind < labels.size() ? labels[copyKind] : std::string_view();
}

std::vector<uint32_t> gpuTracksOfSource(const TraceStore& store, uint32_t source) {
    std::vector<uint32_t> tracks;
    for (uint32_t t = 0; t < store.gpuTracks().size(); ++t) {
        const DeviceInfo* device = store.device(store.gpuTracks()[t].deviceId());
        if (!store.isSession() || !device || device->source == source)
            tracks.push_back(t);
    }
    return tracks;
}

std::vector<uint32_t> apiTracksOfSource(const TraceStore& store, uint32_t source) {
    std::vector<uint32_t> tracks;
    for (const ThreadInfo& thread : store.threads()) {
        if (thread.source == source)
            tracks.insert(tracks.end(), thread.apiTracks.begin(), thread.apiTracks.end());
    }
    return tracks;
}

} // namespace warpline::model
