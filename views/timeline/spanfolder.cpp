#include "timeline/spanfolder.h"

#include "spantrack.h"
#include "timeline/gallop.h"

#include <algorithm>
#include <cmath>

namespace warpline::views {

size_t SpanFolder::fold(const model::SpanTrack& track, const TimelineViewport& viewport,
                        std::vector<FoldedSpan>& out, const Options& options) {
    const auto t0 = static_cast<int64_t>(std::floor(viewport.visibleStart()));
    const auto t1 = static_cast<int64_t>(std::ceil(viewport.visibleEnd())) + 1;
    const model::IndexRange range = track.visibleRange(t0, t1);
    return 2 + fold(track.starts(), track.ends(), range.first, range.last, viewport, out, options);
}

size_t SpanFolder::fold(std::span<const int64_t> starts, std::span<const int64_t> ends,
                        size_t first, size_t last, const TimelineViewport& viewport,
                        std::vector<FoldedSpan>& out, const Options& options) {
    size_t searches = 0;
    const auto x = [&](int64_t t) { return viewport.timeToX(static_cast<double>(t)); };
    size_t i = first;
    while (i < last) {
        const double x0 = x(starts[i]);
        const double x1 = x(ends[i]);
        if (x1 - x0 >= options.minWidth) {
            out.push_back({x0, x1, i, i + 1, i});
            ++i;
            continue;
        }
        const size_t blockFirst = i;
        double xEnd = x1;
        while (xEnd - x0 < options.maxFoldWidth) {
            // Everything starting before limitX joins the block: spans within mergeGap of its end,
            // and all spans until the block is minWidth wide.
            const double limitX = std::max(xEnd + options.mergeGap, x0 + options.minWidth);
            const double limitT = viewport.xToTime(limitX);
            const auto begin = starts.begin() + static_cast<std::ptrdiff_t>(i + 1);
            const auto end = starts.begin() + static_cast<std::ptrdiff_t>(last);
            const auto it = gallopLowerBound(
                begin, end, limitT, [](int64_t s, double t) { return static_cast<double>(s) < t; });
            ++searches;
            const auto j = static_cast<size_t>(it - starts.begin());
            if (j == i + 1)
                break;
            const size_t k = j - 1;
            if (x(ends[k]) - x(starts[k]) >= options.minWidth) {
                // A wide span starts just after the block: it is drawn on its own.
                if (k - 1 > i) {
                    i = k - 1;
                    xEnd = std::max(xEnd, x(ends[i]));
                }
                break;
            }
            i = k;
            xEnd = std::max(xEnd, x(ends[k]));
        }
        // The block's colour: the span running at its middle time (a time-proportional sample).
        size_t representative = blockFirst;
        if (i > blockFirst) {
            const double middle = viewport.xToTime(0.5 * (x0 + xEnd));
            const auto begin = starts.begin() + static_cast<std::ptrdiff_t>(blockFirst);
            const auto end = starts.begin() + static_cast<std::ptrdiff_t>(i + 1);
            const auto it = std::upper_bound(
                begin, end, middle, [](double t, int64_t s) { return t < static_cast<double>(s); });
            ++searches;
            representative =
                it == begin ? blockFirst : static_cast<size_t>(it - starts.begin()) - 1;
        }
        // How much of the block's time its spans cover (FoldedSpan::coverage).
        const size_t n = i + 1 - blockFirst;
        double covered = 0;
        if (n <= FoldedSpan::kCoverageSamples) {
            for (size_t k = blockFirst; k <= i; ++k)
                covered += static_cast<double>(ends[k] - starts[k]);
        } else {
            constexpr size_t kSamples = FoldedSpan::kCoverageSamples;
            for (size_t s = 0; s < kSamples; ++s) {
                const size_t k = blockFirst + s * (n - 1) / (kSamples - 1);
                covered += static_cast<double>(ends[k] - starts[k]);
            }
            covered *= static_cast<double>(n) / static_cast<double>(kSamples);
        }
        const auto extent = static_cast<double>(ends[i] - starts[blockFirst]);
        const double coverage = extent > 0 ? std::clamp(covered / extent, 0.0, 1.0) : 1.0;
        out.push_back({x0, std::max(xEnd, x0 + options.minDrawnWidth), blockFirst, i + 1,
                       representative, coverage});
        ++i;
    }
    return searches;
}

} // namespace warpline::views
