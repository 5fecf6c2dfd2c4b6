// Summaries (kernels, API, NVTX, kernels per NVTX range, memory operations): each checked against
// an independent SQL query over the same file, or against a hand-built trace with known answers.

#include "analysishelpers.h"
#include "sqlitereader.h"
#include "summaries.h"
#include "traceloader.h"
#include "tst_model_tracebuilder.h"

#include <QDir>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

using namespace warpline::model;

Q_DECLARE_METATYPE(std::vector<int64_t>)

namespace {

std::string str(const QString& s) {
    return s.toStdString();
}

// Kernel summary == GROUP BY demangled name over the file, row by row, in nsys order.
void compareKernelSummaryWithSql(const QString& path) {
    const TraceStore store = TraceLoader::load(str(path));
    const auto rows = kernelSummary(store);
    SqliteReader db(path);
    const auto expected =
        db.rows("SELECT s.value, SUM(k.end - k.start), COUNT(*), MIN(k.end - k.start), "
                "MAX(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = "
                "k.demangledName WHERE k.end >= k.start GROUP BY s.value ORDER BY 2 DESC, 1");
    QCOMPARE(rows.size(), size_t(expected.size()));
    double percent = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
        const auto& e = expected[int(i)];
        QCOMPARE(QString::fromStdString(store.text(rows[i].name)), e[0].toString());
        QCOMPARE(rows[i].stats.total, e[1].toLongLong());
        QCOMPARE(qlonglong(rows[i].stats.count), e[2].toLongLong());
        QCOMPARE(rows[i].stats.minimum, e[3].toLongLong());
        QCOMPARE(rows[i].stats.maximum, e[4].toLongLong());
        percent += rows[i].timePercent;
    }
    if (!rows.empty())
        QVERIFY(std::abs(percent - 100.0) < 1e-6);
}

} // namespace

