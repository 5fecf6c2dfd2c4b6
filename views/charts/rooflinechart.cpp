#include "charts/rooflinechart.h"

#include "analysishelpers.h"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>
#include <cmath>
#include <map>

namespace warpline::views {

namespace {

QColor boundColor(model::KernelBound bound) {
    switch (bound) {
    case model::KernelBound::Memory:
        return QColor(230, 126, 34);
    case model::KernelBound::Compute:
        return QColor(142, 68, 173);
    default:
        return QColor(52, 152, 219);
    }
}

double orZero(double v) {
    return std::isnan(v) ? 0.0 : std::clamp(v, 0.0, 100.0);
}

QString pct(double v) {
    return std::isnan(v) ? QStringLiteral("–") : QStringLiteral("%1%").arg(v, 0, 'f', 0);
}

} // namespace

RooflineChart::RooflineChart(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setMinimumSize(260, 200);
}

void RooflineChart::setReport(std::shared_ptr<const model::TraceStore> store,
                              std::shared_ptr<const model::KernelMetricsReport> report) {
    m_store = std::move(store);
    m_points.clear();
    m_hovered = -1;
    if (m_store && report) {
        // A short name per kernel name: from its first instance's launch configuration.
        std::map<model::NameId, model::EventRef> first;
        for (uint32_t t = 0; t < m_store->gpuTracks().size(); ++t) {
            const model::GpuTrack& track = m_store->gpuTracks()[t];
            for (uint32_t i = 0; i < track.size(); ++i)
                if (track.kind(i) == model::GpuOpKind::Kernel)
                    first.emplace(track.name(i), model::EventRef{t, i});
        }
        int64_t all = 0;
        for (const auto& r : report->rows)
            all += r.totalTime;
        for (const auto& r : report->rows) {
            if (r.bound == model::KernelBound::NotSampled ||
                r.bound == model::KernelBound::TooShort || all <= 0)
                continue;
            Point p;
            p.name = r.name;
            const auto it = first.find(r.name);
            p.label = QString::fromStdString(it == first.end()
                                                 ? m_store->text(r.name)
                                                 : model::gpuOpShortName(*m_store, it->second));
            p.dram = orZero(r.dram());
            p.compute = orZero(r.compute());
            p.bound = r.bound;
            const double share = static_cast<double>(r.totalTime) / static_cast<double>(all);
            p.radius = 3.5 + 22.0 * std::sqrt(share);
            p.details =
                tr("%1\n%2 · %3 of kernel time, %4 samples\n"
                   "DRAM %5 of peak (%6 GB/s) · L2 %7\nFMA %8 · tensor %9 · SM %10 · "
                   "warps %11\nClick to select its kernels on the timeline")
                    .arg(p.label, QString::fromStdString(model::kernelBoundName(r.bound)))
                    .arg(QStringLiteral("%1%").arg(share * 100, 0, 'f', 1))
                    .arg(r.samples)
                    .arg(pct(r.dram()))
                    .arg(std::isnan(r.achievedBandwidth)
                             ? QStringLiteral("–")
                             : QString::number(r.achievedBandwidth / 1e9, 'f', 0))
                    .arg(pct(r.l2), pct(r.fma), pct(r.tensor), pct(r.smActive), pct(r.warpsActive));
            m_points.push_back(std::move(p));
        }
        std::stable_sort(m_points.begin(), m_points.end(),
                         [](const Point& a, const Point& b) { return a.radius > b.radius; });
    }
    update();
}

QRectF RooflineChart::plotArea() const {
    const int text = fontMetrics().height();
    return QRectF(3.2 * text, 0.8 * text, std::max(10.0, width() - 4.0 * text),
                  std::max(10.0, height() - 3.4 * text));
}

QPointF RooflineChart::centreOf(const Point& p) const {
    const QRectF a = plotArea();
    return {a.left() + a.width() * p.dram / 100.0, a.bottom() - a.height() * p.compute / 100.0};
}

int RooflineChart::pointAt(const QPointF& pos) const {
    int best = -1;
    for (int i = 0; i < static_cast<int>(m_points.size()); ++i) {
        const Point& p = m_points[static_cast<size_t>(i)];
        const QPointF d = pos - centreOf(p);
        if (std::hypot(d.x(), d.y()) <= p.radius + 2 &&
            (best < 0 || p.radius <= m_points[static_cast<size_t>(best)].radius))
            best = i;
    }
    return best;
}

void RooflineChart::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().color(QPalette::Base));
    const QRectF a = plotArea();
    const QColor text = palette().color(QPalette::Text);
    QColor dim = text;
    dim.setAlpha(140);
    // Regions: right of 60% DRAM memory-bound, above 60% compute-bound.
    const double x60 = a.left() + a.width() * model::kRoofThreshold / 100.0;
    const double y60 = a.bottom() - a.height() * model::kRoofThreshold / 100.0;
    QColor memory = boundColor(model::KernelBound::Memory),
           compute = boundColor(model::KernelBound::Compute);
    memory.setAlpha(28);
    compute.setAlpha(28);
    p.fillRect(QRectF(QPointF(x60, a.top()), a.bottomRight()), memory);
    p.fillRect(QRectF(a.topLeft(), QPointF(a.right(), y60)), compute);
    p.setPen(QPen(dim, 1, Qt::DashLine));
    p.drawLine(QPointF(x60, a.top()), QPointF(x60, a.bottom()));
    p.drawLine(QPointF(a.left(), y60), QPointF(a.right(), y60));
    p.setPen(text);
    p.drawRect(a);
    const QFontMetrics fm = fontMetrics();
    p.setPen(dim);
    p.drawText(QRectF(x60 + 4, y60 + 2, a.right() - x60 - 6, fm.height()), Qt::AlignRight,
               tr("memory-bound"));
    p.drawText(QRectF(a.left() + 4, a.top() + 2, a.width() - 8, fm.height()), Qt::AlignLeft,
               tr("compute-bound"));
    p.drawText(QRectF(a.left() + 4, a.bottom() - fm.height() - 2, x60 - a.left() - 8, fm.height()),
               Qt::AlignLeft, tr("latency-bound"));
    // Axes: ticks every 20%.
    p.setPen(text);
    for (int v = 0; v <= 100; v += 20) {
        const double x = a.left() + a.width() * v / 100.0;
        const double y = a.bottom() - a.height() * v / 100.0;
        p.drawLine(QPointF(x, a.bottom()), QPointF(x, a.bottom() + 3));
        p.drawText(QRectF(x - 20, a.bottom() + 3, 40, fm.height()), Qt::AlignHCenter,
                   QString::number(v));
        p.drawLine(QPointF(a.left() - 3, y), QPointF(a.left(), y));
        p.drawText(QRectF(0, y - fm.height() / 2.0, a.left() - 5, fm.height()), Qt::AlignRight,
                   QString::number(v));
    }
    p.drawText(QRectF(a.left(), a.bottom() + fm.height() + 2, a.width(), fm.height()),
               Qt::AlignHCenter, tr("DRAM bandwidth, % of peak"));
    p.save();
    p.translate(fm.height() * 0.2, a.center().y());
    p.rotate(-90);
    p.drawText(QRectF(-a.height() / 2, 0, a.height(), fm.height()), Qt::AlignHCenter,
               tr("FMA/tensor %"));
    p.restore();
    if (m_points.empty()) {
        p.setPen(dim);
        p.drawText(a, Qt::AlignCenter | Qt::TextWordWrap,
                   m_store && !m_store->gpuMetrics().empty()
                       ? tr("Every kernel is shorter than one sample")
                       : tr("No GPU metrics in this trace: record with --gpu-metrics"));
        return;
    }
    p.setRenderHint(QPainter::Antialiasing);
    for (size_t i = 0; i < m_points.size(); ++i) {
        const Point& pt = m_points[i];
        QColor fill = boundColor(pt.bound);
        fill.setAlpha(static_cast<int>(i) == m_hovered ? 230 : 160);
        p.setBrush(fill);
        p.setPen(QPen(fill.darker(140), static_cast<int>(i) == m_hovered ? 2 : 1));
        p.drawEllipse(centreOf(pt), pt.radius, pt.radius);
    }
    // Names beside the dots, the hovered one first, then the larger ones, each only where it does
    // not cover a name already written; clipped to the plot.
    p.setPen(text);
    p.setClipRect(a);
    std::vector<QRectF> written;
    std::vector<size_t> order;
    if (m_hovered >= 0)
        order.push_back(static_cast<size_t>(m_hovered));
    for (size_t i = 0; i < m_points.size(); ++i)
        if (static_cast<int>(i) != m_hovered)
            order.push_back(i);
    for (const size_t i : order) {
        const Point& pt = m_points[i];
        const QPointF c = centreOf(pt);
        const QString label = fm.elidedText(pt.label, Qt::ElideRight, 160);
        const double w = fm.horizontalAdvance(label);
        const double x = c.x() + pt.radius + w + 4 > a.right() ? c.x() - pt.radius - w - 3
                                                               : c.x() + pt.radius + 3;
        const QRectF box(x, c.y() - fm.height() / 2.0, w, fm.height());
        if (std::any_of(written.begin(), written.end(),
                        [&box](const QRectF& r) { return r.intersects(box); }))
            continue;
        written.push_back(box);
        p.drawText(QPointF(x, c.y() + fm.ascent() / 2.0 - 1), label);
    }
}

void RooflineChart::mouseMoveEvent(QMouseEvent* event) {
    const int hit = pointAt(event->position());
    if (hit != m_hovered) {
        m_hovered = hit;
        update();
    }
    if (hit >= 0)
        QToolTip::showText(event->globalPosition().toPoint(),
                           m_points[static_cast<size_t>(hit)].details, this);
    else
        QToolTip::hideText();
}

void RooflineChart::mousePressEvent(QMouseEvent* event) {
    const int hit = pointAt(event->position());
    if (hit >= 0 && event->button() == Qt::LeftButton)
        emit kernelClicked(m_points[static_cast<size_t>(hit)].name);
}

} // namespace warpline::views
