#include "kinetoimport.h"

#include "memoryinfo.h"
#include "outputfile.h"
#include "traceerror.h"
#include "tracewriter.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <simdjson.h>
#include <unistd.h>
#include <zlib.h>

namespace warpline::model {

namespace {

namespace od = simdjson::ondemand;
namespace col = warpline::format;

constexpr uint32_t kProgressEvery = 1 << 16;
// Times and durations beyond +-2^61 ns (73 years) are not read: a time plus a duration, or the
// difference of two times, then always fits in int64.
constexpr double kTimeLimitF = 2305843009213693952.0; // 2^61
constexpr int64_t kTimeLimit = int64_t(1) << 61;
// Rows for gpu_user_annotation ranges: one pseudo-thread per stream, above any Linux tid.
constexpr uint32_t kGpuAnnotationTid = 0xF00000;

enum class Kind : uint8_t {
    Skip,
    Runtime,
    Driver,
    Kernel,
    Memcpy,
    Memset,
    Sync,
    UserAnnotation,
    CpuOp,
    GpuAnnotation,
    PythonFunction,
    FwdBwdFlow, // "s" at a forward op, "f" at its backward op (cat "fwdbwd")
    Metadata
};

Kind kindOf(std::string_view phase, std::string_view cat) {
    if (phase == "M")
        return Kind::Metadata;
    if ((phase == "s" || phase == "f") && cat == "fwdbwd")
        return Kind::FwdBwdFlow;
    if (phase != "X")
        return Kind::Skip;
    if (cat == "cuda_runtime" || cat == "Runtime")
        return Kind::Runtime;
    if (cat == "cuda_driver" || cat == "Driver")
        return Kind::Driver;
    if (cat == "kernel" || cat == "Kernel")
        return Kind::Kernel;
    if (cat == "gpu_memcpy" || cat == "Memcpy")
        return Kind::Memcpy;
    if (cat == "gpu_memset" || cat == "Memset")
        return Kind::Memset;
    if (cat == "cuda_sync")
        return Kind::Sync;
    if (cat == "user_annotation" || cat == "nvtx")
        return Kind::UserAnnotation;
    if (cat == "cpu_op" || cat == "Operator")
        return Kind::CpuOp;
    if (cat == "gpu_user_annotation")
        return Kind::GpuAnnotation;
    if (cat == "python_function")
        return Kind::PythonFunction;
    return Kind::Skip;
}

// One event we keep. Strings are views into the parser's buffer (alive until conversion ends).
struct Event {
    Kind kind = Kind::Skip;
    std::string_view phase, cat, name;
    int64_t pid = 0, tid = 0;
    int64_t ts = 0, dur = 0; // ns, absolute as in the file
    bool hasTs = false;
    bool badNumber = false; // "ts" or "dur" not a number of microseconds within +-2^61 ns
    int64_t correlation = 0;
    int64_t flowId = -1; // "id" of a flow event
    int64_t device = -1, context = -1, stream = -1;
    int64_t bytes = 0, registers = 0, sharedMemory = 0, graphId = 0;
    std::optional<int64_t> graphNodeId;
    std::array<int32_t, 3> grid{1, 1, 1}, block{1, 1, 1};
    std::string_view syncKind;
    std::string_view domain; // args.domain (NVTX ranges of a Warpline export)
    // args "copy kind", "src kind", "dst kind", "mem kind" (a Warpline export); -1: from the name
    int64_t copyKind = -1, srcKind = -1, dstKind = -1, memKind = -1;
    std::string_view metaName; // "M" events: args.name
};

// A python_function event's name, "torch/nn/modules/linear.py(125): forward", as a frame; other
// names ("nn.Module: Linear_0", "<built-in method linear ...>") are a function alone.
col::PythonFrame pythonFrame(std::string_view name) {
    col::PythonFrame f;
    const auto close = name.find("): ");
    const auto open =
        close == std::string_view::npos ? std::string_view::npos : name.rfind('(', close);
    if (open != std::string_view::npos && open > 0 && close - open > 1 && close - open <= 10 &&
        name.substr(open + 1, close - open - 1).find_first_not_of("0123456789") ==
            std::string_view::npos) {
        f.file = std::string(name.substr(0, open));
        f.line = std::stoi(std::string(name.substr(open + 1, close - open - 1)));
        f.function = std::string(name.substr(close + 3));
    } else {
        f.function = std::string(name);
    }
    return f;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' ||
                          s.back() == '\t' || s.back() == ','))
        s.remove_suffix(1);
    while (!s.empty() && (s.front() == ' ' || s.front() == '"'))
        s.remove_prefix(1);
    if (!s.empty() && s.back() == '"')
        s.remove_suffix(1);
    return s;
}

// Microseconds as written ("1694039968955744", "2413669096090.1", "12.345678") to integer ns,
// exactly: the digits after the point are read as text, rounded at the nanosecond.
std::optional<int64_t> microsToNs(std::string_view text) {
    text = trim(text);
    if (text.empty())
        return std::nullopt;
    bool negative = false;
    size_t i = 0;
    if (text[0] == '-') {
        negative = true;
        ++i;
    }
    int64_t whole = 0;
    size_t digits = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits) {
        if (whole > (std::numeric_limits<int64_t>::max() - 9) / 10 / 1000)
            return std::nullopt;
        whole = whole * 10 + (text[i] - '0');
    }
    int64_t fraction = 0; // ns
    if (i < text.size() && text[i] == '.') {
        ++i;
        int64_t scale = 100;
        bool roundUp = false;
        for (size_t n = 0; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++n) {
            if (n < 3) {
                fraction += (text[i] - '0') * scale;
                scale /= 10;
            } else if (n == 3) {
                roundUp = text[i] >= '5';
            }
            ++digits;
        }
        fraction += roundUp;
    }
    if (digits == 0)
        return std::nullopt;
    if (i < text.size()) { // an exponent: rare; take the double
        char* end = nullptr;
        const std::string copy(text);
        const double v = std::strtod(copy.c_str(), &end);
        if (end == copy.c_str() || !std::isfinite(v) || !(std::fabs(v * 1000.0) < kTimeLimitF))
            return std::nullopt;
        return static_cast<int64_t>(std::llround(v * 1000.0));
    }
    const int64_t ns = whole * 1000 + fraction;
    if (ns >= kTimeLimit)
        return std::nullopt;
    return negative ? -ns : ns;
}

std::optional<int64_t> integerOf(std::string_view text) {
    text = trim(text);
    int64_t v = 0;
    bool negative = false;
    size_t i = 0;
    if (!text.empty() && text[0] == '-') {
        negative = true;
        ++i;
    }
    size_t digits = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits) {
        if (v > std::numeric_limits<int64_t>::max() / 10 - 1)
            return std::nullopt;
        v = v * 10 + (text[i] - '0');
    }
    if (digits == 0)
        return std::nullopt;
    if (i < text.size() && text[i] == '.') { // "0.625": keep the integer part
    } else if (i < text.size()) {
        return std::nullopt;
    }
    return negative ? -v : v;
}

// A number, or a string holding one ("24572"), or the last number in a string ("stream 7").
std::optional<int64_t> idOf(od::value v) {
    od::json_type type;
    if (v.type().get(type))
        return std::nullopt;
    if (type == od::json_type::number) {
        const std::string_view raw = v.raw_json_token();
        return integerOf(raw);
    }
    if (type == od::json_type::string) {
        std::string_view s;
        if (v.get_string().get(s))
            return std::nullopt;
        if (auto n = integerOf(s))
            return n;
        const size_t last = s.find_last_not_of("0123456789 ");
        const std::string_view tail = last == std::string_view::npos ? s : s.substr(last + 1);
        return integerOf(tail);
    }
    return std::nullopt;
}

