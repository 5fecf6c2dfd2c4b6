#pragma once

// SpanPalette: the timeline's colours, derived from the widget's QPalette so the view follows the
// system's light or dark theme (no hard-coded backgrounds). Kernel colours come from a stable hash
// of the kernel's name (FNV-1a over its text, not its NameId), so a kernel keeps its colour across
// traces and runs. Kernel hues (75..285 degrees) avoid the reds (stalls), the oranges/browns
// (copies, memsets) and the magentas: communication kernels (NCCL all-reduce ...,
// model/store/communication.h) are one family of their own there, strongly saturated and darker
// than compute kernels in a light theme, so time spent waiting for other ranks never reads as
// compute. A step's causes (the step-time chart) take the colours of what they are on the
// timeline: copies the memcpy orange, sync the stall red, launch the launch calls' blue.

#include <QColor>
#include <QPalette>
#include <cstdint>
#include <string_view>

namespace warpline::model {
enum class StepCause : uint8_t; // stepbreakdown.h
} // namespace warpline::model

namespace warpline::views {

class SpanPalette {
public:
    SpanPalette() : SpanPalette(QPalette()) {}
    explicit SpanPalette(const QPalette& palette);

    bool isDark() const { return m_dark; }

    QColor background() const { return m_background; }     // the span area
    QColor alternateRow() const { return m_alternateRow; } // every other group of rows
    QColor labelBackground() const { return m_labelBackground; }
    QColor text() const { return m_text; }
    QColor dimText() const { return m_dimText; }
    QColor gridLine() const { return m_gridLine; }
    QColor highlight() const { return m_highlight; } // selection outline and arrow
    QColor rangeSelection() const { return m_rangeSelection; }
    QColor sourceHeader() const { return m_sourceHeader; } // a rank's header row in a session

    // A compute kernel's colour, or communication(name) for a communication kernel.
    QColor kernel(std::string_view name) const;
    QColor communication(std::string_view name) const;
    QColor memcpy() const { return m_memcpy; }
    QColor memset() const { return m_memset; }
    QColor apiCall() const { return m_apiCall; }
    QColor launchCall() const { return m_launchCall; }
    QColor stall() const { return m_stall; } // synchronizing API calls, stall marks
    QColor nvtx(uint32_t argb, std::string_view name) const;
    QColor queueDepth() const { return m_queueDepth; }
    // A thread's CPU row (CPU samples): running, and waiting off its CPU.
    QColor cpuRunning() const { return m_cpuRunning; }
    QColor cpuWaiting() const { return m_cpuWaiting; }
    // One colour per cause of a step's time, each told apart from the others.
    QColor stepCause(model::StepCause cause) const;
    // The waiting part of a communication kernel of colour `fill` (its rank's collective waiting
    // for the others): `fill` faded toward the background, painted under a hatch of `fill`.
    QColor waiting(const QColor& fill) const;
    // Zoomed out, a block its spans cover only partly: this faint band of `fill`, under a bar of
    // `fill` as tall as the share of its time they cover.
    QColor partlyBusy(const QColor& fill) const;
    // Text drawn on top of a span of colour `fill`.
    QColor textOn(const QColor& fill) const;

    static uint32_t nameHash(std::string_view name); // FNV-1a, 32 bit

private:
    bool m_dark = false;
    QColor m_background, m_alternateRow, m_labelBackground, m_text, m_dimText, m_gridLine;
    QColor m_highlight, m_rangeSelection, m_sourceHeader;
    QColor m_memcpy, m_memset, m_apiCall, m_launchCall, m_stall, m_queueDepth;
    QColor m_cpuRunning, m_cpuWaiting;
};

} // namespace warpline::views
