// Pulse-Doppler surveillance radar: per-CPI signal processing chain for a 32-channel array.
// build: nvcc -O2 -o x blind21_pulse_doppler_cpi_buffers.cu -lcufft
//
// Each coherent processing interval (CPI) every receive channel goes through the classic chain:
// echo synthesis (the hardware-in-the-loop target simulator that stands in for the ADC feed),
// pulse compression (range FFT, multiply by the conjugate chirp spectrum, inverse FFT), slow-time
// Hamming window, Doppler FFT across pulses, power, 2-D cell-averaging CFAR, detection compaction,
// and the detection list comes back to the host for the tracker. cuFFT plans and the chirp
// spectrum are made once at start-up; the per-channel working buffers are allocated and released
// per channel per CPI, as the original single-channel prototype did. Start-up, warm-up CPIs, the
// timed CPIs with a status line every 100 CPIs and a track-file flush every 50, one waveform
// change (new chirp) half way, teardown.
#include <cuda_runtime.h>
#include <cufft.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                            \
    do {                                                                                 \
        cudaError_t e_ = (x);                                                            \
        if (e_ != cudaSuccess) {                                                         \
            fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));   \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)
#define CF(x)                                                                            \
    do {                                                                                 \
        cufftResult r_ = (x);                                                            \
        if (r_ != CUFFT_SUCCESS) {                                                       \
            fprintf(stderr, "%s:%d cufft error %d\n", __FILE__, __LINE__, (int)r_);      \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

struct Detection {
    int doppler;
    int range;
    float power;
    float snr;
};

static int NCH, NP, NR, WARMUP, CPIS;
static const int MAX_DETS = 4096;
static const int GUARD_D = 2, GUARD_R = 4, TRAIN_D = 2, TRAIN_R = 8;

__device__ __forceinline__ unsigned hash32(unsigned x) {
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

// Echoes of a handful of moving targets plus receiver noise, one complex sample per thread.
__global__ void synth_echo(cufftComplex* raw, int np, int nr, int chirp_len, float slope, int ch,
                           int cpi) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    int p = blockIdx.y;
    if (r >= nr) return;
    const int ntgt = 6;
    float re = 0.f, im = 0.f;
    for (int t = 0; t < ntgt; ++t) {
        int r0 = (nr / 8) * (t + 1) + ((cpi * (t + 1)) % 37);
        int k = r - r0;
        if (k >= 0 && k < chirp_len) {
            float fd = 0.03f * (t - 2.5f);                   // normalised Doppler per pulse
            float ph = slope * k * k + 6.2831853f * (fd * p + 0.11f * ch * (t + 1));
            float a = 0.3f / (1.f + t);
            re += a * cosf(ph);
            im += a * sinf(ph);
        }
    }
    unsigned h = hash32((unsigned)(p * nr + r) ^ (unsigned)(cpi * 7919 + ch * 104729));
    unsigned h2 = hash32(h);
    float u1 = (h & 0xffffff) / 16777216.f + 1e-7f, u2 = (h2 & 0xffffff) / 16777216.f;
    float rad = sqrtf(-2.f * logf(u1)) * 0.05f;
    raw[p * nr + r] = make_cuFloatComplex(re + rad * cosf(6.2831853f * u2),
                                          im + rad * sinf(6.2831853f * u2));
}

__global__ void make_chirp(cufftComplex* c, int nr, int chirp_len, float slope) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= nr) return;
    float ph = slope * k * k;
    c[k] = k < chirp_len ? make_cuFloatComplex(cosf(ph), sinf(ph)) : make_cuFloatComplex(0, 0);
}

__global__ void matched_filter(cufftComplex* spec, const cufftComplex* ref, int np, int nr) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= np * nr) return;
    cufftComplex a = spec[i], b = ref[i % nr];
    float s = 1.f / nr;
    spec[i] = make_cuFloatComplex((a.x * b.x + a.y * b.y) * s, (a.y * b.x - a.x * b.y) * s);
}

__global__ void slow_time_window(cufftComplex* x, int np, int nr) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= np * nr) return;
    int p = i / nr;
    float w = 0.54f - 0.46f * cosf(6.2831853f * p / (np - 1));
    x[i].x *= w;
    x[i].y *= w;
}

