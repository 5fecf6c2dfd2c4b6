#include "timeline/queuedepthprofile.h"

#include "timeline/gallop.h"

#include <algorithm>
#include <cmath>

namespace warpline::views {

QueueDepthProfile::QueueDepthProfile(std::span<const model::DepthStep> steps) : m_steps(steps) {
    if (steps.empty())
        return;
    std::vector<int32_t> blocks((steps.size() + kBlock - 1) / kBlock, 0);
    m_blockTimes.resize(blocks.size());
    for (size_t i = 0; i < steps.size(); ++i)
        blocks[i / kBlock] = std::max(blocks[i / kBlock], steps[i].depth);
    for (size_t b = 0; b < blocks.size(); ++b)
        m_blockTimes[b] = steps[b * kBlock].time;
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

size_t QueueDepthProfile::searchTime(size_t from, int64_t t, bool upper) const {
    const size_t n = m_steps.size();
    if (from >= n)
        return n;
    // Blocks after from's whose first step is still before the answer are skipped whole: the
    // answer is in the last block that starts before it (or is the first step of the next one).
    const auto before = [upper](int64_t blockTime, int64_t value) {
        return upper ? blockTime <= value : blockTime < value;
    };
    const auto firstBlock = m_blockTimes.begin() + static_cast<std::ptrdiff_t>(from / kBlock + 1);
    const auto it = gallopLowerBound(firstBlock, m_blockTimes.end(), t, before);
    const size_t block = static_cast<size_t>(it - m_blockTimes.begin()); // first block not before
    const size_t lo = std::max(from, (block - 1) * kBlock);
    const size_t hi = std::min(n, block * kBlock);
    const auto b = m_steps.begin() + static_cast<std::ptrdiff_t>(lo);
    const auto e = m_steps.begin() + static_cast<std::ptrdiff_t>(hi);
    const auto found =
        upper ? std::upper_bound(b, e, t,
                                 [](int64_t v, const model::DepthStep& s) { return v < s.time; })
              : std::lower_bound(b, e, t,
                                 [](const model::DepthStep& s, int64_t v) { return s.time < v; });
    return static_cast<size_t>(found - m_steps.begin());
}

int32_t QueueDepthProfile::maxFrom(size_t& from, int64_t t0, int64_t t1) const {
    if (m_steps.empty() || t1 <= t0)
        return 0;
    // The step holding at t0 is the last one with time <= t0.
    size_t first = searchTime(from, t0, true);
    if (first != 0)
        --first;
    const size_t last = searchTime(first, t1, false);
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
