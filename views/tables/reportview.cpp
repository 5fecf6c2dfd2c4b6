#include "tables/reportview.h"

#include "tables/tableexport.h"
#include "tables/tablemodel.h"

#include <QApplication>
#include <QClipboard>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QSortFilterProxyModel>
#include <QStyledItemDelegate>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

namespace warpline::views {

namespace {

class ElideByColumn : public QStyledItemDelegate {
public:
    using QStyledItemDelegate::QStyledItemDelegate;

protected:
    void initStyleOption(QStyleOptionViewItem* option, const QModelIndex& index) const override {
        QStyledItemDelegate::initStyleOption(option, index);
        option->textElideMode = ReportView::elideModeOf(index);
    }
};

} // namespace

Qt::TextElideMode ReportView::elideModeOf(const QModelIndex& index) {
    const auto align = index.data(Qt::TextAlignmentRole).value<Qt::Alignment>();
    return align & Qt::AlignRight ? Qt::ElideNone : Qt::ElideRight;
}

ReportView::ReportView(QWidget* parent) : QWidget(parent) {
    m_model = new TableModel(this);
    m_proxy = new QSortFilterProxyModel(this);
    m_proxy->setSourceModel(m_model);
    m_proxy->setSortRole(TableModel::SortRole);
    m_proxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
    m_proxy->setFilterKeyColumn(-1);
    m_proxy->setFilterRole(TableModel::FilterRole);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    layout->setSpacing(2);
    auto* top = new QHBoxLayout;
    m_filter = new QLineEdit(this);
    m_filter->setPlaceholderText(tr("Filter rows…"));
    m_filter->setClearButtonEnabled(true);
    m_count = new QLabel(this);
    m_count->setTextFormat(Qt::PlainText);
    top->addWidget(m_filter, 1);
    top->addWidget(m_count);
    layout->addLayout(top);

    m_view = new QTableView(this);
    m_view->setModel(m_proxy);
    m_view->setSortingEnabled(true);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_view->setAlternatingRowColors(true);
    m_view->setWordWrap(false);
    m_view->setItemDelegate(new ElideByColumn(m_view));
    m_view->setTextElideMode(Qt::ElideRight);
    m_view->verticalHeader()->setVisible(false);
    m_view->verticalHeader()->setDefaultSectionSize(m_view->fontMetrics().height() + 6);
    m_view->horizontalHeader()->setStretchLastSection(true);
    m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    m_view->setContextMenuPolicy(Qt::CustomContextMenu);
    m_view->installEventFilter(this);
    layout->addWidget(m_view, 1);

    connect(m_filter, &QLineEdit::textChanged, this, [this](const QString& text) {
        m_proxy->setFilterFixedString(text);
        updateCount();
    });
    connect(m_view->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& current) {
                emit sourceRowSelected(current.isValid() ? m_proxy->mapToSource(current).row()
                                                         : -1);
            });
    connect(m_view, &QTableView::activated, this, [this](const QModelIndex& index) {
        if (index.isValid())
            emit sourceRowActivated(m_proxy->mapToSource(index).row());
    });
    connect(m_view, &QWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
        QMenu menu(this);
        menu.addAction(tr("Copy Selected Rows"), QKeySequence::Copy, this,
                       &ReportView::copySelection);
        menu.addSeparator();
        menu.addAction(tr("Export as CSV…"), this, [this] { exportTo(model::TableFormat::Csv); });
        menu.addAction(tr("Export as JSON…"), this, [this] { exportTo(model::TableFormat::Json); });
        menu.addAction(tr("Export as Markdown…"), this,
                       [this] { exportTo(model::TableFormat::Markdown); });
        menu.exec(m_view->viewport()->mapToGlobal(pos));
    });
    updateCount();
}

