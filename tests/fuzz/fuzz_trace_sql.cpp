// libFuzzer target, structure-aware: the fuzz input is a program of SQL-level edits applied to a
// real recorded trace (tests/data), which is then loaded and run through every report.
//
// Raw bytes rarely get past SQLite's page checks (fuzz_trace.cpp covers that); edits to a valid
// file reach the loader and the analyses with the damage a trace file can really carry: NULLs,
// negative and huge numbers, end before start, duplicated and missing correlation ids, dangling
// string ids, megabyte and control-character names, dropped tables and columns, other format
// versions, and the shapes of a crafted file: a table replaced by a view (an endless recursive
// CTE, a cross-join fan-out), triggers, a column the file computes (a virtual generated column),
// thousands of rows sharing one correlation id. The input's bytes choose the base trace, tables,
// columns, rows and values; table and column names come from the trace's own schema and every value
// is bound, so the edits are always well-formed SQL (some fail, e.g. on a view: they are skipped).
//
// WARPLINE_FUZZ_BASE: directory of base traces (default: tests/data).
// WARPLINE_FUZZ_VERBOSE=1: print the base and each edit, to turn a finding into a test.

#include "fuzzrun.h"

#include <cstring>
#include <dirent.h>
#include <fstream>
#include <fuzzer/FuzzedDataProvider.h>
#include <iostream>
#include <iterator>
#include <limits>
#include <sqlite3.h>
#include <string>
#include <vector>

namespace {

struct TableInfo {
    std::string name;
    bool view = false;
    std::vector<std::string> columns;
    int64_t maxRowid = 0;
};

struct Base {
    std::string name;
    std::vector<uint8_t> bytes; // serialized database
    std::vector<TableInfo> tables;
};

std::vector<Base> g_bases;
bool g_verbose = false;

bool execOk(sqlite3* db, const std::string& sql) {
    return sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK;
}

std::string quoted(const std::string& name) {
    return "\"" + name + "\"";
}

std::vector<uint8_t> serialize(sqlite3* db) {
    sqlite3_int64 size = 0;
    unsigned char* data = sqlite3_serialize(db, "main", &size, 0);
    std::vector<uint8_t> bytes;
    if (data)
        bytes.assign(data, data + size);
    sqlite3_free(data);
    return bytes;
}

// An in-memory copy of serialized bytes; nullptr on failure.
sqlite3* deserialize(const std::vector<uint8_t>& bytes) {
    sqlite3* db = nullptr;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK) {
        sqlite3_close(db);
        return nullptr;
    }
    auto* copy = static_cast<unsigned char*>(sqlite3_malloc64(bytes.size()));
    std::memcpy(copy, bytes.data(), bytes.size());
    if (sqlite3_deserialize(db, "main", copy, static_cast<sqlite3_int64>(bytes.size()),
                            static_cast<sqlite3_int64>(bytes.size()),
                            SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_RESIZEABLE) !=
        SQLITE_OK) {
        sqlite3_close(db);
        return nullptr;
    }
    return db;
}

std::vector<TableInfo> describe(sqlite3* db) {
    std::vector<TableInfo> tables;
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db,
                       "SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') AND "
                       "name NOT LIKE 'sqlite_%' ORDER BY name",
                       -1, &st, nullptr);
    while (sqlite3_step(st) == SQLITE_ROW) {
        TableInfo t;
        t.name = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
        t.view =
            std::strcmp(reinterpret_cast<const char*>(sqlite3_column_text(st, 1)), "view") == 0;
        tables.push_back(t);
    }
    sqlite3_finalize(st);
    for (TableInfo& t : tables) {
        sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info(?1)", -1, &st, nullptr);
        sqlite3_bind_text(st, 1, t.name.c_str(), -1, SQLITE_TRANSIENT);
        while (sqlite3_step(st) == SQLITE_ROW)
            t.columns.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
        sqlite3_finalize(st);
        if (!t.view && sqlite3_prepare_v2(db, ("SELECT MAX(rowid) FROM " + quoted(t.name)).c_str(),
                                          -1, &st, nullptr) == SQLITE_OK) {
            if (sqlite3_step(st) == SQLITE_ROW)
                t.maxRowid = sqlite3_column_int64(st, 0);
            sqlite3_finalize(st);
        }
    }
    return tables;
}

