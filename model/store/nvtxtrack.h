#pragma once

// NvtxTrack: NVTX ranges or marks of one CPU thread on one row.
//  - PushPop ranges: one track per nesting depth (depth 0 = outermost push), computed by nesting.
//  - StartEnd ranges: they may overlap freely, so they are packed into lanes (first lane whose
//    last range ended before this one starts); attributed to the thread that started them.
//  - Marks: one track of zero-length spans per thread.
// SpanTrack's invariants hold (sorted, no overlap). A range that was never closed in the file
// ends at TraceStore::endTime() and has isUnclosed() set (the store carries a warning).

#include "spantrack.h"

namespace warpline::model {

class NvtxTrack : public SpanTrack {
public:
    uint32_t threadIndex() const { return m_thread; } // into TraceStore::threads()
    NvtxStyle style() const { return m_style; }
    uint32_t depth() const { return m_depth; } // nesting depth (PushPop) or lane (StartEnd)

    // The range's text as the program passed it ("forward"); the domain is separate (domain()).
    NameId name(size_t i) const { return m_name[i]; }
    // ARGB colour; 0 when the program set none.
    uint32_t color(size_t i) const { return m_color[i]; }
    // Name of the NVTX domain (from its eventType 75 row); kNoName for the default domain.
    NameId domain(size_t i) const { return m_domain[i]; }
    bool isUnclosed(size_t i) const { return (m_flags[i] & kUnclosed) != 0; }

    size_t memoryBytes() const;

private:
    friend class TraceLoader;
    friend class TraceSession;
    friend class SpanTrack;
    template <typename Self, typename F> static void forEachColumn(Self& self, F&& f) {
        SpanTrack::forEachColumn(self, f);
        f(self.m_name);
        f(self.m_color);
        f(self.m_domain);
        f(self.m_flags);
    }

    static constexpr uint8_t kUnclosed = 1;
    uint32_t m_thread = 0;
    NvtxStyle m_style = NvtxStyle::PushPop;
    uint32_t m_depth = 0;
    std::vector<NameId> m_name;
    std::vector<uint32_t> m_color;
    std::vector<NameId> m_domain;
    std::vector<uint8_t> m_flags;
};

} // namespace warpline::model