std::optional<int64_t> numberOf(od::value v) {
    od::json_type type;
    if (v.type().get(type) || type != od::json_type::number)
        return std::nullopt;
    const std::string_view raw = v.raw_json_token();
    return integerOf(raw);
}

std::optional<int64_t> timeOf(od::value v) {
    od::json_type type;
    if (v.type().get(type))
        return std::nullopt;
    if (type == od::json_type::string) { // some writers quote numbers
        std::string_view s;
        if (v.get_string().get(s))
            return std::nullopt;
        return microsToNs(s);
    }
    if (type != od::json_type::number)
        return std::nullopt;
    const std::string_view raw = v.raw_json_token();
    return microsToNs(raw);
}

std::string_view stringOf(od::value v) {
    std::string_view s;
    if (v.get_string().get(s))
        return {};
    return s;
}

void readTriple(od::value v, std::array<int32_t, 3>& out) {
    od::array array;
    if (v.get_array().get(array))
        return;
    size_t i = 0;
    for (auto element : array) {
        od::value x;
        if (element.get(x) || i >= 3)
            continue;
        if (auto n = numberOf(x))
            out[i] = static_cast<int32_t>(*n);
        ++i;
    }
}

void readArgs(od::value v, Event& e) {
    od::object args;
    if (v.get_object().get(args))
        return;
    for (auto field : args) {
        std::string_view key;
        od::value value;
        if (field.unescaped_key().get(key) || field.value().get(value))
            continue;
        if (key == "correlation") {
            e.correlation = numberOf(value).value_or(0);
        } else if (key == "device") {
            e.device = numberOf(value).value_or(-1);
        } else if (key == "context") {
            e.context = numberOf(value).value_or(-1);
        } else if (key == "stream") {
            e.stream = numberOf(value).value_or(-1);
        } else if (key == "bytes") {
            e.bytes = numberOf(value).value_or(0);
        } else if (key == "registers per thread") {
            e.registers = numberOf(value).value_or(0);
        } else if (key == "shared memory") {
            e.sharedMemory = numberOf(value).value_or(0);
        } else if (key == "graph id") {
            e.graphId = numberOf(value).value_or(0);
        } else if (key == "graph node id") {
            e.graphNodeId = numberOf(value);
        } else if (key == "grid") {
            readTriple(value, e.grid);
        } else if (key == "block") {
            readTriple(value, e.block);
        } else if (key == "copy kind") {
            e.copyKind = numberOf(value).value_or(-1);
        } else if (key == "src kind") {
            e.srcKind = numberOf(value).value_or(-1);
        } else if (key == "dst kind") {
            e.dstKind = numberOf(value).value_or(-1);
        } else if (key == "mem kind") {
            e.memKind = numberOf(value).value_or(-1);
        } else if (key == "domain") {
            e.domain = stringOf(value);
        } else if (key == "cuda_sync_kind") {
            e.syncKind = stringOf(value);
        } else if (key == "name") {
            e.metaName = stringOf(value);
        }
    }
}

// What a JSON trace may cost to read. The whole (inflated) JSON is held in memory and the parser
// needs about as much again, so the JSON may use at most a third of the memory available now
// (and simdjson reads at most 4 GiB). One string longer than maxStringBytes is no trace's: a
// gzip bomb of one endless string is stopped when it gets there, not after inflating gigabytes.
// A window of JSON that inflates more than maxInflation times, or is mostly whitespace, one byte
// or commas, colons and brackets, is no trace's either (KinetoImport::Options says why the bounds
// are where they are).
struct ReadLimits {
    uint64_t maxBytes;
    uint64_t maxStringBytes;
    double maxInflation;
    double maxFillerShare;
    double maxStructuralShare;
    uint64_t windowBytes;
    std::string why; // where maxBytes comes from, for the message
};

std::string mib(uint64_t bytes) {
    return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB";
}

// "4.5 GiB", "64 MiB", "62 KiB", "300 bytes": a size in a message, to two digits or more.
std::string sizeText(uint64_t bytes) {
    static constexpr std::array<const char*, 3> kUnits = {"KiB", "MiB", "GiB"};
    if (bytes < 1024)
        return std::to_string(bytes) + " bytes";
    double value = double(bytes) / 1024.0;
    size_t unit = 0;
    while (value >= 1024.0 && unit + 1 < kUnits.size()) {
        value /= 1024.0;
        ++unit;
    }
    char text[32];
    std::snprintf(text, sizeof text, value < 9.95 ? "%.1f %s" : "%.0f %s", value, kUnits[unit]);
    return text;
}

std::string percent(double share) {
    return std::to_string(static_cast<int>(std::lround(share * 100.0))) + "%";
}

// Follows strings through the JSON as it is read, chunk by chunk, and stops at one longer than
// the limit. Cheap: memchr from quote to quote; a quote ends a string unless an odd run of
// backslashes comes before it (a run may begin in an earlier chunk).
class StringLengthGuard {
public:
    explicit StringLengthGuard(uint64_t limit) : m_limit(limit) {}
    // Returns the offset at which a string passed the limit, or -1.
    int64_t feed(const char* p, size_t n) {
        size_t i = 0; // m_backslashes come right before p[i]
        while (i < n) {
            const void* hit = std::memchr(p + i, '"', n - i);
            if (!hit)
                break;
            const size_t quote = static_cast<size_t>(static_cast<const char*>(hit) - p);
            if (!m_inString) {
                m_inString = true;
                m_start = m_offset + quote;
            } else {
                size_t run = 0;
                while (run < quote - i && p[quote - 1 - run] == '\\')
                    ++run;
                if (run == quote - i)
                    run += m_backslashes;
                m_inString = run % 2 == 1; // an escaped quote is part of the string
                if (!m_inString && m_offset + quote - m_start > m_limit)
                    return static_cast<int64_t>(m_start);
            }
            m_backslashes = 0;
            i = quote + 1;
        }
        if (m_inString) {
            size_t run = 0;
            while (run < n - i && p[n - 1 - run] == '\\')
                ++run;
            m_backslashes = run == n - i ? m_backslashes + run : run;
        }
        m_offset += n;
        if (m_inString && m_offset - m_start > m_limit)
            return static_cast<int64_t>(m_start);
        return -1;
    }

private:
    uint64_t m_limit;
    uint64_t m_offset = 0;
    uint64_t m_start = 0;
    uint64_t m_backslashes = 0; // inside a string: the backslashes at the end of what was fed
    bool m_inString = false;
};

// Judges the JSON window by window as it is read: how many times the window's gzip data
// inflated, and what share of it is whitespace, one byte, or commas, colons and brackets. A bomb
// within maxBytes (gigabytes of spaces, of "0,", of '[') fails its first window, after a fraction
// of a second, whatever comes before or after it. The last window, shorter than a whole one, is not
// judged: it costs little.
class FillerGuard {
public:
    // `fileBytes`: the file's size (0: unknown), to say what a bomb would inflate to.
    FillerGuard(const ReadLimits& limits, std::string name, bool gzipped, uint64_t fileBytes)
        : m_limits(limits), m_name(std::move(name)), m_gzipped(gzipped), m_fileBytes(fileBytes) {}

