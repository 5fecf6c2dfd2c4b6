#pragma once

// Test helper: writes small trace files row by row with plain SQL over the real schema
// (format/traceschema.h), so a test controls exactly what is in the file: unsorted rows, rows
// with end < start, missing tables, an nsys-style kernel table. Realistic traces come from
// TraceWriter (see tst_model_loader's writer test) and from tests/data.

#include "traceschema.h"

#include <QDir>
#include <QString>
#include <QtTest>
#include <map>
#include <sqlite3.h>
#include <string>

// Recorded traces to check the model against: every *.warpline and *.sqlite (nsys export) in
// tests/data, plus the files listed in WARPLINE_MODEL_TRACES (separated by ':'), so a test can be
// pointed at any trace without copying it.
inline QStringList recordedTraces() {
    QStringList files;
    const QDir data(QString::fromUtf8(WARPLINE_TEST_DATA));
    for (const QString& f : data.entryList({"*.warpline", "*.sqlite"}, QDir::Files, QDir::Name))
        files << data.filePath(f);
    files << qEnvironmentVariable("WARPLINE_MODEL_TRACES").split(':', Qt::SkipEmptyParts);
    return files;
}

// Runs `sql` on the SQLite file at `path` (an edit to a copy of a trace); "" on success, else
// SQLite's message.
inline std::string execSql(const QString& path, const std::string& sql) {
    sqlite3* db = nullptr;
    std::string error;
    if (sqlite3_open(path.toUtf8().constData(), &db) != SQLITE_OK) {
        error = db ? sqlite3_errmsg(db) : "cannot open";
    } else {
        char* message = nullptr;
        if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK)
            error = message ? message : "failed";
        sqlite3_free(message);
    }
    sqlite3_close(db);
    return error;
}

class TraceBuilder {
public:
    enum class Kind { Warpline, Nsys };

    // Creates `path` (replacing it) with the Warpline schema (the current user_version) or, for
    // Nsys, the tables of an nsys export: CUPTI_ACTIVITY_KIND_KERNEL as a real table, no WARPLINE_*
    // tables.
    explicit TraceBuilder(const QString& path, Kind kind = Kind::Warpline) : m_kind(kind) {
        QFile::remove(path);
        if (sqlite3_open(path.toUtf8().constData(), &m_db) != SQLITE_OK)
            qFatal("cannot create %s", qPrintable(path));
        exec(warpline::format::traceSchemaSql());
        exec("PRAGMA user_version=" + std::to_string(warpline::format::kFormatUserVersion));
        if (kind == Kind::Nsys) {
            exec("DROP VIEW CUPTI_ACTIVITY_KIND_KERNEL; DROP TABLE WARPLINE_KERNELS; "
                 "DROP TABLE WARPLINE_KERNEL_CONFIGS; DROP TABLE WARPLINE_META; "
                 "DROP TABLE WARPLINE_CONTEXTS; DROP TABLE WARPLINE_STREAM_NAMES; "
                 "DROP TABLE WARPLINE_OVERHEAD; DROP TABLE WARPLINE_DROPPED; "
                 "DROP TABLE WARPLINE_ERRORS; PRAGMA user_version=0;");
            exec("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT "
                 "NULL, deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId "
                 "INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER, "
                 "mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER, "
                 "registersPerThread INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX "
                 "INTEGER, blockY INTEGER, blockZ INTEGER, staticSharedMemory INTEGER, "
                 "dynamicSharedMemory INTEGER, localMemoryPerThread INTEGER, localMemoryTotal "
                 "INTEGER, gridId INTEGER, sharedMemoryExecuted INTEGER, graphNodeId INTEGER, "
                 "sharedMemoryLimitConfig INTEGER, graphId INTEGER, extraColumnNsysHas TEXT)");
        } else {
            exec("INSERT INTO WARPLINE_META VALUES ('format_version', '2.0'), "
                 "('status', 'complete')");
        }
        exec("BEGIN");
    }
    ~TraceBuilder() { close(); }
    TraceBuilder(const TraceBuilder&) = delete;
    TraceBuilder& operator=(const TraceBuilder&) = delete;

    static constexpr int64_t kPid = 4242;
    static constexpr int64_t globalPid(int64_t pid = kPid) { return pid * 0x1000000; }
    static constexpr int64_t globalTid(int64_t tid, int64_t pid = kPid) {
        return pid * 0x1000000 + tid;
    }

