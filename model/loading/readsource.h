#pragma once

// ReadSource: where a table reader (metareaders.h, gpureaders.h, threadreaders.h,
// stackreaders.h) reads its rows: the loading thread's guarded connection, the file's schema,
// and the progress each row read is counted in (which may throw LoadCancelled). The loader's
// (traceloader.cpp) only, not an interface of the model.
//
// Thread affinity: the loading thread (the API reader thread reads through a connection of its
// own, threadreaders.h). Holds references only: it lives no longer than one read phase.

#include "guardedquery.h"
#include "loadprogress.h"
#include "storedschema.h"

#include <initializer_list>
#include <memory>
#include <string>

namespace warpline::model {

struct ReadSource {
    Connection& db;
    const StoredSchema& schema;
    LoadProgress& progress;
    bool readPages; // TraceLoader::Options::readPages: decode large tables from their pages

    // The named columns of a table (StoredSchema::rows), from its pages when readPages.
    std::unique_ptr<TableRows> rows(const std::string& table,
                                    std::initializer_list<const char*> columns,
                                    std::initializer_list<int> textColumns = {},
                                    RowFilter filter = {}) const {
        return schema.rows(db, table, columns, textColumns, std::move(filter), readPages);
    }
    // A statement over the columns of a table (StoredSchema::select), by SQL.
    std::string select(const std::string& table, std::initializer_list<const char*> columns) const {
        return schema.select(table, columns);
    }
};

} // namespace warpline::model
