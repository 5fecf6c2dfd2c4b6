// cuda_probe: a small CUDA program that warpline-record traces through `--` in the gpu tests.
//   cuda_probe [--steps N] [--exit CODE] [--fork] [--kill-self-after STEP] [--driver]
//              [--step-ms MS] [--payload]
// Each step launches two kernels inside an NVTX range "probe step I"; --fork runs a copy of itself
// in a child process that also uses CUDA (one trace per process); --exit returns CODE after the
// work; --kill-self-after sends SIGKILL to itself mid-run (an interrupted recording); --step-ms
// sleeps after each step (a long run, to be interrupted by a signal); --driver
// also calls the driver API directly (cuCtxSynchronize), which the trace must show; --payload
// wraps each step in a range of domain "probe" opened by nvtxDomainRangePushEx and closed by the
// payload extension's nvtxRangePopPayload, as NCCL closes its ranges, plus one range pushed and
// popped with nvtxRangePushPayload / nvtxRangePopPayload.

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>
#include <signal.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

__global__ void scale(float* x, int n, float a) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] *= a;
}

__global__ void offset(float* x, int n, float b) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] += b;
}

#define CHECK(call)                                                                                \
    do {                                                                                           \
        const cudaError_t e = (call);                                                              \
        if (e != cudaSuccess) {                                                                    \
            std::fprintf(stderr, "cuda_probe: %s: %s\n", #call, cudaGetErrorString(e));            \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(int argc, char** argv) {
    int steps = 20, exitCode = 0, killAfter = -1, stepMs = 0;
    bool forkChild = false, driver = false, payload = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--steps" && i + 1 < argc)
            steps = std::atoi(argv[++i]);
        else if (a == "--exit" && i + 1 < argc)
            exitCode = std::atoi(argv[++i]);
        else if (a == "--kill-self-after" && i + 1 < argc)
            killAfter = std::atoi(argv[++i]);
        else if (a == "--step-ms" && i + 1 < argc)
            stepMs = std::atoi(argv[++i]);
        else if (a == "--fork")
            forkChild = true;
        else if (a == "--driver")
            driver = true;
        else if (a == "--payload")
            payload = true;
    }
    nvtxDomainHandle_t domain = payload ? nvtxDomainCreateA("probe") : nullptr;
    const uint64_t stepNumber = 0;
    const nvtxPayloadData_t payloadData[] = {
        {NVTX_PAYLOAD_ENTRY_TYPE_UINT64, sizeof stepNumber, &stepNumber}};
    pid_t child = -1;
    if (forkChild) {
        // fork before any CUDA call, then exec: the child is a fresh CUDA process.
        child = ::fork();
        if (child == 0) {
            ::execl("/proc/self/exe", argv[0], "--steps", "5", static_cast<char*>(nullptr));
            std::perror("cuda_probe: exec");
            ::_exit(127);
        }
    }
    const int n = 1 << 20;
    float* x = nullptr;
    CHECK(cudaMalloc(&x, n * sizeof(float)));
    CHECK(cudaMemset(x, 0, n * sizeof(float)));
    for (int s = 0; s < steps; ++s) {
        if (payload) {
            nvtxEventAttributes_t attributes{};
            attributes.version = NVTX_VERSION;
            attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
            attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
            const std::string name = "payload step " + std::to_string(s);
            attributes.message.ascii = name.c_str();
            nvtxDomainRangePushEx(domain, &attributes);
        }
        nvtxRangePushA(("probe step " + std::to_string(s)).c_str());
        scale<<<(n + 255) / 256, 256>>>(x, n, 1.5f);
        offset<<<(n + 255) / 256, 256>>>(x, n, 1.0f);
        CHECK(cudaGetLastError());
        float first = 0;
        CHECK(cudaMemcpy(&first, x, sizeof first, cudaMemcpyDeviceToHost));
        nvtxRangePop();
        if (payload)
            nvtxRangePopPayload(domain, payloadData, 1);
        if (stepMs > 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(stepMs));
        if (s == killAfter) {
            // Let at least one periodic commit happen, then die without any exit handler.
            std::this_thread::sleep_for(std::chrono::milliseconds(1500));
            ::kill(::getpid(), SIGKILL);
        }
    }
    if (payload) {
        nvtxRangePushPayload(domain, payloadData, 1);
        nvtxRangePopPayload(domain, payloadData, 1);
    }
    if (driver && cuCtxSynchronize() != CUDA_SUCCESS)
        return 1;
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(x));
    if (child > 0) {
        int status = 0;
        ::waitpid(child, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            return 1;
    }
    return exitCode;
}
