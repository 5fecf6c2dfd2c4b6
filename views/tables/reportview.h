#pragma once

// ReportView: one report as a sortable, filterable table (the docked tables of the window).
// A filter box narrows the rows (any column, case-insensitive; a kernel shown by its label
// matches its full name too: TableModel::FilterRole); the header sorts (numbers as
// numbers). Ctrl+C copies the selected rows as tab-separated text; the context menu copies and
// exports (CSV, JSON, Markdown). Row signals carry SOURCE rows (indices into the report).

#include "tables/reporttable.h"
#include "tablewriter.h"

#include <QWidget>
#include <vector>

class QLabel;
class QLineEdit;
class QSortFilterProxyModel;
class QTableView;

namespace warpline::views {

class TableModel;

class ReportView : public QWidget {
    Q_OBJECT
public:
    explicit ReportView(QWidget* parent = nullptr);

    void setReport(ReportTable report);
    // How a cell that does not fit is cut: text (names) at its end, so that a kernel's function
    // name, which follows its return type and namespace, stays (middle elision cut it out:
    // "void at::native::vec...<1>)"); numbers never, since a cut number reads as another one.
    static Qt::TextElideMode elideModeOf(const QModelIndex& index);
    const ReportTable& report() const;
    TableModel* model() const { return m_model; }
    QSortFilterProxyModel* proxy() const { return m_proxy; }
    QTableView* view() const { return m_view; }
    QLineEdit* filterEdit() const { return m_filter; }

    // Source rows of the selection, in view order.
    std::vector<int> selectedSourceRows() const;
    void selectSourceRow(int row);
    // The selected rows (or all shown rows when none is selected) as TSV, to the clipboard.
    void copySelection();
    // Asks for a file name and writes the whole report in `format`.
    void exportTo(model::TableFormat format);

signals:
    void sourceRowSelected(int row);  // current row changed (-1: none)
    void sourceRowActivated(int row); // double-click or Enter
    void exportFailed(const QString& message);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void updateCount();

    TableModel* m_model = nullptr;
    QSortFilterProxyModel* m_proxy = nullptr;
    QTableView* m_view = nullptr;
    QLineEdit* m_filter = nullptr;
    QLabel* m_count = nullptr;
};

} // namespace warpline::views
