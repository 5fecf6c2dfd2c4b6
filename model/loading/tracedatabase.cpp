#include "tracedatabase.h"

#include "traceerror.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <mutex>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

namespace warpline::model {

namespace {

namespace fs = std::filesystem;

constexpr const char* kVfsName = "warpline-guard";
// The last 8 bytes of a rollback journal that names a super-journal (pager.c, aJournalMagic).
constexpr unsigned char kJournalMagic[8] = {0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7};

// --- the guard VFS -------------------------------------------------------------------------------

struct Guard {
    sqlite3_vfs vfs{};
    sqlite3_vfs* base = nullptr;
    std::mutex mutex;
    std::vector<std::string> dirs; // private directories, each with a trailing '/'
    std::atomic<uint64_t> refused{0};

    // A file directly inside a private directory (no further '/': the directories are flat, so
    // no "..", no subdirectory and no link of the file's making can lead out of one).
    bool isPrivate(const char* path) {
        const std::string_view p(path);
        std::lock_guard<std::mutex> lock(mutex);
        for (const std::string& dir : dirs) {
            if (p.size() > dir.size() && p.compare(0, dir.size(), dir) == 0 &&
                p.find('/', dir.size()) == std::string_view::npos)
                return true;
        }
        return false;
    }
};

Guard& self(sqlite3_vfs* vfs) {
    return *static_cast<Guard*>(vfs->pAppData);
}

int refuse(Guard& g, sqlite3_file* file, int rc) {
    ++g.refused;
    if (file)
        file->pMethods = nullptr;
    return rc;
}

int guardOpen(sqlite3_vfs* vfs, sqlite3_filename name, sqlite3_file* file, int flags,
              int* outFlags) {
    Guard& g = self(vfs);
    // SQLite's own nameless temporary files (sorting, VACUUM), and anything in a private copy.
    if (!name || g.isPrivate(name))
        return g.base->xOpen(g.base, name, file, flags, outFlags);
    // The user's files: the database, and its journal only to see whether it is hot.
    if ((flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_MAIN_JOURNAL)) == 0)
        return refuse(g, file, SQLITE_CANTOPEN);
    struct stat st {};
    if (::stat(name, &st) != 0 || !S_ISREG(st.st_mode))
        return refuse(g, file, SQLITE_CANTOPEN);
    flags &= ~(SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_EXCLUSIVE |
               SQLITE_OPEN_DELETEONCLOSE);
    flags |= SQLITE_OPEN_READONLY;
    return g.base->xOpen(g.base, name, file, flags, outFlags);
}

int guardDelete(sqlite3_vfs* vfs, const char* name, int syncDir) {
    Guard& g = self(vfs);
    if (name && g.isPrivate(name))
        return g.base->xDelete(g.base, name, syncDir);
    return refuse(g, nullptr, SQLITE_IOERR_DELETE);
}

int guardAccess(sqlite3_vfs* vfs, const char* name, int flags, int* out) {
    Guard& g = self(vfs);
    return g.base->xAccess(g.base, name, flags, out);
}

int guardFullPathname(sqlite3_vfs* vfs, const char* name, int n, char* out) {
    Guard& g = self(vfs);
    return g.base->xFullPathname(g.base, name, n, out);
}

// No extension is ever loaded (SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION is off as well).
void* guardDlOpen(sqlite3_vfs*, const char*) {
    return nullptr;
}
void guardDlError(sqlite3_vfs*, int n, char* out) {
    if (n > 0)
        std::snprintf(out, static_cast<size_t>(n), "%s", "extensions are not loaded");
}
void (*guardDlSym(sqlite3_vfs*, void*, const char*))(void) {
    return nullptr;
}
void guardDlClose(sqlite3_vfs*, void*) {}

int guardRandomness(sqlite3_vfs* vfs, int n, char* out) {
    Guard& g = self(vfs);
    return g.base->xRandomness(g.base, n, out);
}
int guardSleep(sqlite3_vfs* vfs, int us) {
    Guard& g = self(vfs);
    return g.base->xSleep(g.base, us);
}
int guardCurrentTime(sqlite3_vfs* vfs, double* t) {
    Guard& g = self(vfs);
    return g.base->xCurrentTime(g.base, t);
}
int guardGetLastError(sqlite3_vfs* vfs, int n, char* out) {
    Guard& g = self(vfs);
    return g.base->xGetLastError ? g.base->xGetLastError(g.base, n, out) : 0;
}
int guardCurrentTimeInt64(sqlite3_vfs* vfs, sqlite3_int64* t) {
    Guard& g = self(vfs);
    if (g.base->iVersion >= 2 && g.base->xCurrentTimeInt64)
        return g.base->xCurrentTimeInt64(g.base, t);
    double days = 0;
    const int rc = g.base->xCurrentTime(g.base, &days);
    *t = static_cast<sqlite3_int64>(days * 86400000.0);
    return rc;
}

Guard& guard() {
    static Guard* g = [] {
        auto* made = new Guard(); // lives as long as the process: SQLite keeps the pointer
        made->base = sqlite3_vfs_find(nullptr);
        if (!made->base)
            throw TraceError(TraceError::Kind::NotFound, "SQLite has no file system layer");
        sqlite3_vfs& v = made->vfs;
        v.iVersion = 2;
        v.szOsFile = made->base->szOsFile;
        v.mxPathname = made->base->mxPathname;
        v.zName = kVfsName;
        v.pAppData = made;
        v.xOpen = guardOpen;
        v.xDelete = guardDelete;
        v.xAccess = guardAccess;
        v.xFullPathname = guardFullPathname;
        v.xDlOpen = guardDlOpen;
        v.xDlError = guardDlError;
        v.xDlSym = guardDlSym;
        v.xDlClose = guardDlClose;
        v.xRandomness = guardRandomness;
        v.xSleep = guardSleep;
        v.xCurrentTime = guardCurrentTime;
        v.xGetLastError = guardGetLastError;
        v.xCurrentTimeInt64 = guardCurrentTimeInt64;
        if (sqlite3_vfs_register(&v, 0) != SQLITE_OK)
            throw TraceError(TraceError::Kind::NotFound, "cannot set up SQLite's file layer");
        return made;
    }();
    return *g;
}

// --- files ---------------------------------------------------------------------------------------

// "file:/abs/path?..." with every byte outside [A-Za-z0-9/._~-] percent-encoded.
std::string sqliteUri(const std::string& path, bool readOnly) {
    std::string uri = "file:";
    const std::string absolute = fs::absolute(path).string();
    for (const char c : absolute) {
        const auto u = static_cast<unsigned char>(c);
        if (std::isalnum(u) || c == '/' || c == '.' || c == '-' || c == '_' || c == '~') {
            uri += c;
        } else {
            static const char hex[] = "0123456789ABCDEF";
            uri += '%';
            uri += hex[u >> 4];
            uri += hex[u & 15];
        }
    }
    return readOnly ? uri + "?mode=ro" : uri;
}

// A descriptor of a regular file opened for reading, or -1 (errno set; EINVAL: not a regular
// file). O_NONBLOCK: a FIFO planted at the name must not block the open.
int openRegular(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        errno = EINVAL;
        return -1;
    }
    return fd;
}

