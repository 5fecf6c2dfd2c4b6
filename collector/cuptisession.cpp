#include "cuptisession.h"

#include "activitydecoder.h"
#include "tracewriter.h"
#include "warpline_version.h"

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <cupti.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <dlfcn.h>
#include <unistd.h>

namespace warpline::collector {

namespace {

std::atomic<CuptiSession*> g_session{nullptr};

// --python-stacks: on entering a recorded API call, the calling thread's Python stack. A driver
// call made inside a runtime call is the runtime's own: it gets none (its record is dropped).
thread_local int t_runtimeDepth = 0;

void CUPTIAPI onApiCallback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId,
                            const void* cbdata) {
    auto* stacks = static_cast<PythonStacks*>(userdata);
    const auto* data = static_cast<const CUpti_CallbackData*>(cbdata);
    const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
    if (data->callbackSite == CUPTI_API_EXIT) {
        if (runtime && t_runtimeDepth > 0)
            --t_runtimeDepth;
        return;
    }
    if (runtime && ++t_runtimeDepth > 1)
        return;
    if (!runtime && t_runtimeDepth > 0)
        return;
    if (const uint32_t chain = stacks->capture())
        stacks->remember(data->correlationId, chain);
}

std::string cuptiError(CUptiResult result) {
    const char* text = nullptr;
    cuptiGetResultString(result, &text);
    return text ? text : ("CUPTI error " + std::to_string(result));
}

void check(CUptiResult result, const char* what) {
    if (result == CUPTI_SUCCESS)
        return;
    std::string hint;
    if (result == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
        hint = " (profiling needs permission: run as root or set the NVIDIA driver option "
               "NVreg_RestrictProfilingToAdminUsers=0)";
    else if (result == CUPTI_ERROR_NOT_INITIALIZED || result == CUPTI_ERROR_NOT_COMPATIBLE)
        hint = " (is the NVIDIA driver installed and as new as the CUDA toolkit?)";
    throw CollectorError(std::string("CUPTI refused to ") + what + ": " + cuptiError(result) +
                         hint);
}

} // namespace

std::string CuptiSession::cuptiLibraryPath() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&cuptiGetTimestamp), &info) && info.dli_fname)
        return info.dli_fname;
    return {};
}

