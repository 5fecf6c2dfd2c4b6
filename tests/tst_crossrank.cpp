// Across ranks: on generated 8-rank jobs (bench/rankjobgen.h) opened as one session, the rank whose
// compute is slower is the last to reach the all-reduce in every step, by about the time it was
// slowed, and every other rank waits about that long; without a slow rank no rank dominates.
// Steps come from the "step <i>" NVTX ranges, else one per communication kernel. One trace is one
// rank. Also the "ranks" and "rank-steps" reports and the late-rank insight.

#include "analysestracegen.h"
#include "crossrank.h"
#include "insights.h"
#include "rankjobgen.h"
#include "reportregistry.h"
#include "tablewriter.h"
#include "testdata.h"
#include "traceopener.h"
#include "tracesession.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QtTest>
#include <cmath>
#include <sqlite3.h>
#include <sstream>

using namespace warpline::model;
using warpline::bench::RankJobSpec;

namespace {

constexpr int64_t kSlowBy = 2'000'000;
// The generator's own jitter between ranks: launch timing (a few us per kernel) and the Python
// time between steps (20-60 us), and up to 200 us in the first step.
constexpr int64_t kTolerance = 250'000;

// The row of CrossRankAnalysis::ranks (= TraceStore::sources()) of rank `rank`.
uint32_t rowOfRank(const TraceStore& store, int rank) {
    for (uint32_t i = 0; i < store.sources().size(); ++i) {
        if (store.sources()[i].rank == rank)
            return i;
    }
    qFatal("no source of rank %d", rank);
}

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

void exec(const std::string& path, const char* sql) {
    sqlite3* db = nullptr;
    QCOMPARE(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &error);
    const QByteArray message = error ? QByteArray(error) : QByteArray();
    sqlite3_free(error);
    sqlite3_close(db);
    QVERIFY2(rc == SQLITE_OK, message.constData());
}

} // namespace

