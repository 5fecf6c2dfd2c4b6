#pragma once

// Guarded reading of an untrusted trace: a connection whose statements cannot run unbounded, and
// the rows of one table read from its pages (PageReader) or by SQL, the same rows either way.
// The loader's (traceloader.cpp) only, not an interface of the model.
//
// Connection: every kInstructionsPerCheck SQLite VM instructions a progress handler asks the
// load's cancel and checks the statement's budgets (time without a row, pages fetched, rows);
// past one, the statement is interrupted and Statement::step throws LoadCancelled or a
// TraceError that names the table and says why.
//
// Thread safety: one Connection (and its statements) per thread.

#include "pagereader.h"
#include "traceerror.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <sqlite3.h>
#include <string>
#include <string_view>
#include <vector>

namespace warpline::model {

// The largest string or blob a read may return: names are at most kilobytes in real traces (the
// longest kernel name seen is about 4 KB); a crafted value near SQLite's own 1 GB limit would
// cost a copy of that size per read.
inline constexpr int kMaxValueBytes = 256 << 20;
// SQLite VM instructions between two calls of the progress handler (well under a millisecond).
inline constexpr int kInstructionsPerCheck = 20000;

// The first table a statement reads ("SELECT ... FROM \"X\" WHERE ..." -> X), for messages.
std::string tableOf(std::string_view sql);

// A read-only connection to the trace, guarded: the file is untrusted, so no query may run
// unbounded. Every kInstructionsPerCheck VM instructions SQLite calls onProgress, which asks
// `keepGoing` (the load's cancel) and checks how long the running statement has gone without
// yielding a row; when cancelled or past the budget the statement is interrupted, and
// Statement::step throws LoadCancelled or a TraceError that names the table and says why.
class Connection {
public:
    enum class Stop { None, Cancelled, OverBudget, TooManyPages };
    using Clock = std::chrono::steady_clock;

    // Bounds of one statement, from the bytes the file holds: no table can give more rows than
    // `maxRows`, and a scan fetches each page of a b-tree once, so more than `maxPageFetches`
    // page fetches means pages shared by several parents (a crafted b-tree SQLite walks every
    // path of).
    struct Limits {
        std::chrono::milliseconds budget{5000};
        uint64_t maxRows = UINT64_MAX;
        uint64_t maxPageFetches = UINT64_MAX;
    };

    Connection(sqlite3* db, std::string fileName, std::function<bool()> keepGoing, Limits limits)
        : m_db(db), m_fileName(std::move(fileName)), m_keepGoing(std::move(keepGoing)),
          m_limits(limits) {
        sqlite3_progress_handler(m_db, kInstructionsPerCheck, &Connection::onProgress, this);
    }
    ~Connection() { sqlite3_close(m_db); }
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    sqlite3* get() const { return m_db; }
    const std::string& fileName() const { return m_fileName; }
    const Limits& limits() const { return m_limits; }
    const std::function<bool()>& keepGoing() const { return m_keepGoing; }
    Stop stop() const { return m_stop; }

    // Statement calls these: a statement starts, a statement yielded a row (a counter, not a
    // clock read: the handler notices the change). False when the statement gave more rows
    // than the file can hold.
    void queryStarted() {
        m_stop = Stop::None;
        m_rowMark = ++m_rows;
        m_statementRows = 0;
        pageFetches(true);
        m_lastRow = Clock::now();
    }
    bool rowYielded() {
        ++m_rows;
        return ++m_statementRows <= m_limits.maxRows;
    }

private:
    static int onProgress(void* self) { return static_cast<Connection*>(self)->check() ? 0 : 1; }
    // Pages fetched since the last reset (SQLite's per-connection counters; reset when a
    // statement starts, so they count that statement's fetches and never wrap across a load).
    uint64_t pageFetches(bool reset = false) const {
        int hit = 0, miss = 0, high = 0;
        sqlite3_db_status(m_db, SQLITE_DBSTATUS_CACHE_HIT, &hit, &high, reset);
        sqlite3_db_status(m_db, SQLITE_DBSTATUS_CACHE_MISS, &miss, &high, reset);
        return static_cast<uint64_t>(static_cast<unsigned>(hit)) + static_cast<unsigned>(miss);
    }
    bool check();