// The trace with every table rebuilt without constraints (NOT NULL, primary keys, WITHOUT
// ROWID), so that edits can put anything anywhere, as a damaged or foreign file can; with
// `rows` >= 0, only the first `rows` rows of each table are kept: small bases make many more
// runs per second and the edits reach the same code.
std::vector<uint8_t> loosened(const std::vector<uint8_t>& bytes, int rows) {
    sqlite3* db = deserialize(bytes);
    if (!db)
        return {};
    // Views (CUPTI_ACTIVITY_KIND_KERNEL) name their tables; legacy renames leave them alone.
    execOk(db, "PRAGMA legacy_alter_table=ON");
    const std::string limit = rows >= 0 ? " LIMIT " + std::to_string(rows) : "";
    for (const TableInfo& t : describe(db)) {
        if (t.view)
            continue;
        const std::string loose = quoted(t.name + "__loose");
        execOk(db, "CREATE TABLE " + loose + " AS SELECT * FROM " + quoted(t.name) + limit);
        execOk(db, "DROP TABLE " + quoted(t.name));
        execOk(db, "ALTER TABLE " + loose + " RENAME TO " + quoted(t.name));
    }
    execOk(db, "VACUUM");
    std::vector<uint8_t> out = serialize(db);
    sqlite3_close(db);
    return out;
}

void addBase(const std::string& name, std::vector<uint8_t> bytes) {
    sqlite3* db = deserialize(bytes);
    if (!db)
        return;
    Base b;
    b.name = name;
    b.tables = describe(db);
    sqlite3_close(db);
    b.bytes = std::move(bytes);
    g_bases.push_back(std::move(b));
}

// A value the edit binds: every kind of damage a column can carry.
struct Value {
    enum Kind { Null, Int, Real, Text, Blob } kind = Null;
    int64_t i = 0;
    double r = 0;
    std::string s;

