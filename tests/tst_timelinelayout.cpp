// The timeline's pure layout: time <-> x mapping under zoom, wheel zoom about the cursor, span
// folding (level of detail) and its cost bound, ruler ticks, time formatting and the queue-depth
// range maximum. No window needed.

#include "queuedepthprofile.h"
#include "spanfolder.h"
#include "spantrack.h"
#include "timeformat.h"
#include "timelineviewport.h"
#include "timeruler.h"

#include <QtTest>
#include <random>

using namespace warpline;
using namespace warpline::views;

namespace {

// A SpanTrack filled directly (the loader is the only other writer of its columns).
class TestTrack : public model::SpanTrack {
public:
    void add(int64_t start, int64_t end) {
        m_start.push_back(start);
        m_end.push_back(end);
    }
    void reserve(size_t n) {
        m_start.reserve(n);
        m_end.reserve(n);
    }
};

size_t totalCount(const std::vector<FoldedSpan>& items) {
    size_t n = 0;
    for (const FoldedSpan& i : items)
        n += i.count();
    return n;
}

} // namespace

class TestTimelineLayout : public QObject {
    Q_OBJECT

private slots:
    void roundTripUnderZoom_data() {
        QTest::addColumn<double>("factor");
        QTest::addColumn<double>("anchorX");
        QTest::addColumn<double>("x");
        QTest::newRow("fitted") << 1.0 << 500.0 << 123.25;
        QTest::newRow("zoom 10x at left") << 10.0 << 0.0 << 999.0;
        QTest::newRow("zoom 1e4x in the middle") << 1e4 << 640.0 << 17.5;
        QTest::newRow("zoom 1e7x at right") << 1e7 << 1279.0 << 640.0;
        QTest::newRow("zoom out past fit") << 0.01 << 300.0 << 300.0;
    }
    void roundTripUnderZoom() {
        QFETCH(double, factor);
        QFETCH(double, anchorX);
        QFETCH(double, x);
        // A 10 s trace far from zero, as a long recording is.
        TimelineViewport vp(5'000'000'000, 15'000'000'000, 1280);
        vp.zoomAbout(anchorX, factor);
        const double t = vp.xToTime(x);
        QVERIFY(qAbs(vp.timeToX(t) - x) < 1e-6);
        const double t2 = vp.visibleStart() + 0.37 * vp.visibleDuration();
        QVERIFY(qAbs(vp.xToTime(vp.timeToX(t2)) - t2) <= 1e-6 * qMax(1.0, vp.nsPerPixel()));
        QVERIFY(vp.visibleDuration() >= TimelineViewport::kMinDuration);
        QVERIFY(vp.visibleStart() >= vp.fittedStart() - 1e-6);
        QVERIFY(vp.visibleEnd() <= vp.fittedEnd() + 1e-6);
    }

