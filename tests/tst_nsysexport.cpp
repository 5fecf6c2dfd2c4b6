// Real Nsight Systems SQLite exports (tests/data/nsys, two export schema versions) open, and every
// report agrees with SQL run on the file itself: kernel, API, memory and NVTX summaries, the
// synchronizations and their calls, the launches the run-ahead analysis finds, the GPUs; every
// other registered report runs; the Chrome export parses.

#include "chromeexport.h"
#include "reportregistry.h"
#include "runahead.h"
#include "summaries.h"
#include "testdata.h"
#include "traceloader.h"
#include "traceopener.h"

#include <QDir>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>
#include <map>
#include <set>
#include <sqlite3.h>
#include <sstream>

using namespace warpline::model;

namespace {

// A read-only SQLite connection for the independent queries.
class Db {
public:
    explicit Db(const QString& path) {
        if (sqlite3_open_v2(path.toUtf8().constData(), &m_db, SQLITE_OPEN_READONLY, nullptr) !=
            SQLITE_OK)
            qFatal("cannot open %s", qPrintable(path));
    }
    ~Db() { sqlite3_close(m_db); }
    Db(const Db&) = delete;
    Db& operator=(const Db&) = delete;

    bool hasTable(const char* name) {
        return !rows(std::string("SELECT 1 FROM sqlite_master WHERE name = '") + name + "'")
                    .empty();
    }
    // Every row, each column as text (NULL as "").
    std::vector<std::vector<std::string>> rows(const std::string& sql) {
        sqlite3_stmt* st = nullptr;
        if (sqlite3_prepare_v2(m_db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
            qFatal("bad SQL %s: %s", sql.c_str(), sqlite3_errmsg(m_db));
        std::vector<std::vector<std::string>> out;
        while (sqlite3_step(st) == SQLITE_ROW) {
            std::vector<std::string> row;
            for (int c = 0; c < sqlite3_column_count(st); ++c) {
                const auto* text = sqlite3_column_text(st, c);
                row.emplace_back(text ? reinterpret_cast<const char*>(text) : "");
            }
            out.push_back(std::move(row));
        }
        sqlite3_finalize(st);
        return out;
    }
    int64_t scalar(const std::string& sql) {
        const auto r = rows(sql);
        return r.empty() || r[0].empty() ? 0 : std::stoll(r[0][0]);
    }

private:
    sqlite3* m_db = nullptr;
};

struct Agg {
    uint64_t count = 0;
    int64_t total = 0, minimum = 0, maximum = 0;
};

// "cudaMalloc_v3020" -> "cudaMalloc", as nsys stats shows API names.
std::string withoutVersion(std::string name) {
    const size_t v = name.rfind("_v");
    if (v != std::string::npos && v + 2 < name.size() &&
        name.find_first_not_of("0123456789", v + 2) == std::string::npos)
        name.resize(v);
    return name;
}

void compare(const std::map<std::string, Agg>& sql, const std::map<std::string, DurationStats>& got,
             const char* what) {
    QVERIFY2(sql.size() == got.size(), qPrintable(QString("%1: %2 groups in SQL, %3 in the report")
                                                      .arg(what)
                                                      .arg(sql.size())
                                                      .arg(got.size())));
    for (const auto& [name, a] : sql) {
        QVERIFY2(got.count(name),
                 qPrintable(QString("%1: no row for %2").arg(what).arg(name.c_str())));
        const DurationStats& s = got.at(name);
        QCOMPARE(s.count, a.count);
        QCOMPARE(s.total, a.total);
        QCOMPARE(s.minimum, a.minimum);
        QCOMPARE(s.maximum, a.maximum);
    }
}

} // namespace

class TestNsysExport : public QObject {
    Q_OBJECT

private slots:
    void exports_data() {
        QTest::addColumn<QString>("file");
        for (const QString& f : warpline::testdata::committedFiles(
                 QString::fromUtf8(WARPLINE_TEST_DATA) + "/nsys", {"*.sqlite"}))
            QTest::newRow(qPrintable(QFileInfo(f).fileName())) << f;
    }

