#include "gpumetrics.h"

#include "cuptiparams.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cuda.h>
#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>
#include <deque>
#include <iostream>
#include <mutex>
#include <thread>

namespace warpline::collector {

namespace {

// The metrics in priority order, each with the PM-sampling names that may give it (chips name
// them differently; the first that is valid and still fits one pass is taken). The names follow
// Nsight Systems' GPU metrics where it has the metric, with the unit in brackets.
struct Candidate {
    const char* name;
    std::vector<const char*> cupti;
};
const std::vector<Candidate>& candidates() {
    static const std::vector<Candidate> list = {
        {"SMs Active [Throughput %]",
         {"TPC.TriageCompute.sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
          "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"}},
        {"Compute Warps In Flight [Throughput %]",
         {"sm__warps_active.avg.pct_of_peak_sustained_elapsed",
          "TPC.TriageCompute.tpc__warps_active_realtime.avg.pct_of_peak_sustained_elapsed"}},
        {"Tensor Active [Throughput %]",
         {"TPC.TriageCompute.sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_"
          "elapsed",
          "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"}},
        {"FMA Pipe Active [Throughput %]",
         {"TPC.TriageCompute.sm__inst_executed_pipe_fma_realtime.avg.pct_of_peak_sustained_elapsed",
          "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_elapsed",
          "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed"}},
        {"DRAM Read Bandwidth [Throughput %]",
         {"FBSP.TriageCompute.dramc__read_throughput.avg.pct_of_peak_sustained_elapsed",
          "dram__read_throughput.avg.pct_of_peak_sustained_elapsed"}},
        {"DRAM Write Bandwidth [Throughput %]",
         {"FBSP.TriageCompute.dramc__write_throughput.avg.pct_of_peak_sustained_elapsed",
          "dram__write_throughput.avg.pct_of_peak_sustained_elapsed"}},
        {"L2 Throughput [Throughput %]",
         {"LTS.TriageCompute.lts__t_sector_throughput.avg.pct_of_peak_sustained_elapsed",
          "lts__t_sectors.avg.pct_of_peak_sustained_elapsed"}},
        {"PCIe Read Bandwidth [bytes/s]",
         {"PCI.TriageCompute.pcie__read_bytes.sum.per_second", "pcie__read_bytes.sum.per_second"}},
        {"PCIe Write Bandwidth [bytes/s]",
         {"PCI.TriageCompute.pcie__write_bytes.sum.per_second",
          "pcie__write_bytes.sum.per_second"}},
        {"NVLink RX Bandwidth [bytes/s]",
         {"nvlrx__bytes.sum.per_second",
          "NVLRX.TriageCompute.nvlrx__bytes_packet_response_data_user.sum.per_second"}},
        {"NVLink TX Bandwidth [bytes/s]",
         {"nvltx__bytes.sum.per_second",
          "NVLTX.TriageCompute.nvltx__bytes_packet_response_data_user.sum.per_second"}},
    };
    return list;
}

// A profiler host object (metric names -> config image; raw counters -> values).
class Host {
public:
    Host() = default;
    Host(const Host&) = delete;
    Host& operator=(const Host&) = delete;
    ~Host() {
        if (m_object) {
            auto p = PARAMS(CUpti_Profiler_Host_Deinitialize_Params);
            p.pHostObject = m_object;
            cuptiProfilerHostDeinitialize(&p);
        }
    }
    CUptiResult init(const std::string& chip, const std::vector<uint8_t>& availability) {
        auto p = PARAMS(CUpti_Profiler_Host_Initialize_Params);
        p.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
        p.pChipName = chip.c_str();
        p.pCounterAvailabilityImage = availability.data();
        const CUptiResult r = cuptiProfilerHostInitialize(&p);
        if (r == CUPTI_SUCCESS)
            m_object = p.pHostObject;
        return r;
    }
    // The config image for the metrics and its number of passes (0 when they are not valid).
    size_t configure(const std::vector<const char*>& metrics, std::vector<uint8_t>& image) {
        auto add = PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
        add.pHostObject = m_object;
        add.ppMetricNames = const_cast<const char**>(metrics.data());
        add.numMetrics = metrics.size();
        if (cuptiProfilerHostConfigAddMetrics(&add) != CUPTI_SUCCESS)
            return 0;
        auto size = PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params);
        size.pHostObject = m_object;
        if (cuptiProfilerHostGetConfigImageSize(&size) != CUPTI_SUCCESS)
            return 0;
        image.assign(size.configImageSize, 0);
        auto get = PARAMS(CUpti_Profiler_Host_GetConfigImage_Params);
        get.pHostObject = m_object;
        get.pConfigImage = image.data();
        get.configImageSize = image.size();
        if (cuptiProfilerHostGetConfigImage(&get) != CUPTI_SUCCESS)
            return 0;
        auto passes = PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params);
        passes.pConfigImage = image.data();
        passes.configImageSize = image.size();
        if (cuptiProfilerHostGetNumOfPasses(&passes) != CUPTI_SUCCESS)
            return 0;
        return passes.numOfPasses;
    }
    CUpti_Profiler_Host_Object* object() const { return m_object; }

private:
    CUpti_Profiler_Host_Object* m_object = nullptr;
};

