#include "details/detailspanel.h"

#include "details/eventdetails.h"
#include "plaintooltip.h"

#include <QHeaderView>
#include <QLabel>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace warpline::views {

namespace {
constexpr int kLinkRole = Qt::UserRole + 1;
}

DetailsPanel::DetailsPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    m_title = new QLabel(this);
    m_title->setTextFormat(Qt::PlainText);
    m_title->setWordWrap(true);
    m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);
    QFont bold = m_title->font();
    bold.setBold(true);
    m_title->setFont(bold);
    layout->addWidget(m_title);

    m_list = new QTreeWidget(this);
    m_list->setColumnCount(2);
    m_list->setHeaderLabels({tr("Field"), tr("Value")});
    m_list->setRootIsDecorated(false);
    m_list->setUniformRowHeights(true);
    m_list->setAlternatingRowColors(true);
    m_list->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_list->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    m_list->header()->setStretchLastSection(true);
    m_list->setWordWrap(false);
    m_list->setTextElideMode(Qt::ElideRight);
    layout->addWidget(m_list, 1);
    connect(m_list, &QTreeWidget::itemActivated, this,
            [this](QTreeWidgetItem* item) { activate(item); });
    connect(m_list, &QTreeWidget::itemClicked, this, [this](QTreeWidgetItem* item, int column) {
        if (column == 1)
            activate(item);
    });
    rebuild();
}

void DetailsPanel::setTrace(std::shared_ptr<const LoadedTrace> trace) {
    const bool sameStore = m_trace && trace && m_trace->store == trace->store;
    m_trace = std::move(trace);
    if (!sameStore)
        m_event = {};
    rebuild();
}

void DetailsPanel::setTimeUnit(TimeUnit unit) {
    m_unit = unit;
    rebuild();
}

void DetailsPanel::showEvent(const model::EventId& event) {
    m_event = event;
    rebuild();
}

QString DetailsPanel::value(const QString& field) const {
    for (int i = 0; i < m_list->topLevelItemCount(); ++i) {
        if (m_list->topLevelItem(i)->text(0) == field)
            return m_list->topLevelItem(i)->text(1);
    }
    return {};
}

QString DetailsPanel::title() const {
    return m_title->text();
}

void DetailsPanel::rebuild() {
    m_list->clear();
    if (!m_trace) {
        m_title->setText(tr("No trace loaded."));
        return;
    }
    const bool summary = !m_event.valid();
    const auto fields = summary ? EventDetails::traceSummary(*m_trace, m_unit)
                                : EventDetails::describe(*m_trace, m_event, m_unit);
    if (summary)
        m_title->setText(tr("This trace (click a span on the timeline for its fields)"));
    else
        m_title->setText(fields.empty() ? QString() : fields.front().value);
    QList<QTreeWidgetItem*> items;
    for (const DetailField& f : fields) {
        auto* item = new QTreeWidgetItem({f.name, f.value}); // QTreeWidgetItem text is plain
        item->setToolTip(1, plainToolTip(f.value));
        if (!f.help.isEmpty())
            item->setToolTip(0, f.help);
        if (f.link.valid()) {
            QFont font = m_list->font();
            font.setUnderline(true);
            item->setFont(1, font);
            item->setForeground(1, palette().color(QPalette::Link));
            item->setData(1, kLinkRole, QVariant::fromValue(f.link.ref.track));
            item->setData(0, kLinkRole, QVariant::fromValue(static_cast<int>(f.link.family)));
            item->setData(0, kLinkRole + 1, QVariant::fromValue(f.link.ref.index));
            item->setToolTip(1, plainToolTip(tr("%1 (click to go there)").arg(f.value)));
        }
        items << item;
    }
    m_list->addTopLevelItems(items);
}

void DetailsPanel::activate(QTreeWidgetItem* item) {
    if (!item || !item->data(1, kLinkRole).isValid())
        return;
    model::EventId link;
    link.family = static_cast<model::EventFamily>(item->data(0, kLinkRole).toInt());
    link.ref.track = item->data(1, kLinkRole).toUInt();
    link.ref.index = item->data(0, kLinkRole + 1).toUInt();
    emit eventRequested(link);
}

} // namespace warpline::views
