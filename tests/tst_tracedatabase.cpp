// TraceDatabase (model/loading/tracedatabase.h) and the loader's bounds, against files an attacker
// makes (issue 27): a hot journal naming a "super-journal" (SQLite's playback deletes the file it
// names), a -wal beside a file (SQLite reads it, and makes a -shm beside the file), a journal that
// is a FIFO, a schema row that is a decoy for the page reader, b-tree pages shared by many parents
// (SQLite walks every path), and a sparse file with a huge hole. Each case: nothing outside the
// test's own files is touched, the rows are SQLite's, and the read ends with rows or a clear error.

#include "pagereader.h"
#include "tracedatabase.h"
#include "traceerror.h"
#include "traceloader.h"
#include "traceupgrade.h"

#include <QCryptographicHash>
#include <QDir>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <cstring>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace warpline::model;

namespace {

QByteArray sha256(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    QCryptographicHash h(QCryptographicHash::Sha256);
    h.addData(&f);
    return h.result().toHex();
}

bool hasWarning(const TraceStore& store, const QString& text) {
    for (const std::string& w : store.warnings()) {
        if (QString::fromStdString(w).contains(text))
            return true;
    }
    return false;
}

// A plain SQLite connection (the reference implementation), closed on every way out.
class Sql {
public:
    explicit Sql(const QString& path, int flags = SQLITE_OPEN_READWRITE) {
        if (sqlite3_open_v2(path.toUtf8().constData(), &m_db, flags, nullptr) != SQLITE_OK)
            qFatal("cannot open %s", qPrintable(path));
    }
    ~Sql() { sqlite3_close(m_db); }
    Sql(const Sql&) = delete;
    Sql& operator=(const Sql&) = delete;
    void exec(const char* sql) {
        char* error = nullptr;
        if (sqlite3_exec(m_db, sql, nullptr, nullptr, &error) != SQLITE_OK)
            qFatal("%s: %s", sql, error ? error : "?");
    }
    int64_t integer(const char* sql) {
        sqlite3_stmt* st = nullptr;
        int64_t v = -1;
        if (sqlite3_prepare_v2(m_db, sql, -1, &st, nullptr) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        return v;
    }
    sqlite3* get() const { return m_db; }

private:
    sqlite3* m_db = nullptr;
};

void writeBe32(QByteArray& b, qsizetype at, uint32_t v) {
    b[at] = char(v >> 24);
    b[at + 1] = char(v >> 16);
    b[at + 2] = char(v >> 8);
    b[at + 3] = char(v);
}

QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

bool writeAll(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(bytes) == bytes.size();
}

// A table interior page whose `cells` cells and right-most pointer all name `child`.
QByteArray interiorPage(int pageSize, uint32_t child, int cells) {
    QByteArray page(pageSize, '\0');
    page[0] = char(0x05);
    page[3] = char(cells >> 8);
    page[4] = char(cells);
    int content = pageSize;
    for (int i = 0; i < cells; ++i) {
        content -= 5; // a 4-byte child and a 1-byte key
        writeBe32(page, content, child);
        page[content + 4] = char(i & 0x7F);
        page[12 + 2 * i] = char(content >> 8);
        page[12 + 2 * i + 1] = char(content);
    }
    page[5] = char(content >> 8);
    page[6] = char(content);
    writeBe32(page, 8, child);
    return page;
}

} // namespace

class TestTraceDatabase : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString path(const QString& name) const { return m_dir.filePath(name); }

    QString copyOfRecorded(const QString& trace, const QString& name) {
        const QString to = path(name);
        QFile::remove(to);
        if (!QFile::copy(QString(WARPLINE_TEST_DATA) + "/" + trace, to))
            qFatal("cannot copy %s", qPrintable(trace));
        QFile::setPermissions(to, QFile::ReadOwner | QFile::WriteOwner);
        return to;
    }

    // A recorder killed in the middle of a batch: the file and its hot journal, the batch having
    // deleted every kernel. Returns the trace's kernel count before the batch.
    int64_t killedRecording(const QString& p) {
        const QString source = copyOfRecorded("gelu.warpline", "source-" + QFileInfo(p).fileName());
        Sql writer(source);
        const int64_t kernels = writer.integer("SELECT count(*) FROM WARPLINE_KERNELS");
        writer.exec(
            "PRAGMA cache_size=2; BEGIN; DELETE FROM WARPLINE_KERNELS; INSERT INTO StringIds "
            "SELECT id + 100000, value || value || value FROM StringIds");
        QFile::remove(p);
        QFile::remove(p + "-journal");
        if (!QFile::copy(source, p) || !QFile::copy(source + "-journal", p + "-journal"))
            qFatal("cannot copy the killed recording");
        return kernels;
    }

