#pragma once

// SpanTrack: the start/end columns every timeline track shares, and the visible-range query.
//
// Invariants (established by TraceLoader, never broken afterwards):
//  - spans are sorted by start (ascending; ties keep file order);
//  - spans on one track do not overlap: end(i) <= start(i + 1). A family of events that can overlap
//    (nested API calls, nested NVTX ranges, start/end ranges, GPU ops on a stream that overlap in
//    the file) is spread over several tracks ("depth" or "lane"), so
//  - ends are sorted too, and a visible range is exactly two binary searches, no per-track
//    max-end prefix is needed.
//  - start(i) <= end(i); a zero-length span (marks, instant events) is treated as [start, start+1)
//    by visibleRange so that it is found at its time.
// Times are ns relative to the session start. Read-only after loading; const methods are safe to
// call from any number of threads at once.

#include "tracetypes.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

namespace warpline::model {

class SpanTrack {
public:
    size_t size() const { return m_start.size(); }
    bool empty() const { return m_start.empty(); }

    int64_t start(size_t i) const { return m_start[i]; }
    int64_t end(size_t i) const { return m_end[i]; }
    int64_t duration(size_t i) const { return m_end[i] - m_start[i]; }

    std::span<const int64_t> starts() const { return m_start; }
    std::span<const int64_t> ends() const { return m_end; }

    // Start of the first span and end of the last one; 0 for an empty track.
    int64_t firstStart() const { return m_start.empty() ? 0 : m_start.front(); }
    int64_t lastEnd() const { return m_end.empty() ? 0 : m_end.back(); }

    // Indices [first, last) of exactly the spans that intersect the half-open window [t0, t1):
    // start < t1 && end > t0 (zero-length spans: t0 <= start < t1). O(log n).
    IndexRange visibleRange(int64_t t0, int64_t t1) const;

    // Indices [first, last) of the spans whose start lies in [t0, t1) (wherever they end). O(log
    // n).
    IndexRange startingIn(int64_t t0, int64_t t1) const;

    // The same two queries for windows visited in time order: searched forward from `previous`
    // (the result for an earlier window; {} for the first) in doubling steps, which touches a
    // few cache lines where a binary search touches log2(n) scattered ones. Any `previous` gives
    // the same result as the queries above; one for a later window only costs a search back.
    IndexRange visibleRange(int64_t t0, int64_t t1, IndexRange previous) const;
    IndexRange startingIn(int64_t t0, int64_t t1, IndexRange previous) const;

    // Index of the span containing t (start <= t < end), or -1. O(log n).
    std::ptrdiff_t indexAt(int64_t t) const;

    // Bytes of this track's columns in use (size, not capacity: the loader reserves a table's
    // row count up front, and the part never written is address space, not memory), for memory
    // accounting.
    size_t memoryBytes() const;

protected:
    friend class TraceLoader;
    friend class TraceSession;
    // Calls f on every per-event column (each holds one value per span), for reserving and for
    // memory accounting; derived tracks add theirs.
    template <typename Self, typename F> static void forEachColumn(Self& self, F&& f) {
        f(self.m_start);
        f(self.m_end);
    }
    // Bytes in use of the columns forEachColumn visits.
    template <typename Self> static size_t columnBytes(const Self& self) {
        size_t bytes = 0;
        Self::forEachColumn(self, [&](const auto& column) {
            bytes += column.size() * sizeof(typename std::decay_t<decltype(column)>::value_type);
        });
        return bytes;
    }

    std::vector<int64_t> m_start;
    std::vector<int64_t> m_end;
};

} // namespace warpline::model
