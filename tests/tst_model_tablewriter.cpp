// Table writers: CSV and JSON must round-trip any text a trace can hold (commas, quotes, newlines,
// HTML, control characters, non-ASCII); Markdown and text must stay one row per line.

#include "tablewriter.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>
#include <sstream>

using namespace warpline::model;

namespace {

// A small RFC 4180 reader, independent of the writer: fields separated by commas, records by
// CRLF (or LF); a quoted field may hold anything, with "" for a quote.
QList<QStringList> parseCsv(const QString& text) {
    QList<QStringList> records;
    QStringList record;
    QString field;
    bool quoted = false;
    bool fieldStarted = false;
    for (int i = 0; i < text.size(); ++i) {
        const QChar c = text[i];
        if (quoted) {
            if (c == '"') {
                if (i + 1 < text.size() && text[i + 1] == '"') {
                    field += '"';
                    ++i;
                } else {
                    quoted = false;
                }
            } else {
                field += c;
            }
        } else if (c == '"' && field.isEmpty()) {
            quoted = true;
            fieldStarted = true;
        } else if (c == ',') {
            record << field;
            field.clear();
            fieldStarted = false;
        } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
            continue;
        } else if (c == '\n') {
            record << field;
            records << record;
            record.clear();
            field.clear();
            fieldStarted = false;
        } else {
            field += c;
            fieldStarted = true;
        }
    }
    if (fieldStarted || !record.isEmpty()) {
        record << field;
        records << record;
    }
    return records;
}

std::string render(const Table& table, TableFormat format) {
    std::ostringstream out;
    writeTable(out, table, format);
    return out.str();
}

Table tableWithName(const std::string& name) {
    Table table({{"Total Time (ns)", Column::Align::Right, 0},
                 {"Avg (ns)", Column::Align::Right, 1},
                 {"Name, \"quoted\"", Column::Align::Left, 0},
                 {"Empty", Column::Align::Left, 0}});
    table.addRow({int64_t(1234567), 1234.5, name, std::monostate{}});
    table.addRow({int64_t(-5), 0.1, std::string("plain"), std::monostate{}});
    return table;
}

} // namespace

class TestModelTableWriter : public QObject {
    Q_OBJECT

private slots:
    void roundTrip_data() {
        QTest::addColumn<QByteArray>("name");
        QTest::newRow("plain") << QByteArray("void gemm<float>(float*, int)");
        QTest::newRow("comma") << QByteArray("a,b");
        QTest::newRow("quotes") << QByteArray("say \"hi\"");
        QTest::newRow("only a quote") << QByteArray("\"");
        QTest::newRow("newline") << QByteArray("line1\nline2");
        QTest::newRow("crlf") << QByteArray("line1\r\nline2");
        QTest::newRow("html") << QByteArray("<script>alert('x')</script> &amp;");
        QTest::newRow("control chars") << QByteArray("tab\there\x01\x1f bell\x07 esc\x1b[31m");
        QTest::newRow("backslash") << QByteArray("C:\\path\\k");
        QTest::newRow("unicode") << QByteArray("Grüße 核函数 \xF0\x9F\x9A\x80");
        QTest::newRow("pipe") << QByteArray("a|b");
        QTest::newRow("empty") << QByteArray("");
        QTest::newRow("leading space") << QByteArray("  padded  ");
    }
    void roundTrip() {
        QFETCH(QByteArray, name);
        const Table table = tableWithName(name.toStdString());

        // CSV
        const QString csv = QString::fromStdString(render(table, TableFormat::Csv));
        const QList<QStringList> records = parseCsv(csv);
        QCOMPARE(records.size(), 3);
        QCOMPARE(records[0],
                 QStringList({"Total Time (ns)", "Avg (ns)", "Name, \"quoted\"", "Empty"}));
        QCOMPARE(records[1], QStringList({"1234567", "1234.5", QString::fromUtf8(name), ""}));
        QCOMPARE(records[2], QStringList({"-5", "0.1", "plain", ""}));

        // JSON
        QJsonParseError error;
        const QJsonDocument doc = QJsonDocument::fromJson(
            QByteArray::fromStdString(render(table, TableFormat::Json)), &error);
        QCOMPARE(error.error, QJsonParseError::NoError);
        QVERIFY(doc.isArray());
        const QJsonArray rows = doc.array();
        QCOMPARE(rows.size(), 2);
        const QJsonObject first = rows[0].toObject();
        QCOMPARE(first.keys().size(), 4);
        QVERIFY(first["Total Time (ns)"].isDouble()); // a number, not a string
        QCOMPARE(first["Total Time (ns)"].toInteger(), 1234567);
        QCOMPARE(first["Avg (ns)"].toDouble(), 1234.5);
        QCOMPARE(first["Name, \"quoted\""].toString(), QString::fromUtf8(name));
        QVERIFY(first["Empty"].isNull());
        QCOMPARE(rows[1].toObject()["Total Time (ns)"].toInteger(), -5);

        // Markdown and text: one line per row whatever the name holds.
        const QString md = QString::fromStdString(render(table, TableFormat::Markdown));
        QCOMPARE(md.count('\n'), 4);
        for (const QString& line : md.split('\n', Qt::SkipEmptyParts)) {
            QVERIFY2(line.startsWith("| ") && line.endsWith(" |"), qPrintable(line));
            // Unescaped pipes delimit exactly the 4 columns.
            const int cells = line.count(QRegularExpression("(?<!\\\\)\\|")) - 1;
            QCOMPARE(cells, 4);
            QVERIFY(!line.contains(QRegularExpression("(?<!\\\\)<")));
        }
        const QString text = QString::fromStdString(render(table, TableFormat::Text));
        QCOMPARE(text.count('\n'), 4);
        for (const QChar c : text)
            QVERIFY(c == '\n' || c.unicode() >= 0x20);
    }

