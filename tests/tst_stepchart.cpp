// The step-time chart as a user meets it beside the Steps table: on a real PyTorch loop
// (tests/data/corpus/gradscaler-amp.warpline, 30 NVTX steps) one bar a step whose segments are the
// Steps table's cause columns, warm-up marked; a click on a bar zooms the timeline to exactly that
// step and selects nothing; hovering names the step, its duration and each cause's time; the CSV
// it exports is the Steps report's (the window's and warpline-stats'), and its PNG shows its bars.
// With thousands of steps a bar holds several (their mean, said in the caption) and the chart
// draws a bounded number of rects; without steps it says why.

#include "charts/stepchart.h"
#include "mainwindow.h"
#include "spanpalette.h"
#include "timeline/timelineviewport.h"
#include "timeline/timelinewidget.h"
#include "viewstracefixture.h"

#include <QDockWidget>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

using namespace warpline;
using warpline::app::MainWindow;
using warpline::views::StepBarLayout;
using warpline::views::StepChart;
using warpline::views::StepColumn;

namespace {

const QString kTrace = QStringLiteral(WARPLINE_TEST_DATA "/corpus/gradscaler-amp.warpline");

QString causeColumn(model::StepCause cause) {
    return QString::fromLatin1(model::stepCauseTitle(cause)) + QStringLiteral(" (ns)");
}

int64_t intCell(const model::Table& t, size_t row, const QString& column) {
    const int c = t.columnIndex(column.toStdString());
    return c < 0 ? -1 : std::get<int64_t>(t.cell(row, static_cast<size_t>(c)));
}

// A loop of `count` steps of about 1 ms (varying), the first `warmup` of them 20 ms long.
std::shared_ptr<model::StepAnalysis> generatedSteps(size_t count, size_t warmup) {
    auto a = std::make_shared<model::StepAnalysis>();
    a->source = model::StepSource::Repeats;
    int64_t t = 1'000'000;
    for (size_t i = 0; i < count; ++i) {
        model::Step s;
        s.number = static_cast<int64_t>(i);
        s.warmup = i < warmup;
        const int64_t duration =
            s.warmup ? 20'000'000 : 1'000'000 + static_cast<int64_t>(i % 13) * 10'000;
        s.start = t;
        s.end = t + duration;
        s.causes[model::StepCause::Compute] = 600'000 + static_cast<int64_t>(i % 7) * 1000;
        s.causes[model::StepCause::Sync] = static_cast<int64_t>(i % 5) * 20'000;
        s.causes[model::StepCause::Launch] =
            duration - s.causes[model::StepCause::Compute] - s.causes[model::StepCause::Sync];
        t = s.end;
        a->steps.push_back(s);
    }
    a->firstSteady = warmup;
    a->medianDuration = 1'060'000;
    a->traceBegin = 0;
    a->traceEnd = t + 1000;
    return a;
}

} // namespace

