// GPU metrics per kernel (kernelmetrics.h) and the GPU_METRICS path from the collector's writer
// (appendGpuMetrics) through the loader: hand-built traces with known samples, hostile tables,
// and the H100 recordings in tests/data (gelu, matmul, a PyTorch GPT step) when present.

#include "analysestracegen.h"
#include "gpumetricsdata.h"
#include "insights.h"
#include "kernelmetrics.h"
#include "testdata.h"

#include <QtTest>
#include <sqlite3.h>

using namespace warpline::model;
namespace format = warpline::format;

namespace {

constexpr int64_t kStart = 1'000'000'000; // the session's CUPTI timestamp
constexpr int64_t kInterval = 100'000;    // 10 kHz

// The metrics the collector samples on an H100, in its order and names.
const char* const kNames[] = {
    "SMs Active [Throughput %]",          "Compute Warps In Flight [Throughput %]",
    "Tensor Active [Throughput %]",       "FMA Pipe Active [Throughput %]",
    "DRAM Read Bandwidth [Throughput %]", "DRAM Write Bandwidth [Throughput %]",
    "L2 Throughput [Throughput %]",       "PCIe Read Bandwidth [bytes/s]",
    "PCIe Write Bandwidth [bytes/s]"};
enum { Sm, Warps, Tensor, Fma, DramRead, DramWrite, L2, PcieRead, PcieWrite, Count };

struct Values {
    int64_t v[Count] = {};
};

const KernelMetricsRow* rowNamed(const TraceStore& store, const KernelMetricsReport& r,
                                 const std::string& part) {
    for (const auto& row : r.rows)
        if (store.text(row.name).find(part) != std::string::npos)
            return &row;
    return nullptr;
}

QString dataFile(const char* name) {
    return QDir(QStringLiteral(WARPLINE_TEST_DATA)).filePath(QString::fromUtf8(name));
}

} // namespace

