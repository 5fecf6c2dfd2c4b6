// Comparing two traces (model/analyses/tracediff.h, warpline-stats diff): a trace against itself is
// all unchanged; generated before/after traces give the expected added, removed, faster, slower
// rows with their ratios and time at stake; NVTX range scopes compare the unfused and fused phases
// of the recorded gelu workload.

#include "summaries.h"
#include "testdata.h"
#include "tracediff.h"
#include "traceloader.h"
#include "tst_model_tracebuilder.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <map>

using namespace warpline::model;

Q_DECLARE_METATYPE(warpline::model::DiffSubject)

namespace {

std::map<std::string, TraceDiffRow> byName(const std::vector<TraceDiffRow>& rows) {
    std::map<std::string, TraceDiffRow> map;
    for (const TraceDiffRow& r : rows)
        map[r.name] = r;
    return map;
}

// Kernels, API calls and NVTX ranges with durations scaled per name, so the expected diff is
// known: each entry is (name, count, duration ns).
struct Phase {
    std::vector<std::tuple<std::string, int, int64_t>> items;
};

void writePhase(const QString& file, const Phase& phase) {
    TraceBuilder b(file);
    b.process("app");
    int64_t t = 0;
    int64_t correlation = 1;
    for (const auto& [name, count, duration] : phase.items) {
        for (int i = 0; i < count; ++i) {
            b.nvtx(59, t, t + duration, 1, "range " + name);
            b.runtime(t, t + duration, 1, correlation, "cuda_" + name + "_v1000");
            b.kernel({.start = t + duration,
                      .end = t + 2 * duration,
                      .correlation = correlation,
                      .name = "kernel " + name});
            t += 2 * duration + 10;
            ++correlation;
        }
    }
}

QStringList runStats(const QStringList& args, int* exitCode, QByteArray* err = nullptr) {
    QProcess p;
    p.start(QString::fromUtf8(WARPLINE_STATS), args);
    if (!p.waitForFinished(60000))
        qFatal("warpline-stats did not finish");
    *exitCode = p.exitCode();
    if (err)
        *err = p.readAllStandardError();
    return QString::fromUtf8(p.readAllStandardOutput()).split("\r\n", Qt::SkipEmptyParts);
}

} // namespace