    // Appends a super-journal record naming `super` to a journal (pager.c, writeSuperJournal):
    // page number, name, its length, its checksum, the journal magic.
    static void nameSuperJournal(const QString& journal, const QByteArray& super) {
        QByteArray bytes = readAll(journal);
        QByteArray record(4, '\0');
        writeBe32(record, 0, 0x40000000 / 4096 + 1);
        record += super;
        QByteArray tail(8, '\0');
        uint32_t sum = 0;
        for (const char c : super)
            sum += static_cast<uint32_t>(static_cast<signed char>(c));
        writeBe32(tail, 0, static_cast<uint32_t>(super.size()));
        writeBe32(tail, 4, sum);
        record += tail;
        record += QByteArray("\xd9\xd5\x05\xf9\x20\xa1\x63\xd7", 8);
        bytes += record;
        QVERIFY(writeAll(journal, bytes));
    }

private slots:
    void superJournalDeletesNothing() {
        // The reference first: SQLite itself, rolling back a copy of this journal, deletes the
        // file it names. So the crafted journal is a real attack.
        const QString victim = path("victim.txt");
        QVERIFY(writeAll(victim, "the user's file\n"));
        {
            const QString control = path("control.warpline");
            killedRecording(control);
            nameSuperJournal(control + "-journal", QFile::encodeName(victim));
            Sql plain(control);
            QVERIFY(plain.integer("SELECT count(*) FROM sqlite_master") > 0);
        }
        QVERIFY2(!QFile::exists(victim), "SQLite's own playback deletes the named file");

        QVERIFY(writeAll(victim, "the user's file\n"));
        const QString p = path("killed.warpline");
        const int64_t kernels = killedRecording(p);
        nameSuperJournal(p + "-journal", QFile::encodeName(victim));
        const QByteArray trace = sha256(p), journal = sha256(p + "-journal");

        const TraceStore store = TraceLoader::load(p.toStdString());
        QCOMPARE(int64_t(store.kernelCount()), kernels); // rolled back: the batch is left out
        QVERIFY(hasWarning(store, "hot journal"));
        QVERIFY(hasWarning(store, "named a super-journal"));
        QCOMPARE(readAll(victim), QByteArray("the user's file\n"));
        QCOMPARE(sha256(p), trace);
        QCOMPARE(sha256(p + "-journal"), journal);

        // The CLI as well.
        QProcess stats;
        stats.start(WARPLINE_STATS, {p, "--report", "kernels"});
        QVERIFY(stats.waitForFinished(60000));
        QCOMPARE(stats.exitCode(), 0);
        QCOMPARE(readAll(victim), QByteArray("the user's file\n"));
        QCOMPARE(QDir(QDir::tempPath()).entryList({"warpline-read-*"}, QDir::Dirs), QStringList());
    }

