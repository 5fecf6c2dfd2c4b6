#include "traceloader.h"

#include "gpureaders.h"
#include "guardedquery.h"
#include "loaderstage.h"
#include "loadprogress.h"
#include "memoryinfo.h"
#include "metareaders.h"
#include "readsource.h"
#include "stackreaders.h"
#include "storedschema.h"
#include "threadreaders.h"
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
#include <string>
#include <string_view>
#include <thread>
#include <unistd.h>
#include <unordered_map>
#include <vector>

namespace warpline::model {

namespace {

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

// Linking looks at Cancel every this many + 1 events of a track (about a millisecond of work), so
// a cancel of a 100M-event load is honoured within moments.
constexpr size_t kCancelCheckMask = (size_t(1) << 20) - 1;

// The ops of a stream that start before an earlier op ends (`rows` sorted by start; first-fit put
// them on lane 1, 2, ... unless lane 0 was free by then), each with the earlier op that ends last
// (the one it overlaps most), appended to `overlaps`. Refs are into the tracks buildStreams
// makes of `rows`: lane l becomes track firstTrack + l, and a row's index there is its rank among
// the rows of its lane.
void noteOverlaps(const std::vector<GpuRow>& rows, const std::vector<uint32_t>& lanes,
                  uint32_t firstTrack, GpuOverlaps& overlaps) {
    std::vector<uint32_t> nextIndex;
    EventRef latest;
    int64_t latestEnd = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
        const uint32_t lane = lanes[i];
        if (lane >= nextIndex.size())
            nextIndex.resize(lane + 1, 0);
        const EventRef ref{firstTrack + lane, nextIndex[lane]++};
        if (latest.valid() && rows[i].start < latestEnd)
            overlaps.emplace_back(ref, latest);
        if (!latest.valid() || rows[i].end > latestEnd) {
            latest = ref;
            latestEnd = rows[i].end;
        }
    }
}

} // namespace

// One load: opens the file, has the rooms do their parts in order (schema, reading on two
// threads, building and linking on two threads), and reports progress and the warnings of the
// whole load. Each room writes only what its call names.
class TraceLoader::Impl {
public:
    Impl(const std::string& path, const Options& options)
        : m_path(path), m_fileName(std::filesystem::path(path).filename().string()),
          m_options(options), m_progress(options.progress) {}
    ~Impl() { m_conn.reset(); } // before the database, whose private copy it may read

    TraceStore run();

private:
    TraceStore load();

    // --- the file ---
    void open();
    std::unique_ptr<Connection> openConnection(std::function<bool()> keepGoing) const;
    Connection::Limits limits() const;
    void estimateWork();
    void checkMemory(uint64_t rows) const;

    // --- the work ---
    void readTables();
    // Runs `helper` on a helper thread while this thread runs `work`, then waits for it reporting
    // progress (and so seeing Cancel); an exception of either is rethrown here.
    template <typename Helper, typename Work> void inParallel(Helper helper, Work work);
    void finishWarnings(uint64_t unexplainedOverlaps, uint64_t duplicateCorrelations);
    void describeSource();

    // --- building ---
    // One ThreadInfo per staged thread (named from `names`, the ThreadNames) with its API tracks.
    static void buildThreads(std::map<int64_t, ThreadStage>& threads,
                             const std::map<int64_t, NameId>& names, TraceStore& store);
    // The NVTX tracks of every thread (after buildThreads, which made the threads), then releases
    // `threads`. An unclosed range ends at `traceEnd`, the end of every event read.
    static void buildNvtx(std::map<int64_t, ThreadStage>& threads, int64_t traceEnd,
                          LoadProgress& progress, TraceStore& store);
    // What linking needs of the streams built.
    struct Streams {
        std::vector<uint32_t> pids; // each store stream's process (StreamKey), by stream index
        GpuOverlaps overlaps;       // noteOverlaps of every stream whose ops overlap
    };
    static Streams buildStreams(std::map<StreamKey, StreamStage>& streams, const StreamNames& names,
                                const StreamPriorities& priorities, TraceStore& store);
    template <typename Row, typename Track, typename Setup>
    static void distribute(std::vector<Row>& rows, const std::vector<uint32_t>& level,
                           std::vector<Track>& tracks, std::vector<uint32_t>& trackOfLevel,
                           Setup setup);
    // Moves staged columns into a track.
    static void take(ApiTrack& t, ApiColumns& c);
    static void take(GpuTrack& t, GpuColumns& c);
    static void take(NvtxTrack& t, NvtxColumns& c);

