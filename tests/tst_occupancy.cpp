// Theoretical occupancy (model/analyses/occupancy.h): the calculator on hand-worked cases, hostile
// inputs, the kernels table and details panel on recorded traces, and CUDA's own answers from
// tests/gpu/occupancy_probe.cu when a probe output is committed (docs/probes/).

#include "details/eventdetails.h"
#include "occupancy.h"
#include "summaries.h"
#include "testdata.h"
#include "traceloader.h"

#include <QDir>
#include <QFile>
#include <QtTest>
#include <climits>
#include <map>

using namespace warpline::model;
using warpline::model::EventId;
using warpline::views::EventDetails;
using warpline::views::LoadedTrace;

namespace {

QString dataPath(const char* name) {
    return QDir(WARPLINE_TEST_DATA).filePath(name);
}

SmLimits cc(uint32_t major, uint32_t minor) {
    const auto l = smLimitsForComputeCapability(major, minor);
    if (!l)
        qFatal("no table entry for CC %u.%u", major, minor);
    return *l;
}

LaunchShape launch(int64_t threads, int64_t regs, int64_t staticSmem = 0, int64_t dynamicSmem = 0,
                   int64_t executed = 0) {
    return LaunchShape{threads, regs, staticSmem, dynamicSmem, executed};
}

constexpr uint8_t W = LimitWarps, R = LimitRegisters, S = LimitSharedMemory, B = LimitBlocks;

// "key=value key=value ... name=rest of line" -> map.
std::map<QString, QString> fields(const QString& line) {
    std::map<QString, QString> out;
    const qsizetype name = line.indexOf(QLatin1String(" name="));
    const QString head = name >= 0 ? line.left(name) : line;
    if (name >= 0)
        out[QStringLiteral("name")] = line.mid(name + 6);
    for (const QString& part : head.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
        const qsizetype eq = part.indexOf(QLatin1Char('='));
        if (eq > 0)
            out[part.left(eq)] = part.mid(eq + 1);
    }
    return out;
}

} // namespace

