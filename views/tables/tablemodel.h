#pragma once

// TableModel: a Qt item model over one report (model::Table), so every report shows the same way.
// Cells keep their type under SortRole (integers and doubles sort as numbers); DisplayRole shows
// them as warpline-stats' text table does (thousands separators, the column's decimals).
// Text cells come from the trace and are returned as plain QString data (views show them as plain
// text). Read-only.

#include "tables/reporttable.h"

#include <QAbstractTableModel>

namespace warpline::views {

class TableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    static constexpr int SortRole = Qt::UserRole;
    static constexpr int ExportRole = Qt::UserRole + 1; // text without thousands separators
    // What the filter box matches: the shown text, and a labelled name's full text beside its
    // label ("at::native" finds the kernels shown as "elementwise_kernel[Mul, BFloat16]").
    static constexpr int FilterRole = Qt::UserRole + 2;

    explicit TableModel(QObject* parent = nullptr);

    void setReport(ReportTable report);
    const ReportTable& report() const { return m_report; }
    // What source row `row` points at on the timeline (empty when the report has no targets).
    model::RowTarget target(int row) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

    // The text of one cell for export/copy: integers plain, doubles with the column's decimals.
    static QString exportText(const model::Cell& cell, const model::Column& column);

private:
    ReportTable m_report;
};

} // namespace warpline::views
