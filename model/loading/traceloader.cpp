#include "traceloader.h"

#include "cpusamplesdata.h"
#include "guardedquery.h"
#include "memoryinfo.h"
#include "pagereader.h"
#include "storedschema.h"
#include "tracedatabase.h"
#include "traceerror.h"
#include "tracestrings.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <set>
#include <sqlite3.h>
#include <thread>
#include <tuple>
#include <unistd.h>
#include <unordered_map>

namespace warpline::model {

namespace {

constexpr int64_t kPidShift = 24;
constexpr int64_t kIdMask = 0xFFFFFF;
constexpr uint32_t kUnknownPid = std::numeric_limits<uint32_t>::max();
constexpr int kProgressEvery = 16384; // rows between progress callbacks
// Times are kept within +-2^62 ns (146 years): the difference of any two then fits in int64, so
// no analysis overflows on a damaged file's INT64_MIN or INT64_MAX. Real traces use a few hours.
constexpr int64_t kTimeLimit = int64_t(1) << 62;
// CUPTI_ACTIVITY_KIND_RUNTIME.eventClass of a driver API call (ENUM_NSYS_EVENT_CLASS).
constexpr int64_t kEventClassCudaDriver = 1;

bool plausibleTime(int64_t t) {
    return t > -kTimeLimit && t < kTimeLimit;
}

uint32_t pidOf(int64_t globalId) {
    return static_cast<uint32_t>((globalId >> kPidShift) & kIdMask);
}

// ENUM_CUDA_MEMCPY_OPER labels; nsys names memcpy operations "[CUDA memcpy <label>]".
std::string memcpyOperationName(int64_t copyKind) {
    static const char* const labels[] = {"Unknown",         "Host-to-Device",  "Device-to-Host",
                                         "Host-to-Array",   "Array-to-Host",   "Array-to-Array",
                                         "Array-to-Device", "Device-to-Array", "Device-to-Device",
                                         "Host-to-Host",    "Peer-to-Peer"};
    const char* label = (copyKind >= 0 && copyKind < 11) ? labels[copyKind] : "Unknown";
    return std::string("[CUDA memcpy ") + label + "]";
}

// When the file is shorter than its SQLite header says, a sentence saying so; "" otherwise.
// `header` holds the file's first bytes (up to 100), `size` its length. The header's page count
// is trusted only when SQLite would trust it (bytes 92-95 match the change counter at 24-27;
// sqlite.org/fileformat2.html, "in-header database size").
std::string truncationNote(std::string_view header, uint64_t size) {
    constexpr std::string_view kMagic("SQLite format 3\0", 16);
    if (header.size() < 100) {
        if (header.size() >= 6 && kMagic.substr(0, header.size()) == header.substr(0, 16))
            return "it is only " + std::to_string(size) +
                   " bytes, less than an SQLite header: it was cut off, e.g. copied or "
                   "downloaded before it was complete";
        return {};
    }
    if (header.substr(0, 16) != kMagic)
        return {};
    const auto byte = [&header](size_t at) { return static_cast<uint32_t>(uint8_t(header[at])); };
    const auto be32 = [&byte](size_t at) {
        return byte(at) << 24 | byte(at + 1) << 16 | byte(at + 2) << 8 | byte(at + 3);
    };
    const uint32_t rawPageSize = byte(16) << 8 | byte(17);
    const uint64_t pageSize = rawPageSize == 1 ? 65536 : rawPageSize;
    const uint64_t pages = be32(28);
    if (pageSize < 512 || (pageSize & (pageSize - 1)) != 0 || pages == 0 || be32(24) != be32(92) ||
        size >= pages * pageSize)
        return {};
    return "it is shorter than its SQLite header says (" + std::to_string(size) + " of " +
           std::to_string(pages * pageSize) +
           " bytes): it was cut off, e.g. copied or downloaded before it was complete";
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

// A staging vector that reaches kReserveAt rows reserves room for every row its table may give
// (`estimate`, the table's row count): the pages are only address space until rows are written,
// and the vector no longer grows by copying (each doubling would touch fresh memory, the largest
// cost of loading once decoding is cheap, issue 16). Only a vector that has shown it is large
// reserves, so a crafted file's row count (MAX(rowid)) costs nothing for a table of a few rows. A
// reservation the system refuses (strict overcommit) is skipped: the vector grows as usual.
constexpr size_t kReserveAt = size_t(1) << 16;

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

// Stages that reserve their table's row count: the first few threads or streams, which hold
// nearly every row of a trace; the rest grow as vectors do (a file with thousands of threads
// would otherwise map address space for each).
constexpr size_t kReservedStages = 64;

using ApiStage = TrackStage<ApiRow, ApiColumns>;
using GpuStage = TrackStage<GpuRow, GpuColumns>;

// NvtxRow::flags while reading NVTX_EVENTS: `domain` still holds the raw domainId.
constexpr uint8_t kRawDomain = 0x80;

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

template <typename Row> bool byStartThenLongest(const Row& a, const Row& b) {
    return a.start != b.start ? a.start < b.start : a.end > b.end;
}

// Nesting depth of each span, spans sorted by byStartThenLongest: a span's depth is the number of
// spans still open when it starts. Spans at one depth never overlap (a depth is reused only after
// its previous span ended), which is the invariant SpanTrack needs.
template <typename Row> std::vector<uint32_t> nestingDepths(const std::vector<Row>& rows) {
    std::vector<uint32_t> depth(rows.size());
    std::vector<int64_t> openEnds;
    for (size_t i = 0; i < rows.size(); ++i) {
        while (!openEnds.empty() && openEnds.back() <= rows[i].start)
            openEnds.pop_back();
        depth[i] = static_cast<uint32_t>(openEnds.size());
        openEnds.push_back(rows[i].end);
    }
    return depth;
}

// First-fit lanes for spans that may overlap without nesting (start/end ranges, overlapping GPU
// ops): each span goes to the first lane whose last span ended by its start.
template <typename Row> std::vector<uint32_t> firstFitLanes(const std::vector<Row>& rows) {
    std::vector<uint32_t> lane(rows.size());
    std::vector<int64_t> laneEnds;
    for (size_t i = 0; i < rows.size(); ++i) {
        size_t l = 0;
        while (l < laneEnds.size() && laneEnds[l] > rows[i].start)
            ++l;
        if (l == laneEnds.size())
            laneEnds.push_back(rows[i].end);
        else
            laneEnds[l] = rows[i].end;
        lane[i] = static_cast<uint32_t>(l);
    }
    return lane;
}

template <typename Row> void sortRows(std::vector<Row>& rows) {
    if (!std::is_sorted(rows.begin(), rows.end(), byStartThenLongest<Row>))
        std::stable_sort(rows.begin(), rows.end(), byStartThenLongest<Row>);
}

// What the API reader thread collects; merged into the store's staging once it has joined.
struct ApiReadResult {
    std::map<int64_t, ApiStage> threads; // names are StringIds ids here
    std::map<std::string, uint64_t> skipped;
    bool haveTime = false;
    int64_t begin = 0;
    int64_t end = 0;
    std::exception_ptr error;
};

// Joins a helper thread on every path out of a scope, cancelling it first when the scope is
// left early by an exception (LoadCancelled, TraceError).
class HelperThread {
public:
    explicit HelperThread(std::atomic<bool>& cancel) : m_cancel(cancel) {}
    ~HelperThread() {
        if (m_thread.joinable()) {
            m_cancel = true;
            m_thread.join();
        }
    }
    HelperThread(const HelperThread&) = delete;
    HelperThread& operator=(const HelperThread&) = delete;

    template <typename F> void start(F f) {
        m_thread = std::thread([this, f = std::move(f)]() mutable {
            f();
            const std::lock_guard<std::mutex> lock(m_mutex);
            m_done = true;
            m_doneChanged.notify_all();
        });
    }
    void join() {
        if (m_thread.joinable())
            m_thread.join();
    }
    // Joins, calling tick() every 20 ms while the helper works (progress, and Cancel: tick may
    // throw, and the destructor then cancels and joins), and once more when it is done. Returns as
    // soon as the helper is done, not at the next tick: a small trace's load waits for nothing.
    template <typename Tick> void join(Tick tick) {
        std::unique_lock<std::mutex> lock(m_mutex);
        while (!m_doneChanged.wait_for(lock, std::chrono::milliseconds(20),
                                       [this] { return m_done; })) {
            lock.unlock();
            tick();
            lock.lock();
        }
        lock.unlock();
        tick(); // what the helper did, reported once it is done
        join();
    }

private:
    std::atomic<bool>& m_cancel;
    std::mutex m_mutex;
    std::condition_variable m_doneChanged;
    bool m_done = false;
    std::thread m_thread;
};

} // namespace

class TraceLoader::Impl {
public:
    Impl(const std::string& path, const Options& options)
        : m_path(path), m_fileName(std::filesystem::path(path).filename().string()),
          m_options(options) {}
    ~Impl() { m_conn.reset(); } // before the database, whose private copy it may read

    TraceStore run();

private:
    TraceStore load();

    // --- file and schema ---
    void open();
    std::unique_ptr<Connection> openConnection(std::function<bool()> keepGoing) const;
    void readSchema();
    bool hasTable(const std::string& name) const { return m_schema.hasTable(name); }
    bool hasColumn(const std::string& table, const std::string& column) const {
        return m_schema.hasColumn(table, column);
    }
    std::string select(const std::string& table, std::initializer_list<const char*> columns) const {
        return m_schema.select(table, columns);
    }
    std::function<bool()> mainKeepGoing();
    Connection::Limits limits() const;
    // The named columns of a table (StoredSchema::rows), from its pages unless Options say not.
    std::unique_ptr<TableRows> rows(Connection& connection, const std::string& table,
                                    std::initializer_list<const char*> columns,
                                    std::initializer_list<int> textColumns = {},
                                    RowFilter filter = {}) const {
        return m_schema.rows(connection, table, columns, textColumns, std::move(filter),
                             m_options.readPages);
    }
    int64_t estimateRows(const std::string& table) {
        return m_schema.estimateRows(*m_conn, table, m_fileBytes);
    }
    void checkMemory(uint64_t rows) const;

    // --- progress ---
    void rowRead();
    void setProgress(double fraction);

    // --- reading ---
    void readMeta();
    void readStrings();
    void readProcessesAndThreads();
    void readDevicesAndStreams();
    void readApiTables(ApiReadResult& out) const;
    void mergeApi(ApiReadResult& in);
    void readKernelsFast();
    void readKernelsGeneric();
    void readMemcpy();
    void readMemset();
    void readSyncs();
    void readGpuMetrics();
    void readCallchains();
    void readCpuSamples();
    void readNvtx();
    void readDiagnostics();
    void describeSource();

    // --- building ---
    ThreadStage& thread(int64_t globalTid);
    StreamStage& stream(uint32_t device, uint32_t context, uint32_t streamId, uint32_t pid);
    uint32_t kernelConfig(const KernelConfig& config);
    bool keepSpan(int64_t start, int64_t end, bool startNull, bool endNull, const char* table);
    void noteTime(int64_t start, int64_t end);