    void wheelZoomKeepsTimeUnderCursor_data() {
        QTest::addColumn<double>("cursorX");
        QTest::addColumn<double>("factor");
        QTest::addColumn<int>("steps");
        QTest::newRow("in at left edge") << 0.0 << 1.25 << 20;
        QTest::newRow("in at 1/3") << 400.0 << 1.25 << 60;
        QTest::newRow("in at right edge") << 1199.0 << 2.0 << 30;
        QTest::newRow("in then out") << 800.0 << 0.8 << 10;
    }
    void wheelZoomKeepsTimeUnderCursor() {
        QFETCH(double, cursorX);
        QFETCH(double, factor);
        QFETCH(int, steps);
        TimelineViewport vp(0, 2'000'000'000, 1200);
        if (factor < 1)
            vp.setVisibleRange(900'000'000, 900'100'000); // zoomed in first, so out has room
        const double before = vp.xToTime(cursorX);
        for (int i = 0; i < steps; ++i) {
            vp.zoomAbout(cursorX, factor);
            QVERIFY2(qAbs(vp.xToTime(cursorX) - before) <= 1e-3 + 1e-9 * qAbs(before),
                     qPrintable(QString("step %1: %2 vs %3")
                                    .arg(i)
                                    .arg(vp.xToTime(cursorX), 0, 'f', 3)
                                    .arg(before, 0, 'f', 3)));
        }
    }

    void zoomClampsAtMinimumDuration() {
        TimelineViewport vp(0, 1'000'000, 1000);
        for (int i = 0; i < 200; ++i)
            vp.zoomAbout(500, 2.0);
        QCOMPARE(vp.visibleDuration(), TimelineViewport::kMinDuration);
        for (int i = 0; i < 200; ++i)
            vp.zoomAbout(500, 0.5);
        QVERIFY(vp.isFitted());
    }

    void panStaysInsideTheTrace() {
        TimelineViewport vp(0, 1'000'000, 1000);
        vp.setVisibleRange(400'000, 500'000);
        vp.panByPixels(-1e9);
        QCOMPARE(vp.visibleStart(), vp.fittedStart());
        QCOMPARE(vp.visibleDuration(), 100'000.0);
        vp.panByPixels(1e9);
        QCOMPARE(vp.visibleEnd(), vp.fittedEnd());
    }

    void millionSpansInOnePixelFoldToOneBlock_data() {
        QTest::addColumn<int>("count");
        QTest::addColumn<double>("pixelsWide");
        QTest::newRow("1e6 in 1 px") << 1'000'000 << 1.0;
        QTest::newRow("1e6 in 0.1 px") << 1'000'000 << 0.1;
        QTest::newRow("1e5 in 2 px") << 100'000 << 2.0;
        QTest::newRow("2 in 1 px") << 2 << 1.0;
    }
    void millionSpansInOnePixelFoldToOneBlock() {
        QFETCH(int, count);
        QFETCH(double, pixelsWide);
        TestTrack track;
        track.reserve(count);
        // Spans of 1 ns every 2 ns, right after a wide span and followed by another.
        track.add(-5'000'000, -1'000'000);
        const int64_t base = 1'000'000'000;
        for (int i = 0; i < count; ++i)
            track.add(base + 2 * int64_t{i}, base + 2 * int64_t{i} + 1);
        const int64_t extent = 2 * int64_t{count};
        // The viewport: 1000 px; the dense run covers `pixelsWide` of them.
        const double nsPerPixel = static_cast<double>(extent) / pixelsWide;
        TimelineViewport vp(-10'000'000, 10'000'000'000, 1000);
        vp.setVisibleRange(static_cast<double>(base) - 400 * nsPerPixel,
                           static_cast<double>(base) + 600 * nsPerPixel);
        std::vector<FoldedSpan> out;
        const size_t searches = SpanFolder::fold(track, vp, out);
        QVERIFY(!out.empty());
        // The wide span before the run is out of view unless the run is tiny; find the block.
        const auto block =
            std::find_if(out.begin(), out.end(), [](const FoldedSpan& f) { return f.first >= 1; });
        QVERIFY(block != out.end());
        QCOMPARE(block->count(), static_cast<size_t>(count));
        QCOMPARE(block->first, size_t{1});
        QVERIFY(block->x1 - block->x0 >= 1.0);
        QVERIFY(block->x1 - block->x0 <= 4.0);
        // O(pixels * log n): a handful of binary searches, not a walk over a million spans.
        QVERIFY2(searches <= 8, qPrintable(QString::number(searches)));
    }

    void foldCostIsBoundByPixels() {
        // A million narrow spans spread over the whole view: the walk makes at most a few
        // searches per pixel, whatever the span count.
        TestTrack track;
        const int count = 1'000'000;
        track.reserve(count);
        std::mt19937 rng(7);
        int64_t t = 0;
        for (int i = 0; i < count; ++i) {
            t += 1 + static_cast<int64_t>(rng() % 40);
            const int64_t d = 1 + static_cast<int64_t>(rng() % 20);
            track.add(t, t + d);
            t += d;
        }
        TimelineViewport vp(0, t, 1500);
        std::vector<FoldedSpan> out;
        const size_t searches = SpanFolder::fold(track, vp, out);
        QCOMPARE(totalCount(out), static_cast<size_t>(count));
        QVERIFY2(searches <= 3 * 1500, qPrintable(QString::number(searches)));
        QVERIFY(out.size() <= 1500);
        // Items are left to right and do not overlap.
        for (size_t i = 1; i < out.size(); ++i) {
            QVERIFY(out[i].first == out[i - 1].last);
            QVERIFY(out[i].x0 >= out[i - 1].x0);
        }
    }

    void wideSpansAreNotFolded() {
        TestTrack track;
        for (int i = 0; i < 10; ++i)
            track.add(i * 100, i * 100 + 50);
        TimelineViewport vp(0, 1000, 1000);
        vp.setVisibleRange(0, 1000);
        std::vector<FoldedSpan> out;
        SpanFolder::fold(track, vp, out);
        QCOMPARE(out.size(), size_t{10});
        for (size_t i = 0; i < out.size(); ++i) {
            QVERIFY(!out[i].folded());
            QCOMPARE(out[i].first, i);
            QCOMPARE(out[i].x1 - out[i].x0, 50.0);
        }
    }

    void oneNanosecondKernelGetsAPixel_data() {
        QTest::addColumn<double>("window");
        QTest::addColumn<double>("where"); // fraction of the window
        QTest::newRow("10 s window") << 1e10 << 0.5;
        QTest::newRow("1 ms window, left edge") << 1e6 << 0.0;
        QTest::newRow("1 us window, right edge") << 1e3 << 0.999;
        QTest::newRow("deepest zoom") << TimelineViewport::kMinDuration << 0.25;
    }
    void oneNanosecondKernelGetsAPixel() {
        QFETCH(double, window);
        QFETCH(double, where);
        const int64_t kernel = 20'000'000'000 + static_cast<int64_t>(where * window);
        TestTrack track;
        track.add(kernel, kernel + 1);
        TimelineViewport vp(0, 40'000'000'000, 1600);
        vp.setVisibleRange(20'000'000'000, 20'000'000'000 + window);
        std::vector<FoldedSpan> out;
        SpanFolder::fold(track, vp, out);
        QCOMPARE(out.size(), size_t{1});
        QVERIFY(out[0].x1 - out[0].x0 >= 1.0);
        QVERIFY(out[0].x0 >= -0.5 && out[0].x0 < 1600);
    }

    void spanAcrossTheWholeViewIsFound() {
        TestTrack track;
        track.add(-1'000'000, 5'000'000);
        TimelineViewport vp(-1'000'000, 5'000'000, 800);
        vp.setVisibleRange(1000, 1100);
        std::vector<FoldedSpan> out;
        SpanFolder::fold(track, vp, out);
        QCOMPARE(out.size(), size_t{1});
        QVERIFY(out[0].x0 < 0 && out[0].x1 > 800);
    }

    void rulerTicks_data() {
        QTest::addColumn<double>("t0");
        QTest::addColumn<double>("t1");
        QTest::addColumn<QString>("unit");
        QTest::newRow("2 s") << 0.0 << 2e9 << "s";
        QTest::newRow("3 ms") << 0.0 << 3e6 << "ms";
        QTest::newRow("500 ns deep in a long trace") << 3.5e9 << 3.5e9 + 500 << "s";
        QTest::newRow("40 us") << 1e3 << 41e3 << "µs";
    }
    void rulerTicks() {
        QFETCH(double, t0);
        QFETCH(double, t1);
        QFETCH(QString, unit);
        TimelineViewport vp(0, 10'000'000'000, 1200);
        vp.setVisibleRange(t0, t1);
        const auto ticks = TimeRuler::ticks(vp, 100);
        QStringList labels;
        double lastMajor = -1e9;
        for (const RulerTick& tick : ticks) {
            QVERIFY(tick.x >= -0.5 && tick.x <= 1200.5);
            if (!tick.major)
                continue;
            QVERIFY2(tick.x - lastMajor >= 99.9, "labels closer than asked");
            lastMajor = tick.x;
            QVERIFY(tick.label.endsWith(" " + unit));
            labels << tick.label;
        }
        QVERIFY2(labels.size() >= 3, qPrintable(labels.join(", ")));
        QCOMPARE(QSet<QString>(labels.begin(), labels.end()).size(), labels.size());
    }

    void durations_data() {
        QTest::addColumn<double>("ns");
        QTest::addColumn<QString>("text");
        QTest::newRow("ns") << 812.0 << "812 ns";
        QTest::newRow("us") << 1234.0 << "1.23 µs";
        QTest::newRow("ms") << 45'600'000.0 << "45.6 ms";
        QTest::newRow("s") << 2.5e9 << "2.50 s";
        QTest::newRow("fraction of ns") << 0.5 << "0.500 ns";
    }
    void durations() {
        QFETCH(double, ns);
        QFETCH(QString, text);
        QCOMPARE(TimeFormat::duration(ns), text);
    }

    void queueDepthRangeMaximum() {
        std::vector<model::DepthStep> steps;
        std::mt19937 rng(3);
        int64_t t = 100;
        for (int i = 0; i < 5000; ++i) {
            t += 1 + static_cast<int64_t>(rng() % 50);
            steps.push_back({t, static_cast<int32_t>(rng() % 100)});
        }
        steps.push_back({t + 10, 0});
        const QueueDepthProfile profile(steps);
        const auto brute = [&](int64_t a, int64_t b) {
            int32_t best = 0;
            for (size_t i = 0; i < steps.size(); ++i) {
                const int64_t from = steps[i].time;
                const int64_t to = i + 1 < steps.size() ? steps[i + 1].time : INT64_MAX;
                if (from < b && to > a)
                    best = std::max(best, steps[i].depth);
            }
            return best;
        };
        for (int q = 0; q < 2000; ++q) {
            const int64_t a = static_cast<int64_t>(rng() % (t + 200));
            const int64_t b = a + 1 + static_cast<int64_t>(rng() % 3000);
            QCOMPARE(profile.maxIn(a, b), brute(a, b));
        }
        QCOMPARE(profile.maxIn(0, 100), 0);
        // Per pixel column, walking left to right, gives the same answers.
        std::vector<int32_t> columns;
        const double t0 = 50.5;
        const double width = static_cast<double>(t) / 700;
        profile.maxPerColumn(t0, width, 800, columns);
        QCOMPARE(columns.size(), size_t{800});
        for (int c = 0; c < 800; ++c) {
            const auto a = static_cast<int64_t>(std::floor(t0 + c * width));
            const auto b = static_cast<int64_t>(std::ceil(t0 + (c + 1) * width));
            QCOMPARE(columns[size_t(c)], brute(a, std::max(b, a + 1)));
        }
    }
};

QTEST_GUILESS_MAIN(TestTimelineLayout)
#include "tst_timelinelayout.moc"
