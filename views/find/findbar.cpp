#include "find/findbar.h"

#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QStyle>
#include <QToolButton>

namespace warpline::views {

FindBar::FindBar(QWidget* parent) : QWidget(parent) {
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(6, 2, 6, 2);
    m_caption = new QLabel(tr("Find:"), this);
    m_caption->setTextFormat(Qt::PlainText);
    m_edit = new QLineEdit(this);
    m_edit->setPlaceholderText(tr("part of a kernel name"));
    m_edit->setClearButtonEnabled(true);
    m_edit->installEventFilter(this);
    m_status = new QLabel(this);
    m_status->setTextFormat(Qt::PlainText);
    m_status->setMinimumWidth(fontMetrics().horizontalAdvance(QStringLiteral("000000 of 000000")));
    m_previous = new QToolButton(this);
    m_previous->setArrowType(Qt::LeftArrow);
    m_previous->setToolTip(tr("Previous (Shift+Enter)"));
    m_next = new QToolButton(this);
    m_next->setArrowType(Qt::RightArrow);
    m_next->setToolTip(tr("Next (Enter)"));
    auto* close = new QToolButton(this);
    close->setIcon(style()->standardIcon(QStyle::SP_TitleBarCloseButton));
    close->setToolTip(tr("Close (Escape)"));
    close->setAutoRaise(true);
    layout->addWidget(m_caption);
    layout->addWidget(m_edit, 1);
    layout->addWidget(m_status);
    layout->addWidget(m_previous);
    layout->addWidget(m_next);
    layout->addWidget(close);

    connect(m_edit, &QLineEdit::textChanged, this, &FindBar::searchChanged);
    connect(m_previous, &QToolButton::clicked, this, &FindBar::previousRequested);
    connect(m_next, &QToolButton::clicked, this, &FindBar::nextRequested);
    connect(close, &QToolButton::clicked, this, [this] {
        hide();
        emit closed();
    });
    setPosition(-1, 0);
}

void FindBar::startFind() {
    m_caption->setText(tr("Find:"));
    m_edit->show();
    show();
    m_edit->setFocus(Qt::ShortcutFocusReason);
    m_edit->selectAll();
}

void FindBar::showInstances(const QString& what) {
    m_edit->hide();
    m_caption->setText(tr("Instances of %1").arg(what));
    show();
}

QString FindBar::text() const {
    return m_edit->text();
}

QString FindBar::statusText() const {
    return m_status->text();
}

void FindBar::setPosition(int current, int count) {
    if (count == 0)
        m_status->setText(!m_edit->isHidden() && m_edit->text().isEmpty() ? QString()
                                                                          : tr("No match"));
    else if (current < 0)
        m_status->setText(count == 1 ? tr("1 match") : tr("%1 matches").arg(count));
    else
        m_status->setText(tr("%1 of %2").arg(current + 1).arg(count));
    m_previous->setEnabled(count > 0);
    m_next->setEnabled(count > 0);
}

bool FindBar::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_edit && event->type() == QEvent::KeyPress) {
        auto* key = static_cast<QKeyEvent*>(event);
        if (key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) {
            if (key->modifiers() & Qt::ShiftModifier)
                emit previousRequested();
            else
                emit nextRequested();
            return true;
        }
        if (key->key() == Qt::Key_Escape) {
            hide();
            emit closed();
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

} // namespace warpline::views
