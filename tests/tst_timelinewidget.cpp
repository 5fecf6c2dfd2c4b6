// The timeline widget and the details panel on a trace: clicking a kernel shows its name and its
// launch; clicking a launch links its kernel; wheel and keys zoom and pan as documented; a range
// drag zooms to the range; kernel highlights mark exactly that kernel's instances. In a session
// (one trace per rank), NCCL kernels are painted in the communication colours and the details say
// which rank an event belongs to.
// Runs on a generated trace (viewstracefixture.h), a generated rank job (rankjobgen.h) and, where
// present, on recorded traces from tests/data.

#include "communication.h"
#include "details/detailspanel.h"
#include "details/sourcetext.h"
#include "find/eventsearch.h"
#include "rankjobgen.h"
#include "spanpalette.h"
#include "testdata.h"
#include "timeline/timelinewidget.h"
#include "trace/traceanalyzer.h"
#include "traceloader.h"
#include "traceopener.h"
#include "tracesession.h"
#include "viewstracefixture.h"

#include <QDir>
#include <QLabel>
#include <QTemporaryDir>
#include <QtTest>
#include <map>

using namespace warpline;
using namespace warpline::views;
using warpline::model::EventFamily;
using warpline::model::EventId;

namespace {

std::shared_ptr<const LoadedTrace> load(const QString& path) {
    auto store =
        std::make_shared<const model::TraceStore>(model::TraceLoader::load(path.toStdString()));
    return TraceAnalyzer::analyze(store);
}

// A generated job of 4 ranks on 2 hosts, rank 1 slowed, written into `dir`, opened as one
// session and analysed.
std::shared_ptr<const LoadedTrace> rankJob(const QTemporaryDir& dir, int steps) {
    bench::RankJobSpec spec;
    spec.ranks = 4;
    spec.hosts = 2;
    spec.steps = steps;
    spec.kernelsPerStep = 4;
    spec.slowRank = 1;
    const auto files = bench::writeRankJob(dir.path().toStdString(), spec);
    return TraceAnalyzer::analyze(
        std::make_shared<const model::TraceStore>(model::TraceSession::open(files)));
}

} // namespace