    template <typename Row, typename Track, typename Setup>
    static void distribute(std::vector<Row>& rows, const std::vector<uint32_t>& level,
                           std::vector<Track>& tracks, std::vector<uint32_t>& trackOfLevel,
                           Setup setup);
    // Moves staged columns into a track.
    static void take(ApiTrack& t, ApiColumns& c);
    static void take(GpuTrack& t, GpuColumns& c);
    static void take(NvtxTrack& t, NvtxColumns& c);
    void buildThreads();
    void buildNvtx();
    // Runs `helper` on a helper thread while this thread runs `work`, then waits for it reporting
    // progress (and so seeing Cancel); an exception of either is rethrown here.
    template <typename Helper, typename Work> void inParallel(Helper helper, Work work);
    void buildStreams();
    void noteOverlaps(const std::vector<GpuRow>& rows, const std::vector<uint32_t>& lanes,
                      uint32_t firstTrack);
    void linkCorrelations();
    void judgeOverlaps();
    void finishWarnings();

    std::string m_path;
    std::unique_ptr<TraceDatabase> m_database; // what SQLite reads: the file or a private copy
    std::string m_truncation;                  // truncationNote() of the file
    std::string m_fileName;
    uint64_t m_fileBytes = 0; // the bytes the file holds, holes of a sparse file left out
    Options m_options;
    std::unique_ptr<Connection> m_conn; // this thread's; the API reader opens its own
    TraceStore m_store;

    StoredSchema m_schema;
    TraceStrings m_strings{m_store.m_strings}; // StringIds, interned into the store's names
    std::map<int64_t, ThreadStage> m_threadStages;
    std::map<int64_t, NameId> m_threadNames;
    std::map<StreamKey, StreamStage> m_streamStages;
    // GPU ops that start before an earlier op of their stream ends, each with the earlier op that
    // ends last (refs into the store's GPU tracks): from buildStreams to judgeOverlaps.
    std::vector<std::pair<EventRef, EventRef>> m_overlaps;
    std::map<std::pair<uint32_t, uint32_t>, NameId> m_streamNames;       // (context, stream)
    std::map<std::pair<uint32_t, uint32_t>, int32_t> m_streamPriorities; // (context, stream)
    std::map<std::tuple<uint32_t, uint32_t, NameId, NameId, NameId, int32_t, int32_t, int32_t,
                        int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t>,
             uint32_t>
        m_configIndex;
    std::map<std::string, uint64_t> m_skipped; // table -> rows skipped
    bool m_haveTime = false;
    int64_t m_begin = 0;
    int64_t m_end = 0;
    int64_t m_utcEpochNs = 0; // TARGET_INFO_SESSION_START_TIME, 0 when absent
    uint64_t m_unclosedCount = 0;
    struct {
        uint64_t api = 0, kernels = 0, nvtx = 0;
    } m_rowEstimates;              // MAX(rowid) of the large tables: the most rows each can give
    uint64_t m_unknownConfigs = 0; // kernels whose configId is not in WARPLINE_KERNEL_CONFIGS
    uint64_t m_duplicateCorrelations = 0; // API calls sharing a correlation id in one domain