void ReportView::setReport(ReportTable report) {
    m_model->setReport(std::move(report));
    m_view->sortByColumn(-1, Qt::AscendingOrder); // the report's own order until the user sorts
    m_proxy->sort(-1);
    // Detail columns (raw numbers, event references) are on hover, not in the view; sentences
    // wrap in a column that takes the width left.
    const auto& columns = m_model->report().table.columns();
    bool prose = false;
    for (size_t c = 0; c < columns.size(); ++c) {
        m_view->setColumnHidden(static_cast<int>(c), columns[c].detail);
        prose = prose || columns[c].prose;
    }
    m_view->setWordWrap(prose);
    m_view->resizeColumnsToContents();
    for (int c = 0; c < m_model->columnCount(); ++c) {
        const bool wraps = columns[static_cast<size_t>(c)].prose;
        m_view->horizontalHeader()->setSectionResizeMode(c, wraps ? QHeaderView::Stretch
                                                                  : QHeaderView::Interactive);
        if (!wraps)
            m_view->setColumnWidth(c, std::min(m_view->columnWidth(c), 420));
    }
    m_view->horizontalHeader()->setStretchLastSection(!prose);
    // nsys's tables end with the name; in a wide table (the GPU metrics' 14 columns) it then lies
    // off screen, so such a table shows it first. Display only: copies and exports keep the
    // report's order.
    QHeaderView* header = m_view->horizontalHeader();
    for (int c = 0; c < header->count(); ++c)
        if (header->visualIndex(c) != c)
            header->moveSection(header->visualIndex(c), c);
    const int name = static_cast<int>(columns.size()) - 1;
    if (columns.size() > 10 && columns.back().name == "Name")
        header->moveSection(header->visualIndex(name), 0);
    // Rows as tall as their wrapped sentence, again whenever the column's width changes (prose
    // tables are a few rows: the insights).
    m_view->verticalHeader()->setSectionResizeMode(prose ? QHeaderView::ResizeToContents
                                                         : QHeaderView::Interactive);
    updateCount();
}

const ReportTable& ReportView::report() const {
    return m_model->report();
}

void ReportView::updateCount() {
    const int shown = m_proxy->rowCount();
    const int total = m_model->rowCount();
    m_count->setText(shown == total ? (total == 1 ? tr("1 row") : tr("%1 rows").arg(total))
                                    : tr("%1 of %2 rows").arg(shown).arg(total));
}

std::vector<int> ReportView::selectedSourceRows() const {
    std::vector<std::pair<int, int>> rows; // (view row, source row)
    for (const QModelIndex& index : m_view->selectionModel()->selectedRows())
        rows.emplace_back(index.row(), m_proxy->mapToSource(index).row());
    std::sort(rows.begin(), rows.end());
    std::vector<int> out;
    for (const auto& r : rows)
        out.push_back(r.second);
    return out;
}

void ReportView::selectSourceRow(int row) {
    const QModelIndex index = m_proxy->mapFromSource(m_model->index(row, 0));
    if (!index.isValid())
        return;
    m_view->selectionModel()->setCurrentIndex(index, QItemSelectionModel::ClearAndSelect |
                                                         QItemSelectionModel::Rows);
    m_view->scrollTo(index);
}

void ReportView::copySelection() {
    std::vector<int> rows = selectedSourceRows();
    if (rows.empty()) {
        for (int r = 0; r < m_proxy->rowCount(); ++r)
            rows.push_back(m_proxy->mapToSource(m_proxy->index(r, 0)).row());
    }
    QApplication::clipboard()->setText(TableExport::toTsv(report().table, rows));
}

void ReportView::exportTo(model::TableFormat format) {
    const QString suffix = TableExport::suffix(format);
    const QString name = report().id.isEmpty() ? QStringLiteral("report") : report().id;
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export %1").arg(report().title), name + QLatin1Char('.') + suffix,
        tr("%1 files (*.%2);;All files (*)").arg(suffix.toUpper(), suffix));
    if (path.isEmpty())
        return;
    QString error;
    if (!TableExport::write(report().table, path, format, &error))
        emit exportFailed(error);
}

bool ReportView::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_view && event->type() == QEvent::KeyPress) {
        auto* key = static_cast<QKeyEvent*>(event);
        if (key->matches(QKeySequence::Copy)) {
            copySelection();
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

} // namespace warpline::views
