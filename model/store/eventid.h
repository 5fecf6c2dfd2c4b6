#pragma once

// EventId: one event of the trace: which track family it is in and where (model::EventRef). The
// reports' row targets, the window's selection, the find bar and the details panel pass these
// around; eventStart/eventEnd read its times back from the store.

#include "tracetypes.h"

#include <cstdint>

namespace warpline::model {

class TraceStore;

enum class EventFamily : uint8_t { None, Api, Nvtx, Gpu };

struct EventId {
    EventFamily family = EventFamily::None;
    EventRef ref;

    bool valid() const { return family != EventFamily::None && ref.valid(); }
    static EventId api(EventRef r) { return {EventFamily::Api, r}; }
    static EventId nvtx(EventRef r) { return {EventFamily::Nvtx, r}; }
    static EventId gpu(EventRef r) { return {EventFamily::Gpu, r}; }
    friend bool operator==(const EventId&, const EventId&) = default;
};

// The event's start and end (ns); 0 for an invalid one. `event` must address the store.
int64_t eventStart(const TraceStore& store, const EventId& event);
int64_t eventEnd(const TraceStore& store, const EventId& event);

} // namespace warpline::model
