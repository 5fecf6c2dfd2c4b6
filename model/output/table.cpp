#include "table.h"

#include <stdexcept>

namespace warpline::model {

void Table::addRow(std::vector<Cell> cells) {
    if (cells.size() != m_columns.size())
        throw std::invalid_argument("Table::addRow: " + std::to_string(cells.size()) +
                                    " cells for " + std::to_string(m_columns.size()) + " columns");
    m_rows.push_back(std::move(cells));
}

int Table::columnIndex(const std::string& name) const {
    for (size_t i = 0; i < m_columns.size(); ++i) {
        if (m_columns[i].name == name)
            return static_cast<int>(i);
    }
    return -1;
}

} // namespace warpline::model
