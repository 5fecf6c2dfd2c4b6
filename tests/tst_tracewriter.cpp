// TraceWriter: every record type written reads back, column by column, through plain SQL on the
// nsys-named tables and views.

#include "sqlitereader.h"
#include "tracewriter.h"

#include <QDirIterator>
#include <QTemporaryDir>
#include <QtTest>
#include <sys/stat.h>

using namespace warpline::format;
namespace format = warpline::format;

class TestTraceWriter : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString path(const char* name) const { return m_dir.filePath(name); }

    // Every table and view with its columns in order: what SQL written against the schema sees.
    static QMap<QString, QStringList> schemaOf(const QString& file) {
        SqliteReader db(file);
        QMap<QString, QStringList> schema;
        for (const auto& t : db.rows("SELECT name FROM sqlite_master WHERE type IN ('table', "
                                     "'view') AND name NOT LIKE 'sqlite_%'")) {
            QStringList columns;
            for (const auto& c :
                 db.rows("SELECT name FROM pragma_table_info('" + t[0].toString() + "')"))
                columns << c[0].toString();
            schema[t[0].toString()] = columns;
        }
        return schema;
    }

private slots:
    void kernelReadsBackThroughNsysView() {
        const QString file = path("kernel.warpline");
        {
            format::TraceWriter w(file.toStdString());
            w.setProcess(4242, "app");
            format::KernelRecord k;
            k.start = 1000;
            k.end = 4500;
            k.deviceId = 0;
            k.contextId = 1;
            k.streamId = 7;
            k.correlationId = 99;
            k.mangledName = "_Z11gelu_kernelPKfPfi";
            k.gridId = 12;
            k.gridX = 4096;
            k.blockX = 256;
            k.registersPerThread = 32;
            k.staticSharedMemory = 1024;
            k.dynamicSharedMemory = 2048;
            k.graphNodeId = 555;
            k.graphId = 3;
            w.addKernel(k);
            k.start = 5000;
            k.end = 5100;
            k.correlationId = 100;
            k.gridId = 13;
            k.graphNodeId.reset();
            k.graphId.reset();
            w.addKernel(k); // same launch configuration: shares the config row
            w.finish("complete");
        }
        SqliteReader db(file);
        const auto rows = db.rows(
            "SELECT k.start, k.end, k.deviceId, k.contextId, k.streamId, k.correlationId, "
            "k.globalPid, d.value, s.value, m.value, k.gridX, k.gridY, k.gridZ, k.blockX, "
            "k.registersPerThread, k.staticSharedMemory, k.dynamicSharedMemory, k.gridId, "
            "k.graphNodeId, k.graphId FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN StringIds d ON d.id = k.demangledName JOIN StringIds s ON s.id = k.shortName "
            "JOIN StringIds m ON m.id = k.mangledName ORDER BY k.start");
        QCOMPARE(rows.size(), 2);
        const QVariantList expected{1000LL,
                                    4500LL,
                                    0LL,
                                    1LL,
                                    7LL,
                                    99LL,
                                    4242LL << 24,
                                    QString("gelu_kernel(float const*, float*, int)"),
                                    QString("gelu_kernel"),
                                    QString("_Z11gelu_kernelPKfPfi"),
                                    4096LL,
                                    1LL,
                                    1LL,
                                    256LL,
                                    32LL,
                                    1024LL,
                                    2048LL,
                                    12LL,
                                    555LL,
                                    3LL};
        QCOMPARE(rows[0], expected);
        QCOMPARE(rows[1][0].toLongLong(), 5000LL);
        QVERIFY(rows[1][18].isNull());
        QCOMPARE(db.value("SELECT COUNT(*) FROM WARPLINE_KERNEL_CONFIGS").toInt(), 1);
        QCOMPARE(db.value("PRAGMA user_version").toInt(), 200);
        QCOMPARE(db.value("SELECT value FROM WARPLINE_META WHERE key='status'").toString(),
                 QString("complete"));
        QCOMPARE(db.value("SELECT COUNT(*) FROM sqlite_master WHERE type='index' AND "
                          "tbl_name='WARPLINE_KERNELS'")
                     .toInt(),
                 1);
    }

    // The traces committed to tests/data and resources/ (recorded, or upgraded by
    // format::traceUpgradeSql()) have the schema of a recording made now, and nsys's plain
    // join finds the launch of at least 99% of their kernels, as it does in an nsys export.
    void committedTracesHaveTheCurrentSchema() {
        const QString fresh = path("fresh.warpline");
        {
            format::TraceWriter w(fresh.toStdString());
            w.finish("complete");
        }
        const auto expected = schemaOf(fresh);
        QStringList files;
        for (const QString& root :
             {QString(WARPLINE_TEST_DATA), QString(WARPLINE_SOURCE_DIR "/resources")}) {
            QDirIterator it(root, {"*.warpline"}, QDir::Files, QDirIterator::Subdirectories);
            while (it.hasNext())
                files << it.next();
        }
        QVERIFY(files.size() >= 18);
        for (const QString& file : files) {
            QCOMPARE(SqliteReader(file).value("PRAGMA user_version").toInt(), 200);
            const auto actual = schemaOf(file);
            for (auto t = expected.begin(); t != expected.end(); ++t)
                QVERIFY2(actual.value(t.key()) == t.value(),
                         qPrintable(file + ": " + t.key() + " has columns " +
                                    actual.value(t.key()).join(",")));
            QVERIFY2(!actual.contains("CUPTI_ACTIVITY_KIND_DRIVER"), qPrintable(file));
            SqliteReader db(file);
            const auto joined = db.rows(
                "SELECT COUNT(*), COUNT(r.first) FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN "
                "(SELECT correlationId, MIN(start) AS first FROM CUPTI_ACTIVITY_KIND_RUNTIME "
                "GROUP BY correlationId) r ON r.correlationId = k.correlationId AND r.first <= "
                "k.start");
            const qlonglong kernels = joined[0][0].toLongLong();
            QVERIFY2(joined[0][1].toLongLong() * 100 >= kernels * 99,
                     qPrintable(file + ": " + joined[0][1].toString() + " of " +
                                QString::number(kernels) + " kernels join a launch"));
            // nsys-reading tools find the GPU through TARGET_INFO_CUDA_DEVICE.
            QVERIFY2(db.value("SELECT COUNT(*) FROM TARGET_INFO_GPU g JOIN TARGET_INFO_CUDA_DEVICE "
                              "c ON g.id = c.gpuId WHERE g.smCount > 0 AND g.totalMemory > 0")
                             .toInt() >= 1,
                     qPrintable(file));
        }
    }

    void apiCallsMemoryOpsAndSyncs() {
        const QString file = path("api.warpline");
        {
            format::TraceWriter w(file.toStdString());
            w.setProcess(100, "app");
            w.addContext(format::ContextRecord{1, 2, 7});
            format::ApiRecord a;
            a.start = 10;
            a.end = 20;
            a.processId = 100;
            a.threadId = 101;
            a.correlationId = 5;
            a.name = "cudaLaunchKernel_v7000";
            w.addApi(a);
            a.domain = format::ApiRecord::Domain::Driver;
            a.name = "cuLaunchKernel";
            a.correlationId = 6;
            a.returnValue = 700;
            w.addApi(a);
            format::MemcpyRecord m;
            m.start = 30;
            m.end = 40;
            m.deviceId = 2;
            m.contextId = 1;
            m.streamId = 7;
            m.correlationId = 8;
            m.bytes = 4;
            m.copyKind = 2;
            m.srcKind = 3;
            m.dstKind = 1;
            w.addMemcpy(m);
            format::MemsetRecord s;
            s.start = 50;
            s.end = 60;
            s.deviceId = 2;
            s.contextId = 1;
            s.streamId = 7;
            s.correlationId = 9;
            s.bytes = 1 << 20;
            s.value = 0xAB;
            s.memKind = 3;
            w.addMemset(s);
            format::SyncRecord y;
            y.start = 70;
            y.end = 90;
            y.contextId = 1;
            y.correlationId = 10;
            y.syncType = 4;
            w.addSync(y);
            w.finish("complete");
        }
        SqliteReader db(file);
        // Runtime and driver calls share the RUNTIME table, as in nsys exports: eventClass 0
        // and 1, labelled by ENUM_NSYS_EVENT_CLASS; there is no DRIVER table.
        QCOMPARE(
            db.rows("SELECT r.start, r.end, r.eventClass, e.label, r.globalTid, "
                    "r.correlationId, s.value, r.returnValue FROM CUPTI_ACTIVITY_KIND_RUNTIME "
                    "r JOIN StringIds s ON s.id = r.nameId JOIN ENUM_NSYS_EVENT_CLASS e ON "
                    "e.id = r.eventClass ORDER BY r.correlationId"),
            (QList<QVariantList>{{10LL, 20LL, 0LL, QString("CUDA runtime"), (100LL << 24) + 101,
                                  5LL, QString("cudaLaunchKernel_v7000"), 0LL},
                                 {10LL, 20LL, 1LL, QString("CUDA driver"), (100LL << 24) + 101, 6LL,
                                  QString("cuLaunchKernel"), 700LL}}));
        QCOMPARE(db.value("SELECT COUNT(*) FROM sqlite_master WHERE name = "
                          "'CUPTI_ACTIVITY_KIND_DRIVER'")
                     .toInt(),
                 0);
        QCOMPARE(db.rows("SELECT start, end, deviceId, contextId, streamId, correlationId, bytes, "
                         "copyKind, srcKind, dstKind FROM CUPTI_ACTIVITY_KIND_MEMCPY"),
                 (QList<QVariantList>{{30LL, 40LL, 2LL, 1LL, 7LL, 8LL, 4LL, 2LL, 3LL, 1LL}}));
        QCOMPARE(db.rows("SELECT e.label FROM CUPTI_ACTIVITY_KIND_MEMCPY m JOIN "
                         "ENUM_CUDA_MEMCPY_OPER e ON e.id = m.copyKind"),
                 (QList<QVariantList>{{QString("Device-to-Host")}}));
        QCOMPARE(
            db.rows("SELECT start, end, bytes, value, memKind FROM CUPTI_ACTIVITY_KIND_MEMSET"),
            (QList<QVariantList>{{50LL, 60LL, 1LL << 20, 0xABLL, 3LL}}));
        // Context-wide sync: no stream; the device comes from the context table.
        const auto sync = db.rows("SELECT start, end, deviceId, streamId, correlationId, syncType "
                                  "FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION");
        QCOMPARE(sync.size(), 1);
        QCOMPARE(sync[0][2].toLongLong(), 2LL);
        QVERIFY(sync[0][3].isNull());
        QCOMPARE(sync[0][5].toLongLong(), 4LL);
    }

    void nvtxRangesPairNestAndKeepColour() {
        const QString file = path("nvtx.warpline");
        {
            format::TraceWriter w(file.toStdString());
            w.setProcess(7, "app");
            auto marker = [](format::MarkerRecord::Kind kind, int64_t t, uint32_t id,
                             const char* name, uint32_t tid = 70) {
                format::MarkerRecord m;
                m.kind = kind;
                m.timestamp = t;
                m.id = id;
                m.processId = 7;
                m.threadId = tid;
                m.name = name;
                return m;
            };
            w.addMarker(marker(format::MarkerRecord::Kind::Start, 100, 1, "step 0"));
            w.addMarkerData(format::MarkerDataRecord{1, 0xFF00FF00u, 3, true});
            w.addMarker(marker(format::MarkerRecord::Kind::Start, 110, 2, "forward"));
            w.addMarker(marker(format::MarkerRecord::Kind::End, 150, 2, ""));
            w.addMarker(marker(format::MarkerRecord::Kind::Instant, 160, 3, "checkpoint"));
            w.addMarker(marker(format::MarkerRecord::Kind::End, 200, 1, ""));
            w.addMarker(marker(format::MarkerRecord::Kind::Start, 300, 4, "cross-thread"));
            w.addMarker(marker(format::MarkerRecord::Kind::End, 350, 4, "", 71));
            w.addMarker(marker(format::MarkerRecord::Kind::Start, 400, 5, "never closed"));
            format::MarkerRecord domainRange =
                marker(format::MarkerRecord::Kind::Start, 500, 6, "in domain");
            domainRange.domain = "my-lib";
            w.addMarker(domainRange);
            w.addMarker(marker(format::MarkerRecord::Kind::End, 510, 6, ""));
            w.finish("complete");
        }
        SqliteReader db(file);
        const auto rows = db.rows(
            "SELECT e.start, e.end, e.eventType, COALESCE(e.text, s.value), e.color, e.category, "
            "e.globalTid, e.endGlobalTid FROM NVTX_EVENTS e LEFT JOIN StringIds s ON "
            "s.id = e.textId WHERE e.eventType != 75 ORDER BY e.start");
        QCOMPARE(rows.size(), 6);
        const qlonglong tid70 = (7LL << 24) + 70;
        QCOMPARE(rows[0], (QVariantList{100LL, 200LL, 59LL, QString("step 0"),
                                        qlonglong(0xFF00FF00u), 3LL, tid70, tid70}));
        QCOMPARE(rows[1].mid(0, 4), (QVariantList{110LL, 150LL, 59LL, QString("forward")}));
        QVERIFY(rows[1][4].isNull());
        QCOMPARE(rows[2].mid(0, 4), (QVariantList{160LL, QVariant(), 34LL, QString("checkpoint")}));
        QCOMPARE(rows[3].mid(0, 3), (QVariantList{300LL, 350LL, 60LL})); // ended on another thread
        QCOMPARE(rows[3][7].toLongLong(), (7LL << 24) + 71);
        QCOMPARE(rows[4].mid(0, 4),
                 (QVariantList{400LL, QVariant(), 59LL, QString("never closed")}));
        QCOMPARE(db.value("SELECT e.domainId FROM NVTX_EVENTS e JOIN StringIds s ON s.id = "
                          "e.textId WHERE s.value = 'in domain'")
                     .toLongLong(),
                 db.value("SELECT domainId FROM NVTX_EVENTS WHERE eventType = 75 AND "
                          "text = 'my-lib'")
                     .toLongLong());
    }

    // A range or mark without a message (nvtxDomainRangePushEx with none, or the payload
    // extension's ranges): CUPTI gives no name and the record's view has no data. Once, the
    // writer bound it as SQL NULL, StringIds.value's NOT NULL failed and the recording stopped.
    void namelessMarkersAreWritten() {
        const QString file = path("nameless.warpline");
        {
            format::TraceWriter w(file.toStdString());
            w.setProcess(7, "app");
            format::MarkerRecord m;
            m.processId = 7;
            m.threadId = 70;
            m.kind = format::MarkerRecord::Kind::Start;
            m.timestamp = 100;
            m.id = 1;
            w.addMarker(m);
            m.kind = format::MarkerRecord::Kind::End;
            m.timestamp = 200;
            w.addMarker(m);
            m.kind = format::MarkerRecord::Kind::Instant;
            m.timestamp = 300;
            m.id = 2;
            w.addMarker(m);
            QVERIFY(m.name.data() == nullptr);
            w.finish("complete");
        }
        SqliteReader db(file);
        const auto rows = db.rows("SELECT e.start, e.end, s.value FROM NVTX_EVENTS e JOIN "
                                  "StringIds s ON s.id = e.textId ORDER BY e.start");
        QCOMPARE(rows.size(), 2);
        QCOMPARE(rows[0], (QVariantList{100LL, 200LL, QString("")}));
        QCOMPARE(rows[1], (QVariantList{300LL, QVariant(), QString("")}));
        QCOMPARE(db.value("SELECT value FROM WARPLINE_META WHERE key = 'status'").toString(),
                 QString("complete"));
    }

    void devicesStreamsNamesDroppedErrors() {
        const QString file = path("info.warpline");
        {
            format::TraceWriter w(file.toStdString());
            w.setProcess(1, "app");
            format::DeviceRecord d;
            d.id = 0;
            d.name = "NVIDIA H100 80GB HBM3";
            d.smCount = 132;
            d.computeMajor = 9;
            d.totalMemory = 85'000'000'000ULL;
            d.maxRegistersPerSm = 65536;
            d.maxSharedMemoryPerSm = 233472;
            d.maxWarpsPerSm = 64;
            d.maxBlocksPerSm = 32; // maxSharedMemoryPerBlockOptin unknown (0): NULL
            w.addDevice(d);
            w.addStream(format::StreamRecord{1, 13, 0, 2});
            format::NameRecord n;
            n.object = format::NameRecord::Object::Stream;
            n.contextId = 1;
            n.streamId = 13;
            n.name = "copy stream";
            w.addName(n);
            n.object = format::NameRecord::Object::Thread;
            n.processId = 1;
            n.threadId = 2;
            n.name = "main";
            w.addName(n);
            w.addDropped(5, 1, 13, 17, "CUPTI activity buffer full");
            w.addError(9, "workload", "result mismatch");
            w.setMeta("workload", "gelu");
            w.finish("failed");
        }
        SqliteReader db(file);
        QCOMPARE(
            db.rows("SELECT id, name, smCount, computeMajor, totalMemory FROM TARGET_INFO_GPU"),
            (QList<QVariantList>{
                {0LL, QString("NVIDIA H100 80GB HBM3"), 132LL, 9LL, 85'000'000'000LL}}));
        QCOMPARE(db.rows("SELECT maxRegistersPerSm, maxShmemPerSm, maxWarpsPerSm, maxBlocksPerSm, "
                         "maxShmemPerBlockOptin IS NULL FROM TARGET_INFO_GPU"),
                 (QList<QVariantList>{{65536LL, 233472LL, 64LL, 32LL, 1LL}}));
        QCOMPARE(db.rows("SELECT streamId, contextId, flag FROM TARGET_INFO_CUDA_STREAM"),
                 (QList<QVariantList>{{13LL, 1LL, 2LL}}));
        QCOMPARE(db.value("SELECT s.value FROM WARPLINE_STREAM_NAMES n JOIN StringIds s ON "
                          "s.id = n.nameId WHERE streamId = 13")
                     .toString(),
                 QString("copy stream"));
        QCOMPARE(db.value("SELECT s.value FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId "
                          "WHERE globalTid = (1 << 24) + 2")
                     .toString(),
                 QString("main"));
        QCOMPARE(db.value("SELECT SUM(dropped) FROM WARPLINE_DROPPED").toInt(), 17);
        QCOMPARE(db.value("SELECT message FROM WARPLINE_ERRORS").toString(),
                 QString("result mismatch"));
        QCOMPARE(db.value("SELECT value FROM WARPLINE_META WHERE key='status'").toString(),
                 QString("failed"));
    }

    void existingFileIsNeverOverwrittenWithoutForce() {
        const QString file = path("existing.warpline");
        {
            QFile f(file);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("precious");
        }
        QVERIFY_THROWS_EXCEPTION(format::TraceWriteError, format::TraceWriter(file.toStdString()));
        QFile f(file);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll(), QByteArray("precious"));
        f.close();
        format::TraceWriter::Options force;
        force.overwrite = true;
        format::TraceWriter replaced(file.toStdString(), force);
        replaced.finish("complete");
        SqliteReader db(file);
        QCOMPARE(db.value("PRAGMA user_version").toInt(), 200);
    }

    // A symbolic link planted at the trace's name (TraceWriter's claim, as warpline-record and
    // the injection library create every trace): never followed, its target never truncated or
    // written, whether it points at a file or nowhere; --force replaces the link itself, and a
    // numbered name goes past it.
    void aPlantedLinkIsNeverWrittenThrough() {
        const QString precious = path("link-target.txt");
        {
            QFile f(precious);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("precious");
        }
        const QString linked = path("linked.warpline");
        const QString dangling = path("dangling.warpline");
        const QString nowhere = path("link-nowhere.txt");
        QVERIFY(QFile::link(precious, linked));
        QVERIFY(QFile::link(nowhere, dangling));
        const auto unchanged = [&] {
            QFile f(precious);
            return f.open(QIODevice::ReadOnly) && f.readAll() == "precious" &&
                   !QFile::exists(nowhere);
        };

        QVERIFY_THROWS_EXCEPTION(format::TraceWriteError,
                                 format::TraceWriter(linked.toStdString()));
        QVERIFY_THROWS_EXCEPTION(format::TraceWriteError,
                                 format::TraceWriter(dangling.toStdString()));
        QVERIFY(unchanged());
        QVERIFY(QFileInfo(linked).isSymLink() && QFileInfo(dangling).isSymLink());

        format::TraceWriter::Options numbered;
        numbered.numberIfExists = true;
        {
            format::TraceWriter w(dangling.toStdString(), numbered);
            QCOMPARE(w.path(), path("dangling-2.warpline").toStdString());
            w.finish("complete");
        }
        QVERIFY(unchanged());

        format::TraceWriter::Options force;
        force.overwrite = true;
        for (const QString& link : {linked, dangling}) {
            format::TraceWriter w(link.toStdString(), force);
            QCOMPARE(w.path(), link.toStdString());
            w.finish("complete");
            QVERIFY(!QFileInfo(link).isSymLink());
            QCOMPARE(SqliteReader(link).value("PRAGMA user_version").toInt(), 200);
        }
        QVERIFY(unchanged());
    }

    void unwritableDirectoryLeavesNothing() {
        const QString dir = path("missing-dir/trace.warpline");
        QVERIFY_THROWS_EXCEPTION(format::TraceWriteError, format::TraceWriter(dir.toStdString()));
        QVERIFY(!QFile::exists(dir));
    }

    void committedRecordsSurviveWithoutFinish() {
        // A killed recording: the writer is never finished; committed batches still read.
        const QString file = path("killed.warpline");
        {
            format::TraceWriter w(file.toStdString());
            format::KernelRecord k;
            k.mangledName = "k";
            for (int i = 0; i < 100; ++i) {
                k.start = i * 10;
                k.end = i * 10 + 5;
                k.correlationId = i;
                w.addKernel(k);
            }
            w.commit();
        }
        SqliteReader db(file);
        QCOMPARE(db.value("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").toInt(), 100);
        QCOMPARE(db.value("SELECT value FROM WARPLINE_META WHERE key='status'").toString(),
                 QString("recording"));
    }

    void shortKernelName_data() {
        QTest::addColumn<QString>("demangled");
        QTest::addColumn<QString>("expected");
        QTest::newRow("plain") << "gelu(float*, int)"
                               << "gelu";
        QTest::newRow("return type and namespace") << "void ns::gelu<float>(float*, int)"
                                                   << "gelu";
        QTest::newRow("nested templates")
            << "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, "
               "at::detail::Array<char*, 3> >(int, at::native::AddFunctor<float>, "
               "at::detail::Array<char*, 3>)"
            << "vectorized_elementwise_kernel";
        QTest::newRow("anonymous namespace")
            << "(anonymous namespace)::tiled_matmul(float const*, float const*, float*, int)"
            << "tiled_matmul";
        QTest::newRow("extern C") << "fused_softmax"
                                  << "fused_softmax";
    }
    void shortKernelName() {
        QFETCH(QString, demangled);
        QFETCH(QString, expected);
        QCOMPARE(QString::fromStdString(format::shortKernelName(demangled.toStdString())),
                 expected);
    }

    void driverVersionFromProc_data() {
        QTest::addColumn<QString>("line");
        QTest::addColumn<QString>("version");
        QTest::newRow("proprietary")
            << "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04 "
               " Thu Sep 4 2025\n"
            << "580.159.04";
        QTest::newRow("open kernel module") << "NVRM version: NVIDIA UNIX Open Kernel Module for "
                                               "x86_64  580.159.04  Release Build  "
                                               "(dvs-builder@U22-I3-AF03-09-1)\n"
                                            << "580.159.04";
        QTest::newRow("not a driver line") << "something else\n"
                                           << "";
    }
    void driverVersionFromProc() {
        QFETCH(QString, line);
        QFETCH(QString, version);
        QCOMPARE(QString::fromStdString(format::driverVersionFromProc(line.toStdString())),
                 version);
    }

    void demangleKeepsPlainNames() {
        QCOMPARE(format::demangle("_Z4geluPfi"), std::string("gelu(float*, int)"));
        QCOMPARE(format::demangle("fused_softmax"), std::string("fused_softmax"));
        QCOMPARE(format::demangle("_Zbroken"), std::string("_Zbroken"));
    }
};

QTEST_GUILESS_MAIN(TestTraceWriter)
#include "tst_tracewriter.moc"
