// libFuzzer target, differential: the page reader (model/loading/pagereader.h) against SQLite, the
// reference implementation of the format it re-implements (issue 27). The input is a database file
// and, optionally, a WAL or rollback journal beside it:
//   byte 0       0: the file alone, 1: with a -wal, 2: with a -journal
//   bytes 1-4    the file's length n (big-endian)
//   n bytes      the file; the rest is the -wal or -journal
// The files are opened as the loader opens them (TraceDatabase: a hot journal rolled back and a WAL
// folded into a private copy). Then, for every stored table, the rows the page reader gives are
// compared with SQLite's own full scan of the same columns on the same connection:
//  - the reader declined (open() refused): nothing to compare;
//  - the reader read to the end: SQLite gives exactly those rows and then SQLITE_DONE;
//  - the reader stopped: its rows are the first rows SQLite gives (SQL takes over from there).
// Anything else is a divergence and aborts. The custom mutator edits pages as an attacker would:
// cell counts and pointers, varints widened to 9 bytes, child pointers (cycles, DAGs), the header's
// page count and change counters, whole pages copied over others, the file cut or extended.

#include "pagereader.h"
#include "tracedatabase.h"
#include "traceerror.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sqlite3.h>
#include <string>
#include <unistd.h>
#include <vector>

using warpline::model::PageReader;
using warpline::model::TraceDatabase;
using warpline::model::TraceError;

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t maxSize);

namespace {

std::string scratchDir() {
    const char* dir = std::getenv("WARPLINE_FUZZ_TMP");
    std::string base = dir ? dir : "/dev/shm";
    if (::access(base.c_str(), W_OK) != 0)
        base = "/tmp";
    return base;
}

bool writeFile(const std::string& path, const uint8_t* data, size_t size) {
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f)
        return false;
    const bool ok = size == 0 || std::fwrite(data, 1, size, f) == size;
    return std::fclose(f) == 0 && ok;
}

struct Value {
    int type = SQLITE_NULL; // SQLITE_NULL, _INTEGER, _TEXT, or another type SQLite returned
    int64_t integer = 0;
    std::string text;
    bool operator==(const Value& o) const {
        return type == o.type && integer == o.integer && text == o.text;
    }
};
using Row = std::vector<Value>;

// WARPLINE_FUZZ_VERBOSE: how each table went, for the regression check (check_regressions.py):
// "pages: TABLE: the reader declined", "... read all N rows" or "... stopped after N rows", then
// "; SQLite: M rows, then RESULT" (where SQLite's own scan ends: done, or its error).
bool verbose() {
    static const bool v = std::getenv("WARPLINE_FUZZ_VERBOSE") != nullptr;
    return v;
}

void report(const std::string& table, const std::string& reader, size_t sqliteRows, int end) {
    std::fprintf(stderr, "pages: %s: %s; SQLite: %zu rows, then %s\n", table.c_str(),
                 reader.c_str(), sqliteRows,
                 end == SQLITE_INTERRUPT ? "interrupted"
                 : end == SQLITE_ROW     ? "more"
                                         : sqlite3_errstr(end));
}

[[noreturn]] void diverged(const std::string& table, const std::string& what) {
    std::fprintf(stderr, "fuzz_pagereader: divergence in %s: %s\n", table.c_str(), what.c_str());
    std::abort();
}

// SQLite's VM instructions per statement before it is cut off (a DAG of pages): inconclusive.
int onProgress(void* counter) {
    return ++*static_cast<int*>(counter) > 2000 ? 1 : 0; // 2000 x 1000 instructions
}

// SQLite's own full scan of the columns the reader reads.
std::string scanSql(const std::string& table, const std::vector<PageReader::Column>& columns) {
    std::string sql = "SELECT ";
    for (size_t c = 0; c < columns.size(); ++c) {
        std::string quoted = "\"";
        for (const char ch : columns[c].name)
            quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
        sql += (c ? ", " : "") + quoted + "\"";
    }
    std::string quotedTable = "\"";
    for (const char ch : table)
        quotedTable += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return sql + " FROM main." + quotedTable + "\" NOT INDEXED";
}