    // `p`, `n`: the next JSON bytes; `compressed`: gzip bytes consumed so far, with them.
    void feed(const unsigned char* p, size_t n, uint64_t compressed) {
        count(p, n);
        m_offset += n;
        const uint64_t length = m_offset - m_windowStart;
        if (length < m_limits.windowBytes)
            return;
        judge(length, compressed - m_windowCompressed);
        m_counts.fill(0);
        m_windowStart = m_offset;
        m_windowCompressed = compressed;
    }

private:
    // A byte histogram in four tables, so that a run of one byte does not wait on one counter.
    void count(const unsigned char* p, size_t n) {
        constexpr size_t kBlock = size_t(1) << 30; // counts stay within uint32
        for (size_t begin = 0; begin < n; begin += kBlock) {
            const size_t end = std::min(n, begin + kBlock);
            std::array<std::array<uint32_t, 256>, 4> tables{};
            size_t i = begin;
            for (; i + 4 <= end; i += 4) {
                ++tables[0][p[i]];
                ++tables[1][p[i + 1]];
                ++tables[2][p[i + 2]];
                ++tables[3][p[i + 3]];
            }
            for (; i < end; ++i)
                ++tables[0][p[i]];
            for (size_t b = 0; b < 256; ++b)
                m_counts[b] += uint64_t(tables[0][b]) + tables[1][b] + tables[2][b] + tables[3][b];
        }
    }

    void judge(uint64_t length, uint64_t compressed) const {
        if (m_gzipped && double(length) > m_limits.maxInflation * double(compressed)) {
            const double times = double(length) / double(std::max<uint64_t>(1, compressed));
            const std::string whole = // said of the first window only: what follows may differ
                m_fileBytes > 0 && m_windowStart == 0
                    ? "at that rate its " + sizeText(m_fileBytes) + " would inflate to " +
                          sizeText(uint64_t(
                              std::min(times * double(m_fileBytes), double(uint64_t(1) << 62)))) +
                          "; "
                    : "";
            refuse(window(length, false) + " inflated from " + sizeText(compressed) +
                   " of gzip data: " + std::to_string(std::llround(times)) +
                   " times, where profiler traces inflate 8-14 times and Warpline stops past " +
                   std::to_string(std::llround(m_limits.maxInflation)) + " (" + whole);
        }
        static constexpr std::array<unsigned char, 4> kWhitespace = {' ', '\n', '\r', '\t'};
        uint64_t whitespace = 0;
        for (const unsigned char c : kWhitespace)
            whitespace += m_counts[c];
        const double limit = m_limits.maxFillerShare * double(length);
        if (double(whitespace) > limit)
            refuse(window(length, true) + " is " + percent(double(whitespace) / double(length)) +
                   " whitespace, where profiler traces are about 25% and Warpline stops past " +
                   percent(m_limits.maxFillerShare) + " (");
        const auto top = std::max_element(m_counts.begin(), m_counts.end());
        if (double(*top) > limit) {
            const auto byte = static_cast<unsigned char>(top - m_counts.begin());
            char shown[16];
            if (byte > ' ' && byte < 0x7f && byte != '\'')
                std::snprintf(shown, sizeof shown, "'%c'", byte);
            else
                std::snprintf(shown, sizeof shown, "0x%02x", byte);
            refuse(percent(double(*top) / double(length)) + " of " + window(length, true) +
                   " is the byte " + shown +
                   ", where no byte is more than 25% of a profiler trace and Warpline stops "
                   "past " +
                   percent(m_limits.maxFillerShare) + " (");
        }
        static constexpr std::array<unsigned char, 6> kStructural = {',', ':', '[', ']', '{', '}'};
        uint64_t structural = 0;
        for (const unsigned char c : kStructural)
            structural += m_counts[c];
        if (double(structural) > m_limits.maxStructuralShare * double(length))
            refuse(window(length, true) + " is " + percent(double(structural) / double(length)) +
                   " commas, colons and brackets, where profiler traces are at most 17% and "
                   "Warpline stops past " +
                   percent(m_limits.maxStructuralShare) + " (");
    }

    // "its first 64 MiB of JSON (inflated)", "the 64 MiB of its JSON from byte 4294967296".
    std::string window(uint64_t length, bool sayInflated) const {
        const std::string inflated = m_gzipped && sayInflated ? " (inflated)" : "";
        if (m_windowStart == 0)
            return "its first " + sizeText(length) + " of JSON" + inflated;
        return "the " + sizeText(length) + " of its JSON from byte " +
               std::to_string(m_windowStart) + inflated;
    }

    // `what` ends with an open parenthesis, for the reason.
    [[noreturn]] void refuse(const std::string& what) const {
        throw TraceError(TraceError::Kind::NotATrace,
                         m_name + " is not a PyTorch profiler trace: " + what +
                             "the file may be made to exhaust memory)");
    }

    const ReadLimits& m_limits;
    std::string m_name;
    bool m_gzipped;
    uint64_t m_fileBytes;
    std::array<uint64_t, 256> m_counts{};
    uint64_t m_offset = 0;
    uint64_t m_windowStart = 0;
    uint64_t m_windowCompressed = 0;
};