// The counter data image is started over once half full, never left to fill: a decode that
// stops because the image is full loses the records still in the hardware buffer (seen on the
// H100 as gaps of up to 230 ms every 4096 samples).
constexpr size_t kSamplesPerImage = 8192;
constexpr size_t kHardwareBuffer = size_t(256) << 20;
constexpr auto kDecodePeriod = std::chrono::milliseconds(20);

// A counter data image the decoder has filled, with its samples' end times, for the evaluator.
struct Filled {
    std::vector<uint8_t> image;
    std::vector<uint64_t> ends;
};

// Decoding (about 50 us a sample on the H100 with these metrics) and evaluating (about 35 us)
// each take a thread: on one, 10 kHz sampling fell behind and the hardware buffer overflowed.
struct Device {
    int index = 0;
    std::vector<uint8_t> availability;
    std::vector<uint8_t> config;
    Host host; // evaluates the samples (evaluator thread only, once sampling runs)
    std::vector<const char*> metrics;
    CUpti_PmSampling_Object* sampler = nullptr;
    size_t imageSize = 0;
    // Decoder side.
    std::vector<uint8_t> counterData;
    std::vector<uint64_t> ends; // end times of counterData's completed samples
    bool running = false;
    std::string decodeError;
    double decodeSeconds = 0;
    uint64_t decodes = 0;
    // Between the two.
    std::mutex queueMutex;
    std::condition_variable queueChanged;
    std::deque<Filled> queue;
    std::vector<std::vector<uint8_t>> spare; // images evaluated, to be initialised again
    size_t images = 0;                       // images in existence (at most kMaxImages)
    bool decoderDone = false;
    std::thread evaluator;
    // Evaluator side.
    bool firstTaken = false; // the first sample spans from enabling to the first trigger: dropped
    double evaluateSeconds = 0;
    format::GpuMetricsDevice out;
    std::vector<double> scratch;
};
constexpr size_t kMaxImages = 8;

std::string supportProblem(const CUpti_Profiler_DeviceSupported_Params& s) {
    std::string why;
    auto add = [&why](CUpti_Profiler_Support_Level level, const char* what) {
        if (level == CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED ||
            level == CUPTI_PROFILER_CONFIGURATION_DISABLED)
            why += (why.empty() ? "" : "; ") + std::string(what) +
                   (level == CUPTI_PROFILER_CONFIGURATION_DISABLED ? " (profiling disabled there)"
                                                                   : "");
    };
    add(s.architecture, "the GPU's architecture has no PM sampling (it needs Turing or newer; "
                        "time-based sampling needs Ampere GA10x, Hopper or newer)");
    add(s.sli, "SLI is enabled");
    add(s.vGpu, "a virtual GPU (vGPU) that does not expose counters");
    add(s.confidentialCompute, "confidential computing is on");
    add(s.cmp, "a crypto-mining (CMP) GPU");
    add(s.wsl, "WSL does not expose counters");
    return why.empty() ? "PM sampling is not supported on this GPU and driver" : why;
}

} // namespace

