// The trace writer when writing fails during a recording, without a GPU: synthetic records go
// through the same path as CuptiSession's writer thread (ActivityDecoder when the collector is
// built, else TraceWriter directly), a batch per "buffer", committed as the session commits.
//  - a full disk: a 1 MB tmpfs when the test may mount one, and always RLIMIT_FSIZE with SIGXFSZ
//    ignored (writes then fail with EFBIG exactly where a full disk fails them);
//  - the output directory removed, or renamed, while recording.
// Each stops with an error naming the cause, later records are dropped quietly, the trace is
// finished as "incomplete" with the error stored, and everything committed before is kept.
// The figures (records produced against recovered) go to docs/robustness.md.

#include "traceerror.h"
#include "traceloader.h"
#include "tracewriter.h"

#ifdef WARPLINE_HAVE_DECODER
#include "activitydecoder.h"
#endif

#include <QDir>
#include <QTemporaryDir>
#include <QtTest>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <functional>
#include <sys/mount.h>
#include <sys/resource.h>
#include <unistd.h>

using namespace warpline;
using warpline::format::TraceWriteError;
using warpline::format::TraceWriter;

namespace {

constexpr int kPerBuffer = 2000; // records per CUPTI buffer (an 8 MB buffer holds ~50k)

// Feeds kernels to the writer as the session's writer thread does: decode a buffer, commit when
// due, and after the first write error roll back and drop the rest.
class FakeSession {
public:
    explicit FakeSession(TraceWriter& writer)
        : m_writer(writer)
#ifdef WARPLINE_HAVE_DECODER
          ,
          m_decoder(writer, kT0)
#endif
    {
    }

    // One buffer's worth of kernels; false once writing has failed.
    bool buffer() {
        for (int i = 0; i < kPerBuffer; ++i) {
            ++m_produced;
            if (!m_error.empty())
                continue; // dropped quietly, as CuptiSession drops buffers after an error
            try {
                addKernel(m_produced);
            } catch (const TraceWriteError& e) {
                fail(e);
            }
        }
        if (m_error.empty()) {
            try {
                m_writer.commit();
            } catch (const TraceWriteError& e) {
                fail(e);
            }
        }
        return m_error.empty();
    }

    const std::string& error() const {
        return m_error;
    }
    uint64_t produced() const {
        return m_produced;
    }

private:
    void fail(const TraceWriteError& e) {
        m_error = e.what();
        m_writer.rollBack();
    }

    void addKernel(uint64_t n) {
        const auto start = static_cast<int64_t>(n) * 1000;
#ifdef WARPLINE_HAVE_DECODER
        CUpti_ActivityKernel10 k;
        std::memset(&k, 0, sizeof k);
        k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        k.start = kT0 + static_cast<uint64_t>(start);
        k.end = k.start + 800;
        k.streamId = 7;
        k.correlationId = static_cast<uint32_t>(n);
        k.name = n % 2 ? "_Z4geluPfi" : "_Z7softmaxPf";
        k.gridX = static_cast<int32_t>(n % 64) + 1; // many launch configurations
        k.gridY = k.gridZ = 1;
        k.blockX = 128;
        k.blockY = k.blockZ = 1;
        m_decoder.decode(reinterpret_cast<const CUpti_Activity*>(&k));
#else
        warpline::format::KernelRecord k;
        k.start = start;
        k.end = start + 800;
        k.streamId = 7;
        k.correlationId = static_cast<uint32_t>(n);
        k.mangledName = n % 2 ? "_Z4geluPfi" : "_Z7softmaxPf";
        k.gridX = static_cast<int32_t>(n % 64) + 1;
        k.blockX = 128;
        m_writer.addKernel(k);
#endif
    }

