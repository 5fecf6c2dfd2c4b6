#include "spanpalette.h"

#include "communication.h"
#include "stepbreakdown.h"

namespace warpline::views {

namespace {

QColor mix(const QColor& a, const QColor& b, double t) {
    return QColor::fromRgbF(static_cast<float>(a.redF() * (1 - t) + b.redF() * t),
                            static_cast<float>(a.greenF() * (1 - t) + b.greenF() * t),
                            static_cast<float>(a.blueF() * (1 - t) + b.blueF() * t));
}

} // namespace

SpanPalette::SpanPalette(const QPalette& palette) {
    m_background = palette.color(QPalette::Base);
    m_text = palette.color(QPalette::Text);
    m_dark = m_background.lightnessF() < 0.5;
    m_alternateRow = mix(m_background, m_text, 0.035);
    m_labelBackground = palette.color(QPalette::Window);
    m_dimText = mix(m_background, m_text, 0.6);
    m_gridLine = mix(m_background, m_text, 0.12);
    m_highlight = m_dark ? QColor(255, 235, 80) : QColor(20, 20, 20);
    m_rangeSelection = palette.color(QPalette::Highlight);
    m_rangeSelection.setAlpha(60);
    m_sourceHeader = mix(m_background, m_text, 0.10);
    m_memcpy = m_dark ? QColor(240, 165, 40) : QColor(230, 145, 20);
    m_memset = m_dark ? QColor(190, 150, 110) : QColor(160, 115, 75);
    m_apiCall = m_dark ? QColor(110, 125, 145) : QColor(165, 180, 200);
    m_launchCall = m_dark ? QColor(95, 150, 170) : QColor(140, 195, 215);
    m_stall = m_dark ? QColor(235, 75, 70) : QColor(215, 40, 40);
    m_queueDepth = m_dark ? QColor(120, 170, 255) : QColor(40, 100, 200);
    m_cpuRunning = m_dark ? QColor(110, 200, 120) : QColor(46, 160, 67);
    m_cpuWaiting = m_dark ? QColor(110, 110, 120) : QColor(190, 190, 198);
}

uint32_t SpanPalette::nameHash(std::string_view name) {
    uint32_t h = 2166136261u;
    for (const char c : name) {
        h ^= static_cast<unsigned char>(c);
        h *= 16777619u;
    }
    return h;
}

QColor SpanPalette::kernel(std::string_view name) const {
    if (model::isCommunicationKernel(name))
        return communication(name);
    const uint32_t h = nameHash(name);
    // Hues 75..285 degrees: greens, cyans, blues, violets. The magentas above are communication's.
    const int hue = 75 + static_cast<int>(h % 211);
    const int saturation = 110 + static_cast<int>((h >> 8) % 70);
    const int value =
        m_dark ? 170 + static_cast<int>((h >> 16) % 50) : 185 + static_cast<int>((h >> 16) % 50);
    return QColor::fromHsv(hue, saturation, value);
}

QColor SpanPalette::communication(std::string_view name) const {
    // Hues 295..325 (magentas), saturation well above any compute kernel's (at most 179).
    const uint32_t h = nameHash(name);
    const int hue = 295 + static_cast<int>(h % 31);
    const int saturation = 205 + static_cast<int>((h >> 8) % 40);
    const int value =
        m_dark ? 215 + static_cast<int>((h >> 16) % 30) : 150 + static_cast<int>((h >> 16) % 30);
    return QColor::fromHsv(hue, saturation, value);
}

QColor SpanPalette::stepCause(model::StepCause cause) const {
    using model::StepCause;
    switch (cause) {
    case StepCause::Compute: // a kernel's green, from the middle of the kernels' hues
        return m_dark ? QColor::fromHsv(145, 140, 200) : QColor::fromHsv(145, 150, 180);
    case StepCause::Copy:
        return m_memcpy;
    case StepCause::Memset:
        return m_memset;
    case StepCause::Communication:
        return m_dark ? QColor::fromHsv(310, 215, 225) : QColor::fromHsv(310, 215, 165);
    case StepCause::Launch:
        return m_launchCall;
    case StepCause::CpuWork:
        return QColor(150, 150, 150); // host code: neither GPU nor CUDA, a neutral grey
    case StepCause::Input:
        return m_dark ? QColor(215, 195, 70) : QColor(230, 200, 50);
    case StepCause::Sync:
        return m_stall;
    case StepCause::Memory:
        return m_dark ? QColor(125, 140, 235) : QColor(70, 90, 180);
    case StepCause::Compile:
        return m_dark ? QColor(230, 130, 165) : QColor(240, 145, 175);
    case StepCause::HostMemory: // the host side of copies: the copies' hue, pale
        return m_dark ? QColor::fromHsv(30, 110, 150) : QColor::fromHsv(30, 70, 250);
    }
    return m_dimText;
}

QColor SpanPalette::nvtx(uint32_t argb, std::string_view name) const {
    if (argb != 0) {
        QColor c = QColor::fromRgb(argb | 0xff000000u);
        return m_dark ? c.darker(115) : c;
    }
    const uint32_t h = nameHash(name);
    return QColor::fromHsv(static_cast<int>(h % 360), 60 + static_cast<int>((h >> 9) % 40),
                           m_dark ? 150 : 215);
}

QColor SpanPalette::waiting(const QColor& fill) const {
    // From and to 8 bits a channel: the same colour whatever the spec of `fill`, painted as it is.
    return QColor(mix(QColor(fill.rgb()), m_background, 0.6).rgb());
}

QColor SpanPalette::partlyBusy(const QColor& fill) const {
    return QColor(mix(QColor(fill.rgb()), m_background, 0.8).rgb());
}

QColor SpanPalette::textOn(const QColor& fill) const {
    // Relative luminance decides black or white, whatever the theme.
    const double l = 0.2126 * fill.redF() + 0.7152 * fill.greenF() + 0.0722 * fill.blueF();
    return l > 0.5 ? QColor(15, 15, 15) : QColor(245, 245, 245);
}

} // namespace warpline::views
