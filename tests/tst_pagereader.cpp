// PageReader (model/loading/pagereader.h) and the loader on top of it: reading a table from its
// b-tree pages gives exactly the rows SQL gives, on every committed trace and on files made to
// hit each case where the reader stops and SQL goes on from the next rowid (REAL values, spilled
// records, short records with defaults, damaged pages), and the reader refuses what it does not
// read (WAL, WITHOUT ROWID, rowid aliases, generated columns).

#include "pagereader.h"
#include "traceerror.h"
#include "traceloader.h"
#include "tst_model_tracebuilder.h"

#include <QDirIterator>
#include <QTemporaryDir>
#include <QtTest>
#include <limits>
#include <sstream>

using namespace warpline::model;

namespace {

std::string str(const QString& s) {
    return s.toStdString();
}

// Everything a store holds, as text: two stores are the same when these are equal.
std::string describe(const TraceStore& s) {
    std::ostringstream o;
    o << "begin " << s.beginTime() << " end " << s.endTime() << " origin " << int(s.origin())
      << " version " << s.formatVersion() << "\n";
    for (const std::string& w : s.warnings())
        o << "warning " << w << "\n";
    for (const ProcessInfo& p : s.processes())
        o << "process " << p.globalPid << " " << s.text(p.name) << "\n";
    for (const ThreadInfo& t : s.threads()) {
        o << "thread " << t.globalTid << " " << s.text(t.name) << " api";
        for (const uint32_t i : t.apiTracks)
            o << " " << i;
        o << " nvtx";
        for (const uint32_t i : t.nvtxTracks)
            o << " " << i;
        o << "\n";
    }
    for (const StreamInfo& st : s.streams())
        o << "stream " << st.deviceId << "/" << st.contextId << "/" << st.streamId << " "
          << s.text(st.name) << " " << st.priority << " tracks " << st.gpuTracks.size() << "\n";
    for (const KernelConfig& c : s.kernelConfigs())
        o << "config " << s.text(c.demangledName) << " " << s.text(c.shortName) << " "
          << s.text(c.mangledName) << " " << c.gridX << "," << c.gridY << "," << c.gridZ << " "
          << c.blockX << "," << c.blockY << "," << c.blockZ << " " << c.registersPerThread << " "
          << c.staticSharedMemory << " " << c.dynamicSharedMemory << " " << c.launchType << "\n";
    for (const MemOpInfo& m : s.memOps())
        o << "memop " << m.bytes << " " << int(m.copyKind) << " " << int(m.srcKind) << " "
          << int(m.dstKind) << " " << m.value << "\n";
    for (const SyncEvent& e : s.syncs())
        o << "sync " << e.start << " " << e.end << " " << e.streamId << " " << e.correlationId
          << " " << int(e.syncType) << " " << e.apiCall.track << ":" << e.apiCall.index << "\n";
    for (const ApiTrack& t : s.apiTracks()) {
        o << "apitrack " << t.threadIndex() << " " << t.depth() << "\n";
        for (size_t i = 0; i < t.size(); ++i) {
            o << t.start(i) << " " << t.end(i) << " " << s.text(t.name(i)) << " "
              << t.correlationId(i) << " " << t.returnValue(i) << " " << int(t.domain(i));
            for (const EventRef& r : t.gpuOps(i))
                o << " >" << r.track << ":" << r.index;
            o << "\n";
        }
    }
    for (const GpuTrack& t : s.gpuTracks()) {
        o << "gputrack " << t.streamIndex() << " " << t.deviceId() << " " << t.lane() << "\n";
        for (size_t i = 0; i < t.size(); ++i)
            o << t.start(i) << " " << t.end(i) << " " << int(t.kind(i)) << " " << s.text(t.name(i))
              << " " << t.correlationId(i) << " " << t.detail(i) << " " << t.graphId(i) << " <"
              << t.launch(i).track << ":" << t.launch(i).index << "\n";
    }
    for (const NvtxTrack& t : s.nvtxTracks()) {
        o << "nvtxtrack " << t.threadIndex() << " " << int(t.style()) << " " << t.depth() << "\n";
        for (size_t i = 0; i < t.size(); ++i)
            o << t.start(i) << " " << t.end(i) << " " << s.text(t.name(i)) << " " << t.color(i)
              << " " << s.text(t.domain(i)) << " " << t.isUnclosed(i) << "\n";
    }
    return o.str();
}

// The store read both ways, or both ways' error.
std::pair<std::string, std::string> loadBothWays(const QString& path) {
    std::pair<std::string, std::string> r;
    for (const bool pages : {true, false}) {
        TraceLoader::Options options;
        options.readPages = pages;
        std::string& out = pages ? r.first : r.second;
        try {
            out = describe(TraceLoader::load(str(path), options));
        } catch (const TraceError& e) {
            out = std::string("error: ") + e.what();
        }
    }
    return r;
}

// The rows PageReader gives for `columns` of `table`, one line each, and how it ended.
struct Scan {
    std::vector<std::string> rows;
    bool stopped = false;
    std::string reason;
    int64_t lastRowid = 0;
};
Scan scan(sqlite3* db, const std::string& table, const std::vector<PageReader::Column>& columns) {
    Scan s;
    std::string whyNot;
    const auto r = PageReader::open(db, table, columns, &whyNot);
    if (!r) {
        s.stopped = true;
        s.reason = "refused: " + whyNot;
        return s;
    }
    while (r->next()) {
        std::string row;
        for (size_t c = 0; c < columns.size(); ++c) {
            const int i = static_cast<int>(c);
            row += r->isNull(i)                                ? "NULL"
                   : columns[c].type == PageReader::Type::Text ? "'" + std::string(r->text(i)) + "'"
                                                               : std::to_string(r->i64(i));
            row += "|";
        }
        s.rows.push_back(row);
    }
    s.stopped = r->stopped();
    s.reason = r->stopReason();
    s.lastRowid = r->lastRowid();
    return s;
}

// The same rows by SQL (sqlite3_column_int64 / _text), up to maxRowid.
std::vector<std::string> sqlRows(sqlite3* db, const std::string& sql) {
    std::vector<std::string> rows;
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
        return {"prepare failed: " + std::string(sqlite3_errmsg(db))};
    while (sqlite3_step(st) == SQLITE_ROW) {
        std::string row;
        for (int c = 0; c < sqlite3_column_count(st); ++c) {
            const int type = sqlite3_column_type(st, c);
            row += type == SQLITE_NULL ? "NULL"
                   : type == SQLITE_TEXT
                       ? "'" +
                             std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, c)),
                                         static_cast<size_t>(sqlite3_column_bytes(st, c))) +
                             "'"
                       : std::to_string(sqlite3_column_int64(st, c));
            row += "|";
        }
        rows.push_back(row);
    }
    sqlite3_finalize(st);
    return rows;
}

