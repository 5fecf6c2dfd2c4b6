#include "tracewriter.h"

#include "cpusamplesdata.h"
#include "gpumetricsdata.h"
#include "outputname.h"
#include "traceschema.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>
#include <fcntl.h>
#include <set>
#include <sqlite3.h>
#include <tuple>
#include <unistd.h>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace warpline::format {

namespace {

int64_t globalPid(uint32_t pid) {
    return static_cast<int64_t>(pid) << 24;
}
int64_t globalTid(uint32_t pid, uint32_t tid) {
    return globalPid(pid) | (tid & 0xFFFFFF);
}

constexpr int kNvtxMark = 34;
constexpr int kNvtxPushPop = 59;
constexpr int kNvtxStartEnd = 60;
constexpr int kNvtxDomainCreate = 75;

// What went wrong with a write, in words a user can act on, naming the file. `lastErrno` is errno
// right after the failed call: SQLite does not keep it for every I/O error (a write over the file
// size limit fails with EFBIG as SQLITE_IOERR_WRITE and system errno 0).
std::string writeFailure(sqlite3* db, int lastErrno) {
    const int code = sqlite3_errcode(db);
    int system = sqlite3_system_errno(db);
    if (system == 0 && code == SQLITE_IOERR)
        system = lastErrno;
    const char* file = sqlite3_db_filename(db, "main");
    std::string what;
    if (system == EFBIG)
        what = "the file reached the largest size this process may write (ulimit -f)";
    else if (code == SQLITE_FULL || system == ENOSPC || system == EDQUOT)
        what = "the disk is full (or the disk quota is used up)";
    else if (file && *file && ::access(file, F_OK) != 0)
        what = "the file was deleted, or its directory removed or renamed, while recording";
    else
        what = std::string(sqlite3_errmsg(db)) +
               (system != 0 ? std::string(" (") + std::strerror(system) + ")" : "");
    return "cannot write to the trace " + std::string(file ? file : "") + ": " + what;
}

// A prepared statement with positional binding; reset after each step.
class Statement {
public:
    Statement(sqlite3* db, const char* sql) : m_db(db) {
        if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &m_stmt, nullptr) !=
            SQLITE_OK)
            throw TraceWriteError(std::string("cannot prepare trace statement: ") +
                                  sqlite3_errmsg(db));
    }
    ~Statement() { sqlite3_finalize(m_stmt); }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    Statement& bind(int64_t v) {
        sqlite3_bind_int64(m_stmt, ++m_index, v);
        return *this;
    }
    template <typename T> Statement& bind(const std::optional<T>& v) {
        if (v)
            return bind(static_cast<int64_t>(*v));
        sqlite3_bind_null(m_stmt, ++m_index);
        return *this;
    }
    Statement& bindNull() {
        sqlite3_bind_null(m_stmt, ++m_index);
        return *this;
    }
    Statement& bind(std::string_view v) {
        // An empty view may have no data pointer, which SQLite would store as NULL: "" it is.
        sqlite3_bind_text(m_stmt, ++m_index, v.data() ? v.data() : "", static_cast<int>(v.size()),
                          SQLITE_TRANSIENT);
        return *this;
    }
    void run() {
        const int rc = sqlite3_step(m_stmt);
        const int lastErrno = errno;
        m_index = 0;
        sqlite3_reset(m_stmt);
        if (rc != SQLITE_DONE)
            throw TraceWriteError(writeFailure(m_db, lastErrno));
    }

private:
    sqlite3* m_db;
    sqlite3_stmt* m_stmt = nullptr;
    int m_index = 0;
};

void exec(sqlite3* db, const char* sql) {
    if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK)
        throw TraceWriteError(writeFailure(db, errno));
}

// Creates `path` empty, atomically; false when it exists already. O_EXCL fails on any existing
// name, a symbolic link too (dangling or not): a link planted at the path is never followed and
// an existing file never truncated. O_NOFOLLOW says so outright.
bool claim(const std::string& path) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        if (errno == EEXIST)
            return false;
        throw TraceWriteError("cannot create " + path + ": " + std::strerror(errno) +
                              " (does the directory exist, and is it writable?)");
    }
    ::close(fd);
    return true;
}

std::string claimName(const std::string& path, const TraceWriter::Options& options) {
    if (options.overwrite) {
        // unlink() removes a symbolic link itself, never its target: --force replaces the link.
        if (::unlink(path.c_str()) != 0 && errno != ENOENT)
            throw TraceWriteError("cannot replace " + path + ": " + std::strerror(errno));
        if (!claim(path))
            throw TraceWriteError("cannot replace " + path + ": another process created it");
        return path;
    }
    if (claim(path))
        return path;
    if (!options.numberIfExists)
        throw TraceWriteError(path + " already exists; choose another output name or pass "
                                     "--force to replace it");
    for (int n = 2; n < 100000; ++n) {
        const std::string candidate = numberedName(path, n);
        if (claim(candidate))
            return candidate;
    }
    throw TraceWriteError("cannot find a free name next to " + path);
}

// Launch configuration: everything of a kernel record that repeats from launch to launch.
using KernelConfigKey =
    std::tuple<uint32_t, uint32_t, int64_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t,
               uint32_t, int32_t, int32_t, uint32_t, uint64_t, uint32_t, uint8_t, uint8_t, uint8_t,
               uint32_t, uint32_t, uint32_t>;

struct KernelConfigKeyHash {
    size_t operator()(const KernelConfigKey& k) const {
        size_t h = 0;
        std::apply(
            [&h](const auto&... field) {
                ((h = h * 1000003u ^ std::hash<std::decay_t<decltype(field)>>{}(field)), ...);
            },
            k);
        return h;
    }
};

// Hash for string-keyed maps looked up by string_view without building a string.
struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <typename V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

struct KernelNames {
    int64_t demangled;
    int64_t shortName;
    int64_t mangled;
};

struct PendingRange {
    int64_t start;
    int64_t textId;
    int64_t domainId;
    uint32_t pid;
    uint32_t tid;
};

// A device limit the recorder could not read (0) is stored as NULL, not as a limit of zero.
std::optional<int64_t> knownLimit(uint32_t v) {
    return v ? std::optional<int64_t>(v) : std::nullopt;
}

} // namespace