    void exports() {
        QFETCH(QString, file);
        WARPLINE_REQUIRE_DATA(file);
        const TraceStore store = TraceOpener::open(file.toStdString());
        QCOMPARE(store.origin(), TraceOrigin::NsightSystemsExport);
        Db db(file);

        // Kernels, by demangled name.
        std::map<std::string, Agg> kernels;
        for (const auto& r : db.rows("SELECT s.value, COUNT(*), SUM(k.end - k.start), "
                                     "MIN(k.end - k.start), MAX(k.end - k.start) FROM "
                                     "CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = "
                                     "k.demangledName GROUP BY k.demangledName"))
            kernels[r[0]] = {std::stoull(r[1]), std::stoll(r[2]), std::stoll(r[3]),
                             std::stoll(r[4])};
        QVERIFY(!kernels.empty());
        std::map<std::string, DurationStats> kernelRows;
        for (const KernelSummaryRow& r : kernelSummary(store))
            kernelRows[store.text(r.name)] = r.stats;
        compare(kernels, kernelRows, "kernels");
        QCOMPARE(int64_t(store.kernelCount()),
                 db.scalar("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"));

        // API calls, runtime and driver, by name without the version suffix.
        std::map<std::string, std::vector<int64_t>> apiDurations;
        for (const char* table : {"CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER"}) {
            if (!db.hasTable(table))
                continue;
            for (const auto& r : db.rows(std::string("SELECT s.value, a.end - a.start FROM ") +
                                         table + " a JOIN StringIds s ON s.id = a.nameId"))
                apiDurations[withoutVersion(r[0])].push_back(std::stoll(r[1]));
        }
        std::map<std::string, Agg> api;
        for (const auto& [name, d] : apiDurations) {
            Agg& a = api[name];
            a.count = d.size();
            a.minimum = *std::min_element(d.begin(), d.end());
            a.maximum = *std::max_element(d.begin(), d.end());
            for (const int64_t v : d)
                a.total += v;
        }
        std::map<std::string, DurationStats> apiRows;
        for (const ApiSummaryRow& r : apiSummary(store))
            apiRows[store.text(r.name)] = r.stats;
        compare(api, apiRows, "API calls");

        // Memory operations: counts, time and bytes per copy kind and for sets.
        std::map<std::string, Agg> mem;
        int64_t bytes = 0;
        if (db.hasTable("CUPTI_ACTIVITY_KIND_MEMCPY")) {
            for (const auto& r : db.rows(
                     "SELECT copyKind, COUNT(*), SUM(end - start), MIN(end - start), "
                     "MAX(end - start), SUM(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY 1")) {
                mem["copy " + r[0]] = {std::stoull(r[1]), std::stoll(r[2]), std::stoll(r[3]),
                                       std::stoll(r[4])};
                bytes += std::stoll(r[5]);
            }
        }
        if (db.hasTable("CUPTI_ACTIVITY_KIND_MEMSET")) {
            for (const auto& r : db.rows("SELECT COUNT(*), SUM(end - start), MIN(end - start), "
                                         "MAX(end - start), SUM(bytes) FROM "
                                         "CUPTI_ACTIVITY_KIND_MEMSET HAVING COUNT(*) > 0")) {
                mem["set"] = {std::stoull(r[0]), std::stoll(r[1]), std::stoll(r[2]),
                              std::stoll(r[3])};
                bytes += std::stoll(r[4]);
            }
        }
        std::map<std::string, DurationStats> memRows;
        int64_t reportedBytes = 0;
        for (const MemOpSummaryRow& r : memOpSummary(store)) {
            // The report names operations; map them back to the copy kind / set.
            const std::string& op = store.text(r.operation);
            std::string key = "set";
            for (const auto& [kind, text] :
                 {std::pair{"1", "Host-to-Device"}, std::pair{"2", "Device-to-Host"},
                  std::pair{"8", "Device-to-Device"}, std::pair{"9", "Host-to-Host"},
                  std::pair{"10", "Peer-to-Peer"}}) {
                if (op.find(text) != std::string::npos)
                    key = std::string("copy ") + kind;
            }
            memRows[key] = r.time;
            reportedBytes += r.size.total;
        }
        compare(mem, memRows, "memory operations");
        QCOMPARE(reportedBytes, bytes);

        // NVTX ranges (push/pop and start/end), by text; their domain prefixes the report's
        // name.
        if (db.hasTable("NVTX_EVENTS")) {
            std::map<std::string, Agg> nvtx;
            for (const auto& r : db.rows(
                     "SELECT COALESCE(e.text, s.value), COUNT(*), SUM(e.end - e.start), "
                     "MIN(e.end - e.start), MAX(e.end - e.start) FROM NVTX_EVENTS e LEFT JOIN "
                     "StringIds s ON s.id = e.textId WHERE e.eventType IN (59, 60) AND e.end IS "
                     "NOT NULL GROUP BY 1"))
                nvtx[r[0]] = {std::stoull(r[1]), std::stoll(r[2]), std::stoll(r[3]),
                              std::stoll(r[4])};
            std::map<std::string, DurationStats> nvtxRows;
            for (const NvtxSummaryRow& r : nvtxSummary(store))
                nvtxRows[store.text(r.name)] = r.stats;
            compare(nvtx, nvtxRows, "NVTX ranges");
        }

        // Synchronizations, each joined to the call that waited (every committed export has the
        // table; cloverleaf's holds 1312 rows).
        QVERIFY(db.hasTable("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"));
        QCOMPARE(int64_t(store.syncs().size()),
                 db.scalar("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"));
        const int64_t joined = db.scalar(
            "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION y WHERE EXISTS (SELECT 1 "
            "FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId = y.correlationId)");
        int64_t found = 0;
        for (const SyncEvent& s : store.syncs())
            found += s.apiCall.valid();
        QCOMPARE(found, joined);

        // Launches: distinct (runtime call, stream) pairs with GPU work.
        std::string gpuOps = "SELECT correlationId, streamId FROM CUPTI_ACTIVITY_KIND_KERNEL";
        for (const char* t : {"CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"}) {
            if (db.hasTable(t))
                gpuOps += std::string(" UNION ALL SELECT correlationId, streamId FROM ") + t;
        }
        const int64_t launches = db.scalar(
            "SELECT COUNT(*) FROM (SELECT DISTINCT o.correlationId, o.streamId FROM (" + gpuOps +
            ") o WHERE o.correlationId IN (SELECT correlationId FROM "
            "CUPTI_ACTIVITY_KIND_RUNTIME))");
        QCOMPARE(int64_t(analyzeRunAhead(store).overall.count), launches);

        // GPUs.
        std::multiset<std::string> gpus, storeGpus;
        for (const auto& r : db.rows("SELECT name FROM TARGET_INFO_GPU"))
            gpus.insert(r[0]);
        for (const DeviceInfo& d : store.devices()) {
            if (d.name != kNoName)
                storeGpus.insert(store.text(d.name));
        }
        QCOMPARE(storeGpus, gpus);

        // Thread names from ThreadNames, for every thread that made calls.
        std::map<int64_t, std::string> threadNames;
        for (const auto& r : db.rows("SELECT t.globalTid, s.value FROM ThreadNames t JOIN "
                                     "StringIds s ON s.id = t.nameId"))
            threadNames[std::stoll(r[0])] = r[1];
        int named = 0;
        for (const ThreadInfo& t : store.threads()) {
            if (threadNames.count(t.globalTid)) {
                QCOMPARE(store.text(t.name), threadNames.at(t.globalTid));
                ++named;
            }
        }
        QVERIFY(named > 0);

        // Every registered report runs and has its columns.
        for (const ReportDef& report : ReportRegistry::all()) {
            const Table table = report.run(store, ReportOptions{});
            QVERIFY2(table.columnCount() > 0, report.name.data());
            for (const auto& row : table.rows())
                QCOMPARE(row.size(), table.columnCount());
        }
        QVERIFY(ReportRegistry::find("kernels")->run(store, {}).rowCount() == kernels.size());

        // And the Chrome export parses, with every kernel in it.
        std::ostringstream json;
        const ChromeExportCounts counts = writeChromeTrace(json, store);
        QCOMPARE(counts.gpuOps, store.kernelCount() + store.memcpyCount() + store.memsetCount());
        QJsonParseError error;
        QJsonDocument::fromJson(QByteArray::fromStdString(json.str()), &error);
        QCOMPARE(error.error, QJsonParseError::NoError);
    }
};

QTEST_GUILESS_MAIN(TestNsysExport)
#include "tst_nsysexport.moc"
