// PyTorch profiler traces (Kineto Chrome trace JSON) opened as Warpline traces
// (model/loading/kinetoimport.h, model/loading/traceopener.h): real public traces with the old and
// the new category names give the kernel, API, copy, sync and range counts and times that an
// independent parse of the same JSON (QJsonDocument) gives, with their correlations joined; a
// generated file checks the corner cases (escapes, sub-microsecond decimals, string ids, gzip,
// array format); Warpline's own Chrome export reads back with the same reports; errors say what is
// wrong.

#include "chromeexport.h"
#include "kinetoimport.h"
#include "reportregistry.h"
#include "sourcelines.h"
#include "summaries.h"
#include "syncstalls.h"
#include "tablewriter.h"
#include "testdata.h"
#include "traceerror.h"
#include "traceloader.h"
#include "traceopener.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <map>
#include <set>
#include <sqlite3.h>
#include <sstream>
#include <sys/resource.h>
#include <zlib.h>

using namespace warpline::model;

namespace {

QString dataDir() {
    return QString::fromUtf8(WARPLINE_TEST_DATA) + "/pytorch";
}

QByteArray readMaybeGzip(const QString& path) {
    gzFile gz = gzopen(path.toLocal8Bit().constData(), "rb"); // reads plain files too
    if (!gz)
        qFatal("cannot open %s", qPrintable(path));
    QByteArray out;
    char buffer[1 << 16];
    int n = 0;
    while ((n = gzread(gz, buffer, sizeof buffer)) > 0)
        out.append(buffer, n);
    gzclose(gz);
    return out;
}

void writeGzip(const QString& path, const QByteArray& data) {
    gzFile gz = gzopen(path.toLocal8Bit().constData(), "wb");
    QVERIFY(gz);
    QCOMPARE(gzwrite(gz, data.constData(), static_cast<unsigned>(data.size())), int(data.size()));
    gzclose(gz);
}

void writeFile(const QString& path, const QByteArray& data) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(data);
}

// What deflate writes for `data` with `flush` (Z_FULL_FLUSH, Z_FINISH).
QByteArray deflated(z_stream& z, const QByteArray& data, int flush) {
    QByteArray out;
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.constData()));
    z.avail_in = static_cast<uInt>(data.size());
    char buffer[1 << 16];
    do {
        z.next_out = reinterpret_cast<Bytef*>(buffer);
        z.avail_out = sizeof buffer;
        deflate(&z, flush);
        out.append(buffer, qsizetype(sizeof buffer - z.avail_out));
    } while (z.avail_out == 0);
    return out;
}

// `data` as one gzip member (zlib level 9).
QByteArray gzipped(const QByteArray& data) {
    z_stream z{};
    if (deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY) != Z_OK)
        qFatal("deflateInit2");
    const QByteArray out = deflated(z, data, Z_FINISH);
    deflateEnd(&z);
    return out;
}

// Writes `prefix`, then `unit` `count` times, then `suffix`: gzipped (level 9) when the name
// ends in .gz, in milliseconds whatever the size: the unit is deflated once, ending in a full
// flush so that it refers to nothing before it, and those bytes are written `count` times; the
// trailer's CRC-32 is combined from the unit's. A bomb of 4.5 GiB of spaces is 4.6 MB.
void writeRepeated(const QString& path, const QByteArray& prefix, const QByteArray& unit,
                   qint64 count, const QByteArray& suffix) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    if (!path.endsWith(".gz")) {
        f.write(prefix);
        for (qint64 i = 0; i < count; ++i)
            f.write(unit);
        f.write(suffix);
        return;
    }
    z_stream z{};
    QCOMPARE(deflateInit2(&z, 9, Z_DEFLATED, -MAX_WBITS, 9, Z_DEFAULT_STRATEGY), Z_OK);
    const char header[10] = {0x1f, char(0x8b), 8, 0, 0, 0, 0, 0, 2, 3}; // no name, Unix
    f.write(header, sizeof header);
    const auto crcOf = [](uLong crc, const QByteArray& data) {
        return crc32(crc, reinterpret_cast<const Bytef*>(data.constData()), uInt(data.size()));
    };
    f.write(deflated(z, prefix, Z_FULL_FLUSH));
    uLong crc = crcOf(0, prefix);
    const QByteArray block = deflated(z, unit, Z_FULL_FLUSH);
    const uLong unitCrc = crcOf(0, unit);
    for (qint64 i = 0; i < count; ++i) {
        f.write(block);
        crc = crc32_combine(crc, unitCrc, z_off_t(unit.size()));
    }
    f.write(deflated(z, suffix, Z_FINISH));
    crc = crcOf(crc, suffix);
    deflateEnd(&z);
    const quint64 size =
        quint64(prefix.size()) + quint64(unit.size()) * quint64(count) + quint64(suffix.size());
    char trailer[8];
    for (int i = 0; i < 4; ++i) {
        trailer[i] = char((crc >> (8 * i)) & 0xff);
        trailer[4 + i] = char((size >> (8 * i)) & 0xff);
    }
    f.write(trailer, sizeof trailer);
}

// A launch and its kernel: what some bombs wrap in filler, so that they are valid traces.
const QByteArray kLaunchAndKernel =
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, "
    "\"tid\": 1, \"ts\": 10, \"dur\": 5, \"args\": {\"correlation\": 1}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 20, "
    "\"dur\": 3, \"args\": {\"correlation\": 1, \"stream\": 7}}";

int64_t ns(const QJsonValue& micros) {
    return static_cast<int64_t>(std::llround(micros.toDouble() * 1000.0));
}

struct Stats {
    uint64_t count = 0;
    int64_t total = 0;
    friend bool operator==(const Stats&, const Stats&) = default;
};

// What the JSON holds, counted without simdjson or the importer.
struct Expected {
    std::map<QString, Stats> kernels, api;
    uint64_t memcpys = 0, memsets = 0, syncs = 0, ranges = 0, launched = 0;
    uint64_t memBytes = 0;
};