struct TraceWriter::Impl {
    sqlite3* db = nullptr;
    Options options;
    std::chrono::steady_clock::time_point lastCommit = std::chrono::steady_clock::now();
    bool inTransaction = false;
    bool stopped = false; // rollBack() was called: records are no longer written
    uint32_t pid = 0;

    StringMap<int64_t> strings;
    StringMap<KernelNames> kernelNames;
    std::unordered_map<KernelConfigKey, int64_t, KernelConfigKeyHash> kernelConfigs;
    StringMap<int64_t> domains;
    std::unordered_map<uint32_t, PendingRange> openRanges;
    std::unordered_map<uint32_t, MarkerDataRecord> markerData;
    std::unordered_set<uint32_t> devices;

    std::unique_ptr<Statement> insString, insKernel, insConfig, insRuntime, insMemcpy, insMemset,
        insSync, insNvtx, insOverhead, insGpu, insCudaDevice, insContext, insStream, insThreadName,
        insStreamName, insDropped, insError, setMetaStmt, insCallchain;

    // Opens the batch for one more record; false after rollBack(), when records are dropped
    // quietly (they could refer to strings and configurations lost with the failed batch).
    bool acceptRecord() {
        if (stopped)
            return false;
        begin();
        return true;
    }

    void begin() {
        if (!inTransaction) {
            exec(db, "BEGIN");
            inTransaction = true;
        }
    }

    int64_t intern(std::string_view s) {
        auto it = strings.find(s);
        if (it != strings.end())
            return it->second;
        const int64_t id = static_cast<int64_t>(strings.size());
        insString->bind(id).bind(s).run();
        strings.emplace(std::string(s), id);
        return id;
    }

    int64_t domainId(std::string_view domain, int64_t time) {
        if (domain.empty())
            return 0;
        auto it = domains.find(domain);
        if (it != domains.end())
            return it->second;
        const int64_t id = static_cast<int64_t>(domains.size()) + 1;
        domains.emplace(std::string(domain), id);
        // start, end, eventType, rangeId, category, color, text, globalTid, endGlobalTid, textId,
        // domainId
        insNvtx->bind(time)
            .bindNull()
            .bind(int64_t{kNvtxDomainCreate})
            .bindNull()
            .bindNull()
            .bindNull()
            .bind(domain)
            .bind(globalTid(pid, 0))
            .bindNull()
            .bindNull()
            .bind(id)
            .run();
        return id;
    }

    void writeRange(const PendingRange& r, std::optional<int64_t> end, uint32_t endTid,
                    uint32_t id) {
        std::optional<int64_t> color, category;
        if (auto d = markerData.find(id); d != markerData.end()) {
            if (d->second.hasColor)
                color = d->second.color;
            if (d->second.category)
                category = d->second.category;
            markerData.erase(d);
        }
        const int type = endTid == r.tid ? kNvtxPushPop : kNvtxStartEnd;
        insNvtx->bind(r.start)
            .bind(end)
            .bind(int64_t{type})
            .bind(int64_t{id})
            .bind(category)
            .bind(color)
            .bindNull()
            .bind(globalTid(r.pid, r.tid))
            .bind(globalTid(r.pid, endTid))
            .bind(r.textId)
            .bind(r.domainId)
            .run();
    }
};

TraceWriter::TraceWriter(const std::string& path, Options options)
    : m_impl(std::make_unique<Impl>()) {
    m_impl->options = options;
    m_path = claimName(path, options);
    const std::string& file = m_path;
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
        SQLITE_OK) {
        std::string message = db ? sqlite3_errmsg(db) : "out of memory";
        sqlite3_close(db);
        ::unlink(file.c_str());
        throw TraceWriteError("cannot create " + file + ": " + message);
    }
    m_impl->db = db;
    try {
        // Rollback journal with NORMAL sync: every committed batch is in the main file, so a
        // killed recording opens with all but its last uncommitted moments.
        exec(db, "PRAGMA journal_mode=DELETE; PRAGMA synchronous=NORMAL; PRAGMA page_size=4096;");
        exec(db, "BEGIN");
        exec(db, traceSchemaSql());
        exec(db, ("PRAGMA user_version=" + std::to_string(kFormatUserVersion)).c_str());
        auto& i = *m_impl;
        i.insString = std::make_unique<Statement>(db, "INSERT INTO StringIds VALUES (?,?)");
        i.insConfig = std::make_unique<Statement>(
            db,
            "INSERT INTO WARPLINE_KERNEL_CONFIGS VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,"
            "?,?,?,?)");
        i.insKernel = std::make_unique<Statement>(
            db, "INSERT INTO WARPLINE_KERNELS VALUES (?,?,?,?,?,?,?,?)");
        // Runtime and driver calls share one table, told apart by eventClass
        // (ENUM_NSYS_EVENT_CLASS: 0 CUDA runtime, 1 CUDA driver), as nsys exports them.
        i.insRuntime = std::make_unique<Statement>(
            db, "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?,?,?,?)");
        i.insMemcpy = std::make_unique<Statement>(
            db, "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
        i.insMemset = std::make_unique<Statement>(
            db, "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?,?,?,?,?,?,?,?,?,?,?)");
        i.insSync = std::make_unique<Statement>(
            db, "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (?1, ?2, "
                "(SELECT deviceId FROM WARPLINE_CONTEXTS WHERE contextId = ?3), ?3, ?4, ?5, ?6, "
                "?7, ?8)");
        i.insNvtx = std::make_unique<Statement>(
            db, "INSERT INTO NVTX_EVENTS (start, end, eventType, rangeId, category, color, text, "
                "globalTid, endGlobalTid, textId, domainId) VALUES (?,?,?,?,?,?,?,?,?,?,?)");
        i.insOverhead =
            std::make_unique<Statement>(db, "INSERT INTO WARPLINE_OVERHEAD VALUES (?,?,?,?,?,?)");
        i.insGpu = std::make_unique<Statement>(
            db, "INSERT INTO TARGET_INFO_GPU (vmId, id, cuDevice, name, uuid, isDiscrete, "
                "l2CacheSize, totalMemory, memoryBandwidth, clockRate, smCount, computeMajor, "
                "computeMinor, smMajor, smMinor, threadsPerWarp, maxThreadsPerBlock, "
                "maxShmemPerBlock, maxRegistersPerBlock, asyncEngines, maxRegistersPerSm, "
                "maxShmemPerSm, maxShmemPerBlockOptin, maxWarpsPerSm, maxBlocksPerSm) "
                "VALUES (0,?1,?1,?2,?3,1,?4,?5,?6,?7,?8,?9,?10,?9,?10,?11,?12,?13,?14,?15,?16,?17,"
                "?18,?19,?20)");
        i.insCudaDevice = std::make_unique<Statement>(
            db, "INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES "
                "(?1, ?1, (SELECT pid FROM PROCESSES LIMIT 1), ?2, ?3)");
        i.insContext = std::make_unique<Statement>(
            db, "INSERT OR REPLACE INTO WARPLINE_CONTEXTS VALUES (?,?,?)");
        i.insStream = std::make_unique<Statement>(
            db, "INSERT INTO TARGET_INFO_CUDA_STREAM VALUES (?,NULL,NULL,?,?,?,?)");
        i.insThreadName = std::make_unique<Statement>(db, "INSERT INTO ThreadNames VALUES (?,0,?)");
        i.insStreamName =
            std::make_unique<Statement>(db, "INSERT INTO WARPLINE_STREAM_NAMES VALUES (?,?,?)");
        i.insDropped =
            std::make_unique<Statement>(db, "INSERT INTO WARPLINE_DROPPED VALUES (?,?,?,?,?)");
        i.insError = std::make_unique<Statement>(db, "INSERT INTO WARPLINE_ERRORS VALUES (?,?,?)");
        i.setMetaStmt =
            std::make_unique<Statement>(db, "INSERT OR REPLACE INTO WARPLINE_META VALUES (?,?)");
        i.inTransaction = true;
        setMeta("format_version",
                std::to_string(kFormatMajor) + "." + std::to_string(kFormatMinor));
        setMeta("status", "recording");
        commit();
    } catch (...) {
        m_impl.reset();
        sqlite3_close(db);
        ::unlink(file.c_str());
        throw;
    }
}

