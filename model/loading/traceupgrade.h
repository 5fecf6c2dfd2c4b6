#pragma once

// Upgrading a Warpline trace of an older format to the current one (docs/trace-format.md,
// "Format 1.x and what changed in 2.0"), for SQL and tools written against nsys exports: Warpline
// itself reads 1.x traces as they are. The file read is never changed; the result is written to
// a temporary file next to `to` and renamed into place, so an interrupted upgrade leaves no half
// file, and an existing `to` is replaced only when asked.

#include <string>

namespace warpline::model {

class TraceUpgrade {
public:
    // A Warpline trace whose format major version is older than the current one.
    static bool needsUpgrade(const std::string& path);
    // Writes the upgraded copy of `from` to `to`. Throws TraceError (not a Warpline 1.x trace,
    // `to` exists and !overwrite, a read or write failure) with a message a user can act on.
    static void upgrade(const std::string& from, const std::string& to, bool overwrite = false);
};

} // namespace warpline::model
