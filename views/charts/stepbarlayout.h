#pragma once

// StepBarLayout: where the step-time chart (stepchart.h) draws its bars. A pure function of the
// steps and the plot's size (no painting), testable without a window.
//
// One column a step, by start, while a step gets at least kMinColumnPx pixels of width. With more
// steps than that, k consecutive steps share a column (k = ceil(steps / columns), the last column
// may hold fewer) and its bar is their mean: each cause's mean time and the mean duration. So a
// plot has at most min(width / kMinColumnPx, kMaxColumns) columns and draws at most
// kStepCauseCount rects a column, however many steps the trace has.
//
// A bar stacks the step's causes (stepbreakdown.h) bottom up in StepCause order (GPU compute at the
// bottom, idle causes above); its height is the step's duration, since the causes add up to it.
// The y axis runs from 0 to nsMax: 15% above the tallest column without a warm-up step (the steady
// steps set the scale; a 400 ms warm-up step beside 10 ms steps would flatten them), or 5% above
// the tallest column when every column holds warm-up. A taller column is clipped at the top.
//
// Units: times in ns; x and y in px from the plot's top-left corner, y growing downwards.

#include "stepbreakdown.h"
#include "steps.h"

#include <QRectF>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace warpline::views {

struct StepColumn {
    size_t first = 0;           // index into the steps
    size_t count = 0;           // steps [first, first + count)
    size_t warmup = 0;          // of them, how many are warm-up
    int64_t start = 0, end = 0; // ns: [first step's start, last step's end)
    std::array<double, model::kStepCauseCount> causes{}; // ns: the mean over its steps
    double duration = 0;                                 // ns: the mean
    double x = 0, width = 0;                             // px: the bar (gaps are outside)
    bool clipped = false;                                // taller than nsMax
    // The bar's segments, bottom up, one per cause with time (px; clipped to the plot's top).
    struct Segment {
        model::StepCause cause;
        QRectF rect;
    };
    std::vector<Segment> segments;
};

class StepBarLayout {
public:
    static constexpr double kMinColumnPx = 2;
    static constexpr size_t kMaxColumns = 500;

    StepBarLayout() = default;
    // `width` and `height`: the plot's size in px.
    StepBarLayout(const std::vector<model::Step>& steps, double width, double height);

    const std::vector<StepColumn>& columns() const { return m_columns; }
    size_t stepsPerColumn() const { return m_stepsPerColumn; }
    bool aggregated() const { return m_stepsPerColumn > 1; }
    double nsMax() const { return m_nsMax; }
    double slotWidth() const { return m_slot; } // px per column, the gap included
    double width() const { return m_width; }
    double height() const { return m_height; }
    double yOf(double ns) const; // px from the top for a time

    // The column whose slot holds x (px from the plot's left edge), or -1.
    int columnAt(double x) const;
    // The column holding step `index`, or -1.
    int columnOfStep(size_t index) const;
    size_t segmentCount() const;

private:
    std::vector<StepColumn> m_columns;
    size_t m_stepsPerColumn = 1;
    double m_nsMax = 1;
    double m_slot = 0;
    double m_width = 0, m_height = 0;
};

} // namespace warpline::views
