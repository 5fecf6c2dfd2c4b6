// Insights: each rule fires on the trace that shows its pattern, with the numbers and event refs
// that back it, ranked by time at stake; nothing fires on an empty trace. Also the report
// registration of the run-ahead, sync, gap, utilization and insight reports.

#include "analysestracegen.h"
#include "insights.h"
#include "reportregistry.h"
#include "steps.h"
#include "tablewriter.h"
#include "testdata.h"

#include <QtTest>
#include <algorithm>
#include <cmath>
#include <sstream>

using namespace warpline::model;

namespace {

const Insight* findKind(const std::vector<Insight>& all, InsightKind kind) {
    for (const Insight& in : all) {
        if (in.kind == kind)
            return &in;
    }
    return nullptr;
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

} // namespace

class TestInsights : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString path(const char* name) const { return m_dir.filePath(name); }

private slots:
    // 200 steps of 150 us: a 100 us kernel, then a blocking 4-byte D2H copy the CPU waits 114 us
    // in; every step inside NVTX "step <n>" [t, t+121 us).
    void scalarCopyEveryStep() {
        TraceGen g(path("loop.warpline"));
        for (int s = 0; s < 200; ++s) {
            const int64_t t = s * 150'000LL;
            g.range(t, t + 121'000, "step " + std::to_string(s));
            g.launch(t, t + 5'000, t + 10'000, t + 110'000);
            const uint32_t c = g.api(t + 6'000, t + 120'000, "cudaMemcpy_v3020");
            g.memcpy(t + 112'000, t + 113'000, c, 4, 2);
        }
        // Downloading the weights at the end is another D2H copy, of another size class.
        const uint32_t d = g.api(30'000'000, 32'000'000, "cudaMemcpy_v3020");
        g.memcpy(30'100'000, 31'900'000, d, 16 << 20, 2);
        const TraceStore store = g.load();
        const std::vector<Insight> all = findInsights(store);
        QVERIFY(!all.empty());
        // The steps' verdict: per 150 us step the GPU computes 100 us and copies 1 us; it idles
        // 49 us while the CPU waits in the copy or refills the queue after it (the refill is the
        // wait's length, so it covers the next step's launch too).
        const Insight& top = all.front();
        QCOMPARE(top.kind, InsightKind::SyncStall);
        QVERIFY(top.verdict);
        QVERIFY2(qAbs(top.number("share") - 49.0 / 150.0) < 0.005,
                 qPrintable(QString::number(top.number("share"))));
        QVERIFY2(contains(top.text, "cudaMemcpy of 4 bytes Device-to-Host"), top.text.c_str());
        QVERIFY2(contains(top.text, "(200x)"), top.text.c_str());
        QVERIFY2(contains(top.text, "read such values less often"), top.text.c_str());
        QCOMPARE(top.number("waits"), 200.0);
        QCOMPARE(top.eventCount, uint64_t(200));
        QCOMPARE(top.apiCalls.size(), size_t(200));
        const EventRef first = top.apiCalls.front();
        QCOMPARE(store.apiTracks()[first.track].start(first.index), int64_t(6'000));
        QCOMPARE(store.text(store.apiTracks()[first.track].name(first.index)),
                 std::string("cudaMemcpy"));
        for (size_t i = 2; i + 1 < all.size(); ++i)
            QVERIFY(all[i - 1].stake >= all[i].stake);

        InsightOptions fewRefs;
        fewRefs.maxRefs = 5;
        const std::vector<Insight> capped = findInsights(store, fewRefs);
        QCOMPARE(capped.front().apiCalls.size(), size_t(5));
        QCOMPARE(capped.front().eventCount, uint64_t(200));
    }

    // The PyTorch shape of the same pattern: cudaMemcpyAsync of 4 bytes, then a stream sync.
    void scalarReadThroughStreamSync() {
        TraceGen g(path("item.warpline"));
        for (int s = 0; s < 50; ++s) {
            const int64_t t = s * 100'000LL;
            g.range(t, t + 90'000, "step " + std::to_string(s));
            g.launch(t, t + 5'000, t + 6'000, t + 80'000);
            const uint32_t c = g.api(t + 6'000, t + 9'000, "cudaMemcpyAsync_v3020");
            g.memcpy(t + 80'000, t + 81'000, c, 4, 2);
            g.api(t + 9'500, t + 82'000, "cudaStreamSynchronize_v3020");
        }
        const TraceStore store = g.load();
        const std::vector<Insight> all = findInsights(store);
        const Insight* in = findKind(all, InsightKind::SyncStall);
        QVERIFY(in);
        // Per 100 us step: 6 us before the kernel, 1 us in the sync after the copy and 18 us
        // after it, all within the refill of the 72.5 us wait.
        QVERIFY2(contains(in->text, "cudaStreamSynchronize of 4 bytes Device-to-Host"),
                 in->text.c_str());
        QVERIFY2(contains(in->text, "(50x)"), in->text.c_str());
        QVERIFY2(qAbs(in->number("share") - 0.25) < 0.01,
                 qPrintable(QString::number(in->number("share"))));
    }

    void launchBoundLoop() {
        TraceGen g(path("launchbound.warpline"));
        for (int i = 0; i < 1000; ++i)
            g.launch(5'200LL * i, 5'200LL * i + 5'200, 5'200LL * i + 4'000, 5'200LL * i + 7'100, 7,
                     "_Z4tinyPf");
        const TraceStore store = g.load();
        const std::vector<Insight> all = findInsights(store);
        const Insight* in = findKind(all, InsightKind::LaunchBound);
        QVERIFY(in);
        // Busy 3.1 of every 5.2 us: idle 2.1 / 5.2 = 40%.
        QVERIFY2(contains(in->text, "GPU idle 40%: launch-bound, 3.1 us kernels behind 5.2 us "
                                    "launches; fuse kernels or replay a CUDA graph."),
                 in->text.c_str());
        QCOMPARE(in->number("median_kernel_ns"), 3'100.0);
        QCOMPARE(in->number("median_launch_ns"), 5'200.0);
        QCOMPARE(in->stake, int64_t(999 * 2'100));
        QVERIFY(!findKind(all, InsightKind::GpuIdle));
    }

    // Launch-bound in one NVTX phase only: the finding names the phase.
    void launchBoundRegion() {
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
        const std::vector<Insight> all = findInsights(store);
        const Insight* in = findKind(all, InsightKind::LaunchBound);
        QVERIFY(in);
        QVERIFY2(contains(in->text, "Inside \"eager\" (1 range), launch-bound: 3.0 us kernels "
                                    "behind 5.0 us launches (100 kernels; 200 us of launch time"),
                 in->text.c_str());
        QCOMPARE(in->stake, int64_t(200'000));
        QCOMPARE(in->gpuOps.size(), size_t(100));
        QCOMPARE(in->apiCalls.size(), size_t(100));
    }

    void hostWaitIdle() {
        TraceGen g(path("hostwait.warpline"));
        // Long kernels, but the CPU launches each one 200 us after the previous one ended.
        for (int i = 0; i < 20; ++i) {
            const int64_t t = 300'000LL * i;
            g.launch(t + 150'000, t + 155'000, t + 156'000, t + 256'000, 7, "_Z4longPf");
        }
        const TraceStore store = g.load();
        const std::vector<Insight> all = findInsights(store);
        const Insight* in = findKind(all, InsightKind::GpuIdle);
        QVERIFY(in);
        QVERIFY2(contains(in->text, "mostly waiting for the host"), in->text.c_str());
        QCOMPARE(in->number("gaps"), 19.0);
        QCOMPARE(in->stake, int64_t(19 * 200'000));
        QCOMPARE(in->gpuOps.size(), size_t(19));
        QCOMPARE(in->apiCalls.size(), size_t(19));
    }

    void runAheadQueue() {
        TraceGen g(path("runahead.warpline"));
        for (int i = 0; i < 500; ++i)
            g.launch(4'000LL * i, 4'000LL * i + 3'000, 5'000 + 50'000LL * i, 55'000 + 50'000LL * i);
        const TraceStore store = g.load();
        const std::vector<Insight> all = findInsights(store);
        const Insight* in = findKind(all, InsightKind::RunAhead);
        QVERIFY(in);
        QVERIFY2(contains(in->text, "The CPU ran up to 23.0 ms ahead of the GPU (queue depth 460"),
                 in->text.c_str());
        QVERIFY2(contains(in->text, "the queue drained at 25.0 ms"), in->text.c_str());
        QCOMPARE(in->number("max_depth"), 460.0);
        QCOMPARE(in->stake, int64_t(22'959'000));
        // The longest-waiting launch first, then those queued at the peak (i = 40 .. 498).
        QCOMPARE(in->apiCalls.size(), size_t(1 + 459));
        QCOMPARE(store.apiTracks()[in->apiCalls[0].track].start(in->apiCalls[0].index),
                 int64_t(4'000 * 499));
        // A single kernel name: nothing to compare, so no concentration finding.
        QVERIFY(!findKind(all, InsightKind::KernelConcentration));
        QCOMPARE(all.front().kind, InsightKind::RunAhead);
    }

    void kernelConcentration() {
        TraceGen g(path("gemm.warpline"));
        int64_t t = 0;
        for (int i = 0; i < 10; ++i) {
            g.launch(t, t + 1'000, t + 1'000, t + 72'000, 7, "_Z10gemm_tiledPKfS0_Pfi");
            t += 72'000;
            g.launch(t, t + 1'000, t + 1'000, t + 30'000, 7, "_Z4geluPf");
            t += 30'000;
        }
        const TraceStore store = g.load();
        const std::vector<Insight> all = findInsights(store);
        const Insight* in = findKind(all, InsightKind::KernelConcentration);
        QVERIFY(in);
        QVERIFY2(contains(in->text, "gemm_tiled takes 71% of GPU kernel time (10 launches, "
                                    "71.0 us each)"),
                 in->text.c_str());
        QCOMPARE(in->gpuOps.size(), size_t(10));
        QCOMPARE(in->stake, int64_t(710'000));
    }

    void nothingOnEmptyOrQuietTraces() {
        {
            TraceGen g(path("empty.warpline"));
            const TraceStore store = g.load();
            QVERIFY(findInsights(store).empty());
            QCOMPARE(ReportRegistry::find("insights")->run(store).rowCount(), size_t(0));
        }
        TraceGen g(path("nolaunch.warpline"));
        g.kernel(0, 1'000, 5, 7, "_Z1aPf");
        g.kernel(1'000, 2'000, 6, 7, "_Z1bPf");
        g.kernel(2'000, 3'000, 7, 7, "_Z1cPf");
        g.kernel(3'000, 4'000, 8, 7, "_Z1dPf");
        const TraceStore store = g.load();
        QVERIFY(findInsights(store).empty()); // no stall, no idle, no queue, no dominant kernel
    }

    // Copies and memsets are one cause: a step of 1 ms that copies for 30 us and sets memory for
    // 30 us spends 6% in them, over the 5% that makes a finding, though neither alone is.
    void copiesCountTheirMemsets() {
        TraceGen g(m_dir.filePath("copies.warpline"));
        for (int k = 0; k < 10; ++k) {
            const int64_t t = 1'000'000 + k * 1'000'000LL;
            g.range(t, t + 1'000'000, "step " + std::to_string(k));
            for (int i = 0; i < 3; ++i)
                g.launch(t + i * 1000, t + i * 1000 + 500, t + 10'000 + i * 300'000,
                         t + 10'000 + (i + 1) * 300'000);
            g.memcpy(t + 910'000, t + 940'000, g.api(t + 3000, t + 3500, "cudaMemcpyAsync_v3020"),
                     1 << 20, 1);
            g.memset(t + 940'000, t + 970'000, g.api(t + 4000, t + 4500, "cudaMemsetAsync_v3020"),
                     1 << 20);
        }
        const std::vector<Insight> all = findInsights(g.load());
        const auto copies = std::find_if(all.begin(), all.end(), [](const Insight& in) {
            return in.kind == InsightKind::Copies;
        });
        QVERIFY2(copies != all.end(), "no copies finding");
        const double steps = copies->number("steady_steps");
        QVERIFY(steps >= 8);
        QVERIFY2(std::abs(double(copies->stake) - 60'000 * steps) < 1000,
                 qPrintable(QString::number(copies->stake)));
    }

    // A thread that waits in cudaDeviceSynchronize for 10% of its time: a stall finding (they
    // are made from 5% of the thread's time), over the whole trace.
    void stallsFromFivePercentOfTheThread() {
        TraceGen g(path("stall10.warpline"));
        int64_t now = 1000;
        for (int k = 0; k < 20; ++k) {
            for (int i = 0; i < 9; ++i) {
                g.launch(now, now + 10'000, now + 20'000, now + 90'000);
                now += 100'000;
            }
            g.api(now, now + 100'000, "cudaDeviceSynchronize_v3020");
            now += 100'000;
        }
        const TraceStore store = g.load();
        const std::vector<Insight> all =
            findInsights(store, analyzeRunAhead(store), analyzeSyncStalls(store),
                         analyzeGpuGaps(store), CrossRankAnalysis{});
        const auto stall = std::find_if(all.begin(), all.end(), [](const Insight& in) {
            return in.kind == InsightKind::SyncStall;
        });
        QVERIFY2(stall != all.end(), "no stall finding");
        QCOMPARE(stall->stake, int64_t(20 * 100'000));
        QVERIFY2(stall->text.find("waited 10% of the time") != std::string::npos,
                 stall->text.c_str());
    }

    // GPU idle in 63 short gaps of 50 us and three of 900 us, each 15% of the idle time: the
    // three are the long gaps of a finding of their own (from 10% of the idle time each).
    void longGapsFromTenPercentOfTheIdle() {
        TraceGen g(path("longgaps.warpline"));
        int64_t now = 1'000'000;
        for (int k = 0; k < 67; ++k) {
            g.launch(now - 20'000, now - 10'000, now, now + 60'000);
            now += 60'000 + (k == 10 || k == 30 || k == 50 ? 900'000 : 50'000);
        }
        const std::vector<Insight> all = findInsights(g.load());
        const auto gaps = std::find_if(all.begin(), all.end(), [](const Insight& in) {
            return in.kind == InsightKind::GpuIdle &&
                   in.text.find("in 3 gaps") != std::string::npos;
        });
        QVERIFY2(gaps != all.end(), all.empty() ? "no finding" : all.front().text.c_str());
        QCOMPARE(gaps->stake, int64_t(3 * 900'000));
    }

    // Start-up read as one window: a 50 ms cudaMalloc, 280 ms with no CUDA call, 30 module loads
    // of 1 ms, one 38.99 ms kernel; then 20 steps of 10 ms. Each part is the time it covers,
    // and the sentence names the calls that took it.
    void startUpSaysWhereItsTimeWent() {
        TraceGen g(path("startup.warpline"));
        g.api(0, 50'000'000, "cudaMalloc_v3020");
        for (int k = 0; k < 30; ++k)
            g.api(330'000'000 + k * 1'000'000, 331'000'000 + k * 1'000'000, "cuLibraryLoadData", 0,
                  TraceGen::kTid, true);
        g.launch(360'000'000, 360'005'000, 360'010'000, 399'000'000);
        for (int s = 0; s < 20; ++s) {
            const int64_t t = 400'000'000 + s * 10'000'000LL;
            g.range(t, t + 10'000'000, "step " + std::to_string(s));
            g.launch(t + 100'000, t + 105'000, t + 200'000, t + 9'000'000);
        }
        const TraceStore store = g.load();
        const std::vector<Insight> all = findInsights(store);
        const Insight& in = all.back();
        QCOMPARE(in.kind, InsightKind::StartUp);
        QCOMPARE(in.number("startup_ns"), 400'000'000.0);
        // 50-330 ms, and from the launch's end to the first step (the kernel runs in most of it).
        QCOMPARE(in.number("startup_no_call_ns"), 280'000'000.0 + 39'995'000);
        QCOMPARE(in.number("startup_in_calls_ns"), 80'005'000.0);
        QCOMPARE(in.number("startup_gpu_ns"), 38'990'000.0);
        QCOMPARE(in.number("startup_kernels"), 1.0);
        QCOMPARE(in.number("startup_module_loads"), 30.0);
        QVERIFY2(contains(in.text, "400 ms before the first step: start-up (the process, CUDA and "
                                   "the model being set up): 320 ms with no CUDA call (the "
                                   "longest stretch 280 ms, before cuLibraryLoadData), "),
                 in.text.c_str());
        QVERIFY2(contains(in.text, ", 80.0 ms in CUDA calls (cudaMalloc 50.0 ms, cuLibraryLoadData "
                                   "30.0 ms ×30, cudaLaunchKernel 5.0 us); the GPU worked 39.0 ms "
                                   "of it (1 kernel). The findings above"),
                 in.text.c_str());
        // The steps are alike: no warm-up, and no teardown after the last step's kernel.
        QCOMPARE(in.number("warmup_steps"), 0.0);
        QVERIFY2(!contains(in.text, "teardown"), in.text.c_str());
    }

    // Host work is weighed whole: per 1 ms step, ~430 us of launch cost (short gaps), 300 us
    // without calls ending in a kernel launch (cpu-work) and 245 us ending in a copy to the GPU
    // (input). Launch holds more than either half, less than both: the verdict is host work,
    // named by its larger half, which says the other.
    void hostWorkIsWeighedWhole() {
        TraceGen g(path("host.warpline"));
        for (int k = 0; k < 20; ++k) {
            const int64_t t = 1'000'000 + k * 1'000'000LL;
            g.range(t, t + 1'000'000, "step " + std::to_string(k));
            for (int i = 0; i < 7; ++i) // 50 us apart: launch cost
                g.launch(t + i * 50'000, t + i * 50'000 + 5000, t + i * 50'000 + 6000,
                         t + i * 50'000 + 7000);
            for (int i = 0; i < 3; ++i) // after 300 us without a call: cpu-work
                g.launch(t + 650'000 + i * 2000, t + 651'000 + i * 2000, t + 651'500 + i * 2000,
                         t + 652'000 + i * 2000);
            // After 245 us without a call, the batch is copied in: input.
            const uint32_t c = g.api(t + 900'000, t + 904'000, "cudaMemcpyAsync_v3020");
            g.memcpy(t + 901'000, t + 905'000, c, 4096, 1);
            g.launch(t + 910'000, t + 915'000, t + 916'000, t + 920'000);
        }
        const TraceStore store = g.load();
        const std::vector<Insight> all = findInsights(store);
        QVERIFY(!all.empty());
        const Insight& top = all.front();
        QVERIFY2(top.verdict && top.kind == InsightKind::CpuWork, top.text.c_str());
        const Insight* launch = findKind(all, InsightKind::LaunchBound);
        const Insight* input = findKind(all, InsightKind::InputBound);
        QVERIFY(launch && input);
        QVERIFY(launch->stake > top.stake && launch->stake > input->stake);
        QVERIFY(launch->stake < top.stake + input->stake);
        QVERIFY2(contains(top.text, " of stretches that end in a copy to the GPU (input), the CPU "
                                    "makes no CUDA call for "),
                 top.text.c_str());
        QCOMPARE(top.number("no_call_share"), top.number("share") + input->number("share"));
    }

    // Triton's autotuner keyed on a length that changes every batch (blind batch 6, recorded on
    // the H100 with --python-stacks): the benchmarking holds nearly all the GPU's time, and the
    // first finding says so, naming the user's call; without it the first was a sync stall. Its
    // launches are left out of step detection, so the 20 batches are the steps, and the
    // findings about the GPU's busy time say that time is the tuning's.
    void autotuningInTheRun() {
        const QString file =
            QDir(WARPLINE_TEST_DATA).filePath("corpus/blind-triton-autotune-key.warpline");
        WARPLINE_REQUIRE_DATA(file);
        const TraceStore store = TraceLoader::load(file.toStdString());
        const std::vector<Insight> all = findInsights(store);
        QVERIFY(!all.empty());
        const Insight& top = all.front();
        QCOMPARE(top.kind, InsightKind::Compilation);
        QVERIFY(top.verdict);
        QCOMPARE(analyzeSteps(store).steps.size(), size_t(20));
        // Over the steady state (steps 1 to 19): the first batch's tuning is warm-up.
        QVERIFY2(contains(top.text, "Autotuning in the run: 98% of the GPU's time"),
                 top.text.c_str());
        QVERIFY2(contains(top.text, "for the call at blind_triton_autotune_key.py:53"),
                 top.text.c_str());
        QCOMPARE(top.number("waits"), 228.0);
        // The batches' own launches of the tuned kernel pass through Autotuner.run too, but not
        // through its benchmarking: they are not tuning.
        QCOMPARE(top.number("kernels"), 28'494.0);
        QVERIFY(top.number("share") > 0.95);
        const auto gpuBound = std::find_if(all.begin(), all.end(), [](const Insight& in) {
            return in.kind == InsightKind::GpuBound;
        });
        QVERIFY(gpuBound != all.end());
        QVERIFY2(contains(gpuBound->text, "the autotuner's benchmarking"), gpuBound->text.c_str());
        QVERIFY(gpuBound->stake < top.stake / 10);
        // A trace without autotuning gets no such finding (stacks recorded, Triton not tuning).
        const QString plain = QDir(WARPLINE_TEST_DATA).filePath("torch-gpt-stacks.warpline");
        WARPLINE_REQUIRE_DATA(plain);
        for (const Insight& in : findInsights(TraceLoader::load(plain.toStdString())))
            QVERIFY2(!contains(in.text, "Autotuning in the run"), in.text.c_str());
    }

    // A wait in a copy to the GPU every step gets the copy's advice: PyTorch's upload with
    // non_blocking=False (a cudaStreamSynchronize after it: blind23's U-Net, two of its four
    // waits a step), a C++ program's blocking cudaMemcpy (streams: 8 of each direction). A
    // one-off upload (sync-stall's 1 of 200) is no reason to say it.
    void uploadWaitsGetCopyAdvice_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("advice");
        const QString torch = "copy from pinned memory (pin_memory()) with non_blocking=True";
        const QString cxx = "use cudaMemcpyAsync from pinned host memory (cudaMallocHost)";
        QTest::newRow("torch") << "corpus/blind23-seismic-faults-unet3d.warpline" << torch;
        QTest::newRow("c++") << "streams.warpline" << cxx;
        QTest::newRow("one-off") << "sync-stall.warpline" << QString();
    }
    void uploadWaitsGetCopyAdvice() {
        QFETCH(QString, file);
        QFETCH(QString, advice);
        const QString path = QDir(WARPLINE_TEST_DATA).filePath(file);
        WARPLINE_REQUIRE_DATA(path);
        const std::vector<Insight> all = findInsights(TraceLoader::load(path.toStdString()));
        const auto sync = std::find_if(all.begin(), all.end(), [](const Insight& in) {
            return in.kind == InsightKind::SyncStall;
        });
        QVERIFY(sync != all.end());
        if (advice.isEmpty())
            QVERIFY2(!contains(sync->text, "copy to the GPU"), sync->text.c_str());
        else
            QVERIFY2(contains(sync->text, advice.toStdString()), sync->text.c_str());
    }

    // Every recorded trace: findings ranked by stake (start-up last, whatever its stake), refs
    // inside the store.
    void recordedTracesRankAndRefs_data() {
        QTest::addColumn<QString>("workload");
        for (const char* w : {"runahead", "sync-stall", "gelu", "softmax", "matmul", "streams",
                              "graphs", "mlp", "torch-mlp-sync-every-step", "torch-mlp-sync-end"})
            QTest::newRow(w) << QString(w);
    }
    void recordedTracesRankAndRefs() {
        QFETCH(QString, workload);
        const QString file = QDir(WARPLINE_TEST_DATA).filePath(workload + ".warpline");
        WARPLINE_REQUIRE_DATA(file);
        const TraceStore store = TraceLoader::load(file.toStdString());
        const std::vector<Insight> all = findInsights(store);
        QVERIFY(!all.empty());
        for (size_t i = 0; i < all.size(); ++i) {
            QVERIFY(!all[i].text.empty());
            // The verdict first (with steps), then by stake; start-up or no-steps last.
            QCOMPARE(all[i].verdict, i == 0 && all[i].kind != InsightKind::StartUp &&
                                         all.back().kind == InsightKind::StartUp);
            if (all[i].kind == InsightKind::StartUp || all[i].kind == InsightKind::NoSteps) {
                QCOMPARE(i + 1, all.size());
                QCOMPARE(all[i].stake > 0, all[i].kind == InsightKind::StartUp);
            } else {
                QVERIFY(all[i].stake > 0);
                if (i > 0 && !all[i - 1].verdict)
                    QVERIFY(all[i - 1].stake >= all[i].stake);
            }
            for (const EventRef r : all[i].apiCalls)
                QVERIFY(r.track < store.apiTracks().size() &&
                        r.index < store.apiTracks()[r.track].size());
            for (const EventRef r : all[i].gpuOps)
                QVERIFY(r.track < store.gpuTracks().size() &&
                        r.index < store.gpuTracks()[r.track].size());
        }
    }

    // Each workload's lesson is among its findings.
    void recordedLessons() {
        const QDir data(WARPLINE_TEST_DATA);
        // Every lesson's trace is committed: one missing fails the test, never skips its lesson.
        for (const char* name : {"sync-stall", "runahead", "graphs", "torch-mlp-sync-end"})
            WARPLINE_REQUIRE_DATA(data.filePath(QString(name) + ".warpline"));
        const auto load = [&](const char* name) {
            return TraceLoader::load(data.filePath(QString(name) + ".warpline").toStdString());
        };
        {
            const TraceStore store = load("sync-stall");
            const std::vector<Insight> all = findInsights(store);
            const Insight* in = findKind(all, InsightKind::SyncStall);
            QVERIFY(in);
            // The steady state holds both phases (200 steps reading the loss back, 200 not):
            // the per-step reads cost the GPU 9% of it.
            QVERIFY2(contains(in->text, "of 4 bytes Device-to-Host after stallUpdate (200x)"),
                     in->text.c_str());
            QVERIFY2(contains(in->text, ".item()"), in->text.c_str());
            QVERIFY(in->number("share") > 0.05);
            QVERIFY(in->apiCalls.size() >= 200);
        }
        {
            const TraceStore store = load("runahead");
            const std::vector<Insight> all = findInsights(store);
            const Insight* in = findKind(all, InsightKind::RunAhead);
            QVERIFY(in);
            QVERIFY(in->number("max_depth") >= 100);
            QVERIFY(in->number("max_lag_ns") >= 1e6);
        }
        {
            const TraceStore store = load("graphs");
            const std::vector<Insight> all = findInsights(store);
            const Insight* in = findKind(all, InsightKind::LaunchBound);
            QVERIFY(in);
            QVERIFY2(contains(in->text, "Inside \"eager\""), in->text.c_str());
        }
        {
            const TraceStore store = load("torch-mlp-sync-end");
            const std::vector<Insight> all = findInsights(store);
            const Insight* in = findKind(all, InsightKind::LaunchBound);
            QVERIFY(in);
            QVERIFY2(contains(in->text, "Launch-bound: the GPU idles"), in->text.c_str());
            QVERIFY(in->verdict);
            QVERIFY(in->number("median_kernel_ns") < in->number("median_launch_ns"));
        }
    }

    void tableAndRegistry() {
        TraceGen g(path("table.warpline"));
        for (int s = 0; s < 20; ++s) {
            const int64_t t = s * 150'000LL;
            g.launch(t, t + 5'000, t + 10'000, t + 110'000);
            const uint32_t c = g.api(t + 6'000, t + 120'000, "cudaMemcpy_v3020");
            g.memcpy(t + 112'000, t + 113'000, c, 4, 2);
        }
        const TraceStore store = g.load();
        const Table t = insightTable(store, findInsights(store));
        QVERIFY(t.rowCount() >= 2);
        QCOMPARE(cellInt(t, 0, "Rank"), int64_t(1));
        QCOMPARE(cellText(t, 0, "Kind"), std::string("sync-stall"));
        QVERIFY(contains(cellText(t, 0, "Numbers"), "count=20"));
        QVERIFY(contains(cellText(t, 0, "Refs"), "api "));
        QCOMPARE(cellInt(t, 0, "Events"), int64_t(20));

        for (const char* name : {"runahead", "syncs", "gaps", "utilization", "insights"}) {
            const ReportDef* def = ReportRegistry::find(name);
            QVERIFY2(def, name);
            const Table report = def->run(store, ReportOptions{});
            QVERIFY2(report.rowCount() > 0, name);
            std::ostringstream json;
            writeJson(json, report);
            QVERIFY(json.str().front() == '[');
        }
    }
};

QTEST_GUILESS_MAIN(TestInsights)
#include "tst_insights.moc"
