#include "charts/stepchart.h"

#include "outputfile.h"
#include "plaintooltip.h"
#include "spanpalette.h"
#include "tables/tableexport.h"

#include <QContextMenuEvent>
#include <QFile>
#include <QFileDialog>
#include <QMenu>
#include <QMouseEvent>
#include <QPainter>
#include <QPixmap>
#include <QToolTip>
#include <algorithm>
#include <cmath>

namespace warpline::views {

namespace {

constexpr double kMargin = 6;
constexpr double kSwatch = 10;

QString causeTitle(model::StepCause cause) {
    return QString::fromLatin1(model::stepCauseTitle(cause));
}

// 1, 2 or 5 times a power of ten: the tick spacing that gives about `ticks` ticks up to `max`.
double niceStep(double max, int ticks) {
    const double raw = max / ticks;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    for (const double m : {1.0, 2.0, 5.0, 10.0}) {
        if (m * magnitude >= raw)
            return m * magnitude;
    }
    return 10 * magnitude;
}

// "5 ms", "2.5 ms": a tick value with as few decimals as the spacing needs, in one unit for all.
QString tickLabel(double ns, double step, TimeUnit unit) {
    const double scale = TimeFormat::unitScale(unit);
    const int decimals = std::clamp(static_cast<int>(-std::floor(std::log10(step / scale))), 0, 3);
    return QStringLiteral("%1 %2")
        .arg(ns / scale, 0, 'f', decimals)
        .arg(TimeFormat::unitSuffix(unit));
}

// How many columns between x labels: 1, 2 or 5 times a power of ten, at least `minimum`.
size_t labelEvery(double minimum) {
    size_t every = 1;
    for (size_t magnitude = 1;; magnitude *= 10) {
        for (const size_t m : {size_t(1), size_t(2), size_t(5)}) {
            every = m * magnitude;
            if (static_cast<double>(every) >= minimum)
                return every;
        }
    }
}

QString percent(double share) {
    if (share <= 0)
        return QStringLiteral("–");
    return QStringLiteral("%1%").arg(100 * share, 0, 'f', share < 0.1 ? 1 : 0);
}

// Diagonal lines over a warm-up bar, lighter (darker in a dark theme) than any cause's colour.
QBrush warmupHatch(const SpanPalette& pal) {
    return QBrush(pal.isDark() ? QColor(0, 0, 0, 130) : QColor(255, 255, 255, 170),
                  Qt::BDiagPattern);
}

} // namespace

StepChart::StepChart(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setAttribute(Qt::WA_OpaquePaintEvent);
}

void StepChart::setSteps(std::shared_ptr<const model::TraceStore> store,
                         std::shared_ptr<const model::StepAnalysis> steps) {
    m_store = std::move(store);
    m_steps = std::move(steps);
    m_present.clear();
    m_steadyShare.fill(0);
    m_hovered = -1;
    if (m_steps && !m_steps->empty()) {
        std::array<int64_t, model::kStepCauseCount> any{};
        for (const model::Step& s : m_steps->steps)
            for (size_t c = 0; c < model::kStepCauseCount; ++c)
                any[c] += s.causes.time[c];
        const model::StepBreakdown steady = m_steps->steadyCauses();
        const double total = static_cast<double>(steady.total());
        for (size_t c = 0; c < model::kStepCauseCount; ++c) {
            if (any[c] > 0)
                m_present.push_back(static_cast<model::StepCause>(c));
            m_steadyShare[c] = total > 0 ? static_cast<double>(steady.time[c]) / total : 0.0;
        }
    }
    relayout();
}

void StepChart::setTimeUnit(TimeUnit unit) {
    m_unit = unit;
    relayout(); // the legend's width follows the unit
}

double StepChart::legendWidth() const {
    const QFontMetrics fm = fontMetrics();
    double text = fm.horizontalAdvance(tr("Steady steps"));
    for (const model::StepCause c : m_present)
        text = std::max<double>(text, fm.horizontalAdvance(causeTitle(c)) + kSwatch + 6 +
                                          fm.horizontalAdvance(QStringLiteral(" 100%")));
    text = std::max<double>(text, fm.horizontalAdvance(tr("Warm-up")) + kSwatch + 6);
    if (m_steps && m_steps->medianDuration > 0)
        text = std::max<double>(
            text, fm.horizontalAdvance(
                      tr("Median %1").arg(TimeFormat::duration(m_steps->medianDuration, m_unit))) +
                      kSwatch + 6);
    return text + 2 * kMargin;
}

QRectF StepChart::plotArea() const {
    const QFontMetrics fm = fontMetrics();
    const double left = kMargin + fm.horizontalAdvance(QStringLiteral("888.8 ms")) + 6;
    const double top = kMargin + fm.height() + 6;
    const double bottom = fm.height() + 6 + kMargin;
    return QRectF(left, top, std::max(10.0, width() - left - legendWidth()),
                  std::max(10.0, height() - top - bottom));
}

void StepChart::relayout() {
    const QRectF a = plotArea();
    m_layout = m_steps ? StepBarLayout(m_steps->steps, a.width(), a.height()) : StepBarLayout();
    if (m_hovered >= static_cast<int>(m_layout.columns().size()))
        m_hovered = -1;
    update();
}

void StepChart::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    relayout();
}

