// Chrome trace JSON export (model/output/chromeexport.h) as Perfetto and chrome://tracing read it:
// the file parses, every event of the trace is in it once, flow arrows start inside their launch
// call's slice on the calling thread and end inside their GPU op's slice on the stream's row,
// slices on one row nest, names are escaped, and warpline-stats --export chrome writes it.

#include "chromeexport.h"
#include "runahead.h"
#include "testdata.h"
#include "traceloader.h"
#include "tst_model_tracebuilder.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <map>
#include <sstream>

using namespace warpline::model;

namespace {

// One Chrome slice, times back in integer ns (the export writes exactly three decimals).
struct Slice {
    int64_t start = 0;
    int64_t end = 0;
    QString cat;
    QString name;
    QJsonObject args;
};

int64_t toNs(const QJsonValue& micros) {
    return static_cast<int64_t>(std::llround(micros.toDouble() * 1000.0));
}

using Row = std::pair<int64_t, int64_t>; // pid, tid

struct Parsed {
    QJsonObject root;
    std::map<Row, std::vector<Slice>> slices; // "X", sorted by start then longest first
    std::map<Row, QString> threadNames;
    std::map<int64_t, QString> processNames;
    std::map<QString, int> countByCat; // "X" events by cat
    std::map<QString, int> countByPhase;
    std::map<int64_t, QJsonObject> flowStarts, flowEnds; // by id
    std::vector<QJsonObject> counters;
};

Parsed parseExport(const QByteArray& json) {
    Parsed p;
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(json, &error);
    if (error.error != QJsonParseError::NoError)
        qFatal("export does not parse at %d: %s", error.offset, qPrintable(error.errorString()));
    p.root = doc.object();
    for (const QJsonValue& v : p.root["traceEvents"].toArray()) {
        const QJsonObject e = v.toObject();
        const QString ph = e["ph"].toString();
        ++p.countByPhase[ph];
        const Row row{e["pid"].toInteger(), e["tid"].toInteger()};
        if (ph == "X") {
            ++p.countByCat[e["cat"].toString()];
            const int64_t start = toNs(e["ts"]);
            p.slices[row].push_back({start, start + toNs(e["dur"]), e["cat"].toString(),
                                     e["name"].toString(), e["args"].toObject()});
        } else if (ph == "M" && e["name"] == "thread_name") {
            p.threadNames[row] = e["args"]["name"].toString();
        } else if (ph == "M" && e["name"] == "process_name") {
            p.processNames[row.first] = e["args"]["name"].toString();
        } else if (ph == "s") {
            if (p.flowStarts.count(e["id"].toInteger()))
                qFatal("flow id %lld starts twice", static_cast<long long>(e["id"].toInteger()));
            p.flowStarts[e["id"].toInteger()] = e;
        } else if (ph == "f") {
            if (p.flowEnds.count(e["id"].toInteger()))
                qFatal("flow id %lld ends twice", static_cast<long long>(e["id"].toInteger()));
            p.flowEnds[e["id"].toInteger()] = e;
        } else if (ph == "C") {
            p.counters.push_back(e);
        }
    }
    for (auto& [row, list] : p.slices) {
        std::stable_sort(list.begin(), list.end(), [](const Slice& a, const Slice& b) {
            return a.start != b.start ? a.start < b.start : a.end > b.end;
        });
    }
    return p;
}

// The innermost slice of `row` open at ts (start <= ts, and ts < end or a zero-length slice at
// ts): the one Perfetto binds a flow event to.
const Slice* innermostAt(const Parsed& p, const Row& row, int64_t ts) {
    const auto it = p.slices.find(row);
    if (it == p.slices.end())
        return nullptr;
    const Slice* found = nullptr;
    for (const Slice& s : it->second) {
        if (s.start > ts)
            break;
        if (ts < s.end || (s.start == s.end && s.start == ts))
            found = &s; // later in (start, longest first) order = deeper
    }
    return found;
}

QByteArray exportStore(const TraceStore& store, ChromeExportCounts* counts = nullptr,
                       const ChromeExportOptions& options = {}) {
    std::ostringstream out;
    const ChromeExportCounts c = writeChromeTrace(out, store, options);
    if (counts)
        *counts = c;
    return QByteArray::fromStdString(out.str());
}

size_t nvtxCount(const TraceStore& store, bool marks) {
    size_t n = 0;
    for (const NvtxTrack& t : store.nvtxTracks()) {
        if ((t.style() == NvtxStyle::Mark) == marks)
            n += t.size();
    }
    return n;
}

// The checks every export must pass, on any trace.
void checkExport(const TraceStore& store, const QByteArray& json) {
    const Parsed p = parseExport(json);
    QVERIFY(p.root["traceEvents"].isArray());

    // Event counts equal the trace's.
    const size_t gpuOps = store.kernelCount() + store.memcpyCount() + store.memsetCount();
    QCOMPARE(size_t(p.countByCat.count("kernel") ? p.countByCat.at("kernel") : 0),
             store.kernelCount());
    QCOMPARE(size_t(p.countByCat.count("gpu_memcpy") ? p.countByCat.at("gpu_memcpy") : 0),
             store.memcpyCount());
    QCOMPARE(size_t(p.countByCat.count("gpu_memset") ? p.countByCat.at("gpu_memset") : 0),
             store.memsetCount());
    const auto cat = [&](const char* c) {
        return size_t(p.countByCat.count(c) ? p.countByCat.at(c) : 0);
    };
    QCOMPARE(cat("cuda_runtime") + cat("cuda_driver"), store.apiCallCount());
    QCOMPARE(cat("nvtx"), nvtxCount(store, false));
    QCOMPARE(size_t(p.countByPhase.count("i") ? p.countByPhase.at("i") : 0),
             nvtxCount(store, true));
    QCOMPARE(cat("kernel") + cat("gpu_memcpy") + cat("gpu_memset"), gpuOps);

    // Every row is named, and complete events on one row nest (Perfetto and Catapult need it).
    for (const auto& [row, list] : p.slices) {
        QVERIFY2(
            p.threadNames.count(row),
            qPrintable(QString("row %1/%2 has no thread_name").arg(row.first).arg(row.second)));
        QVERIFY(p.processNames.count(row.first));
        std::vector<int64_t> open; // ends of the enclosing slices
        for (const Slice& s : list) {
            while (!open.empty() && open.back() <= s.start &&
                   !(open.back() == s.start && s.start == s.end))
                open.pop_back();
            if (!open.empty())
                QVERIFY2(s.end <= open.back(), qPrintable("slice overlaps its parent: " + s.name));
            open.push_back(s.end);
        }
    }

    // One arrow per GPU op whose launch is known; each starts inside its launch call on the
    // calling thread's row and ends inside the op on the op's stream row.
    size_t launched = 0;
    for (const GpuTrack& t : store.gpuTracks()) {
        for (size_t i = 0; i < t.size(); ++i)
            launched += t.launch(i).valid();
    }
    QCOMPARE(p.flowStarts.size(), launched);
    QCOMPARE(p.flowEnds.size(), launched);
    for (const auto& [id, s] : p.flowStarts) {
        QVERIFY2(p.flowEnds.count(id), "flow start without end");
        const QJsonObject f = p.flowEnds.at(id);
        QCOMPARE(s["cat"], f["cat"]);
        QCOMPARE(s["name"], f["name"]);
        QCOMPARE(f["bp"].toString(), QString("e"));

        const Row gpuRow{f["pid"].toInteger(), f["tid"].toInteger()};
        const Slice* op = innermostAt(p, gpuRow, toNs(f["ts"]));
        QVERIFY2(op, "flow end outside every slice of its row");
        QVERIFY(op->cat == "kernel" || op->cat == "gpu_memcpy" || op->cat == "gpu_memset");
        QCOMPARE(op->start, toNs(f["ts"]));
        // The right stream row: the GPU's process, the row named after the op's stream.
        QCOMPARE(gpuRow.first, int64_t(kGpuPidBase) + op->args["device"].toInteger());
        const QString streamName = p.threadNames.at(gpuRow);
        const QRegularExpression streamRow(
            QString(R"re((^|\()Stream %1(\)| lane|$))re").arg(op->args["stream"].toInteger()));
        QVERIFY2(streamRow.match(streamName).hasMatch(), qPrintable(streamName));

        const Row cpuRow{s["pid"].toInteger(), s["tid"].toInteger()};
        const Slice* call = innermostAt(p, cpuRow, toNs(s["ts"]));
        QVERIFY2(call, "flow start outside every slice of its row");
        QVERIFY(call->cat == "cuda_runtime" || call->cat == "cuda_driver");
        QCOMPARE(call->args["correlation"].toInteger(), op->args["correlation"].toInteger());
        QVERIFY(call->start <= toNs(s["ts"]) && toNs(s["ts"]) <= call->end);
        QVERIFY2(call->start <= op->start, "a GPU op starts before its launch call");
    }

    // Timestamps: microseconds with exactly three decimals.
    static const QRegularExpression badTs(R"re("(ts|dur)":-?\d+(\.\d{0,2}|\.\d{4,})?[,}])re");
    QVERIFY2(!badTs.match(QString::fromUtf8(json)).hasMatch(),
             qPrintable(badTs.match(QString::fromUtf8(json)).captured()));
}

} // namespace

