#pragma once

// Errors the model reports to its callers. Messages are written for the person who opened the file:
// they name the file and say what to do ("... was written by a newer Warpline (format 2.0); update
// Warpline to open it").

#include <stdexcept>
#include <string>

namespace warpline::model {

class TraceError : public std::runtime_error {
public:
    enum class Kind {
        NotFound,     // the path does not exist or is not readable
        NotATrace,    // not SQLite, empty, or SQLite without the tables of a trace
        NewerVersion, // PRAGMA user_version has a major version this build does not read
        Corrupt,      // SQLite reported an error while reading rows
        Locked,       // another program holds a write lock on the file for longer than we wait
        TooLarge,     // the file holds more events than this machine has memory for
    };

    TraceError(Kind kind, const std::string& message) : std::runtime_error(message), m_kind(kind) {}
    Kind kind() const { return m_kind; }

private:
    Kind m_kind;
};

// Thrown by TraceLoader::load when the progress callback returned false. Not a TraceError: the
// user asked for it, so callers usually show nothing.
class LoadCancelled : public std::runtime_error {
public:
    LoadCancelled() : std::runtime_error("loading cancelled") {}
};

} // namespace warpline::model