struct GpuMetricsSampler::Impl {
    format::GpuMetricsRequest request;
    std::function<bool(int)> makeContext;
    std::vector<std::unique_ptr<Device>> devices;
    std::vector<std::string> problems;
    std::thread thread;
    std::mutex mutex;
    std::condition_variable wake;
    bool stopping = false;
    bool stopped = false;
    std::atomic<uint64_t> samplesKept{0};

    void problem(int device, const std::string& what) {
        problems.push_back("GPU " + std::to_string(device) + ": GPU metrics not recorded: " + what);
        if (!request.quiet)
            std::cerr << "warpline-record: " << problems.back() << "\n";
    }

    bool setUp(Device& d);
    bool freshImage(Device& d);
    void drain(Device& d, bool last);
    void evaluate(Device& d);
    void run();
};

bool GpuMetricsSampler::Impl::setUp(Device& d) {
    auto chip = PARAMS(CUpti_Device_GetChipName_Params);
    chip.deviceIndex = static_cast<size_t>(d.index);
    CUptiResult r = cuptiDeviceGetChipName(&chip);
    if (r != CUPTI_SUCCESS) {
        problem(d.index, gpuMetricsProblem(r, "reading the chip name"));
        return false;
    }
    d.out.deviceId = static_cast<uint32_t>(d.index);
    d.out.chip = chip.pChipName ? chip.pChipName : "";

    auto support = PARAMS(CUpti_Profiler_DeviceSupported_Params);
    support.cuDevice = static_cast<CUdevice>(d.index);
    support.api = CUPTI_PROFILER_PM_SAMPLING;
    r = cuptiProfilerDeviceSupported(&support);
    if (r == CUPTI_SUCCESS && support.isSupported != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) {
        problem(d.index, supportProblem(support));
        return false;
    }

    auto avail = PARAMS(CUpti_PmSampling_GetCounterAvailability_Params);
    avail.deviceIndex = static_cast<size_t>(d.index);
    r = cuptiPmSamplingGetCounterAvailability(&avail);
    if (r == CUPTI_SUCCESS) {
        d.availability.assign(avail.counterAvailabilityImageSize, 0);
        avail.pCounterAvailabilityImage = d.availability.data();
        r = cuptiPmSamplingGetCounterAvailability(&avail);
    }
    if (r != CUPTI_SUCCESS) {
        problem(d.index, gpuMetricsProblem(r, "reading which counters are available"));
        return false;
    }

    // Each metric in turn, under the first of its names that is valid and keeps one pass.
    for (const Candidate& c : candidates()) {
        for (const char* name : c.cupti) {
            std::vector<const char*> with = d.metrics;
            with.push_back(name);
            Host trial;
            if (trial.init(d.out.chip, d.availability) != CUPTI_SUCCESS)
                break;
            std::vector<uint8_t> image;
            if (trial.configure(with, image) != 1)
                continue;
            d.metrics = std::move(with);
            d.config = std::move(image);
            d.out.metrics.push_back({c.name, name});
            break;
        }
    }
    if (d.metrics.empty()) {
        problem(d.index, "none of the metrics Warpline samples is available on chip " + d.out.chip);
        return false;
    }
    r = d.host.init(d.out.chip, d.availability);
    if (r != CUPTI_SUCCESS) {
        problem(d.index, gpuMetricsProblem(r, "setting up the metric evaluator"));
        return false;
    }
    {
        std::vector<uint8_t> image;
        if (d.host.configure(d.metrics, image) != 1) {
            problem(d.index, "the chosen metrics no longer fit one pass");
            return false;
        }
    }

    auto enable = PARAMS(CUpti_PmSampling_Enable_Params);
    enable.deviceIndex = static_cast<size_t>(d.index);
    r = cuptiPmSamplingEnable(&enable);
    if (r != CUPTI_SUCCESS && r != CUPTI_ERROR_INSUFFICIENT_PRIVILEGES &&
        r != CUPTI_ERROR_HARDWARE_BUSY && makeContext && makeContext(d.index)) {
        enable = PARAMS(CUpti_PmSampling_Enable_Params);
        enable.deviceIndex = static_cast<size_t>(d.index);
        r = cuptiPmSamplingEnable(&enable);
    }
    if (r != CUPTI_SUCCESS) {
        problem(d.index, gpuMetricsProblem(r, "enabling PM sampling"));
        return false;
    }
    d.sampler = enable.pPmSamplingObject;

    auto size = PARAMS(CUpti_PmSampling_GetCounterDataSize_Params);
    size.pPmSamplingObject = d.sampler;
    size.pMetricNames = d.metrics.data();
    size.numMetrics = d.metrics.size();
    size.maxSamples = kSamplesPerImage;
    r = cuptiPmSamplingGetCounterDataSize(&size);
    if (r == CUPTI_SUCCESS) {
        d.imageSize = size.counterDataSize;
        if (!freshImage(d))
            r = CUPTI_ERROR_OUT_OF_MEMORY;
    }
    if (r == CUPTI_SUCCESS) {
        auto set = PARAMS(CUpti_PmSampling_SetConfig_Params);
        set.pPmSamplingObject = d.sampler;
        set.configSize = d.config.size();
        set.pConfig = d.config.data();
        set.hardwareBufferSize = kHardwareBuffer;
        set.samplingInterval = request.intervalNs;
        set.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
        set.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
        r = cuptiPmSamplingSetConfig(&set);
    }
    if (r == CUPTI_SUCCESS) {
        auto start = PARAMS(CUpti_PmSampling_Start_Params);
        start.pPmSamplingObject = d.sampler;
        r = cuptiPmSamplingStart(&start);
    }
    if (r != CUPTI_SUCCESS) {
        problem(d.index, gpuMetricsProblem(r, "configuring PM sampling"));
        auto disable = PARAMS(CUpti_PmSampling_Disable_Params);
        disable.pPmSamplingObject = d.sampler;
        cuptiPmSamplingDisable(&disable);
        d.sampler = nullptr;
        return false;
    }
    d.scratch.resize(d.metrics.size());
    d.running = true;
    Device* device = &d;
    d.evaluator = std::thread([this, device] { evaluate(*device); });
    return true;
}

