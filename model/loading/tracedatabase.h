#pragma once

// TraceDatabase: an SQLite trace opened for reading so that nothing the file (or a journal or WAL
// beside it) says can make SQLite write, create or delete a file of the user's (issue 27).
//
// Every connection goes through Warpline's guard VFS ("warpline-guard", over the default one):
//  - outside a private directory, only the database and its rollback journal may be opened, only
//    read-only, and only when they are regular files (a FIFO or a device would block or never
//    end); a WAL, a super-journal or any other file is refused, and nothing is deleted;
//  - inside a private directory (mkdtemp, mode 0700, removed with this object) SQLite may do what
//    it does with its own files.
// A trace that SQLite would have to write before it can read it is read from a private copy: one
// with a hot journal (the journal is replayed on the copy, after its super-journal pointer is
// removed: a crafted pointer would otherwise make SQLite delete the file it names), one in WAL
// mode or with a -wal beside it (the WAL's committed frames are folded into the copy, which is
// then an ordinary rollback-mode file: the page reader reads it as SQLite does, and no -shm is
// made beside the user's file). The copy keeps the holes of a sparse file (SEEK_DATA/SEEK_HOLE):
// a file whose length is mostly a hole is not written out as gigabytes of zeros.
//
// dataBytes(): the bytes a file really holds (its data extents; holes left out), from which the
// loader sizes its work budgets, so a sparse file cannot buy itself minutes of reading.
//
// Thread safety: open() may be called from any thread, on one object at a time per thread.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct sqlite3;

namespace warpline::model {

class TraceDatabase {
public:
    // Looks at `path` (display name `fileName`) and prepares it for reading: a private copy when
    // SQLite would otherwise write (see above). Throws TraceError when the file cannot be read
    // safely (not a regular file, no private directory could be made, the copy failed).
    TraceDatabase(std::string path, std::string fileName);
    ~TraceDatabase();
    TraceDatabase(const TraceDatabase&) = delete;
    TraceDatabase& operator=(const TraceDatabase&) = delete;

    // A read-only connection through the guard VFS; throws TraceError when SQLite cannot open it.
    // When the file turns out to have a hot journal (SQLITE_READONLY_ROLLBACK on first read),
    // call rollBack() and open again.
    sqlite3* open() const;
    // Whether a connection of open() meets a hot journal it may not roll back.
    static bool needsRollback(sqlite3* db);
    // Replays the hot journal on a private copy; later open() calls read the copy.
    void rollBack();

    // The file SQLite reads: the trace itself or its private copy.
    const std::string& readPath() const { return m_readPath; }
    // Writes what SQLite reads (readPath()) over `to`, an empty file of the caller's that is no
    // link, keeping holes; throws TraceError.
    void copyTo(const std::string& to) const;
    // What the reader should know: a journal rolled back, a WAL read, ...
    const std::vector<std::string>& warnings() const { return m_warnings; }

    // The bytes of `path` in data extents (a sparse file's holes left out); the apparent size
    // where the file system cannot tell. Opens a descriptor of the file only when it is sparse or
    // compressed (fewer blocks allocated than its length).
    static uint64_t dataBytes(const std::string& path);
    // Up to the first 100 bytes of a connection's database file, read through SQLite's own file
    // handle: opening the file a second time and closing it would drop the POSIX locks other
    // connections of this process hold on it. "" when unreadable.
    static std::string header(sqlite3* db);
    // Operations the guard VFS refused since the process started (for tests and diagnostics).
    static uint64_t refusedOperations();

private:
    void makePrivateDir();
    void removePrivateDir();
    void copyWithWal();

    std::string m_path;
    std::string m_fileName;
    std::string m_readPath;
    std::string m_privateDir; // "" until a private copy is made
    std::vector<std::string> m_warnings;
};

} // namespace warpline::model
