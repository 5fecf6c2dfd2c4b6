#include "pages.h"

#include "find/findbar.h"
#include "timeline/overviewstrip.h"
#include "timeline/timelinelegend.h"
#include "timeline/timelinewidget.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPixmap>
#include <QProgressBar>
#include <QPushButton>
#include <QStyle>
#include <QToolButton>
#include <QVBoxLayout>

namespace warpline::app {

namespace {

QLabel* plainLabel(const QString& text, QWidget* parent) {
    auto* label = new QLabel(text, parent);
    label->setTextFormat(Qt::PlainText);
    label->setWordWrap(true);
    return label;
}

QLabel* warningIcon(QWidget* parent, int size) {
    auto* icon = new QLabel(parent);
    icon->setPixmap(parent->style()->standardIcon(QStyle::SP_MessageBoxWarning).pixmap(size, size));
    return icon;
}

} // namespace

QHBoxLayout* StartPage::startButtons(const QString& openText) {
    auto* buttons = new QHBoxLayout;
    auto* open = new QPushButton(openText, this);
    auto* sample = new QPushButton(tr("Open Sample Trace"), this);
    auto* record = new QPushButton(tr("Record…"), this);
    buttons->addWidget(open);
    buttons->addWidget(sample);
    buttons->addWidget(record);
    connect(open, &QPushButton::clicked, this, &StartPage::openRequested);
    connect(sample, &QPushButton::clicked, this, &StartPage::sampleRequested);
    connect(record, &QPushButton::clicked, this, &StartPage::recordRequested);
    return buttons;
}

WelcomePage::WelcomePage(QWidget* parent) : StartPage(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->addStretch(1);
    auto* title = plainLabel(tr("Warpline"), this);
    QFont f = title->font();
    f.setPointSizeF(f.pointSizeF() * 2);
    f.setBold(true);
    title->setFont(f);
    title->setAlignment(Qt::AlignCenter);
    layout->addWidget(title);
    auto* text = plainLabel(
        tr("See how far the CPU runs ahead of the GPU, where it stalls in synchronizations, "
           "and which kernels own the GPU's time.\n\nOpen a trace (File > Open, or drop a "
           ".warpline file on this window), the traces of a distributed job (File > Open "
           "Folder…: one file per rank), open the bundled sample, or record a workload."),
        this);
    text->setAlignment(Qt::AlignCenter);
    layout->addWidget(text);
    QHBoxLayout* buttons = startButtons(tr("Open Trace…"));
    buttons->insertStretch(0, 1);
    buttons->addStretch(1);
    layout->addLayout(buttons);
    layout->addStretch(2);
}

LoadingPage::LoadingPage(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->addStretch(1);
    m_label = plainLabel(QString(), this);
    m_label->setAlignment(Qt::AlignCenter);
    layout->addWidget(m_label);
    auto* row = new QHBoxLayout;
    row->addStretch(1);
    m_bar = new QProgressBar(this);
    m_bar->setRange(0, 1000);
    m_bar->setMinimumWidth(420);
    row->addWidget(m_bar);
    auto* cancel = new QPushButton(tr("Cancel"), this);
    row->addWidget(cancel);
    row->addStretch(1);
    layout->addLayout(row);
    layout->addStretch(2);
    connect(cancel, &QPushButton::clicked, this, &LoadingPage::cancelRequested);
}

void LoadingPage::setText(const QString& text) {
    m_label->setText(text);
}

void LoadingPage::setProgress(double fraction) {
    m_bar->setValue(static_cast<int>(fraction * 1000));
}

ErrorPage::ErrorPage(QWidget* parent) : StartPage(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->addStretch(1);
    auto* row = new QHBoxLayout;
    row->addStretch(1);
    row->addWidget(warningIcon(this, 48), 0, Qt::AlignTop);
    auto* texts = new QVBoxLayout;
    m_title = plainLabel(QString(), this);
    QFont f = m_title->font();
    f.setBold(true);
    f.setPointSizeF(f.pointSizeF() * 1.3);
    m_title->setFont(f);
    m_message = plainLabel(QString(), this);
    m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_message->setMaximumWidth(720);
    m_message->setMinimumWidth(420);
    texts->addWidget(m_title);
    texts->addWidget(m_message);
    QHBoxLayout* buttons = startButtons(tr("Open Another Trace…"));
    buttons->addStretch(1);
    texts->addLayout(buttons);
    row->addLayout(texts);
    row->addStretch(1);
    layout->addLayout(row);
    layout->addStretch(2);
}

void ErrorPage::setError(const QString& title, const QString& message) {
    m_title->setText(title);
    m_message->setText(message);
}

QString ErrorPage::text() const {
    return m_title->text() + QLatin1Char('\n') + m_message->text();
}

TracePage::TracePage(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    m_header = plainLabel(QString(), this);
    m_header->setContentsMargins(8, 4, 8, 0);
    m_header->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_header);
    m_findings = plainLabel(QString(), this);
    m_findings->setContentsMargins(8, 2, 8, 4);
    m_findings->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_findings);
    m_loadErrorBar = new QWidget(this);
    {
        auto* bar = new QHBoxLayout(m_loadErrorBar);
        bar->setContentsMargins(8, 4, 8, 4);
        bar->addWidget(warningIcon(m_loadErrorBar, 20), 0, Qt::AlignTop);
        m_loadErrorText = plainLabel(QString(), m_loadErrorBar);
        m_loadErrorText->setTextInteractionFlags(Qt::TextSelectableByMouse);
        bar->addWidget(m_loadErrorText, 1);
        auto* dismiss = new QToolButton(m_loadErrorBar);
        dismiss->setText(tr("Dismiss"));
        bar->addWidget(dismiss, 0, Qt::AlignTop);
        connect(dismiss, &QToolButton::clicked, this, &TracePage::clearLoadError);
    }
    m_loadErrorBar->hide();
    layout->addWidget(m_loadErrorBar);
    m_overview = new views::OverviewStrip(this);
    layout->addWidget(m_overview);
    m_timeline = new views::TimelineWidget(this);
    layout->addWidget(m_timeline, 1);
    m_legend = new views::TimelineLegend(this);
    layout->addWidget(m_legend);
    connect(m_timeline, &views::TimelineWidget::viewportChanged, this, [this] {
        m_overview->setView(m_timeline->viewport().visibleStart(),
                            m_timeline->viewport().visibleEnd());
    });
    connect(m_overview, &views::OverviewStrip::viewRequested, m_timeline,
            &views::TimelineWidget::setVisibleRange);
    m_findBar = new views::FindBar(this);
    m_findBar->hide();
    layout->addWidget(m_findBar);
}

void TracePage::setHeader(const QString& text) {
    m_header->setText(text);
}

void TracePage::setFindings(const QStringList& lines) {
    m_findings->setText(lines.join(QLatin1Char('\n')));
    m_findings->setVisible(!lines.isEmpty());
}

void TracePage::showLoadError(const QString& text) {
    m_loadErrorText->setText(text);
    m_loadErrorBar->show();
}

void TracePage::clearLoadError() {
    m_loadErrorText->clear();
    m_loadErrorBar->hide();
}

QString TracePage::loadError() const {
    return m_loadErrorBar->isHidden() ? QString() : m_loadErrorText->text();
}

} // namespace warpline::app
