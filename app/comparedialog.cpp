#include "comparedialog.h"

#include "find/eventsearch.h"
#include "tables/tablemodel.h"
#include "timeline/highlightset.h"
#include "timeline/timelinewidget.h"
#include "trace/traceloadcontroller.h"

#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPointer>
#include <QProgressDialog>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <cmath>

namespace warpline::app {

namespace {

QString fileName(const views::LoadedTrace& trace) {
    return QFileInfo(trace.path).fileName();
}

// A timeline with its trace's name above it.
QWidget* labelled(const QString& label, views::TimelineWidget* timeline, QWidget* parent) {
    auto* box = new QWidget(parent);
    auto* layout = new QVBoxLayout(box);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* title = new QLabel(label, box);
    title->setTextFormat(Qt::PlainText);
    layout->addWidget(title);
    layout->addWidget(timeline, 1);
    return box;
}

QString formatMs(int64_t ns) {
    return QString::number(static_cast<double>(ns) / 1e6, 'f', 3) + QStringLiteral(" ms");
}

} // namespace

CompareDialog::CompareDialog(std::shared_ptr<const views::LoadedTrace> before,
                             std::shared_ptr<const views::LoadedTrace> after, QWidget* parent)
    : QDialog(parent), m_traceBefore(std::move(before)), m_traceAfter(std::move(after)) {
    setWindowTitle(tr("Compare %1 with %2").arg(fileName(*m_traceBefore), fileName(*m_traceAfter)));
    auto* layout = new QVBoxLayout(this);

    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("Compare"), this));
    m_subjectBox = new QComboBox(this);
    m_subjectBox->addItem(tr("Kernels"), static_cast<int>(model::DiffSubject::Kernels));
    m_subjectBox->addItem(tr("API calls"), static_cast<int>(model::DiffSubject::Api));
    m_subjectBox->addItem(tr("NVTX ranges"), static_cast<int>(model::DiffSubject::Nvtx));
    top->addWidget(m_subjectBox);
    m_summary = new QLabel(this);
    m_summary->setTextFormat(Qt::PlainText);
    top->addWidget(m_summary, 1);
    layout->addLayout(top);

    auto* splitter = new QSplitter(Qt::Vertical, this);
    m_model = new views::TableModel(this);
    m_proxy = new QSortFilterProxyModel(this);
    m_proxy->setSourceModel(m_model);
    m_proxy->setSortRole(views::TableModel::SortRole);
    m_table = new QTableView(splitter);
    m_table->setModel(m_proxy);
    m_table->setSortingEnabled(true);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->verticalHeader()->hide();
    splitter->addWidget(m_table);

    m_before = new views::TimelineWidget(splitter);
    m_after = new views::TimelineWidget(splitter);
    splitter->addWidget(
        labelled(tr("A (before): %1").arg(m_traceBefore->path), m_before, splitter));
    splitter->addWidget(labelled(tr("B (after): %1").arg(m_traceAfter->path), m_after, splitter));
    splitter->setStretchFactor(0, 2);
    splitter->setStretchFactor(1, 3);
    splitter->setStretchFactor(2, 3);
    layout->addWidget(splitter, 1);

    m_before->setTrace(m_traceBefore);
    m_after->setTrace(m_traceAfter);
    connect(m_before, &views::TimelineWidget::viewportChanged, this,
            [this] { follow(m_before, m_after); });
    connect(m_after, &views::TimelineWidget::viewportChanged, this,
            [this] { follow(m_after, m_before); });
    m_before->fitGpuActivity();
    follow(m_before, m_after);

    connect(m_subjectBox, &QComboBox::currentIndexChanged, this, [this](int) {
        setSubject(static_cast<model::DiffSubject>(m_subjectBox->currentData().toInt()));
    });
    connect(m_table, &QTableView::doubleClicked, this, &CompareDialog::highlightRow);
    updateDiff();
    resize(1200, 900);
}

CompareDialog::~CompareDialog() = default;

void CompareDialog::setSubject(model::DiffSubject subject) {
    if (subject == m_subject && !m_rows.empty())
        return;
    m_subject = subject;
    const int index = m_subjectBox->findData(static_cast<int>(subject));
    if (index != m_subjectBox->currentIndex())
        m_subjectBox->setCurrentIndex(index); // calls back here with the same subject
    updateDiff();
}

void CompareDialog::updateDiff() {
    m_rows = model::diffTraces(*m_traceBefore->store, *m_traceAfter->store, m_subject);
    views::ReportTable report;
    report.id = QStringLiteral("diff");
    report.title = tr("Diff");
    report.table = model::traceDiffTable(m_rows);
    m_model->setReport(std::move(report));
    m_proxy->sort(-1);
    m_summary->setText(summary());
}

