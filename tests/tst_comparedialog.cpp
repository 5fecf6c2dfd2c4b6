// The app's interoperability: File > Compare With… (CompareDialog: the diff table and both
// timelines, aligned), File > Export > Chrome Trace, and opening a PyTorch profiler trace in the
// window.

#include "chrometraceexport.h"
#include "comparedialog.h"
#include "mainwindow.h"
#include "tables/tablemodel.h"
#include "testdata.h"
#include "timeline/timelinewidget.h"
#include "traceloader.h"

#include <QApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMenu>
#include <QMenuBar>
#include <QTemporaryDir>
#include <QtTest>

using namespace warpline;

namespace {

QString data(const QString& name) {
    return QString::fromUtf8(WARPLINE_TEST_DATA) + "/" + name;
}

std::shared_ptr<const views::LoadedTrace> loaded(const QString& path) {
    auto trace = std::make_shared<views::LoadedTrace>();
    trace->path = path;
    trace->store =
        std::make_shared<const model::TraceStore>(model::TraceLoader::load(path.toStdString()));
    return trace;
}

QAction* findAction(QMenu* menu, const QString& text) {
    for (QAction* a : menu->actions()) {
        if (a->text() == text)
            return a;
        if (a->menu()) {
            if (QAction* inner = findAction(a->menu(), text))
                return inner;
        }
    }
    return nullptr;
}

} // namespace

class TestCompareDialog : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        for (const char* f : {"gelu.warpline", "torch-mlp-sync-every-step.warpline",
                              "torch-mlp-sync-end.warpline"}) {
            WARPLINE_REQUIRE_DATA(data(f));
        }
    }

    void selfComparisonIsUnchanged() {
        const auto gelu = loaded(data("gelu.warpline"));
        app::CompareDialog dialog(gelu, loaded(data("gelu.warpline")));
        QVERIFY(!dialog.rows().empty());
        QCOMPARE(dialog.tableModel()->rowCount(), int(dialog.rows().size()));
        for (const model::TraceDiffRow& r : dialog.rows())
            QCOMPARE(r.status, model::DiffStatus::Unchanged);
        QVERIFY2(dialog.summary().contains("0 added, 0 removed, 0 faster, 0 slower"),
                 qPrintable(dialog.summary()));
    }

    void subjects() {
        const auto a = loaded(data("torch-mlp-sync-every-step.warpline"));
        const auto b = loaded(data("torch-mlp-sync-end.warpline"));
        app::CompareDialog dialog(a, b);
        for (const model::DiffSubject s :
             {model::DiffSubject::Api, model::DiffSubject::Nvtx, model::DiffSubject::Kernels}) {
            dialog.setSubject(s);
            const auto expected = model::diffTraces(*a->store, *b->store, s);
            QCOMPARE(dialog.rows().size(), expected.size());
            QCOMPARE(dialog.tableModel()->rowCount(), int(expected.size()));
            QCOMPARE(dialog.rows().front().name, expected.front().name);
        }
        // Fewer loss.item() syncs in B: the API diff says cudaStreamSynchronize got fewer calls.
        dialog.setSubject(model::DiffSubject::Api);
        bool found = false;
        for (const model::TraceDiffRow& r : dialog.rows()) {
            if (r.name == "cudaStreamSynchronize") {
                found = true;
                QVERIFY(r.b.count < r.a.count);
            }
        }
        QVERIFY(found);
    }

    // Both timelines show the same span measured from their own trace's start.
    void timelinesFollowEachOther() {
        const auto a = loaded(data("torch-mlp-sync-every-step.warpline"));
        const auto b = loaded(data("torch-mlp-sync-end.warpline"));
        app::CompareDialog dialog(a, b);
        dialog.resize(1000, 800);
        dialog.show();
        QVERIFY(QTest::qWaitForWindowExposed(&dialog));
        const double beginA = double(a->store->beginTime());
        const double beginB = double(b->store->beginTime());
        dialog.timelineBefore()->setVisibleRange(beginA + 1e6, beginA + 3e6);
        QCOMPARE(dialog.timelineAfter()->viewport().visibleStart() - beginB, 1e6);
        QCOMPARE(dialog.timelineAfter()->viewport().visibleDuration(), 2e6);
        dialog.timelineAfter()->setVisibleRange(beginB + 5e6, beginB + 5.5e6);
        QCOMPARE(dialog.timelineBefore()->viewport().visibleStart() - beginA, 5e6);
        QCOMPARE(dialog.timelineBefore()->viewport().visibleDuration(), 0.5e6);
    }

    void chromeExportFromTheApp() {
        QTemporaryDir dir;
        const auto gelu = loaded(data("gelu.warpline"));
        const QString out = dir.filePath("gelu.json");
        QCOMPARE(app::ChromeTraceExport::write(*gelu->store, out), QString());
        QFile f(out);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonArray events = QJsonDocument::fromJson(f.readAll())["traceEvents"].toArray();
        int kernels = 0;
        for (const QJsonValue& e : events)
            kernels += e.toObject()["cat"].toString() == "kernel";
        QCOMPARE(size_t(kernels), gelu->store->kernelCount());
        QVERIFY(app::ChromeTraceExport::write(*gelu->store, "/proc/no/such/dir/x.json")
                    .startsWith("cannot write /proc/no/such/dir/x.json"));
    }

    // The window opens a PyTorch profiler trace and offers the new actions.
    void windowOpensPyTorchTraces() {
        const QString file = data("pytorch/hta-simple-add.pt.trace.json.gz");
        WARPLINE_REQUIRE_DATA(file);
        app::MainWindow window;
        QAction* compare = nullptr;
        QAction* chrome = nullptr;
        for (QAction* menu : window.menuBar()->actions()) {
            if (!menu->menu())
                continue;
            compare = compare ? compare : findAction(menu->menu(), "Compare &With…");
        }
        QVERIFY(compare);
        window.openTrace(file);
        QTRY_VERIFY_WITH_TIMEOUT(window.trace() && !window.trace()->reports.empty(), 30000);
        QVERIFY(window.trace()->store->kernelCount() > 0);
        QCOMPARE(window.trace()->store->metaValue("source_format"),
                 std::string("pytorch-profiler"));
        for (QAction* menu : window.menuBar()->actions()) {
            if (!menu->menu())
                continue;
            for (QAction* a : menu->menu()->actions()) {
                if (a->menu()) {
                    emit a->menu()->aboutToShow();
                    chrome = chrome ? chrome : findAction(a->menu(), "Chrome Trace (Perfetto)…");
                }
            }
        }
        QVERIFY(chrome);
        QVERIFY(chrome->isEnabled());
    }
};

QTEST_MAIN(TestCompareDialog)
#include "tst_comparedialog.moc"
