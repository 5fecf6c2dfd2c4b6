#pragma once

// EventSearch: finds events on the timeline by name (the find bar, the kernel-summary table).
// Pure functions of the store; results are sorted by start time (ties by track), the order the
// find bar steps through them. O(events in the searched family).

#include "eventid.h"
#include "tracestore.h"

#include <QString>
#include <vector>

namespace warpline::views {

class EventSearch {
public:
    // Every GPU op (kernel, memcpy, memset) called `name`.
    static std::vector<model::EventId> gpuOpsNamed(const model::TraceStore& store,
                                                   model::NameId name);
    // Every API call called `name` (any depth).
    static std::vector<model::EventId> apiCallsNamed(const model::TraceStore& store,
                                                     model::NameId name);
    // GPU ops whose name contains `text`, case-insensitively; empty text finds nothing.
    static std::vector<model::EventId> gpuOpsMatching(const model::TraceStore& store,
                                                      const QString& text);
    // Every event that matches `text` (case-insensitively; empty text finds nothing): GPU ops,
    // API calls and NVTX ranges whose name contains it, and API calls whose Python stack has a
    // frame whose function, file or "file.py:line" (sourceLocation) contains it. The find bar's
    // and `warpline --find`'s search. O(events + distinct stacks x depth).
    static std::vector<model::EventId> eventsMatching(const model::TraceStore& store,
                                                      const QString& text);
    static model::NameId nameOf(const model::TraceStore& store, const model::EventId& event);

    // The name that holds most of the time among events [first, last) of one track (a folded
    // block), and its share of their summed duration (0..1). Exact for up to `maxVisits` events,
    // sampled evenly beyond that.
    struct Dominant {
        model::NameId name = model::kNoName;
        double share = 0;
    };
    static Dominant dominantName(const model::TraceStore& store, model::EventFamily family,
                                 uint32_t track, size_t first, size_t last,
                                 size_t maxVisits = 200'000);

private:
    static std::vector<model::EventId> gpuOpsWithNames(const model::TraceStore& store,
                                                       const std::vector<bool>& nameMatches);
};

} // namespace warpline::views
