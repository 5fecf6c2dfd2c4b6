#include "timeline/timeruler.h"

#include <algorithm>
#include <cmath>

namespace warpline::views {

double TimeRuler::labelStep(double nsPerPixel, double minSpacing) {
    const double wanted = std::max(1.0, nsPerPixel * minSpacing);
    double decade = std::pow(10.0, std::floor(std::log10(wanted)));
    for (;;) {
        for (double m : {1.0, 2.0, 5.0}) {
            if (m * decade >= wanted * (1 - 1e-12))
                return m * decade;
        }
        decade *= 10;
    }
}

std::vector<RulerTick> TimeRuler::ticks(const TimelineViewport& viewport, double minLabelSpacing,
                                        TimeUnit unit) {
    std::vector<RulerTick> out;
    const double step = labelStep(viewport.nsPerPixel(), minLabelSpacing);
    // 2-steps split in two, 1- and 5-steps in five.
    const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-12));
    const int minorPerMajor = std::abs(mantissa - 2) < 1e-6 ? 4 : 5;
    const double minor = step / minorPerMajor;
    if (unit == TimeUnit::Auto)
        unit = TimeFormat::autoUnit(
            std::max({std::abs(viewport.visibleEnd()), std::abs(viewport.visibleStart()), step}));
    const auto firstMinor = static_cast<int64_t>(std::floor(viewport.visibleStart() / minor));
    const auto lastMinor = static_cast<int64_t>(std::ceil(viewport.visibleEnd() / minor));
    for (int64_t n = firstMinor; n <= lastMinor; ++n) {
        const double t = static_cast<double>(n) * minor;
        const double x = viewport.timeToX(t);
        if (x < -0.5 || x > viewport.width() + 0.5)
            continue;
        RulerTick tick;
        tick.time = t;
        tick.x = x;
        tick.major = n % minorPerMajor == 0;
        if (tick.major)
            tick.label = TimeFormat::timestamp(t, step, unit);
        out.push_back(std::move(tick));
    }
    return out;
}

} // namespace warpline::views