class TestOccupancy : public QObject {
    Q_OBJECT

private slots:
    void calculator_data() {
        QTest::addColumn<int>("major");
        QTest::addColumn<int>("minor");
        QTest::addColumn<qint64>("threads");
        QTest::addColumn<qint64>("regs");
        QTest::addColumn<qint64>("staticSmem");
        QTest::addColumn<qint64>("dynamicSmem");
        QTest::addColumn<qint64>("executed");
        QTest::addColumn<int>("blocks");
        QTest::addColumn<int>("warps");
        QTest::addColumn<double>("percent");
        QTest::addColumn<int>("limiters");
        // H100 (CC 9.0): 64 warps, 32 blocks, 64K registers, 228 KiB shared memory per SM.
        // 8 warps/block; 32 regs -> 1024 per warp, 16 warps per sub-partition: 8 blocks either way.
        QTest::newRow("H100 256 thr 32 regs")
            << 9 << 0 << 256LL << 32LL << 0LL << 0LL << 0LL << 8 << 64 << 100.0 << int(W | R);
        // 64 regs -> 2048 per warp, 8 warps per sub-partition, 32 per SM: 4 blocks.
        QTest::newRow("H100 256 thr 64 regs")
            << 9 << 0 << 256LL << 64LL << 0LL << 0LL << 0LL << 4 << 32 << 50.0 << int(R);
        // 48 KiB + the 1 KiB reserve = 50176 B per block; 233472 / 50176 = 4 blocks of 4 warps.
        QTest::newRow("H100 48 KiB dynamic")
            << 9 << 0 << 128LL << 32LL << 0LL << 49152LL << 0LL << 4 << 16 << 25.0 << int(S);
        QTest::newRow("H100 1024 thr")
            << 9 << 0 << 1024LL << 32LL << 0LL << 0LL << 0LL << 2 << 64 << 100.0 << int(W | R);
        QTest::newRow("H100 1024 thr 64 regs")
            << 9 << 0 << 1024LL << 64LL << 0LL << 0LL << 0LL << 1 << 32 << 50.0 << int(R);
        // 65 regs -> 2304 per warp: 73728 for 32 warps, over the 65536 a block may have.
        QTest::newRow("H100 1024 thr 65 regs: no fit")
            << 9 << 0 << 1024LL << 65LL << 0LL << 0LL << 0LL << 0 << 0 << 0.0 << int(R);
        // One warp per block: the 32-block limit binds first.
        QTest::newRow("H100 32 thr")
            << 9 << 0 << 32LL << 16LL << 0LL << 0LL << 0LL << 32 << 32 << 50.0 << int(B);
        // 3 warps/block, 40 regs -> 1280 per warp, 12 warps per sub-partition, 48 per SM.
        QTest::newRow("H100 96 thr 40 regs")
            << 9 << 0 << 96LL << 40LL << 0LL << 0LL << 0LL << 16 << 48 << 75.0 << int(R);
        // 100 threads take 4 whole warps.
        QTest::newRow("H100 100 thr")
            << 9 << 0 << 100LL << 32LL << 0LL << 0LL << 0LL << 16 << 64 << 100.0 << int(W | R);
        // 0 registers (an empty kernel): the register file does not limit.
        QTest::newRow("H100 0 regs")
            << 9 << 0 << 512LL << 0LL << 0LL << 0LL << 0LL << 4 << 64 << 100.0 << int(W);
        // The driver's 32 KiB carveout: 8 KiB + 1 KiB per block -> 3 blocks of 4 warps.
        QTest::newRow("H100 carveout 32 KiB")
            << 9 << 0 << 128LL << 32LL << 8192LL << 0LL << 32768LL << 3 << 12 << 18.75 << int(S);
        // A carveout smaller than one block cannot be what ran: the device's largest is used.
        QTest::newRow("H100 carveout too small") << 9 << 0 << 128LL << 32LL << 8192LL << 0LL
                                                 << 4096LL << 16 << 64 << 100.0 << int(W | R);
        // 227 KiB (the opt-in maximum) + 1 KiB fits once; 1 B more does not fit.
        QTest::newRow("H100 227 KiB")
            << 9 << 0 << 128LL << 32LL << 0LL << 232448LL << 0LL << 1 << 4 << 6.25 << int(S);
        QTest::newRow("H100 227 KiB + 1")
            << 9 << 0 << 128LL << 32LL << 0LL << 232449LL << 0LL << 0 << 0 << 0.0 << int(S);
        // RTX 30 (CC 8.6): 48 warps per SM, so 256-thread blocks fit 6 times.
        QTest::newRow("CC 8.6 256 thr")
            << 8 << 6 << 256LL << 32LL << 0LL << 0LL << 0LL << 6 << 48 << 100.0 << int(W);
        // Turing (CC 7.5): 64 KiB per SM, 256-byte units, no reserve: 4 blocks of 16 KiB.
        QTest::newRow("CC 7.5 16 KiB")
            << 7 << 5 << 128LL << 32LL << 16384LL << 0LL << 0LL << 4 << 16 << 50.0 << int(S);
        // V100 (CC 7.0): no shared memory, no reserve: shared memory does not limit.
        QTest::newRow("CC 7.0 64 thr")
            << 7 << 0 << 64LL << 16LL << 0LL << 0LL << 0LL << 32 << 64 << 100.0 << int(W | B);
        // A100 (CC 8.0): 100 B rounds to 128, + 1 KiB: 1152 B per block; 167936 / 1152 = 145.
        QTest::newRow("CC 8.0 100 B")
            << 8 << 0 << 32LL << 16LL << 100LL << 0LL << 0LL << 32 << 32 << 50.0 << int(B);
        // Hostile launch values: no crash, and a block that cannot launch gets 0 blocks.
        QTest::newRow("2048 threads")
            << 9 << 0 << 2048LL << 32LL << 0LL << 0LL << 0LL << 0 << 0 << 0.0 << int(W);
        QTest::newRow("256 regs") << 9 << 0 << 256LL << 256LL << 0LL << 0LL << 0LL << 0 << 0 << 0.0
                                  << int(R);
        QTest::newRow("huge regs")
            << 9 << 0 << 256LL << qint64(INT32_MAX) << 0LL << 0LL << 0LL << 0 << 0 << 0.0 << int(R);
        QTest::newRow("huge smem") << 9 << 0 << 256LL << 32LL << qint64(INT64_MAX)
                                   << qint64(INT64_MAX) << 0LL << 0 << 0 << 0.0 << int(S);
        QTest::newRow("huge executed") << 9 << 0 << 256LL << 32LL << 8192LL << 0LL
                                       << qint64(INT64_MAX) << 8 << 64 << 100.0 << int(W | R);
    }

