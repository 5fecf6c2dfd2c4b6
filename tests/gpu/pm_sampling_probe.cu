// Probe of CUPTI's PM sampling on the GPU machine (issue: GPU hardware metrics on the timeline):
// can this driver and GPU sample performance counters at all, which metrics does the chip offer
// for PM sampling, and do a memory-bound and a compute-bound kernel read as such?
//   pm_sampling_probe [--interval NS] [--list] [--watch MS] [METRIC...]
// Prints the chip, the device support check, the PM-sampling base metrics of interest (all of them
// with --list), then samples a copy kernel and an FMA kernel at the interval (default 100 us)
// and prints, per phase, the mean of each metric over the samples inside it. Metrics are added one
// at a time, each kept only while the set still fits one pass (PM sampling cannot replay). Every
// CUPTI error is printed with its name. Uses the C API of the installed CUDA 13.0 CUPTI only.
// --watch MS runs no kernel itself: it samples the device for MS milliseconds while another
// process works, and prints the samples in which the SMs were busy (can a recorder sample the GPU
// a program it traces is using, from its own process?).

#include "cuptiparams.h"

#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

bool ok(CUptiResult r, const char* what) {
    if (r == CUPTI_SUCCESS)
        return true;
    const char* text = "?";
    cuptiGetResultString(r, &text);
    std::printf("FAIL %s: %s (%d)\n", what, text, static_cast<int>(r));
    return false;
}

__global__ void copyKernel(const float4* in, float4* out, size_t n) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        out[i] = in[i];
}

__global__ void fmaKernel(float* out, int iterations) {
    float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 0.9999f, d = blockIdx.x * 1e-4f;
    for (int i = 0; i < iterations; ++i) {
        a = fmaf(a, b, c);
        d = fmaf(d, c, b);
        b = fmaf(b, c, a * 1e-9f);
        c = fmaf(c, b, d * 1e-9f);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = a + b + c + d;
}

struct Host {
    Host() = default;
    Host(const Host&) = delete;
    Host& operator=(const Host&) = delete;
    CUpti_Profiler_Host_Object* object = nullptr;
    bool init(const std::string& chip, const std::vector<uint8_t>& availability) {
        auto p = PARAMS(CUpti_Profiler_Host_Initialize_Params);
        p.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
        p.pChipName = chip.c_str();
        p.pCounterAvailabilityImage = availability.data();
        if (!ok(cuptiProfilerHostInitialize(&p), "cuptiProfilerHostInitialize"))
            return false;
        object = p.pHostObject;
        return true;
    }
    ~Host() {
        if (object) {
            auto p = PARAMS(CUpti_Profiler_Host_Deinitialize_Params);
            p.pHostObject = object;
            cuptiProfilerHostDeinitialize(&p);
        }
    }
};

} // namespace