// |X|^2 with the Doppler axis shifted so zero velocity sits in the middle row.
__global__ void power_shift(const cufftComplex* x, float* pw, int np, int nr) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= np * nr) return;
    int p = i / nr, r = i % nr;
    int ps = (p + np / 2) % np;
    cufftComplex v = x[i];
    pw[ps * nr + r] = v.x * v.x + v.y * v.y;
}

__global__ void ca_cfar(const float* pw, unsigned char* mask, Detection* dets, int* count,
                        int np, int nr, float alpha) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    int d = blockIdx.y;
    if (r >= nr) return;
    float sum = 0.f;
    int n = 0;
    for (int dd = -(GUARD_D + TRAIN_D); dd <= GUARD_D + TRAIN_D; ++dd) {
        int di = (d + dd + np) % np;
        for (int rr = -(GUARD_R + TRAIN_R); rr <= GUARD_R + TRAIN_R; ++rr) {
            if (abs(dd) <= GUARD_D && abs(rr) <= GUARD_R) continue;
            int ri = r + rr;
            if (ri < 0 || ri >= nr) continue;
            sum += pw[di * nr + ri];
            ++n;
        }
    }
    float noise = sum / n, cut = pw[d * nr + r];
    bool hit = cut > alpha * noise;
    mask[d * nr + r] = hit;
    if (hit) {
        int k = atomicAdd(count, 1);
        if (k < MAX_DETS) dets[k] = Detection{d, r, cut, 10.f * log10f(cut / noise)};
    }
}