    void calculator() {
        QFETCH(int, major);
        QFETCH(int, minor);
        QFETCH(qint64, threads);
        QFETCH(qint64, regs);
        QFETCH(qint64, staticSmem);
        QFETCH(qint64, dynamicSmem);
        QFETCH(qint64, executed);
        QFETCH(int, blocks);
        QFETCH(int, warps);
        QFETCH(double, percent);
        QFETCH(int, limiters);
        const Occupancy o = theoreticalOccupancy(
            launch(threads, regs, staticSmem, dynamicSmem, executed), cc(major, minor));
        QVERIFY2(o.known, o.unknownReason.c_str());
        QCOMPARE(int(o.activeBlocks), blocks);
        QCOMPARE(int(o.activeWarps), warps);
        QCOMPARE(o.percent, percent);
        QCOMPARE(int(o.limiters), limiters);
    }

    void sentence() {
        const Occupancy o = theoreticalOccupancy(launch(96, 40), cc(9, 0));
        QCOMPARE(occupancySentence(o),
                 std::string("75% (48 of 64 warps per SM; limited by registers: 40 regs/thread)"));
        const Occupancy tie = theoreticalOccupancy(launch(256, 32), cc(9, 0));
        QCOMPARE(occupancySentence(tie), std::string("100% (64 of 64 warps per SM; limited by "
                                                     "warps (block size): 8 warps/block and "
                                                     "registers: 32 regs/thread)"));
        const Occupancy smem = theoreticalOccupancy(launch(128, 32, 0, 49152), cc(9, 0));
        QCOMPARE(occupancySentence(smem),
                 std::string("25% (16 of 64 warps per SM; limited by shared memory: 49 KiB/block "
                             "of 228 KiB per SM)"));
        const Occupancy none = theoreticalOccupancy(launch(2048, 32), cc(9, 0));
        QVERIFY(occupancySentence(none).find("does not fit") != std::string::npos);
        QCOMPARE(occupancyLimiterText(W | R), std::string("warps (block size) and registers"));
        QCOMPARE(occupancyRangeText(50, 100), std::string("50\u2013100%"));
        QCOMPARE(occupancyRangeText(62.5, 62.5), std::string("62.5%"));
    }

    void unknownInputs() {
        const SmLimits h100 = cc(9, 0);
        for (const LaunchShape& l : {launch(0, 32), launch(-5, 32), launch(256, -1),
                                     launch(256, 32, -1), launch(256, 32, 0, INT64_MIN)}) {
            const Occupancy o = theoreticalOccupancy(l, h100);
            QVERIFY(!o.known);
            QVERIFY(!o.unknownReason.empty());
            QVERIFY(occupancySentence(o).rfind("unknown (", 0) == 0);
        }
        // Limits with zeros (never a division by zero).
        SmLimits zero;
        QVERIFY(!theoreticalOccupancy(launch(256, 32), zero).known);
        SmLimits noWarpSize = h100;
        noWarpSize.threadsPerWarp = 0;
        QVERIFY(!theoreticalOccupancy(launch(256, 32), noWarpSize).known);
    }

    void deviceLimits() {
        // No per-SM limits recorded (every trace before this change): the CC table.
        DeviceInfo d;
        d.computeMajor = 9;
        d.threadsPerWarp = 32;
        d.maxThreadsPerBlock = 1024;
        d.maxRegistersPerBlock = 65536;
        auto l = smLimitsOf(d);
        QVERIFY(l);
        QVERIFY(!l->fromTrace);
        QCOMPARE(l->maxWarpsPerSm, 64u);
        QCOMPARE(l->sharedMemoryPerSm, 228u * 1024);

        // Recorded limits win over the table (and make an unlisted CC usable).
        DeviceInfo future;
        future.computeMajor = 11;
        future.computeMinor = 0;
        std::string why;
        QVERIFY(!smLimitsOf(future, &why));
        QVERIFY2(why.find("11.0") != std::string::npos, why.c_str());
        future.maxWarpsPerSm = 48;
        future.maxBlocksPerSm = 24;
        future.maxRegistersPerSm = 65536;
        future.maxSharedMemoryPerSm = 100 * 1024;
        l = smLimitsOf(future);
        QVERIFY(l);
        QVERIFY(l->fromTrace);
        QCOMPARE(l->sharedMemoryPerBlockOptin, 99u * 1024); // CUPTI records none: carveout - 1 KiB
        QCOMPARE(theoreticalOccupancy(launch(256, 32), *l).percent, 100.0);

        // Implausible recorded values make the limits unknown, with the column named.
        DeviceInfo hostile = d;
        hostile.maxWarpsPerSm = 100000;
        QVERIFY(!smLimitsOf(hostile, &why));
        QVERIFY2(why.find("maxWarpsPerSm") != std::string::npos, why.c_str());
        hostile = d;
        hostile.threadsPerWarp = 7;
        QVERIFY(!smLimitsOf(hostile, &why));
        hostile = d;
        hostile.maxRegistersPerSm = 1;
        QVERIFY(!smLimitsOf(hostile));

        // No compute capability, or one older than Volta: unknown.
        QVERIFY(!smLimitsOf(DeviceInfo{}, &why));
        QVERIFY(!why.empty());
        DeviceInfo maxwell;
        maxwell.computeMajor = 5;
        maxwell.computeMinor = 2;
        QVERIFY(!smLimitsOf(maxwell));

        for (const auto& [major, minor] : {std::pair{7u, 0u},
                                           {7u, 5u},
                                           {8u, 0u},
                                           {8u, 6u},
                                           {8u, 7u},
                                           {8u, 9u},
                                           {9u, 0u},
                                           {10u, 0u},
                                           {12u, 0u}})
            QVERIFY(smLimitsForComputeCapability(major, minor));
    }

