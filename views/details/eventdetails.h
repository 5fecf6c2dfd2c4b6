#pragma once

// EventDetails: every field of one timeline event, as label/value text for the details panel.
// Pure function of the loaded trace. Values are plain text (names come from the trace); a field
// that names another event (a kernel's launching call, a call's kernel) carries it as `link`.

#include "eventid.h"
#include "timeformat.h"
#include "trace/loadedtrace.h"

#include <QString>
#include <vector>

namespace warpline::views {

struct DetailField {
    QString name;
    QString value;
    model::EventId link; // valid when the value names another event the panel can jump to
    QString help;        // what the field means, for a tooltip (empty when the name says it all)
};

class EventDetails {
public:
    // "Kernel", "CUDA API call", "NVTX range", "Memory copy", "Memory set".
    static QString kindText(const model::TraceStore& store, const model::EventId& event);
    static std::vector<DetailField> describe(const LoadedTrace& trace, const model::EventId& event,
                                             TimeUnit unit = TimeUnit::Auto);
    // For a rank's arrival kernel at a step's collective in a session: "Waited 2.00 ms for Rank 1
    // (the last to reach step 3's collective)", the "Collective wait" field of describe(). Empty
    // for any other op and outside a session.
    static QString collectiveWait(const LoadedTrace& trace, const model::EventRef& op,
                                  TimeUnit unit = TimeUnit::Auto);
    // What the panel shows with nothing selected: the file, what was recorded and how (the
    // trace's WARPLINE_META), its size and the loader's warnings.
    static std::vector<DetailField> traceSummary(const LoadedTrace& trace,
                                                 TimeUnit unit = TimeUnit::Auto);
};

} // namespace warpline::views
