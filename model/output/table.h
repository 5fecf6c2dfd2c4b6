#pragma once

// Table: the one result type of every summary and report: named columns and rows of typed cells.
// The CLI writes it with tablewriter.h; the GUI shows it in a table view. Values keep their type
// (integers stay integers, so sorting and JSON output are exact); a column's `decimals` only says
// how a text rendering shows doubles.

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace warpline::model {

// Empty (monostate: shown as "", JSON null), integer, real, or text.
using Cell = std::variant<std::monostate, int64_t, double, std::string>;

struct Column {
    enum class Align { Left, Right };
    std::string name; // header text and JSON key, e.g. "Total Time (ns)"
    Align align = Align::Right;
    int decimals = 1; // digits after the point when a double is rendered as text
    // Raw data behind the other columns (an insight's numbers and event references): written to
    // CSV and JSON, left out of the text and Markdown a person reads, shown on hover in the window.
    bool detail = false;
    // Sentences (an insight's finding): the window wraps them instead of eliding.
    bool prose = false;
};

class Table {
public:
    Table() = default;
    explicit Table(std::vector<Column> columns) : m_columns(std::move(columns)) {}

    const std::vector<Column>& columns() const { return m_columns; }
    const std::vector<std::vector<Cell>>& rows() const { return m_rows; }
    size_t rowCount() const { return m_rows.size(); }
    size_t columnCount() const { return m_columns.size(); }
    const Cell& cell(size_t row, size_t column) const { return m_rows[row][column]; }

    // Appends a row; it must have columnCount() cells (std::invalid_argument otherwise).
    void addRow(std::vector<Cell> cells);

    // Index of the column named `name`, or -1.
    int columnIndex(const std::string& name) const;

private:
    std::vector<Column> m_columns;
    std::vector<std::vector<Cell>> m_rows;
};

} // namespace warpline::model
