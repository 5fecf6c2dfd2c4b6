#pragma once

// ApiCallClass: which CUDA API calls the timeline draws in the stall colour. A call "synchronizes"
// when the CPU thread blocks in it until GPU work finishes: device/context/stream/event
// synchronize, and the blocking (non-Async) memcpy family. Names are given without the _vNNNN
// suffix (ApiTrack::name()).

#include <string_view>

namespace warpline::views {

class ApiCallClass {
public:
    static bool isSynchronizing(std::string_view name);
};

} // namespace warpline::views