    void invalidUtf8BecomesReplacementCharacter() {
        const Table table = tableWithName("bad \xC3\x28 and \xFF end");
        const QByteArray json = QByteArray::fromStdString(render(table, TableFormat::Json));
        QJsonParseError error;
        const QJsonDocument doc = QJsonDocument::fromJson(json, &error);
        QCOMPARE(error.error, QJsonParseError::NoError);
        QCOMPARE(doc.array()[0].toObject()["Name, \"quoted\""].toString(),
                 QString::fromUtf8("bad \xEF\xBF\xBD( and \xEF\xBF\xBD end"));
    }

    void jsonEscapesControlCharacters() {
        QCOMPARE(jsonString("a\"b\\c\n\t\x01"), std::string("\"a\\\"b\\\\c\\n\\t\\u0001\""));
    }

    void csvQuotesOnlyWhenNeeded_data() {
        QTest::addColumn<QString>("in");
        QTest::addColumn<QString>("out");
        QTest::newRow("plain") << "abc"
                               << "abc";
        QTest::newRow("comma") << "a,b"
                               << "\"a,b\"";
        QTest::newRow("quote") << "a\"b"
                               << "\"a\"\"b\"";
        QTest::newRow("cr") << "a\rb"
                            << "\"a\rb\"";
        QTest::newRow("lf") << "a\nb"
                            << "\"a\nb\"";
    }
    void csvQuotesOnlyWhenNeeded() {
        QFETCH(QString, in);
        QFETCH(QString, out);
        QCOMPARE(QString::fromStdString(csvField(in.toStdString())), out);
    }

    void textTableIsAligned() {
        Table table({{"Total Time (ns)", Column::Align::Right, 0},
                     {"Avg (ns)", Column::Align::Right, 1},
                     {"Name", Column::Align::Left, 0}});
        table.addRow({int64_t(3481709), 3481709.0, std::string("Profile_Loop")});
        table.addRow({int64_t(182472), 182472.25, std::string("Warmup")});
        const std::string text = render(table, TableFormat::Text);
        QCOMPARE(QString::fromStdString(text),
                 QString(" Total Time (ns)     Avg (ns)  Name\n"
                         " ---------------  -----------  ------------\n"
                         "       3,481,709  3,481,709.0  Profile_Loop\n"
                         "         182,472    182,472.2  Warmup\n"));
    }