    void exec(const std::string& sql) {
        char* error = nullptr;
        if (sqlite3_exec(m_db, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
            const std::string message = error ? error : "?";
            sqlite3_free(error);
            qFatal("SQL failed: %s\n%s", message.c_str(), sql.c_str());
        }
    }

    // StringIds id of `text`, inserting it once (bound, so any text works).
    int64_t string(const std::string& text) {
        const auto it = m_strings.find(text);
        if (it != m_strings.end())
            return it->second;
        const int64_t id = static_cast<int64_t>(m_strings.size()) + 1;
        sqlite3_stmt* st = prepare("INSERT INTO StringIds VALUES (?, ?)");
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, text.c_str(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
        step(st);
        m_strings[text] = id;
        return id;
    }

    void process(const std::string& name, int64_t pid = kPid) {
        sqlite3_stmt* st = prepare("INSERT INTO PROCESSES VALUES (?, ?, ?)");
        sqlite3_bind_int64(st, 1, globalPid(pid));
        sqlite3_bind_int64(st, 2, pid);
        sqlite3_bind_text(st, 3, name.c_str(), -1, SQLITE_TRANSIENT);
        step(st);
    }

    void threadName(int64_t tid, const std::string& name) {
        exec("INSERT INTO ThreadNames VALUES (" + std::to_string(string(name)) + ", 0, " +
             std::to_string(globalTid(tid)) + ")");
    }

    struct Kernel {
        int64_t start = 0;
        int64_t end = 0;
        int64_t stream = 7;
        int64_t correlation = 0;
        std::string name = "void k()";
        int grid[3] = {1, 1, 1};
        int block[3] = {128, 1, 1};
        int64_t device = 0;
        int64_t context = 1;
        int64_t graphId = 0;
    };
    void kernel(const Kernel& k) {
        const int64_t nameId = string(k.name);
        if (m_kind == Kind::Nsys) {
            sqlite3_stmt* st = prepare(
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, "
                "streamId, correlationId, globalPid, demangledName, shortName, mangledName, "
                "registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, "
                "staticSharedMemory, dynamicSharedMemory, graphId, extraColumnNsysHas) VALUES "
                "(?,?,?,?,?,?,?,?,?,NULL,32,?,?,?,?,?,?,0,0,?,'x')");
            bindAll(st, {k.start, k.end, k.device, k.context, k.stream, k.correlation, globalPid(),
                         nameId, nameId, k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1],
                         k.block[2], k.graphId});
            step(st);
            return;
        }
        const std::string configKey = std::to_string(nameId) + "/" + std::to_string(k.grid[0]) +
                                      "/" + std::to_string(k.grid[1]) + "/" +
                                      std::to_string(k.grid[2]) + "/" + std::to_string(k.block[0]) +
                                      "/" + std::to_string(k.block[1]) + "/" +
                                      std::to_string(k.block[2]) + "/" + std::to_string(k.device) +
                                      "/" + std::to_string(k.context);
        auto it = m_configs.find(configKey);
        if (it == m_configs.end()) {
            const int64_t id = static_cast<int64_t>(m_configs.size()) + 1;
            sqlite3_stmt* st = prepare(
                "INSERT INTO WARPLINE_KERNEL_CONFIGS (id, deviceId, contextId, demangledName, "
                "shortName, mangledName, launchType, cacheConfig, registersPerThread, gridX, "
                "gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory) "
                "VALUES (?,?,?,?,?,NULL,0,0,32,?,?,?,?,?,?,0,0)");
            bindAll(st, {id, k.device, k.context, nameId, nameId, k.grid[0], k.grid[1], k.grid[2],
                         k.block[0], k.block[1], k.block[2]});
            step(st);
            it = m_configs.emplace(configKey, id).first;
        }
        sqlite3_stmt* st = prepare("INSERT INTO WARPLINE_KERNELS VALUES (?,?,?,?,?,NULL,NULL,?)");
        bindAll(st, {k.start, k.end, k.stream, k.correlation, it->second, k.graphId});
        if (k.graphId == 0)
            sqlite3_bind_null(st, 6);
        step(st);
    }

    // eventClass 0 is a CUDA runtime call, 1 a driver call (ENUM_NSYS_EVENT_CLASS).
    void runtime(int64_t start, int64_t end, int64_t tid, int64_t correlation,
                 const std::string& name, int64_t eventClass = 0,
                 const char* table = "CUPTI_ACTIVITY_KIND_RUNTIME") {
        sqlite3_stmt* st =
            prepare(std::string("INSERT INTO ") + table + " VALUES (?, ?, ?, ?, ?, ?, 0, NULL)");
        bindAll(st, {start, end, eventClass, globalTid(tid), correlation, string(name)});
        step(st);
    }
    void driver(int64_t start, int64_t end, int64_t tid, int64_t correlation,
                const std::string& name) {
        runtime(start, end, tid, correlation, name, 1);
    }
    // A driver call as Warpline 1.x wrote it: in a CUPTI_ACTIVITY_KIND_DRIVER table of its own.
    void legacyDriver(int64_t start, int64_t end, int64_t tid, int64_t correlation,
                      const std::string& name) {
        exec("CREATE TABLE IF NOT EXISTS CUPTI_ACTIVITY_KIND_DRIVER AS SELECT * FROM "
             "CUPTI_ACTIVITY_KIND_RUNTIME WHERE 0");
        runtime(start, end, tid, correlation, name, 0, "CUPTI_ACTIVITY_KIND_DRIVER");
    }

    void memcpy(int64_t start, int64_t end, int64_t stream, int64_t correlation, int64_t bytes,
                int64_t copyKind) {
        sqlite3_stmt* st = prepare("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES "
                                   "(?, ?, 0, 1, ?, ?, ?, ?, ?, 1, 3, NULL)");
        bindAll(st, {start, end, stream, correlation, globalPid(), bytes, copyKind});
        step(st);
    }
    void memset(int64_t start, int64_t end, int64_t stream, int64_t correlation, int64_t bytes) {
        sqlite3_stmt* st = prepare("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES "
                                   "(?, ?, 0, 1, ?, ?, ?, 0, ?, NULL, 3)");
        bindAll(st, {start, end, stream, correlation, globalPid(), bytes});
        step(st);
    }

    // eventType 59 push/pop, 60 start/end, 34 mark; end < 0 writes NULL (never closed).
    // Text goes inline or, with viaStringIds, through textId.
    void nvtx(int64_t eventType, int64_t start, int64_t end, int64_t tid, const std::string& text,
              bool viaStringIds = false, int64_t domainId = 0) {
        sqlite3_stmt* st =
            prepare("INSERT INTO NVTX_EVENTS (start, end, eventType, text, textId, globalTid, "
                    "color, domainId) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
        bindAll(st, {start, end, eventType, 0, 0, globalTid(tid), 0xFF00FF00, domainId});
        if (end < 0)
            sqlite3_bind_null(st, 2);
        if (viaStringIds) {
            sqlite3_bind_null(st, 4);
            sqlite3_bind_int64(st, 5, string(text));
        } else {
            sqlite3_bind_text(st, 4, text.c_str(), -1, SQLITE_TRANSIENT);
            sqlite3_bind_null(st, 5);
        }
        step(st);
    }
    void nvtxDomain(int64_t domainId, const std::string& name) {
        sqlite3_stmt* st = prepare("INSERT INTO NVTX_EVENTS (start, eventType, text, domainId) "
                                   "VALUES (0, 75, ?, ?)");
        sqlite3_bind_text(st, 1, name.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 2, domainId);
        step(st);
    }

    void close() {
        if (!m_db)
            return;
        exec("COMMIT");
        sqlite3_close(m_db);
        m_db = nullptr;
    }

private:
    sqlite3_stmt* prepare(const std::string& sql) {
        sqlite3_stmt* st = nullptr;
        if (sqlite3_prepare_v2(m_db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
            qFatal("bad SQL %s: %s", sql.c_str(), sqlite3_errmsg(m_db));
        return st;
    }
    void bindAll(sqlite3_stmt* st, std::initializer_list<int64_t> values) {
        int i = 1;
        for (const int64_t v : values)
            sqlite3_bind_int64(st, i++, v);
    }
    void step(sqlite3_stmt* st) {
        if (sqlite3_step(st) != SQLITE_DONE)
            qFatal("insert failed: %s", sqlite3_errmsg(m_db));
        sqlite3_finalize(st);
    }

    sqlite3* m_db = nullptr;
    Kind m_kind;
    std::map<std::string, int64_t> m_strings;
    std::map<std::string, int64_t> m_configs;
};
