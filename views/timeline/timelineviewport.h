#pragma once

// TimelineViewport: the time <-> x mapping of the timeline and its zoom/pan state. A pure value
// class (no Qt widgets), so zoom and coordinate maths are tested without a window.
//
// Units: times are ns in the trace's clock (doubles, so deep zooms keep sub-ns precision); x is
// in device-independent pixels from the left edge of the span area, which is width() px wide.
// The visible window is half-open [visibleStart, visibleEnd) and never wider than the fitted
// bounds (the trace's [begin, end) plus a small margin) nor narrower than kMinDuration.

#include <cstdint>

namespace warpline::views {

class TimelineViewport {
public:
    // Narrowest window a user can zoom to: 20 ns over the whole width, so a 1 ns kernel is
    // several pixels wide at the deepest zoom.
    static constexpr double kMinDuration = 20.0;

    TimelineViewport() = default;
    TimelineViewport(int64_t begin, int64_t end, double width);

    // The trace's extent [begin, end) in ns; also fits the view to it.
    void setBounds(int64_t begin, int64_t end);
    int64_t boundsBegin() const { return m_begin; }
    int64_t boundsEnd() const { return m_end; }

    // Width of the span area in px (>= 1). Keeps the visible time window.
    void setWidth(double width);
    double width() const { return m_width; }

    double visibleStart() const { return m_t0; }
    double visibleEnd() const { return m_t1; }
    double visibleDuration() const { return m_t1 - m_t0; }
    double nsPerPixel() const { return (m_t1 - m_t0) / m_width; }

    double timeToX(double t) const { return (t - m_t0) * m_width / (m_t1 - m_t0); }
    double xToTime(double x) const { return m_t0 + x * (m_t1 - m_t0) / m_width; }

    // Shows [t0, t1), clamped to the fitted bounds and kMinDuration (the centre is kept when the
    // window has to grow).
    void setVisibleRange(double t0, double t1);
    // Zooms by `factor` (> 1 zooms in) keeping the time under x at x, unless clamping to the
    // bounds has to shift the window (only when zooming out near an edge).
    void zoomAbout(double x, double factor);
    // Moves the window by dx pixels (dx > 0 shows later times), clamped to the bounds.
    void panByPixels(double dx);
    // Shows the whole trace with a small margin on both sides.
    void fitAll();
    bool isFitted() const;

    // The window fitAll() shows (and the widest the view may get).
    double fittedStart() const;
    double fittedEnd() const;

    friend bool operator==(const TimelineViewport&, const TimelineViewport&) = default;

private:
    void clamp();

    int64_t m_begin = 0;
    int64_t m_end = 1000;
    double m_width = 1000;
    double m_t0 = 0;
    double m_t1 = 1000;
};

} // namespace warpline::views
