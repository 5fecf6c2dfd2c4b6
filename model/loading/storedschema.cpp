#include "storedschema.h"

#include "traceerror.h"
#include "traceloader.h"

#include <algorithm>
#include <cctype>
#include <sqlite3.h>
#include <strings.h>
#include <utility>

namespace warpline::model {

namespace {

// The tables the loader reads (nsys's names, and Warpline's own), with what each holds for
// messages. Nothing else in a file is looked at.
constexpr std::pair<const char*, const char*> kReadTables[] = {
    {"StringIds", "names"},
    {"TARGET_INFO_SESSION_START_TIME", "session start time"},
    {"WARPLINE_META", "recording details"},
    {"PROCESSES", "process names"},
    {"ThreadNames", "thread names"},
    {"TARGET_INFO_GPU", "GPU descriptions"},
    {"TARGET_INFO_CUDA_STREAM", "stream priorities"},
    {"WARPLINE_STREAM_NAMES", "stream names"},
    {"CUPTI_ACTIVITY_KIND_RUNTIME", "CUDA API calls"},
    {"CUPTI_ACTIVITY_KIND_DRIVER", "CUDA driver calls"},
    {"WARPLINE_KERNELS", "kernels"},
    {"WARPLINE_KERNEL_CONFIGS", "kernel launch configurations"},
    {"CUPTI_ACTIVITY_KIND_KERNEL", "kernels"},
    {"CUPTI_ACTIVITY_KIND_MEMCPY", "memory copies"},
    {"CUPTI_ACTIVITY_KIND_MEMSET", "memsets"},
    {"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "synchronizations"},
    {"NVTX_EVENTS", "NVTX ranges"},
    {"GPU_METRICS", "GPU metric samples"},
    {"CUDA_CALLCHAINS", "call stacks"},
    {"COMPOSITE_EVENTS", "CPU samples"},
    {"SAMPLING_CALLCHAINS", "CPU sample stacks"},
    {"SCHED_EVENTS", "thread states"},
    {"TARGET_INFO_GPU_METRICS", "GPU metric names"},
    {"WARPLINE_DROPPED", "dropped-record counts"},
    {"WARPLINE_ERRORS", "collector errors"}};

std::string lower(std::string s) {
    for (char& c : s)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// The name as kReadTables spells it of a table name in any case; nullptr when not read.
const char* readTableName(const std::string& name) {
    for (const auto& [table, what] : kReadTables) {
        if (::strcasecmp(table, name.c_str()) == 0)
            return table;
    }
    return nullptr;
}

} // namespace

StoredSchema StoredSchema::read(Connection& db, const std::string& fileName) {
    StoredSchema schema;
    {
        Statement st(db, "PRAGMA user_version");
        if (st.step())
            schema.m_formatVersion = static_cast<int>(st.i64(0));
    }
    // Only stored tables of the names the loader reads, never a view or virtual table of such a
    // name: a view runs the file's own query, which may never end or may invent rows. Columns a
    // table computes (virtual generated columns) are left out the same way and read as missing.
    bool anyTable = false;
    {
        // A virtual table is a table without pages of its own (rootpage 0).
        Statement st(db, "SELECT type, name, rootpage FROM sqlite_master WHERE type IN "
                         "('table', 'view')");
        while (st.step()) {
            anyTable = true;
            const std::string name(st.text(1));
            if (!readTableName(name))
                continue;
            if (st.text(0) == "view")
                schema.m_notStored[lower(name)] = "a view";
            else if (st.i64(2) == 0)
                schema.m_notStored[lower(name)] = "a virtual table";
            else
                schema.m_columns[lower(name)];
        }
    }
    for (auto& [table, columns] : schema.m_columns) {
        // Table names come from the file: bind them, never splice them into SQL.
        sqlite3_stmt* stmt = nullptr;
        if (sqlite3_prepare_v2(db.get(), "SELECT name, hidden FROM pragma_table_xinfo(?1)", -1,
                               &stmt, nullptr) != SQLITE_OK)
            continue;
        sqlite3_bind_text(stmt, 1, table.c_str(), -1, SQLITE_TRANSIENT);
        while (sqlite3_step(stmt) == SQLITE_ROW) {
            const auto* name = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
            if (!name)
                continue;
            if (sqlite3_column_int(stmt, 1) == 0 || sqlite3_column_int(stmt, 1) == 3)
                columns.insert(lower(name)); // stored, or generated and stored
            else
                schema.m_warnings.push_back(
                    fileName + ": column " + name + " of " + readTableName(table) +
                    " is computed by the file's own SQL (a generated column), not stored; "
                    "Warpline reads only stored values, so it is read as missing.");
        }
        sqlite3_finalize(stmt);
    }

    const bool warpline = schema.hasTable("WARPLINE_META") || schema.hasTable("WARPLINE_KERNELS");
    schema.m_origin = warpline ? TraceOrigin::Warpline : TraceOrigin::NsightSystemsExport;
    constexpr int kMaxFormatMajor = TraceLoader::kMaxFormatMajor;
    if (warpline && schema.m_formatVersion / 100 > kMaxFormatMajor) {
        const int v = schema.m_formatVersion;
        throw TraceError(TraceError::Kind::NewerVersion,
                         fileName + " was written by a newer Warpline (trace format " +
                             std::to_string(v / 100) + "." + std::to_string(v % 100) +
                             "); this Warpline reads format " + std::to_string(kMaxFormatMajor) +
                             ".x: update Warpline to open it");
    }
    if (warpline) {
        // Tables every Warpline recording has: one that is missing was dropped or lost after
        // recording, and what it held is missing from every view; say so instead of showing
        // "no kernels".
        static constexpr std::pair<const char*, const char*> kRequired[] = {
            {"WARPLINE_KERNELS", "kernels"},
            {"WARPLINE_KERNEL_CONFIGS", "kernel names and launch configurations"},
            {"CUPTI_ACTIVITY_KIND_RUNTIME", "CUDA API calls"},
            {"CUPTI_ACTIVITY_KIND_MEMCPY", "memory copies"},
            {"CUPTI_ACTIVITY_KIND_MEMSET", "memsets"},
            {"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "synchronizations"},
            {"NVTX_EVENTS", "NVTX ranges"},
            {"WARPLINE_META", "recording details (status, command line, versions)"},
            {"TARGET_INFO_GPU", "GPU descriptions"}};
        for (const auto& [table, what] : kRequired) {
            if (!schema.hasTable(table) && schema.m_notStored.count(lower(table)) == 0)
                schema.m_warnings.push_back(fileName + " has no " + table +
                                            " table, which every Warpline recording has: its " +
                                            what +
                                            " are missing (the file was edited or damaged "
                                            "after recording).");
        }
    }
    for (const auto& [table, what] : kReadTables) {
        if (const std::string note = schema.notStoredNote(table); !note.empty())
            schema.m_warnings.push_back(fileName + ": " + note + ", so its " + what +
                                        " are not shown.");
    }
    if (!schema.hasTable("CUPTI_ACTIVITY_KIND_KERNEL") && !schema.hasTable("WARPLINE_KERNELS") &&
        !schema.hasTable("CUPTI_ACTIVITY_KIND_RUNTIME")) {
        if (!anyTable)
            throw TraceError(TraceError::Kind::NotATrace,
                             fileName + " is not a Warpline or Nsight Systems trace: it is an "
                                        "empty SQLite database");
        std::string views;
        for (const char* table : {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME"}) {
            if (const std::string note = schema.notStoredNote(table); !note.empty())
                views += "; " + note;
        }
        throw TraceError(TraceError::Kind::NotATrace,
                         fileName +
                             " is not a Warpline or Nsight Systems trace: no "
                             "CUPTI_ACTIVITY_KIND_KERNEL or CUPTI_ACTIVITY_KIND_RUNTIME "
                             "table" +
                             views);
    }
    return schema;
}

bool StoredSchema::hasTable(const std::string& name) const {
    return m_columns.count(lower(name)) != 0;
}

bool StoredSchema::hasColumn(const std::string& table, const std::string& column) const {
    const auto it = m_columns.find(lower(table));
    return it != m_columns.end() && it->second.count(lower(column)) != 0;
}

std::string StoredSchema::notStoredNote(const std::string& table) const {
    const auto it = m_notStored.find(lower(table));
    if (it == m_notStored.end() ||
        (it->first == "cupti_activity_kind_kernel" && m_origin == TraceOrigin::Warpline))
        return {};
    return table + " is " + it->second +
           ", not a stored table: Warpline reads only the tables a file stores (a view runs the "
           "file's own query, which may never end or may invent rows)";
}

// Names are the loader's constants.
std::string StoredSchema::select(const std::string& table,
                                 std::initializer_list<const char*> columns) const {
    std::string sql = "SELECT ";
    bool first = true;
    for (const char* column : columns) {
        sql += first ? "" : ", ";
        first = false;
        sql += hasColumn(table, column) ? std::string("\"") + column + "\"" : std::string("NULL");
    }
    // NOT INDEXED: a full scan in rowid order, never an index the file defines (the order
    // TableRows relies on, and a crafted index cannot reorder or slow the read).
    return sql + " FROM \"" + table + "\" NOT INDEXED";
}

std::unique_ptr<TableRows> StoredSchema::rows(Connection& db, const std::string& table,
                                              std::initializer_list<const char*> columns,
                                              std::initializer_list<int> textColumns,
                                              RowFilter filter, bool readPages) const {
    std::vector<PageReader::Column> wanted;
    for (const char* column : columns) {
        PageReader::Column c;
        c.name = hasColumn(table, column) ? column : "";
        wanted.push_back(c);
    }
    for (const int c : textColumns)
        wanted[static_cast<size_t>(c)].type = PageReader::Type::Text;
    std::string sql = select(table, columns);
    if (filter.column >= 0) {
        sql += " WHERE " +
               std::string(wanted[static_cast<size_t>(filter.column)].name.empty()
                               ? "NULL"
                               : "\"" + wanted[static_cast<size_t>(filter.column)].name + "\"") +
               " IN (";
        for (size_t i = 0; i < filter.values.size(); ++i)
            sql += (i ? ", " : "") + std::to_string(filter.values[i]);
        sql += ")";
    }
    return std::make_unique<TableRows>(db, table, wanted, std::move(sql), std::move(filter),
                                       readPages);
}

int64_t StoredSchema::estimateRows(Connection& db, const std::string& table,
                                   uint64_t fileBytes) const {
    if (!hasTable(table))
        return 0;
    sqlite3_stmt* stmt = nullptr;
    const std::string sql = "SELECT MAX(rowid) FROM \"" + table + "\"";
    int64_t rows = 0;
    if (sqlite3_prepare_v2(db.get(), sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW)
        rows = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    // MAX(rowid) counts deleted rows too, and a crafted file's may be 2^62 with one row: no more
    // rows than the file's bytes can hold.
    return std::clamp<int64_t>(rows, 0, static_cast<int64_t>(fileBytes / kMinFileBytesPerRow));
}

} // namespace warpline::model
