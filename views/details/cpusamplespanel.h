#pragma once

// CpuSamplesPanel: where the program's threads were, from the CPU samples of a trace recorded
// with them, over a scope the user picks: the whole trace, the timeline's visible range, or the
// time the GPU was idle in the steady state (the steps after warm-up; the whole trace without
// steps). Two views of the same samples: a flame graph (FlameGraph) and the top-down table
// (model::cpuTreeTable, the rows of `warpline-stats --report cpu-tree [--phase steady]
// [--gpu-idle]`).
//
// GUI thread. The tree is built on it when the scope or, for the visible range, the view changes
// (after a short pause): O(samples in the scope); while the panel is hidden (its dock behind
// another), not until it is shown.

#include "trace/loadedtrace.h"

#include <QWidget>
#include <memory>

class QComboBox;
class QTabWidget;
class QTimer;

namespace warpline::views {

class FlameGraph;
class ReportView;

class CpuSamplesPanel : public QWidget {
    Q_OBJECT

public:
    enum class Scope { WholeTrace = 0, VisibleRange = 1, GpuIdleSteady = 2 };

    explicit CpuSamplesPanel(QWidget* parent = nullptr);

    void setTrace(std::shared_ptr<const LoadedTrace> trace);
    // The timeline's visible range (ns); used by the VisibleRange scope.
    void setVisibleRange(int64_t t0, int64_t t1);
    void setScope(Scope scope);
    Scope scope() const;
    // Shows the flame graph tab.
    void showFlameGraph();

    FlameGraph* flameGraph() const { return m_flame; }
    ReportView* table() const { return m_table; }

protected:
    void showEvent(QShowEvent* event) override;

private:
    void refresh();

    std::shared_ptr<const LoadedTrace> m_trace;
    int64_t m_t0 = 0, m_t1 = 0;
    QComboBox* m_scope = nullptr;
    QTabWidget* m_tabs = nullptr;
    FlameGraph* m_flame = nullptr;
    ReportView* m_table = nullptr;
    QTimer* m_pending = nullptr;
    bool m_stale = false; // a refresh skipped while hidden
};

} // namespace warpline::views