    double m_totalRows = 1;
    double m_rowsDone = 0;
    mutable std::atomic<uint64_t> m_helperRows{0}; // rows read by the API reader thread
    mutable std::atomic<bool> m_cancel{false};
    int m_sinceProgress = 0;
    double m_lastFraction = 0;
};

// --- file and schema ----------------------------------------------------------------------------

void TraceLoader::Impl::open() {
    std::error_code ec;
    const auto status = std::filesystem::status(m_path, ec);
    if (ec || !std::filesystem::exists(status))
        throw TraceError(TraceError::Kind::NotFound, m_path + ": no such file");
    if (std::filesystem::is_directory(status))
        throw TraceError(TraceError::Kind::NotATrace,
                         m_path + " is a directory, not a Warpline or Nsight Systems trace");
    if (std::filesystem::file_size(m_path, ec) == 0 && !ec)
        throw TraceError(TraceError::Kind::NotATrace,
                         m_fileName + " is empty (0 bytes): not a Warpline or Nsight Systems "
                                      "trace; was the recording killed before it started?");
    if (::access(m_path.c_str(), R_OK) != 0)
        throw TraceError(TraceError::Kind::NotFound,
                         "cannot open " + m_path +
                             ": permission denied (you may not read this file; ask its owner, "
                             "or copy it somewhere you can read it)");
    m_fileBytes = std::min<uint64_t>(std::filesystem::file_size(m_path, ec),
                                     TraceDatabase::dataBytes(m_path));
    m_database = std::make_unique<TraceDatabase>(m_path, m_fileName);
    m_conn = openConnection(mainKeepGoing());
    // The header and the length of the file SQLite reads (a WAL folded into a copy adds pages).
    m_truncation = truncationNote(TraceDatabase::header(m_conn->get()),
                                  std::filesystem::file_size(m_database->readPath(), ec));
    if (!m_truncation.empty())
        m_store.m_warnings.push_back(m_fileName + ": " + m_truncation +
                                     "; the rows that could be read are shown.");
    if (TraceDatabase::needsRollback(m_conn->get())) {
        m_conn.reset();
        m_database->rollBack();
        m_conn = openConnection(mainKeepGoing());
    }
    for (const std::string& w : m_database->warnings())
        m_store.m_warnings.push_back(w);
}

// Read-only; NOMUTEX because each connection is used by one thread only (the API tables are read
// on a second connection by a helper thread), which saves a mutex round trip per column read.
std::unique_ptr<Connection>
TraceLoader::Impl::openConnection(std::function<bool()> keepGoing) const {
    sqlite3* db = m_database->open();
    // A trace being recorded holds a write lock only while it commits a batch; wait it out.
    sqlite3_busy_timeout(db, 2000);
    // The file is untrusted: functions with side effects never run from its schema, SQL cannot
    // corrupt it on purpose, no extension loads, and no value read may exceed kMaxValueBytes.
    sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
    sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, nullptr);
    sqlite3_limit(db, SQLITE_LIMIT_LENGTH, kMaxValueBytes);
    return std::make_unique<Connection>(db, m_fileName, std::move(keepGoing), limits());
}

// Between rows the loader reports progress itself; inside a query (a long scan of a filtered table)
// the connection's progress handler asks through this, so Cancel works there too.
std::function<bool()> TraceLoader::Impl::mainKeepGoing() {
    return [this] { return !m_options.progress || m_options.progress(m_lastFraction); };
}

// How long one query may go without returning a row: reading the whole file at 20 MiB/s (a slow
// disk; scans read far faster) plus 5 s. A query over stored tables never comes near it; it stops
// what a damaged or crafted file could still make run away.
Connection::Limits TraceLoader::Impl::limits() const {
    Connection::Limits l;
    l.budget = m_options.queryBudget.count() > 0
                   ? m_options.queryBudget
                   : std::chrono::milliseconds(5000 + m_fileBytes / ((20 << 20) / 1000));
    // A table cell takes at least 4 bytes (a 2-byte pointer, its payload size and rowid); a scan
    // fetches each page once, an overflow chain once per column read from it (64: far more
    // columns than any table the loader reads).
    l.maxRows = m_fileBytes / 4 + 1024;
    l.maxPageFetches = (m_fileBytes / 512 + 1024) * 64;
    return l;
}

// Which tables and columns the file stores, and so its dialect (storedschema.h).
void TraceLoader::Impl::readSchema() {
    m_schema = StoredSchema::read(*m_conn, m_fileName);
    m_store.m_formatVersion = m_schema.formatVersion();
    m_store.m_origin = m_schema.origin();
    m_store.m_warnings.insert(m_store.m_warnings.end(), m_schema.warnings().begin(),
                              m_schema.warnings().end());
}

// Peak bytes a load takes per event: the store (about 39 per event, tracestore.h) and the rows
// staged while reading. Measured 45 at the peak (VmHWM) on the 10M-event benchmark trace
// (docs/benchmarks.md); rounded up.
constexpr uint64_t kPeakBytesPerEvent = 48;
// Refuses, before anything is read, a file whose events need more memory than is available: a
// load that ran out halfway would take the machine into swap or be killed, the user having waited
// for it.
void TraceLoader::Impl::checkMemory(uint64_t rows) const {
    rows = std::min(rows, m_fileBytes / kMinFileBytesPerRow);
    const uint64_t available =
        m_options.availableMemory > 0 ? m_options.availableMemory : availableMemoryBytes();
    const uint64_t need = rows * kPeakBytesPerEvent;
    if (available == 0 || need <= available)
        return;
    const auto mib = [](uint64_t bytes) {
        return bytes >= (uint64_t(10) << 30)
                   ? std::to_string((bytes + (uint64_t(1) << 29)) >> 30) + " GiB"
                   : std::to_string((bytes + (1 << 19)) >> 20) + " MiB";
    };
    throw TraceError(
        TraceError::Kind::TooLarge,
        "cannot open " + m_fileName + ": its " + std::to_string(rows) + " events need about " +
            mib(need) + " of memory (" + std::to_string(kPeakBytesPerEvent) +
            " bytes each while loading), more than this machine has available (" + mib(available) +
            "): close other programs, or open it on a machine with more memory");
}

// --- progress -----------------------------------------------------------------------------------

// Reading rows is about 85% of the work; sorting and linking the rest.
constexpr double kReadShare = 0.85;

void TraceLoader::Impl::rowRead() {
    m_rowsDone += 1;
    if (++m_sinceProgress < kProgressEvery)
        return;
    m_sinceProgress = 0;
    const double rows = m_rowsDone + static_cast<double>(m_helperRows.load());
    setProgress(kReadShare * std::min(1.0, rows / m_totalRows));
}

void TraceLoader::Impl::setProgress(double fraction) {
    fraction = std::max(fraction, m_lastFraction);
    m_lastFraction = fraction;
    if (m_options.progress && !m_options.progress(fraction))
        throw LoadCancelled();
}

// --- reading ------------------------------------------------------------------------------------

void TraceLoader::Impl::readMeta() {
    if (hasTable("TARGET_INFO_SESSION_START_TIME")) {
        Statement st(*m_conn, select("TARGET_INFO_SESSION_START_TIME", {"utcEpochNs"}));
        if (st.step())
            m_utcEpochNs = st.i64(0);
    }
    if (!hasTable("WARPLINE_META"))
        return;
    Statement st(*m_conn, select("WARPLINE_META", {"key", "value"}));
    while (st.step())
        m_store.m_meta[std::string(st.text(0))] = std::string(st.text(1));
    const std::string status = m_store.metaValue("status");
    if (status == "recording")
        m_store.m_warnings.push_back(
            "The recording had not finished when this file was read (status \"recording\"): "
            "events after the last commit are missing.");
    else if (status == "failed")
        m_store.m_warnings.push_back("The recording failed (status \"failed\"): the trace may be "
                                     "incomplete; see the collector errors.");
    else if (status == "incomplete")
        m_store.m_warnings.push_back("The recording is incomplete (status \"incomplete\"): the "
                                     "traced program ended before the collector finished.");
    else if (status == "no-cuda")
        m_store.m_warnings.push_back("No CUDA activity was recorded: the traced program never "
                                     "initialised CUDA.");
    // A traced program's own exit status (warpline-record -- PROGRAM), when it was not success.
    const std::string signal = m_store.metaValue("exit_signal");
    const std::string exitCode = m_store.metaValue("exit_code");
    if (!signal.empty())
        m_store.m_warnings.push_back("The traced program was killed by signal " + signal +
                                     " (exit status " + exitCode + ").");
    else if (!exitCode.empty() && exitCode != "0")
        m_store.m_warnings.push_back("The traced program exited with status " + exitCode + ".");
}

void TraceLoader::Impl::readStrings() {
    if (!hasTable("StringIds"))
        return;
    Statement st(*m_conn, select("StringIds", {"id", "value"}));
    int64_t maxId = -1;
    while (st.step()) {
        maxId = std::max(maxId, st.i64(0));
        m_strings.add(st.i64(0), std::string(st.text(1)));
        rowRead();
    }
    m_strings.indexDense(maxId);
}

void TraceLoader::Impl::readProcessesAndThreads() {
    if (hasTable("PROCESSES")) {
        Statement st(*m_conn, select("PROCESSES", {"globalPid", "pid", "name"}));
        while (st.step()) {
            ProcessInfo p;
            p.globalPid = st.i64(0);
            p.pid = st.isNull(1) ? pidOf(p.globalPid) : static_cast<uint32_t>(st.i64(1));
            p.name = m_store.m_strings.intern(st.text(2));
            m_store.m_processes.push_back(p);
        }
        std::sort(
            m_store.m_processes.begin(), m_store.m_processes.end(),
            [](const ProcessInfo& a, const ProcessInfo& b) { return a.globalPid < b.globalPid; });
    }
    if (hasTable("ThreadNames")) {
        Statement st(*m_conn, select("ThreadNames", {"nameId", "priority", "globalTid"}));
        std::map<int64_t, int64_t> bestPriority;
        while (st.step()) {
            if (st.isNull(2) || st.isNull(0))
                continue;
            const int64_t tid = st.i64(2);
            const int64_t priority = st.isNull(1) ? 0 : st.i64(1);
            const auto it = bestPriority.find(tid);
            if (it != bestPriority.end() && it->second >= priority)
                continue;
            bestPriority[tid] = priority;
            m_threadNames[tid] = m_strings.name(st.i64(0));
        }
    }
}

void TraceLoader::Impl::readDevicesAndStreams() {
    if (hasTable("TARGET_INFO_GPU")) {
        Statement st(*m_conn,
                     select("TARGET_INFO_GPU",
                            {"id", "name", "uuid", "totalMemory", "memoryBandwidth", "smCount",
                             "computeMajor", "computeMinor", "clockRate", "threadsPerWarp",
                             "maxThreadsPerBlock", "maxRegistersPerBlock", "maxRegistersPerSm",
                             "maxShmemPerBlock", "maxShmemPerBlockOptin", "maxShmemPerSm",
                             "maxWarpsPerSm", "maxBlocksPerSm"}));
        while (st.step()) {
            DeviceInfo d;
            d.id = static_cast<uint32_t>(st.i64(0));
            d.name = m_store.m_strings.intern(st.text(1));
            d.uuid = std::string(st.text(2));
            d.totalMemory = static_cast<uint64_t>(st.i64(3));
            d.memoryBandwidth = static_cast<uint64_t>(st.i64(4));
            d.smCount = static_cast<uint32_t>(st.i64(5));
            d.computeMajor = static_cast<uint32_t>(st.i64(6));
            d.computeMinor = static_cast<uint32_t>(st.i64(7));
            // kHz in Warpline 1.x traces; Hz, as nsys writes it, in nsys exports and from 2.0.
            const int64_t clock = st.i64(8);
            const bool hertz =
                m_store.m_origin != TraceOrigin::Warpline || m_store.m_formatVersion >= 200;
            d.clockRate = static_cast<uint32_t>(std::clamp<int64_t>(
                hertz ? clock / 1000 : clock, 0, std::numeric_limits<uint32_t>::max()));
            // NULL reads as 0: not known.
            const auto limit = [&](int column) {
                return static_cast<uint32_t>(
                    std::clamp<int64_t>(st.i64(column), 0, std::numeric_limits<uint32_t>::max()));
            };
            d.threadsPerWarp = limit(9);
            d.maxThreadsPerBlock = limit(10);
            d.maxRegistersPerBlock = limit(11);
            d.maxRegistersPerSm = limit(12);
            d.maxSharedMemoryPerBlock = limit(13);
            d.maxSharedMemoryPerBlockOptin = limit(14);
            d.maxSharedMemoryPerSm = limit(15);
            d.maxWarpsPerSm = limit(16);
            d.maxBlocksPerSm = limit(17);
            m_store.m_devices.push_back(d);
        }
    }
    if (hasTable("TARGET_INFO_CUDA_STREAM")) {
        Statement st(*m_conn,
                     select("TARGET_INFO_CUDA_STREAM", {"streamId", "contextId", "priority"}));
        while (st.step())
            m_streamPriorities[{static_cast<uint32_t>(st.i64(1)),
                                static_cast<uint32_t>(st.i64(0))}] =
                static_cast<int32_t>(st.i64(2));
    }
    if (hasTable("WARPLINE_STREAM_NAMES")) {
        Statement st(*m_conn, select("WARPLINE_STREAM_NAMES", {"contextId", "streamId", "nameId"}));
        while (st.step())
            m_streamNames[{static_cast<uint32_t>(st.i64(0)), static_cast<uint32_t>(st.i64(1))}] =
                m_strings.name(st.i64(2));
    }
}

bool TraceLoader::Impl::keepSpan(int64_t start, int64_t end, bool startNull, bool endNull,
                                 const char* table) {
    if (startNull || endNull || end < start || !plausibleTime(start) || !plausibleTime(end)) {
        ++m_skipped[table];
        return false;
    }
    return true;
}

void TraceLoader::Impl::noteTime(int64_t start, int64_t end) {
    if (!m_haveTime) {
        m_begin = start;
        m_end = end;
        m_haveTime = true;
        return;
    }
    m_begin = std::min(m_begin, start);
    m_end = std::max(m_end, end);
}

ThreadStage& TraceLoader::Impl::thread(int64_t globalTid) {
    return m_threadStages[globalTid];
}

StreamStage& TraceLoader::Impl::stream(uint32_t device, uint32_t context, uint32_t streamId,
                                       uint32_t pid) {
    return m_streamStages[{device, streamId, context, pid}];
}

// Runs on the helper thread with its own connection: touches nothing but `out`, the row counter
// and the (read-only) schema, so it overlaps with the kernel and NVTX reads on the main thread.
void TraceLoader::Impl::readApiTables(ApiReadResult& out) const {
    try {
        const std::unique_ptr<Connection> db = openConnection([this] { return !m_cancel; });
        // nsys exports (and Warpline traces from format 2.0) keep driver calls in the RUNTIME
        // table with eventClass 1; Warpline 1.x traces kept them in a DRIVER table of their own.
        for (const char* table : {"CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER"}) {
            if (!hasTable(table))
                continue;
            const bool driverTable = std::string_view(table) == "CUPTI_ACTIVITY_KIND_DRIVER";
            const auto st = rows(*db, table,
                                 {"start", "end", "globalTid", "correlationId", "nameId",
                                  "returnValue", "eventClass"});
            int64_t lastTid = std::numeric_limits<int64_t>::min();
            ApiStage* rows = nullptr;
            uint64_t sinceProgress = 0;
            while (st->step()) {
                if (++sinceProgress == kProgressEvery) {
                    m_helperRows += sinceProgress;
                    sinceProgress = 0;
                    if (m_cancel)
                        return;
                }
                const int64_t start = st->i64(0);
                const int64_t end = st->i64(1);
                if (st->isNull(0, start) || st->isNull(1, end) || end < start ||
                    !plausibleTime(start) || !plausibleTime(end)) {
                    ++out.skipped[table];
                    continue;
                }
                const int64_t tid = st->i64(2);
                if (!rows || tid != lastTid) {
                    rows = &out.threads[tid];
                    if (out.threads.size() <= kReservedStages)
                        rows->expect(m_rowEstimates.api);
                    lastTid = tid;
                }
                out.begin = out.haveTime ? std::min(out.begin, start) : start;
                out.end = out.haveTime ? std::max(out.end, end) : end;
                out.haveTime = true;
                const ApiDomain domain = driverTable || st->i64(6) == kEventClassCudaDriver
                                             ? ApiDomain::Driver
                                             : ApiDomain::Runtime;
                rows->add(ApiRow{start, end, static_cast<NameId>(st->i64(4)),
                                 static_cast<uint32_t>(st->i64(3)),
                                 static_cast<int32_t>(st->i64(5)), static_cast<uint8_t>(domain)});
            }
            m_helperRows += sinceProgress;
        }
    } catch (...) {
        out.error = std::current_exception();
    }
}

void TraceLoader::Impl::mergeApi(ApiReadResult& in) {
    if (in.error)
        std::rethrow_exception(in.error);
    for (const auto& [table, count] : in.skipped)
        m_skipped[table] += count;
    if (in.haveTime)
        noteTime(in.begin, in.end);
    for (auto& [tid, stage] : in.threads) {
        // Consecutive calls often share a name: resolve the StringIds id only when it changes.
        NameId lastRaw = kUnresolved;
        NameId lastName = kNoName;
        const auto resolve = [&](NameId& name) {
            if (name != lastRaw) {
                lastRaw = name;
                lastName = m_strings.apiName(name);
            }
            name = lastName;
        };
        if (stage.inColumns()) {
            for (NameId& name : stage.columns().name)
                resolve(name);
        } else {
            for (ApiRow& r : stage.rows())
                resolve(r.name);
        }
        // The only API rows of a thread come from here.
        thread(tid).api = std::move(stage);
    }
    in.threads.clear();
}

uint32_t TraceLoader::Impl::kernelConfig(const KernelConfig& c) {
    const auto key = std::make_tuple(c.deviceId, c.contextId, c.demangledName, c.shortName,
                                     c.mangledName, c.gridX, c.gridY, c.gridZ, c.blockX, c.blockY,
                                     c.blockZ, c.registersPerThread, c.staticSharedMemory,
                                     c.dynamicSharedMemory, c.launchType, c.sharedMemoryExecuted);
    const auto [it, inserted] =
        m_configIndex.emplace(key, static_cast<uint32_t>(m_store.m_kernelConfigs.size()));
    if (inserted)
        m_store.m_kernelConfigs.push_back(c);
    return it->second;
}

// Warpline's own tables: configs once, then 6 integer columns per kernel instead of the view's
// join (measured in bench/: see docs/analyses.md "Loading").
void TraceLoader::Impl::readKernelsFast() {
    std::unordered_map<int64_t, uint32_t> configs; // file config id -> store config index
    if (hasTable("WARPLINE_KERNEL_CONFIGS")) {     // without it every kernel's config is unknown
        Statement st(*m_conn,
                     select("WARPLINE_KERNEL_CONFIGS",
                            {"id", "deviceId", "contextId", "demangledName", "shortName",
                             "mangledName", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ",
                             "registersPerThread", "staticSharedMemory", "dynamicSharedMemory",
                             "launchType", "sharedMemoryExecuted"}));
        while (st.step()) {
            KernelConfig c;
            c.deviceId = static_cast<uint32_t>(st.i64(1));
            c.contextId = static_cast<uint32_t>(st.i64(2));
            c.demangledName = m_strings.name(st.i64(3));
            c.shortName = m_strings.name(st.i64(4));
            c.mangledName = st.isNull(5) ? kNoName : m_strings.name(st.i64(5));
            c.gridX = static_cast<int32_t>(st.i64(6));
            c.gridY = static_cast<int32_t>(st.i64(7));
            c.gridZ = static_cast<int32_t>(st.i64(8));
            c.blockX = static_cast<int32_t>(st.i64(9));
            c.blockY = static_cast<int32_t>(st.i64(10));
            c.blockZ = static_cast<int32_t>(st.i64(11));
            c.registersPerThread = static_cast<int32_t>(st.i64(12));
            c.staticSharedMemory = static_cast<int32_t>(st.i64(13));
            c.dynamicSharedMemory = static_cast<int32_t>(st.i64(14));
            c.launchType = static_cast<int32_t>(st.i64(15));
            c.sharedMemoryExecuted = static_cast<int32_t>(st.i64(16));
            configs[st.i64(0)] = kernelConfig(c);
        }
    }
    // Config ids count up from 0: look them up per kernel in an array, not the hash.
    std::vector<uint32_t> dense;
    for (const auto& [id, index] : configs) {
        if (id < 0 || id >= (int64_t(1) << 24))
            continue;
        if (static_cast<size_t>(id) >= dense.size())
            dense.resize(static_cast<size_t>(id) + 1, kUnresolved);
        dense[static_cast<size_t>(id)] = index;
    }
    // The view gives every kernel the first process's globalPid; so does this path.
    const uint32_t pid =
        m_store.m_processes.empty() ? kUnknownPid : pidOf(m_store.m_processes.front().globalPid);
    const auto st = rows(*m_conn, "WARPLINE_KERNELS",
                         {"start", "end", "streamId", "correlationId", "configId", "graphId"});
    int64_t lastConfigId = std::numeric_limits<int64_t>::min();
    int64_t lastStreamId = std::numeric_limits<int64_t>::min();
    uint32_t config = 0;
    StreamStage* stage = nullptr;
    // Streams are few: a short list beats the map lookup per row.
    struct CachedStream {
        uint32_t device, context, stream;
        StreamStage* stage;
    };
    std::vector<CachedStream> streams;
    while (st->step()) {
        rowRead();
        const int64_t start = st->i64(0);
        const int64_t end = st->i64(1);
        if (!keepSpan(start, end, st->isNull(0, start), st->isNull(1, end),
                      "CUPTI_ACTIVITY_KIND_KERNEL"))
            continue;
        const int64_t configId = st->i64(4);
        const int64_t streamId = st->i64(2);
        if (configId != lastConfigId || !stage || streamId != lastStreamId) {
            const bool inDense = configId >= 0 && static_cast<uint64_t>(configId) < dense.size();
            const auto it = inDense ? configs.end() : configs.find(configId);
            if (inDense ? dense[static_cast<size_t>(configId)] == kUnresolved
                        : it == configs.end()) {
                ++m_unknownConfigs;
                continue;
            }
            config = inDense ? dense[static_cast<size_t>(configId)] : it->second;
            const KernelConfig& c = m_store.m_kernelConfigs[config];
            const auto sid = static_cast<uint32_t>(streamId);
            const auto cached =
                std::find_if(streams.begin(), streams.end(), [&](const CachedStream& x) {
                    return x.stream == sid && x.device == c.deviceId && x.context == c.contextId;
                });
            if (cached != streams.end()) {
                stage = cached->stage;
            } else {
                stage = &stream(c.deviceId, c.contextId, sid, pid);
                if (streams.size() < kReservedStages)
                    stage->ops.expect(m_rowEstimates.kernels);
                streams.push_back({c.deviceId, c.contextId, sid, stage});
            }
            lastConfigId = configId;
            lastStreamId = streamId;
        }
        noteTime(start, end);
        stage->ops.add(GpuRow{start, end, m_store.m_kernelConfigs[config].demangledName,
                              static_cast<uint32_t>(st->i64(3)), config,
                              static_cast<uint32_t>(st->i64(5)),
                              static_cast<uint8_t>(GpuOpKind::Kernel)});
    }
}

void TraceLoader::Impl::readKernelsGeneric() {
    const char* table = "CUPTI_ACTIVITY_KIND_KERNEL";
    const auto st = rows(*m_conn, table,
                         {"start",
                          "end",
                          "deviceId",
                          "contextId",
                          "streamId",
                          "correlationId",
                          "globalPid",
                          "demangledName",
                          "shortName",
                          "mangledName",
                          "gridX",
                          "gridY",
                          "gridZ",
                          "blockX",
                          "blockY",
                          "blockZ",
                          "registersPerThread",
                          "staticSharedMemory",
                          "dynamicSharedMemory",
                          "launchType",
                          "graphId",
                          "sharedMemoryExecuted"});
    while (st->step()) {
        rowRead();
        const int64_t start = st->i64(0);
        const int64_t end = st->i64(1);
        if (!keepSpan(start, end, st->isNull(0, start), st->isNull(1, end), table))
            continue;
        KernelConfig c;
        c.deviceId = static_cast<uint32_t>(st->i64(2));
        c.contextId = static_cast<uint32_t>(st->i64(3));
        c.demangledName = m_strings.name(st->i64(7));
        c.shortName = st->isNull(8) ? c.demangledName : m_strings.name(st->i64(8));
        c.mangledName = st->isNull(9) ? kNoName : m_strings.name(st->i64(9));
        c.gridX = static_cast<int32_t>(st->i64(10));
        c.gridY = static_cast<int32_t>(st->i64(11));
        c.gridZ = static_cast<int32_t>(st->i64(12));
        c.blockX = static_cast<int32_t>(st->i64(13));
        c.blockY = static_cast<int32_t>(st->i64(14));
        c.blockZ = static_cast<int32_t>(st->i64(15));
        c.registersPerThread = static_cast<int32_t>(st->i64(16));
        c.staticSharedMemory = static_cast<int32_t>(st->i64(17));
        c.dynamicSharedMemory = static_cast<int32_t>(st->i64(18));
        c.launchType = static_cast<int32_t>(st->i64(19));
        c.sharedMemoryExecuted = static_cast<int32_t>(st->i64(21));
        const uint32_t config = kernelConfig(c);
        const uint32_t pid = st->isNull(6) ? kUnknownPid : pidOf(st->i64(6));
        noteTime(start, end);
        stream(c.deviceId, c.contextId, static_cast<uint32_t>(st->i64(4)), pid)
            .ops.add(GpuRow{start, end, c.demangledName, static_cast<uint32_t>(st->i64(5)), config,
                            static_cast<uint32_t>(st->i64(20)),
                            static_cast<uint8_t>(GpuOpKind::Kernel)});
    }
}

void TraceLoader::Impl::readMemcpy() {
    const char* table = "CUPTI_ACTIVITY_KIND_MEMCPY";
    if (!hasTable(table))
        return;
    const auto st = rows(*m_conn, table,
                         {"start", "end", "deviceId", "contextId", "streamId", "correlationId",
                          "globalPid", "bytes", "copyKind", "srcKind", "dstKind"});
    std::unordered_map<int64_t, NameId> names;
    while (st->step()) {
        rowRead();
        const int64_t start = st->i64(0);
        const int64_t end = st->i64(1);
        if (!keepSpan(start, end, st->isNull(0, start), st->isNull(1, end), table))
            continue;
        const int64_t copyKind = st->i64(8);
        auto name = names.find(copyKind);
        if (name == names.end())
            name = names.emplace(copyKind, m_store.m_strings.intern(memcpyOperationName(copyKind)))
                       .first;
        MemOpInfo info;
        info.bytes = static_cast<uint64_t>(st->i64(7));
        info.copyKind = static_cast<uint8_t>(copyKind);
        info.srcKind = static_cast<uint8_t>(st->i64(9));
        info.dstKind = static_cast<uint8_t>(st->i64(10));
        const auto detail = static_cast<uint32_t>(m_store.m_memOps.size());
        m_store.m_memOps.push_back(info);
        const uint32_t pid = st->isNull(6) ? kUnknownPid : pidOf(st->i64(6));
        noteTime(start, end);
        stream(static_cast<uint32_t>(st->i64(2)), static_cast<uint32_t>(st->i64(3)),
               static_cast<uint32_t>(st->i64(4)), pid)
            .ops.add(GpuRow{start, end, name->second, static_cast<uint32_t>(st->i64(5)), detail, 0,
                            static_cast<uint8_t>(GpuOpKind::Memcpy)});
    }
}

void TraceLoader::Impl::readMemset() {
    const char* table = "CUPTI_ACTIVITY_KIND_MEMSET";
    if (!hasTable(table))
        return;
    const auto st = rows(*m_conn, table,
                         {"start", "end", "deviceId", "contextId", "streamId", "correlationId",
                          "globalPid", "bytes", "value", "memKind"});
    const NameId name = m_store.m_strings.intern("[CUDA memset]");
    while (st->step()) {
        rowRead();
        const int64_t start = st->i64(0);
        const int64_t end = st->i64(1);
        if (!keepSpan(start, end, st->isNull(0, start), st->isNull(1, end), table))
            continue;
        MemOpInfo info;
        info.bytes = static_cast<uint64_t>(st->i64(7));
        info.value = static_cast<uint32_t>(st->i64(8));
        info.dstKind = static_cast<uint8_t>(st->i64(9));
        const auto detail = static_cast<uint32_t>(m_store.m_memOps.size());
        m_store.m_memOps.push_back(info);
        const uint32_t pid = st->isNull(6) ? kUnknownPid : pidOf(st->i64(6));
        noteTime(start, end);
        stream(static_cast<uint32_t>(st->i64(2)), static_cast<uint32_t>(st->i64(3)),
               static_cast<uint32_t>(st->i64(4)), pid)
            .ops.add(GpuRow{start, end, name, static_cast<uint32_t>(st->i64(5)), detail, 0,
                            static_cast<uint8_t>(GpuOpKind::Memset)});
    }
}

void TraceLoader::Impl::readSyncs() {
    const char* table = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
    if (!hasTable(table))
        return;
    const auto st = rows(*m_conn, table,
                         {"start", "end", "contextId", "streamId", "correlationId", "syncType"});
    while (st->step()) {
        rowRead();
        const int64_t start = st->i64(0);
        const int64_t end = st->i64(1);
        if (!keepSpan(start, end, st->isNull(0, start), st->isNull(1, end), table))
            continue;
        SyncEvent s;
        s.start = start;
        s.end = end;
        s.contextId = static_cast<uint32_t>(st->i64(2));
        s.streamId = st->isNull(3) ? -1 : st->i64(3);
        s.correlationId = static_cast<uint32_t>(st->i64(4));
        s.syncType = static_cast<uint8_t>(st->i64(5));
        noteTime(start, end);
        m_store.m_syncs.push_back(s);
    }
    std::stable_sort(m_store.m_syncs.begin(), m_store.m_syncs.end(),
                     [](const SyncEvent& a, const SyncEvent& b) { return a.start < b.start; });
}

// GPU_METRICS: one set of series per device (typeId's low 8 bits, as nsys). Rows with an unknown
// (typeId, metricId), no time or a time out of range are skipped; at most kMaxMetrics metrics.
void TraceLoader::Impl::readGpuMetrics() {
    if (!hasTable("GPU_METRICS") || !hasTable("TARGET_INFO_GPU_METRICS"))
        return;
    constexpr size_t kMaxMetrics = 512;
    std::map<std::pair<int64_t, int64_t>, std::pair<size_t, uint32_t>> index; // -> (set, metric)
    std::vector<GpuMetricSamples>& sets = m_store.m_gpuMetrics;
    {
        Statement st(*m_conn,
                     select("TARGET_INFO_GPU_METRICS", {"typeId", "metricId", "metricName"}));
        while (st.step() && index.size() < kMaxMetrics) {
            const std::pair<int64_t, int64_t> key{st.i64(0), st.i64(1)};
            if (index.count(key))
                continue;
            const auto device = static_cast<uint32_t>(key.first & 0xFF);
            size_t set = 0;
            while (set < sets.size() && sets[set].deviceId != device)
                ++set;
            if (set == sets.size())
                sets.emplace_back().deviceId = device;
            GpuMetricSeries series;
            series.name = std::string(st.text(2)).substr(0, 200);
            splitMetricName(series);
            index[key] = {set, static_cast<uint32_t>(sets[set].metrics.size())};
            sets[set].metrics.push_back(std::move(series));
        }
    }
    if (index.empty())
        return;
    struct Raw {
        int64_t time;
        uint32_t metric;
        float value;
    };
    std::vector<std::vector<Raw>> raw(sets.size());
    uint64_t skipped = 0;
    {
        Statement st(*m_conn, select("GPU_METRICS", {"timestamp", "typeId", "metricId", "value"}));
        while (st.step()) {
            rowRead();
            const int64_t t = st.i64(0);
            const auto it = index.find({st.i64(1), st.i64(2)});
            if (st.isNull(0, t) || !plausibleTime(t) || it == index.end()) {
                ++skipped;
                continue;
            }
            raw[it->second.first].push_back({t, it->second.second, static_cast<float>(st.f64(3))});
        }
    }
    for (size_t set = 0; set < sets.size(); ++set) {
        std::vector<Raw>& rows = raw[set];
        std::stable_sort(rows.begin(), rows.end(),
                         [](const Raw& a, const Raw& b) { return a.time < b.time; });
        GpuMetricSamples& out = sets[set];
        for (const Raw& r : rows) {
            if (out.times.empty() || out.times.back() != r.time) {
                out.times.push_back(r.time);
                for (auto& m : out.metrics)
                    m.values.push_back(std::nanf(""));
            }
            out.metrics[r.metric].values.back() = r.value;
        }
        std::vector<int64_t> gaps;
        for (size_t i = 1; i < out.times.size(); ++i)
            gaps.push_back(out.times[i] - out.times[i - 1]);
        if (!gaps.empty()) {
            std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
            // At most 1000 s: a crafted file's spacing must not overflow sampleBegin().
            out.interval = std::min<int64_t>(gaps[gaps.size() / 2], 1'000'000'000'000);
        }
    }
    sets.erase(std::remove_if(sets.begin(), sets.end(),
                              [](const GpuMetricSamples& s) { return s.times.empty(); }),
               sets.end());
    if (skipped > 0)
        m_store.m_warnings.push_back("Skipped " + std::to_string(skipped) +
                                     " GPU_METRICS rows (no time, a time out of range, or a metric "
                                     "TARGET_INFO_GPU_METRICS does not name).");
}

// CUDA_CALLCHAINS and the API calls that refer to them. Read only when the table has rows, so a
// trace without stacks pays no second pass over CUPTI_ACTIVITY_KIND_RUNTIME. A module
// "file.py:123" (a Python frame, --python-stacks) splits into file and line.
void TraceLoader::Impl::readCallchains() {
    if (!hasTable("CUDA_CALLCHAINS") || !hasTable("CUPTI_ACTIVITY_KIND_RUNTIME") ||
        !hasColumn("CUPTI_ACTIVITY_KIND_RUNTIME", "callchainId"))
        return;
    constexpr size_t kMaxFrames = 10'000'000;
    Callchains& out = m_store.m_callchains;
    {
        struct Row {
            int64_t id, depth;
            NameId function, file;
            int32_t line;
        };
        std::vector<Row> rows;
        std::unordered_map<int64_t, std::pair<NameId, int32_t>> modules; // StringIds id -> split
        Statement st(*m_conn, select("CUDA_CALLCHAINS", {"id", "symbol", "module", "stackDepth"}));
        while (st.step() && rows.size() < kMaxFrames) {
            rowRead();
            const int64_t id = st.i64(0), depth = st.i64(3);
            if (id <= 0 || id > UINT32_MAX || depth < 0 || depth > 4096)
                continue;
            auto known = modules.find(st.i64(2));
            if (known == modules.end()) {
                const std::string module = m_store.m_strings.text(m_strings.name(st.i64(2)));
                const auto colon = module.rfind(':');
                int32_t line = 0;
                std::string file = module;
                if (colon != std::string::npos && colon + 1 < module.size() &&
                    module.size() - colon <= 10 &&
                    module.find_first_not_of("0123456789", colon + 1) == std::string::npos) {
                    line = static_cast<int32_t>(std::stol(module.substr(colon + 1)));
                    file = module.substr(0, colon);
                }
                known = modules.emplace(st.i64(2), std::pair{m_store.m_strings.intern(file), line})
                            .first;
            }
            rows.push_back(
                {id, depth, m_strings.name(st.i64(1)), known->second.first, known->second.second});
        }
        std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
            return a.id != b.id ? a.id < b.id : a.depth < b.depth;
        });
        for (size_t i = 0; i < rows.size();) {
            size_t j = i;
            const auto begin = static_cast<uint32_t>(out.m_frames.size());
            for (; j < rows.size() && rows[j].id == rows[i].id; ++j)
                if (j == i || rows[j].depth != rows[j - 1].depth) // a repeated depth: first kept
                    out.m_frames.push_back({rows[j].function, rows[j].file, rows[j].line});
            out.m_chains[static_cast<uint32_t>(rows[i].id)] = {
                begin, static_cast<uint32_t>(out.m_frames.size())};
            i = j;
        }
    }
    if (out.m_chains.empty())
        return;
    Statement st(*m_conn, "SELECT correlationId, callchainId FROM CUPTI_ACTIVITY_KIND_RUNTIME "
                          "WHERE callchainId IS NOT NULL");
    while (st.step()) {
        rowRead();
        const int64_t chain = st.i64(1);
        if (chain > 0 && chain <= UINT32_MAX && out.m_chains.count(static_cast<uint32_t>(chain)))
            out.m_byCorrelation[Callchains::callKey(0, static_cast<uint32_t>(st.i64(0)))] =
                static_cast<uint32_t>(chain);
    }
}

