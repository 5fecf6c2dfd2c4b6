#include "traceupgrade.h"

#include "outputfile.h"
#include "tracedatabase.h"
#include "traceerror.h"
#include "traceloader.h"
#include "traceschema.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <sqlite3.h>
#include <stdexcept>
#include <unistd.h>

namespace warpline::model {

namespace {

namespace fs = std::filesystem;
using Db = std::unique_ptr<sqlite3, int (*)(sqlite3*)>;

// The file is untrusted: no code from its schema (views, triggers) runs with side effects.
void configure(sqlite3* db) {
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
    sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
}

Db open(const std::string& path, int flags) {
    sqlite3* db = nullptr;
    const int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
    Db out(db, sqlite3_close);
    if (rc != SQLITE_OK)
        throw TraceError(TraceError::Kind::NotFound,
                         "cannot open " + path + ": " +
                             (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
    configure(db);
    return out;
}

// The file to upgrade, read through TraceDatabase: SQLite writes, creates and deletes nothing
// beside it, whatever a journal or WAL there says.
struct Source {
    TraceDatabase database;
    Db db{nullptr, sqlite3_close};

    explicit Source(const std::string& path) : database(path, fs::path(path).filename().string()) {
        db.reset(database.open());
        if (TraceDatabase::needsRollback(db.get())) {
            db.reset();
            database.rollBack();
            db.reset(database.open());
        }
        configure(db.get());
    }
};

// "a trigger named x" when the file's schema has a trigger, a view other than Warpline's kernel
// view, or a virtual table (a table without pages of its own, rootpage 0); "" when it has none.
std::string foreignSchema(sqlite3* db) {
    sqlite3_stmt* st = nullptr;
    std::string found;
    if (sqlite3_prepare_v2(
            db,
            "SELECT CASE WHEN type = 'table' THEN 'virtual table' ELSE type END, "
            "name FROM sqlite_master WHERE type = 'trigger' OR (type = 'view' AND "
            "name <> 'CUPTI_ACTIVITY_KIND_KERNEL') OR (type = 'table' AND rootpage = 0) "
            "LIMIT 1",
            -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        found = std::string("a ") + reinterpret_cast<const char*>(sqlite3_column_text(st, 0)) +
                " named " + reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
    sqlite3_finalize(st);
    return found;
}

int64_t userVersion(sqlite3* db) {
    sqlite3_stmt* st = nullptr;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

bool hasTable(sqlite3* db, const char* name) {
    sqlite3_stmt* st = nullptr;
    bool found = false;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", -1,
                           &st, nullptr) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return found;
}

void exec(sqlite3* db, const std::string& sql, const std::string& what) {
    char* error = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
        const std::string message = error ? error : sqlite3_errmsg(db);
        sqlite3_free(error);
        throw std::runtime_error("cannot upgrade " + what + ": " + message);
    }
}

// A format 1.x Warpline trace: user_version 100..199 and the tables 1.x wrote.
bool isFormat1(sqlite3* db) {
    const int64_t v = userVersion(db);
    return v / 100 == 1 && hasTable(db, "WARPLINE_META") &&
           hasTable(db, "CUPTI_ACTIVITY_KIND_DRIVER") && hasTable(db, "TARGET_INFO_GPU") &&
           hasTable(db, "CUPTI_ACTIVITY_KIND_RUNTIME");
}

} // namespace

bool TraceUpgrade::needsUpgrade(const std::string& path) {
    try {
        const Source source(path);
        return isFormat1(source.db.get());
    } catch (const TraceError&) {
        return false;
    }
}

void TraceUpgrade::upgrade(const std::string& from, const std::string& to, bool overwrite) {
    const Source source(from);
    {
        sqlite3* db = source.db.get();
        const int64_t v = userVersion(db);
        if (!isFormat1(db))
            throw TraceError(TraceError::Kind::NotATrace,
                             from + (v / 100 == TraceLoader::kMaxFormatMajor
                                         ? " is a trace of the current format already"
                                         : " is not a Warpline trace of format 1.x"));
        // Upgrading runs SQL over a copy: a trigger would run the file's own code on each write,
        // a view or virtual table its own query. No recording has them besides the kernel view.
        if (const std::string foreign = foreignSchema(db); !foreign.empty())
            throw TraceError(TraceError::Kind::NotATrace,
                             from + " has " + foreign +
                                 ", which no Warpline recording has: it was edited after "
                                 "recording, and is not upgraded (upgrading would run it)");
    }
    // Copy, upgrade and compact a temporary file next to `to`, then rename it into place.
    format::OutputFile output(to, overwrite);
    const std::string& temp = output.tempPath();
    source.database.copyTo(temp);
    {
        const Db db = open(temp, SQLITE_OPEN_READWRITE);
        exec(db.get(), "BEGIN", from);
        exec(db.get(), format::traceUpgradeSql(), from);
        exec(db.get(), "PRAGMA user_version = " + std::to_string(format::kFormatUserVersion), from);
        exec(db.get(), format::traceIndexSql(), from);
        exec(db.get(), "COMMIT", from);
        exec(db.get(), "VACUUM", from);
    }
    output.commit();
}

} // namespace warpline::model