    void bind(sqlite3_stmt* st, int index) const {
        switch (kind) {
        case Null:
            sqlite3_bind_null(st, index);
            break;
        case Int:
            sqlite3_bind_int64(st, index, i);
            break;
        case Real:
            sqlite3_bind_double(st, index, r);
            break;
        case Text:
            sqlite3_bind_text64(st, index, s.data(), s.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
            break;
        case Blob:
            sqlite3_bind_blob64(st, index, s.data(), s.size(), SQLITE_TRANSIENT);
            break;
        }
    }
    std::string describe() const {
        switch (kind) {
        case Null:
            return "NULL";
        case Int:
            return std::to_string(i);
        case Real:
            return std::to_string(r);
        case Text:
            return s.size() > 64 ? "text of " + std::to_string(s.size()) + " bytes" : "'" + s + "'";
        case Blob:
            return "blob of " + std::to_string(s.size()) + " bytes";
        }
        return "?";
    }
};

Value makeValue(FuzzedDataProvider& in) {
    static const int64_t kSpecial[] = {std::numeric_limits<int64_t>::min(),
                                       std::numeric_limits<int64_t>::max(),
                                       std::numeric_limits<int64_t>::min() + 1,
                                       std::numeric_limits<int64_t>::max() - 1,
                                       std::numeric_limits<int32_t>::max(),
                                       int64_t(std::numeric_limits<int32_t>::max()) + 1,
                                       std::numeric_limits<int32_t>::min(),
                                       std::numeric_limits<uint32_t>::max(),
                                       int64_t(std::numeric_limits<uint32_t>::max()) + 1,
                                       int64_t(1) << 24,
                                       (int64_t(1) << 24) - 1,
                                       int64_t(1) << 53,
                                       int64_t(1) << 62,
                                       -(int64_t(1) << 62),
                                       -1,
                                       0,
                                       1,
                                       34,
                                       59,
                                       60,
                                       75,
                                       100,
                                       199,
                                       200};
    using namespace std::string_literals;
    static const std::string kTexts[] = {"<b>x</b>\n\x07"s,
                                         ""s,
                                         "recording"s,
                                         "complete"s,
                                         "incomplete"s,
                                         "failed"s,
                                         "\xff\xfe\xfd"s,
                                         "a\0b"s,
                                         "\xe2\x80\xae"
                                         "evil"s,
                                         "1.0"s,
                                         "2.0"s,
                                         "-5"s};
    Value v;
    switch (in.ConsumeIntegralInRange(0, 8)) {
    case 0:
        break;
    case 1:
        v.kind = Value::Int;
        v.i = in.ConsumeIntegralInRange<int64_t>(-16, 16);
        break;
    case 2:
        v.kind = Value::Int;
        v.i = in.PickValueInArray(kSpecial);
        break;
    case 3:
        v.kind = Value::Int;
        v.i = in.ConsumeIntegral<int64_t>();
        break;
    case 4:
        v.kind = Value::Text;
        v.s = in.ConsumeRandomLengthString(64);
        break;
    case 5:
        v.kind = Value::Text;
        v.s = in.PickValueInArray(kTexts);
        break;
    case 6: {
        v.kind = Value::Text;
        const size_t size = in.ConsumeIntegralInRange<size_t>(1, 3u << 20);
        v.s.assign(size, in.ConsumeIntegral<char>());
        break;
    }
    case 7: {
        static const double kReals[] = {0.5,
                                        -0.0,
                                        1e300,
                                        -1e300,
                                        9.3e18,
                                        -9.3e18,
                                        std::numeric_limits<double>::infinity(),
                                        std::numeric_limits<double>::quiet_NaN()};
        v.kind = Value::Real;
        v.r = in.PickValueInArray(kReals);
        break;
    }
    default:
        v.kind = Value::Blob;
        v.s = in.ConsumeRandomLengthString(16);
        break;
    }
    return v;
}

// Rows an edit applies to: one row, every k-th row, a tail, or all.
struct Selector {
    std::string where;
    int64_t arg = 0;
};

Selector makeSelector(FuzzedDataProvider& in, const TableInfo& t) {
    const int64_t rows = std::max<int64_t>(t.maxRowid, 1);
    switch (in.ConsumeIntegralInRange(0, 4)) {
    case 0:
    case 1:
        return {"rowid = ?", in.ConsumeIntegralInRange<int64_t>(1, rows)};
    case 2:
        return {"rowid % ? = 0", in.ConsumeIntegralInRange<int64_t>(2, 16)};
    case 3:
        return {"rowid > ?", in.ConsumeIntegralInRange<int64_t>(0, rows)};
    default:
        return {"?", 1};
    }
}

void run(sqlite3* db, const std::string& sql, const Value* value, const Selector& where,
         int64_t extra = 0) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
        if (g_verbose)
            std::cerr << "  (not prepared: " << sqlite3_errmsg(db) << ") " << sql << "\n";
        return;
    }
    int index = 0;
    if (value)
        value->bind(st, ++index);
    if (sql.find("?x") != std::string::npos)
        sqlite3_bind_int64(st, sqlite3_bind_parameter_index(st, "?x"), extra);
    sqlite3_bind_int64(st, sqlite3_bind_parameter_count(st), where.arg);
    const int rc = sqlite3_step(st);
    if (g_verbose)
        std::cerr << "  " << sql << "  -- value " << (value ? value->describe() : "-") << ", extra "
                  << extra << ", where arg " << where.arg
                  << (rc == SQLITE_DONE ? "" : std::string(" (failed: ") + sqlite3_errmsg(db) + ")")
                  << "\n";
    sqlite3_finalize(st);
}

// Inputs that start with kV2 choose among the edits added with the crafted-file shapes (views,
// triggers, generated columns, fan-out); older inputs decode as they did when they were found, so
// the regression inputs keep replaying the same edits.
constexpr char kV2[] = "WLv2";