void TraceLoader::Impl::readCpuSamples() {
    // Bounds on what a file can make the loader hold (a 1 kHz sample a thread is 3.6 million
    // an hour of one busy thread).
    constexpr size_t kMaxSamples = 20'000'000, kMaxFrames = 20'000'000, kMaxSwitches = 50'000'000;
    bool cut = false; // a bound was reached: the rest is left out, with a warning
    CpuSamples& out = m_store.m_cpuSamples;
    std::map<int64_t, ThreadCpuActivity> threads;
    if (hasTable("COMPOSITE_EVENTS") && hasTable("SAMPLING_CALLCHAINS")) {
        // The frames of every sample, deduplicated into stacks.
        struct Row {
            int64_t id, depth;
            NameId function, file;
        };
        std::vector<Row> rows;
        {
            Statement st(*m_conn,
                         select("SAMPLING_CALLCHAINS", {"id", "stackDepth", "symbol", "module"}));
            while (st.step()) {
                if (rows.size() >= kMaxFrames) {
                    cut = true;
                    break;
                }
                rowRead();
                const int64_t depth = st.i64(1);
                if (depth < 0 || depth > 4096)
                    continue;
                rows.push_back(
                    {st.i64(0), depth, m_strings.name(st.i64(2)), m_strings.name(st.i64(3))});
            }
        }
        std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
            return a.id != b.id ? a.id < b.id : a.depth < b.depth;
        });
        std::unordered_map<int64_t, uint32_t> stackOfSample;
        std::map<std::vector<std::pair<NameId, NameId>>, uint32_t> stacks;
        std::vector<std::pair<NameId, NameId>> frames;
        for (size_t i = 0; i < rows.size();) {
            size_t j = i;
            frames.clear();
            for (; j < rows.size() && rows[j].id == rows[i].id; ++j)
                if ((j == i || rows[j].depth != rows[j - 1].depth) && frames.size() < 512)
                    frames.emplace_back(rows[j].function, rows[j].file);
            const auto [it, added] =
                stacks.try_emplace(frames, static_cast<uint32_t>(stacks.size()));
            if (added) {
                if (out.m_stackBegin.empty())
                    out.m_stackBegin.push_back(0);
                for (const auto& [function, file] : frames)
                    out.m_frames.push_back({function, file, 0});
                out.m_stackBegin.push_back(static_cast<uint32_t>(out.m_frames.size()));
            }
            stackOfSample[rows[i].id] = it->second;
            i = j;
        }
        rows = {};
        Statement st(*m_conn,
                     select("COMPOSITE_EVENTS", {"id", "start", "globalTid", "threadState"}));
        uint64_t kept = 0;
        while (st.step()) {
            if (kept >= kMaxSamples) {
                cut = true;
                break;
            }
            rowRead();
            const int64_t start = st.i64(1);
            if (!plausibleTime(start))
                continue;
            const auto stack = stackOfSample.find(st.i64(0));
            ThreadCpuActivity& t = threads[st.i64(2)];
            t.sampleTimes.push_back(start);
            t.sampleStacks.push_back(stack == stackOfSample.end() ? UINT32_MAX : stack->second);
            // nsys: 1 Running; 2 and 3 (interruptible, uninterruptible sleep), 7 waiting.
            const int64_t state = st.i64(3);
            t.sampleWaiting.push_back(state == 2 || state == 3 || state == 7);
            ++kept;
        }
    }
    if (hasTable("SCHED_EVENTS")) {
        struct Switch {
            int64_t time;
            CpuState state;
        };
        std::map<int64_t, std::vector<Switch>> switches;
        Statement st(*m_conn,
                     select("SCHED_EVENTS", {"start", "isSchedIn", "globalTid", "threadState"}));
        uint64_t kept = 0;
        while (st.step()) {
            if (kept >= kMaxSwitches) {
                cut = true;
                break;
            }
            rowRead();
            const int64_t start = st.i64(0);
            if (!plausibleTime(start))
                continue;
            // Off a CPU while still runnable (state Running) is a preemption: it still wants to
            // run. Older exports have no threadState: every switch off counts as a wait.
            CpuState state = CpuState::Running;
            if (st.i64(1) == 0)
                state = st.isNull(3) || st.i64(3) != 1 ? CpuState::Waiting : CpuState::Running;
            switches[st.i64(2)].push_back({start, state});
            ++kept;
        }
        for (auto& [tid, list] : switches) {
            std::stable_sort(list.begin(), list.end(),
                             [](const Switch& a, const Switch& b) { return a.time < b.time; });
            ThreadCpuActivity& t = threads[tid];
            for (const Switch& s : list) {
                if (!t.states.empty() && t.states.back() == s.state)
                    continue;
                if (!t.stateTimes.empty() && t.stateTimes.back() == s.time) {
                    t.states.back() = s.state;
                    continue;
                }
                t.stateTimes.push_back(s.time);
                t.states.push_back(s.state);
            }
        }
    }
    if (cut)
        m_store.m_warnings.push_back(m_fileName + " holds more CPU samples than Warpline reads (" +
                                     std::to_string(kMaxSamples) + " samples, " +
                                     std::to_string(kMaxFrames) + " stack frames, " +
                                     std::to_string(kMaxSwitches) +
                                     " thread switches): the rest are left out");
    // Per stack: whether it holds a Python frame (-1: not yet known).
    std::vector<int8_t> pythonStack(out.stackCount(), -1);
    const auto hasPython = [&](uint32_t id) {
        if (id >= pythonStack.size())
            return false;
        if (pythonStack[id] < 0) {
            pythonStack[id] = 0;
            for (const CallFrame& f : out.stack(id)) {
                const std::string& file = m_store.m_strings.text(f.file);
                if (file.ends_with(".py") || collector::isPythonInterpreterModule(file)) {
                    pythonStack[id] = 1;
                    break;
                }
            }
        }
        return pythonStack[id] == 1;
    };
    for (auto& entry : threads) {
        const int64_t tid = entry.first;
        ThreadCpuActivity& t = entry.second;
        t.globalTid = tid;
        // Samples by time (rows need not come in order).
        std::vector<size_t> order(t.sampleTimes.size());
        for (size_t i = 0; i < order.size(); ++i)
            order[i] = i;
        std::stable_sort(order.begin(), order.end(),
                         [&t](size_t a, size_t b) { return t.sampleTimes[a] < t.sampleTimes[b]; });
        ThreadCpuActivity sorted;
        sorted.globalTid = tid;
        if (const auto name = m_threadNames.find(tid); name != m_threadNames.end())
            sorted.name = name->second;
        sorted.stateTimes = std::move(t.stateTimes);
        sorted.states = std::move(t.states);
        for (size_t i : order) {
            sorted.sampleTimes.push_back(t.sampleTimes[i]);
            sorted.sampleStacks.push_back(t.sampleStacks[i]);
            sorted.sampleWaiting.push_back(t.sampleWaiting[i]);
            sorted.python = sorted.python || hasPython(t.sampleStacks[i]);
        }
        out.m_threads.push_back(std::move(sorted));
    }
}