// Gives the decoder an empty, initialised image: a spare one, or a new one while there are fewer
// than kMaxImages (else it waits for the evaluator to hand one back).
bool GpuMetricsSampler::Impl::freshImage(Device& d) {
    {
        std::unique_lock lock(d.queueMutex);
        d.queueChanged.wait(lock, [&d] { return !d.spare.empty() || d.images < kMaxImages; });
        if (!d.spare.empty()) {
            d.counterData = std::move(d.spare.back());
            d.spare.pop_back();
        } else {
            ++d.images;
            d.counterData.assign(d.imageSize, 0);
        }
    }
    d.ends.clear();
    auto init = PARAMS(CUpti_PmSampling_CounterDataImage_Initialize_Params);
    init.pPmSamplingObject = d.sampler;
    init.counterDataSize = d.counterData.size();
    init.pCounterData = d.counterData.data();
    return cuptiPmSamplingCounterDataImageInitialize(&init) == CUPTI_SUCCESS;
}

// The evaluator thread: turns each filled image's samples into values, until the decoder is
// done and the queue empty.
void GpuMetricsSampler::Impl::evaluate(Device& d) {
    using Clock = std::chrono::steady_clock;
    const size_t width = d.metrics.size();
    for (;;) {
        Filled filled;
        {
            std::unique_lock lock(d.queueMutex);
            d.queueChanged.wait(lock, [&d] { return !d.queue.empty() || d.decoderDone; });
            if (d.queue.empty())
                return;
            filled = std::move(d.queue.front());
            d.queue.pop_front();
        }
        const auto t0 = Clock::now();
        for (size_t s = 0; s < filled.ends.size(); ++s) {
            auto eval = PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params);
            eval.pHostObject = d.host.object();
            eval.pCounterDataImage = filled.image.data();
            eval.counterDataImageSize = filled.image.size();
            eval.ppMetricNames = d.metrics.data();
            eval.numMetrics = width;
            eval.rangeIndex = s;
            eval.pMetricValues = d.scratch.data();
            if (cuptiProfilerHostEvaluateToGpuValues(&eval) != CUPTI_SUCCESS)
                continue;
            if (!d.firstTaken) {
                d.firstTaken = true;
                continue;
            }
            if (samplesKept.fetch_add(1) >= request.maxSamples) {
                if (d.out.error.empty())
                    d.out.error = "stopped keeping samples after " +
                                  std::to_string(request.maxSamples) +
                                  " (the recorder's memory limit for samples); sample less "
                                  "often for long recordings";
                break;
            }
            d.out.timestamps.push_back(filled.ends[s]);
            for (size_t m = 0; m < width; ++m) {
                const double v = d.scratch[m];
                d.out.values.push_back(std::isfinite(v) ? std::llround(v) : 0);
            }
        }
        d.evaluateSeconds += std::chrono::duration<double>(Clock::now() - t0).count();
        std::lock_guard lock(d.queueMutex);
        d.spare.push_back(std::move(filled.image));
        d.queueChanged.notify_all();
    }
}