    void guardRefusesDeletesAndWrites() {
        // The guard VFS itself: outside a private copy nothing is deleted or created, a WAL or a
        // super-journal is never opened, and the database opens read-only whatever is asked.
        const QString p = copyOfRecorded("gelu.warpline", "guarded.warpline");
        const QString victim = path("victim2.txt");
        QVERIFY(writeAll(victim, "x"));
        const TraceDatabase db(p.toStdString(), "guarded.warpline"); // registers the guard
        sqlite3_vfs* vfs = sqlite3_vfs_find("warpline-guard");
        QVERIFY(vfs);
        const uint64_t refusedBefore = TraceDatabase::refusedOperations();
        QVERIFY(vfs->xDelete(vfs, victim.toUtf8().constData(), 0) != SQLITE_OK);
        QVERIFY(QFile::exists(victim));

        const auto name = [](const QString& file) {
            return sqlite3_create_filename(file.toUtf8().constData(), "", "", 0, nullptr);
        };
        std::vector<char> storage(size_t(vfs->szOsFile));
        auto* file = reinterpret_cast<sqlite3_file*>(storage.data());
        int out = 0;
        const struct {
            QString path;
            int flags;
        } refused[] = {
            {p + "-wal", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_WAL},
            {victim, SQLITE_OPEN_READONLY | SQLITE_OPEN_SUPER_JOURNAL},
            {path("new.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_MAIN_DB},
        };
        for (const auto& r : refused) {
            sqlite3_filename n = name(r.path);
            QVERIFY2(vfs->xOpen(vfs, n, file, r.flags, &out) != SQLITE_OK, qPrintable(r.path));
            QVERIFY(file->pMethods == nullptr);
            sqlite3_free_filename(n);
        }
        QVERIFY(!QFile::exists(p + "-wal"));
        QVERIFY(!QFile::exists(path("new.db")));
        QCOMPARE(TraceDatabase::refusedOperations(), refusedBefore + 4);

        sqlite3_filename n = name(p);
        QCOMPARE(vfs->xOpen(vfs, n, file,
                            SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_MAIN_DB, &out),
                 SQLITE_OK);
        QVERIFY(out & SQLITE_OPEN_READONLY);
        file->pMethods->xClose(file);
        sqlite3_free_filename(n);
    }

    void walBesideTheFileIsRead_data() {
        QTest::addColumn<bool>("rollbackHeader");
        QTest::newRow("WAL header") << false;
        // The header says rollback mode; SQLite reads the -wal all the same.
        QTest::newRow("rollback header") << true;
    }
    void walBesideTheFileIsRead() {
        QFETCH(bool, rollbackHeader);
        const QString source = copyOfRecorded("gelu.warpline", "wal-source.warpline");
        const QString dir = path(rollbackHeader ? "wal-rollback" : "wal-wal");
        QVERIFY(QDir().mkpath(dir));
        const QString p = dir + "/t.warpline";
        {
            Sql writer(source);
            writer.exec("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; INSERT INTO "
                        "WARPLINE_KERNELS SELECT * FROM WARPLINE_KERNELS");
            // What a crash leaves: the file and its WAL with committed frames.
            QVERIFY(QFile::copy(source, p) && QFile::copy(source + "-wal", p + "-wal"));
        }
        if (rollbackHeader) {
            QByteArray bytes = readAll(p);
            bytes[18] = 1;
            bytes[19] = 1;
            QVERIFY(writeAll(p, bytes));
        }
        int64_t expected = 0;
        {
            // The reference: SQLite on a scratch copy of both files.
            const QString scratch = path("scratch-" + QFileInfo(dir).fileName() + ".warpline");
            QVERIFY(QFile::copy(p, scratch) && QFile::copy(p + "-wal", scratch + "-wal"));
            Sql reference(scratch);
            expected = reference.integer("SELECT count(*) FROM WARPLINE_KERNELS");
        }
        QCOMPARE(expected, int64_t(2 * 189));
        const QByteArray trace = sha256(p), wal = sha256(p + "-wal");

        const TraceStore store = TraceLoader::load(p.toStdString());
        QCOMPARE(int64_t(store.kernelCount()), expected);
        QVERIFY(hasWarning(store, "write-ahead log"));
        QVERIFY(!hasWarning(store, "cut off")); // the copy's length, with the WAL's pages
        QCOMPARE(sha256(p), trace);
        QCOMPARE(sha256(p + "-wal"), wal);
        QCOMPARE(QDir(dir).entryList(QDir::Files | QDir::Hidden | QDir::System),
                 (QStringList{"t.warpline", "t.warpline-wal"})); // no -shm made beside it
    }

    void walHeaderWithoutWal() {
        const QString dir = path("walmode");
        QVERIFY(QDir().mkpath(dir));
        const QString p = dir + "/t.warpline";
        QVERIFY(QFile::copy(QString(WARPLINE_TEST_DATA) + "/gelu.warpline", p));
        QFile::setPermissions(p, QFile::ReadOwner | QFile::WriteOwner);
        {
            Sql writer(p);
            writer.exec("PRAGMA journal_mode=WAL");
        }
        QVERIFY(!QFile::exists(p + "-wal"));
        const QByteArray before = sha256(p);
        const TraceStore store = TraceLoader::load(p.toStdString());
        QCOMPARE(store.kernelCount(), size_t(189));
        QCOMPARE(sha256(p), before);
        QCOMPARE(QDir(dir).entryList(QDir::Files | QDir::Hidden | QDir::System),
                 QStringList{"t.warpline"});
    }

    void fifoJournalDoesNotHang() {
        // A FIFO where the journal would be: SQLite cannot look into it, takes it as hot, and the
        // copy that would roll it back refuses it: an error, never a blocked open.
        const QString p = copyOfRecorded("gelu.warpline", "fifo.warpline");
        QCOMPARE(::mkfifo((p + "-journal").toUtf8().constData(), 0600), 0);
        try {
            TraceLoader::load(p.toStdString());
            QFAIL("a trace with a FIFO for a journal loaded");
        } catch (const TraceError& e) {
            QVERIFY2(QString(e.what()).contains("fifo.warpline-journal: it is not a regular file"),
                     e.what());
        }
        QVERIFY(QFileInfo(p + "-journal").exists());
    }

    void fifoTraceIsRefused() {
        const QString p = path("pipe.warpline");
        QCOMPARE(::mkfifo(p.toUtf8().constData(), 0600), 0);
        try {
            TraceLoader::load(p.toStdString());
            QFAIL("a FIFO loaded");
        } catch (const TraceError& e) {
            QVERIFY2(QString(e.what()).contains("not a regular file"), e.what());
        }
    }

    void decoySchemaRow() {
        // The real table's schema row typed 'Table' (SQLite runs its SQL all the same), and a
        // second row named WARPLINE_KERNELS, typed 'table', pointing at 10 other kernels, whose
        // CREATE TABLE IF NOT EXISTS SQLite skips: a lookup of the schema's rows finds the decoy.
        const QString p = copyOfRecorded("gelu.warpline", "decoy.warpline");
        int64_t real = 0;
        {
            Sql writer(p);
            writer.exec(
                "CREATE TABLE decoy AS SELECT * FROM WARPLINE_KERNELS LIMIT 10; "
                "PRAGMA writable_schema=ON; UPDATE sqlite_schema SET type = 'Table' WHERE "
                "name = 'WARPLINE_KERNELS'; UPDATE sqlite_schema SET rowid = 100000, name = "
                "'WARPLINE_KERNELS', tbl_name = 'WARPLINE_KERNELS', sql = 'CREATE TABLE IF "
                "NOT EXISTS WARPLINE_KERNELS(x)' WHERE name = 'decoy'");
        }
        {
            Sql reference(p, SQLITE_OPEN_READONLY);
            real = reference.integer("SELECT count(*) FROM WARPLINE_KERNELS");
            const int64_t decoyRoot = reference.integer(
                "SELECT rootpage FROM sqlite_schema WHERE type = 'table' AND name = "
                "'WARPLINE_KERNELS'");
            QVERIFY(decoyRoot > 0);
            QVERIFY(decoyRoot != reference.integer("SELECT rootpage FROM sqlite_schema WHERE "
                                                   "type = 'Table'"));
            // The page reader reads the table SQLite reads.
            std::string whyNot;
            auto reader = PageReader::open(reference.get(), "WARPLINE_KERNELS",
                                           {{"start", PageReader::Type::Integer}}, &whyNot);
            QVERIFY2(reader, whyNot.c_str());
            int64_t rows = 0;
            while (reader->next())
                ++rows;
            QVERIFY(!reader->stopped());
            QCOMPARE(rows, real);
        }
        QCOMPARE(real, int64_t(189));
        const TraceStore store = TraceLoader::load(p.toStdString());
        QCOMPARE(int64_t(store.kernelCount()), real);
    }

    void sharedPagesAreBounded_data() {
        QTest::addColumn<QString>("table");
        QTest::addColumn<QString>("message");
        // Every row is read: more rows than the file holds.
        QTest::newRow("kernels") << "WARPLINE_KERNELS"
                                 << "more rows than a file of its size";
        // Every row is filtered out: no row ever comes, but the pages fetched run past the file.
        QTest::newRow("filtered NVTX") << "NVTX_EVENTS"
                                       << "visited more pages than the file has";
    }
    void sharedPagesAreBounded() {
        // Three levels of interior pages, each of whose 401 children is the one page below: a
        // DAG without a cycle, 401^3 paths to the table's leaf, which SQLite walks one by one.
        QFETCH(QString, table);
        QFETCH(QString, message);
        const QString p = copyOfRecorded("gelu.warpline", "dag-" + table + ".warpline");
        const std::string name = table.toStdString();
        uint32_t leaf = 0, pages = 0;
        {
            Sql writer(p);
            writer.exec(("DELETE FROM " + name +
                         " WHERE rowid > 20; UPDATE NVTX_EVENTS SET "
                         "eventType = 12345; VACUUM")
                            .c_str());
            leaf = uint32_t(writer.integer(
                ("SELECT rootpage FROM sqlite_schema WHERE name = '" + name + "'").c_str()));
            pages = uint32_t(writer.integer("PRAGMA page_count"));
            const std::string root = std::to_string(pages + 3);
            writer.exec(("PRAGMA writable_schema=ON; UPDATE sqlite_schema SET rootpage = " + root +
                         " WHERE name = '" + name + "'")
                            .c_str());
        }
        QByteArray bytes = readAll(p);
        QCOMPARE(bytes.size(), qsizetype(pages) * 4096);
        bytes += interiorPage(4096, leaf, 400);
        bytes += interiorPage(4096, pages + 1, 400);
        bytes += interiorPage(4096, pages + 2, 400);
        writeBe32(bytes, 28, pages + 3);
        QVERIFY(writeAll(p, bytes));
        try {
            TraceLoader::load(p.toStdString());
            QFAIL("a b-tree of shared pages loaded");
        } catch (const TraceError& e) {
            qInfo("%s", e.what());
            QVERIFY2(QString(e.what()).contains(message), e.what());
        }
    }

    void sparseFileIsNotCopiedAsZeros() {
        // A trace followed by a 20 GiB hole (the header's page count leaves it out), with a hot
        // journal: the private copy keeps the hole, and the budgets count the bytes held.
        const QString p = path("sparse.warpline");
        killedRecording(p);
        const qint64 held = QFileInfo(p).size();
        QVERIFY(::truncate(p.toUtf8().constData(), off_t(20) << 30) == 0);
        struct stat st {};
        QCOMPARE(::stat(p.toUtf8().constData(), &st), 0);
        QVERIFY2(uint64_t(st.st_blocks) * 512 < (uint64_t(1) << 30),
                 "this file system keeps holes (tests run on one that does)");
        QVERIFY(TraceDatabase::dataBytes(p.toStdString()) <= uint64_t(held) + (1 << 20));
        TraceDatabase db(p.toStdString(), "sparse.warpline");
        const QString copy = path("sparse-copy.warpline");
        QVERIFY(writeAll(copy, {}));
        db.copyTo(copy.toStdString());
        QCOMPARE(::stat(copy.toUtf8().constData(), &st), 0);
        QCOMPARE(st.st_size, off_t(20) << 30);
        QVERIFY(uint64_t(st.st_blocks) * 512 < (uint64_t(64) << 20));
        db.rollBack(); // its private copy: the same
        const TraceStore store = TraceLoader::load(p.toStdString());
        QCOMPARE(store.kernelCount(), size_t(189));
    }

    void upgradeGoesThroughTheGuard() {
        // A 1.x trace with a hot journal naming a victim: the upgrade reads a rolled-back copy.
        const QDir formats(QString(WARPLINE_TEST_DATA) + "/format-1.0");
        const QStringList old = formats.entryList({"*.sqlite"}, QDir::Files);
        QVERIFY(!old.isEmpty());
        const QString p = path("old.warpline");
        QVERIFY(QFile::copy(formats.filePath(old.first()), p));
        QFile::setPermissions(p, QFile::ReadOwner | QFile::WriteOwner);
        const QString victim = path("victim3.txt");
        QVERIFY(writeAll(victim, "y"));
        {
            Sql writer(p);
            writer.exec("PRAGMA cache_size=2; BEGIN; INSERT INTO WARPLINE_META VALUES ('x', 'y')");
            QVERIFY(QFile::copy(p + "-journal", path("old.saved-journal")));
            QVERIFY(QFile::copy(p, path("old.saved")));
        }
        QFile::remove(p);
        QVERIFY(QFile::rename(path("old.saved"), p));
        QVERIFY(QFile::rename(path("old.saved-journal"), p + "-journal"));
        nameSuperJournal(p + "-journal", QFile::encodeName(victim));
        QVERIFY(TraceUpgrade::needsUpgrade(p.toStdString()));
        TraceUpgrade::upgrade(p.toStdString(), path("new.warpline").toStdString());
        QVERIFY(QFile::exists(victim));
        QVERIFY(QFile::exists(p + "-journal"));
        const TraceStore upgraded = TraceLoader::load(path("new.warpline").toStdString());
        QVERIFY(upgraded.kernelCount() > 0);
    }
};

QTEST_GUILESS_MAIN(TestTraceDatabase)
#include "tst_tracedatabase.moc"