void StepChart::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::FontChange) // the margins are text sizes
        relayout();
}

QRectF StepChart::segmentRect(const StepColumn& column, model::StepCause cause) const {
    for (const StepColumn::Segment& s : column.segments) {
        if (s.cause == cause)
            return s.rect.translated(plotArea().topLeft());
    }
    return {};
}

int StepChart::columnAt(const QPointF& pos) const {
    const QRectF a = plotArea();
    if (pos.y() < a.top() || pos.y() >= a.bottom())
        return -1;
    return m_layout.columnAt(pos.x() - a.left());
}

QString StepChart::stepLabel(const StepColumn& column) const {
    const auto& steps = m_steps->steps;
    const QString first = QString::number(steps[column.first].number);
    if (column.count == 1)
        return first;
    return QStringLiteral("%1–%2").arg(first).arg(steps[column.first + column.count - 1].number);
}

QString StepChart::caption() const {
    if (!m_steps)
        return tr("Finding the steps…");
    if (m_steps->empty())
        return m_steps->noStepsReason.empty() ? tr("No training steps: nothing ran on the GPU.")
                                              : QString::fromStdString(m_steps->noStepsReason);
    QStringList parts{tr("Step time")};
    const size_t n = m_steps->steps.size();
    parts << (n == 1 ? tr("1 step") : tr("%L1 steps").arg(n));
    if (m_steps->warmupSteps() > 0)
        parts << tr("%L1 warm-up (hatched)").arg(m_steps->warmupSteps());
    if (m_steps->medianDuration > 0)
        parts << tr("median %1").arg(TimeFormat::duration(m_steps->medianDuration, m_unit));
    if (m_layout.aggregated())
        parts << tr("each bar the mean of %L1 steps").arg(m_layout.stepsPerColumn());
    if (m_steps->measuredOnGpu)
        parts << tr("measured on the GPU");
    return parts.join(QStringLiteral(" · "));
}

QString StepChart::toolTipFor(int index) const {
    if (!m_steps || index < 0 || index >= static_cast<int>(m_layout.columns().size()))
        return {};
    const StepColumn& c = m_layout.columns()[static_cast<size_t>(index)];
    QStringList lines;
    if (c.count == 1) {
        lines << (c.warmup ? tr("Step %1 (warm-up)") : tr("Step %1")).arg(stepLabel(c));
        lines << tr("Duration: %1").arg(TimeFormat::duration(c.duration, m_unit));
    } else {
        lines << (c.warmup ? tr("Steps %1 (the mean of %L2 steps, %L3 warm-up)")
                                 .arg(stepLabel(c))
                                 .arg(c.count)
                                 .arg(c.warmup)
                           : tr("Steps %1 (the mean of %L2 steps)").arg(stepLabel(c)).arg(c.count));
        lines << tr("Mean duration: %1").arg(TimeFormat::duration(c.duration, m_unit));
    }
    for (const model::StepCause cause : m_present) {
        const double v = c.causes[static_cast<size_t>(cause)];
        lines << tr("%1: %2 (%3)")
                     .arg(causeTitle(cause), TimeFormat::duration(v, m_unit),
                          percent(c.duration > 0 ? v / c.duration : 0.0));
    }
    lines << (c.count == 1 ? tr("Click to zoom the timeline to this step")
                           : tr("Click to zoom the timeline to these steps"));
    return lines.join(QLatin1Char('\n'));
}