class TestStepChart : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

    bool waitLoaded(MainWindow& w) {
        return QTest::qWaitFor(
            [&] {
                return (w.page() == MainWindow::Page::Trace && w.trace() &&
                        !w.trace()->reports.empty()) ||
                       w.page() == MainWindow::Page::Error;
            },
            30000);
    }

    // The window on the trace, its Steps tab in front.
    bool openSteps(MainWindow& w) {
        w.resize(1600, 1000);
        w.show();
        w.showReport(QStringLiteral("steps"));
        w.openTrace(kTrace);
        if (!waitLoaded(w) || w.page() != MainWindow::Page::Trace)
            return false;
        return QTest::qWaitFor([&] { return w.stepChart()->isVisible(); }, 5000);
    }

    // A steady step's bar: its middle, over its bottom segment.
    static QPoint barCentre(const StepChart& chart, const StepColumn& column) {
        const QRectF bottom = column.segments.front().rect.translated(chart.plotArea().topLeft());
        return bottom.center().toPoint();
    }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        qputenv("XDG_CONFIG_HOME", m_dir.filePath("config").toUtf8());
        QCoreApplication::setOrganizationName("WarplineTest");
        QCoreApplication::setApplicationName("tst_stepchart");
    }

    // One bar a step, beside the Steps table, each segment a cause column of its row.
    void barsAreTheStepsTable() {
        MainWindow w;
        QVERIFY(openSteps(w));
        StepChart* chart = w.stepChart();
        auto* dock = w.findChild<QDockWidget*>("dock-steps");
        QVERIFY(dock && dock->isAncestorOf(chart));
        const model::StepAnalysis& steps = *w.trace()->steps;
        QCOMPARE(chart->steps(), &steps);
        const model::Table& table = w.trace()->report("steps")->table;
        QCOMPARE(steps.steps.size(), size_t(30));
        QCOMPARE(table.rowCount(), steps.steps.size() + 2); // then median and p95

        const StepBarLayout& layout = chart->layout();
        QVERIFY(!layout.aggregated());
        QCOMPARE(layout.columns().size(), steps.steps.size());
        const QRectF plot = chart->plotArea();
        QCOMPARE(layout.width(), plot.width());
        QCOMPARE(layout.height(), plot.height());
        const double pxPerNs = plot.height() / layout.nsMax();
        std::vector<model::StepCause> present;
        size_t clipped = 0, warmup = 0;
        for (size_t k = 0; k < layout.columns().size(); ++k) {
            const StepColumn& column = layout.columns()[k];
            QCOMPARE(column.first, k);
            QCOMPARE(column.count, size_t(1));
            QCOMPARE(column.start, steps.steps[k].start);
            QCOMPARE(column.end, steps.steps[k].end);
            QCOMPARE(static_cast<int64_t>(column.duration), intCell(table, k, "Duration (ns)"));
            const int warmCol = table.columnIndex("Warm-up");
            QCOMPARE(column.warmup == 1, std::get<std::string>(table.cell(
                                             k, static_cast<size_t>(warmCol))) == "warm-up");
            warmup += column.warmup;
            clipped += column.clipped ? 1 : 0;
            // Stacked bottom up in cause order, each as tall as its table cell.
            double bottom = plot.bottom();
            for (size_t c = 0; c < model::kStepCauseCount; ++c) {
                const auto cause = static_cast<model::StepCause>(c);
                const int64_t cell = intCell(table, k, causeColumn(cause));
                QCOMPARE(static_cast<int64_t>(column.causes[c]), cell);
                const QRectF r = chart->segmentRect(column, cause);
                if (cell == 0) {
                    QVERIFY(r.isNull());
                    continue;
                }
                if (std::find(present.begin(), present.end(), cause) == present.end())
                    present.push_back(cause);
                if (column.clipped)
                    continue;
                QVERIFY2(std::abs(r.height() - double(cell) * pxPerNs) < 1e-6,
                         qPrintable(QString("step %1 %2: %3 px for %4 ns")
                                        .arg(k)
                                        .arg(causeColumn(cause))
                                        .arg(r.height())
                                        .arg(cell)));
                QVERIFY(std::abs(r.bottom() - bottom) < 1e-6);
                bottom = r.top();
            }
            if (!column.clipped) // the causes add up to the step: the bar is the duration
                QVERIFY(std::abs(plot.bottom() - bottom - column.duration * pxPerNs) < 1e-6);
        }
        std::sort(present.begin(), present.end());
        QCOMPARE(chart->legendCauses(), present);
        QVERIFY(present.size() >= 3);
        // Warm-up marked, and the steady bars set the scale: the long warm-up step is clipped.
        QCOMPARE(warmup, steps.warmupSteps());
        QVERIFY(warmup >= 1);
        QVERIFY(chart->caption().contains(QString("%1 warm-up").arg(warmup)));
        QVERIFY(clipped <= warmup);
        QVERIFY(!chart->caption().contains("mean of"));
    }

    // A click on a bar zooms the timeline to exactly that step and selects nothing.
    void clickZoomsToTheStep() {
        MainWindow w;
        QVERIFY(openSteps(w));
        StepChart* chart = w.stepChart();
        const model::StepAnalysis& steps = *w.trace()->steps;
        const size_t k = steps.firstSteady + 5;
        const StepColumn& column = chart->layout().columns()[k];
        const model::EventId before = w.timeline()->selection();
        QSignalSpy clicked(chart, &StepChart::stepRangeClicked);
        QTest::mouseClick(chart, Qt::LeftButton, {}, barCentre(*chart, column));
        QCOMPARE(clicked.size(), 1);
        const views::TimelineViewport& vp = w.timeline()->viewport();
        QCOMPARE(vp.visibleStart(), double(steps.steps[k].start));
        QCOMPARE(vp.visibleEnd(), double(steps.steps[k].end));
        QCOMPARE(w.timeline()->selection(), before);
        QCOMPARE(w.timeline()->highlights().size(), size_t(0));
        // Above the bar, still in its slot: the same step. Outside the plot: nothing.
        const QPoint above(barCentre(*chart, column).x(), int(chart->plotArea().top()) + 2);
        QCOMPARE(chart->columnAt(above), int(k));
        QTest::mouseClick(chart, Qt::LeftButton, {}, QPoint(2, 2));
        QCOMPARE(clicked.size(), 1);
    }

    // Hovering a bar: its step number, duration and each cause's time.
    void hoverNamesTheStep() {
        MainWindow w;
        QVERIFY(openSteps(w));
        StepChart* chart = w.stepChart();
        const model::StepAnalysis& steps = *w.trace()->steps;
        const size_t k = steps.firstSteady + 2;
        const model::Step& step = steps.steps[k];
        QTest::mouseMove(chart, barCentre(*chart, chart->layout().columns()[k]));
        QTRY_COMPARE(chart->hoveredColumn(), int(k));
        const QString tip = chart->toolTipFor(int(k));
        QVERIFY2(tip.startsWith(QString("Step %1\n").arg(step.number)), qPrintable(tip));
        QVERIFY2(tip.contains("Duration: " + views::TimeFormat::duration(double(step.duration()))),
                 qPrintable(tip));
        for (const model::StepCause cause : chart->legendCauses())
            QVERIFY2(tip.contains(QString("%1: %2").arg(
                         QString::fromLatin1(model::stepCauseTitle(cause)),
                         views::TimeFormat::duration(double(step.causes[cause])))),
                     qPrintable(tip));
        QVERIFY(chart->toolTipFor(0).startsWith(
            QString("Step %1 (warm-up)\n").arg(steps.steps[0].number)));
    }

    // The chart's CSV is the Steps report: the window's export and warpline-stats --report steps.
    void csvIsTheStepsReport() {
        MainWindow w;
        QVERIFY(openSteps(w));
        const QString chartCsv = m_dir.filePath("chart.csv");
        const QString tableCsv = m_dir.filePath("table.csv");
        QString error;
        QVERIFY2(w.stepChart()->exportCsv(chartCsv, &error), qPrintable(error));
        QVERIFY2(w.exportReport("steps", tableCsv, model::TableFormat::Csv, &error),
                 qPrintable(error));
        QFile a(chartCsv), b(tableCsv);
        QVERIFY(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
        const QByteArray csv = a.readAll();
        QCOMPARE(csv, b.readAll());
        QVERIFY(csv.startsWith("Step,Start (ns),Duration (ns)"));
        QCOMPARE(csv.count('\n'), 1 + 30 + 2);
#ifdef WARPLINE_STATS
        QProcess stats;
        stats.start(WARPLINE_STATS, {kTrace, "--report", "steps", "--format", "csv"});
        QVERIFY(stats.waitForFinished(60000));
        QCOMPARE(stats.exitCode(), 0);
        QCOMPARE(csv, stats.readAllStandardOutput());
#endif
    }

    // The PNG is the chart as drawn: a steady bar's bottom segment in its cause's colour.
    void pngShowsTheBars() {
        MainWindow w;
        QVERIFY(openSteps(w));
        StepChart* chart = w.stepChart();
        const QString path = m_dir.filePath("chart.png");
        QString error;
        QVERIFY2(chart->savePng(path, &error), qPrintable(error));
        QImage image(path);
        QVERIFY(!image.isNull());
        const double dpr = chart->devicePixelRatioF();
        QCOMPARE(image.size(), (QSizeF(chart->size()) * dpr).toSize());
        const StepColumn& column = chart->layout().columns()[w.trace()->steps->firstSteady + 1];
        const QPoint at = barCentre(*chart, column);
        const views::SpanPalette palette(chart->palette());
        QCOMPARE(image.pixelColor((QPointF(at) * dpr).toPoint()).rgb(),
                 palette.stepCause(column.segments.front().cause).rgb());
        QVERIFY(!QFile::exists(m_dir.filePath("missing/dir/chart.png")));
        QVERIFY(!chart->savePng(m_dir.filePath("missing/dir/chart.png"), &error));
        QVERIFY(!error.isEmpty());
    }

    // Thousands of steps: a column holds several, as their mean, never more than kMaxColumns
    // columns nor kStepCauseCount rects a column.
    void manyStepsShareColumns_data() {
        QTest::addColumn<int>("count");
        QTest::addColumn<double>("width");
        QTest::addColumn<bool>("aggregated");
        QTest::newRow("30 steps, 600 px") << 30 << 600.0 << false;
        QTest::newRow("300 steps, 600 px: 2 px bars") << 300 << 600.0 << false;
        QTest::newRow("301 steps, 600 px") << 301 << 600.0 << true;
        QTest::newRow("5000 steps, 700 px") << 5000 << 700.0 << true;
        QTest::newRow("100000 steps, 4000 px") << 100000 << 4000.0 << true;
    }
    void manyStepsShareColumns() {
        QFETCH(int, count);
        QFETCH(double, width);
        QFETCH(bool, aggregated);
        const auto analysis = generatedSteps(static_cast<size_t>(count), 3);
        const StepBarLayout layout(analysis->steps, width, 200);
        QCOMPARE(layout.aggregated(), aggregated);
        QVERIFY(layout.columns().size() <= width / StepBarLayout::kMinColumnPx);
        QVERIFY(layout.columns().size() <= StepBarLayout::kMaxColumns);
        QVERIFY(layout.segmentCount() <= layout.columns().size() * model::kStepCauseCount);
        size_t next = 0;
        for (const StepColumn& c : layout.columns()) {
            QCOMPARE(c.first, next); // every step in one column, in order
            QVERIFY(c.count >= 1 && c.count <= layout.stepsPerColumn());
            next += c.count;
            std::array<double, model::kStepCauseCount> sum{};
            double duration = 0;
            for (size_t i = c.first; i < c.first + c.count; ++i) {
                for (size_t k = 0; k < model::kStepCauseCount; ++k)
                    sum[k] += double(analysis->steps[i].causes.time[k]);
                duration += double(analysis->steps[i].duration());
            }
            for (size_t k = 0; k < model::kStepCauseCount; ++k)
                QVERIFY(std::abs(c.causes[k] - sum[k] / double(c.count)) < 1e-6);
            QVERIFY(std::abs(c.duration - duration / double(c.count)) < 1e-6);
            QCOMPARE(c.start, analysis->steps[c.first].start);
            QCOMPARE(c.end, analysis->steps[c.first + c.count - 1].end);
            QVERIFY(c.x >= 0 && c.x + c.width <= width + 1e-9 && c.width > 0);
        }
        QCOMPARE(next, size_t(count));
        // The 20 ms warm-up steps do not set the scale: 15% over the tallest steady column.
        QVERIFY(layout.nsMax() < 1.3e6);
        QVERIFY(layout.columns().front().clipped);
        QCOMPARE(layout.columnAt(0), 0);
        QCOMPARE(layout.columnAt(width - 0.5), int(layout.columns().size()) - 1);
        QCOMPARE(layout.columnAt(width), -1);
        QCOMPARE(layout.columnOfStep(size_t(count) - 1), int(layout.columns().size()) - 1);
    }

    // The widget with thousands of steps: the caption says a bar is a mean, a click zooms to all
    // of its steps.
    void manyStepsInTheWidget() {
        const auto analysis = generatedSteps(5000, 3);
        StepChart chart;
        chart.resize(800, 300);
        chart.show();
        chart.setSteps(nullptr, analysis);
        const StepBarLayout& layout = chart.layout();
        QVERIFY(layout.aggregated());
        QVERIFY(chart.caption().contains(
            QString("each bar the mean of %1 steps").arg(layout.stepsPerColumn())));
        QVERIFY(layout.segmentCount() <= 3 * layout.columns().size());
        QSignalSpy clicked(&chart, &StepChart::stepRangeClicked);
        const StepColumn& c = layout.columns()[layout.columns().size() / 2];
        QTest::mouseClick(&chart, Qt::LeftButton, {}, barCentre(chart, c));
        QCOMPARE(clicked.size(), 1);
        QCOMPARE(clicked[0][0].toLongLong(), analysis->steps[c.first].start);
        QCOMPARE(clicked[0][1].toLongLong(), analysis->steps[c.first + c.count - 1].end);
        QVERIFY(chart.toolTipFor(int(layout.columns().size() / 2))
                    .contains(QString("the mean of %1 steps").arg(c.count)));
        // Its paint goes through: the grab is the widget's size.
        QCOMPARE(chart.grab().size(), (QSizeF(chart.size()) * chart.devicePixelRatioF()).toSize());
        QString error;
        QVERIFY(!chart.exportCsv(m_dir.filePath("none.csv"), &error)); // no store: nothing to write
    }

    // A trace without steps: the chart says why, in the words of the steps report.
    void noStepsSaysWhy() {
        const QString fixture = m_dir.filePath("fixture.warpline");
        viewsfixture::writeTrace(fixture);
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        w.openTrace(fixture);
        QVERIFY(waitLoaded(w));
        QVERIFY(w.trace()->steps && w.trace()->steps->empty());
        QVERIFY2(w.stepChart()->caption().startsWith("No training steps: "),
                 qPrintable(w.stepChart()->caption()));
        QVERIFY(w.stepChart()->layout().columns().empty());
        QString error;
        QVERIFY(!w.stepChart()->exportCsv(m_dir.filePath("empty.csv"), &error));
        QVERIFY(error.contains("no steps"));
    }
};

QTEST_MAIN(TestStepChart)
#include "tst_stepchart.moc"
