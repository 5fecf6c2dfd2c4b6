#include "charts/flamegraph.h"

#include "plaintooltip.h"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>

namespace warpline::views {

namespace {

constexpr int kCaption = 20; // px: the caption line
constexpr int kRow = 17;     // px: one frame

QString percent(uint64_t part, uint64_t whole) {
    return whole == 0
               ? QStringLiteral("0%")
               : QString::number(100.0 * static_cast<double>(part) / static_cast<double>(whole),
                                 'f', 1) +
                     QLatin1Char('%');
}

} // namespace

FlameGraph::FlameGraph(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setMinimumHeight(kCaption + 4 * kRow);
}

void FlameGraph::setTree(std::shared_ptr<const model::TraceStore> store, model::CpuSampleTree tree,
                         const QString& scope) {
    m_store = std::move(store);
    m_tree = std::move(tree);
    m_scope = scope;
    m_focus = 0;
    uint32_t depth = 0;
    for (const model::CpuTreeNode& n : m_tree.nodes)
        depth = std::max(depth, n.depth);
    setMinimumHeight(kCaption + static_cast<int>(depth + 1) * kRow + 2);
    layoutBoxes();
    update();
}

void FlameGraph::focusNode(uint32_t node) {
    if (node >= m_tree.nodes.size())
        return;
    m_focus = node;
    layoutBoxes();
    update();
}

QString FlameGraph::caption() const {
    if (!m_store)
        return tr("No CPU samples loaded.");
    const uint64_t all = m_tree.samples();
    if (all == 0)
        return tr("No CPU samples in the %1.").arg(m_scope);
    QString text = tr("%L1 samples, %2 waiting · %3")
                       .arg(all)
                       .arg(percent(m_tree.nodes[0].waits, all))
                       .arg(m_scope);
    if (m_focus != 0)
        text +=
            tr(" · in %1 (click it to go back)")
                .arg(QString::fromStdString(model::cpuTreeLabel(*m_store, m_tree.nodes[m_focus])));
    return text;
}

void FlameGraph::layoutBoxes() {
    m_rects.assign(m_tree.nodes.size(), QRectF());
    m_drawn.clear();
    if (m_tree.nodes.empty() || m_tree.nodes[m_focus].samples == 0)
        return;
    const double width = std::max(1, this->width() - 2);
    const double perSample = width / static_cast<double>(m_tree.nodes[m_focus].samples);
    const uint32_t top = m_tree.nodes[m_focus].depth;
    // Depth first from the focused node; a child starts where its elder siblings end.
    struct Item {
        uint32_t node;
        double x;
    };
    std::vector<Item> todo{{m_focus, 1.0}};
    while (!todo.empty()) {
        const Item item = todo.back();
        todo.pop_back();
        const model::CpuTreeNode& n = m_tree.nodes[item.node];
        const double w = static_cast<double>(n.samples) * perSample;
        const double y = kCaption + static_cast<double>(n.depth - top) * kRow;
        if (w < 1.0 || y + kRow > height())
            continue;
        m_rects[item.node] = QRectF(item.x, y, w, kRow - 1);
        m_drawn.push_back(item.node);
        double x = item.x;
        for (const uint32_t c : n.children) {
            todo.push_back({c, x});
            x += static_cast<double>(m_tree.nodes[c].samples) * perSample;
        }
    }
}

QRectF FlameGraph::nodeRect(uint32_t node) const {
    return node < m_rects.size() ? m_rects[node] : QRectF();
}

int FlameGraph::nodeAt(const QPointF& pos) const {
    for (const uint32_t node : m_drawn) {
        if (m_rects[node].contains(pos))
            return static_cast<int>(node);
    }
    return -1;
}

QColor FlameGraph::colorOf(const model::CpuTreeNode& node) const {
    if (2 * node.waits > node.samples)
        return QColor(176, 190, 210);
    const QString module = QString::fromStdString(m_store->text(node.frame.file));
    const int hue = static_cast<int>(qHash(module) % 50) + 10; // warm: reds to yellows
    return QColor::fromHsv(hue, 150, 240);
}

QString FlameGraph::toolTipFor(uint32_t node) const {
    if (!m_store || node >= m_tree.nodes.size())
        return {};
    const model::CpuTreeNode& n = m_tree.nodes[node];
    const uint64_t all = m_tree.samples();
    QString text = QString::fromStdString(model::cpuTreeLabel(*m_store, n));
    if (n.depth > 1 && n.frame.file != model::kNoName)
        text += QLatin1Char('\n') + QString::fromStdString(m_store->text(n.frame.file));
    text += tr("\n%L1 samples (%2 of all)").arg(n.samples).arg(percent(n.samples, all));
    text += tr("\nself %L1, waiting %L2").arg(n.self).arg(n.waits);
    return text;
}

void FlameGraph::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRect(4, 0, width() - 8, kCaption), Qt::AlignVCenter | Qt::AlignLeft, caption());
    if (!m_store)
        return;
    const QFontMetrics fm(font());
    for (const uint32_t node : m_drawn) {
        const QRectF r = m_rects[node];
        const model::CpuTreeNode& n = m_tree.nodes[node];
        p.fillRect(r, n.depth < 2 ? QColor(215, 215, 215) : colorOf(n));
        if (r.width() > 2) {
            p.setPen(QColor(255, 255, 255));
            p.drawLine(r.topRight(), r.bottomRight());
        }
        if (r.width() < 24)
            continue;
        const QString label = QString::fromStdString(model::cpuTreeLabel(*m_store, n));
        p.setPen(QColor(20, 20, 20));
        p.drawText(r.adjusted(3, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
                   fm.elidedText(label, Qt::ElideRight, static_cast<int>(r.width()) - 5));
    }
}

void FlameGraph::resizeEvent(QResizeEvent*) {
    layoutBoxes();
}

void FlameGraph::mouseMoveEvent(QMouseEvent* event) {
    const int hit = nodeAt(event->position());
    if (hit < 0) {
        QToolTip::hideText();
        return;
    }
    QToolTip::showText(event->globalPosition().toPoint(),
                       plainToolTip(toolTipFor(static_cast<uint32_t>(hit))), this);
}

void FlameGraph::mousePressEvent(QMouseEvent* event) {
    if (event->button() != Qt::LeftButton)
        return;
    const int hit = nodeAt(event->position());
    if (hit < 0)
        return;
    const auto node = static_cast<uint32_t>(hit);
    focusNode(node == m_focus ? m_tree.nodes[node].parent : node);
}

} // namespace warpline::views