Expected expectedFrom(const QByteArray& json) {
    const QJsonDocument doc = QJsonDocument::fromJson(json);
    const QJsonArray events = doc.isArray() ? doc.array() : doc.object()["traceEvents"].toArray();
    const auto is = [](const QJsonObject& e, std::initializer_list<const char*> cats) {
        if (e["ph"].toString() != "X")
            return false;
        for (const char* c : cats) {
            if (e["cat"].toString() == c)
                return true;
        }
        return false;
    };
    std::map<int64_t, int> apiByPid;
    for (const QJsonValue& v : events) {
        const QJsonObject e = v.toObject();
        if (is(e, {"cuda_runtime", "Runtime", "cuda_driver", "Driver"}))
            ++apiByPid[e["pid"].toVariant().toLongLong()];
    }
    int64_t pid = 0;
    int best = 0;
    for (const auto& [p, n] : apiByPid) {
        if (n > best)
            std::tie(pid, best) = std::pair{p, n};
    }
    Expected x;
    std::set<int64_t> launchCorrelations;
    std::vector<int64_t> gpuCorrelations;
    for (const QJsonValue& v : events) {
        const QJsonObject e = v.toObject();
        const QJsonObject args = e["args"].toObject();
        if (is(e, {"kernel", "Kernel"})) {
            Stats& s = x.kernels[e["name"].toString()];
            ++s.count;
            s.total += ns(e["dur"]);
        } else if (is(e, {"cuda_runtime", "Runtime", "cuda_driver", "Driver"})) {
            Stats& s = x.api[e["name"].toString()];
            ++s.count;
            s.total += ns(e["dur"]);
            if (e["pid"].toVariant().toLongLong() == pid)
                launchCorrelations.insert(args["correlation"].toInteger());
        } else if (is(e, {"gpu_memcpy", "Memcpy"})) {
            ++x.memcpys;
            x.memBytes += args["bytes"].toInteger();
        } else if (is(e, {"gpu_memset", "Memset"})) {
            ++x.memsets;
            x.memBytes += args["bytes"].toInteger();
        } else if (is(e, {"cuda_sync"})) {
            ++x.syncs;
        } else if (is(e, {"user_annotation", "cpu_op", "Operator", "gpu_user_annotation"})) {
            ++x.ranges;
        }
        if (is(e, {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}))
            gpuCorrelations.push_back(args["correlation"].toInteger());
    }
    for (const int64_t c : gpuCorrelations)
        x.launched += launchCorrelations.count(c);
    return x;
}

size_t nvtxRanges(const TraceStore& store) {
    size_t n = 0;
    for (const NvtxTrack& t : store.nvtxTracks())
        n += t.style() == NvtxStyle::Mark ? 0 : t.size();
    return n;
}

void checkAgainstJson(const TraceStore& store, const Expected& x) {
    std::map<QString, Stats> kernels;
    for (const KernelSummaryRow& r : kernelSummary(store))
        kernels[QString::fromStdString(store.text(r.name))] = {r.stats.count, r.stats.total};
    QCOMPARE(kernels.size(), x.kernels.size());
    for (const auto& [name, stats] : x.kernels) {
        QVERIFY2(kernels.count(name), qPrintable("missing kernel " + name));
        QCOMPARE(kernels.at(name).count, stats.count);
        QCOMPARE(kernels.at(name).total, stats.total);
    }
    std::map<QString, Stats> api;
    for (const ApiSummaryRow& r : apiSummary(store))
        api[QString::fromStdString(store.text(r.name))] = {r.stats.count, r.stats.total};
    QCOMPARE(api.size(), x.api.size());
    for (const auto& [name, stats] : x.api) {
        QVERIFY2(api.count(name), qPrintable("missing API call " + name));
        QCOMPARE(api.at(name).count, stats.count);
        QCOMPARE(api.at(name).total, stats.total);
    }
    QCOMPARE(store.memcpyCount(), x.memcpys);
    QCOMPARE(store.memsetCount(), x.memsets);
    QCOMPARE(store.syncs().size(), x.syncs);
    QCOMPARE(nvtxRanges(store), x.ranges);
    uint64_t bytes = 0;
    for (const MemOpSummaryRow& r : memOpSummary(store))
        bytes += r.size.total;
    QCOMPARE(bytes, x.memBytes);
    // Correlations: every GPU op whose launch call is in the trace's process is joined to it.
    uint64_t launched = 0;
    for (const GpuTrack& t : store.gpuTracks()) {
        for (size_t i = 0; i < t.size(); ++i)
            launched += t.launch(i).valid();
    }
    QCOMPARE(launched, x.launched);
}

std::string csv(const Table& t) {
    std::ostringstream out;
    writeCsv(out, t);
    return out.str();
}

// The table without one column.
Table without(const Table& t, const std::string& name) {
    const int drop = t.columnIndex(name);
    std::vector<Column> columns = t.columns();
    if (drop < 0)
        return t;
    columns.erase(columns.begin() + drop);
    Table out(columns);
    for (std::vector<Cell> row : t.rows()) {
        row.erase(row.begin() + drop);
        out.addRow(std::move(row));
    }
    return out;
}

} // namespace

class TestKinetoImport : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString path(const QString& name) const { return m_dir.filePath(name); }

