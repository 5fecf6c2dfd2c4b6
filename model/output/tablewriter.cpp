#include "tablewriter.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace warpline::model {

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not valid.
size_t utf8SequenceLength(std::string_view s, size_t i) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    uint32_t cp = 0;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (i + n > s.size())
        return 0;
    for (size_t k = 1; k < n; ++k) {
        const auto cc = static_cast<unsigned char>(s[i + k]);
        if ((cc & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (cc & 0x3F);
    }
    const bool overlong = (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
    const bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
    if (overlong || surrogate || cp > 0x10FFFF)
        return 0;
    return n;
}

// Invalid UTF-8 (a trace is data and may hold anything) becomes U+FFFD, so every writer's output
// is valid UTF-8.
std::string validUtf8(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        const size_t n = utf8SequenceLength(s, i);
        if (n == 0) {
            out += "\xEF\xBF\xBD";
            ++i;
        } else {
            out.append(s.substr(i, n));
            i += n;
        }
    }
    return out;
}

size_t displayWidth(std::string_view s) {
    size_t width = 0;
    for (const char c : s) {
        if ((static_cast<unsigned char>(c) & 0xC0) != 0x80)
            ++width;
    }
    return width;
}

std::string shortestDouble(double value) {
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    return std::string(buffer, result.ptr);
}

std::string addThousands(std::string digits) {
    // digits: optional '-', integer part, optional fraction starting at '.'
    const size_t begin = (!digits.empty() && digits[0] == '-') ? 1 : 0;
    size_t end = digits.find('.');
    if (end == std::string::npos)
        end = digits.size();
    for (size_t i = end; i > begin + 3; i -= 3)
        digits.insert(i - 3, 1, ',');
    return digits;
}

std::string rawText(const Cell& cell) {
    if (std::holds_alternative<int64_t>(cell))
        return std::to_string(std::get<int64_t>(cell));
    if (std::holds_alternative<double>(cell)) {
        const double v = std::get<double>(cell);
        return std::isfinite(v) ? shortestDouble(v) : std::string();
    }
    if (std::holds_alternative<std::string>(cell))
        return validUtf8(std::get<std::string>(cell));
    return {};
}

std::string displayText(const Cell& cell, const Column& column) {
    if (std::holds_alternative<int64_t>(cell))
        return formatInteger(std::get<int64_t>(cell), true);
    if (std::holds_alternative<double>(cell))
        return formatDouble(std::get<double>(cell), column.decimals, true);
    if (std::holds_alternative<std::string>(cell)) {
        std::string s = validUtf8(std::get<std::string>(cell));
        for (char& c : s) {
            if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F)
                c = ' ';
        }
        return s;
    }
    return {};
}

std::string markdownText(const Cell& cell, const Column& column) {
    const std::string s = displayText(cell, column); // control characters are spaces now
    std::string out;
    out.reserve(s.size());
    for (const char c : s) {
        switch (c) {
        case '\\':
        case '|':
        case '<':
        case '>':
        case '`':
        case '*':
        case '_':
        case '[':
        case ']':
        case '&':
            out += '\\';
            out += c;
            break;
        default:
            out += c;
        }
    }
    return out;
}

} // namespace

std::optional<TableFormat> parseTableFormat(std::string_view name) {
    if (name == "table" || name == "text")
        return TableFormat::Text;
    if (name == "csv")
        return TableFormat::Csv;
    if (name == "json")
        return TableFormat::Json;
    if (name == "md" || name == "markdown")
        return TableFormat::Markdown;
    return std::nullopt;
}

std::string_view tableFormatSuffix(TableFormat format) {
    switch (format) {
    case TableFormat::Csv:
        return "csv";
    case TableFormat::Json:
        return "json";
    case TableFormat::Markdown:
        return "md";
    case TableFormat::Text:
        break;
    }
    return "txt";
}

std::string csvField(std::string_view text) {
    const std::string s = validUtf8(text);
    if (s.find_first_of(",\"\r\n") == std::string::npos)
        return s;
    std::string out = "\"";
    for (const char c : s) {
        if (c == '"')
            out += '"';
        out += c;
    }
    out += '"';
    return out;
}

