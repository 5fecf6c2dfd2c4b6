#pragma once

// Writers for Table, shared by warpline-stats and the GUI's export action. All write UTF-8 text
// as it is in the trace (names are data: never interpreted).
//  - CSV (RFC 4180): header row, CRLF line ends; a field containing a comma, a double quote, CR or
//    LF is quoted and its quotes doubled. Doubles use the shortest exact representation.
//  - JSON (RFC 8259): one array of objects, keys = column names in column order; integers and
//    doubles as numbers (non-finite doubles as null), empty cells as null, strings escaped
//    (", \, and every control character below U+0020).
//  - Markdown: a GitHub table; '|' is escaped as "\|", CR/LF become a space, other control
//    characters are dropped.
//  - Text: an aligned plain table like nsys stats (header, dashes, thousands separators on
//    integers, `Column::decimals` digits on doubles); control characters shown as spaces.
//    Columns align up to 1000 characters: a longer cell is written whole on its own line.

#include "table.h"

#include <optional>
#include <ostream>
#include <string>
#include <string_view>

namespace warpline::model {

enum class TableFormat { Text, Csv, Json, Markdown };

// "table"/"text", "csv", "json", "md"/"markdown"; nullopt for anything else.
std::optional<TableFormat> parseTableFormat(std::string_view name);
// A file name's suffix for the format: "txt", "csv", "json", "md".
std::string_view tableFormatSuffix(TableFormat format);

// Text and Markdown leave out the detail columns (Column::detail); CSV and JSON keep every column.
// A table with a prose column (Column::prose: the insights) reads as a report in text and
// Markdown: each row's other cells on one line, then its sentences as a wrapped paragraph.
void writeTable(std::ostream& out, const Table& table, TableFormat format);
void writeCsv(std::ostream& out, const Table& table);
void writeJson(std::ostream& out, const Table& table);
void writeMarkdown(std::ostream& out, const Table& table);
void writeText(std::ostream& out, const Table& table);

// Helpers, exposed for tests and for GUI cells.
std::string csvField(std::string_view text);
std::string jsonString(std::string_view text); // with the surrounding quotes
std::string formatInteger(int64_t value, bool thousandsSeparators);
std::string formatDouble(double value, int decimals, bool thousandsSeparators);

} // namespace warpline::model
