#include "timeline/cpusamplerow.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace warpline::views {

const model::ThreadCpuActivity* CpuSampleRow::of(const model::TraceStore& store, uint32_t thread) {
    if (thread >= store.threads().size())
        return nullptr;
    return store.cpuSamples().thread(store.threads()[thread].globalTid);
}

void CpuSampleRow::paint(QPainter& p, const model::ThreadCpuActivity& activity, const QRect& area,
                         double top, int height, const TimelineViewport& viewport,
                         const SpanPalette& palette) {
    const model::ThreadCpuActivity* t = &activity;
    const double y = top + 2, h = height - 4;
    QColor waiting = palette.cpuWaiting();
    const QColor running = palette.cpuRunning();
    const double nsPerPixel = std::max(1e-9, viewport.nsPerPixel());
    const double start = viewport.visibleStart();
    if (!t->stateTimes.empty()) {
        // One column per pixel: how long the thread ran and waited in it.
        for (int x = 0; x < area.width(); ++x) {
            const auto c0 = static_cast<int64_t>(std::floor(start + x * nsPerPixel));
            const auto c1 =
                std::max(c0 + 1, static_cast<int64_t>(std::floor(start + (x + 1) * nsPerPixel)));
            if (c1 <= t->stateTimes.front() || c0 >= t->stateTimes.back())
                continue;
            const model::ThreadCpuActivity::StateTimes s = t->timeIn(c0, c1);
            const double span = static_cast<double>(c1 - c0);
            if (s.waiting > 0)
                p.fillRect(QRectF(area.left() + x, y, 1, h), waiting);
            if (s.running > 0) {
                const double bar = std::max(1.0, h * static_cast<double>(s.running) / span);
                p.fillRect(QRectF(area.left() + x, y + h - bar, 1, bar), running);
            }
        }
    }
    // Samples as ticks along the top, where they are few enough to see one by one.
    const int64_t t0 = static_cast<int64_t>(start);
    const int64_t t1 = static_cast<int64_t>(start + area.width() * nsPerPixel) + 1;
    const auto [first, last] = t->samplesIn(t0, t1);
    if (last - first <= static_cast<size_t>(area.width()) / 3) {
        p.setPen(palette.text());
        for (size_t i = first; i < last; ++i) {
            const double x = area.left() + (t->sampleTimes[i] - start) / nsPerPixel;
            p.drawLine(QPointF(x, y), QPointF(x, y + std::min(4.0, h / 3)));
        }
    }
}

QString CpuSampleRow::hoverText(const model::TraceStore& store,
                                const model::ThreadCpuActivity& activity, int64_t time,
                                int64_t slack, TimeUnit unit) {
    const model::ThreadCpuActivity* t = &activity;
    const model::CpuState state = t->stateAt(time);
    QString text = state == model::CpuState::Running   ? tr("CPU: running")
                   : state == model::CpuState::Waiting ? tr("CPU: waiting off its CPU")
                                                       : tr("CPU: state unknown");
    // The nearest sample within the slack, with its stack.
    const auto [first, last] = t->samplesIn(time - slack, time + slack + 1);
    size_t best = last;
    for (size_t i = first; i < last; ++i)
        if (best == last ||
            std::llabs(t->sampleTimes[i] - time) < std::llabs(t->sampleTimes[best] - time))
            best = i;
    if (best == last)
        return text + tr("\nNo sample here (samples come every 1/rate s of CPU time)");
    text += tr("\nSample at %1%2:")
                .arg(TimeFormat::timestamp(static_cast<double>(t->sampleTimes[best]), 1000.0, unit),
                     t->sampleWaiting[best] ? tr(", as it went off its CPU") : QString());
    const auto stack = store.cpuSamples().stack(t->sampleStacks[best]);
    const size_t shown = std::min<size_t>(stack.size(), 16);
    for (size_t d = 0; d < shown; ++d) {
        const std::string& module = store.text(stack[d].file);
        text += QStringLiteral("\n  %1  (%2)")
                    .arg(QString::fromStdString(store.text(stack[d].function)),
                         QString::fromStdString(module.substr(module.rfind('/') + 1)));
    }
    if (stack.size() > shown)
        text += tr("\n  … %1 more frames").arg(stack.size() - shown);
    return text;
}

} // namespace warpline::views