struct Fd {
    int fd;
    ~Fd() {
        if (fd >= 0)
            ::close(fd);
    }
};

// Calls f(offset, length) for each data extent of fd (size `size`), in order; false when the
// file system cannot tell (then the whole file is one extent).
template <typename F> void forEachExtent(int fd, uint64_t size, F f) {
    off_t pos = 0;
    for (unsigned n = 0; static_cast<uint64_t>(pos) < size; ++n) {
        const off_t data = ::lseek(fd, pos, SEEK_DATA);
        if (data < 0) {
            if (errno == ENXIO)
                return; // only a hole to the end
            f(static_cast<uint64_t>(pos), size - static_cast<uint64_t>(pos));
            return;
        }
        off_t hole = ::lseek(fd, data, SEEK_HOLE);
        if (hole < 0 || hole <= data || n >= (1u << 20))
            hole = static_cast<off_t>(size); // no answer, or absurdly many extents: the rest
        f(static_cast<uint64_t>(data), static_cast<uint64_t>(hole - data));
        pos = hole;
    }
}

bool writeAll(int fd, const char* p, size_t n, uint64_t at) {
    while (n > 0) {
        const ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(at));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= static_cast<size_t>(w);
        at += static_cast<uint64_t>(w);
    }
    return true;
}

// Copies regular file `from` to `to` (a new file, created exclusively, or with `existing` an empty
// file of ours; never through a link), keeping holes as holes. Throws TraceError naming `what`.
void copySparse(const std::string& from, const std::string& to, const std::string& what,
                bool existing = false) {
    const Fd in{openRegular(from)};
    if (in.fd < 0)
        throw TraceError(TraceError::Kind::Corrupt,
                         "cannot read " + what + ": " +
                             (errno == EINVAL ? std::string("it is not a regular file")
                                              : std::string(std::strerror(errno))));
    const Fd out{::open(to.c_str(),
                        O_WRONLY | O_NOFOLLOW | O_CLOEXEC | (existing ? O_TRUNC : O_CREAT | O_EXCL),
                        0600)};
    if (out.fd < 0)
        throw TraceError(TraceError::Kind::Corrupt,
                         "cannot copy " + what + " to read it safely: " + std::strerror(errno));
    struct stat st {};
    ::fstat(in.fd, &st);
    const auto size = static_cast<uint64_t>(st.st_size);
    std::vector<char> buffer(1 << 20);
    bool ok = true;
    forEachExtent(in.fd, size, [&](uint64_t at, uint64_t length) {
        while (ok && length > 0) {
            const size_t n = static_cast<size_t>(std::min<uint64_t>(length, buffer.size()));
            const ssize_t r = ::pread(in.fd, buffer.data(), n, static_cast<off_t>(at));
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0) {
                ok = r == 0; // the file shrank meanwhile: copy what there is
                length = 0;
                break;
            }
            ok = writeAll(out.fd, buffer.data(), static_cast<size_t>(r), at);
            at += static_cast<uint64_t>(r);
            length -= static_cast<uint64_t>(r);
        }
    });
    if (!ok || ::ftruncate(out.fd, static_cast<off_t>(size)) != 0)
        throw TraceError(TraceError::Kind::Corrupt, "cannot copy " + what + " to read it safely: " +
                                                        std::strerror(errno ? errno : EIO));
}

