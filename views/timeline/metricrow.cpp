#include "timeline/metricrow.h"

#include "timeline/columnarea.h"

#include <algorithm>
#include <cmath>

namespace warpline::views {

namespace {

// Colours by what a metric measures: SM occupancy, math pipes, memory, interconnect.
QColor metricColor(const std::string& label) {
    if (label.rfind("DRAM", 0) == 0 || label.rfind("L2", 0) == 0)
        return QColor(230, 126, 34);
    if (label.find("Tensor") != std::string::npos || label.find("FMA") != std::string::npos)
        return QColor(142, 68, 173);
    if (label.rfind("PCIe", 0) == 0 || label.rfind("NVLink", 0) == 0)
        return QColor(52, 73, 94);
    return QColor(22, 160, 133);
}

QString metricValue(const model::GpuMetricSeries& series, double v) {
    if (std::isnan(v))
        return QStringLiteral("–");
    switch (series.unit) {
    case model::MetricUnit::Percent:
        return QStringLiteral("%1%").arg(v, 0, 'f', v < 10 ? 1 : 0);
    case model::MetricUnit::BytesPerSecond:
        if (v >= 1e9)
            return QStringLiteral("%1 GB/s").arg(v / 1e9, 0, 'f', 2);
        if (v >= 1e6)
            return QStringLiteral("%1 MB/s").arg(v / 1e6, 0, 'f', 1);
        return QStringLiteral("%1 kB/s").arg(v / 1e3, 0, 'f', 1);
    case model::MetricUnit::Other:
        break;
    }
    return QString::number(v, 'g', 4);
}

} // namespace

MetricRow::Scales MetricRow::scales(const model::TraceStore& store) {
    Scales out;
    for (const model::GpuMetricSamples& set : store.gpuMetrics()) {
        std::vector<float>& scale = out.emplace_back();
        for (const model::GpuMetricSeries& series : set.metrics) {
            float top = series.unit == model::MetricUnit::Percent ? 100.0f : 0.0f;
            for (const float v : series.values)
                if (v > top) // NaN compares false
                    top = v;
            scale.push_back(top);
        }
    }
    return out;
}

const model::GpuMetricSeries* MetricRow::seriesOf(const model::TraceStore& store, size_t set,
                                                  size_t metric) {
    const auto& sets = store.gpuMetrics();
    if (set >= sets.size() || metric >= sets[set].metrics.size())
        return nullptr;
    return &sets[set].metrics[metric];
}

void MetricRow::paint(QPainter& p, const model::GpuMetricSamples& set,
                      const model::GpuMetricSeries& series, float scale, const QRect& area,
                      double top, int height, const TimelineViewport& viewport,
                      std::vector<float>& columns) {
    if (set.times.empty())
        return;
    const int w = area.width();
    const double t0 = viewport.visibleStart();
    const double nsPerPixel = viewport.nsPerPixel();
    columns.assign(static_cast<size_t>(std::max(0, w)), -1.0f);
    for (size_t s = set.firstEndingAfter(static_cast<int64_t>(t0)); s < set.times.size(); ++s) {
        const double x0 = (static_cast<double>(set.sampleBegin(s)) - t0) / nsPerPixel;
        if (x0 >= w)
            break;
        const float v = series.values[s];
        if (std::isnan(v))
            continue;
        const double x1 = (static_cast<double>(set.times[s]) - t0) / nsPerPixel;
        const int first = std::max(0, static_cast<int>(std::floor(x0)));
        const int last = std::min(w - 1, static_cast<int>(std::ceil(x1)) - 1);
        for (int x = first; x <= last; ++x)
            columns[static_cast<size_t>(x)] = std::max(columns[static_cast<size_t>(x)], v);
    }
    QColor fill = metricColor(series.label);
    fill.setAlpha(190);
    paintColumnArea(p, columns, w, area.left(), top + height - 2, height - 5, scale, fill);
}

QString MetricRow::label(const QString& name, const model::GpuMetricSeries& series, float scale) {
    return series.unit == model::MetricUnit::Percent
               ? tr("%1 %").arg(name)
               : tr("%1 · max %2").arg(name, metricValue(series, scale));
}

QString MetricRow::hoverText(const model::GpuMetricSamples& set, size_t metric, int64_t time,
                             TimeUnit unit) {
    const auto s = static_cast<size_t>(std::lower_bound(set.times.begin(), set.times.end(), time) -
                                       set.times.begin());
    if (s >= set.times.size() || set.sampleBegin(s) > time || metric >= set.metrics.size())
        return tr("No GPU metric sample here");
    const model::GpuMetricSeries& hovered = set.metrics[metric];
    QString text =
        tr("%1: %2 (the %3 sample ending at %4)")
            .arg(QString::fromStdString(hovered.label), metricValue(hovered, hovered.values[s]),
                 TimeFormat::duration(static_cast<double>(set.times[s] - set.sampleBegin(s)), unit),
                 TimeFormat::timestamp(static_cast<double>(set.times[s]), 1, unit));
    for (size_t m = 0; m < set.metrics.size(); ++m)
        if (m != metric)
            text += QStringLiteral("\n%1: %2")
                        .arg(QString::fromStdString(set.metrics[m].label),
                             metricValue(set.metrics[m], set.metrics[m].values[s]));
    if (hovered.unit == model::MetricUnit::Percent)
        text += tr("\nPercentages are of the GPU's peak, averaged over the sample");
    return text;
}

} // namespace warpline::views
