// Corpus (blind, batch 13): a radio-telescope beamformer that streams a recorded capture from host
// memory through four CUDA streams. Expected verdict: tests/corpus/BLIND13_EXPECTED.md.
//
// Program: a station beamformer for a 16-antenna array. The capture (16 antennas, complex
// float32 samples, already "loaded from disk": synthesised once at start-up into a std::vector)
// is processed in blocks of 2^20 samples per antenna (128 MiB a block). Each block is assigned
// round-robin to one of four non-blocking streams, in the usual double-buffering pattern:
//   1. cudaMemcpyAsync of the block host-to-device (from the std::vector: pageable memory);
//   2. fir_decimate: a 32-tap low-pass FIR and decimation by 4, one thread per output sample;
//   3. cublasCgemm: 32 beams = complex weights (32 x 16) times the filtered antenna streams;
//   4. detect_integrate: |beam|^2 summed over 256 samples (1,024 time bins per beam);
//   5. cudaMemcpyAsync of the 128 KiB power block device-to-host (into a std::vector);
//   6. cudaEventRecord on the stream.
// Before a stream is reused, the host waits on its event (cudaEventSynchronize) and folds that
// block's powers into a running per-beam total and a peak search. NVTX (nvtx3, header only): one
// "process_block" range per block. One warm-up block, then 320 blocks. The last line printed gives
// the seconds spent inside the cudaMemcpyAsync calls (host-to-device and device-to-host), the
// seconds waiting on events, and the GPU-side duration of the host-to-device copies (CUDA events
// around them), against the loop's total.
//   nvcc -O2 -o blind13-beamformer-pageable-streams blind13_beamformer_pageable_streams.cu -lcublas
#include <cublas_v2.h>
#include <cuComplex.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr int kAntennas = 16;
constexpr int kBlockSamples = 1 << 20;                 // per antenna, per block
constexpr int kDecim = 4;
constexpr int kTaps = 32;
constexpr int kOut = kBlockSamples / kDecim;           // 262,144 filtered samples per antenna
constexpr int kBeams = 32;
constexpr int kIntegrate = 256;
constexpr int kBins = kOut / kIntegrate;               // 1,024 power bins per beam
constexpr int kStreams = 4;
constexpr int kCaptureBlocks = 3;                      // the capture is replayed cyclically
constexpr int kBlocks = 320;
constexpr double kSampleRate = 50e6;
constexpr double kPi = 3.14159265358979323846;

__constant__ float c_taps[kTaps];

#define CHECK(call)                                                                          \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) {                                                             \
            std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call,                \
                         cudaGetErrorString(e_));                                            \
            std::exit(1);                                                                    \
        }                                                                                    \
    } while (0)
#define CHECK_BLAS(call)                                                                     \
    do {                                                                                     \
        cublasStatus_t s_ = (call);                                                          \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                   \
            std::fprintf(stderr, "%s:%d %s: cuBLAS status %d\n", __FILE__, __LINE__, #call,  \
                         static_cast<int>(s_));                                              \
            std::exit(1);                                                                    \
        }                                                                                    \
    } while (0)

// in: [antenna][sample] of one block; out: [antenna][decimated sample]. The first kTaps-1 inputs of
// a block have no history within the block; they are treated as zero (the block edges are short
// next to 2^20 samples).
__global__ void fir_decimate(const float2* __restrict__ in, float2* __restrict__ out) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int ant = blockIdx.y;
    if (t >= kOut) return;
    const float2* x = in + static_cast<size_t>(ant) * kBlockSamples;
    const int n = t * kDecim;
    float2 acc = make_float2(0.f, 0.f);
#pragma unroll
    for (int k = 0; k < kTaps; ++k) {
        const int i = n - k;
        if (i >= 0) {
            const float2 v = x[i];
            acc.x += c_taps[k] * v.x;
            acc.y += c_taps[k] * v.y;
        }
    }
    out[static_cast<size_t>(ant) * kOut + t] = acc;
}

// beams: [beam][sample] (column-major kOut x kBeams); power: [beam][bin].
__global__ void detect_integrate(const float2* __restrict__ beams, float* __restrict__ power) {
    __shared__ float partial[kIntegrate];
    const int bin = blockIdx.x, beam = blockIdx.y;
    const float2 v = beams[static_cast<size_t>(beam) * kOut + bin * kIntegrate + threadIdx.x];
    partial[threadIdx.x] = v.x * v.x + v.y * v.y;
    __syncthreads();
    for (int s = kIntegrate / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) power[beam * kBins + bin] = partial[0] / kIntegrate;
}

