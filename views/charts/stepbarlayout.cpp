#include "charts/stepbarlayout.h"

#include <algorithm>
#include <cmath>

namespace warpline::views {

StepBarLayout::StepBarLayout(const std::vector<model::Step>& steps, double width, double height)
    : m_width(std::max(1.0, width)), m_height(std::max(1.0, height)) {
    if (steps.empty())
        return;
    const size_t fit =
        std::clamp<size_t>(static_cast<size_t>(m_width / kMinColumnPx), 1, kMaxColumns);
    m_stepsPerColumn = (steps.size() + fit - 1) / fit;
    const size_t columns = (steps.size() + m_stepsPerColumn - 1) / m_stepsPerColumn;
    m_slot = m_width / static_cast<double>(columns);
    // A gap between bars while there is room for one: a quarter of the slot, at most 12 px.
    const double gap = m_slot >= 6 ? std::min(12.0, 0.25 * m_slot) : m_slot >= 3 ? 1.0 : 0.0;

    m_columns.reserve(columns);
    double steadyMax = 0, anyMax = 0;
    for (size_t c = 0; c < columns; ++c) {
        StepColumn col;
        col.first = c * m_stepsPerColumn;
        col.count = std::min(m_stepsPerColumn, steps.size() - col.first);
        col.start = steps[col.first].start;
        col.end = steps[col.first + col.count - 1].end;
        for (size_t i = col.first; i < col.first + col.count; ++i) {
            const model::Step& s = steps[i];
            col.warmup += s.warmup ? 1 : 0;
            for (size_t k = 0; k < model::kStepCauseCount; ++k)
                col.causes[k] += static_cast<double>(s.causes.time[k]);
            col.duration += static_cast<double>(s.duration());
        }
        const double n = static_cast<double>(col.count);
        for (double& v : col.causes)
            v /= n;
        col.duration /= n;
        col.x = static_cast<double>(c) * m_slot + gap / 2;
        col.width = m_slot - gap;
        anyMax = std::max(anyMax, col.duration);
        if (col.warmup == 0)
            steadyMax = std::max(steadyMax, col.duration);
        m_columns.push_back(std::move(col));
    }
    m_nsMax = std::max(1.0, steadyMax > 0 ? 1.15 * steadyMax : 1.05 * anyMax);

    for (StepColumn& col : m_columns) {
        double bottom = 0; // ns stacked so far
        for (size_t k = 0; k < model::kStepCauseCount; ++k) {
            const double v = col.causes[k];
            if (v <= 0)
                continue;
            const double y0 = yOf(bottom), y1 = std::max(0.0, yOf(bottom + v));
            bottom += v;
            if (y1 >= y0) // entirely above the top: clipped away
                continue;
            col.segments.push_back(
                {static_cast<model::StepCause>(k), QRectF(col.x, y1, col.width, y0 - y1)});
        }
        col.clipped = bottom > m_nsMax;
    }
}

double StepBarLayout::yOf(double ns) const {
    return m_height - m_height * ns / m_nsMax;
}

int StepBarLayout::columnAt(double x) const {
    if (m_columns.empty() || x < 0 || x >= m_width)
        return -1;
    return std::min(static_cast<int>(x / m_slot), static_cast<int>(m_columns.size()) - 1);
}

int StepBarLayout::columnOfStep(size_t index) const {
    const size_t c = index / m_stepsPerColumn;
    return c < m_columns.size() ? static_cast<int>(c) : -1;
}

size_t StepBarLayout::segmentCount() const {
    size_t n = 0;
    for (const StepColumn& c : m_columns)
        n += c.segments.size();
    return n;
}

} // namespace warpline::views