// Reads `path` whole, inflating it if it is gzip (one member or several, as gzip writes them;
// bytes after the last member are ignored, as gzread does), through the guards above.
// `checkCancel` is called after each MiB read (it throws LoadCancelled).
std::string readFile(const std::string& path, const ReadLimits& limits,
                     const std::function<void()>& checkCancel) {
    const std::string name = std::filesystem::path(path).filename().string();
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (!file)
        throw TraceError(TraceError::Kind::NotFound, path + ": " + std::strerror(errno));
    const std::unique_ptr<std::FILE, int (*)(std::FILE*)> closer(file, &std::fclose);
    std::array<unsigned char, 1 << 18> in;
    size_t inLength = std::fread(in.data(), 1, in.size(), file);
    const bool gzipped = inLength >= 2 && in[0] == 0x1f && in[1] == 0x8b;
    const auto tooLarge = [&] {
        return TraceError(TraceError::Kind::NotATrace,
                          name + (gzipped ? " inflates to more than " : " is larger than ") +
                              mib(limits.maxBytes) +
                              ", more than Warpline reads from a JSON trace" + limits.why);
    };
    std::error_code sizeError;
    const uint64_t fileBytes = std::filesystem::file_size(path, sizeError);
    StringLengthGuard strings(limits.maxStringBytes);
    FillerGuard filler(limits, name, gzipped, sizeError ? 0 : fileBytes);
    std::string data;
    uint64_t sinceCheck = 0;
    // Grows `data` itself, leaving room for the parser's padding, so that it is not copied again
    // at the end.
    const auto append = [&](const unsigned char* p, size_t n, uint64_t compressed) {
        if (data.size() + n > limits.maxBytes)
            throw tooLarge();
        const int64_t at = strings.feed(reinterpret_cast<const char*>(p), n);
        if (at >= 0)
            throw TraceError(TraceError::Kind::NotATrace,
                             name + " is not a PyTorch profiler trace: the string at byte " +
                                 std::to_string(at) + (gzipped ? " (inflated)" : "") +
                                 " is longer than " + mib(limits.maxStringBytes) +
                                 ", which no trace has (the file may be made to exhaust memory)");
        filler.feed(p, n, compressed);
        const size_t needed = data.size() + n + simdjson::SIMDJSON_PADDING;
        if (needed > data.capacity()) // within maxBytes, checked above
            data.reserve(std::min(std::max(needed, data.capacity() * 2),
                                  size_t(limits.maxBytes) + simdjson::SIMDJSON_PADDING));
        data.append(reinterpret_cast<const char*>(p), n);
        sinceCheck += n;
        if (sinceCheck >= (1 << 20)) {
            sinceCheck = 0;
            checkCancel();
        }
    };
    if (!gzipped) {
        if (!sizeError && fileBytes > limits.maxBytes)
            throw tooLarge();
        if (!sizeError)
            data.reserve(fileBytes + simdjson::SIMDJSON_PADDING);
        do {
            append(in.data(), inLength, 0);
        } while ((inLength = std::fread(in.data(), 1, in.size(), file)) > 0);
    } else {
        // gzip's trailer gives the JSON's size (of the last member, modulo 4 GiB): reserved, not
        // touched, so that a trace's JSON is not copied as it grows; a wrong one costs nothing.
        unsigned char trailer[4];
        if (!sizeError && fileBytes > 18 && std::fseek(file, -4, SEEK_END) == 0) {
            if (std::fread(trailer, 1, 4, file) == 4) {
                const uint64_t size = uint64_t(trailer[0]) | uint64_t(trailer[1]) << 8 |
                                      uint64_t(trailer[2]) << 16 | uint64_t(trailer[3]) << 24;
                if (size <= limits.maxBytes)
                    data.reserve(size + simdjson::SIMDJSON_PADDING);
            }
            if (std::fseek(file, static_cast<long>(inLength), SEEK_SET) != 0)
                throw TraceError(TraceError::Kind::Corrupt, path + ": read error");
        }
        z_stream z{};
        if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
            throw std::bad_alloc();
        const std::unique_ptr<z_stream, int (*)(z_stream*)> ender(&z, &inflateEnd);
        std::array<unsigned char, 1 << 18> out;
        uint64_t consumed = 0; // compressed bytes given to inflate before the current buffer
        z.next_in = in.data();
        z.avail_in = static_cast<uInt>(inLength);
        // Moves what inflate has not read to the front of `in` and reads more after it.
        const auto refill = [&] {
            consumed += static_cast<uint64_t>(z.next_in - in.data());
            std::memmove(in.data(), z.next_in, z.avail_in);
            z.avail_in += static_cast<uInt>(
                std::fread(in.data() + z.avail_in, 1, in.size() - z.avail_in, file));
            z.next_in = in.data();
        };
        for (;;) {
            if (z.avail_in == 0)
                refill();
            z.next_out = out.data();
            z.avail_out = static_cast<uInt>(out.size());
            const int rc = inflate(&z, Z_NO_FLUSH);
            const size_t produced = out.size() - z.avail_out;
            if (produced > 0)
                append(out.data(), produced, consumed + (z.next_in - in.data()));
            if (rc == Z_STREAM_END) {
                if (z.avail_in < 2)
                    refill();
                if (z.avail_in < 2 || z.next_in[0] != 0x1f || z.next_in[1] != 0x8b)
                    break; // the last member; what follows is not gzip
                inflateReset(&z);
            } else if (rc == Z_BUF_ERROR && z.avail_in == 0) { // no input left, none ended
                throw TraceError(TraceError::Kind::NotATrace,
                                 name + " is cut off: its gzip data stops after " +
                                     sizeText(data.size()) +
                                     " of JSON, without gzip's end-of-data mark (the file was "
                                     "not copied or written completely)");
            } else if (rc != Z_OK) {
                throw TraceError(TraceError::Kind::NotATrace,
                                 path + " is not a readable gzip file: " +
                                     (z.msg ? z.msg : "zlib error " + std::to_string(rc)));
            }
        }
    }
    if (std::ferror(file))
        throw TraceError(TraceError::Kind::Corrupt, path + ": read error");
    if (data.capacity() < data.size() + simdjson::SIMDJSON_PADDING)
        data.reserve(data.size() + simdjson::SIMDJSON_PADDING);
    return data;
}

// "Memcpy HtoD (Pageable -> Device)" (Kineto) or "[CUDA memcpy Host-to-Device]" (nsys) -> copy
// kind 1; memKindsOf: src 1 (pageable), dst 3 (device).
uint8_t copyKindOf(std::string_view name) {
    static const std::array<std::pair<std::string_view, uint8_t>, 5> nsysKinds = {
        {{"Host-to-Device", 1},
         {"Device-to-Host", 2},
         {"Device-to-Device", 8},
         {"Host-to-Host", 9},
         {"Peer-to-Peer", 10}}};
    for (const auto& [text, kind] : nsysKinds) {
        if (name.find(text) != std::string_view::npos)
            return kind;
    }
    static const std::array<std::pair<std::string_view, uint8_t>, 10> kinds = {{{"HtoD", 1},
                                                                                {"DtoH", 2},
                                                                                {"HtoA", 3},
                                                                                {"AtoH", 4},
                                                                                {"AtoA", 5},
                                                                                {"AtoD", 6},
                                                                                {"DtoA", 7},
                                                                                {"DtoD", 8},
                                                                                {"HtoH", 9},
                                                                                {"PtoP", 10}}};
    for (const auto& [text, kind] : kinds) {
        if (name.find(text) != std::string_view::npos)
            return kind;
    }
    return name.find("P2P") != std::string_view::npos ? 10 : 0;
}

uint8_t memKindOf(std::string_view text) {
    if (text.find("Pageable") != std::string_view::npos)
        return 1;
    if (text.find("Pinned") != std::string_view::npos)
        return 2;
    if (text.find("Managed") != std::string_view::npos)
        return 5;
    if (text.find("Array") != std::string_view::npos)
        return 4;
    if (text.find("Device") != std::string_view::npos)
        return 3;
    return 0;
}

std::pair<uint8_t, uint8_t> memKindsOf(std::string_view name) {
    const size_t open = name.find('(');
    const size_t arrow = name.find("->");
    if (open == std::string_view::npos || arrow == std::string_view::npos || arrow < open)
        return {0, 0};
    return {memKindOf(name.substr(open, arrow - open)), memKindOf(name.substr(arrow))};
}

uint8_t syncTypeOf(std::string_view kind) {
    if (kind.find("Wait") != std::string_view::npos)
        return 2;
    if (kind.find("Event") != std::string_view::npos)
        return 1;
    if (kind.find("Stream") != std::string_view::npos)
        return 3;
    if (kind.find("Context") != std::string_view::npos)
        return 4;
    return 0;
}

class Converter {
public:
    Converter(const std::string& jsonPath, const KinetoImport::Options& options)
        : m_path(jsonPath), m_options(options) {}

    KinetoImport::Result run(const std::string& tracePath) {
        progress(0.0);
        m_data = readFile(m_path, limits(), [this] { progress(0.0); });
        parse();
        write(tracePath);
        progress(1.0);
        return m_result;
    }

private:
    ReadLimits limits() const {
        ReadLimits limits{.maxBytes = m_options.maxBytes,
                          .maxStringBytes = m_options.maxStringBytes,
                          .maxInflation = m_options.maxInflation,
                          .maxFillerShare = m_options.maxFillerShare,
                          .maxStructuralShare = m_options.maxStructuralShare,
                          .windowBytes = m_options.plausibilityWindowBytes,
                          .why = {}};
        if (limits.maxBytes == 0) {
            const uint64_t available = availableMemoryBytes();
            limits.maxBytes = available > 0 ? available / 3 : std::numeric_limits<uint64_t>::max();
            limits.why = " on this machine now (a third of the " + mib(available) +
                         " of memory available: reading takes about three times the JSON's size)";
        }
        constexpr uint64_t kParserMax =
            simdjson::SIMDJSON_MAXSIZE_BYTES - simdjson::SIMDJSON_PADDING;
        if (limits.maxBytes > kParserMax) {
            limits.maxBytes = kParserMax;
            limits.why = " (its JSON parser reads at most 4 GiB)";
        }
        return limits;
    }

