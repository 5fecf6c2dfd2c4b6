#pragma once

// TraceWriter: writes decoded records into a Warpline trace file (SQLite, docs/trace-format.md).
//
// Thread affinity: one thread owns a TraceWriter (the collector's writer thread). Records are
// buffered into an open transaction that commits when commitIfDue() finds the commit interval has
// passed (default 500 ms), so a killed process leaves everything but its last moments. Strings are
// interned into StringIds; kernel launch configurations are deduplicated into
// WARPLINE_KERNEL_CONFIGS. No CUDA or CUPTI dependency: tests and generators use it too.

#include "records.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

struct sqlite3;

namespace warpline::format {

class TraceWriteError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class TraceWriter {
public:
    struct Options {
        bool overwrite = false; // replace an existing file (warpline-record --force)
        // When the name is taken, write NAME-2.ext, NAME-3.ext ... instead of failing. Names are
        // claimed atomically, so processes starting together never share a file.
        bool numberIfExists = false;
        std::chrono::milliseconds commitInterval{500};
    };

    // Creates a new trace at `path` (or a numbered variant, see Options) with the schema and
    // WARPLINE_META status "recording". Throws TraceWriteError (nothing left behind) when the
    // file exists and neither overwrite nor numberIfExists is set, or the directory is not
    // writable. path() is the file actually written.
    TraceWriter(const std::string& path, Options options);
    explicit TraceWriter(const std::string& path) : TraceWriter(path, Options{}) {}
    ~TraceWriter(); // commits what is pending; does not mark the trace complete
    TraceWriter(const TraceWriter&) = delete;
    TraceWriter& operator=(const TraceWriter&) = delete;

    const std::string& path() const { return m_path; }

    void setMeta(const std::string& key, const std::string& value);
    void setProcess(uint32_t pid, const std::string& name);
    void setSessionStart(int64_t utcEpochNs);

    void addKernel(const KernelRecord& r);
    void addApi(const ApiRecord& r);
    void addMemcpy(const MemcpyRecord& r);
    void addMemset(const MemsetRecord& r);
    void addSync(const SyncRecord& r);
    void addMarker(const MarkerRecord& r);
    void addMarkerData(const MarkerDataRecord& r);
    void addOverhead(const OverheadRecord& r);
    void addDevice(const DeviceRecord& r); // once per device id; later records of it are ignored
    void addContext(const ContextRecord& r);
    void addStream(const StreamRecord& r);
    void addName(const NameRecord& r);
    void addDropped(int64_t time, uint32_t contextId, uint32_t streamId, uint64_t dropped,
                    const std::string& reason);
    void addError(int64_t time, const std::string& source, const std::string& message);
    // A Python call stack (CUDA_CALLCHAINS: symbol = function, module = "file:line", stackDepth 0
    // = innermost), referenced by ApiRecord::callchainId.
    void addCallchain(const CallchainRecord& r);

    // Commits the open transaction if the commit interval has passed since the last commit.
    void commitIfDue();
    void commit();

    // After a write error (disk full, file or directory removed): drops the unfinished batch and
    // stops writing records (later add* calls do nothing), so that setMeta, addError and finish
    // can still mark the trace with what was committed before the error. Write errors throw
    // TraceWriteError with a message naming the file and the cause (disk full, file size limit,
    // file removed).
    void rollBack();

    // Writes NVTX ranges still open (end NULL), builds indexes, sets WARPLINE_META status
    // ("complete", "failed", "incomplete") and closes the file. Further calls throw. After
    // rollBack(), a failure to build the indexes (the disk is still full) leaves them out.
    void finish(const std::string& status);

    uint64_t recordsWritten() const { return m_recordsWritten; }
    uint64_t recordsCommitted() const { return m_recordsCommitted; } // in the file for sure

private:
    void close();

    struct Impl;
    std::unique_ptr<Impl> m_impl;
    std::string m_path;
    uint64_t m_recordsWritten = 0;
    uint64_t m_recordsCommitted = 0;
};

// Sets WARPLINE_META keys of an existing trace (the recorder stores a traced program's exit status
// after the program, which wrote the trace, has exited). Throws TraceWriteError.
void amendTraceMeta(const std::string& path,
                    const std::vector<std::pair<std::string, std::string>>& values);
// A WARPLINE_META value of an existing trace; "" when absent or unreadable.
std::string traceMetaValue(const std::string& path, const std::string& key);

// The NVIDIA kernel driver's version ("580.159.04") from /proc/driver/nvidia/version; "" if absent.
std::string nvidiaDriverVersion();
// The version in one line of that file (the parsing part of nvidiaDriverVersion).
std::string driverVersionFromProc(const std::string& line);

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints a GPU's 16-byte UUID.
std::string formatGpuUuid(const char (&bytes)[16]);

// Demangles an Itanium C++ ABI name ("_Z4geluPfi" -> "gelu(float*, int)"); returns the input when
// it is not a mangled name.
std::string demangle(const std::string& mangled);
// The function name alone, as nsys's shortName: no return type, scope, template or parameters
// ("void ns::gelu<float>(float*, int)" -> "gelu").
std::string shortKernelName(const std::string& demangled);

} // namespace warpline::format