// A synthetic capture: three narrow-band sources at different arrival angles plus receiver noise,
// generated with rotating phasors (re-normalised now and then) rather than sin/cos per sample.
void synthesise_capture(std::vector<float2>& capture) {
    const double freqs[3] = {1.1e6, 3.7e6, -2.3e6};
    const double angles[3] = {0.21, -0.63, 1.02};     // radians from zenith
    const double amps[3] = {0.8, 0.3, 0.5};
    uint64_t lcg = 0x9E3779B97F4A7C15ull;
    auto noise = [&lcg]() {
        lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
        return (static_cast<float>(lcg >> 40) / static_cast<float>(1 << 24)) - 0.5f;
    };
    const size_t total = static_cast<size_t>(kCaptureBlocks) * kBlockSamples;
    for (int a = 0; a < kAntennas; ++a) {
        double re[3], im[3], dre[3], dim[3];
        for (int s = 0; s < 3; ++s) {
            const double phase0 = kPi * a * std::sin(angles[s]);   // half-wavelength spacing
            re[s] = amps[s] * std::cos(phase0);
            im[s] = amps[s] * std::sin(phase0);
            const double w = 2.0 * kPi * freqs[s] / kSampleRate;
            dre[s] = std::cos(w);
            dim[s] = std::sin(w);
        }
        for (size_t n = 0; n < total; ++n) {
            float sr = 0.3f * noise(), si = 0.3f * noise();
            for (int s = 0; s < 3; ++s) {
                sr += static_cast<float>(re[s]);
                si += static_cast<float>(im[s]);
                const double nr = re[s] * dre[s] - im[s] * dim[s];
                im[s] = re[s] * dim[s] + im[s] * dre[s];
                re[s] = nr;
                if ((n & 0xFFFF) == 0) {
                    const double m = amps[s] / std::sqrt(re[s] * re[s] + im[s] * im[s]);
                    re[s] *= m;
                    im[s] *= m;
                }
            }
            // Stored block by block, [antenna][sample] inside each block, as the recorder wrote it.
            const size_t block = n / kBlockSamples, i = n % kBlockSamples;
            capture[(block * kAntennas + a) * kBlockSamples + i] = make_float2(sr, si);
        }
    }
}

}  // namespace

