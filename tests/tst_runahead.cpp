// Run-ahead: lag, launch delay, queue depth steps and drain time, checked against values computed
// by hand from generated traces, and against the recorded runahead workload when present.

#include "analysestracegen.h"
#include "analysishelpers.h"
#include "reportregistry.h"
#include "runahead.h"
#include "tablewriter.h"
#include "testdata.h"

#include <QtTest>
#include <cmath>
#include <random>
#include <sstream>

using namespace warpline::model;

namespace {

// 500 launches, one every 4 us, each call 3 us long; the kernels run 50 us each back to back from
// t = 5 us. Launch i: call [4000 i, 4000 i + 3000), GPU [5000 + 50000 i, +50000).
constexpr int kLaunches = 500;
int64_t callStart(int i) {
    return 4000LL * i;
}
int64_t gpuStart(int i) {
    return 5000 + 50000LL * i;
}

} // namespace

class TestRunAhead : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString path(const char* name) const { return m_dir.filePath(name); }

    TraceStore queueTrace() {
        TraceGen g(path("queue.warpline"));
        for (int i = 0; i < kLaunches; ++i)
            g.launch(callStart(i), callStart(i) + 3000, gpuStart(i), gpuStart(i) + 50000);
        return g.load();
    }

private slots:
    // The fast median + p95 agrees with sorting, for every small count and both parities.
    void medianAndPercentileMatchSorting() {
        std::mt19937_64 rng(7);
        for (size_t n = 1; n < 60; ++n) {
            for (const double p : {50.0, 90.0, 95.0, 100.0}) {
                std::vector<int64_t> v(n);
                for (int64_t& x : v)
                    x = static_cast<int64_t>(rng() % 50);
                std::vector<int64_t> sorted = v;
                std::sort(sorted.begin(), sorted.end());
                const size_t rank =
                    static_cast<size_t>(std::ceil(p / 100 * static_cast<double>(n)));
                const double median = n % 2 ? static_cast<double>(sorted[n / 2])
                                            : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
                double gotMedian = 0;
                int64_t gotPercentile = 0;
                medianAndPercentileOf(v, p, gotMedian, gotPercentile);
                QCOMPARE(gotMedian, median);
                QCOMPARE(gotPercentile, sorted[rank - 1]);
            }
        }
    }

    // The galloping bounds (sync stalls' GPU side, kernels per NVTX range) agree with
    // std::upper_bound and std::lower_bound from any hint, on runs of equal values too.
    void boundsFromAHintMatchTheStandardOnes() {
        std::mt19937_64 rng(11);
        for (size_t n = 0; n < 70; ++n) {
            std::vector<int64_t> a(n);
            for (int64_t& x : a)
                x = static_cast<int64_t>(rng() % 40);
            std::sort(a.begin(), a.end());
            for (int64_t v = -1; v <= 41; ++v) {
                const auto upper =
                    static_cast<size_t>(std::upper_bound(a.begin(), a.end(), v) - a.begin());
                const auto lower =
                    static_cast<size_t>(std::lower_bound(a.begin(), a.end(), v) - a.begin());
                for (size_t hint = 0; hint <= n + 2; ++hint) {
                    QCOMPARE(upperBoundFrom(a, hint, v), upper);
                    QCOMPARE(lowerBoundFrom(a, hint, v), lower);
                }
            }
        }
    }

    // The union of random spans against a bitmap of the covered units.
    void mergedSpansAreTheirUnion() {
        std::mt19937_64 rng(12);
        for (size_t n = 0; n < 60; ++n) {
            std::vector<std::pair<int64_t, int64_t>> spans(n);
            std::vector<bool> covered(80, false);
            for (auto& [a, b] : spans) {
                a = static_cast<int64_t>(rng() % 60);
                b = a + static_cast<int64_t>(rng() % 12);
                for (int64_t t = a; t < b; ++t)
                    covered[static_cast<size_t>(t)] = true;
            }
            mergeSpans(spans);
            std::vector<bool> merged(80, false);
            for (size_t i = 0; i < spans.size(); ++i) {
                QVERIFY(spans[i].first <= spans[i].second);
                if (i > 0)
                    QVERIFY(spans[i - 1].second < spans[i].first); // disjoint, not touching
                for (int64_t t = spans[i].first; t < spans[i].second; ++t)
                    merged[static_cast<size_t>(t)] = true;
            }
            QCOMPARE(merged, covered);
        }
    }

    void lagAndDelayPerLaunch() {
        const TraceStore store = queueTrace();
        const RunAheadAnalysis ra = analyzeRunAhead(store);
        QCOMPARE(ra.streams.size(), size_t(1));
        const std::vector<LaunchLag> launches = launchesOf(store, ra, 0);
        QCOMPARE(launches.size(), size_t(kLaunches));
        for (int i : {0, 1, 250, 499}) {
            const LaunchLag& l = launches[static_cast<size_t>(i)];
            QCOMPARE(l.callStart, callStart(i));
            QCOMPARE(l.gpuStart, gpuStart(i));
            QCOMPARE(l.lag(), 5000 + 46000LL * i);
            QCOMPARE(l.delay(), 2000 + 46000LL * i);
            QCOMPARE(store.text(store.apiTracks()[l.call.track].name(l.call.index)),
                     std::string("cudaLaunchKernel"));
        }
    }

    void lagSummary() {
        const TraceStore store = queueTrace();
        const RunAheadAnalysis ra = analyzeRunAhead(store);
        const LagStats& s = ra.streams[0].lag;
        QCOMPARE(s.count, uint64_t(kLaunches));
        QCOMPARE(s.maxLag, 5000 + 46000LL * 499); // 22.959 ms
        QCOMPARE(s.medianLag, 5000 + 46000.0 * 249.5);
        QCOMPARE(s.p95Lag, 5000 + 46000LL * 474); // rank ceil(0.95 * 500) = 475
        QCOMPARE(s.maxDelay, 2000 + 46000LL * 499);
        QCOMPARE(s.medianDelay, 2000 + 46000.0 * 249.5);
        QCOMPARE(s.maxLagLaunch.gpuStart, gpuStart(499));
        QCOMPARE(s.maxLagLaunch.lag(), s.maxLag);
        QCOMPARE(ra.overall.maxLag, s.maxLag);
        // One stream: the overall row's median and p95 are the stream's.
        QCOMPARE(ra.overall.medianLag, 5000 + 46000.0 * 249.5);
        QCOMPARE(ra.overall.p95Lag, 5000 + 46000LL * 474);
        QCOMPARE(ra.overall.count, s.count);
    }

    void queueDepthSteps() {
        const TraceStore store = queueTrace();
        const RunAheadAnalysis ra = analyzeRunAhead(store);
        const StreamRunAhead& s = ra.streams[0];
        // The last launch returns at 1,999,000 ns; by then the kernels starting at or before it
        // (i <= 39) have left the queue: 500 - 40.
        QCOMPARE(s.maxDepth, 460);
        QCOMPARE(s.maxDepthTime, int64_t(1999000));
        QCOMPARE(s.drainTime, gpuStart(499));
        QCOMPARE(ra.maxDepth, 460);
        // At 1 ms: 250 calls returned (4000 i + 3000 <= 1e6), 20 kernels started.
        QCOMPARE(ra.depthAt(0, 1000000), 230);
        QCOMPARE(ra.depthAt(0, 0), 0);
        QCOMPARE(ra.depthAt(0, 3000), 1);
        QCOMPARE(ra.depthAt(0, 4999), 1);
        QCOMPARE(ra.depthAt(0, 5000), 0);
        QCOMPARE(ra.depthAt(0, 30000000), 0);
        const auto steps = ra.depthSteps(0);
        QVERIFY(!steps.empty());
        QCOMPARE(steps.back().depth, 0);
        QCOMPARE(steps.back().time, gpuStart(499));
        for (size_t i = 1; i < steps.size(); ++i) {
            QVERIFY(steps[i].time > steps[i - 1].time);
            QVERIFY(steps[i].depth != steps[i - 1].depth);
            QVERIFY(steps[i].depth >= 0);
        }
        // Every launch steps up once and down once; a rise and a fall at the same instant cancel
        // (call 13 returns at 55 us when kernel 1 starts: 13 such coincidences, i = 13 + 25 k).
        int coincidences = 0;
        for (int j = 0; j < kLaunches; ++j) {
            const int64_t t = gpuStart(j) - 3000;
            if (t % 4000 == 0 && t / 4000 < kLaunches)
                ++coincidences;
        }
        QCOMPARE(steps.size(), size_t(2 * kLaunches - 2 * coincidences));
    }

    // The summaries do not depend on the detail asked for; the launches queued at the peak are
    // read back from the store.
    void skippedStepsAndQueuedAtThePeak() {
        const TraceStore store = queueTrace();
        const RunAheadAnalysis kept = analyzeRunAhead(store);
        const RunAheadAnalysis skipped = analyzeRunAhead(store, {}, RunAheadDetail::NoDepthSteps);
        const RunAheadAnalysis lags = analyzeRunAhead(store, {}, RunAheadDetail::OverallLags);
        QVERIFY(lags.steps.empty());
        QCOMPARE(lags.streams.size(), kept.streams.size());
        QCOMPARE(lags.streams[0].maxDepth, kept.streams[0].maxDepth);
        QCOMPARE(lags.streams[0].maxDepthTime, kept.streams[0].maxDepthTime);
        QCOMPARE(lags.streams[0].drainTime, kept.streams[0].drainTime);
        QCOMPARE(lags.streams[0].lag.count, kept.streams[0].lag.count);
        QCOMPARE(lags.streams[0].lag.maxLag, kept.streams[0].lag.maxLag);
        QCOMPARE(lags.overall.medianLag, kept.overall.medianLag);
        QCOMPARE(lags.overall.p95Lag, kept.overall.p95Lag);
        QCOMPARE(lags.overall.maxLagLaunch.op, kept.overall.maxLagLaunch.op);
        QCOMPARE(lags.overall.medianDelay, 0.0);
        QVERIFY(skipped.steps.empty());
        QVERIFY(!kept.steps.empty());
        QCOMPARE(skipped.streams[0].maxDepth, kept.streams[0].maxDepth);
        QCOMPARE(skipped.streams[0].maxDepthTime, kept.streams[0].maxDepthTime);
        QCOMPARE(skipped.streams[0].drainTime, kept.streams[0].drainTime);
        QCOMPARE(skipped.overall.medianLag, kept.overall.medianLag);
        QCOMPARE(skipped.overall.p95Lag, kept.overall.p95Lag);
        QCOMPARE(skipped.overall.medianDelay, kept.overall.medianDelay);
        const int64_t peak = kept.streams[0].maxDepthTime;
        const std::vector<LaunchLag> queued = queuedAt(store, kept, 0, peak);
        QCOMPARE(queued.size(), size_t(kept.streams[0].maxDepth));
        QCOMPARE(queued.front().gpuStart, gpuStart(40));
        QCOMPARE(queued.back().gpuStart, gpuStart(499));
        const std::vector<LaunchLag> first = queuedAt(store, kept, 0, peak, 3);
        QCOMPARE(first.size(), size_t(3));
        QCOMPARE(first[2].gpuStart, gpuStart(42));
    }

    void tableRows() {
        const TraceStore store = queueTrace();
        const Table t = runAheadTable(store, analyzeRunAhead(store));
        QCOMPARE(t.rowCount(), size_t(2)); // the stream, then "All streams"
        QCOMPARE(cellText(t, 0, "Stream"), std::string("Stream 7"));
        QCOMPARE(cellInt(t, 0, "Launches"), int64_t(kLaunches));
        QCOMPARE(cellInt(t, 0, "Max Lag (ns)"), int64_t(22959000));
        QCOMPARE(cellInt(t, 0, "Max Depth"), int64_t(460));
        QCOMPARE(cellInt(t, 0, "Drained At (ns)"), gpuStart(499));
        QCOMPARE(cellText(t, 1, "Stream"), std::string("All streams"));
        std::ostringstream csv;
        writeCsv(csv, t);
        QVERIFY(csv.str().find("Max Lag (ns)") != std::string::npos);
        const Table perLaunch = launchLagTable(store, analyzeRunAhead(store));
        QCOMPARE(perLaunch.rowCount(), size_t(kLaunches));
        QCOMPARE(cellInt(perLaunch, 499, "Lag (ns)"), int64_t(22959000));
    }

    // A kernel that starts before its launch call returns never sits in the queue.
    void opStartingInsideItsCallIsNotQueued() {
        TraceGen g(path("inside.warpline"));
        g.launch(0, 5000, 3000, 4000);
        g.launch(10000, 15000, 20000, 21000);
        const TraceStore store = g.load();
        const RunAheadAnalysis ra = analyzeRunAhead(store);
        QCOMPARE(ra.overall.count, uint64_t(2));
        QCOMPARE(launchesOf(store, ra, 0)[0].delay(), int64_t(-2000));
        QCOMPARE(ra.streams[0].maxDepth, 1);
        QCOMPARE(ra.streams[0].maxDepthTime, int64_t(15000));
        QCOMPARE(ra.depthAt(0, 3500), 0);
        QCOMPARE(ra.streams[0].drainTime, int64_t(20000));
        // The first call's lag (3 us) is its own length; the second was queued (5 us).
        QCOMPARE(ra.overall.queued, uint64_t(1));
        QCOMPARE(ra.overall.maxQueuedLaunch.callStart, int64_t(10000));
    }

    // A first launch slow in itself (it loads its module: 5.88 ms, the GPU starts before it
    // returns) has the largest lag; the largest queued launch is the one that ran ahead.
    void slowCallIsNotTheLargestQueuedLag() {
        TraceGen g(path("slowcall.warpline"));
        g.launch(0, 5'880'000, 5'860'000, 5'870'000);
        for (int i = 0; i < 10; ++i) {
            const int64_t t = 6'000'000 + 4000LL * i;
            g.launch(t, t + 3000, 6'100'000 + 50'000LL * i, 6'150'000 + 50'000LL * i);
        }
        const TraceStore store = g.load();
        const RunAheadAnalysis ra = analyzeRunAhead(store);
        QCOMPARE(ra.overall.maxLagLaunch.callStart, int64_t(0));
        QVERIFY(ra.overall.maxLagLaunch.delay() < 0);
        QCOMPARE(ra.overall.queued, uint64_t(10));
        QCOMPARE(ra.overall.maxQueuedLaunch.callStart, int64_t(6'000'000 + 4000 * 9));
        QCOMPARE(ra.overall.maxQueuedLaunch.lag(), int64_t(6'550'000 - 6'036'000));
    }

    // One cudaGraphLaunch feeding two streams is one launch per stream, timed by its first op
    // there.
    void graphLaunchCountsOncePerStream() {
        TraceGen g(path("graph.warpline"));
        const uint32_t c = g.api(1000, 2000, "cudaGraphLaunch_v10000");
        g.kernel(5000, 6000, c, 7);
        g.kernel(6000, 7000, c, 7);
        g.kernel(7000, 8000, c, 7);
        g.kernel(5500, 9000, c, 8);
        g.kernel(9000, 9500, c, 8);
        const TraceStore store = g.load();
        const RunAheadAnalysis ra = analyzeRunAhead(store);
        QCOMPARE(ra.overall.count, uint64_t(2));
        QCOMPARE(ra.streams.size(), size_t(2));
        QCOMPARE(launchesOf(store, ra, 0).size(), size_t(1));
        QCOMPARE(launchesOf(store, ra, 0)[0].gpuStart, int64_t(5000));
        QCOMPARE(launchesOf(store, ra, 1)[0].gpuStart, int64_t(5500));
        QCOMPARE(launchesOf(store, ra, 1)[0].lag(), int64_t(4500));
        QCOMPARE(ra.streams[0].maxDepth, 1);
        QCOMPARE(ra.streams[1].maxDepth, 1);
    }

    void overlappingStreamsAreSeparate() {
        TraceGen g(path("streams.warpline"));
        // Stream 7: 3 kernels queued at once; stream 8: one, started right away.
        g.launch(0, 1000, 10000, 20000, 7);
        g.launch(1000, 2000, 20000, 30000, 7);
        g.launch(2000, 3000, 30000, 40000, 7);
        g.launch(3000, 4000, 4000, 35000, 8);
        const TraceStore store = g.load();
        const RunAheadAnalysis ra = analyzeRunAhead(store);
        QCOMPARE(ra.streams.size(), size_t(2));
        const auto s7 = ra.rowOfStream(ra.streams[0].streamIndex);
        QCOMPARE(s7, std::ptrdiff_t(0));
        QCOMPARE(ra.streams[0].maxDepth, 3);
        QCOMPARE(ra.streams[0].maxDepthTime, int64_t(3000));
        QCOMPARE(ra.streams[0].drainTime, int64_t(30000));
        QCOMPARE(ra.streams[1].maxDepth, 0);
        QCOMPARE(ra.maxDepth, 3);
        QCOMPARE(ra.maxDepthStream, size_t(0));
        QCOMPARE(ra.overall.count, uint64_t(4));
        QCOMPARE(ra.overall.maxLag, int64_t(28000));
    }

    void windowSelectsLaunchesByCallStart() {
        const TraceStore store = queueTrace();
        const RunAheadAnalysis ra =
            analyzeRunAhead(store, TimeWindow{callStart(100), callStart(200)});
        QCOMPARE(ra.overall.count, uint64_t(100));
        QCOMPARE(launchesOf(store, ra, 0).size(), size_t(100));
        QCOMPARE(ra.overall.maxLag, 5000 + 46000LL * 199);
    }

    void kernelsWithoutLaunchesAreSkipped() {
        TraceGen g(path("nolaunch.warpline"));
        g.kernel(1000, 2000, 77);
        g.kernel(3000, 4000, 78);
        const TraceStore store = g.load();
        QCOMPARE(store.kernelCount(), size_t(2));
        const RunAheadAnalysis ra = analyzeRunAhead(store);
        QCOMPARE(ra.overall.count, uint64_t(0));
        QVERIFY(ra.streams.empty());
        QCOMPARE(ra.maxDepth, 0);
        QCOMPARE(runAheadTable(store, ra).rowCount(), size_t(0));
    }

    void emptyTrace() {
        TraceGen g(path("empty.warpline"));
        const TraceStore store = g.load();
        const RunAheadAnalysis ra = analyzeRunAhead(store);
        QVERIFY(ra.streams.empty());
        QVERIFY(ra.steps.empty());
        QCOMPARE(ra.overall.count, uint64_t(0));
        QCOMPARE(ReportRegistry::find("runahead")->run(store).rowCount(), size_t(0));
    }

    // The recorded runahead workload queues hundreds of long kernels without waiting.
    void recordedRunAhead() {
        const QString file = QDir(WARPLINE_TEST_DATA).filePath("runahead.warpline");
        WARPLINE_REQUIRE_DATA(file);
        const TraceStore store = TraceLoader::load(file.toStdString());
        const RunAheadAnalysis ra = analyzeRunAhead(store);
        QVERIFY(!ra.streams.empty());
        QVERIFY2(ra.overall.maxLag >= 1'000'000,
                 qPrintable(QString("max lag %1 ns").arg(ra.overall.maxLag)));
        QVERIFY2(ra.maxDepth >= 100, qPrintable(QString("max depth %1").arg(ra.maxDepth)));
        const StreamRunAhead& deep = ra.streams[ra.maxDepthStream];
        QVERIFY(deep.drainTime > deep.maxDepthTime);
        QCOMPARE(ra.depthSteps(ra.maxDepthStream).back().depth, 0);
    }
};

QTEST_GUILESS_MAIN(TestRunAhead)
#include "tst_runahead.moc"
