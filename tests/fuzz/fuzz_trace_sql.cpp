// libFuzzer target, structure-aware: the fuzz input is a program of SQL-level edits applied to a
// real recorded trace (tests/data), which is then loaded and run through every report.
//
// Raw bytes rarely get past SQLite's page checks (fuzz_trace.cpp covers that); edits to a valid
// file reach the loader and the analyses with the damage a trace file can really carry: NULLs,
// negative and huge numbers, end before start, duplicated and missing correlation ids, dangling
// string ids, megabyte and control-character names, dropped tables and columns, other format
// versions, and the shapes of a crafted file: a table replaced by a view (an endless recursive
// CTE, a cross-join fan-out), triggers, a column the file computes (a virtual generated column),
// thousands of rows sharing one correlation id.
//
// The input's bytes choose the base trace and, per edit, its kind, then its table and column from
// the file as the edits so far left it (a row edit goes to a stored table and a stored column, a
// dropped table is no longer chosen), then rows and values. Every edit is well-formed SQL for the
// file it applies to, and every value is bound: an edit that fails is a bug of this harness, and
// aborts the run (before issue 33, two edit kinds bound "?x", which SQLite rejects, and the edits
// of views failed: both were skipped without a word).
//
// WARPLINE_FUZZ_BASE: directory of base traces (default: tests/data as the build unpacks it).
// WARPLINE_FUZZ_VERBOSE=1: print the base, each edit and what the loader made of the file.
// WARPLINE_FUZZ_KEEP=FILE: also write the edited trace to FILE (tests/fuzz/check_regressions.py).
// WARPLINE_FUZZ_SCRIPT=FILE: the input is a script instead, its words naming each choice in the
//   order the harness makes them (a base, then per edit its kind, table, column, rows, value...;
//   "#3" is the fourth option); the harness applies it and writes to FILE the input bytes that
//   make the same choices. This is how a regression input is made for a given condition.

#include "fuzzrun.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <fuzzer/FuzzedDataProvider.h>
#include <iostream>
#include <iterator>
#include <limits>
#include <memory>
#include <sqlite3.h>
#include <sstream>
#include <string>
#include <vector>

