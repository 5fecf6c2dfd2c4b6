#pragma once

// RooflineChart: the GPU metrics per kernel name (kernelmetrics.h) as a roofline-style scatter
// plot: achieved DRAM bandwidth (% of peak) across, the busier math pipe (FMA or tensor, % of
// peak) up, one dot per sampled kernel name, its area proportional to the name's share of kernel
// time, its colour its bound. The 60% lines split memory-bound (right), compute-bound (top) and
// latency-bound (neither). Hovering a dot names it with its numbers; clicking it emits
// kernelClicked, which the window turns into a selection of its kernels on the timeline.

#include "kernelmetrics.h"
#include "tracestore.h"

#include <QWidget>
#include <memory>
#include <vector>

namespace warpline::views {

class RooflineChart : public QWidget {
    Q_OBJECT

public:
    struct Point {
        model::NameId name = model::kNoName;
        QString label;                // the short name
        QString details;              // the hover text
        double dram = 0, compute = 0; // % of peak
        double radius = 4;            // px
        model::KernelBound bound = model::KernelBound::Latency;
    };

    explicit RooflineChart(QWidget* parent = nullptr);

    // The sampled kernel names of the report (others have no dot); null clears the chart.
    void setReport(std::shared_ptr<const model::TraceStore> store,
                   std::shared_ptr<const model::KernelMetricsReport> report);
    const std::vector<Point>& points() const { return m_points; }
    // Where a point's centre is drawn (widget coordinates), for tests and hit testing.
    QPointF centreOf(const Point& p) const;
    // The point under a position, or -1 (the smallest dot wins where dots overlap).
    int pointAt(const QPointF& pos) const;

    QSize sizeHint() const override { return {420, 320}; }

signals:
    void kernelClicked(model::NameId name);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;

private:
    QRectF plotArea() const;

    std::shared_ptr<const model::TraceStore> m_store;
    std::vector<Point> m_points; // largest first, so small dots paint on top
    int m_hovered = -1;
};

} // namespace warpline::views
