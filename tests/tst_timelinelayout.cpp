// The timeline's pure layout: time <-> x mapping under zoom, wheel zoom about the cursor, span
// folding (level of detail) and its cost bound, ruler ticks, time formatting, the queue-depth
// range maximum, and the rows of a session (one trace per rank, grouped by rank) next to those of
// one trace. No window needed.

#include "details/sourcetext.h"
#include "rankjobgen.h"
#include "spantrack.h"
#include "testdata.h"
#include "timeformat.h"
#include "timeline/queuedepthprofile.h"
#include "timeline/spanfolder.h"
#include "timeline/timelinerows.h"
#include "timeline/timelineviewport.h"
#include "timeline/timeruler.h"
#include "traceloader.h"
#include "tracesession.h"

#include <QDir>
#include <QTemporaryDir>
#include <QtTest>
#include <memory>
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

// Rows as "<indent>|<kind>|<label>" lines, to compare layouts and print them on failure.
QStringList describe(const TimelineRows& rows, int indentShift = 0) {
    QStringList out;
    for (const TimelineRow& r : rows.rows())
        out << QStringLiteral("%1|%2|%3").arg(r.indent + indentShift).arg(int(r.kind)).arg(r.label);
    return out;
}

size_t totalCount(const std::vector<FoldedSpan>& items) {
    size_t n = 0;
    for (const FoldedSpan& i : items)
        n += i.count();
    return n;
}

} // namespace

class TestTimelineLayout : public QObject {
    Q_OBJECT

