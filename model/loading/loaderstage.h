#pragma once

// The rows of a trace between reading and building: what the table readers (metareaders.h,
// gpureaders.h, threadreaders.h) fill and the track builder (trackbuilder.h) and the linker
// (correlationlinker.h) consume. The loader's (traceloader.cpp) only, not an interface of the
// model.
//
// Invariants: every staged time lies within +-kTimeLimit and no staged span ends before it starts
// (LoadStage::keepSpan turns the rest away and counts them); names are the store's NameIds, except
// an API row's name, which is its StringIds id until mergeApi (threadreaders.h) resolves it, and
// an NVTX row's domain while it has kRawDomain set.
//
// Cost: a TrackStage keeps rows that come in track order straight in the columns of the one track
// they form (no copy when the store takes them); the first row out of that order turns it into a
// list of rows (32-40 bytes each), which building sorts and spreads over depths or lanes.
//
// Thread affinity: none of its own; a LoadStage is filled by the loading thread, and its thread
// and stream stages are then built on two threads at once (disjoint parts).

#include "tracestore.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <new>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace warpline::model {

// A globalTid or globalPid as nsys writes it: the pid in bits 24..47, the tid in bits 0..23.
inline constexpr int64_t kPidShift = 24;
inline constexpr int64_t kIdMask = 0xFFFFFF;
inline constexpr uint32_t kUnknownPid = std::numeric_limits<uint32_t>::max();
// Times are kept within +-2^62 ns (146 years): the difference of any two then fits in int64, so
// no analysis overflows on a damaged file's INT64_MIN or INT64_MAX. Real traces use a few hours.
inline constexpr int64_t kTimeLimit = int64_t(1) << 62;

inline bool plausibleTime(int64_t t) {
    return t > -kTimeLimit && t < kTimeLimit;
}

inline uint32_t pidOf(int64_t globalId) {
    return static_cast<uint32_t>((globalId >> kPidShift) & kIdMask);
}

struct ApiRow {
    int64_t start;
    int64_t end;
    NameId name;
    uint32_t correlation;
    int32_t returnValue;
    uint8_t domain;
};

struct NvtxRow {
    int64_t start;
    int64_t end;
    NameId name;
    NameId domain;
    uint32_t color;
    uint8_t flags;
};

struct GpuRow {
    int64_t start;
    int64_t end;
    NameId name;
    uint32_t correlation;
    uint32_t detail;
    uint32_t graphId;
    uint8_t kind;
};

// NvtxRow::flags: the range was never closed (NvtxTrack's own flag, which the track keeps as it
// is; private to NvtxTrack, so trackbuilder.cpp asserts the two agree).
inline constexpr uint8_t kUnclosedNvtx = 1;
// NvtxRow::flags while reading NVTX_EVENTS: `domain` still holds the raw domainId.
inline constexpr uint8_t kRawDomain = 0x80;

// A staging vector that reaches kReserveAt rows reserves room for every row its table may give
// (`estimate`, the table's row count): the pages are only address space until rows are written,
// and the vector no longer grows by copying (each doubling would touch fresh memory, the largest
// cost of loading once decoding is cheap, issue 16). Only a vector that has shown it is large
// reserves, so a crafted file's row count (MAX(rowid)) costs nothing for a table of a few rows. A
// reservation the system refuses (strict overcommit) is skipped: the vector grows as usual.
inline constexpr size_t kReserveAt = size_t(1) << 16;

template <typename T> void tryReserve(std::vector<T>& v, uint64_t n) {
    try {
        v.reserve(static_cast<size_t>(std::min<uint64_t>(n, v.max_size())));
    } catch (const std::bad_alloc&) {
    }
}

template <typename Row> void reserveAtThreshold(std::vector<Row>& rows, uint64_t estimate) {
    if (rows.size() == kReserveAt && estimate > rows.size())
        tryReserve(rows, estimate);
}