    // Detail columns (an insight's numbers and refs) are for machines: CSV and JSON keep them,
    // the text and Markdown a person reads leave them out.
    void detailColumnsOnlyInCsvAndJson() {
        Table table({{"Kind", Column::Align::Left, 0},
                     {"Finding", Column::Align::Left, 0, false, true},
                     {"Numbers", Column::Align::Left, 0, true}});
        table.addRow({std::string("launch-bound"), std::string("The GPU idles."),
                      std::string("share=0.35")});
        for (const TableFormat f : {TableFormat::Text, TableFormat::Markdown}) {
            const std::string out = render(table, f);
            QVERIFY2(out.find("The GPU idles.") != std::string::npos, out.c_str());
            QVERIFY2(out.find("Numbers") == std::string::npos, out.c_str());
            QVERIFY2(out.find("share=0.35") == std::string::npos, out.c_str());
        }
        for (const TableFormat f : {TableFormat::Csv, TableFormat::Json}) {
            const std::string out = render(table, f);
            QVERIFY2(out.find("Numbers") != std::string::npos, out.c_str());
            QVERIFY2(out.find("share=0.35") != std::string::npos, out.c_str());
        }
    }

    // A table of sentences (the insights) reads as a report: each row's other cells on a line,
    // its sentences wrapped at 100 columns below; Markdown in bold, then the paragraph.
    void proseTableReadsAsParagraphs() {
        Table table({{"Rank", Column::Align::Right, 0},
                     {"Kind", Column::Align::Left, 0},
                     {"Finding", Column::Align::Left, 0, false, true}});
        std::string sentence;
        for (int k = 0; k < 12; ++k)
            sentence += "The GPU idles while the CPU launches. ";
        sentence.pop_back();
        table.addRow({int64_t(1), std::string("launch-bound"), sentence});
        table.addRow({int64_t(2), std::string("start-up"), std::string("Short.")});
        const std::string text = render(table, TableFormat::Text);
        const std::string line = "    The GPU idles while the CPU launches. The GPU idles while "
                                 "the CPU launches. The GPU idles while";
        QCOMPARE(QString::fromStdString(text.substr(0, text.find('\n', text.find('\n') + 1))),
                 QString::fromStdString("Rank: 1 · Kind: launch-bound\n" + line));
        std::istringstream lines(text);
        for (std::string l; std::getline(lines, l);)
            QVERIFY2(l.size() <= 100, l.c_str());
        QVERIFY(text.ends_with("\nRank: 2 · Kind: start-up\n    Short.\n"));
        const std::string md = render(table, TableFormat::Markdown);
        QVERIFY(md.starts_with("**Rank: 1 · Kind: launch-bound**\n\nThe GPU idles"));
        QVERIFY(md.find("|") == std::string::npos);
    }

    void formatting_data() {
        QTest::addColumn<double>("value");
        QTest::addColumn<int>("decimals");
        QTest::addColumn<QString>("expected");
        QTest::newRow("thousands") << 1234567.891 << 1 << "1,234,567.9";
        QTest::newRow("small") << 12.0 << 1 << "12.0";
        QTest::newRow("negative") << -1234.5 << 1 << "-1,234.5";
        QTest::newRow("no decimals") << 999999.6 << 0 << "1,000,000";
        QTest::newRow("nan") << std::nan("") << 1 << "NaN";
    }
    void formatting() {
        QFETCH(double, value);
        QFETCH(int, decimals);
        QFETCH(QString, expected);
        QCOMPARE(QString::fromStdString(formatDouble(value, decimals, true)), expected);
    }

    void emptyTable() {
        const Table table({{"A", Column::Align::Left, 0}});
        QCOMPARE(render(table, TableFormat::Json), std::string("[]\n"));
        QCOMPARE(render(table, TableFormat::Csv), std::string("A\r\n"));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Table(table).addRow({}));
    }

    void parseFormat() {
        QCOMPARE(parseTableFormat("csv"), std::optional(TableFormat::Csv));
        QCOMPARE(parseTableFormat("md"), std::optional(TableFormat::Markdown));
        QCOMPARE(parseTableFormat("table"), std::optional(TableFormat::Text));
        QCOMPARE(parseTableFormat("json"), std::optional(TableFormat::Json));
        QVERIFY(!parseTableFormat("xml"));
    }
};

QTEST_GUILESS_MAIN(TestModelTableWriter)
#include "tst_model_tablewriter.moc"
