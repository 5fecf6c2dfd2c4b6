#pragma once

// PageReader: the rows of one table, decoded straight from the database file's table b-tree
// pages instead of through SQLite's virtual machine (issue 16: SQLite spends about 170 ns per
// row of 6-8 integer columns; this decodes the same row in a small fraction of that).
//
// It reads only what it can decode exactly as SQLite would return it, and stops where it meets
// anything else, so the caller goes on with SQL where it stopped (a full scan past the rows it
// gave: a damaged page is then met by SQLite exactly as in a scan of its own) and the rows seen
// are the same in both cases:
//  - open() refuses (nullptr and why) a file in WAL mode or not UTF-8, a WITHOUT ROWID or virtual
//    table, a table with hidden or generated columns or a column named rowid/oid/_rowid_, and a
//    requested column that is the table's primary key;
//  - next() stops (stopped() true, and why) at a page that is not a well-formed table b-tree page,
//    a page number beyond the file, rowids out of order, a record whose payload spills to
//    overflow pages, a value of a type the column was not asked for (a REAL, a BLOB, TEXT in an
//    integer column, a number in a text column), and a short record whose missing column has a
//    default other than NULL. A damaged or crafted file therefore never gets past it: SQLite
//    reads the rest and reports what it finds.
// Pages are read through SQLite's own file handle of the connection (no second descriptor, so
// SQLite's POSIX locks stay intact), while a statement of this reader holds the connection's read
// lock, so no writer changes the file meanwhile. Reads are batched over runs of consecutive leaf
// pages. Time is bounded by the file's size: every page is visited at most once.
//
// Not thread-safe; use one reader (and one connection) per thread.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;

namespace warpline::model {

class PageReader {
public:
    enum class Type : uint8_t { Integer, Text };
    struct Column {
        std::string name; // "" or a column the table lacks: always NULL
        Type type = Type::Integer;
    };

    // A reader positioned before the first row, or nullptr when this table cannot be read from
    // its pages (*whyNot says why, for tests and diagnostics). keepGoing, when set, is asked
    // between batches of pages; returning false stops the reader (stopped(), cancelled()).
    static std::unique_ptr<PageReader> open(sqlite3* db, const std::string& table,
                                            const std::vector<Column>& columns,
                                            std::string* whyNot = nullptr,
                                            std::function<bool()> keepGoing = {});
    ~PageReader();
    PageReader(const PageReader&) = delete;
    PageReader& operator=(const PageReader&) = delete;

    // The next row, in rowid order (SQLite's order for a full scan). false at the end of the
    // table, or when the reader stopped (stopped()): then read on with SQL, skipping the rows a
    // full scan gives first (they are the rows this reader gave).
    bool next();
    bool stopped() const { return !m_stopReason.empty(); }
    bool cancelled() const { return m_cancelled; }
    const std::string& stopReason() const { return m_stopReason; }
    // The rowid of the last row next() returned; INT64_MIN before the first row.
    int64_t lastRowid() const { return m_lastRowid; }

    // Values of the current row, by index into the columns passed to open(). A NULL reads as 0
    // and as "" (as sqlite3_column_int64 and _text return them).
    bool isNull(int c) const { return m_values[static_cast<size_t>(c)].null; }
    int64_t i64(int c) const { return m_values[static_cast<size_t>(c)].integer; }
    std::string_view text(int c) const { return m_values[static_cast<size_t>(c)].text; }

private:
    struct Value {
        bool null = true;
        int64_t integer = 0;
        std::string_view text;
    };
    struct Slot {
        int output = -1; // index into m_values, -1: not requested
        Type type = Type::Integer;
        bool nullDefault = true; // the column's default is NULL (a short record reads NULL)
    };

    PageReader() = default;
    bool stop(std::string why);
    bool collectLeaves(uint32_t pgnoRoot);
    // SQLite's most cells a page may claim (btree.c, MX_CELL).
    size_t maxCells() const { return (m_pageSize - 8) / 6; }
    bool loadNextLeaf();
    bool decodeCell(size_t cell);
    bool readPages(uint32_t first, uint32_t count, unsigned char* into);

    struct Handle;
    std::unique_ptr<Handle> m_handle;
    std::function<bool()> m_keepGoing;
    uint32_t m_pageSize = 0;
    uint32_t m_usable = 0;
    uint64_t m_pageCount = 0; // the database's size in pages, as SQLite takes it
    uint32_t m_root = 0;
    std::vector<Slot> m_slots; // by record column index, up to the last requested one
    std::vector<Value> m_values;

    std::vector<uint32_t> m_leaves; // leaf page numbers, in key order
    size_t m_nextLeaf = 0;          // into m_leaves: the first leaf not yet loaded
    std::vector<unsigned char> m_buffer;
    size_t m_bufferPages = 0; // leaves in m_buffer
    size_t m_bufferLeaf = 0;  // index into m_leaves of m_buffer's first page
    size_t m_pageInBuffer = 0;
    const unsigned char* m_page = nullptr; // the current leaf
    uint32_t m_pageNumber = 0;
    size_t m_cellCount = 0;
    size_t m_cellsFrom = 0; // where the page's cell content area starts
    size_t m_cell = 0;

    int64_t m_lastRowid = INT64_MIN;
    bool m_anyRow = false;
    bool m_cancelled = false;
    std::string m_stopReason;
};

} // namespace warpline::model
