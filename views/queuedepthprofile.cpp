#include "queuedepthprofile.h"

#include "gallop.h"

#include <algorithm>
#include <cmath>

namespace warpline::views {

QueueDepthProfile::QueueDepthProfile(std::span<const model::DepthStep> steps) : m_steps(steps) {
    if (steps.empty())
        return;
    std::vector<int32_t> blocks((steps.size() + kBlock - 1) / kBlock, 0);
    for (size_t i = 0; i < steps.size(); ++i)
        blocks[i / kBlock] = std::max(blocks[i / kBlock], steps[i].depth);
    m_levels.push_back(std::move(blocks));
    while (m_levels.back().size() > 1) {
        const std::vector<int32_t>& below = m_levels.back();
        std::vector<int32_t> level((below.size() + 1) / 2);
        for (size_t j = 0; j < level.size(); ++j)
            level[j] = std::max(below[2 * j], 2 * j + 1 < below.size() ? below[2 * j + 1] : 0);
        m_levels.push_back(std::move(level));
    }
    m_maxDepth = m_levels.back()[0];
}

int32_t QueueDepthProfile::maxOfSteps(size_t first, size_t last) const {
    int32_t best = 0;
    // Partial blocks at both ends step by step, whole blocks through the pyramid.
    while (first < last && first % kBlock != 0)
        best = std::max(best, m_steps[first++].depth);
    while (last > first && last % kBlock != 0)
        best = std::max(best, m_steps[--last].depth);
    size_t lo = first / kBlock;
    size_t hi = last / kBlock;
    for (size_t level = 0; lo < hi && level < m_levels.size(); ++level) {
        const std::vector<int32_t>& v = m_levels[level];
        if (lo & 1)
            best = std::max(best, v[lo++]);
        if (hi & 1)
            best = std::max(best, v[--hi]);
        lo /= 2;
        hi /= 2;
    }
    return best;
}

int32_t QueueDepthProfile::maxFrom(size_t& from, int64_t t0, int64_t t1) const {
    if (m_steps.empty() || t1 <= t0)
        return 0;
    const auto begin = m_steps.begin() + static_cast<std::ptrdiff_t>(from);
    // The step holding at t0 is the last one with time <= t0.
    auto firstIt = gallopUpperBound(
        begin, m_steps.end(), t0, [](int64_t t, const model::DepthStep& s) { return t < s.time; });
    if (firstIt != m_steps.begin())
        --firstIt;
    const auto lastIt =
        gallopLowerBound(firstIt, m_steps.end(), t1,
                         [](const model::DepthStep& s, int64_t t) { return s.time < t; });
    const auto first = static_cast<size_t>(firstIt - m_steps.begin());
    const auto last = static_cast<size_t>(lastIt - m_steps.begin());
    from = first;
    if (first >= last)
        return 0;
    // Before the first step nothing was queued.
    if (first == 0 && m_steps[0].time >= t1)
        return 0;
    return maxOfSteps(first, last);
}

int32_t QueueDepthProfile::maxIn(int64_t t0, int64_t t1) const {
    size_t from = 0;
    return maxFrom(from, t0, t1);
}

void QueueDepthProfile::maxPerColumn(double t0, double width, int columns,
                                     std::vector<int32_t>& out) const {
    out.assign(static_cast<size_t>(std::max(0, columns)), 0);
    size_t from = 0;
    for (int c = 0; c < columns; ++c) {
        const auto a = static_cast<int64_t>(std::floor(t0 + c * width));
        const auto b = static_cast<int64_t>(std::ceil(t0 + (c + 1) * width));
        out[static_cast<size_t>(c)] = maxFrom(from, a, std::max(b, a + 1));
    }
}

} // namespace warpline::views