    // The recorded matmul trace (H100, no per-SM limits recorded: the CC 9.0 table): the kernels
    // table has the column filled for both kernels, and the details panel says why.
    void kernelsTableOnRecordedTrace() {
        const auto store = std::make_shared<TraceStore>(
            TraceLoader::load(dataPath("matmul.warpline").toStdString()));
        const Table table = kernelSummaryTable(*store, kernelSummary(*store));
        const int name = table.columnIndex("Name");
        const int occupancy = table.columnIndex("Theoretical Occupancy");
        const int limiter = table.columnIndex("Occupancy Limiter");
        QCOMPARE(occupancy, name + 1);
        QCOMPARE(limiter, name + 2);
        QCOMPARE(table.rowCount(), size_t(2));
        for (size_t r = 0; r < table.rowCount(); ++r) {
            const std::string kernel = std::get<std::string>(table.cell(r, size_t(name)));
            // matmulNaive: 16x16 threads, 32 regs; matmulTiled: 32x32 threads, 31 regs, 8 KiB
            // static shared memory in the driver's 32 KiB carveout (3 blocks fit; 2 by warps).
            QCOMPARE(std::get<std::string>(table.cell(r, size_t(occupancy))), std::string("100%"));
            QCOMPARE(std::get<std::string>(table.cell(r, size_t(limiter))),
                     std::string("warps (block size) and registers"));
            QVERIFY(kernel.find("matmul") != std::string::npos);
        }

        LoadedTrace trace;
        trace.store = store;
        bool found = false;
        for (uint32_t t = 0; t < store->gpuTracks().size() && !found; ++t) {
            const GpuTrack& track = store->gpuTracks()[t];
            for (size_t i = 0; i < track.size() && !found; ++i) {
                if (track.kind(i) != GpuOpKind::Kernel ||
                    store->text(store->kernelConfigs()[track.detail(i)].shortName) != "matmulTiled")
                    continue;
                found = true;
                const auto fields =
                    EventDetails::describe(trace, EventId::gpu(EventRef{t, uint32_t(i)}));
                const auto it = std::find_if(fields.begin(), fields.end(), [](const auto& f) {
                    return f.name == QStringLiteral("Theoretical occupancy");
                });
                QVERIFY(it != fields.end());
                QCOMPARE(it->value, QStringLiteral("100% (64 of 64 warps per SM; limited by "
                                                   "warps (block size): 32 warps/block and "
                                                   "registers: 31 regs/thread)"));
                QVERIFY(it->help.contains(QStringLiteral("2 by warps, 2 by registers, 3 by "
                                                         "shared memory, 32 by the block limit")));
                QVERIFY(it->help.contains(QStringLiteral("per SM: 32768 B, the carveout")));
            }
        }
        QVERIFY(found);
    }

    void kernelsTableGroupedByConfig() {
        const TraceStore store = TraceLoader::load(dataPath("gelu.warpline").toStdString());
        const Table table =
            kernelSummaryTable(store, kernelSummary(store, KernelGrouping::NameAndLaunchConfig),
                               KernelGrouping::NameAndLaunchConfig);
        const int occupancy = table.columnIndex("Theoretical Occupancy");
        QVERIFY(occupancy > table.columnIndex("BlockXYZ"));
        QVERIFY(table.rowCount() > 0);
        // 256 threads, 16 regs: 8 blocks by warps, 16 by registers.
        for (size_t r = 0; r < table.rowCount(); ++r) {
            QCOMPARE(std::get<std::string>(table.cell(r, size_t(occupancy))), std::string("100%"));
            QCOMPARE(std::get<std::string>(table.cell(r, size_t(occupancy + 1))),
                     std::string("warps (block size)"));
        }
    }