void TraceLoader::Impl::readNvtx() {
    const char* table = "NVTX_EVENTS";
    if (!hasTable(table))
        return;
    // One pass: domain names (eventType 75) and the ranges, which refer to domains by domainId.
    // A range keeps its raw domainId (kRawDomain) until every domain row has been read, as a
    // domain row may come after its ranges; ids beyond 32 bits wait in `pending`.
    std::unordered_map<int64_t, NameId> domains;
    struct Pending {
        std::vector<NvtxRow>* rows;
        size_t index;
        int64_t domainId;
    };
    std::vector<Pending> pending;
    bool anyRawDomain = false;
    const auto st =
        rows(*m_conn, table,
             {"start", "end", "eventType", "text", "textId", "globalTid", "color", "domainId"}, {3},
             {2, {34, 59, 60, 75}});
    int64_t lastTid = 0;
    ThreadStage* stage = nullptr;
    while (st->step()) {
        rowRead();
        const int64_t type = st->i64(2);
        if (type == 75) {
            const NameId name = !st->isNull(3)   ? m_store.m_strings.intern(st->text(3))
                                : !st->isNull(4) ? m_strings.name(st->i64(4))
                                                 : kNoName;
            domains[st->i64(7)] = name;
            continue;
        }
        if (type != 34 && type != 59 && type != 60)
            continue;
        const int64_t start = st->i64(0);
        int64_t end = st->i64(1);
        const bool endNull = st->isNull(1, end);
        if (endNull || type == 34)
            end = start;
        if (st->isNull(0, start) || end < start || !plausibleTime(start) || !plausibleTime(end)) {
            ++m_skipped[table];
            continue;
        }
        NvtxRow row{};
        row.start = start;
        row.end = end;
        row.name = !st->isNull(3)   ? m_store.m_strings.intern(st->text(3))
                   : !st->isNull(4) ? m_strings.name(st->i64(4))
                                    : kNoName;
        row.color = static_cast<uint32_t>(st->i64(6));
        const int64_t domainId = st->i64(7);
        const bool hasDomain = !st->isNull(7, domainId);
        if (hasDomain && domainId >= 0 && domainId <= std::numeric_limits<uint32_t>::max()) {
            row.domain = static_cast<NameId>(domainId);
            row.flags = kRawDomain;
            anyRawDomain = true;
        }
        const int64_t tid = st->i64(5);
        if (!stage || tid != lastTid) {
            stage = &thread(tid);
            lastTid = tid;
        }
        std::vector<NvtxRow>& into = type == 59   ? stage->pushPop
                                     : type == 60 ? stage->startEnd
                                                  : stage->marks;
        if (m_threadStages.size() <= kReservedStages)
            reserveAtThreshold(into, m_rowEstimates.nvtx);
        if (type != 34 && endNull) {
            row.flags |= NvtxTrack::kUnclosed;
            ++m_unclosedCount;
            noteTime(start, start);
        } else {
            noteTime(start, end);
        }
        if (hasDomain && !(row.flags & kRawDomain))
            pending.push_back({&into, into.size(), domainId});
        into.push_back(row);
    }
    const auto domainName = [&domains](int64_t id) {
        const auto d = domains.find(id);
        return d == domains.end() ? kNoName : d->second;
    };
    for (const Pending& p : pending)
        (*p.rows)[p.index].domain = domainName(p.domainId);
    if (anyRawDomain) {
        for (auto& [tid, s] : m_threadStages) {
            (void)tid;
            for (auto* rows : {&s.pushPop, &s.startEnd, &s.marks}) {
                for (NvtxRow& r : *rows) {
                    if (r.flags & kRawDomain) {
                        r.domain = domainName(r.domain);
                        r.flags &= static_cast<uint8_t>(~kRawDomain);
                    }
                }
            }
        }
    }
}