void applyEdit(sqlite3* db, FuzzedDataProvider& in, const Base& base, bool v2) {
    const TableInfo& t = base.tables[in.ConsumeIntegralInRange<size_t>(0, base.tables.size() - 1)];
    if (t.columns.empty())
        return;
    const std::string table = quoted(t.name);
    const std::string& column =
        t.columns[in.ConsumeIntegralInRange<size_t>(0, t.columns.size() - 1)];
    Selector where = makeSelector(in, t);
    // Megabyte values go to one row: in every row they only make the table writers slow (linear
    // in the output, tens of seconds under the sanitizers), which hides the fuzzer's other work.
    const auto oneRowIfHuge = [&](const Value& v) {
        if (v.s.size() > 65536 && where.where != "rowid = ?")
            where = {"rowid = ?", 1};
    };
    const auto editName = [&] {
        const Value v = makeValue(in);
        oneRowIfHuge(v);
        run(db, "UPDATE StringIds SET value = ? WHERE " + where.where, &v, where);
    };
    switch (in.ConsumeIntegralInRange(0, v2 ? 12 : 11)) {
    case 0:
    case 1:
    case 2:
    case 3: { // a damaged value
        const Value v = makeValue(in);
        oneRowIfHuge(v);
        run(db, "UPDATE " + table + " SET " + quoted(column) + " = ? WHERE " + where.where, &v,
            where);
        break;
    }
    case 4: // rows gone: dangling ids, missing launches
        run(db, "DELETE FROM " + table + " WHERE " + where.where, nullptr, where);
        break;
    case 5: // duplicated rows: duplicate correlation ids, string ids, configs (at most 1000 at a
            // time: 22 doublings of a table are 4 million times its rows, and out of memory)
        run(db,
            "INSERT INTO " + table + " SELECT * FROM " + table + " WHERE " + where.where +
                " LIMIT 1000",
            nullptr, where);
        break;
    case 6: { // one column from another, shifted: end before start, ids that point elsewhere
        const std::string& other =
            t.columns[in.ConsumeIntegralInRange<size_t>(0, t.columns.size() - 1)];
        run(db,
            "UPDATE " + table + " SET " + quoted(column) + " = " + quoted(other) + " + ?x WHERE " +
                where.where,
            nullptr, where, in.ConsumeIntegralInRange<int64_t>(-1000000, 1000000));
        break;
    }
    case 7: // a value copied from another row: duplicates
        run(db,
            "UPDATE " + table + " SET " + quoted(column) + " = (SELECT " + quoted(column) +
                " FROM " + table + " WHERE rowid = ?x) WHERE " + where.where,
            nullptr, where,
            in.ConsumeIntegralInRange<int64_t>(1, std::max<int64_t>(t.maxRowid, 1)));
        break;
    case 8: // schema damage
        switch (in.ConsumeIntegralInRange(0, v2 ? 5 : 2)) {
        case 0:
            execOk(db, std::string(t.view ? "DROP VIEW " : "DROP TABLE ") + table);
            if (g_verbose)
                std::cerr << "  DROP " << table << "\n";
            break;
        case 1:
            execOk(db, "ALTER TABLE " + table + " DROP COLUMN " + quoted(column));
            if (g_verbose)
                std::cerr << "  ALTER TABLE " << table << " DROP COLUMN " << column << "\n";
            break;
        case 2:
            execOk(db, "ALTER TABLE " + table + " RENAME TO " + quoted(t.name + "_old"));
            if (g_verbose)
                std::cerr << "  ALTER TABLE " << table << " RENAME\n";
            break;
        case 3: { // the table becomes a view of itself: endless, fanned out, or a plain copy
            static const char* const kViews[] = {
                (" AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT "
                 "t.* FROM @ t, c WHERE x < 0"),
                " AS SELECT a.* FROM @ a, @ b, @ c, @ d, @ e, @ f", " AS SELECT * FROM @"};
            std::string body = in.PickValueInArray(kViews);
            const std::string stored = quoted(t.name + "__stored");
            for (size_t at; (at = body.find('@')) != std::string::npos;)
                body.replace(at, 1, stored);
            if (!t.view && execOk(db, "ALTER TABLE " + table + " RENAME TO " + stored))
                execOk(db, "CREATE VIEW " + table + body);
            if (g_verbose)
                std::cerr << "  CREATE VIEW " << table << body << "\n";
            break;
        }
        case 4: { // triggers: a reader never fires them
            const std::string sql = "CREATE TRIGGER " + quoted(t.name + "_trigger") +
                                    " AFTER UPDATE ON " + table + " BEGIN DELETE FROM " + table +
                                    "; END";
            execOk(db, sql);
            if (g_verbose)
                std::cerr << "  " << sql << "\n";
            break;
        }
        default: { // the column computed by the file's SQL (a virtual generated column)
            const std::string stored = quoted(column + "__stored");
            const std::string sql = "ALTER TABLE " + table + " RENAME COLUMN " + quoted(column) +
                                    " TO " + stored + "; ALTER TABLE " + table + " ADD COLUMN " +
                                    quoted(column) + " AS (" + stored +
                                    " + length(hex(zeroblob(100000)))) VIRTUAL";
            execOk(db, sql);
            if (g_verbose)
                std::cerr << "  " << sql << "\n";
            break;
        }
        }
        break;
    case 9: { // another format version
        const int64_t v = in.ConsumeIntegralInRange<int64_t>(-5, 1000);
        execOk(db, "PRAGMA user_version=" + std::to_string(v));
        if (g_verbose)
            std::cerr << "  PRAGMA user_version=" << v << "\n";
        break;
    }
    case 10: // one row a thousand times: a huge fan-out of one correlation id
        if (!v2) {
            editName(); // before v2, case 10 was a name as well
            break;
        }
        run(db,
            "INSERT INTO " + table + " SELECT t.* FROM " + table +
                " t, (WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < "
                "1000) SELECT n FROM c) WHERE t.rowid = ?",
            nullptr, {"rowid = ?", where.arg});
        break;
    default: // names: the strings every view shows
        editName();
        break;
    }
}

