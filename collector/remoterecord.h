#pragma once

// Recording on another machine over SSH (`warpline-record --host HOST ...`), the way Nsight
// Systems records on a remote target: the system's OpenSSH client, with the user's keys, agent and
// ~/.ssh/config (ProxyJump and all), never a password (BatchMode). Steps:
//  1. `ssh HOST REC --version`: is warpline-record there, and the same version as this one?
//  2. `ssh HOST REC ARGS -o REMOTE`: the recording, its progress and the program's output passed
//     through live. SIGTERM here stops it there (SIGTERM to the remote recorder, which passes it
//     on to a program); SIGINT here goes to the remote recorder's process group, like Ctrl+C in
//     a terminal. The trace it finishes is copied back like any other.
//  3. `ssh HOST cat REMOTE` into the local file through OutputFile (outputfile.h: a new temporary
//     file beside it, renamed onto it; never through a link), then the remote copy is removed.
//     Where the local file cannot be made, the remote copy stays and its path is shown.
// Every failure is one line in words: host unreachable, login refused, host key unknown, no
// warpline-record there, another version there, no GPU there, disk full there, and the connection
// lost mid-recording (the remote trace is kept; its path is shown).
// WARPLINE_SSH_COMMAND (environment) replaces `ssh`, split at spaces ("ssh -F my_config").
// No Qt, no CUDA.

#include <csignal>
#include <string>
#include <vector>

namespace warpline::collector {

struct RemoteRequest {
    std::string host;                         // [user@]host, or a Host of ~/.ssh/config
    std::string recorder = "warpline-record"; // on the remote host (its PATH, or a path)
    std::string directory;                    // remote working directory for -- PROGRAM ("": home)
    std::string traceDir = ".cache/warpline"; // remote folder of the trace, relative to home
    std::vector<std::string> args; // the remote recorder's arguments, without -o and --force
    bool list = false;             // --list: print the remote workloads, record nothing
    std::string output;            // local trace file
    bool force = false;            // replace `output` if it exists
    std::string localVersion;      // this warpline-record's version, for the comparison
    std::string name;              // what is recorded ("gelu", "python3"); names the remote file
                                   // through fileStem (outputname.h), so it stays in traceDir
    sigset_t stopSignals;          // blocked in every thread; they stop the recording
};

// Returns warpline-record's exit code: 0 recorded; 1 the workload failed (trace copied back);
// 2 usage or environment error, here or there (nothing written here); 130/143 stopped by
// SIGINT/SIGTERM (the trace is finished and copied back); a program's own status for -- PROGRAM.
int recordRemote(const RemoteRequest& request);

// The words for an ssh failure (exit status 255) from ssh's stderr; for tests.
std::string sshFailureText(const std::string& host, const std::string& sshStderr);

// `text` quoted for a POSIX shell ('...' with ' written as '\'').
std::string shellQuote(const std::string& text);

} // namespace warpline::collector