void StepChart::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const SpanPalette pal(palette());
    p.fillRect(rect(), pal.background());
    const QFontMetrics fm = fontMetrics();
    p.setPen(pal.text());
    if (!m_steps || m_steps->empty()) {
        p.setPen(pal.dimText());
        p.drawText(rect().adjusted(12, 12, -12, -12), Qt::AlignCenter | Qt::TextWordWrap,
                   caption());
        return;
    }
    const QRectF a = plotArea();
    p.drawText(QRectF(kMargin, kMargin, width() - 2 * kMargin, fm.height()),
               Qt::AlignLeft | Qt::AlignVCenter,
               fm.elidedText(caption(), Qt::ElideRight, width() - static_cast<int>(2 * kMargin)));

    const auto& columns = m_layout.columns();
    const double nsMax = m_layout.nsMax();
    const TimeUnit unit = m_unit == TimeUnit::Auto ? TimeFormat::autoUnit(nsMax) : m_unit;

    // Warm-up columns on a shaded band; the hovered column's slot a shade darker.
    const auto slotRect = [&](size_t i) {
        return QRectF(a.left() + static_cast<double>(i) * m_layout.slotWidth(), a.top(),
                      m_layout.slotWidth(), a.height());
    };
    for (size_t i = 0; i < columns.size() && columns[i].warmup > 0; ++i)
        p.fillRect(slotRect(i), pal.alternateRow());
    if (m_hovered >= 0)
        p.fillRect(slotRect(static_cast<size_t>(m_hovered)), pal.gridLine());

    // Grid lines and y labels.
    const double step = niceStep(nsMax, std::clamp(static_cast<int>(a.height() / 45), 2, 6));
    for (double v = 0; v <= nsMax; v += step) {
        const double y = std::round(a.top() + m_layout.yOf(v)) + 0.5;
        p.setPen(pal.gridLine());
        p.drawLine(QPointF(a.left(), y), QPointF(a.right(), y));
        p.setPen(pal.dimText());
        p.drawText(QRectF(kMargin, y - fm.height() / 2.0, a.left() - kMargin - 6, fm.height()),
                   Qt::AlignRight | Qt::AlignVCenter, tickLabel(v, step, unit));
    }

    // The bars: one fillRect per segment, at most kStepCauseCount per column.
    std::array<QColor, model::kStepCauseCount> colours;
    for (size_t c = 0; c < model::kStepCauseCount; ++c)
        colours[c] = pal.stepCause(static_cast<model::StepCause>(c));
    const QBrush hatch = warmupHatch(pal);
    for (const StepColumn& c : columns) {
        for (const StepColumn::Segment& s : c.segments)
            p.fillRect(s.rect.translated(a.topLeft()), colours[static_cast<size_t>(s.cause)]);
        if (c.warmup > 0 && !c.segments.empty()) {
            const QRectF bar(c.segments.back().rect.topLeft(),
                             c.segments.front().rect.bottomRight());
            p.fillRect(bar.translated(a.topLeft()), hatch);
        }
    }

    // Clipped bars: a break near the top and their duration beside it.
    std::vector<QRectF> written;
    for (const StepColumn& c : columns) {
        if (!c.clipped)
            continue;
        const double x = a.left() + c.x;
        p.fillRect(QRectF(x - 1, a.top() + 5, c.width + 2, 3), pal.background());
        const QString label = TimeFormat::duration(c.duration, m_unit);
        const double w = fm.horizontalAdvance(label);
        const double lx = x + c.width + 3 + w <= a.right() ? x + c.width + 3 : x - w - 3;
        const QRectF box(lx, a.top() + 2, w, fm.height());
        if (std::any_of(written.begin(), written.end(),
                        [&box](const QRectF& r) { return r.intersects(box); }))
            continue;
        written.push_back(box);
        p.setPen(pal.dimText());
        p.drawText(box, Qt::AlignLeft | Qt::AlignVCenter, label);
    }

    // The steady steps' median (named in the legend).
    if (m_steps->medianDuration > 0 && m_steps->medianDuration <= nsMax) {
        const double y = std::round(a.top() + m_layout.yOf(m_steps->medianDuration)) + 0.5;
        p.setPen(QPen(pal.text(), 1, Qt::DashLine));
        p.drawLine(QPointF(a.left(), y), QPointF(a.right(), y));
    }

    // The hovered bar's outline.
    if (m_hovered >= 0) {
        const StepColumn& c = columns[static_cast<size_t>(m_hovered)];
        if (!c.segments.empty()) {
            const QRectF bar(c.segments.back().rect.topLeft(),
                             c.segments.front().rect.bottomRight());
            p.setPen(QPen(pal.highlight(), 1.5));
            p.setBrush(Qt::NoBrush);
            p.drawRect(bar.translated(a.topLeft()).adjusted(-0.5, -0.5, 0.5, 0.5));
        }
    }

    // Axis and step numbers under the bars, as many as fit.
    p.setPen(pal.dimText());
    p.drawLine(QPointF(a.left(), a.bottom() + 0.5), QPointF(a.right(), a.bottom() + 0.5));
    const double labelWidth =
        fm.horizontalAdvance(QString::number(m_steps->steps.back().number)) + 12;
    // Every `every` steps (a round number), under the column holding that step.
    const size_t every = labelEvery(labelWidth / m_layout.slotWidth() *
                                    static_cast<double>(m_layout.stepsPerColumn()));
    for (size_t i = 0; i < m_steps->steps.size(); i += every) {
        const StepColumn& c = columns[static_cast<size_t>(m_layout.columnOfStep(i))];
        const double x = a.left() + c.x + c.width / 2;
        p.drawLine(QPointF(x, a.bottom()), QPointF(x, a.bottom() + 3));
        p.drawText(QRectF(x - labelWidth / 2, a.bottom() + 3, labelWidth, fm.height()),
                   Qt::AlignHCenter | Qt::AlignTop, QString::number(m_steps->steps[i].number));
    }
    p.drawText(QRectF(kMargin, a.bottom() + 3, a.left() - kMargin - 6, fm.height()),
               Qt::AlignRight | Qt::AlignTop, tr("step"));

    paintLegend(p, QRectF(a.right() + kMargin, a.top(), width() - a.right() - kMargin, a.height()));
}

