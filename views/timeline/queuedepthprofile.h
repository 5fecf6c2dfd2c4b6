#pragma once

// QueueDepthProfile: answers "what was the largest launch queue depth in [t0, t1)?" over one
// stream's depth step function (model::RunAheadAnalysis::depthSteps) in O(log n + kBlock), so the
// run-ahead row draws one column per pixel at any zoom without walking millions of steps.
// Keeps a view of the steps (they must outlive the profile) and a max pyramid over blocks of
// kBlock steps and the time each block starts at (about 16 / kBlock bytes per step).

#include "runahead.h"

#include <cstdint>
#include <span>
#include <vector>

namespace warpline::views {

class QueueDepthProfile {
public:
    static constexpr size_t kBlock = 32;

    QueueDepthProfile() = default;
    explicit QueueDepthProfile(std::span<const model::DepthStep> steps);

    // Largest depth holding at any time in [t0, t1) (ns); 0 outside the steps.
    int32_t maxIn(int64_t t0, int64_t t1) const;
    // The same for `columns` adjacent windows [t0 + c * width, t0 + (c + 1) * width) (one per
    // pixel), walking the steps left to right: O(columns * log(steps per column)).
    void maxPerColumn(double t0, double width, int columns, std::vector<int32_t>& out) const;
    int32_t maxDepth() const { return m_maxDepth; }
    bool empty() const { return m_steps.empty(); }

private:
    int32_t maxOfSteps(size_t first, size_t last) const; // over step indices [first, last)
    // maxIn, searching from step index `from` on (a lower bound of the answer's first step).
    int32_t maxFrom(size_t& from, int64_t t0, int64_t t1) const;
    // The first step at or after `from` whose time is > t (upper) or >= t (!upper): galloping
    // over m_blockTimes, then within one block, so a search touches a few cache lines instead of
    // one per probe over the steps (100M events: full-trace repaints, issue 16).
    size_t searchTime(size_t from, int64_t t, bool upper) const;

    std::span<const model::DepthStep> m_steps;
    // m_levels[0][b] = max over block b; m_levels[k][j] = max(m_levels[k-1][2j], [2j+1]).
    std::vector<std::vector<int32_t>> m_levels;
    std::vector<int64_t> m_blockTimes; // time of each block's first step
    int32_t m_maxDepth = 0;
};

} // namespace warpline::views
