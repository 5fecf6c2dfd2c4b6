// ActivityDecoder: CUPTI activity structs, built by hand as CUPTI would fill them, become trace
// rows with times relative to the session start; driver calls made inside runtime calls drop out.

#include "activitydecoder.h"
#include "cuptisession.h"
#include "gpumetrics.h"
#include "sqlitereader.h"
#include "tracewriter.h"

#include <QTemporaryDir>
#include <QtTest>
#include <cstring>
#include <cupti_runtime_cbid.h>

using namespace warpline::collector;
using namespace warpline::format;
namespace format = warpline::format;

namespace {
constexpr uint64_t kT0 = 1'000'000'000'000ULL;

template <typename T> const CUpti_Activity* asActivity(const T& record) {
    return reinterpret_cast<const CUpti_Activity*>(&record);
}

CUpti_ActivityAPI api(CUpti_ActivityKind kind, uint32_t cbid, uint64_t start, uint64_t end,
                      uint32_t correlation) {
    CUpti_ActivityAPI a;
    std::memset(&a, 0, sizeof a);
    a.kind = kind;
    a.cbid = cbid;
    a.start = kT0 + start;
    a.end = kT0 + end;
    a.processId = 10;
    a.threadId = 11;
    a.correlationId = correlation;
    return a;
}
} // namespace

class TestActivityDecoder : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;

