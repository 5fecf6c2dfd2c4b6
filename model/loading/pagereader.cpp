#include "pagereader.h"

#include <algorithm>
#include <cstring>
#include <sqlite3.h>
#include <strings.h>
#include <sys/stat.h>

// The SQLite file format: https://www.sqlite.org/fileformat2.html (sections 1.3 the header, 1.6
// b-tree pages, 2.1 the record format).

namespace warpline::model {

namespace {

constexpr unsigned char kInteriorTable = 0x05;
constexpr unsigned char kLeafTable = 0x0D;
constexpr unsigned kMaxDepth = 20;      // SQLite's own cursor depth limit (BTCURSOR_MAX_DEPTH)
constexpr size_t kBatchBytes = 1 << 18; // leaves read per call: runs of consecutive pages

uint32_t be16(const unsigned char* p) {
    return (uint32_t(p[0]) << 8) | p[1];
}
uint32_t be32(const unsigned char* p) {
    return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
}

// An SQLite varint at p, reading no byte at or past end. Returns the bytes used, 0 if it runs
// past end.
size_t varintSlow(const unsigned char* p, const unsigned char* end, uint64_t& value) {
    uint64_t v = 0;
    for (size_t i = 0; i < 8; ++i) {
        if (p + i >= end)
            return 0;
        v = (v << 7) | (p[i] & 0x7F);
        if ((p[i] & 0x80) == 0) {
            value = v;
            return i + 1;
        }
    }
    if (p + 8 >= end)
        return 0;
    value = (v << 8) | p[8];
    return 9;
}
// Serial types and small sizes are one byte: that case inline.
inline size_t varint(const unsigned char* p, const unsigned char* end, uint64_t& value) {
    if (p < end && *p < 0x80) {
        value = *p;
        return 1;
    }
    return varintSlow(p, end, value);
}

// The integer of serial type 1-6 (big-endian two's complement of 1, 2, 3, 4, 6 or 8 bytes).
inline int64_t serialInteger(const unsigned char* p, uint64_t type) {
    switch (type) {
    case 1:
        return static_cast<int8_t>(p[0]);
    case 2:
        return static_cast<int16_t>(be16(p));
    case 3:
        return static_cast<int32_t>((uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) |
                                    (uint32_t(p[2]) << 8)) >>
               8;
    case 4:
        return static_cast<int32_t>(be32(p));
    case 5:
        return static_cast<int64_t>(
            (static_cast<uint64_t>(static_cast<int64_t>(static_cast<int16_t>(be16(p)))) << 32) |
            be32(p + 2));
    default:
        return static_cast<int64_t>((uint64_t(be32(p)) << 32) | be32(p + 4));
    }
}

// Bytes a serial type's value takes in the record body.
uint64_t serialSize(uint64_t type) {
    static constexpr unsigned char kSizes[12] = {0, 1, 2, 3, 4, 6, 8, 8, 0, 0, 0, 0};
    return type < 12 ? kSizes[type] : (type - 12) / 2;
}

// The root page of `table` in the schema as SQLite parsed it: the P2 of the OpenRead of its own
// full scan (NOT INDEXED: the table's b-tree, never an index). 0 when there is none, and *why.
int64_t parsedRootPage(sqlite3* db, const std::string& table, std::string* why) {
    // A stored rowid table of that name, as SQLite parsed the schema (a view's scan would open
    // the tables below it).
    sqlite3_stmt* kind = nullptr;
    *why = "no stored table of that name";
    if (sqlite3_prepare_v2(db, "SELECT type, wr FROM pragma_table_list(?1) WHERE schema = 'main'",
                           -1, &kind, nullptr) == SQLITE_OK) {
        sqlite3_bind_text(kind, 1, table.c_str(), -1, SQLITE_TRANSIENT);
        if (sqlite3_step(kind) == SQLITE_ROW) {
            const auto* type = reinterpret_cast<const char*>(sqlite3_column_text(kind, 0));
            if (!type || std::strcmp(type, "table") != 0)
                *why = std::string("a ") + (type ? type : "?") + ", no stored table of that name";
            else if (sqlite3_column_int(kind, 1) != 0)
                *why = "a WITHOUT ROWID table";
            else
                why->clear();
        }
    }
    sqlite3_finalize(kind);
    if (!why->empty())
        return 0;
    std::string quoted = "\"";
    for (const char c : table)
        quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    quoted += '"';
    sqlite3_stmt* st = nullptr;
    const std::string sql = "EXPLAIN SELECT * FROM main." + quoted + " NOT INDEXED";
    int64_t root = 0;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            const auto* op = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
            if (op && std::strcmp(op, "OpenRead") == 0 && sqlite3_column_int64(st, 4) == 0) {
                root = sqlite3_column_int64(st, 3);
                break;
            }
        }
    }
    sqlite3_finalize(st);
    if (root <= 0)
        *why = "no b-tree of its own (a virtual table)";
    return root;
}

} // namespace

