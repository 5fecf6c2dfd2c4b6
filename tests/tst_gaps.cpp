// GPU utilization, idle gaps with their cause, and launch-bound detection, on generated traces
// with hand-computed values, and on the recorded streams workload when present.

#include "analysestracegen.h"
#include "gpugaps.h"
#include "reportregistry.h"
#include "testdata.h"

#include <QtTest>

using namespace warpline::model;

namespace {

GapOptions withThreshold(int64_t ns) {
    GapOptions options;
    options.threshold = ns;
    return options;
}

} // namespace

class TestGaps : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString path(const char* name) const { return m_dir.filePath(name); }

    // 100 kernels of 3 us behind launch calls of 5 us, back to back: call i [5i, 5i+5) us, kernel
    // [5i+4, 5i+7) us. The GPU is busy 3 us of every 5.
    TraceStore launchBoundTrace() {
        TraceGen g(path("launchbound.warpline"));
        for (int i = 0; i < 100; ++i)
            g.launch(5'000LL * i, 5'000LL * i + 5'000, 5'000LL * i + 4'000, 5'000LL * i + 7'000, 7,
                     "_Z4tinyPf");
        return g.load();
    }

private slots:
    void busyIsTheUnionAcrossStreams() {
        TraceGen g(path("union.warpline"));
        g.launch(0, 1'000, 10'000, 110'000, 7);     // [10, 110) us
        g.launch(1'000, 2'000, 60'000, 160'000, 8); // [60, 160) us, overlaps
        const uint32_t c = g.api(2'000, 3'000, "cudaMemcpyAsync_v3020");
        g.memcpy(100'000, 150'000, c, 1 << 20, 1, 9);    // inside the union
        g.launch(200'000, 250'000, 260'000, 300'000, 7); // host-wait gap before it
        g.launch(3'000, 4'000, 330'000, 340'000, 8);     // launched long before: other
        const TraceStore store = g.load();
        const GpuGapAnalysis a = analyzeGpuGaps(store);
        QCOMPARE(a.devices.size(), size_t(1));
        const DeviceUtilization& d = a.devices[0];
        QCOMPARE(d.ops, uint64_t(5));
        QCOMPARE(d.activeStart, int64_t(10'000));
        QCOMPARE(d.activeEnd, int64_t(340'000));
        QCOMPARE(d.busy, int64_t(150'000 + 40'000 + 10'000));
        QCOMPARE(d.opTime, int64_t(100'000 + 100'000 + 50'000 + 40'000 + 10'000));
        QCOMPARE(d.overlap(), int64_t(100'000));
        QCOMPARE(d.idle(), int64_t(330'000 - 200'000));
        QCOMPARE(d.gaps, uint64_t(2));
        const auto gaps = a.gapsOf(0);
        QCOMPARE(gaps.size(), size_t(2));
        // [160, 260) us: the kernel's launch call ended at 250 us, after the gap began.
        QCOMPARE(gaps[0].start, int64_t(160'000));
        QCOMPARE(gaps[0].end, int64_t(260'000));
        QCOMPARE(gaps[0].cause, GapCause::HostWait);
        QVERIFY(gaps[0].afterLaunch.valid());
        QCOMPARE(store.gpuTracks()[gaps[0].before.track].end(gaps[0].before.index),
                 int64_t(160'000));
        // [300, 330) us: launched at 4 us, so it waited for something else.
        QCOMPARE(gaps[1].duration(), int64_t(30'000));
        QCOMPARE(gaps[1].cause, GapCause::Other);
        QCOMPARE(d.hostWaitIdle, int64_t(100'000));
        QCOMPARE(d.otherIdle, int64_t(30'000));
        QCOMPARE(d.shortIdle, int64_t(0));
        QCOMPARE(d.longestGap, int64_t(100'000));
        QVERIFY(qAbs(d.utilization() - 200.0 / 330.0) < 1e-12);
    }

    void thresholdSeparatesShortGaps() {
        TraceGen g(path("threshold.warpline"));
        g.launch(0, 1'000, 1'000, 2'000);
        g.launch(1'000, 2'000, 12'000, 13'000); // gap 10 us: not longer than the threshold
        g.launch(2'000, 3'000, 23'001, 24'000); // gap 10.001 us: listed
        const TraceStore store = g.load();
        const GpuGapAnalysis a = analyzeGpuGaps(store);
        QCOMPARE(a.devices[0].gaps, uint64_t(1));
        QCOMPARE(a.devices[0].shortIdle, int64_t(10'000));
        QCOMPARE(a.devices[0].otherIdle, int64_t(10'001));
        const GpuGapAnalysis b = analyzeGpuGaps(store, withThreshold(20'000));
        QCOMPARE(b.devices[0].gaps, uint64_t(0));
        QCOMPARE(b.devices[0].shortIdle, int64_t(20'001));
        QCOMPARE(b.threshold, int64_t(20'000));
    }

    void launchBoundKernels() {
        const TraceStore store = launchBoundTrace();
        const GpuGapAnalysis a = analyzeGpuGaps(store);
        const DeviceUtilization& d = a.devices[0];
        QCOMPARE(d.busy, int64_t(300'000));
        QCOMPARE(d.active(), int64_t(99 * 5'000 + 3'000));
        QCOMPARE(d.gaps, uint64_t(0)); // 2 us gaps: all short
        QCOMPARE(d.shortIdle, int64_t(99 * 2'000));
        QCOMPARE(a.launchBound.size(), size_t(1));
        const LaunchBoundRow& r = a.launchBound[0];
        QCOMPARE(store.text(r.kernel), std::string("tiny(float*)"));
        QCOMPARE(r.count, uint64_t(100));
        QCOMPARE(r.medianKernel, 3'000.0);
        QCOMPARE(r.medianLaunch, 5'000.0);
        QCOMPARE(r.totalKernel, int64_t(300'000));
        QCOMPARE(r.totalLaunch, int64_t(500'000));
        QVERIFY(r.launchBound());
        QVERIFY(a.allKernels.launchBound());
        QCOMPARE(a.allKernels.count, uint64_t(100));
        // With a 1 us threshold every gap is listed, and every one is host-wait: the next launch
        // call was still running when the kernel before ended.
        const GpuGapAnalysis fine = analyzeGpuGaps(store, withThreshold(1'000));
        QCOMPARE(fine.devices[0].gaps, uint64_t(99));
        QCOMPARE(fine.devices[0].hostWaitIdle, int64_t(99 * 2'000));
        QCOMPARE(fine.devices[0].otherIdle, int64_t(0));
        const Table t = launchBoundTable(store, a);
        QCOMPARE(cellText(t, 0, "Launch Bound"), std::string("yes"));
    }

    void graphLaunchCostIsShared() {
        TraceGen g(path("graph.warpline"));
        const uint32_t c = g.api(0, 10'000, "cudaGraphLaunch_v10000");
        for (int i = 0; i < 5; ++i)
            g.kernel(20'000 + 3'000LL * i, 23'000 + 3'000LL * i, c);
        const TraceStore store = g.load();
        const GpuGapAnalysis a = analyzeGpuGaps(store);
        QCOMPARE(a.allKernels.medianLaunch, 2'000.0); // 10 us over 5 kernels
        QCOMPARE(a.allKernels.medianKernel, 3'000.0);
        QVERIFY(!a.allKernels.launchBound());
    }

    // "eager": 100 kernels of 3 us behind 5 us launches. "replay 0..4": one 10 us
    // cudaGraphLaunch each, running 20 kernels of 3 us (0.5 us of launch per kernel).
    void launchBoundPerRegion() {
        TraceGen g(path("regions.warpline"));
        g.range(0, 500'000, "eager");
        for (int i = 0; i < 100; ++i)
            g.launch(5'000LL * i, 5'000LL * i + 5'000, 5'000LL * i + 4'000, 5'000LL * i + 7'000, 7,
                     "_Z4tinyPf");
        for (int r = 0; r < 5; ++r) {
            const int64_t t = 600'000 + 100'000LL * r;
            g.range(t, t + 20'000, "replay " + std::to_string(r));
            const uint32_t c = g.api(t, t + 10'000, "cudaGraphLaunch_v10000");
            for (int k = 0; k < 20; ++k)
                g.kernel(t + 11'000 + 3'000LL * k, t + 14'000 + 3'000LL * k, c, 7, "_Z4tinyPf");
        }
        const TraceStore store = g.load();
        const GpuGapAnalysis all = analyzeGpuGaps(store);
        QCOMPARE(all.allKernels.count, uint64_t(200));
        QCOMPARE(all.allKernels.medianLaunch, 2'750.0);
        QVERIFY(!all.allKernels.launchBound());

        const std::vector<RangeLaunchBound> regions = launchBoundByRange(store);
        QCOMPARE(regions.size(), size_t(2));
        QCOMPARE(regions[0].range, std::string("eager"));
        QCOMPARE(regions[0].instances, uint64_t(1));
        QCOMPARE(regions[0].kernels.count, uint64_t(100));
        QCOMPARE(regions[0].kernels.medianKernel, 3'000.0);
        QCOMPARE(regions[0].kernels.medianLaunch, 5'000.0);
        QCOMPARE(regions[0].uncovered(), int64_t(200'000));
        QVERIFY(regions[0].kernels.launchBound());
        QCOMPARE(regions[1].range, std::string("replay"));
        QCOMPARE(regions[1].instances, uint64_t(5));
        QCOMPARE(regions[1].kernels.count, uint64_t(100));
        QCOMPARE(regions[1].kernels.medianLaunch, 500.0);
        QCOMPARE(regions[1].uncovered(), int64_t(0));
        QVERIFY(!regions[1].kernels.launchBound());
        const Table t = launchBoundRangeTable(regions);
        QCOMPARE(cellText(t, 0, "Launch Bound"), std::string("yes"));
        QCOMPARE(cellText(t, 1, "Launch Bound"), std::string("no"));
        QCOMPARE(cellInt(t, 1, "Range Instances"), int64_t(5));
        // The window picks ranges by start.
        QCOMPARE(launchBoundByRange(store, TimeWindow{550'000, 2'000'000}).size(), size_t(1));
    }

    void devicesAreSeparate() {
        TraceGen g(path("devices.warpline"));
        g.kernel(0, 10'000, g.api(0, 1'000, "cudaLaunchKernel_v7000"), 7, "_Z1aPf", 0);
        g.kernel(5'000, 6'000, g.api(1'000, 2'000, "cudaLaunchKernel_v7000"), 7, "_Z1aPf", 1);
        g.kernel(50'000, 60'000, g.api(2'000, 3'000, "cudaLaunchKernel_v7000"), 7, "_Z1aPf", 1);
        const TraceStore store = g.load();
        const GpuGapAnalysis a = analyzeGpuGaps(store);
        QCOMPARE(a.devices.size(), size_t(2));
        QCOMPARE(a.devices[0].deviceId, 0u);
        QCOMPARE(a.devices[0].idle(), int64_t(0));
        QCOMPARE(a.devices[1].deviceId, 1u);
        QCOMPARE(a.devices[1].busy, int64_t(11'000));
        QCOMPARE(a.devices[1].gaps, uint64_t(1));
        QCOMPARE(a.gapsOf(1)[0].deviceId, 1u);
        const Table u = utilizationTable(store, a);
        QCOMPARE(u.rowCount(), size_t(2));
        QCOMPARE(cellText(u, 1, "Device"), std::string("Device 1"));
        QCOMPARE(cellInt(u, 1, "Busy (ns)"), int64_t(11'000));
    }

    void gapTables() {
        TraceGen g(path("tables.warpline"));
        for (int i = 0; i < 4; ++i)
            g.launch(100'000LL * i + 90'000, 100'000LL * i + 95'000, 100'000LL * i + 96'000,
                     100'000LL * i + 100'000, 7, "_Z4stepPf");
        const TraceStore store = g.load();
        const GpuGapAnalysis a = analyzeGpuGaps(store);
        QCOMPARE(a.gaps.size(), size_t(3));
        const Table grouped = gapSummaryTable(store, a);
        QCOMPARE(grouped.rowCount(), size_t(1));
        QCOMPARE(cellInt(grouped, 0, "Gaps"), int64_t(3));
        QCOMPARE(cellInt(grouped, 0, "Total Time (ns)"), int64_t(3 * 96'000));
        QCOMPARE(cellText(grouped, 0, "Cause"), std::string("host-wait"));
        QCOMPARE(cellText(grouped, 0, "Next Op"), std::string("step(float*)"));
        const Table each = gapTable(store, a);
        QCOMPARE(each.rowCount(), size_t(3));
        QCOMPARE(cellInt(each, 0, "Start (ns)"), int64_t(100'000));
        QCOMPARE(cellInt(each, 0, "Next Launch End (ns)"), int64_t(195'000));
        QCOMPARE(ReportRegistry::find("gaps")->run(store).rowCount(), size_t(1));
        QCOMPARE(ReportRegistry::find("utilization")->run(store).rowCount(), size_t(1));
    }

    void windowAndGracefulCases() {
        const TraceStore store = launchBoundTrace();
        const GpuGapAnalysis w = analyzeGpuGaps(store, GapOptions{.window = TimeWindow{0, 50'000}});
        QCOMPARE(w.devices[0].ops, uint64_t(10));
        QCOMPARE(w.allKernels.count, uint64_t(10));
        {
            TraceGen g(path("nolaunch.warpline"));
            g.kernel(0, 1'000, 5);
            g.kernel(100'000, 101'000, 6);
            const TraceStore s = g.load();
            const GpuGapAnalysis a = analyzeGpuGaps(s);
            QCOMPARE(a.gaps.size(), size_t(1));
            QCOMPARE(a.gaps[0].cause, GapCause::Other);
            QVERIFY(!a.gaps[0].afterLaunch.valid());
            QVERIFY(a.launchBound.empty());
            QCOMPARE(a.allKernels.count, uint64_t(0));
            QCOMPARE(cellText(utilizationTable(s, a), 0, "Device"), std::string("Device 0"));
        }
        TraceGen g(path("empty.warpline"));
        const TraceStore s = g.load();
        const GpuGapAnalysis a = analyzeGpuGaps(s);
        QVERIFY(a.devices.empty());
        QVERIFY(a.gaps.empty());
        QCOMPARE(ReportRegistry::find("gaps")->run(s).rowCount(), size_t(0));
        QCOMPARE(ReportRegistry::find("utilization")->run(s).rowCount(), size_t(0));
    }

    // The recorded streams workload overlaps copies with kernels on other streams.
    void recordedStreamsOverlap() {
        const QString file = QDir(WARPLINE_TEST_DATA).filePath("streams.warpline");
        WARPLINE_REQUIRE_DATA(file);
        const TraceStore store = TraceLoader::load(file.toStdString());
        const GpuGapAnalysis a = analyzeGpuGaps(store);
        QVERIFY(!a.devices.empty());
        QVERIFY2(a.devices[0].overlap() > 0,
                 qPrintable(QString("overlap %1 ns").arg(a.devices[0].overlap())));
        // A copy and a kernel on different streams run at the same time.
        int64_t copyKernelOverlap = 0;
        const auto& tracks = store.gpuTracks();
        for (size_t ct = 0; ct < tracks.size(); ++ct) {
            for (size_t i = 0; i < tracks[ct].size(); ++i) {
                if (tracks[ct].kind(i) != GpuOpKind::Memcpy)
                    continue;
                for (size_t kt = 0; kt < tracks.size(); ++kt) {
                    if (tracks[kt].streamIndex() == tracks[ct].streamIndex())
                        continue;
                    const IndexRange r =
                        tracks[kt].visibleRange(tracks[ct].start(i), tracks[ct].end(i));
                    for (size_t k = r.first; k < r.last; ++k) {
                        if (tracks[kt].kind(k) == GpuOpKind::Kernel)
                            copyKernelOverlap += std::min(tracks[ct].end(i), tracks[kt].end(k)) -
                                                 std::max(tracks[ct].start(i), tracks[kt].start(k));
                    }
                }
            }
        }
        QVERIFY2(copyKernelOverlap > 0, "no copy overlapped a kernel on another stream");
    }
};

QTEST_GUILESS_MAIN(TestGaps)
#include "tst_gaps.moc"
