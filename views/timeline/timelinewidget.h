#pragma once

// TimelineWidget: the timeline view. Paints the ruler, the row labels and the spans of every
// row (TimelineRows) in the visible window (TimelineViewport), folding spans narrower than a few
// pixels (SpanFolder), so repaint cost depends on the width in pixels, not on the event count.
//
// Interaction: wheel zooms about the cursor (Shift+wheel or wheel over the labels scrolls rows),
// W/S zoom, A/D pan, left-drag pans, Shift+drag or right-drag selects a range and zooms to it,
// F/Home fits the whole trace, G the steady state (the steps after warm-up; else the GPU busy
// window), click selects (selectionChanged),
// double-click zooms to a span, clicking a header row's label collapses it. Hovering shows the span
// under the cursor.
//
// Thread affinity: GUI thread. The trace is shared read-only (LoadedTrace).

#include "eventid.h"
#include "spanpalette.h"
#include "timeformat.h"
#include "timeline/highlightset.h"
#include "timeline/queuedepthprofile.h"
#include "timeline/spanfolder.h"
#include "timeline/timelinerows.h"
#include "timeline/timelineviewport.h"
#include "trace/loadedtrace.h"

#include <QPixmap>
#include <QWidget>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

class QLabel;
class QScrollBar;

namespace warpline::views {

class TimelineWidget : public QWidget {
    Q_OBJECT
public:
    explicit TimelineWidget(QWidget* parent = nullptr);
    ~TimelineWidget() override;

    void setTrace(std::shared_ptr<const LoadedTrace> trace);
    const std::shared_ptr<const LoadedTrace>& trace() const { return m_trace; }

    const TimelineViewport& viewport() const { return m_viewport; }
    const TimelineRows& rows() const { return m_rows; }
    void setVisibleRange(double t0, double t1);
    // Shows [t0, t1) with a margin of a tenth of its duration on both sides.
    void zoomToRange(int64_t t0, int64_t t1);
    void fitAll();
    // Shows where the GPU was busy (the 1st to 99th percentile of its op time) with a margin.
    // Fits all when there is no GPU op.
    void fitGpuActivity();
    // The view a trace opens with: a few steps of the steady state (model::StepAnalysis::
    // openingWindow) when the trace has training steps, else fitGpuActivity(). Start-up
    // (imports, allocations, compilation) and warm-up are rarely what one came to see.
    void fitOpeningView();
    // The whole steady state (every step after warm-up); fitGpuActivity() without steps. (G)
    void fitSteadyState();
    // Zooms by `factor` (> 1 in) about widget x coordinate `x` (the time under it stays put).
    void zoomAt(double x, double factor);

    model::EventId selection() const { return m_selection; }
    void setSelection(const model::EventId& event);
    // Selects the event and brings it into view (pans, zooms in when it is too narrow to see,
    // scrolls its row into view).
    void revealEvent(const model::EventId& event);

    void setHighlights(HighlightSet highlights);
    const HighlightSet& highlights() const { return m_highlights; }
    void clearHighlights();

    void setTimeUnit(TimeUnit unit);
    TimeUnit timeUnit() const { return m_timeUnit; }

    // Geometry, in widget coordinates, for tests and the window.
    int labelWidth() const { return m_labelWidth; }
    int rulerHeight() const;
    // The rectangle an event is drawn in (at least 1 px wide), or an empty rect when its row is
    // not shown. x may lie outside the widget when the event is out of view.
    QRectF eventRect(const model::EventId& event) const;
    // The text drawn on a span wide enough for it (before eliding): a kernel by its base name
    // (model::gpuOpShortName, as nsys labels it, so that the part that tells kernels apart
    // survives a narrow span), anything else by its name. Hover and details keep the full name.
    QString spanLabel(const model::EventId& event) const;
    // The event drawn at a widget position (within a few pixels), or an invalid model::EventId.
    model::EventId eventAt(const QPoint& pos) const;
    double xOfTime(double t) const;
    double timeOfX(double x) const;

    // Drops the cached picture of the rows: the next paint draws everything again. The widget
    // calls it on every change of what is shown; benchmarks call it to time a full repaint.
    void invalidate();