TraceWriter::~TraceWriter() {
    if (!m_impl)
        return;
    try {
        commit();
    } catch (...) {
        // A destructor must not throw; what was committed before stays readable.
    }
    close();
}

void TraceWriter::close() {
    sqlite3* db = m_impl->db;
    m_impl.reset(); // finalizes every statement before the connection closes
    sqlite3_close(db);
}

void TraceWriter::setMeta(const std::string& key, const std::string& value) {
    m_impl->begin();
    m_impl->setMetaStmt->bind(key).bind(value).run();
}

void TraceWriter::setProcess(uint32_t pid, const std::string& name) {
    if (!m_impl->acceptRecord())
        return;
    m_impl->pid = pid;
    exec(m_impl->db, "DELETE FROM PROCESSES");
    Statement(m_impl->db, "INSERT INTO PROCESSES VALUES (?,?,?)")
        .bind(globalPid(pid))
        .bind(int64_t{pid})
        .bind(name)
        .run();
    Statement(m_impl->db, "UPDATE TARGET_INFO_CUDA_DEVICE SET pid = ?").bind(int64_t{pid}).run();
    setMeta("pid", std::to_string(pid));
}

void TraceWriter::setSessionStart(int64_t utcEpochNs) {
    if (!m_impl->acceptRecord())
        return;
    exec(m_impl->db, "DELETE FROM TARGET_INFO_SESSION_START_TIME");
    Statement(m_impl->db, "INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES "
                          "(?1, strftime('%Y-%m-%dT%H:%M:%fZ', ?1 / 1e9, 'unixepoch'), "
                          "datetime(?1 / 1000000000, 'unixepoch', 'localtime'))")
        .bind(utcEpochNs)
        .run();
}

void TraceWriter::addKernel(const KernelRecord& r) {
    if (!m_impl->acceptRecord())
        return;
    auto& i = *m_impl;
    auto names = i.kernelNames.find(r.mangledName);
    if (names == i.kernelNames.end()) {
        const std::string demangled = demangle(std::string(r.mangledName));
        KernelNames n{i.intern(demangled), i.intern(shortKernelName(demangled)),
                      i.intern(r.mangledName)};
        names = i.kernelNames.emplace(std::string(r.mangledName), n).first;
    }
    const KernelConfigKey key{r.deviceId,
                              r.contextId,
                              names->second.mangled,
                              r.gridX,
                              r.gridY,
                              r.gridZ,
                              r.blockX,
                              r.blockY,
                              r.blockZ,
                              r.registersPerThread,
                              r.staticSharedMemory,
                              r.dynamicSharedMemory,
                              r.localMemoryPerThread,
                              r.localMemoryTotal,
                              r.sharedMemoryExecuted,
                              r.launchType,
                              r.cacheConfig,
                              r.sharedMemoryLimitConfig,
                              r.clusterX,
                              r.clusterY,
                              r.clusterZ};
    auto config = i.kernelConfigs.find(key);
    if (config == i.kernelConfigs.end()) {
        const int64_t id = static_cast<int64_t>(i.kernelConfigs.size());
        i.insConfig->bind(id)
            .bind(int64_t{r.deviceId})
            .bind(int64_t{r.contextId})
            .bind(names->second.demangled)
            .bind(names->second.shortName)
            .bind(names->second.mangled)
            .bind(int64_t{r.launchType})
            .bind(int64_t{r.cacheConfig})
            .bind(int64_t{r.registersPerThread})
            .bind(int64_t{r.gridX})
            .bind(int64_t{r.gridY})
            .bind(int64_t{r.gridZ})
            .bind(int64_t{r.blockX})
            .bind(int64_t{r.blockY})
            .bind(int64_t{r.blockZ})
            .bind(int64_t{r.staticSharedMemory})
            .bind(int64_t{r.dynamicSharedMemory})
            .bind(int64_t{r.localMemoryPerThread})
            .bind(static_cast<int64_t>(r.localMemoryTotal))
            .bind(int64_t{r.sharedMemoryExecuted})
            .bind(int64_t{r.sharedMemoryLimitConfig})
            .bind(int64_t{r.clusterX})
            .bind(int64_t{r.clusterY})
            .bind(int64_t{r.clusterZ})
            .run();
        config = i.kernelConfigs.emplace(key, id).first;
    }
    i.insKernel->bind(r.start)
        .bind(r.end)
        .bind(int64_t{r.streamId})
        .bind(int64_t{r.correlationId})
        .bind(config->second)
        .bind(r.gridId)
        .bind(r.graphNodeId)
        .bind(r.graphId)
        .run();
    ++m_recordsWritten;
}