int main(int argc, char** argv) {
    uint64_t interval = 100000; // ns
    bool listAll = false;
    long watchMs = 0;
    std::vector<const char*> given;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--interval") && i + 1 < argc)
            interval = std::strtoull(argv[++i], nullptr, 10);
        else if (!std::strcmp(argv[i], "--list"))
            listAll = true;
        else if (!std::strcmp(argv[i], "--watch") && i + 1 < argc)
            watchMs = std::strtol(argv[++i], nullptr, 10);
        else
            given.push_back(argv[i]);
    }
    if (cudaFree(nullptr) != cudaSuccess) {
        std::printf("FAIL no CUDA device\n");
        return 2;
    }
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    std::printf("device 0: %s, %d SMs\n", prop.name, prop.multiProcessorCount);

    auto init = PARAMS(CUpti_Profiler_Initialize_Params);
    if (!ok(cuptiProfilerInitialize(&init), "cuptiProfilerInitialize"))
        return 1;
    auto chipParams = PARAMS(CUpti_Device_GetChipName_Params);
    chipParams.deviceIndex = 0;
    if (!ok(cuptiDeviceGetChipName(&chipParams), "cuptiDeviceGetChipName"))
        return 1;
    const std::string chip = chipParams.pChipName;
    std::printf("chip: %s\n", chip.c_str());

    CUdevice dev = 0;
    cuDeviceGet(&dev, 0);
    auto support = PARAMS(CUpti_Profiler_DeviceSupported_Params);
    support.cuDevice = dev;
    support.api = CUPTI_PROFILER_PM_SAMPLING;
    if (ok(cuptiProfilerDeviceSupported(&support), "cuptiProfilerDeviceSupported"))
        std::printf("supported %d (architecture %d, sli %d, vGPU %d, confidential compute %d, "
                    "CMP %d, WSL %d)\n",
                    support.isSupported, support.architecture, support.sli, support.vGpu,
                    support.confidentialCompute, support.cmp, support.wsl);

    auto avail = PARAMS(CUpti_PmSampling_GetCounterAvailability_Params);
    avail.deviceIndex = 0;
    if (!ok(cuptiPmSamplingGetCounterAvailability(&avail), "GetCounterAvailability (size)"))
        return 1;
    std::vector<uint8_t> availability(avail.counterAvailabilityImageSize);
    avail.pCounterAvailabilityImage = availability.data();
    if (!ok(cuptiPmSamplingGetCounterAvailability(&avail), "GetCounterAvailability"))
        return 1;

    // The base metrics PM sampling offers here.
    {
        Host host;
        if (!host.init(chip, availability))
            return 1;
        const char* keys[] = {"dram__", "sm__cycles_active", "sm__warps", "tensor", "pipe_fma",
                              "lts__t_bytes", "pcie__", "nvl", "gpc__cycles", "sm__throughput",
                              "gpu__", "sm__inst"};
        for (int type = 0; type < CUPTI_METRIC_TYPE__COUNT; ++type) {
            auto base = PARAMS(CUpti_Profiler_Host_GetBaseMetrics_Params);
            base.pHostObject = host.object;
            base.metricType = static_cast<CUpti_MetricType>(type);
            if (!ok(cuptiProfilerHostGetBaseMetrics(&base), "GetBaseMetrics"))
                continue;
            std::printf("base metrics of type %d: %zu\n", type, base.numMetrics);
            for (size_t i = 0; i < base.numMetrics; ++i) {
                const std::string name = base.ppMetricNames[i];
                bool shown = listAll;
                for (const char* k : keys)
                    shown = shown || name.find(k) != std::string::npos;
                if (shown)
                    std::printf("  %s\n", name.c_str());
            }
        }
    }

    // Candidate metrics; each is tried alone first, the valid ones then together.
    const char* candidates[] = {
        "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
        "sm__warps_active.avg.pct_of_peak_sustained_elapsed",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
        "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed",
        "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_elapsed",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__read_throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__bytes_read.sum.per_second",
        "dram__bytes_write.sum.per_second",
        "dram__bytes_read.sum",
        "dram__bytes_write.sum",
        "lts__t_bytes.sum.per_second",
        "pcie__read_bytes.sum.per_second",
        "pcie__write_bytes.sum.per_second",
        "nvlrx__bytes.sum.per_second",
        "nvltx__bytes.sum.per_second",
        "gpc__cycles_elapsed.max",
        "gpu__time_duration.sum",
    };
    std::vector<const char*> tried(std::begin(candidates), std::end(candidates));
    if (!given.empty())
        tried = given;
    std::vector<const char*> valid;
    for (const char* m : tried) {
        Host host;
        if (!host.init(chip, availability))
            return 1;
        auto add = PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
        add.pHostObject = host.object;
        add.ppMetricNames = &m;
        add.numMetrics = 1;
        const CUptiResult r = cuptiProfilerHostConfigAddMetrics(&add);
        const char* text = "";
        cuptiGetResultString(r, &text);
        std::printf("metric %-72s %s\n", m, r == CUPTI_SUCCESS ? "ok" : text);
        if (r == CUPTI_SUCCESS)
            valid.push_back(m);
    }
    if (valid.empty()) {
        std::printf("FAIL no candidate metric is valid\n");
        return 1;
    }

    // One config image: each valid metric in turn, kept while the set still fits one pass.
    const auto configFor = [&](const std::vector<const char*>& metrics, Host& host,
                               std::vector<uint8_t>& image) -> size_t {
        if (!host.init(chip, availability))
            return 0;
        auto add = PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
        add.pHostObject = host.object;
        add.ppMetricNames = const_cast<const char**>(metrics.data());
        add.numMetrics = metrics.size();
        if (!ok(cuptiProfilerHostConfigAddMetrics(&add), "ConfigAddMetrics"))
            return 0;
        auto size = PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params);
        size.pHostObject = host.object;
        if (!ok(cuptiProfilerHostGetConfigImageSize(&size), "GetConfigImageSize"))
            return 0;
        image.assign(size.configImageSize, 0);
        auto get = PARAMS(CUpti_Profiler_Host_GetConfigImage_Params);
        get.pHostObject = host.object;
        get.pConfigImage = image.data();
        get.configImageSize = image.size();
        if (!ok(cuptiProfilerHostGetConfigImage(&get), "GetConfigImage"))
            return 0;
        auto passes = PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params);
        passes.pConfigImage = image.data();
        passes.configImageSize = image.size();
        if (!ok(cuptiProfilerHostGetNumOfPasses(&passes), "GetNumOfPasses"))
            return 0;
        return passes.numOfPasses;
    };
    std::vector<const char*> chosen;
    for (const char* m : valid) {
        std::vector<const char*> with = chosen;
        with.push_back(m);
        Host trial;
        std::vector<uint8_t> image;
        const size_t passes = configFor(with, trial, image);
        std::printf("  + %-70s %zu pass(es)%s\n", m, passes, passes == 1 ? "" : ": left out");
        if (passes == 1)
            chosen = with;
    }
    if (chosen.empty())
        return 1;
    valid = chosen;
    Host host;
    std::vector<uint8_t> config;
    if (configFor(valid, host, config) != 1)
        return 1;
    std::printf("sampling %zu metrics in one pass\n", valid.size());

    auto enable = PARAMS(CUpti_PmSampling_Enable_Params);
    enable.deviceIndex = 0;
    if (!ok(cuptiPmSamplingEnable(&enable), "cuptiPmSamplingEnable"))
        return 1;
    CUpti_PmSampling_Object* sampler = enable.pPmSamplingObject;
    const size_t maxSamples = 200000;
    auto dataSize = PARAMS(CUpti_PmSampling_GetCounterDataSize_Params);
    dataSize.pPmSamplingObject = sampler;
    dataSize.pMetricNames = valid.data();
    dataSize.numMetrics = valid.size();
    dataSize.maxSamples = maxSamples;
    if (!ok(cuptiPmSamplingGetCounterDataSize(&dataSize), "GetCounterDataSize"))
        return 1;
    std::vector<uint8_t> counterData(dataSize.counterDataSize);
    auto initData = PARAMS(CUpti_PmSampling_CounterDataImage_Initialize_Params);
    initData.pPmSamplingObject = sampler;
    initData.counterDataSize = counterData.size();
    initData.pCounterData = counterData.data();
    if (!ok(cuptiPmSamplingCounterDataImageInitialize(&initData), "CounterDataImageInitialize"))
        return 1;
    auto set = PARAMS(CUpti_PmSampling_SetConfig_Params);
    set.pPmSamplingObject = sampler;
    set.configSize = config.size();
    set.pConfig = config.data();
    set.hardwareBufferSize = 512ull << 20;
    set.samplingInterval = interval;
    set.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
    set.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
    if (!ok(cuptiPmSamplingSetConfig(&set), "cuptiPmSamplingSetConfig"))
        return 1;

    const size_t n = (size_t(1) << 28) / sizeof(float4); // 256 MiB each way
    float4 *in = nullptr, *out = nullptr;
    float* sink = nullptr;
    cudaMalloc(&in, n * sizeof(float4));
    cudaMalloc(&out, n * sizeof(float4));
    cudaMalloc(&sink, size_t(prop.multiProcessorCount) * 8 * 256 * sizeof(float));
    cudaMemset(in, 0, n * sizeof(float4));
    cudaDeviceSynchronize();

    auto start = PARAMS(CUpti_PmSampling_Start_Params);
    start.pPmSamplingObject = sampler;
    if (!ok(cuptiPmSamplingStart(&start), "cuptiPmSamplingStart"))
        return 1;
    uint64_t t[6] = {};
    cuptiGetTimestamp(&t[0]);
    if (watchMs > 0) {
        // Another process does the work; decode as we go so the hardware buffer never fills.
        std::printf("watching for %ld ms\n", watchMs);
        std::fflush(stdout);
        timespec pause{watchMs / 1000, (watchMs % 1000) * 1000000};
        nanosleep(&pause, nullptr);
        cuptiGetTimestamp(&t[1]);
        t[2] = t[3] = t[1];
    } else {
        for (int r = 0; r < 40; ++r)
            copyKernel<<<prop.multiProcessorCount * 8, 256>>>(in, out, n);
        cudaDeviceSynchronize();
        cuptiGetTimestamp(&t[1]);
        cuptiGetTimestamp(&t[2]);
        for (int r = 0; r < 20; ++r)
            fmaKernel<<<prop.multiProcessorCount * 8, 256>>>(sink, 200000);
        cudaDeviceSynchronize();
        cuptiGetTimestamp(&t[3]);
    }
    auto stop = PARAMS(CUpti_PmSampling_Stop_Params);
    stop.pPmSamplingObject = sampler;
    ok(cuptiPmSamplingStop(&stop), "cuptiPmSamplingStop");
    std::printf("copy phase %.1f ms, fma phase %.1f ms (CUPTI timestamps)\n",
                (t[1] - t[0]) / 1e6, (t[3] - t[2]) / 1e6);

    auto decode = PARAMS(CUpti_PmSampling_DecodeData_Params);
    decode.pPmSamplingObject = sampler;
    decode.pCounterDataImage = counterData.data();
    decode.counterDataImageSize = counterData.size();
    if (!ok(cuptiPmSamplingDecodeData(&decode), "cuptiPmSamplingDecodeData"))
        return 1;
    std::printf("decode stop reason %d, overflow %d\n", static_cast<int>(decode.decodeStopReason),
                static_cast<int>(decode.overflow));
    auto info = PARAMS(CUpti_PmSampling_GetCounterDataInfo_Params);
    info.pCounterDataImage = counterData.data();
    info.counterDataImageSize = counterData.size();
    if (!ok(cuptiPmSamplingGetCounterDataInfo(&info), "GetCounterDataInfo"))
        return 1;
    std::printf("samples: total %zu, populated %zu, completed %zu\n", info.numTotalSamples,
                info.numPopulatedSamples, info.numCompletedSamples);

    std::vector<double> sumCopy(valid.size()), sumFma(valid.size());
    size_t inCopy = 0, inFma = 0;
    uint64_t first = 0, last = 0;
    for (size_t s = 0; s < info.numCompletedSamples; ++s) {
        auto sample = PARAMS(CUpti_PmSampling_CounterData_GetSampleInfo_Params);
        sample.pPmSamplingObject = sampler;
        sample.pCounterDataImage = counterData.data();
        sample.counterDataImageSize = counterData.size();
        sample.sampleIndex = s;
        if (!ok(cuptiPmSamplingCounterDataGetSampleInfo(&sample), "GetSampleInfo"))
            break;
        std::vector<double> values(valid.size());
        auto eval = PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params);
        eval.pHostObject = host.object;
        eval.pCounterDataImage = counterData.data();
        eval.counterDataImageSize = counterData.size();
        eval.ppMetricNames = valid.data();
        eval.numMetrics = valid.size();
        eval.rangeIndex = s;
        eval.pMetricValues = values.data();
        if (!ok(cuptiProfilerHostEvaluateToGpuValues(&eval), "EvaluateToGpuValues"))
            break;
        if (s == 0)
            first = sample.startTimestamp;
        last = sample.endTimestamp;
        const bool busy = watchMs > 0 && values[0] > 1.0 && s > 0;
        if (busy)
            ++inFma; // counted as busy samples in watch mode
        if (s < 3 || s + 1 == info.numCompletedSamples || (busy && inFma <= 5)) {
            std::printf("sample %zu: [%llu, %llu]", s, (unsigned long long)sample.startTimestamp,
                        (unsigned long long)sample.endTimestamp);
            for (size_t m = 0; m < valid.size(); ++m)
                std::printf(" %.3g", values[m]);
            std::printf("\n");
        }
        const uint64_t mid = (sample.startTimestamp + sample.endTimestamp) / 2;
        if (mid >= t[0] && mid < t[1]) {
            ++inCopy;
            for (size_t m = 0; m < valid.size(); ++m)
                sumCopy[m] += values[m];
        } else if (mid >= t[2] && mid < t[3]) {
            ++inFma;
            for (size_t m = 0; m < valid.size(); ++m)
                sumFma[m] += values[m];
        }
    }
    std::printf("sample timestamps %llu .. %llu; CUPTI timestamps %llu .. %llu\n",
                (unsigned long long)first, (unsigned long long)last, (unsigned long long)t[0],
                (unsigned long long)t[3]);
    std::printf("%-72s %14s %14s\n", "metric (mean over the phase's samples)", "copy", "fma");
    for (size_t m = 0; m < valid.size(); ++m)
        std::printf("%-72s %14.4g %14.4g\n", valid[m], inCopy ? sumCopy[m] / inCopy : 0.0,
                    inFma ? sumFma[m] / inFma : 0.0);
    if (watchMs > 0)
        std::printf("busy samples (first metric > 1%%) while watching: %zu\n", inFma);
    else
        std::printf("samples in copy phase %zu, in fma phase %zu\n", inCopy, inFma);

    auto disable = PARAMS(CUpti_PmSampling_Disable_Params);
    disable.pPmSamplingObject = sampler;
    ok(cuptiPmSamplingDisable(&disable), "cuptiPmSamplingDisable");
    std::printf("probe done\n");
    return 0;
}