void compareTable(sqlite3* db, const std::string& table) {
    // The columns, and the type the loader would ask for: text for TEXT affinity, else integer.
    std::vector<PageReader::Column> columns;
    {
        sqlite3_stmt* st = nullptr;
        if (sqlite3_prepare_v2(db, "SELECT name, type FROM pragma_table_info(?1)", -1, &st,
                               nullptr) != SQLITE_OK) {
            sqlite3_finalize(st);
            return;
        }
        sqlite3_bind_text(st, 1, table.c_str(), -1, SQLITE_TRANSIENT);
        while (sqlite3_step(st) == SQLITE_ROW && columns.size() < 32) {
            const auto* name = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
            const auto* type = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
            if (!name)
                continue;
            PageReader::Column c;
            c.name = name;
            c.type = type && std::strstr(type, "TEXT") ? PageReader::Type::Text
                                                       : PageReader::Type::Integer;
            columns.push_back(c);
        }
        sqlite3_finalize(st);
    }
    if (columns.empty())
        return;

    std::vector<Row> reader;
    bool complete = false;
    {
        auto r = PageReader::open(db, table, columns);
        if (!r) {
            if (verbose()) {
                // Nothing to compare; where SQLite ends all the same.
                sqlite3_stmt* st = nullptr;
                size_t rows = 0;
                int end = SQLITE_ERROR;
                int counter = 0;
                sqlite3_progress_handler(db, 1000, onProgress, &counter);
                if (sqlite3_prepare_v2(db, scanSql(table, columns).c_str(), -1, &st, nullptr) ==
                    SQLITE_OK) {
                    while (rows < 1000000 && (end = sqlite3_step(st)) == SQLITE_ROW)
                        ++rows;
                }
                sqlite3_finalize(st);
                sqlite3_progress_handler(db, 0, nullptr, nullptr);
                report(table, "the reader declined", rows, counter > 2000 ? SQLITE_INTERRUPT : end);
            }
            return;
        }
        while (reader.size() < 100000 && r->next()) {
            Row row(columns.size());
            for (size_t c = 0; c < columns.size(); ++c) {
                Value& v = row[c];
                if (r->isNull(int(c)))
                    continue;
                if (columns[c].type == PageReader::Type::Integer) {
                    v.type = SQLITE_INTEGER;
                    v.integer = r->i64(int(c));
                } else {
                    v.type = SQLITE_TEXT;
                    v.text = std::string(r->text(int(c)));
                }
            }
            reader.push_back(std::move(row));
        }
        complete = !r->stopped() && reader.size() < 100000;
    }

    const std::string sql = scanSql(table, columns);
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
        sqlite3_finalize(st);
        diverged(table, "the reader read a table SQLite cannot select from");
    }
    int counter = 0;
    sqlite3_progress_handler(db, 1000, onProgress, &counter);
    size_t n = 0;
    int rc = SQLITE_ROW;
    const size_t wanted = complete ? reader.size() + 1 : reader.size();
    while (n < wanted && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n >= reader.size()) {
            sqlite3_finalize(st);
            sqlite3_progress_handler(db, 0, nullptr, nullptr);
            diverged(table,
                     "SQLite gives more rows than the reader's " + std::to_string(reader.size()));
        }
        for (size_t c = 0; c < columns.size(); ++c) {
            Value v;
            v.type = sqlite3_column_type(st, int(c));
            if (v.type == SQLITE_INTEGER)
                v.integer = sqlite3_column_int64(st, int(c));
            else if (v.type == SQLITE_TEXT || v.type == SQLITE_BLOB)
                v.text.assign(reinterpret_cast<const char*>(sqlite3_column_blob(st, int(c))),
                              size_t(sqlite3_column_bytes(st, int(c))));
            if (!(v == reader[n][c])) {
                sqlite3_finalize(st);
                sqlite3_progress_handler(db, 0, nullptr, nullptr);
                diverged(table, "row " + std::to_string(n) + " column " + columns[c].name +
                                    ": reader type " + std::to_string(reader[n][c].type) +
                                    " value " + std::to_string(reader[n][c].integer) +
                                    ", SQLite type " + std::to_string(v.type) + " value " +
                                    std::to_string(v.integer));
            }
        }
        ++n;
    }
    const bool interrupted = rc == SQLITE_INTERRUPT || counter > 2000;
    if (verbose()) {
        // Where SQLite itself ends, past the rows compared: the error a stopped reader avoided.
        size_t all = n;
        int end = interrupted ? SQLITE_INTERRUPT : rc;
        if (!interrupted && n == wanted && rc == SQLITE_ROW) {
            while (all < 1000000 && (end = sqlite3_step(st)) == SQLITE_ROW)
                ++all;
        }
        report(table,
               std::string(complete ? "the reader read all " : "the reader stopped after ") +
                   std::to_string(reader.size()) + " rows",
               all, end);
    }
    sqlite3_finalize(st);
    sqlite3_progress_handler(db, 0, nullptr, nullptr);
    if (interrupted)
        return; // SQLite could not finish in time: nothing to compare it with
    if (n < reader.size())
        diverged(table, "SQLite stops (" + std::string(sqlite3_errstr(rc)) + ") after " +
                            std::to_string(n) + " rows, the reader gave " +
                            std::to_string(reader.size()));
    if (complete && rc != SQLITE_DONE)
        diverged(table,
                 "the reader read to the end, SQLite stops: " + std::string(sqlite3_errstr(rc)));
}