// SQLite's file handle of the connection, and the statement that holds its read lock.
struct PageReader::Handle {
    sqlite3_file* file = nullptr;
    sqlite3_stmt* lock = nullptr;
    ~Handle() { sqlite3_finalize(lock); }
};

PageReader::~PageReader() = default;

std::unique_ptr<PageReader> PageReader::open(sqlite3* db, const std::string& table,
                                             const std::vector<Column>& columns,
                                             std::string* whyNot, std::function<bool()> keepGoing) {
    const auto refuse = [whyNot](const std::string& why) {
        if (whyNot)
            *whyNot = why;
        return std::unique_ptr<PageReader>();
    };
    std::unique_ptr<PageReader> r(new PageReader());
    r->m_keepGoing = std::move(keepGoing);
    r->m_handle = std::make_unique<Handle>();

    // Stepping this statement takes the connection's read lock, which it holds until the reader
    // is destroyed: the file cannot change between the look at the schema and the last page.
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_schema", -1, &r->m_handle->lock, nullptr) !=
            SQLITE_OK ||
        sqlite3_step(r->m_handle->lock) != SQLITE_ROW)
        return refuse("cannot read the schema");
    // The table's root page as SQLite parsed the schema: the page its own full scan opens (a
    // schema row of the same name that SQLite skipped, or whose SQL names another table, is
    // never taken instead).
    std::string why;
    const int64_t root = parsedRootPage(db, table, &why);
    if (root <= 0)
        return refuse(why);
    if (root == 1)
        return refuse("the table's root is the schema's page");

    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &r->m_handle->file) !=
            SQLITE_OK ||
        !r->m_handle->file || !r->m_handle->file->pMethods)
        return refuse("no file handle");
    // A -wal beside the file holds pages SQLite reads instead of the file's (the loader folds a
    // WAL into a private copy first; this is the reader's own guard).
    if (const char* name = sqlite3_db_filename(db, "main"); !name || !*name) {
        return refuse("no file name");
    } else {
        struct stat st {};
        if (::lstat((std::string(name) + "-wal").c_str(), &st) == 0)
            return refuse("a write-ahead log (WAL) is beside the file");
    }
    sqlite3_file* file = r->m_handle->file;
    unsigned char header[100];
    if (file->pMethods->xRead(file, header, sizeof header, 0) != SQLITE_OK)
        return refuse("cannot read the file header");
    if (header[18] != 1 || header[19] != 1)
        return refuse("not in rollback-journal mode (WAL)");
    if (be32(header + 56) != SQLITE_UTF8)
        return refuse("text is not UTF-8");
    const uint32_t pageSize = be16(header + 16) == 1 ? 65536 : be16(header + 16);
    if (pageSize < 512 || pageSize > 65536 || (pageSize & (pageSize - 1)) != 0)
        return refuse("bad page size");
    r->m_pageSize = pageSize;
    r->m_usable = pageSize - header[20];
    if (r->m_usable < 480)
        return refuse("bad reserved space");
    sqlite3_int64 fileSize = 0;
    if (file->pMethods->xFileSize(file, &fileSize) != SQLITE_OK || fileSize <= 0)
        return refuse("cannot size the file");
    // The database's size in pages as SQLite takes it (btree.c, lockBtree): the header's count
    // when it is valid (non-zero, and written by the same change as the change counter), else the
    // file's length rounded up; a header count beyond the file is an error SQLite reports.
    const uint64_t filePages = (static_cast<uint64_t>(fileSize) + pageSize - 1) / pageSize;
    const uint64_t headerPages = be32(header + 28);
    r->m_pageCount =
        headerPages != 0 && std::memcmp(header + 24, header + 92, 4) == 0 ? headerPages : filePages;
    if (r->m_pageCount > filePages)
        return refuse("the header counts more pages than the file has");
    if (static_cast<uint64_t>(root) > r->m_pageCount)
        return refuse("root page outside the file (a virtual table, or damage)");

    // Columns in record order; every stored column has its slot (no hidden or generated ones).
    sqlite3_stmt* info = nullptr;
    if (sqlite3_prepare_v2(db,
                           "SELECT cid, name, hidden, pk, dflt_value IS NULL FROM "
                           "pragma_table_xinfo(?1)",
                           -1, &info, nullptr) != SQLITE_OK) {
        sqlite3_finalize(info);
        return refuse("cannot read the table's columns");
    }
    sqlite3_bind_text(info, 1, table.c_str(), -1, SQLITE_TRANSIENT);
    std::vector<Slot> slots;
    why.clear();
    while (why.empty() && sqlite3_step(info) == SQLITE_ROW) {
        const int64_t cid = sqlite3_column_int64(info, 0);
        const auto* name = reinterpret_cast<const char*>(sqlite3_column_text(info, 1));
        if (!name || cid != static_cast<int64_t>(slots.size())) {
            why = "unexpected column list";
            break;
        }
        if (sqlite3_column_int(info, 2) != 0) {
            why = "hidden or generated columns";
            break;
        }
        if (strcasecmp(name, "rowid") == 0 || strcasecmp(name, "oid") == 0 ||
            strcasecmp(name, "_rowid_") == 0) {
            why = "a column named like the rowid";
            break;
        }
        Slot slot;
        slot.nullDefault = sqlite3_column_int(info, 4) != 0;
        for (size_t c = 0; c < columns.size(); ++c) {
            if (columns[c].name.empty() || strcasecmp(columns[c].name.c_str(), name) != 0)
                continue;
            if (sqlite3_column_int(info, 3) != 0) {
                why = "a requested column is the primary key";
                break;
            }
            slot.output = static_cast<int>(c);
            slot.type = columns[c].type;
        }
        slots.push_back(slot);
    }
    sqlite3_finalize(info);
    if (!why.empty())
        return refuse(why);
    if (slots.empty())
        return refuse("no columns");
    // Keep the slots up to the last requested column: the record is not parsed further.
    while (!slots.empty() && slots.back().output < 0)
        slots.pop_back();
    r->m_slots = std::move(slots);
    r->m_values.assign(columns.size(), Value{});

    r->m_root = static_cast<uint32_t>(root);
    if (!r->collectLeaves(static_cast<uint32_t>(root)))
        return refuse(r->m_stopReason);
    return r;
}

