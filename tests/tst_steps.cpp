// Training steps on real programs recorded on an H100 (tests/data/README.md says how): an
// unmodified GPT-style PyTorch training loop with NVTX "step N" ranges, the same loop without them
// (the steps come from its repeating launches), the loop under torch.compile(mode=
// "reduce-overhead"), and a torchrun DDP job. The steps found equal the steps run; start-up and
// warm-up are told from the steady state; the insights lead with the steady state and give
// start-up one line, last; the view opens on steps, not on start-up; NVTX tables group numbered
// ranges. A synthetic trace checks the repeat detector's boundaries exactly.

#include "analysestracegen.h"
#include "gpugaps.h"
#include "insights.h"
#include "reportregistry.h"
#include "steps.h"
#include "summaries.h"
#include "traceloader.h"
#include "traceopener.h"
#include "tracesession.h"

#include <QtTest>
#include <algorithm>
#include <cmath>
#include <string_view>

using namespace warpline::model;

class TestSteps : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

    static TraceStore load(const char* name) {
        return TraceLoader::load(std::string(WARPLINE_TEST_DATA "/") + name);
    }

    // A launch of kernel `name` at `now`: a 3 us call, the kernel 1 us after it, 2 us long; `now`
    // moves on 5 us.
    static void launchAt(TraceGen& g, int64_t& now, const char* name) {
        g.launch(now, now + 3000, now + 4000, now + 6000, 7, name);
        now += 5000;
    }

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    // Each program's steps as it ran them: count, source, warm-up.
    void realProgramsStepsEqualStepsRun_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("source");
        QTest::addColumn<int>("steps");
        QTest::addColumn<int>("warmup");
        QTest::addColumn<double>("maxMedianMs");
        QTest::newRow("gpt eager, NVTX")
            << "torch-gpt-train.warpline" << int(StepSource::Nvtx) << 30 << 1 << 30.0;
        QTest::newRow("gpt eager, no NVTX")
            << "torch-gpt-train-no-nvtx.warpline" << int(StepSource::Repeats) << 30 << 1 << 30.0;
        QTest::newRow("gpt torch.compile")
            << "torch-gpt-compiled.warpline" << int(StepSource::Nvtx) << 30 << 3 << 10.0;
        QTest::newRow("ddp one rank")
            << "torch-ddp-steps0.warpline" << int(StepSource::Nvtx) << 20 << 2 << 10.0;
        QTest::newRow("mlp sync every step")
            << "torch-mlp-sync-every-step.warpline" << int(StepSource::Nvtx) << 50 << 1 << 30.0;
    }
    void realProgramsStepsEqualStepsRun() {
        QFETCH(QString, file);
        QFETCH(int, source);
        QFETCH(int, steps);
        QFETCH(int, warmup);
        QFETCH(double, maxMedianMs);
        const TraceStore store = load(qPrintable(file));
        const StepAnalysis a = analyzeSteps(store);
        QCOMPARE(int(a.source), source);
        QCOMPARE(int(a.steps.size()), steps);
        QCOMPARE(int(a.warmupSteps()), warmup);
        for (size_t k = 0; k < a.steps.size(); ++k) {
            QCOMPARE(a.steps[k].warmup, k < a.firstSteady);
            QCOMPARE(a.steps[k].number, int64_t(k));
            QVERIFY(a.steps[k].end > a.steps[k].start);
            if (k > 0)
                QVERIFY(a.steps[k].start >= a.steps[k - 1].end);
            QVERIFY(a.steps[k].gpuBusy <= a.steps[k].duration());
            QVERIFY(a.steps[k].gpuBusy > 0);
            QVERIFY(a.steps[k].kernels > 0);
        }
        QVERIFY(a.medianDuration > 0 && a.medianDuration < maxMedianMs * 1e6);
        QVERIFY(double(a.p95Duration) >= a.medianDuration);
        // Python, CUDA and the model take seconds before the first step.
        QVERIFY2(a.startup() > 1'000'000'000, qPrintable(QString::number(a.startup())));
        const TimeWindow steady = a.steadyWindow();
        QCOMPARE(steady.t0, a.steps[a.firstSteady].start);
        QCOMPARE(steady.t1, a.steps.back().end);
        // The view opens on five steady steps.
        const TimeWindow open = a.openingWindow();
        QCOMPARE(open.t0, a.steps[a.firstSteady].start);
        QCOMPARE(open.t1, a.steps[a.firstSteady + 4].end);
    }

    // What a GPT step spends: launch-bound (the GPU idle most of the step), kernels from the main
    // thread and autograd's backward thread, the loss read back every step.
    void gptStepBreakdown() {
        const TraceStore store = load("torch-gpt-train.warpline");
        const StepAnalysis a = analyzeSteps(store);
        QCOMPARE(a.name, std::string("step"));
        for (size_t k = a.firstSteady; k < a.steps.size(); ++k) {
            const Step& s = a.steps[k];
            // Forward and optimizer on the main thread, backward on autograd's: 269 kernels.
            QCOMPARE(s.kernels, a.steps[a.firstSteady].kernels);
            QVERIFY(s.kernels > 200);
            QVERIFY2(s.gpuBusy * 2 < s.duration(), "a launch-bound step is mostly GPU idle");
            QVERIFY(s.launchBoundShare() > 0.3);
            QVERIFY(s.launch > 0);
            QVERIFY(s.memcpy > 0); // the 4-byte loss copy
            QVERIFY(s.syncWait > 0);
            QCOMPARE(s.kernel + s.memcpy + s.memset >= s.gpuBusy, true);
        }
        const Table t = stepTable(store, a);
        QCOMPARE(t.rowCount(), a.steps.size() + 2);
        QCOMPARE(std::get<std::string>(t.cell(0, 12)), std::string("warm-up"));
        QCOMPARE(std::get<std::string>(t.cell(a.steps.size(), 0)), std::string("median"));
        QCOMPARE(std::get<std::string>(t.cell(a.steps.size() + 1, 0)), std::string("p95"));
        QCOMPARE(std::get<int64_t>(t.cell(a.steps.size(), 2)),
                 int64_t(std::llround(a.medianDuration)));
    }

    // Without NVTX ranges, the repeat detector finds the same 30 steps, each beginning with the
    // first launch after the loss was read back, and as long as the steps of the NVTX run.
    void repeatsMatchTheNvtxSteps() {
        const StepAnalysis nvtx = analyzeSteps(load("torch-gpt-train.warpline"));
        const TraceStore store = load("torch-gpt-train-no-nvtx.warpline");
        const StepAnalysis a = analyzeSteps(store);
        QCOMPARE(a.source, StepSource::Repeats);
        QVERIFY(a.period > 200);
        QCOMPARE(a.steps.size(), nvtx.steps.size());
        QCOMPARE(a.warmupSteps(), nvtx.warmupSteps());
        // Every steady step launches what an NVTX step does, the last one too, and ends after
        // reading its loss back.
        for (size_t k = a.firstSteady; k < a.steps.size(); ++k) {
            QCOMPARE(a.steps[k].kernels, nvtx.steps[nvtx.firstSteady].kernels);
            QVERIFY2(a.steps[k].syncWait > 0, qPrintable(QString::number(k)));
        }
        QVERIFY(std::abs(a.medianDuration - nvtx.medianDuration) < 0.3 * nvtx.medianDuration);
        const SyncStallAnalysis stalls = analyzeSyncStalls(store);
        for (size_t k = 1; k + 1 < a.steps.size(); ++k) {
            // A sync stall (loss.item()) ended shortly before each step began ...
            const auto before =
                std::find_if(stalls.stalls.rbegin(), stalls.stalls.rend(),
                             [&](const SyncStall& s) { return s.end <= a.steps[k].start; });
            QVERIFY(before != stalls.stalls.rend());
            QVERIFY2(a.steps[k].start - before->end < a.steps[k].duration() / 5,
                     qPrintable(QString::number(k)));
            // ... and within the step before it.
            QVERIFY(before->start >= a.steps[k - 1].start);
        }
    }

    // A single kernel launched over and over is no loop of steps.
    void oneKernelRepeatedHasNoSteps() {
        const StepAnalysis a = analyzeSteps(load("runahead.warpline"));
        QVERIFY(a.empty());
        QCOMPARE(a.source, StepSource::None);
        QCOMPARE(a.steadyWindow().t0, a.traceBegin);
    }

    // NVTX counters keep their sign: "step -3" to "step 4" are eight steps, -3 first, each
    // lasting until the next starts.
    void negativeStepNumbers() {
        TraceGen g(m_dir.filePath("negative.warpline"));
        for (int k = -3; k <= 4; ++k) {
            const int64_t t = 1'000'000 + (k + 3) * 100'000LL;
            g.range(t, t + 60'000, "step " + std::to_string(k));
            g.launch(t + 1'000, t + 6'000, t + 7'000, t + 50'000);
        }
        const StepAnalysis a = analyzeSteps(g.load());
        QCOMPARE(a.source, StepSource::Nvtx);
        QCOMPARE(a.steps.size(), size_t(8));
        for (size_t i = 0; i < a.steps.size(); ++i)
            QCOMPARE(a.steps[i].number, int64_t(i) - 3);
        QCOMPARE(a.steps[0].duration(), int64_t(100'000));
        QCOMPARE(trailingNumber("step -12"), std::optional<int64_t>(-12));
        QCOMPARE(trailingNumber("layer2-3"), std::optional<int64_t>(3));
        QCOMPARE(trailingNumber("ProfilerStep#7"), std::optional<int64_t>(7));
        QVERIFY(!trailingNumber("step").has_value());
    }

    // A numbered range is a step when its name holds a step word (step, iter, batch, in any
    // case); another numbered range that repeats ("layer N", its numbers recurring) is not a
    // loop's step.
    void stepWords_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<bool>("isStep");
        QTest::newRow("step") << "step" << true;
        QTest::newRow("iter") << "train_iter" << true;
        QTest::newRow("Iteration") << "Iteration" << true;
        QTest::newRow("batch") << "batch" << true;
        QTest::newRow("layer") << "layer" << false;
    }
    void stepWords() {
        QFETCH(QString, name);
        QFETCH(bool, isStep);
        TraceGen g(m_dir.filePath("words.warpline"));
        for (int k = 0; k < 8; ++k) {
            const int64_t t = 1'000'000 + k * 100'000LL;
            g.range(t, t + 60'000, name.toStdString() + " " + std::to_string(isStep ? k : k % 4));
            g.launch(t + 1'000, t + 6'000, t + 7'000, t + 50'000);
        }
        const StepAnalysis a = analyzeSteps(g.load());
        if (isStep) {
            QCOMPARE(a.source, StepSource::Nvtx);
            QCOMPARE(a.name, name.toStdString());
            QCOMPARE(a.steps.size(), size_t(8));
        } else {
            QVERIFY(a.source != StepSource::Nvtx);
            QCOMPARE(a.steps.size(), size_t(0));
            QVERIFY2(QString::fromStdString(a.noStepsReason).contains("holds no step word"),
                     a.noStepsReason.c_str());
        }
    }

    // Two kernels launched in turn, over and over (a launch loop, as in a benchmark), are no
    // loop of steps: a step launches at least three GPU ops.
    // Without a step word, ranges whose counter counts up through the run are the loop's steps:
    // a service's "tenant3/req0005", the tenant's digits aside. A counted range that covers
    // little of its span (a checkpoint every N steps) is not.
    void countingRangesAreSteps_data() {
        QTest::addColumn<int64_t>("length");
        QTest::addColumn<bool>("isStep");
        QTest::newRow("requests") << int64_t(60'000) << true;
        QTest::newRow("checkpoints") << int64_t(20'000) << false;
    }
    void countingRangesAreSteps() {
        QFETCH(int64_t, length);
        QFETCH(bool, isStep);
        TraceGen g(m_dir.filePath("counted.warpline"));
        for (int k = 0; k < 12; ++k) {
            const int64_t t = 1'000'000 + k * 100'000LL;
            g.range(t, t + length,
                    "tenant" + std::to_string(k * 7 % 5) + "/req" + std::to_string(100 + k));
            g.launch(t + 1'000, t + 6'000, t + 7'000, t + 10'000);
        }
        const StepAnalysis a = analyzeSteps(g.load());
        if (!isStep) {
            QVERIFY(a.source != StepSource::Nvtx);
            return;
        }
        QCOMPARE(a.source, StepSource::Nvtx);
        QCOMPARE(a.steps.size(), size_t(12));
        for (size_t i = 0; i < a.steps.size(); ++i)
            QCOMPARE(a.steps[i].number, int64_t(100 + i));
    }

    // A counter followed by a label is counted by its first run of digits: blind21's Holter
    // service names each recording "recording 17 CardioMem-5" (the recorder's model after the
    // counter, some ending in digits, some not). Its 12 recordings are the steps, numbered 17 on;
    // "epoch 2 step 5"'s first counter (the epoch) repeats, so it is no step counter. Ranges one
    // after another with the same first counter are one step: blind23's PPO trainer names the
    // phases of each iteration "it03.rollout" and "it03.update" (it had 511 steps for 32).
    void leadingCountersAreSteps_data() {
        QTest::addColumn<QString>("naming");
        QTest::newRow("recordings") << "recordings";
        QTest::newRow("epochs") << "epochs";
        QTest::newRow("phases of an iteration") << "phases";
    }
    void leadingCountersAreSteps() {
        QFETCH(QString, naming);
        const char* models[] = {"CardioMem-5", "Lifecard-CF", "DR180+", "SEER-1000"};
        TraceGen g(m_dir.filePath("leading.warpline"));
        for (int k = 0; k < 12; ++k) {
            const int64_t t = 1'000'000 + k * 100'000LL;
            if (naming == "phases") {
                const std::string it = (k + 2 < 10 ? "it0" : "it") + std::to_string(k + 2);
                g.range(t, t + 60'000, it + ".rollout");
                g.launch(t + 1'000, t + 6'000, t + 7'000, t + 10'000);
                g.range(t + 61'000, t + 95'000, it + ".update");
                g.launch(t + 62'000, t + 66'000, t + 67'000, t + 70'000);
                continue;
            }
            g.range(t, t + 60'000,
                    naming == "epochs"
                        ? "epoch " + std::to_string(k / 6) + " phase " + std::to_string(k % 6)
                        : "recording " + std::to_string(17 + k) + " " + models[k * 5 % 4]);
            g.launch(t + 1'000, t + 6'000, t + 7'000, t + 10'000);
        }
        const StepAnalysis a = analyzeSteps(g.load());
        if (naming == "epochs") {
            QVERIFY(a.source != StepSource::Nvtx);
            return;
        }
        const bool phases = naming == "phases";
        QCOMPARE(a.source, StepSource::Nvtx);
        QCOMPARE(a.name, std::string(phases ? "it" : "recording"));
        QCOMPARE(a.steps.size(), size_t(12));
        for (size_t i = 0; i < a.steps.size(); ++i) {
            QCOMPARE(a.steps[i].number, int64_t((phases ? 2 : 17) + i));
            if (phases) // from the rollout's start to the next iteration's
                QCOMPARE(a.steps[i].start, int64_t(1'000'000 + i * 100'000LL));
        }
    }

    // A C++ pipeline's one range a frame, "process_frame", without a counter or a step word, is
    // its loop's step when its instances cover nearly all of their span; the phases of a step
    // ("forward", "backward") each cover part of it and are not.
    void loopRangesAreSteps_data() {
        QTest::addColumn<bool>("phases");
        QTest::newRow("frames") << false;
        QTest::newRow("phases") << true;
    }
    void loopRangesAreSteps() {
        QFETCH(bool, phases);
        TraceGen g(m_dir.filePath("loop.warpline"));
        for (int k = 0; k < 12; ++k) {
            const int64_t t = 1'000'000 + k * 100'000LL;
            if (phases) {
                g.range(t, t + 40'000, "forward");
                g.range(t + 45'000, t + 95'000, "backward");
            } else {
                g.range(t, t + 95'000, "process_frame");
            }
            g.launch(t + 1'000, t + 6'000, t + 7'000, t + 10'000);
        }
        const StepAnalysis a = analyzeSteps(g.load());
        if (phases) {
            QVERIFY(a.source != StepSource::Nvtx);
            return;
        }
        QCOMPARE(a.source, StepSource::Nvtx);
        QCOMPARE(a.name, std::string("process_frame"));
        QCOMPARE(a.steps.size(), size_t(12));
    }

    // A radio correlator's "block" ranges, with a "dump" range after every fourth: the blocks
    // cover 76% of their span, and with the dumps between them (a name at most half as frequent:
    // the loop's periodic extra) 95%. The blocks are the steps, each dump in the step before it.
    void loopRangesWithPeriodicExtrasAreSteps() {
        TraceGen g(m_dir.filePath("blocks.warpline"));
        int64_t t = 1'000'000;
        for (int k = 0; k < 24; ++k) {
            g.range(t, t + 95'000, "block");
            g.launch(t + 1'000, t + 6'000, t + 7'000, t + 10'000);
            t += 100'000;
            if (k % 4 == 3) {
                g.range(t, t + 95'000, "dump");
                g.launch(t + 1'000, t + 6'000, t + 7'000, t + 10'000, 7, "_Z4dumpv");
                t += 100'000;
            }
        }
        const StepAnalysis a = analyzeSteps(g.load());
        QCOMPARE(a.source, StepSource::Nvtx);
        QCOMPARE(a.name, std::string("block"));
        QCOMPARE(a.steps.size(), size_t(24));
    }

    // Gradient accumulation: 4 micro-batches of the same 30 kernels, then the optimizer (three
    // multi_tensor_apply launches, its segments irregular) and, every other step, a logged loss
    // (a kernel and a blocking copy). The launches repeat at the micro-batch; the optimizer runs
    // once per step, every fourth cut step: the steps are the optimizer steps (blind16's ViT
    // trainer: 42 for 42, was 211 micro-batches and pieces).
    void gradientAccumulationStepsEndAtTheOptimizer() {
        TraceGen g(m_dir.filePath("accum.warpline"));
        int64_t now = 1000;
        std::vector<std::string> names;
        for (int i = 0; i < 30; ++i)
            names.push_back("_Z2mb" + std::to_string(i) + "v");
        constexpr int kSteps = 16;
        for (int step = 0; step < kSteps; ++step) {
            for (int micro = 0; micro < 4; ++micro)
                for (const std::string& name : names)
                    launchAt(g, now, name.c_str());
            for (int i = 0; i < 3; ++i)
                launchAt(g, now, "multi_tensor_apply_kernel");
            if (step % 2 == 1) {
                launchAt(g, now, "_Z4lossv");
                g.api(now, now + 20'000, "cudaMemcpy_v3020");
                now += 25'000;
            }
        }
        const StepAnalysis a = analyzeSteps(g.load());
        QCOMPARE(a.source, StepSource::Repeats);
        QVERIFY2(a.steps.size() >= kSteps - 2 && a.steps.size() <= kSteps,
                 qPrintable(QString::number(a.steps.size())));
    }

    // Gradient accumulation annotated per micro-batch: "micro_step" twice, then the optimizer in
    // "optimizer_step" (Adam's multi_tensor_apply), and an "eval" range every 8 steps. The
    // micro-steps hold the most range time, but each optimizer step ends a step: 16 steps, not
    // 32 (blind18's LoRA fine-tune: 110 for 110, was 220 micro-steps). An "eval_step" every 4
    // micro-steps that launches no optimizer kernel is not the optimizer's, and the micro-steps
    // stay the steps.
    void annotatedAccumulationStepsEndAtTheOptimizer_data() {
        QTest::addColumn<QString>("closing");
        QTest::addColumn<QString>("kernel");
        QTest::addColumn<int>("steps");
        QTest::newRow("optimizer") << "optimizer_step"
                                   << "multi_tensor_apply_kernel" << 16;
        QTest::newRow("evaluation") << "eval_step"
                                    << "_Z4evalv" << 32;
    }
    void annotatedAccumulationStepsEndAtTheOptimizer() {
        QFETCH(QString, closing);
        QFETCH(QString, kernel);
        QFETCH(int, steps);
        TraceGen g(m_dir.filePath("accum-nvtx-" + closing + ".warpline"));
        int64_t now = 1000;
        const std::string closingName = closing.toStdString(), kernelName = kernel.toStdString();
        for (int step = 0; step < 16; ++step) {
            for (int micro = 0; micro < 2; ++micro) {
                const int64_t start = now;
                for (int i = 0; i < 12; ++i)
                    launchAt(g, now, ("_Z2mb" + std::to_string(i) + "v").c_str());
                g.range(start, now, "micro_step");
            }
            const int64_t start = now;
            for (int i = 0; i < 3; ++i)
                launchAt(g, now, kernelName.c_str());
            g.range(start, now, closingName.c_str());
            if (step % 8 == 7) {
                const int64_t eval = now;
                for (int i = 0; i < 20; ++i)
                    launchAt(g, now, "_Z7forwardv");
                g.range(eval, now, "eval");
            }
        }
        const StepAnalysis a = analyzeSteps(g.load());
        QCOMPARE(a.source, StepSource::Nvtx);
        QCOMPARE(a.name, std::string("micro_step"));
        QCOMPARE(a.steps.size(), size_t(steps));
        if (steps == 16) {
            QCOMPARE(a.steps[1].number, 1); // numbered as the optimizer steps, not micro-steps
            QVERIFY(a.steps[1].range.valid());
        }
    }

    // A recurrent model over inputs of varying length: each step runs its cell (two kernels) 750
    // to 1,750 times, then the optimizer; no two steps launch alike, and the only exact repeat is
    // the loop of an evaluation's cell after the last step, 5,500 time steps, the last 16,500
    // launches (the tail the search reads) but 8% of all. That is not the loop: the optimizer's
    // runs cut the 70 steps (blind19's CRNN: 393 steps as it ran them, was 1,007 LSTM time steps
    // over 28 ms of a 34 s run).
    void varyingStepsEndAtTheOptimizer() {
        TraceGen g(m_dir.filePath("varying-rnn.warpline"));
        int64_t now = 1000;
        constexpr int kSteps = 70;
        for (int step = 0; step < kSteps; ++step) {
            launchAt(g, now, "_Z5embedv");
            const int length = 750 + (step * 379) % 1001;
            for (int t = 0; t < length; ++t) {
                launchAt(g, now, "_Z4gemmv");
                launchAt(g, now, "_Z4cellv");
            }
            launchAt(g, now, "_Z4lossv");
            for (int i = 0; i < 3; ++i)
                launchAt(g, now, "multi_tensor_apply_kernel");
        }
        for (int t = 0; t < 5500; ++t) {
            launchAt(g, now, "_Z8evalGemmv");
            launchAt(g, now, "_Z8evalCellv");
            launchAt(g, now, "_Z6decodev");
        }
        const StepAnalysis a = analyzeSteps(g.load());
        QCOMPARE(a.source, StepSource::Repeats);
        QCOMPARE(a.steps.size(), size_t(kSteps - 1)); // the first step's forward is start-up
        QCOMPARE(a.period, 0u);
    }

    // A service's requests of four shapes, each a few launches longer than the last and with
    // kernels of its own, then its forecast read back: drawn irregularly for 45 requests, then in
    // turn for the last 15, which repeat exactly over the last quarter only. The name that begins
    // each request cuts the last half into regular steps, four times as many: those are the steps
    // (blind16's compiled forecaster: 122 for 123, was its last 21).
    void varyingRequestsBeforeAnExactTail() {
        TraceGen g(m_dir.filePath("requests.warpline"));
        int64_t now = 1000;
        constexpr int kRequests = 60;
        for (int r = 0; r < kRequests; ++r) {
            const int shape = r < 45 ? (r * r + 3 * r) % 7 % 4 : r % 4;
            launchAt(g, now, "_Z5embedv");
            // Each shape's compiled graph: kernels of its own.
            const std::string layer = "_Z6layer" + std::to_string(shape) + "v";
            for (int i = 0; i < 10 + shape; ++i)
                launchAt(g, now, i % 2 ? layer.c_str() : "_Z4normv");
            launchAt(g, now, "_Z4headv");
            const uint32_t c = g.api(now, now + 20'000, "cudaMemcpy_v3020");
            g.memcpy(now + 18'000, now + 19'000, c, 4, 2);
            now += 40'000;
        }
        const StepAnalysis a = analyzeSteps(g.load());
        QCOMPARE(a.source, StepSource::Repeats);
        QVERIFY2(a.steps.size() >= kRequests - 3 && a.steps.size() <= kRequests,
                 qPrintable(QString::number(a.steps.size())));
    }

    void twoKernelsInTurnHaveNoSteps() {
        TraceGen g(m_dir.filePath("pair.warpline"));
        int64_t now = 1000;
        for (int k = 0; k < 60; ++k) {
            g.launch(now, now + 3000, now + 4000, now + 6000, 7, k % 2 ? "_Z1Av" : "_Z1Bv");
            now += 5000;
        }
        const StepAnalysis a = analyzeSteps(g.load());
        QVERIFY2(a.empty(), qPrintable(QString::number(a.steps.size())));
        QCOMPARE(a.source, StepSource::None);
    }

    // A kernel is launch-bound when it runs shorter than the launch call that started it: of
    // kernels of 1, 2, 4 and 5 us after 3 us calls, two in four. The step table shows that share,
    // and its median and p95 rows are those of the steady steps (nearest rank, as nsys).
    void launchBoundShareAndStepStatistics() {
        TraceGen g(m_dir.filePath("bound.warpline"));
        constexpr int kSteps = 40;
        int64_t t = 1'000'000;
        for (int k = 0; k < kSteps; ++k) {
            // Back to back, step k lasts 100 us + k us (the last ones longest); the first one,
            // 300 us, is warm-up.
            const int64_t length = (k == 0 ? 300'000 : 100'000 + k * 1000);
            g.range(t, t + length, "step " + std::to_string(k));
            int64_t at = t + 1000;
            for (const int64_t us : {1, 2, 4, 5}) {
                g.launch(at, at + 3000, at + 3500, at + 3500 + us * 1000);
                at += 10'000;
            }
            t += length;
        }
        const TraceStore store = g.load();
        const StepAnalysis a = analyzeSteps(store);
        QCOMPARE(a.steps.size(), size_t(kSteps));
        QCOMPARE(a.firstSteady, size_t(1));
        for (const Step& s : a.steps) {
            QCOMPARE(s.kernels, uint64_t(4));
            QCOMPARE(s.launchBoundKernels, uint64_t(2));
        }
        // Steady durations, sorted: median and nearest-rank p95, computed here.
        std::vector<int64_t> d;
        for (size_t k = a.firstSteady; k < a.steps.size(); ++k)
            d.push_back(a.steps[k].duration());
        std::sort(d.begin(), d.end());
        const size_t n = d.size();
        const double median =
            n % 2 ? double(d[n / 2]) : (double(d[n / 2 - 1]) + double(d[n / 2])) / 2;
        const int64_t p95 = d[size_t(std::ceil(0.95 * double(n))) - 1];
        QCOMPARE(a.medianDuration, median);
        QCOMPARE(a.p95Duration, p95);
        const Table table = stepTable(store, a);
        QCOMPARE(table.rowCount(), size_t(kSteps + 2));
        const int duration = table.columnIndex("Duration (ns)");
        const int bound = table.columnIndex("Launch Bound (%)");
        QVERIFY(duration >= 0 && bound >= 0);
        for (size_t r = 0; r < size_t(kSteps); ++r)
            QCOMPARE(std::get<double>(table.cell(r, size_t(bound))), 50.0);
        QCOMPARE(std::get<int64_t>(table.cell(kSteps, size_t(duration))),
                 int64_t(std::llround(median)));
        QCOMPARE(std::get<int64_t>(table.cell(kSteps + 1, size_t(duration))), p95);
        QCOMPARE(std::get<double>(table.cell(kSteps + 1, size_t(bound))), 50.0);
    }

    // A step lasts until the next one begins, over the loop's waits for its next batch, some
    // longer than others (a DataLoader that delivers late now and then), but not over a pause far
    // longer than the loop's usual waits (an evaluation pass): 4x the waits' 75th percentile
    // (nearest rank: of 14 waits of 40 us, 3 of 200 us, one of 300 us and the pause, 200 us).
    void stepsSpanTheWaitsBetweenThem() {
        TraceGen g(m_dir.filePath("waits.warpline"));
        int64_t t = 1'000'000;
        std::vector<int64_t> rangeEnd;
        for (int k = 0; k < 20; ++k) {
            g.range(t, t + 20'000, "step " + std::to_string(k));
            for (int i = 0; i < 3; ++i)
                g.launch(t + 1000 + i * 5000, t + 3000 + i * 5000, t + 4000 + i * 5000,
                         t + 8000 + i * 5000);
            rangeEnd.push_back(t + 20'000);
            t += 20'000 + (k == 9                        ? 2'000'000
                           : k == 15                     ? 300'000
                           : k == 3 || k == 7 || k == 12 ? 200'000
                                                         : 40'000);
        }
        const StepAnalysis a = analyzeSteps(g.load());
        QCOMPARE(a.source, StepSource::Nvtx);
        QCOMPARE(a.steps.size(), size_t(20));
        for (size_t k = 0; k + 1 < a.steps.size(); ++k)
            QCOMPARE(a.steps[k].end, k == 9 ? rangeEnd[k] : a.steps[k + 1].start);
        QCOMPARE(a.steps.back().end, rangeEnd.back());
    }

    // A loop that runs two steps ahead of the GPU (a bounded launch queue): each step's kernels
    // run 200 us after the 100 us step launched them, so the steps are measured where the GPU
    // runs them, from the first kernel of one to the first kernel of the next.
    void stepsTwoAheadAreMeasuredOnTheGpu() {
        TraceGen g(m_dir.filePath("ahead.warpline"));
        std::vector<int64_t> firstKernel;
        for (int k = 0; k < 12; ++k) {
            const int64_t t = 1'000'000 + k * 100'000LL;
            g.range(t, t + 100'000, "step " + std::to_string(k));
            for (int i = 0; i < 3; ++i)
                g.launch(t + i * 30'000, t + i * 30'000 + 5000, t + 200'000 + i * 30'000,
                         t + 225'000 + i * 30'000);
            firstKernel.push_back(t + 200'000);
        }
        const StepAnalysis a = analyzeSteps(g.load());
        QCOMPARE(a.steps.size(), size_t(12));
        QVERIFY(a.measuredOnGpu);
        for (size_t k = 0; k < a.steps.size(); ++k)
            QCOMPARE(a.steps[k].start, firstKernel[k]);
    }

    // One kernel launched over and over, with a wait for the GPU after 6 launches most of the
    // time but after 20 in four waits of ten: 60% regular, not the 80% that makes the waits the
    // ends of steps. No steps.
    void irregularWaitsAreNoSteps() {
        TraceGen g(m_dir.filePath("irregular.warpline"));
        int64_t now = 1000;
        const auto wait = [&] {
            g.api(now, now + 20'000, "cudaDeviceSynchronize_v3020");
            now += 25'000;
        };
        wait();
        for (const int n : {6, 20, 6, 6, 20, 6, 20, 6, 6, 20}) {
            for (int i = 0; i < n; ++i) {
                g.launch(now, now + 3000, now + 4000, now + 6000);
                now += 5000;
            }
            wait();
        }
        const StepAnalysis a = analyzeSteps(g.load());
        QVERIFY2(a.empty(), qPrintable(QString::number(a.steps.size())));
    }

    // A step of 40 launches back to back, then five reads each N launches after the last: not
    // dense over the step (a wait every 12 launches or more), but up to kDenseStretchLaunches
    // launches between the reads (a statistic computed per tensor, then .item()) are too few to
    // capture or fuse apart from them. Their time is the waits' (Sync), beyond the refill after
    // each wait (as long as the wait); the 40 launches' stays Launch. With more launches between
    // the reads, theirs stays Launch too.
    void waitsAFewLaunchesApartCostTheirLaunches_data() {
        QTest::addColumn<int>("between");
        QTest::addColumn<bool>("dense");
        QTest::newRow("4 launches") << 4 << true;
        QTest::newRow("10 launches") << 10 << true; // a GAN's monitor: 5-10 a read
        QTest::newRow("16 launches") << 16 << true;
        QTest::newRow("17 launches") << 17 << false;
        QTest::newRow("30 launches") << 30 << false;
    }
    void waitsAFewLaunchesApartCostTheirLaunches() {
        QFETCH(int, between);
        QFETCH(bool, dense);
        TraceGen g(m_dir.filePath(QStringLiteral("densewaits-%1.warpline").arg(between)));
        int64_t now = 1'000'000;
        int64_t blockLaunch = 0, readLaunch = 0; // CPU time of each part with no GPU op
        for (int k = 0; k < 8; ++k) {
            const int64_t stepStart = now;
            for (int i = 0; i < 40; ++i) {
                launchAt(g, now, "gemm");
                if (k == 4)
                    blockLaunch += 3000; // the 5 us of a launch: 2 of them kernel
            }
            for (int r = 0; r < 5; ++r) {
                for (int i = 0; i < between; ++i)
                    launchAt(g, now, i % 2 ? "abs" : "max");
                g.api(now, now + 4'000, "cudaDeviceSynchronize_v3020");
                now += 5'000;
                if (k == 4) // the first read's: before any wait
                    (r == 0 || !dense ? blockLaunch : readLaunch) += between * 3000;
            }
            g.range(stepStart, now, "step " + std::to_string(k));
        }
        const StepAnalysis a = analyzeSteps(g.load());
        QCOMPARE(a.steps.size(), size_t(8));
        const StepBreakdown& c = a.steps[4].causes;
        QCOMPARE(c.total(), a.steps[4].duration());
        // Launch: the block's launches and the first read's, before any wait; with more launches
        // between the reads, theirs too (less the refill after each wait). As long as their
        // calls and gaps (3 of every 5 us).
        // Up to one launch more or less; less up to the five refills where they are Launch's.
        const int64_t refills = dense ? 0 : 5 * 4'000;
        QVERIFY2(c[StepCause::Launch] >= blockLaunch - refills - 5'000 &&
                     c[StepCause::Launch] <= blockLaunch + 5'000,
                 qPrintable(QStringLiteral("launch %1, expected %2 less up to %3")
                                .arg(c[StepCause::Launch])
                                .arg(blockLaunch)
                                .arg(refills)));
        // The waits themselves, and between a few launches the reads' launches: Sync.
        QVERIFY2(c[StepCause::Sync] >= readLaunch + 5 * 4'000,
                 qPrintable(QString::number(c[StepCause::Sync])));
        if (!dense)
            QVERIFY2(c[StepCause::Sync] <= 5 * 4'000 + refills + 5'000,
                     qPrintable(QString::number(c[StepCause::Sync])));
    }

    // A step that loads a module (JIT compilation of a new kernel) and then runs no CUDA call
    // for a while: the GPU's idle time there is compilation, not CPU work, from one load on.
    void oneModuleLoadMakesTheIdleCompilation() {
        TraceGen g(m_dir.filePath("compile.warpline"));
        for (int k = 0; k < 10; ++k) {
            const int64_t t = 1'000'000 + k * 1'000'000LL;
            g.range(t, t + 1'000'000, "step " + std::to_string(k));
            for (int i = 0; i < 3; ++i)
                g.launch(t + i * 10'000, t + i * 10'000 + 5000, t + i * 10'000 + 6000,
                         t + i * 10'000 + 9000);
            if (k == 5)
                g.api(t + 100'000, t + 150'000, "cuModuleLoadData", 0, TraceGen::kTid, true);
        }
        const StepAnalysis a = analyzeSteps(g.load());
        QCOMPARE(a.steps.size(), size_t(10));
        for (size_t k = 0; k < a.steps.size(); ++k) {
            const StepBreakdown& c = a.steps[k].causes;
            QCOMPARE(c.moduleLoads, uint32_t(k == 5));
            if (k == 5) {
                QVERIFY2(c[StepCause::Compile] > 800'000,
                         qPrintable(QString::number(c[StepCause::Compile])));
                QCOMPARE(c[StepCause::CpuWork] + c[StepCause::Input], int64_t(0));
            } else {
                QCOMPARE(c[StepCause::Compile], int64_t(0));
                QVERIFY(c[StepCause::CpuWork] > 800'000);
            }
        }
    }

    // A PyTorch profiler trace: only ProfilerStep#N ranges are steps; its operators
    // (CudnnBatchNormBackward0 holds "batch") are not.
    void profilerStepsOnly() {
        const QString file = QDir(QStringLiteral(WARPLINE_TEST_DATA "/corpus"))
                                 .filePath("profiler-cnn.pt.trace.json.gz");
        if (!QFile::exists(file))
            QFAIL("tests/data/corpus/profiler-cnn.pt.trace.json.gz is missing");
        const StepAnalysis a = analyzeSteps(TraceOpener::open(file.toStdString()));
        QCOMPARE(a.source, StepSource::Nvtx);
        QCOMPARE(a.name, std::string("ProfilerStep"));
        QCOMPARE(a.steps.size(), size_t(8));
        for (size_t i = 0; i < a.steps.size(); ++i)
            QCOMPARE(a.steps[i].number, int64_t(i) + 3);
    }

    // Generated: an RNN-like step, a cell of 3 kernels run 40 times, then an optimizer kernel,
    // 12 steps. The shift matches the cell (period 3); the step is the optimizer's period.
    void innerLoopIsNotTheStep() {
        TraceGen g(m_dir.filePath("rnn.warpline"));
        int64_t now = 1000;
        const auto launch = [&](const char* name) { launchAt(g, now, name); };
        for (int step = 0; step < 12; ++step) {
            for (int t = 0; t < 40; ++t) {
                launch("_Z4cellAv");
                launch("_Z4cellBv");
                launch("_Z4cellCv");
            }
            launch("multi_tensor_apply_kernel");
        }
        const TraceStore store = g.load();
        const StepAnalysis a = analyzeSteps(store);
        QCOMPARE(a.source, StepSource::Repeats);
        QVERIFY2(a.steps.size() >= 10 && a.steps.size() <= 12,
                 qPrintable(QString::number(a.steps.size())));
        QCOMPARE(a.period, uint32_t(121));
    }

    // An ODE solver's iteration: 800 function evaluations of 23 launches (18,400, more than the
    // repeat search's window), then a backward pass of 300 slower launches and the optimizer.
    // The window sees evaluations only; the iterations, each ended by its backward pass and
    // optimizer, are the steps (blind15_neural_ode_rk4.py: 63 for 62, was 39,680).
    void innerLoopLongerThanTheSearch() {
        TraceGen g(m_dir.filePath("ode.warpline"));
        int64_t now = 1000;
        static const char* const kEval[] = {"_Z5gemmAv", "_Z4tanhv", "_Z5gemmBv", "_Z3addv"};
        for (int iteration = 0; iteration < 5; ++iteration) {
            for (int e = 0; e < 800; ++e)
                for (int k = 0; k < 23; ++k)
                    launchAt(g, now, kEval[k % 4]);
            for (int k = 0; k < 300; ++k) {
                g.launch(now, now + 3000, now + 4000, now + 90'000, 7, "_Z8backwardv");
                now += 100'000;
            }
            launchAt(g, now, "multi_tensor_apply_kernel");
        }
        const StepAnalysis a = analyzeSteps(g.load());
        QCOMPARE(a.source, StepSource::Repeats);
        QVERIFY2(a.steps.size() >= 4 && a.steps.size() <= 5,
                 qPrintable(QString::number(a.steps.size())));
    }

    // Generated, as blind21's constellation propagator runs (tests/corpus/
    // blind21_constellation_rk4_conjunction.py): each of 100 steps propagates 12 orbital shells
    // one after another, each shell's RK4 the same 30 launches (4 evaluations of 6 kernels, then
    // 6 to combine them) and nothing launched once a step, every name 4 to 12 times a shell. A
    // screening of 4 chunks after step 50, and a final one of 16 chunks after the loop, each chunk
    // the same 91 launches. No name occurs once a period: the steps start at a run of names that
    // does, and are the shells (1,200); the final screening is tear-down, not the loop.
    void identicalInnerIterationsAreSteps() {
        TraceGen g(m_dir.filePath("shells.warpline"));
        int64_t now = 1000;
        const auto launch = [&](const char* name) { launchAt(g, now, name); };
        static const char* const kEval[] = {"mul", "add", "pow", "div", "mul", "add"};
        static const char* const kCombine[] = {"add", "mul", "add", "mul", "add", "div"};
        const auto screening = [&](int chunks) {
            for (int c = 0; c < chunks; ++c) {
                for (int k = 0; k < 90; ++k)
                    launch(("_Z6screenILi" + std::to_string(k % 45) + "EEvv").c_str());
                launch("item");
            }
        };
        for (int step = 0; step < 100; ++step) {
            for (int shell = 0; shell < 12; ++shell) {
                for (int e = 0; e < 4; ++e)
                    for (const char* name : kEval)
                        launch(name);
                for (const char* name : kCombine)
                    launch(name);
            }
            if (step == 49)
                screening(4);
        }
        screening(16);
        const StepAnalysis a = analyzeSteps(g.load());
        QCOMPARE(a.source, StepSource::Repeats);
        QCOMPARE(a.period, 30u);
        QVERIFY2(a.steps.size() >= 1190 && a.steps.size() <= 1200,
                 qPrintable(QString::number(a.steps.size())));
    }

    // Generated, as blind22's storm surge runs (tests/corpus/blind22_storm_surge_swe_substeps.py):
    // each of 60 output intervals updates the wind forcing (20 launches, one of their names its
    // own), takes 12 identical sub-steps of 30 launches (one name once each) and updates the
    // running maximum, with no read-back. The interval is the step, not the sub-step: a loop that
    // logs every N steps reads its value back, this one never waits.
    void subStepsWithAnUpdateMakeOneStep() {
        TraceGen g(m_dir.filePath("surge.warpline"));
        int64_t now = 1000;
        const auto launch = [&](const std::string& name) { launchAt(g, now, name.c_str()); };
        const auto op = [](int k) { return "_Z2opILi" + std::to_string(k) + "EEvv"; };
        for (int interval = 0; interval < 60; ++interval) {
            for (int k = 0; k < 20; ++k)
                launch(k % 5 == 4 ? std::string("exp") : op(k % 6));
            for (int sub = 0; sub < 12; ++sub) {
                for (int k = 0; k < 29; ++k)
                    launch(op(k % 11));
                launch("where");
            }
            launch("maximum");
        }
        const StepAnalysis a = analyzeSteps(g.load());
        QCOMPARE(a.source, StepSource::Repeats);
        QCOMPARE(a.period, 381u);
        QVERIFY2(a.steps.size() >= 58 && a.steps.size() <= 60,
                 qPrintable(QString::number(a.steps.size())));
    }

    // Generated: 3 set-up launches, then 8 steps of [A, B, C] and a blocking copy; the first step
    // launches one extra kernel. Steps begin at A, the launch right after each copy returned.
    void repeatsOfAGeneratedLoop() {
        TraceGen g(m_dir.filePath("loop.warpline"));
        int64_t now = 1000;
        const auto launch = [&](const char* name) { launchAt(g, now, name); };
        for (const char* name : {"init_a", "init_b", "init_c"}) {
            launch(name);
            now += 50'000;
        }
        for (int step = 0; step < 8; ++step) {
            for (const char* name : {"A", "B", "C"})
                launch(name);
            if (step == 0)
                launch("autotune");
            // loss.item(): a blocking 4-byte copy that waits for the step's kernels.
            const uint32_t c = g.api(now, now + 20'000, "cudaMemcpy_v3020");
            g.memcpy(now + 18'000, now + 19'000, c, 4, 2);
            now += 40'000;
        }
        const TraceStore store = g.load();
        const StepAnalysis a = analyzeSteps(store);
        QCOMPARE(a.source, StepSource::Repeats);
        QCOMPARE(a.period, 4u);
        QCOMPARE(a.steps.size(), size_t(8));
        for (const Step& s : a.steps) {
            const ApiTrack& calls = store.apiTracks()[0];
            const IndexRange r = calls.startingIn(s.start, s.start + 1);
            QCOMPARE(r.size(), size_t(1));
            const EventRef op = calls.gpuOps(r.first)[0];
            QCOMPARE(store.text(store.gpuTracks()[op.track].name(op.index)), std::string("A"));
            QVERIFY(s.syncWait > 0);
            QVERIFY(s.memcpy > 0);
        }
        QCOMPARE(a.steps[0].kernels, uint64_t(4));
        QCOMPARE(a.steps[1].kernels, uint64_t(3));
        QVERIFY(a.startup() >= 150'000);
    }

    // Generated, as a Triton loop recorded on the H100 does (tests/corpus/blind_triton_softmax.py):
    // 40 iterations of [fill, gemm, softmax, scale] with no sync, then a checksum that launches
    // the scale's kernel again, a fill, a reduction and a blocking 4-byte read-back. The checksum
    // is tear-down, not a 41st step, and the last step ends with the last iteration's work.
    void teardownAfterTheLoopIsNotAStep() {
        TraceGen g(m_dir.filePath("teardown.warpline"));
        int64_t now = 1000;
        const auto launch = [&](const char* name) { launchAt(g, now, name); };
        for (int it = 0; it < 40; ++it) {
            for (const char* name : {"fill", "gemm", "softmax", "scale"})
                launch(name);
        }
        const int64_t loopEnd = now + 1000; // the last kernel's end
        now += 200'000;
        for (const char* name : {"scale", "fill", "reduce"})
            launch(name);
        const uint32_t c = g.api(now, now + 20'000, "cudaMemcpy_v3020");
        g.memcpy(now + 18'000, now + 19'000, c, 4, 2);
        const TraceStore store = g.load();
        const StepAnalysis a = analyzeSteps(store);
        QCOMPARE(a.source, StepSource::Repeats);
        QCOMPARE(a.period, 4u);
        QCOMPARE(a.steps.size(), size_t(40));
        QVERIFY2(a.steps.back().end <= loopEnd,
                 qPrintable(QString::number(a.steps.back().end - loopEnd)));
    }

    // Generated, as a jitted JAX step recorded on the H100 (tests/corpus/blind_jax_mlp.py): a long
    // set-up of autotuning (candidates timed in runs of 3 to 9 launches, each run followed by a
    // check kernel and a read-back), then 30 steps of one CUDA graph launch (26 kernels) and a
    // blocking read of the loss: two launch calls a step, which start 27 GPU ops. The steps are
    // the graph launches, not runs of the autotuner.
    void shortLoopAfterALongSetUp() {
        TraceGen g(m_dir.filePath("graphloop.warpline"));
        int64_t now = 1000;
        const auto readBack = [&](int64_t gpuDone) {
            const int64_t start = std::max(now, gpuDone - 5000);
            const uint32_t c = g.api(start, gpuDone + 8000, "cudaMemcpy_v3020");
            g.memcpy(gpuDone + 1000, gpuDone + 2000, c, 4, 2);
            now = gpuDone + 10'000;
        };
        for (int run = 0; run < 150; ++run) {
            const std::string candidate = "_Z9candidateILi" + std::to_string(run % 10) + "EEvv";
            for (int r = 0; r < 3 + (run * 7) % 7; ++r) {
                g.launch(now, now + 3000, now + 4000, now + 4000 + 1000 * (1 + run % 5), 7,
                         candidate);
                now += 5000;
            }
            g.launch(now, now + 3000, now + 4000, now + 6000, 7, "_Z8redzonev");
            now += 5000;
            readBack(now + 2000);
        }
        const int64_t setUpEnd = now;
        for (int step = 0; step < 30; ++step) {
            const uint32_t c = g.api(now, now + 20'000, "cuGraphLaunch", 0, TraceGen::kTid, true);
            int64_t t = now + 25'000;
            for (int k = 0; k < 26; ++k) {
                warpline::format::KernelRecord r;
                r.start = t;
                r.end = t + 500'000;
                r.contextId = 1;
                r.streamId = 7;
                r.correlationId = c;
                r.mangledName = "_Z10fusion_" + std::to_string(k) + "v";
                r.graphId = 5;
                r.graphNodeId = 100 + k;
                g.writer().addKernel(r);
                t = r.end + 1000;
            }
            now += 30'000;
            readBack(t);
        }
        const TraceStore store = g.load();
        const StepAnalysis a = analyzeSteps(store);
        QCOMPARE(a.source, StepSource::Repeats);
        QCOMPARE(a.period, 2u);
        QCOMPARE(a.steps.size(), size_t(30));
        QVERIFY(a.steps.front().start >= setUpEnd);
        for (const Step& s : a.steps)
            QVERIFY2(s.duration() >= 26 * 500'000, qPrintable(QString::number(s.duration())));
    }

    // The insights of a trace with steps are about its steady state; start-up gets one line, last.
    void insightsLeadWithTheSteadyState_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<bool>("launchBound"); // README: the eager loop is launch-bound
        QTest::newRow("gpt eager") << "torch-gpt-train.warpline" << true;
        QTest::newRow("gpt compiled") << "torch-gpt-compiled.warpline" << false;
        QTest::newRow("ddp") << "torch-ddp-steps0.warpline" << false;
    }
    void insightsLeadWithTheSteadyState() {
        QFETCH(QString, file);
        QFETCH(bool, launchBound);
        const TraceStore store = load(qPrintable(file));
        const StepAnalysis steps = analyzeSteps(store);
        const std::vector<Insight> insights = findInsights(store);
        QVERIFY(insights.size() >= 2);
        QVERIFY(insights.front().kind != InsightKind::StartUp);
        // No finding counts the start-up: the time each finding puts at stake is within the
        // steady state. Every finding says it (an absent number reads as 0, which would pass).
        const int64_t steady = steps.steadyWindow().t1 - steps.steadyWindow().t0;
        const auto has = [](const Insight& in, std::string_view name) {
            return std::any_of(in.numbers.begin(), in.numbers.end(),
                               [&](const InsightNumber& n) { return n.name == name; });
        };
        for (size_t i = 0; i + 1 < insights.size(); ++i) {
            const Insight& in = insights[i];
            QVERIFY(in.kind != InsightKind::StartUp);
            const std::string_view time = has(in, "time_ns") ? "time_ns" : "total_ns";
            QVERIFY2(has(in, time), in.text.c_str());
            QVERIFY2(in.number(time) > 0 && in.number(time) <= double(steady), in.text.c_str());
        }
        // The first finding is the verdict: what limits the steady state's steps.
        QVERIFY2(insights.front().verdict, insights.front().text.c_str());
        const Insight& last = insights.back();
        QCOMPARE(last.kind, InsightKind::StartUp);
        QVERIFY2(QString::fromStdString(last.text).contains(" before the first step: start-up"),
                 last.text.c_str());
        QCOMPARE(last.number("startup_ns"), double(steps.startup()));
        QCOMPARE(last.number("warmup_steps"), double(steps.warmupSteps()));
        // The eager loop is launch-bound in its steady state: that is the first finding.
        QCOMPARE(insights.front().kind == InsightKind::LaunchBound, launchBound);
        if (launchBound)
            QVERIFY(insights.front().number("share") > 0.5);
    }

    // Utilization by phase: start-up's idle seconds do not hide how busy the loop keeps the GPU.
    void utilizationByPhase() {
        const TraceStore store = load("torch-gpt-train.warpline");
        const Table t = ReportRegistry::find("utilization")->run(store);
        const int phase = t.columnIndex("Phase");
        const int util = t.columnIndex("Utilization (%)");
        QVERIFY(phase == 0 && util > 0);
        std::map<std::string, double> byPhase;
        for (size_t r = 0; r < t.rowCount(); ++r)
            byPhase[std::get<std::string>(t.cell(r, phase))] = std::get<double>(t.cell(r, util));
        // (No GPU op ran after the last step: teardown has no row.)
        QCOMPARE(byPhase.size(), size_t(4));
        for (const char* p : {"whole trace", "start-up", "warm-up", "steady state"})
            QVERIFY2(byPhase.count(p), p);
        QVERIFY2(byPhase["steady state"] > 15 && byPhase["steady state"] < 40,
                 qPrintable(QString::number(byPhase["steady state"])));
        QVERIFY(byPhase["whole trace"] < byPhase["steady state"] / 2);
        // Without steps: one row, the whole trace.
        QCOMPARE(ReportRegistry::find("utilization")->run(load("runahead.warpline")).rowCount(),
                 size_t(1));
    }

    // A two-rank DDP job on two H200s (tests/data/ranks): the steps of one rank; the ranks are
    // still compared over the whole job (20 of 20 steps), start-up is the last line.
    void twoRankDdpSession() {
        const std::string dir = WARPLINE_TEST_DATA "/ranks/";
        const TraceStore store = TraceSession::open(
            {dir + "torch-ddp-rank0.warpline", dir + "torch-ddp-rank1.warpline"});
        const StepAnalysis steps = analyzeSteps(store);
        QCOMPARE(steps.source, StepSource::Nvtx);
        QCOMPARE(steps.steps.size(), size_t(20));
        QCOMPARE(steps.warmupSteps(), size_t(1));
        const std::vector<Insight> insights = findInsights(store);
        QCOMPARE(insights.front().kind, InsightKind::LateRank);
        QVERIFY2(QString::fromStdString(insights.front().text).contains("in 20 of 20 steps"),
                 insights.front().text.c_str());
        QCOMPARE(insights.back().kind, InsightKind::StartUp);
    }

    // GPU idle gaps by phase: the steady state's gaps come first; start-up's 5 s gap is one row
    // of its own, below them.
    void gapsByPhase() {
        const TraceStore store = load("torch-gpt-train.warpline");
        const StepAnalysis steps = analyzeSteps(store);
        QCOMPARE(steps.phaseOf(steps.traceBegin), std::string_view("start-up"));
        QCOMPARE(steps.phaseOf(steps.steps[0].start), std::string_view("warm-up"));
        QCOMPARE(steps.phaseOf(steps.steps[1].start), std::string_view("steady state"));
        QCOMPARE(steps.phaseOf(steps.steps.back().end), std::string_view("teardown"));
        const Table t = ReportRegistry::find("gaps")->run(store);
        const int phase = t.columnIndex("Phase");
        QCOMPARE(phase, 0);
        QCOMPARE(std::get<std::string>(t.cell(0, phase)), std::string("steady state"));
        size_t firstStartUp = t.rowCount();
        for (size_t r = 0; r < t.rowCount(); ++r) {
            const std::string& p = std::get<std::string>(t.cell(r, phase));
            if (p == "start-up" && firstStartUp == t.rowCount())
                firstStartUp = r;
            if (firstStartUp < r)
                QVERIFY(p != "steady state");
        }
        QVERIFY(firstStartUp < t.rowCount());
        // The largest gap of all, 5 s before the first step, is start-up's.
        int64_t largest = 0;
        std::string largestPhase;
        for (size_t r = 0; r < t.rowCount(); ++r) {
            const int64_t max = std::get<int64_t>(t.cell(r, t.columnIndex("Max (ns)")));
            if (max > largest) {
                largest = max;
                largestPhase = std::get<std::string>(t.cell(r, phase));
            }
        }
        QVERIFY(largest > 4'000'000'000);
        QCOMPARE(largestPhase, std::string("start-up"));
        const Table each = gapTable(store, analyzeGpuGaps(store), &steps);
        QCOMPARE(each.columnIndex("Phase"), int(each.columnCount()) - 1);
        // Without steps: one phase, the whole trace.
        const TraceStore runahead = load("runahead.warpline");
        const Table plain = ReportRegistry::find("gaps")->run(runahead);
        for (size_t r = 0; r < plain.rowCount(); ++r)
            QCOMPARE(std::get<std::string>(plain.cell(r, 0)), std::string("whole trace"));
    }

    // A trace without steps keeps its findings over the whole trace and has no start-up line.
    void noStepsNoStartUpLine() {
        const TraceStore store = load("runahead.warpline");
        for (const Insight& i : findInsights(store))
            QVERIFY(i.kind != InsightKind::StartUp);
    }

    // The GUI's NVTX table groups numbered ranges; warpline-stats' nvtx report stays as nsys's.
    void numberedRangesGroup() {
        const TraceStore store = load("torch-gpt-train.warpline");
        // 30 "step k" rows, and CCCL's own ranges (its sorts inside the embedding backward).
        const auto exact = nvtxSummary(store);
        QCOMPARE(exact.size(), size_t(33));
        NvtxSummaryOptions options;
        options.grouping = NvtxGrouping::Numbered;
        options.instances = true;
        const auto grouped = nvtxSummary(store, options);
        QCOMPARE(grouped.size(), size_t(4));
        const Table t = nvtxSummaryTable(store, grouped);
        const auto step = std::find_if(grouped.begin(), grouped.end(),
                                       [](const NvtxSummaryRow& r) { return r.numbered; });
        QVERIFY(step != grouped.end());
        QCOMPARE(std::count_if(grouped.begin(), grouped.end(),
                               [](const NvtxSummaryRow& r) { return r.numbered; }),
                 1);
        QCOMPARE(std::get<std::string>(t.cell(step - grouped.begin(), t.columnIndex("Range"))),
                 std::string("step N"));
        QCOMPARE(step->stats.count, uint64_t(30));
        QCOMPARE(step->instances.size(), size_t(30));
        for (size_t i = 1; i < step->instances.size(); ++i) {
            const EventRef a = step->instances[i - 1], b = step->instances[i];
            QVERIFY(store.nvtxTracks()[a.track].start(a.index) <
                    store.nvtxTracks()[b.track].start(b.index));
        }
    }
};

QTEST_GUILESS_MAIN(TestSteps)
#include "tst_steps.moc"
