#pragma once

// DetailsPanel: every field of the selected event (EventDetails), in a two-column list. Fields that
// name another event (the launching call of a kernel, the kernel of a launch) are links: activating
// one emits eventRequested so the window selects and reveals that event.

#include "eventid.h"
#include "timeformat.h"
#include "trace/loadedtrace.h"

#include <QWidget>
#include <memory>

class QLabel;
class QTreeWidget;
class QTreeWidgetItem;

namespace warpline::views {

class DetailsPanel : public QWidget {
    Q_OBJECT
public:
    explicit DetailsPanel(QWidget* parent = nullptr);

    void setTrace(std::shared_ptr<const LoadedTrace> trace);
    void setTimeUnit(TimeUnit unit);
    void showEvent(const model::EventId& event);
    model::EventId event() const { return m_event; }

    // The value shown for a field ("Name", "Launched by", ...), or a null string (tests).
    QString value(const QString& field) const;
    QString title() const;

signals:
    void eventRequested(const warpline::model::EventId& event);

private:
    void rebuild();
    void activate(QTreeWidgetItem* item);

    std::shared_ptr<const LoadedTrace> m_trace;
    model::EventId m_event;
    TimeUnit m_unit = TimeUnit::Auto;
    QLabel* m_title = nullptr;
    QTreeWidget* m_list = nullptr;
};

} // namespace warpline::views
