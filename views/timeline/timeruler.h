#pragma once

// TimeRuler: the ticks and labels of the timeline's time axis. Pure: a function of the viewport.
// Label steps follow the 1-2-5 series (1 ns, 2 ns, 5 ns, 10 ns, ... 1 s, 2 s, ...) so that labels
// are at least minLabelSpacing px apart; each label step has minor ticks in between. Labels share
// one unit (the user's, or the one that suits the visible end), with just enough decimals to tell
// neighbouring ticks apart.

#include "timeformat.h"
#include "timeline/timelineviewport.h"

#include <QString>
#include <vector>

namespace warpline::views {

struct RulerTick {
    double time = 0; // ns
    double x = 0;    // px in the span area
    bool major = false;
    QString label; // set on major ticks
};

class TimeRuler {
public:
    // Smallest 1-2-5 step (ns, >= 1) whose ticks are at least minSpacing px apart.
    static double labelStep(double nsPerPixel, double minSpacing);
    static std::vector<RulerTick> ticks(const TimelineViewport& viewport, double minLabelSpacing,
                                        TimeUnit unit = TimeUnit::Auto);
};

} // namespace warpline::views
