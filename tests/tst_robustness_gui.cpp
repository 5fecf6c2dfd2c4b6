// The window with hostile or damaged traces: a kernel named with HTML and control characters
// appears literally everywhere the window shows it (report table cells and tooltips, the details
// panel's values, tooltips and title, the timeline's hover label), never interpreted as rich
// text; the recorder's warnings (dropped records) are visible in the window without opening
// anything; a damaged file shows the error page with the loader's message.

#include "details/detailspanel.h"
#include "mainwindow.h"
#include "tables/reportview.h"
#include "tables/tablemodel.h"
#include "timeline/timelinewidget.h"
#include "tst_model_tracebuilder.h"

#include <QLabel>
#include <QTemporaryDir>
#include <QTextDocument>
#include <QTreeWidget>
#include <QtTest>

using namespace warpline;
using warpline::app::MainWindow;

namespace {

// What a tooltip or an AutoText label shows for `text`: Qt renders it as rich text when it
// guesses it is (Qt::mightBeRichText).
QString rendered(const QString& text) {
    QTextDocument doc;
    if (Qt::mightBeRichText(text))
        doc.setHtml(text);
    else
        doc.setPlainText(text);
    return doc.toPlainText();
}

const QString kHostile = QStringLiteral("<b>x</b>\n\x07<i>a kernel named in HTML</i> &amp; more");

} // namespace

