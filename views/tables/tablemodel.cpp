#include "tables/tablemodel.h"

#include "plaintooltip.h"
#include "tablewriter.h"

#include <QStringList>

namespace warpline::views {

namespace {

QString qs(const std::string& s) {
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

} // namespace

TableModel::TableModel(QObject* parent) : QAbstractTableModel(parent) {}

void TableModel::setReport(ReportTable report) {
    beginResetModel();
    m_report = std::move(report);
    endResetModel();
}

model::RowTarget TableModel::target(int row) const {
    if (row < 0 || static_cast<size_t>(row) >= m_report.targets.size())
        return {};
    return m_report.targets[static_cast<size_t>(row)];
}

int TableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_report.table.rowCount());
}

int TableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_report.table.columnCount());
}

QString TableModel::exportText(const model::Cell& cell, const model::Column& column) {
    if (const auto* i = std::get_if<int64_t>(&cell))
        return QString::number(*i);
    if (const auto* d = std::get_if<double>(&cell))
        return qs(model::formatDouble(*d, column.decimals, false));
    if (const auto* s = std::get_if<std::string>(&cell))
        return qs(*s);
    return {};
}

QVariant TableModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const auto row = static_cast<size_t>(index.row());
    const auto column = static_cast<size_t>(index.column());
    const model::Cell& cell = m_report.table.cell(row, column);
    const model::Column& col = m_report.table.columns()[column];
    switch (role) {
    case Qt::DisplayRole:
        if (const auto* i = std::get_if<int64_t>(&cell))
            return qs(model::formatInteger(*i, true));
        if (const auto* d = std::get_if<double>(&cell))
            return qs(model::formatDouble(*d, col.decimals, true));
        if (const auto* s = std::get_if<std::string>(&cell)) {
            // A kernel's label in its Name cell (RowTarget::label); the name on hover.
            if (row < m_report.targets.size() && !m_report.targets[row].label.empty() &&
                col.name == "Name")
                return qs(m_report.targets[row].label);
            return qs(*s);
        }
        return QString();
    case SortRole:
        if (const auto* i = std::get_if<int64_t>(&cell))
            return QVariant::fromValue<qlonglong>(*i);
        if (const auto* d = std::get_if<double>(&cell))
            return *d;
        if (const auto* s = std::get_if<std::string>(&cell))
            return qs(*s);
        return QVariant();
    case ExportRole:
        return exportText(cell, col);
    case FilterRole: {
        const QString shown = data(index, Qt::DisplayRole).toString();
        const auto* s = std::get_if<std::string>(&cell);
        if (!s)
            return shown;
        const QString full = qs(*s);
        return shown != full ? shown + QLatin1Char('\n') + full : shown;
    }
    case Qt::ToolTipRole: {
        // A long text in full, then the row's detail columns (hidden in the view), one a line.
        QStringList lines;
        if (const auto* s = std::get_if<std::string>(&cell); s && s->size() > 30)
            lines << qs(*s);
        const auto& columns = m_report.table.columns();
        for (size_t c = 0; c < columns.size(); ++c) {
            const model::Cell& detail = m_report.table.cell(row, c);
            if (columns[c].detail && !std::holds_alternative<std::monostate>(detail))
                lines << qs(columns[c].name) + QStringLiteral(": ") +
                             exportText(detail, columns[c]);
        }
        return lines.isEmpty() ? QVariant()
                               : QVariant(plainToolTip(lines.join(QStringLiteral("\n\n"))));
    }
    case Qt::TextAlignmentRole:
        return QVariant::fromValue(Qt::Alignment(col.align == model::Column::Align::Right
                                                     ? Qt::AlignRight
                                                     : Qt::AlignLeft) |
                                   Qt::AlignVCenter);
    default:
        return {};
    }
}

QVariant TableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (role != Qt::DisplayRole)
        return {};
    if (orientation == Qt::Horizontal) {
        if (section < 0 || static_cast<size_t>(section) >= m_report.table.columnCount())
            return {};
        return qs(m_report.table.columns()[static_cast<size_t>(section)].name);
    }
    if (section < 0 || section >= rowCount())
        return {};
    return section + 1;
}

} // namespace warpline::views