class TestCrossRank : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    int m_jobs = 0;

    std::vector<std::string> writeJob(const RankJobSpec& spec) {
        return warpline::bench::writeRankJob(
            m_dir.filePath("job" + QString::number(++m_jobs)).toStdString(), spec);
    }

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void slowRankIsLastEveryStep_data() {
        QTest::addColumn<int>("hosts");
        QTest::addColumn<int>("slowRank");
        QTest::addColumn<qint64>("slowBy");
        QTest::newRow("one host, rank 3, 2 ms") << 1 << 3 << qint64(kSlowBy);
        QTest::newRow("two hosts, rank 5, 2 ms") << 2 << 5 << qint64(kSlowBy);
        QTest::newRow("one host, rank 0, 1 ms") << 1 << 0 << qint64(1'000'000);
        QTest::newRow("four hosts, rank 7, 3 ms") << 4 << 7 << qint64(3'000'000);
    }
    void slowRankIsLastEveryStep() {
        QFETCH(int, hosts);
        QFETCH(int, slowRank);
        QFETCH(qint64, slowBy);
        RankJobSpec spec;
        spec.hosts = hosts;
        spec.slowRank = slowRank;
        spec.slowByNs = slowBy;
        const TraceStore store = TraceSession::open(writeJob(spec));
        QCOMPARE(store.sources().size(), size_t(8));
        const CrossRankAnalysis a = analyzeCrossRank(store);
        QCOMPARE(a.ranks.size(), size_t(8));
        QCOMPARE(a.stepName, std::string("step"));
        QCOMPARE(a.steps.size(), size_t(10));
        const uint32_t slow = rowOfRank(store, slowRank);
        for (size_t k = 0; k < a.steps.size(); ++k) {
            const CrossRankStep& s = a.steps[k];
            QCOMPARE(s.ranks, 8u);
            QCOMPARE(s.arrived, 8u);
            QCOMPARE(s.slowest, slow);
            QVERIFY2(std::abs(s.lateness - slowBy) <= kTolerance,
                     qPrintable(QString("step %1: late %2 ns").arg(k).arg(s.lateness)));
            for (uint32_t r = 0; r < a.ranks.size(); ++r) {
                const RankStep* own = a.step(r, k);
                QVERIFY(own);
                if (r == slow) {
                    QCOMPARE(own->wait, int64_t(0));
                    continue;
                }
                QVERIFY2(std::abs(own->wait - slowBy) <= kTolerance,
                         qPrintable(
                             QString("step %1, row %2: wait %3 ns").arg(k).arg(r).arg(own->wait)));
            }
        }
        for (uint32_t r = 0; r < a.ranks.size(); ++r) {
            const RankSummary& rank = a.ranks[r];
            QCOMPARE(rank.origin, StepOrigin::Nvtx);
            QCOMPARE(rank.steps(), uint64_t(10));
            QCOMPARE(rank.commKernels, uint64_t(10));
            QCOMPARE(rank.slowest, r == slow ? uint64_t(10) : uint64_t(0));
            QCOMPARE(rank.devices.size(), size_t(1));
            if (r != slow) {
                // It waits slowBy in each of its 10 all-reduces, so they take longer than the
                // slow rank's, and its compute per step is about slowBy shorter.
                QVERIFY(rank.commTime > a.ranks[slow].commTime + 9 * slowBy);
                QVERIFY(std::abs(a.ranks[slow].meanCompute - rank.meanCompute - slowBy) <
                        kTolerance);
                QVERIFY(rank.commShare() > a.ranks[slow].commShare());
            }
        }
        const CrossRankVerdict& v = a.verdict;
        QVERIFY(v.dominant);
        QCOMPARE(v.rank, slow);
        QCOMPARE(v.slowestSteps, uint64_t(10));
        QCOMPARE(v.comparedSteps, uint64_t(10));
        QVERIFY(std::abs(v.meanLateness - static_cast<double>(slowBy)) < kTolerance);
        QVERIFY(std::abs(v.waitBehind - 70 * slowBy) < 70 * kTolerance);
        QCOMPARE(v.waitBehind, a.totalWait);
        const std::string expected = "rank " + std::to_string(slowRank) +
                                     " is the last to reach the all-reduce in 10 of 10 "
                                     "steps, ";
        QVERIFY2(contains(v.text, expected), v.text.c_str());
    }

    // Equal compute on every rank: the last to arrive changes from step to step and is late by
    // the generator's jitter only.
    void noSlowRankDominates() {
        RankJobSpec spec;
        spec.steps = 20;
        const TraceStore store = TraceSession::open(writeJob(spec));
        const CrossRankAnalysis a = analyzeCrossRank(store);
        QCOMPARE(a.steps.size(), size_t(20));
        QVERIFY2(!a.verdict.dominant, a.verdict.text.c_str());
        QVERIFY2(contains(a.verdict.text, "No rank is consistently the last"),
                 a.verdict.text.c_str());
        uint64_t mostSlowest = 0;
        for (const RankSummary& r : a.ranks)
            mostSlowest = std::max(mostSlowest, r.slowest);
        QVERIFY(mostSlowest <= 10);
        for (const CrossRankStep& s : a.steps) {
            QVERIFY2(s.lateness < kTolerance, qPrintable(QString::number(s.lateness)));
            QVERIFY(s.spread() < kTolerance);
        }
        QVERIFY(!findKind(findInsights(store), InsightKind::LateRank));
    }

    // The k-th step of every rank is that rank's NVTX range "step <k>".
    void stepsMatchedByOrder() {
        RankJobSpec spec;
        spec.slowRank = 2;
        spec.steps = 6;
        const TraceStore store = TraceSession::open(writeJob(spec));
        const CrossRankAnalysis a = analyzeCrossRank(store);
        QCOMPARE(a.steps.size(), size_t(6));
        for (uint32_t r = 0; r < a.ranks.size(); ++r) {
            const RankSummary& rank = a.ranks[r];
            QVERIFY(rank.thread < store.threads().size());
            const std::span<const RankStep> steps = a.stepsOf(r);
            QCOMPARE(steps.size(), size_t(6));
            for (size_t k = 0; k < steps.size(); ++k) {
                std::string name;
                for (const uint32_t t : store.threads()[rank.thread].nvtxTracks) {
                    const NvtxTrack& track = store.nvtxTracks()[t];
                    const std::ptrdiff_t i = track.indexAt(steps[k].start);
                    if (i >= 0 && track.end(static_cast<size_t>(i)) == steps[k].end)
                        name = store.text(track.name(static_cast<size_t>(i)));
                }
                QCOMPARE(name, "step " + std::to_string(k));
                QCOMPARE(steps[k].commKernels, 1u);
                QVERIFY(steps[k].arrived());
                QVERIFY(steps[k].arrival > steps[k].start && steps[k].arrival < steps[k].end);
                QVERIFY(steps[k].compute() > 0 && steps[k].compute() < steps[k].duration());
            }
        }
    }

    // Without NVTX ranges the training step comes from each rank's repeating launches, with the
    // all-reduce inside it (not one "step" per communication kernel); the slow rank is still
    // found, step by step.
    void withoutRangesTheRepeatingLaunchesAreTheSteps() {
        RankJobSpec spec;
        spec.slowRank = 6;
        const std::vector<std::string> paths = writeJob(spec);
        for (const std::string& p : paths)
            exec(p, "DELETE FROM NVTX_EVENTS");
        const TraceStore store = TraceSession::open(paths);
        const CrossRankAnalysis a = analyzeCrossRank(store);
        QCOMPARE(a.stepName, std::string());
        // Ten loop iterations; the last may be cut where its launches stop repeating.
        QVERIFY2(a.steps.size() >= 9 && a.steps.size() <= 10,
                 qPrintable(QString::number(a.steps.size())));
        const uint32_t slow = rowOfRank(store, 6);
        for (const RankSummary& r : a.ranks) {
            QCOMPARE(r.origin, StepOrigin::Repeats);
            QCOMPARE(r.steps(), uint64_t(a.steps.size()));
        }
        for (size_t k = 0; k < a.steps.size(); ++k) {
            const CrossRankStep& s = a.steps[k];
            QCOMPARE(s.slowest, slow);
            QVERIFY(std::abs(s.lateness - kSlowBy) <= kTolerance);
            // One all-reduce per step, inside it.
            QCOMPARE(a.step(slow, k)->commKernels, uint32_t(1));
        }
        QVERIFY(a.verdict.dominant);
        QCOMPARE(a.verdict.rank, slow);
    }

    // Rank 0 alone evaluates every 6 steps (10 batches that repeat launch for launch, no
    // collective in them) while rank 1 waits in the barrier after. Without NVTX, rank 0's longest
    // repeating loop is its evaluation; its steps must still be the training step that holds
    // its collectives, as rank 1's are, so the evaluations show as rank 0's lateness at the
    // barrier, step by step.
    void aRanksStepsAreTheLoopThatHoldsItsCollectives() {
        RankJobSpec spec;
        spec.ranks = 2;
        spec.steps = 30;
        spec.evalEvery = 6;
        spec.evalBatches = 10;
        const std::vector<std::string> paths = writeJob(spec);
        for (const std::string& p : paths)
            exec(p, "DELETE FROM NVTX_EVENTS");
        const TraceStore store = TraceSession::open(paths);
        const CrossRankAnalysis a = analyzeCrossRank(store);
        const uint32_t evaluating = rowOfRank(store, 0);
        const uint32_t other = rowOfRank(store, 1);
        for (const RankSummary& r : a.ranks) {
            QVERIFY2(r.steps() >= 28 && r.steps() <= 31, qPrintable(QString::number(r.steps())));
            size_t holding = 0;
            for (const RankStep& s : a.stepsOf(r.source == 0 ? evaluating : other))
                holding += s.commKernels > 0;
            QVERIFY2(holding + 1 >= r.steps(), qPrintable(QString::number(holding)));
        }
        // Each evaluation (10 batches of 6 x 0.3 ms kernels and a read-back: over 18 ms) makes
        // rank 0 the last to arrive at the barrier, its lateness the evaluation's time.
        size_t late = 0;
        for (const CrossRankStep& s : a.steps)
            late += s.slowest == evaluating && s.lateness > 18'000'000;
        QVERIFY2(late >= 4, qPrintable(QString::number(late)));
        QCOMPARE(a.ranks[evaluating].origin, StepOrigin::OtherRank);
    }

    // A rank whose recording began two steps late ("step 2" is its first range): steps are
    // matched by the number in their names, not by order, so the slowed rank is still found in
    // every step with its real lateness.
    void stepsMatchedByNumber() {
        RankJobSpec spec;
        spec.ranks = 4;
        spec.slowRank = 1;
        const std::vector<std::string> paths = writeJob(spec);
        exec(paths[2], "DELETE FROM NVTX_EVENTS WHERE textId IN "
                       "(SELECT id FROM StringIds WHERE value IN ('step 0', 'step 1'))");
        const TraceStore store = TraceSession::open(paths);
        const CrossRankAnalysis a = analyzeCrossRank(store);
        QCOMPARE(a.steps.size(), size_t(8));
        for (const RankSummary& r : a.ranks)
            QCOMPARE(r.steps(), uint64_t(8));
        const uint32_t slow = rowOfRank(store, 1);
        for (size_t k = 0; k < a.steps.size(); ++k) {
            QCOMPARE(a.step(0, k)->number, int64_t(k + 2));
            QCOMPARE(a.step(2, k)->number, int64_t(k + 2));
            QCOMPARE(a.steps[k].slowest, slow);
            QVERIFY(std::abs(a.steps[k].lateness - kSlowBy) <= kTolerance);
        }
    }

    // One trace is one rank: its steps, nothing to compare, and reports of one row per rank.
    void singleTraceIsOneRank() {
        RankJobSpec spec;
        spec.slowRank = 1;
        const std::vector<std::string> paths = writeJob(spec);
        const TraceStore store = TraceOpener::open(paths[1]);
        const CrossRankAnalysis a = analyzeCrossRank(store);
        QCOMPARE(a.ranks.size(), size_t(1));
        QCOMPARE(a.ranks[0].steps(), uint64_t(10));
        QCOMPARE(a.ranks[0].slowest, uint64_t(0));
        QCOMPARE(a.ranks[0].wait, int64_t(0));
        QCOMPARE(a.totalWait, int64_t(0));
        for (const CrossRankStep& s : a.steps) {
            QCOMPARE(s.ranks, 1u);
            QCOMPARE(s.slowest, CrossRankStep::kNoRank);
        }
        QVERIFY(!a.verdict.dominant);
        QVERIFY2(contains(a.verdict.text, "One rank"), a.verdict.text.c_str());
        const Table ranks = ReportRegistry::find("ranks")->run(store);
        QCOMPARE(ranks.rowCount(), size_t(1));
        QCOMPARE(cellInt(ranks, 0, "Steps"), int64_t(10));
        const Table steps = ReportRegistry::find("rank-steps")->run(store);
        QCOMPARE(steps.rowCount(), size_t(10));
        QCOMPARE(steps.cell(0, static_cast<size_t>(steps.columnIndex("Slowest"))), Cell{});
        QVERIFY(!findKind(findInsights(store), InsightKind::LateRank));
    }

    // The step name: numbered ranges with a step word before others that cover more time, and
    // ranges without a counter never.
    void stepRangeChoice_data() {
        QTest::addColumn<QString>("step");
        QTest::newRow("step") << "step ";
        QTest::newRow("iteration") << "iteration_";
        QTest::newRow("Step#") << "Step#";
        QTest::newRow("ProfilerStep#") << "ProfilerStep#";
    }
    void stepRangeChoice() {
        QFETCH(QString, step);
        TraceGen g(m_dir.filePath("choice.warpline"));
        g.range(0, 12'000'000, "epoch 0");
        g.range(0, 12'000'000, "train");
        // Numbered and repeated, with more time than the steps, but no step word.
        g.range(0, 5'500'000, "phase 0");
        g.range(5'500'000, 11'000'000, "phase 1");
        for (int s = 0; s < 5; ++s) {
            const int64_t t = 100'000 + s * 1'000'000;
            g.range(t, t + 900'000, step.toStdString() + std::to_string(s));
            g.range(t + 10'000, t + 400'000, "layer_1");
            g.range(t + 400'000, t + 800'000, "layer_2");
            g.launch(t + 20'000, t + 30'000, t + 40'000, t + 500'000);
            g.launch(t + 800'000, t + 810'000, t + 820'000, t + 850'000, 9,
                     "_Z28ncclKernel_AllGather_RING_LLPv");
        }
        const TraceStore store = g.load();
        const CrossRankAnalysis a = analyzeCrossRank(store);
        QCOMPARE(QString::fromStdString(a.stepName), step.chopped(1));
        QCOMPARE(a.ranks.size(), size_t(1));
        QCOMPARE(a.ranks[0].origin, StepOrigin::Nvtx);
        QCOMPARE(a.ranks[0].steps(), uint64_t(5));
        for (const RankStep& s : a.stepsOf(0)) {
            QCOMPARE(s.commKernels, 1u);
            QCOMPARE(s.commTime, int64_t(30'000));
            QCOMPARE(s.duration(), int64_t(900'000));
            QCOMPARE(s.compute(), int64_t(870'000));
        }
        QCOMPARE(a.ranks[0].commKernels, uint64_t(5));
        QCOMPARE(a.ranks[0].commTime, int64_t(5 * 30'000));
        QCOMPARE(a.ranks[0].gpuTime, int64_t(5 * (460'000 + 30'000)));
    }

    // Traces recorded on two H200s (tests/data/ranks/README.md): the bundled allreduce workload,
    // balanced and with rank 1 computing 3x longer, and a torchrun DDP job with rank 1 slowed.
    void recordedRanks_data() {
        QTest::addColumn<QString>("job");
        QTest::addColumn<bool>("late");           // a late-rank finding
        QTest::addColumn<int>("slowestSteps");    // of rank 1, out of 20
        QTest::addColumn<qint64>("meanLateness"); // ns, of rank 1 (0: below 100 us)
        QTest::addColumn<QString>("cause");       // what the finding says rank 1 does
        QTest::newRow("allreduce")
            << "allreduce.rank%1.warpline" << false << 17 << qint64(0) << QString();
        // Its compute kernels run 3x longer: as many ops, taking longer.
        QTest::newRow("allreduce slow rank 1")
            << "allreduce-slow-rank1.rank%1.warpline" << true << 19 << qint64(2'450'000)
            << "the same ops taking longer";
        // Extra matrix products: more ops. Measured at each step's decisive collective (its
        // widest arrivals): 54.1 ms; 51.4 ms at the first all-reduce bucket.
        QTest::newRow("torchrun DDP, slow rank 1")
            << "torch-ddp-rank%1.warpline" << true << 20 << qint64(54'100'000)
            << "Give the ranks equal work a step";
    }
    void recordedRanks() {
        QFETCH(QString, job);
        QFETCH(bool, late);
        QFETCH(int, slowestSteps);
        QFETCH(qint64, meanLateness);
        QFETCH(QString, cause);
        const QString dir = QStringLiteral(WARPLINE_TEST_DATA "/ranks/");
        WARPLINE_REQUIRE_DATA(dir + job.arg(0));
        WARPLINE_REQUIRE_DATA(dir + job.arg(1));
        const TraceStore store = TraceSession::open(
            {(dir + job.arg(0)).toStdString(), (dir + job.arg(1)).toStdString()});
        const CrossRankAnalysis a = analyzeCrossRank(store);
        QCOMPARE(a.stepName, std::string("step"));
        QCOMPARE(a.steps.size(), size_t(20));
        const uint32_t rank1 = rowOfRank(store, 1);
        const RankSummary& r1 = a.ranks[rank1];
        QCOMPARE(r1.slowest, uint64_t(slowestSteps));
        QCOMPARE(a.ranks[1 - rank1].slowest, uint64_t(20 - slowestSteps));
        if (meanLateness > 0)
            QVERIFY2(std::abs(r1.meanLateness() - static_cast<double>(meanLateness)) <
                         0.05 * static_cast<double>(meanLateness),
                     qPrintable(QString::number(r1.meanLateness())));
        else
            QVERIFY2(r1.meanLateness() < 100'000, qPrintable(QString::number(r1.meanLateness())));
        QCOMPARE(a.verdict.rank, rank1);
        const std::vector<Insight> all = findInsights(store);
        const Insight* in = findKind(all, InsightKind::LateRank);
        QCOMPARE(in != nullptr, late);
        if (in) {
            QVERIFY2(contains(in->text, "rank 1 is the last to reach the all-reduce in " +
                                            std::to_string(slowestSteps) + " of 20 steps"),
                     in->text.c_str());
            QVERIFY2(contains(in->text, "Its GPU has more to do") &&
                         contains(in->text, cause.toStdString()),
                     in->text.c_str());
        }
    }

    void reports() {
        RankJobSpec spec;
        spec.slowRank = 4;
        const TraceStore store = TraceSession::open(writeJob(spec));
        const ReportDef* ranksDef = ReportRegistry::find("ranks");
        const ReportDef* stepsDef = ReportRegistry::find("rank-steps");
        QVERIFY(ranksDef && stepsDef);
        const Table ranks = ranksDef->run(store, {});
        QCOMPARE(ranks.rowCount(), size_t(8));
        for (size_t r = 0; r < 8; ++r) {
            QCOMPARE(cellText(ranks, r, "Rank"), "rank " + std::to_string(r));
            QCOMPARE(cellText(ranks, r, "Host"), std::string("node0"));
            QCOMPARE(cellText(ranks, r, "GPU"), "GPU " + std::to_string(r));
            QCOMPARE(cellText(ranks, r, "Step Source"), std::string("\"step\" ranges"));
            QCOMPARE(cellInt(ranks, r, "Steps"), int64_t(10));
            QCOMPARE(cellInt(ranks, r, "Comm Kernels"), int64_t(10));
            QCOMPARE(cellInt(ranks, r, "Slowest Steps"), r == 4 ? int64_t(10) : int64_t(0));
            const int64_t wait = cellInt(ranks, r, "Wait (ns)");
            if (r == 4)
                QCOMPARE(wait, int64_t(0));
            else
                QVERIFY(std::abs(wait - 10 * kSlowBy) < 10 * kTolerance);
            const double share = cellReal(ranks, r, "Comm (%)");
            QVERIFY(share > 0 && share < 100);
        }
        const Table steps = stepsDef->run(store, {});
        QCOMPARE(steps.rowCount(), size_t(10));
        QCOMPARE(steps.columnCount(), size_t(10 + 8));
        QVERIFY(steps.columnIndex("rank 7 Arrival (ns)") >= 0);
        for (size_t k = 0; k < 10; ++k) {
            QCOMPARE(cellInt(steps, k, "Step"), int64_t(k));
            QCOMPARE(cellText(steps, k, "Slowest"), std::string("rank 4"));
            QVERIFY(std::abs(cellInt(steps, k, "Late (ns)") - kSlowBy) <= kTolerance);
            QVERIFY(std::abs(cellInt(steps, k, "rank 4 Arrival (ns)") - kSlowBy) <= kTolerance);
        }
        // Every writer takes it; JSON keys are the column names.
        std::ostringstream json;
        writeTable(json, steps, TableFormat::Json);
        const QJsonArray rows =
            QJsonDocument::fromJson(QByteArray::fromStdString(json.str())).array();
        QCOMPARE(rows.size(), 10);
        QCOMPARE(rows[3].toObject()["Slowest"].toString(), QString("rank 4"));
        std::ostringstream csv;
        writeTable(csv, ranks, TableFormat::Csv);
        QCOMPARE(QByteArray::fromStdString(csv.str()).count("\r\n"), 9);
        std::ostringstream md;
        writeTable(md, steps, TableFormat::Markdown);
        QVERIFY(contains(md.str(), "| Step |"));
    }

    void lateRankInsight() {
        RankJobSpec spec;
        spec.slowRank = 3;
        const TraceStore store = TraceSession::open(writeJob(spec));
        const std::vector<Insight> all = findInsights(store);
        const Insight* in = findKind(all, InsightKind::LateRank);
        QVERIFY(in);
        QVERIFY2(contains(in->text, "rank 3 is the last to reach the all-reduce in 10 of 10 steps"),
                 in->text.c_str());
        QVERIFY2(contains(in->text, "the other ranks wait "), in->text.c_str());
        QCOMPARE(in->number("rank"), 3.0);
        QCOMPARE(in->number("slowest_steps"), 10.0);
        QVERIFY(std::abs(in->number("mean_late_ns") - kSlowBy) < kTolerance);
        QVERIFY(std::abs(in->stake - 70 * kSlowBy) < 70 * kTolerance);
        QVERIFY(in->number("wait_share") > 0.1);
        // Its kernels run longer, as many of them: its GPU has more to do.
        QVERIFY(std::abs(in->number("gpu_work_ns") - in->number("others_gpu_work_ns") - kSlowBy) <
                kTolerance);
        QVERIFY2(contains(in->text, "Its GPU has more to do") &&
                     contains(in->text, "the same ops taking longer"),
                 in->text.c_str());
        // Its late all-reduces and the others' in the same steps, in time order.
        QCOMPARE(in->gpuOps.size(), size_t(80));
        for (size_t i = 1; i < in->gpuOps.size(); ++i) {
            const EventRef a = in->gpuOps[i - 1];
            const EventRef b = in->gpuOps[i];
            QVERIFY(store.gpuTracks()[a.track].start(a.index) <=
                    store.gpuTracks()[b.track].start(b.index));
        }
        QCOMPARE(insightKindName(InsightKind::LateRank), std::string_view("late-rank"));
        // The all-reduce holds the most kernel time, but most of it is the wait: only the
        // transfer is at stake in the kernel, and the late rank leads.
        QCOMPARE(all.front().kind, InsightKind::LateRank);
        const Insight* kernel = findKind(all, InsightKind::KernelConcentration);
        QVERIFY(kernel);
        QVERIFY2(contains(kernel->text, "a communication kernel, and "), kernel->text.c_str());
        QCOMPARE(kernel->number("wait_ns"), static_cast<double>(in->stake));
        QCOMPARE(kernel->stake, int64_t(kernel->number("total_ns") - kernel->number("wait_ns")));
        QCOMPARE(kernel->stake, int64_t(80 * 1'000'000)); // 8 ranks x 10 steps x allReduceNs
    }
};

QTEST_GUILESS_MAIN(TestCrossRank)
#include "tst_crossrank.moc"
