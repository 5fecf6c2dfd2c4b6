// GPU time by Python source line (sourcelines.h) from the call stacks warpline-record
// --python-stacks writes (CUDA_CALLCHAINS, CUPTI_ACTIVITY_KIND_RUNTIME.callchainId): hand-built
// stacks with known times, hostile chain rows, and the GPT loop recorded on the H100.

#include "analysestracegen.h"
#include "sourcelines.h"
#include "testdata.h"

#include <QFile>
#include <QtTest>
#include <sqlite3.h>

using namespace warpline::model;
namespace format = warpline::format;

namespace {

format::CallchainRecord chain(uint32_t id, std::vector<format::PythonFrame> frames) {
    format::CallchainRecord c;
    c.id = id;
    c.frames = std::move(frames);
    return c;
}

const SourceRow* rowAt(const TraceStore& store, const std::vector<SourceRow>& rows,
                       const std::string& location) {
    for (const SourceRow& r : rows)
        if (sourceLocation(store, r.file, r.line) == location)
            return &r;
    return nullptr;
}

} // namespace

class TestSourceLines : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;

    // Three kernels launched from train.py: two through model.py:10 (the matmul line, 100 and
    // 300 ns), one through model.py:20 into a library's gelu (50 ns); one more launched without a
    // stack (backward: 1000 ns). Stack 1: matmul model.py:10 <- forward model.py:30 <- main
    // train.py:5. Stack 2: gelu functional.py:1500 (site-packages) <- forward model.py:20 <- main.
    TraceStore handBuilt() {
        TraceGen g(m_dir.filePath("stacks.warpline"));
        g.writer().addCallchain(chain(1, {{"matmul", "/src/model.py", 10},
                                          {"Net.forward", "/src/model.py", 30},
                                          {"<module>", "/src/train.py", 5}}));
        g.writer().addCallchain(
            chain(2, {{"gelu", "/venv/lib/python3.11/site-packages/torch/nn/functional.py", 1500},
                      {"Net.forward", "/src/model.py", 20},
                      {"<module>", "/src/train.py", 5}}));
        const auto launch = [&g](int64_t t, int64_t gpu0, int64_t gpu1, uint32_t stack) {
            format::ApiRecord r;
            r.start = t;
            r.end = t + 10;
            r.processId = TraceGen::kPid;
            r.threadId = TraceGen::kTid;
            r.correlationId = g.nextCorrelation();
            r.name = "cudaLaunchKernel_v7000";
            r.callchainId = stack;
            g.writer().addApi(r);
            g.kernel(gpu0, gpu1, r.correlationId);
        };
        launch(0, 100, 200, 1);
        launch(20, 300, 600, 1);
        launch(40, 700, 750, 2);
        launch(60, 800, 1800, 0);
        return g.load();
    }