std::string jsonString(std::string_view text) {
    const std::string s = validUtf8(text);
    std::string out = "\"";
    for (const char c : s) {
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\b':
            out += "\\b";
            break;
        case '\f':
            out += "\\f";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\r':
            out += "\\r";
            break;
        case '\t':
            out += "\\t";
            break;
        default:
            if (static_cast<unsigned char>(c) < 0x20) {
                char buffer[8];
                std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(c));
                out += buffer;
            } else {
                out += c;
            }
        }
    }
    out += '"';
    return out;
}

std::string formatInteger(int64_t value, bool thousandsSeparators) {
    std::string s = std::to_string(value);
    return thousandsSeparators ? addThousands(std::move(s)) : s;
}

std::string formatDouble(double value, int decimals, bool thousandsSeparators) {
    if (std::isnan(value))
        return "NaN";
    if (std::isinf(value))
        return value > 0 ? "inf" : "-inf";
    char buffer[512];
    std::snprintf(buffer, sizeof buffer, "%.*f", std::clamp(decimals, 0, 17), value);
    std::string s = buffer;
    return thousandsSeparators ? addThousands(std::move(s)) : s;
}

void writeCsv(std::ostream& out, const Table& table) {
    const auto& columns = table.columns();
    for (size_t c = 0; c < columns.size(); ++c)
        out << (c ? "," : "") << csvField(columns[c].name);
    out << "\r\n";
    for (const auto& row : table.rows()) {
        for (size_t c = 0; c < row.size(); ++c)
            out << (c ? "," : "") << csvField(rawText(row[c]));
        out << "\r\n";
    }
}

void writeJson(std::ostream& out, const Table& table) {
    const auto& columns = table.columns();
    std::vector<std::string> keys;
    for (const Column& column : columns)
        keys.push_back(jsonString(column.name));
    out << "[";
    bool firstRow = true;
    for (const auto& row : table.rows()) {
        out << (firstRow ? "\n  {" : ",\n  {");
        firstRow = false;
        for (size_t c = 0; c < row.size(); ++c) {
            out << (c ? ", " : "") << keys[c] << ": ";
            const Cell& cell = row[c];
            if (std::holds_alternative<int64_t>(cell)) {
                out << std::get<int64_t>(cell);
            } else if (std::holds_alternative<double>(cell)) {
                const double v = std::get<double>(cell);
                out << (std::isfinite(v) ? shortestDouble(v) : std::string("null"));
            } else if (std::holds_alternative<std::string>(cell)) {
                out << jsonString(std::get<std::string>(cell));
            } else {
                out << "null";
            }
        }
        out << "}";
    }
    out << (firstRow ? "]\n" : "\n]\n");
}

namespace {

bool hasProse(const Table& table) {
    return std::any_of(table.columns().begin(), table.columns().end(),
                       [](const Column& c) { return c.prose; });
}

// `text` broken at spaces into lines of at most `width` columns, `indent` included (a longer
// word on a line of its own).
std::string wrapped(std::string_view text, size_t width, std::string_view indent) {
    width = width > indent.size() ? width - indent.size() : 1;
    std::string out, line;
    size_t lineWidth = 0;
    size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && text[i] == ' ')
            ++i;
        const size_t end = std::min(text.find(' ', i), text.size());
        if (end == i)
            break;
        const std::string_view word = text.substr(i, end - i);
        const size_t w = displayWidth(word);
        if (lineWidth > 0 && lineWidth + 1 + w > width) {
            out += std::string(indent) + line + "\n";
            line.clear();
            lineWidth = 0;
        }
        line += (lineWidth ? " " : "") + std::string(word);
        lineWidth += (lineWidth ? 1 : 0) + w;
        i = end;
    }
    if (!line.empty())
        out += std::string(indent) + line + "\n";
    return out;
}

// A table of sentences (a prose column: the insights) read as a report: per row, its other
// cells on one line ("Kind: allocator · Time at Stake (ns): 138,446,243"), then each prose cell
// as a paragraph wrapped at 100 columns. Markdown: the line in bold, the paragraph as is.
void writeParagraphs(std::ostream& out, const Table& table, bool markdown) {
    constexpr size_t kWidth = 100;
    const auto& columns = table.columns();
    bool first = true;
    for (const auto& row : table.rows()) {
        std::string head;
        for (size_t c = 0; c < row.size(); ++c) {
            if (columns[c].prose)
                continue;
            const std::string value =
                markdown ? markdownText(row[c], columns[c]) : displayText(row[c], columns[c]);
            head += (head.empty() ? "" : " · ") +
                    (markdown ? markdownText(Cell(columns[c].name), columns[c]) : columns[c].name) +
                    ": " + value;
        }
        out << (first ? "" : "\n") << (markdown ? "**" + head + "**" : head) << "\n";
        first = false;
        for (size_t c = 0; c < row.size(); ++c) {
            if (!columns[c].prose)
                continue;
            if (markdown)
                out << "\n" << markdownText(row[c], columns[c]) << "\n";
            else
                out << wrapped(displayText(row[c], columns[c]), kWidth, "    ");
        }
    }
}

} // namespace