CuptiSession::CuptiSession(format::TraceWriter& writer, Options options)
    : m_writer(writer), m_options(options) {
    CuptiSession* expected = nullptr;
    if (!g_session.compare_exchange_strong(expected, this))
        throw CollectorError("a Warpline recording session is already running in this process");
    try {
        check(cuptiGetTimestamp(&m_startTimestamp), "read its clock");
        m_startClockPair = clockPair();
        // Operating-system thread ids (gettid), so threads match /proc and other tools; CUPTI's
        // default is a truncated pthread_t.
        check(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM), "use system thread ids");
        // Benchmark knobs (bench/run_overhead_tuning.sh), comma-separated in
        // WARPLINE_CUPTI_TUNING: pinned, nozeroed (Options::pinnedTimestamps, zeroedBuffers),
        // perthread, devbuf16/devbuf64 (CUPTI device buffer MiB), prealloc8 (device buffers made
        // up front).
        const char* tuningEnv = std::getenv("WARPLINE_CUPTI_TUNING");
        const std::string tuning = tuningEnv ? "," + std::string(tuningEnv) + "," : "";
        const auto tuned = [&tuning](const std::string& word) {
            return tuning.find("," + word + ",") != std::string::npos;
        };
        const auto setAttribute = [](CUpti_ActivityAttribute attribute, auto value) {
            size_t size = sizeof value;
            cuptiActivitySetAttribute(attribute, &size, &value);
        };
        // One set of buffers for all threads: a periodic flush then also returns the records of
        // a thread that has gone quiet (per-thread buffers stay with their thread).
        setAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER,
                     uint8_t{tuned("perthread") ? uint8_t(1) : uint8_t(0)});
        if (options.pinnedTimestamps || tuned("pinned"))
            setAttribute(CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED, uint8_t{1});
        options.zeroedBuffers = options.zeroedBuffers && !tuned("nozeroed");
        if (options.zeroedBuffers)
            setAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, uint8_t{1});
        for (size_t mib : {16, 64})
            if (tuned("devbuf" + std::to_string(mib)))
                setAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, size_t{mib << 20});
        if (tuned("prealloc8"))
            setAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE, size_t{8});
        check(cuptiActivityRegisterCallbacks(&CuptiSession::bufferRequested,
                                             &CuptiSession::bufferCompleted),
              "register activity buffers");
        // Which record kinds cost what (benchmarks only): noruntime, nodriver, nomemory,
        // nonvtx, nooverhead leave that kind out.
        if (tuned("noruntime"))
            options.runtimeApi = false;
        if (tuned("nodriver"))
            options.driverApi = false;
        if (tuned("nomemory"))
            options.memory = options.synchronization = false;
        if (tuned("nonvtx"))
            options.nvtx = false;
        if (tuned("nooverhead"))
            options.overhead = false;
        m_options = options;
        std::vector<CUpti_ActivityKind> kinds = {
            CUPTI_ACTIVITY_KIND_DEVICE, CUPTI_ACTIVITY_KIND_CONTEXT, CUPTI_ACTIVITY_KIND_STREAM,
            CUPTI_ACTIVITY_KIND_NAME, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL};
        if (options.runtimeApi && !options.essentialApiOnly)
            kinds.push_back(CUPTI_ACTIVITY_KIND_RUNTIME);
        if (options.driverApi && !options.essentialApiOnly)
            kinds.push_back(CUPTI_ACTIVITY_KIND_DRIVER);
        if (options.memory && !tuned("nomemcpy"))
            kinds.push_back(CUPTI_ACTIVITY_KIND_MEMCPY);
        if (options.memory && !tuned("nomemset"))
            kinds.push_back(CUPTI_ACTIVITY_KIND_MEMSET);
        if (options.synchronization && !tuned("nosync"))
            kinds.push_back(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
        if (options.nvtx)
            kinds.insert(kinds.end(),
                         {CUPTI_ACTIVITY_KIND_MARKER, CUPTI_ACTIVITY_KIND_MARKER_DATA});
        if (options.overhead)
            kinds.push_back(CUPTI_ACTIVITY_KIND_OVERHEAD);
        for (CUpti_ActivityKind kind : kinds) {
            check(cuptiActivityEnable(kind), "enable activity recording");
            m_enabledKinds.push_back(kind);
        }
        if (options.essentialApiOnly) {
            auto enableEssential = [](CUpti_CallbackDomain domain, uint32_t count,
                                      CUptiResult (*enable)(CUpti_CallbackId, uint8_t),
                                      std::vector<uint32_t>& enabled) {
                for (uint32_t cbid = 1; cbid < count; ++cbid) {
                    const char* name = nullptr;
                    if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || !name ||
                        !isEssentialApi(name))
                        continue;
                    check(enable(cbid, 1), "enable API recording");
                    enabled.push_back(cbid);
                }
            };
            if (options.runtimeApi)
                enableEssential(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE,
                                &cuptiActivityEnableRuntimeApi, m_enabledRuntimeApis);
            if (options.driverApi)
                enableEssential(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE,
                                &cuptiActivityEnableDriverApi, m_enabledDriverApis);
        }
        if (options.pythonStacks && m_python.init(&m_pythonProblem)) {
            CUpti_SubscriberHandle subscriber = nullptr;
            const CUptiResult r = cuptiSubscribe(
                &subscriber, reinterpret_cast<CUpti_CallbackFunc>(&onApiCallback), &m_python);
            if (r != CUPTI_SUCCESS) {
                const char* text = nullptr;
                cuptiGetResultString(r, &text);
                m_pythonProblem = std::string("cannot subscribe to CUPTI's API callbacks (") +
                                  (text ? text : "?") + "; another CUPTI tool in this process?)";
            } else {
                m_subscriber = subscriber;
                // Launches, copies, memsets, synchronizations (PythonStacks::wantsStack): a stack
                // costs microseconds, and not every call may take the GIL.
                const auto enable = [&](CUpti_CallbackDomain domain, uint32_t count) {
                    for (uint32_t cbid = 1; cbid < count; ++cbid) {
                        const char* name = nullptr;
                        if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || !name ||
                            !PythonStacks::wantsStack(name))
                            continue;
                        cuptiEnableCallback(1, subscriber, domain, cbid);
                    }
                };
                if (options.runtimeApi)
                    enable(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE);
                if (options.driverApi)
                    enable(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE);
            }
        }
    } catch (...) {
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        cuptiFinalize();
        g_session = nullptr;
        throw;
    }
    m_thread = std::thread(&CuptiSession::writerLoop, this);
}

CuptiSession::~CuptiSession() {
    try {
        stop();
    } catch (...) {
        // stop() reports through writeError(); nothing more to do in a destructor.
    }
    for (uint8_t* b : m_freeBuffers)
        std::free(b);
}

