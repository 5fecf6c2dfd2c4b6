// Sync stalls: which calls made the CPU wait, for how long, what finished meanwhile, the GPU idle
// that followed, and the stalled share; on generated traces with hand-computed values, and on the
// recorded sync-stall workload when present; each stall's origin on the recorded corpus
// (tests/corpus, tests/data/corpus), which must be there.

#include "analysestracegen.h"
#include "reportregistry.h"
#include "syncstalls.h"
#include "testdata.h"

#include <QtTest>
#include <sqlite3.h>

using namespace warpline::model;
namespace format = warpline::format;

namespace {

constexpr int kSteps = 200;
constexpr int64_t kStep = 150'000; // ns per step

// One training step at t = s * 150 us: a kernel launch (call [t, t+5us), kernel [t+10, t+110) us),
// then, when `copy`, a blocking 4-byte Device-to-Host cudaMemcpy (call [t+6, t+120) us, with a
// nested cuMemcpyDtoH_v2 and its copy op [t+112, t+113) us), all inside NVTX "step <s>".
void writeLoop(TraceGen& g, bool copy) {
    for (int s = 0; s < kSteps; ++s) {
        const int64_t t = s * kStep;
        g.range(t, t + 121'000, "step " + std::to_string(s));
        g.launch(t, t + 5'000, t + 10'000, t + 110'000);
        if (copy) {
            g.range(t + 5'500, t + 120'500, "loss.item()");
            const uint32_t c = g.api(t + 6'000, t + 120'000, "cudaMemcpy_v3020");
            g.api(t + 7'000, t + 119'000, "cuMemcpyDtoH_v2", 0, TraceGen::kTid, true);
            g.memcpy(t + 112'000, t + 113'000, c, 4, 2);
        }
    }
}

// A recorded corpus trace (tests/data/corpus); "" when it is missing.
QString corpusTrace(const char* name) {
    const QString file = QDir(WARPLINE_TEST_DATA).filePath(QStringLiteral("corpus/") + name);
    return QFile::exists(file) ? file : QString();
}

// The groups of 4-byte Device-to-Host copies (loss.item(), a flag read back).
std::vector<const StallGroup*> scalarReads(const std::vector<StallGroup>& groups) {
    std::vector<const StallGroup*> out;
    for (const StallGroup& g : groups)
        if (g.copyKind == 2 && g.minBytes == 4 && g.maxBytes == 4)
            out.push_back(&g);
    return out;
}

const StallGroup* withOrigin(const std::vector<const StallGroup*>& groups,
                             const std::string& origin) {
    for (const StallGroup* g : groups)
        if (g->origin == origin)
            return g;
    return nullptr;
}

// An API call with the Python stack `chain` (0: none).
uint32_t apiWithStack(TraceGen& g, int64_t start, int64_t end, const std::string& name,
                      uint32_t chain) {
    format::ApiRecord r;
    r.start = start;
    r.end = end;
    r.processId = TraceGen::kPid;
    r.threadId = TraceGen::kTid;
    r.correlationId = g.nextCorrelation();
    r.name = name;
    r.callchainId = chain;
    g.writer().addApi(r);
    return r.correlationId;
}

} // namespace

class TestSyncStalls : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString path(const char* name) const { return m_dir.filePath(name); }

private slots:
    // The one list of calls that wait (the timeline's stall colour reads it too), suffix or not.
    void callNamesThatWait() {
        QCOMPARE(stallKindOfCallName("cudaDeviceSynchronize_v3020"), StallKind::DeviceSync);
        QCOMPARE(stallKindOfCallName("cuCtxSynchronize"), StallKind::DeviceSync);
        QCOMPARE(stallKindOfCallName("cudaStreamSynchronize_v3020"), StallKind::StreamSync);
        QCOMPARE(stallKindOfCallName("cuEventSynchronize"), StallKind::EventSync);
        QCOMPARE(stallKindOfCallName("cudaMemcpy_v3020"), StallKind::Memcpy);
        QCOMPARE(stallKindOfCallName("cuMemcpyDtoH_v2"), StallKind::Memcpy);
        QCOMPARE(stallKindOfCallName("cudaMemcpy2D_v3020"), StallKind::Memcpy);
        QVERIFY(!stallKindOfCallName("cudaMemcpyAsync_v3020"));
        QVERIFY(!stallKindOfCallName("cuMemcpyHtoDAsync_v2"));
        QVERIFY(!stallKindOfCallName("cudaLaunchKernel_v7000"));
        QVERIFY(!stallKindOfCallName("cudaStreamWaitEvent_v3020"));
    }

    void copyEveryStepStallsOncePerStep() {
        TraceGen g(path("loop.warpline"));
        writeLoop(g, true);
        const TraceStore store = g.load();
        const SyncStallAnalysis a = analyzeSyncStalls(store);
        // The nested driver copy merges into its cudaMemcpy: one stall per step.
        QCOMPARE(a.stalls.size(), size_t(kSteps));
        for (int s : {0, 1, 100, kSteps - 1}) {
            const SyncStall& st = a.stalls[static_cast<size_t>(s)];
            const int64_t t = s * kStep;
            QCOMPARE(st.kind, StallKind::Memcpy);
            QCOMPARE(st.start, t + 6'000);
            QCOMPARE(st.blocked(), int64_t(114'000));
            QCOMPARE(st.bytes, uint64_t(4));
            QCOMPARE(st.copyKind, uint8_t(2));
            QVERIFY(st.copyOp.valid());
            QCOMPARE(store.gpuTracks()[st.copyOp.track].start(st.copyOp.index), t + 112'000);
            QCOMPARE(st.deviceId, int64_t(0));
            QCOMPARE(store.text(store.apiTracks()[st.call.track].name(st.call.index)),
                     std::string("cudaMemcpy"));
            // The step's kernel and the copy finished while it waited.
            QCOMPARE(st.finishedOps, uint64_t(2));
            uint64_t listed = 0;
            for (const OpRun& r : a.finishedOps(static_cast<size_t>(s)))
                listed += r.range.size();
            QCOMPARE(listed, uint64_t(2));
            // GPU idle from the copy's end to the next step's kernel: 160 - 113 us.
            if (s + 1 < kSteps) {
                QCOMPARE(st.gpuIdleAfter, int64_t(47'000));
                QVERIFY(st.nextOp.valid());
                QCOMPARE(store.gpuTracks()[st.nextOp.track].start(st.nextOp.index),
                         t + kStep + 10'000);
            } else {
                QCOMPARE(st.gpuIdleAfter, int64_t(0));
                QVERIFY(!st.nextOp.valid());
            }
        }
        // Share: 200 x 114 us over the thread's active span [0, 199 * 150 + 120 us).
        QCOMPARE(a.threads.size(), size_t(1));
        QCOMPARE(a.threads[0].stalled, int64_t(kSteps) * 114'000);
        QCOMPARE(a.threads[0].activeStart, int64_t(0));
        QCOMPARE(a.threads[0].activeEnd, (kSteps - 1) * kStep + 120'000);
        QCOMPARE(a.threads[0].stalls, uint64_t(kSteps));
        QVERIFY(qAbs(a.share() - 22'800'000.0 / 29'970'000.0) < 1e-12);
        QVERIFY(a.share() > 0.75);
    }

    void sameLoopWithoutCopiesHasNoStalls() {
        TraceGen g(path("nocopy.warpline"));
        writeLoop(g, false);
        const TraceStore store = g.load();
        const SyncStallAnalysis a = analyzeSyncStalls(store);
        QCOMPARE(a.stalls.size(), size_t(0));
        QCOMPARE(a.share(), 0.0);
        QCOMPARE(a.threads.size(), size_t(1));
    }

    void groupsAndTables() {
        TraceGen g(path("groups.warpline"));
        writeLoop(g, true);
        g.api(kSteps * kStep, kSteps * kStep + 50'000, "cudaDeviceSynchronize_v3020");
        const TraceStore store = g.load();
        const SyncStallAnalysis a = analyzeSyncStalls(store);
        QCOMPARE(a.stalls.size(), size_t(kSteps + 1));
        const std::vector<StallGroup> groups = groupSyncStalls(store, a);
        QCOMPARE(groups.size(), size_t(2));
        QCOMPARE(store.text(groups[0].name), std::string("cudaMemcpy"));
        QCOMPARE(groups[0].blocked.count, uint64_t(kSteps));
        QCOMPARE(groups[0].blocked.total, int64_t(kSteps) * 114'000);
        QCOMPARE(groups[0].minBytes, uint64_t(4));
        QCOMPARE(groups[0].maxBytes, uint64_t(4));
        QCOMPARE(groups[0].finishedOps, uint64_t(2 * kSteps));
        QCOMPARE(groups[0].gpuIdleAfter, int64_t(kSteps - 1) * 47'000);
        QCOMPARE(groups[1].kind, StallKind::DeviceSync);
        QCOMPARE(groups[1].finishedOps, uint64_t(0));

        const Table t = syncStallGroupTable(store, a, groups);
        QCOMPARE(t.rowCount(), size_t(3)); // two groups, then the thread's "All" row
        QCOMPARE(cellText(t, 0, "Name"), std::string("cudaMemcpy"));
        QCOMPARE(cellInt(t, 0, "Stalls"), int64_t(kSteps));
        QCOMPARE(cellText(t, 0, "Copy"), std::string("Device-to-Host"));
        QCOMPARE(cellInt(t, 0, "Max Bytes"), int64_t(4));
        QCOMPARE(cellText(t, 1, "Name"), std::string("cudaDeviceSynchronize"));
        QCOMPARE(cellText(t, 2, "Name"), std::string("All synchronizing calls"));
        QCOMPARE(cellInt(t, 2, "Stalls"), int64_t(kSteps + 1));
        QVERIFY(qAbs(cellReal(t, 2, "Time (%)") - 100 * a.threads[0].share()) < 1e-9);
        const Table each = syncStallTable(store, a);
        QCOMPARE(each.rowCount(), size_t(kSteps + 1));
        QCOMPARE(cellInt(each, 0, "Blocked (ns)"), int64_t(114'000));
        QCOMPARE(ReportRegistry::find("syncs")->run(store).rowCount(), size_t(3));
    }

    // CUPTI SYNCHRONIZATION records join their call; a "stream wait event" record is GPU-side and
    // no stall; a record without its call is a stall on no thread, outside every share.
    void synchronizationRecords() {
        TraceGen g(path("records.warpline"));
        const uint32_t k = g.launch(0, 1'000, 2'000, 50'000);
        (void)k;
        const uint32_t s1 = g.api(3'000, 50'500, "cudaStreamSynchronize_v3020");
        g.sync(3'100, 50'400, s1, 3);
        const uint32_t w = g.api(60'000, 61'000, "cudaStreamWaitEvent_v3020");
        g.sync(60'100, 60'900, w, 2);
        const uint32_t f = g.api(70'000, 80'000, "cudaFree_v3020");
        g.sync(70'100, 79'900, f, 4);
        g.sync(90'000, 95'000, 9999, 4); // its call is not in the trace
        g.launch(96'000, 97'000, 98'000, 99'000);
        const TraceStore store = g.load();
        QCOMPARE(store.syncs().size(), size_t(4));
        const SyncStallAnalysis a = analyzeSyncStalls(store);
        QCOMPARE(a.stalls.size(), size_t(3));
        QCOMPARE(a.stalls[0].kind, StallKind::StreamSync);
        QVERIFY(a.stalls[0].syncIndex >= 0);
        QCOMPARE(a.stalls[0].blocked(), int64_t(47'500));
        QCOMPARE(a.stalls[0].finishedOps, uint64_t(1));
        QCOMPARE(a.stalls[0].gpuIdleAfter, int64_t(98'000 - 50'000));
        QCOMPARE(a.stalls[1].kind, StallKind::OtherSync);
        QCOMPARE(store.text(store.apiTracks()[a.stalls[1].call.track].name(a.stalls[1].call.index)),
                 std::string("cudaFree"));
        QCOMPARE(a.stalls[2].thread, SyncStall::kNoThread);
        QVERIFY(!a.stalls[2].call.valid());
        QCOMPARE(a.stalls[2].kind, StallKind::DeviceSync);
        QCOMPARE(a.stalls[2].blocked(), int64_t(5'000));
        // Share: (47.5 + 10) us of the thread's [0, 97 us).
        QCOMPARE(a.threads.size(), size_t(1));
        QCOMPARE(a.stalledTime, int64_t(57'500));
        QCOMPARE(a.activeTime, int64_t(97'000));
    }

    void deviceToDeviceCopyDoesNotBlock() {
        TraceGen g(path("dtod.warpline"));
        const uint32_t c = g.api(0, 3'000, "cudaMemcpy_v3020");
        g.memcpy(1'000, 2'000, c, 1 << 20, 8);
        const uint32_t h = g.api(4'000, 9'000, "cudaMemcpy_v3020");
        g.memcpy(5'000, 8'000, h, 1 << 20, 1);
        const uint32_t as = g.api(10'000, 11'000, "cudaMemcpyAsync_v3020");
        g.memcpy(12'000, 13'000, as, 4, 2);
        const TraceStore store = g.load();
        const SyncStallAnalysis a = analyzeSyncStalls(store);
        QCOMPARE(a.stalls.size(), size_t(1));
        QCOMPARE(a.stalls[0].copyKind, uint8_t(1));
        QCOMPARE(a.stalls[0].bytes, uint64_t(1 << 20));
    }

    void sharePerThread() {
        TraceGen g(path("threads.warpline"));
        g.api(0, 10'000, "cudaLaunchKernel_v7000", 0, 1);
        g.api(10'000, 90'000, "cudaDeviceSynchronize_v3020", 0, 1);
        g.api(90'000, 100'000, "cudaLaunchKernel_v7000", 0, 1);
        g.api(0, 50'000, "cudaEventSynchronize_v3020", 0, 2);
        g.api(50'000, 200'000, "cudaMalloc_v3020", 0, 2);
        const TraceStore store = g.load();
        const SyncStallAnalysis a = analyzeSyncStalls(store);
        QCOMPARE(a.stalls.size(), size_t(2));
        QCOMPARE(a.threads.size(), size_t(2));
        double shares[2] = {a.threads[0].share(), a.threads[1].share()};
        std::sort(shares, shares + 2);
        QCOMPARE(shares[0], 0.25);
        QCOMPARE(shares[1], 0.8);
        QCOMPARE(a.share(), 130'000.0 / 300'000.0);
    }

    void windowCountsStallsStartingInside() {
        TraceGen g(path("window.warpline"));
        writeLoop(g, true);
        const TraceStore store = g.load();
        const SyncStallAnalysis a = analyzeSyncStalls(store, TimeWindow{0, 10 * kStep});
        QCOMPARE(a.stalls.size(), size_t(10));
        QCOMPARE(a.threads[0].activeEnd, 9 * kStep + 120'000);
    }

    void kernelsWithoutLaunchesAndEmptyTrace() {
        {
            TraceGen g(path("nolaunch.warpline"));
            g.kernel(0, 1'000, 5);
            const TraceStore store = g.load();
            const SyncStallAnalysis a = analyzeSyncStalls(store);
            QVERIFY(a.stalls.empty());
            QVERIFY(a.threads.empty());
            QCOMPARE(a.share(), 0.0);
        }
        TraceGen g(path("empty.warpline"));
        const TraceStore store = g.load();
        const SyncStallAnalysis a = analyzeSyncStalls(store);
        QVERIFY(a.stalls.empty());
        QCOMPARE(ReportRegistry::find("syncs")->run(store).rowCount(), size_t(0));
    }

    // tensor.item() in PyTorch: cudaMemcpyAsync of 4 bytes, then cudaStreamSynchronize. The sync
    // carries the copy it was made for.
    void syncAfterAsyncCopyCarriesTheCopy() {
        TraceGen g(path("item.warpline"));
        for (int s = 0; s < 3; ++s) {
            const int64_t t = s * 100'000LL;
            g.launch(t, t + 5'000, t + 6'000, t + 80'000);
            const uint32_t c = g.api(t + 6'000, t + 9'000, "cudaMemcpyAsync_v3020");
            g.memcpy(t + 80'000, t + 81'000, c, 4, 2);
            g.api(t + 9'500, t + 82'000, "cudaStreamSynchronize_v3020");
        }
        const TraceStore store = g.load();
        const SyncStallAnalysis a = analyzeSyncStalls(store);
        QCOMPARE(a.stalls.size(), size_t(3));
        for (const SyncStall& st : a.stalls) {
            QCOMPARE(st.kind, StallKind::StreamSync);
            QCOMPARE(st.bytes, uint64_t(4));
            QCOMPARE(st.copyKind, uint8_t(2));
            QVERIFY(st.copyOp.valid());
            QCOMPARE(st.blocked(), int64_t(72'500));
        }
    }

    // Without a stack, a stall's origin is the last kernel its thread launched before it: two
    // .item() reads after different kernels are two rows; a sync with no kernel before it has
    // no origin.
    void originWithoutStackIsThePrecedingKernel() {
        TraceGen g(path("after.warpline"));
        g.api(0, 20'000, "cudaDeviceSynchronize_v3020");
        for (int s = 0; s < 6; ++s) {
            const int64_t t = 100'000 + s * 100'000LL;
            const uint32_t k = g.api(t, t + 5'000, "cudaLaunchKernel_v7000");
            g.kernel(t + 6'000, t + 80'000, k, 7, s % 2 ? "_Z6reducePf" : "_Z5scalePf");
            const uint32_t c = g.api(t + 6'000, t + 9'000, "cudaMemcpyAsync_v3020");
            g.memcpy(t + 80'000, t + 81'000, c, 4, 2);
            g.api(t + 9'500, t + (s % 2 ? 82'000 : 85'000), "cudaStreamSynchronize_v3020");
        }
        const TraceStore store = g.load();
        const SyncStallAnalysis a = analyzeSyncStalls(store);
        QCOMPARE(a.stalls.size(), size_t(7));
        QVERIFY(!a.stalls[0].origin.fromStack);
        QVERIFY(!a.stalls[0].origin.lastKernel.valid());
        QCOMPARE(stallOriginText(store, a.stalls[0].origin), std::string());
        QCOMPARE(stallOriginText(store, a.stalls[1].origin), std::string("after scale"));
        QCOMPARE(stallOriginText(store, a.stalls[2].origin), std::string("after reduce"));
        const std::vector<StallGroup> groups = groupSyncStalls(store, a);
        QCOMPARE(groups.size(), size_t(3));
        QCOMPARE(groups[0].origin, std::string("after scale")); // 3 x 75.5 us
        QCOMPARE(groups[0].blocked.count, uint64_t(3));
        QCOMPARE(groups[1].origin, std::string("after reduce")); // 3 x 72.5 us
        QCOMPARE(groups[1].blocked.count, uint64_t(3));
        QCOMPARE(groups[2].origin, std::string());
        const Table t = syncStallGroupTable(store, a, groups);
        QCOMPARE(cellText(t, 1, "Origin"), std::string("after reduce"));
        QCOMPARE(cellText(syncStallTable(store, a), 1, "Origin"), std::string("after scale"));
    }

    // With stacks: the innermost frame, then the user's innermost one; a thousand call sites in
    // one loop stay kMaxOrigins rows, the smallest merged.
    void originsFromStacksAreCapped() {
        TraceGen g(path("stacks.warpline"));
        constexpr int kSites = 20;
        for (int i = 0; i < kSites; ++i) {
            format::CallchainRecord c;
            c.id = static_cast<uint32_t>(i + 1);
            c.frames = {{"Scaler.step", "/venv/lib/python3.12/site-packages/amp/scaler.py", 371},
                        {"Trainer.run", "/home/me/proj/trainer.py", 100 + i},
                        {"<module>", "/home/me/proj/main.py", 9}};
            if (i == 0) // the user's own line is innermost
                c.frames.erase(c.frames.begin());
            g.writer().addCallchain(c);
            const int64_t t = i * 1'000'000LL;
            const uint32_t copy = apiWithStack(g, t, t + 1'000, "cudaMemcpyAsync_v3020", c.id);
            g.memcpy(t + 2'000, t + 3'000, copy, 4, 2);
            apiWithStack(g, t + 1'000, t + 10'000 + 1'000 * i, "cudaStreamSynchronize_v3020", c.id);
        }
        const TraceStore store = g.load();
        const SyncStallAnalysis a = analyzeSyncStalls(store);
        QCOMPARE(a.stalls.size(), size_t(kSites));
        QVERIFY(a.stalls[0].origin.fromStack);
        QVERIFY(!a.stalls[0].origin.hasUser);
        QCOMPARE(stallOriginText(store, a.stalls[0].origin), std::string("trainer.py:100"));
        QVERIFY(a.stalls[5].origin.hasUser);
        QCOMPARE(stallOriginText(store, a.stalls[5].origin),
                 std::string("scaler.py:371 \u2190 trainer.py:105"));
        const std::vector<StallGroup> groups = groupSyncStalls(store, a);
        QCOMPARE(groups.size(), StallGroup::kMaxOrigins);
        // The 13 smallest (9 to 21 us each) together outweigh each of the others.
        QCOMPARE(groups[1].origin, std::string("scaler.py:371 \u2190 trainer.py:119"));
        QCOMPARE(groups[1].blocked.total, int64_t(28'000));
        QCOMPARE(groups[7].origin, std::string("scaler.py:371 \u2190 trainer.py:113"));
        const StallGroup& rest = groups[0];
        QCOMPARE(rest.origin, std::string("(13 other origins)"));
        QCOMPARE(rest.origins, uint32_t(13));
        QCOMPARE(rest.blocked.count, uint64_t(13));
        QCOMPARE(rest.blocked.total, int64_t(195'000));
        QCOMPARE(rest.stalls.front(), uint32_t(0));
        QVERIFY(std::is_sorted(rest.stalls.begin(), rest.stalls.end()));
    }

    // GradScaler reads found_inf back in scaler.step() every step; the loss is printed every 10
    // steps: the same 4-byte copy and sync, two rows (tests/corpus/gradscaler_amp.py).
    void recordedOriginsSplitGradScalerFromLossPrint() {
        const QString file = corpusTrace("gradscaler-amp.warpline");
        if (file.isEmpty())
            QFAIL("tests/data/corpus/gradscaler-amp.warpline is missing");
        const TraceStore store = TraceLoader::load(file.toStdString());
        const SyncStallAnalysis a = analyzeSyncStalls(store);
        const std::vector<StallGroup> groups = groupSyncStalls(store, a);
        const auto reads = scalarReads(groups);
        QVERIFY(reads.size() >= 2);
        const StallGroup* scaler =
            withOrigin(reads, "grad_scaler.py:371 \u2190 gradscaler_amp.py:26");
        const StallGroup* print = withOrigin(reads, "gradscaler_amp.py:29");
        QVERIFY(scaler && print);
        QCOMPARE(scaler->blocked.count, uint64_t(30)); // every step
        QCOMPARE(print->blocked.count, uint64_t(3));   // steps 0, 10, 20
        QCOMPARE(scaler->name, print->name);
        const Table t = syncStallGroupTable(store, a, groups);
        const auto row = static_cast<size_t>(scaler - groups.data());
        QCOMPARE(cellText(t, row, "Origin"), scaler->origin);
    }

    // A boolean-mask index in forward() syncs for the element count every step: its row names
    // the masking line (tests/corpus/bool_mask.py:21), the backward pass's its own.
    void recordedOriginNamesTheMaskingLine() {
        const QString file = corpusTrace("bool-mask.warpline");
        if (file.isEmpty())
            QFAIL("tests/data/corpus/bool-mask.warpline is missing");
        const TraceStore store = TraceLoader::load(file.toStdString());
        const SyncStallAnalysis a = analyzeSyncStalls(store);
        const std::vector<StallGroup> groups = groupSyncStalls(store, a);
        const auto reads = scalarReads(groups);
        const StallGroup* mask = withOrigin(reads, "bool_mask.py:21");
        QVERIFY(mask);
        QCOMPARE(mask->blocked.count, uint64_t(40));
        QVERIFY(withOrigin(reads, "<autograd backward> \u2190 bool_mask.py:32"));
        QVERIFY(withOrigin(reads, "bool_mask.py:34")); // the last loss, printed once
    }

    // Recorded without stacks, .item() every step: the kernel before each read names it.
    void recordedOriginWithoutStacks() {
        const QString file = corpusTrace("gemm-steps.warpline");
        if (file.isEmpty())
            QFAIL("tests/data/corpus/gemm-steps.warpline is missing");
        const TraceStore store = TraceLoader::load(file.toStdString());
        QVERIFY(store.callchains().empty());
        const SyncStallAnalysis a = analyzeSyncStalls(store);
        const std::vector<StallGroup> groups = groupSyncStalls(store, a);
        QCOMPARE(groups.size(), size_t(1));
        QCOMPARE(groups[0].blocked.count, uint64_t(45));
        QCOMPARE(groups[0].origin, std::string("after reduce_kernel[Mean, float]"));
    }

    // .cpu() of a tensor: cudaMemcpyAsync into pageable memory returns only once the copy is
    // done, so the wait is in the copy call (8 ms a step), not the stream sync after it (8 us).
    void recordedAsyncCopyIntoPageableMemoryBlocks() {
        const QString file = corpusTrace("cpu-metric.warpline");
        if (file.isEmpty())
            QFAIL("tests/data/corpus/cpu-metric.warpline is missing");
        const TraceStore store = TraceLoader::load(file.toStdString());
        const SyncStallAnalysis a = analyzeSyncStalls(store);
        const std::vector<StallGroup> groups = groupSyncStalls(store, a);
        const auto copy = std::find_if(groups.begin(), groups.end(), [&](const StallGroup& g) {
            return store.text(g.name).starts_with("cudaMemcpyAsync");
        });
        QVERIFY(copy != groups.end());
        QCOMPARE(copy->kind, StallKind::Memcpy);
        QCOMPARE(copy->blocked.count, uint64_t(30));
        QCOMPARE(copy->origin, std::string("cpu_metric.py:29"));
        QVERIFY(copy->blocked.median > 5e6);
        // The host-to-device copies of the set-up (pageable too) do not wait: no stall.
        for (const StallGroup& g : groups)
            QVERIFY(!(store.text(g.name).starts_with("cudaMemcpyAsync") && g.copyKind == 1));
    }

    // cudaMemcpyAsync waits for its copy only into pageable host memory, and a call that
    // returned before its copy ended did not wait: of copies into pageable memory within their
    // call, into pinned memory within their call, and into pageable memory ending after their
    // call returned, only the first are stalls.
    void asyncCopyWaitsOnlyIntoPageableMemory() {
        TraceGen g(path("pinned.warpline"));
        int64_t now = 1'000'000;
        for (int k = 0; k < 12; ++k) {
            g.launch(now, now + 5000, now + 6000, now + 20'000);
            const uint32_t c = g.api(now + 10'000, now + 60'000, "cudaMemcpyAsync_v3020");
            format::MemcpyRecord m;
            m.start = now + 30'000;
            m.end = k % 3 == 2 ? now + 70'000 : now + 40'000;
            m.contextId = 1;
            m.streamId = 7;
            m.correlationId = c;
            m.bytes = 4;
            m.copyKind = 2;                 // device to host
            m.srcKind = 3;                  // device
            m.dstKind = k % 3 == 1 ? 2 : 1; // pinned, pageable
            g.writer().addMemcpy(m);
            now += 100'000;
        }
        const TraceStore store = g.load();
        const SyncStallAnalysis a = analyzeSyncStalls(store);
        QCOMPARE(a.stalls.size(), size_t(4));
        for (const SyncStall& s : a.stalls) {
            QCOMPARE(s.kind, StallKind::Memcpy);
            const GpuTrack& copies = store.gpuTracks()[s.copyOp.track];
            QCOMPARE(store.memOps()[copies.detail(s.copyOp.index)].dstKind, uint8_t(1));
            QVERIFY(copies.end(s.copyOp.index) <= s.end);
        }
    }

    // PyTorch's loss.item() every step: one stream sync after a 4-byte D2H copy in each "step"
    // range; reading the loss once at the end: none inside any step.
    void recordedTorchLoops() {
        const QDir data(WARPLINE_TEST_DATA);
        const QString every = data.filePath("torch-mlp-sync-every-step.warpline");
        const QString end = data.filePath("torch-mlp-sync-end.warpline");
        WARPLINE_REQUIRE_DATA(every);
        WARPLINE_REQUIRE_DATA(end);
        for (const bool perStep : {true, false}) {
            const TraceStore store = TraceLoader::load((perStep ? every : end).toStdString());
            const SyncStallAnalysis a = analyzeSyncStalls(store);
            int steps = 0;
            for (const NvtxTrack& t : store.nvtxTracks()) {
                for (size_t i = 0; i < t.size(); ++i) {
                    if (store.text(t.name(i)).rfind("step ", 0) != 0)
                        continue;
                    ++steps;
                    int scalarReads = 0;
                    for (const SyncStall& st : a.stalls)
                        scalarReads += st.start >= t.start(i) && st.end <= t.end(i) &&
                                               st.copyKind == 2 && st.bytes == 4
                                           ? 1
                                           : 0;
                    QCOMPARE(scalarReads, perStep ? 1 : 0);
                }
            }
            QVERIFY(steps >= 10);
        }
    }

    // `-- PROGRAM` records no CUPTI SYNCHRONIZATION rows by default (they cost a PyTorch step a
    // third): the stalls of the recorded PyTorch loop are the same without them.
    void recordedTorchLoopWithoutSyncRecords() {
        const QString every =
            QDir(WARPLINE_TEST_DATA).filePath("torch-mlp-sync-every-step.warpline");
        WARPLINE_REQUIRE_DATA(every);
        const QString copy = m_dir.filePath("torch-no-sync-records.warpline");
        QFile::remove(copy);
        QVERIFY(QFile::copy(every, copy));
        QFile(copy).setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner);
        sqlite3* db = nullptr;
        QCOMPARE(sqlite3_open(copy.toUtf8().constData(), &db), SQLITE_OK);
        QCOMPARE(sqlite3_exec(db, "DELETE FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", nullptr,
                              nullptr, nullptr),
                 SQLITE_OK);
        QVERIFY(sqlite3_changes(db) > 50);
        sqlite3_close(db);

        const TraceStore with = TraceLoader::load(every.toStdString());
        const TraceStore without = TraceLoader::load(copy.toStdString());
        QVERIFY(without.syncs().empty());
        const SyncStallAnalysis a = analyzeSyncStalls(with);
        const SyncStallAnalysis b = analyzeSyncStalls(without);
        QVERIFY(a.stalls.size() > 50);
        QCOMPARE(b.stalls.size(), a.stalls.size());
        for (size_t i = 0; i < a.stalls.size(); ++i) {
            QCOMPARE(b.stalls[i].start, a.stalls[i].start);
            QCOMPARE(b.stalls[i].end, a.stalls[i].end);
            QCOMPARE(b.stalls[i].kind, a.stalls[i].kind);
            QCOMPARE(b.stalls[i].bytes, a.stalls[i].bytes);
        }
        QCOMPARE(b.stalledTime, a.stalledTime);
    }

    // The recorded sync-stall workload: one stall per step in "sync-every-step", a large stalled
    // share there, and no stall inside any step of "sync-once".
    void recordedSyncStall() {
        const QString file = QDir(WARPLINE_TEST_DATA).filePath("sync-stall.warpline");
        WARPLINE_REQUIRE_DATA(file);
        const TraceStore store = TraceLoader::load(file.toStdString());
        auto phase = [&](const std::string& name) -> std::pair<int64_t, int64_t> {
            for (const NvtxTrack& t : store.nvtxTracks()) {
                for (size_t i = 0; i < t.size(); ++i) {
                    if (store.text(t.name(i)) == name)
                        return {t.start(i), t.end(i)};
                }
            }
            return {-1, -1};
        };
        auto stepsIn = [&](std::pair<int64_t, int64_t> p) {
            std::vector<std::pair<int64_t, int64_t>> steps;
            for (const NvtxTrack& t : store.nvtxTracks()) {
                for (size_t i = 0; i < t.size(); ++i) {
                    if (store.text(t.name(i)).rfind("step ", 0) == 0 && t.start(i) >= p.first &&
                        t.end(i) <= p.second)
                        steps.push_back({t.start(i), t.end(i)});
                }
            }
            std::sort(steps.begin(), steps.end());
            return steps;
        };
        const auto every = phase("sync-every-step");
        const auto once = phase("sync-once");
        QVERIFY(every.first >= 0 && once.first >= 0);

        const auto everySteps = stepsIn(every);
        QVERIFY(everySteps.size() >= 10);
        const SyncStallAnalysis a = analyzeSyncStalls(store, TimeWindow{every.first, every.second});
        QCOMPARE(a.stalls.size(), everySteps.size());
        for (const auto& [s, e] : everySteps) {
            int inside = 0;
            for (const SyncStall& st : a.stalls)
                inside += st.start >= s && st.end <= e ? 1 : 0;
            QCOMPARE(inside, 1);
        }
        for (const SyncStall& st : a.stalls) {
            QCOMPARE(st.kind, StallKind::Memcpy);
            QCOMPARE(st.bytes, uint64_t(4));
            QCOMPARE(st.copyKind, uint8_t(2));
        }
        QVERIFY2(a.share() > 0.3, qPrintable(QString("stalled share %1").arg(a.share())));

        const SyncStallAnalysis b = analyzeSyncStalls(store, TimeWindow{once.first, once.second});
        QVERIFY2(b.stalls.size() <= 1, qPrintable(QString("%1 stalls").arg(b.stalls.size())));
        for (const auto& [s, e] : stepsIn(once)) {
            for (const SyncStall& st : b.stalls)
                QVERIFY(!(st.start >= s && st.end <= e));
        }
    }
};

QTEST_GUILESS_MAIN(TestSyncStalls)
#include "tst_syncstalls.moc"
