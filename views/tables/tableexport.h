#pragma once

// TableExport: writes a report to a file with the model's table writers (the same bytes
// warpline-stats writes for --format csv/json/md), and renders rows as tab-separated text for
// the clipboard.

#include "table.h"
#include "tablewriter.h"

#include <QString>
#include <vector>

namespace warpline::views {

class TableExport {
public:
    // The format for a file name's suffix (.csv, .json, .md/.markdown), or `fallback`.
    static model::TableFormat formatForPath(const QString& path, model::TableFormat fallback);
    static QString suffix(model::TableFormat format); // "csv", "json", "md", "txt"
    // Writes atomically (a temporary file renamed into place). On failure returns false and sets
    // `error` to a sentence naming the file and the reason.
    static bool write(const model::Table& table, const QString& path, model::TableFormat format,
                      QString* error);
    // The header and the given rows (indices into table.rows()), tab-separated, one line each;
    // tabs and line breaks inside cells become spaces.
    static QString toTsv(const model::Table& table, const std::vector<int>& rows);
};

} // namespace warpline::views