void CuptiSession::bufferRequested(uint8_t** buffer, size_t* size, size_t* maxNumRecords) {
    CuptiSession* self = g_session.load();
    const size_t bytes = self ? self->m_options.bufferBytes : (8u << 20);
    uint8_t* b = nullptr;
    if (self) {
        std::lock_guard lock(self->m_mutex);
        if (!self->m_freeBuffers.empty()) {
            b = self->m_freeBuffers.back();
            self->m_freeBuffers.pop_back();
        }
    }
    if (!b) // calloc: fresh pages come zeroed from the kernel, no clearing on this thread
        b = static_cast<uint8_t*>(std::calloc(1, bytes));
    *buffer = b;
    *size = b ? bytes : 0;
    *maxNumRecords = 0;
}

void CuptiSession::bufferCompleted(CUcontext context, uint32_t streamId, uint8_t* buffer, size_t,
                                   size_t validSize) {
    size_t dropped = 0;
    cuptiActivityGetNumDroppedRecords(context, streamId, &dropped);
    uint32_t contextId = 0;
    if (context)
        cuptiGetContextId(context, &contextId);
    CuptiSession* self = g_session.load();
    if (!self) {
        std::free(buffer);
        return;
    }
    {
        std::lock_guard lock(self->m_mutex);
        self->m_queue.push_back(Buffer{buffer, validSize, dropped, contextId, streamId});
    }
    self->m_ready.notify_one();
}

void CuptiSession::writeNewCallchains() {
    if (!m_python.ready())
        return;
    for (const format::CallchainRecord& chain : m_python.takeNew())
        m_writer.addCallchain(chain);
}

std::string CuptiSession::pythonStacksSummary() const {
    if (!m_options.pythonStacks)
        return {};
    if (!m_python.ready())
        return "none: " + m_pythonProblem;
    // "18 distinct stacks over 33464 API calls; 53460 calls with no Python code on their thread
    // (53460 given the stack of the thread waiting in backward); 62.4 ms reading (0.72 us a
    // call)": the time covers both kinds of call (each takes the GIL).
    const uint64_t captures = m_python.captures();
    const uint64_t frameless = m_python.framelessCalls();
    const double ms = m_python.captureNanoseconds() / 1e6;
    const uint64_t calls = captures + frameless;
    char cost[200];
    std::snprintf(cost, sizeof cost,
                  "; %llu calls with no Python code on their thread (%llu given the stack of the "
                  "thread waiting in backward); %.1f ms reading (%.2f us a call)",
                  static_cast<unsigned long long>(frameless),
                  static_cast<unsigned long long>(m_python.backwardCalls()), ms,
                  calls ? ms * 1e3 / static_cast<double>(calls) : 0.0);
    return std::to_string(m_python.chains()) + " distinct stacks over " + std::to_string(captures) +
           " API calls" + cost;
}

void CuptiSession::writerLoop() {
    ActivityDecoder decoder(m_writer, m_startTimestamp);
    if (m_python.ready())
        decoder.setCallchains(
            [this](uint32_t correlationId) { return m_python.take(correlationId); });
    // The first write error (disk full, file removed) ends writing: the unfinished batch is
    // dropped, what was committed stays, and later buffers are recycled without being decoded.
    const auto writeFailed = [this](const std::exception& e) {
        m_writer.rollBack();
        std::lock_guard errorLock(m_mutex);
        m_writeError = e.what();
    };
    const auto flushPeriod = std::chrono::milliseconds(m_options.flushPeriodMs);
    auto lastFlush = std::chrono::steady_clock::now();
    std::unique_lock lock(m_mutex);
    for (;;) {
        m_ready.wait_for(lock, std::chrono::milliseconds(100),
                         [this] { return m_quit || !m_queue.empty(); });
        if (!m_quit && std::chrono::steady_clock::now() - lastFlush >= flushPeriod) {
            // Buffers whose records are all complete come back through bufferCompleted, on
            // this thread, which takes m_mutex: release it meanwhile.
            lock.unlock();
            cuptiActivityFlushAll(0);
            lastFlush = std::chrono::steady_clock::now();
            lock.lock();
        }
        if (m_queue.empty() && m_quit)
            break;
        while (!m_queue.empty()) {
            Buffer buffer = m_queue.front();
            m_queue.pop_front();
            lock.unlock();
            if (m_writeError.empty()) {
                try {
                    CUpti_Activity* record = nullptr;
                    while (cuptiActivityGetNextRecord(buffer.data, buffer.validSize, &record) ==
                           CUPTI_SUCCESS)
                        decoder.decode(record);
                    if (buffer.dropped > 0)
                        m_writer.addDropped(0, buffer.contextId, buffer.streamId, buffer.dropped,
                                            "CUPTI activity buffer full");
                } catch (const std::exception& e) {
                    writeFailed(e);
                }
            }
            if (m_options.zeroedBuffers) // here, not on the program's thread when CUPTI asks
                std::memset(buffer.data, 0, m_options.bufferBytes);
            lock.lock();
            m_dropped += buffer.dropped;
            m_freeBuffers.push_back(buffer.data);
        }
        m_decoded = decoder.recordsDecoded();
        lock.unlock();
        if (m_writeError.empty()) {
            try {
                decoder.flushHeldDriverCalls();
                writeNewCallchains();
                m_writer.commitIfDue();
            } catch (const std::exception& e) {
                writeFailed(e);
            }
        }
        lock.lock();
    }
    lock.unlock();
    if (m_writeError.empty()) {
        try {
            decoder.finish();
            writeNewCallchains();
            m_writer.commit();
        } catch (const std::exception& e) {
            writeFailed(e);
        }
    }
}