    [[noreturn]] void fail(const std::string& what) const {
        throw TraceError(TraceError::Kind::NotATrace,
                         std::filesystem::path(m_path).filename().string() +
                             " is not a PyTorch profiler trace: " + what);
    }

    void progress(double fraction) const {
        if (m_options.progress && !m_options.progress(fraction))
            throw LoadCancelled();
    }

    void parse() {
        const simdjson::padded_string_view view(m_data.data(), m_data.size(), m_data.capacity());
        try {
            od::document doc = m_parser.iterate(view);
            od::json_type type = doc.type();
            if (type == od::json_type::array) { // JSON Array Format: the events alone
                readEvents(doc.get_array());
            } else if (type == od::json_type::object) {
                bool sawEvents = false;
                for (auto field : doc.get_object()) {
                    const std::string_view key = field.unescaped_key();
                    if (key == "traceEvents") {
                        if (sawEvents)
                            fail("it has \"traceEvents\" twice (the file was made or edited by "
                                 "hand)");
                        readEvents(field.value().get_array());
                        sawEvents = true;
                    } else if (key == "deviceProperties" || key == "computeProperties") {
                        readDevices(field.value().get_array());
                    } else if (key == "baseTimeNanoseconds") {
                        m_baseTimeNs = numberOf(field.value());
                    } else if (key == "traceName") {
                        m_traceName = stringOf(field.value());
                    } else if (key == "distributedInfo") {
                        readDistributedInfo(field.value());
                    }
                }
                if (!sawEvents)
                    fail("it has no \"traceEvents\"");
            } else {
                fail("it is not a JSON object");
            }
        } catch (const simdjson::simdjson_error& e) {
            fail(std::string("invalid JSON (") + e.what() + ")");
        }
    }

    // {"backend": "nccl", "rank": 3, "world_size": 8, ...}: which rank of a job this trace is.
    void readDistributedInfo(od::value value) {
        od::object info;
        if (value.get_object().get(info))
            return;
        for (auto field : info) {
            std::string_view key;
            od::value v;
            if (field.unescaped_key().get(key) || field.value().get(v))
                continue;
            if (key == "rank")
                m_rank = numberOf(v);
            else if (key == "world_size")
                m_worldSize = numberOf(v);
        }
    }

    void readDevices(od::array devices) {
        for (auto element : devices) {
            od::object device;
            if (element.get_object().get(device))
                continue;
            col::DeviceRecord d;
            bool hasId = false;
            for (auto field : device) {
                std::string_view key;
                od::value v;
                if (field.unescaped_key().get(key) || field.value().get(v))
                    continue;
                if (key == "id") {
                    d.id = static_cast<uint32_t>(numberOf(v).value_or(0));
                    hasId = true;
                } else if (key == "name") {
                    d.name = std::string(stringOf(v));
                } else if (key == "totalGlobalMem") {
                    d.totalMemory = static_cast<uint64_t>(numberOf(v).value_or(0));
                } else if (key == "computeMajor" || key == "major") {
                    d.computeMajor = static_cast<uint32_t>(numberOf(v).value_or(0));
                } else if (key == "computeMinor" || key == "minor") {
                    d.computeMinor = static_cast<uint32_t>(numberOf(v).value_or(0));
                } else if (key == "numSms" || key == "multiProcessorCount") {
                    d.smCount = static_cast<uint32_t>(numberOf(v).value_or(0));
                } else if (key == "maxThreadsPerBlock") {
                    d.maxThreadsPerBlock = static_cast<uint32_t>(numberOf(v).value_or(0));
                } else if (key == "sharedMemPerBlock") {
                    d.maxSharedMemoryPerBlock = static_cast<uint32_t>(numberOf(v).value_or(0));
                } else if (key == "regsPerBlock") {
                    d.maxRegistersPerBlock = static_cast<uint32_t>(numberOf(v).value_or(0));
                } else if (key == "warpSize") {
                    d.threadsPerWarp = static_cast<uint32_t>(numberOf(v).value_or(0));
                }
            }
            if (hasId)
                m_devices.push_back(std::move(d));
        }
    }

    void readEvents(od::array events) {
        const char* begin = m_data.data();
        uint64_t seen = 0;
        for (auto element : events) {
            if (++seen % kProgressEvery == 0) {
                const char* at = nullptr;
                if (!element.current_location().get(at))
                    progress(0.9 * double(at - begin) / double(std::max<size_t>(1, m_data.size())));
            }
            od::object object;
            if (element.get_object().get(object)) {
                ++m_result.skipped;
                continue;
            }
            Event e;
            // The keys read, each once: a second one (a hand-made or crafted file) is counted,
            // and its value used, as JSON parsers commonly do.
            static constexpr std::string_view kKeys[] = {"ph",  "cat", "name", "pid",
                                                         "tid", "ts",  "dur",  "args"};
            unsigned seenKeys = 0;
            bool duplicateKey = false;
            for (auto field : object) {
                std::string_view key;
                od::value v;
                if (field.unescaped_key().get(key) || field.value().get(v))
                    continue;
                for (unsigned k = 0; k < std::size(kKeys); ++k) {
                    if (key == kKeys[k]) {
                        duplicateKey = duplicateKey || (seenKeys & (1u << k)) != 0;
                        seenKeys |= 1u << k;
                    }
                }
                if (key == "ph") {
                    e.phase = stringOf(v);
                } else if (key == "cat") {
                    e.cat = stringOf(v);
                } else if (key == "name") {
                    e.name = stringOf(v);
                } else if (key == "pid") {
                    e.pid = idOf(v).value_or(-1);
                } else if (key == "tid") {
                    e.tid = idOf(v).value_or(-1);
                } else if (key == "id") {
                    e.flowId = idOf(v).value_or(-1);
                } else if (key == "ts") {
                    if (auto t = timeOf(v)) {
                        e.ts = *t;
                        e.hasTs = true;
                    } else {
                        e.badNumber = true;
                    }
                } else if (key == "dur") {
                    const std::optional<int64_t> d = timeOf(v);
                    e.dur = std::max<int64_t>(0, d.value_or(0));
                    e.badNumber = e.badNumber || !d;
                } else if (key == "args") {
                    readArgs(v, e);
                }
            }
            e.kind = kindOf(e.phase, e.cat);
            if (e.kind == Kind::Metadata) {
                readMetadata(e);
                continue;
            }
            if (e.badNumber && e.kind != Kind::Skip)
                ++m_badNumbers;
            m_duplicateKeys += duplicateKey;
            if (e.kind == Kind::Skip || !e.hasTs) {
                ++m_result.skipped;
                continue;
            }
            if (e.kind == Kind::PythonFunction) // stacks of the API calls, not events
                m_pythonFunctions.push_back(e);
            else if (e.kind == Kind::FwdBwdFlow) // backward ops' forward stacks
                m_fwdBwdFlows.push_back(e);
            else
                m_events.push_back(e);
        }
    }

    void readMetadata(const Event& e) {
        if (e.metaName.empty())
            return;
        if (e.name == "process_name")
            m_processNames[e.pid] = e.metaName;
        else if (e.name == "thread_name")
            m_threadNames[{e.pid, e.tid}] = e.metaName;
    }

