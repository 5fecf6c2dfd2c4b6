// Every item model of the window passes QAbstractItemModelTester (the table model over each
// report, and the sort/filter proxy on top), sorts numbers as numbers, filters, copies rows as
// tab-separated text and exports the same bytes as the model's writers.

#include "gpugaps.h"
#include "reportregistry.h"
#include "steps.h"
#include "syncstalls.h"
#include "tables/reportview.h"
#include "tables/tableexport.h"
#include "tables/tablemodel.h"
#include "testdata.h"
#include "trace/traceanalyzer.h"
#include "traceloader.h"
#include "viewstracefixture.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QClipboard>
#include <QDir>
#include <QHeaderView>
#include <QLineEdit>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>
#include <sstream>

using namespace warpline;
using namespace warpline::views;

class TestReportModels : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    std::shared_ptr<const LoadedTrace> m_trace;

    static std::shared_ptr<const LoadedTrace> load(const QString& path) {
        return TraceAnalyzer::analyze(std::make_shared<const model::TraceStore>(
            model::TraceLoader::load(path.toStdString())));
    }

private slots:
    void initTestCase() {
        const QString path = m_dir.filePath("fixture.warpline");
        viewsfixture::writeTrace(path);
        m_trace = load(path);
        QVERIFY(m_trace);
        QStringList ids;
        for (const ReportTable& r : m_trace->reports)
            ids << r.id;
        for (const char* id : {"insights", "kernels", "api", "nvtx-grouped", "memops", "runahead",
                               "sync-stalls", "gap-list", "utilization"})
            QVERIFY2(ids.contains(id), qPrintable(ids.join(", ")));
    }

    void everyReportModelPassesTheTester_data() {
        QTest::addColumn<QString>("path");
        QTest::addColumn<QString>("id");
        const QStringList traces = QStringList{QString()} + warpline::testdata::committedFiles(
                                                                WARPLINE_TEST_DATA, {"*.warpline"});
        for (const QString& trace : traces) {
            for (const ReportTable& r : m_trace->reports)
                QTest::newRow(qPrintable(
                    (trace.isEmpty() ? QString("fixture") : QFileInfo(trace).fileName()) + "/" +
                    r.id))
                    << trace << r.id;
        }
    }
    void everyReportModelPassesTheTester() {
        QFETCH(QString, path);
        QFETCH(QString, id);
        if (!path.isEmpty())
            WARPLINE_REQUIRE_DATA(path);
        const auto trace = path.isEmpty() ? m_trace : load(path);
        const ReportTable* report = trace->report(id);
        QVERIFY(report);
        TableModel model;
        QAbstractItemModelTester tester(&model,
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setReport(*report);
        QCOMPARE(model.rowCount(), static_cast<int>(report->table.rowCount()));
        QVERIFY(report->targets.empty() || report->targets.size() == report->table.rowCount());
        QSortFilterProxyModel proxy;
        proxy.setSortRole(TableModel::SortRole);
        QAbstractItemModelTester proxyTester(
            &proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
        proxy.setSourceModel(&model);
        for (int c = 0; c < model.columnCount(); ++c) {
            proxy.sort(c, Qt::DescendingOrder);
            proxy.sort(c, Qt::AscendingOrder);
        }
        proxy.setFilterFixedString("a");
        proxy.setFilterFixedString(QString());
        model.setReport({}); // reset to empty and back
        model.setReport(*report);
    }

    void numbersSortAsNumbers() {
        // Kernel "Instances" are integers: 100 and 100 here; use Total Time on the API table,
        // where cudaLaunchKernel (200 calls) and the single long calls differ by magnitude.
        const ReportTable* api = m_trace->report("api");
        TableModel model;
        model.setReport(*api);
        QSortFilterProxyModel proxy;
        proxy.setSortRole(TableModel::SortRole);
        proxy.setSourceModel(&model);
        const int column = api->table.columnIndex("Num Calls");
        QVERIFY(column >= 0);
        proxy.sort(column, Qt::AscendingOrder);
        qlonglong last = -1;
        for (int r = 0; r < proxy.rowCount(); ++r) {
            const qlonglong v = proxy.index(r, column).data(TableModel::SortRole).toLongLong();
            QVERIFY(v >= last);
            last = v;
        }
        QCOMPARE(last, 200);
        // Display text has separators; sort role has the number.
        QCOMPARE(model.index(0, column).data(Qt::DisplayRole).toString().isEmpty(), false);
    }

    void filterAndCopyRows() {
        ReportView view;
        view.setReport(*m_trace->report("kernels"));
        QCOMPARE(view.proxy()->rowCount(), 2);
        view.filterEdit()->setText("RELU");
        QCOMPARE(view.proxy()->rowCount(), 1);
        view.view()->selectAll();
        view.copySelection();
        const QStringList lines = QApplication::clipboard()->text().split('\n', Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 2);
        QVERIFY(lines[0].startsWith("Time (%)\tTotal Time (ns)\tInstances"));
        QVERIFY(lines[0].endsWith("\tName\tTheoretical Occupancy\tOccupancy Limiter"));
        QVERIFY(lines[1].contains("\trelu_kernel(float*, int)\t"));
        QVERIFY(lines[1].contains("\t300000\t100\t")); // 100 x 3000 ns, no separators
        QCOMPARE(view.selectedSourceRows().size(), size_t{1});
    }

    // A kernel name that does not fit keeps its beginning (return type, namespace, function);
    // a number is never cut.
    void namesElideAtTheirEndNumbersNever() {
        ReportView view;
        view.setReport(*m_trace->report("kernels"));
        const auto& table = view.report().table;
        const int name = table.columnIndex("Name");
        const int total = table.columnIndex("Total Time (ns)");
        QVERIFY(name >= 0 && total >= 0);
        QCOMPARE(ReportView::elideModeOf(view.model()->index(0, name)), Qt::ElideRight);
        QCOMPARE(ReportView::elideModeOf(view.model()->index(0, total)), Qt::ElideNone);
        QCOMPARE(view.view()->textElideMode(), Qt::ElideRight); // for the view's other uses
    }

    // PyTorch's 300-character kernel names, cut at a column's width, all read "void
    // at::native::elementwise_kernel<128, 2, at::native::gpu_kerne...": the Kernels tab shows
    // each by its label ("vectorized_elementwise_kernel[Mul, float]"), the name in full on
    // hover; sorting, exports and copies keep the name.
    void kernelNamesShowTheirLabels() {
        const QString path = QStringLiteral(WARPLINE_TEST_DATA "/torch-gpt-train.warpline");
        WARPLINE_REQUIRE_DATA(path);
        const auto trace = load(path);
        QVERIFY(trace && trace->report("kernels"));
        ReportView view;
        view.setReport(*trace->report("kernels"));
        const int name = view.report().table.columnIndex("Name");
        QVERIFY(name >= 0);
        int labelled = 0, plain = 0;
        for (int r = 0; r < view.model()->rowCount(); ++r) {
            const QModelIndex cell = view.model()->index(r, name);
            const QString full = cell.data(TableModel::ExportRole).toString();
            const QString shown = cell.data(Qt::DisplayRole).toString();
            if (full.startsWith("void at::native::vectorized_elementwise_kernel<")) {
                QVERIFY2(shown.startsWith("vectorized_elementwise_kernel[") && !shown.contains('<'),
                         qPrintable(shown));
                QVERIFY(cell.data(Qt::ToolTipRole)
                            .toString()
                            .contains("at::native::vectorized_elementwise_kernel"));
                ++labelled;
            } else if (!full.contains('<') && !full.contains('(')) {
                QCOMPARE(shown, full); // a plain name (nvjet_..., cuDNN's) is its own label
                ++plain;
            }
        }
        QVERIFY(labelled > 1 && plain > 0);
        view.view()->selectRow(0);
        view.copySelection();
        QVERIFY(QApplication::clipboard()->text().contains("void at::native::"));
        // The filter box finds a labelled kernel by its full name (shown: its label only), and
        // by its label.
        for (const char* text :
             {"at::native::vectorized_elementwise_kernel<", "vectorized_elementwise_kernel["}) {
            view.filterEdit()->setText(QString::fromLatin1(text));
            QCOMPARE(view.proxy()->rowCount(), labelled);
        }
        view.filterEdit()->clear();
        QCOMPARE(view.proxy()->rowCount(), view.model()->rowCount());
    }

    // A wide table whose name comes last (the GPU metrics: 13 columns of figures, then Name)
    // shows the name first, where it is seen; the kernels keep nsys's order. Copies keep the
    // report's order.
    void aWideTablesNameComesFirst() {
        const QString path = QStringLiteral(WARPLINE_TEST_DATA "/torch-gpt-metrics.warpline");
        WARPLINE_REQUIRE_DATA(path);
        const auto trace = load(path);
        QVERIFY(trace && trace->report("gpu-metrics"));
        ReportView view;
        view.setReport(*trace->report("gpu-metrics"));
        const int name = view.report().table.columnIndex("Name");
        QCOMPARE(name, int(view.report().table.columnCount()) - 1);
        QCOMPARE(view.view()->horizontalHeader()->visualIndex(name), 0);
        view.view()->selectRow(0);
        view.copySelection();
        QVERIFY(QApplication::clipboard()->text().startsWith("Total Time (ns)\t"));
        // Another report in the same view: its own order again.
        view.setReport(*trace->report("kernels"));
        for (int c = 0; c < view.model()->columnCount(); ++c)
            QCOMPARE(view.view()->horizontalHeader()->visualIndex(c), c);
    }

    // The Insights tab reads as sentences: the finding wraps (rows grow to fit), the raw numbers
    // and event references are hidden and shown on hover, never inline; export keeps them.
    void insightsAreSentencesWithNumbersOnHover() {
        const ReportTable* insights = m_trace->report("insights");
        QVERIFY(insights && insights->table.rowCount() > 0);
        ReportView view;
        view.resize(900, 400);
        view.setReport(*insights);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        const int finding = insights->table.columnIndex("Finding");
        const int numbers = insights->table.columnIndex("Numbers");
        const int refs = insights->table.columnIndex("Refs");
        QVERIFY(finding >= 0 && numbers >= 0 && refs >= 0);
        QVERIFY(!view.view()->isColumnHidden(finding));
        QVERIFY(view.view()->isColumnHidden(numbers));
        QVERIFY(view.view()->isColumnHidden(refs));
        QVERIFY(view.view()->wordWrap());
        // A row is taller than one line when its sentence wraps.
        QVERIFY(view.view()->rowHeight(0) > 2 * view.view()->fontMetrics().height());
        const QString tip = view.model()->index(0, finding).data(Qt::ToolTipRole).toString();
        QVERIFY2(tip.contains("Numbers:"), qPrintable(tip));
        QVERIFY2(tip.contains("Refs:"), qPrintable(tip));
        // Other reports keep their one-line rows and every column.
        view.setReport(*m_trace->report("kernels"));
        QVERIFY(!view.view()->wordWrap());
        for (int c = 0; c < view.model()->columnCount(); ++c)
            QVERIFY(!view.view()->isColumnHidden(c));
    }

    void exportWritesTheModelWritersBytes_data() {
        QTest::addColumn<int>("format");
        QTest::addColumn<QString>("suffix");
        QTest::newRow("csv") << int(model::TableFormat::Csv) << "csv";
        QTest::newRow("json") << int(model::TableFormat::Json) << "json";
        QTest::newRow("markdown") << int(model::TableFormat::Markdown) << "md";
    }
    void exportWritesTheModelWritersBytes() {
        QFETCH(int, format);
        QFETCH(QString, suffix);
        const model::Table& table = m_trace->report("kernels")->table;
        const QString path = m_dir.filePath("kernels." + suffix);
        QString error;
        QVERIFY2(TableExport::write(table, path, static_cast<model::TableFormat>(format), &error),
                 qPrintable(error));
        QCOMPARE(int(TableExport::formatForPath(path, model::TableFormat::Text)), format);
        std::ostringstream expected;
        model::writeTable(expected, table, static_cast<model::TableFormat>(format));
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll(), QByteArray::fromStdString(expected.str()));
    }

    void exportToAnUnwritablePlaceSaysWhy() {
        QString error;
        QVERIFY(!TableExport::write(m_trace->report("kernels")->table,
                                    "/nonexistent-dir/kernels.csv", model::TableFormat::Csv,
                                    &error));
        QVERIFY2(error.contains("/nonexistent-dir/kernels.csv"), qPrintable(error));
    }
};

QTEST_MAIN(TestReportModels)
#include "tst_reportmodels.moc"
