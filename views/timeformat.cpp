#include "timeformat.h"

#include <algorithm>
#include <cmath>

namespace warpline::views {

TimeUnit TimeFormat::autoUnit(double ns) {
    const double a = std::abs(ns);
    if (a < 1e3)
        return TimeUnit::Nanoseconds;
    if (a < 1e6)
        return TimeUnit::Microseconds;
    if (a < 1e9)
        return TimeUnit::Milliseconds;
    return TimeUnit::Seconds;
}

QString TimeFormat::unitSuffix(TimeUnit unit) {
    switch (unit) {
    case TimeUnit::Nanoseconds:
        return QStringLiteral("ns");
    case TimeUnit::Microseconds:
        return QStringLiteral("µs");
    case TimeUnit::Milliseconds:
        return QStringLiteral("ms");
    case TimeUnit::Seconds:
        return QStringLiteral("s");
    case TimeUnit::Auto:
        break;
    }
    return {};
}

double TimeFormat::unitScale(TimeUnit unit) {
    switch (unit) {
    case TimeUnit::Microseconds:
        return 1e3;
    case TimeUnit::Milliseconds:
        return 1e6;
    case TimeUnit::Seconds:
        return 1e9;
    case TimeUnit::Nanoseconds:
    case TimeUnit::Auto:
        break;
    }
    return 1;
}

QString TimeFormat::unitName(TimeUnit unit) {
    switch (unit) {
    case TimeUnit::Auto:
        return QStringLiteral("Automatic");
    case TimeUnit::Nanoseconds:
        return QStringLiteral("Nanoseconds");
    case TimeUnit::Microseconds:
        return QStringLiteral("Microseconds");
    case TimeUnit::Milliseconds:
        return QStringLiteral("Milliseconds");
    case TimeUnit::Seconds:
        return QStringLiteral("Seconds");
    }
    return {};
}

QString TimeFormat::duration(double ns, TimeUnit unit) {
    if (unit == TimeUnit::Auto)
        unit = autoUnit(ns);
    const double value = ns / unitScale(unit);
    if (unit == TimeUnit::Nanoseconds && value == std::floor(value))
        return QStringLiteral("%1 ns").arg(static_cast<qint64>(value));
    // Three significant digits: 1.23, 12.3, 123.
    const double a = std::abs(value);
    int decimals = a >= 100 ? 0 : a >= 10 ? 1 : 2;
    if (a > 0 && a < 1)
        decimals = std::min(9, 2 - static_cast<int>(std::floor(std::log10(a))));
    return QStringLiteral("%1 %2").arg(value, 0, 'f', decimals).arg(unitSuffix(unit));
}

QString TimeFormat::timestamp(double ns, double resolutionNs, TimeUnit unit) {
    if (unit == TimeUnit::Auto)
        unit = autoUnit(std::max(std::abs(ns), resolutionNs));
    const double scale = unitScale(unit);
    const double step = std::max(resolutionNs, 1.0) / scale;
    int decimals = 0;
    if (step < 1)
        decimals = std::clamp(static_cast<int>(std::ceil(-std::log10(step) - 1e-9)), 0, 9);
    return QStringLiteral("%1 %2").arg(ns / scale, 0, 'f', decimals).arg(unitSuffix(unit));
}

} // namespace warpline::views
