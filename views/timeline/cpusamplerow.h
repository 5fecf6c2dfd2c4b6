#pragma once

// CpuSampleRow: how the timeline draws a thread's CPU samples (RowKind::CpuSamples) and what its
// hover says. Per pixel column, a bar as tall as the share of the column's time the thread ran,
// over a band where it waited (SCHED_EVENTS); sample ticks along the top when zoomed in far enough
// to tell them apart. The hover: the thread's state at the cursor and the nearest sample's stack.
// GUI thread only; O(visible switches + width) a paint.

#include "spanpalette.h"
#include "timeformat.h"
#include "timeline/timelineviewport.h"
#include "tracestore.h"

#include <QCoreApplication>
#include <QPainter>
#include <QRect>
#include <QString>

namespace warpline::views {

class CpuSampleRow {
    Q_DECLARE_TR_FUNCTIONS(CpuSampleRow)
public:
    // The sampled activity of a thread (an index into TraceStore::threads()), or nullptr.
    static const model::ThreadCpuActivity* of(const model::TraceStore& store, uint32_t thread);
    // Paints the row [top, top + height) across `area` (the span area).
    static void paint(QPainter& p, const model::ThreadCpuActivity& t, const QRect& area, double top,
                      int height, const TimelineViewport& viewport, const SpanPalette& palette);
    // The hover text at `time`: the state, and the stack of the nearest sample within `slack` ns.
    static QString hoverText(const model::TraceStore& store, const model::ThreadCpuActivity& t,
                             int64_t time, int64_t slack, TimeUnit unit);
};

} // namespace warpline::views