void TraceWriter::addApi(const ApiRecord& r) {
    if (!m_impl->acceptRecord())
        return;
    auto& i = *m_impl;
    i.insRuntime->bind(r.start)
        .bind(r.end)
        .bind(int64_t{r.domain == ApiRecord::Domain::Runtime ? kEventClassCudaRuntime
                                                             : kEventClassCudaDriver})
        .bind(globalTid(r.processId, r.threadId))
        .bind(int64_t{r.correlationId})
        .bind(i.intern(r.name))
        .bind(int64_t{r.returnValue});
    if (r.callchainId != 0)
        i.insRuntime->bind(int64_t{r.callchainId});
    else
        i.insRuntime->bindNull();
    i.insRuntime->run();
    ++m_recordsWritten;
}

void TraceWriter::addCallchain(const CallchainRecord& r) {
    if (!m_impl->acceptRecord() || r.frames.empty())
        return;
    auto& i = *m_impl;
    if (!i.insCallchain) {
        // nsys's table, made when the first stack arrives (only --python-stacks records any).
        exec(i.db, "CREATE TABLE IF NOT EXISTS CUDA_CALLCHAINS (id INTEGER NOT NULL, symbol "
                   "INTEGER NOT NULL, module INTEGER NOT NULL, unresolved INTEGER, originalIP "
                   "INTEGER, stackDepth INTEGER NOT NULL, PRIMARY KEY (id, stackDepth))");
        i.insCallchain = std::make_unique<Statement>(
            i.db, "INSERT OR IGNORE INTO CUDA_CALLCHAINS VALUES (?,?,?,0,NULL,?)");
    }
    for (size_t d = 0; d < r.frames.size(); ++d) {
        const PythonFrame& f = r.frames[d];
        i.insCallchain->bind(int64_t{r.id})
            .bind(i.intern(f.function))
            .bind(i.intern(f.file + ":" + std::to_string(f.line)))
            .bind(static_cast<int64_t>(d))
            .run();
    }
    ++m_recordsWritten;
}

void TraceWriter::addMemcpy(const MemcpyRecord& r) {
    if (!m_impl->acceptRecord())
        return;
    auto& i = *m_impl;
    i.insMemcpy->bind(r.start)
        .bind(r.end)
        .bind(int64_t{r.deviceId})
        .bind(int64_t{r.contextId})
        .bind(int64_t{r.streamId})
        .bind(int64_t{r.correlationId})
        .bind(globalPid(i.pid))
        .bind(static_cast<int64_t>(r.bytes))
        .bind(int64_t{r.copyKind})
        .bind(int64_t{r.srcKind})
        .bind(int64_t{r.dstKind})
        .bind(r.graphNodeId)
        .run();
    ++m_recordsWritten;
}

void TraceWriter::addMemset(const MemsetRecord& r) {
    if (!m_impl->acceptRecord())
        return;
    auto& i = *m_impl;
    i.insMemset->bind(r.start)
        .bind(r.end)
        .bind(int64_t{r.deviceId})
        .bind(int64_t{r.contextId})
        .bind(int64_t{r.streamId})
        .bind(int64_t{r.correlationId})
        .bind(globalPid(i.pid))
        .bind(int64_t{r.value})
        .bind(static_cast<int64_t>(r.bytes))
        .bind(r.graphNodeId)
        .bind(int64_t{r.memKind})
        .run();
    ++m_recordsWritten;
}

void TraceWriter::addSync(const SyncRecord& r) {
    if (!m_impl->acceptRecord())
        return;
    auto& i = *m_impl;
    i.insSync->bind(r.start)
        .bind(r.end)
        .bind(int64_t{r.contextId})
        .bind(r.streamId)
        .bind(int64_t{r.correlationId})
        .bind(globalPid(i.pid))
        .bind(int64_t{r.syncType})
        .bind(r.eventId)
        .run();
    ++m_recordsWritten;
}

void TraceWriter::addMarker(const MarkerRecord& r) {
    if (!m_impl->acceptRecord())
        return;
    auto& i = *m_impl;
    switch (r.kind) {
    case MarkerRecord::Kind::Instant: {
        const int64_t domain = i.domainId(r.domain, r.timestamp);
        i.insNvtx->bind(r.timestamp)
            .bindNull()
            .bind(int64_t{kNvtxMark})
            .bind(int64_t{r.id})
            .bindNull()
            .bindNull()
            .bindNull()
            .bind(globalTid(r.processId, r.threadId))
            .bindNull()
            .bind(i.intern(r.name))
            .bind(domain)
            .run();
        ++m_recordsWritten;
        break;
    }
    case MarkerRecord::Kind::Start:
        i.openRanges[r.id] =
            PendingRange{r.timestamp, i.intern(r.name), i.domainId(r.domain, r.timestamp),
                         r.processId, r.threadId};
        break;
    case MarkerRecord::Kind::End: {
        auto open = i.openRanges.find(r.id);
        if (open == i.openRanges.end())
            break; // an end without a start: the start was dropped or predates the session
        i.writeRange(open->second, r.timestamp, r.threadId, r.id);
        i.openRanges.erase(open);
        ++m_recordsWritten;
        break;
    }
    }
}

void TraceWriter::addMarkerData(const MarkerDataRecord& r) {
    if (m_impl->stopped)
        return; // after rollBack(): dropped quietly
    m_impl->markerData[r.id] = r;
}