class TestTimelineWidget : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_fixture;
    std::shared_ptr<const LoadedTrace> m_trace;

    // A shown widget with a details panel following its selection.
    struct Harness {
        TimelineWidget timeline;
        DetailsPanel details;
        explicit Harness(std::shared_ptr<const LoadedTrace> trace) {
            timeline.resize(1400, 700);
            timeline.setTrace(trace);
            details.setTrace(trace);
            QObject::connect(&timeline, &TimelineWidget::selectionChanged, &details,
                             &DetailsPanel::showEvent);
            timeline.show();
            QVERIFY(QTest::qWaitForWindowExposed(&timeline));
        }
    };

    EventId kernel(int i) const {
        // Fixture kernels are all on stream 7: one GPU track, index = launch number.
        const model::TraceStore& store = *m_trace->store;
        for (uint32_t t = 0; t < store.gpuTracks().size(); ++t) {
            if (store.streams()[store.gpuTracks()[t].streamIndex()].streamId == 7)
                return EventId::gpu({t, static_cast<uint32_t>(i)});
        }
        return {};
    }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_fixture = m_dir.filePath("fixture.warpline");
        viewsfixture::writeTrace(m_fixture);
        m_trace = load(m_fixture);
        QVERIFY(m_trace);
        QCOMPARE(m_trace->store->kernelCount(), size_t{200});
    }

    void rowsShowThreadStreamAndDevice() {
        TimelineRows rows;
        rows.build(*m_trace->store);
        QStringList labels;
        for (const TimelineRow& r : rows.rows())
            labels << r.label;
        QVERIFY2(labels.contains("main (tid 100)"), qPrintable(labels.join(" | ")));
        QVERIFY2(labels.contains("Stream 13 (copy stream)"), qPrintable(labels.join(" | ")));
        QVERIFY2(labels.contains("GPU 0 · Fixture GPU"), qPrintable(labels.join(" | ")));
        QVERIFY(labels.contains("CUDA API"));
        QVERIFY(labels.contains("NVTX"));
    }

    void clickingAKernelShowsItsNameAndLaunch() {
        Harness h(m_trace);
        const EventId k = kernel(10);
        QVERIFY(k.valid());
        const model::TraceStore& store = *m_trace->store;
        h.timeline.zoomToRange(store.gpuTracks()[k.ref.track].start(k.ref.index),
                               store.gpuTracks()[k.ref.track].end(k.ref.index));
        const QRectF r = h.timeline.eventRect(k);
        QVERIFY(!r.isEmpty());
        QVERIFY(r.width() > 100);
        QTest::mouseClick(&h.timeline, Qt::LeftButton, {}, r.center().toPoint());
        QCOMPARE(h.timeline.selection(), k);
        QCOMPARE(h.details.value("Name"), QString("gemm_kernel(float*, float*, int)"));
        QVERIFY2(h.details.value("Launched by").startsWith("cudaLaunchKernel on main (tid 100)"),
                 qPrintable(h.details.value("Launched by")));
        QCOMPARE(h.details.value("Grid"), QString("256 × 1 × 1"));
        QCOMPARE(h.details.value("Registers/thread"), QString("40"));
        // Lag = kernel start - launch start.
        const int64_t lag =
            viewsfixture::kernelStart(10) -
            (viewsfixture::Fixture::kFirstLaunch + 10 * viewsfixture::Fixture::kLaunchPeriod);
        QCOMPARE(h.details.value("Launch lag"), TimeFormat::timestamp(double(lag), 1));
        QVERIFY(h.details.value("Stream").startsWith("Stream 7"));
    }

    void clickingALaunchLinksItsKernel() {
        Harness h(m_trace);
        const model::TraceStore& store = *m_trace->store;
        const model::EventRef launch = store.launchOf(kernel(3).ref);
        QVERIFY(launch.valid());
        const EventId call = EventId::api(launch);
        h.timeline.zoomToRange(store.apiTracks()[launch.track].start(launch.index),
                               viewsfixture::kernelStart(3) + 3000);
        const QRectF r = h.timeline.eventRect(call);
        QVERIFY(r.width() > 20);
        QTest::mouseClick(&h.timeline, Qt::LeftButton, {}, r.center().toPoint());
        QCOMPARE(h.timeline.selection(), call);
        QCOMPARE(h.details.value("Name"), QString("cudaLaunchKernel"));
        QCOMPARE(h.details.value("Launched"), QString("relu_kernel(float*, int)"));
        // The arrow is drawn from the launch to the kernel: both rectangles are on screen.
        QVERIFY(h.timeline.rect().intersects(h.timeline.eventRect(kernel(3)).toRect()));
        QImage image = h.timeline.grab().toImage();
        QVERIFY(!image.isNull());
    }

    void hoveringShowsNameDurationAndStart() {
        Harness h(m_trace);
        const EventId k = kernel(42);
        const model::TraceStore& store = *m_trace->store;
        h.timeline.zoomToRange(store.gpuTracks()[k.ref.track].start(k.ref.index),
                               store.gpuTracks()[k.ref.track].end(k.ref.index));
        const QPoint at = h.timeline.eventRect(k).center().toPoint();
        QMouseEvent move(QEvent::MouseMove, QPointF(at), h.timeline.mapToGlobal(QPointF(at)),
                         Qt::NoButton, Qt::NoButton, Qt::NoModifier);
        QApplication::sendEvent(&h.timeline, &move);
        QLabel* tip = h.timeline.findChild<QLabel*>();
        QVERIFY(tip);
        QVERIFY(tip->isVisible());
        QCOMPARE(tip->textFormat(), Qt::PlainText);
        const QString text = tip->text();
        QVERIFY2(text.contains("gemm_kernel(float*, float*, int)"), qPrintable(text));
        QVERIFY2(text.contains("Duration  3.00 µs"), qPrintable(text));
        QVERIFY2(text.contains("Start"), qPrintable(text));
        QVERIFY2(text.contains("after its launch call"), qPrintable(text));

        // Zoomed out, the kernels fold: the tooltip counts them and names the dominant one.
        h.timeline.resize(420, 700); // a narrow window: 3 us kernels are under a pixel wide
        h.timeline.fitAll();
        const QRectF r = h.timeline.eventRect(kernel(100));
        QVERIFY(r.width() < 2);
        const QPoint over = QPoint(int(r.left()), int(r.center().y()));
        QMouseEvent move2(QEvent::MouseMove, QPointF(over), h.timeline.mapToGlobal(QPointF(over)),
                          Qt::NoButton, Qt::NoButton, Qt::NoModifier);
        QApplication::sendEvent(&h.timeline, &move2);
        QVERIFY(tip->isVisible());
        QVERIFY2(tip->text().contains("spans folded here"), qPrintable(tip->text()));
        QVERIFY2(tip->text().contains("Mostly "), qPrintable(tip->text()));
        const auto dominant =
            EventSearch::dominantName(store, EventFamily::Gpu, k.ref.track, 0, 200);
        QCOMPARE(dominant.share, 0.5); // gemm and relu alternate, 3 us each
        const auto sampled =
            EventSearch::dominantName(store, EventFamily::Gpu, k.ref.track, 0, 200, 10);
        QVERIFY(sampled.name != model::kNoName);
    }

    // PyTorch's kernel names run to hundreds of characters ("void
    // at::native::vectorized_elementwise_ kernel<4, at::native::...>(int, ...)"): elided at a
    // span's width, the full name shows only "void at::native::vec...", the same for every
    // element-wise kernel.
    void kernelLabelsAreBaseNames() {
        const QString path = QStringLiteral(WARPLINE_TEST_DATA "/torch-gpt-train.warpline");
        WARPLINE_REQUIRE_DATA(path);
        const auto trace = load(path);
        QVERIFY(trace);
        Harness h(trace);
        const model::TraceStore& store = *trace->store;
        EventId elementwise, copy;
        for (uint32_t t = 0; t < store.gpuTracks().size(); ++t) {
            const model::GpuTrack& track = store.gpuTracks()[t];
            for (uint32_t i = 0; i < track.size(); ++i) {
                const std::string& name = store.text(track.name(i));
                if (!elementwise.valid() &&
                    name.rfind("void at::native::vectorized_elementwise_kernel<", 0) == 0)
                    elementwise = EventId::gpu({t, i});
                if (!copy.valid() && track.kind(i) == model::GpuOpKind::Memcpy)
                    copy = EventId::gpu({t, i});
            }
        }
        QVERIFY(elementwise.valid() && copy.valid());
        // The base name, and PyTorch's op and type (the first such kernel converts to bf16).
        QCOMPARE(h.timeline.spanLabel(elementwise),
                 QString("vectorized_elementwise_kernel[bfloat16_copy, float]"));
        const QString copyName = QString::fromStdString(
            store.text(store.gpuTracks()[copy.ref.track].name(copy.ref.index)));
        QCOMPARE(h.timeline.spanLabel(copy), copyName);

        // Hovering still names the kernel in full.
        const model::GpuTrack& track = store.gpuTracks()[elementwise.ref.track];
        h.timeline.zoomToRange(track.start(elementwise.ref.index),
                               track.end(elementwise.ref.index));
        const QPoint at = h.timeline.eventRect(elementwise).center().toPoint();
        QMouseEvent move(QEvent::MouseMove, QPointF(at), h.timeline.mapToGlobal(QPointF(at)),
                         Qt::NoButton, Qt::NoButton, Qt::NoModifier);
        QApplication::sendEvent(&h.timeline, &move);
        QLabel* tip = h.timeline.findChild<QLabel*>();
        QVERIFY(tip && tip->isVisible());
        const QString full = QString::fromStdString(store.text(track.name(elementwise.ref.index)));
        QVERIFY2(tip->text().contains(full), qPrintable(tip->text()));
    }

    void clickingEmptySpaceClearsTheSelection() {
        Harness h(m_trace);
        h.timeline.setSelection(kernel(0));
        // Far right of the ruler-less area below the last row.
        QTest::mouseClick(&h.timeline, Qt::LeftButton, {},
                          QPoint(h.timeline.width() - 30, h.timeline.height() - 5));
        QVERIFY(!h.timeline.selection().valid());
        QCOMPARE(h.details.value("Name"), QString());
    }

    void wheelZoomKeepsTheTimeUnderTheCursor_data() {
        QTest::addColumn<int>("x");
        QTest::addColumn<int>("delta");
        QTest::newRow("in, left") << 300 << 120;
        QTest::newRow("in, right") << 1300 << 360;
        QTest::newRow("out, middle") << 800 << -120;
    }
    void wheelZoomKeepsTheTimeUnderTheCursor() {
        QFETCH(int, x);
        QFETCH(int, delta);
        Harness h(m_trace);
        if (delta < 0)
            h.timeline.setVisibleRange(300'000, 400'000);
        const double before = h.timeline.timeOfX(x);
        const double duration = h.timeline.viewport().visibleDuration();
        const QPoint pos(x, 300);
        QWheelEvent wheel(pos, h.timeline.mapToGlobal(pos), QPoint(), QPoint(0, delta),
                          Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
        QApplication::sendEvent(&h.timeline, &wheel);
        const double after = h.timeline.timeOfX(x);
        QVERIFY2(qAbs(after - before) < 1e-3 * h.timeline.viewport().nsPerPixel() + 1e-6,
                 qPrintable(QString("%1 -> %2").arg(before).arg(after)));
        if (delta > 0)
            QVERIFY(h.timeline.viewport().visibleDuration() < duration);
        else
            QVERIFY(h.timeline.viewport().visibleDuration() > duration);
    }

    void keysZoomPanAndFit() {
        Harness h(m_trace);
        h.timeline.setFocus();
        const double full = h.timeline.viewport().visibleDuration();
        QTest::keyClick(&h.timeline, Qt::Key_W);
        QTest::keyClick(&h.timeline, Qt::Key_W);
        const double zoomed = h.timeline.viewport().visibleDuration();
        QVERIFY(zoomed < full * 0.7);
        const double start = h.timeline.viewport().visibleStart();
        QTest::keyClick(&h.timeline, Qt::Key_D);
        QVERIFY(h.timeline.viewport().visibleStart() > start);
        QTest::keyClick(&h.timeline, Qt::Key_A);
        QTest::keyClick(&h.timeline, Qt::Key_A);
        QVERIFY(h.timeline.viewport().visibleStart() < start);
        QTest::keyClick(&h.timeline, Qt::Key_S);
        QVERIFY(h.timeline.viewport().visibleDuration() > zoomed);
        QTest::keyClick(&h.timeline, Qt::Key_F);
        QVERIFY(h.timeline.viewport().isFitted());
        QTest::keyClick(&h.timeline, Qt::Key_G);
        QVERIFY(h.timeline.viewport().visibleStart() <= viewsfixture::kernelStart(0));
        QVERIFY(h.timeline.viewport().visibleEnd() >= viewsfixture::kernelStart(199) + 3000);
    }

    void rightDragZoomsToTheRange() {
        Harness h(m_trace);
        const int x0 = h.timeline.labelWidth() + 200;
        const int x1 = h.timeline.labelWidth() + 500;
        const double t0 = h.timeline.timeOfX(x0);
        const double t1 = h.timeline.timeOfX(x1);
        QTest::mousePress(&h.timeline, Qt::RightButton, {}, QPoint(x0, 300));
        QMouseEvent move(QEvent::MouseMove, QPointF(x1, 300),
                         h.timeline.mapToGlobal(QPointF(x1, 300)), Qt::NoButton, Qt::RightButton,
                         Qt::NoModifier);
        QApplication::sendEvent(&h.timeline, &move);
        QTest::mouseRelease(&h.timeline, Qt::RightButton, {}, QPoint(x1, 300));
        QVERIFY(qAbs(h.timeline.viewport().visibleStart() - t0) < 1);
        QVERIFY(qAbs(h.timeline.viewport().visibleEnd() - t1) < 1);
    }

    void kernelHighlightsMarkItsInstances() {
        const model::TraceStore& store = *m_trace->store;
        const model::NameId gemm = store.strings().find("gemm_kernel(float*, float*, int)");
        QVERIFY(gemm != model::kNoName);
        const auto instances = EventSearch::gpuOpsNamed(store, gemm);
        QCOMPARE(instances.size(), size_t{100});
        for (size_t i = 1; i < instances.size(); ++i)
            QVERIFY(model::eventStart(store, instances[i - 1]) <
                    model::eventStart(store, instances[i]));
        const HighlightSet set(instances, "gemm");
        QVERIFY(set.contains(kernel(0)));
        QVERIFY(!set.contains(kernel(1)));
        QCOMPARE(EventSearch::gpuOpsMatching(store, "RELU").size(), size_t{100});
        QCOMPARE(EventSearch::gpuOpsMatching(store, "_kernel").size(), size_t{200});
        QCOMPARE(EventSearch::gpuOpsMatching(store, "no such kernel").size(), size_t{0});
    }

    // The find bar's search covers every event: kernel, API call and NVTX range names, and API
    // calls by their Python stack's functions and lines ("--find GradScaler" found nothing on a
    // trace whose stacks hold it). Matches come by start, whatever their family.
    void findSearchesEveryEvent() {
        const QString file = QStringLiteral(WARPLINE_TEST_DATA "/torch-gpt-stacks.warpline");
        WARPLINE_REQUIRE_DATA(file);
        const model::TraceStore store = model::TraceLoader::load(file.toStdString());
        bool sorted = true;
        const auto count = [&](const QString& text) {
            std::map<EventFamily, size_t> n;
            const auto events = EventSearch::eventsMatching(store, text);
            for (size_t i = 0; i < events.size(); ++i) {
                ++n[events[i].family];
                sorted = sorted && (i == 0 || model::eventStart(store, events[i - 1]) <=
                                                  model::eventStart(store, events[i]));
            }
            return n;
        };
        QVERIFY(count("step")[EventFamily::Nvtx] >= 20);             // NVTX "step N"
        QVERIFY(count("cudaLaunchKernel")[EventFamily::Api] > 1000); // API names
        QVERIFY(count("nvjet")[EventFamily::Gpu] > 100);             // kernel names
        // A Python line (800 kernels are launched from torch_gpt.py:57) and its function.
        auto line = count("torch_gpt.py:57");
        QVERIFY(line[EventFamily::Api] >= 800);
        QCOMPARE(line[EventFamily::Gpu], size_t{0});
        QVERIFY(count("block.FORWARD")[EventFamily::Api] > line[EventFamily::Api]);
        QVERIFY(sorted);
        QVERIFY(EventSearch::eventsMatching(store, "no such event anywhere").empty());
        QVERIFY(EventSearch::eventsMatching(store, "  ").empty());
    }

    void revealZoomsToANarrowEvent() {
        Harness h(m_trace);
        h.timeline.revealEvent(kernel(150));
        QCOMPARE(h.timeline.selection(), kernel(150));
        const QRectF r = h.timeline.eventRect(kernel(150));
        QVERIFY(r.width() >= 4);
        QVERIFY(r.left() >= h.timeline.labelWidth() && r.right() <= h.timeline.width());
    }

    void syncStallIsMarkedAndExplained() {
        Harness h(m_trace);
        QVERIFY(m_trace->syncStalls);
        QVERIFY(!m_trace->syncStalls->stalls.empty());
        const model::SyncStall& stall = m_trace->syncStalls->stalls.front();
        QVERIFY(stall.call.valid());
        h.timeline.revealEvent(EventId::api(stall.call));
        QCOMPARE(h.details.value("Name"), QString("cudaDeviceSynchronize"));
        QVERIFY2(h.details.value("Sync stall").startsWith("the CPU waited"),
                 qPrintable(h.details.value("Sync stall")));
    }

    void communicationKernelsHaveTheirOwnColours_data() {
        QTest::addColumn<bool>("dark");
        QTest::newRow("light") << false;
        QTest::newRow("dark") << true;
    }
    void communicationKernelsHaveTheirOwnColours() {
        QFETCH(bool, dark);
        QPalette palette;
        palette.setColor(QPalette::Base, dark ? QColor(30, 30, 34) : QColor(250, 250, 250));
        palette.setColor(QPalette::Text, dark ? QColor(230, 230, 230) : QColor(20, 20, 20));
        const SpanPalette colours(palette);
        const QStringList communication = {
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", "ncclDevKernel_AllGather_RING_LL",
            "rcclGenericKernel<1, false>", "one_shot_all_reduce_kernel"};
        // Compute kernels: many names, so every hue and saturation of the hash is met.
        std::vector<QColor> compute;
        for (int i = 0; i < 2000; ++i)
            compute.push_back(colours.kernel(QStringLiteral("kernel_%1").arg(i).toStdString()));
        for (const QString& name : communication) {
            const std::string n = name.toStdString();
            QVERIFY(model::isCommunicationKernel(n));
            const QColor c = colours.kernel(n);
            QCOMPARE(c, colours.communication(n));
            // One family: magentas, more saturated than any compute kernel.
            QVERIFY2(c.hsvHue() >= 295 && c.hsvHue() <= 325, qPrintable(name));
            for (const QColor& k : compute) {
                QVERIFY(k.hsvSaturation() < c.hsvSaturation());
                QVERIFY(k.hsvHue() <= 285);
            }
        }
    }

    void aSessionPaintsAllReducesAsCommunicationAndNamesTheRank() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const auto trace = rankJob(dir, 3);
        QVERIFY(trace);
        const auto& store = trace->store;
        Harness h(trace);
        // Rank 2's first all-reduce (node1, GPU 0).
        EventId allReduce;
        for (uint32_t t = 0; t < store->gpuTracks().size() && !allReduce.valid(); ++t) {
            const model::GpuTrack& track = store->gpuTracks()[t];
            const model::DeviceInfo* device = store->device(track.deviceId());
            QVERIFY(device);
            if (device->source != 2)
                continue;
            for (uint32_t i = 0; i < track.size(); ++i) {
                if (model::isCommunicationKernel(store->text(track.name(i)))) {
                    allReduce = EventId::gpu({t, i});
                    break;
                }
            }
        }
        QVERIFY(allReduce.valid());
        h.timeline.revealEvent(allReduce);
        h.timeline.setSelection({});
        const QRectF r = h.timeline.eventRect(allReduce);
        QVERIFY(r.width() > 10);
        // The span is painted in the communication colour of its name (at its end: rank 2 waited
        // for rank 1 in its first part, which is hatched).
        const QImage image = h.timeline.grab().toImage();
        const qreal dpr = image.devicePixelRatio();
        const std::string& name = store->text(EventSearch::nameOf(*store, allReduce));
        const QColor expected = SpanPalette(h.timeline.palette()).communication(name);
        const QPoint at(int((r.right() - 3) * dpr), int((r.top() + 2) * dpr));
        QCOMPARE(image.pixelColor(at).rgb(), expected.rgb());

        QTest::mouseClick(&h.timeline, Qt::LeftButton, {}, r.center().toPoint());
        QCOMPARE(h.timeline.selection(), allReduce);
        QCOMPARE(h.details.value("Kind"), QString("Communication kernel (NCCL)"));
        QCOMPARE(h.details.value("Rank"), QString("Rank 2 · node1"));
        QVERIFY2(h.details.value("Device").startsWith("GPU 0 · "),
                 qPrintable(h.details.value("Device")));
        // Its launch call is rank 2's too.
        const model::EventRef launch = store->launchOf(allReduce.ref);
        QVERIFY(launch.valid());
        h.details.showEvent(EventId::api(launch));
        QCOMPARE(h.details.value("Rank"), QString("Rank 2 · node1"));
        // A compute kernel stays a kernel; a single trace has no rank field.
        const EventId k = kernel(0);
        Harness single(m_trace);
        single.details.showEvent(k);
        QCOMPARE(single.details.value("Kind"), QString("Kernel"));
        QVERIFY(single.details.value("Rank").isNull());
    }

    // Rank 1 is slow: the others' all-reduces wait for it in their first part (hatched over a
    // faded communication colour), then transfer (solid). Rank 1's own all-reduce does not wait.
    void collectiveWaitsAreHatchedAndNameTheRankWaitedFor_data() {
        QTest::addColumn<bool>("dark");
        QTest::newRow("light") << false;
        QTest::newRow("dark") << true;
    }
    void collectiveWaitsAreHatchedAndNameTheRankWaitedFor() {
        QFETCH(bool, dark);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const auto trace = rankJob(dir, 4);
        QVERIFY(trace);
        const auto& store = trace->store;
        QVERIFY(trace->crossRank);
        const model::CrossRankAnalysis& a = *trace->crossRank;
        QCOMPARE(a.ranks.size(), size_t{4});
        // The report tables come from the same analysis.
        QVERIFY(trace->report("ranks"));
        QCOMPARE(trace->report("ranks")->table.rowCount(), size_t{4});
        QVERIFY(trace->report("rank-steps"));
        QCOMPARE(trace->report("rank-steps")->table.rowCount(), a.steps.size());

        Harness h(trace);
        QPalette palette = h.timeline.palette();
        palette.setColor(QPalette::Base, dark ? QColor(30, 30, 34) : QColor(250, 250, 250));
        palette.setColor(QPalette::Text, dark ? QColor(230, 230, 230) : QColor(20, 20, 20));
        h.timeline.setPalette(palette);
        const SpanPalette colours(h.timeline.palette());

        // Pixels of a row of the span at y, between times t0 and t1: how many have the colour.
        struct Count {
            int total = 0, solid = 0, faded = 0;
        };
        const auto count = [&](const EventId& op, int64_t t0, int64_t t1) {
            const QImage image = h.timeline.grab().toImage();
            const qreal dpr = image.devicePixelRatio();
            const QRectF r = h.timeline.eventRect(op);
            const QColor fill = colours.communication(store->text(EventSearch::nameOf(*store, op)));
            const QColor faded = colours.waiting(fill);
            Count c;
            const int y = int((r.top() + 1) * dpr);
            const int x0 = int((h.timeline.xOfTime(double(t0)) + 2) * dpr);
            const int x1 = int((h.timeline.xOfTime(double(t1)) - 2) * dpr);
            for (int x = x0; x < x1; ++x) {
                const QRgb pixel = image.pixel(x, y);
                ++c.total;
                c.solid += pixel == fill.rgb();
                c.faded += pixel == faded.rgb();
            }
            return c;
        };

        // Step 1 of rank 2 (node1): it arrived early and waited for rank 1.
        const size_t k = 1;
        const model::RankStep* fast = a.step(2, k);
        QVERIFY(fast && fast->arrived());
        QCOMPARE(a.steps[k].slowest, 1u);
        QVERIFY(fast->wait > bench::RankJobSpec{}.slowByNs / 2); // rankJob keeps the default
        const EventId op = EventId::gpu(fast->arrivalOp);
        const model::GpuTrack& track = store->gpuTracks()[op.ref.track];
        QCOMPARE(track.start(op.ref.index), fast->arrival);
        const int64_t waitEnd = fast->arrival + fast->wait;
        QVERIFY(waitEnd < track.end(op.ref.index));
        h.timeline.zoomToRange(track.start(op.ref.index), track.end(op.ref.index));
        QVERIFY(h.timeline.eventRect(op).width() > 300);
        const Count waiting = count(op, fast->arrival, waitEnd);
        QVERIFY(waiting.total > 100);
        // Mostly the faded colour, crossed by hatch lines of the kernel's own.
        QVERIFY2(
            waiting.faded > waiting.total / 2,
            qPrintable(QStringLiteral("%1 of %2 faded").arg(waiting.faded).arg(waiting.total)));
        QVERIFY(waiting.solid > 0);
        QVERIFY(waiting.faded + waiting.solid == waiting.total);
        const Count transfer = count(op, waitEnd, track.end(op.ref.index));
        QVERIFY(transfer.total > 50);
        QCOMPARE(transfer.solid, transfer.total);

        // The details name the rank it waited for.
        QTest::mouseClick(&h.timeline, Qt::LeftButton, {},
                          h.timeline.eventRect(op).center().toPoint());
        QCOMPARE(h.timeline.selection(), op);
        const QString wait = h.details.value("Collective wait");
        QVERIFY2(wait.startsWith(QStringLiteral("Waited %1 for Rank 1 · node0 (the last to reach "
                                                "step ")
                                     .arg(TimeFormat::duration(double(fast->wait)))),
                 qPrintable(wait));

        // Rank 1's own all-reduce of that step: no wait, solid all along, no wait in its details.
        const model::RankStep* slow = a.step(1, k);
        QVERIFY(slow && slow->arrived());
        QCOMPARE(slow->wait, int64_t{0});
        const EventId slowOp = EventId::gpu(slow->arrivalOp);
        const model::GpuTrack& slowTrack = store->gpuTracks()[slowOp.ref.track];
        h.timeline.zoomToRange(slowTrack.start(slowOp.ref.index), slowTrack.end(slowOp.ref.index));
        h.timeline.setSelection({});
        const Count whole =
            count(slowOp, slowTrack.start(slowOp.ref.index), slowTrack.end(slowOp.ref.index));
        QVERIFY(whole.total > 300);
        QCOMPARE(whole.faded, 0);
        // (its label may cross the middle of the row; the top row of pixels is the fill)
        QCOMPARE(whole.solid, whole.total);
        h.details.showEvent(slowOp);
        QVERIFY(h.details.value("Collective wait").isNull());

        // A single trace has no cross-rank analysis: nothing hatched, no wait field.
        QVERIFY(!m_trace->crossRank);
        Harness single(m_trace);
        single.details.showEvent(kernel(10));
        QVERIFY(single.details.value("Collective wait").isNull());
    }

    void followsThePalette_data() {
        QTest::addColumn<QColor>("base");
        QTest::addColumn<QColor>("text");
        QTest::newRow("light") << QColor(250, 250, 250) << QColor(20, 20, 20);
        QTest::newRow("dark") << QColor(30, 30, 34) << QColor(230, 230, 230);
    }
    void followsThePalette() {
        QFETCH(QColor, base);
        QFETCH(QColor, text);
        Harness h(m_trace);
        QPalette palette = h.timeline.palette();
        palette.setColor(QPalette::Base, base);
        palette.setColor(QPalette::Text, text);
        palette.setColor(QPalette::Window, base.lighter(105));
        h.timeline.setPalette(palette);
        const QImage image = h.timeline.grab().toImage();
        // Below the last row, the span area shows the palette's base colour.
        const int y = h.timeline.rulerHeight() + h.timeline.rows().totalHeight() + 20;
        QVERIFY(y < image.height() / image.devicePixelRatio());
        const qreal dpr = image.devicePixelRatio();
        const QColor pixel = image.pixelColor(int((h.timeline.width() - 40) * dpr), int(y * dpr));
        QCOMPARE(pixel.rgb(), base.rgb());
    }

    // PyTorch's streams 13 and 29 work only during start-up: over the steps they are thin rows
    // (named on hover), and over the whole trace, where their work is, full rows again.
    void rowsWithoutWorkInTheWindowAreThin() {
        const QString path = QStringLiteral(WARPLINE_TEST_DATA "/torch-gpt-train.warpline");
        WARPLINE_REQUIRE_DATA(path);
        const auto trace = load(path);
        QVERIFY(trace);
        Harness h(trace);
        const auto streamRow = [&](int id) -> const TimelineRow* {
            for (const TimelineRow& r : h.timeline.rows().rows())
                if (r.kind == RowKind::Gpu && r.label == QStringLiteral("Stream %1").arg(id))
                    return &r;
            return nullptr;
        };
        h.timeline.fitSteadyState();
        QVERIFY(streamRow(7) && streamRow(13) && streamRow(29));
        QVERIFY(!streamRow(7)->idle);
        QVERIFY(streamRow(13)->idle && streamRow(29)->idle);
        QVERIFY2(streamRow(13)->height * 2 < streamRow(7)->height,
                 qPrintable(QString::number(streamRow(13)->height)));
        // Hovering the thin row names it.
        const TimelineRow* thin = streamRow(13);
        const QPoint on(h.timeline.width() - 50,
                        h.timeline.rulerHeight() + thin->y + thin->height / 2);
        QMouseEvent move(QEvent::MouseMove, QPointF(on), h.timeline.mapToGlobal(QPointF(on)),
                         Qt::NoButton, Qt::NoButton, Qt::NoModifier);
        QApplication::sendEvent(&h.timeline, &move);
        QLabel* tip = h.timeline.findChild<QLabel*>();
        QVERIFY(tip && tip->isVisible());
        QVERIFY2(tip->text().contains("Stream 13: no work in this window"),
                 qPrintable(tip->text()));
        h.timeline.fitAll();
        QVERIFY(!streamRow(13)->idle);
        QCOMPARE(streamRow(13)->height, streamRow(7)->height);
    }

    // A torch.profiler trace's operators are NVTX ranges of one row per depth (1-6 here): the
    // rows under depth 0 are folded under one header, named as PyTorch names them, so that the
    // GPU is in view. Revealing an op at depth 3 opens its thread's fold.
    void profilerOpDepthsAreFolded() {
        const QString path =
            QStringLiteral(WARPLINE_TEST_DATA "/pytorch/torch-gpt-with-stack.pt.trace.json.gz");
        WARPLINE_REQUIRE_DATA(path);
        const auto trace = TraceAnalyzer::analyze(std::make_shared<const model::TraceStore>(
            model::TraceOpener::open(path.toStdString())));
        QVERIFY(trace);
        Harness h(trace);
        const model::TraceStore& store = *trace->store;
        QStringList labels;
        int depthRows = 0, headers = 0;
        for (const TimelineRow& r : h.timeline.rows().rows()) {
            labels << r.label;
            if (r.kind == RowKind::Nvtx && store.nvtxTracks()[r.index].depth() > 0)
                ++depthRows;
            if (r.kind == RowKind::NvtxDepths) {
                ++headers;
                QVERIFY(r.collapsed);
            }
        }
        QVERIFY2(labels.contains("PyTorch ops"), qPrintable(labels.join(" | ")));
        QVERIFY2(labels.contains("PyTorch ops · depths 1-5"), qPrintable(labels.join(" | ")));
        QCOMPARE(depthRows, 0);
        QCOMPARE(headers, 2); // the two threads that run ops
        // An op at depth 3, revealed (as search and table rows do): its row is shown.
        EventId deep;
        for (uint32_t t = 0; t < store.nvtxTracks().size() && !deep.valid(); ++t)
            if (store.nvtxTracks()[t].depth() == 3 && store.nvtxTracks()[t].size() > 0)
                deep = EventId::nvtx({t, 0});
        QVERIFY(deep.valid());
        QVERIFY(h.timeline.eventRect(deep).isNull());
        h.timeline.revealEvent(deep);
        QVERIFY(!h.timeline.eventRect(deep).isNull());
        QCOMPARE(h.timeline.selection(), deep);
    }

    void recordedTracesPaintAndSelect_data() {
        QTest::addColumn<QString>("path");
        for (const QString& f :
             warpline::testdata::committedFiles(WARPLINE_TEST_DATA, {"*.warpline"}))
            QTest::newRow(qPrintable(QFileInfo(f).fileName())) << f;
    }
    void recordedTracesPaintAndSelect() {
        QFETCH(QString, path);
        WARPLINE_REQUIRE_DATA(path);
        const auto trace = load(path);
        QVERIFY(trace);
        Harness h(trace);
        QImage image = h.timeline.grab().toImage();
        QVERIFY(!image.isNull());
        // The first kernel of the first GPU row: reveal it, then click it.
        const model::TraceStore& store = *trace->store;
        EventId k;
        for (uint32_t t = 0; t < store.gpuTracks().size() && !k.valid(); ++t) {
            for (uint32_t i = 0; i < store.gpuTracks()[t].size(); ++i) {
                if (store.gpuTracks()[t].kind(i) == model::GpuOpKind::Kernel) {
                    k = EventId::gpu({t, i});
                    break;
                }
            }
        }
        QVERIFY(k.valid());
        h.timeline.revealEvent(k);
        h.timeline.setSelection({});
        const QRectF r = h.timeline.eventRect(k);
        QVERIFY2(r.top() >= h.timeline.rulerHeight() && r.bottom() <= h.timeline.height(),
                 "the revealed kernel's row is scrolled into view");
        QTest::mouseClick(&h.timeline, Qt::LeftButton, {}, r.center().toPoint());
        QCOMPARE(h.timeline.selection(), k);
        QCOMPARE(h.details.value("Name"), QString::fromStdString(store.text(
                                              store.gpuTracks()[k.ref.track].name(k.ref.index))));
        // The details name the launch exactly when the kernel has one; recorded traces join
        // every kernel to its launch (tests/gpu checks that when they are made), so it must.
        QCOMPARE(!h.details.value("Launched by").isEmpty(), store.launchOf(k.ref).valid());
        if (!store.apiTracks().empty())
            QVERIFY2(store.launchOf(k.ref).valid(), "a recorded kernel without its launch");
    }
};

QTEST_MAIN(TestTimelineWidget)
#include "tst_timelinewidget.moc"