// Decodes what the hardware buffer holds into the current image and hands the image to the
// evaluator once half of it is taken (or it is full, or this is the last drain). An image is never
// left to fill up: a decode that stops because the image is full loses the records still in the
// hardware buffer (seen on the H100 as gaps of up to 230 ms every 4096 samples).
void GpuMetricsSampler::Impl::drain(Device& d, bool last) {
    using Clock = std::chrono::steady_clock;
    for (int round = 0; round < 64; ++round) {
        const auto t0 = Clock::now();
        auto decode = PARAMS(CUpti_PmSampling_DecodeData_Params);
        decode.pPmSamplingObject = d.sampler;
        decode.pCounterDataImage = d.counterData.data();
        decode.counterDataImageSize = d.counterData.size();
        const CUptiResult r = cuptiPmSamplingDecodeData(&decode);
        ++d.decodes;
        if (r != CUPTI_SUCCESS || decode.overflow) {
            if (d.decodeError.empty())
                d.decodeError = r == CUPTI_ERROR_OUT_OF_MEMORY || decode.overflow
                                    ? "the counters' hardware buffer overflowed: samples are "
                                      "missing from then on (sample less often: "
                                      "--gpu-metrics-frequency)"
                                    : "decoding samples failed: " + cuptiResultName(r);
            if (r != CUPTI_SUCCESS && r != CUPTI_ERROR_OUT_OF_MEMORY)
                d.running = false;
        }
        auto info = PARAMS(CUpti_PmSampling_GetCounterDataInfo_Params);
        info.pCounterDataImage = d.counterData.data();
        info.counterDataImageSize = d.counterData.size();
        const bool read = cuptiPmSamplingGetCounterDataInfo(&info) == CUPTI_SUCCESS;
        for (size_t s = d.ends.size(); read && s < info.numCompletedSamples; ++s) {
            auto sample = PARAMS(CUpti_PmSampling_CounterData_GetSampleInfo_Params);
            sample.pPmSamplingObject = d.sampler;
            sample.pCounterDataImage = d.counterData.data();
            sample.counterDataImageSize = d.counterData.size();
            sample.sampleIndex = s;
            d.ends.push_back(cuptiPmSamplingCounterDataGetSampleInfo(&sample) == CUPTI_SUCCESS
                                 ? sample.endTimestamp
                                 : 0);
        }
        d.decodeSeconds += std::chrono::duration<double>(Clock::now() - t0).count();
        const bool full =
            decode.decodeStopReason == CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL;
        const bool handOver = last || full || !d.running ||
                              (d.ends.size() >= kSamplesPerImage / 2 &&
                               info.numPopulatedSamples == info.numCompletedSamples);
        if (handOver && !d.ends.empty()) {
            {
                std::lock_guard lock(d.queueMutex);
                d.queue.push_back({std::move(d.counterData), std::move(d.ends)});
                d.queueChanged.notify_all();
            }
            if (d.running && (full || !last) && !freshImage(d)) {
                d.decodeError = "could not set up a sample buffer; sampling stopped";
                d.running = false;
            }
        }
        if (!full || !d.running)
            return;
    }
}

void GpuMetricsSampler::Impl::run() {
    std::unique_lock lock(mutex);
    while (!stopping) {
        wake.wait_for(lock, kDecodePeriod, [this] { return stopping; });
        if (stopping)
            break;
        lock.unlock();
        for (auto& d : devices)
            if (d->running)
                drain(*d, false);
        lock.lock();
    }
}