void TraceLoader::Impl::readDiagnostics() {
    if (hasTable("WARPLINE_DROPPED")) {
        Statement st(*m_conn, "SELECT reason, SUM(dropped) FROM WARPLINE_DROPPED GROUP BY reason "
                              "ORDER BY reason");
        while (st.step()) {
            if (st.i64(1) <= 0)
                continue;
            m_store.m_warnings.push_back("The collector dropped " + std::to_string(st.i64(1)) +
                                         " records (" + std::string(st.text(0)) +
                                         "): totals and timelines miss those events.");
        }
    }
    if (hasTable("WARPLINE_ERRORS")) {
        Statement st(*m_conn, select("WARPLINE_ERRORS", {"source", "message"}));
        int count = 0;
        constexpr int kShown = 20;
        while (st.step()) {
            if (++count <= kShown)
                m_store.m_warnings.push_back("Collector error (" + std::string(st.text(0)) +
                                             "): " + std::string(st.text(1)));
        }
        if (count > kShown)
            m_store.m_warnings.push_back("... and " + std::to_string(count - kShown) +
                                         " more collector errors (table WARPLINE_ERRORS).");
    }
}

// --- building -----------------------------------------------------------------------------------

void TraceLoader::Impl::take(ApiTrack& t, ApiColumns& c) {
    t.m_start = std::move(c.start);
    t.m_end = std::move(c.end);
    t.m_name = std::move(c.name);
    t.m_correlation = std::move(c.correlation);
    t.m_returnValue = std::move(c.returnValue);
    t.m_domain = std::move(c.domain);
}

void TraceLoader::Impl::take(GpuTrack& t, GpuColumns& c) {
    t.m_start = std::move(c.start);
    t.m_end = std::move(c.end);
    t.m_kind = std::move(c.kind);
    t.m_name = std::move(c.name);
    t.m_correlation = std::move(c.correlation);
    t.m_detail = std::move(c.detail);
    t.m_graphId = std::move(c.graphId);
}

void TraceLoader::Impl::take(NvtxTrack& t, NvtxColumns& c) {
    t.m_start = std::move(c.start);
    t.m_end = std::move(c.end);
    t.m_name = std::move(c.name);
    t.m_color = std::move(c.color);
    t.m_domain = std::move(c.domain);
    t.m_flags = std::move(c.flags);
}

// Moves rows into one track per level (depth or lane): the columns of each level are reserved
// to their exact size and filled, then taken by a new track that setup(track, level) names.
template <typename Row, typename Track, typename Setup>
void TraceLoader::Impl::distribute(std::vector<Row>& rows, const std::vector<uint32_t>& level,
                                   std::vector<Track>& tracks, std::vector<uint32_t>& trackOfLevel,
                                   Setup setup) {
    using Columns = typename ColumnsFor<Row>::type;
    std::vector<size_t> counts;
    for (const uint32_t l : level) {
        if (l >= counts.size())
            counts.resize(l + 1, 0);
        ++counts[l];
    }
    std::vector<Columns> columns(counts.size());
    for (size_t l = 0; l < counts.size(); ++l)
        columns[l].forEach([&](auto& column) { column.reserve(counts[l]); });
    for (size_t i = 0; i < rows.size(); ++i)
        columns[level[i]].append(rows[i]);
    std::vector<Row>().swap(rows);
    for (size_t l = 0; l < counts.size(); ++l) {
        trackOfLevel.push_back(static_cast<uint32_t>(tracks.size()));
        Track& t = tracks.emplace_back();
        setup(t, static_cast<uint32_t>(l));
        take(t, columns[l]);
    }
}

void TraceLoader::Impl::buildThreads() {
    auto& store = m_store;
    for (auto& [globalTid, stage] : m_threadStages) {
        const auto threadIndex = static_cast<uint32_t>(store.m_threads.size());
        ThreadInfo info;
        info.globalTid = globalTid;
        info.pid = pidOf(globalTid);
        info.tid = static_cast<uint32_t>(globalTid & kIdMask);
        if (const auto it = m_threadNames.find(globalTid); it != m_threadNames.end())
            info.name = it->second;

        if (stage.api.inColumns()) {
            if (stage.api.size() > 0) {
                info.apiTracks.push_back(static_cast<uint32_t>(store.m_apiTracks.size()));
                ApiTrack& t = store.m_apiTracks.emplace_back();
                t.m_thread = threadIndex;
                t.m_depth = 0;
                take(t, stage.api.columns());
            }
        } else {
            std::vector<ApiRow>& rows = stage.api.rows();
            sortRows(rows);
            const std::vector<uint32_t> apiDepth = nestingDepths(rows);
            distribute(rows, apiDepth, store.m_apiTracks, info.apiTracks,
                       [&](ApiTrack& t, uint32_t depth) {
                           t.m_thread = threadIndex;
                           t.m_depth = depth;
                       });
        }

        store.m_threads.push_back(std::move(info));
    }
}

