#pragma once

// ReportTable: one report as the GUI shows it in a docked table: the model's Table (the same rows
// warpline-stats prints) plus, per row, what the row points at on the timeline, so selecting or
// double-clicking a row can highlight its spans or zoom to them.

#include "eventid.h"
#include "table.h"

#include <QString>
#include <cstdint>
#include <vector>

namespace warpline::views {

struct RowTarget {
    model::NameId kernel = model::kNoName;  // highlight every instance of this GPU op name
    model::NameId apiName = model::kNoName; // highlight every call of this API name
    int64_t t0 = 0;                         // zoom to [t0, t1) (ns) when t1 > t0
    int64_t t1 = 0;
    EventId event;                // select this event
    std::vector<EventId> related; // highlight these (an insight's events), sorted by start

    bool hasRange() const { return t1 > t0; }
};

struct ReportTable {
    QString id;    // "kernels": the ReportRegistry name when it has one
    QString title; // "Kernels": the dock's title
    model::Table table;
    std::vector<RowTarget> targets; // empty, or one per table row
};

} // namespace warpline::views