    // --- linking ---
    // Links launches both ways and syncs to their calls; returns the API calls that repeat the
    // correlation id of another call of their process and domain.
    static uint64_t link(TraceStore& store, const std::vector<uint32_t>& streamPids,
                         const std::atomic<bool>& cancel);
    // Counts the overlaps CUDA allows in the store, releases `overlaps` and returns the rest.
    static uint64_t judgeOverlaps(GpuOverlaps& overlaps, TraceStore& store);

    std::string m_path;
    std::unique_ptr<TraceDatabase> m_database; // what SQLite reads: the file or a private copy
    std::string m_truncation;                  // truncationNote() of the file
    std::string m_fileName;
    uint64_t m_fileBytes = 0; // the bytes the file holds, holes of a sparse file left out
    Options m_options;
    LoadProgress m_progress;
    std::unique_ptr<Connection> m_conn; // this thread's; the API reader opens its own
    StoredSchema m_schema;
    TraceStore m_store;
    TraceStrings m_strings{m_store.m_strings}; // StringIds, interned into the store's names
    LoadStage m_stage;                         // the rows read, until they are built
    int64_t m_utcEpochNs = 0;                  // TARGET_INFO_SESSION_START_TIME, 0 when absent
    std::atomic<bool> m_cancel{false};         // set when the load stops early: helpers stop
};