    sqlite3* m_db;
    std::string m_fileName;
    std::function<bool()> m_keepGoing;
    Limits m_limits;
    Stop m_stop = Stop::None;
    uint64_t m_rows = 0;
    uint64_t m_rowMark = 0;
    uint64_t m_statementRows = 0;
    Clock::time_point m_lastRow;
};

// One prepared statement on a guarded connection; finalized on destruction.
class Statement {
public:
    Statement(Connection& connection, const std::string& sql)
        : m_connection(connection), m_sql(sql) {
        m_connection.queryStarted();
        if (sqlite3_prepare_v2(db(), sql.c_str(), -1, &m_stmt, nullptr) != SQLITE_OK)
            fail();
    }
    ~Statement() { sqlite3_finalize(m_stmt); }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    bool step() {
        const int rc = sqlite3_step(m_stmt);
        if (rc == SQLITE_ROW) {
            if (!m_connection.rowYielded())
                tooManyRows();
            return true;
        }
        if (rc == SQLITE_DONE)
            return false;
        fail();
    }
    bool isNull(int c) const { return sqlite3_column_type(m_stmt, c) == SQLITE_NULL; }
    // Whether integer column c, already read as v, was NULL. NULL reads as 0, so only a 0 costs
    // the type check: this runs for two columns of every row.
    bool isNull(int c, int64_t v) const { return v == 0 && isNull(c); }
    int64_t i64(int c) const { return sqlite3_column_int64(m_stmt, c); }
    double f64(int c) const { return sqlite3_column_double(m_stmt, c); }
    std::string_view text(int c) const {
        const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(m_stmt, c));
        return p ? std::string_view(p, static_cast<size_t>(sqlite3_column_bytes(m_stmt, c)))
                 : std::string_view();
    }

private:
    sqlite3* db() const { return m_connection.get(); }

    [[noreturn]] void fail();
    [[noreturn]] void tooManyRows();

    Connection& m_connection;
    std::string m_sql;
    sqlite3_stmt* m_stmt = nullptr;
};

// Rows whose integer column `column` (an index into the columns read) holds one of `values`:
// SQL's `WHERE name IN (values)`, which a NULL or missing column never matches.
struct RowFilter {
    int column = -1; // -1: every row
    std::vector<int64_t> values;

    bool matches(const PageReader& row) const {
        return column < 0 || (!row.isNull(column) && std::find(values.begin(), values.end(),
                                                               row.i64(column)) != values.end());
    }
};

// The rows of one table, read from its pages (PageReader, issue 16) for as long as they hold
// nothing it does not decode, then by SQL that skips the rows the reader gave (`LIMIT -1 OFFSET
// n` of the same query): SQLite meets whatever stopped the reader (a REAL value, a damaged page)
// exactly as in a scan of its own, and the rows are the same either way.
class TableRows {
public:
    TableRows(Connection& connection, const std::string& table,
              const std::vector<PageReader::Column>& columns, std::string sql, RowFilter filter,
              bool readPages)
        : m_connection(connection), m_sql(std::move(sql)), m_filter(std::move(filter)) {
        if (readPages)
            m_pages =
                PageReader::open(connection.get(), table, columns, nullptr, connection.keepGoing());
        if (!m_pages)
            m_statement = std::make_unique<Statement>(connection, m_sql);
    }

    bool step() {
        if (m_pages) {
            while (m_pages->next()) {
                if (m_filter.matches(*m_pages)) {
                    ++m_given;
                    return true;
                }
            }
            if (m_pages->cancelled())
                throw LoadCancelled();
            if (!m_pages->stopped())
                return false;
            m_pages.reset();
            m_statement = std::make_unique<Statement>(m_connection, m_sql + " LIMIT -1 OFFSET " +
                                                                        std::to_string(m_given));
        }
        return m_statement->step();
    }
    bool isNull(int c) const { return m_pages ? m_pages->isNull(c) : m_statement->isNull(c); }
    bool isNull(int c, int64_t v) const {
        return m_pages ? m_pages->isNull(c) : m_statement->isNull(c, v);
    }
    int64_t i64(int c) const { return m_pages ? m_pages->i64(c) : m_statement->i64(c); }
    std::string_view text(int c) const { return m_pages ? m_pages->text(c) : m_statement->text(c); }

private:
    Connection& m_connection;
    std::string m_sql; // with the filter's WHERE
    RowFilter m_filter;
    uint64_t m_given = 0; // rows step() returned from the pages
    std::unique_ptr<PageReader> m_pages;
    std::unique_ptr<Statement> m_statement;
};

} // namespace warpline::model