class TestKernelMetrics : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString path(const char* name) const { return m_dir.filePath(name); }

    // Kernels with known samples: copy [200, 1000) us at DRAM 40+40%; fma [1100, 1600) us at FMA
    // 70%; tiny [1620, 1650) us; wait [1700, 1950) us at SM 50%, FMA 10%, DRAM 5+5%; other
    // [500, 520) us on a second stream, inside copy. Samples every 100 us from 100 us to 2 ms,
    // each covering the 100 us before its time; one sample before the session start.
    TraceStore handBuilt() {
        TraceGen g(path("handbuilt.warpline"));
        g.writer().setMeta("session_start_timestamp", std::to_string(kStart));
        format::DeviceRecord d;
        d.id = 0;
        d.name = "Test GPU";
        d.memoryBandwidth = 1'000'000'000'000; // 1 TB/s
        g.writer().addDevice(d);
        g.kernel(200'000, 1'000'000, g.nextCorrelation(), 7, "_Z4copyPf");
        g.kernel(1'100'000, 1'600'000, g.nextCorrelation(), 7, "_Z3fmaPf");
        g.kernel(1'620'000, 1'650'000, g.nextCorrelation(), 7, "_Z4tinyPf");
        g.kernel(1'700'000, 1'950'000, g.nextCorrelation(), 7, "_Z4waitPf");
        g.kernel(500'000, 520'000, g.nextCorrelation(), 8, "_Z5otherPf");
        g.load(); // finishes the file; the samples are added to it afterwards, as the recorder does

        format::GpuMetricsData data;
        data.intervalNs = kInterval;
        format::GpuMetricsDevice dev;
        dev.deviceId = 0;
        dev.chip = "GH100";
        for (const char* n : kNames)
            dev.metrics.push_back({n, std::string("cupti.") + n});
        auto add = [&dev](int64_t t, const Values& v) {
            dev.timestamps.push_back(static_cast<uint64_t>(kStart + t));
            for (int m = 0; m < Count; ++m)
                dev.values.push_back(v.v[m]);
        };
        add(-50'000, Values{}); // before the session: left out
        for (int64_t t = kInterval; t <= 2'000'000; t += kInterval) {
            Values v;
            if (t > 200'000 && t <= 1'000'000) {
                v.v[Sm] = 90;
                v.v[Warps] = 50;
                v.v[DramRead] = 40;
                v.v[DramWrite] = 40;
                v.v[L2] = 30;
                v.v[Fma] = 1;
                v.v[PcieWrite] = 2'000'000;
            } else if (t > 1'100'000 && t <= 1'600'000) {
                v.v[Sm] = 100;
                v.v[Warps] = 60;
                v.v[Fma] = 70;
                v.v[DramRead] = 1;
                v.v[DramWrite] = 1;
            } else if (t > 1'700'000 && t <= 1'950'000) {
                v.v[Sm] = 50;
                v.v[Fma] = 10;
                v.v[DramRead] = 5;
                v.v[DramWrite] = 5;
            }
            add(t, v);
        }
        data.devices.push_back(dev);
        data.problems.push_back("GPU 1: GPU metrics not recorded: a test problem");
        const uint64_t written =
            format::appendGpuMetrics(path("handbuilt.warpline").toStdString(), data);
        if (written != 20)
            qFatal("appendGpuMetrics wrote %llu samples, not 20",
                   static_cast<unsigned long long>(written));
        return TraceLoader::load(path("handbuilt.warpline").toStdString());
    }

private slots:
    void samplesLoadInTheNsysLayout() {
        const TraceStore store = handBuilt();
        QCOMPARE(store.gpuMetrics().size(), size_t(1));
        const GpuMetricSamples& s = store.gpuMetrics()[0];
        QCOMPARE(s.deviceId, 0u);
        QCOMPARE(s.times.size(), size_t(20));
        QCOMPARE(s.times.front(), kInterval);
        QCOMPARE(s.interval, kInterval);
        QCOMPARE(s.metrics.size(), size_t(Count));
        QCOMPARE(s.metrics[DramRead].label, std::string("DRAM Read Bandwidth"));
        QCOMPARE(s.metrics[DramRead].unit, MetricUnit::Percent);
        QCOMPARE(s.metrics[PcieWrite].unit, MetricUnit::BytesPerSecond);
        QCOMPARE(s.metrics[DramRead].values[2], 40.0f); // (200, 300] us
        QCOMPARE(s.sampleBegin(2), int64_t(200'000));
        QCOMPARE(s.find("SMs Active"), 0);
        QCOMPARE(store.metaValue("gpu_metrics"),
                 std::string("GPU 0 (GH100): 9 metrics, 20 samples"));
        bool problemShown = false;
        for (const auto& w : store.warnings())
            problemShown = problemShown || w.find("a test problem") != std::string::npos;
        QVERIFY(problemShown);

        // nsys's SQL on the file as written.
        sqlite3* db = nullptr;
        QCOMPARE(sqlite3_open(path("handbuilt.warpline").toUtf8().constData(), &db), SQLITE_OK);
        sqlite3_stmt* st = nullptr;
        QCOMPARE(
            sqlite3_prepare_v2(db,
                               "SELECT g.value FROM GPU_METRICS g JOIN TARGET_INFO_GPU_METRICS "
                               "t USING (typeId, metricId) WHERE t.metricName LIKE 'DRAM Read%' "
                               "AND g.timestamp = 300000",
                               -1, &st, nullptr),
            SQLITE_OK);
        QCOMPARE(sqlite3_step(st), SQLITE_ROW);
        QCOMPARE(sqlite3_column_int64(st, 0), int64_t(40));
        sqlite3_finalize(st);
        // Recent nsys's column order, with the CUPTI time beside the trace's.
        QCOMPARE(sqlite3_prepare_v2(db, "SELECT * FROM GPU_METRICS LIMIT 1", -1, &st, nullptr),
                 SQLITE_OK);
        QCOMPARE(sqlite3_step(st), SQLITE_ROW);
        const QStringList columns = {"rawTimestamp", "timestamp", "typeId", "metricId", "value"};
        QCOMPARE(sqlite3_column_count(st), int(columns.size()));
        for (int c = 0; c < columns.size(); ++c)
            QCOMPARE(QString::fromUtf8(sqlite3_column_name(st, c)), columns[c]);
        QCOMPARE(sqlite3_column_int64(st, 0) - sqlite3_column_int64(st, 1), kStart);
        sqlite3_finalize(st);
        sqlite3_close(db);
    }

    void kernelsGetTheSamplesTheyFill() {
        const TraceStore store = handBuilt();
        const KernelMetricsReport r = kernelMetrics(store);
        QVERIFY(r.sampled);
        const KernelMetricsRow* copy = rowNamed(store, r, "copy");
        QVERIFY(copy);
        // 8 samples lie inside copy; the one that also holds 20 us of "other" (20% of it) is left
        // out.
        QCOMPARE(copy->samples, uint64_t(7));
        QCOMPARE(copy->dram(), 80.0);
        QCOMPARE(copy->bound, KernelBound::Memory);
        QCOMPARE(copy->achievedBandwidth, 800e9);
        QCOMPARE(copy->bytesMoved, 800e9 * 800e-6);
        const KernelMetricsRow* fma = rowNamed(store, r, "fma");
        QCOMPARE(fma->samples, uint64_t(5));
        QCOMPARE(fma->compute(), 70.0);
        QCOMPARE(fma->bound, KernelBound::Compute);
        const KernelMetricsRow* wait = rowNamed(store, r, "wait");
        // (1700, 1800] and (1800, 1900] are covered; (1900, 2000] only half.
        QCOMPARE(wait->samples, uint64_t(2));
        QCOMPARE(wait->bound, KernelBound::Latency);
        QCOMPARE(rowNamed(store, r, "tiny")->bound, KernelBound::TooShort);
        QCOMPARE(rowNamed(store, r, "other")->bound, KernelBound::TooShort);
        QCOMPARE(kernelBoundName(KernelBound::TooShort), std::string("too short to sample"));

        // One instance: the samples wholly inside it, whatever else runs beside it.
        EventRef copyOp;
        for (uint32_t track = 0; track < store.gpuTracks().size(); ++track)
            for (uint32_t i = 0; i < store.gpuTracks()[track].size(); ++i)
                if (store.text(store.gpuTracks()[track].name(i)).find("copy") != std::string::npos)
                    copyOp = EventRef{track, i};
        const KernelMetricsRow one = instanceMetrics(store, copyOp);
        QCOMPARE(one.samples, uint64_t(8));
        QCOMPARE(one.warpsActive, 50.0);
        QCOMPARE(one.bound, KernelBound::Memory);

        const Table t = kernelMetricsTable(store, r);
        QCOMPARE(t.rowCount(), size_t(5));
        QCOMPARE(cellInt(t, 0, "Samples"), int64_t(7));
        QCOMPARE(std::get<std::string>(t.cell(0, t.columnIndex("Bound"))),
                 std::string("memory-bound"));
        QVERIFY(std::holds_alternative<std::monostate>(
            t.cell(t.rowCount() - 1, t.columnIndex("DRAM (%)")))); // too short: no number
    }

    void withoutMetricsNothingIsMadeUp() {
        TraceGen g(path("plain.warpline"));
        g.kernel(0, 1'000'000, g.nextCorrelation(), 7, "_Z4copyPf");
        const TraceStore store = g.load();
        QVERIFY(store.gpuMetrics().empty());
        const KernelMetricsReport r = kernelMetrics(store);
        QVERIFY(!r.sampled);
        QCOMPARE(r.rows.size(), size_t(1));
        QCOMPARE(r.rows[0].bound, KernelBound::NotSampled);
        QVERIFY(std::isnan(r.rows[0].dram()));
    }

    void hostileTablesAreBounded() {
        // Rows with no time, an unknown metric or REAL values; names with no rows; a typeId for a
        // device that has no kernels.
        TraceGen g(path("hostile.warpline"));
        g.kernel(0, 1'000'000, g.nextCorrelation(), 7, "_Z4copyPf");
        g.load();
        sqlite3* db = nullptr;
        QCOMPARE(sqlite3_open(path("hostile.warpline").toUtf8().constData(), &db), SQLITE_OK);
        const char* sql =
            "CREATE TABLE TARGET_INFO_GPU_METRICS (typeId INTEGER, sourceId INTEGER, typeName "
            "TEXT, metricId INTEGER, metricName TEXT);"
            "CREATE TABLE GPU_METRICS (timestamp INTEGER, typeId INTEGER, metricId INTEGER, value);"
            "INSERT INTO TARGET_INFO_GPU_METRICS VALUES (256, 0, 'x', 0, 'SMs Active "
            "[Throughput %]'), (256, 0, 'x', 1, 'DRAM Read Bandwidth'), (5, 5, 'y', 0, NULL);"
            "INSERT INTO GPU_METRICS VALUES (NULL, 256, 0, 1), (100000, 256, 9, 1), "
            "(100000, 256, 0, 55.5), (200000, 256, 0, 'text'), (200000, 256, 1, 7), "
            "(9223372036854775807, 256, 0, 1);";
        QCOMPARE(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK);
        sqlite3_close(db);
        const TraceStore store = TraceLoader::load(path("hostile.warpline").toStdString());
        const GpuMetricSamples* s = store.gpuMetricsOf(0); // typeId 256: low 8 bits 0
        QVERIFY(s);
        QCOMPARE(s->times.size(), size_t(2));
        QCOMPARE(s->metrics[0].values[0], 55.5f);
        QVERIFY(std::isnan(s->metrics[1].values[0])); // no row for it at 100 us
        QCOMPARE(s->metrics[1].values[1], 7.0f);
        QCOMPARE(s->metrics[1].unit, MetricUnit::Other);
        bool warned = false;
        for (const auto& w : store.warnings())
            warned = warned || w.find("Skipped 3 GPU_METRICS rows") != std::string::npos;
        QVERIFY2(warned, "three bad rows are counted in a warning");
        kernelMetrics(store); // does not throw or divide by zero
    }

    // Recorded on the H100 (tests/data/README.md): GeLU as eight unfused kernels against one fused
    // kernel over 2^27 floats (512 MiB), 4 runs each.
    void recordedGeluIsMemoryBoundAndFusionRemovesTheTraffic() {
        const QString file = dataFile("gelu-metrics.warpline");
        WARPLINE_REQUIRE_DATA(file);
        const TraceStore store = TraceLoader::load(file.toStdString());
        const KernelMetricsReport r = kernelMetrics(store);
        QVERIFY(r.sampled);
        double unfused = 0, fused = 0;
        for (const auto& row : r.rows) {
            const std::string name = store.text(row.name);
            QVERIFY2(row.samples >= 10, name.c_str());
            QVERIFY2(row.bound == KernelBound::Memory, name.c_str());
            QVERIFY2(row.dram() > 60 && row.compute() < 20, name.c_str());
            (name.find("geluFused") != std::string::npos ? fused : unfused) += row.bytesMoved;
            // 256 threads a block, few registers: every warp slot can be filled; the samples
            // show about three quarters filled.
            QCOMPARE(row.occupancyMin, 100.0);
            QVERIFY2(row.warpsActive > 70 && row.warpsActive < 80, name.c_str());
        }
        // The fused kernel reads and writes the array once per run: 4 x 2 x 512 MiB.
        const double once = 4.0 * 2 * 536'870'912;
        QVERIFY2(std::abs(fused / once - 1) < 0.05, qPrintable(QString::number(fused / once)));
        // The unfused chain moves it 9 times over (three in-place scales, two kernels that read
        // two arrays): the fused kernel moves about 1/9 of the bytes.
        QVERIFY2(unfused / fused > 8.5 && unfused / fused < 9.5,
                 qPrintable(QString::number(unfused / fused)));
        // The insight says so, naming the kernel with the most time.
        bool found = false;
        for (const Insight& in : findInsights(store))
            if (in.kind == InsightKind::MemoryBound) {
                found = true;
                QVERIFY2(in.text.rfind("geluScale runs at 68% of DRAM peak", 0) == 0,
                         in.text.c_str());
                QCOMPARE(in.number("memory_bound_share"), 1.0);
                QCOMPARE(in.gpuOps.size(), size_t(12));
            }
        QVERIFY(found);
    }

    void recordedMatmulAndPyTorchStep() {
        const QString matmul = dataFile("matmul-metrics.warpline");
        WARPLINE_REQUIRE_DATA(matmul);
        {
            const TraceStore store = TraceLoader::load(matmul.toStdString());
            const KernelMetricsReport r = kernelMetrics(store);
            // 2048^3: the operands live in L2, DRAM idles, the FMA pipe is far from its roof.
            for (const auto& row : r.rows) {
                QVERIFY(row.samples >= 50);
                QCOMPARE(row.bound, KernelBound::Latency);
                QVERIFY(row.dram() < 5);
                QVERIFY(row.smActive > 90);
            }
        }
        const QString torch = dataFile("torch-gpt-metrics.warpline");
        WARPLINE_REQUIRE_DATA(torch);
        const TraceStore store = TraceLoader::load(torch.toStdString());
        const KernelMetricsReport r = kernelMetrics(store);
        const KernelMetricsRow* adam = rowNamed(store, r, "multi_tensor_apply_kernel");
        QVERIFY(adam);
        QCOMPARE(adam->bound, KernelBound::Memory);
        size_t tooShort = 0;
        for (const auto& row : r.rows)
            tooShort += row.bound == KernelBound::TooShort;
        QVERIFY(tooShort > r.rows.size() / 2);        // most PyTorch kernels last less than 100 us
        for (const Insight& in : findInsights(store)) // Adam alone is under 20% of kernel time
            QVERIFY(in.kind != InsightKind::MemoryBound);
    }
};

QTEST_GUILESS_MAIN(TestKernelMetrics)
#include "tst_kernelmetrics.moc"