// The NVTX tracks of every thread, after buildThreads (which made the threads). Runs while
// linkCorrelations, which reads only API and GPU tracks, runs on the helper.
void TraceLoader::Impl::buildNvtx() {
    auto& store = m_store;
    uint32_t threadIndex = 0;
    // Progress moves from where it is to 0.9 of the building share as threads are done.
    const double from = m_lastFraction;
    const double to = kReadShare + (1 - kReadShare) * 0.9;
    double total = 0;
    for (const auto& [tid, stage] : m_threadStages)
        total +=
            static_cast<double>(stage.pushPop.size() + stage.startEnd.size() + stage.marks.size());
    double done = 0;
    for (auto& [globalTid, stage] : m_threadStages) {
        (void)globalTid;
        ThreadInfo& info = store.m_threads[threadIndex];
        const auto rows =
            static_cast<double>(stage.pushPop.size() + stage.startEnd.size() + stage.marks.size());
        const auto setupNvtx = [&](NvtxStyle style) {
            return [&, style](NvtxTrack& t, uint32_t depth) {
                t.m_thread = threadIndex;
                t.m_style = style;
                t.m_depth = depth;
            };
        };
        // Unclosed ranges end where the trace ends (known now: every table has been read).
        for (auto* rows : {&stage.pushPop, &stage.startEnd}) {
            for (NvtxRow& r : *rows) {
                if (r.flags & NvtxTrack::kUnclosed)
                    r.end = std::max(r.start, m_end);
            }
            sortRows(*rows);
        }
        sortRows(stage.marks);
        setProgress(m_lastFraction); // Cancel between the steps of a large thread's build
        distribute(stage.pushPop, nestingDepths(stage.pushPop), store.m_nvtxTracks, info.nvtxTracks,
                   setupNvtx(NvtxStyle::PushPop));
        setProgress(m_lastFraction);
        distribute(stage.startEnd, firstFitLanes(stage.startEnd), store.m_nvtxTracks,
                   info.nvtxTracks, setupNvtx(NvtxStyle::StartEnd));
        distribute(stage.marks, std::vector<uint32_t>(stage.marks.size(), 0), store.m_nvtxTracks,
                   info.nvtxTracks, setupNvtx(NvtxStyle::Mark));
        done += rows;
        setProgress(from + (to - from) * (total > 0 ? done / total : 1.0));
        ++threadIndex;
    }
    m_threadStages.clear();
}

void TraceLoader::Impl::buildStreams() {
    auto& store = m_store;
    // Ops whose table gave no process (Warpline's kernel view without a PROCESSES row) belong to
    // the stream with the same device, stream and context from a table that did, if there is one.
    for (auto it = m_streamStages.begin(); it != m_streamStages.end();) {
        const auto [device, streamId, context, pid] = it->first;
        if (pid != kUnknownPid) {
            ++it;
            continue;
        }
        auto known = m_streamStages.end();
        int matches = 0;
        for (auto other = m_streamStages.lower_bound({device, streamId, context, 0});
             other != m_streamStages.end() && std::get<0>(other->first) == device &&
             std::get<1>(other->first) == streamId && std::get<2>(other->first) == context;
             ++other) {
            if (std::get<3>(other->first) != kUnknownPid) {
                known = other;
                ++matches;
            }
        }
        if (matches != 1) {
            ++it;
            continue;
        }
        GpuStage& into = known->second.ops;
        GpuStage& from = it->second.ops;
        if (from.inColumns()) {
            for (size_t i = 0; i < from.size(); ++i)
                into.add(from.columns().row(i));
        } else {
            for (const GpuRow& r : from.rows())
                into.add(r);
        }
        it = m_streamStages.erase(it);
    }
    for (auto& [key, stage] : m_streamStages) {
        const auto [device, streamId, context, pid] = key;
        const auto streamIndex = static_cast<uint32_t>(store.m_streams.size());
        StreamInfo info;
        info.deviceId = device;
        info.contextId = context;
        info.streamId = streamId;
        const auto named = m_streamNames.find({context, streamId});
        info.name = named != m_streamNames.end()
                        ? named->second
                        : store.m_strings.intern("Stream " + std::to_string(streamId));
        if (const auto p = m_streamPriorities.find({context, streamId});
            p != m_streamPriorities.end())
            info.priority = p->second;

        const auto countKind = [&store](uint8_t kind) {
            if (kind == static_cast<uint8_t>(GpuOpKind::Kernel))
                ++store.m_kernelCount;
            else if (kind == static_cast<uint8_t>(GpuOpKind::Memcpy))
                ++store.m_memcpyCount;
            else
                ++store.m_memsetCount;
        };
        if (stage.ops.inColumns()) {
            if (stage.ops.size() > 0) {
                GpuColumns& c = stage.ops.columns();
                for (const uint8_t kind : c.kind)
                    countKind(kind);
                info.gpuTracks.push_back(static_cast<uint32_t>(store.m_gpuTracks.size()));
                GpuTrack& t = store.m_gpuTracks.emplace_back();
                t.m_stream = streamIndex;
                t.m_deviceId = device;
                t.m_lane = 0;
                take(t, c);
            }
            store.m_streams.push_back(std::move(info));
            continue;
        }
        std::vector<GpuRow>& rows = stage.ops.rows();
        sortRows(rows);
        const std::vector<uint32_t> lanes = firstFitLanes(rows);
        noteOverlaps(rows, lanes, static_cast<uint32_t>(store.m_gpuTracks.size()));
        for (const GpuRow& r : rows)
            countKind(r.kind);
        distribute(rows, lanes, store.m_gpuTracks, info.gpuTracks,
                   [&, deviceId = device](GpuTrack& t, uint32_t lane) {
                       t.m_stream = streamIndex;
                       t.m_deviceId = deviceId;
                       t.m_lane = lane;
                   });
        store.m_streams.push_back(std::move(info));
    }

    // Devices seen only in GPU records get a row with just their id.
    std::set<uint32_t> known;
    for (const DeviceInfo& d : store.m_devices)
        known.insert(d.id);
    for (const StreamInfo& s : store.m_streams) {
        if (known.insert(s.deviceId).second) {
            DeviceInfo d;
            d.id = s.deviceId;
            d.name = store.m_strings.intern("GPU " + std::to_string(s.deviceId));
            store.m_devices.push_back(d);
        }
    }
    std::sort(store.m_devices.begin(), store.m_devices.end(),
              [](const DeviceInfo& a, const DeviceInfo& b) { return a.id < b.id; });
}

// Building and linking look at Cancel every this many + 1 events of a track (about a
// millisecond of work), so a cancel of a 100M-event load is honoured within moments.
constexpr size_t kCancelCheckMask = (size_t(1) << 20) - 1;

// The ops of a stream that start before an earlier op ends (`rows` sorted by start; first-fit put
// them on lane 1, 2, ... unless lane 0 was free by then), each with the earlier op that ends last:
// the one it overlaps most. Refs are into the tracks distribute() makes of `rows`: lane l becomes
// track firstTrack + l, and a row's index there is its rank among the rows of its lane.
void TraceLoader::Impl::noteOverlaps(const std::vector<GpuRow>& rows,
                                     const std::vector<uint32_t>& lanes, uint32_t firstTrack) {
    std::vector<uint32_t> nextIndex;
    EventRef latest;
    int64_t latestEnd = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
        const uint32_t lane = lanes[i];
        if (lane >= nextIndex.size())
            nextIndex.resize(lane + 1, 0);
        const EventRef ref{firstTrack + lane, nextIndex[lane]++};
        if (latest.valid() && rows[i].start < latestEnd)
            m_overlaps.emplace_back(ref, latest);
        if (!latest.valid() || rows[i].end > latestEnd) {
            latest = ref;
            latestEnd = rows[i].end;
        }
    }
}

// Splits the overlaps noteOverlaps found into those CUDA allows (isAllowedOverlap, counted) and
// the rest (one warning). Needs the launch links: after linkCorrelations.
void TraceLoader::Impl::judgeOverlaps() {
    auto& store = m_store;
    uint64_t unexplained = 0;
    for (const auto& [op, earlier] : m_overlaps) {
        const GpuTrack& t = store.m_gpuTracks[op.track];
        const GpuTrack& e = store.m_gpuTracks[earlier.track];
        const EventRef launch = t.launch(op.index);
        const bool launchedEx =
            launch.valid() &&
            isLaunchExApi(store.m_strings.text(store.m_apiTracks[launch.track].name(launch.index)));
        const bool sameGraphLaunch =
            isConcurrentGraphOverlap(e.graphId(earlier.index), e.correlationId(earlier.index),
                                     t.graphId(op.index), t.correlationId(op.index));
        const auto hostToHostCopy = [&](const GpuTrack& g, uint32_t k) {
            return g.kind(k) == GpuOpKind::Memcpy && g.detail(k) < store.m_memOps.size() &&
                   store.m_memOps[g.detail(k)].copyKind == kCopyHtoH;
        };
        if (isAllowedOverlap(e.kind(earlier.index), e.start(earlier.index), e.end(earlier.index),
                             t.kind(op.index), t.start(op.index), launchedEx, sameGraphLaunch,
                             hostToHostCopy(t, op.index) || hostToHostCopy(e, earlier.index)))
            ++store.m_allowedOverlapCount;
        else
            ++unexplained;
    }
    std::vector<std::pair<EventRef, EventRef>>().swap(m_overlaps);
    if (unexplained > 0)
        store.m_warnings.push_back(std::to_string(unexplained) +
                                   " GPU operations overlap an earlier operation on the same "
                                   "stream; they are shown on extra rows of that stream.");
}