void run(const uint8_t* data, size_t size) {
    if (size < 5)
        return;
    const int mode = data[0] % 3;
    const size_t n = std::min<size_t>(size - 5, (size_t(data[1]) << 24) | (size_t(data[2]) << 16) |
                                                    (size_t(data[3]) << 8) | data[4]);
    static const std::string dir = scratchDir();
    static const std::string path =
        dir + "/warpline-fuzz-pages-" + std::to_string(::getpid()) + ".warpline";
    std::remove((path + "-wal").c_str());
    std::remove((path + "-journal").c_str());
    std::remove((path + "-shm").c_str());
    if (!writeFile(path, data + 5, n))
        std::abort();
    const char* beside = mode == 1 ? "-wal" : mode == 2 ? "-journal" : nullptr;
    if (beside && !writeFile(path + beside, data + 5 + n, size - 5 - n))
        std::abort();
    try {
        TraceDatabase database(path, "fuzz.warpline");
        sqlite3* db = database.open();
        if (TraceDatabase::needsRollback(db)) {
            sqlite3_close(db);
            database.rollBack();
            db = database.open();
        }
        sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
        sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
        sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 1 << 20);
        std::vector<std::string> tables;
        sqlite3_stmt* st = nullptr;
        if (sqlite3_prepare_v2(db,
                               "SELECT name FROM pragma_table_list WHERE schema = 'main' AND "
                               "type = 'table' AND name NOT LIKE 'sqlite_%'",
                               -1, &st, nullptr) == SQLITE_OK) {
            while (sqlite3_step(st) == SQLITE_ROW && tables.size() < 64) {
                if (const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(st, 0)))
                    tables.emplace_back(t);
            }
        }
        sqlite3_finalize(st);
        for (const std::string& table : tables)
            compareTable(db, table);
        sqlite3_close(db);
    } catch (const TraceError&) {
        // A file that cannot be read safely: the loader says so; nothing to compare.
    }
}

// --- structure-aware mutations -------------------------------------------------------------------

uint32_t be16(const uint8_t* p) {
    return (uint32_t(p[0]) << 8) | p[1];
}
void put32(uint8_t* p, uint32_t v) {
    p[0] = uint8_t(v >> 24);
    p[1] = uint8_t(v >> 16);
    p[2] = uint8_t(v >> 8);
    p[3] = uint8_t(v);
}

