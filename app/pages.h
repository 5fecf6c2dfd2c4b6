#pragma once

// The main window's pages, one class each, shown one at a time in MainWindow::Page order:
// WelcomePage (nothing open), LoadingPage (progress and Cancel), ErrorPage (what went wrong and
// what to do) and TracePage (the trace: header, findings, timeline, find bar). Each page owns its
// widgets and says what the user asked for through signals; MainWindow decides what happens.
//
// Thread affinity: GUI thread. Text that comes from a trace or a file name is shown as plain
// text, never rich text.

#include <QString>
#include <QStringList>
#include <QWidget>

class QHBoxLayout;
class QLabel;
class QProgressBar;

namespace warpline::views {
class FindBar;
class OverviewStrip;
class TimelineLegend;
class TimelineWidget;
} // namespace warpline::views

namespace warpline::app {

// A page with the three ways to get a trace on screen: open one, open the sample, record.
class StartPage : public QWidget {
    Q_OBJECT
public:
    using QWidget::QWidget;

signals:
    void openRequested();
    void sampleRequested();
    void recordRequested();

protected:
    // The row of the three buttons; `openText` names the first ("Open Trace…").
    QHBoxLayout* startButtons(const QString& openText);
};

class WelcomePage : public StartPage {
    Q_OBJECT
public:
    explicit WelcomePage(QWidget* parent = nullptr);
};

class LoadingPage : public QWidget {
    Q_OBJECT
public:
    explicit LoadingPage(QWidget* parent = nullptr);
    void setText(const QString& text);
    void setProgress(double fraction); // 0..1

signals:
    void cancelRequested();

private:
    QLabel* m_label = nullptr;
    QProgressBar* m_bar = nullptr;
};

class ErrorPage : public StartPage {
    Q_OBJECT
public:
    explicit ErrorPage(QWidget* parent = nullptr);
    void setError(const QString& title, const QString& message);
    QString text() const; // the title, a newline, the message

private:
    QLabel* m_title = nullptr;
    QLabel* m_message = nullptr;
};

class TracePage : public QWidget {
    Q_OBJECT
public:
    explicit TracePage(QWidget* parent = nullptr);

    void setHeader(const QString& text);
    // The findings under the header, one a line; hidden when there are none.
    void setFindings(const QStringList& lines);
    // A failed load over the trace that was kept, in a bar above the timeline until dismissed.
    void showLoadError(const QString& text);
    void clearLoadError();
    // The bar's text while it shows; empty when it is hidden.
    QString loadError() const;

    views::OverviewStrip* overview() const { return m_overview; }
    views::TimelineWidget* timeline() const { return m_timeline; }
    views::TimelineLegend* legend() const { return m_legend; }
    views::FindBar* findBar() const { return m_findBar; }

private:
    QLabel* m_header = nullptr;
    QLabel* m_findings = nullptr;
    QWidget* m_loadErrorBar = nullptr;
    QLabel* m_loadErrorText = nullptr;
    views::OverviewStrip* m_overview = nullptr;
    views::TimelineWidget* m_timeline = nullptr;
    views::TimelineLegend* m_legend = nullptr; // what the timeline's colours mean
    views::FindBar* m_findBar = nullptr;
};

} // namespace warpline::app