    static constexpr uint64_t kT0 = 1'000'000'000'000ULL;
    TraceWriter& m_writer;
#ifdef WARPLINE_HAVE_DECODER
    collector::ActivityDecoder m_decoder;
#endif
    std::string m_error;
    uint64_t m_produced = 0;
};

// Lowers this process's file size limit (soft) for its lifetime; SIGXFSZ is ignored meanwhile,
// so an oversized write fails with EFBIG instead of killing the process.
class FileSizeLimit {
public:
    explicit FileSizeLimit(rlim_t bytes) {
        ::getrlimit(RLIMIT_FSIZE, &m_old);
        m_oldHandler = std::signal(SIGXFSZ, SIG_IGN);
        rlimit limit = m_old;
        limit.rlim_cur = bytes;
        m_ok = ::setrlimit(RLIMIT_FSIZE, &limit) == 0;
    }
    ~FileSizeLimit() {
        ::setrlimit(RLIMIT_FSIZE, &m_old);
        std::signal(SIGXFSZ, m_oldHandler);
    }
    bool ok() const { return m_ok; }

private:
    rlimit m_old{};
    void (*m_oldHandler)(int) = nullptr;
    bool m_ok = false;
};

struct Outcome {
    std::string error;
    uint64_t produced = 0;
    uint64_t committed = 0;
};

// Records until the writer fails (or `buffers` are done), then finishes as the recorder does.
Outcome recordUntilFailure(TraceWriter& w, int buffers, const std::function<void(int)>& between) {
    FakeSession session(w);
    int b = 0;
    for (; b < buffers && session.buffer(); ++b)
        between(b);
    // A few more buffers arrive after the error: dropped without a word.
    for (int more = 0; more < 3; ++more)
        session.buffer();
    Outcome o{session.error(), session.produced(), w.recordsCommitted()};
    return o;
}

} // namespace

