// TraceSession: several traces as one store on one time axis. Jobs are generated per test with
// the real TraceWriter (bench/rankjobgen.h); the real two-rank traces in tests/data/ranks and the
// two unrelated PyTorch recordings in tests/data check the same on files a GPU wrote.

#include "communication.h"
#include "kinetoimport.h"
#include "rankjobgen.h"
#include "traceerror.h"
#include "traceloader.h"
#include "traceopener.h"
#include "tracesession.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <filesystem>
#include <map>
#include <sqlite3.h>

using namespace warpline::model;
using warpline::bench::RankJobSpec;
using warpline::bench::writeRankJob;

namespace {

const QString kData = QStringLiteral(WARPLINE_TEST_DATA);

std::string dataFile(const char* name) {
    return (kData + "/" + name).toStdString();
}

bool anyWarningContains(const TraceStore& store, const std::string& text) {
    return std::any_of(store.warnings().begin(), store.warnings().end(),
                       [&](const std::string& w) { return w.find(text) != std::string::npos; });
}

// DeviceInfo::id is a CUDA device id in a store read from one file (not an index).
uint32_t sourceOfGpuTrack(const TraceStore& store, const GpuTrack& track) {
    for (const DeviceInfo& device : store.devices()) {
        if (device.id == track.deviceId())
            return device.source;
    }
    return 0;
}

uint32_t sourceOfApiTrack(const TraceStore& store, const ApiTrack& track) {
    return static_cast<uint32_t>(store.threads()[track.threadIndex()].globalTid >> 48);
}

// Ends of the communication kernels of each source, in time order.
std::map<uint32_t, std::vector<int64_t>> commEnds(const TraceStore& store) {
    std::map<uint32_t, std::vector<int64_t>> ends;
    for (const GpuTrack& t : store.gpuTracks()) {
        for (size_t i = 0; i < t.size(); ++i) {
            if (t.kind(i) == GpuOpKind::Kernel && isCommunicationKernel(store.text(t.name(i))))
                ends[sourceOfGpuTrack(store, t)].push_back(t.end(i));
        }
    }
    for (auto& [source, list] : ends)
        std::sort(list.begin(), list.end());
    return ends;
}

// The largest spread, over steps, of the communication kernels' ends across sources.
int64_t worstEndSpread(const TraceStore& store) {
    const auto ends = commEnds(store);
    size_t steps = ends.empty() ? 0 : ends.begin()->second.size();
    for (const auto& [source, list] : ends)
        steps = std::min(steps, list.size());
    int64_t worst = 0;
    for (size_t step = 0; step < steps; ++step) {
        int64_t lo = std::numeric_limits<int64_t>::max();
        int64_t hi = std::numeric_limits<int64_t>::min();
        for (const auto& [source, list] : ends) {
            lo = std::min(lo, list[step]);
            hi = std::max(hi, list[step]);
        }
        worst = std::max(worst, hi - lo);
    }
    return worst;
}

// tracestore.h and spantrack.h invariants, and the session's own: every link stays within its
// source, ids carry the source, devices are numbered in order.
void checkSession(const TraceStore& store) {
    const auto checkTrack = [&](const SpanTrack& t) {
        for (size_t i = 0; i < t.size(); ++i) {
            QVERIFY(t.start(i) <= t.end(i));
            QVERIFY(t.start(i) >= store.beginTime());
            QVERIFY(t.end(i) <= store.endTime());
            if (i > 0)
                QVERIFY(t.end(i - 1) <= t.start(i));
        }
    };
    for (const ApiTrack& t : store.apiTracks())
        checkTrack(t);
    for (const NvtxTrack& t : store.nvtxTracks())
        checkTrack(t);
    for (size_t d = 0; d < store.devices().size(); ++d)
        QCOMPARE(store.devices()[d].id, uint32_t(d));
    for (const ProcessInfo& p : store.processes())
        QCOMPARE(p.globalPid >> 48, int64_t(p.source));
    for (const ThreadInfo& t : store.threads())
        QCOMPARE(t.globalTid >> 48, int64_t(t.source));
    for (size_t i = 1; i < store.threads().size(); ++i)
        QVERIFY(store.threads()[i - 1].globalTid < store.threads()[i].globalTid);
    for (size_t i = 1; i < store.syncs().size(); ++i)
        QVERIFY(store.syncs()[i - 1].start <= store.syncs()[i].start);
    size_t linked = 0;
    for (uint32_t ti = 0; ti < store.gpuTracks().size(); ++ti) {
        const GpuTrack& t = store.gpuTracks()[ti];
        checkTrack(t);
        QCOMPARE(store.streams()[t.streamIndex()].deviceId, t.deviceId());
        for (uint32_t i = 0; i < t.size(); ++i) {
            if (t.kind(i) == GpuOpKind::Kernel)
                QCOMPARE(store.kernelConfigs()[t.detail(i)].deviceId, t.deviceId());
            const EventRef launch = t.launch(i);
            if (!launch.valid())
                continue;
            ++linked;
            const ApiTrack& api = store.apiTracks()[launch.track];
            QCOMPARE(api.correlationId(launch.index), t.correlationId(i));
            QCOMPARE(sourceOfApiTrack(store, api), sourceOfGpuTrack(store, t));
            const auto ops = store.gpuOpsOf(launch);
            QVERIFY(std::find(ops.begin(), ops.end(), EventRef{ti, i}) != ops.end());
        }
    }
    size_t reverse = 0;
    for (const ApiTrack& t : store.apiTracks()) {
        for (size_t i = 0; i < t.size(); ++i)
            reverse += t.gpuOps(i).size();
    }
    QCOMPARE(reverse, linked);
}

// A copy of a trace with SQL applied to it (another host name, no wall clock ...).
std::string editedCopy(const std::string& from, const QString& to, const char* sql) {
    QFile::remove(to);
    if (!QFile::copy(QString::fromStdString(from), to))
        return {};
    QFile::setPermissions(to, QFile::ReadOwner | QFile::WriteOwner);
    sqlite3* db = nullptr;
    sqlite3_open(to.toUtf8().constData(), &db);
    const int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
    sqlite3_close(db);
    return rc == SQLITE_OK ? to.toStdString() : std::string();
}

} // namespace

