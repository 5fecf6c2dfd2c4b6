// Self-consistent tight-binding (Hubbard-U mean field) for a disordered carbon-nanotube bundle:
// the density matrix of every SCF cycle comes from Palser-Manolopoulos canonical purification,
// i.e. two dense double-precision GEMMs (cuBLAS DGEMM, n = 5120) per purification iteration.
// Per iteration the three traces come back to the host (one small synchronous copy) to pick the
// update coefficient; per SCF cycle the density's diagonal comes back (pinned) and the host mixes
// it into the on-site energies; every 8 cycles the density matrix is copied out and a writer
// thread saves it. The GEMMs hold the GPU; the host mostly waits.
// NVTX ranges: "scf_cycle", "purify", "density_mix", "checkpoint".
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#define CK(x)                                                                            \
    do {                                                                                 \
        cudaError_t e_ = (x);                                                            \
        if (e_ != cudaSuccess) {                                                         \
            std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
            std::exit(1);                                                                \
        }                                                                                \
    } while (0)
#define CB(x)                                                                   \
    do {                                                                        \
        cublasStatus_t s_ = (x);                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                      \
            std::fprintf(stderr, "%s:%d cublas %d\n", __FILE__, __LINE__, (int)s_); \
            std::exit(1);                                                       \
        }                                                                       \
    } while (0)

using Clock = std::chrono::steady_clock;
static double secs(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

static const int N = 5120;          // orbitals (one p_z per carbon)
static const int SCF_CYCLES = 28;   // timed cycles
static const int WARMUP_CYCLES = 1; // one short cycle first (cuBLAS heuristics, allocations)
static const int MAX_PURIFY = 36;
static const double HUBBARD_U = 1.2, MIX = 0.35;

// Three traces in one pass over the diagonals: tr(X), tr(X2), tr(X3).
__global__ void traces(const double* X, const double* X2, const double* X3, int n, double* out) {
    __shared__ double s[3][256];
    double a = 0, b = 0, c = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        size_t d = (size_t)i * n + i;
        a += X[d];
        b += X2[d];
        c += X3[d];
    }
    s[0][threadIdx.x] = a;
    s[1][threadIdx.x] = b;
    s[2][threadIdx.x] = c;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            for (int j = 0; j < 3; ++j) s[j][threadIdx.x] += s[j][threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        for (int j = 0; j < 3; ++j) atomicAdd(&out[j], s[j][0]);
}

// X <- a*X + b*X2 + c*X3 (elementwise, the purification update).
__global__ void combine(double* X, const double* X2, const double* X3, size_t m, double a, double b,
                        double c) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < m;
         i += (size_t)gridDim.x * blockDim.x)
        X[i] = a * X[i] + b * X2[i] + c * X3[i];
}

// X0 = lambda/n (mu I - H) + (ne/n) I
__global__ void initial_guess(double* X, const double* H, int n, double mu, double lam, double occ) {
    size_t m = (size_t)n * n;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < m;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t r = i / n, c = i % n;
        double v = -lam / n * H[i];
        if (r == c) v += lam / n * mu + occ;
        X[i] = v;
    }
}

__global__ void set_diagonal(double* H, const double* onsite, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) H[(size_t)i * n + i] = onsite[i];
}

__global__ void get_diagonal(const double* X, double* d, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) d[i] = X[(size_t)i * n + i];
}

// Background writer: saves checkpoints handed over by the SCF loop.
struct Writer {
    std::mutex m;
    std::condition_variable cv;
    const double* buf = nullptr;
    int cycle = -1;
    bool stop = false, busy = false;
    double written_mb = 0;
    void run() {
        std::unique_lock<std::mutex> lk(m);
        for (;;) {
            cv.wait(lk, [&] { return stop || buf; });
            if (!buf && stop) return;
            const double* b = buf;
            int c = cycle;
            lk.unlock();
            char path[128];
            std::snprintf(path, sizeof path, "/tmp/tb_density_%d.bin", c % 2);
            if (FILE* f = std::fopen(path, "wb")) {
                size_t wrote = std::fwrite(b, sizeof(double), (size_t)N * N / 8, f);  // a slab
                std::fclose(f);
                std::remove(path);
                written_mb += wrote * sizeof(double) / 1e6;
            }
            lk.lock();
            buf = nullptr;
            busy = false;
            cv.notify_all();
        }
    }
};