void StepChart::paintLegend(QPainter& p, const QRectF& area) const {
    const SpanPalette pal(palette());
    const QFontMetrics fm = fontMetrics();
    const double line = fm.height() + 3;
    double y = area.top();
    p.setPen(pal.dimText());
    p.drawText(QRectF(area.left(), y, area.width(), fm.height()), Qt::AlignLeft | Qt::AlignVCenter,
               tr("Steady steps"));
    y += line;
    const double percentWidth = fm.horizontalAdvance(QStringLiteral("100%"));
    // Top of the stack first, as the bars show them.
    for (auto it = m_present.rbegin(); it != m_present.rend(); ++it) {
        const QRectF swatch(area.left(), y + (fm.height() - kSwatch) / 2, kSwatch, kSwatch);
        p.fillRect(swatch, pal.stepCause(*it));
        p.setPen(pal.text());
        const double tx = swatch.right() + 6;
        p.drawText(QRectF(tx, y, area.right() - tx - percentWidth - 10, fm.height()),
                   Qt::AlignLeft | Qt::AlignVCenter, causeTitle(*it));
        p.setPen(pal.dimText());
        p.drawText(QRectF(area.right() - percentWidth - 10, y, percentWidth, fm.height()),
                   Qt::AlignRight | Qt::AlignVCenter,
                   percent(m_steadyShare[static_cast<size_t>(*it)]));
        y += line;
    }
    y += 4;
    if (m_steps->warmupSteps() > 0) {
        const QRectF swatch(area.left(), y + (fm.height() - kSwatch) / 2, kSwatch, kSwatch);
        p.fillRect(swatch, pal.dimText());
        p.fillRect(swatch, warmupHatch(pal));
        p.setPen(pal.text());
        p.drawText(QRectF(swatch.right() + 6, y, area.width() - kSwatch - 6, fm.height()),
                   Qt::AlignLeft | Qt::AlignVCenter, tr("Warm-up"));
        y += line;
    }
    if (m_steps->medianDuration > 0) {
        const double mid = std::round(y + fm.height() / 2.0) + 0.5;
        p.setPen(QPen(pal.text(), 1, Qt::DashLine));
        p.drawLine(QPointF(area.left(), mid), QPointF(area.left() + kSwatch, mid));
        p.setPen(pal.text());
        p.drawText(QRectF(area.left() + kSwatch + 6, y, area.width() - kSwatch - 6, fm.height()),
                   Qt::AlignLeft | Qt::AlignVCenter,
                   tr("Median %1").arg(TimeFormat::duration(m_steps->medianDuration, m_unit)));
    }
}

