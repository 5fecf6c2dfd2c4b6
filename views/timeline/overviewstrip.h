#pragma once

// OverviewStrip: the whole trace in one thin strip above the timeline, so that a view zoomed on a
// few steps never loses its place: how busy the GPU was along the trace (the share of each
// column's time some GPU op ran), start-up shaded and labelled, the training steps in alternating
// tints (warm-up ones darker), and a frame around the time the timeline shows. A click centres
// the timeline on the clicked time, keeping its zoom; dragging keeps moving it.
//
// Times are ns on the trace's clock; x is in widget pixels. Thread affinity: GUI thread.

#include "trace/loadedtrace.h"

#include <QWidget>
#include <memory>
#include <vector>

namespace warpline::views {

class OverviewStrip : public QWidget {
    Q_OBJECT
public:
    explicit OverviewStrip(QWidget* parent = nullptr);

    void setTrace(std::shared_ptr<const LoadedTrace> trace);
    // The range the timeline shows (ns).
    void setView(double t0, double t1);
    double viewStart() const { return m_view0; }
    double viewEnd() const { return m_view1; }

    // The strip maps the trace's [begin, end) onto its whole width.
    double xOfTime(double t) const;
    double timeOfX(double x) const;
    // Share of [t0, t1) in which some GPU op ran, 0..1, from the strip's histogram.
    double busyShare(double t0, double t1) const;

    // The strip draws model::GpuActivity::busyShares (LoadedTrace::gpuActivity, from the loader's thread).
    static constexpr size_t kBins = model::kGpuBusyBins;

    QSize sizeHint() const override { return {1200, kHeight}; }
    QSize minimumSizeHint() const override { return {200, kHeight}; }

signals:
    // The user asked to show [t0, t1) (same duration as the current view, centred on a click).
    void viewRequested(double t0, double t1);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;

private:
    static constexpr int kHeight = 34;
    void requestCentre(double x);

    std::shared_ptr<const LoadedTrace> m_trace;
    double m_begin = 0, m_end = 1;
    double m_view0 = 0, m_view1 = 1;
    std::vector<float> m_busy; // kBins shares of busy time (0..1) over [m_begin, m_end)
};

} // namespace warpline::views
