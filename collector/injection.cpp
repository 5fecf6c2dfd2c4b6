// libwarpline-inject.so: records any CUDA program, unmodified.
//
// warpline-record -- PROGRAM sets CUDA_INJECTION64_PATH to this library; the CUDA driver loads it
// and calls InitializeInjection() inside the program's first cuInit. We start the same CUPTI
// session and trace writer as for the bundled workloads, writing to WARPLINE_OUTPUT (expanded:
// %p, %q{VAR}; a taken name gets a number), and finish the trace when the process exits.
//
// NVTX: NVTX_INJECTION64_PATH points here too (nvtxinjection.cpp).

#include "cuptisession.h"
#include "outputname.h"
#include "tracewriter.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cupti.h>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <memory>
#include <pthread.h>
#include <string>
#include <unistd.h>

using namespace warpline::collector;
namespace format = warpline::format;

namespace {

struct Recording {
    std::unique_ptr<format::TraceWriter> writer;
    std::unique_ptr<CuptiSession> session;
};

Recording* g_recording = nullptr;
std::atomic<bool> g_started{false};

std::string readFile(const char* path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string commandLine() {
    std::string s = readFile("/proc/self/cmdline");
    while (!s.empty() && s.back() == '\0')
        s.pop_back();
    for (char& c : s)
        if (c == '\0')
            c = ' ';
    return s;
}

std::string processName() {
    std::string s = readFile("/proc/self/comm");
    while (!s.empty() && (s.back() == '\n' || s.back() == '\0'))
        s.pop_back();
    return s;
}

void log(const std::string& message) {
    if (!std::getenv("WARPLINE_QUIET"))
        std::fprintf(stderr, "warpline-record: %s\n", message.c_str());
}

void finishRecording() {
    Recording* r = g_recording;
    g_recording = nullptr;
    if (!r)
        return;
    try {
        uint64_t now = 0;
        cuptiGetTimestamp(&now);
        r->session->stop();
        if (const std::string pair = CuptiSession::clockPair(); !pair.empty())
            r->writer->setMeta("cupti_monotonic_end", pair);
        r->writer->setMeta(
            "end_time", std::to_string(static_cast<int64_t>(now - r->session->startTimestamp())));
        r->writer->setMeta("dropped_records", std::to_string(r->session->droppedRecords()));
        if (const std::string stacks = r->session->pythonStacksSummary(); !stacks.empty())
            r->writer->setMeta("python_stacks", stacks);
        const std::string writeError = r->session->writeError();
        if (!writeError.empty())
            r->writer->addError(static_cast<int64_t>(now - r->session->startTimestamp()), "writer",
                                writeError);
        const uint64_t records = r->writer->recordsWritten();
        const std::string path = r->writer->path();
        r->writer->finish(writeError.empty() ? "complete" : "incomplete");
        if (records == 0 && writeError.empty()) {
            // A launcher (torchrun, mpirun, a shell script in Python) that initialised CUDA but
            // did no GPU work: an empty file per such process would only hide the ranks' traces.
            // warpline-record skips manifest entries whose file is gone.
            std::remove(path.c_str());
            log("process " + std::to_string(::getpid()) + " did no GPU work; no trace kept");
            return;
        }
        log("wrote " + std::to_string(records) + " records to " + path);
        if (!writeError.empty()) // an error: shown even with --quiet
            std::fprintf(
                stderr,
                "warpline-record: recording stopped writing early: %s; the trace keeps what "
                "was written before\n",
                writeError.c_str());
    } catch (const std::exception& e) {
        log(std::string("could not finish the trace: ") + e.what());
    }
    // The session and writer are left to the process's end: destroying CUPTI state during exit
    // races with the CUDA runtime's own teardown.
}

// A forked child shares the parent's recording state but not its threads: it must not touch it.
void abandonInChild() {
    g_recording = nullptr;
}

void appendManifest(const std::string& path) {
    const char* manifest = std::getenv("WARPLINE_MANIFEST");
    if (!manifest || !*manifest)
        return;
    const int fd = ::open(manifest, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    const std::string line = std::to_string(::getpid()) + "\t" + path + "\n";
    [[maybe_unused]] const ssize_t written = ::write(fd, line.data(), line.size());
    ::close(fd);
}

} // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
    if (g_started.exchange(true))
        return 1;
    auto recording = std::make_unique<Recording>();
    try {
        const char* pattern = std::getenv("WARPLINE_OUTPUT");
        const std::string path = format::expandOutputName(
            pattern && *pattern ? pattern : "warpline-%p.warpline", ::getpid());
        format::TraceWriter::Options writerOptions;
        writerOptions.numberIfExists = true;
        recording->writer = std::make_unique<format::TraceWriter>(path, writerOptions);
        format::TraceWriter& w = *recording->writer;
        CuptiSession::Options sessionOptions;
        sessionOptions.driverApi = !std::getenv("WARPLINE_NO_DRIVER_API");
        sessionOptions.essentialApiOnly = !std::getenv("WARPLINE_ALL_API");
        sessionOptions.synchronization = std::getenv("WARPLINE_SYNC_RECORDS") != nullptr;
        sessionOptions.pythonStacks = std::getenv("WARPLINE_PYTHON_STACKS") != nullptr;
        recording->session = std::make_unique<CuptiSession>(w, sessionOptions);

        recording->session->describeRecording(processName(), commandLine());
        w.commit();
        appendManifest(w.path());
        log("recording process " + std::to_string(::getpid()) + " into " + w.path());
    } catch (const std::exception& e) {
        log(std::string("cannot record this process: ") + e.what());
        return 0;
    }
    g_recording = recording.release();
    pthread_atfork(nullptr, nullptr, abandonInChild);
    std::atexit(finishRecording);
    return 1;
}