void TraceWriter::addOverhead(const OverheadRecord& r) {
    if (!m_impl->acceptRecord())
        return;
    auto& i = *m_impl;
    i.insOverhead->bind(r.start)
        .bind(r.end)
        .bind(int64_t{r.overheadKind})
        .bind(globalTid(r.processId, r.threadId))
        .bind(r.deviceId)
        .bind(int64_t{r.correlationId})
        .run();
}

void TraceWriter::addDevice(const DeviceRecord& r) {
    if (m_impl->stopped)
        return; // after rollBack(): dropped quietly
    auto& i = *m_impl;
    if (!i.devices.insert(r.id).second)
        return; // described already (by the recorder, or an earlier CUPTI record)
    i.begin();
    // nsys writes the UUID without NVML's "GPU-" prefix and the clock in Hz.
    const std::string uuid = r.uuid.rfind("GPU-", 0) == 0 ? r.uuid.substr(4) : r.uuid;
    i.insGpu->bind(int64_t{r.id})
        .bind(r.name)
        .bind(uuid)
        .bind(int64_t{r.l2CacheSize})
        .bind(static_cast<int64_t>(r.totalMemory))
        .bind(static_cast<int64_t>(r.memoryBandwidth))
        .bind(int64_t{r.clockRate} * 1000)
        .bind(int64_t{r.smCount})
        .bind(int64_t{r.computeMajor})
        .bind(int64_t{r.computeMinor})
        .bind(int64_t{r.threadsPerWarp})
        .bind(int64_t{r.maxThreadsPerBlock})
        .bind(int64_t{r.maxSharedMemoryPerBlock})
        .bind(int64_t{r.maxRegistersPerBlock})
        .bind(int64_t{r.numMemcpyEngines})
        .bind(knownLimit(r.maxRegistersPerSm))
        .bind(knownLimit(r.maxSharedMemoryPerSm))
        .bind(knownLimit(r.maxSharedMemoryPerBlockOptin))
        .bind(knownLimit(r.maxWarpsPerSm))
        .bind(knownLimit(r.maxBlocksPerSm))
        .run();
    i.insCudaDevice->bind(int64_t{r.id}).bind(uuid).bind(int64_t{r.smCount}).run();
}

void TraceWriter::addContext(const ContextRecord& r) {
    if (!m_impl->acceptRecord())
        return;
    auto& i = *m_impl;
    i.insContext->bind(int64_t{r.contextId})
        .bind(int64_t{r.deviceId})
        .bind(int64_t{r.nullStreamId})
        .run();
}

void TraceWriter::addStream(const StreamRecord& r) {
    if (!m_impl->acceptRecord())
        return;
    auto& i = *m_impl;
    i.insStream->bind(int64_t{r.streamId})
        .bind(int64_t{i.pid})
        .bind(int64_t{r.contextId})
        .bind(int64_t{r.priority})
        .bind(int64_t{r.flag})
        .run();
}

void TraceWriter::addName(const NameRecord& r) {
    if (!m_impl->acceptRecord())
        return;
    auto& i = *m_impl;
    if (r.object == NameRecord::Object::Thread)
        i.insThreadName->bind(i.intern(r.name)).bind(globalTid(r.processId, r.threadId)).run();
    else
        i.insStreamName->bind(int64_t{r.contextId})
            .bind(int64_t{r.streamId})
            .bind(i.intern(r.name))
            .run();
}

void TraceWriter::addDropped(int64_t time, uint32_t contextId, uint32_t streamId, uint64_t dropped,
                             const std::string& reason) {
    if (!m_impl->acceptRecord())
        return;
    auto& i = *m_impl;
    i.insDropped->bind(time)
        .bind(int64_t{contextId})
        .bind(int64_t{streamId})
        .bind(static_cast<int64_t>(dropped))
        .bind(reason)
        .run();
}

void TraceWriter::addError(int64_t time, const std::string& source, const std::string& message) {
    auto& i = *m_impl;
    i.begin();
    i.insError->bind(time).bind(source).bind(message).run();
}

void TraceWriter::commitIfDue() {
    if (std::chrono::steady_clock::now() - m_impl->lastCommit >= m_impl->options.commitInterval)
        commit();
}

void TraceWriter::commit() {
    auto& i = *m_impl;
    if (i.inTransaction) {
        exec(i.db, "COMMIT");
        i.inTransaction = false;
    }
    m_recordsCommitted = m_recordsWritten;
    i.lastCommit = std::chrono::steady_clock::now();
}

void TraceWriter::rollBack() {
    auto& i = *m_impl;
    // After an I/O error SQLite may have rolled the transaction back already.
    if (!sqlite3_get_autocommit(i.db))
        sqlite3_exec(i.db, "ROLLBACK", nullptr, nullptr, nullptr);
    i.inTransaction = false;
    // Strings and launch configurations interned in the lost batch are not in the file: records
    // written from now on could refer to them, so none are.
    i.stopped = true;
    i.openRanges.clear();
    m_recordsWritten = m_recordsCommitted;
}

void TraceWriter::finish(const std::string& status) {
    if (!m_impl)
        throw TraceWriteError("the trace " + m_path + " was already finished");
    auto& i = *m_impl;
    i.begin();
    for (const auto& [id, range] : i.openRanges) {
        i.writeRange(range, std::nullopt, range.tid, id);
        ++m_recordsWritten;
    }
    i.openRanges.clear();
    setMeta("status", status);
    commit();
    // Indexes only speed up SQL on the file (Warpline's reader does not need them): on a full
    // disk the trace is finished without them.
    try {
        exec(i.db, "BEGIN");
        i.inTransaction = true;
        exec(i.db, traceIndexSql());
        commit();
    } catch (const TraceWriteError&) {
        if (!i.stopped)
            throw;
        rollBack();
    }
    close();
}

namespace {

// Opens an existing trace for writing and runs `update(db)` inside one IMMEDIATE transaction
// (committed when it returns; on a throw the file is closed and the transaction left undone).
// `cannot` is the error when the file does not open ("cannot update PATH").
template <typename F>
void updateTrace(const std::string& path, const std::string& cannot, F&& update) {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
        sqlite3_close(db);
        throw TraceWriteError(cannot);
    }
    try {
        sqlite3_busy_timeout(db, 5000);
        exec(db, "BEGIN IMMEDIATE");
        update(db);
        exec(db, "COMMIT");
    } catch (...) {
        sqlite3_close(db);
        throw;
    }
    sqlite3_close(db);
}

