#pragma once

// CompareDialog: File > Compare With…: the open trace (A, before) against another (B, after).
// The diff table (model/analyses/tracediff.h: kernels, API calls or NVTX ranges; added, removed,
// faster, slower, unchanged; time at stake) above both timelines, A over B. The timelines are
// aligned: each shows the same span of time measured from its own trace's first event, at the same
// scale, and zooming or panning one moves the other. Double-clicking a row highlights that kernel
// or API call in both timelines.
//
// Thread affinity: GUI thread. compareWith() loads B off the GUI thread
// (views::TraceLoadController) and opens the dialog when it is ready.

#include "trace/loadedtrace.h"
#include "tracediff.h"

#include <QDialog>
#include <memory>

class QComboBox;
class QLabel;
class QSortFilterProxyModel;
class QTableView;

namespace warpline::views {
class TableModel;
class TimelineWidget;
} // namespace warpline::views

namespace warpline::app {

class CompareDialog : public QDialog {
    Q_OBJECT
public:
    CompareDialog(std::shared_ptr<const views::LoadedTrace> before,
                  std::shared_ptr<const views::LoadedTrace> after, QWidget* parent = nullptr);
    ~CompareDialog() override;

    // Asks for a trace file, loads it, and shows a (non-modal) CompareDialog of `current` against
    // it; says so in a message box when there is no trace open or the file cannot be opened.
    static void compareWith(QWidget* parent, std::shared_ptr<const views::LoadedTrace> current);

    void setSubject(model::DiffSubject subject);
    model::DiffSubject subject() const { return m_subject; }
    const std::vector<model::TraceDiffRow>& rows() const { return m_rows; }
    const views::TableModel* tableModel() const { return m_model; }
    QString summary() const;
    views::TimelineWidget* timelineBefore() const { return m_before; }
    views::TimelineWidget* timelineAfter() const { return m_after; }

private:
    void updateDiff();
    void follow(views::TimelineWidget* source, views::TimelineWidget* target);
    void highlightRow(const QModelIndex& index);

    std::shared_ptr<const views::LoadedTrace> m_traceBefore;
    std::shared_ptr<const views::LoadedTrace> m_traceAfter;
    model::DiffSubject m_subject = model::DiffSubject::Kernels;
    std::vector<model::TraceDiffRow> m_rows;
    QComboBox* m_subjectBox = nullptr;
    QLabel* m_summary = nullptr;
    QTableView* m_table = nullptr;
    views::TableModel* m_model = nullptr;
    QSortFilterProxyModel* m_proxy = nullptr;
    views::TimelineWidget* m_before = nullptr;
    views::TimelineWidget* m_after = nullptr;
    bool m_following = false; // set while one timeline moves the other
};

} // namespace warpline::app
