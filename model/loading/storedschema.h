#pragma once

// StoredSchema: which of the tables the loader reads a trace stores, with which columns, and so
// which dialect it is: a Warpline trace (WARPLINE_META or WARPLINE_KERNELS; its format version
// from PRAGMA user_version, whose major part may be at most TraceLoader::kMaxFormatMajor), or an
// Nsight Systems export (anything else with a kernel or runtime table). Older Warpline formats
// differ in a unit (TARGET_INFO_GPU.clockRate in kHz before 2.0: the readers ask origin() and
// formatVersion()) or a table (driver calls in CUPTI_ACTIVITY_KIND_DRIVER in 1.x: hasTable()).
// The loader's (traceloader.cpp) only, not an interface of the model.
//
// Only stored tables and stored columns count: a view, a virtual table or a generated column of a
// name the loader reads is never read (it runs the file's own SQL, which may never end or may
// invent rows); read() says so in warnings(), and hasTable()/hasColumn() answer false for it.
// Names compare without case, as SQLite's do; SQL is built only from the loader's own constant
// names (select()), never from text the file holds.
//
// Cost: read() is a few catalogue queries and estimateRows() one MAX(rowid); the rest are map
// lookups.
// Thread affinity: read() on the thread of its connection; afterwards read-only, and used by the
// loading thread and the API reader thread at once.

#include "guardedquery.h"
#include "tracetypes.h"

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace warpline::model {

// No stored row of a table the loader reads takes fewer bytes of the file (a cell of a few small
// integers): caps a crafted file's rowids (MAX(rowid) can be 2^62 with one row).
inline constexpr uint64_t kMinFileBytesPerRow = 16;

class StoredSchema {
public:
    // A file without tables (before read()).
    StoredSchema() = default;

    // PRAGMA user_version and the stored tables and columns of the names the loader reads, on
    // `db` (display name `fileName`). Throws TraceError: NewerVersion for a Warpline trace of a
    // newer major format, NotATrace for a file without a stored kernel or runtime table.
    static StoredSchema read(Connection& db, const std::string& fileName);

    TraceOrigin origin() const { return m_origin; }
    int formatVersion() const { return m_formatVersion; } // PRAGMA user_version (100 = 1.0)
    // What the user should know about the schema (generated columns, views, tables a Warpline
    // recording always has that are missing), one sentence each, in the order found.
    const std::vector<std::string>& warnings() const { return m_warnings; }

    bool hasTable(const std::string& name) const;
    bool hasColumn(const std::string& table, const std::string& column) const;
    // "X is a view, not a stored table: ..." when the file defines a read table's name as a view
    // or virtual table; "" otherwise, and for a Warpline trace's own compatibility view over its
    // kernel tables (never read: WARPLINE_KERNELS is).
    std::string notStoredNote(const std::string& table) const;

    // SELECT of the named columns, NULL for those the table lacks, as a full scan in rowid order.
    std::string select(const std::string& table, std::initializer_list<const char*> columns) const;
    // The named columns of a table, read from its pages when `readPages` (TableRows), as select()
    // names them; textColumns are indices of columns read with text(), the rest are integers.
    std::unique_ptr<TableRows> rows(Connection& db, const std::string& table,
                                    std::initializer_list<const char*> columns,
                                    std::initializer_list<int> textColumns, RowFilter filter,
                                    bool readPages) const;
    // The most rows a table may give (MAX(rowid)), at most `fileBytes` / kMinFileBytesPerRow; 0
    // when the table is not stored.
    int64_t estimateRows(Connection& db, const std::string& table, uint64_t fileBytes) const;

private:
    TraceOrigin m_origin = TraceOrigin::Warpline;
    int m_formatVersion = 0;
    // Lower-case name -> lower-case stored columns, of the tables the loader reads that the file
    // stores. Views and virtual tables of those names are in m_notStored instead.
    std::map<std::string, std::set<std::string>> m_columns;
    std::map<std::string, std::string> m_notStored; // lower-case name -> "a view", ...
    std::vector<std::string> m_warnings;
};

} // namespace warpline::model
