#include "eventid.h"

#include "tracestore.h"

namespace warpline::model {

int64_t eventStart(const TraceStore& store, const EventId& e) {
    switch (e.family) {
    case EventFamily::Api:
        return store.apiTracks()[e.ref.track].start(e.ref.index);
    case EventFamily::Nvtx:
        return store.nvtxTracks()[e.ref.track].start(e.ref.index);
    case EventFamily::Gpu:
        return store.gpuTracks()[e.ref.track].start(e.ref.index);
    case EventFamily::None:
        break;
    }
    return 0;
}

int64_t eventEnd(const TraceStore& store, const EventId& e) {
    switch (e.family) {
    case EventFamily::Api:
        return store.apiTracks()[e.ref.track].end(e.ref.index);
    case EventFamily::Nvtx:
        return store.nvtxTracks()[e.ref.track].end(e.ref.index);
    case EventFamily::Gpu:
        return store.gpuTracks()[e.ref.track].end(e.ref.index);
    case EventFamily::None:
        break;
    }
    return 0;
}

} // namespace warpline::model