bool PageReader::stop(std::string why) {
    if (m_stopReason.empty())
        m_stopReason = std::move(why);
    return false;
}

bool PageReader::readPages(uint32_t first, uint32_t count, unsigned char* into) {
    if (first < 1 || first + uint64_t(count) - 1 > m_pageCount)
        return stop("page number outside the file");
    sqlite3_file* file = m_handle->file;
    const int rc = file->pMethods->xRead(file, into, static_cast<int>(count * m_pageSize),
                                         static_cast<sqlite3_int64>(first - 1) * m_pageSize);
    return rc == SQLITE_OK || stop("cannot read page " + std::to_string(first));
}

// Walks the interior pages from the root and lists the leaves in key order. Interior pages are a
// few per thousand leaves. Each page is visited at most once (a page reached twice is a cycle).
bool PageReader::collectLeaves(uint32_t pgnoRoot) {
    std::vector<unsigned char> page(m_pageSize);
    std::vector<uint64_t> seen((m_pageCount + 64) / 64, 0);
    const auto visit = [&](uint32_t pgno) {
        uint64_t& word = seen[pgno / 64];
        const uint64_t bit = uint64_t(1) << (pgno % 64);
        if (word & bit)
            return false;
        word |= bit;
        return true;
    };
    // Depth-first, children in order: a stack of (page, child pages still to visit). All leaves
    // of a table b-tree are at one depth: once an interior page's first child is a leaf, the
    // others are taken as leaves unread (loadNextLeaf checks each when it reads it anyway), so a
    // leaf is read once, not twice.
    struct Frame {
        std::vector<uint32_t> children;
        size_t next = 0;
        bool leafChildren = false;
    };
    std::vector<Frame> stack;
    uint64_t visited = 0;
    const uint32_t root = pgnoRoot;
    const auto expand = [&](uint32_t pgno) -> bool {
        if (pgno < 1 || pgno > m_pageCount)
            return stop("page number outside the file");
        if (!visit(pgno))
            return stop("a page is reached twice (a cycle)");
        if (++visited % 4096 == 0 && m_keepGoing && !m_keepGoing()) {
            m_cancelled = true;
            return stop("cancelled");
        }
        if (!readPages(pgno, 1, page.data()))
            return false;
        const size_t h = pgno == 1 ? 100 : 0;
        const unsigned char type = page[h];
        if (type == kLeafTable) {
            m_leaves.push_back(pgno);
            return true;
        }
        if (type != kInteriorTable)
            return stop("page " + std::to_string(pgno) + " is not a table b-tree page");
        const size_t cells = be16(&page[h + 3]);
        if (cells > maxCells())
            return stop("more cells than a page can hold");
        // SQLite's cursor refuses a child page without cells, and a root without cells other
        // than page 1 (btree.c, getAndInitPage and moveToRoot).
        if (cells == 0)
            return stop(pgno == root ? "an interior root page without cells"
                                     : "an interior page without cells");
        if (h + 12 + 2 * cells > m_usable)
            return stop("a cell pointer array past the page");
        Frame frame;
        frame.children.reserve(cells + 1);
        for (size_t i = 0; i < cells; ++i) {
            const size_t off = be16(&page[h + 12 + 2 * i]);
            if (off < h + 12 + 2 * cells || off + 4 > m_usable)
                return stop("a cell outside its page");
            frame.children.push_back(be32(&page[off]));
        }
        frame.children.push_back(be32(&page[h + 8])); // the right-most child
        stack.push_back(std::move(frame));
        return true;
    };
    if (!expand(root))
        return false;
    while (!stack.empty()) {
        Frame& top = stack.back();
        if (top.next == top.children.size()) {
            stack.pop_back();
            continue;
        }
        const uint32_t child = top.children[top.next++];
        // A child at this depth is one SQLite's cursor cannot descend to (BTCURSOR_MAX_DEPTH).
        if (stack.size() >= kMaxDepth)
            return stop("the b-tree is deeper than SQLite allows");
        if (top.leafChildren) {
            if (child < 1 || child > m_pageCount)
                return stop("page number outside the file");
            if (!visit(child))
                return stop("a page is reached twice (a cycle)");
            m_leaves.push_back(child);
            continue;
        }
        const size_t depth = stack.size();
        const size_t leaves = m_leaves.size();
        if (!expand(child))
            return false;
        if (stack.size() == depth && m_leaves.size() == leaves + 1)
            stack[depth - 1].leafChildren = true; // (expand may have moved `top`)
    }
    return true;
}

