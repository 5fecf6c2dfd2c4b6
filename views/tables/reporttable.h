#pragma once

// ReportTable: one report as the window shows it in a docked table: the model's report
// (reportregistry.h: the same rows warpline-stats prints, and what each row points at on the
// timeline) under its id and title.

#include "report.h"

#include <QString>
#include <vector>

namespace warpline::views {

struct ReportTable {
    QString id;    // "kernels": the ReportRegistry name
    QString title; // "Kernels": the dock's title
    model::Table table;
    std::vector<model::RowTarget> targets; // empty, or one per table row
};

} // namespace warpline::views