QString CompareDialog::summary() const {
    int counts[5] = {0, 0, 0, 0, 0};
    int64_t stake = 0;
    for (const model::TraceDiffRow& r : m_rows) {
        ++counts[static_cast<int>(r.status)];
        stake += r.timeAtStake;
    }
    using S = model::DiffStatus;
    return tr("B against A: %1 added, %2 removed, %3 faster, %4 slower, %5 unchanged; "
              "total time %6 %7")
        .arg(counts[int(S::Added)])
        .arg(counts[int(S::Removed)])
        .arg(counts[int(S::Faster)])
        .arg(counts[int(S::Slower)])
        .arg(counts[int(S::Unchanged)])
        .arg(stake <= 0 ? tr("saved") : tr("added"))
        .arg(formatMs(std::abs(stake)));
}

// Same span from each trace's first event, same scale.
void CompareDialog::follow(views::TimelineWidget* source, views::TimelineWidget* target) {
    if (m_following || !source->trace() || !target->trace())
        return;
    m_following = true;
    const double offset = source->viewport().visibleStart() -
                          static_cast<double>(source->trace()->store->beginTime());
    const double t0 = static_cast<double>(target->trace()->store->beginTime()) + offset;
    target->setVisibleRange(t0, t0 + source->viewport().visibleDuration());
    m_following = false;
}

void CompareDialog::highlightRow(const QModelIndex& index) {
    const int row = m_proxy->mapToSource(index).row();
    if (row < 0 || row >= static_cast<int>(m_rows.size()) || m_subject == model::DiffSubject::Nvtx)
        return;
    const std::string& name = m_rows[static_cast<size_t>(row)].name;
    for (views::TimelineWidget* timeline : {m_before, m_after}) {
        const model::TraceStore& store = *timeline->trace()->store;
        const model::NameId id = store.strings().find(name);
        std::vector<model::EventId> events;
        if (id != model::kNoName) {
            events = m_subject == model::DiffSubject::Kernels
                         ? views::EventSearch::gpuOpsNamed(store, id)
                         : views::EventSearch::apiCallsNamed(store, id);
        }
        timeline->setHighlights(
            views::HighlightSet(std::move(events), QString::fromStdString(name)));
    }
}

void CompareDialog::compareWith(QWidget* parent,
                                std::shared_ptr<const views::LoadedTrace> current) {
    if (!current || !current->store) {
        QMessageBox::information(parent, tr("Compare With"),
                                 tr("Open a trace first: it becomes A (before), and the trace "
                                    "you choose next B (after)."));
        return;
    }
    const QString dir = QSettings().value(QStringLiteral("lastDirectory")).toString();
    const QString path = QFileDialog::getOpenFileName(
        parent, tr("Compare %1 With").arg(fileName(*current)), dir,
        tr("Traces (*.warpline *.sqlite *.db *.json *.json.gz);;All files (*)"));
    if (path.isEmpty())
        return;
    auto* loader = new views::TraceLoadController(parent);
    auto* progress = new QProgressDialog(tr("Loading %1…").arg(QFileInfo(path).fileName()),
                                         tr("Cancel"), 0, 1000, parent);
    progress->setWindowModality(Qt::WindowModal);
    progress->setMinimumDuration(300);
    const auto done = [loader, progress] {
        progress->deleteLater();
        loader->deleteLater();
    };
    QObject::connect(loader, &views::TraceLoadController::progress, progress,
                     [progress](int, double fraction, const QString&) {
                         progress->setValue(static_cast<int>(std::lround(fraction * 1000)));
                     });
    QObject::connect(progress, &QProgressDialog::canceled, loader,
                     &views::TraceLoadController::cancel);
    QObject::connect(loader, &views::TraceLoadController::loaded, parent,
                     [parent, current, done](int, std::shared_ptr<const views::LoadedTrace> b) {
                         done();
                         auto* dialog = new CompareDialog(current, std::move(b), parent);
                         dialog->setAttribute(Qt::WA_DeleteOnClose);
                         dialog->show();
                     });
    QObject::connect(loader, &views::TraceLoadController::failed, parent,
                     [parent, done](int, const QString& file, const QString& message) {
                         done();
                         QMessageBox::warning(parent, tr("Compare With"),
                                              tr("Could not open %1:\n%2").arg(file, message));
                     });
    QObject::connect(loader, &views::TraceLoadController::cancelled, parent,
                     [done](int) { done(); });
    loader->start(path);
}

} // namespace warpline::app