// Stages that reserve their table's row count: the first few threads or streams, which hold
// nearly every row of a trace; the rest grow as vectors do (a file with thousands of threads
// would otherwise map address space for each).
inline constexpr size_t kReservedStages = 64;

// The columns of a lane-0 GPU track and of a depth-0 API track, as TrackStage fills them.
struct GpuColumns {
    std::vector<int64_t> start, end;
    std::vector<uint8_t> kind;
    std::vector<NameId> name;
    std::vector<uint32_t> correlation, detail, graphId;

    template <typename F> void forEach(F&& f) {
        f(start), f(end), f(kind), f(name), f(correlation), f(detail), f(graphId);
    }
    void append(const GpuRow& r) {
        start.push_back(r.start), end.push_back(r.end), kind.push_back(r.kind);
        name.push_back(r.name), correlation.push_back(r.correlation);
        detail.push_back(r.detail), graphId.push_back(r.graphId);
    }
    GpuRow row(size_t i) const {
        return {start[i], end[i], name[i], correlation[i], detail[i], graphId[i], kind[i]};
    }
};

struct ApiColumns {
    std::vector<int64_t> start, end;
    std::vector<NameId> name;
    std::vector<uint32_t> correlation;
    std::vector<int32_t> returnValue;
    std::vector<uint8_t> domain;

    template <typename F> void forEach(F&& f) {
        f(start), f(end), f(name), f(correlation), f(returnValue), f(domain);
    }
    void append(const ApiRow& r) {
        start.push_back(r.start), end.push_back(r.end), name.push_back(r.name);
        correlation.push_back(r.correlation), returnValue.push_back(r.returnValue);
        domain.push_back(r.domain);
    }
    ApiRow row(size_t i) const {
        return {start[i], end[i], name[i], correlation[i], returnValue[i], domain[i]};
    }
};

struct NvtxColumns {
    std::vector<int64_t> start, end;
    std::vector<NameId> name;
    std::vector<uint32_t> color;
    std::vector<NameId> domain;
    std::vector<uint8_t> flags;

    template <typename F> void forEach(F&& f) {
        f(start), f(end), f(name), f(color), f(domain), f(flags);
    }
    void append(const NvtxRow& r) {
        start.push_back(r.start), end.push_back(r.end), name.push_back(r.name);
        color.push_back(r.color), domain.push_back(r.domain), flags.push_back(r.flags);
    }
};

// The columns a kind of row fills.
template <typename Row> struct ColumnsFor;
template <> struct ColumnsFor<ApiRow> { using type = ApiColumns; };
template <> struct ColumnsFor<GpuRow> { using type = GpuColumns; };
template <> struct ColumnsFor<NvtxRow> { using type = NvtxColumns; };

// One stream's GPU operations or one thread's API calls while they are read. While rows come
// sorted by start and each starts at or after the previous one's end (a stream's kernels in
// completion order, a thread's calls without nesting: the usual case) they go straight into the
// columns of the one track they will form, which the store then takes as they are: no row buffer,
// no copy (issue 16). The first row out of that order turns the stage into a list of rows, which
// building sorts and spreads over lanes or depths (the general case).
template <typename Row, typename Columns> class TrackStage {
public:
    void add(const Row& r) {
        if (size() == kReserveAt)
            reserveExpected();
        if (!m_rowsMode && (m_size == 0 || (r.start >= m_lastEnd &&
                                            (r.start > m_lastStart || r.end <= m_lastEnd)))) {
            m_columns.append(r);
            ++m_size;
            m_lastStart = r.start;
            m_lastEnd = r.end;
            return;
        }
        toRows();
        m_rows.push_back(r);
    }
    // The most rows this stage may get (its table's row count): reserved once it has kReserveAt
    // rows (reserveAtThreshold).
    void expect(uint64_t rows) { m_expected = rows; }
    bool inColumns() const { return !m_rowsMode; }
    size_t size() const { return m_rowsMode ? m_rows.size() : m_size; }
    Columns& columns() { return m_columns; }
    std::vector<Row>& rows() { return m_rows; }

private:
    void reserveExpected() {
        if (m_expected <= size())
            return;
        if (m_rowsMode)
            tryReserve(m_rows, m_expected);
        else
            m_columns.forEach([this](auto& column) { tryReserve(column, m_expected); });
    }
    // The rows as one list (the general case), from here on.
    void toRows() {
        if (m_rowsMode)
            return;
        m_rowsMode = true;
        m_rows.reserve(m_size);
        for (size_t i = 0; i < m_size; ++i)
            m_rows.push_back(m_columns.row(i));
        m_columns = Columns{};
        m_size = 0;
    }

    Columns m_columns;
    size_t m_size = 0;
    int64_t m_lastStart = 0;
    int64_t m_lastEnd = 0;
    bool m_rowsMode = false;
    uint64_t m_expected = 0;
    std::vector<Row> m_rows;
};

