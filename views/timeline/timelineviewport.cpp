#include "timeline/timelineviewport.h"

#include <algorithm>

namespace warpline::views {

namespace {
constexpr double kFitMargin = 0.01; // of the trace's duration, each side
}

TimelineViewport::TimelineViewport(int64_t begin, int64_t end, double width) {
    m_width = std::max(1.0, width);
    setBounds(begin, end);
}

void TimelineViewport::setBounds(int64_t begin, int64_t end) {
    m_begin = begin;
    m_end = std::max(end, begin);
    fitAll();
}

void TimelineViewport::setWidth(double width) {
    m_width = std::max(1.0, width);
}

double TimelineViewport::fittedStart() const {
    const double duration = std::max(kMinDuration, static_cast<double>(m_end - m_begin));
    const double centre = 0.5 * (static_cast<double>(m_begin) + static_cast<double>(m_end));
    return centre - duration * (0.5 + kFitMargin);
}

double TimelineViewport::fittedEnd() const {
    const double duration = std::max(kMinDuration, static_cast<double>(m_end - m_begin));
    const double centre = 0.5 * (static_cast<double>(m_begin) + static_cast<double>(m_end));
    return centre + duration * (0.5 + kFitMargin);
}

void TimelineViewport::fitAll() {
    m_t0 = fittedStart();
    m_t1 = fittedEnd();
}

bool TimelineViewport::isFitted() const {
    return m_t0 <= fittedStart() && m_t1 >= fittedEnd();
}

void TimelineViewport::setVisibleRange(double t0, double t1) {
    if (t1 < t0)
        std::swap(t0, t1);
    m_t0 = t0;
    m_t1 = t1;
    clamp();
}

void TimelineViewport::zoomAbout(double x, double factor) {
    if (!(factor > 0))
        return;
    const double t = xToTime(x);
    const double maxDuration = fittedEnd() - fittedStart();
    const double duration = std::clamp(visibleDuration() / factor, kMinDuration, maxDuration);
    const double fraction = x / m_width;
    m_t0 = t - fraction * duration;
    m_t1 = m_t0 + duration;
    clamp();
}

void TimelineViewport::panByPixels(double dx) {
    const double dt = dx * nsPerPixel();
    m_t0 += dt;
    m_t1 += dt;
    clamp();
}

void TimelineViewport::clamp() {
    const double lo = fittedStart();
    const double hi = fittedEnd();
    double duration = std::clamp(m_t1 - m_t0, kMinDuration, hi - lo);
    if (duration != m_t1 - m_t0) {
        const double centre = 0.5 * (m_t0 + m_t1);
        m_t0 = centre - 0.5 * duration;
    }
    m_t0 = std::clamp(m_t0, lo, hi - duration);
    m_t1 = m_t0 + duration;
}

} // namespace warpline::views