// A WARPLINE_META value on an open trace; "" when absent or unreadable.
std::string metaValue(sqlite3* db, const std::string& key) {
    std::string value;
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT value FROM WARPLINE_META WHERE key = ?", -1, &stmt,
                           nullptr) == SQLITE_OK) {
        sqlite3_bind_text(stmt, 1, key.c_str(), -1, SQLITE_TRANSIENT);
        if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0))
            value = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
    return value;
}

} // namespace

void amendTraceMeta(const std::string& path,
                    const std::vector<std::pair<std::string, std::string>>& values) {
    updateTrace(path, "cannot update " + path, [&values](sqlite3* db) {
        Statement set(db, "INSERT OR REPLACE INTO WARPLINE_META VALUES (?,?)");
        for (const auto& [key, value] : values)
            set.bind(key).bind(value).run();
    });
}

namespace {

constexpr const char* kGpuMetricsSchema = R"SQL(
CREATE TABLE IF NOT EXISTS TARGET_INFO_GPU_METRICS (
    typeId INTEGER NOT NULL, sourceId INTEGER NOT NULL, typeName TEXT NOT NULL,
    metricId INTEGER NOT NULL, metricName TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS GPU_METRICS (
    rawTimestamp INTEGER NOT NULL, timestamp INTEGER NOT NULL, typeId INTEGER NOT NULL,
    metricId INTEGER NOT NULL, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS WARPLINE_GPU_METRIC_SOURCES (
    typeId INTEGER NOT NULL, metricId INTEGER NOT NULL, cuptiName TEXT NOT NULL);
)SQL";

} // namespace

uint64_t appendGpuMetrics(const std::string& path, const GpuMetricsData& data) {
    uint64_t written = 0;
    updateTrace(path, "cannot add GPU metrics to " + path, [&](sqlite3* db) {
        const int64_t sessionStart =
            std::strtoll(metaValue(db, "session_start_timestamp").c_str(), nullptr, 10);
        if (sessionStart <= 0)
            throw TraceWriteError(path + " has no session start time; GPU metrics not added");
        exec(db, kGpuMetricsSchema);
        Statement name(db, "INSERT INTO TARGET_INFO_GPU_METRICS VALUES (?,?,?,?,?)");
        Statement source(db, "INSERT INTO WARPLINE_GPU_METRIC_SOURCES VALUES (?,?,?)");
        Statement row(db, "INSERT INTO GPU_METRICS VALUES (?,?,?,?,?)");
        Statement error(db, "INSERT INTO WARPLINE_ERRORS VALUES (?,?,?)");
        Statement meta(db, "INSERT OR REPLACE INTO WARPLINE_META VALUES (?,?)");
        std::string summary;
        for (const GpuMetricsDevice& d : data.devices) {
            // nsys: the low 8 bits of typeId are the GPU; one metric set per GPU here.
            const int64_t typeId = d.deviceId & 0xFF;
            const std::string typeName = "PM sampling " + d.chip;
            for (size_t m = 0; m < d.metrics.size(); ++m) {
                name.bind(typeId)
                    .bind(static_cast<int64_t>(d.deviceId))
                    .bind(typeName)
                    .bind(static_cast<int64_t>(m))
                    .bind(d.metrics[m].name)
                    .run();
                source.bind(typeId)
                    .bind(static_cast<int64_t>(m))
                    .bind(d.metrics[m].cuptiName)
                    .run();
            }
            const size_t width = d.metrics.size();
            uint64_t deviceSamples = 0;
            for (size_t s = 0;
                 width > 0 && s < d.timestamps.size() && (s + 1) * width <= d.values.size(); ++s) {
                const auto t = static_cast<int64_t>(d.timestamps[s]) - sessionStart;
                if (t < 0)
                    continue;
                for (size_t m = 0; m < width; ++m)
                    row.bind(static_cast<int64_t>(d.timestamps[s]))
                        .bind(t)
                        .bind(typeId)
                        .bind(static_cast<int64_t>(m))
                        .bind(d.values[s * width + m])
                        .run();
                ++deviceSamples;
            }
            written += deviceSamples;
            if (!d.error.empty())
                error.bind(0)
                    .bind(std::string_view("gpu-metrics"))
                    .bind("GPU " + std::to_string(d.deviceId) + ": " + d.error)
                    .run();
            summary += (summary.empty() ? "" : "; ") + std::string("GPU ") +
                       std::to_string(d.deviceId) + " (" + d.chip + "): " + std::to_string(width) +
                       " metrics, " + std::to_string(deviceSamples) + " samples";
        }
        for (const std::string& problem : data.problems)
            error.bind(0).bind(std::string_view("gpu-metrics")).bind(problem).run();
        if (summary.empty())
            summary = "not sampled" +
                      (data.problems.empty() ? std::string() : ": " + data.problems.front());
        meta.bind(std::string_view("gpu_metrics")).bind(summary).run();
        meta.bind(std::string_view("gpu_metrics_interval_ns"))
            .bind(std::to_string(data.intervalNs))
            .run();
    });
    return written;
}

namespace {

constexpr const char* kCpuSamplesSchema = R"SQL(
CREATE TABLE IF NOT EXISTS COMPOSITE_EVENTS (
    id INTEGER NOT NULL PRIMARY KEY, start INTEGER NOT NULL, cpu INTEGER, threadState INTEGER,
    globalTid INTEGER, cpuCycles INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS SAMPLING_CALLCHAINS (
    id INTEGER NOT NULL, symbol INTEGER NOT NULL, module INTEGER NOT NULL, kernelMode INTEGER,
    thumbCode INTEGER, unresolved INTEGER, specialEntry INTEGER, originalIP INTEGER,
    unwindMethod INTEGER, stackDepth INTEGER NOT NULL, PRIMARY KEY (id, stackDepth))
    WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS SCHED_EVENTS (
    start INTEGER NOT NULL, cpu INTEGER NOT NULL, isSchedIn INTEGER NOT NULL, globalTid INTEGER,
    threadState INTEGER, threadBlock INTEGER);
CREATE TABLE IF NOT EXISTS ENUM_SAMPLING_THREAD_STATE (
    id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
INSERT OR IGNORE INTO ENUM_SAMPLING_THREAD_STATE VALUES
    (0,'Unknown','Unknown'), (1,'Running','Running'), (2,'Interruptible','Interruptible'),
    (3,'Uninterruptible','Uninterruptible'), (4,'Stopped','Stopped'),
    (5,'Terminated','Terminated'), (6,'Unscheduled','Unscheduled'), (7,'Waiting','Waiting'),
    (8,'OSRuntime','OS runtime'), (9,'Initialized','Initialized'), (10,'Transition','Transition');
)SQL";

bool parsePair(const std::string& text, int64_t& cupti, int64_t& mono) {
    char* end = nullptr;
    cupti = std::strtoll(text.c_str(), &end, 10);
    if (end == text.c_str() || *end != ' ')
        return false;
    const char* second = end + 1;
    mono = std::strtoll(second, &end, 10);
    return end != second && *end == '\0' && cupti > 0 && mono > 0;
}

} // namespace

bool parseClockPairs(const std::string& start, const std::string& end, int64_t sessionStart,
                     MonotonicToTrace& out) {
    int64_t c0 = 0, m0 = 0, c1 = 0, m1 = 0;
    if (!parsePair(start, c0, m0))
        return false;
    out = MonotonicToTrace{c0, m0, 1.0, sessionStart};
    // The clocks' rates may differ a little (CUPTI's may be NTP-slewed): take the rate over the
    // run when the end pair is at least a second later and the rate within 0.1% of 1.
    if (parsePair(end, c1, m1) && m1 - m0 >= 1'000'000'000) {
        const double rate = static_cast<double>(c1 - c0) / static_cast<double>(m1 - m0);
        if (rate > 0.999 && rate < 1.001)
            out.rate = rate;
    }
    return true;
}

uint64_t appendCpuSamples(const std::string& path, const std::set<uint32_t>& pids,
                          const CpuSampleData& data) {
    uint64_t written = 0;
    updateTrace(path, "cannot add CPU samples to " + path, [&](sqlite3* db) {
        Statement error(db, "INSERT INTO WARPLINE_ERRORS VALUES (?,?,?)");
        Statement meta(db, "INSERT OR REPLACE INTO WARPLINE_META VALUES (?,?)");
        const int64_t sessionStart =
            std::strtoll(metaValue(db, "session_start_timestamp").c_str(), nullptr, 10);
        MonotonicToTrace toTrace;
        if (sessionStart <= 0 ||
            !parseClockPairs(metaValue(db, "cupti_monotonic_start"),
                             metaValue(db, "cupti_monotonic_end"), sessionStart, toTrace)) {
            const std::string why = "CPU samples not added: the trace does not say how its "
                                    "clock relates to CLOCK_MONOTONIC (recorded by an older "
                                    "Warpline?)";
            error.bind(0).bind(std::string_view("cpu-sampling")).bind(why).run();
            meta.bind(std::string_view("cpu_sampling")).bind(std::string_view(why)).run();
            return;
        }
        exec(db, kCpuSamplesSchema);
        // The trace's strings, to intern frames and thread names into the same table.
        std::unordered_map<std::string, int64_t> ids;
        int64_t nextId = 0;
        {
            sqlite3_stmt* stmt = nullptr;
            if (sqlite3_prepare_v2(db, "SELECT id, value FROM StringIds", -1, &stmt, nullptr) ==
                SQLITE_OK)
                while (sqlite3_step(stmt) == SQLITE_ROW) {
                    const int64_t id = sqlite3_column_int64(stmt, 0);
                    nextId = std::max(nextId, id + 1);
                    if (const auto* text = sqlite3_column_text(stmt, 1))
                        ids.emplace(reinterpret_cast<const char*>(text), id);
                }
            sqlite3_finalize(stmt);
        }
        Statement addString(db, "INSERT INTO StringIds VALUES (?,?)");
        const auto intern = [&](const std::string& text) {
            const auto [it, added] = ids.try_emplace(text, nextId);
            if (added) {
                addString.bind(nextId).bind(text).run();
                ++nextId;
            }
            return it->second;
        };
        int64_t nextSample = 1;
        {
            sqlite3_stmt* stmt = nullptr;
            if (sqlite3_prepare_v2(db, "SELECT MAX(id) FROM COMPOSITE_EVENTS", -1, &stmt,
                                   nullptr) == SQLITE_OK &&
                sqlite3_step(stmt) == SQLITE_ROW)
                nextSample = sqlite3_column_int64(stmt, 0) + 1;
            sqlite3_finalize(stmt);
        }
        std::vector<std::pair<int64_t, int64_t>> frameIds(data.frames.size(), {-1, -1});
        Statement sample(db, "INSERT INTO COMPOSITE_EVENTS VALUES (?,?,?,?,?,0)");
        Statement frame(db, "INSERT INTO SAMPLING_CALLCHAINS VALUES (?,?,?,0,0,?,0,?,NULL,?)");
        Statement sched(db, "INSERT INTO SCHED_EVENTS VALUES (?,?,?,?,?,NULL)");
        std::set<std::pair<uint32_t, uint32_t>> threads; // (pid, tid)
        uint64_t atWaits = 0;
        for (const CpuSampleData::Sample& s : data.samples) {
            if (!pids.count(s.pid))
                continue;
            const int64_t id = nextSample++;
            sample.bind(id)
                .bind(toTrace(s.monotonicNs))
                .bind(static_cast<int64_t>(s.cpu))
                .bind(static_cast<int64_t>(s.state))
                .bind(globalTid(s.pid, s.tid))
                .run();
            if (s.chain < data.chains.size()) {
                int64_t depth = 0;
                for (uint32_t f : data.chains[s.chain]) {
                    if (f >= data.frames.size())
                        continue;
                    auto& names = frameIds[f];
                    if (names.first < 0)
                        names = {intern(data.frames[f].symbol), intern(data.frames[f].module)};
                    frame.bind(id)
                        .bind(names.first)
                        .bind(names.second)
                        .bind(int64_t{data.frames[f].resolved ? 0 : 1})
                        .bind(data.frames[f].resolved
                                  ? std::optional<int64_t>()
                                  : std::optional<int64_t>(static_cast<int64_t>(data.frames[f].ip)))
                        .bind(depth++)
                        .run();
                }
            }
            threads.insert({s.pid, s.tid});
            atWaits += s.state != SampledThreadState::Running;
            ++written;
        }
        uint64_t switches = 0;
        for (const CpuSampleData::Switch& s : data.switches) {
            if (!pids.count(s.pid))
                continue;
            sched.bind(toTrace(s.monotonicNs))
                .bind(static_cast<int64_t>(s.cpu))
                .bind(int64_t{s.in ? 1 : 0})
                .bind(globalTid(s.pid, s.tid));
            if (s.in)
                sched.bindNull();
            else
                sched.bind(static_cast<int64_t>(s.preempted ? SampledThreadState::Running
                                                            : SampledThreadState::Interruptible));
            sched.run();
            threads.insert({s.pid, s.tid});
            ++switches;
        }
        // Names of the sampled threads that have none yet (threads that made no CUDA call).
        std::set<int64_t> named;
        {
            sqlite3_stmt* stmt = nullptr;
            if (sqlite3_prepare_v2(db, "SELECT globalTid FROM ThreadNames", -1, &stmt, nullptr) ==
                SQLITE_OK)
                while (sqlite3_step(stmt) == SQLITE_ROW)
                    named.insert(sqlite3_column_int64(stmt, 0));
            sqlite3_finalize(stmt);
        }
        Statement threadName(db, "INSERT INTO ThreadNames VALUES (?,0,?)");
        for (const auto& [pid, tid] : threads) {
            const auto name = data.threadNames.find({pid, tid});
            if (name != data.threadNames.end() && !named.count(globalTid(pid, tid)))
                threadName.bind(intern(name->second)).bind(globalTid(pid, tid)).run();
        }
        for (const std::string& problem : data.problems)
            error.bind(0).bind(std::string_view("cpu-sampling")).bind(problem).run();
        std::string summary = std::to_string(written) + " samples (" + std::to_string(atWaits) +
                              " where a thread waited) and " + std::to_string(switches) +
                              " switches of " + std::to_string(threads.size()) + " threads at " +
                              std::to_string(data.rateHz) + " Hz, " +
                              (data.perCpu ? "a clock per CPU" : "a clock per thread");
        if (data.lostRecords)
            summary += "; " + std::to_string(data.lostRecords) + " records lost";
        meta.bind(std::string_view("cpu_sampling")).bind(summary).run();
        meta.bind(std::string_view("cpu_sampling_rate_hz")).bind(std::to_string(data.rateHz)).run();
    });
    return written;
}

std::string traceMetaValue(const std::string& path, const std::string& key) {
    sqlite3* db = nullptr;
    std::string value;
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK)
        value = metaValue(db, key);
    sqlite3_close(db);
    return value;
}

std::string nvidiaDriverVersion() {
    std::FILE* f = std::fopen("/proc/driver/nvidia/version", "r");
    if (!f)
        return {};
    char line[512] = {};
    const bool read = std::fgets(line, sizeof line, f) != nullptr;
    std::fclose(f);
    return read ? driverVersionFromProc(line) : std::string();
}

std::string driverVersionFromProc(const std::string& line) {
    // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu ..." or
    // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ...":
    // the first word made of digits and dots, with a dot, after "Kernel Module".
    const size_t module = line.find("Kernel Module");
    if (module == std::string::npos)
        return {};
    size_t pos = module;
    while (pos < line.size()) {
        const size_t begin = line.find_first_not_of(" \t", pos);
        if (begin == std::string::npos)
            break;
        const size_t end = std::min(line.find_first_of(" \t\n", begin), line.size());
        const std::string word = line.substr(begin, end - begin);
        if (!word.empty() && word.find('.') != std::string::npos &&
            word.find_first_not_of("0123456789.") == std::string::npos)
            return word;
        pos = end;
    }
    return {};
}

std::string formatGpuUuid(const char (&bytes)[16]) {
    static const char* digits = "0123456789abcdef";
    std::string out = "GPU-";
    for (int i = 0; i < 16; ++i) {
        const auto b = static_cast<unsigned char>(bytes[i]);
        out += digits[b >> 4];
        out += digits[b & 15];
        if (i == 3 || i == 5 || i == 7 || i == 9)
            out += '-';
    }
    return out;
}

std::string demangle(const std::string& mangled) {
    if (mangled.rfind("_Z", 0) != 0)
        return mangled;
    int status = 0;
    char* out = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
    if (status != 0 || !out)
        return mangled;
    std::string result(out);
    std::free(out);
    return result;
}

std::string shortKernelName(const std::string& demangled) {
    static const std::string kAnon = "(anonymous namespace)";
    std::string s = demangled;
    for (size_t p; (p = s.find(kAnon)) != std::string::npos;)
        s.replace(p, kAnon.size(), "{anonymous}");
    // Cut the parameter list: the first '(' outside template brackets.
    int depth = 0;
    for (size_t k = 0; k < s.size(); ++k) {
        if (s[k] == '<')
            ++depth;
        else if (s[k] == '>')
            --depth;
        else if (s[k] == '(' && depth == 0) {
            s.resize(k);
            break;
        }
    }
    // Drop trailing template arguments.
    if (!s.empty() && s.back() == '>') {
        depth = 0;
        for (size_t k = s.size(); k-- > 0;) {
            if (s[k] == '>')
                ++depth;
            else if (s[k] == '<' && --depth == 0) {
                s.resize(k);
                break;
            }
        }
    }
    // Drop the return type and scopes: keep what follows the last space or "::" outside brackets.
    depth = 0;
    size_t begin = 0;
    for (size_t k = 0; k < s.size(); ++k) {
        if (s[k] == '<')
            ++depth;
        else if (s[k] == '>')
            --depth;
        else if (depth == 0 && s[k] == ' ')
            begin = k + 1;
        else if (depth == 0 && s[k] == ':' && k + 1 < s.size() && s[k + 1] == ':')
            begin = k + 2;
    }
    s = s.substr(begin);
    return s.empty() ? demangled : s;
}

} // namespace warpline::format
