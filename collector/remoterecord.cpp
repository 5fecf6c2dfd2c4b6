#include "remoterecord.h"

#include "outputfile.h"
#include "outputname.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <iostream>
#include <optional>
#include <poll.h>
#include <spawn.h>
#include <sstream>
#include <stdexcept>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace warpline::collector {

namespace {

constexpr int kExitUsage = 2;
constexpr int kExitNotFound = 127; // a POSIX shell's "command not found"
constexpr int kExitSsh = 255;      // ssh's own failure (connection, authentication, host key)

void say(const std::string& message) {
    std::cerr << "warpline-record: " << message << "\n" << std::flush;
}

// `ssh` and its options: WARPLINE_SSH_COMMAND split at spaces, else "ssh". BatchMode: a password
// or a host key question would wait for a terminal the dialog does not have; ssh fails instead.
std::vector<std::string> sshCommand(const std::string& host) {
    std::vector<std::string> argv;
    const char* env = std::getenv("WARPLINE_SSH_COMMAND");
    std::istringstream words(env && *env ? env : "ssh");
    for (std::string w; words >> w;)
        argv.push_back(w);
    for (const char* o : {"-o", "BatchMode=yes", "-o", "ConnectTimeout=20", "-o",
                          "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4"})
        argv.emplace_back(o);
    argv.push_back(host);
    return argv;
}

struct Child {
    pid_t pid = -1;
    int out = -1; // its stdout (or -1: given a file)
    int err = -1; // its stderr
};

// Starts argv with stdin from /dev/null, stdout into a pipe (or `stdoutFd`), stderr into a pipe.
Child spawn(const std::vector<std::string>& argv, int stdoutFd = -1) {
    int outPipe[2] = {-1, -1}, errPipe[2];
    if ((stdoutFd < 0 && ::pipe2(outPipe, O_CLOEXEC) != 0) || ::pipe2(errPipe, O_CLOEXEC) != 0)
        throw std::runtime_error(std::string("cannot make a pipe: ") + std::strerror(errno));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, stdoutFd >= 0 ? stdoutFd : outPipe[1], 1);
    posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2);
    std::vector<char*> args;
    for (const std::string& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = -1;
    const int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (stdoutFd < 0)
        ::close(outPipe[1]);
    ::close(errPipe[1]);
    if (rc != 0) {
        if (stdoutFd < 0)
            ::close(outPipe[0]);
        ::close(errPipe[0]);
        throw std::runtime_error("cannot run " + argv[0] + ": " + std::strerror(rc) +
                                 (rc == ENOENT ? " (install OpenSSH's client: apt-get install "
                                                 "openssh-client)"
                                               : ""));
    }
    return {pid, stdoutFd < 0 ? outPipe[0] : -1, errPipe[0]};
}

int waitExit(pid_t pid) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

struct Captured {
    int status = 0;
    std::string out;
    std::string err;
};

// Runs argv to the end, keeping what it printed.
Captured capture(const std::vector<std::string>& argv, int stdoutFd = -1) {
    Child c = spawn(argv, stdoutFd);
    Captured r;
    std::vector<pollfd> fds;
    if (c.out >= 0)
        fds.push_back({c.out, POLLIN, 0});
    fds.push_back({c.err, POLLIN, 0});
    char buffer[65536];
    while (!fds.empty()) {
        if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR)
            break;
        for (size_t i = 0; i < fds.size();) {
            if (fds[i].revents == 0) {
                ++i;
                continue;
            }
            const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
            if (n > 0) {
                (fds[i].fd == c.err ? r.err : r.out).append(buffer, static_cast<size_t>(n));
                ++i;
            } else if (n < 0 && errno == EINTR) {
                ++i;
            } else {
                ::close(fds[i].fd);
                fds.erase(fds.begin() + static_cast<std::ptrdiff_t>(i));
            }
        }
    }
    r.status = waitExit(c.pid);
    return r;
}