// --- the file -----------------------------------------------------------------------------------

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
    m_conn = openConnection([this] { return m_progress.keepGoing(); });
    // The header and the length of the file SQLite reads (a WAL folded into a copy adds pages).
    m_truncation = truncationNote(TraceDatabase::header(m_conn->get()),
                                  std::filesystem::file_size(m_database->readPath(), ec));
    if (!m_truncation.empty())
        m_store.m_warnings.push_back(m_fileName + ": " + m_truncation +
                                     "; the rows that could be read are shown.");
    if (TraceDatabase::needsRollback(m_conn->get())) {
        m_conn.reset();
        m_database->rollBack();
        m_conn = openConnection([this] { return m_progress.keepGoing(); });
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

// The most rows each table may give, which size the stages (TrackStage::expect), the progress and
// the memory the load may need.
void TraceLoader::Impl::estimateWork() {
    const auto estimateRows = [this](const char* table) {
        return m_schema.estimateRows(*m_conn, table, m_fileBytes);
    };
    const int64_t runtime = estimateRows("CUPTI_ACTIVITY_KIND_RUNTIME");
    const int64_t driver = estimateRows("CUPTI_ACTIVITY_KIND_DRIVER");
    const int64_t warplineKernels = estimateRows("WARPLINE_KERNELS");
    const int64_t nvtx = estimateRows("NVTX_EVENTS");
    m_stage.expected.api = static_cast<uint64_t>(std::max(runtime, driver));
    m_stage.expected.kernels = static_cast<uint64_t>(warplineKernels);
    m_stage.expected.nvtx = static_cast<uint64_t>(nvtx);
    const auto rows = static_cast<uint64_t>(
        estimateRows("StringIds") + runtime + driver +
        (m_schema.hasTable("WARPLINE_KERNELS") ? warplineKernels
                                               : estimateRows("CUPTI_ACTIVITY_KIND_KERNEL")) +
        estimateRows("CUPTI_ACTIVITY_KIND_MEMCPY") + estimateRows("CUPTI_ACTIVITY_KIND_MEMSET") +
        estimateRows("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION") + nvtx +
        estimateRows("GPU_METRICS") / 4 + // a metric row keeps 4 bytes (+8 per sample)
        // CPU samples: a sample and a switch are held like an event, a stack frame's row is
        // about half one while the stacks are built.
        estimateRows("COMPOSITE_EVENTS") + estimateRows("SCHED_EVENTS") +
        estimateRows("SAMPLING_CALLCHAINS") / 2);
    checkMemory(rows);
    m_progress.expectRows(rows);
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

// --- the work -----------------------------------------------------------------------------------

// Every table but the API tables (read meanwhile on the helper), on this thread's connection, in
// an order that reads what a reader needs before it: StringIds before the names that refer to
// them, PROCESSES before the kernels of the first process, ThreadNames before CPU samples.
void TraceLoader::Impl::readTables() {
    const ReadSource in{*m_conn, m_schema, m_progress, m_options.readPages};
    m_utcEpochNs = readSessionStart(in);
    readMeta(in, m_store.m_meta, m_store.m_warnings);
    readStrings(in, m_strings);
    readProcesses(in, m_strings, m_store.m_processes);
    readThreadNames(in, m_strings, m_stage.threadNames);
    readDevices(in, m_strings, m_store.m_devices);
    readStreamDetails(in, m_strings, m_stage.streamPriorities, m_stage.streamNames);
    // A Warpline trace's CUPTI_ACTIVITY_KIND_KERNEL is a view over the tables it stores, which
    // are read instead (hasTable never names a view).
    if (m_schema.hasTable("WARPLINE_KERNELS"))
        readKernelsFast(in, m_strings, m_store.m_processes, m_store.m_kernelConfigs, m_stage);
    else if (m_schema.hasTable("CUPTI_ACTIVITY_KIND_KERNEL"))
        readKernelsGeneric(in, m_strings, m_store.m_kernelConfigs, m_stage);
    readMemcpy(in, m_strings, m_store.m_memOps, m_stage);
    readMemset(in, m_strings, m_store.m_memOps, m_stage);
    readSyncs(in, m_store.m_syncs, m_stage);
    readGpuMetrics(in, m_store.m_gpuMetrics, m_store.m_warnings);
    StackReaders::readCallchains(in, m_strings, m_store.m_callchains);
    StackReaders::readCpuSamples(in, m_strings, m_stage.threadNames, m_fileName,
                                 m_store.m_cpuSamples, m_store.m_warnings);
    readNvtx(in, m_strings, m_stage);
    readDiagnostics(in, m_store.m_warnings);
}

void TraceLoader::Impl::finishWarnings(uint64_t unexplainedOverlaps,
                                       uint64_t duplicateCorrelations) {
    if (unexplainedOverlaps > 0)
        m_store.m_warnings.push_back(std::to_string(unexplainedOverlaps) +
                                     " GPU operations overlap an earlier operation on the same "
                                     "stream; they are shown on extra rows of that stream.");
    for (const auto& [table, count] : m_stage.skipped)
        m_store.m_warnings.push_back(std::to_string(count) + " rows of " + table +
                                     " were skipped: missing times, end before start, or times "
                                     "beyond 146 years.");
    if (m_stage.unknownConfigs > 0)
        m_store.m_warnings.push_back(std::to_string(m_stage.unknownConfigs) +
                                     " kernels were skipped: their configId is not in "
                                     "WARPLINE_KERNEL_CONFIGS.");
    if (duplicateCorrelations > 0)
        m_store.m_warnings.push_back(
            std::to_string(duplicateCorrelations) +
            " CUDA API calls repeat the correlation id of another call of the same process; "
            "the GPU work of that id is linked to only one of them.");
    if (m_strings.missing() > 0)
        m_store.m_warnings.push_back(std::to_string(m_strings.missing()) +
                                     (m_schema.hasTable("StringIds")
                                          ? " names refer to string ids missing from StringIds"
                                          : " names refer to StringIds, which this file lacks") +
                                     "; they are shown as \"<unknown string ID>\".");
    if (m_stage.unclosedNvtx > 0)
        m_store.m_warnings.push_back(
            std::to_string(m_stage.unclosedNvtx) +
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

void TraceLoader::Impl::buildThreads(std::map<int64_t, ThreadStage>& threads,
                                     const std::map<int64_t, NameId>& names, TraceStore& store) {
    for (auto& [globalTid, stage] : threads) {
        const auto threadIndex = static_cast<uint32_t>(store.m_threads.size());
        ThreadInfo info;
        info.globalTid = globalTid;
        info.pid = pidOf(globalTid);
        info.tid = static_cast<uint32_t>(globalTid & kIdMask);
        if (const auto it = names.find(globalTid); it != names.end())
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

// Runs while linking, which reads only API and GPU tracks, runs on the helper.
void TraceLoader::Impl::buildNvtx(std::map<int64_t, ThreadStage>& threads, int64_t traceEnd,
                                  LoadProgress& progress, TraceStore& store) {
    static_assert(kUnclosedNvtx == NvtxTrack::kUnclosed);
    uint32_t threadIndex = 0;
    // Progress moves from where it is to 0.9 of the building share as threads are done.
    const double from = progress.fraction();
    const double to = kReadShare + (1 - kReadShare) * 0.9;
    double total = 0;
    for (const auto& [tid, stage] : threads)
        total +=
            static_cast<double>(stage.pushPop.size() + stage.startEnd.size() + stage.marks.size());
    double done = 0;
    for (auto& [globalTid, stage] : threads) {
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
                    r.end = std::max(r.start, traceEnd);
            }
            sortRows(*rows);
        }
        sortRows(stage.marks);
        progress.set(progress.fraction()); // Cancel between the steps of a large thread's build
        distribute(stage.pushPop, nestingDepths(stage.pushPop), store.m_nvtxTracks, info.nvtxTracks,
                   setupNvtx(NvtxStyle::PushPop));
        progress.set(progress.fraction());
        distribute(stage.startEnd, firstFitLanes(stage.startEnd), store.m_nvtxTracks,
                   info.nvtxTracks, setupNvtx(NvtxStyle::StartEnd));
        distribute(stage.marks, std::vector<uint32_t>(stage.marks.size(), 0), store.m_nvtxTracks,
                   info.nvtxTracks, setupNvtx(NvtxStyle::Mark));
        done += rows;
        progress.set(from + (to - from) * (total > 0 ? done / total : 1.0));
        ++threadIndex;
    }
    threads.clear();
}

TraceLoader::Impl::Streams
TraceLoader::Impl::buildStreams(std::map<StreamKey, StreamStage>& streams, const StreamNames& names,
                                const StreamPriorities& priorities, TraceStore& store) {
    Streams built;
    // Ops whose table gave no process (Warpline's kernel view without a PROCESSES row) belong to
    // the stream with the same device, stream and context from a table that did, if there is one.
    for (auto it = streams.begin(); it != streams.end();) {
        const auto [device, streamId, context, pid] = it->first;
        if (pid != kUnknownPid) {
            ++it;
            continue;
        }
        auto known = streams.end();
        int matches = 0;
        for (auto other = streams.lower_bound({device, streamId, context, 0});
             other != streams.end() && std::get<0>(other->first) == device &&
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
        it = streams.erase(it);
    }
    for (auto& [key, stage] : streams) {
        const auto [device, streamId, context, pid] = key;
        const auto streamIndex = static_cast<uint32_t>(store.m_streams.size());
        built.pids.push_back(pid);
        StreamInfo info;
        info.deviceId = device;
        info.contextId = context;
        info.streamId = streamId;
        const auto named = names.find({context, streamId});
        info.name = named != names.end()
                        ? named->second
                        : store.m_strings.intern("Stream " + std::to_string(streamId));
        if (const auto p = priorities.find({context, streamId}); p != priorities.end())
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
        noteOverlaps(rows, lanes, static_cast<uint32_t>(store.m_gpuTracks.size()), built.overlaps);
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
    streams.clear();
    return built;
}

// --- linking ------------------------------------------------------------------------------------

// Needs the launch links: after link().
uint64_t TraceLoader::Impl::judgeOverlaps(GpuOverlaps& overlaps, TraceStore& store) {
    uint64_t unexplained = 0;
    for (const auto& [op, earlier] : overlaps) {
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
    GpuOverlaps().swap(overlaps);
    return unexplained;
}

uint64_t TraceLoader::Impl::link(TraceStore& store, const std::vector<uint32_t>& streamPids,
                                 const std::atomic<bool>& cancel) {
    uint64_t duplicates = 0;
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
                if ((i & kCancelCheckMask) == 0 && cancel)
                    throw LoadCancelled();
                if (t.m_domain[i] != domain || t.m_correlation[i] == 0)
                    continue;
                EventRef& entry = table[t.m_correlation[i]];
                if (entry.valid() && store.m_apiTracks[entry.track].m_domain[entry.index] == domain)
                    ++duplicates;
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

    // GPU op -> launching call, in the op's process.
    for (size_t streamIndex = 0; streamIndex < streamPids.size(); ++streamIndex) {
        const uint32_t pid = streamPids[streamIndex];
        for (const uint32_t ti : store.m_streams[streamIndex].gpuTracks) {
            GpuTrack& t = store.m_gpuTracks[ti];
            t.m_launch.resize(t.size());
            for (size_t i = 0; i < t.size(); ++i) {
                if ((i & kCancelCheckMask) == 0 && cancel)
                    throw LoadCancelled();
                t.m_launch[i] = lookup(pid, t.m_correlation[i]);
            }
        }
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
        if (cancel)
            throw LoadCancelled();
        const GpuTrack& g = store.m_gpuTracks[ti];
        for (uint32_t i = 0; i < g.size(); ++i) {
            if ((i & kCancelCheckMask) == 0 && cancel)
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
    return duplicates;
}

// --- the load -----------------------------------------------------------------------------------

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
    thread.join([this] { m_progress.set(m_progress.fraction()); });
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
    m_progress.set(0);
    open();
    m_schema = StoredSchema::read(*m_conn, m_fileName);
    m_store.m_formatVersion = m_schema.formatVersion();
    m_store.m_origin = m_schema.origin();
    m_store.m_warnings.insert(m_store.m_warnings.end(), m_schema.warnings().begin(),
                              m_schema.warnings().end());
    estimateWork();

    // The API tables (about half the rows of a typical trace) are read on a helper thread with its
    // own connection while this thread reads everything else: loading is SQLite-bound, and this
    // puts a second core to work.
    ApiReadResult api;
    {
        HelperThread helper(m_cancel);
        helper.start([this, &api, expected = m_stage.expected.api] {
            try {
                const std::unique_ptr<Connection> db = openConnection([this] { return !m_cancel; });
                readApiTables(*db, m_schema, m_options.readPages, expected, m_progress.helperRows(),
                              m_cancel, api);
            } catch (...) {
                api.error = std::current_exception();
            }
        });
        readTables();
        m_conn.reset();
        // Keep reporting (and honouring cancel) while the helper finishes.
        helper.join([this] { m_progress.reportRows(); });
    }
    mergeApi(api, m_strings, m_stage);
    m_strings.dropTexts();

    m_progress.set(kReadShare);
    m_store.m_beginTime = m_stage.time.known ? m_stage.time.begin : 0;
    m_store.m_endTime = m_stage.time.known ? m_stage.time.end : 0;
    // Threads and streams build into disjoint parts of the store: in parallel as well.
    Streams streams;
    inParallel(
        [this, &streams] {
            streams = buildStreams(m_stage.streams, m_stage.streamNames, m_stage.streamPriorities,
                                   m_store);
        },
        [this] { buildThreads(m_stage.threads, m_stage.threadNames, m_store); });
    m_progress.set(kReadShare + (1 - kReadShare) * 0.4);
    // Linking reads the API and GPU tracks only; the NVTX tracks build meanwhile.
    uint64_t duplicateCorrelations = 0;
    inParallel(
        [this, &streams, &duplicateCorrelations] {
            duplicateCorrelations = link(m_store, streams.pids, m_cancel);
        },
        [this] { buildNvtx(m_stage.threads, m_stage.time.end, m_progress, m_store); });
    m_progress.set(kReadShare + (1 - kReadShare) * 0.9);
    const uint64_t unexplainedOverlaps = judgeOverlaps(streams.overlaps, m_store);
    finishWarnings(unexplainedOverlaps, duplicateCorrelations);
    describeSource();
    m_progress.set(1.0);
    return std::move(m_store);
}

TraceStore TraceLoader::load(const std::string& path, const Options& options) {
    Impl impl(path, options);
    return impl.run();
}

} // namespace warpline::model