class TestModelSummaries : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString path(const QString& name) const { return m_dir.filePath(name); }

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void durationStats_data() {
        QTest::addColumn<std::vector<int64_t>>("values");
        QTest::addColumn<qint64>("total");
        QTest::addColumn<double>("average");
        QTest::addColumn<double>("median");
        QTest::addColumn<qint64>("minimum");
        QTest::addColumn<qint64>("maximum");
        QTest::addColumn<double>("stddev");
        QTest::newRow("empty") << std::vector<int64_t>{} << qint64(0) << 0.0 << 0.0 << qint64(0)
                               << qint64(0) << 0.0;
        QTest::newRow("one") << std::vector<int64_t>{5} << qint64(5) << 5.0 << 5.0 << qint64(5)
                             << qint64(5) << 0.0;
        QTest::newRow("odd, unsorted") << std::vector<int64_t>{10, 1, 7} << qint64(18) << 6.0 << 7.0
                                       << qint64(1) << qint64(10) << std::sqrt(21.0);
        QTest::newRow("even: mean of the middle two")
            << std::vector<int64_t>{4, 1, 3, 2} << qint64(10) << 2.5 << 2.5 << qint64(1)
            << qint64(4) << std::sqrt(5.0 / 3.0);
        QTest::newRow("constant") << std::vector<int64_t>{3, 3, 3, 3} << qint64(12) << 3.0 << 3.0
                                  << qint64(3) << qint64(3) << 0.0;
        QTest::newRow("large ns values")
            << std::vector<int64_t>{4'000'000'000'001, 4'000'000'000'003}
            << qint64(8'000'000'000'004) << 4'000'000'000'002.0 << 4'000'000'000'002.0
            << qint64(4'000'000'000'001) << qint64(4'000'000'000'003) << std::sqrt(2.0);
    }
    void durationStats() {
        QFETCH(std::vector<int64_t>, values);
        QFETCH(qint64, total);
        QFETCH(double, average);
        QFETCH(double, median);
        QFETCH(qint64, minimum);
        QFETCH(qint64, maximum);
        QFETCH(double, stddev);
        const DurationStats s = DurationStats::compute(values);
        QCOMPARE(s.count, uint64_t(values.size()));
        QCOMPARE(s.total, total);
        QCOMPARE(s.average, average);
        QCOMPARE(s.median, median);
        QCOMPARE(s.minimum, minimum);
        QCOMPARE(s.maximum, maximum);
        QVERIFY2(std::abs(s.stddev - stddev) < 1e-9 * std::max(1.0, stddev),
                 qPrintable(QString::number(s.stddev)));
    }

    void kernelSummaryMatchesSql() {
        const QString p = path("random.warpline");
        QRandomGenerator rng(42);
        {
            TraceBuilder b(p);
            b.process("app");
            const std::vector<std::string> names = {"void gemm<float>(float const*, float*, int)",
                                                    "relu",
                                                    "name, with comma",
                                                    "quote \"q\"",
                                                    "new\nline",
                                                    "<b>html</b>",
                                                    "softmax",
                                                    "layer_norm"};
            int64_t t = 0;
            for (int i = 0; i < 5000; ++i) {
                t += rng.bounded(1, 50);
                const int64_t d = rng.bounded(0, 2000);
                const bool backwards = rng.bounded(100) == 0; // skipped by loader and SQL alike
                b.kernel({.start = backwards ? t + d + 1 : t,
                          .end = t + d,
                          .stream = rng.bounded(1, 5),
                          .correlation = i + 1,
                          .name = names[rng.bounded(int(names.size()))]});
            }
        }
        compareKernelSummaryWithSql(p);

        // Median of one name equals the sorted middle of its SQL durations.
        const TraceStore store = TraceLoader::load(str(p));
        const auto rows = kernelSummary(store);
        SqliteReader db(p);
        const auto durations = db.rows(
            "SELECT k.end - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = "
            "k.demangledName WHERE s.value = 'relu' AND k.end >= k.start ORDER BY 1");
        const auto relu = std::find_if(rows.begin(), rows.end(), [&](const KernelSummaryRow& r) {
            return store.text(r.name) == "relu";
        });
        QVERIFY(relu != rows.end());
        const int n = durations.size();
        const double median =
            n % 2 ? durations[n / 2][0].toDouble()
                  : (durations[n / 2 - 1][0].toDouble() + durations[n / 2][0].toDouble()) / 2;
        QCOMPARE(relu->stats.median, median);
    }

    void kernelSummaryTableColumns() {
        const QString p = path("cols.warpline");
        {
            TraceBuilder b(p);
            b.kernel({.start = 0, .end = 100, .name = "a", .grid = {2, 1, 1}});
            b.kernel({.start = 100, .end = 130, .name = "a", .grid = {4, 1, 1}});
            b.kernel({.start = 200, .end = 500, .name = "b"});
        }
        const TraceStore store = TraceLoader::load(str(p));
        const Table byName = kernelSummaryTable(store, kernelSummary(store));
        QStringList columns;
        for (const Column& c : byName.columns())
            columns << QString::fromStdString(c.name);
        QCOMPARE(columns, QStringList({"Time (%)", "Total Time (ns)", "Instances", "Avg (ns)",
                                       "Med (ns)", "Min (ns)", "Max (ns)", "StdDev (ns)", "Name",
                                       "Theoretical Occupancy", "Occupancy Limiter"}));
        QCOMPARE(byName.rowCount(), size_t(2));
        QCOMPARE(std::get<std::string>(byName.cell(0, 8)), std::string("b"));
        QCOMPARE(std::get<int64_t>(byName.cell(1, 1)), int64_t(130));
        QCOMPARE(std::get<int64_t>(byName.cell(1, 2)), int64_t(2));

        const auto grouped = kernelSummary(store, KernelGrouping::NameAndLaunchConfig);
        const Table byConfig =
            kernelSummaryTable(store, grouped, KernelGrouping::NameAndLaunchConfig);
        QCOMPARE(byConfig.rowCount(), size_t(3));
        QCOMPARE(byConfig.columnIndex("GridXYZ"), 8);
        QCOMPARE(byConfig.columnIndex("BlockXYZ"), 9);
        QCOMPARE(std::get<std::string>(byConfig.cell(1, 8)), std::string("2 1 1"));
        QCOMPARE(std::get<std::string>(byConfig.cell(1, 9)), std::string("128 1 1"));
        QCOMPARE(std::get<std::string>(byConfig.cell(2, 8)), std::string("4 1 1"));

        // A time window keeps the kernels that start inside it.
        const auto windowed = kernelSummary(store, KernelGrouping::Name, {.t0 = 50, .t1 = 250});
        QCOMPARE(windowed.size(), size_t(2));
        QCOMPARE(windowed[0].stats.count, uint64_t(1));
        QCOMPARE(store.text(windowed[0].name), std::string("b"));
        QCOMPARE(windowed[1].stats.total, int64_t(30));
    }

    void apiSummaryMatchesSql() {
        const QString p = path("api.warpline");
        QRandomGenerator rng(7);
        {
            TraceBuilder b(p);
            const std::vector<std::string> names = {
                "cudaLaunchKernel_v7000", "cudaMemcpyAsync_v3020", "cudaStreamSynchronize_v3020",
                "cuLaunchKernel"};
            int64_t t = 0;
            for (int i = 0; i < 3000; ++i) {
                t += rng.bounded(10, 100);
                const int tid = rng.bounded(1, 4);
                const std::string& name = names[rng.bounded(int(names.size()))];
                if (name.rfind("cu", 0) == 0 && name[2] != 'd')
                    b.driver(t, t + rng.bounded(1, 9), tid, i + 1, name);
                else
                    b.runtime(t, t + rng.bounded(1, 9), tid, i + 1, name);
            }
        }
        const TraceStore store = TraceLoader::load(str(p));
        const auto rows = apiSummary(store);
        SqliteReader db(p);
        const auto expected = db.rows(
            "SELECT s.value, COUNT(*), SUM(a.end - a.start) FROM CUPTI_ACTIVITY_KIND_RUNTIME a "
            "JOIN StringIds s ON s.id = a.nameId GROUP BY s.value");
        QCOMPARE(rows.size(), size_t(expected.size()));
        for (const auto& e : expected) {
            const QString name = e[0].toString().remove(QRegularExpression("_v[0-9]+$"));
            const auto row = std::find_if(rows.begin(), rows.end(), [&](const ApiSummaryRow& r) {
                return QString::fromStdString(store.text(r.name)) == name;
            });
            QVERIFY2(row != rows.end(), qPrintable(name));
            QCOMPARE(qlonglong(row->stats.count), e[1].toLongLong());
            QCOMPARE(row->stats.total, e[2].toLongLong());
        }
        for (size_t i = 1; i < rows.size(); ++i)
            QVERIFY(rows[i - 1].stats.total >= rows[i].stats.total);
        const Table table = apiSummaryTable(store, rows);
        QCOMPARE(QString::fromStdString(table.columns()[2].name), QString("Num Calls"));
    }

    void nvtxSummaryMatchesSql() {
        const QString p = path("nvtx.warpline");
        QRandomGenerator rng(3);
        {
            TraceBuilder b(p);
            b.nvtxDomain(2, "torch");
            int64_t t = 0;
            for (int i = 0; i < 300; ++i) {
                t += 1000;
                // 3-deep push/pop nesting, via inline text and via StringIds.
                b.nvtx(59, t, t + 900, 1, "epoch");
                b.nvtx(59, t + 10, t + 500 + rng.bounded(100), 1, "step", true);
                b.nvtx(59, t + 20, t + 30 + rng.bounded(100), 1, "forward");
                b.nvtx(60, t + 5, t + 1500, 2, "io", false, 2);
            }
            b.nvtx(34, 5, 0, 1, "a mark is not a range");
        }
        const TraceStore store = TraceLoader::load(str(p));
        const auto rows = nvtxSummary(store);
        SqliteReader db(p);
        const auto expected = db.rows(
            "SELECT COALESCE(e.text, s.value), e.eventType, COUNT(*), SUM(e.end - e.start) FROM "
            "NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId WHERE e.eventType IN (59, 60) "
            "GROUP BY 1, 2 ORDER BY 4 DESC");
        QCOMPARE(rows.size(), size_t(expected.size()));
        const Table table = nvtxSummaryTable(store, rows);
        for (int i = 0; i < expected.size(); ++i) {
            const auto& e = expected[i];
            QCOMPARE(QString::fromStdString(store.text(rows[i].name)), e[0].toString());
            QCOMPARE(rows[i].style, e[1].toInt() == 59 ? NvtxStyle::PushPop : NvtxStyle::StartEnd);
            QCOMPARE(qlonglong(rows[i].stats.count), e[2].toLongLong());
            QCOMPARE(rows[i].stats.total, e[3].toLongLong());
        }
        const int range = table.columnIndex("Range");
        const int style = table.columnIndex("Style");
        QVERIFY(range >= 0 && style >= 0);
        bool sawDomain = false;
        for (size_t r = 0; r < table.rowCount(); ++r) {
            if (std::get<std::string>(table.cell(r, range)) == "torch:io") {
                sawDomain = true;
                QCOMPARE(std::get<std::string>(table.cell(r, style)), std::string("StartEnd"));
            }
        }
        QVERIFY(sawDomain);
    }

    void nvtxKernelSummary() {
        const QString p = path("nvtxkern.warpline");
        {
            TraceBuilder b(p);
            b.nvtx(59, 0, 1000, 1, "outer");
            b.nvtx(59, 100, 400, 1, "inner");
            b.nvtx(59, 2000, 3000, 1, "step");
            b.nvtx(59, 2100, 2900, 1, "step"); // same name nested: counts the kernel once
            b.nvtx(59, 5000, 6000, 1, "idle"); // launches nothing: no row
            int corr = 1;
            const auto launch = [&](int64_t at, int tid, const std::string& kernel, int64_t dur) {
                b.runtime(at, at + 10, tid, corr, "cudaLaunchKernel_v7000");
                b.kernel({.start = at + 5000,
                          .end = at + 5000 + dur,
                          .correlation = corr,
                          .name = kernel});
                ++corr;
            };
            launch(150, 1, "k1", 10);  // outer + inner
            launch(450, 1, "k2", 20);  // outer
            launch(990, 1, "k1", 30);  // outer: the call starts inside, ends after
            launch(1200, 1, "k1", 40); // no range
            launch(200, 2, "k1", 50);  // other thread: not in thread 1's ranges
            launch(2500, 1, "k3", 60); // step (twice nested)
        }
        const TraceStore store = TraceLoader::load(str(p));
        const auto rows = warpline::model::nvtxKernelSummary(store);
        QStringList got;
        for (const NvtxKernelRow& r : rows)
            got << QString("%1 %2 ranges=%3 kernels=%4 total=%5")
                       .arg(QString::fromStdString(store.text(r.range)),
                            QString::fromStdString(store.text(r.kernel)))
                       .arg(r.rangeInstances)
                       .arg(r.stats.count)
                       .arg(r.stats.total);
        QCOMPARE(got, QStringList({"inner k1 ranges=1 kernels=1 total=10",
                                   "outer k1 ranges=1 kernels=2 total=40",
                                   "outer k2 ranges=1 kernels=1 total=20",
                                   "step k3 ranges=2 kernels=1 total=60"}));
        const Table table = nvtxKernelSummaryTable(store, rows);
        QCOMPARE(table.columnIndex("Kernel Name"), 10);
        QCOMPARE(table.rowCount(), size_t(4));
    }

    void memOpSummaries() {
        const QString p = path("mem.warpline");
        {
            TraceBuilder b(p);
            b.memcpy(0, 100, 7, 0, 1'000'000, 1);
            b.memcpy(200, 500, 7, 0, 2'000'000, 1);
            b.memcpy(600, 660, 7, 0, 3'000'000, 1);
            b.memcpy(700, 1700, 8, 0, 500'000, 2);
            b.memset(2000, 2010, 7, 0, 64);
            b.memset(2100, 2130, 7, 0, 64);
            b.kernel({.start = 3000, .end = 9000}); // not a memory operation
        }
        const TraceStore store = TraceLoader::load(str(p));
        const auto rows = memOpSummary(store);
        QCOMPARE(rows.size(), size_t(3));
        QCOMPARE(store.text(rows[0].operation), std::string("[CUDA memcpy Device-to-Host]"));
        QCOMPARE(rows[0].time.total, int64_t(1000));
        QCOMPARE(store.text(rows[1].operation), std::string("[CUDA memcpy Host-to-Device]"));
        QCOMPARE(rows[1].time.total, int64_t(460));
        QCOMPARE(rows[1].time.count, uint64_t(3));
        QCOMPARE(rows[1].time.median, 100.0);
        QCOMPARE(rows[1].size.total, int64_t(6'000'000));
        QCOMPARE(rows[1].size.median, 2'000'000.0);
        QCOMPARE(store.text(rows[2].operation), std::string("[CUDA memset]"));
        QCOMPARE(rows[2].size.total, int64_t(128));

        const Table time = memTimeSummaryTable(store, rows);
        QCOMPARE(time.columnIndex("Operation"), 8);
        QCOMPARE(time.columnIndex("Count"), 2);
        const Table size = memSizeSummaryTable(store, rows);
        // Sorted by total bytes: HtoD (6 MB) first; MB = 10^6 bytes.
        QCOMPARE(std::get<std::string>(size.cell(0, 7)),
                 std::string("[CUDA memcpy Host-to-Device]"));
        QCOMPARE(std::get<double>(size.cell(0, 0)), 6.0);
        QCOMPARE(std::get<double>(size.cell(0, 3)), 2.0);
        QCOMPARE(std::get<int64_t>(size.cell(0, 1)), int64_t(3));
    }

    // PyTorch launches every element-wise op and reduction through a few kernel templates: by
    // their short name alone (nsys's), "elementwise_kernel (7.8%), elementwise_kernel (7.1%)"
    // cannot be told apart. The label adds the op and element type from the arguments (names as
    // recorded on the H100 with PyTorch 2.9).
    void pytorchKernelLabels_data() {
        QTest::addColumn<QString>("shortName");
        QTest::addColumn<QString>("demangled");
        QTest::addColumn<QString>("label");
        QTest::newRow("binary functor, bf16")
            << "elementwise_kernel"
            << "void at::native::elementwise_kernel<128, 4, "
               "at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<c10::BFloat16, "
               "c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> > "
               ">(at::TensorIteratorBase&, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, "
               "c10::BFloat16, at::native::binary_internal::MulFunctor<float> > "
               "const&)::{lambda(int)"
               "#1}>(int, "
               "at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<c10::BFloat16, "
               "c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> > "
               ">(at::TensorIteratorBase&, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, "
               "c10::BFloat16, at::native::binary_internal::MulFunctor<float> > "
               "const&)::{lambda(int)"
               "#1})"
            << "elementwise_kernel[Mul, BFloat16]";
        QTest::newRow("CUDA functor") << "vectorized_elementwise_kernel"
                                      << "void at::native::vectorized_elementwise_kernel<4, "
                                         "at::native::CUDAFunctor_add<float>, "
                                         "std::array<char*, 3ul> >(int, "
                                         "at::native::CUDAFunctor_add<float>, std::array<char*, "
                                         "3ul>)"
                                      << "vectorized_elementwise_kernel[add, float]";
        QTest::newRow("reduction ops")
            << "reduce_kernel"
            << "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
               "at::native::MeanOps<float, float, float, float>, unsigned int, float, 4, 4> "
               ">(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, "
               "unsigned int, float, 4, 4>)"
            << "reduce_kernel[Mean, float]";
        QTest::newRow("lambda of a named kernel, its type from the lambda")
            << "vectorized_elementwise_kernel"
            << "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous "
               "namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() "
               "const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, "
               "std::array<char*, 2ul> >(int, at::native::(anonymous "
               "namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() "
               "const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, "
               "std::array<char*, 2ul>)"
            << "vectorized_elementwise_kernel[silu, BFloat16]";
        QTest::newRow("the offset calculator's unsigned int is not the type")
            << "unrolled_elementwise_kernel"
            << "void "
               "at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::"
               "TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() "
               "const::{lambda(float)#1}, std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, "
               "unsigned int>, TrivialOffsetCalculator<1, unsigned int>, "
               "at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, "
               "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::"
               "operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, "
               "std::array<char*, 2ul>, TrivialOffsetCalculator<1, unsigned int>, "
               "TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, "
               "at::native::memory::StoreWithCast<1>)"
            << "unrolled_elementwise_kernel[direct_copy, float]";
        QTest::newRow("no op in the arguments")
            << "reduce_kernel"
            << "void at::native::reduce_kernel<512, 1>(at::native::ReduceOp)"
            << "reduce_kernel";
        QTest::newRow("not PyTorch's") << "elementwise_kernel"
                                       << "void elementwise_kernel<MulFunctor<float> >(float*)"
                                       << "elementwise_kernel";
        QTest::newRow("another kernel") << "gemv2T_kernel_val"
                                        << "void gemv2T_kernel_val<int, int, float, float>(...)"
                                        << "gemv2T_kernel_val";
    }
    void pytorchKernelLabels() {
        QFETCH(QString, shortName);
        QFETCH(QString, demangled);
        QFETCH(QString, label);
        QCOMPARE(QString::fromStdString(
                     pytorchKernelLabel(shortName.toStdString(), demangled.toStdString())),
                 label);
    }

    void recordedTraces() {
        const QStringList files = ::recordedTraces();
        if (files.isEmpty())
            QFAIL("no recorded traces in " WARPLINE_TEST_DATA " (committed test data is missing)");
        for (const QString& f : files)
            compareKernelSummaryWithSql(f);
    }
};

QTEST_GUILESS_MAIN(TestModelSummaries)
#include "tst_model_summaries.moc"