void StepChart::mouseMoveEvent(QMouseEvent* event) {
    const int hit = columnAt(event->position());
    if (hit != m_hovered) {
        m_hovered = hit;
        update();
    }
    if (hit >= 0)
        QToolTip::showText(event->globalPosition().toPoint(), plainToolTip(toolTipFor(hit)), this);
    else
        QToolTip::hideText();
}

void StepChart::leaveEvent(QEvent* event) {
    QWidget::leaveEvent(event);
    if (m_hovered >= 0) {
        m_hovered = -1;
        update();
    }
}

void StepChart::mousePressEvent(QMouseEvent* event) {
    const int hit = columnAt(event->position());
    if (hit >= 0 && event->button() == Qt::LeftButton) {
        const StepColumn& c = m_layout.columns()[static_cast<size_t>(hit)];
        emit stepRangeClicked(c.start, c.end);
    }
}

void StepChart::contextMenuEvent(QContextMenuEvent* event) {
    QMenu menu(this);
    const bool any = m_steps && !m_steps->empty();
    menu.addAction(tr("Save Chart as PNG…"), this,
                   [this] {
                       const QString path = QFileDialog::getSaveFileName(
                           this, tr("Save Step Chart"), QStringLiteral("steps.png"),
                           tr("PNG images (*.png)"));
                       QString error;
                       if (!path.isEmpty() && !savePng(path, &error))
                           emit exportFailed(error);
                   })
        ->setEnabled(any);
    menu.addAction(tr("Export Numbers as CSV…"), this,
                   [this] {
                       const QString path = QFileDialog::getSaveFileName(
                           this, tr("Export Steps"), QStringLiteral("steps.csv"),
                           tr("CSV files (*.csv)"));
                       QString error;
                       if (!path.isEmpty() && !exportCsv(path, &error))
                           emit exportFailed(error);
                   })
        ->setEnabled(any);
    menu.exec(event->globalPos());
}

bool StepChart::exportCsv(const QString& path, QString* error) const {
    if (!m_store || !m_steps || m_steps->empty()) {
        if (error)
            *error = tr("This trace has no steps to export.");
        return false;
    }
    return TableExport::write(model::stepTable(*m_store, *m_steps), path, model::TableFormat::Csv,
                              error);
}

// Through OutputFile like every export: whole or not at all, never through a symbolic link.
bool StepChart::savePng(const QString& path, QString* error) {
    const QPixmap pixmap = grab();
    try {
        format::OutputFile output(QFile::encodeName(path).toStdString(), true);
        if (!pixmap.save(QFile::decodeName(output.tempPath().c_str()), "PNG")) {
            if (error)
                *error = tr("Cannot write %1.").arg(path);
            return false;
        }
        output.commit();
    } catch (const std::exception& e) {
        if (error)
            *error = QString::fromStdString(e.what());
        return false;
    }
    return true;
}

} // namespace warpline::views
