#pragma once

// StepChart: the step-time chart, one stacked bar per training step (steps.h) showing where its
// time went: the ten causes of the step's breakdown (stepbreakdown.h), which add up to the step's
// duration, like the per-step stacked bars of PyTorch's TensorBoard plugin. Warm-up steps are
// hatched; a dashed line marks the steady steps' median. With more steps than the plot has room
// for, a bar holds several consecutive steps and shows their mean, and the caption says so
// (StepBarLayout). A legend names the causes the steps have (stepCauseTitle), with their share of
// the steady state.
//
// Hovering a bar shows its step number, duration and each cause's time; a click emits
// stepRangeClicked with the bar's [start, end) (the window zooms the timeline to it). The context
// menu saves the chart as PNG and its numbers as CSV: the steps table (model::stepTable), the same
// rows and columns as the Steps tab and warpline-stats --report steps.
//
// GUI thread only. The analysis is shared read-only with the window (LoadedTrace::steps).

#include "charts/stepbarlayout.h"
#include "timeformat.h"

#include <QWidget>
#include <array>
#include <memory>
#include <vector>

class QPainter;

namespace warpline::views {

class StepChart : public QWidget {
    Q_OBJECT

public:
    explicit StepChart(QWidget* parent = nullptr);

    // Null steps (not analysed yet) or none found: the chart says so instead of drawing bars.
    void setSteps(std::shared_ptr<const model::TraceStore> store,
                  std::shared_ptr<const model::StepAnalysis> steps);
    void setTimeUnit(TimeUnit unit);

    const model::StepAnalysis* steps() const { return m_steps.get(); }
    const StepBarLayout& layout() const { return m_layout; }
    // The plot area in widget coordinates; a segment's rect in them is the layout's rect moved by
    // its top-left corner.
    QRectF plotArea() const;
    QRectF segmentRect(const StepColumn& column, model::StepCause cause) const;
    // The column under a widget position, or -1.
    int columnAt(const QPointF& pos) const;
    int hoveredColumn() const { return m_hovered; }
    // The line above the plot ("30 steps · 1 warm-up · median 10.7 ms"; says when a bar is a mean
    // of several steps), or why there is no chart.
    QString caption() const;
    // What hovering a column shows.
    QString toolTipFor(int column) const;
    // The causes in the legend: those with time in some step, in StepCause order.
    const std::vector<model::StepCause>& legendCauses() const { return m_present; }

    // The steps table as CSV (the Steps tab's rows and columns) and the chart as PNG. Each writes
    // whole or not at all; on failure false, with a sentence in `error`.
    bool exportCsv(const QString& path, QString* error) const;
    bool savePng(const QString& path, QString* error);

    QSize sizeHint() const override { return {560, 280}; }
    QSize minimumSizeHint() const override { return {260, 160}; }

signals:
    // A click on a bar: its steps' [start, end) (ns).
    void stepRangeClicked(qint64 start, qint64 end);
    void exportFailed(const QString& message);

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void changeEvent(QEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;
    void contextMenuEvent(QContextMenuEvent* event) override;

private:
    void relayout();
    double legendWidth() const;
    QString stepLabel(const StepColumn& column) const;
    void paintLegend(QPainter& p, const QRectF& area) const;

    std::shared_ptr<const model::TraceStore> m_store;
    std::shared_ptr<const model::StepAnalysis> m_steps;
    TimeUnit m_unit = TimeUnit::Auto;
    std::vector<model::StepCause> m_present;
    std::array<double, model::kStepCauseCount> m_steadyShare{}; // of the steady steps' time
    StepBarLayout m_layout;
    int m_hovered = -1;
};

} // namespace warpline::views
