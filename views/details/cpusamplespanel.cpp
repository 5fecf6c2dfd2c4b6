#include "details/cpusamplespanel.h"

#include "charts/flamegraph.h"
#include "cpuactivity.h"
#include "steps.h"
#include "tables/reportview.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QShowEvent>
#include <QTabWidget>
#include <QTimer>
#include <QVBoxLayout>

namespace warpline::views {

CpuSamplesPanel::CpuSamplesPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Samples of:"), this));
    m_scope = new QComboBox(this);
    m_scope->addItem(tr("the whole trace"));
    m_scope->addItem(tr("the visible range"));
    m_scope->addItem(tr("the GPU's idle time in the steady state"));
    bar->addWidget(m_scope);
    bar->addStretch();
    layout->addLayout(bar);
    m_tabs = new QTabWidget(this);
    m_flame = new FlameGraph;
    auto* scroll = new QScrollArea;
    scroll->setWidget(m_flame);
    scroll->setWidgetResizable(true);
    m_tabs->addTab(scroll, tr("Flame graph"));
    m_table = new ReportView;
    m_tabs->addTab(m_table, tr("Top-down"));
    layout->addWidget(m_tabs);
    m_pending = new QTimer(this);
    m_pending->setSingleShot(true);
    m_pending->setInterval(200);
    connect(m_pending, &QTimer::timeout, this, &CpuSamplesPanel::refresh);
    connect(m_scope, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
}

void CpuSamplesPanel::setTrace(std::shared_ptr<const LoadedTrace> trace) {
    m_trace = std::move(trace);
    m_flame->setTree(nullptr, {}, {}); // the last trace's store is let go even while hidden
    refresh();
}

void CpuSamplesPanel::setVisibleRange(int64_t t0, int64_t t1) {
    m_t0 = t0;
    m_t1 = t1;
    if (scope() == Scope::VisibleRange)
        m_pending->start();
}

void CpuSamplesPanel::setScope(Scope scope) {
    m_scope->setCurrentIndex(static_cast<int>(scope)); // refreshes when it changes
}

CpuSamplesPanel::Scope CpuSamplesPanel::scope() const {
    return static_cast<Scope>(m_scope->currentIndex());
}

void CpuSamplesPanel::showFlameGraph() {
    m_tabs->setCurrentIndex(0);
}

void CpuSamplesPanel::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    // After a pause: a dock tabbed behind another is shown for a moment as the window lays out.
    if (m_stale)
        m_pending->start();
}

void CpuSamplesPanel::refresh() {
    m_pending->stop();
    m_stale = !isVisible();
    if (m_stale)
        return; // built when shown: a hidden panel costs nothing
    if (!m_trace || !m_trace->store || m_trace->store->cpuSamples().empty()) {
        m_flame->setTree(nullptr, {}, {});
        m_table->setReport({QStringLiteral("cpu-tree"), tr("CPU samples top-down"), {}, {}});
        return;
    }
    const model::TraceStore& store = *m_trace->store;
    model::TimeWindow window;
    bool idle = false;
    QString name;
    switch (scope()) {
    case Scope::WholeTrace:
        name = tr("whole trace");
        break;
    case Scope::VisibleRange:
        window = {m_t0, m_t1};
        name = tr("visible range");
        break;
    case Scope::GpuIdleSteady:
        idle = true;
        if (m_trace->steps && !m_trace->steps->empty()) {
            window = m_trace->steps->steadyWindow();
            name = tr("GPU's idle time in the steady state");
        } else {
            name = tr("GPU's idle time (no steps: the whole trace)");
        }
        break;
    }
    model::CpuSampleTree tree = model::cpuSampleTree(store, window, idle);
    m_table->setReport({QStringLiteral("cpu-tree"),
                        tr("CPU samples top-down"),
                        model::cpuTreeTable(store, tree),
                        {}});
    m_flame->setTree(m_trace->store, std::move(tree), name);
}

} // namespace warpline::views