private slots:
    void kernelAndLaunchJoinByCorrelation() {
        const QString file = m_dir.filePath("k.warpline");
        {
            format::TraceWriter w(file.toStdString());
            w.setProcess(10, "t");
            ActivityDecoder d(w, kT0);
            auto launch = api(CUPTI_ACTIVITY_KIND_RUNTIME,
                              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 100, 105, 77);
            d.decode(asActivity(launch));
            CUpti_ActivityKernel10 k;
            std::memset(&k, 0, sizeof k);
            k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
            k.start = kT0 + 2000;
            k.end = kT0 + 3000;
            k.streamId = 7;
            k.correlationId = 77;
            k.name = "_Z6kernelPf";
            k.gridX = k.gridY = k.gridZ = 1;
            k.blockX = 128;
            k.blockY = k.blockZ = 1;
            k.registersPerThread = 16;
            d.decode(asActivity(k));
            d.finish();
            w.finish("complete");
        }
        SqliteReader db(file);
        const auto rows =
            db.rows("SELECT r.start, r.end, s.value, k.start, k.end, n.value, k.blockX, k.streamId "
                    "FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
                    "JOIN CUPTI_ACTIVITY_KIND_KERNEL k ON k.correlationId = r.correlationId "
                    "JOIN StringIds n ON n.id = k.shortName");
        QCOMPARE(rows, (QList<QVariantList>{{100LL, 105LL, QString("cudaLaunchKernel_v7000"),
                                             2000LL, 3000LL, QString("kernel"), 128LL, 7LL}}));
    }

    void driverCallsInsideRuntimeCallsAreDropped() {
        const QString file = m_dir.filePath("d.warpline");
        {
            format::TraceWriter w(file.toStdString());
            ActivityDecoder d(w, kT0);
            // The program's own driver call, then a runtime call with a driver call inside it.
            // Inner calls complete, and arrive, before the runtime call that made them.
            d.decode(asActivity(api(CUPTI_ACTIVITY_KIND_DRIVER, 1, 10, 20, 1)));
            d.decode(asActivity(api(CUPTI_ACTIVITY_KIND_DRIVER, 2, 110, 120, 2)));
            d.decode(asActivity(api(CUPTI_ACTIVITY_KIND_RUNTIME,
                                    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 100, 130, 3)));
            d.decode(asActivity(api(CUPTI_ACTIVITY_KIND_DRIVER, 3, 500, 510, 4)));
            d.finish();
            w.finish("complete");
        }
        SqliteReader db(file);
        QCOMPARE(db.rows("SELECT start, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE "
                         "eventClass = 1 ORDER BY start"),
                 (QList<QVariantList>{{10LL, 1LL}, {500LL, 4LL}}));
        QCOMPARE(db.value("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass = 0")
                     .toInt(),
                 1);
    }

    void memcpySyncAndMarkers() {
        const QString file = m_dir.filePath("m.warpline");
        {
            format::TraceWriter w(file.toStdString());
            ActivityDecoder d(w, kT0);
            CUpti_ActivityContext3 c;
            std::memset(&c, 0, sizeof c);
            c.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
            c.contextId = 1;
            c.deviceId = 0;
            d.decode(asActivity(c));
            CUpti_ActivityMemcpy6 m;
            std::memset(&m, 0, sizeof m);
            m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
            m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
            m.bytes = 4;
            m.start = kT0 + 50;
            m.end = kT0 + 60;
            m.contextId = 1;
            m.streamId = 7;
            m.correlationId = 9;
            d.decode(asActivity(m));
            CUpti_ActivitySynchronization2 s;
            std::memset(&s, 0, sizeof s);
            s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
            s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
            s.start = kT0 + 70;
            s.end = kT0 + 90;
            s.contextId = 1;
            s.streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
            s.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
            s.correlationId = 12;
            d.decode(asActivity(s));
            CUpti_ActivityMarker2 start;
            std::memset(&start, 0, sizeof start);
            start.kind = CUPTI_ACTIVITY_KIND_MARKER;
            start.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
            start.timestamp = kT0 + 5;
            start.id = 1;
            start.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
            start.objectId.pt.processId = 10;
            start.objectId.pt.threadId = 11;
            start.name = "step 0";
            d.decode(asActivity(start));
            CUpti_ActivityMarker2 end = start;
            end.flags = CUPTI_ACTIVITY_FLAG_MARKER_END;
            end.timestamp = kT0 + 95;
            end.name = nullptr;
            d.decode(asActivity(end));
            d.finish();
            w.finish("complete");
        }
        SqliteReader db(file);
        QCOMPARE(db.rows("SELECT start, end, bytes, copyKind, streamId FROM "
                         "CUPTI_ACTIVITY_KIND_MEMCPY"),
                 (QList<QVariantList>{{50LL, 60LL, 4LL, 2LL, 7LL}}));
        const auto sync = db.rows("SELECT start, end, syncType, streamId, eventId, deviceId FROM "
                                  "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION");
        QCOMPARE(sync.size(), 1);
        QCOMPARE(sync[0].mid(0, 3), (QVariantList{70LL, 90LL, 4LL}));
        QVERIFY(sync[0][3].isNull());
        QVERIFY(sync[0][4].isNull());
        QCOMPARE(sync[0][5].toLongLong(), 0LL);
        QCOMPARE(db.rows("SELECT e.start, e.end, s.value FROM NVTX_EVENTS e JOIN StringIds s ON "
                         "s.id = e.textId"),
                 (QList<QVariantList>{{5LL, 95LL, QString("step 0")}}));
    }

    void essentialApiSelection_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<bool>("recorded");
        QTest::newRow("runtime launch") << "cudaLaunchKernel_v7000" << true;
        QTest::newRow("launch ex") << "cudaLaunchKernelExC_v11060" << true;
        QTest::newRow("async copy") << "cudaMemcpyAsync_v3020" << true;
        QTest::newRow("blocking copy") << "cudaMemcpy_v3020" << true;
        QTest::newRow("memset") << "cudaMemsetAsync_v3020" << true;
        QTest::newRow("device sync") << "cudaDeviceSynchronize_v3020" << true;
        QTest::newRow("stream sync") << "cudaStreamSynchronize_v3020" << true;
        QTest::newRow("event record") << "cudaEventRecord_v3020" << true;
        QTest::newRow("stream wait event") << "cudaStreamWaitEvent_v3020" << true;
        QTest::newRow("graph launch") << "cudaGraphLaunch_v10000" << true;
        QTest::newRow("free (synchronizes)") << "cudaFree_v3020" << true;
        QTest::newRow("driver launch (cuBLAS, Triton)") << "cuLaunchKernel" << true;
        QTest::newRow("module load") << "cuLibraryLoadData" << true;
        QTest::newRow("query: current device") << "cudaGetDevice_v3020" << false;
        QTest::newRow("query: last error") << "cudaGetLastError_v3020" << false;
        QTest::newRow("query: event polled") << "cudaEventQuery_v3020" << false;
        QTest::newRow("query: capturing") << "cudaStreamIsCapturing_v10000" << false;
        QTest::newRow("query: primary context") << "cuDevicePrimaryCtxGetState" << false;
        QTest::newRow("query: current context") << "cuCtxGetCurrent" << false;
    }
    void essentialApiSelection() {
        QFETCH(QString, name);
        QFETCH(bool, recorded);
        QCOMPARE(CuptiSession::isEssentialApi(name.toStdString()), recorded);
    }

    // What --gpu-metrics says when counters cannot be read: why, and what to do (issue 17). The
    // H100 lent here lets every user sample (RmProfilingAdminOnly 0), so these are checked here.
    void gpuMetricsProblemsSayWhatToDo() {
        using warpline::collector::gpuMetricsProblem;
        const std::string restricted = gpuMetricsProblem(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, "x");
        QVERIFY(restricted.find("only administrators") != std::string::npos);
        QVERIFY(restricted.find("NVreg_RestrictProfilingToAdminUsers=0") != std::string::npos);
        QVERIFY(restricted.find("ERR_NVGPUCTRPERM") != std::string::npos);
        QVERIFY(gpuMetricsProblem(CUPTI_ERROR_HARDWARE_BUSY, "x").find("another profiler") !=
                std::string::npos);
        QVERIFY(gpuMetricsProblem(CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED, "x").find("vGPU") !=
                std::string::npos);
        QCOMPARE(gpuMetricsProblem(CUPTI_ERROR_UNKNOWN, "enabling PM sampling"),
                 std::string("enabling PM sampling failed: CUPTI_ERROR_UNKNOWN"));
    }
};

QTEST_GUILESS_MAIN(TestActivityDecoder)
#include "tst_activitydecoder.moc"