std::vector<uint8_t> readAll(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    g_verbose = std::getenv("WARPLINE_FUZZ_VERBOSE") != nullptr;
    const char* env = std::getenv("WARPLINE_FUZZ_BASE");
    const std::string dir = env ? env : WARPLINE_TEST_DATA;
    // The smaller recorded traces; every edit kind applies to each.
    for (const char* name :
         {"gelu", "matmul", "softmax", "streams", "runahead", "sync-stall", "graphs", "mlp"}) {
        const std::vector<uint8_t> bytes = readAll(dir + "/" + name + ".warpline");
        if (bytes.empty())
            continue;
        addBase(std::string(name) + " (loose, first 40 rows per table)", loosened(bytes, 40));
        addBase(std::string(name) + " (loose)", loosened(bytes, -1));
    }
    if (g_bases.empty()) {
        std::fprintf(stderr, "fuzz_trace_sql: no base traces in %s (set WARPLINE_FUZZ_BASE)\n",
                     dir.c_str());
        std::exit(1);
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::string path = warpline::fuzz::scratchPath("sql");
    const bool v2 = size >= 4 && std::memcmp(data, kV2, 4) == 0;
    if (v2) {
        data += 4;
        size -= 4;
    }
    FuzzedDataProvider in(data, size);
    // Trimmed bases (even indices) most of the time: full ones are slower to load and report.
    size_t b = in.ConsumeIntegralInRange<size_t>(0, g_bases.size() - 1);
    if (b % 2 == 1 && in.ConsumeIntegralInRange(0, 3) != 0)
        b -= 1;
    const Base& base = g_bases[b];
    if (g_verbose)
        std::cerr << "base " << base.name << "\n";
    sqlite3* db = deserialize(base.bytes);
    if (!db)
        std::abort();
    for (int edits = 0; edits < 32 && in.remaining_bytes() > 0; ++edits)
        applyEdit(db, in, base, v2);
    const std::vector<uint8_t> bytes = serialize(db);
    sqlite3_close(db);
    if (!warpline::fuzz::writeFile(path, bytes.data(), bytes.size()))
        std::abort();
    warpline::fuzz::runEverything(path);
    return 0;
}
