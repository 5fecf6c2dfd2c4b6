#include "durationstats.h"

#include "saturating.h"

#include <algorithm>
#include <cmath>

namespace warpline::model {

DurationStats DurationStats::compute(std::span<int64_t> values) {
    DurationStats s;
    if (values.empty())
        return s;
    s.count = values.size();
    s.minimum = values[0];
    s.maximum = values[0];
    for (const int64_t v : values) {
        accumulate(s.total, v);
        s.minimum = std::min(s.minimum, v);
        s.maximum = std::max(s.maximum, v);
    }
    s.average = static_cast<double>(s.total) / static_cast<double>(s.count);
    if (s.count > 1) {
        // Two passes (mean first) keep the variance exact enough for ns durations of any size.
        double squares = 0;
        for (const int64_t v : values) {
            const double d = static_cast<double>(v) - s.average;
            squares += d * d;
        }
        s.stddev = std::sqrt(squares / static_cast<double>(s.count - 1));
    }
    const size_t mid = values.size() / 2;
    std::nth_element(values.begin(), values.begin() + mid, values.end());
    const int64_t upper = values[mid];
    if (values.size() % 2 == 1) {
        s.median = static_cast<double>(upper);
    } else {
        const int64_t lower = *std::max_element(values.begin(), values.begin() + mid);
        s.median = (static_cast<double>(lower) + static_cast<double>(upper)) / 2.0;
    }
    return s;
}

} // namespace warpline::model