size_t mutatePages(uint8_t* data, size_t size, size_t maxSize, std::mt19937& rng) {
    if (size < 5 + 100)
        return 0;
    uint8_t* file = data + 5;
    const size_t fileLength =
        std::min<size_t>(size - 5, (size_t(data[1]) << 24) | (size_t(data[2]) << 16) |
                                       (size_t(data[3]) << 8) | data[4]);
    if (fileLength < 512 || std::memcmp(file, "SQLite format 3", 15) != 0)
        return 0;
    const uint32_t raw = be16(file + 16);
    const size_t pageSize = raw == 1 ? 65536 : raw;
    if (pageSize < 512 || (pageSize & (pageSize - 1)) != 0 || fileLength < pageSize)
        return 0;
    const size_t pages = fileLength / pageSize;
    const auto pick = [&](size_t n) {
        return n ? std::uniform_int_distribution<size_t>(0, n - 1)(rng) : 0;
    };
    const size_t pg = pick(pages);
    uint8_t* page = file + pg * pageSize;
    const size_t h = pg == 0 ? 100 : 0;
    const size_t cells = be16(page + h + 3);
    const bool interior = page[h] == 0x05 || page[h] == 0x02;
    const size_t pointers = h + (interior ? 12 : 8);
    const auto cellAt = [&](size_t i) -> uint8_t* {
        if (i >= cells || pointers + 2 * i + 2 > pageSize)
            return nullptr;
        const size_t off = be16(page + pointers + 2 * i);
        return off + 16 <= pageSize ? page + off : nullptr;
    };
    switch (pick(10)) {
    case 0: { // the cell count
        static const uint16_t counts[] = {0, 1, 2, 0xFFFF, 681, 682};
        uint16_t c = pick(2) ? counts[pick(6)] : uint16_t(cells + pick(3) - 1);
        page[h + 3] = uint8_t(c >> 8);
        page[h + 4] = uint8_t(c);
        break;
    }
    case 1: // a cell pointer
        if (cells) {
            const size_t at = pointers + 2 * pick(cells);
            if (at + 2 <= pageSize) {
                const size_t off = pick(pageSize);
                page[at] = uint8_t(off >> 8);
                page[at + 1] = uint8_t(off);
            }
        }
        break;
    case 2: // a varint widened: 9 bytes of continuation
        if (uint8_t* c = cellAt(pick(cells + 1))) {
            uint8_t* v = c + (interior ? 4 : pick(3));
            const size_t len = 2 + pick(8);
            for (size_t i = 0; i + 1 < len && v + i < page + pageSize; ++i)
                v[i] = uint8_t(0x80 | pick(128));
        }
        break;
    case 3: // a child pointer: another page (a cycle, a DAG), or none
        if (interior) {
            const uint32_t to = uint32_t(pick(pages + 2));
            if (uint8_t* c = cellAt(pick(cells + 1)))
                put32(c, to);
            else
                put32(page + h + 8, to);
        }
        break;
    case 4: { // the header's page count and change counters
        uint8_t* header = file;
        switch (pick(3)) {
        case 0:
            put32(header + 28, uint32_t(pick(pages + 3)));
            break;
        case 1:
            std::memcpy(header + 92, header + 24, 4);
            break;
        default:
            put32(header + 24, uint32_t(rng()));
        }
        break;
    }
    case 5: { // a page copied over another
        const size_t from = pick(pages);
        if (from != pg)
            std::memmove(page, file + from * pageSize, pageSize);
        break;
    }
    case 6: { // the file cut, or grown, by whole pages
        const size_t newPages = std::max<size_t>(1, pages + pick(5) - 2);
        const size_t newLength =
            std::min(newPages * pageSize, maxSize - 5 - (size - 5 - fileLength));
        const size_t tail = size - 5 - fileLength;
        std::memmove(file + newLength, file + fileLength, tail);
        if (newLength > fileLength)
            std::memset(file + fileLength, 0, newLength - fileLength);
        data[1] = uint8_t(newLength >> 24);
        data[2] = uint8_t(newLength >> 16);
        data[3] = uint8_t(newLength >> 8);
        data[4] = uint8_t(newLength);
        return 5 + newLength + tail;
    }
    case 7: // the page type
        page[h] = uint8_t(std::vector<int>{0x02, 0x05, 0x0A, 0x0D, 0x00}[pick(5)]);
        break;
    case 8: // a byte inside a cell (record headers, serial types, values)
        if (uint8_t* c = cellAt(pick(cells + 1)))
            c[pick(16)] = uint8_t(rng());
        break;
    default: // the mode: a WAL or journal beside the file
        data[0] = uint8_t(pick(3));
        break;
    }
    return size;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    run(data, size);
    return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t maxSize,
                                          unsigned int seed) {
    std::mt19937 rng(seed);
    if (rng() % 3 != 0) {
        const size_t edited = mutatePages(data, size, maxSize, rng);
        if (edited)
            return edited;
    }
    return LLVMFuzzerMutate(data, size, maxSize);
}