class TestChromeExport : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString path(const QString& name) const { return m_dir.filePath(name); }

private slots:
    void recordedTraces_data() {
        QTest::addColumn<QString>("file");
        QStringList files = ::recordedTraces();
        if (files.isEmpty())
            files << QString(WARPLINE_TEST_DATA "/(no *.warpline, *.sqlite here)");
        for (const QString& f : files)
            QTest::newRow(qPrintable(QFileInfo(f).fileName())) << f;
    }
    void recordedTraces() {
        QFETCH(QString, file);
        WARPLINE_REQUIRE_DATA(file);
        const TraceStore store = TraceLoader::load(file.toStdString());
        ChromeExportCounts counts;
        const QByteArray json = exportStore(store, &counts);
        checkExport(store, json);
        QCOMPARE(counts.apiCalls, store.apiCallCount());
        QCOMPARE(counts.gpuOps, store.kernelCount() + store.memcpyCount() + store.memsetCount());

        // The first kernel's times are exact to the nanosecond.
        const Parsed p = parseExport(json);
        for (const GpuTrack& t : store.gpuTracks()) {
            if (t.empty())
                continue;
            bool found = false;
            for (const auto& [row, list] : p.slices) {
                for (const Slice& s : list) {
                    found |= s.start == t.start(0) && s.end == t.end(0) &&
                             s.name == QString::fromStdString(store.text(t.name(0)));
                }
            }
            QVERIFY2(found, "first op of a GPU track not found with exact times");
        }
    }

    // Names with quotes, backslashes, control characters and invalid UTF-8 stay valid JSON and
    // come back as written (invalid bytes as U+FFFD).
    void escaping() {
        const QString file = path("names.warpline");
        const std::string nasty = "k<\"q\\uote\">\n\t\x01\x1f end";
        {
            TraceBuilder b(file);
            b.process("proc \"x\"");
            b.threadName(1, "thr\\ead\x02");
            b.runtime(0, 10, 1, 1, "cudaLaunchKernel_v7000");
            b.kernel({.start = 20, .end = 30, .correlation = 1, .name = nasty});
            b.nvtx(59, 0, 100, 1, "range \"a\"\r\n");
            b.nvtx(34, 5, -1, 1, "mark\x7f\xff");
        }
        const TraceStore store = TraceLoader::load(file.toStdString());
        const QByteArray json = exportStore(store);
        checkExport(store, json);
        const Parsed p = parseExport(json);
        QStringList names;
        for (const auto& [row, list] : p.slices) {
            for (const Slice& s : list)
                names << s.name;
        }
        QVERIFY2(names.contains(QString::fromStdString(nasty)), qPrintable(names.join('|')));
        QVERIFY(names.contains("range \"a\"\r\n"));
        QVERIFY(json.contains("mark\x7f\xef\xbf\xbd"));
        bool threadFound = false;
        for (const auto& [row, name] : p.threadNames)
            threadFound |= name.startsWith(QString::fromUtf8("thr\\ead\x02"));
        QVERIFY(threadFound);
    }

    // A generated trace with every kind of row: two threads, a driver call nested in a runtime
    // call, a graph launch with two kernels, a copy, a set, nested push/pop ranges, overlapping
    // start/end ranges, a mark, and a stream whose ops overlap (a second lane).
    void everyKindOfRow() {
        const QString file = path("rows.warpline");
        {
            TraceBuilder b(file);
            b.process("app");
            b.threadName(1, "main");
            b.threadName(2, "worker");
            b.nvtx(59, 0, 10000, 1, "outer");
            b.nvtx(59, 100, 5000, 1, "inner");
            b.nvtx(60, 200, 3000, 2, "async a");
            b.nvtx(60, 250, 4000, 2, "async b");
            b.nvtx(34, 300, -1, 1, "mark");
            b.runtime(1000, 1100, 1, 1, "cudaLaunchKernel_v7000");
            b.driver(1010, 1090, 1, 2, "cuLaunchKernel");
            b.kernel({.start = 1200, .end = 1300, .correlation = 1, .name = "k1"});
            b.runtime(1200, 1210, 1, 3, "cudaGraphLaunch_v10000");
            b.kernel({.start = 1400, .end = 1500, .correlation = 3, .name = "g1", .graphId = 5});
            b.kernel({.start = 1500, .end = 1600, .correlation = 3, .name = "g2", .graphId = 5});
            b.runtime(1300, 1320, 2, 4, "cudaMemcpyAsync_v3020");
            b.memcpy(1700, 1800, 9, 4, 4096, 1);
            b.runtime(1330, 1340, 2, 5, "cudaMemsetAsync_v3020");
            b.memset(1800, 1850, 9, 5, 4096);
            // Overlaps g2 on stream 7: goes to lane 1.
            b.runtime(1400, 1410, 1, 6, "cudaLaunchKernel_v7000");
            b.kernel({.start = 1550, .end = 1650, .correlation = 6, .name = "overlap"});
            // A kernel whose launch is not in the trace: no arrow.
            b.kernel({.start = 2000, .end = 2100, .correlation = 99, .name = "orphan"});
        }
        const TraceStore store = TraceLoader::load(file.toStdString());
        ChromeExportCounts counts;
        const QByteArray json = exportStore(store, &counts);
        checkExport(store, json);
        QCOMPARE(counts.flows, uint64_t(6));
        QCOMPARE(counts.nvtxMarks, uint64_t(1));
        QCOMPARE(counts.nvtxRanges, uint64_t(4));

        const Parsed p = parseExport(json);
        QStringList threadNames;
        for (const auto& [row, name] : p.threadNames)
            threadNames << name;
        // Push/pop depths share one row; each start/end lane has its own.
        QCOMPARE(threadNames.filter(QRegularExpression("^NVTX main 1$")).size(), 1);
        QCOMPARE(threadNames.filter("start/end lane").size(), 2);
        QCOMPARE(threadNames.filter("marks").size(), 1);
        QVERIFY(threadNames.contains("Stream 7"));
        QVERIFY(threadNames.contains("Stream 7 lane 1"));
        QVERIFY(threadNames.contains("Stream 9"));
        // The driver call nests in the runtime call on the thread's own row (its OS tid).
        const std::vector<Slice>& main = p.slices.at({TraceBuilder::kPid, 1});
        QCOMPARE(main.size(), size_t(4));
        QCOMPARE(main[1].name, QString("cuLaunchKernel"));
        QCOMPARE(main[1].cat, QString("cuda_driver"));
        // Kernel args as Kineto names them.
        const QJsonObject k1 =
            std::find_if(p.slices.at({kGpuPidBase, 7}).begin(), p.slices.at({kGpuPidBase, 7}).end(),
                         [](const Slice& s) { return s.name == "k1"; })
                ->args;
        QCOMPARE(k1["correlation"].toInteger(), 1);
        QCOMPARE(k1["grid"].toArray(), QJsonArray({1, 1, 1}));
        QCOMPARE(k1["block"].toArray(), QJsonArray({128, 1, 1}));
        QCOMPARE(k1["registers per thread"].toInteger(), 32);
        QCOMPARE(p.processNames.at(TraceBuilder::kPid), QString("app 4242"));
        QVERIFY(p.processNames.at(kGpuPidBase).startsWith("GPU 0"));

        // Queue depth counters follow the run-ahead analysis step by step.
        const RunAheadAnalysis ra = analyzeRunAhead(store);
        size_t steps = 0;
        for (size_t s = 0; s < ra.streams.size(); ++s)
            steps += ra.depthSteps(s).size();
        QCOMPARE(p.counters.size(), steps);
        QCOMPARE(counts.counters, uint64_t(steps));
        int maxDepth = 0;
        for (const QJsonObject& c : p.counters) {
            QVERIFY(c["name"].toString().endsWith(" queue"));
            maxDepth = std::max(maxDepth, c["args"]["depth"].toInt());
        }
        QCOMPARE(maxDepth, ra.maxDepth);
        QVERIFY(maxDepth >= 1);
    }

    void optionsAndBase() {
        const QString file = path("base.warpline");
        {
            TraceBuilder b(file);
            b.runtime(5000, 5100, 1, 1, "cudaLaunchKernel_v7000");
            b.kernel({.start = 6001, .end = 7002, .correlation = 1});
        }
        const TraceStore store = TraceLoader::load(file.toStdString());
        ChromeExportOptions options;
        options.flows = false;
        options.queueDepth = false;
        options.base = 5000;
        const QByteArray json = exportStore(store, nullptr, options);
        QVERIFY2(json.contains("\"ts\":0.000,\"dur\":0.100"), json.constData());
        QVERIFY2(json.contains("\"ts\":1.001,\"dur\":1.001"), json.constData());
        const Parsed p = parseExport(json);
        QVERIFY(p.flowStarts.empty());
        QVERIFY(p.counters.empty());
    }

    void progressCancels() {
        const QString file = path("many.warpline");
        {
            TraceBuilder b(file);
            for (int i = 0; i < 300000; ++i)
                b.kernel({.start = i * 10, .end = i * 10 + 5, .correlation = i + 1});
        }
        const TraceStore store = TraceLoader::load(file.toStdString());
        ChromeExportOptions options;
        int calls = 0;
        options.progress = [&](double fraction) {
            ++calls;
            return fraction < 0.5;
        };
        const QString out = path("cancelled.json");
        QVERIFY_THROWS_EXCEPTION(ExportCancelled,
                                 writeChromeTraceFile(out.toStdString(), store, options));
        QVERIFY(calls >= 1);
        QVERIFY2(!QFile::exists(out), "a cancelled export leaves no partial file");
        QCOMPARE(QDir(QFileInfo(out).path()).entryList({"*.part"}, QDir::Files | QDir::Hidden),
                 QStringList());
        QVERIFY_THROWS_EXCEPTION(std::runtime_error,
                                 writeChromeTraceFile("/proc/no/such/dir/x.json", store));
    }

    void cli() {
#ifndef WARPLINE_STATS
        QSKIP("warpline-stats not built");
#else
        const QString file = path("cli.warpline");
        {
            TraceBuilder b(file);
            b.runtime(0, 10, 1, 1, "cudaLaunchKernel_v7000");
            b.kernel({.start = 20, .end = 30, .correlation = 1, .name = "k"});
        }
        const QString out = path("cli.json");
        QProcess run;
        run.start(WARPLINE_STATS, {file, "--export", "chrome", "-o", out});
        QVERIFY(run.waitForFinished(60000));
        QCOMPARE(run.exitCode(), 0);
        QFile f(out);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const TraceStore store = TraceLoader::load(file.toStdString());
        checkExport(store, f.readAll());

        run.start(WARPLINE_STATS, {file, "--export", "svg"});
        QVERIFY(run.waitForFinished(60000));
        QCOMPARE(run.exitCode(), 2);
        QVERIFY(run.readAllStandardError().startsWith("warpline-stats: unknown export format"));
        run.start(WARPLINE_STATS, {file, "--export", "chrome", "-o", out});
        QVERIFY(run.waitForFinished(60000));
        QCOMPARE(run.exitCode(), 2); // exists, no --force
#endif
    }
};

QTEST_GUILESS_MAIN(TestChromeExport)
#include "tst_chromeexport.moc"