void TraceLoader::Impl::linkCorrelations() {
    auto& store = m_store;
    // Correlation ids count up from 1 in each process, so a direct table indexed by id is both
    // the fastest and the smallest map here. Runtime calls win over the driver calls they make
    // (both may carry the id), outer calls over nested ones: fill driver first, runtime last,
    // deepest tracks first. A damaged file's ids can be anything up to 2^32 - 1: a table more
    // than a few times larger than the calls becomes a hash map.
    struct CorrelationIndex {
        std::vector<EventRef> dense;
        std::unordered_map<uint32_t, EventRef> sparse;
        bool isDense = true;
        EventRef& operator[](uint32_t c) { return isDense ? dense[c] : sparse[c]; }
        EventRef find(uint32_t c) const {
            if (isDense)
                return c < dense.size() ? dense[c] : EventRef{};
            const auto it = sparse.find(c);
            return it == sparse.end() ? EventRef{} : it->second;
        }
    };
    std::map<uint32_t, CorrelationIndex> byPid;
    std::map<uint32_t, std::pair<uint32_t, size_t>> maxCorrelation; // pid -> (max id, calls)
    for (const ApiTrack& t : store.m_apiTracks) {
        const uint32_t pid = pidOf(store.m_threads[t.m_thread].globalTid);
        auto& [m, calls] = maxCorrelation[pid];
        calls += t.size();
        for (const uint32_t c : t.m_correlation)
            m = std::max(m, c);
    }
    for (const auto& [pid, limits] : maxCorrelation) {
        const auto [maxId, calls] = limits;
        CorrelationIndex& index = byPid[pid];
        index.isDense = maxId <= 4 * calls + 65536;
        if (index.isDense)
            index.dense.assign(static_cast<size_t>(maxId) + 1, EventRef{});
    }
    std::vector<uint32_t> order(store.m_apiTracks.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
        return store.m_apiTracks[a].m_depth > store.m_apiTracks[b].m_depth;
    });
    for (const uint8_t domain : {uint8_t(ApiDomain::Driver), uint8_t(ApiDomain::Runtime)}) {
        for (const uint32_t ti : order) {
            const ApiTrack& t = store.m_apiTracks[ti];
            CorrelationIndex& table = byPid[pidOf(store.m_threads[t.m_thread].globalTid)];
            for (size_t i = 0; i < t.size(); ++i) {
                if ((i & kCancelCheckMask) == 0 && m_cancel)
                    throw LoadCancelled();
                if (t.m_domain[i] != domain || t.m_correlation[i] == 0)
                    continue;
                EventRef& entry = table[t.m_correlation[i]];
                if (entry.valid() && store.m_apiTracks[entry.track].m_domain[entry.index] == domain)
                    ++m_duplicateCorrelations;
                entry = EventRef{ti, static_cast<uint32_t>(i)};
            }
        }
    }
    const auto lookup = [&](uint32_t pid, uint32_t correlation) -> EventRef {
        if (correlation == 0)
            return {};
        auto it = pid == kUnknownPid && byPid.size() == 1 ? byPid.begin() : byPid.find(pid);
        if (it == byPid.end())
            return {};
        return it->second.find(correlation);
    };

    // GPU op -> launching call. The stream key carries the op's process.
    size_t streamIndex = 0;
    for (const auto& [key, stage] : m_streamStages) {
        (void)stage;
        const uint32_t pid = std::get<3>(key);
        for (const uint32_t ti : store.m_streams[streamIndex].gpuTracks) {
            GpuTrack& t = store.m_gpuTracks[ti];
            t.m_launch.resize(t.size());
            for (size_t i = 0; i < t.size(); ++i) {
                if ((i & kCancelCheckMask) == 0 && m_cancel)
                    throw LoadCancelled();
                t.m_launch[i] = lookup(pid, t.m_correlation[i]);
            }
        }
        ++streamIndex;
    }
    // Syncs: CUPTI gives no process; a trace is one process, so use the only one there is.
    for (SyncEvent& s : store.m_syncs)
        s.apiCall = lookup(kUnknownPid, s.correlationId);
    byPid.clear();

    // Call -> GPU ops, as CSR offsets per API track.
    for (ApiTrack& t : store.m_apiTracks)
        t.m_opBegin.assign(t.size() + 1, 0);
    for (uint32_t ti = 0; ti < store.m_gpuTracks.size(); ++ti) {
        for (const EventRef& launch : store.m_gpuTracks[ti].m_launch) {
            if (launch.valid())
                ++store.m_apiTracks[launch.track].m_opBegin[launch.index + 1];
        }
    }
    for (ApiTrack& t : store.m_apiTracks) {
        std::partial_sum(t.m_opBegin.begin(), t.m_opBegin.end(), t.m_opBegin.begin());
        t.m_ops.resize(t.m_opBegin.back());
    }
    // m_opBegin[k] serves as call k's cursor (no copy of the offsets: at 100M events that copy
    // alone was 185 MB of fresh memory); afterwards it holds the ends, shifted back below.
    for (uint32_t ti = 0; ti < store.m_gpuTracks.size(); ++ti) {
        if (m_cancel)
            throw LoadCancelled();
        const GpuTrack& g = store.m_gpuTracks[ti];
        for (uint32_t i = 0; i < g.size(); ++i) {
            if ((i & kCancelCheckMask) == 0 && m_cancel)
                throw LoadCancelled();
            const EventRef launch = g.m_launch[i];
            if (launch.valid()) {
                ApiTrack& a = store.m_apiTracks[launch.track];
                a.m_ops[a.m_opBegin[launch.index]++] = EventRef{ti, i};
            }
        }
    }
    for (ApiTrack& t : store.m_apiTracks) {
        for (size_t k = t.m_opBegin.size() - 1; k > 0; --k)
            t.m_opBegin[k] = t.m_opBegin[k - 1];
        t.m_opBegin[0] = 0;
    }
    // A graph launch's kernels come from several streams: order each call's ops by start.
    for (ApiTrack& t : store.m_apiTracks) {
        for (size_t i = 0; i < t.size(); ++i) {
            const uint32_t b = t.m_opBegin[i];
            const uint32_t e = t.m_opBegin[i + 1];
            if (e - b > 1)
                std::stable_sort(t.m_ops.begin() + b, t.m_ops.begin() + e,
                                 [&](const EventRef& x, const EventRef& y) {
                                     return store.m_gpuTracks[x.track].start(x.index) <
                                            store.m_gpuTracks[y.track].start(y.index);
                                 });
        }
    }
}

void TraceLoader::Impl::finishWarnings() {
    for (const auto& [table, count] : m_skipped)
        m_store.m_warnings.push_back(std::to_string(count) + " rows of " + table +
                                     " were skipped: missing times, end before start, or times "
                                     "beyond 146 years.");
    if (m_unknownConfigs > 0)
        m_store.m_warnings.push_back(std::to_string(m_unknownConfigs) +
                                     " kernels were skipped: their configId is not in "
                                     "WARPLINE_KERNEL_CONFIGS.");
    if (m_duplicateCorrelations > 0)
        m_store.m_warnings.push_back(
            std::to_string(m_duplicateCorrelations) +
            " CUDA API calls repeat the correlation id of another call of the same process; "
            "the GPU work of that id is linked to only one of them.");
    if (m_strings.missing() > 0)
        m_store.m_warnings.push_back(std::to_string(m_strings.missing()) +
                                     (hasTable("StringIds")
                                          ? " names refer to string ids missing from StringIds"
                                          : " names refer to StringIds, which this file lacks") +
                                     "; they are shown as \"<unknown string ID>\".");
    if (m_unclosedCount > 0)
        m_store.m_warnings.push_back(
            std::to_string(m_unclosedCount) +
            " NVTX ranges were never closed; they are shown ending at the end of the trace.");
}

// The store's one source (tracestore.h sources()): this file, where and as which rank it ran.
void TraceLoader::Impl::describeSource() {
    const auto& meta = m_store.m_meta;
    // The first of the keys that holds a non-negative integer; -1 when none does.
    const auto metaInt = [&meta](std::initializer_list<const char*> keys) {
        for (const char* key : keys) {
            const std::optional<int64_t> value = metaInteger(meta, key);
            if (value && *value >= 0 && *value <= std::numeric_limits<int>::max())
                return static_cast<int>(*value);
        }
        return -1;
    };
    TraceSource source;
    source.path = m_options.sourcePath.empty() ? m_path : m_options.sourcePath;
    source.host = m_store.metaValue("hostname");
    // torchrun and most launchers set RANK...; Open MPI's mpirun sets OMPI_COMM_WORLD_*, MPICH and
    // Intel MPI PMI_*; "rank" and "world_size" come from a PyTorch profiler trace's
    // distributedInfo (kinetoimport.h).
    source.rank = metaInt(
        {"env_RANK", "env_OMPI_COMM_WORLD_RANK", "env_PMI_RANK", "env_SLURM_PROCID", "rank"});
    source.localRank =
        metaInt({"env_LOCAL_RANK", "env_OMPI_COMM_WORLD_LOCAL_RANK", "env_MPI_LOCALRANKID"});
    source.worldSize =
        metaInt({"env_WORLD_SIZE", "env_OMPI_COMM_WORLD_SIZE", "env_PMI_SIZE", "world_size"});
    source.utcEpochNs = m_utcEpochNs;
    source.meta = meta;
    source.warnings = m_store.m_warnings;
    m_store.m_sources.assign(1, std::move(source));
    for (DeviceInfo& d : m_store.m_devices) {
        d.cudaId = d.id;
        d.source = 0;
    }
}

template <typename Helper, typename Work>
void TraceLoader::Impl::inParallel(Helper helper, Work work) {
    std::exception_ptr helperError;
    HelperThread thread(m_cancel);
    thread.start([&helper, &helperError] {
        try {
            helper();
        } catch (...) {
            helperError = std::current_exception();
        }
    });
    work();
    thread.join([this] { setProgress(m_lastFraction); });
    if (helperError)
        std::rethrow_exception(helperError);
}

TraceStore TraceLoader::Impl::run() {
    try {
        return load();
    } catch (const TraceError& e) {
        // SQLite's own words for a cut-off file ("database disk image is malformed") do not say
        // what happened to it.
        if (e.kind() == TraceError::Kind::Corrupt && !m_truncation.empty())
            throw TraceError(TraceError::Kind::Corrupt,
                             "cannot read " + m_fileName + ": " + m_truncation);
        throw;
    }
}

TraceStore TraceLoader::Impl::load() {
    m_store.m_path = m_path;
    setProgress(0);
    open();
    readSchema();

    const int64_t runtime = estimateRows("CUPTI_ACTIVITY_KIND_RUNTIME");
    const int64_t driver = estimateRows("CUPTI_ACTIVITY_KIND_DRIVER");
    const int64_t warplineKernels = estimateRows("WARPLINE_KERNELS");
    const int64_t nvtx = estimateRows("NVTX_EVENTS");
    m_rowEstimates.api = static_cast<uint64_t>(std::max(runtime, driver));
    m_rowEstimates.kernels = static_cast<uint64_t>(warplineKernels);
    m_rowEstimates.nvtx = static_cast<uint64_t>(nvtx);
    const auto rows = static_cast<uint64_t>(
        estimateRows("StringIds") + runtime + driver +
        (hasTable("WARPLINE_KERNELS") ? warplineKernels
                                      : estimateRows("CUPTI_ACTIVITY_KIND_KERNEL")) +
        estimateRows("CUPTI_ACTIVITY_KIND_MEMCPY") + estimateRows("CUPTI_ACTIVITY_KIND_MEMSET") +
        estimateRows("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION") + nvtx +
        estimateRows("GPU_METRICS") / 4 + // a metric row keeps 4 bytes (+8 per sample)
        // CPU samples: a sample and a switch are held like an event, a stack frame's row is
        // about half one while the stacks are built.
        estimateRows("COMPOSITE_EVENTS") + estimateRows("SCHED_EVENTS") +
        estimateRows("SAMPLING_CALLCHAINS") / 2);
    checkMemory(rows);
    m_totalRows = 1.0 + static_cast<double>(rows);

    // The API tables (about half the rows of a typical trace) are read on a helper thread with its
    // own connection while this thread reads everything else: loading is SQLite-bound, and this
    // puts a second core to work.
    ApiReadResult api;
    {
        HelperThread helper(m_cancel);
        helper.start([this, &api] { readApiTables(api); });
        readMeta();
        readStrings();
        readProcessesAndThreads();
        readDevicesAndStreams();
        // A Warpline trace's CUPTI_ACTIVITY_KIND_KERNEL is a view over the tables it stores,
        // which are read instead (hasTable never names a view).
        if (hasTable("WARPLINE_KERNELS"))
            readKernelsFast();
        else if (hasTable("CUPTI_ACTIVITY_KIND_KERNEL"))
            readKernelsGeneric();
        readMemcpy();
        readMemset();
        readSyncs();
        readGpuMetrics();
        readCallchains();
        readCpuSamples();
        readNvtx();
        readDiagnostics();
        m_conn.reset();
        // Keep reporting (and honouring cancel) while the helper finishes.
        helper.join([this] {
            const double rows = m_rowsDone + static_cast<double>(m_helperRows.load());
            setProgress(kReadShare * std::min(1.0, rows / m_totalRows));
        });
    }
    mergeApi(api);
    m_strings.dropTexts();

    setProgress(kReadShare);
    m_store.m_beginTime = m_haveTime ? m_begin : 0;
    m_store.m_endTime = m_haveTime ? m_end : 0;
    // Threads and streams build into disjoint parts of the store: in parallel as well.
    inParallel([this] { buildStreams(); }, [this] { buildThreads(); });
    setProgress(kReadShare + (1 - kReadShare) * 0.4);
    // Linking reads the API and GPU tracks only; the NVTX tracks build meanwhile.
    inParallel([this] { linkCorrelations(); }, [this] { buildNvtx(); });
    setProgress(kReadShare + (1 - kReadShare) * 0.9);
    m_streamStages.clear();
    judgeOverlaps();
    finishWarnings();
    describeSource();
    setProgress(1.0);
    return std::move(m_store);
}

TraceStore TraceLoader::load(const std::string& path, const Options& options) {
    Impl impl(path, options);
    return impl.run();
}

} // namespace warpline::model