using ApiStage = TrackStage<ApiRow, ApiColumns>;
using GpuStage = TrackStage<GpuRow, GpuColumns>;

struct ThreadStage {
    ApiStage api;
    std::vector<NvtxRow> pushPop;
    std::vector<NvtxRow> startEnd;
    std::vector<NvtxRow> marks;
};

// (device, stream, context, pid): streams display by device, then stream id.
using StreamKey = std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>;

struct StreamStage {
    GpuStage ops;
};

// TARGET_INFO_CUDA_STREAM priorities and WARPLINE_STREAM_NAMES, by (context, stream).
using StreamPriorities = std::map<std::pair<uint32_t, uint32_t>, int32_t>;
using StreamNames = std::map<std::pair<uint32_t, uint32_t>, NameId>;

// GPU ops that start before an earlier op of their stream ends, each with the earlier op that
// ends last (refs into the store's GPU tracks): from building (noteOverlaps) to judgeOverlaps.
using GpuOverlaps = std::vector<std::pair<EventRef, EventRef>>;

// Everything the readers stage for building, and what they counted on the way.
struct LoadStage {
    std::map<int64_t, ThreadStage> threads; // by globalTid
    std::map<int64_t, NameId> threadNames;  // ThreadNames, by globalTid
    std::map<StreamKey, StreamStage> streams;
    StreamNames streamNames;
    StreamPriorities streamPriorities;

    // MAX(rowid) of the large tables: the most rows each can give (TrackStage::expect).
    struct {
        uint64_t api = 0, kernels = 0, nvtx = 0;
    } expected;

    // The span of every event kept (known once the first is).
    struct {
        bool known = false;
        int64_t begin = 0, end = 0;
    } time;

    std::map<std::string, uint64_t> skipped; // table -> rows skipped by keepSpan and its like
    uint64_t unknownConfigs = 0; // kernels whose configId is not in WARPLINE_KERNEL_CONFIGS
    uint64_t unclosedNvtx = 0;   // NVTX ranges without an end

    // Whether a row's span makes sense (both times, end >= start, within kTimeLimit); counts the
    // row of `table` as skipped when not.
    bool keepSpan(int64_t start, int64_t end, bool startNull, bool endNull, const char* table) {
        if (startNull || endNull || end < start || !plausibleTime(start) || !plausibleTime(end)) {
            ++skipped[table];
            return false;
        }
        return true;
    }
    void noteTime(int64_t start, int64_t end) {
        if (!time.known) {
            time.begin = start;
            time.end = end;
            time.known = true;
            return;
        }
        time.begin = std::min(time.begin, start);
        time.end = std::max(time.end, end);
    }
    ThreadStage& thread(int64_t globalTid) { return threads[globalTid]; }
    StreamStage& stream(uint32_t device, uint32_t context, uint32_t streamId, uint32_t pid) {
        return streams[{device, streamId, context, pid}];
    }
};

} // namespace warpline::model
