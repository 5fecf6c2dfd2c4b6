#pragma once

// TimelineLegend: one line under the timeline that says what its colours and shapes mean: kernels
// (a colour per name), communication kernels, copies, memsets, CUDA calls, launch calls, calls
// that wait for the GPU, the launch queue's depth, and a zoomed-out block drawn as a bar as tall
// as the share of its time its spans cover. Colours from SpanPalette, as the timeline paints them.

#include "spanpalette.h"

#include <QColor>
#include <QString>
#include <QWidget>
#include <vector>

namespace warpline::views {

class TimelineLegend : public QWidget {
    Q_OBJECT
public:
    struct Entry {
        QString label;
        std::vector<QColor> colors; // one swatch per colour (kernels show a few)
        bool partial = false;       // drawn as a faint band with a low bar (coverage)
    };

    explicit TimelineLegend(QWidget* parent = nullptr);

    // The entries shown, in order (for tests and for the tooltip).
    const std::vector<Entry>& entries() const { return m_entries; }
    QSize sizeHint() const override;
    int heightForWidth(int width) const override; // the entries wrap onto several lines

protected:
    void paintEvent(QPaintEvent* event) override;
    void changeEvent(QEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    void rebuild();
    int entryWidth(const Entry& e) const;
    std::vector<Entry> m_entries;
};

} // namespace warpline::views