// Whether two regular files hold the same bytes: their lengths, and the ranges either holds data
// in (a hole reads as zeros), so a sparse file costs its data, not its length.
bool sameContent(const std::string& a, const std::string& b) {
    const Fd fa{openRegular(a)};
    const Fd fb{openRegular(b)};
    struct stat sa {
    }, sb{};
    if (fa.fd < 0 || fb.fd < 0 || ::fstat(fa.fd, &sa) != 0 || ::fstat(fb.fd, &sb) != 0 ||
        sa.st_size != sb.st_size)
        return false;
    std::vector<char> x(1 << 20), y(1 << 20);
    bool same = true;
    const auto compare = [&](uint64_t at, uint64_t length) {
        while (same && length > 0) {
            const size_t n = static_cast<size_t>(std::min<uint64_t>(length, x.size()));
            const ssize_t r = ::pread(fa.fd, x.data(), n, static_cast<off_t>(at));
            same = r > 0 &&
                   ::pread(fb.fd, y.data(), static_cast<size_t>(r), static_cast<off_t>(at)) == r &&
                   std::memcmp(x.data(), y.data(), static_cast<size_t>(r)) == 0;
            at += static_cast<uint64_t>(std::max<ssize_t>(r, 0));
            length -= std::min<uint64_t>(length, static_cast<uint64_t>(std::max<ssize_t>(r, 1)));
        }
    };
    const auto size = static_cast<uint64_t>(sa.st_size);
    forEachExtent(fa.fd, size, compare);
    forEachExtent(fb.fd, size, compare);
    return same;
}

// Removes the super-journal record's magic from the end of a journal copy, so that SQLite's
// playback finds no super-journal name (pager.c, readSuperJournal) and neither opens nor deletes
// the file it names. True when there was one.
bool stripSuperJournal(const std::string& journal) {
    const Fd fd{::open(journal.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC)};
    struct stat st {};
    if (fd.fd < 0 || ::fstat(fd.fd, &st) != 0 || st.st_size < 16)
        return false;
    unsigned char tail[8];
    if (::pread(fd.fd, tail, sizeof tail, st.st_size - 8) != 8 ||
        std::memcmp(tail, kJournalMagic, sizeof tail) != 0)
        return false;
    const unsigned char zeros[8] = {};
    return writeAll(fd.fd, reinterpret_cast<const char*>(zeros), sizeof zeros,
                    static_cast<uint64_t>(st.st_size - 8));
}