    QSize sizeHint() const override { return {1200, 600}; }
    QSize minimumSizeHint() const override { return {300, 150}; }

signals:
    void selectionChanged(const warpline::model::EventId& event);
    // The user pressed Enter/double-clicked on an event: the window may show its details.
    void eventActivated(const warpline::model::EventId& event);
    void viewportChanged();

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;
    void leaveEvent(QEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    enum class DragMode { None, Pending, Pan, Range };

    struct RowGeometry {
        int row = -1;
        double top = 0; // widget y of the row's top
    };

    void takeStore(const model::TraceStore& store);   // the state of the store alone
    void colourNames(const model::TraceStore& store); // m_nameColor from the palette
    void rebuildRows();
    // Rows with no work in the visible window (TimelineRows::Options::idle); true when they
    // changed since the last call.
    bool updateIdleRows();
    void fitSteps(bool opening);
    // The training steps that intersect the view (LoadedTrace::steps), by start.
    std::span<const model::Step> visibleSteps() const;
    void paintStepBoundaries(QPainter& p, const QRect& area);
    void updateScrollBar();
    void updateLabelWidth();
    void emitViewportChanged();
    QRect spanArea() const; // widget coordinates of the span area (right of labels, below ruler)
    double spanLeft() const { return m_labelWidth; }
    double rowTop(int row) const;

    void paintBase(QPainter& p);     // rows, labels, ruler: cached in m_cache
    void paintOverlays(QPainter& p); // cursor line, time under the cursor, range being dragged
    void paintRuler(QPainter& p, const std::vector<struct RulerTick>& ticks);
    void paintRow(QPainter& p, int row, double top);
    void paintSpanTrack(QPainter& p, const model::SpanTrack& track, model::EventFamily family,
                        uint32_t trackIndex, double top, int height);
    void paintQueueDepth(QPainter& p, uint32_t streamIndex, double top, int height);
    // A thread's CPU row: per pixel column, the share of its time it ran (a bar) over a band
    // where it waited.
    void paintCpuRow(QPainter& p, uint32_t threadIndex, double top, int height);
    QString cpuHoverText(uint32_t threadIndex, int64_t time, int64_t slack) const;
    // A row's fill (rank header, alternate group) and its header line, across `width`.
    void paintRowBackground(QPainter& p, const TimelineRow& row, double top, double width) const;
    void paintLabels(QPainter& p);
    void paintSelection(QPainter& p);
    void paintArrow(QPainter& p, const QPointF& from, const QPointF& to);

    QColor colorOf(model::EventFamily family, uint32_t track, size_t index) const;
    bool isStall(uint32_t apiTrack, size_t index) const;
    // Whether this GPU op is a rank's collective that waited for the others (m_waits).
    bool hasWait(uint32_t gpuTrack, size_t index) const;
    bool anyStallIn(uint32_t apiTrack, size_t first, size_t last) const;
    // Paints the waiting parts of the arrival kernels among ops [first, last) of a GPU track
    // over their box [x0, x1) (hatched, faded `fill`); returns the width they cover, in px.
    double paintWaits(QPainter& p, uint32_t gpuTrack, size_t first, size_t last, double x0,
                      double x1, double y, double h, const QColor& fill);
    QString nameText(model::NameId name) const;
    QString hoverText(const model::EventId& event, const FoldedSpan& folded) const;
    void updateHover(const QPoint& pos);
    const model::SpanTrack* trackOf(const TimelineRow& row) const;
    model::EventFamily familyOf(const TimelineRow& row) const;

    std::shared_ptr<const LoadedTrace> m_trace;
    TimelineViewport m_viewport;
    TimelineRows m_rows;
    SpanPalette m_palette;
    TimeUnit m_timeUnit = TimeUnit::Auto;
    int m_labelWidth = 200;
    int m_scrollY = 0;
    QScrollBar* m_vScroll = nullptr;
    QLabel* m_hoverLabel = nullptr;

    model::EventId m_selection;
    HighlightSet m_highlights;

    // Per NameId: colour of GPU ops / NVTX by name, and whether an API name synchronizes.
    std::vector<QRgb> m_nameColor;
    std::vector<bool> m_syncName;
    std::vector<QueueDepthProfile> m_depthProfiles;       // by TraceStore stream index
    std::vector<std::pair<RowKind, uint32_t>> m_idleRows; // sorted
    // The top of each GPU metric row's scale: 100 for a percentage, else the series' maximum.
    std::vector<std::vector<float>> m_metricScale; // MetricRow::scales
    std::vector<float> m_metricColumns;            // scratch: a metric's maximum per pixel column
    // Sorted indices of the sync-stall calls per API track (from the sync-stall analysis).
    std::vector<std::vector<uint32_t>> m_stallCalls;
    // A session's collective waits per GPU track (from the cross-rank analysis), by op index: the
    // arrival kernel of a rank's step and the end of its waiting part (arrival + wait).
    struct WaitMark {
        uint32_t index = 0;
        int64_t waitEnd = 0;
    };
    std::vector<std::vector<WaitMark>> m_waits;
    std::vector<FoldedSpan> m_fold;      // scratch, reused by every row
    std::vector<int32_t> m_depthColumns; // scratch: queue depth per pixel column

    QPixmap m_cache; // paintBase's picture, at the widget's device pixel ratio
    // The range fitOpeningView() showed: still shown when the analyses arrive means untouched.
    std::pair<double, double> m_openedView{0, 0};
    bool m_cacheValid = false;

    DragMode m_drag = DragMode::None;
    Qt::MouseButton m_dragButton = Qt::NoButton;
    QPoint m_pressPos;
    QPoint m_lastPos;
    double m_rangeStart = 0; // ns, while selecting a range
    double m_rangeEnd = 0;
    double m_hoverX = -1; // widget x of the cursor line, -1 when not over the span area
};

} // namespace warpline::views
