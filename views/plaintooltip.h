#pragma once

// Text from a trace (kernel, API and NVTX names, paths) shown in a tooltip. Qt guesses whether a
// tooltip is rich text (Qt::mightBeRichText), so a kernel named "<b>x</b>" would show a bold x:
// escaped and wrapped as rich text, it shows exactly as written. Labels take Qt::PlainText
// instead; item views' display text is always plain.

#include <QString>
#include <QTextDocument>

namespace warpline::views {

inline QString plainToolTip(const QString& text) {
    return text.isEmpty() ? text : Qt::convertFromPlainText(text, Qt::WhiteSpacePre);
}

} // namespace warpline::views
