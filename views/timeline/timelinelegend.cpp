#include "timeline/timelinelegend.h"

#include <QEvent>
#include <QPainter>

namespace warpline::views {

TimelineLegend::TimelineLegend(QWidget* parent) : QWidget(parent) {
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
    setFixedHeight(fontMetrics().height() + 6);
    rebuild();
}

void TimelineLegend::rebuild() {
    const SpanPalette palette(this->palette());
    m_entries = {
        {tr("Kernels (colour per name)"),
         {palette.kernel("gemm"), palette.kernel("softmax"), palette.kernel("elementwise")}},
        {tr("Communication"), {palette.communication("ncclDevKernel_AllReduce")}},
        {tr("Copy"), {palette.memcpy()}},
        {tr("Memset"), {palette.memset()}},
        {tr("CUDA call"), {palette.apiCall()}},
        {tr("Launch"), {palette.launchCall()}},
        {tr("Waits for the GPU"), {palette.stall()}},
        {tr("Launch queue depth"), {palette.queueDepth()}},
        {tr("CPU running / waiting"), {palette.cpuRunning(), palette.cpuWaiting()}},
        {tr("Partly busy (bar: busy share)"), {palette.kernel("gemm")}, true},
    };
    QStringList tip;
    for (const Entry& e : m_entries)
        tip << e.label;
    setToolTip(tr("Timeline colours: %1").arg(tip.join(QStringLiteral(", "))));
    updateGeometry();
    update();
}

int TimelineLegend::entryWidth(const Entry& e) const {
    const QFontMetrics fm = fontMetrics();
    const int swatch = std::max(8, fm.height() - 4);
    return static_cast<int>(e.colors.size()) * (swatch + 2) + 2 + fm.horizontalAdvance(e.label) +
           14;
}

int TimelineLegend::heightForWidth(int width) const {
    const int line = fontMetrics().height() + 6;
    int lines = 1, x = 8;
    for (const Entry& e : m_entries) {
        if (x > 8 && x + entryWidth(e) > width) {
            ++lines;
            x = 8;
        }
        x += entryWidth(e);
    }
    return lines * line;
}

QSize TimelineLegend::sizeHint() const {
    int width = 8;
    for (const Entry& e : m_entries)
        width += entryWidth(e);
    return {width, fontMetrics().height() + 6};
}

void TimelineLegend::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const SpanPalette palette(this->palette());
    p.fillRect(rect(), palette.labelBackground());
    const QFontMetrics fm = fontMetrics();
    const int line = fm.height() + 6;
    const int swatch = std::max(8, fm.height() - 4);
    int x = 8, y = 0;
    p.setPen(palette.dimText());
    for (const Entry& e : m_entries) {
        // Entries wrap onto another line rather than run off a narrow window.
        if (x > 8 && x + entryWidth(e) > width()) {
            x = 8;
            y += line;
        }
        const int top = y + (line - swatch) / 2;
        for (const QColor& c : e.colors) {
            const QRect box(x, top, swatch, swatch);
            if (e.partial) {
                p.fillRect(box, palette.partlyBusy(c));
                p.fillRect(QRect(x, top + swatch * 2 / 3, swatch, swatch - swatch * 2 / 3), c);
            } else {
                p.fillRect(box, c);
            }
            x += swatch + 2;
        }
        x += 2;
        p.drawText(QRect(x, y, width() - x, line), Qt::AlignLeft | Qt::AlignVCenter, e.label);
        x += fm.horizontalAdvance(e.label) + 14;
    }
}

void TimelineLegend::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    // As many lines as the width needs (the layout then gives the timeline the rest).
    const int wanted = heightForWidth(width());
    if (height() != wanted)
        setFixedHeight(wanted);
}

void TimelineLegend::changeEvent(QEvent* event) {
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::FontChange)
        rebuild();
    QWidget::changeEvent(event);
}

} // namespace warpline::views