namespace {

// Where the edits' choices come from: the fuzzer's bytes, or a script.
class Choices {
public:
    virtual ~Choices() = default;
    virtual int64_t number(int64_t min, int64_t max) = 0; // in [min, max]
    virtual size_t pick(const std::vector<std::string>& options) = 0;
    virtual std::string text(size_t maxLength) = 0;
    virtual bool done() = 0; // no choice is left: the program ends
};

class BytesChoices : public Choices {
public:
    BytesChoices(const uint8_t* data, size_t size) : m_in(data, size) {}
    int64_t number(int64_t min, int64_t max) override {
        return m_in.ConsumeIntegralInRange<int64_t>(min, max);
    }
    size_t pick(const std::vector<std::string>& options) override {
        return static_cast<size_t>(number(0, static_cast<int64_t>(options.size()) - 1));
    }
    std::string text(size_t maxLength) override {
        return m_in.ConsumeRandomLengthString(maxLength);
    }
    bool done() override { return m_in.remaining_bytes() == 0; }

private:
    FuzzedDataProvider m_in;
};

// Takes each choice from the next word of a script, and records the bytes FuzzedDataProvider
// needs to make the same choice: numbers are read from the end of the input, most significant
// byte first; texts from its start, "\" doubled and a "\" plus another byte ending them.
class ScriptChoices : public Choices {
public:
    explicit ScriptChoices(const std::string& script) {
        std::istringstream words(script);
        for (std::string w; words >> w;)
            m_words.push_back(w);
    }
    int64_t number(int64_t min, int64_t max) override {
        const std::string w =
            next("a number in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
        int64_t v = 0;
        try {
            size_t used = 0;
            v = std::stoll(w, &used);
            if (used != w.size())
                throw std::invalid_argument(w);
        } catch (const std::exception&) {
            fail("\"" + w + "\" is not a number");
        }
        if (v < min || v > max)
            fail(w + " is not in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
        encode(min, max, v);
        return v;
    }
    size_t pick(const std::vector<std::string>& options) override {
        std::string all;
        for (const std::string& o : options)
            all += (all.empty() ? "" : " | ") + o;
        const std::string w = next("one of: " + all);
        size_t index = options.size();
        if (w.size() > 1 && w[0] == '#')
            index = std::stoul(w.substr(1));
        else
            index =
                static_cast<size_t>(std::find(options.begin(), options.end(), w) - options.begin());
        if (index >= options.size())
            fail("\"" + w + "\" is not one of: " + all);
        encode(0, static_cast<int64_t>(options.size()) - 1, static_cast<int64_t>(index));
        return index;
    }
    std::string text(size_t maxLength) override {
        std::string w = next("a text");
        if (w == "''")
            w.clear();
        if (w.size() > maxLength)
            fail("\"" + w + "\" is longer than " + std::to_string(maxLength));
        for (const char c : w) {
            m_front.push_back(static_cast<uint8_t>(c));
            if (c == '\\')
                m_front.push_back('\\');
        }
        if (w.size() < maxLength) {
            m_front.push_back('\\');
            m_front.push_back('.');
        }
        return w;
    }
    bool done() override { return m_next == m_words.size(); }

    std::vector<uint8_t> bytes() const {
        std::vector<uint8_t> out = m_front;
        out.insert(out.end(), m_back.rbegin(), m_back.rend());
        return out;
    }

private:
    std::string next(const std::string& wanted) {
        if (m_next == m_words.size())
            fail("the script ends where " + wanted + " is wanted");
        return m_words[m_next++];
    }
    [[noreturn]] void fail(const std::string& why) {
        std::fprintf(stderr, "fuzz_trace_sql: script word %zu: %s\n", m_next, why.c_str());
        std::exit(2);
    }
    void encode(int64_t min, int64_t max, int64_t v) {
        const uint64_t range = static_cast<uint64_t>(max) - static_cast<uint64_t>(min);
        const uint64_t offset = static_cast<uint64_t>(v) - static_cast<uint64_t>(min);
        int bytes = 0;
        while (bytes < 8 && (range >> (8 * bytes)) > 0)
            ++bytes;
        for (int i = bytes - 1; i >= 0; --i)
            m_back.push_back(static_cast<uint8_t>(offset >> (8 * i)));
    }

    std::vector<std::string> m_words;
    size_t m_next = 0;
    std::vector<uint8_t> m_front, m_back; // m_back in the order it is read (from the end)
};

struct ColumnInfo {
    std::string name;
    std::string type;
    bool generated = false;
};

struct TableInfo {
    std::string name;
    bool view = false;
    std::vector<ColumnInfo> columns;
    int64_t maxRowid = 0;

    std::vector<std::string> storedColumns() const {
        std::vector<std::string> names;
        for (const ColumnInfo& c : columns) {
            if (!c.generated)
                names.push_back(c.name);
        }
        return names;
    }
};

struct Base {
    std::string workload;
    bool trimmed = false;
    std::vector<uint8_t> bytes; // serialized database
};

std::vector<Base> g_bases;
bool g_verbose = false;

[[noreturn]] void editFailed(sqlite3* db, const std::string& sql) {
    std::fprintf(stderr, "fuzz_trace_sql: an edit failed: %s\n  %s\n", sqlite3_errmsg(db),
                 sql.c_str());
    std::abort();
}

bool execOk(sqlite3* db, const std::string& sql) {
    return sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK;
}

// An edit of the schema: it must apply.
void mustExec(sqlite3* db, const std::string& sql) {
    if (g_verbose)
        std::cerr << "  " << sql << "\n";
    if (!execOk(db, sql))
        editFailed(db, sql);
}

std::string quoted(const std::string& name) {
    std::string q = "\"";
    for (const char c : name)
        q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
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
    // Renames leave views and triggers as they are (a file's broken view is damage too), and
    // never check the schema, which an earlier edit may have left with a view of nothing.
    execOk(db, "PRAGMA legacy_alter_table=ON");
    return db;
}

// The tables and views of the file as it is now, by name.
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
        // A view over a dropped table has no columns to tell (it is only ever dropped).
        if (sqlite3_prepare_v2(db, "SELECT name, type, hidden FROM pragma_table_xinfo(?1)", -1, &st,
                               nullptr) == SQLITE_OK) {
            sqlite3_bind_text(st, 1, t.name.c_str(), -1, SQLITE_TRANSIENT);
            while (sqlite3_step(st) == SQLITE_ROW) {
                ColumnInfo c;
                c.name = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
                if (const auto* type = sqlite3_column_text(st, 1))
                    c.type = reinterpret_cast<const char*>(type);
                c.generated = sqlite3_column_int(st, 2) >= 2;
                t.columns.push_back(c);
            }
        }
        sqlite3_finalize(st);
        st = nullptr;
        if (!t.view && sqlite3_prepare_v2(db, ("SELECT MAX(rowid) FROM " + quoted(t.name)).c_str(),
                                          -1, &st, nullptr) == SQLITE_OK) {
            if (sqlite3_step(st) == SQLITE_ROW)
                t.maxRowid = sqlite3_column_int64(st, 0);
        }
        sqlite3_finalize(st);
        st = nullptr;
    }
    return tables;
}

// A name no table, view, index or trigger of the file has: `base`, or `base` and a number.
std::string freshName(sqlite3* db, const std::string& base) {
    for (int n = 1;; ++n) {
        const std::string name = n == 1 ? base : base + std::to_string(n);
        sqlite3_stmt* st = nullptr;
        sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE name = ?1 COLLATE NOCASE", -1,
                           &st, nullptr);
        sqlite3_bind_text(st, 1, name.c_str(), -1, SQLITE_TRANSIENT);
        const bool taken = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_finalize(st);
        if (!taken)
            return name;
    }
}

