#pragma once

// FindBar: the strip under the timeline for stepping through a set of events: kernels found by
// name (Ctrl+F: type, Enter = next, Shift+Enter = previous, Escape closes), or the instances of a
// kernel picked in the kernel table (the bar then names them instead of showing the text box).
// It only shows and reports; the window runs the search and moves the timeline.

#include <QWidget>

class QLabel;
class QLineEdit;
class QToolButton;

namespace warpline::views {

class FindBar : public QWidget {
    Q_OBJECT
public:
    explicit FindBar(QWidget* parent = nullptr);

    // Find mode: shows the text box and focuses it.
    void startFind();
    // Instances mode: "Instances of <what>" with next/previous; the text box is hidden.
    void showInstances(const QString& what);
    // "3 of 120", "No match"; current is 0-based, -1 for none.
    void setPosition(int current, int count);
    QString text() const;
    QLineEdit* edit() const { return m_edit; }
    QString statusText() const;

signals:
    void searchChanged(const QString& text);
    void nextRequested();
    void previousRequested();
    void closed();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    QLabel* m_caption = nullptr;
    QLineEdit* m_edit = nullptr;
    QLabel* m_status = nullptr;
    QToolButton* m_previous = nullptr;
    QToolButton* m_next = nullptr;
};

} // namespace warpline::views