// Reads the next leaf (a run of consecutive leaves at once) and checks its header.
bool PageReader::loadNextLeaf() {
    if (m_bufferPages > 0 && m_pageInBuffer + 1 < m_bufferPages) {
        ++m_pageInBuffer;
    } else {
        if (m_nextLeaf >= m_leaves.size())
            return false;
        if (m_keepGoing && !m_keepGoing()) {
            m_cancelled = true;
            return stop("cancelled");
        }
        const size_t maxPages = std::max<size_t>(1, kBatchBytes / m_pageSize);
        size_t run = 1;
        while (run < maxPages && m_nextLeaf + run < m_leaves.size() &&
               m_leaves[m_nextLeaf + run] == m_leaves[m_nextLeaf] + run)
            ++run;
        m_buffer.resize(run * m_pageSize);
        if (!readPages(m_leaves[m_nextLeaf], static_cast<uint32_t>(run), m_buffer.data()))
            return false;
        m_bufferLeaf = m_nextLeaf;
        m_bufferPages = run;
        m_pageInBuffer = 0;
        m_nextLeaf += run;
    }
    m_page = m_buffer.data() + m_pageInBuffer * m_pageSize;
    m_pageNumber = m_leaves[m_bufferLeaf + m_pageInBuffer];
    const size_t h = m_pageNumber == 1 ? 100 : 0;
    if (m_page[h] != kLeafTable)
        return stop("page " + std::to_string(m_pageNumber) + " is not a table leaf");
    m_cellCount = be16(m_page + h + 3);
    if (m_cellCount > maxCells())
        return stop("more cells than a page can hold");
    if (m_cellCount == 0 && m_pageNumber != m_root)
        return stop("a leaf page without cells");
    const uint32_t contentStart = be16(m_page + h + 5);
    m_cellsFrom =
        std::max<size_t>(h + 8 + 2 * m_cellCount, contentStart == 0 ? 65536 : contentStart);
    if (h + 8 + 2 * m_cellCount > m_usable)
        return stop("a cell pointer array past the page");
    m_cell = 0;
    return true;
}

