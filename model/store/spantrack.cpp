#include "spantrack.h"

#include "apitrack.h"
#include "gputrack.h"
#include "nvtxtrack.h"

#include <algorithm>

namespace warpline::model {

namespace {

template <typename T> size_t bytesOf(const std::vector<T>& v) {
    return v.size() * sizeof(T);
}

} // namespace

namespace {

// The first index in [0, n) at which `below` is false (`below` holds on a prefix), searched
// forward from `hint` in doubling steps when the answer lies at or after it, else in [0, hint).
template <typename Below> size_t firstNotBelow(size_t n, size_t hint, Below below) {
    size_t lo = std::min(hint, n);
    size_t hi = n;
    if (lo > 0 && !below(lo - 1)) {
        hi = lo;
        lo = 0;
    } else {
        for (size_t step = 1;; step *= 2) {
            const size_t probe = lo + step - 1;
            if (probe >= n)
                break;
            if (!below(probe)) {
                hi = probe;
                break;
            }
            lo = probe + 1;
        }
    }
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (below(mid))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

} // namespace

IndexRange SpanTrack::visibleRange(int64_t t0, int64_t t1, IndexRange previous) const {
    if (t1 <= t0 || m_start.empty())
        return {};
    const size_t n = m_start.size();
    const size_t first = firstNotBelow(
        n, previous.first, [&](size_t i) { return std::max(m_end[i], m_start[i] + 1) <= t0; });
    const size_t last =
        firstNotBelow(n, std::max(first, previous.last), [&](size_t i) { return m_start[i] < t1; });
    return {first, std::max(first, last)};
}

IndexRange SpanTrack::startingIn(int64_t t0, int64_t t1, IndexRange previous) const {
    const size_t n = m_start.size();
    const size_t first =
        firstNotBelow(n, previous.first, [&](size_t i) { return m_start[i] < t0; });
    const size_t last =
        firstNotBelow(n, std::max(first, previous.last), [&](size_t i) { return m_start[i] < t1; });
    return {first, std::max(first, last)};
}

IndexRange SpanTrack::visibleRange(int64_t t0, int64_t t1) const {
    if (t1 <= t0 || m_start.empty())
        return {};
    // Ends are sorted because spans do not overlap; a zero-length span counts as [s, s + 1), which
    // keeps the predicate monotone (see the header).
    size_t lo = 0;
    size_t hi = m_start.size();
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        const int64_t effectiveEnd = std::max(m_end[mid], m_start[mid] + 1);
        if (effectiveEnd <= t0)
            lo = mid + 1;
        else
            hi = mid;
    }
    const size_t first = lo;
    const size_t last =
        static_cast<size_t>(std::lower_bound(m_start.begin(), m_start.end(), t1) - m_start.begin());
    return {first, std::max(first, last)};
}

IndexRange SpanTrack::startingIn(int64_t t0, int64_t t1) const {
    const auto first = std::lower_bound(m_start.begin(), m_start.end(), t0);
    const auto last = std::lower_bound(first, m_start.end(), t1);
    return {static_cast<size_t>(first - m_start.begin()),
            static_cast<size_t>(last - m_start.begin())};
}

std::ptrdiff_t SpanTrack::indexAt(int64_t t) const {
    const auto it = std::upper_bound(m_start.begin(), m_start.end(), t);
    if (it == m_start.begin())
        return -1;
    const auto i = static_cast<size_t>(it - m_start.begin()) - 1;
    const bool inside = m_end[i] > t || (m_end[i] == m_start[i] && m_start[i] == t);
    return inside ? static_cast<std::ptrdiff_t>(i) : -1;
}

size_t SpanTrack::memoryBytes() const {
    return columnBytes(*this);
}

size_t ApiTrack::memoryBytes() const {
    return columnBytes(*this) + bytesOf(m_opBegin) + bytesOf(m_ops);
}

size_t NvtxTrack::memoryBytes() const {
    return columnBytes(*this);
}

size_t GpuTrack::memoryBytes() const {
    return columnBytes(*this);
}

} // namespace warpline::model