class TestRobustnessWriter : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

    // Finishing after an error: the error row and status "incomplete", as warpline-record does.
    static void finishAfterError(TraceWriter& w, const Outcome& o) {
        w.addError(0, "writer", o.error);
        w.finish("incomplete");
    }

    // The trace holds exactly what was committed, says it is incomplete and why.
    static void checkRecovered(const QString& path, const Outcome& o, const QString& cause) {
        const model::TraceStore store = model::TraceLoader::load(path.toStdString());
        QCOMPARE(store.metaValue("status"), std::string("incomplete"));
        QCOMPARE(uint64_t(store.kernelCount()), o.committed);
        bool said = false;
        for (const std::string& w : store.warnings())
            said |= QString::fromStdString(w).contains("Collector error (writer): " +
                                                       QString::fromStdString(o.error));
        QVERIFY2(said, "the error is stored in the trace");
        QVERIFY2(QString::fromStdString(o.error).contains(cause), o.error.c_str());
        qInfo("%s: produced %llu kernel records, %llu in the trace (%.1f%%); error: %s",
              qPrintable(QFileInfo(path).fileName()), (unsigned long long)o.produced,
              (unsigned long long)o.committed, 100.0 * double(o.committed) / double(o.produced),
              o.error.c_str());
    }

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void fileSizeLimitActsAsAFullDisk() {
        const QString path = m_dir.filePath("limited.warpline");
        TraceWriter w(path.toStdString());
        w.setProcess(10, "workload");
        w.commit();
        Outcome o;
        const qint64 limitBytes = QFileInfo(path).size() + (1 << 20);
        {
            FileSizeLimit limit(static_cast<rlim_t>(limitBytes));
            QVERIFY(limit.ok());
            o = recordUntilFailure(w, 1000, [](int) {});
            QVERIFY2(!o.error.empty(), "1 MB filled up");
            QVERIFY(o.committed > 0);
            QVERIFY(o.produced > o.committed);
            finishAfterError(w, o); // within the limit: status and error row fit in place
        }
        QVERIFY(QFileInfo(path).size() <= limitBytes);
        checkRecovered(path, o, "the file reached the largest size this process may write");
    }

    void fullTmpfs() {
        if (::geteuid() != 0)
            QSKIP("mounting a 1 MB tmpfs needs root; the file size limit test covers a full disk");
        const QString mountPoint = m_dir.filePath("tiny");
        QVERIFY(QDir().mkpath(mountPoint));
        if (::mount("tmpfs", mountPoint.toUtf8().constData(), "tmpfs", 0, "size=1m") != 0)
            QSKIP(qPrintable("cannot mount a tmpfs here (" + QString(std::strerror(errno)) +
                             "); the file size limit test covers a full disk"));
        const QString path = mountPoint + "/full.warpline";
        Outcome o;
        {
            TraceWriter w(path.toStdString());
            w.setProcess(10, "workload");
            w.commit();
            o = recordUntilFailure(w, 1000, [](int) {});
            QVERIFY2(!o.error.empty(), "1 MB filled up");
            try {
                finishAfterError(w, o);
            } catch (const TraceWriteError& e) {
                ::umount2(mountPoint.toUtf8().constData(), MNT_DETACH);
                QFAIL(qPrintable(QString("could not finish on the full disk: ") + e.what()));
            }
        }
        // Read a copy: the tmpfs goes away with the test.
        const QString copy = m_dir.filePath("full-copy.warpline");
        QVERIFY(QFile::copy(path, copy));
        QVERIFY(!QFile::exists(path + "-journal"));
        ::umount2(mountPoint.toUtf8().constData(), MNT_DETACH);
        checkRecovered(copy, o, "the disk is full");
    }

    void outputDirectoryRemoved() {
        const QString dir = m_dir.filePath("vanishing");
        QVERIFY(QDir().mkpath(dir));
        const QString path = dir + "/gone.warpline";
        TraceWriter w(path.toStdString());
        w.setProcess(10, "workload");
        w.commit();
        const Outcome o = recordUntilFailure(w, 50, [&](int buffer) {
            if (buffer == 4)
                QDir(dir).removeRecursively();
        });
        QVERIFY2(QString::fromStdString(o.error).contains(
                     "the file was deleted, or its directory removed or renamed, while recording"),
                 o.error.c_str());
        QVERIFY(QString::fromStdString(o.error).contains(path));
        // Nothing can be written any more: finishing fails with the same cause, no crash.
        try {
            finishAfterError(w, o);
            QFAIL("finished a trace whose directory is gone");
        } catch (const TraceWriteError& e) {
            QVERIFY2(QString(e.what()).contains("deleted, or its directory removed"), e.what());
        }
        qInfo("directory removed after 5 buffers: produced %llu, committed %llu (the file is "
              "gone with its directory); error: %s",
              (unsigned long long)o.produced, (unsigned long long)o.committed, o.error.c_str());
    }

    void outputDirectoryRenamedKeepsWhatWasCommitted() {
        const QString dir = m_dir.filePath("moving");
        const QString moved = m_dir.filePath("moved");
        QVERIFY(QDir().mkpath(dir));
        const QString path = dir + "/moved.warpline";
        Outcome o;
        {
            TraceWriter w(path.toStdString());
            w.setProcess(10, "workload");
            w.commit();
            o = recordUntilFailure(w, 50, [&](int buffer) {
                if (buffer == 4)
                    QVERIFY(QDir().rename(dir, moved));
            });
            QVERIFY2(QString::fromStdString(o.error).contains("removed or renamed"),
                     o.error.c_str());
            try {
                finishAfterError(w, o);
            } catch (const TraceWriteError&) {
                // Expected: the journal cannot be created where the file was.
            }
        }
        // The moved file keeps every committed batch; it never got its final status.
        const model::TraceStore store =
            model::TraceLoader::load((moved + "/moved.warpline").toStdString());
        QCOMPARE(uint64_t(store.kernelCount()), o.committed);
        QCOMPARE(o.committed, uint64_t(5 * kPerBuffer));
        QCOMPARE(store.metaValue("status"), std::string("recording"));
        qInfo("directory renamed after 5 buffers: produced %llu, %llu in the moved file",
              (unsigned long long)o.produced, (unsigned long long)store.kernelCount());
    }

    void recordsAfterRollBackAreDropped() {
        const QString path = m_dir.filePath("stopped.warpline");
        TraceWriter w(path.toStdString());
        warpline::format::KernelRecord k;
        k.start = 10;
        k.end = 20;
        k.mangledName = "_Z1kv";
        w.addKernel(k);
        w.commit();
        w.addKernel(k); // in the batch the error ends
        w.rollBack();
        w.addKernel(k); // after the error: dropped
        QCOMPARE(w.recordsCommitted(), uint64_t(1));
        w.addError(0, "writer", "test");
        w.finish("incomplete");
        const model::TraceStore store = model::TraceLoader::load(path.toStdString());
        QCOMPARE(store.kernelCount(), size_t(1));
        QCOMPARE(store.metaValue("status"), std::string("incomplete"));
    }
};

QTEST_GUILESS_MAIN(TestRobustnessWriter)
#include "tst_robustness_writer.moc"