int main() {
    bool small = getenv("BLIND_SMALL") && strcmp(getenv("BLIND_SMALL"), "1") == 0;
    NCH = small ? 4 : 32;
    NP = small ? 32 : 128;
    NR = small ? 512 : 4096;
    WARMUP = small ? 2 : 20;
    CPIS = small ? 10 : 600;
    const int n = NP * NR;
    int chirp_len = NR / 16;
    float slope = 3.14159265f * 0.4f / chirp_len;

    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("radar DSP on %s: %d channels, %d pulses x %d range bins per CPI\n", prop.name, NCH, NP,
           NR);

    // start-up: plans and the reference chirp spectrum (persistent)
    cufftHandle plan_range, plan_doppler;
    CF(cufftPlan1d(&plan_range, NR, CUFFT_C2C, NP));
    int dims[1] = {NP};
    CF(cufftPlanMany(&plan_doppler, 1, dims, dims, NR, 1, dims, NR, 1, CUFFT_C2C, NR));
    cufftComplex* d_ref;
    CK(cudaMalloc(&d_ref, sizeof(cufftComplex) * NR));
    // the reference spectrum: a one-row plan over the zero-padded chirp
    cufftHandle plan_ref;
    CF(cufftPlan1d(&plan_ref, NR, CUFFT_C2C, 1));
    auto set_waveform = [&](float s) {
        make_chirp<<<(NR + 255) / 256, 256>>>(d_ref, NR, chirp_len, s);
        CF(cufftExecC2C(plan_ref, d_ref, d_ref, CUFFT_FORWARD));
    };
    set_waveform(slope);
    CK(cudaDeviceSynchronize());

    std::vector<Detection> host_dets(MAX_DETS);
    double alloc_s = 0.0;
    long n_alloc = 0, total_dets = 0;
    FILE* track = fopen("/dev/null", "w");
    dim3 grid2((NR + 255) / 256, NP);
    int blocks1 = (n + 255) / 256;

    auto process_cpi = [&](int cpi, bool timed) {
        nvtxRangePushA("CPI");
        for (int ch = 0; ch < NCH; ++ch) {
            auto t0 = std::chrono::steady_clock::now();
            cufftComplex *d_raw, *d_spec, *d_rc, *d_dop;
            float* d_pow;
            unsigned char* d_mask;
            Detection* d_dets;
            int* d_count;
            CK(cudaMalloc(&d_raw, sizeof(cufftComplex) * n));
            CK(cudaMalloc(&d_spec, sizeof(cufftComplex) * n));
            CK(cudaMalloc(&d_rc, sizeof(cufftComplex) * n));
            CK(cudaMalloc(&d_dop, sizeof(cufftComplex) * n));
            CK(cudaMalloc(&d_pow, sizeof(float) * n));
            CK(cudaMalloc(&d_mask, n));
            CK(cudaMalloc(&d_dets, sizeof(Detection) * MAX_DETS));
            CK(cudaMalloc(&d_count, sizeof(int)));
            auto t1 = std::chrono::steady_clock::now();

            nvtxRangePushA("channel chain");
            CK(cudaMemset(d_count, 0, sizeof(int)));
            synth_echo<<<grid2, 256>>>(d_raw, NP, NR, chirp_len, slope, ch, cpi);
            CF(cufftExecC2C(plan_range, d_raw, d_spec, CUFFT_FORWARD));
            matched_filter<<<blocks1, 256>>>(d_spec, d_ref, NP, NR);
            CF(cufftExecC2C(plan_range, d_spec, d_rc, CUFFT_INVERSE));
            slow_time_window<<<blocks1, 256>>>(d_rc, NP, NR);
            CF(cufftExecC2C(plan_doppler, d_rc, d_dop, CUFFT_FORWARD));
            power_shift<<<blocks1, 256>>>(d_dop, d_pow, NP, NR);
            ca_cfar<<<grid2, 256>>>(d_pow, d_mask, d_dets, d_count, NP, NR, 18.0f);
            CK(cudaGetLastError());
            int ndet = 0;
            CK(cudaMemcpy(&ndet, d_count, sizeof(int), cudaMemcpyDeviceToHost));
            ndet = ndet < MAX_DETS ? ndet : MAX_DETS;
            if (ndet > 0)
                CK(cudaMemcpy(host_dets.data(), d_dets, sizeof(Detection) * ndet,
                              cudaMemcpyDeviceToHost));
            nvtxRangePop();

            auto t2 = std::chrono::steady_clock::now();
            CK(cudaFree(d_raw));
            CK(cudaFree(d_spec));
            CK(cudaFree(d_rc));
            CK(cudaFree(d_dop));
            CK(cudaFree(d_pow));
            CK(cudaFree(d_mask));
            CK(cudaFree(d_dets));
            CK(cudaFree(d_count));
            auto t3 = std::chrono::steady_clock::now();
            if (timed) {
                alloc_s += std::chrono::duration<double>(t1 - t0).count() +
                           std::chrono::duration<double>(t3 - t2).count();
                n_alloc += 8;
                total_dets += ndet;
            }
            // tracker input: keep the strongest detection per channel
            float best = 0.f;
            for (int k = 0; k < ndet; ++k) best = host_dets[k].snr > best ? host_dets[k].snr : best;
            if (cpi % 50 == 0) fprintf(track, "%d %d %d %.2f\n", cpi, ch, ndet, best);
        }
        nvtxRangePop();
    };

    for (int c = 0; c < WARMUP; ++c) process_cpi(c, false);
    CK(cudaDeviceSynchronize());

    auto tl0 = std::chrono::steady_clock::now();
    for (int c = 1; c <= CPIS; ++c) {
        process_cpi(WARMUP + c, true);
        if (c % 50 == 0) fflush(track);
        if (c % 100 == 0) {
            size_t fr, tot;
            CK(cudaMemGetInfo(&fr, &tot));
            auto now = std::chrono::steady_clock::now();
            double el = std::chrono::duration<double>(now - tl0).count();
            printf("CPI %4d  %.1f CPI/s  detections %ld  free %.1f GiB\n", c, c / el, total_dets,
                   fr / 1073741824.0);
        }
        if (c == CPIS / 2) {
            nvtxRangePushA("waveform change");
            slope *= 1.25f;
            set_waveform(slope);
            nvtxRangePop();
        }
    }
    CK(cudaDeviceSynchronize());
    double loop_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - tl0).count();

    fclose(track);
    CF(cufftDestroy(plan_range));
    CF(cufftDestroy(plan_doppler));
    CF(cufftDestroy(plan_ref));
    CK(cudaFree(d_ref));
    printf("%ld detections over %d CPIs\n", total_dets, CPIS);
    printf("GROUND TRUTH: allocator: cudaMalloc+cudaFree of the per-channel CPI buffers (%ld calls "
           "each) %.2f s of the %.2f s timed loop (%.0f%%); %d timed CPIs (x %d channels) after %d "
           "warm-up CPIs\n",
           n_alloc, alloc_s, loop_s, 100.0 * alloc_s / loop_s, CPIS, NCH, WARMUP);
    return 0;
}
