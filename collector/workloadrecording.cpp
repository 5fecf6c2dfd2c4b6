#include "workloadrecording.h"

#include "cuptisession.h"
#include "tracewriter.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cupti.h>
#include <dlfcn.h>
#include <iomanip>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unistd.h>

namespace warpline::collector {

namespace {

constexpr int kExitOk = 0;
constexpr int kExitWorkloadFailed = 1;
constexpr int kExitUsage = 2;

sigset_t g_stopSignals;

[[noreturn]] void fail(const std::string& message) {
    std::cerr << "warpline-record: " << message << "\n";
    std::exit(kExitUsage);
}

std::string signalName(int sig) {
    if (sig == SIGINT)
        return "SIGINT";
    if (sig == SIGTERM)
        return "SIGTERM";
    return "signal " + std::to_string(sig);
}

// How a workload recording ended, for finishTrace.
struct Ending {
    std::string status; // "complete", "failed", "incomplete"
    int exitCode = 0;
    int signal = 0;                                          // the signal that stopped it, or 0
    std::vector<std::pair<std::string, std::string>> errors; // (source, message)
};

// Marks the trace with how the recording ended and closes it. A write error met while recording
// (disk full, file removed) makes it "incomplete" with the error stored; if even that cannot be
// written, says so on stderr: the trace keeps what was committed. Returns the records in the file.
uint64_t finishTrace(format::TraceWriter& writer, CuptiSession& session, uint64_t endTimestamp,
                     const Ending& ending) {
    const std::string writeError = session.writeError();
    const auto end = static_cast<int64_t>(endTimestamp - session.startTimestamp());
    try {
        writer.setMeta("end_time", std::to_string(end));
        writer.setMeta("dropped_records", std::to_string(session.droppedRecords()));
        writer.setMeta("exit_code", std::to_string(ending.exitCode));
        if (ending.signal != 0)
            writer.setMeta("exit_signal", std::to_string(ending.signal));
        for (const auto& [source, message] : ending.errors)
            writer.addError(end, source, message);
        if (!writeError.empty())
            writer.addError(end, "writer", writeError);
        const uint64_t records = writer.recordsWritten();
        writer.finish(writeError.empty() ? ending.status : "incomplete");
        return records;
    } catch (const std::exception& e) {
        std::cerr << "warpline-record: could not finish " << writer.path() << ": " << e.what()
                  << " (it keeps what was written before)\n";
        return writer.recordsCommitted();
    }
}

// The workload recording, for the signal thread; `mutex` is held by main while it sets the
// recording up and while it finishes it, so exactly one of them finishes the trace.
struct Recording {
    std::mutex mutex;
    format::TraceWriter* writer = nullptr;
    CuptiSession* session = nullptr;
    bool finished = false;
    std::function<void(const std::string&)> finishedCallback;
};
Recording g_recording;

// Waits for SIGINT or SIGTERM; finishes the trace as interrupted and exits 128 + signal.
void finishOnSignal() {
    const sigset_t set = g_stopSignals;
    int sig = 0;
    while (::sigwait(&set, &sig) != 0) {
    }
    std::lock_guard lock(g_recording.mutex);
    if (g_recording.finished)
        return; // the recording ended on its own first: main exits as usual
    if (!g_recording.writer) {
        std::cerr << "warpline-record: interrupted by " << signalName(sig)
                  << " before recording started; nothing written\n";
        std::_Exit(128 + sig);
    }
    uint64_t endTimestamp = 0;
    cuptiGetTimestamp(&endTimestamp);
    g_recording.session->stop();
    Ending ending{
        "incomplete", 128 + sig, sig, {{"collector", "interrupted by " + signalName(sig)}}};
    const uint64_t records =
        finishTrace(*g_recording.writer, *g_recording.session, endTimestamp, ending);
    std::cerr << "warpline-record: interrupted by " << signalName(sig) << ": wrote " << records
              << " records to " << g_recording.writer->path() << " (marked incomplete)\n";
    if (g_recording.finishedCallback)
        g_recording.finishedCallback(g_recording.writer->path());
    // The workload may still be running on the main thread: leave without running destructors
    // or exit handlers under it. The trace is closed.
    std::_Exit(128 + sig);
}

} // namespace

int recordWorkload(const WorkloadRecordingRequest& request) {
    // NVTX ranges reach CUPTI when NVTX loads this library as its injection library
    // (nvtxinjection.cpp); this must be set before the workload's first NVTX call.
    Dl_info self{};
    if (dladdr(reinterpret_cast<void*>(&recordWorkload), &self) && self.dli_fname)
        ::setenv("NVTX_INJECTION64_PATH", self.dli_fname, 0);

    g_stopSignals = request.stopSignals;
    std::thread(finishOnSignal).detach();
    std::unique_lock recordingLock(g_recording.mutex);
    const std::string& output = request.output;

    std::optional<format::TraceWriter> writer;
    try {
        format::TraceWriter::Options options;
        options.overwrite = request.force;
        writer.emplace(output, options);
    } catch (const format::TraceWriteError& e) {
        fail(e.what());
    }

    uint32_t cuptiVersion = 0;
    cuptiGetVersion(&cuptiVersion);

    std::optional<CuptiSession> session;
    try {
        CuptiSession::Options options;
        options.driverApi = request.driverApi;
        options.essentialApiOnly = !request.allApi;
        options.synchronization = request.syncRecords;
        // The process ends right after recording: no need to return to full speed, and a
        // signal may stop the session while the workload still makes CUDA calls.
        options.finalize = false;
        session.emplace(*writer, options);
    } catch (const CollectorError& e) {
        writer.reset();
        std::remove(output.c_str());
        fail(e.what());
    }

    session->describeRecording("warpline-record", request.commandLine);
    writer->setMeta("workload", request.workload);
    writer->setMeta("workload_args", request.workloadArgs);
    writer->setMeta("gpu", request.gpuNames);
    for (const auto& d : request.devices)
        writer->addDevice(d);
    writer->setMeta("cuda_driver_version", request.cudaDriverVersion);
    writer->setMeta("cuda_runtime_version", request.cudaRuntimeVersion);
    writer->setMeta("cupti_api_version", std::to_string(cuptiVersion));
    writer->commit();
    g_recording.writer = &*writer;
    g_recording.session = &*session;
    g_recording.finishedCallback = request.finished;
    recordingLock.unlock();

    if (!request.quiet)
        std::cerr << "warpline-record: recording " << request.workload << " ("
                  << request.workloadArgs << ") into " << output << "\n";
    const auto wallStart = std::chrono::steady_clock::now();
    WorkloadOutcome result;
    try {
        result = request.run([&request](const std::string& line) {
            if (!request.quiet)
                std::cerr << "warpline-record: " << request.workload << ": " << line << "\n";
        });
    } catch (const std::exception& e) {
        result = {false, e.what()};
    }
    recordingLock.lock();
    uint64_t endTimestamp = 0;
    cuptiGetTimestamp(&endTimestamp);
    session->stop();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();

    const std::string writeError = session->writeError();
    Ending ending{
        result.ok ? "complete" : "failed", result.ok ? kExitOk : kExitWorkloadFailed, 0, {}};
    if (!result.ok)
        ending.errors.emplace_back("workload", result.error);
    const uint64_t records = finishTrace(*writer, *session, endTimestamp, ending);
    g_recording.finished = true;
    recordingLock.unlock();
    if (request.finished)
        request.finished(output);

    if (!request.quiet || !result.ok)
        std::cerr << "warpline-record: wrote " << records << " records in " << std::fixed
                  << std::setprecision(2) << seconds << std::defaultfloat << " s to " << output
                  << " (" << session->droppedRecords() << " dropped)\n";
    if (session->droppedRecords() > 0)
        std::cerr << "warpline-record: warning: CUPTI dropped " << session->droppedRecords()
                  << " records (activity buffers full); the trace is missing them\n";
    if (!writeError.empty())
        std::cerr << "warpline-record: recording stopped writing early: " << writeError << "; "
                  << output << " keeps the records written before (marked incomplete)\n";
    if (!result.ok) {
        std::cerr << "warpline-record: workload " << request.workload << " failed: " << result.error
                  << " (the trace is kept)\n";
        return kExitWorkloadFailed;
    }
    return writeError.empty() ? kExitOk : kExitWorkloadFailed;
}

} // namespace warpline::collector

extern "C" __attribute__((visibility("default"))) int
warpline_record_workload(const warpline::collector::WorkloadRecordingRequest* request) {
    return warpline::collector::recordWorkload(*request);
}
