#pragma once

// Saturating int64 arithmetic for totals of times (ns). TraceLoader keeps every time within
// +-2^62 ns, so the difference of any two times fits; a total of many durations or gaps can only
// leave the int64 range on a damaged file, and then stops at the limit instead of overflowing
// (undefined behaviour in C++).

#include <cstdint>
#include <limits>

namespace warpline::model {

inline int64_t addSaturated(int64_t a, int64_t b) {
    int64_t sum = 0;
    if (__builtin_add_overflow(a, b, &sum))
        return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
    return sum;
}

// total += value, saturating.
inline void accumulate(int64_t& total, int64_t value) {
    total = addSaturated(total, value);
}

} // namespace warpline::model
