#pragma once

// One value per pixel column drawn as a filled area rising from a row's bottom, as the queue-depth
// and GPU-metric rows draw theirs: equal neighbours merge into one rectangle; a column at or below
// 0 draws nothing, any other at least 1 px tall, at most `usable` (the value at `scale` or above).
// O(columns).

#include <QColor>
#include <QPainter>
#include <QRectF>
#include <algorithm>
#include <vector>

namespace warpline::views {

template <typename T>
void paintColumnArea(QPainter& p, const std::vector<T>& columns, int count, double left,
                     double bottom, double usable, double scale, const QColor& fill) {
    if (scale <= 0)
        return;
    int runStart = 0;
    T runValue = -1;
    const auto flush = [&](int endX) {
        if (runValue > 0) {
            const double h =
                std::max(1.0, usable * std::min(1.0, static_cast<double>(runValue) / scale));
            p.fillRect(QRectF(left + runStart, bottom - h, endX - runStart, h), fill);
        }
    };
    const int n = std::min(count, static_cast<int>(columns.size()));
    for (int x = 0; x < n; ++x) {
        const T v = columns[static_cast<size_t>(x)];
        if (v != runValue) {
            flush(x);
            runStart = x;
            runValue = v;
        }
    }
    flush(n);
}

} // namespace warpline::views