    // A generated 4-rank job on two hosts (ranks 0, 1 on node0; 2, 3 on node1), rank 2 slow.
    QTemporaryDir m_dir;
    std::vector<std::string> m_rankFiles;
    std::unique_ptr<model::TraceStore> m_session;

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        bench::RankJobSpec spec;
        spec.ranks = 4;
        spec.hosts = 2;
        spec.steps = 3;
        spec.kernelsPerStep = 4;
        spec.slowRank = 2;
        m_rankFiles = bench::writeRankJob(m_dir.path().toStdString(), spec);
        QCOMPARE(m_rankFiles.size(), size_t{4});
        // Given out of order: the session orders its sources by rank.
        m_session = std::make_unique<model::TraceStore>(model::TraceSession::open(
            {m_rankFiles[2], m_rankFiles[0], m_rankFiles[3], m_rankFiles[1]}));
        QCOMPARE(m_session->sources().size(), size_t{4});
    }

    void sessionRowsAreGroupedByRank() {
        const model::TraceStore& store = *m_session;
        TimelineRows rows;
        rows.build(store);
        const QString layout = describe(rows).join(QLatin1Char('\n'));
        // Each rank: its header, then (one level in) its process with its thread, then its GPU
        // with its streams; ranks 0..3 in order, nothing outside them.
        int rank = -1;
        QStringList outerKinds; // the kinds one level under the current rank header
        const auto checkRank = [&] {
            if (rank >= 0)
                QCOMPARE(outerKinds, (QStringList{"process", "gpu"}));
        };
        for (const TimelineRow& r : rows.rows()) {
            if (r.kind == RowKind::SourceHeader) {
                checkRank();
                QCOMPARE(r.indent, 0);
                QCOMPARE(int(r.index), rank + 1);
                rank = int(r.index);
                outerKinds.clear();
                continue;
            }
            QVERIFY2(rank >= 0, qPrintable(layout));
            QVERIFY2(r.indent >= 1, qPrintable(layout));
            if (r.kind == RowKind::ProcessHeader) {
                QCOMPARE(r.indent, 1);
                QCOMPARE(store.processes()[r.index].source, uint32_t(rank));
                outerKinds << "process";
            } else if (r.kind == RowKind::DeviceHeader) {
                QCOMPARE(r.indent, 1);
                const model::DeviceInfo& device = store.devices()[r.index];
                QCOMPARE(device.source, uint32_t(rank));
                // Labelled with the id the program used: its local rank (two GPUs per host).
                QVERIFY2(r.label.startsWith(QStringLiteral("GPU %1 · ").arg(rank % 2)),
                         qPrintable(r.label));
                outerKinds << "gpu";
            } else if (r.kind == RowKind::Gpu) {
                const model::GpuTrack& track = store.gpuTracks()[r.index];
                const model::DeviceInfo* device = store.device(track.deviceId());
                QVERIFY(device);
                QVERIFY2(device->source == uint32_t(rank),
                         qPrintable(QStringLiteral("track %1 on device %2 under rank %3:\n%4")
                                        .arg(r.index)
                                        .arg(track.deviceId())
                                        .arg(rank)
                                        .arg(layout)));
            } else if (r.kind == RowKind::ThreadHeader) {
                QCOMPARE(SourceText::ofThread(store, r.index), uint32_t(rank));
            } else if (r.kind == RowKind::Api) {
                QCOMPARE(SourceText::ofThread(store, store.apiTracks()[r.index].threadIndex()),
                         uint32_t(rank));
            } else if (r.kind == RowKind::Nvtx) {
                QCOMPARE(SourceText::ofThread(store, store.nvtxTracks()[r.index].threadIndex()),
                         uint32_t(rank));
            }
        }
        checkRank();
        QCOMPARE(rank, 3);
    }

    void rankHeadersSayRankHostGpuAndClock() {
        const model::TraceStore& store = *m_session;
        TimelineRows rows;
        rows.build(store);
        std::vector<TimelineRow> headers;
        for (const TimelineRow& r : rows.rows()) {
            if (r.kind == RowKind::SourceHeader)
                headers.push_back(r);
        }
        QCOMPARE(headers.size(), size_t{4});
        for (int r = 0; r < 4; ++r) {
            const TimelineRow& h = headers[r];
            const model::TraceSource& source = store.sources()[r];
            QCOMPARE(h.label, QStringLiteral("Rank %1 · node%2").arg(r).arg(r / 2));
            QVERIFY2(h.detail.startsWith(QStringLiteral("GPU %1 ").arg(r % 2)),
                     qPrintable(h.detail));
            QVERIFY(!h.warning);
            const QString offset =
                (source.clockOffset < 0 ? QStringLiteral("−") : QStringLiteral("+")) +
                TimeFormat::timestamp(double(std::abs(source.clockOffset)), 1000);
            switch (r) {
            case 0: // the reference
                QCOMPARE(source.alignment, model::ClockAlignment::Reference);
                QVERIFY2(h.detail.endsWith("reference clock"), qPrintable(h.detail));
                break;
            case 1: // node0, as the reference: the host's clock
                QCOMPARE(source.alignment, model::ClockAlignment::SharedClock);
                QVERIFY2(h.detail.endsWith(QStringLiteral("clock %1 (shared clock)").arg(offset)),
                         qPrintable(h.detail));
                break;
            default: // node1: aligned at the first all-reduce
                QCOMPARE(source.alignment, model::ClockAlignment::SyncPoint);
                QVERIFY2(h.detail.contains(offset), qPrintable(h.detail + " / " + offset));
                QVERIFY2(h.detail.endsWith("(aligned at the first collective)"),
                         qPrintable(h.detail));
                break;
            }
            // The whole header as the window shows it (label, then the detail across the row).
            QCOMPARE(SourceText::summary(store, r), h.label + QStringLiteral(" · ") + h.detail);
        }
        // Offsets differ from rank to rank (each file has its own t = 0): they are shown, not 0.
        QVERIFY(store.sources()[1].clockOffset != 0);
    }

    void clockTexts_data() {
        QTest::addColumn<int>("alignment");
        QTest::addColumn<qint64>("offset");
        QTest::addColumn<QString>("text");
        QTest::newRow("reference")
            << int(model::ClockAlignment::Reference) << qint64(0) << "reference clock";
        QTest::newRow("shared") << int(model::ClockAlignment::SharedClock) << qint64(1'234'000)
                                << "clock +1.234 ms (shared clock)";
        QTest::newRow("sync point, negative")
            << int(model::ClockAlignment::SyncPoint) << qint64(-56'000)
            << "clock −56 µs (aligned at the first collective)";
        QTest::newRow("wall clock")
            << int(model::ClockAlignment::WallClock) << qint64(2'000'000'000)
            << "clock +2.000000 s (wall clock, approximate)";
        QTest::newRow("unaligned") << int(model::ClockAlignment::Unaligned) << qint64(0)
                                   << "clock not aligned: times as recorded";
    }
    void clockTexts() {
        QFETCH(int, alignment);
        QFETCH(qint64, offset);
        QFETCH(QString, text);
        model::TraceSource source;
        source.alignment = static_cast<model::ClockAlignment>(alignment);
        source.clockOffset = offset;
        QCOMPARE(SourceText::clock(source), text);
        QCOMPARE(SourceText::isUnaligned(source),
                 source.alignment == model::ClockAlignment::Unaligned);
    }

    void collapsingARankHidesItsRows() {
        const model::TraceStore& store = *m_session;
        TimelineRows rows;
        rows.build(store);
        const int header = rows.rowOfTrack(RowKind::SourceHeader, 1);
        QVERIFY(header >= 0);
        const size_t before = rows.rows().size();
        rows.setCollapsed(store, header, true);
        QVERIFY(rows.rows()[header].collapsed);
        QCOMPARE(rows.rows()[header + 1].kind, RowKind::SourceHeader);
        QCOMPARE(rows.rows()[header + 1].index, uint32_t{2});
        QVERIFY(rows.rows().size() < before);
        // Rank 1's GPU rows are gone; rank 2's are still there.
        for (const TimelineRow& r : rows.rows()) {
            if (r.kind == RowKind::DeviceHeader)
                QVERIFY(store.devices()[r.index].source != 1);
        }
        rows.setCollapsed(store, header, false);
        QCOMPARE(rows.rows().size(), before);
    }

    void aRankInASessionHasTheRowsOfItsOwnTrace_data() {
        QTest::addColumn<int>("rank");
        for (int r = 0; r < 4; ++r)
            QTest::newRow(qPrintable(QStringLiteral("rank %1").arg(r))) << r;
    }
    void aRankInASessionHasTheRowsOfItsOwnTrace() {
        QFETCH(int, rank);
        const model::TraceStore single = model::TraceLoader::load(m_rankFiles[rank]);
        TimelineRows alone;
        alone.build(single);
        TimelineRows session;
        session.build(*m_session);
        const int header = session.rowOfTrack(RowKind::SourceHeader, uint32_t(rank));
        QVERIFY(header >= 0);
        QStringList inSession;
        for (size_t r = header + 1; r < session.rows().size(); ++r) {
            const TimelineRow& row = session.rows()[r];
            if (row.kind == RowKind::SourceHeader)
                break;
            inSession
                << QStringLiteral("%1|%2|%3").arg(row.indent).arg(int(row.kind)).arg(row.label);
        }
        // The same rows, one level deeper.
        QCOMPARE(inSession, describe(alone, 1));
    }

    // A trace recorded with --gpu-metrics (tests/data/gelu-metrics.warpline): a "GPU metrics"
    // header under the GPU, one counter row per metric, folding with its header.
    void gpuMetricRowsFoldUnderTheirGpu() {
        const QString file = QDir(QStringLiteral(WARPLINE_TEST_DATA))
                                 .filePath(QStringLiteral("gelu-metrics.warpline"));
        WARPLINE_REQUIRE_DATA(file);
        const model::TraceStore store = model::TraceLoader::load(file.toStdString());
        QCOMPARE(store.gpuMetrics().size(), size_t(1));
        TimelineRows rows;
        rows.build(store);
        const int header = rows.rowOfTrack(RowKind::MetricsHeader, 0);
        QVERIFY(header > rows.rowOfTrack(RowKind::DeviceHeader, 0));
        QCOMPARE(rows.rows()[header].label, QStringLiteral("GPU metrics · every 100 us"));
        QStringList labels;
        for (const TimelineRow& r : rows.rows())
            if (r.kind == RowKind::GpuMetric) {
                QCOMPARE(r.metricSet(), 0u);
                labels << r.label;
            }
        QCOMPARE(labels.size(), 9);
        QCOMPARE(labels.first(), QStringLiteral("SMs Active"));
        QVERIFY(labels.contains(QStringLiteral("DRAM Read Bandwidth")));
        const size_t before = rows.rows().size();
        rows.setCollapsed(store, header, true);
        QCOMPARE(rows.rows().size(), before - 9);
        rows.setCollapsed(store, header, false);
        QCOMPARE(rows.rows().size(), before);
    }

    void aSingleTraceKeepsItsLayout() {
        // One file: no rank header, the process first, then the GPU, labelled with its own id.
        const model::TraceStore single = model::TraceLoader::load(m_rankFiles[3]);
        QVERIFY(!single.isSession());
        TimelineRows rows;
        rows.build(single);
        const QStringList expected = {
            "0|0|python3 (pid 41291)",
            "1|1|python3 (tid 41291)",
            "2|2|CUDA API",
            "2|3|NVTX",
            "0|4|GPU 1 · NVIDIA H100 80GB HBM3",
            "1|5|Stream 7",
            "1|5|Stream 23",
        };
        QCOMPARE(describe(rows), expected);
    }

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

    // Zoomed out, a folded block says how busy it is: 1 ns spans every 5 ns cover 20% of their
    // stretch, whether the block is summed exactly (a few spans) or sampled (thousands).
    void foldedBlocksKnowTheirCoverage_data() {
        QTest::addColumn<int>("count");
        QTest::addColumn<double>("nsPerPixel");
        QTest::newRow("few spans, summed") << 8 << 10.0;
        QTest::newRow("many spans, sampled") << 100'000 << 200.0;
    }
    void foldedBlocksKnowTheirCoverage() {
        QFETCH(int, count);
        QFETCH(double, nsPerPixel);
        TestTrack track;
        track.reserve(count);
        for (int i = 0; i < count; ++i)
            track.add(5 * int64_t{i}, 5 * int64_t{i} + 1);
        TimelineViewport vp(0, 1'000'000'000, 1000);
        vp.setVisibleRange(0, 1000 * nsPerPixel);
        std::vector<FoldedSpan> out;
        SpanFolder::fold(track, vp, out);
        size_t folded = 0;
        for (const FoldedSpan& f : out) {
            if (!f.folded())
                continue;
            ++folded;
            // The block's extent ends on a span: (n - 1) gaps of 4 ns and n spans of 1 ns.
            const double n = static_cast<double>(f.count());
            QVERIFY2(std::abs(f.coverage - n / (5 * n - 4)) < 1e-9,
                     qPrintable(QString("%1 spans: %2").arg(f.count()).arg(f.coverage)));
        }
        QVERIFY(folded > 0);
        // A single span covers all of itself.
        TestTrack one;
        one.add(0, 10);
        out.clear();
        SpanFolder::fold(one, vp, out);
        QCOMPARE(out.size(), size_t{1});
        QCOMPARE(out[0].coverage, 1.0);
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

    // Steps far apart, and steps sharing times (several launches in one ns, across the blocks
    // the profile searches by).
    void queueDepthRangeMaximum_data() {
        QTest::addColumn<bool>("ties");
        QTest::newRow("apart") << false;
        QTest::newRow("ties") << true;
    }
    void queueDepthRangeMaximum() {
        QFETCH(bool, ties);
        std::vector<model::DepthStep> steps;
        std::mt19937 rng(3);
        int64_t t = 100;
        for (int i = 0; i < 5000; ++i) {
            t += ties ? static_cast<int64_t>(rng() % 2) : 1 + static_cast<int64_t>(rng() % 50);
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
