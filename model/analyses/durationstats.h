#pragma once

// DurationStats: the statistics columns of nsys stats reports over a set of durations (ns).
// Formulas (docs/analyses.md): total = sum (saturating at the int64 limits); average = total /
// count; median = middle value, or the mean of the two middle values for an even count; stddev =
// sample standard deviation (denominator count - 1), 0 for a single value. All zero for an empty
// set.

#include <cstdint>
#include <span>

namespace warpline::model {

struct DurationStats {
    int64_t total = 0;
    uint64_t count = 0;
    double average = 0;
    double median = 0;
    int64_t minimum = 0;
    int64_t maximum = 0;
    double stddev = 0;

    // O(n): reorders `values` (nth_element) to find the median without a full sort.
    static DurationStats compute(std::span<int64_t> values);
};

} // namespace warpline::model