bool PageReader::next() {
    if (stopped())
        return false;
    while (!m_page || m_cell >= m_cellCount) {
        if (!loadNextLeaf())
            return false;
    }
    if (!decodeCell(m_cell))
        return false;
    ++m_cell;
    return true;
}

bool PageReader::decodeCell(size_t cell) {
    const size_t h = m_pageNumber == 1 ? 100 : 0;
    const unsigned char* page = m_page;
    const unsigned char* pageEnd = page + m_usable;
    const size_t off = be16(page + h + 8 + 2 * cell);
    if (off < m_cellsFrom || off >= m_usable)
        return stop("a cell outside its page's cell content area");
    const unsigned char* p = page + off;
    uint64_t payloadSize = 0;
    uint64_t rowid = 0;
    size_t n = varint(p, pageEnd, payloadSize);
    // SQLite reads a payload size into 32 bits, 7 bits a byte even in a ninth byte (btree.c,
    // btreeParseCellPtr): past 4 bytes its value and this one's may differ.
    if (n == 0 || n > 4)
        return stop(n == 0 ? "a cell past its page" : "a payload size of more than 4 bytes");
    p += n;
    n = varint(p, pageEnd, rowid);
    if (n == 0)
        return stop("a cell past its page");
    p += n;
    if (m_anyRow && static_cast<int64_t>(rowid) <= m_lastRowid)
        return stop("rowids out of order");
    if (payloadSize > m_usable - 35)
        return stop("a record continues on overflow pages");
    if (payloadSize > static_cast<uint64_t>(pageEnd - p))
        return stop("a record past its page");
    const unsigned char* record = p;
    const unsigned char* recordEnd = p + payloadSize;

    uint64_t headerSize = 0;
    n = varint(record, recordEnd, headerSize);
    // SQLite reads the header size and serial types as 32-bit varints (a larger one becomes
    // 0xFFFFFFFF), and calls a header of more than 98307 bytes corrupt (vdbe.c, OP_Column).
    if (n == 0 || n > 4 || headerSize < n || headerSize > payloadSize || headerSize > 98307)
        return stop("a malformed record header");
    const unsigned char* typeAt = record + n;
    const unsigned char* headerEnd = record + headerSize;
    // SQLite reads one serial type before it looks at the header's end (vdbe.c, OP_Column, the
    // jump to op_column_read_header): a header of no types is a read past it, and corrupt.
    if (typeAt == headerEnd && !m_slots.empty())
        return stop("a record header without columns");
    const unsigned char* body = headerEnd;
    for (size_t i = 0; i < m_slots.size(); ++i) {
        const Slot& slot = m_slots[i];
        if (typeAt >= headerEnd) {
            // A record shorter than the table (columns added later): the column's default.
            if (slot.output >= 0) {
                if (!slot.nullDefault)
                    return stop("a short record and a column default");
                m_values[static_cast<size_t>(slot.output)] = Value{};
            }
            continue;
        }
        uint64_t type = 0;
        n = varint(typeAt, headerEnd, type);
        if (n == 0 || n > 4)
            return stop("a malformed record header");
        typeAt += n;
        const uint64_t size = serialSize(type);
        if (size > static_cast<uint64_t>(recordEnd - body))
            return stop("a value past its record");
        if (slot.output >= 0) {
            Value& v = m_values[static_cast<size_t>(slot.output)];
            if (type == 0) {
                v = Value{};
            } else if (slot.type == Type::Integer) {
                if (type >= 1 && type <= 6)
                    v.integer = serialInteger(body, type);
                else if (type == 8 || type == 9)
                    v.integer = static_cast<int64_t>(type - 8);
                else
                    return stop("a value that is not an integer in an integer column");
                v.null = false;
                v.text = {};
            } else {
                if (type < 13 || (type & 1) == 0)
                    return stop("a value that is not text in a text column");
                v.null = false;
                v.integer = 0;
                v.text = std::string_view(reinterpret_cast<const char*>(body), size);
            }
        }
        body += size;
    }
    // As SQLite checks a record whose header it read to the end: the values fill the payload.
    if (typeAt >= headerEnd && (typeAt > headerEnd || body != recordEnd))
        return stop("a malformed record");
    m_lastRowid = static_cast<int64_t>(rowid);
    m_anyRow = true;
    return true;
}

} // namespace warpline::model
