#pragma once

// SpanFolder: level of detail for one timeline track. Spans at least minWidth px wide are drawn
// as themselves; runs of narrower spans are folded into one block (count, representative span),
// as Tracy and Qt Creator's timeline do, so a million spans inside one pixel cost as much as one.
//
// Cost: O(items * (log n + 32)) where items <= about width / mergeGap + wide spans, independent of
// how many spans are in view: the walk jumps with lower_bound over the (sorted) starts to the first
// span beyond the block it is building, never visiting the spans in between.
//
// The track must satisfy SpanTrack's invariants (sorted by start, no overlap, so ends are sorted).

#include "timeline/timelineviewport.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace warpline::model {
class SpanTrack;
struct IndexRange;
} // namespace warpline::model

namespace warpline::views {

struct FoldedSpan {
    double x0 = 0; // px in the viewport's span area; x1 - x0 >= Options::minDrawnWidth
    double x1 = 0;
    size_t first = 0; // track indices [first, last) this item covers
    size_t last = 0;
    // The span running at the block's middle time (or the last one before it): its name colours
    // the block, so a dense region shows the mix of what ran, in proportion to time, the way a
    // sampling profiler would. For a single span, first.
    size_t representative = 0;
    // The share of the block's time, from its first span's start to its last span's end, that
    // its spans cover (0..1; 1 for a single span): zoomed out, a 20%-busy stretch draws 20%
    // busy. Exact for blocks of up to kCoverageSamples spans, else from that many spans spread
    // evenly over the block (their mean duration times the count), so the cost stays per block.
    double coverage = 1.0;

    static constexpr size_t kCoverageSamples = 32;

    size_t count() const { return last - first; }
    bool folded() const { return last - first > 1; }
};

class SpanFolder {
public:
    struct Options {
        double minWidth = 3.0;      // spans narrower than this (px) fold
        double mergeGap = 1.0;      // narrow spans closer than this (px) join the same block
        double maxFoldWidth = 6.0;  // a block stops growing at this width (px), so a dense run
                                    // shows as a row of small blocks, each with its own colour
        double minDrawnWidth = 1.0; // every item gets at least this many px (a 1 ns kernel shows)
    };

    // Appends the items for the spans of `track` visible in `viewport` to `out` (left to right).
    // Returns the number of binary searches made, for tests of the cost bound.
    static size_t fold(const model::SpanTrack& track, const TimelineViewport& viewport,
                       std::vector<FoldedSpan>& out, const Options& options);
    static size_t fold(const model::SpanTrack& track, const TimelineViewport& viewport,
                       std::vector<FoldedSpan>& out) {
        return fold(track, viewport, out, Options{});
    }

    // The same over raw columns: starts/ends sorted, indices [first, last) already visible.
    static size_t fold(std::span<const int64_t> starts, std::span<const int64_t> ends, size_t first,
                       size_t last, const TimelineViewport& viewport, std::vector<FoldedSpan>& out,
                       const Options& options);
};

} // namespace warpline::views
