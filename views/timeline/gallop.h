#pragma once

// Galloping (exponential) search: std::lower_bound/upper_bound for a target that is usually near
// the start of the range, as when a walk moves left to right over a sorted column. Probes 1, 2, 4,
// ... elements ahead, then binary-searches the last step: O(log d) for a target d elements away,
// touching only nearby memory (a plain binary search over millions of elements misses the cache
// on almost every probe).

#include <algorithm>
#include <iterator>

namespace warpline::views {

// The first element in [first, last) for which less(element, value) is false.
template <typename It, typename T, typename Less>
It gallopLowerBound(It first, It last, const T& value, Less less) {
    auto size = std::distance(first, last);
    decltype(size) step = 1;
    decltype(size) offset = 0; // every element before first + offset is less than value
    while (step <= size - offset && less(*(first + offset + step - 1), value)) {
        offset += step;
        step *= 2;
    }
    const auto stop = std::min(size, offset + step);
    return std::lower_bound(first + offset, first + stop, value, less);
}

// The first element in [first, last) for which less(value, element) is true.
template <typename It, typename T, typename Less>
It gallopUpperBound(It first, It last, const T& value, Less less) {
    auto size = std::distance(first, last);
    decltype(size) step = 1;
    decltype(size) offset = 0;
    while (step <= size - offset && !less(value, *(first + offset + step - 1))) {
        offset += step;
        step *= 2;
    }
    const auto stop = std::min(size, offset + step);
    return std::upper_bound(first + offset, first + stop, value, less);
}

} // namespace warpline::views