class TestTraceDiff : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString m_before, m_after;
    QString path(const QString& name) const { return m_dir.filePath(name); }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_before = path("before.warpline");
        m_after = path("after.warpline");
        writePhase(m_before, {{{"same", 10, 100},
                               {"gone", 5, 100},
                               {"speedup", 10, 200},
                               {"slowdown", 10, 100},
                               {"twice", 10, 100},
                               {"nudge", 10, 1000}}});
        writePhase(m_after, {{{"same", 10, 100},
                              {"new", 3, 50},
                              {"speedup", 10, 100},
                              {"slowdown", 10, 300},
                              {"twice", 20, 100},
                              {"nudge", 10, 1030}}});
    }

    void selfDiffIsUnchanged_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<DiffSubject>("subject");
        QStringList files = recordedTraces();
        files << path("before.warpline");
        for (const QString& f : files) {
            for (const auto& [name, subject] :
                 {std::pair{"kernels", DiffSubject::Kernels}, std::pair{"api", DiffSubject::Api},
                  std::pair{"nvtx", DiffSubject::Nvtx}})
                QTest::addRow("%s %s", qPrintable(QFileInfo(f).fileName()), name) << f << subject;
        }
    }
    void selfDiffIsUnchanged() {
        QFETCH(QString, file);
        QFETCH(DiffSubject, subject);
        const TraceStore a = TraceLoader::load(file.toStdString());
        const TraceStore b = TraceLoader::load(file.toStdString());
        DiffOptions options;
        options.tolerance = 0; // exactly the same, not merely close
        const auto rows = diffTraces(a, b, subject, options);
        size_t expected = 0;
        if (subject == DiffSubject::Kernels)
            expected = kernelSummary(a).size();
        else if (subject == DiffSubject::Api)
            expected = apiSummary(a).size();
        else
            expected = nvtxSummary(a).size();
        QCOMPARE(rows.size(), expected);
        for (const TraceDiffRow& r : rows) {
            QCOMPARE(diffStatusName(r.status), "unchanged");
            QCOMPARE(r.ratio, 1.0);
            QCOMPARE(r.timeAtStake, int64_t(0));
            QCOMPARE(r.a.count, r.b.count);
            QVERIFY(r.a.count > 0);
        }
    }

    void beforeAfter_data() {
        QTest::addColumn<DiffSubject>("subject");
        QTest::addColumn<QString>("prefix");
        QTest::newRow("kernels") << DiffSubject::Kernels << "kernel ";
        QTest::newRow("api") << DiffSubject::Api << "cuda_";
        QTest::newRow("nvtx") << DiffSubject::Nvtx << "range ";
    }
    void beforeAfter() {
        QFETCH(DiffSubject, subject);
        QFETCH(QString, prefix);
        const TraceStore a = TraceLoader::load(m_before.toStdString());
        const TraceStore b = TraceLoader::load(m_after.toStdString());
        const auto rows = diffTraces(a, b, subject);
        const std::string p = prefix.toStdString();
        const auto m = byName(rows);
        QCOMPARE(m.size(), size_t(7));

        QCOMPARE(m.at(p + "slowdown").status, DiffStatus::Slower);
        QCOMPARE(m.at(p + "slowdown").ratio, 3.0);
        QCOMPARE(m.at(p + "slowdown").timeAtStake, int64_t(2000));
        QCOMPARE(m.at(p + "speedup").status, DiffStatus::Faster);
        QCOMPARE(m.at(p + "speedup").ratio, 0.5);
        QCOMPARE(m.at(p + "speedup").timeAtStake, int64_t(-1000));
        // Same average, twice the calls: unchanged per call, but 1000 ns at stake.
        QCOMPARE(m.at(p + "twice").status, DiffStatus::Unchanged);
        QCOMPARE(m.at(p + "twice").timeAtStake, int64_t(1000));
        QCOMPARE(m.at(p + "twice").b.count, uint64_t(20));
        // 3% slower: within the default 5% tolerance.
        QCOMPARE(m.at(p + "nudge").status, DiffStatus::Unchanged);
        QCOMPARE(m.at(p + "nudge").timeAtStake, int64_t(300));
        QCOMPARE(m.at(p + "gone").status, DiffStatus::Removed);
        QCOMPARE(m.at(p + "gone").timeAtStake, int64_t(-500));
        QCOMPARE(m.at(p + "gone").b.count, uint64_t(0));
        QCOMPARE(m.at(p + "new").status, DiffStatus::Added);
        QCOMPARE(m.at(p + "new").timeAtStake, int64_t(150));
        QCOMPARE(m.at(p + "new").a.count, uint64_t(0));
        QCOMPARE(m.at(p + "same").status, DiffStatus::Unchanged);

        // Largest time at stake first; ties by name.
        QStringList order;
        for (const TraceDiffRow& r : rows)
            order << QString::fromStdString(r.name).mid(prefix.size());
        QCOMPARE(order,
                 QStringList({"slowdown", "speedup", "twice", "gone", "nudge", "new", "same"}));

        DiffOptions strict;
        strict.tolerance = 0.01;
        QCOMPARE(byName(diffTraces(a, b, subject, strict)).at(p + "nudge").status,
                 DiffStatus::Slower);
        // Reversed: added and removed swap, faster and slower swap.
        const auto back = byName(diffTraces(b, a, subject));
        QCOMPARE(back.at(p + "new").status, DiffStatus::Removed);
        QCOMPARE(back.at(p + "gone").status, DiffStatus::Added);
        QCOMPARE(back.at(p + "slowdown").status, DiffStatus::Faster);
        QCOMPARE(back.at(p + "speedup").status, DiffStatus::Slower);
    }

    void table() {
        const TraceStore a = TraceLoader::load(m_before.toStdString());
        const TraceStore b = TraceLoader::load(m_after.toStdString());
        const Table t = traceDiffTable(diffTraces(a, b, DiffSubject::Kernels));
        QCOMPARE(t.rowCount(), size_t(7));
        const int name = t.columnIndex("Name");
        const int ratio = t.columnIndex("Ratio (B/A)");
        const int countA = t.columnIndex("Count A");
        QVERIFY(name >= 0 && ratio >= 0 && countA >= 0);
        bool sawNew = false;
        for (size_t r = 0; r < t.rowCount(); ++r) {
            if (std::get<std::string>(t.cell(r, name)) == "kernel new") {
                sawNew = true;
                QVERIFY(std::holds_alternative<std::monostate>(t.cell(r, ratio)));
                QVERIFY(std::holds_alternative<std::monostate>(t.cell(r, countA)));
                QCOMPARE(std::get<std::string>(t.cell(r, 0)), std::string("added"));
            }
        }
        QVERIFY(sawNew);
    }

    // Time windows: only events starting inside count (here: the first half of `before`).
    void timeWindow() {
        const TraceStore a = TraceLoader::load(m_before.toStdString());
        DiffOptions options;
        options.b.window = {0, 2100}; // the 10 "same" kernels start before 2100, nothing else
        const auto m = byName(diffTraces(a, a, DiffSubject::Kernels, options));
        QCOMPARE(m.at("kernel same").status, DiffStatus::Unchanged);
        QCOMPARE(m.at("kernel same").b.count, uint64_t(10));
        QCOMPARE(m.at("kernel speedup").status, DiffStatus::Removed);
        QCOMPARE(m.at("kernel gone").status, DiffStatus::Removed);
    }

    // The gelu workload: the unfused phase launches six element-wise kernels, the fused phase
    // one; comparing the two NVTX ranges of one recorded trace shows exactly that.
    void geluPhases() {
        const QString file = QString::fromUtf8(WARPLINE_TEST_DATA) + "/gelu.warpline";
        WARPLINE_REQUIRE_DATA(file);
        const TraceStore store = TraceLoader::load(file.toStdString());
        DiffOptions options;
        options.a.nvtxRange = "unfused";
        options.b.nvtxRange = "fused";
        const auto rows = diffTraces(store, store, DiffSubject::Kernels, options);
        int added = 0, removed = 0;
        int64_t stake = 0;
        for (const TraceDiffRow& r : rows) {
            added += r.status == DiffStatus::Added;
            removed += r.status == DiffStatus::Removed;
            stake += r.timeAtStake;
        }
        QCOMPARE(added, 1);
        QCOMPARE(removed, 6);
        QVERIFY(QString::fromStdString(rows.front().name).contains("geluScale")); // 3 per repeat
        // Instances match the nvtx-kernels report, which attributes kernels the same way.
        std::map<std::pair<std::string, std::string>, DurationStats> expected;
        for (const NvtxKernelRow& k : nvtxKernelSummary(store))
            expected[{store.text(k.range), store.text(k.kernel)}] = k.stats;
        int64_t unfusedTotal = 0, fusedTotal = 0;
        for (const TraceDiffRow& r : rows) {
            if (r.a.count) {
                QCOMPARE(r.a.count, expected.at({"unfused", r.name}).count);
                QCOMPARE(r.a.total, expected.at({"unfused", r.name}).total);
                unfusedTotal += r.a.total;
            }
            if (r.b.count) {
                QCOMPARE(r.b.count, expected.at({"fused", r.name}).count);
                QCOMPARE(r.b.total, expected.at({"fused", r.name}).total);
                QVERIFY(QString::fromStdString(r.name).contains("geluFused"));
                fusedTotal += r.b.total;
            }
        }
        QCOMPARE(stake, fusedTotal - unfusedTotal);
        QVERIFY2(fusedTotal * 3 < unfusedTotal, "fusing saves most of the GPU time");

        // API: each phase's launches, 8 per repeat unfused against 1 fused.
        const auto api = byName(diffTraces(store, store, DiffSubject::Api, options));
        QVERIFY(api.count("cudaLaunchKernel"));
        QCOMPARE(api.at("cudaLaunchKernel").a.count, 8 * api.at("cudaLaunchKernel").b.count);

        options.b.nvtxRange = "no such range";
        QVERIFY_THROWS_EXCEPTION(DiffScopeError,
                                 diffTraces(store, store, DiffSubject::Kernels, options));
    }

    void cli() {
        int code = -1;
        QStringList lines = runStats({"diff", m_before, m_before, "--format", "csv"}, &code);
        QCOMPARE(code, 0);
        QVERIFY(lines.size() > 1);
        QVERIFY(lines[0].startsWith("Status,Time at Stake (ns),Ratio (B/A)"));
        for (const QString& line : lines.mid(1))
            QVERIFY2(line.startsWith("unchanged,0,1,"), qPrintable(line));

        lines = runStats(
            {"diff", m_before, m_after, "--report", "api", "--format", "csv", "--tolerance", "1"},
            &code);
        QCOMPARE(code, 0);
        QCOMPARE(lines.size(), 8);
        QVERIFY2(lines[1].startsWith("slower,2000,3,10,10,"), qPrintable(lines[1]));
        QVERIFY(lines.filter("slower,300,").size() == 1); // nudge, at 1%

        QByteArray err;
        runStats({"diff", m_before}, &code, &err);
        QCOMPARE(code, 2);
        QVERIFY(err.startsWith("warpline-stats: diff needs two traces"));
        runStats({"diff", m_before, m_after, "--report", "memops"}, &code, &err);
        QCOMPARE(code, 2);
        QVERIFY(err.startsWith("warpline-stats: diff compares kernels, api or nvtx"));
        runStats({"diff", m_before, m_after, "--range-a", "nope"}, &code, &err);
        QCOMPARE(code, 2);
        QVERIFY2(err.contains("no NVTX range named \"nope\""), err.constData());
        runStats({"diff", m_before, m_after, "--tolerance", "x"}, &code, &err);
        QCOMPARE(code, 2);
    }
};

QTEST_GUILESS_MAIN(TestTraceDiff)
#include "tst_tracediff.moc"