bool exists(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

void exec(sqlite3* db, const char* sql) {
    if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK)
        throw TraceError(TraceError::Kind::Corrupt, sqlite3_errmsg(db));
}

// Opens `path` through the guard read-write (a private copy) and lets SQLite do what it must
// before reading: roll back a hot journal, read a WAL. With `foldWal`, the WAL's committed
// frames are then written into the file and the WAL removed (journal_mode=DELETE).
void settle(const std::string& path, bool foldWal, const std::string& fileName) {
    sqlite3* db = nullptr;
    int rc = sqlite3_open_v2(sqliteUri(path, false).c_str(), &db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI, kVfsName);
    std::string error;
    if (rc == SQLITE_OK) {
        sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
        sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
        try {
            exec(db, "SELECT count(*) FROM sqlite_master");
            if (foldWal)
                exec(db, "PRAGMA journal_mode=DELETE");
        } catch (const TraceError& e) {
            error = e.what();
        }
    } else {
        error = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    }
    sqlite3_close(db);
    if (!error.empty())
        throw TraceError(TraceError::Kind::Corrupt,
                         "cannot read " + fileName + ": " + error +
                             " (while reading it from a private copy, which SQLite had to "
                             "change first; the file may be damaged)");
}

} // namespace

TraceDatabase::TraceDatabase(std::string path, std::string fileName)
    : m_path(std::move(path)), m_fileName(std::move(fileName)), m_readPath(m_path) {
    guard();
    // No descriptor of the file is opened and closed here: closing one drops every POSIX lock
    // this process holds on the file, a writer's included (SQLite keeps its own descriptors open
    // while any connection of the process holds a lock).
    struct stat st {};
    if (::stat(m_path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
        throw TraceError(TraceError::Kind::NotATrace,
                         m_fileName + " is not a regular file (a pipe, a device or a socket), so "
                                      "not a Warpline or Nsight Systems trace");
    // A WAL, or a header that says WAL mode: SQLite would read (or make) a -wal and make a -shm
    // beside the file. Read a private copy instead, with the WAL's committed frames folded in.
    bool wal = exists(m_path + "-wal");
    if (!wal) {
        sqlite3* probe = open();
        const std::string h = header(probe);
        sqlite3_close(probe);
        wal = h.size() >= 20 && h.compare(0, 16, std::string("SQLite format 3\0", 16)) == 0 &&
              (h[18] == 2 || h[19] == 2);
    }
    if (wal) {
        try {
            copyWithWal();
        } catch (...) {
            removePrivateDir(); // a constructor that throws runs no destructor
            throw;
        }
    }
}

TraceDatabase::~TraceDatabase() {
    removePrivateDir();
}

void TraceDatabase::removePrivateDir() {
    if (m_privateDir.empty())
        return;
    Guard& g = guard();
    {
        std::lock_guard<std::mutex> lock(g.mutex);
        g.dirs.erase(std::remove(g.dirs.begin(), g.dirs.end(), m_privateDir + "/"), g.dirs.end());
    }
    std::error_code ec;
    fs::remove_all(m_privateDir, ec);
    m_privateDir.clear();
}

void TraceDatabase::makePrivateDir() {
    if (!m_privateDir.empty())
        return;
    std::error_code ec;
    std::string pattern = (fs::temp_directory_path(ec) / "warpline-read-XXXXXX").string();
    if (ec || !::mkdtemp(pattern.data()))
        throw TraceError(TraceError::Kind::Corrupt,
                         "cannot read " + m_fileName +
                             " safely: SQLite must change it before reading it (a journal or "
                             "WAL is beside it), and no private temporary directory could be "
                             "made for a copy (set TMPDIR to a writable directory)");
    // SQLite names files by their full path with links resolved: register the same spelling.
    char real[PATH_MAX];
    m_privateDir = ::realpath(pattern.c_str(), real) ? std::string(real) : pattern;
    Guard& g = guard();
    std::lock_guard<std::mutex> lock(g.mutex);
    g.dirs.push_back(m_privateDir + "/");
}

void TraceDatabase::copyWithWal() {
    makePrivateDir();
    const std::string copy = m_privateDir + "/trace.warpline";
    copySparse(m_path, copy, m_fileName);
    const std::string wal = m_path + "-wal";
    const bool haveWal = exists(wal);
    if (haveWal)
        copySparse(wal, copy + "-wal", fs::path(wal).filename().string());
    settle(copy, true, m_fileName);
    m_readPath = copy;
    m_warnings.push_back(
        haveWal ? m_fileName + " has a write-ahead log beside it (" +
                      fs::path(wal).filename().string() +
                      "): its committed changes are read as SQLite reads them, from a private "
                      "copy. The file and its log were not changed."
                : m_fileName + " is in write-ahead-log mode: it is read from a private copy, so "
                               "that SQLite makes no files beside it. The file was not changed.");
}

sqlite3* TraceDatabase::open() const {
    sqlite3* db = nullptr;
    const int rc =
        sqlite3_open_v2(sqliteUri(m_readPath, true).c_str(), &db,
                        SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, kVfsName);
    if (rc != SQLITE_OK) {
        const std::string message = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
        sqlite3_close(db);
        throw TraceError(TraceError::Kind::NotFound, "cannot open " + m_path + ": " + message);
    }
    return db;
}

// A hot journal: a writer died in the middle of a transaction, and SQLite must roll it back (a
// write) before a read-only connection may read anything.
bool TraceDatabase::needsRollback(sqlite3* db) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master LIMIT 1", -1, &stmt, nullptr) ==
        SQLITE_OK)
        sqlite3_step(stmt);
    sqlite3_finalize(stmt);
    return sqlite3_extended_errcode(db) == SQLITE_READONLY_ROLLBACK;
}