void writeMarkdown(std::ostream& out, const Table& table) {
    if (hasProse(table)) {
        writeParagraphs(out, table, true);
        return;
    }
    const auto& columns = table.columns();
    out << "|";
    for (const Column& column : columns)
        out << " " << markdownText(Cell(column.name), column) << " |";
    out << "\n|";
    for (const Column& column : columns)
        out << (column.align == Column::Align::Right ? " ---: |" : " :--- |");
    out << "\n";
    for (const auto& row : table.rows()) {
        out << "|";
        for (size_t c = 0; c < row.size(); ++c)
            out << " " << markdownText(row[c], columns[c]) << " |";
        out << "\n";
    }
}

void writeText(std::ostream& out, const Table& table) {
    if (hasProse(table)) {
        writeParagraphs(out, table, false);
        return;
    }
    // Columns align up to this width: a longer cell (a megabyte kernel name in a damaged trace)
    // is written whole on its own line instead of padding every other line to its width, which
    // made the output rows x width. Real names, templates included, stay well below it.
    constexpr size_t kMaxAlignedWidth = 1000;
    const auto& columns = table.columns();
    std::vector<std::vector<std::string>> cells;
    std::vector<size_t> widths;
    for (const Column& column : columns)
        widths.push_back(displayWidth(column.name));
    for (const auto& row : table.rows()) {
        std::vector<std::string> texts;
        for (size_t c = 0; c < row.size(); ++c) {
            texts.push_back(displayText(row[c], columns[c]));
            widths[c] = std::max(widths[c], displayWidth(texts.back()));
        }
        cells.push_back(std::move(texts));
    }
    const auto writeRow = [&](const std::vector<std::string>& texts) {
        std::string line;
        for (size_t c = 0; c < texts.size(); ++c) {
            const size_t width = displayWidth(texts[c]);
            const std::string pad(widths[c] > width ? widths[c] - width : 0, ' ');
            line += c ? "  " : " ";
            if (columns[c].align == Column::Align::Right)
                line += pad + texts[c];
            else
                line += texts[c] + pad;
        }
        while (!line.empty() && line.back() == ' ')
            line.pop_back();
        out << line << "\n";
    };
    std::vector<std::string> header;
    std::vector<std::string> rule;
    for (size_t c = 0; c < columns.size(); ++c) {
        widths[c] = std::min(widths[c], kMaxAlignedWidth); // the column's widest cell, capped
        header.push_back(displayText(Cell(columns[c].name), columns[c]));
        rule.emplace_back(widths[c], '-');
    }
    writeRow(header);
    writeRow(rule);
    for (const auto& texts : cells)
        writeRow(texts);
}

// The table a person reads: without its detail columns (Column::detail). Copied only when it has
// some (the insights: a few rows).
const Table& forReading(const Table& table, Table& storage) {
    const auto& columns = table.columns();
    if (std::none_of(columns.begin(), columns.end(), [](const Column& c) { return c.detail; }))
        return table;
    std::vector<Column> kept;
    for (const Column& c : columns) {
        if (!c.detail)
            kept.push_back(c);
    }
    storage = Table(std::move(kept));
    for (const auto& row : table.rows()) {
        std::vector<Cell> cells;
        for (size_t c = 0; c < row.size() && c < columns.size(); ++c) {
            if (!columns[c].detail)
                cells.push_back(row[c]);
        }
        storage.addRow(std::move(cells));
    }
    return storage;
}

void writeTable(std::ostream& out, const Table& table, TableFormat format) {
    Table storage;
    switch (format) {
    case TableFormat::Text:
        writeText(out, forReading(table, storage));
        break;
    case TableFormat::Csv:
        writeCsv(out, table);
        break;
    case TableFormat::Json:
        writeJson(out, table);
        break;
    case TableFormat::Markdown:
        writeMarkdown(out, forReading(table, storage));
        break;
    }
}

} // namespace warpline::model
