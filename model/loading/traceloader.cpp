#include "traceloader.h"

#include "correlationlinker.h"
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
#include "trackbuilder.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <sqlite3.h>
#include <string>
#include <string_view>
#include <thread>
#include <unistd.h>

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
    TrackBuilder::Streams streams;
    inParallel(
        [this, &streams] {
            streams = TrackBuilder::buildStreams(m_stage.streams, m_stage.streamNames,
                                                 m_stage.streamPriorities, m_store);
        },
        [this] { TrackBuilder::buildThreads(m_stage.threads, m_stage.threadNames, m_store); });
    m_progress.set(kReadShare + (1 - kReadShare) * 0.4);
    // Linking reads the API and GPU tracks only; the NVTX tracks build meanwhile.
    uint64_t duplicateCorrelations = 0;
    inParallel(
        [this, &streams, &duplicateCorrelations] {
            duplicateCorrelations = CorrelationLinker::link(m_store, streams.pids, m_cancel);
        },
        [this] {
            TrackBuilder::buildNvtx(m_stage.threads, m_stage.time.end, m_progress, m_store);
        });
    m_progress.set(kReadShare + (1 - kReadShare) * 0.9);
    const uint64_t unexplainedOverlaps =
        CorrelationLinker::judgeOverlaps(streams.overlaps, m_store);
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