std::vector<std::string> withCommand(std::vector<std::string> ssh, const std::string& command) {
    ssh.push_back("--");
    ssh.push_back(command);
    return ssh;
}

std::string lastLine(const std::string& text) {
    std::string line;
    std::istringstream lines(text);
    for (std::string l; std::getline(lines, l);) {
        if (!l.empty())
            line = l;
    }
    return line;
}

bool contains(const std::string& text, const char* what) {
    return text.find(what) != std::string::npos;
}

std::string timestamp() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    ::localtime_r(&now, &tm);
    char text[32];
    std::strftime(text, sizeof text, "%Y%m%d-%H%M%S", &tm);
    return text;
}

// The remote recorder is missing when its shell could not find or run it.
bool recorderMissing(const Captured& r) {
    return r.status == kExitNotFound || r.status == 126 ||
           (r.status != 0 && r.out.find("warpline-record") == std::string::npos &&
            (contains(r.err, "not found") || contains(r.err, "No such file")));
}

std::string noRecorderText(const RemoteRequest& q) {
    return "there is no " + q.recorder + " on " + q.host +
           " (or it cannot run there): install Warpline on " + q.host +
           ", or give the recorder's path there with --remote-recorder PATH";
}

} // namespace

std::string shellQuote(const std::string& text) {
    std::string out = "'";
    for (const char c : text) {
        if (c == '\'')
            out += "'\\''";
        else
            out += c;
    }
    return out + "'";
}

std::string sshFailureText(const std::string& host, const std::string& sshStderr) {
    const std::string why = lastLine(sshStderr);
    if (contains(sshStderr, "Could not resolve hostname"))
        return "cannot reach " + host +
               ": its name does not resolve (check the name, or its Host entry in ~/.ssh/config)";
    if (contains(sshStderr, "Host key verification failed") ||
        contains(sshStderr, "host key is known") ||
        contains(sshStderr, "REMOTE HOST IDENTIFICATION HAS CHANGED"))
        return host + "'s host key is not known here, or has changed: connect once with `ssh " +
               host + "` to check it and accept it, then record again";
    if (contains(sshStderr, "Permission denied") ||
        contains(sshStderr, "Too many authentication failures"))
        return host + " refused the login (" + why +
               "): Warpline logs in with your SSH keys and agent, never a password; put your key "
               "there with `ssh-copy-id " +
               host + "`, or check the user name";
    if (contains(sshStderr, "Connection refused") || contains(sshStderr, "timed out") ||
        contains(sshStderr, "No route to host") || contains(sshStderr, "Network is unreachable") ||
        contains(sshStderr, "Connection closed") || contains(sshStderr, "Connection reset"))
        return "cannot reach " + host + " (" + why +
               "): check that it is up, on this network and runs an SSH server";
    return "ssh to " + host + " failed" + (why.empty() ? std::string() : ": " + why);
}