int main() {
    using clock = std::chrono::steady_clock;
    auto seconds = [](clock::time_point a, clock::time_point b) {
        return std::chrono::duration<double>(b - a).count();
    };

    // The capture, in pageable host memory.
    const size_t block_elems = static_cast<size_t>(kAntennas) * kBlockSamples;
    std::vector<float2> capture(block_elems * kCaptureBlocks);
    synthesise_capture(capture);

    // Windowed-sinc low-pass taps (cut-off at the new Nyquist) and steering weights.
    float taps[kTaps];
    double tap_sum = 0;
    for (int k = 0; k < kTaps; ++k) {
        const double x = k - (kTaps - 1) / 2.0;
        const double sinc = x == 0 ? 1.0 : std::sin(kPi * x / kDecim) / (kPi * x / kDecim);
        const double hann = 0.5 - 0.5 * std::cos(2 * kPi * k / (kTaps - 1));
        taps[k] = static_cast<float>(sinc * hann);
        tap_sum += taps[k];
    }
    for (float& t : taps) t = static_cast<float>(t / tap_sum);
    CHECK(cudaMemcpyToSymbol(c_taps, taps, sizeof(taps)));

    std::vector<cuComplex> weights(kAntennas * kBeams);   // column-major kAntennas x kBeams
    for (int b = 0; b < kBeams; ++b) {
        const double angle = -1.2 + 2.4 * b / (kBeams - 1);
        for (int a = 0; a < kAntennas; ++a) {
            const double phase = -kPi * a * std::sin(angle);
            weights[b * kAntennas + a] = make_cuComplex(static_cast<float>(std::cos(phase) / kAntennas),
                                                        static_cast<float>(std::sin(phase) / kAntennas));
        }
    }
    cuComplex* d_weights;
    CHECK(cudaMalloc(&d_weights, weights.size() * sizeof(cuComplex)));
    CHECK(cudaMemcpy(d_weights, weights.data(), weights.size() * sizeof(cuComplex),
                     cudaMemcpyHostToDevice));

    cublasHandle_t blas;
    CHECK_BLAS(cublasCreate(&blas));

    cudaStream_t streams[kStreams];
    cudaEvent_t done[kStreams], h2d_start[kStreams], h2d_end[kStreams];
    float2 *d_in[kStreams], *d_filt[kStreams], *d_beams[kStreams];
    float* d_power[kStreams];
    std::vector<float> h_power[kStreams];
    bool pending[kStreams] = {};
    for (int s = 0; s < kStreams; ++s) {
        CHECK(cudaStreamCreateWithFlags(&streams[s], cudaStreamNonBlocking));
        CHECK(cudaEventCreateWithFlags(&done[s], cudaEventDisableTiming));
        CHECK(cudaEventCreate(&h2d_start[s]));
        CHECK(cudaEventCreate(&h2d_end[s]));
        CHECK(cudaMalloc(&d_in[s], block_elems * sizeof(float2)));
        CHECK(cudaMalloc(&d_filt[s], static_cast<size_t>(kAntennas) * kOut * sizeof(float2)));
        CHECK(cudaMalloc(&d_beams[s], static_cast<size_t>(kBeams) * kOut * sizeof(float2)));
        CHECK(cudaMalloc(&d_power[s], kBeams * kBins * sizeof(float)));
        h_power[s].resize(kBeams * kBins);
    }

    std::vector<double> beam_energy(kBeams, 0.0);
    float peak = 0.f;
    int peak_beam = -1, peak_block = -1;
    double copy_h2d_s = 0, copy_d2h_s = 0, wait_s = 0, h2d_gpu_s = 0;

    // Folds a finished block into the running totals (the block's events have completed).
    auto consume = [&](int s, int block, bool timed) {
        const std::vector<float>& p = h_power[s];
        for (int b = 0; b < kBeams; ++b) {
            double sum = 0;
            for (int i = 0; i < kBins; ++i) {
                const float v = p[b * kBins + i];
                sum += v;
                if (v > peak) {
                    peak = v;
                    peak_beam = b;
                    peak_block = block;
                }
            }
            beam_energy[b] += sum;
        }
        if (timed) {
            float ms = 0;
            CHECK(cudaEventElapsedTime(&ms, h2d_start[s], h2d_end[s]));
            h2d_gpu_s += ms / 1e3;
        }
    };
    int block_of_slot[kStreams] = {};

    auto process_block = [&](int block, bool timed) {
        const int s = block % kStreams;
        nvtxRangePushA("process_block");
        if (pending[s]) {
            const auto w0 = clock::now();
            CHECK(cudaEventSynchronize(done[s]));
            if (timed) wait_s += seconds(w0, clock::now());
            consume(s, block_of_slot[s], timed);
        }
        const float2* src = capture.data() + (block % kCaptureBlocks) * block_elems;
        CHECK(cudaEventRecord(h2d_start[s], streams[s]));
        const auto c0 = clock::now();
        CHECK(cudaMemcpyAsync(d_in[s], src, block_elems * sizeof(float2), cudaMemcpyHostToDevice,
                              streams[s]));
        const auto c1 = clock::now();
        CHECK(cudaEventRecord(h2d_end[s], streams[s]));
        if (timed) copy_h2d_s += seconds(c0, c1);

        fir_decimate<<<dim3((kOut + 255) / 256, kAntennas), 256, 0, streams[s]>>>(d_in[s], d_filt[s]);
        CHECK(cudaGetLastError());
        CHECK_BLAS(cublasSetStream(blas, streams[s]));
        const cuComplex one = make_cuComplex(1.f, 0.f), zero = make_cuComplex(0.f, 0.f);
        CHECK_BLAS(cublasCgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, kOut, kBeams, kAntennas, &one,
                               reinterpret_cast<const cuComplex*>(d_filt[s]), kOut, d_weights,
                               kAntennas, &zero, reinterpret_cast<cuComplex*>(d_beams[s]), kOut));
        detect_integrate<<<dim3(kBins, kBeams), kIntegrate, 0, streams[s]>>>(d_beams[s], d_power[s]);
        CHECK(cudaGetLastError());

        const auto d0 = clock::now();
        CHECK(cudaMemcpyAsync(h_power[s].data(), d_power[s], kBeams * kBins * sizeof(float),
                              cudaMemcpyDeviceToHost, streams[s]));
        if (timed) copy_d2h_s += seconds(d0, clock::now());
        CHECK(cudaEventRecord(done[s], streams[s]));
        pending[s] = true;
        block_of_slot[s] = block;
        nvtxRangePop();
    };

    // Warm-up: one block (cuBLAS's first call, the module load).
    process_block(0, false);
    CHECK(cudaDeviceSynchronize());
    consume(0, 0, false);
    pending[0] = false;

    const auto start = clock::now();
    for (int block = 0; block < kBlocks; ++block) process_block(block, true);
    for (int s = 0; s < kStreams; ++s) {
        if (!pending[s]) continue;
        const auto w0 = clock::now();
        CHECK(cudaEventSynchronize(done[s]));
        wait_s += seconds(w0, clock::now());
        consume(s, block_of_slot[s], true);
    }
    const double loop_s = seconds(start, clock::now());

    int loudest = 0;
    for (int b = 1; b < kBeams; ++b)
        if (beam_energy[b] > beam_energy[loudest]) loudest = b;
    const double gbytes = static_cast<double>(kBlocks) * block_elems * sizeof(float2) / 1e9;
    std::printf("loudest beam %d, peak %.3f in beam %d of block %d\n", loudest, peak, peak_beam,
                peak_block);
    std::printf("copies: cudaMemcpyAsync calls %.3f s (host-to-device %.3f s for %.1f GB = %.1f GB/s "
                "as the host saw it, %.3f s on the GPU's clock; device-to-host %.3f s), event waits "
                "%.3f s, of loop %.3f s; %d blocks\n",
                copy_h2d_s + copy_d2h_s, copy_h2d_s, gbytes, gbytes / copy_h2d_s, h2d_gpu_s,
                copy_d2h_s, wait_s, loop_s, kBlocks);

    for (int s = 0; s < kStreams; ++s) {
        cudaFree(d_in[s]);
        cudaFree(d_filt[s]);
        cudaFree(d_beams[s]);
        cudaFree(d_power[s]);
        cudaStreamDestroy(streams[s]);
    }
    cublasDestroy(blas);
    return 0;
}