int main() {
    const size_t M = (size_t)N * N;
    const int ne = N / 2 + 96;  // a slightly electron-doped bundle
    std::printf("tight-binding SCF: n = %d orbitals, %d electrons, %.2f GB per matrix\n", N, ne,
                M * 8 / 1e9);

    // Start-up: nearest-neighbour hopping on a wrapped (n/64 x 64) lattice with bond disorder,
    // plus inter-tube couplings; symmetric, built on the host.
    auto t_setup = Clock::now();
    std::vector<double> H0(M, 0.0);
    std::mt19937_64 rng(7);
    std::normal_distribution<double> disorder(0.0, 0.15);
    const int ring = 64, rings = N / ring;
    auto bond = [&](int a, int b, double t) {
        H0[(size_t)a * N + b] = t;
        H0[(size_t)b * N + a] = t;
    };
    for (int r = 0; r < rings; ++r)
        for (int k = 0; k < ring; ++k) {
            int a = r * ring + k;
            bond(a, r * ring + (k + 1) % ring, -2.7 + disorder(rng));
            if (r + 1 < rings) bond(a, (r + 1) * ring + k, -2.7 + disorder(rng));
            if ((k % 16) == 0 && r + 7 < rings) bond(a, (r + 7) * ring + (k + 32) % ring, -0.36);
        }
    std::vector<double> eps0(N), onsite(N);
    for (int i = 0; i < N; ++i) eps0[i] = 0.3 * disorder(rng);
    double hmin = 1e300, hmax = -1e300;  // Gershgorin bounds (host, on the fixed hopping part)
    for (int i = 0; i < N; ++i) {
        double rad = 0;
        for (int j = 0; j < N; ++j)
            if (j != i) rad += std::fabs(H0[(size_t)i * N + j]);
        hmin = std::min(hmin, -rad - 2.0);
        hmax = std::max(hmax, rad + 2.0);
    }

    double *dH, *dX, *dX2, *dX3, *dTr, *dOnsite, *dDiag;
    CK(cudaMalloc(&dH, M * 8));
    CK(cudaMalloc(&dX, M * 8));
    CK(cudaMalloc(&dX2, M * 8));
    CK(cudaMalloc(&dX3, M * 8));
    CK(cudaMalloc(&dTr, 3 * 8));
    CK(cudaMalloc(&dOnsite, N * 8));
    CK(cudaMalloc(&dDiag, N * 8));
    CK(cudaMemcpy(dH, H0.data(), M * 8, cudaMemcpyHostToDevice));
    double *hTr, *hDiag, *hCkpt;
    CK(cudaMallocHost(&hTr, 3 * 8));
    CK(cudaMallocHost(&hDiag, N * 8));
    CK(cudaMallocHost(&hCkpt, M * 8 / 8));
    cublasHandle_t blas;
    CB(cublasCreate(&blas));
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    CB(cublasSetStream(blas, st));
    std::printf("setup %.1f s (Gershgorin bounds [%.2f, %.2f])\n", secs(t_setup, Clock::now()), hmin,
                hmax);

    Writer writer;
    std::thread wthread([&] { writer.run(); });

    std::vector<double> occ(N, (double)ne / N);
    const double one = 1.0, zero = 0.0;
    double purify_s = 0, gemm_ms_events = 0;
    int purify_iters_total = 0;
    cudaEvent_t g0, g1;
    CK(cudaEventCreate(&g0));
    CK(cudaEventCreate(&g1));

    auto scf_cycle = [&](int cycle, int max_iter, bool timed) {
        nvtxRangePushA("scf_cycle");
        // Mean-field on-site energies from the current occupations.
        for (int i = 0; i < N; ++i) onsite[i] = eps0[i] + HUBBARD_U * (occ[i] - (double)ne / N);
        CK(cudaMemcpyAsync(dOnsite, onsite.data(), N * 8, cudaMemcpyHostToDevice, st));
        set_diagonal<<<(N + 255) / 256, 256, 0, st>>>(dH, dOnsite, N);
        double mu = 0;
        for (int i = 0; i < N; ++i) mu += onsite[i];
        mu /= N;
        double lam = std::min((double)ne / (hmax - mu), (double)(N - ne) / (mu - hmin));
        initial_guess<<<1024, 256, 0, st>>>(dX, dH, N, mu, lam, (double)ne / N);

        nvtxRangePushA("purify");
        auto p0 = Clock::now();
        int it = 0;
        for (; it < max_iter; ++it) {
            CK(cudaEventRecord(g0, st));
            CB(cublasDgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, dX, N, dX, N, &zero, dX2, N));
            CB(cublasDgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, dX, N, dX2, N, &zero, dX3, N));
            CK(cudaEventRecord(g1, st));
            CK(cudaMemsetAsync(dTr, 0, 3 * 8, st));
            traces<<<48, 256, 0, st>>>(dX, dX2, dX3, N, dTr);
            CK(cudaMemcpyAsync(hTr, dTr, 3 * 8, cudaMemcpyDeviceToHost, st));
            CK(cudaStreamSynchronize(st));
            float ms = 0;
            CK(cudaEventElapsedTime(&ms, g0, g1));
            if (timed) gemm_ms_events += ms;
            double trX = hTr[0], trX2 = hTr[1], trX3 = hTr[2];
            double idem = trX - trX2;  // -> 0 when X is idempotent
            if (std::fabs(idem) < 1e-7 * N) break;
            double c = (trX2 - trX3) / idem;
            if (c >= 0.5)
                combine<<<2048, 256, 0, st>>>(dX, dX2, dX3, M, 0.0, (1 + c) / c, -1.0 / c);
            else
                combine<<<2048, 256, 0, st>>>(dX, dX2, dX3, M, (1 - 2 * c) / (1 - c), (1 + c) / (1 - c),
                                              -1.0 / (1 - c));
        }
        auto p1 = Clock::now();
        nvtxRangePop();
        if (timed) {
            purify_s += secs(p0, p1);
            purify_iters_total += it;
        }

        nvtxRangePushA("density_mix");
        get_diagonal<<<(N + 255) / 256, 256, 0, st>>>(dX, dDiag, N);
        CK(cudaMemcpyAsync(hDiag, dDiag, N * 8, cudaMemcpyDeviceToHost, st));
        CK(cudaStreamSynchronize(st));
        double dq = 0, total = 0;
        for (int i = 0; i < N; ++i) {
            double nw = (1 - MIX) * occ[i] + MIX * hDiag[i];
            dq = std::max(dq, std::fabs(nw - occ[i]));
            occ[i] = nw;
            total += hDiag[i];
        }
        nvtxRangePop();

        if (timed && (cycle + 1) % 8 == 0) {
            nvtxRangePushA("checkpoint");
            {
                std::unique_lock<std::mutex> lk(writer.m);
                writer.cv.wait(lk, [&] { return !writer.busy; });
            }
            CK(cudaMemcpyAsync(hCkpt, dX, M * 8 / 8, cudaMemcpyDeviceToHost, st));
            CK(cudaStreamSynchronize(st));
            {
                std::lock_guard<std::mutex> lk(writer.m);
                writer.buf = hCkpt;
                writer.cycle = cycle;
                writer.busy = true;
            }
            writer.cv.notify_all();
            nvtxRangePop();
        }
        nvtxRangePop();
        return std::make_pair(it, std::make_pair(dq, total));
    };

    for (int w = 0; w < WARMUP_CYCLES; ++w) scf_cycle(-1, 3, false);
    CK(cudaDeviceSynchronize());

    CK(cudaDeviceSynchronize());
    auto loop0 = Clock::now();
    for (int cycle = 0; cycle < SCF_CYCLES; ++cycle) {
        auto r = scf_cycle(cycle, MAX_PURIFY, true);
        if ((cycle + 1) % 4 == 0)
            std::printf("scf %2d: %d purification iterations, max dq %.2e, N_e %.3f\n", cycle + 1, r.first,
                        r.second.first, r.second.second);
    }
    CK(cudaDeviceSynchronize());
    auto loop1 = Clock::now();
    {
        std::lock_guard<std::mutex> lk(writer.m);
        writer.stop = true;
    }
    writer.cv.notify_all();
    wthread.join();
    double loop_s = secs(loop0, loop1);
    std::printf("checkpoints written: %.0f MB\n", writer.written_mb);
    std::printf("GROUND TRUTH: gpu-bound: purification (two DGEMMs n=%d per iteration, %d iterations "
                "in all, synchronised per iteration) %.2f s = %.1f%% of the timed loop %.2f s; DGEMM "
                "kernels alone by events %.2f s = %.1f%%; %d timed SCF cycles after %d warm-up cycle\n",
                N, purify_iters_total, purify_s, 100 * purify_s / loop_s, loop_s, gemm_ms_events / 1e3,
                100 * gemm_ms_events / 1e3 / loop_s, SCF_CYCLES, WARMUP_CYCLES);

    cublasDestroy(blas);
    cudaStreamDestroy(st);
    cudaFree(dH);
    cudaFree(dX);
    cudaFree(dX2);
    cudaFree(dX3);
    cudaFree(dTr);
    cudaFree(dOnsite);
    cudaFree(dDiag);
    cudaFreeHost(hTr);
    cudaFreeHost(hDiag);
    cudaFreeHost(hCkpt);
    return 0;
}