GpuMetricsSampler::GpuMetricsSampler(const format::GpuMetricsRequest& request,
                                     std::function<bool(int)> makeContext)
    : m_impl(std::make_unique<Impl>()) {
    m_impl->request = request;
    m_impl->makeContext = std::move(makeContext);
}

GpuMetricsSampler::~GpuMetricsSampler() {
    stop();
}

bool GpuMetricsSampler::start() {
    Impl& s = *m_impl;
    const auto began = std::chrono::steady_clock::now();
    auto init = PARAMS(CUpti_Profiler_Initialize_Params);
    const CUptiResult r = cuptiProfilerInitialize(&init);
    if (r != CUPTI_SUCCESS) {
        s.problem(0, gpuMetricsProblem(r, "initialising CUPTI's profiler"));
        return false;
    }
    for (int i = 0; i < s.request.deviceCount; ++i) {
        auto d = std::make_unique<Device>();
        d->index = i;
        if (s.setUp(*d))
            s.devices.push_back(std::move(d));
    }
    if (s.devices.empty())
        return false;
    if (!s.request.quiet)
        for (const auto& d : s.devices)
            std::cerr << "warpline-record: sampling " << d->metrics.size() << " GPU metrics on GPU "
                      << d->index << " (" << d->out.chip << ") every "
                      << s.request.intervalNs / 1000.0 << " us (set up in "
                      << std::lround(
                             std::chrono::duration<double>(std::chrono::steady_clock::now() - began)
                                 .count() *
                             1e3)
                      << " ms)\n";
    s.thread = std::thread([&s] { s.run(); });
    return true;
}

format::GpuMetricsData GpuMetricsSampler::stop() {
    Impl& s = *m_impl;
    format::GpuMetricsData data;
    data.intervalNs = s.request.intervalNs;
    if (s.stopped)
        return data;
    s.stopped = true;
    {
        std::lock_guard lock(s.mutex);
        s.stopping = true;
    }
    s.wake.notify_all();
    if (s.thread.joinable())
        s.thread.join();
    for (auto& d : s.devices) {
        if (!d->sampler)
            continue;
        auto stop = PARAMS(CUpti_PmSampling_Stop_Params);
        stop.pPmSamplingObject = d->sampler;
        cuptiPmSamplingStop(&stop);
        if (d->running)
            s.drain(*d, true);
        {
            std::lock_guard lock(d->queueMutex);
            d->decoderDone = true;
            d->queueChanged.notify_all();
        }
        if (d->evaluator.joinable())
            d->evaluator.join();
        if (d->out.error.empty())
            d->out.error = d->decodeError;
        auto disable = PARAMS(CUpti_PmSampling_Disable_Params);
        disable.pPmSamplingObject = d->sampler;
        cuptiPmSamplingDisable(&disable);
        d->sampler = nullptr;
        if (!s.request.quiet)
            std::cerr << "warpline-record: GPU " << d->index << ": " << d->out.timestamps.size()
                      << " samples; the sampler spent " << std::lround(d->decodeSeconds * 1e3)
                      << " ms decoding (" << d->decodes << " calls) and "
                      << std::lround(d->evaluateSeconds * 1e3) << " ms evaluating\n";
        data.devices.push_back(std::move(d->out));
    }
    data.problems = s.problems;
    return data;
}

const std::vector<std::string>& GpuMetricsSampler::problems() const {
    return m_impl->problems;
}

} // namespace warpline::collector

extern "C" __attribute__((visibility("default"))) warpline::collector::GpuMetricsSampler*
warpline_gpu_metrics_start(const warpline::format::GpuMetricsRequest* request,
                           const std::function<bool(int)>* makeContext) {
    auto* sampler =
        new warpline::collector::GpuMetricsSampler(*request, makeContext ? *makeContext : nullptr);
    sampler->start();
    return sampler; // also when nothing is sampled: stop() hands over the problems
}

extern "C" __attribute__((visibility("default"))) void
warpline_gpu_metrics_stop(warpline::collector::GpuMetricsSampler* sampler,
                          warpline::format::GpuMetricsData* out) {
    if (!sampler)
        return;
    *out = sampler->stop();
    delete sampler;
}
