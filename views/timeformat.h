#pragma once

// TimeFormat: how the viewer writes times and durations (ns in the trace) for people: the ruler,
// tooltips, the details panel. A pure class; the unit is a user setting (Auto picks per value).

#include <QString>
#include <cstdint>

namespace warpline::views {

enum class TimeUnit { Auto = 0, Nanoseconds, Microseconds, Milliseconds, Seconds };

class TimeFormat {
public:
    // "812 ns", "1.23 µs", "45.6 ms", "2.50 s": three significant digits in Auto, the chosen unit
    // otherwise (with enough decimals to show three significant digits, at most 9).
    static QString duration(double ns, TimeUnit unit = TimeUnit::Auto);
    // A point in time since the session start, with a finer resolution than duration():
    // "1.234 567 ms" is written "1.234567 ms". `resolutionNs` sets the decimals shown.
    static QString timestamp(double ns, double resolutionNs, TimeUnit unit = TimeUnit::Auto);

    static QString unitSuffix(TimeUnit unit); // "ns", "µs", "ms", "s"; "" for Auto
    static double unitScale(TimeUnit unit);   // ns per unit; 1 for Auto
    // The unit Auto uses for a value of this magnitude.
    static TimeUnit autoUnit(double ns);

    static QString unitName(TimeUnit unit); // "Automatic", "Nanoseconds", ...
};

} // namespace warpline::views