    // CUDA's answers from tests/gpu/occupancy_probe.cu against the calculator: with the limits the
    // probe read from the device (as a trace records them) and with the CC table's.
    void matchesCudaProbe() {
        QString path = qEnvironmentVariable("WARPLINE_OCCUPANCY_PROBE");
        if (path.isEmpty())
            path = QDir(WARPLINE_TEST_DATA).filePath("../../docs/probes/occupancy-h100.txt");
        // The H100's output is committed (docs/probes/): its absence is a failure, as is a
        // WARPLINE_OCCUPANCY_PROBE naming no file.
        WARPLINE_REQUIRE_DATA(path);
        QFile file(path);
        QVERIFY2(file.open(QIODevice::ReadOnly | QIODevice::Text), qPrintable(path));
        std::optional<SmLimits> recorded, table;
        int launches = 0;
        QStringList mismatches;
        while (!file.atEnd()) {
            const QString line = QString::fromUtf8(file.readLine()).trimmed();
            auto f = fields(line);
            const auto u = [&](const char* key) { return f[QLatin1String(key)].toUInt(); };
            if (line.startsWith(QLatin1String("device "))) {
                const QStringList version = f[QStringLiteral("cc")].split(QLatin1Char('.'));
                QCOMPARE(version.size(), 2);
                DeviceInfo d;
                d.computeMajor = version[0].toUInt();
                d.computeMinor = version[1].toUInt();
                d.threadsPerWarp = u("warpSize");
                d.maxThreadsPerBlock = u("maxThreadsPerBlock");
                d.maxRegistersPerBlock = u("regsPerBlock");
                d.maxRegistersPerSm = u("regsPerSm");
                d.maxSharedMemoryPerBlock = u("smemPerBlock");
                d.maxSharedMemoryPerBlockOptin = u("smemPerBlockOptin");
                d.maxSharedMemoryPerSm = u("smemPerSm");
                d.maxWarpsPerSm = u("maxThreadsPerSm") / u("warpSize");
                d.maxBlocksPerSm = u("maxBlocksPerSm");
                std::string why;
                recorded = smLimitsOf(d, &why);
                QVERIFY2(recorded, why.c_str());
                QCOMPARE(recorded->reservedSharedMemoryPerBlock, u("reservedSmemPerBlock"));
                table = smLimitsForComputeCapability(d.computeMajor, d.computeMinor);
                if (table) {
                    QCOMPARE(table->maxWarpsPerSm, recorded->maxWarpsPerSm);
                    QCOMPARE(table->maxBlocksPerSm, recorded->maxBlocksPerSm);
                    QCOMPARE(table->sharedMemoryPerSm, recorded->sharedMemoryPerSm);
                    QCOMPARE(table->sharedMemoryPerBlockOptin, recorded->sharedMemoryPerBlockOptin);
                    QCOMPARE(table->registersPerSm, recorded->registersPerSm);
                }
            } else if (line.startsWith(QLatin1String("launch "))) {
                QVERIFY2(recorded, "a launch line before the device line");
                const LaunchShape shape =
                    launch(u("block"), u("numRegs"), u("staticSmem"), u("dynSmem"));
                const int expected = f[QStringLiteral("blocks")].toInt();
                for (const auto* limits : {&*recorded, table ? &*table : nullptr}) {
                    if (!limits)
                        continue;
                    const Occupancy o = theoreticalOccupancy(shape, *limits);
                    if (!o.known || int(o.activeBlocks) != expected)
                        mismatches << QStringLiteral("%1 -> %2 (CUDA %3)%4")
                                          .arg(line)
                                          .arg(o.known ? int(o.activeBlocks) : -1)
                                          .arg(expected)
                                          .arg(limits == &*recorded ? "" : " [CC table]");
                }
                ++launches;
            }
        }
        QVERIFY2(launches > 0, "the probe output has no launch lines");
        QVERIFY2(mismatches.isEmpty(), qPrintable(mismatches.join(QLatin1Char('\n'))));
        qInfo("%d launches agree with CUDA (%s)", launches, qPrintable(path));
    }
};

QTEST_GUILESS_MAIN(TestOccupancy)
#include "tst_occupancy.moc"
