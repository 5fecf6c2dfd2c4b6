#pragma once

// EventId: one event on the timeline: which track family it is in and where (model::EventRef).
// The selection, the find bar and the details panel pass these around.

#include "tracetypes.h"

#include <cstdint>

namespace warpline::views {

enum class EventFamily : uint8_t { None, Api, Nvtx, Gpu };

struct EventId {
    EventFamily family = EventFamily::None;
    model::EventRef ref;

    bool valid() const { return family != EventFamily::None && ref.valid(); }
    static EventId api(model::EventRef r) { return {EventFamily::Api, r}; }
    static EventId nvtx(model::EventRef r) { return {EventFamily::Nvtx, r}; }
    static EventId gpu(model::EventRef r) { return {EventFamily::Gpu, r}; }
    friend bool operator==(const EventId&, const EventId&) = default;
};

} // namespace warpline::views