    // A trace recorded with_stack=True: each CUDA API call's stack is the python_function events
    // enclosing it on its thread (innermost first), deduplicated into chains written as
    // CUDA_CALLCHAINS, as `warpline-record --python-stacks` records them. A call made by a
    // backward op on an autograd thread (no Python code there) gets the stack of the forward op
    // it is the gradient of, found through the "fwdbwd" flows, under a frame naming the backward
    // op ("MmBackward0"). Returns the chain of each event (0: none); empty when the trace has no
    // python_function events.
    std::vector<uint32_t> pythonStacks(col::TraceWriter& writer) {
        constexpr size_t kMaxDepth = 128;
        if (m_pythonFunctions.empty())
            return {};
        using Key = std::vector<std::string_view>; // frame names, innermost first
        std::map<Key, uint32_t> chains;
        const auto chainOf = [&](const Key& key) {
            auto found = chains.find(key);
            if (found == chains.end()) {
                const auto id = static_cast<uint32_t>(chains.size() + 1);
                found = chains.emplace(key, id).first;
                col::CallchainRecord chain;
                chain.id = id;
                for (const std::string_view name : key)
                    chain.frames.push_back(pythonFrame(name));
                writer.addCallchain(chain);
            }
            return found->second;
        };

        // Per thread: python_function events, API calls and forward ends of flows, each an
        // index into its vector; swept in time order with the functions open at each point.
        enum class Type : uint8_t { Function, FlowStart, Call };
        struct Item {
            Type type;
            size_t index;
        };
        const auto event = [this](const Item& item) -> const Event& {
            return item.type == Type::Function    ? m_pythonFunctions[item.index]
                   : item.type == Type::FlowStart ? m_fwdBwdFlows[item.index]
                                                  : m_events[item.index];
        };
        std::map<std::pair<int64_t, int64_t>, std::vector<Item>> byThread;
        for (size_t i = 0; i < m_pythonFunctions.size(); ++i)
            byThread[{m_pythonFunctions[i].pid, m_pythonFunctions[i].tid}].push_back(
                {Type::Function, i});
        for (size_t i = 0; i < m_fwdBwdFlows.size(); ++i)
            if (m_fwdBwdFlows[i].phase == "s")
                byThread[{m_fwdBwdFlows[i].pid, m_fwdBwdFlows[i].tid}].push_back(
                    {Type::FlowStart, i});
        for (size_t i = 0; i < m_events.size(); ++i)
            if (m_events[i].kind == Kind::Runtime || m_events[i].kind == Kind::Driver)
                byThread[{m_events[i].pid, m_events[i].tid}].push_back({Type::Call, i});
        std::vector<uint32_t> chainOfEvent(m_events.size(), 0);
        std::set<Key> forwardStacks;                // each distinct one once
        std::map<int64_t, const Key*> forwardStack; // flow id -> the stack at its forward op
        std::vector<const Event*> open; // enclosing python_function events, outermost first
        Key key;
        for (auto& [thread, items] : byThread) {
            // By start; at the same start the longer (enclosing) event first, a function before
            // the API call it makes.
            std::stable_sort(items.begin(), items.end(), [&](const Item& a, const Item& b) {
                const Event &x = event(a), &y = event(b);
                if (x.ts != y.ts)
                    return x.ts < y.ts;
                if ((a.type == Type::Function) != (b.type == Type::Function))
                    return a.type == Type::Function;
                return x.dur > y.dur;
            });
            open.clear();
            for (const Item& item : items) {
                const Event& e = event(item);
                while (!open.empty() && open.back()->ts + open.back()->dur <= e.ts)
                    open.pop_back();
                if (item.type == Type::Function) {
                    if (open.size() < kMaxDepth)
                        open.push_back(&e);
                    continue;
                }
                if (open.empty())
                    continue;
                key.clear();
                for (auto it = open.rbegin(); it != open.rend(); ++it)
                    key.push_back((*it)->name);
                if (item.type == Type::FlowStart) {
                    if (e.flowId >= 0)                 // "id" a number
                        forwardStack.emplace(e.flowId, // the first of a repeated id
                                             &*forwardStacks.insert(key).first);
                } else
                    chainOfEvent[item.index] = chainOf(key);
            }
        }
        backwardStacks(forwardStack, chainOfEvent, chainOf);
        m_result.pythonStacks = chains.size();
        return chainOfEvent;
    }

    // The calls without a stack made inside a backward op ("MmBackward0", the cpu_op a "fwdbwd"
    // flow ends at, "bp": "e": the slice enclosing the flow's end) get the forward op's stack
    // under a frame naming the backward op; within nested backward ops, the innermost's.
    template <typename ChainOf>
    void backwardStacks(const std::map<int64_t, const std::vector<std::string_view>*>& forwardStack,
                        std::vector<uint32_t>& chains, const ChainOf& chainOf) {
        constexpr size_t kLookBack = 64; // cpu_ops looked at before a flow's end for its op
        if (forwardStack.empty())
            return;
        // Per thread, its cpu_ops by start, the enclosing one first at the same start.
        std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> opsByThread;
        for (size_t i = 0; i < m_events.size(); ++i)
            if (m_events[i].kind == Kind::CpuOp)
                opsByThread[{m_events[i].pid, m_events[i].tid}].push_back(i);
        for (auto& [thread, ops] : opsByThread)
            std::stable_sort(ops.begin(), ops.end(), [this](size_t a, size_t b) {
                const Event &x = m_events[a], &y = m_events[b];
                return x.ts != y.ts ? x.ts < y.ts : x.dur > y.dur;
            });
        // Each backward op (an index into m_events): the flow whose forward stack it takes and
        // its name. The op a flow ends at ("AddmmBackward0") runs inside the engine's
        // "autograd::engine::evaluate_function: AddmmBackward0", which also reduces the
        // gradients to their inputs' shapes (an aten::sum after it): that op, when there is one,
        // holds the calls.
        struct BackwardOp {
            int64_t flow;
            std::string_view name;
        };
        std::map<size_t, BackwardOp> backwardOps;
        // "AddmmBackward0" of "autograd::engine::evaluate_function: AddmmBackward0", or nothing.
        const auto evaluated = [](std::string_view op) -> std::optional<std::string_view> {
            constexpr std::string_view kEvaluate = "autograd::engine::evaluate_function: ";
            if (op.substr(0, kEvaluate.size()) != kEvaluate)
                return std::nullopt;
            return op.substr(kEvaluate.size());
        };
        for (const Event& f : m_fwdBwdFlows) {
            if (f.phase != "f" || !forwardStack.count(f.flowId))
                continue;
            const auto ops = opsByThread.find({f.pid, f.tid});
            if (ops == opsByThread.end())
                continue;
            // The innermost op enclosing f.ts: the latest-starting one that does.
            auto it =
                std::upper_bound(ops->second.begin(), ops->second.end(), f.ts,
                                 [this](int64_t ts, size_t op) { return ts < m_events[op].ts; });
            std::optional<size_t> holder; // the op holding the calls
            std::string_view name;        // the backward op's name
            for (size_t n = 0; n < kLookBack && it != ops->second.begin(); ++n) {
                const Event& op = m_events[*--it];
                if (op.ts + op.dur < f.ts)
                    continue;
                if (holder) { // the next enclosing op: the engine's around it?
                    if (evaluated(op.name) == name)
                        holder = *it;
                    break;
                }
                holder = *it;
                name = op.name;
                if (const auto inner = evaluated(name)) { // the flow ends at the engine's op
                    name = *inner;
                    break;
                }
            }
            if (holder)
                backwardOps.emplace(*holder, BackwardOp{f.flowId, name});
        }
        // Per thread, a sweep of its backward ops and its calls without a stack.
        struct Item {
            bool op;
            size_t index;
        };
        std::map<std::pair<int64_t, int64_t>, std::vector<Item>> byThread;
        for (const auto& [op, backward] : backwardOps)
            byThread[{m_events[op].pid, m_events[op].tid}].push_back({true, op});
        for (size_t i = 0; i < m_events.size(); ++i)
            if ((m_events[i].kind == Kind::Runtime || m_events[i].kind == Kind::Driver) &&
                chains[i] == 0 && byThread.count({m_events[i].pid, m_events[i].tid}))
                byThread[{m_events[i].pid, m_events[i].tid}].push_back({false, i});
        std::vector<size_t> open; // enclosing backward ops, outermost first
        std::vector<std::string_view> key;
        for (auto& [thread, items] : byThread) {
            std::stable_sort(items.begin(), items.end(), [this](const Item& a, const Item& b) {
                const Event &x = m_events[a.index], &y = m_events[b.index];
                if (x.ts != y.ts)
                    return x.ts < y.ts;
                if (a.op != b.op)
                    return a.op;
                return x.dur > y.dur;
            });
            open.clear();
            for (const Item& item : items) {
                const Event& e = m_events[item.index];
                while (!open.empty() && m_events[open.back()].ts + m_events[open.back()].dur < e.ts)
                    open.pop_back();
                if (item.op) {
                    open.push_back(item.index);
                    continue;
                }
                if (open.empty())
                    continue;
                const BackwardOp& backward = backwardOps.at(open.back());
                const std::vector<std::string_view>& forward = *forwardStack.at(backward.flow);
                key.assign(1, backward.name);
                key.insert(key.end(), forward.begin(), forward.end());
                chains[item.index] = chainOf(key);
                ++m_result.backwardCalls;
            }
        }
    }

