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
#include <optional>
#include <set>
#include <simdjson.h>
#include <unistd.h>
#include <zlib.h>

namespace warpline::model {

namespace {

namespace od = simdjson::ondemand;
namespace col = warpline::collector;

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
// (and simdjson reads at most 4 GiB). One string longer than kMaxStringBytes is no trace's: a
// gzip bomb of one endless string is stopped when it gets there, not after inflating gigabytes.
struct ReadLimits {
    uint64_t maxBytes;
    uint64_t maxStringBytes;
    std::string why; // where maxBytes comes from, for the message
};

std::string mib(uint64_t bytes) {
    return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB";
}

// Follows strings through the JSON as it is read, chunk by chunk, and stops at one longer than
// the limit. Cheap: one pass over bytes already in cache.
class StringLengthGuard {
public:
    explicit StringLengthGuard(uint64_t limit) : m_limit(limit) {}
    // Returns the offset at which a string passed the limit, or -1.
    int64_t feed(const char* p, size_t n) {
        for (size_t i = 0; i < n; ++i) {
            const char c = p[i];
            if (!m_inString) {
                if (c == '"') {
                    m_inString = true;
                    m_start = m_offset + i;
                }
            } else if (m_escape) {
                m_escape = false;
            } else if (c == '\\') {
                m_escape = true;
            } else if (c == '"') {
                m_inString = false;
            }
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
    bool m_inString = false;
    bool m_escape = false;
};

std::string readFile(const std::string& path, const ReadLimits& limits) {
    const std::string name = std::filesystem::path(path).filename().string();
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (!file)
        throw TraceError(TraceError::Kind::NotFound, path + ": " + std::strerror(errno));
    unsigned char magic[2] = {0, 0};
    const size_t got = std::fread(magic, 1, 2, file);
    std::fclose(file);
    const bool gzipped = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    const auto tooLarge = [&] {
        return TraceError(TraceError::Kind::NotATrace,
                          name + (gzipped ? " inflates to more than " : " is larger than ") +
                              mib(limits.maxBytes) +
                              ", more than Warpline reads from a JSON trace" + limits.why);
    };
    StringLengthGuard strings(limits.maxStringBytes);
    std::string data;
    const auto append = [&](const char* p, size_t n) {
        if (data.size() + n > limits.maxBytes)
            throw tooLarge();
        const int64_t at = strings.feed(p, n);
        if (at >= 0)
            throw TraceError(TraceError::Kind::NotATrace,
                             name + " is not a PyTorch profiler trace: the string at byte " +
                                 std::to_string(at) + (gzipped ? " (inflated)" : "") +
                                 " is longer than " + mib(limits.maxStringBytes) +
                                 ", which no trace has (the file may be made to exhaust memory)");
        data.append(p, n);
    };
    std::array<char, 1 << 18> chunk;
    if (gzipped) {
        gzFile gz = gzopen(path.c_str(), "rb");
        if (!gz)
            throw TraceError(TraceError::Kind::NotFound, path + ": cannot open");
        gzbuffer(gz, 1 << 18);
        try {
            for (;;) {
                const int n = gzread(gz, chunk.data(), static_cast<unsigned>(chunk.size()));
                if (n < 0) {
                    int code = 0;
                    throw TraceError(TraceError::Kind::NotATrace,
                                     path + " is not a readable gzip file: " + gzerror(gz, &code));
                }
                if (n == 0)
                    break;
                append(chunk.data(), static_cast<size_t>(n));
            }
        } catch (...) {
            gzclose(gz);
            throw;
        }
        gzclose(gz);
    } else {
        std::error_code ec;
        if (std::filesystem::file_size(path, ec) > limits.maxBytes && !ec)
            throw tooLarge();
        std::FILE* f = std::fopen(path.c_str(), "rb");
        if (!f)
            throw TraceError(TraceError::Kind::NotFound, path + ": " + std::strerror(errno));
        size_t n = 0;
        try {
            while ((n = std::fread(chunk.data(), 1, chunk.size(), f)) > 0)
                append(chunk.data(), n);
        } catch (...) {
            std::fclose(f);
            throw;
        }
        const bool failed = std::ferror(f) != 0;
        std::fclose(f);
        if (failed)
            throw TraceError(TraceError::Kind::Corrupt, path + ": read error");
    }
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
        m_data = readFile(m_path, limits());
        parse();
        write(tracePath);
        progress(1.0);
        return m_result;
    }

private:
    ReadLimits limits() const {
        ReadLimits limits{m_options.maxBytes, m_options.maxStringBytes, {}};
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
        OutputFile output(tracePath, options.replace);
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