private slots:
    void realTraces_data() {
        QTest::addColumn<QString>("file");
        for (const QString& f :
             warpline::testdata::committedFiles(dataDir(), {"*.json", "*.json.gz"}))
            QTest::newRow(qPrintable(QFileInfo(f).fileName())) << f;
    }
    void realTraces() {
        QFETCH(QString, file);
        WARPLINE_REQUIRE_DATA(file);
        QVERIFY(KinetoImport::isKinetoTrace(file.toStdString()));
        const Expected x = expectedFrom(readMaybeGzip(file));
        QVERIFY2(!x.kernels.empty() && !x.api.empty(), "a test trace without kernels or calls");
        const TraceStore store = TraceOpener::open(file.toStdString());
        checkAgainstJson(store, x);
        QVERIFY(x.launched > 0);
        QCOMPARE(store.metaValue("source_format"), std::string("pytorch-profiler"));
        // Reports that need correlations and threads run and find something.
        QVERIFY(!kernelSummary(store).empty());
        QVERIFY(!store.threads().empty());
    }

    // The old names (2021: Operator, Runtime, Kernel, Memcpy; "stream 7" tids; computeProperties)
    // and the new ones (kernel, cuda_runtime, gpu_memcpy, gpu_memset, cuda_sync) land alike.
    void oldAndNewNames() {
        const QString oldFile = dataDir() + "/kineto-v100-old-names.pt.trace.json";
        const QString newFile = dataDir() + "/hta-simple-add.pt.trace.json.gz";
        WARPLINE_REQUIRE_DATA(oldFile);
        WARPLINE_REQUIRE_DATA(newFile);
        const TraceStore before = TraceOpener::open(oldFile.toStdString());
        const TraceStore after = TraceOpener::open(newFile.toStdString());
        for (const TraceStore* s : {&before, &after}) {
            QVERIFY(s->kernelCount() > 0);
            QVERIFY(s->memcpyCount() > 0);
            QVERIFY(s->apiCallCount() > 0);
            QVERIFY(nvtxRanges(*s) > 0);
            QVERIFY(!s->devices().empty());
            QVERIFY(s->strings().find("cpu_op") != kNoName); // ops in their NVTX domain
        }
        QCOMPARE(before.text(before.devices().front().name), std::string("Tesla V100-DGXS-32GB"));
        QCOMPARE(before.devices().front().computeMajor, 7u);
        QCOMPARE(before.devices().front().smCount, 80u);
        QCOMPARE(after.devices().size(), size_t(8));
        QCOMPARE(after.devices().front().computeMajor, 8u);
        QVERIFY(after.memsetCount() > 0);
        // The stream ids come from args (old files name the row "stream 7").
        for (const StreamInfo& s : before.streams())
            QCOMPARE(s.streamId, 7u);
        QSet<uint32_t> streams;
        for (const StreamInfo& s : after.streams())
            streams.insert(s.streamId);
        QCOMPARE(streams, QSet<uint32_t>({7, 20}));
        // Copies keep their direction.
        const auto mem = memOpSummary(after);
        QVERIFY(std::any_of(mem.begin(), mem.end(), [&](const MemOpSummaryRow& r) {
            return after.text(r.operation) == "[CUDA memcpy Host-to-Device]";
        }));
    }

    // with_stack=True: the python_function events enclosing each CUDA call on its thread become
    // its Python stack (CUDA_CALLCHAINS), as warpline-record --python-stacks records them; a
    // backward op's calls, on the autograd thread, take the stack of the forward op it is the
    // gradient of ("fwdbwd" flows).
    void pythonFunctionsBecomeStacks() {
        const QString file = dataDir() + "/torch-gpt-with-stack.pt.trace.json.gz";
        WARPLINE_REQUIRE_DATA(file);
        const TraceStore store = TraceOpener::open(file.toStdString());
        const Callchains& chains = store.callchains();
        QVERIFY(chains.chainCount() > 10);
        size_t forward = 0, backward = 0;
        for (const GpuTrack& t : store.gpuTracks())
            for (size_t i = 0; i < t.size(); ++i) {
                if (store.text(t.name(i)).find("nvjet") == std::string::npos ||
                    !t.launch(i).valid())
                    continue;
                const EventRef l = t.launch(i);
                const auto frames = store.callStack(l);
                QVERIFY(!frames.empty());
                // Innermost: the built-in PyTorch called (forward), or the backward op and then
                // that built-in; outside it, linear.py's forward and torch_gpt.py's (Kineto names
                // a function by its first line).
                size_t linear = 0;
                if (store.text(frames[0].function) != "<built-in function linear>") {
                    const std::string op = store.text(frames[0].function);
                    QVERIFY2(op == "AddmmBackward0" || op == "MmBackward0", op.c_str());
                    QVERIFY(store.text(frames[0].file).empty());
                    linear = 1;
                    ++backward;
                } else {
                    ++forward;
                }
                QVERIFY(frames.size() > linear + 2);
                QCOMPARE(store.text(frames[linear].function),
                         std::string("<built-in function linear>"));
                QVERIFY(std::any_of(frames.begin(), frames.end(), [&](const CallFrame& f) {
                    return store.text(f.file).find("torch_gpt.py") != std::string::npos &&
                           store.text(f.function) == "forward" && f.line > 0;
                }));
            }
        QVERIFY(forward >= 80);
        QVERIFY(backward >= 2 * forward); // two GEMMs a Linear: the input's and the weight's
        // Every kernel has a stack: the backward ones through their forward op.
        const SourceReport r = sourceReport(store);
        QCOMPARE(r.kernelsWithStack, r.kernels);
        QVERIFY(std::none_of(r.lines.begin(), r.lines.end(),
                             [](const SourceRow& row) { return row.withoutStack; }));
        QCOMPARE(sourceLocation(store, r.lines.front().file, r.lines.front().line).substr(0, 13),
                 std::string("torch_gpt.py:"));
        const auto function = [&](const std::string& name) {
            return std::find_if(r.functions.begin(), r.functions.end(),
                                [&](const SourceRow& f) { return store.text(f.function) == name; });
        };
        QVERIFY(function("AddmmBackward0") != r.functions.end());
        QVERIFY(function("AddmmBackward0")->self > 0);
    }

    // The fwdbwd flows, made by hand: the flow ends at MmBackward0, inside the engine's
    // evaluate_function op, whose aten::sum after it belongs to the same backward op; a call
    // outside any backward op, one in an op whose flow has no start or an id that is not a
    // number, and one on a thread without cpu_ops keep no stack.
    void backwardTakesTheForwardStack() {
        const QString file = path("fwdbwd.pt.trace.json");
        const auto x = [](const char* cat, const char* name, int tid, int ts, int dur,
                          int correlation = 0) {
            return QByteArray("{\"ph\": \"X\", \"cat\": \"") + cat + "\", \"name\": \"" + name +
                   "\", \"pid\": 1, \"tid\": " + QByteArray::number(tid) +
                   ", \"ts\": " + QByteArray::number(ts) + ", \"dur\": " + QByteArray::number(dur) +
                   ", \"args\": {\"correlation\": " + QByteArray::number(correlation) + "}},\n";
        };
        const auto flow = [](const char* phase, int id, int tid, int ts) {
            return QByteArray("{\"ph\": \"") + phase + "\", \"cat\": \"fwdbwd\", \"name\": " +
                   "\"fwdbwd\", \"id\": " + QByteArray::number(id) +
                   ", \"pid\": 1, \"tid\": " + QByteArray::number(tid) +
                   ", \"ts\": " + QByteArray::number(ts) + ", \"bp\": \"e\"},\n";
        };
        QByteArray events = "{\"traceEvents\": [\n";
        // Forward, thread 1: train.py(10) calls linear, whose aten::mm is flow 7's start.
        events += x("python_function", "train.py(10): step", 1, 100, 100);
        events += x("python_function", "<built-in function linear>", 1, 110, 50);
        events += x("cpu_op", "aten::mm", 1, 120, 20);
        events += flow("s", 7, 1, 120);
        events += x("cuda_runtime", "cudaLaunchKernel", 1, 125, 5, 1);
        // Backward, thread 2: evaluate_function around MmBackward0 (flow 7's end) and a sum.
        events += x("cpu_op", "autograd::engine::evaluate_function: MmBackward0", 2, 300, 100);
        events += x("cpu_op", "MmBackward0", 2, 301, 50);
        events += flow("f", 7, 2, 301);
        events += x("cuda_runtime", "cudaLaunchKernel", 2, 310, 5, 2);
        events += x("cpu_op", "aten::sum", 2, 360, 20);
        events += x("cuda_runtime", "cudaLaunchKernel", 2, 365, 5, 3);
        // Outside any backward op, and in one whose flow (8) never started.
        events += x("cuda_runtime", "cudaLaunchKernel", 2, 500, 5, 4);
        events += x("cpu_op", "AddBackward0", 2, 600, 50);
        events += flow("f", 8, 2, 600);
        events += x("cuda_runtime", "cudaLaunchKernel", 2, 610, 5, 5);
        // Hostile: a flow whose id is not a number, its end in a backward op; a flow ending on a
        // thread with no cpu_op.
        events += QByteArray("{\"ph\": \"s\", \"cat\": \"fwdbwd\", \"name\": \"fwdbwd\", \"id\": "
                             "\"x\", \"pid\": 1, \"tid\": 1, \"ts\": 130},\n");
        events += x("cpu_op", "BogusBackward0", 2, 700, 50);
        events += QByteArray("{\"ph\": \"f\", \"cat\": \"fwdbwd\", \"name\": \"fwdbwd\", \"id\": "
                             "\"x\", \"pid\": 1, \"tid\": 2, \"ts\": 700, \"bp\": \"e\"},\n");
        events += x("cuda_runtime", "cudaLaunchKernel", 2, 710, 5, 6);
        events += flow("f", 7, 3, 800);
        events += x("cuda_runtime", "cudaLaunchKernel", 3, 805, 5, 7);
        for (int k = 1; k <= 7; ++k)
            events += x("kernel", "k", 7, 1000 + 100 * k, 10, k);
        events.chop(2);
        events += "]}";
        writeFile(file, events);
        const KinetoImport::Result result =
            KinetoImport::convert(file.toStdString(), path("fwdbwd.warpline").toStdString());
        QCOMPARE(result.backwardCalls, uint64_t(2));
        const TraceStore store = TraceLoader::load(path("fwdbwd.warpline").toStdString());
        std::map<uint32_t, std::vector<std::string>> stackOf; // correlation id -> functions
        for (uint32_t t = 0; t < store.apiTracks().size(); ++t)
            for (uint32_t i = 0; i < store.apiTracks()[t].size(); ++i)
                for (const CallFrame& f : store.callStack(EventRef{t, i}))
                    stackOf[store.apiTracks()[t].correlationId(i)].push_back(
                        store.text(f.function));
        using Names = std::vector<std::string>;
        QCOMPARE(stackOf[1], (Names{"<built-in function linear>", "step"}));
        QCOMPARE(stackOf[2], (Names{"MmBackward0", "<built-in function linear>", "step"}));
        QCOMPARE(stackOf[3], stackOf[2]);
        QVERIFY(stackOf[4].empty());
        QVERIFY(stackOf[5].empty());
        QVERIFY(stackOf[6].empty());
        QVERIFY(stackOf[7].empty());
    }

    // cuda_sync events become synchronizations joined to their runtime call, so the sync-stall
    // report works on PyTorch traces.
    void synchronizations() {
        const QString file = dataDir() + "/hta-event-sync.pt.trace.json.gz";
        WARPLINE_REQUIRE_DATA(file);
        const TraceStore store = TraceOpener::open(file.toStdString());
        QVERIFY(!store.syncs().empty());
        std::set<int> types;
        for (const SyncEvent& s : store.syncs()) {
            QVERIFY2(s.apiCall.valid(), "sync not joined to its call");
            types.insert(s.syncType);
            const ApiTrack& t = store.apiTracks()[s.apiCall.track];
            const std::string& call = store.text(t.name(s.apiCall.index));
            if (s.syncType == 3)
                QCOMPARE(call, std::string("cudaStreamSynchronize"));
            if (s.syncType == 4)
                QCOMPARE(call, std::string("cudaDeviceSynchronize"));
        }
        QCOMPARE(types, (std::set<int>{1, 3, 4}));
        const Table stalls = ReportRegistry::find("syncs")->run(store);
        QVERIFY(stalls.rowCount() >= 3);
    }

    // Fractional timestamps relative to baseTimeNanoseconds, a driver launch; saved as a
    // Warpline trace with its wall clock.
    void triton() {
        const QString file = dataDir() + "/hta-triton.pt.trace.json.gz";
        WARPLINE_REQUIRE_DATA(file);
        const QString out = path("triton.warpline");
        const KinetoImport::Result r = KinetoImport::convert(file.toStdString(), out.toStdString());
        QCOMPARE(r.kernels, uint64_t(1));
        const TraceStore store = TraceLoader::load(out.toStdString());
        QCOMPARE(store.kernelCount(), size_t(1));
        const GpuTrack& gpu = store.gpuTracks().front();
        QCOMPARE(gpu.duration(0), int64_t(1760)); // "dur": 1.76
        const EventRef launch = gpu.launch(0);
        QVERIFY(launch.valid());
        const ApiTrack& api = store.apiTracks()[launch.track];
        QCOMPARE(store.text(api.name(launch.index)), std::string("cuLaunchKernel"));
        QCOMPARE(api.domain(launch.index), ApiDomain::Driver);
        // Kernel start - launch start = 2413669097444.592 - 2413669097399.166 us, exactly.
        QCOMPARE(gpu.start(0) - api.start(launch.index), int64_t(45426));
        sqlite3* db = nullptr;
        QCOMPARE(sqlite3_open_v2(out.toUtf8().constData(), &db, SQLITE_OPEN_READONLY, nullptr),
                 SQLITE_OK);
        sqlite3_stmt* st = nullptr;
        QCOMPARE(sqlite3_prepare_v2(db, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME", -1,
                                    &st, nullptr),
                 SQLITE_OK);
        QCOMPARE(sqlite3_step(st), SQLITE_ROW);
        const int64_t epoch = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        // baseTimeNanoseconds + the earliest imported event (ProfilerStep#1, ts 2413669096090.1).
        QCOMPARE(epoch, int64_t(1727743122000000000) + int64_t(2413669096090100));
    }

    // Corner cases, in a file written here with Kineto's structure.
    void generated_data() {
        QTest::addColumn<bool>("gzip");
        QTest::addColumn<bool>("arrayFormat");
        QTest::newRow("json") << false << false;
        QTest::newRow("json.gz") << true << false;
        QTest::newRow("array format") << false << true;
    }
    void generated() {
        QFETCH(bool, gzip);
        QFETCH(bool, arrayFormat);
        const QByteArray events =
            "[\n"
            "  {\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 77, \"tid\": 0, \"args\": "
            "{\"name\": \"train.py\"}},\n"
            "  {\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 77, \"tid\": 78, \"args\": "
            "{\"name\": \"main \\\"loop\\\"\"}},\n"
            "  {\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"step \\\"1\\\" "
            "\\u00e9\\n\", \"pid\": 77, \"tid\": \"78\",\n"
            "   \"ts\": 100, \"dur\": 50.0005},\n"
            "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 77, \"tid\": "
            "78, \"ts\": 101.5,\n"
            "   \"dur\": 20, \"args\": {\"External id\": 3}},\n"
            "  {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": "
            "77, \"tid\": 78,\n"
            "   \"ts\": 102.0001, \"dur\": 4.9999, \"args\": {\"correlation\": 9, \"cbid\": "
            "211}},\n"
            "  {\"ph\": \"s\", \"id\": 9, \"pid\": 77, \"tid\": 78, \"ts\": 102.0001, \"cat\": "
            "\"ac2g\", \"name\": \"ac2g\"},\n"
            "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm<\\\"tile\\\">\", \"pid\": 0, "
            "\"tid\": 13, \"ts\": 110.123456,\n"
            "   \"dur\": 7.5, \"args\": {\"device\": 0, \"context\": 1, \"stream\": 13, "
            "\"correlation\": 9,\n"
            "   \"grid\": [4, 2, 1], \"block\": [256, 1, 1], \"registers per thread\": 64, "
            "\"shared memory\": 1024}},\n"
            "  {\"ph\": \"f\", \"id\": 9, \"pid\": 0, \"tid\": 13, \"ts\": 110.123456, \"cat\": "
            "\"ac2g\", \"name\": \"ac2g\",\n"
            "   \"bp\": \"e\"},\n"
            "  {\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": \"step 1\", \"pid\": 0, "
            "\"tid\": 13, \"ts\": 110,\n"
            "   \"dur\": 10, \"args\": {\"device\": 0, \"stream\": 13}},\n"
            "  {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaMemcpyAsync\", \"pid\": "
            "77, \"tid\": 78,\n"
            "   \"ts\": 130, \"dur\": 3, \"args\": {\"correlation\": 10}},\n"
            "  {\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy DtoH (Device -> "
            "Pinned)\",\n"
            "                         \"pid\" : 0, \"tid\" : 13, \"ts\" : 140, \"dur\" : 2, "
            "\"args\" : {\n"
            "            \"device\" : 0, \"context\" : 1, \"stream\" : 13, \"correlation\" : 10, "
            "\"bytes\" : 4096\n"
            "        }\n"
            "    },\n"
            "  {\"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"train.py(10): step\", "
            "\"pid\": 77, \"tid\": 78,\n"
            "   \"ts\": 99, \"dur\": 60},\n"
            "  {\"ph\": \"i\", \"name\": \"Iteration Start\", \"s\": \"g\", \"pid\": \"Traces\", "
            "\"tid\": \"x\", \"ts\": 99},\n"
            "  {\"ph\": \"X\", \"cat\": \"Trace\", \"name\": \"PyTorch Profiler (0)\", \"pid\": "
            "\"Spans\", \"tid\": \"x\",\n"
            "   \"ts\": 90, \"dur\": 100}\n"
            "]";
        const QByteArray json =
            arrayFormat ? events
                        : QByteArray("{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0,\n"
                                     "                            \"name\": \"NVIDIA H100\", "
                                     "\"computeMajor\": 9, \"computeMinor\": 0,\n"
                                     "                            \"numSms\": 132, "
                                     "\"totalGlobalMem\": 85000000000}],\n"
                                     "                            \"traceEvents\": ") +
                              events + "}";
        const QString file = path(gzip ? "gen.pt.trace.json.gz" : "gen.pt.trace.json");
        if (gzip)
            writeGzip(file, json);
        else
            writeFile(file, json);
        QVERIFY(KinetoImport::isKinetoTrace(file.toStdString()));
        const QString out = path("gen.warpline");
        const KinetoImport::Result r = KinetoImport::convert(file.toStdString(), out.toStdString());
        QCOMPARE(r.pid, 77u);
        QCOMPARE(r.kernels, uint64_t(1));
        QCOMPARE(r.memcpys, uint64_t(1));
        QCOMPARE(r.apiCalls, uint64_t(2));
        QCOMPARE(r.ranges, uint64_t(3));
        QCOMPARE(r.skipped,
                 uint64_t(4)); // two flows, the instant, "Trace" (python_function: stacks)

        const TraceStore store = TraceLoader::load(out.toStdString());
        checkAgainstJson(store, expectedFrom(json));
        // Times: ns relative to the earliest imported event (the annotation at 100 us); the
        // fourth decimal rounds ("50.0005" -> 50001 ns).
        const GpuTrack& gpu = store.gpuTracks().front();
        QCOMPARE(store.text(gpu.name(0)), std::string("gemm<\"tile\">"));
        QCOMPARE(gpu.start(0), int64_t(10123));
        QCOMPARE(gpu.duration(0), int64_t(7500));
        const KernelConfig& config = store.kernelConfigs()[gpu.detail(0)];
        QCOMPARE(config.gridX, 4);
        QCOMPARE(config.gridY, 2);
        QCOMPARE(config.blockX, 256);
        QCOMPARE(config.registersPerThread, 64);
        const EventRef launch = gpu.launch(0);
        QVERIFY(launch.valid());
        QCOMPARE(store.apiTracks()[launch.track].start(launch.index), int64_t(2000));
        QCOMPARE(store.apiTracks()[launch.track].duration(launch.index), int64_t(5000));
        std::set<std::string> ranges;
        for (const NvtxTrack& t : store.nvtxTracks()) {
            for (size_t i = 0; i < t.size(); ++i) {
                ranges.insert(store.text(t.name(i)));
                if (store.text(t.name(i)) == "step \"1\" \u00e9\n")
                    QCOMPARE(t.duration(i), int64_t(50001));
            }
        }
        QCOMPARE(ranges, (std::set<std::string>{"step \"1\" \u00e9\n", "aten::mm", "step 1"}));
        QStringList threadNames;
        for (const ThreadInfo& t : store.threads())
            threadNames << QString::fromStdString(store.text(t.name));
        QVERIFY2(threadNames.contains("main \"loop\""), qPrintable(threadNames.join('|')));
        QVERIFY(threadNames.contains("GPU annotations, stream 13"));
        QCOMPARE(store.text(store.processes().front().name), std::string("train.py"));
        if (!arrayFormat) {
            QCOMPARE(store.text(store.devices().front().name), std::string("NVIDIA H100"));
            QCOMPARE(store.devices().front().smCount, 132u);
        }
        const auto mem = memOpSummary(store);
        QCOMPARE(store.text(mem.front().operation), std::string("[CUDA memcpy Device-to-Host]"));
    }

    // Warpline's Chrome export reads back: the same kernel, API, copy and NVTX reports.
    void chromeExportRoundTrip_data() {
        QTest::addColumn<QString>("file");
        for (const QString& f : warpline::testdata::committedFiles(
                 QString::fromUtf8(WARPLINE_TEST_DATA), {"*.warpline"}))
            QTest::newRow(qPrintable(QFileInfo(f).fileName())) << f;
    }
    void chromeExportRoundTrip() {
        QFETCH(QString, file);
        WARPLINE_REQUIRE_DATA(file);
        const TraceStore original = TraceLoader::load(file.toStdString());
        const QString json = path("roundtrip.json");
        writeChromeTraceFile(json.toStdString(), original);
        const TraceStore back = TraceOpener::open(json.toStdString());
        // Chrome JSON has no shared-memory carveout per launch: the theoretical occupancy comes
        // back (from the launch configuration and the GPU's compute capability), but a limiter
        // the carveout tied with may not.
        QCOMPARE(csv(without(kernelSummaryTable(back, kernelSummary(back)), "Occupancy Limiter")),
                 csv(without(kernelSummaryTable(original, kernelSummary(original)),
                             "Occupancy Limiter")));
        QCOMPARE(csv(apiSummaryTable(back, apiSummary(back))),
                 csv(apiSummaryTable(original, apiSummary(original))));
        QCOMPARE(csv(memTimeSummaryTable(back, memOpSummary(back))),
                 csv(memTimeSummaryTable(original, memOpSummary(original))));
        QCOMPARE(csv(memSizeSummaryTable(back, memOpSummary(back))),
                 csv(memSizeSummaryTable(original, memOpSummary(original))));
        QCOMPARE(csv(nvtxSummaryTable(back, nvtxSummary(back))),
                 csv(nvtxSummaryTable(original, nvtxSummary(original))));
    }

    void errors_data() {
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<QString>("message");
        QTest::newRow("broken JSON") << QByteArray("{\"traceEvents\": [ {\"ph\": ")
                                     << "is not a PyTorch profiler trace: invalid JSON";
        QTest::newRow("no traceEvents") << QByteArray("{\"schemaVersion\": 1}")
                                        << "is not a PyTorch profiler trace: it has no "
                                           "\"traceEvents\"";
        QTest::newRow("nothing to import")
            << QByteArray("{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"python_function\", "
                          "\"name\": \"f\", \"ts\": 1, \"dur\": 1}]}")
            << "is not a PyTorch profiler trace: it holds no CUDA API calls";
        QTest::newRow("a number") << QByteArray("[1, 2") << "is not a PyTorch profiler trace";
        // Hostile shapes: each ends with a message, in bounded memory.
        QTest::newRow("deep nesting")
            << "{\"traceEvents\": [" + QByteArray(1000000, '[') + QByteArray(1000000, ']') + "]}"
            << "is not a PyTorch profiler trace: it holds no CUDA API calls";
        QTest::newRow("invalid UTF-8")
            << QByteArray("{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": "
                          "\"k\xff\xfe\", \"ts\": 1, \"dur\": 1}]}")
            << "is not a PyTorch profiler trace: invalid JSON (The input is not valid UTF-8)";
        QTest::newRow("traceEvents twice")
            << QByteArray("{\"traceEvents\": [], \"traceEvents\": []}")
            << "is not a PyTorch profiler trace: it has \"traceEvents\" twice";
    }
    void errors() {
        QFETCH(QByteArray, content);
        QFETCH(QString, message);
        const QString file = path("bad.json");
        writeFile(file, content);
        QVERIFY(KinetoImport::isKinetoTrace(file.toStdString()));
        try {
            TraceOpener::open(file.toStdString());
            QFAIL("no error");
        } catch (const TraceError& e) {
            QCOMPARE(e.kind(), TraceError::Kind::NotATrace);
            QVERIFY2(QString(e.what()).contains(message), e.what());
            QVERIFY2(QString(e.what()).startsWith("bad.json"), e.what());
        }
        // Not JSON at all goes to the SQLite loader, which says so.
        const QString text = path("text.json");
        writeFile(text, "hello");
        QVERIFY(!KinetoImport::isKinetoTrace(text.toStdString()));
        QVERIFY_THROWS_EXCEPTION(TraceError, TraceOpener::open(text.toStdString()));
        QVERIFY_THROWS_EXCEPTION(TraceError, TraceOpener::open(path("missing.json").toStdString()));
    }

    // A gzip bomb of one endless string stops when the string passes maxStringBytes, while it is
    // inflated; a JSON larger than maxBytes stops there (by default a third of the memory
    // available). bench/run_robustness.sh measures the 3 GB bomb with the default limits.
    void bombsStopEarly() {
        const QString bomb = path("bomb.json.gz");
        writeGzip(bomb, "{\"traceEvents\": \"" + QByteArray(8 << 20, 'a'));
        KinetoImport::Options options;
        options.maxStringBytes = 1 << 20;
        try {
            KinetoImport::convert(bomb.toStdString(), path("bomb.warpline").toStdString(), options);
            QFAIL("converted");
        } catch (const TraceError& e) {
            QCOMPARE(e.kind(), TraceError::Kind::NotATrace);
            QVERIFY2(QString(e.what()).startsWith(
                         "bomb.json.gz is not a PyTorch profiler trace: the string at byte 16 "
                         "(inflated) is longer than 1 MiB, which no trace has"),
                     e.what());
        }
        QVERIFY(!QFile::exists(path("bomb.warpline")));
        const QString big = path("big.json");
        writeFile(big, "{\"traceEvents\": [" + QByteArray(3 << 20, ' ') + "]}");
        options = {};
        options.maxBytes = 2 << 20;
        try {
            KinetoImport::convert(big.toStdString(), path("big.warpline").toStdString(), options);
            QFAIL("converted");
        } catch (const TraceError& e) {
            QVERIFY2(QString(e.what()).startsWith("big.json is larger than 2 MiB, more than "
                                                  "Warpline reads from a JSON trace"),
                     e.what());
        }
        writeGzip(path("big.json.gz"), "{\"traceEvents\": [" + QByteArray(3 << 20, ' ') + "]}");
        try {
            KinetoImport::convert(path("big.json.gz").toStdString(),
                                  path("big.warpline").toStdString(), options);
            QFAIL("converted");
        } catch (const TraceError& e) {
            QVERIFY2(QString(e.what()).startsWith("big.json.gz inflates to more than 2 MiB"),
                     e.what());
        }
    }

    // The string guard finds a string's end by its quote and the backslashes before it, also
    // when their run straddles two reads (256 KiB each): an even run ends the string (the
    // spaces after it, longer than maxStringBytes, are not a string), an odd one does not.
    void escapedQuotesAcrossReads() {
        const int read = 1 << 18;
        const QByteArray head = "{\"traceEvents\": [" + kLaunchAndKernel + ",\n";
        const auto withRun = [&](int backslashes, const QByteArray& after) {
            QByteArray json = head;
            json += QByteArray(read - 1000 - json.size(), ' ') + "{\"ph\": \"i\", \"name\": \"";
            return json + QByteArray(backslashes, '\\') + "\"" + after;
        };
        KinetoImport::Options options;
        options.maxStringBytes = 64 << 10;
        writeFile(path("even.json"), withRun(2000, "}" + QByteArray(200 << 10, ' ') + "]}"));
        QCOMPARE(KinetoImport::convert(path("even.json").toStdString(),
                                       path("even.warpline").toStdString(), options)
                     .kernels,
                 uint64_t(1));
        writeFile(path("odd.json"), withRun(2001, QByteArray(200 << 10, 'a') + "\"}]}"));
        try {
            KinetoImport::convert(path("odd.json").toStdString(),
                                  path("odd.warpline").toStdString(), options);
            QFAIL("converted");
        } catch (const TraceError& e) {
            QVERIFY2(QString(e.what()).startsWith("odd.json is not a PyTorch profiler trace: the "
                                                  "string at byte " +
                                                  QString::number(read - 1000 + 20)),
                     e.what());
        }
    }

    // Bombs within the caps (issue 27 item 5): gigabytes of whitespace or filler, gzipped or
    // not, alone or around a kernel, are refused in their first 64 MiB window of JSON (the
    // message says so: nothing past it was inflated or read), with the default limits, through
    // the opener the window uses. Before, the gzipped ones were inflated to maxBytes (4 GiB
    // here) before a refusal, or loaded; bench/run_json_bombs.sh measures them.
    void bombsWithinTheCaps_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QByteArray>("prefix");
        QTest::addColumn<QByteArray>("unit");
        QTest::addColumn<qint64>("count");
        QTest::addColumn<QByteArray>("suffix");
        QTest::addColumn<QString>("message"); // three parts the message holds
        QTest::addColumn<QString>("message2");
        QTest::addColumn<QString>("message3");
        const QByteArray head = "{\"traceEvents\": [\n";
        const QByteArray spaces(1 << 20, ' ');
        const QByteArray lines = QByteArray("\n" + QByteArray(63, ' ')).repeated(1 << 14);
        const QString inflated = "its first 64 MiB of JSON inflated from ";
        const QString times = " times, where profiler traces inflate 8-14 times and Warpline "
                              "stops past 100 (at that rate its ";
        QTest::newRow("4.5 GiB of spaces, gzip")
            << "spaces.json.gz" << head << spaces << qint64(4608) << QByteArray("]}") << inflated
            << times << "would inflate to 4.5 GiB";
        QTest::newRow("a kernel in 3.5 GiB of lines, gzip")
            << "lines.json.gz" << head + kLaunchAndKernel + ",\n"
            << lines << qint64(3584) << QByteArray("]}") << inflated << times
            << "would inflate to 3.5 GiB";
        QTest::newRow("a kernel and 3 GiB of 0, gzip")
            << "zeros.json.gz" << head + kLaunchAndKernel + ","
            << QByteArray("0,").repeated(1 << 19) << qint64(3072) << QByteArray("0]}") << inflated
            << times << "would inflate to 3.0 GiB";
        // Random names in spaces: 94% whitespace that inflates only about 30 times.
        QByteArray names;
        QRandomGenerator random(27);
        while (names.size() < (1 << 20)) {
            QByteArray name(60, 'a');
            for (char& c : name)
                c = "0123456789abcdef"[random.bounded(16)];
            names += "\"" + name + "\"," + QByteArray(1024 - 63, ' ');
        }
        names.truncate(1 << 20);
        QTest::newRow("names in 94% whitespace, gzip")
            << "names.json.gz" << head << names << qint64(128) << QByteArray("\"\"]}")
            << "its first 64 MiB of JSON (inflated) is 94% whitespace, where profiler traces "
               "are about 25% and Warpline stops past 90%"
            << ""
            << "";
        QTest::newRow("a kernel in 96 MiB of lines")
            << "lines.json" << head + kLaunchAndKernel + ",\n"
            << lines << qint64(96) << QByteArray("]}")
            << "its first 64 MiB of JSON is 100% whitespace, where profiler traces are about "
               "25% and Warpline stops past 90%"
            << ""
            << "";
        QTest::newRow("a kernel and 96 MiB of 0,")
            << "zeros.json" << head + kLaunchAndKernel + "," << QByteArray("0,").repeated(1 << 19)
            << qint64(96) << QByteArray("0]}")
            << "its first 64 MiB of JSON is 50% commas, colons and brackets, where profiler "
               "traces are at most 17% and Warpline stops past 40%"
            << ""
            << "";
        QTest::newRow("96 MiB of [")
            << "brackets.json" << QByteArray("{\"traceEvents\": ") << QByteArray(1 << 20, '[')
            << qint64(96) << QByteArray() << "100% of its first 64 MiB of JSON is the byte '[', "
            << "where no byte is more than 25% of a profiler trace and Warpline stops past 90%"
            << "";
    }
    void bombsWithinTheCaps() {
        QFETCH(QString, name);
        QFETCH(QByteArray, prefix);
        QFETCH(QByteArray, unit);
        QFETCH(qint64, count);
        QFETCH(QByteArray, suffix);
        QFETCH(QString, message);
        QFETCH(QString, message2);
        QFETCH(QString, message3);
        // The writer itself: three units read back as written.
        writeRepeated(path("sample-" + name), prefix, unit, 3, suffix);
        QVERIFY(readMaybeGzip(path("sample-" + name)) == prefix + unit.repeated(3) + suffix);
        QFile::remove(path("sample-" + name));

        const QString file = path(name);
        writeRepeated(file, prefix, unit, count, suffix);
        try {
            TraceOpener::open(file.toStdString());
            QFAIL("opened");
        } catch (const TraceError& e) {
            const QString what = e.what();
            QCOMPARE(e.kind(), TraceError::Kind::NotATrace);
            QVERIFY2(what.startsWith(name + " is not a PyTorch profiler trace: "), e.what());
            for (const QString& part : {message, message2, message3})
                QVERIFY2(what.contains(part), e.what());
            QVERIFY2(what.endsWith("the file may be made to exhaust memory)"), e.what());
        }
        QFile::remove(file);
    }

    // The CLI on the 4.5 GiB bomb: exit 2 with the message, at most 300 MB resident (it stops
    // after 64 MiB of JSON; before, it held 4 GiB; 2 GB under AddressSanitizer). getrusage's
    // children's peak covers every warpline-stats this test ran, all smaller.
    void bombInTheCli() {
#ifndef WARPLINE_STATS
        QSKIP("warpline-stats not built");
#else
        const QString file = path("cli-bomb.json.gz");
        writeRepeated(file, "{\"traceEvents\": [", QByteArray(1 << 20, ' '), 4608, "]}");
        QProcess run;
        run.start(WARPLINE_STATS, {file, "--report", "kernels"});
        QVERIFY(run.waitForFinished(60000));
        QCOMPARE(run.exitCode(), 2);
        const QByteArray error = run.readAllStandardError();
        QVERIFY2(error.contains("cli-bomb.json.gz is not a PyTorch profiler trace: its first 64 "
                                "MiB of JSON inflated from "),
                 error.constData());
#if defined(__SANITIZE_ADDRESS__)
        const long limitKiB = 2000 * 1000; // ASan's shadow memory and quarantine come on top
#else
        const long limitKiB = 300 * 1000;
#endif
        rusage usage{};
        QCOMPARE(getrusage(RUSAGE_CHILDREN, &usage), 0);
        QVERIFY2(usage.ru_maxrss < limitKiB, qPrintable(QString::number(usage.ru_maxrss)));
        QFile::remove(file);
#endif
    }

    // The committed real traces are far from the plausibility bounds (a fifth of maxInflation,
    // a third of maxFillerShare and of maxStructuralShare, for the whole file), and still import
    // when judged in windows of 4 KiB, a 16384th of the default, so that every one is judged
    // several times over.
    void realTracesArePlausible_data() {
        realTraces_data();
    }
    void realTracesArePlausible() {
        QFETCH(QString, file);
        const KinetoImport::Options defaults;
        const QByteArray json = readMaybeGzip(file);
        if (file.endsWith(".gz"))
            QVERIFY(double(json.size()) < defaults.maxInflation / 5 * QFileInfo(file).size());
        const qsizetype whitespace =
            json.count(' ') + json.count('\n') + json.count('\r') + json.count('\t');
        QVERIFY(double(whitespace) < defaults.maxFillerShare / 3 * double(json.size()));
        std::array<qsizetype, 256> counts{};
        for (const char c : json)
            ++counts[static_cast<unsigned char>(c)];
        QVERIFY(double(*std::max_element(counts.begin(), counts.end())) <
                defaults.maxFillerShare / 3 * double(json.size()));
        const qsizetype structural =
            counts[','] + counts[':'] + counts['['] + counts[']'] + counts['{'] + counts['}'];
        QVERIFY(double(structural) < defaults.maxStructuralShare / 3 * double(json.size()));
        KinetoImport::Options options;
        options.plausibilityWindowBytes = 4 << 10;
        QVERIFY(json.size() > 2 * qsizetype(options.plausibilityWindowBytes));
        const KinetoImport::Result result = KinetoImport::convert(
            file.toStdString(), path("judged.warpline").toStdString(), options);
        QVERIFY(result.kernels > 0);
    }

    // gzip's members, as `cat a.gz b.gz` makes them: all are read; bytes after the last are
    // ignored, as gzip -d and zlib's gzread do. A file cut off in its gzip data says so.
    void gzipMembersAndCutOff() {
        const QString seed = dataDir() + "/hta-simple-add.pt.trace.json.gz";
        WARPLINE_REQUIRE_DATA(seed);
        const QByteArray json = readMaybeGzip(seed);
        const qsizetype half = json.size() / 2;
        writeFile(path("members.json.gz"),
                  gzipped(json.left(half)) + gzipped(json.mid(half)) + "trailing bytes");
        checkAgainstJson(TraceOpener::open(path("members.json.gz").toStdString()),
                         expectedFrom(json));
        const QByteArray whole = gzipped(json);
        writeFile(path("cut.json.gz"), whole.left(whole.size() / 2));
        try {
            TraceOpener::open(path("cut.json.gz").toStdString());
            QFAIL("opened");
        } catch (const TraceError& e) {
            QCOMPARE(e.kind(), TraceError::Kind::NotATrace);
            QVERIFY2(QString(e.what()).startsWith("cut.json.gz is cut off: its gzip data stops "
                                                  "after "),
                     e.what());
        }
    }

    // Times out of range (an exponent past double's range, 400 digits, -1e300) skip their
    // events, counted in a warning; the rest loads. A key given twice is counted too.
    void numbersOutOfRange() {
        const QString file = path("numbers.json");
        const QByteArray huge(400, '9');
        writeFile(
            file,
            "{\"traceEvents\": ["
            "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", "
            "\"pid\": 1, \"tid\": 1, \"ts\": 10, \"dur\": 2, \"args\": {\"correlation\": 1}},"
            "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, "
            "\"ts\": 1, \"ts\": 20, \"dur\": 5, \"args\": {\"correlation\": 1, \"stream\": 7}},"
            "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, "
            "\"ts\": 1e999, \"dur\": 5},"
            "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, "
            "\"ts\": " +
                huge +
                ", \"dur\": 5},"
                "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, "
                "\"ts\": -1e300, \"dur\": 5}]}");
        const TraceStore store = TraceOpener::open(file.toStdString());
        QCOMPARE(store.kernelCount(), size_t(1));
        QCOMPARE(store.apiCallCount(), size_t(1));
        QVERIFY(
            std::any_of(store.warnings().begin(), store.warnings().end(), [](const std::string& w) {
                return w == "Collector error (PyTorch import): 3 events were "
                            "skipped or shortened: their \"ts\" or \"dur\" is not "
                            "a number of microseconds within 73 years";
            }));
        // A key twice: the last value is used (the kernel starts at 20 us), and said.
        QCOMPARE(store.gpuTracks()[0].start(0) - store.apiTracks()[0].start(0), int64_t(10000));
        QVERIFY(
            std::any_of(store.warnings().begin(), store.warnings().end(), [](const std::string& w) {
                return w == "Collector error (PyTorch import): 1 events have a key twice (\"ts\", "
                            "\"name\", \"args\", ...); the last value of each was used";
            }));
    }

    void cancel() {
        const QString file = dataDir() + "/hta-simple-add.pt.trace.json.gz";
        WARPLINE_REQUIRE_DATA(file);
        TraceLoader::Options options;
        options.progress = [](double f) { return f < 0.5; };
        QVERIFY_THROWS_EXCEPTION(LoadCancelled, TraceOpener::open(file.toStdString(), options));
    }

    void cli() {
#ifndef WARPLINE_STATS
        QSKIP("warpline-stats not built");
#else
        const QString file = dataDir() + "/hta-simple-add.pt.trace.json.gz";
        WARPLINE_REQUIRE_DATA(file);
        QProcess run;
        run.start(WARPLINE_STATS, {file, "--report", "kernels", "--format", "csv"});
        QVERIFY(run.waitForFinished(60000));
        QCOMPARE(run.exitCode(), 0);
        const QByteArray kernels = run.readAllStandardOutput();
        QVERIFY(kernels.contains("ampere_sgemm_32x32_sliced1x4_tn"));

        const QString saved = path("saved.warpline");
        run.start(WARPLINE_STATS, {file, "--export", "warpline", "-o", saved});
        QVERIFY(run.waitForFinished(60000));
        QCOMPARE(run.exitCode(), 0);
        run.start(WARPLINE_STATS, {saved, "--report", "kernels", "--format", "csv"});
        QVERIFY(run.waitForFinished(60000));
        QCOMPARE(run.readAllStandardOutput(), kernels);

        run.start(WARPLINE_STATS, {saved, "--export", "warpline", "-o", path("again.warpline")});
        QVERIFY(run.waitForFinished(60000));
        QCOMPARE(run.exitCode(), 2);
#endif
    }
};

QTEST_GUILESS_MAIN(TestKinetoImport)
#include "tst_kinetoimport.moc"
