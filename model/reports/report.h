#pragma once

// Report: one report's table as warpline-stats prints it, and per row what the row points at in the
// trace, so the window can highlight a row's events or zoom to them. Reports are defined once, in
// reportregistry.cpp; the CLI prints `table`, the window shows `table` and follows `targets`.

#include "eventid.h"
#include "table.h"
#include "tracetypes.h"

#include <cstdint>
#include <string>
#include <vector>

namespace warpline::model {

struct RowTarget {
    NameId kernel = kNoName;  // every instance of this GPU op name
    NameId apiName = kNoName; // every call of this API name
    int64_t t0 = 0;           // the range [t0, t1) (ns) to zoom to, when t1 > t0
    int64_t t1 = 0;
    EventId event;                // the event to select
    std::vector<EventId> related; // the events to highlight (an insight's), sorted by start
    // What the window shows in the row's Name cell, when not the name itself: a kernel's label
    // (gpuOpShortName's rule: "elementwise_kernel[Mul, BFloat16]" for a 400-character name),
    // with the name in full on hover. The table (and every export) keeps the name.
    std::string label;

    bool hasRange() const { return t1 > t0; }
};

struct Report {
    Table table;
    std::vector<RowTarget> targets; // empty, or one per table row
};

} // namespace warpline::model