int recordRemote(const RemoteRequest& q) {
    try {
        const std::vector<std::string> ssh = sshCommand(q.host);
        const std::string recorder = shellQuote(q.recorder);

        // 1. Is the recorder there, in this version?
        const Captured probe = capture(withCommand(ssh, recorder + " --version"));
        if (probe.status == kExitSsh) {
            say(sshFailureText(q.host, probe.err));
            return kExitUsage;
        }
        if (recorderMissing(probe)) {
            say(noRecorderText(q));
            return kExitUsage;
        }
        const std::string version = lastLine(probe.out);
        if (probe.status != 0 || version.rfind("warpline-record ", 0) != 0) {
            say(q.recorder + " --version on " + q.host + " did not answer as warpline-record" +
                (probe.err.empty() ? std::string() : ": " + lastLine(probe.err)));
            return kExitUsage;
        }
        const std::string theirs = version.substr(16);
        if (theirs != q.localVersion) {
            say(q.host + " has warpline-record " + theirs + ", this one is " + q.localVersion +
                ": install the same version on both, so the trace and its reader agree");
            return kExitUsage;
        }

        if (q.list) {
            const Captured list = capture(withCommand(ssh, recorder + " --list"));
            std::cout << list.out << std::flush;
            if (list.status != 0)
                say("--list on " + q.host + " failed: " + lastLine(list.err));
            return list.status == 0 ? 0 : kExitUsage;
        }

        // 2. The recording, passed through live.
        const bool absoluteDir = !q.traceDir.empty() && q.traceDir[0] == '/';
        // Named after the workload or program, never a path (fileStem): it stays in traceDir.
        const std::string file = format::fileStem(q.name) + "-" + timestamp() + "-" +
                                 std::to_string(::getpid()) + ".warpline";
        const std::string dirExpr =
            absoluteDir ? shellQuote(q.traceDir) : "\"$HOME\"/" + shellQuote(q.traceDir);
        const std::string remotePath = dirExpr + "/" + shellQuote(file);
        const std::string shownPath =
            q.host + ":" + (absoluteDir ? q.traceDir : "~/" + q.traceDir) + "/" + file;
        std::string command = "mkdir -p " + dirExpr + " && ";
        if (!q.directory.empty())
            command += "cd " + shellQuote(q.directory) + " && ";
        command += "echo warpline-remote-pid $$ >&2 && exec " + recorder;
        const auto dash = std::find(q.args.begin(), q.args.end(), "--");
        for (auto it = q.args.begin(); it != dash; ++it)
            command += " " + shellQuote(*it);
        command += " -o " + remotePath;
        for (auto it = dash; it != q.args.end(); ++it)
            command += " " + shellQuote(*it);

        sigset_t stop = q.stopSignals;
        const int signals = ::signalfd(-1, &stop, SFD_CLOEXEC);
        Child c = spawn(withCommand(ssh, command));
        std::string remotePid;
        std::string errLine;
        std::string allErr;
        int stoppedBy = 0;
        bool gaveUp = false; // a second stop signal: the host is no longer waited for
        std::vector<pollfd> fds = {{c.out, POLLIN, 0}, {c.err, POLLIN, 0}};
        if (signals >= 0)
            fds.push_back({signals, POLLIN, 0});
        size_t open = 2;
        char buffer[65536];
        while (open > 0) {
            if (::poll(fds.data(), fds.size(), -1) < 0) {
                if (errno == EINTR)
                    continue;
                break;
            }
            for (pollfd& p : fds) {
                if (p.revents == 0 || p.fd < 0)
                    continue;
                if (p.fd == signals) {
                    signalfd_siginfo info{};
                    if (::read(signals, &info, sizeof info) != sizeof info)
                        continue;
                    if (stoppedBy != 0) {
                        // Asked again: stop waiting for the host (what it records goes on
                        // there, and is said so below).
                        if (!gaveUp) {
                            gaveUp = true;
                            ::kill(c.pid, SIGKILL); // ssh runs with our stop signals blocked
                        }
                        continue;
                    }
                    stoppedBy = static_cast<int>(info.ssi_signo);
                    say("stopping the recording on " + q.host);
                    // As here: SIGTERM to the recorder (which passes it on to a recorded
                    // program); SIGINT to its whole process group, as Ctrl+C in a terminal
                    // reaches the program too (sshd starts the command in a session of its own,
                    // led by the recorder; where it does not, to the recorder alone).
                    if (!remotePid.empty())
                        capture(withCommand(ssh, stoppedBy == SIGINT
                                                     ? "kill -INT -- -" + remotePid +
                                                           " 2>/dev/null || kill -INT " + remotePid
                                                     : "kill -TERM " + remotePid));
                    else
                        ::kill(c.pid, SIGKILL); // ssh runs with our stop signals blocked
                    continue;
                }
                const ssize_t n = ::read(p.fd, buffer, sizeof buffer);
                if (n < 0 && errno == EINTR)
                    continue;
                if (n <= 0) {
                    ::close(p.fd);
                    p.fd = -1;
                    --open;
                    continue;
                }
                if (p.fd == c.out) {
                    std::cout.write(buffer, n);
                    std::cout.flush();
                    continue;
                }
                // Stderr, by lines: the remote recorder's pid is ours, the rest is shown.
                errLine.append(buffer, static_cast<size_t>(n));
                size_t nl;
                while ((nl = errLine.find('\n')) != std::string::npos) {
                    const std::string line = errLine.substr(0, nl);
                    errLine.erase(0, nl + 1);
                    if (remotePid.empty() && line.rfind("warpline-remote-pid ", 0) == 0) {
                        remotePid = line.substr(20);
                        continue;
                    }
                    allErr += line + "\n";
                    std::cerr << line << "\n" << std::flush;
                }
            }
        }
        if (!errLine.empty()) {
            allErr += errLine;
            std::cerr << errLine << "\n";
        }
        const int status = waitExit(c.pid);
        if (signals >= 0)
            ::close(signals);

        if (status == kExitSsh && remotePid.empty()) {
            say(sshFailureText(q.host, allErr));
            return kExitUsage;
        }
        if (status == kExitSsh || gaveUp) {
            say((gaveUp ? "stopped waiting for " + q.host + " (asked twice)"
                        : "the connection to " + q.host + " was lost while recording") +
                "; the recording may go on there, and its trace is kept at " + shownPath +
                " (copy it with: scp " + q.host + ":" + q.traceDir + "/" + file + " .)");
            return kExitUsage;
        }
        if (status == kExitUsage || status == kExitNotFound) {
            // The recorder's own reason, said again last with where it happened: the dialog
            // shows the last line.
            std::string reason = lastLine(allErr);
            if (reason.rfind("warpline-record: ", 0) == 0)
                reason.erase(0, 17);
            std::string why =
                status == kExitNotFound
                    ? noRecorderText(q)
                    : "on " + q.host + ": " + (reason.empty() ? "nothing was recorded" : reason);
            if (contains(allErr, "No space left on device"))
                why += " (the disk there is full: free space on " + q.host + ")";
            say(why);
            return kExitUsage;
        }

        // 3. The trace, copied back through OutputFile: into a new temporary file beside the
        // output, made with O_EXCL (never a planted link or someone else's file), renamed onto the
        // output once whole. The copy there is removed only after that, so each failure up to
        // then says where it is kept.
        const std::string keptThere = "; the trace is kept at " + shownPath +
                                      " (copy it with: scp " + q.host + ":" + q.traceDir + "/" +
                                      file + " .)";
        std::optional<format::OutputFile> output;
        try {
            output.emplace(q.output, q.force); // "appeared meanwhile": refused without --force
        } catch (const std::exception& e) {
            say(e.what() + keptThere);
            return kExitUsage;
        }
        const int fd = ::open(output->tempPath().c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            say("cannot write " + output->tempPath() + ": " + std::strerror(errno) + keptThere);
            return kExitUsage;
        }
        const Captured copy = capture(withCommand(ssh, "cat " + remotePath), fd);
        struct stat st {};
        const bool wrote = ::fstat(fd, &st) == 0 && ::close(fd) == 0;
        if (copy.status != 0 || !wrote || st.st_size == 0) {
            if (copy.status == kExitSsh)
                say("the connection to " + q.host + " was lost while copying the trace back; " +
                    "it is kept at " + shownPath);
            else
                say("no trace came back from " + q.host + " (" + lastLine(copy.err) +
                    "); the recording's own messages are above");
            return status != 0 ? status : kExitUsage;
        }
        try {
            output->commit();
        } catch (const std::exception& e) {
            say(e.what() + keptThere);
            return kExitUsage;
        }
        capture(withCommand(ssh, "rm -f " + remotePath));
        say("copied " + shownPath + " to " + q.output + " (" + std::to_string(st.st_size) +
            " bytes)");
        return stoppedBy != 0 && status == 0 ? 128 + stoppedBy : status;
    } catch (const std::exception& e) {
        say(e.what());
        return kExitUsage;
    }
}

} // namespace warpline::collector