private slots:
    void inclusiveAndSelfTimePerLine() {
        const TraceStore store = handBuilt();
        QCOMPARE(store.callchains().chainCount(), size_t(2));
        QCOMPARE(store.callchains().callsWithChain(), size_t(3));
        const SourceReport r = sourceReport(store);
        QCOMPARE(r.kernels, uint64_t(4));
        QCOMPARE(r.kernelsWithStack, uint64_t(3));
        QCOMPARE(r.kernelTime, int64_t(1450));
        QCOMPARE(r.withStack, int64_t(450));
        const SourceRow* matmul = rowAt(store, r.lines, "model.py:10");
        QVERIFY(matmul);
        QCOMPARE(matmul->inclusive, int64_t(400));
        QCOMPARE(matmul->self, int64_t(400));
        QCOMPARE(matmul->kernels, uint64_t(2));
        QCOMPARE(store.text(matmul->function), std::string("matmul"));
        const SourceRow* top = rowAt(store, r.lines, "train.py:5");
        QCOMPARE(top->inclusive, int64_t(450)); // every kernel with a stack passes through it
        QCOMPARE(top->self, int64_t(0));
        // The kernel launched without a stack has a row of its own, ranked with the others: it
        // holds most of the time here, so it comes first.
        QVERIFY(r.lines.front().withoutStack);
        QCOMPARE(r.lines.front().inclusive, int64_t(1000));
        QCOMPARE(r.lines.front().kernels, uint64_t(1));
        QCOMPARE(r.lines.front().ops.size(), size_t(1));
        // Then the program's own lines by own-code time: the matmul line, then the line that
        // called the library's gelu; the lines holding only inclusive time after them.
        QCOMPARE(sourceLocation(store, r.lines[1].file, r.lines[1].line), "model.py:10");
        QCOMPARE(r.lines[1].own, int64_t(400));
        QCOMPARE(sourceLocation(store, r.lines[2].file, r.lines[2].line), "model.py:20");
        QCOMPARE(r.lines[2].own, int64_t(50));
        QCOMPARE(r.lines[2].self, int64_t(0));
        QCOMPARE(sourceLocation(store, r.lines[3].file, r.lines[3].line), "train.py:5");
        QCOMPARE(r.lines[3].own, int64_t(0));
        const SourceRow* gelu = rowAt(store, r.lines, "functional.py:1500");
        QVERIFY(gelu);
        QCOMPARE(gelu->self, int64_t(50));
        QCOMPARE(gelu->own, int64_t(0));
        QCOMPARE(&r.lines.back(), gelu);
        QVERIFY(r.functions.front().withoutStack);
        // By function: Net.forward holds both of its lines.
        const auto forward = std::find_if(r.functions.begin(), r.functions.end(), [&](auto& f) {
            return store.text(f.function) == "Net.forward";
        });
        QVERIFY(forward != r.functions.end());
        QCOMPARE(forward->inclusive, int64_t(450));
        QCOMPARE(forward->ops.size(), size_t(3));
        const Table t = sourceLinesTable(store, r);
        QCOMPARE(t.rowCount(), r.lines.size());
        QCOMPARE(t.columns().size(), size_t(8));
        QCOMPARE(t.columns()[0].name, std::string("Own Code (ns)"));
        QCOMPARE(std::get<std::string>(t.cell(0, 6)), std::string("(no Python stack)"));
        QCOMPARE(std::get<double>(t.cell(0, 1)), 100.0 * 1000 / 1450);
        QCOMPARE(std::get<double>(t.cell(0, 3)), 100.0 * 1000 / 1450);
        double shares = 0; // the self times add up to all kernel time
        for (size_t row = 0; row < t.rowCount(); ++row)
            shares += 100.0 * static_cast<double>(std::get<int64_t>(t.cell(row, 4))) / 1450;
        QCOMPARE(shares, 100.0);
    }

    // warpline-stats --phase: only the kernels starting in the window count.
    void windowKeepsTheKernelsStartingInIt() {
        const TraceStore store = handBuilt();
        const SourceReport r = sourceReport(store, TimeWindow{250, 760}); // kernels at 300, 700
        QCOMPARE(r.kernels, uint64_t(2));
        QCOMPARE(r.kernelTime, int64_t(350));
        QCOMPARE(r.withStack, int64_t(350));
        QCOMPARE(rowAt(store, r.lines, "model.py:10")->inclusive, int64_t(300));
        QCOMPARE(rowAt(store, r.lines, "model.py:20")->inclusive, int64_t(50));
        QVERIFY(std::none_of(r.lines.begin(), r.lines.end(),
                             [](const SourceRow& row) { return row.withoutStack; }));
    }

    void hostileChainsAreSkipped() {
        TraceGen g(m_dir.filePath("hostile.warpline"));
        g.launch(0, 10, 20, 30);
        g.load();
        sqlite3* db = nullptr;
        QCOMPARE(sqlite3_open(m_dir.filePath("hostile.warpline").toUtf8().constData(), &db),
                 SQLITE_OK);
        const char* sql =
            "CREATE TABLE CUDA_CALLCHAINS (id INTEGER, symbol INTEGER, module INTEGER, unresolved "
            "INTEGER, originalIP INTEGER, stackDepth INTEGER);"
            "INSERT INTO CUDA_CALLCHAINS VALUES (1, 999999, 888888, 0, NULL, 0), "
            "(-5, 1, 1, 0, NULL, 0), (1, 1, 1, 0, NULL, -1), (1, 1, 1, 0, NULL, 0), "
            "(99999999999, 1, 1, 0, NULL, 0);"
            "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET callchainId = 1;";
        QCOMPARE(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK);
        sqlite3_close(db);
        const TraceStore store =
            TraceLoader::load(m_dir.filePath("hostile.warpline").toStdString());
        QCOMPARE(store.callchains().chainCount(), size_t(1));
        QCOMPARE(store.callchains().chain(1).size(), size_t(1)); // a repeated depth counts once
        const SourceReport r = sourceReport(store);
        QCOMPARE(r.kernelsWithStack, uint64_t(1));
    }

    // Recorded on the H100 (tests/data/README.md): every forward GEMM was launched from a line of
    // torch_gpt.py that calls one of its nn.Linear modules; every backward GEMM, launched by the
    // autograd engine's thread, takes the stack of the thread waiting in loss.backward().
    void recordedGemmsComeFromTheLinearLines() {
        const QString file = QStringLiteral(WARPLINE_TEST_DATA "/torch-gpt-stacks.warpline");
        const QString script = QStringLiteral(WARPLINE_SOURCE_DIR "/tests/gpu/torch_gpt.py");
        WARPLINE_REQUIRE_DATA(file);
        QFile f(script);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QStringList source = QString::fromUtf8(f.readAll()).split('\n');
        const TraceStore store = TraceLoader::load(file.toStdString());
        const Callchains& chains = store.callchains();
        QVERIFY(!chains.empty());
        size_t gemms = 0, backward = 0;
        for (const GpuTrack& t : store.gpuTracks())
            for (size_t i = 0; i < t.size(); ++i) {
                if (store.text(t.name(i)).find("nvjet") == std::string::npos ||
                    !t.launch(i).valid())
                    continue;
                const EventRef l = t.launch(i);
                const auto frames = store.callStack(l);
                QVERIFY(!frames.empty());
                // The innermost frame of the script: an nn.Linear call, or loss.backward().
                const auto own =
                    std::find_if(frames.begin(), frames.end(), [&](const CallFrame& c) {
                        return store.text(c.file).find("torch_gpt.py") != std::string::npos;
                    });
                QVERIFY(own != frames.end());
                QVERIFY(own->line > 0 && own->line <= source.size());
                const QString text = source[own->line - 1];
                if (store.text(frames[0].function) == "<autograd backward>") {
                    QVERIFY2(text.contains("loss.backward()"),
                             qPrintable(QString::number(own->line) + ": " + text));
                    ++backward;
                    continue;
                }
                ++gemms;
                QVERIFY2(text.contains("self.qkv(") || text.contains("self.proj(") ||
                             text.contains("self.fc1(") || text.contains("self.fc2(") ||
                             text.contains("self.head("),
                         qPrintable(QString::number(own->line) + ": " + text));
            }
        QVERIFY(backward >= 2 * 300); // two GEMMs a Linear in backward
        QVERIFY(gemms >= 300);        // 20 steps x 4 layers x 4 Linear modules, plus the head
        // The report ranks the MLP line (fc1, fc2) first among the block's lines.
        const SourceReport r = sourceReport(store);
        const SourceRow* best = nullptr;
        for (const SourceRow& row : r.lines)
            if (store.text(row.function) == "Block.forward" &&
                (!best || row.inclusive > best->inclusive))
                best = &row;
        QVERIFY(best);
        QVERIFY2(source[best->line - 1].contains("self.fc2(") &&
                     source[best->line - 1].contains("self.fc1("),
                 qPrintable(source[best->line - 1]));
        // Every kernel has a stack; the backward pass is the loss.backward() line's.
        QCOMPARE(r.kernelsWithStack, r.kernels);
        const auto backwardLine =
            std::find_if(r.lines.begin(), r.lines.end(), [&](const SourceRow& row) {
                return row.line > 0 && source[row.line - 1].contains("loss.backward()") &&
                       store.text(row.file).find("torch_gpt.py") != std::string::npos;
            });
        QVERIFY(backwardLine != r.lines.end());
        QVERIFY(double(backwardLine->inclusive) > 0.5 * double(r.kernelTime));
    }
};

QTEST_GUILESS_MAIN(TestSourceLines)
#include "tst_sourcelines.moc"