class TestTraceSession : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString path(const QString& name) const { return m_dir.filePath(name); }

    std::vector<std::string> job(const QString& name, const RankJobSpec& spec) {
        QDir(m_dir.path()).mkpath(name);
        return writeRankJob(path(name).toStdString(), spec);
    }

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void communicationKernels_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<bool>("communication");
        const auto row = [](const char* name, bool communication) {
            QTest::newRow(name) << QString(name) << communication;
        };
        row("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", true);
        row("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", true);
        row("rcclGenericKernel<1, false>", true);
        row("nvshmemi_transfer_rma_kernel", true);
        row("void c10d::symmetric_memory::one_shot_all_reduce_kernel<float, 8>(float**)", true);
        row("void tensorrt_llm::kernels::oneShotAllReduceKernel<float, 8>(AllReduceParams)", true);
        row("multimem_all_gather_kernel", true);
        row("reduce_scatter_kernel", true);
        row("AllToAllKernel", true);
        row("lamport_allreduce_kernel", true);
        row("MPI_Allreduce", true);
        // Compute kernels of the bundled allreduce workload, named after their step.
        row("warpline::kernels::(anonymous namespace)::allreduceCompute(float*, unsigned long, "
            "int)",
            false);
        row("warpline::kernels::(anonymous namespace)::allreduceApply(float*, float const*, "
            "unsigned long, float)",
            false);
        row("small_reduce_kernel", false);
        row("void at::native::reduce_kernel<512, 1>(at::native::ReduceOp)", false);
        row("ampere_sgemm_128x64_tn", false);
    }
    void communicationKernels() {
        QFETCH(QString, name);
        QFETCH(bool, communication);
        QCOMPARE(isCommunicationKernel(name.toStdString()), communication);
    }

    // 8 ranks of one host, opened in any order: one store, sources in rank order, one device
    // per rank with its CUDA id, every kernel still linked to its launch in its own source.
    void eightRanksOneHost() {
        RankJobSpec spec;
        spec.ranks = 8;
        spec.steps = 6;
        std::vector<std::string> paths = job("eight", spec);
        QCOMPARE(paths.size(), size_t(8));
        size_t kernels = 0, events = 0;
        for (const std::string& p : paths) {
            const TraceStore one = TraceLoader::load(p);
            kernels += one.kernelCount();
            events += one.eventCount();
        }
        std::reverse(paths.begin(), paths.end());
        std::swap(paths[2], paths[5]);
        const TraceStore store = TraceSession::open(paths);

        QVERIFY(store.isSession());
        QCOMPARE(store.sources().size(), size_t(8));
        // Streams and their tracks point at each other across the merge (every rank's stream
        // rows show that rank's kernels).
        for (uint32_t st = 0; st < store.streams().size(); ++st) {
            for (uint32_t track : store.streams()[st].gpuTracks) {
                QCOMPARE(store.gpuTracks()[track].streamIndex(), st);
                QCOMPARE(store.gpuTracks()[track].deviceId(), store.streams()[st].deviceId);
            }
        }
        for (int r = 0; r < 8; ++r) {
            const TraceSource& s = store.sources()[r];
            QCOMPARE(s.rank, r);
            QCOMPARE(s.localRank, r);
            QCOMPARE(s.worldSize, 8);
            QCOMPARE(s.host, std::string("node0"));
            QCOMPARE(s.label(), "rank " + std::to_string(r));
            QCOMPARE(QString::fromStdString(s.path).endsWith(QString("rank_%1.warpline").arg(r)),
                     true);
            QCOMPARE(s.alignment, r == 0 ? ClockAlignment::Reference : ClockAlignment::SharedClock);
            const int64_t sst = std::stoll(s.meta.at("session_start_timestamp"));
            const int64_t ref = std::stoll(store.sources()[0].meta.at("session_start_timestamp"));
            QCOMPARE(s.clockOffset, sst - ref);
        }
        QCOMPARE(store.path(), store.sources()[0].path);
        QCOMPARE(store.metaValue("env_RANK"), std::string("0"));
        QCOMPARE(store.devices().size(), size_t(8));
        for (uint32_t d = 0; d < 8; ++d) {
            QCOMPARE(store.devices()[d].cudaId, d);
            QCOMPARE(store.devices()[d].source, d);
            QCOMPARE(store.text(store.devices()[d].name), std::string("NVIDIA H100 80GB HBM3"));
        }
        QCOMPARE(store.processes().size(), size_t(8));
        QCOMPARE(store.threads().size(), size_t(8));
        for (uint32_t r = 0; r < 8; ++r) {
            QCOMPARE(store.processes()[r].source, r);
            QCOMPARE(store.text(store.threads()[r].name), std::string("python3"));
        }
        QCOMPARE(store.kernelCount(), kernels);
        QCOMPARE(store.eventCount(), events);
        size_t launched = 0;
        for (const GpuTrack& t : store.gpuTracks()) {
            for (size_t i = 0; i < t.size(); ++i)
                launched += t.launch(i).valid() ? 1 : 0;
        }
        QCOMPARE(launched, kernels + store.memcpyCount());
        checkSession(store);
    }

    // The all-reduce of a step ends at one time on every rank: after alignment the ends agree,
    // while each file's own times (its own t = 0) do not.
    void allReduceEndsLineUp() {
        RankJobSpec spec;
        spec.ranks = 4;
        spec.steps = 5;
        spec.slowRank = 2;
        const std::vector<std::string> paths = job("lineup", spec);
        std::vector<TraceStore> files;
        for (const std::string& p : paths)
            files.push_back(TraceLoader::load(p));
        int64_t rawSpread = 0;
        for (const TraceStore& f : files) {
            const auto ends = commEnds(f).begin()->second;
            QCOMPARE(ends.size(), size_t(5));
            const auto first = commEnds(files[0]).begin()->second;
            rawSpread = std::max(rawSpread, std::abs(ends[0] - first[0]));
        }
        QVERIFY2(rawSpread > 20'000, "the files' own clocks differ");

        const TraceStore store = TraceSession::merge(std::move(files));
        QCOMPARE(store.sources().size(), size_t(4));
        QVERIFY2(worstEndSpread(store) <= 5'000, std::to_string(worstEndSpread(store)).c_str());
        // The other ranks wait for the slow one inside the all-reduce.
        for (const GpuTrack& t : store.gpuTracks()) {
            const uint32_t source = sourceOfGpuTrack(store, t);
            for (size_t i = 0; i < t.size(); ++i) {
                if (!isCommunicationKernel(store.text(t.name(i))))
                    continue;
                if (source == 2)
                    QVERIFY(t.duration(i) < spec.allReduceNs + 100'000);
                else
                    QVERIFY(t.duration(i) >= spec.allReduceNs + spec.slowByNs - 100'000);
            }
        }
        checkSession(store);
    }

    // Two hosts with unrelated clocks: the second host's ranks are put at the sync point.
    void twoHostsAlignAtSyncPoint() {
        RankJobSpec spec;
        spec.ranks = 4;
        spec.hosts = 2;
        spec.steps = 5;
        spec.seed = 7;
        const std::vector<std::string> paths = job("twohosts", spec);
        const TraceStore store = TraceSession::open(paths);
        QCOMPARE(store.sources().size(), size_t(4));
        const std::vector<ClockAlignment> expected = {
            ClockAlignment::Reference, ClockAlignment::SharedClock, ClockAlignment::SyncPoint,
            ClockAlignment::SyncPoint};
        for (size_t k = 0; k < 4; ++k) {
            QCOMPARE(store.sources()[k].alignment, expected[k]);
            QCOMPARE(store.sources()[k].host, std::string(k < 2 ? "node0" : "node1"));
        }
        // The offset recorded is the one applied: the file's first all-reduce end, moved by it,
        // is the reference's.
        const int64_t refEnd = commEnds(TraceLoader::load(paths[0])).begin()->second.front();
        for (size_t k = 2; k < 4; ++k) {
            const int64_t ownEnd = commEnds(TraceLoader::load(paths[k])).begin()->second.front();
            QCOMPARE(store.sources()[k].clockOffset, refEnd - ownEnd);
            QVERIFY(store.sources()[k].clockOffset != 0);
        }
        QVERIFY2(worstEndSpread(store) <= 5'000, std::to_string(worstEndSpread(store)).c_str());
        QVERIFY(!anyWarningContains(store, "wall-clock"));
        checkSession(store);
    }

    void singleFileHasOneReferenceSource() {
        RankJobSpec spec;
        spec.ranks = 2;
        spec.steps = 2;
        const std::vector<std::string> paths = job("single", spec);
        const TraceStore store = TraceLoader::load(paths[1]);
        QVERIFY(!store.isSession());
        QCOMPARE(store.sources().size(), size_t(1));
        const TraceSource& s = store.sources()[0];
        QCOMPARE(s.path, paths[1]);
        QCOMPARE(s.rank, 1);
        QCOMPARE(s.localRank, 1);
        QCOMPARE(s.worldSize, 2);
        QCOMPARE(s.host, std::string("node0"));
        QCOMPARE(s.alignment, ClockAlignment::Reference);
        QCOMPARE(s.clockOffset, int64_t(0));
        QVERIFY(s.utcEpochNs > 1'700'000'000'000'000'000);
        QCOMPARE(s.meta, store.meta());
        QCOMPARE(store.devices().size(), size_t(1));
        QCOMPARE(store.devices()[0].id, 1u);
        QCOMPARE(store.devices()[0].cudaId, 1u);
        QCOMPARE(store.devices()[0].source, 0u);

        // A real recording without rank variables: labelled by its file name.
        const TraceStore mlp = TraceLoader::load(dataFile("mlp.warpline"));
        QCOMPARE(mlp.sources().size(), size_t(1));
        QCOMPARE(mlp.sources()[0].rank, -1);
        QCOMPARE(mlp.sources()[0].host, std::string("vm"));
        QCOMPARE(mlp.sources()[0].label(), std::string("mlp.warpline"));
        // A one-path session is that file.
        const TraceStore one = TraceSession::open({dataFile("mlp.warpline")});
        QVERIFY(!one.isSession());
        QCOMPARE(one.kernelCount(), mlp.kernelCount());
        QCOMPARE(one.sources()[0].alignment, ClockAlignment::Reference);
    }

    void rankFromOtherLaunchers_data() {
        QTest::addColumn<QString>("sql");
        QTest::addColumn<int>("rank");
        QTest::addColumn<int>("localRank");
        QTest::addColumn<int>("worldSize");
        const QString clear = "DELETE FROM WARPLINE_META WHERE key LIKE 'env_%';";
        QTest::newRow("Open MPI") << clear + "INSERT INTO WARPLINE_META VALUES "
                                             "('env_OMPI_COMM_WORLD_RANK', '5'), "
                                             "('env_OMPI_COMM_WORLD_LOCAL_RANK', '1'), "
                                             "('env_OMPI_COMM_WORLD_SIZE', '16')"
                                  << 5 << 1 << 16;
        QTest::newRow("MPICH") << clear + "INSERT INTO WARPLINE_META VALUES ('env_PMI_RANK', "
                                          "'3'), ('env_PMI_SIZE', '4')"
                               << 3 << -1 << 4;
        QTest::newRow("not a number")
            << clear + "INSERT INTO WARPLINE_META VALUES ('env_RANK', '2x'), "
                       "('env_WORLD_SIZE', '-4')"
            << -1 << -1 << -1;
    }
    void rankFromOtherLaunchers() {
        QFETCH(QString, sql);
        QFETCH(int, rank);
        QFETCH(int, localRank);
        QFETCH(int, worldSize);
        const std::string file = editedCopy(dataFile("ranks/allreduce.rank0.warpline"),
                                            path("launcher.warpline"), sql.toUtf8().constData());
        QVERIFY(!file.empty());
        const TraceStore store = TraceLoader::load(file);
        QCOMPARE(store.sources()[0].rank, rank);
        QCOMPARE(store.sources()[0].localRank, localRank);
        QCOMPARE(store.sources()[0].worldSize, worldSize);
    }

    void expandPaths() {
        const QString folder = path("expand");
        QVERIFY(QDir().mkpath(folder + "/sub.warpline"));
        for (const char* name : {"b.warpline", "a.sqlite", "c.pt.trace.json", "d.json.gz",
                                 "notes.txt", "b.warpline-journal", "README.md"}) {
            QFile f(folder + "/" + name);
            QVERIFY(f.open(QIODevice::WriteOnly));
        }
        const std::string dir = folder.toStdString();
        const std::vector<std::string> expected = {dir + "/a.sqlite", dir + "/b.warpline",
                                                   dir + "/c.pt.trace.json", dir + "/d.json.gz"};
        QCOMPARE(TraceSession::expandPaths({dir}), expected);
        // Files stay as they are, whatever their name, in the order given.
        const std::string notes = dir + "/notes.txt";
        QCOMPARE(TraceSession::expandPaths({notes, dir + "/a.sqlite"}),
                 (std::vector<std::string>{notes, dir + "/a.sqlite"}));

        QVERIFY(QDir().mkpath(path("empty")));
        try {
            TraceSession::expandPaths({path("empty").toStdString()});
            QFAIL("an empty folder is an error");
        } catch (const TraceError& e) {
            QCOMPARE(e.kind(), TraceError::Kind::NotATrace);
            QVERIFY(std::string(e.what()).find("holds no trace files") != std::string::npos);
        }
        try {
            TraceSession::expandPaths({dir, path("missing").toStdString()});
            QFAIL("a missing path is an error");
        } catch (const TraceError& e) {
            QCOMPARE(e.kind(), TraceError::Kind::NotFound);
            QVERIFY(std::string(e.what()).find("missing") != std::string::npos);
        }
    }

    void openErrors() {
        QVERIFY_THROWS_EXCEPTION(TraceError, TraceSession::open({}));
        QVERIFY_THROWS_EXCEPTION(TraceError, TraceSession::merge({}));
        QFile bad(path("bad.warpline"));
        QVERIFY(bad.open(QIODevice::WriteOnly));
        bad.write("not a trace at all");
        bad.close();
        try {
            TraceSession::open({dataFile("mlp.warpline"), path("bad.warpline").toStdString(),
                                dataFile("gelu.warpline")});
            QFAIL("a file that is not a trace fails the session");
        } catch (const TraceError& e) {
            QCOMPARE(e.kind(), TraceError::Kind::NotATrace);
            QVERIFY(std::string(e.what()).find("bad.warpline") != std::string::npos);
        }
    }

    void progressAndCancel() {
        RankJobSpec spec;
        spec.ranks = 3;
        spec.steps = 20;
        const std::vector<std::string> paths = job("progress", spec);
        std::vector<double> seen;
        TraceLoader::Options options;
        options.progress = [&seen](double f) {
            seen.push_back(f); // open() calls it one at a time
            return true;
        };
        const TraceStore store = TraceSession::open(paths, options);
        QCOMPARE(store.sources().size(), size_t(3));
        QVERIFY(seen.size() >= 3);
        QVERIFY(std::is_sorted(seen.begin(), seen.end()));
        QCOMPARE(seen.back(), 1.0);

        int calls = 0;
        options.progress = [&calls](double) { return ++calls < 3; };
        QVERIFY_THROWS_EXCEPTION(LoadCancelled, TraceSession::open(paths, options));
    }

    // Two unrelated recordings (no rank) from one host: ordered by path, put on the host's clock.
    void unrelatedRealTraces() {
        const std::string everyStep = dataFile("torch-mlp-sync-every-step.warpline");
        const std::string atEnd = dataFile("torch-mlp-sync-end.warpline");
        const TraceStore a = TraceLoader::load(everyStep);
        const TraceStore b = TraceLoader::load(atEnd);
        const TraceStore store = TraceSession::open({everyStep, atEnd});
        QCOMPARE(store.sources().size(), size_t(2));
        QCOMPARE(store.sources()[0].path, atEnd); // "...-sync-end" < "...-sync-every-step"
        QCOMPARE(store.sources()[1].path, everyStep);
        QCOMPARE(store.sources()[0].rank, -1);
        QCOMPARE(store.sources()[1].alignment, ClockAlignment::SharedClock);
        // Recorded 14.7 s apart on one host: the first one recorded lies before the reference.
        QCOMPARE(store.sources()[1].clockOffset,
                 std::stoll(a.metaValue("session_start_timestamp")) -
                     std::stoll(b.metaValue("session_start_timestamp")));
        QVERIFY(store.sources()[1].clockOffset < -14'000'000'000);
        QCOMPARE(store.beginTime(), a.beginTime() + store.sources()[1].clockOffset);
        QCOMPARE(store.endTime(), b.endTime());
        QCOMPARE(store.kernelCount(), a.kernelCount() + b.kernelCount());
        QCOMPARE(store.memcpyCount(), a.memcpyCount() + b.memcpyCount());
        QCOMPARE(store.apiCallCount(), a.apiCallCount() + b.apiCallCount());
        QCOMPARE(store.nvtxEventCount(), a.nvtxEventCount() + b.nvtxEventCount());
        QCOMPARE(store.syncs().size(), a.syncs().size() + b.syncs().size());
        QCOMPARE(store.processes().size(), size_t(2));
        QVERIFY(store.processes()[0].pid != store.processes()[1].pid);
        QCOMPARE(store.threads().size(), a.threads().size() + b.threads().size());
        // Each file lists its GPU; both used GPU 0 of the same host, each gets its own row.
        QCOMPARE(store.devices().size(), size_t(2));
        QCOMPARE(store.devices()[0].cudaId, store.devices()[1].cudaId);
        checkSession(store);
    }

    // Real two-rank traces (tests/data/ranks): one host's clock lines the all-reduces up; told
    // they came from two hosts, the sync point gives nearly the same offset.
    void realTwoRanks() {
        const std::string rank0 = dataFile("ranks/allreduce.rank0.warpline");
        const std::string rank1 = dataFile("ranks/allreduce.rank1.warpline");
        const TraceStore shared = TraceSession::open({rank1, rank0});
        QCOMPARE(shared.sources()[0].rank, 0);
        QCOMPARE(shared.sources()[1].rank, 1);
        QCOMPARE(shared.sources()[1].alignment, ClockAlignment::SharedClock);
        // Each file lists both GPUs of the host; the session keeps the one each rank used.
        QCOMPARE(shared.devices().size(), size_t(2));
        QCOMPARE(shared.devices()[0].cudaId, 0u);
        QCOMPARE(shared.devices()[1].cudaId, 1u);
        QVERIFY2(worstEndSpread(shared) <= 50'000, std::to_string(worstEndSpread(shared)).c_str());
        checkSession(shared);

        const std::string otherHost =
            editedCopy(rank1, path("rank1-other-host.warpline"),
                       "UPDATE WARPLINE_META SET value = 'vm2' WHERE key = 'hostname'");
        QVERIFY(!otherHost.empty());
        const TraceStore synced = TraceSession::open({rank0, otherHost});
        QCOMPARE(synced.sources()[1].alignment, ClockAlignment::SyncPoint);
        QVERIFY2(std::abs(synced.sources()[1].clockOffset - shared.sources()[1].clockOffset) <
                     20'000,
                 std::to_string(synced.sources()[1].clockOffset).c_str());
    }

    // Each rank's Python stacks (--python-stacks) stay with its own calls: correlation ids repeat
    // across the files (both start at 1), so every call of the session must find the stack its
    // file gave it, and no other. The DDP job of blind batch 9, recorded on two H100s.
    void sessionKeepsEachRanksCallStacks() {
        const std::string rank0 = dataFile("corpus/blind9-ddp-rank0-metrics.rank0.warpline");
        const std::string rank1 = dataFile("corpus/blind9-ddp-rank0-metrics.rank1.warpline");
        const TraceStore files[] = {TraceLoader::load(rank0), TraceLoader::load(rank1)};
        const TraceStore session = TraceSession::open({rank0, rank1});
        QCOMPARE(session.sources().size(), size_t(2));
        QCOMPARE(session.callchains().callsWithChain(),
                 files[0].callchains().callsWithChain() + files[1].callchains().callsWithChain());
        constexpr int64_t kLocal = (int64_t(1) << 48) - 1;
        const auto textOf = [](const TraceStore& store, std::span<const CallFrame> frames) {
            std::string text;
            for (const CallFrame& f : frames)
                text += store.text(f.function) + "@" + store.text(f.file) + ":" +
                        std::to_string(f.line) + ";";
            return text;
        };
        for (uint32_t source = 0; source < 2; ++source) {
            const TraceStore& file = files[source];
            size_t withStack = 0;
            for (const ThreadInfo& t : file.threads()) {
                const auto u = std::find_if(
                    session.threads().begin(), session.threads().end(), [&](const ThreadInfo& v) {
                        return v.source == source && (v.globalTid & kLocal) == t.globalTid;
                    });
                QVERIFY(u != session.threads().end());
                QCOMPARE(u->apiTracks.size(), t.apiTracks.size());
                for (size_t d = 0; d < t.apiTracks.size(); ++d) {
                    const ApiTrack& a = file.apiTracks()[t.apiTracks[d]];
                    QCOMPARE(session.apiTracks()[u->apiTracks[d]].size(), a.size());
                    for (uint32_t i = 0; i < a.size(); ++i) {
                        const auto mine = file.callStack({t.apiTracks[d], i});
                        const auto merged = session.callStack({u->apiTracks[d], i});
                        QCOMPARE(textOf(session, merged), textOf(file, mine));
                        withStack += !mine.empty();
                    }
                }
            }
            QVERIFY2(withStack > 1000, std::to_string(withStack).c_str());
        }
    }

    // Without a shared clock or communication kernels: wall clock, then nothing.
    void wallClockThenUnaligned() {
        const std::string gelu = dataFile("gelu.warpline");
        const std::string mlp = editedCopy(dataFile("mlp.warpline"), path("mlp-vm2.warpline"),
                                           "UPDATE WARPLINE_META SET value = 'vm2' WHERE key = "
                                           "'hostname'");
        QVERIFY(!mlp.empty());
        const TraceStore a = TraceLoader::load(gelu);
        const TraceStore b = TraceLoader::load(mlp);
        const TraceStore wall = TraceSession::open({gelu, mlp});
        QCOMPARE(wall.sources()[1].path, mlp);
        QCOMPARE(wall.sources()[1].alignment, ClockAlignment::WallClock);
        QCOMPARE(wall.sources()[1].clockOffset,
                 b.sources()[0].utcEpochNs - a.sources()[0].utcEpochNs);
        QVERIFY(anyWarningContains(wall, "mlp-vm2.warpline: no clock shared with gelu.warpline"));

        const std::string noClock = editedCopy(mlp, path("mlp-noclock.warpline"),
                                               "DELETE FROM TARGET_INFO_SESSION_START_TIME");
        QVERIFY(!noClock.empty());
        const TraceStore unaligned = TraceSession::open({gelu, noClock});
        QCOMPARE(unaligned.sources()[1].alignment, ClockAlignment::Unaligned);
        QCOMPARE(unaligned.sources()[1].clockOffset, int64_t(0));
        QVERIFY(anyWarningContains(unaligned, "mlp-noclock.warpline: nothing to align"));
        checkSession(unaligned);
    }

    void warningsNameTheirSource() {
        RankJobSpec spec;
        spec.ranks = 2;
        spec.steps = 2;
        const std::vector<std::string> paths = job("warnings", spec);
        const std::string failed =
            editedCopy(paths[1], path("rank1-failed.warpline"),
                       "UPDATE WARPLINE_META SET value = 'failed' WHERE key = 'status'");
        const TraceStore store = TraceSession::open({paths[0], failed});
        QCOMPARE(store.sources()[1].warnings.size(), size_t(1));
        QVERIFY(store.sources()[0].warnings.empty());
        QVERIFY(anyWarningContains(store, "rank 1: The recording failed"));
        // The same rank twice: two jobs mixed up.
        const TraceStore twice = TraceSession::open({paths[1], failed});
        QVERIFY(anyWarningContains(twice, "rank 1 is in 2 files"));
    }

    // Sessions merged again give what opening all files at once gives.
    void mergeSessions() {
        RankJobSpec spec;
        spec.ranks = 4;
        spec.hosts = 2;
        spec.steps = 3;
        spec.seed = 3;
        const std::vector<std::string> paths = job("sessions", spec);
        const TraceStore all = TraceSession::open(paths);
        std::vector<TraceStore> parts;
        parts.push_back(TraceSession::open({paths[3], paths[0]}));
        parts.push_back(TraceSession::open({paths[2], paths[1]}));
        const TraceStore merged = TraceSession::merge(std::move(parts));
        QCOMPARE(merged.sources().size(), size_t(4));
        for (size_t k = 0; k < 4; ++k) {
            QCOMPARE(merged.sources()[k].rank, int(k));
            QCOMPARE(merged.sources()[k].alignment, all.sources()[k].alignment);
            QCOMPARE(merged.sources()[k].clockOffset, all.sources()[k].clockOffset);
            QCOMPARE(merged.devices()[k].source, uint32_t(k));
        }
        QCOMPARE(merged.kernelCount(), all.kernelCount());
        QCOMPARE(merged.eventCount(), all.eventCount());
        QCOMPARE(merged.beginTime(), all.beginTime());
        QCOMPARE(merged.endTime(), all.endTime());
        QCOMPARE(worstEndSpread(merged), worstEndSpread(all));
        checkSession(merged);
    }

    // PyTorch profiler traces name the JSON as their source and say their rank.
    void pytorchTraceSource() {
        const std::string json = dataFile("pytorch/hta-simple-add.pt.trace.json.gz");
        const TraceStore store = TraceOpener::open(json);
        QCOMPARE(store.sources().size(), size_t(1));
        QCOMPARE(store.sources()[0].path, json);
        QCOMPARE(store.sources()[0].rank, 0);
        QVERIFY(store.sources()[0].utcEpochNs > 0);
        const TraceStore session = TraceSession::open({json, dataFile("mlp.warpline")});
        QCOMPARE(session.sources()[0].path, json);
        QCOMPARE(session.sources()[0].label(), std::string("rank 0"));
        QCOMPARE(session.sources()[1].label(), std::string("mlp.warpline"));
    }
};

QTEST_GUILESS_MAIN(TestTraceSession)
#include "tst_tracesession.moc"