class TestRobustnessGui : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

    bool waitLoaded(MainWindow& w) {
        return QTest::qWaitFor(
            [&] {
                return (w.page() == MainWindow::Page::Trace && w.trace() &&
                        !w.trace()->reports.empty()) ||
                       w.page() == MainWindow::Page::Error;
            },
            30000);
    }

    QString writeTrace(const QString& name, const std::string& extraSql = {}) {
        const QString p = m_dir.filePath(name);
        TraceBuilder b(p);
        b.process("app");
        b.threadName(1, "main");
        b.runtime(100, 150, 1, 1, "cudaLaunchKernel_v7000");
        b.runtime(200, 250, 1, 2, "cudaLaunchKernel_v7000");
        b.kernel({.start = 160, .end = 400, .correlation = 1, .name = kHostile.toStdString()});
        b.kernel({.start = 400, .end = 600, .correlation = 2, .name = "void plain()"});
        b.nvtx(59, 90, 700, 1, kHostile.toStdString());
        if (!extraSql.empty())
            b.exec(extraSql);
        return p;
    }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        qputenv("XDG_CONFIG_HOME", m_dir.filePath("config").toUtf8());
        QCoreApplication::setOrganizationName("WarplineTest");
        QCoreApplication::setApplicationName("tst_robustness_gui");
    }

    void htmlAndControlCharactersAreShownLiterally() {
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        w.openTrace(writeTrace("hostile.warpline"));
        QVERIFY(waitLoaded(w));
        QCOMPARE(w.page(), MainWindow::Page::Trace);

        // The kernel summary: cell text and tooltip.
        views::ReportView* kernels = w.reportView("kernels");
        QVERIFY(kernels);
        const int nameColumn = kernels->report().table.columnIndex("Name");
        QVERIFY(nameColumn >= 0);
        int row = -1;
        for (int r = 0; r < kernels->model()->rowCount(); ++r) {
            if (kernels->model()->index(r, nameColumn).data().toString() == kHostile)
                row = r;
        }
        QVERIFY2(row >= 0, "the name is in the table as written");
        const QString tip =
            kernels->model()->index(row, nameColumn).data(Qt::ToolTipRole).toString();
        QCOMPARE(rendered(tip), kHostile);

        // The details panel: title, value and tooltip of the kernel's name.
        const model::TraceStore& store = *w.trace()->store;
        model::EventRef hostile;
        for (uint32_t t = 0; t < store.gpuTracks().size(); ++t) {
            for (uint32_t i = 0; i < store.gpuTracks()[t].size(); ++i) {
                if (QString::fromStdString(store.text(store.gpuTracks()[t].name(i))) == kHostile)
                    hostile = {t, i};
            }
        }
        QVERIFY(hostile.valid());
        views::DetailsPanel* details = w.details();
        details->showEvent(model::EventId::gpu(hostile));
        const QList<QLabel*> labels = details->findChildren<QLabel*>();
        QVERIFY(!labels.isEmpty());
        for (const QLabel* label : labels)
            QCOMPARE(label->textFormat(), Qt::PlainText);
        QVERIFY2(details->title().contains(kHostile), qPrintable(details->title()));
        auto* list = details->findChild<QTreeWidget*>();
        QVERIFY(list);
        int shown = 0;
        for (int i = 0; i < list->topLevelItemCount(); ++i) {
            const QTreeWidgetItem* item = list->topLevelItem(i);
            if (!item->text(1).contains(kHostile))
                continue;
            ++shown;
            QVERIFY2(rendered(item->toolTip(1)).contains(kHostile),
                     qPrintable(item->text(0) + ": " + item->toolTip(1)));
        }
        QVERIFY2(shown >= 1, "the details list shows the name");

        // The timeline's hover label is plain text.
        for (const QLabel* label : w.timeline()->findChildren<QLabel*>())
            QCOMPARE(label->textFormat(), Qt::PlainText);
    }

    void droppedRecordsAreVisibleInTheWindow() {
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        w.openTrace(writeTrace("dropped.warpline",
                               "INSERT INTO WARPLINE_DROPPED VALUES (0, 1, 7, 1234, 'CUPTI "
                               "activity buffer full')"));
        QVERIFY(waitLoaded(w));
        QCOMPARE(w.page(), MainWindow::Page::Trace);
        const QString warning = "The collector dropped 1234 records";
        bool visible = false;
        for (const QLabel* label : w.findChildren<QLabel*>())
            visible |= label->isVisible() && label->text().contains(warning);
        QVERIFY2(visible, "a label in the window says records were dropped");
        // All warnings are in the details panel's summary of the trace.
        w.details()->showEvent(model::EventId{});
        QVERIFY2(w.details()->value("Warning 1").contains(warning),
                 qPrintable(w.details()->value("Warning 1")));
    }

    // A crafted file whose kernel table is a view over an endless recursive CTE (the window
    // never finished loading it before): it opens, and the warning that the view was not read
    // is in the window.
    void endlessViewOpensWithAWarning() {
        const QString p =
            writeTrace("endless.warpline",
                       "ALTER TABLE WARPLINE_KERNELS RENAME TO K0; CREATE VIEW WARPLINE_KERNELS AS "
                       "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT "
                       "K0.* FROM K0, c WHERE x < 0");
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        w.openTrace(p);
        QVERIFY(waitLoaded(w));
        QCOMPARE(w.page(), MainWindow::Page::Trace);
        const QString warning = "WARPLINE_KERNELS is a view, not a stored table";
        bool visible = false;
        for (const QLabel* label : w.findChildren<QLabel*>())
            visible |= label->isVisible() && label->text().contains(warning);
        QVERIFY2(visible, "a label in the window says the kernel view was not read");
    }

    void damagedFileShowsTheLoadersMessage() {
        const QString p = writeTrace("cut.warpline");
        QFile f(p);
        QVERIFY(f.open(QIODevice::ReadWrite));
        QVERIFY(f.resize(f.size() / 2));
        f.close();
        MainWindow w;
        w.resize(1200, 800);
        w.show();
        w.openTrace(p);
        QVERIFY(waitLoaded(w));
        QCOMPARE(w.page(), MainWindow::Page::Error);
        QVERIFY2(w.errorText().contains("cut off"), qPrintable(w.errorText()));
    }
};

QTEST_MAIN(TestRobustnessGui)
#include "tst_robustness_gui.moc"
