#pragma once

// FlameGraph: the CPU samples' call tree (model::cpuSampleTree) as an icicle graph, like the
// flame graphs of perf, py-spy and Nsight Systems turned upside down: the focused node (at first
// every sample) across the top, each frame a box under its caller as wide as its share of the
// focused samples. Boxes are coloured by module (a library, or a Python file: the same hue for
// the same name); a frame where most samples were taken as the thread went off its CPU (waits:
// a queue, a lock, I/O, the GIL) is grey-blue. Boxes narrower than a pixel are not drawn.
//
// Hovering a box shows its function, module, samples, share, self and waits. A click on a box
// focuses it (its width becomes the whole); a click on the focused box goes back to its caller.
//
// GUI thread only. Painting is O(nodes drawn).

#include "cpuactivity.h"

#include <QWidget>
#include <memory>
#include <vector>

namespace warpline::views {

class FlameGraph : public QWidget {
    Q_OBJECT

public:
    explicit FlameGraph(QWidget* parent = nullptr);

    // `scope` names the samples in the caption ("whole trace", "GPU idle in the steady state").
    void setTree(std::shared_ptr<const model::TraceStore> store, model::CpuSampleTree tree,
                 const QString& scope);
    const model::CpuSampleTree& tree() const { return m_tree; }
    uint32_t focusedNode() const { return m_focus; }
    void focusNode(uint32_t node);

    // The line above the graph ("3,120 samples, 12% waiting · whole trace"), or why it is empty.
    QString caption() const;
    // A node's box in widget coordinates; empty when it is not drawn.
    QRectF nodeRect(uint32_t node) const;
    // The node drawn at a widget position, or -1.
    int nodeAt(const QPointF& pos) const;
    QString toolTipFor(uint32_t node) const;

    QSize sizeHint() const override { return {600, 240}; }

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;

private:
    void layoutBoxes();
    QColor colorOf(const model::CpuTreeNode& node) const;

    std::shared_ptr<const model::TraceStore> m_store;
    model::CpuSampleTree m_tree;
    QString m_scope;
    uint32_t m_focus = 0;
    std::vector<QRectF> m_rects; // per node; empty when not drawn
    std::vector<uint32_t> m_drawn;
};

} // namespace warpline::views
