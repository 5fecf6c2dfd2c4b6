// Output names for traces of programs with several CUDA processes: %p, %q{VAR}, %% expand as nsys
// expands them, typos are errors, and a taken name gets a number before its extension.

#include "outputname.h"
#include "tracewriter.h"

#include <QTemporaryDir>
#include <QtTest>
#include <map>

using namespace warpline::format;
namespace format = warpline::format;

class TestOutputName : public QObject {
    Q_OBJECT

private slots:
    void expand_data() {
        QTest::addColumn<QString>("pattern");
        QTest::addColumn<QString>("expected");
        QTest::newRow("plain") << "trace.warpline"
                               << "trace.warpline";
        QTest::newRow("pid") << "run-%p.warpline"
                             << "run-4242.warpline";
        QTest::newRow("env var") << "run_%q{RANK}.warpline"
                                 << "run_3.warpline";
        QTest::newRow("unset env var") << "run_%q{NOPE}.warpline"
                                       << "run_.warpline";
        QTest::newRow("both") << "/tmp/%q{RANK}/%p.warpline"
                              << "/tmp/3/4242.warpline";
        QTest::newRow("literal percent") << "100%%.warpline"
                                         << "100%.warpline";
    }
    void expand() {
        QFETCH(QString, pattern);
        QFETCH(QString, expected);
        const std::map<std::string, std::string> env{{"RANK", "3"}};
        const auto lookup = [&env](const char* name) -> const char* {
            auto it = env.find(name);
            return it == env.end() ? nullptr : it->second.c_str();
        };
        QCOMPARE(
            QString::fromStdString(format::expandOutputName(pattern.toStdString(), 4242, lookup)),
            expected);
    }

    void badPatternsAreErrors_data() {
        QTest::addColumn<QString>("pattern");
        QTest::newRow("unknown sequence") << "run-%z.warpline";
        QTest::newRow("lone percent at end") << "run-%";
        QTest::newRow("unclosed brace") << "run-%q{RANK.warpline";
        QTest::newRow("empty variable") << "run-%q{}.warpline";
    }
    void badPatternsAreErrors() {
        QFETCH(QString, pattern);
        QVERIFY_THROWS_EXCEPTION(format::OutputNameError,
                                 format::expandOutputName(pattern.toStdString(), 1));
    }

    void perProcessPatterns() {
        QVERIFY(format::isPerProcessPattern("a-%p.warpline"));
        QVERIFY(format::isPerProcessPattern("a-%q{RANK}.warpline"));
        QVERIFY(!format::isPerProcessPattern("a.warpline"));
        QVERIFY(!format::isPerProcessPattern("100%%p.warpline")); // %% then a literal p
    }

    void numberedNames() {
        QCOMPARE(format::numberedName("trace.warpline", 2), std::string("trace-2.warpline"));
        QCOMPARE(format::numberedName("dir.v1/trace", 3), std::string("dir.v1/trace-3"));
        QCOMPARE(format::numberedName("/a/b/.hidden", 2), std::string("/a/b/.hidden-2"));
    }

    // File names made from a workload's or program's name stay in their folder.
    void fileStems_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("stem");
        QTest::newRow("workload") << "gelu"
                                  << "gelu";
        QTest::newRow("program path") << "./bin/train.py"
                                      << "train.py";
        QTest::newRow("climbing path") << "../../x"
                                       << "x";
        QTest::newRow("parent") << ".."
                                << "trace";
        QTest::newRow("hidden") << "a/.hidden"
                                << "hidden";
        QTest::newRow("trailing slash") << "dir/"
                                        << "trace";
        QTest::newRow("empty") << ""
                               << "trace";
        QTest::newRow("control characters") << "a\nb\tc"
                                            << "a_b_c";
    }
    void fileStems() {
        QFETCH(QString, name);
        QFETCH(QString, stem);
        QCOMPARE(QString::fromStdString(format::fileStem(name.toStdString())), stem);
    }

    void plainWorkloadNames() {
        for (const char* name : {"gelu", "sync-stall", "mlp_2", "v1.2"})
            QVERIFY2(format::isPlainWorkloadName(name), name);
        for (const char* name : {"", "../../x", "a/b", "..", ".hidden", "-o", "a..b", "a b"})
            QVERIFY2(!format::isPlainWorkloadName(name), name);
    }

    void takenNamesGetTheNextNumber() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("run.warpline").toStdString();
        format::TraceWriter::Options options;
        options.numberIfExists = true;
        format::TraceWriter first(path, options);
        format::TraceWriter second(path, options);
        format::TraceWriter third(path, options);
        QCOMPARE(first.path(), path);
        QCOMPARE(second.path(), dir.filePath("run-2.warpline").toStdString());
        QCOMPARE(third.path(), dir.filePath("run-3.warpline").toStdString());
    }
};

QTEST_GUILESS_MAIN(TestOutputName)
#include "tst_outputname.moc"