void TraceDatabase::rollBack() {
    makePrivateDir();
    const std::string copy = m_privateDir + "/trace.warpline";
    const std::string journal = m_path + "-journal";
    const std::string journalName = fs::path(journal).filename().string();
    if (m_readPath == m_path)
        copySparse(m_path, copy, m_fileName);
    copySparse(journal, copy + "-journal", journalName);
    const bool stripped = stripSuperJournal(copy + "-journal");
    settle(copy, false, m_fileName);
    const bool changed = m_readPath == copy || !sameContent(m_readPath, copy);
    m_readPath = copy;
    const std::string super =
        stripped ? " It named a super-journal (another file, which Warpline's recorder never "
                   "writes); that name was removed first, so no other file was opened or deleted."
                 : "";
    m_warnings.push_back(
        changed ? "The recording stopped in the middle of writing (a hot journal, " + journalName +
                      ", is next to the file): its last unfinished batch is left out, as SQLite "
                      "rolls it back. The file itself was not changed." +
                      super
                : "A journal (" + journalName +
                      ") is next to the file, but rolling it back changed nothing: the file is "
                      "read as it is, and was not changed." +
                      super);
}

uint64_t TraceDatabase::dataBytes(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    // Fully allocated: no hole, and no descriptor opened (see the constructor). Only a sparse
    // (or compressed) file is asked for its extents.
    if (static_cast<uint64_t>(st.st_blocks) * 512 >= static_cast<uint64_t>(st.st_size))
        return static_cast<uint64_t>(st.st_size);
    const Fd fd{openRegular(path)};
    if (fd.fd < 0)
        return 0;
    uint64_t total = 0;
    forEachExtent(fd.fd, static_cast<uint64_t>(st.st_size),
                  [&total](uint64_t, uint64_t length) { total += length; });
    return total;
}

void TraceDatabase::copyTo(const std::string& to) const {
    copySparse(m_readPath, to, m_fileName, true);
}

std::string TraceDatabase::header(sqlite3* db) {
    sqlite3_file* file = nullptr;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK || !file ||
        !file->pMethods)
        return {};
    sqlite3_int64 size = 0;
    if (file->pMethods->xFileSize(file, &size) != SQLITE_OK)
        return {};
    std::string h(static_cast<size_t>(std::min<sqlite3_int64>(size, 100)), '\0');
    if (h.empty() ||
        file->pMethods->xRead(file, h.data(), static_cast<int>(h.size()), 0) != SQLITE_OK)
        return {};
    return h;
}

uint64_t TraceDatabase::refusedOperations() {
    return guard().refused.load();
}

} // namespace warpline::model