    void write(const std::string& tracePath) {
        // The process: the one with the most CUDA API calls (else the most events).
        std::map<int64_t, uint64_t> apiByPid, cpuByPid;
        int64_t base = std::numeric_limits<int64_t>::max();
        for (const Event& e : m_events) {
            if (e.kind == Kind::Runtime || e.kind == Kind::Driver)
                ++apiByPid[e.pid];
            else if (e.kind == Kind::CpuOp || e.kind == Kind::UserAnnotation)
                ++cpuByPid[e.pid];
            base = std::min(base, e.ts);
        }
        if (m_events.empty())
            fail("it holds no CUDA API calls, GPU activity or CPU ops");
        const auto& counts = apiByPid.empty() ? cpuByPid : apiByPid;
        int64_t pid = 0;
        uint64_t best = 0;
        for (const auto& [p, n] : counts) {
            if (n > best) {
                best = n;
                pid = p;
            }
        }
        m_result.pid = static_cast<uint32_t>(pid);

        col::TraceWriter::Options writerOptions;
        writerOptions.overwrite = true;
        col::TraceWriter writer(tracePath, writerOptions);
        writer.setMeta("source_format", "pytorch-profiler");
        writer.setMeta("source_file", m_path);
        if (!m_traceName.empty())
            writer.setMeta("workload", std::string(m_traceName));
        if (m_rank && *m_rank >= 0)
            writer.setMeta("rank", std::to_string(*m_rank));
        if (m_worldSize && *m_worldSize > 0)
            writer.setMeta("world_size", std::to_string(*m_worldSize));
        if (m_duplicateKeys > 0)
            writer.addError(0, "PyTorch import",
                            std::to_string(m_duplicateKeys) +
                                " events have a key twice (\"ts\", \"name\", \"args\", ...); "
                                "the last value of each was used");
        if (m_badNumbers > 0)
            writer.addError(0, "PyTorch import",
                            std::to_string(m_badNumbers) +
                                " events were skipped or shortened: their \"ts\" or \"dur\" is "
                                "not a number of microseconds within 73 years");
        const auto processName = m_processNames.find(pid);
        writer.setProcess(m_result.pid, processName != m_processNames.end()
                                            ? std::string(processName->second)
                                            : std::string("python"));
        // Absolute wall clock of t = 0: Kineto's ts are epoch microseconds, or relative to
        // baseTimeNanoseconds when the file says so.
        const int64_t epochBase = m_baseTimeNs.value_or(0);
        constexpr int64_t kYear2000Ns = 946'684'800'000'000'000LL;
        if (epochBase + base > kYear2000Ns)
            writer.setSessionStart(epochBase + base);
        for (const col::DeviceRecord& d : m_devices)
            writer.addDevice(d);
        for (const auto& [key, name] : m_threadNames) {
            if (key.first != pid || key.second < 0 || key.second >= (1 << 24))
                continue;
            col::NameRecord n;
            n.object = col::NameRecord::Object::Thread;
            n.processId = static_cast<uint32_t>(key.first);
            n.threadId = static_cast<uint32_t>(key.second);
            n.name = std::string(name);
            writer.addName(n);
        }

        std::set<std::pair<int64_t, int64_t>> contexts, streams;
        std::set<int64_t> annotatedStreams;
        uint32_t markerId = 0;
        uint64_t written = 0;
        const std::vector<uint32_t> chainOf = pythonStacks(writer);
        for (size_t index = 0; index < m_events.size(); ++index) {
            const Event& e = m_events[index];
            if (++written % kProgressEvery == 0)
                progress(0.9 + 0.1 * double(written) / double(m_events.size()));
            const int64_t start = e.ts - base;
            const int64_t end = start + e.dur;
            // GPU events: device from args, else the GPU's pid (Kineto's pid is the device).
            const uint32_t device =
                static_cast<uint32_t>(e.device >= 0 ? e.device : std::max<int64_t>(0, e.pid));
            const uint32_t context = static_cast<uint32_t>(std::max<int64_t>(0, e.context));
            const uint32_t stream =
                static_cast<uint32_t>(e.stream >= 0 ? e.stream : std::max<int64_t>(0, e.tid));
            const auto cpuIds = [&](uint32_t& processId, uint32_t& threadId) {
                processId = static_cast<uint32_t>(e.pid);
                threadId = static_cast<uint32_t>(e.tid);
            };
            switch (e.kind) {
            case Kind::Runtime:
            case Kind::Driver: {
                col::ApiRecord r;
                r.domain = e.kind == Kind::Runtime ? col::ApiRecord::Domain::Runtime
                                                   : col::ApiRecord::Domain::Driver;
                r.start = start;
                r.end = end;
                cpuIds(r.processId, r.threadId);
                r.correlationId = static_cast<uint32_t>(e.correlation);
                r.name = e.name;
                r.callchainId = chainOf.empty() ? 0 : chainOf[index];
                writer.addApi(r);
                ++m_result.apiCalls;
                break;
            }
            case Kind::Kernel: {
                col::KernelRecord r;
                r.start = start;
                r.end = end;
                r.deviceId = device;
                r.contextId = context;
                r.streamId = stream;
                r.correlationId = static_cast<uint32_t>(e.correlation);
                r.mangledName = std::string(e.name);
                r.gridX = e.grid[0];
                r.gridY = e.grid[1];
                r.gridZ = e.grid[2];
                r.blockX = e.block[0];
                r.blockY = e.block[1];
                r.blockZ = e.block[2];
                r.registersPerThread = static_cast<uint32_t>(e.registers);
                r.staticSharedMemory = static_cast<int32_t>(e.sharedMemory);
                if (e.graphId > 0) {
                    r.graphId = static_cast<uint32_t>(e.graphId);
                    r.graphNodeId = static_cast<uint64_t>(e.graphNodeId.value_or(0));
                }
                writer.addKernel(r);
                contexts.insert({context, device});
                streams.insert({context, stream});
                ++m_result.kernels;
                break;
            }
            case Kind::Memcpy: {
                col::MemcpyRecord r;
                r.start = start;
                r.end = end;
                r.deviceId = device;
                r.contextId = context;
                r.streamId = stream;
                r.correlationId = static_cast<uint32_t>(e.correlation);
                r.bytes = static_cast<uint64_t>(std::max<int64_t>(0, e.bytes));
                r.copyKind = copyKindOf(e.name);
                std::tie(r.srcKind, r.dstKind) = memKindsOf(e.name);
                if (e.copyKind >= 0)
                    r.copyKind = static_cast<uint8_t>(e.copyKind);
                if (e.srcKind >= 0)
                    r.srcKind = static_cast<uint8_t>(e.srcKind);
                if (e.dstKind >= 0)
                    r.dstKind = static_cast<uint8_t>(e.dstKind);
                writer.addMemcpy(r);
                contexts.insert({context, device});
                streams.insert({context, stream});
                ++m_result.memcpys;
                break;
            }
            case Kind::Memset: {
                col::MemsetRecord r;
                r.start = start;
                r.end = end;
                r.deviceId = device;
                r.contextId = context;
                r.streamId = stream;
                r.correlationId = static_cast<uint32_t>(e.correlation);
                r.bytes = static_cast<uint64_t>(std::max<int64_t>(0, e.bytes));
                r.memKind = e.memKind >= 0 ? static_cast<uint16_t>(e.memKind) : memKindOf(e.name);
                writer.addMemset(r);
                contexts.insert({context, device});
                streams.insert({context, stream});
                ++m_result.memsets;
                break;
            }
            case Kind::Sync: {
                col::SyncRecord r;
                r.start = start;
                r.end = end;
                r.contextId = context;
                if (e.stream >= 0)
                    r.streamId = static_cast<uint32_t>(e.stream);
                r.correlationId = static_cast<uint32_t>(e.correlation);
                r.syncType = syncTypeOf(e.syncKind.empty() ? e.name : e.syncKind);
                writer.addSync(r);
                ++m_result.syncs;
                break;
            }
            case Kind::UserAnnotation:
            case Kind::CpuOp:
            case Kind::GpuAnnotation: {
                col::MarkerRecord r;
                r.id = ++markerId;
                r.name = e.name;
                if (e.kind == Kind::GpuAnnotation) {
                    r.processId = m_result.pid;
                    r.threadId = kGpuAnnotationTid + (stream & 0xFFFF);
                    r.domain = "gpu_user_annotation";
                    annotatedStreams.insert(stream);
                } else {
                    cpuIds(r.processId, r.threadId);
                    r.domain = e.kind == Kind::CpuOp ? std::string_view("cpu_op") : e.domain;
                }
                r.kind = col::MarkerRecord::Kind::Start;
                r.timestamp = start;
                writer.addMarker(r);
                r.kind = col::MarkerRecord::Kind::End;
                r.timestamp = end;
                writer.addMarker(r);
                ++m_result.ranges;
                break;
            }
            case Kind::PythonFunction:
            case Kind::FwdBwdFlow:
            case Kind::Skip:
            case Kind::Metadata:
                break;
            }
        }
        for (const auto& [context, device] : contexts)
            writer.addContext({static_cast<uint32_t>(context), static_cast<uint32_t>(device), 0});
        for (const auto& [context, stream] : streams)
            writer.addStream({static_cast<uint32_t>(context), static_cast<uint32_t>(stream), 0, 0});
        for (const int64_t stream : annotatedStreams) {
            col::NameRecord n;
            n.object = col::NameRecord::Object::Thread;
            n.processId = m_result.pid;
            n.threadId = kGpuAnnotationTid + static_cast<uint32_t>(stream & 0xFFFF);
            n.name = "GPU annotations, stream " + std::to_string(stream);
            writer.addName(n);
        }
        writer.setMeta("end_time", std::to_string(endTime(base)));
        writer.finish("complete");
    }

