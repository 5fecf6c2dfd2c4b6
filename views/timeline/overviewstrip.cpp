#include "timeline/overviewstrip.h"

#include "spanpalette.h"

#include <QMouseEvent>
#include <QPainter>
#include <algorithm>
#include <cmath>

namespace warpline::views {

OverviewStrip::OverviewStrip(QWidget* parent) : QWidget(parent) {
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    setFixedHeight(kHeight);
    setCursor(Qt::PointingHandCursor);
    setToolTip(tr("The whole trace: GPU busy time, start-up and steps. Click or drag to move the "
                  "timeline there."));
}

void OverviewStrip::setTrace(std::shared_ptr<const LoadedTrace> trace) {
    const bool sameStore = m_trace && trace && m_trace->store == trace->store;
    m_trace = std::move(trace);
    if (!sameStore) {
        m_busy.assign(kBins, 0.0f);
        if (m_trace) {
            const model::TraceStore& store = *m_trace->store;
            m_begin = static_cast<double>(store.beginTime());
            m_end = std::max(m_begin + 1, static_cast<double>(store.endTime()));
            m_busy = m_trace->gpuActivity && m_trace->gpuActivity->busyShares.size() == kBins
                         ? m_trace->gpuActivity->busyShares
                         : model::gpuActivity(store).busyShares;
        }
    }
    update();
}

void OverviewStrip::setView(double t0, double t1) {
    m_view0 = t0;
    m_view1 = t1;
    update();
}

double OverviewStrip::xOfTime(double t) const {
    return (t - m_begin) / (m_end - m_begin) * width();
}

double OverviewStrip::timeOfX(double x) const {
    return m_begin + x / std::max(1, width()) * (m_end - m_begin);
}

double OverviewStrip::busyShare(double t0, double t1) const {
    if (m_busy.empty() || t1 <= t0)
        return 0;
    const double binNs = (m_end - m_begin) / kBins;
    const auto first = static_cast<size_t>(std::clamp((t0 - m_begin) / binNs, 0.0, kBins - 1.0));
    const auto last = static_cast<size_t>(std::clamp((t1 - m_begin) / binNs, 0.0, kBins - 1.0));
    double sum = 0;
    for (size_t b = first; b <= last; ++b)
        sum += m_busy[b];
    return sum / static_cast<double>(last - first + 1);
}

void OverviewStrip::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const SpanPalette palette(this->palette());
    p.fillRect(rect(), palette.labelBackground());
    if (!m_trace)
        return;
    const int w = width();
    const int h = height();
    // Steps: alternating tints; warm-up darker; start-up before the first one, labelled.
    if (const model::StepAnalysis* steps = m_trace->steps.get(); steps && !steps->empty()) {
        const QColor even = palette.alternateRow();
        QColor warm = palette.dimText();
        warm.setAlpha(60);
        for (size_t k = 0; k < steps->steps.size(); ++k) {
            const model::Step& s = steps->steps[k];
            const double x0 = xOfTime(static_cast<double>(s.start));
            const double x1 = std::max(x0 + 1, xOfTime(static_cast<double>(s.end)));
            if (s.warmup)
                p.fillRect(QRectF(x0, 0, x1 - x0, h), warm);
            else if (k % 2 == 0)
                p.fillRect(QRectF(x0, 0, x1 - x0, h), even);
        }
        const double startupEnd = xOfTime(static_cast<double>(steps->steps.front().start));
        if (startupEnd > 40) {
            p.setPen(palette.dimText());
            p.drawText(QRectF(4, 0, startupEnd - 8, h), Qt::AlignLeft | Qt::AlignTop,
                       tr("start-up"));
        }
    }
    // GPU busy: one bar per pixel column, the share of its time some op ran.
    QColor bar = this->palette().color(QPalette::Highlight);
    bar.setAlpha(190);
    const int barTop = 12;
    const int barHeight = h - barTop - 2;
    for (int x = 0; x < w; ++x) {
        const double share = busyShare(timeOfX(x), timeOfX(x + 1));
        if (share <= 0)
            continue;
        const double bh = std::max(1.0, share * barHeight);
        p.fillRect(QRectF(x, h - 2 - bh, 1, bh), bar);
    }
    // The timeline's view: a frame at least 3 px wide.
    double x0 = xOfTime(m_view0);
    double x1 = xOfTime(m_view1);
    if (x1 - x0 < 3) {
        const double c = 0.5 * (x0 + x1);
        x0 = c - 1.5;
        x1 = c + 1.5;
    }
    QColor fill = palette.rangeSelection();
    fill.setAlpha(70);
    p.fillRect(QRectF(x0, 0, x1 - x0, h), fill);
    p.setPen(QPen(palette.text(), 1.5));
    p.drawRect(QRectF(x0, 0.75, x1 - x0, h - 1.5));
    p.setPen(palette.gridLine());
    p.drawLine(0, h - 1, w, h - 1);
}

void OverviewStrip::requestCentre(double x) {
    const double duration = m_view1 - m_view0;
    const double centre = timeOfX(x);
    emit viewRequested(centre - duration / 2, centre + duration / 2);
}

void OverviewStrip::mousePressEvent(QMouseEvent* event) {
    if (event->button() == Qt::LeftButton && m_trace)
        requestCentre(event->position().x());
}

void OverviewStrip::mouseMoveEvent(QMouseEvent* event) {
    if ((event->buttons() & Qt::LeftButton) && m_trace)
        requestCentre(event->position().x());
}

} // namespace warpline::views
