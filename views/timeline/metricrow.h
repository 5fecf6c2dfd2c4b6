#pragma once

// MetricRow: how the timeline draws one GPU metric series (RowKind::GpuMetric), its label and its
// hover. Per pixel column, the largest value of the samples overlapping it, as a filled area from
// the row's bottom; the scale's top is 100% of peak for a percentage (or the series' maximum when
// it goes above), else the series' maximum, computed once per trace. The hover: every metric of
// the sample under the cursor, the row's first. GUI thread only; O(visible samples + width) a
// paint.

#include "timeformat.h"
#include "timeline/timelineviewport.h"
#include "tracestore.h"

#include <QCoreApplication>
#include <QPainter>
#include <QRect>
#include <QString>
#include <vector>

namespace warpline::views {

class MetricRow {
    Q_DECLARE_TR_FUNCTIONS(MetricRow)
public:
    // Each series' scale, by TraceStore::gpuMetrics() set, then metric.
    using Scales = std::vector<std::vector<float>>;
    static Scales scales(const model::TraceStore& store);
    // The series of metric `metric` of set `set`, or nullptr when the store has none.
    static const model::GpuMetricSeries* seriesOf(const model::TraceStore& store, size_t set,
                                                  size_t metric);
    // Paints the row [top, top + height) across `area` (the span area); `columns` is scratch
    // space kept between paints.
    static void paint(QPainter& p, const model::GpuMetricSamples& set,
                      const model::GpuMetricSeries& series, float scale, const QRect& area,
                      double top, int height, const TimelineViewport& viewport,
                      std::vector<float>& columns);
    // The row's label with its scale: "SM active %", or "DRAM read · max 1.20 GB/s".
    static QString label(const QString& name, const model::GpuMetricSeries& series, float scale);
    // The hover text at `time` for the row of metric `metric`.
    static QString hoverText(const model::GpuMetricSamples& set, size_t metric, int64_t time,
                             TimeUnit unit);
};

} // namespace warpline::views