sqlite3* openDb(const QString& path) {
    sqlite3* db = nullptr;
    sqlite3_open_v2(path.toUtf8().constData(), &db, SQLITE_OPEN_READONLY, nullptr);
    return db;
}

PageReader::Column integer(const char* name) {
    return {name, PageReader::Type::Integer};
}
PageReader::Column text(const char* name) {
    return {name, PageReader::Type::Text};
}

} // namespace

class TestPageReader : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString path(const QString& name) const { return m_dir.filePath(name); }

    // A table of n rows over several b-tree levels: integers of every width, NULLs, negatives,
    // text.
    QString makeTable(const QString& name, int n, const std::string& extraSql = {}) {
        const QString p = path(name);
        QFile::remove(p);
        std::string sql = "CREATE TABLE t (a INTEGER, b INTEGER, c TEXT, d INTEGER); BEGIN;";
        sql += "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < " +
               std::to_string(n) +
               ") INSERT INTO t SELECT CASE WHEN i % 11 = 0 THEN NULL ELSE i * (1 << (i % 40)) "
               "END, -i, CASE WHEN i % 7 = 0 THEN NULL ELSE 'text ' || i END, -(i * (1 << (i % "
               "47))) FROM n;";
        sql += "COMMIT;" + extraSql;
        const std::string error = execSql(p, sql);
        if (!error.empty())
            qFatal("%s", error.c_str());
        return p;
    }

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    // Every committed trace loads into the same store either way.
    void committedTracesLoadTheSameEitherWay() {
        QStringList files;
        for (const QString& root : {QString::fromUtf8(WARPLINE_TEST_DATA),
                                    QString::fromUtf8(WARPLINE_SOURCE_DIR) + "/resources"}) {
            QDirIterator it(root, {"*.warpline", "*.sqlite"}, QDir::Files,
                            QDirIterator::Subdirectories);
            while (it.hasNext())
                files << it.next();
        }
        files << qEnvironmentVariable("WARPLINE_MODEL_TRACES").split(':', Qt::SkipEmptyParts);
        QVERIFY2(files.size() >= 20, qPrintable(QString::number(files.size())));
        for (const QString& f : files) {
            const auto [pages, sql] = loadBothWays(f);
            QVERIFY2(pages.rfind("error", 0) != 0,
                     qPrintable(f + ": " + QString::fromStdString(pages)));
            QVERIFY2(pages == sql, qPrintable(f));
        }
    }

    void readsWhatSqlReads() {
        const QString p = makeTable("plain.sqlite", 60000);
        sqlite3* db = openDb(p);
        const Scan s = scan(
            db, "t", {integer("a"), integer("b"), text("c"), integer("d"), integer("missing")});
        QVERIFY2(!s.stopped, s.reason.c_str());
        const auto expected = sqlRows(db, "SELECT a, b, c, d, NULL FROM t");
        QCOMPARE(s.rows.size(), size_t(60000));
        QVERIFY(s.rows == expected);
        // Columns in another order, and a subset.
        const Scan t = scan(db, "T", {text("c"), integer("a")});
        QVERIFY(t.rows == sqlRows(db, "SELECT c, a FROM t"));
        QCOMPARE(sqlite3_close(db), SQLITE_OK);
    }

    void readsAfterDeletesAndUpdates() {
        const QString p =
            makeTable("edited.sqlite", 30000,
                      "DELETE FROM t WHERE b % 3 = 0; UPDATE t SET c = 'a much longer text ' || "
                      "c || c || c WHERE b % 5 = 0; INSERT INTO t VALUES (1, 2, 'x', 3);");
        sqlite3* db = openDb(p);
        const Scan s = scan(db, "t", {integer("a"), integer("b"), text("c"), integer("d")});
        QVERIFY2(!s.stopped, s.reason.c_str());
        QVERIFY(s.rows == sqlRows(db, "SELECT a, b, c, d FROM t"));
        QCOMPARE(sqlite3_close(db), SQLITE_OK);
    }

    // Each case the reader does not decode: it stops after the last row it read, and SQL from the
    // next rowid gives the rest.
    void stopsWhereSqlMustGoOn_data() {
        QTest::addColumn<QString>("edit");
        QTest::addColumn<QString>("reason");
        QTest::newRow("real") << "UPDATE t SET a = 2.5 WHERE rowid = 5000"
                              << "not an integer";
        QTest::newRow("text in an integer column") << "UPDATE t SET a = 'x' WHERE rowid = 5000"
                                                   << "not an integer";
        QTest::newRow("blob") << "UPDATE t SET a = x'00' WHERE rowid = 5000"
                              << "not an integer";
        QTest::newRow("blob in a text column") << "UPDATE t SET c = x'4142' WHERE rowid = 5000"
                                               << "not text";
        QTest::newRow("overflow pages")
            << "UPDATE t SET c = printf('%.*c', 20000, 'x') WHERE rowid = 5000"
            << "overflow pages";
        QTest::newRow("short record, default") << "ALTER TABLE t ADD COLUMN e INTEGER DEFAULT 7"
                                               << "default";
    }
    void stopsWhereSqlMustGoOn() {
        QFETCH(QString, edit);
        QFETCH(QString, reason);
        const QString p = makeTable("stop.sqlite", 20000, str(edit));
        sqlite3* db = openDb(p);
        std::vector<PageReader::Column> columns = {integer("a"), integer("b"), text("c")};
        if (edit.contains("ADD COLUMN"))
            columns.push_back(integer("e"));
        const Scan s = scan(db, "t", columns);
        QVERIFY(s.stopped);
        QVERIFY2(QString::fromStdString(s.reason).contains(reason), s.reason.c_str());
        const std::string select =
            edit.contains("ADD COLUMN") ? "SELECT a, b, c, e FROM t" : "SELECT a, b, c FROM t";
        const int64_t expectedLast = edit.contains("ADD COLUMN") ? INT64_MIN : 4999;
        if (expectedLast == INT64_MIN) {
            QVERIFY(s.rows.empty());
        } else {
            QCOMPARE(s.lastRowid, expectedLast);
            QVERIFY(s.rows == sqlRows(db, select + " WHERE rowid <= 4999"));
        }
        QCOMPARE(sqlite3_close(db), SQLITE_OK);
    }

    void refusesWhatItDoesNotRead_data() {
        QTest::addColumn<QString>("sql");
        QTest::addColumn<QString>("table");
        QTest::addColumn<QString>("reason");
        QTest::newRow("WAL") << "CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1); PRAGMA "
                                "journal_mode=WAL;"
                             << "t"
                             << "WAL";
        QTest::newRow("without rowid")
            << "CREATE TABLE t (b INTEGER PRIMARY KEY, a INTEGER) WITHOUT ROWID; INSERT INTO t "
               "VALUES (1, 2);"
            << "t"
            << "WITHOUT ROWID";
        QTest::newRow("rowid alias")
            << "CREATE TABLE t (a INTEGER PRIMARY KEY, b INTEGER); INSERT INTO t VALUES (1, 2);"
            << "t"
            << "primary key";
        QTest::newRow("a column named rowid")
            << "CREATE TABLE t (rowid INTEGER, a INTEGER); INSERT INTO t VALUES (1, 2);"
            << "t"
            << "rowid";
        QTest::newRow("generated column")
            << "CREATE TABLE t (b INTEGER, a INTEGER AS (b + 1)); INSERT INTO t (b) VALUES (1);"
            << "t"
            << "generated";
        QTest::newRow("view") << "CREATE TABLE u (a INTEGER); CREATE VIEW t AS SELECT a FROM u;"
                              << "t"
                              << "no stored table";
        QTest::newRow("virtual table") << "CREATE VIRTUAL TABLE t USING fts5(a);"
                                       << "t"
                                       << "virtual";
    }
    void refusesWhatItDoesNotRead() {
        QFETCH(QString, sql);
        QFETCH(QString, table);
        QFETCH(QString, reason);
        const QString p = path("refuse.sqlite");
        QFile::remove(p);
        QFile::remove(p + "-wal");
        QCOMPARE(execSql(p, str(sql)), std::string());
        sqlite3* db = openDb(p);
        const Scan s = scan(db, str(table), {integer("a")});
        QCOMPARE(sqlite3_close(db), SQLITE_OK);
        QVERIFY2(QString::fromStdString(s.reason).startsWith("refused") &&
                     QString::fromStdString(s.reason).contains(reason),
                 s.reason.c_str());
    }

    // Damaged pages: wherever the damage is, the reader never reads past it, and the loader gives
    // what SQL gives (the same rows, or the same error).
    void damagedPagesLoadAsSqlReadsThem() {
        const QString clean = path("clean.warpline");
        {
            TraceBuilder b(clean);
            b.process("app");
            for (int i = 0; i < 3000; ++i) {
                b.runtime(i * 10, i * 10 + 5, 1 + i % 2, i + 1, "cudaLaunchKernel_v7000");
                b.kernel({.start = 100 + i * 10, .end = 100 + i * 10 + 7, .correlation = i + 1});
                b.nvtx(59, i * 10, i * 10 + 9, 1, "step " + std::to_string(i));
            }
        }
        QFile f(clean);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray bytes = f.readAll();
        f.close();
        const int pageSize = 4096;
        const int pages = bytes.size() / pageSize;
        QVERIFY(pages > 20);
        int same = 0;
        // Several kinds of damage at several places of every page after the schema.
        for (int page = 2; page <= pages; ++page) {
            for (const int at : {0, 3, 5, 8, 9, 100, 2000}) {
                QByteArray damaged = bytes;
                const int offset = (page - 1) * pageSize + at;
                damaged[offset] = static_cast<char>(damaged[offset] ^ (at == 0 ? 0x08 : 0x5A));
                const QString p = path("damaged.warpline");
                QFile out(p);
                QVERIFY(out.open(QIODevice::WriteOnly | QIODevice::Truncate));
                out.write(damaged);
                out.close();
                const auto [withPages, sql] = loadBothWays(p);
                QVERIFY2(withPages == sql,
                         qPrintable(QString("page %1 byte %2: %3 vs %4")
                                        .arg(page)
                                        .arg(at)
                                        .arg(QString::fromStdString(withPages.substr(0, 200)))
                                        .arg(QString::fromStdString(sql.substr(0, 200)))));
                ++same;
            }
        }
        QCOMPARE(same, (pages - 1) * 7);
    }

    // NVTX_EVENTS is read with a filter (the event types the loader takes): when the reader
    // stops, SQL goes on past the rows the reader gave that matched, not past every row it
    // looked at. Rows of another type (a category name, 33) before the stop would otherwise skip
    // as many ranges after it.
    void filteredTableResumesAfterTheMatchingRows() {
        const QString p = path("filtered.warpline");
        constexpr int kRanges = 25;
        {
            TraceBuilder b(p);
            b.process("app");
            for (int i = 0; i < kRanges; ++i) {
                b.runtime(i * 100, i * 100 + 5, 1, i + 1, "cudaLaunchKernel_v7000");
                b.kernel({.start = i * 100 + 10, .end = i * 100 + 20, .correlation = i + 1});
                for (int k = 0; k < 3; ++k)
                    b.nvtx(33, i * 100, 0, 1, "category " + std::to_string(k));
                // The fifth range's name spills onto overflow pages: the reader stops there.
                b.nvtx(59, i * 100, i * 100 + 50, 1,
                       i == 4 ? std::string(20000, 'x') : "range " + std::to_string(i));
            }
        }
        const auto [pages, sql] = loadBothWays(p);
        QCOMPARE(QString::fromStdString(pages), QString::fromStdString(sql));
        const TraceStore store = TraceLoader::load(str(p));
        size_t ranges = 0;
        for (const NvtxTrack& t : store.nvtxTracks())
            ranges += t.size();
        QCOMPARE(ranges, size_t(kRanges));
        QCOMPARE(store.text(store.nvtxTracks().front().name(kRanges - 1)),
                 "range " + std::to_string(kRanges - 1));
    }

    // Rowids of every varint length, up to nine bytes (2^56 and more): the reader decodes them
    // as SQLite stores them (in order: a rowid out of order would stop it).
    void rowidsOfEveryLength() {
        const QString p = path("rowids.sqlite");
        QFile::remove(p);
        std::string sql = "CREATE TABLE t (a INTEGER); BEGIN;";
        for (int bits = 0; bits < 63; ++bits)
            sql += "INSERT INTO t (rowid, a) VALUES (" + std::to_string((int64_t(1) << bits) + 1) +
                   ", " + std::to_string(bits) + ");";
        sql += "INSERT INTO t (rowid, a) VALUES (9223372036854775807, 63); COMMIT;";
        const std::string error = execSql(p, sql);
        QVERIFY2(error.empty(), error.c_str());
        sqlite3* db = openDb(p);
        const Scan s = scan(db, "t", {integer("a")});
        QVERIFY2(!s.stopped, s.reason.c_str());
        QVERIFY(s.rows == sqlRows(db, "SELECT a FROM t"));
        QCOMPARE(s.rows.size(), size_t(64));
        QCOMPARE(s.lastRowid, std::numeric_limits<int64_t>::max());
        QCOMPARE(sqlite3_close(db), SQLITE_OK);
    }

    void cancelStopsTheReader() {
        const QString p = makeTable("cancel.sqlite", 50000);
        sqlite3* db = openDb(p);
        int asked = 0;
        auto r =
            PageReader::open(db, "t", {integer("a")}, nullptr, [&asked] { return ++asked < 3; });
        QVERIFY(r);
        int rows = 0;
        while (r->next())
            ++rows;
        QVERIFY(r->cancelled());
        QVERIFY(rows > 0 && rows < 50000);
        r.reset(); // its statement holds the read lock: finalized before the connection closes
        QCOMPARE(sqlite3_close(db), SQLITE_OK);
    }
};

QTEST_GUILESS_MAIN(TestPageReader)
#include "tst_pagereader.moc"
