#include "timeline/timelinewidget.h"

#include "analysishelpers.h"
#include "details/eventdetails.h"
#include "find/eventsearch.h"
#include "syncstalls.h"
#include "timeline/columnarea.h"
#include "timeline/cpusamplerow.h"
#include "timeline/metricrow.h"
#include "timeline/timeruler.h"

#include <QEvent>
#include <QKeyEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QResizeEvent>
#include <QScrollBar>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <limits>

namespace warpline::views {

namespace {

constexpr int kScrollStep = 40;        // px per wheel notch when scrolling rows
constexpr double kWheelZoom = 1.25;    // per notch (120 units of angleDelta)
constexpr double kKeyZoom = 1.25;      // per W/S press
constexpr double kKeyPan = 0.1;        // of the width per A/D press
constexpr double kHitTolerance = 3.0;  // px around a span that still hits it
constexpr int kDragThreshold = 4;      // px before a press becomes a drag
constexpr size_t kMaxArrows = 32;      // arrows from one launch (a graph launch has many ops)
constexpr double kMinStepSpacing = 24; // px per step below which step marks are left out

QColor mixed(const QColor& a, const QColor& b, double t) {
    return QColor::fromRgbF(static_cast<float>(a.redF() * (1 - t) + b.redF() * t),
                            static_cast<float>(a.greenF() * (1 - t) + b.greenF() * t),
                            static_cast<float>(a.blueF() * (1 - t) + b.blueF() * t));
}

QString qs(const std::string& s) {
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

} // namespace

TimelineWidget::TimelineWidget(QWidget* parent) : QWidget(parent) {
    setFocusPolicy(Qt::StrongFocus);
    setMouseTracking(true);
    setAttribute(Qt::WA_OpaquePaintEvent);
    setAcceptDrops(false);
    m_palette = SpanPalette(palette());

    m_vScroll = new QScrollBar(Qt::Vertical, this);
    m_vScroll->hide();
    connect(m_vScroll, &QScrollBar::valueChanged, this, [this](int value) {
        m_scrollY = value;
        invalidate();
    });

    m_hoverLabel = new QLabel(this);
    m_hoverLabel->setTextFormat(Qt::PlainText); // names come from the trace: never rich text
    m_hoverLabel->setAutoFillBackground(true);
    m_hoverLabel->setBackgroundRole(QPalette::ToolTipBase);
    m_hoverLabel->setForegroundRole(QPalette::ToolTipText);
    m_hoverLabel->setFrameShape(QFrame::Box);
    m_hoverLabel->setMargin(4);
    m_hoverLabel->setAttribute(Qt::WA_TransparentForMouseEvents);
    m_hoverLabel->hide();
}

TimelineWidget::~TimelineWidget() = default;

void TimelineWidget::setTrace(std::shared_ptr<const LoadedTrace> trace) {
    // The same store again (the analyses arrived after the store): keep the view as it is, unless
    // it is still the one the store opened with and the steps are now known: then open on them.
    const bool sameStore = m_trace && trace && m_trace->store == trace->store;
    const bool stepsArrived = sameStore && !m_trace->steps && trace->steps;
    const bool viewUntouched = m_viewport.visibleStart() == m_openedView.first &&
                               m_viewport.visibleEnd() == m_openedView.second;
    m_trace = std::move(trace);
    if (!sameStore) {
        m_selection = {};
        m_highlights = {};
        m_scrollY = 0;
        m_rows = TimelineRows();
    }
    if (!sameStore) {
        m_nameColor.clear();
        m_syncName.clear();
        m_metricScale.clear();
    }
    m_depthProfiles.clear();
    m_idleRows.clear(); // another trace's rows; set again from its first viewport
    m_stallCalls.clear();
    m_waits.clear();
    m_hoverLabel->hide();
    if (m_trace) {
        const model::TraceStore& store = *m_trace->store;
        if (!sameStore)
            takeStore(store);
        m_depthProfiles.resize(store.streams().size());
        if (m_trace->runAhead) {
            const model::RunAheadAnalysis& ra = *m_trace->runAhead;
            for (size_t row = 0; row < ra.streams.size(); ++row) {
                const uint32_t s = ra.streams[row].streamIndex;
                if (s < m_depthProfiles.size())
                    m_depthProfiles[s] = QueueDepthProfile(ra.depthSteps(row));
            }
        }
        if (m_trace->syncStalls) {
            m_stallCalls.resize(store.apiTracks().size());
            for (const model::SyncStall& stall : m_trace->syncStalls->stalls) {
                if (stall.call.valid() && stall.call.track < m_stallCalls.size())
                    m_stallCalls[stall.call.track].push_back(stall.call.index);
            }
            for (auto& calls : m_stallCalls)
                std::sort(calls.begin(), calls.end());
        }
        if (m_trace->crossRank) {
            m_waits.resize(store.gpuTracks().size());
            for (const model::RankStep& step : m_trace->crossRank->rankSteps) {
                const model::EventRef op = step.arrivalOp;
                if (step.arrived() && step.wait > 0 && op.valid() && op.track < m_waits.size())
                    m_waits[op.track].push_back({op.index, step.arrival + step.wait});
            }
            for (auto& marks : m_waits)
                std::sort(marks.begin(), marks.end(),
                          [](const WaitMark& a, const WaitMark& b) { return a.index < b.index; });
        }
        if (!sameStore)
            m_viewport.setBounds(store.beginTime(), store.endTime());
    } else {
        m_viewport.setBounds(0, 1000);
    }
    updateIdleRows();
    rebuildRows();
    if (m_trace && (!sameStore || (stepsArrived && viewUntouched)))
        fitOpeningView();
    invalidate();
    if (!sameStore) {
        emitViewportChanged();
        emit selectionChanged(m_selection);
    }
}

void TimelineWidget::takeStore(const model::TraceStore& store) {
    // What depends on the store alone, computed once per open: the second setTrace of an open
    // (the analyses arriving) finds it in place.
    const size_t names = store.strings().size();
    m_syncName.resize(names);
    for (size_t id = 0; id < names; ++id)
        m_syncName[id] =
            model::stallKindOfCallName(store.strings().text(static_cast<model::NameId>(id)))
                .has_value();
    colourNames(store);
    m_metricScale = MetricRow::scales(store);
}

void TimelineWidget::colourNames(const model::TraceStore& store) {
    const size_t names = store.strings().size();
    m_nameColor.resize(names);
    for (size_t id = 0; id < names; ++id)
        m_nameColor[id] =
            m_palette.kernel(store.strings().text(static_cast<model::NameId>(id))).rgb();
}

void TimelineWidget::rebuildRows() {
    if (m_trace) {
        TimelineRows::Options options;
        const int text = fontMetrics().height();
        options.spanHeight = std::max(18, text + 6);
        options.headerHeight = std::max(18, text + 6);
        // A depth graph no taller than the stream's own row, and none for a stream whose queue
        // never held more than the op running (start-up's streams in PyTorch: a row of nothing).
        options.queueDepthHeight = options.spanHeight;
        options.queueDepthRows.resize(m_depthProfiles.size());
        for (size_t s = 0; s < m_depthProfiles.size(); ++s)
            options.queueDepthRows[s] = m_depthProfiles[s].maxDepth() > 1;
        options.idle = m_idleRows;
        options.idleHeight = std::max(6, text / 3);
        m_rows.build(*m_trace->store, options);
        // Spare height goes to the rows (up to a limit) rather than to empty space below them:
        // taller spans, and the depth graphs with them.
        const int spare = height() - rulerHeight() - m_rows.totalHeight();
        if (spare > 0) {
            int rows = 0;
            for (const TimelineRow& r : m_rows.rows())
                rows += !r.isHeader();
            if (rows > 0) {
                options.spanHeight += std::min(spare / rows, text / 2 + 4);
                options.queueDepthHeight = options.spanHeight;
            }
            m_rows.build(*m_trace->store, options);
        }
    } else {
        m_rows = TimelineRows();
    }
    updateLabelWidth();
    updateScrollBar();
}

void TimelineWidget::updateLabelWidth() {
    const QFontMetrics fm = fontMetrics();
    QFont bold = font();
    bold.setBold(true);
    const QFontMetrics boldFm(bold);
    int widest = fm.horizontalAdvance(QStringLiteral("Launch queue depth · max 10000")) + 40;
    for (const TimelineRow& row : m_rows.rows()) {
        const int text = row.isHeader() ? boldFm.horizontalAdvance(row.label) + 14
                                        : fm.horizontalAdvance(row.label);
        widest = std::max(widest, text + 20 + 12 * row.indent);
    }
    m_labelWidth = std::clamp(widest, 160, std::max(160, width() / 4));
    m_viewport.setWidth(std::max(1, spanArea().width()));
}

int TimelineWidget::rulerHeight() const {
    return fontMetrics().height() + 14;
}

QRect TimelineWidget::spanArea() const {
    const int scroll = m_vScroll->isVisible() ? m_vScroll->width() : 0;
    return QRect(m_labelWidth, rulerHeight(), std::max(1, width() - m_labelWidth - scroll),
                 std::max(1, height() - rulerHeight()));
}

void TimelineWidget::updateScrollBar() {
    const int visible = height() - rulerHeight();
    const int total = m_rows.totalHeight();
    const bool needed = total > visible;
    m_vScroll->setVisible(needed);
    m_vScroll->setGeometry(width() - m_vScroll->sizeHint().width(), rulerHeight(),
                           m_vScroll->sizeHint().width(), std::max(0, visible));
    m_vScroll->setRange(0, std::max(0, total - visible));
    m_vScroll->setPageStep(std::max(1, visible));
    m_vScroll->setSingleStep(kScrollStep / 2);
    m_scrollY = needed ? std::clamp(m_scrollY, 0, total - visible) : 0;
    m_vScroll->setValue(m_scrollY);
    m_viewport.setWidth(std::max(1, spanArea().width()));
}

void TimelineWidget::emitViewportChanged() {
    if (updateIdleRows())
        rebuildRows();
    emit viewportChanged();
}

bool TimelineWidget::updateIdleRows() {
    std::vector<std::pair<RowKind, uint32_t>> idle;
    if (m_trace)
        idle = TimelineRows::idleIn(*m_trace->store,
                                    static_cast<int64_t>(std::floor(m_viewport.visibleStart())),
                                    static_cast<int64_t>(std::ceil(m_viewport.visibleEnd())) + 1);
    if (idle == m_idleRows)
        return false;
    m_idleRows = std::move(idle);
    return true;
}

double TimelineWidget::xOfTime(double t) const {
    return spanLeft() + m_viewport.timeToX(t);
}

double TimelineWidget::timeOfX(double x) const {
    return m_viewport.xToTime(x - spanLeft());
}

double TimelineWidget::rowTop(int row) const {
    return rulerHeight() + m_rows.rows()[row].y - m_scrollY;
}

void TimelineWidget::setVisibleRange(double t0, double t1) {
    m_viewport.setVisibleRange(t0, t1);
    invalidate();
    emitViewportChanged();
}

void TimelineWidget::zoomToRange(int64_t t0, int64_t t1) {
    const double duration = std::max<double>(1, static_cast<double>(t1 - t0));
    setVisibleRange(static_cast<double>(t0) - 0.1 * duration,
                    static_cast<double>(t1) + 0.1 * duration);
}

void TimelineWidget::fitAll() {
    m_viewport.fitAll();
    invalidate();
    emitViewportChanged();
}

// A window of the steps (opening or steady) with a 2% margin; fitGpuActivity() without steps.
void TimelineWidget::fitSteps(bool opening) {
    const model::StepAnalysis* steps = m_trace ? m_trace->steps.get() : nullptr;
    if (!steps || steps->empty()) {
        fitGpuActivity();
        return;
    }
    const model::TimeWindow w = opening ? steps->openingWindow() : steps->steadyWindow();
    const double margin = 0.02 * static_cast<double>(w.t1 - w.t0);
    setVisibleRange(static_cast<double>(w.t0) - margin, static_cast<double>(w.t1) + margin);
}

void TimelineWidget::fitOpeningView() {
    fitSteps(true);
    m_openedView = {m_viewport.visibleStart(), m_viewport.visibleEnd()};
}

void TimelineWidget::fitSteadyState() {
    fitSteps(false);
}

void TimelineWidget::fitGpuActivity() {
    if (!m_trace) {
        fitAll();
        return;
    }
    // The range model::gpuActivity gives, computed with the store off the GUI thread.
    const model::GpuActivity range =
        m_trace->gpuActivity ? *m_trace->gpuActivity : model::gpuActivity(*m_trace->store);
    if (range.empty) {
        fitAll();
        return;
    }
    const double margin = 0.03 * (range.t1 - range.t0);
    setVisibleRange(range.t0 - margin, range.t1 + margin);
}

void TimelineWidget::zoomAt(double x, double factor) {
    m_viewport.zoomAbout(x - spanLeft(), factor);
    invalidate();
    emitViewportChanged();
}

void TimelineWidget::setTimeUnit(TimeUnit unit) {
    m_timeUnit = unit;
    invalidate();
}

void TimelineWidget::setSelection(const model::EventId& event) {
    if (event == m_selection)
        return;
    m_selection = event;
    invalidate();
    emit selectionChanged(m_selection);
}

void TimelineWidget::revealEvent(const model::EventId& event) {
    if (!m_trace || !event.valid())
        return;
    const model::TraceStore& store = *m_trace->store;
    const double start = static_cast<double>(model::eventStart(store, event));
    const double end = static_cast<double>(model::eventEnd(store, event));
    const double duration = std::max(1.0, end - start);
    const double width = duration / m_viewport.nsPerPixel();
    const bool inView = start >= m_viewport.visibleStart() && end <= m_viewport.visibleEnd();
    if (width < 4 || width > 0.8 * m_viewport.width()) {
        // Zoom so the event takes a tenth of the width.
        const double window = std::max(TimelineViewport::kMinDuration, duration * 10);
        const double centre = 0.5 * (start + end);
        m_viewport.setVisibleRange(centre - window / 2, centre + window / 2);
    } else if (!inView) {
        const double window = m_viewport.visibleDuration();
        const double centre = 0.5 * (start + end);
        m_viewport.setVisibleRange(centre - window / 2, centre + window / 2);
    }
    const RowKind kind = event.family == model::EventFamily::Api    ? RowKind::Api
                         : event.family == model::EventFamily::Nvtx ? RowKind::Nvtx
                                                                    : RowKind::Gpu;
    // A row under a closed header (a thread's folded NVTX depths): open it first.
    if (m_rows.rowOfTrack(kind, event.ref.track) < 0 &&
        m_rows.expandTo(store, kind, event.ref.track))
        rebuildRows();
    const int row = m_rows.rowOfTrack(kind, event.ref.track);
    if (row >= 0) {
        const int y = m_rows.rows()[row].y;
        const int visible = height() - rulerHeight();
        if (y < m_scrollY || y + m_rows.rows()[row].height > m_scrollY + visible)
            m_vScroll->setValue(std::max(0, y - visible / 3));
    }
    emitViewportChanged();
    m_selection = {}; // force the signal: the details panel follows
    setSelection(event);
}

void TimelineWidget::setHighlights(HighlightSet highlights) {
    m_highlights = std::move(highlights);
    invalidate();
}

void TimelineWidget::clearHighlights() {
    setHighlights({});
}

const model::SpanTrack* TimelineWidget::trackOf(const TimelineRow& row) const {
    if (!m_trace)
        return nullptr;
    const model::TraceStore& store = *m_trace->store;
    switch (row.kind) {
    case RowKind::Api:
        return &store.apiTracks()[row.index];
    case RowKind::Nvtx:
        return &store.nvtxTracks()[row.index];
    case RowKind::Gpu:
        return &store.gpuTracks()[row.index];
    default:
        return nullptr;
    }
}

model::EventFamily TimelineWidget::familyOf(const TimelineRow& row) const {
    switch (row.kind) {
    case RowKind::Api:
        return model::EventFamily::Api;
    case RowKind::Nvtx:
        return model::EventFamily::Nvtx;
    case RowKind::Gpu:
        return model::EventFamily::Gpu;
    default:
        return model::EventFamily::None;
    }
}

QRectF TimelineWidget::eventRect(const model::EventId& event) const {
    if (!m_trace || !event.valid())
        return {};
    const RowKind kind = event.family == model::EventFamily::Api    ? RowKind::Api
                         : event.family == model::EventFamily::Nvtx ? RowKind::Nvtx
                                                                    : RowKind::Gpu;
    const int row = m_rows.rowOfTrack(kind, event.ref.track);
    if (row < 0)
        return {};
    const model::TraceStore& store = *m_trace->store;
    const double x0 = xOfTime(static_cast<double>(model::eventStart(store, event)));
    const double x1 = xOfTime(static_cast<double>(model::eventEnd(store, event)));
    const double top = rowTop(row);
    return QRectF(x0, top + 1, std::max(1.0, x1 - x0), m_rows.rows()[row].height - 2);
}

model::EventId TimelineWidget::eventAt(const QPoint& pos) const {
    if (!m_trace || pos.x() < m_labelWidth || pos.y() < rulerHeight())
        return {};
    const int row = m_rows.rowAt(pos.y() - rulerHeight() + m_scrollY);
    if (row < 0)
        return {};
    const TimelineRow& r = m_rows.rows()[row];
    const model::SpanTrack* track = trackOf(r);
    if (!track || track->empty())
        return {};
    const double t = timeOfX(pos.x());
    const double tolerance = kHitTolerance * m_viewport.nsPerPixel();
    const auto starts = track->starts();
    const auto it = std::upper_bound(starts.begin(), starts.end(), t, [](double v, int64_t s) {
        return v < static_cast<double>(s);
    });
    const auto after = static_cast<size_t>(it - starts.begin());
    double best = tolerance;
    std::ptrdiff_t hit = -1;
    if (after > 0) {
        const size_t i = after - 1;
        const double end = static_cast<double>(std::max(track->end(i), track->start(i) + 1));
        const double distance = t < end ? 0.0 : t - end;
        if (distance <= best) {
            best = distance;
            hit = static_cast<std::ptrdiff_t>(i);
        }
    }
    if (after < track->size()) {
        const double distance = static_cast<double>(track->start(after)) - t;
        if (distance < best)
            hit = static_cast<std::ptrdiff_t>(after);
    }
    if (hit < 0)
        return {};
    return model::EventId{familyOf(r), {r.index, static_cast<uint32_t>(hit)}};
}

QString TimelineWidget::nameText(model::NameId name) const {
    return m_trace ? qs(m_trace->store->text(name)) : QString();
}

QString TimelineWidget::spanLabel(const model::EventId& event) const {
    if (!m_trace)
        return {};
    if (event.family == model::EventFamily::Gpu)
        return qs(model::gpuOpShortName(*m_trace->store, event.ref));
    return nameText(EventSearch::nameOf(*m_trace->store, event));
}

bool TimelineWidget::anyStallIn(uint32_t apiTrack, size_t first, size_t last) const {
    if (apiTrack >= m_stallCalls.size())
        return false;
    const std::vector<uint32_t>& calls = m_stallCalls[apiTrack];
    const auto it = std::lower_bound(calls.begin(), calls.end(), first);
    return it != calls.end() && *it < last;
}

bool TimelineWidget::hasWait(uint32_t gpuTrack, size_t index) const {
    if (gpuTrack >= m_waits.size())
        return false;
    const std::vector<WaitMark>& marks = m_waits[gpuTrack];
    const auto it = std::lower_bound(marks.begin(), marks.end(), index,
                                     [](const WaitMark& m, size_t i) { return m.index < i; });
    return it != marks.end() && it->index == index;
}

bool TimelineWidget::isStall(uint32_t apiTrack, size_t index) const {
    if (m_trace && m_trace->syncStalls)
        return anyStallIn(apiTrack, index, index + 1);
    const model::NameId name = m_trace->store->apiTracks()[apiTrack].name(index);
    return name < m_syncName.size() && m_syncName[name];
}

QColor TimelineWidget::colorOf(model::EventFamily family, uint32_t track, size_t index) const {
    const model::TraceStore& store = *m_trace->store;
    switch (family) {
    case model::EventFamily::Api: {
        const model::ApiTrack& t = store.apiTracks()[track];
        if (isStall(track, index))
            return m_palette.stall();
        return t.gpuOps(index).empty() ? m_palette.apiCall() : m_palette.launchCall();
    }
    case model::EventFamily::Nvtx: {
        const model::NvtxTrack& t = store.nvtxTracks()[track];
        return m_palette.nvtx(t.color(index), store.text(t.name(index)));
    }
    case model::EventFamily::Gpu: {
        const model::GpuTrack& t = store.gpuTracks()[track];
        switch (t.kind(index)) {
        case model::GpuOpKind::Memcpy:
            return m_palette.memcpy();
        case model::GpuOpKind::Memset:
            return m_palette.memset();
        case model::GpuOpKind::Kernel:
            break;
        }
        const model::NameId name = t.name(index);
        return name < m_nameColor.size() ? QColor(m_nameColor[name]) : m_palette.apiCall();
    }
    case model::EventFamily::None:
        break;
    }
    return m_palette.apiCall();
}

// --- painting -----------------------------------------------------------------------------------

void TimelineWidget::invalidate() {
    m_cacheValid = false;
    update();
}

void TimelineWidget::paintEvent(QPaintEvent*) {
    // The rows, labels and ruler change only with the view's state; the cursor line, the time
    // under the cursor and a range being dragged change with every mouse move. The first are
    // painted into a cached pixmap (at the screen's pixel ratio), the second on top of it.
    const qreal dpr = devicePixelRatioF();
    const QSize pixels = size() * dpr;
    if (!m_cacheValid || m_cache.size() != pixels || m_cache.devicePixelRatio() != dpr) {
        m_cache = QPixmap(pixels);
        m_cache.setDevicePixelRatio(dpr);
        QPainter cache(&m_cache);
        cache.setFont(font());
        paintBase(cache);
        m_cacheValid = true;
    }
    QPainter p(this);
    p.drawPixmap(0, 0, m_cache);
    paintOverlays(p);
}

void TimelineWidget::paintBase(QPainter& p) {
    p.fillRect(rect(), m_palette.background());
    const QRect area = spanArea();

    if (!m_trace) {
        p.setPen(m_palette.dimText());
        p.drawText(rect(), Qt::AlignCenter, tr("No trace loaded"));
        return;
    }

    const std::vector<RulerTick> ticks = TimeRuler::ticks(
        m_viewport, fontMetrics().horizontalAdvance(QStringLiteral("0.0000000 ms")) + 16,
        m_timeUnit);

    // Rows: backgrounds, grid, spans.
    p.save();
    p.setClipRect(QRect(0, area.top(), width(), area.height()));
    const int firstRow = std::max(0, m_rows.rowAt(m_scrollY));
    for (int r = firstRow; r < static_cast<int>(m_rows.rows().size()); ++r) {
        const double top = rowTop(r);
        if (top > height())
            break;
        paintRowBackground(p, m_rows.rows()[r], top, width());
    }
    p.setPen(m_palette.gridLine());
    for (const RulerTick& tick : ticks) {
        if (tick.major)
            p.drawLine(QPointF(area.left() + tick.x, area.top()),
                       QPointF(area.left() + tick.x, area.bottom()));
    }
    paintStepBoundaries(p, area);
    p.setClipRect(area);
    for (int r = firstRow; r < static_cast<int>(m_rows.rows().size()); ++r) {
        const double top = rowTop(r);
        if (top > height())
            break;
        paintRow(p, r, top);
    }
    paintSelection(p);
    p.restore();

    paintLabels(p);
    paintRuler(p, ticks);
}

void TimelineWidget::paintOverlays(QPainter& p) {
    if (!m_trace)
        return;
    const QRect area = spanArea();
    const QFontMetrics fm = fontMetrics();
    p.save();
    p.setClipRect(area);
    if (m_drag == DragMode::Range) {
        const double x0 = xOfTime(std::min(m_rangeStart, m_rangeEnd));
        const double x1 = xOfTime(std::max(m_rangeStart, m_rangeEnd));
        p.fillRect(QRectF(x0, area.top(), x1 - x0, area.height()), m_palette.rangeSelection());
        p.setPen(m_palette.text());
        p.drawText(QRectF(x0, area.top() + 4, std::max(x1 - x0, 120.0), fm.height()),
                   Qt::AlignLeft | Qt::AlignVCenter,
                   TimeFormat::duration(std::abs(m_rangeEnd - m_rangeStart), m_timeUnit));
    }
    if (m_hoverX >= area.left()) {
        QColor line = m_palette.text();
        line.setAlpha(90);
        p.setPen(line);
        p.drawLine(QPointF(m_hoverX, area.top()), QPointF(m_hoverX, area.bottom()));
    }
    p.restore();
    if (m_hoverX >= area.left()) {
        // The time under the cursor, in the ruler.
        p.save();
        p.setClipRect(QRect(area.left(), 0, area.width(), rulerHeight()));
        const QString text = TimeFormat::timestamp(
            timeOfX(m_hoverX), std::max(1.0, m_viewport.nsPerPixel()), m_timeUnit);
        const int w = fm.horizontalAdvance(text) + 8;
        const QRectF box(std::min(m_hoverX + 1, double(area.right() - w)), 1, w, fm.height() + 2);
        p.fillRect(box, palette().color(QPalette::ToolTipBase));
        p.setPen(palette().color(QPalette::ToolTipText));
        p.drawText(box, Qt::AlignCenter, text);
        p.restore();
    }
}

void TimelineWidget::paintRow(QPainter& p, int r, double top) {
    const TimelineRow& row = m_rows.rows()[r];
    if (row.kind == RowKind::SourceHeader) {
        // A rank's GPUs and clock alignment, readable whatever the label column's width.
        const QRect area = spanArea();
        p.setPen(row.warning ? m_palette.stall() : m_palette.dimText());
        p.drawText(QRectF(area.left() + 8, top, area.width() - 16, row.height),
                   Qt::AlignLeft | Qt::AlignVCenter,
                   fontMetrics().elidedText(row.detail, Qt::ElideRight, area.width() - 16));
        return;
    }
    if (row.kind == RowKind::QueueDepth) {
        paintQueueDepth(p, row.index, top, row.height);
        return;
    }
    if (row.kind == RowKind::CpuSamples) {
        paintCpuRow(p, row.index, top, row.height);
        return;
    }
    if (row.kind == RowKind::GpuMetric) {
        if (const model::GpuMetricSeries* series =
                MetricRow::seriesOf(*m_trace->store, row.metricSet(), row.metric()))
            MetricRow::paint(p, m_trace->store->gpuMetrics()[row.metricSet()], *series,
                             m_metricScale[row.metricSet()][row.metric()], spanArea(), top,
                             row.height, m_viewport, m_metricColumns);
        return;
    }
    const model::SpanTrack* track = trackOf(row);
    if (track)
        paintSpanTrack(p, *track, familyOf(row), row.index, top, row.height);
}

void TimelineWidget::paintSpanTrack(QPainter& p, const model::SpanTrack& track,
                                    model::EventFamily family, uint32_t trackIndex, double top,
                                    int height) {
    m_fold.clear();
    SpanFolder::fold(track, m_viewport, m_fold);
    const QRect area = spanArea();
    const double left = area.left();
    const double right = area.right() + 1;
    const QFontMetrics fm = fontMetrics();
    const bool dimOthers = !m_highlights.empty() && m_highlights.hasFamily(family);
    const double y = top + 1;
    const double h = height - 2;
    p.setPen(Qt::NoPen);
    for (const FoldedSpan& item : m_fold) {
        const double x0 = std::max(left + item.x0, left - 2);
        const double x1 = std::min(left + item.x1, right + 2);
        if (x1 <= x0)
            continue;
        QColor fill = colorOf(family, trackIndex, item.representative);
        if (item.folded())
            fill = fill.darker(112);
        const bool highlighted =
            dimOthers && m_highlights.anyIn(family, trackIndex, item.first, item.last);
        if (dimOthers && !highlighted)
            fill = mixed(fill, m_palette.background(), 0.72);
        const QRectF box(x0, y, x1 - x0, h);
        if (item.folded() && item.coverage < 0.9) {
            // Zoomed out over gaps: a faint band for the stretch, and a bar as tall as the share
            // of it the spans cover (a 20%-busy GPU looks 20% busy, not solid).
            p.fillRect(box, m_palette.partlyBusy(fill));
            const double bar = std::max(2.0, h * item.coverage);
            p.fillRect(QRectF(x0, y + h - bar, x1 - x0, bar), fill);
        } else {
            p.fillRect(box, fill);
        }
        // In a session, the part of a collective spent waiting for the other ranks.
        double waiting = 0;
        if (family == model::EventFamily::Gpu && trackIndex < m_waits.size() &&
            !m_waits[trackIndex].empty())
            waiting = paintWaits(p, trackIndex, item.first, item.last, x0, x1, y, h, fill);
        if (highlighted)
            p.fillRect(QRectF(x0, y + h - 3, x1 - x0, 3), m_palette.highlight());
        // Labels on spans wide enough to read; clipped to the visible part of the span.
        const double visibleWidth = std::min(x1, right) - std::max(x0, left);
        if (visibleWidth >= 28 && h >= fm.height() - 2) {
            const model::EventId rep{family,
                                     {trackIndex, static_cast<uint32_t>(item.representative)}};
            const QString name = spanLabel(rep);
            const QString text =
                item.folded() ? QStringLiteral("%1 × %2").arg(item.count()).arg(name) : name;
            const QRectF textBox(std::max(x0, left) + 3, y, visibleWidth - 6, h);
            const QString elided = fm.elidedText(text, Qt::ElideRight, int(textBox.width()));
            // A label must show some of the name, not just a count or an ellipsis.
            const qsizetype shown = elided.size() - (text.size() - name.size());
            if (shown >= 4) {
                // Over a mostly waiting kernel, the text is read against the faded colour.
                p.setPen(m_palette.textOn(waiting > 0.5 * visibleWidth ? m_palette.waiting(fill)
                                                                       : fill));
                p.drawText(textBox, Qt::AlignLeft | Qt::AlignVCenter, elided);
                p.setPen(Qt::NoPen);
            }
        }
    }
}

double TimelineWidget::paintWaits(QPainter& p, uint32_t gpuTrack, size_t first, size_t last,
                                  double x0, double x1, double y, double h, const QColor& fill) {
    const std::vector<WaitMark>& marks = m_waits[gpuTrack];
    const model::GpuTrack& track = m_trace->store->gpuTracks()[gpuTrack];
    auto it = std::lower_bound(marks.begin(), marks.end(), first,
                               [](const WaitMark& m, size_t i) { return m.index < i; });
    if (it == marks.end() || it->index >= last)
        return 0;
    const QColor faded = m_palette.waiting(fill);
    const QBrush hatch(fill, Qt::BDiagPattern);
    double covered = 0;
    // Neighbouring waits (many steps folded into a few pixels) merge into one band.
    double runStart = 0, runEnd = -1;
    const auto flush = [&] {
        if (runEnd > runStart) {
            const QRectF band(runStart, y, runEnd - runStart, h);
            p.fillRect(band, faded);
            p.fillRect(band, hatch);
            covered += runEnd - runStart;
        }
    };
    for (; it != marks.end() && it->index < last; ++it) {
        const int64_t start = track.start(it->index);
        const int64_t end = std::min(it->waitEnd, track.end(it->index));
        if (end <= start)
            continue;
        const double a = std::max(x0, xOfTime(static_cast<double>(start)));
        const double b = std::min(x1, xOfTime(static_cast<double>(end)));
        if (b <= a)
            continue;
        if (a <= runEnd) {
            runEnd = std::max(runEnd, b);
        } else {
            flush();
            runStart = a;
            runEnd = b;
        }
    }
    flush();
    return covered;
}

void TimelineWidget::paintQueueDepth(QPainter& p, uint32_t streamIndex, double top, int height) {
    if (streamIndex >= m_depthProfiles.size() || m_depthProfiles[streamIndex].empty())
        return;
    const QueueDepthProfile& profile = m_depthProfiles[streamIndex];
    const QRect area = spanArea();
    QColor fill = m_palette.queueDepth();
    fill.setAlpha(170);
    const int w = area.width();
    profile.maxPerColumn(m_viewport.visibleStart(), m_viewport.nsPerPixel(), w, m_depthColumns);
    paintColumnArea(p, m_depthColumns, w, area.left(), top + height - 2, height - 6,
                    std::max(1, profile.maxDepth()), fill);
}

void TimelineWidget::paintCpuRow(QPainter& p, uint32_t threadIndex, double top, int height) {
    if (const model::ThreadCpuActivity* t = CpuSampleRow::of(*m_trace->store, threadIndex))
        CpuSampleRow::paint(p, *t, spanArea(), top, height, m_viewport, m_palette);
}

QString TimelineWidget::cpuHoverText(uint32_t threadIndex, int64_t time, int64_t slack) const {
    const model::ThreadCpuActivity* t = CpuSampleRow::of(*m_trace->store, threadIndex);
    return t ? CpuSampleRow::hoverText(*m_trace->store, *t, time, slack, m_timeUnit) : QString();
}

void TimelineWidget::paintArrow(QPainter& p, const QPointF& from, const QPointF& to) {
    QPainterPath path(from);
    const double dy = (to.y() - from.y()) / 2;
    path.cubicTo(from + QPointF(0, dy), to - QPointF(0, dy), to);
    QPen pen(m_palette.highlight(), 1.6);
    p.setPen(pen);
    p.setBrush(Qt::NoBrush);
    p.drawPath(path);
    // Head pointing down into the GPU op.
    QPolygonF head;
    head << to << to + QPointF(-4, -7) << to + QPointF(4, -7);
    p.setBrush(m_palette.highlight());
    p.drawPolygon(head);
    p.setBrush(Qt::NoBrush);
}

void TimelineWidget::paintSelection(QPainter& p) {
    if (!m_selection.valid())
        return;
    const model::TraceStore& store = *m_trace->store;
    std::vector<model::EventId> linked;
    model::EventId launch;
    if (m_selection.family == model::EventFamily::Gpu) {
        const model::EventRef l = store.launchOf(m_selection.ref);
        if (l.valid()) {
            launch = model::EventId::api(l);
            linked.push_back(m_selection);
        }
    } else if (m_selection.family == model::EventFamily::Api) {
        launch = m_selection;
        for (const model::EventRef& op : store.gpuOpsOf(m_selection.ref)) {
            if (linked.size() >= kMaxArrows)
                break;
            linked.push_back(model::EventId::gpu(op));
        }
    }
    const auto outline = [&](const model::EventId& e, double width) {
        const QRectF r = eventRect(e);
        if (r.isEmpty())
            return r;
        p.setPen(QPen(m_palette.highlight(), width));
        p.setBrush(Qt::NoBrush);
        p.drawRect(r.adjusted(-1, -1, 1, 1));
        return r;
    };
    const QRectF launchRect = launch.valid() ? outline(launch, 1.5) : QRectF();
    for (const model::EventId& op : linked) {
        const QRectF opRect = outline(op, 1.5);
        if (!launchRect.isEmpty() && !opRect.isEmpty()) {
            const QPointF from(launchRect.left(), launchRect.bottom());
            const QPointF to(opRect.left(), opRect.top());
            p.setRenderHint(QPainter::Antialiasing, true);
            paintArrow(p, from, to);
            p.setRenderHint(QPainter::Antialiasing, false);
        }
    }
    outline(m_selection, 2.5);
}

void TimelineWidget::paintRowBackground(QPainter& p, const TimelineRow& row, double top,
                                        double width) const {
    if (row.kind == RowKind::SourceHeader)
        p.fillRect(QRectF(0, top, width, row.height), m_palette.sourceHeader());
    else if (row.group % 2 == 1)
        p.fillRect(QRectF(0, top, width, row.height), m_palette.alternateRow());
    if (row.isHeader()) {
        // Ranks are the outermost groups: a stronger line between them.
        p.setPen(row.kind == RowKind::SourceHeader ? m_palette.dimText() : m_palette.gridLine());
        p.drawLine(QPointF(0, top + 0.5), QPointF(width, top + 0.5));
    }
}

void TimelineWidget::paintLabels(QPainter& p) {
    const QRect area = spanArea();
    p.save();
    p.setClipRect(QRect(0, area.top(), m_labelWidth, area.height()));
    p.fillRect(QRect(0, area.top(), m_labelWidth, area.height()), m_palette.labelBackground());
    const QFontMetrics fm = fontMetrics();
    QFont bold = font();
    bold.setBold(true);
    const int firstRow = std::max(0, m_rows.rowAt(m_scrollY));
    for (int r = firstRow; r < static_cast<int>(m_rows.rows().size()); ++r) {
        const double top = rowTop(r);
        if (top > height())
            break;
        const TimelineRow& row = m_rows.rows()[r];
        paintRowBackground(p, row, top, m_labelWidth);
        const int indent = 8 + 12 * row.indent;
        QRectF box(indent, top, m_labelWidth - indent - 6, row.height);
        if (row.isHeader()) {
            // Disclosure triangle.
            const double cx = indent + 4;
            const double cy = top + row.height / 2.0;
            QPolygonF tri;
            if (row.collapsed)
                tri << QPointF(cx - 3, cy - 4) << QPointF(cx + 3, cy) << QPointF(cx - 3, cy + 4);
            else
                tri << QPointF(cx - 4, cy - 2) << QPointF(cx + 4, cy - 2) << QPointF(cx, cy + 3);
            p.setPen(Qt::NoPen);
            p.setBrush(m_palette.dimText());
            p.setRenderHint(QPainter::Antialiasing, true);
            p.drawPolygon(tri);
            p.setRenderHint(QPainter::Antialiasing, false);
            p.setBrush(Qt::NoBrush);
            box.setLeft(box.left() + 14);
            p.setFont(bold);
            p.setPen(m_palette.text());
            p.drawText(box, Qt::AlignLeft | Qt::AlignVCenter,
                       QFontMetrics(bold).elidedText(row.label, Qt::ElideRight, int(box.width())));
            p.setFont(font());
        } else if (row.idle) {
            // No work in the window: a thin row without its label (named on hover).
            p.setPen(m_palette.gridLine());
            p.drawLine(QPointF(indent, top + row.height / 2.0),
                       QPointF(m_labelWidth - 6, top + row.height / 2.0));
        } else {
            QString label = row.label;
            if (row.kind == RowKind::QueueDepth) {
                // The row's scale: its top is the stream's deepest queue.
                p.setPen(m_palette.dimText());
                if (row.index < m_depthProfiles.size())
                    label = tr("%1 · max %2").arg(label).arg(m_depthProfiles[row.index].maxDepth());
            } else if (row.kind == RowKind::GpuMetric) {
                // The scale: 100% of peak, or the series' maximum.
                p.setPen(m_palette.dimText());
                if (const model::GpuMetricSeries* series =
                        MetricRow::seriesOf(*m_trace->store, row.metricSet(), row.metric()))
                    label = MetricRow::label(label, *series,
                                             m_metricScale[row.metricSet()][row.metric()]);
            } else {
                p.setPen(m_palette.text());
            }
            p.drawText(box, Qt::AlignLeft | Qt::AlignVCenter,
                       fm.elidedText(label, Qt::ElideRight, int(box.width())));
        }
    }
    p.setPen(m_palette.gridLine());
    p.drawLine(QPointF(m_labelWidth - 0.5, area.top()), QPointF(m_labelWidth - 0.5, height()));
    p.restore();
}

std::span<const model::Step> TimelineWidget::visibleSteps() const {
    if (!m_trace || !m_trace->steps)
        return {};
    const std::vector<model::Step>& steps = m_trace->steps->steps;
    const double t0 = m_viewport.visibleStart();
    const double t1 = m_viewport.visibleEnd();
    const auto first = std::partition_point(steps.begin(), steps.end(), [&](const model::Step& s) {
        return static_cast<double>(s.end) <= t0;
    });
    const auto last = std::partition_point(first, steps.end(), [&](const model::Step& s) {
        return static_cast<double>(s.start) < t1;
    });
    return std::span<const model::Step>(steps).subspan(static_cast<size_t>(first - steps.begin()),
                                                       static_cast<size_t>(last - first));
}

// A dashed line where each step begins, over every row, while steps are at least a few pixels
// apart (the ruler labels them).
void TimelineWidget::paintStepBoundaries(QPainter& p, const QRect& area) {
    const auto steps = visibleSteps();
    if (steps.empty() || static_cast<double>(steps.size()) * kMinStepSpacing > area.width())
        return;
    QColor color = m_palette.dimText();
    color.setAlpha(110);
    p.setPen(QPen(color, 1, Qt::DashLine));
    for (const model::Step& s : steps) {
        const double x = area.left() + m_viewport.timeToX(static_cast<double>(s.start));
        if (x >= area.left())
            p.drawLine(QPointF(x, area.top()), QPointF(x, area.bottom()));
    }
}

void TimelineWidget::paintRuler(QPainter& p, const std::vector<RulerTick>& ticks) {
    const int h = rulerHeight();
    const QRect area = spanArea();
    p.fillRect(QRect(0, 0, width(), h), m_palette.labelBackground());
    p.setPen(m_palette.gridLine());
    p.drawLine(QPointF(0, h - 0.5), QPointF(width(), h - 0.5));
    const QFontMetrics fm = fontMetrics();
    p.save();
    p.setClipRect(QRect(area.left(), 0, area.width(), h));
    for (const RulerTick& tick : ticks) {
        const double x = area.left() + tick.x;
        p.setPen(tick.major ? m_palette.text() : m_palette.dimText());
        p.drawLine(QPointF(x, h - (tick.major ? 9 : 4)), QPointF(x, h - 1));
        if (tick.major) {
            p.setPen(m_palette.text());
            p.drawText(QPointF(x + 3, fm.ascent() + 3), tick.label);
        }
    }
    // Steps: a mark where each begins, numbered when there is room ("step 12", else "12"), in
    // the program's own word for them ("iter 12" for NVTX ranges named "iter N").
    const auto steps = visibleSteps();
    if (!steps.empty() && static_cast<double>(steps.size()) * kMinStepSpacing <= area.width()) {
        const QString word = m_trace->steps->name.empty()
                                 ? tr("step")
                                 : QString::fromStdString(m_trace->steps->name);
        const double perStep = area.width() / static_cast<double>(steps.size());
        for (size_t k = 0; k < steps.size(); ++k) {
            const model::Step& s = steps[k];
            const double x = area.left() + m_viewport.timeToX(static_cast<double>(s.start));
            QString label = perStep > fm.horizontalAdvance(word + QStringLiteral(" 0000")) + 12
                                ? QStringLiteral("%1 %2").arg(word).arg(s.number)
                                : QString::number(s.number);
            if (s.warmup)
                label += tr(" (warm-up)");
            p.setPen(s.warmup ? m_palette.dimText() : m_palette.highlight());
            p.drawLine(QPointF(x, h - 12), QPointF(x, h - 1));
            // A step that began left of the view is labelled at the edge, if it fits there.
            const double labelX = std::max<double>(x, area.left()) + 3;
            const double nextX =
                k + 1 < steps.size()
                    ? area.left() + m_viewport.timeToX(static_cast<double>(steps[k + 1].start))
                    : area.right();
            if (nextX - labelX > fm.horizontalAdvance(label) + 4)
                p.drawText(QPointF(labelX, h - 3), label);
        }
    }
    p.restore();
    // Corner: the visible window's duration.
    p.setPen(m_palette.dimText());
    p.drawText(QRect(8, 0, m_labelWidth - 12, h), Qt::AlignLeft | Qt::AlignVCenter,
               tr("Window %1").arg(TimeFormat::duration(m_viewport.visibleDuration(), m_timeUnit)));
}

// --- interaction --------------------------------------------------------------------------------

void TimelineWidget::resizeEvent(QResizeEvent* event) {
    if (event->size().height() != event->oldSize().height())
        rebuildRows(); // row heights follow the widget's height
    m_cacheValid = false;
    updateLabelWidth();
    updateScrollBar();
    emitViewportChanged();
}

void TimelineWidget::changeEvent(QEvent* event) {
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::FontChange) {
        m_palette = SpanPalette(palette());
        if (m_trace)
            colourNames(*m_trace->store);
        if (event->type() == QEvent::FontChange)
            rebuildRows();
        invalidate();
    }
    QWidget::changeEvent(event);
}

void TimelineWidget::wheelEvent(QWheelEvent* event) {
    const QPointF pos = event->position();
    const int delta =
        event->angleDelta().y() != 0 ? event->angleDelta().y() : event->angleDelta().x();
    if (delta == 0)
        return;
    const bool scrollRows = (event->modifiers() & Qt::ShiftModifier) || pos.x() < m_labelWidth;
    if (scrollRows) {
        m_vScroll->setValue(m_vScroll->value() - delta * kScrollStep / 120);
    } else {
        zoomAt(pos.x(), std::pow(kWheelZoom, delta / 120.0));
        updateHover(pos.toPoint());
    }
    event->accept();
}

void TimelineWidget::mousePressEvent(QMouseEvent* event) {
    setFocus(Qt::MouseFocusReason);
    m_pressPos = event->position().toPoint();
    m_lastPos = m_pressPos;
    m_dragButton = event->button();
    if (m_pressPos.x() < m_labelWidth && event->button() == Qt::LeftButton) {
        const int row = m_rows.rowAt(m_pressPos.y() - rulerHeight() + m_scrollY);
        if (m_trace && row >= 0 && m_rows.rows()[row].isHeader() &&
            m_pressPos.y() >= rulerHeight()) {
            m_rows.setCollapsed(*m_trace->store, row, !m_rows.rows()[row].collapsed);
            updateScrollBar();
            invalidate();
        }
        m_drag = DragMode::None;
        return;
    }
    const bool range =
        event->button() == Qt::RightButton ||
        (event->button() == Qt::LeftButton && (event->modifiers() & Qt::ShiftModifier));
    if (range) {
        m_drag = DragMode::Range;
        m_rangeStart = m_rangeEnd = timeOfX(m_pressPos.x());
    } else if (event->button() == Qt::LeftButton) {
        m_drag = DragMode::Pending;
    }
}

void TimelineWidget::mouseMoveEvent(QMouseEvent* event) {
    const QPoint pos = event->position().toPoint();
    if (m_drag == DragMode::Pending && (pos - m_pressPos).manhattanLength() >= kDragThreshold) {
        m_drag = DragMode::Pan;
        setCursor(Qt::ClosedHandCursor);
        m_hoverLabel->hide();
    }
    if (m_drag == DragMode::Pan) {
        const QPoint d = pos - m_lastPos;
        m_viewport.panByPixels(-d.x());
        m_vScroll->setValue(m_vScroll->value() - d.y());
        m_lastPos = pos;
        invalidate();
        emitViewportChanged();
        return;
    }
    if (m_drag == DragMode::Range) {
        m_rangeEnd = timeOfX(std::clamp(pos.x(), m_labelWidth, spanArea().right()));
        update();
        return;
    }
    updateHover(pos);
}

void TimelineWidget::mouseReleaseEvent(QMouseEvent* event) {
    const QPoint pos = event->position().toPoint();
    const DragMode mode = m_drag;
    m_drag = DragMode::None;
    unsetCursor();
    if (mode == DragMode::Range) {
        const double x0 = xOfTime(m_rangeStart);
        const double x1 = xOfTime(m_rangeEnd);
        if (std::abs(x1 - x0) >= kDragThreshold)
            setVisibleRange(std::min(m_rangeStart, m_rangeEnd), std::max(m_rangeStart, m_rangeEnd));
        update();
        return;
    }
    if (mode == DragMode::Pending && event->button() == Qt::LeftButton)
        setSelection(eventAt(pos));
}

void TimelineWidget::mouseDoubleClickEvent(QMouseEvent* event) {
    const model::EventId e = eventAt(event->position().toPoint());
    if (!e.valid() || !m_trace)
        return;
    setSelection(e);
    zoomToRange(model::eventStart(*m_trace->store, e), model::eventEnd(*m_trace->store, e));
    emit eventActivated(e);
}

void TimelineWidget::keyPressEvent(QKeyEvent* event) {
    const QPoint cursor = mapFromGlobal(QCursor::pos());
    const double x = rect().contains(cursor) && cursor.x() >= m_labelWidth
                         ? cursor.x()
                         : spanArea().center().x();
    switch (event->key()) {
    case Qt::Key_W:
    case Qt::Key_Plus:
    case Qt::Key_Equal:
        zoomAt(x, kKeyZoom);
        break;
    case Qt::Key_S:
    case Qt::Key_Minus:
        zoomAt(x, 1 / kKeyZoom);
        break;
    case Qt::Key_A:
    case Qt::Key_Left:
        m_viewport.panByPixels(-kKeyPan * m_viewport.width());
        invalidate();
        emitViewportChanged();
        break;
    case Qt::Key_D:
    case Qt::Key_Right:
        m_viewport.panByPixels(kKeyPan * m_viewport.width());
        invalidate();
        emitViewportChanged();
        break;
    case Qt::Key_F:
    case Qt::Key_Home:
        fitAll();
        break;
    case Qt::Key_G:
        fitSteadyState();
        break;
    case Qt::Key_Up:
        m_vScroll->setValue(m_vScroll->value() - kScrollStep);
        break;
    case Qt::Key_Down:
        m_vScroll->setValue(m_vScroll->value() + kScrollStep);
        break;
    case Qt::Key_Escape:
        setSelection({});
        break;
    default:
        QWidget::keyPressEvent(event);
        return;
    }
    event->accept();
}

void TimelineWidget::leaveEvent(QEvent*) {
    m_hoverLabel->hide();
    m_hoverX = -1;
    update();
}

QString TimelineWidget::hoverText(const model::EventId& e, const FoldedSpan& folded) const {
    const model::TraceStore& store = *m_trace->store;
    const int64_t start = model::eventStart(store, e);
    const int64_t end = model::eventEnd(store, e);
    QStringList lines;
    if (folded.count() > 1) {
        const auto dominant =
            EventSearch::dominantName(store, e.family, e.ref.track, folded.first, folded.last);
        lines << tr("%1 spans folded here (zoom in to see each)").arg(folded.count())
              << tr("Mostly %1 (%2% of their time)")
                     .arg(nameText(dominant.name))
                     .arg(dominant.share * 100, 0, 'f', 0)
              << QString() << tr("Nearest:");
    }
    lines << nameText(EventSearch::nameOf(store, e));
    lines << tr("Duration  %1").arg(TimeFormat::duration(double(end - start), m_timeUnit));
    lines << tr("Start     %1").arg(TimeFormat::timestamp(double(start), 1, m_timeUnit));
    if (e.family == model::EventFamily::Gpu) {
        const model::EventRef launch = store.launchOf(e.ref);
        if (launch.valid()) {
            const int64_t launchStart = store.apiTracks()[launch.track].start(launch.index);
            lines << tr("Lag       %1 after its launch call")
                         .arg(TimeFormat::duration(double(start - launchStart), m_timeUnit));
        }
        // A collective that waited for other ranks: the details panel's sentence.
        if (hasWait(e.ref.track, e.ref.index)) {
            if (const QString wait = EventDetails::collectiveWait(*m_trace, e.ref, m_timeUnit);
                !wait.isEmpty())
                lines << wait;
        }
    } else if (e.family == model::EventFamily::Api) {
        if (isStall(e.ref.track, e.ref.index))
            lines << tr("Sync stall: the CPU thread waited here for the GPU");
    }
    return lines.join(QLatin1Char('\n'));
}

void TimelineWidget::updateHover(const QPoint& pos) {
    const QRect area = spanArea();
    const bool inside = m_trace && area.contains(pos);
    const double oldX = m_hoverX;
    m_hoverX = inside ? pos.x() : -1;
    if (oldX != m_hoverX)
        update();
    const model::EventId e = inside ? eventAt(pos) : model::EventId{};
    QString text;
    if (e.valid()) {
        // hoverText below
    } else if (const int row = inside ? m_rows.rowAt(pos.y() - rulerHeight() + m_scrollY) : -1;
               row >= 0 && m_rows.rows()[row].kind == RowKind::QueueDepth &&
               m_rows.rows()[row].index < m_depthProfiles.size()) {
        const QueueDepthProfile& profile = m_depthProfiles[m_rows.rows()[row].index];
        const auto t0 = static_cast<int64_t>(std::floor(timeOfX(pos.x())));
        const auto t1 = static_cast<int64_t>(std::ceil(timeOfX(pos.x() + 1)));
        text = tr("Launch queue depth %1 (the stream's maximum is %2)\n"
                  "Launches the CPU had issued that the GPU had not started yet")
                   .arg(profile.maxIn(t0, std::max(t1, t0 + 1)))
                   .arg(profile.maxDepth());
    } else if (row >= 0 && m_rows.rows()[row].idle) {
        text = tr("%1: no work in this window").arg(m_rows.rows()[row].label);
    } else if (row >= 0 && m_rows.rows()[row].kind == RowKind::GpuMetric) {
        const TimelineRow& metricRow = m_rows.rows()[row];
        if (metricRow.metricSet() < m_trace->store->gpuMetrics().size())
            text = MetricRow::hoverText(m_trace->store->gpuMetrics()[metricRow.metricSet()],
                                        metricRow.metric(), static_cast<int64_t>(timeOfX(pos.x())),
                                        m_timeUnit);
    } else if (row >= 0 && m_rows.rows()[row].kind == RowKind::CpuSamples) {
        text = cpuHoverText(m_rows.rows()[row].index, static_cast<int64_t>(timeOfX(pos.x())),
                            static_cast<int64_t>(std::max(1.0, 4 * m_viewport.nsPerPixel())));
    }
    if (!e.valid() && text.isEmpty()) {
        m_hoverLabel->hide();
        return;
    }
    // The drawn block under the cursor: a span of its own, or many folded together.
    FoldedSpan folded{0, 0, e.ref.index, size_t{e.ref.index} + 1, e.ref.index};
    const int row = m_rows.rowAt(pos.y() - rulerHeight() + m_scrollY);
    if (const model::SpanTrack* track = row >= 0 ? trackOf(m_rows.rows()[row]) : nullptr) {
        m_fold.clear();
        SpanFolder::fold(*track, m_viewport, m_fold);
        for (const FoldedSpan& item : m_fold) {
            if (e.ref.index >= item.first && e.ref.index < item.last) {
                folded = item;
                break;
            }
        }
    }
    m_hoverLabel->setText(e.valid() ? hoverText(e, folded) : text);
    m_hoverLabel->adjustSize();
    QPoint at = pos + QPoint(14, 18);
    if (at.x() + m_hoverLabel->width() > width())
        at.setX(std::max(0, pos.x() - 14 - m_hoverLabel->width()));
    if (at.y() + m_hoverLabel->height() > height())
        at.setY(std::max(0, pos.y() - 10 - m_hoverLabel->height()));
    m_hoverLabel->move(at);
    m_hoverLabel->show();
    m_hoverLabel->raise();
}

} // namespace warpline::views