std::string columnList(const std::vector<std::string>& columns) {
    std::string list;
    for (const std::string& c : columns)
        list += (list.empty() ? "" : ", ") + quoted(c);
    return list;
}

// The trace with every table rebuilt without constraints (NOT NULL, primary keys, WITHOUT
// ROWID), so that edits can put anything anywhere, as a damaged or foreign file can; with
// `rows` >= 0, only the first `rows` rows of each table are kept: small bases make many more
// runs per second and the edits reach the same code.
std::vector<uint8_t> loosened(const std::vector<uint8_t>& bytes, int rows) {
    sqlite3* db = deserialize(bytes);
    if (!db)
        return {};
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

template <typename T, size_t N> std::vector<std::string> names(const T (&values)[N]) {
    std::vector<std::string> out;
    for (const T& v : values) {
        std::ostringstream s;
        s << v;
        out.push_back(s.str());
    }
    return out;
}

Value makeValue(Choices& in) {
    static const int64_t kSpecial[] = {
        std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
        std::numeric_limits<int64_t>::min() + 1, std::numeric_limits<int64_t>::max() - 1,
        std::numeric_limits<int32_t>::max(), int64_t(std::numeric_limits<int32_t>::max()) + 1,
        std::numeric_limits<int32_t>::min(), std::numeric_limits<uint32_t>::max(),
        int64_t(std::numeric_limits<uint32_t>::max()) + 1, int64_t(1) << 24, (int64_t(1) << 24) - 1,
        int64_t(1) << 53, int64_t(1) << 62, -(int64_t(1) << 62),
        // The widest times a trace may hold (+-(2^62 - 1)): two
        // spans of them saturate a total of durations.
        (int64_t(1) << 62) - 1, -(int64_t(1) << 62) + 1, -1, 0, 1, 34, 59, 60, 75, 100, 199, 200};
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
    static const double kReals[] = {0.5,
                                    -0.0,
                                    1e300,
                                    -1e300,
                                    9.3e18,
                                    -9.3e18,
                                    std::numeric_limits<double>::infinity(),
                                    std::numeric_limits<double>::quiet_NaN()};
    static const std::vector<std::string> kKinds = {"null",  "small", "special", "int", "text",
                                                    "texts", "huge",  "real",    "blob"};
    static const std::vector<std::string> kSpecialNames = names(kSpecial);
    static const std::vector<std::string> kRealNames = names(kReals);
    static const std::vector<std::string> kTextNames = [] {
        std::vector<std::string> n; // a script names them text0, text1, ... (or #0, #1, ...)
        for (size_t i = 0; i < std::size(kTexts); ++i)
            n.push_back("text" + std::to_string(i));
        return n;
    }();
    Value v;
    switch (in.pick(kKinds)) {
    case 0:
        break;
    case 1:
        v.kind = Value::Int;
        v.i = in.number(-16, 16);
        break;
    case 2:
        v.kind = Value::Int;
        v.i = kSpecial[in.pick(kSpecialNames)];
        break;
    case 3:
        v.kind = Value::Int;
        v.i = in.number(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
        break;
    case 4:
        v.kind = Value::Text;
        v.s = in.text(64);
        break;
    case 5:
        v.kind = Value::Text;
        v.s = kTexts[in.pick(kTextNames)];
        break;
    case 6: {
        v.kind = Value::Text;
        const auto size = static_cast<size_t>(in.number(1, 3 << 20));
        v.s.assign(size, static_cast<char>(in.number(CHAR_MIN, CHAR_MAX)));
        break;
    }
    case 7:
        v.kind = Value::Real;
        v.r = kReals[in.pick(kRealNames)];
        break;
    default:
        v.kind = Value::Blob;
        v.s = in.text(16);
        break;
    }
    return v;
}

// Rows an edit applies to: one row, every k-th row, a tail, or all.
struct Selector {
    std::string where;
    int64_t arg = 0;
};

Selector makeSelector(Choices& in, const TableInfo& t) {
    const int64_t rows = std::max<int64_t>(t.maxRowid, 1);
    switch (in.pick({"row", "row", "every", "after", "all"})) {
    case 0:
    case 1:
        return {"rowid = ?", in.number(1, rows)};
    case 2:
        return {"rowid % ? = 0", in.number(2, 16)};
    case 3:
        return {"rowid > ?", in.number(0, rows)};
    default:
        return {"?", 1};
    }
}

// A row edit: prepared, bound (`value` first, `:x` to `extra`, the last parameter to the
// selector's argument) and run to its end. It must apply.
void run(sqlite3* db, const std::string& sql, const Value* value, const Selector& where,
         int64_t extra = 0) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
        editFailed(db, sql);
    if (value)
        value->bind(st, 1);
    if (const int x = sqlite3_bind_parameter_index(st, ":x"))
        sqlite3_bind_int64(st, x, extra);
    sqlite3_bind_int64(st, sqlite3_bind_parameter_count(st), where.arg);
    const int rc = sqlite3_step(st);
    if (g_verbose)
        std::cerr << "  " << sql << "  -- value " << (value ? value->describe() : "-") << ", :x "
                  << extra << ", where arg " << where.arg << "\n";
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        editFailed(db, sql);
}

// Replaces table `t` by a table of `columns` (definitions), filled from `t` by `select` into
// `insert`: a column dropped, or one turned into a generated column, whatever views and triggers
// name it (ALTER TABLE's own DROP and RENAME COLUMN refuse a schema with a broken view). The
// table's triggers go with it; generated columns it had become stored ones.
void rebuild(sqlite3* db, const TableInfo& t, const std::vector<std::string>& columns,
             const std::vector<std::string>& insert, const std::vector<std::string>& select) {
    const std::string fresh = quoted(freshName(db, t.name + "__new"));
    std::string defs;
    for (const std::string& c : columns)
        defs += (defs.empty() ? "" : ", ") + c;
    mustExec(db, "CREATE TABLE " + fresh + " (" + defs + "); INSERT INTO " + fresh + " (" +
                     columnList(insert) + ") SELECT " + columnList(select) + " FROM " +
                     quoted(t.name) + "; DROP TABLE " + quoted(t.name) + "; ALTER TABLE " + fresh +
                     " RENAME TO " + quoted(t.name));
}

std::string declared(const ColumnInfo& c, const std::string& name) {
    return quoted(name) + (c.type.empty() ? "" : " " + c.type);
}

// One edit of the file; false when nothing is left to edit (every table dropped).
bool applyEdit(sqlite3* db, Choices& in) {
    const std::vector<TableInfo> live = describe(db);
    std::vector<const TableInfo*> stored; // row edits' tables: stored, with a stored column
    std::vector<std::string> storedNames, allNames;
    for (const TableInfo& t : live) {
        allNames.push_back(t.name);
        if (!t.view && !t.storedColumns().empty()) {
            stored.push_back(&t);
            storedNames.push_back(t.name);
        }
    }
    if (stored.empty())
        return false;
    const auto pickTable = [&]() -> const TableInfo& { return *stored[in.pick(storedNames)]; };

    static const std::vector<std::string> kKinds = {
        "value", "value",  "value",   "value",  "delete", "duplicate", "shift",
        "copy",  "schema", "version", "fanout", "name",   "name"};
    const size_t kind = in.pick(kKinds);
    if (kind == 9) { // another format version: mostly ones the loader knows, or near them
        static const int64_t kVersions[] = {0, 100, 101, 199, 200, 201, 299, 300};
        std::vector<std::string> options = names(kVersions);
        options.push_back("any");
        const size_t which = in.pick(options);
        const int64_t v = which < std::size(kVersions) ? kVersions[which] : in.number(-5, 1000);
        mustExec(db, "PRAGMA user_version=" + std::to_string(v));
        return true;
    }
    if (kind == 8) { // the schema
        static const std::vector<std::string> kSchema = {"drop", "dropcolumn", "rename",
                                                         "view", "trigger",    "generated"};
        const size_t what = in.pick(kSchema);
        if (what == 0) { // a table or view dropped
            const TableInfo& t = live[in.pick(allNames)];
            mustExec(db, std::string(t.view ? "DROP VIEW " : "DROP TABLE ") + quoted(t.name));
            return true;
        }
        const TableInfo& t = pickTable();
        const std::string table = quoted(t.name);
        switch (what) {
        case 1: { // a column dropped; a table's last column goes with the table
            std::vector<std::string> all;
            for (const ColumnInfo& c : t.columns)
                all.push_back(c.name);
            const size_t gone = in.pick(all);
            if (all.size() == 1) {
                mustExec(db, "DROP TABLE " + table);
                break;
            }
            std::vector<std::string> kept, defs;
            for (size_t c = 0; c < t.columns.size(); ++c) {
                if (c == gone)
                    continue;
                kept.push_back(t.columns[c].name);
                defs.push_back(declared(t.columns[c], t.columns[c].name));
            }
            rebuild(db, t, defs, kept, kept);
            break;
        }
        case 2: // renamed: the loader no longer finds it by its name
            mustExec(db, "ALTER TABLE " + table + " RENAME TO " +
                             quoted(freshName(db, t.name + "_old")));
            break;
        case 3: { // the table becomes a view of itself: endless, fanned out, or a plain copy
            static const char* const kViews[] = {
                (" AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT "
                 "t.* FROM @ t, c WHERE x < 0"),
                " AS SELECT a.* FROM @ a, @ b, @ c, @ d, @ e, @ f", " AS SELECT * FROM @"};
            std::string body = kViews[in.pick({"endless", "fanout", "copy"})];
            const std::string storedAs = quoted(freshName(db, t.name + "__stored"));
            for (size_t at; (at = body.find('@')) != std::string::npos;)
                body.replace(at, 1, storedAs);
            mustExec(db, "ALTER TABLE " + table + " RENAME TO " + storedAs);
            mustExec(db, "CREATE VIEW " + table + body);
            break;
        }
        case 4: // triggers: a reader never fires them
            mustExec(db, "CREATE TRIGGER " + quoted(freshName(db, t.name + "_trigger")) +
                             " AFTER UPDATE ON " + table + " BEGIN DELETE FROM " + table + "; END");
            break;
        default: { // a column computed by the file's SQL (a virtual generated column)
            const std::vector<std::string> columns = t.storedColumns();
            const std::string& column = columns[in.pick(columns)];
            std::string storedAs = column + "__stored";
            for (int n = 2; std::any_of(t.columns.begin(), t.columns.end(),
                                        [&](const ColumnInfo& c) { return c.name == storedAs; });
                 ++n)
                storedAs = column + "__stored" + std::to_string(n);
            std::vector<std::string> defs, insert, select;
            for (const ColumnInfo& c : t.columns) {
                const std::string& name = c.name == column ? storedAs : c.name;
                defs.push_back(declared(c, name));
                insert.push_back(name);
                select.push_back(c.name);
            }
            defs.push_back(quoted(column) + " AS (" + quoted(storedAs) +
                           " + length(hex(zeroblob(100000)))) VIRTUAL");
            rebuild(db, t, defs, insert, select);
            break;
        }
        }
        return true;
    }

    if (kind >= 11) { // names: the strings every view shows
        const auto strings = std::find_if(live.begin(), live.end(), [](const TableInfo& t) {
            return t.name == "StringIds" && !t.view &&
                   std::any_of(t.columns.begin(), t.columns.end(), [](const ColumnInfo& c) {
                       return c.name == "value" && !c.generated;
                   });
        });
        if (strings != live.end()) {
            Selector where = makeSelector(in, *strings);
            const Value v = makeValue(in);
            if (v.s.size() > 65536 && where.where != "rowid = ?")
                where = {"rowid = ?", 1};
            run(db, "UPDATE \"StringIds\" SET \"value\" = ? WHERE " + where.where, &v, where);
            return true;
        }
        // No names left to damage: a value instead.
    }

    const TableInfo& t = pickTable();
    const std::string table = quoted(t.name);
    const std::vector<std::string> columns = t.storedColumns();
    Selector where = makeSelector(in, t);
    // Rows of at most 64 KiB are duplicated: megabyte values times a thousand rows only fill the
    // memory.
    std::string small;
    for (const std::string& c : columns)
        small += (small.empty() ? "" : " + ") + ("ifnull(length(" + quoted(c) + "), 0)");
    small = "(" + small + ") <= 65536";
    switch (kind) {
    case 4: // rows gone: dangling ids, missing launches
        run(db, "DELETE FROM " + table + " WHERE " + where.where, nullptr, where);
        break;
    case 5: // duplicated rows: duplicate correlation ids, string ids, configs (at most 1000 at a
            // time: 22 doublings of a table are 4 million times its rows, and out of memory)
        run(db,
            "INSERT INTO " + table + " (" + columnList(columns) + ") SELECT " +
                columnList(columns) + " FROM " + table + " WHERE " + small + " AND " + where.where +
                " LIMIT 1000",
            nullptr, where);
        break;
    case 6: { // one column from another, shifted: end before start, ids that point elsewhere
        const std::string& column = columns[in.pick(columns)];
        const std::string& other = columns[in.pick(columns)];
        const int64_t shift = in.number(-1000000, 1000000);
        run(db,
            "UPDATE " + table + " SET " + quoted(column) + " = " + quoted(other) + " + :x WHERE " +
                where.where,
            nullptr, where, shift);
        break;
    }
    case 7: { // a value copied from another row: duplicates
        const std::string& column = columns[in.pick(columns)];
        const int64_t from = in.number(1, std::max<int64_t>(t.maxRowid, 1));
        run(db,
            "UPDATE " + table + " SET " + quoted(column) + " = (SELECT " + quoted(column) +
                " FROM " + table + " WHERE rowid = :x) WHERE " + where.where,
            nullptr, where, from);
        break;
    }
    case 10: // one row a thousand times: a huge fan-out of one correlation id
        run(db,
            "INSERT INTO " + table + " (" + columnList(columns) + ") SELECT " +
                columnList(columns) + " FROM " + table +
                " t, (WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < "
                "1000) SELECT n FROM c) WHERE " +
                small + " AND t.rowid = ?",
            nullptr, {"rowid = ?", where.arg});
        break;
    default: { // a damaged value
        const std::string& column = columns[in.pick(columns)];
        const Value v = makeValue(in);
        // Megabyte values go to one row: in every row they only make the table writers slow
        // (linear in the output, tens of seconds under the sanitizers), which hides the fuzzer's
        // other work.
        if (v.s.size() > 65536 && where.where != "rowid = ?")
            where = {"rowid = ?", 1};
        run(db, "UPDATE " + table + " SET " + quoted(column) + " = ? WHERE " + where.where, &v,
            where);
        break;
    }
    }
    return true;
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
    // The smaller recorded traces; every edit kind applies to each. The last holds CPU samples,
    // call chains and thread states (COMPOSITE_EVENTS, SAMPLING_CALLCHAINS, SCHED_EVENTS): its
    // larger variant keeps the first 2,000 rows of each table, not all 4.9 MB of them.
    struct Source {
        const char* name;
        int wholeRows; // rows per table of the larger variant; -1: all
    };
    for (const Source& source :
         {Source{"gelu", -1}, Source{"matmul", -1}, Source{"softmax", -1}, Source{"streams", -1},
          Source{"runahead", -1}, Source{"sync-stall", -1}, Source{"graphs", -1}, Source{"mlp", -1},
          Source{"corpus/launch-bound-sampled", 2000}}) {
        const std::vector<uint8_t> bytes = readAll(dir + "/" + source.name + ".warpline");
        if (bytes.empty()) {
            std::fprintf(stderr, "fuzz_trace_sql: no base trace %s/%s.warpline\n", dir.c_str(),
                         source.name);
            std::exit(1);
        }
        g_bases.push_back({source.name, true, loosened(bytes, 40)});
        g_bases.push_back({source.name, false, loosened(bytes, source.wholeRows)});
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::string path = warpline::fuzz::scratchPath("sql");
    const char* scriptOut = std::getenv("WARPLINE_FUZZ_SCRIPT");
    std::unique_ptr<Choices> choices;
    ScriptChoices* script = nullptr;
    if (scriptOut) {
        auto s =
            std::make_unique<ScriptChoices>(std::string(reinterpret_cast<const char*>(data), size));
        script = s.get();
        choices = std::move(s);
    } else {
        choices = std::make_unique<BytesChoices>(data, size);
    }
    Choices& in = *choices;
    // Bases cut to 40 rows per table most of the time: full ones are slower to load and report.
    static const std::vector<std::string> kSizes = {"trimmed", "trimmed", "trimmed", "whole"};
    static const std::vector<std::string> kWorkloads = [] {
        std::vector<std::string> w;
        for (size_t b = 0; b < g_bases.size(); b += 2)
            w.push_back(g_bases[b].workload);
        return w;
    }();
    const bool whole = in.pick(kSizes) == 3;
    const Base& base = g_bases[2 * in.pick(kWorkloads) + (whole ? 1 : 0)];
    if (g_verbose)
        std::cerr << "base " << base.workload
                  << (base.trimmed ? " (loose, first 40 rows per table)" : " (loose)") << "\n";
    sqlite3* db = deserialize(base.bytes);
    if (!db)
        std::abort();
    for (int edits = 0; edits < 32 && !in.done(); ++edits) {
        if (!applyEdit(db, in))
            break;
    }
    const std::vector<uint8_t> edited = serialize(db);
    sqlite3_close(db);
    if (script) {
        const std::vector<uint8_t> encoded = script->bytes();
        if (!warpline::fuzz::writeFile(scriptOut, encoded.data(), encoded.size()))
            std::abort();
    }
    if (const char* keep = std::getenv("WARPLINE_FUZZ_KEEP"))
        warpline::fuzz::writeFile(keep, edited.data(), edited.size());
    if (!warpline::fuzz::writeFile(path, edited.data(), edited.size()))
        std::abort();
    warpline::fuzz::runEverything(path);
    return 0;
}