    int64_t endTime(int64_t base) const {
        int64_t end = 0;
        for (const Event& e : m_events)
            end = std::max(end, e.ts + e.dur - base);
        return end;
    }

    std::string m_path;
    const KinetoImport::Options& m_options;
    std::string m_data;
    od::parser m_parser;
    uint64_t m_badNumbers = 0;    // events of a kind we read whose "ts" or "dur" was unreadable
    uint64_t m_duplicateKeys = 0; // events with a key read twice ("ts", "name", ...)
    std::vector<Event> m_events;
    std::vector<Event> m_pythonFunctions; // python_function events (with_stack=True)
    std::vector<Event> m_fwdBwdFlows;     // "fwdbwd" flow events, forward op to backward op
    std::vector<col::DeviceRecord> m_devices;
    std::map<int64_t, std::string_view> m_processNames;
    std::map<std::pair<int64_t, int64_t>, std::string_view> m_threadNames;
    std::optional<int64_t> m_baseTimeNs;
    std::string_view m_traceName;
    std::optional<int64_t> m_rank;      // distributedInfo
    std::optional<int64_t> m_worldSize; // distributedInfo
    KinetoImport::Result m_result;
};

} // namespace

bool KinetoImport::isKinetoTrace(const std::string& path) {
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (!file)
        return false;
    unsigned char buffer[256];
    const size_t n = std::fread(buffer, 1, sizeof buffer, file);
    std::fclose(file);
    if (n >= 2 && buffer[0] == 0x1f && buffer[1] == 0x8b)
        return true;
    for (size_t i = 0; i < n; ++i) {
        const unsigned char c = buffer[i];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
            continue;
        if (i + 2 < n && c == 0xEF && buffer[i + 1] == 0xBB && buffer[i + 2] == 0xBF) {
            i += 2; // UTF-8 byte order mark
            continue;
        }
        return c == '{' || c == '[';
    }
    return false;
}

KinetoImport::Result KinetoImport::convert(const std::string& jsonPath,
                                           const std::string& tracePath, const Options& options) {
    Converter converter(jsonPath, options);
    try {
        format::OutputFile output(tracePath, options.replace);
        const Result result = converter.run(output.tempPath());
        output.commit();
        return result;
    } catch (const col::TraceWriteError& e) {
        throw TraceError(TraceError::Kind::Corrupt,
                         "cannot write the converted trace " + tracePath + ": " + e.what());
    }
}

TraceStore KinetoImport::load(const std::string& jsonPath, const TraceLoader::Options& options) {
    namespace fs = std::filesystem;
    std::string dirTemplate = (fs::temp_directory_path() / "warpline-kineto-XXXXXX").string();
    if (!::mkdtemp(dirTemplate.data()))
        throw TraceError(TraceError::Kind::Corrupt,
                         std::string("cannot create a temporary directory: ") +
                             std::strerror(errno));
    const fs::path dir(dirTemplate);
    // Named after the JSON file, so messages and titles that show the store's path still say
    // which trace it is.
    const fs::path trace = dir / (fs::path(jsonPath).filename().string() + ".warpline");
    struct Cleanup {
        fs::path dir;
        ~Cleanup() {
            std::error_code ec;
            fs::remove_all(dir, ec);
        }
    } cleanup{dir};
    Options convertOptions;
    if (options.progress)
        convertOptions.progress = [&](double f) { return options.progress(0.5 * f); };
    convert(jsonPath, trace.string(), convertOptions);
    TraceLoader::Options loadOptions = options;
    if (options.progress)
        loadOptions.progress = [&](double f) { return options.progress(0.5 + 0.5 * f); };
    loadOptions.sourcePath = jsonPath; // the JSON the user opened, not the temporary conversion
    return TraceLoader::load(trace.string(), loadOptions);
}

} // namespace warpline::model