void CuptiSession::stop() {
    if (m_stopped)
        return;
    m_stopped = true;
    if (m_subscriber) {
        cuptiUnsubscribe(static_cast<CUpti_SubscriberHandle>(m_subscriber));
        m_subscriber = nullptr;
    }
    for (int kind : m_enabledKinds)
        cuptiActivityDisable(static_cast<CUpti_ActivityKind>(kind));
    for (uint32_t cbid : m_enabledRuntimeApis)
        cuptiActivityEnableRuntimeApi(cbid, 0);
    for (uint32_t cbid : m_enabledDriverApis)
        cuptiActivityEnableDriverApi(cbid, 0);
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    {
        std::lock_guard lock(m_mutex);
        m_quit = true;
    }
    m_ready.notify_one();
    if (m_thread.joinable())
        m_thread.join();
    if (m_options.finalize)
        cuptiFinalize();
    g_session = nullptr;
}

void CuptiSession::describeRecording(const std::string& processName,
                                     const std::string& commandLine) {
    char host[256] = {}, cwd[4096] = {};
    ::gethostname(host, sizeof host - 1);
    m_writer.setProcess(static_cast<uint32_t>(::getpid()), processName);
    m_writer.setSessionStart(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count());
    m_writer.setMeta("collector_version", WARPLINE_VERSION);
    m_writer.setMeta("command_line", commandLine);
    m_writer.setMeta("working_directory", ::getcwd(cwd, sizeof cwd - 1) ? cwd : "");
    m_writer.setMeta("hostname", host);
    m_writer.setMeta("nvidia_driver_version", format::nvidiaDriverVersion());
    m_writer.setMeta("session_start_timestamp", std::to_string(m_startTimestamp));
    if (!m_startClockPair.empty())
        m_writer.setMeta("cupti_monotonic_start", m_startClockPair);
    for (const char* var :
         {"RANK", "LOCAL_RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
          "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "SLURM_PROCID"})
        if (const char* value = std::getenv(var))
            m_writer.setMeta(std::string("env_") + var, value);
}

std::string CuptiSession::clockPair() {
    const auto monotonic = [] {
        timespec ts{};
        ::clock_gettime(CLOCK_MONOTONIC, &ts);
        return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
    };
    int64_t bestGap = INT64_MAX;
    std::string best;
    for (int i = 0; i < 5; ++i) {
        const int64_t before = monotonic();
        uint64_t cupti = 0;
        if (cuptiGetTimestamp(&cupti) != CUPTI_SUCCESS)
            return {};
        const int64_t after = monotonic();
        if (after - before < bestGap) {
            bestGap = after - before;
            best = std::to_string(cupti) + " " + std::to_string(before + (after - before) / 2);
        }
    }
    return best;
}

bool CuptiSession::isEssentialApi(const std::string& name) {
    static const char* const kEssential[] = {
        "Launch",           "Memcpy",          "Memset",       "Synchronize",
        "EventRecord",      "StreamWaitEvent", "Graph",        "StreamBeginCapture",
        "StreamEndCapture", "Malloc",          "Free",         "HostAlloc",
        "HostRegister",     "MemPrefetch",     "MemAlloc",     "ModuleLoad",
        "LibraryLoad",      "StreamCreate",    "StreamDestroy"};
    for (const char* part : kEssential)
        if (name.find(part) != std::string::npos)
            return true;
    return false;
}

std::string CuptiSession::writeError() const {
    std::lock_guard lock(m_mutex);
    return m_writeError;
}

} // namespace warpline::collector
