// blind23_darcy_multigrid_check_sync.cu: IMPES waterflood in a heterogeneous reservoir block.
// build: nvcc -O2 -o blind23_darcy_multigrid_check_sync blind23_darcy_multigrid_check_sync.cu
//
// Two-phase (water/oil) incompressible Darcy flow on a 128^3 cell-centred grid. Every time step:
// total mobility from the saturation, the coefficient hierarchy, a pressure solve by geometric
// multigrid V-cycles (red-black Gauss-Seidel, 6 levels down to 4^3) until the residual is below
// tolerance, then an explicit upwind saturation update with a CFL time step. The permeability
// is a log-normal Gaussian random field synthesised on the host (random Fourier modes).
//
// Every kernel launch goes through LAUNCH(), whose error check also calls
// cudaDeviceSynchronize() while g_debug_sync is on (the default, DARCY_DEBUG_SYNC=0 turns it off):
// a debugging aid left on. After the timed loop a short control phase runs the same time steps
// with it off. BLIND_SMALL=1 runs a 32^3 grid for a few steps.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#define CUDA_CHECK(call)                                                                  \
    do {                                                                                  \
        cudaError_t err_ = (call);                                                        \
        if (err_ != cudaSuccess) {                                                        \
            std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(err_),  \
                         __FILE__, __LINE__, cudaGetErrorString(err_));                   \
            std::exit(1);                                                                 \
        }                                                                                 \
    } while (0)

using Clock = std::chrono::steady_clock;
static double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// ---- the debugging aid: check every launch, synchronising the device -------------------------
static bool g_debug_sync = true;
static double g_sync_s = 0.0;    // time inside the debug cudaDeviceSynchronize calls
static double g_launch_s = 0.0;  // time inside the kernel launches themselves
static long g_sync_calls = 0;
static long g_launches = 0;

static void check_launch(const char* what, Clock::time_point t_launch) {
    g_launch_s += seconds_since(t_launch);
    ++g_launches;
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
        std::fprintf(stderr, "launch of %s failed: %s\n", what, cudaGetErrorString(err));
        std::exit(1);
    }
    if (g_debug_sync) {
        Clock::time_point t0 = Clock::now();
        err = cudaDeviceSynchronize();
        g_sync_s += seconds_since(t0);
        ++g_sync_calls;
        if (err != cudaSuccess) {
            std::fprintf(stderr, "kernel %s failed: %s\n", what, cudaGetErrorString(err));
            std::exit(1);
        }
    }
}

#define LAUNCH(kernel, grid, block, ...)                 \
    do {                                                 \
        Clock::time_point t_launch_ = Clock::now();      \
        kernel<<<(grid), (block)>>>(__VA_ARGS__);        \
        check_launch(#kernel, t_launch_);                \
    } while (0)

// ---- kernels ---------------------------------------------------------------------------------
constexpr int kThreads = 256;
constexpr float kMuW = 1.0f, kMuO = 5.0f, kPhi = 0.2f;

__device__ __forceinline__ float harmonic(float a, float b) { return 2.0f * a * b / (a + b); }

__device__ __forceinline__ float lam_w(float s) { return s * s / kMuW; }
__device__ __forceinline__ float lam_o(float s) { return (1.0f - s) * (1.0f - s) / kMuO; }

// a = K * total mobility(S)
__global__ void mobility_coef(float* a, const float* perm, const float* sat, int ncell) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= ncell) return;
    float s = sat[c];
    a[c] = perm[c] * (lam_w(s) + lam_o(s));
}

// coarse coefficient: mean of the 8 children
__global__ void restrict_coef(const float* af, float* ac, int nc) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int ncell = nc * nc * nc;
    if (c >= ncell) return;
    int i = c % nc, j = (c / nc) % nc, k = c / (nc * nc);
    int nf = 2 * nc;
    float s = 0.0f;
    for (int dk = 0; dk < 2; ++dk)
        for (int dj = 0; dj < 2; ++dj)
            for (int di = 0; di < 2; ++di)
                s += af[((2 * k + dk) * nf + (2 * j + dj)) * nf + (2 * i + di)];
    ac[c] = 0.125f * s;
}

// sum_j T_ij p_j + T_bc p_bc (into *off) and the diagonal sum_j T_ij + T_bc (into *diag)
__device__ __forceinline__ void stencil(const double* p, const float* a, int n, int i, int j,
                                        int k, double bc_lo, double bc_hi, double* off,
                                        double* diag) {
    int c = (k * n + j) * n + i;
    float ac = a[c];
    double s = 0.0, d = 0.0, t;
    if (i > 0) { t = harmonic(ac, a[c - 1]); s += t * p[c - 1]; d += t; }
    else { t = 2.0 * ac; s += t * bc_lo; d += t; }
    if (i < n - 1) { t = harmonic(ac, a[c + 1]); s += t * p[c + 1]; d += t; }
    else { t = 2.0 * ac; s += t * bc_hi; d += t; }
    if (j > 0) { t = harmonic(ac, a[c - n]); s += t * p[c - n]; d += t; }
    if (j < n - 1) { t = harmonic(ac, a[c + n]); s += t * p[c + n]; d += t; }
    if (k > 0) { t = harmonic(ac, a[c - n * n]); s += t * p[c - n * n]; d += t; }
    if (k < n - 1) { t = harmonic(ac, a[c + n * n]); s += t * p[c + n * n]; d += t; }
    *off = s;
    *diag = d;
}

__global__ void smooth_rb(double* p, const double* f, const float* a, int n, double inv_h2,
                          int color, double bc_lo, double bc_hi) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n * n * n) return;
    int i = c % n, j = (c / n) % n, k = c / (n * n);
    if (((i + j + k) & 1) != color) return;
    double off, diag;
    stencil(p, a, n, i, j, k, bc_lo, bc_hi, &off, &diag);
    p[c] = (f[c] / inv_h2 + off) / diag;
}

__global__ void residual(double* r, const double* p, const double* f, const float* a, int n,
                         double inv_h2, double bc_lo, double bc_hi) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n * n * n) return;
    int i = c % n, j = (c / n) % n, k = c / (n * n);
    double off, diag;
    stencil(p, a, n, i, j, k, bc_lo, bc_hi, &off, &diag);
    r[c] = f[c] - (diag * p[c] - off) * inv_h2;
}

__global__ void restrict_avg(const double* rf, double* fc, int nc) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= nc * nc * nc) return;
    int i = c % nc, j = (c / nc) % nc, k = c / (nc * nc);
    int nf = 2 * nc;
    double s = 0.0;
    for (int dk = 0; dk < 2; ++dk)
        for (int dj = 0; dj < 2; ++dj)
            for (int di = 0; di < 2; ++di)
                s += rf[((2 * k + dk) * nf + (2 * j + dj)) * nf + (2 * i + di)];
    fc[c] = 0.125 * s;
}

__global__ void prolong_add(double* pf, const double* ec, int nf) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= nf * nf * nf) return;
    int i = c % nf, j = (c / nf) % nf, k = c / (nf * nf);
    int nc = nf / 2;
    pf[c] += ec[((k / 2) * nc + j / 2) * nc + i / 2];
}

// block partial sums of r^2 (double), then one block sums the partials
__global__ void sumsq_partial(const double* r, int ncell, double* partial) {
    __shared__ double sh[kThreads];
    double s = 0.0;
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < ncell; c += gridDim.x * blockDim.x)
        s += r[c] * r[c];
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
        if ((int)threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = sh[0];
}

__global__ void sum_partials(const double* partial, int n, double* out) {
    __shared__ double sh[kThreads];
    double s = 0.0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += partial[i];
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
        if ((int)threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) *out = sh[0];
}

// largest |face flux| over the grid (for the CFL time step); flux = T (p_i - p_j) / h
__global__ void max_flux_partial(const double* p, const float* a, int n, float inv_h,
                                 float* partial) {
    __shared__ float sh[kThreads];
    float m = 0.0f;
    int ncell = n * n * n;
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < ncell; c += gridDim.x * blockDim.x) {
        int i = c % n, j = (c / n) % n, k = c / (n * n);
        float ac = a[c], pc = (float)p[c];
        if (i < n - 1) m = fmaxf(m, fabsf(harmonic(ac, a[c + 1]) * (pc - (float)p[c + 1])));
        else m = fmaxf(m, fabsf(2.0f * ac * pc));
        if (i == 0) m = fmaxf(m, fabsf(2.0f * ac * (1.0f - pc)));
        if (j < n - 1) m = fmaxf(m, fabsf(harmonic(ac, a[c + n]) * (pc - (float)p[c + n])));
        if (k < n - 1)
            m = fmaxf(m, fabsf(harmonic(ac, a[c + n * n]) * (pc - (float)p[c + n * n])));
    }
    sh[threadIdx.x] = m * inv_h;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
        if ((int)threadIdx.x < w) sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + w]);
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = sh[0];
}

__global__ void max_partials(const float* partial, int n, float* out) {
    __shared__ float sh[kThreads];
    float m = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, partial[i]);
    sh[threadIdx.x] = m;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
        if ((int)threadIdx.x < w) sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + w]);
        __syncthreads();
    }
    if (threadIdx.x == 0) *out = sh[0];
}

__device__ __forceinline__ float frac_w(float s) {
    float lw = lam_w(s), lo = lam_o(s);
    return lw / (lw + lo);
}

// explicit upwind water transport; water enters through the x = 0 face (S = 1 there)
__global__ void saturation_update(float* s_new, const float* s, const double* p, const float* a,
                                  int n, float inv_h, float dt) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n * n * n) return;
    int i = c % n, j = (c / n) % n, k = c / (n * n);
    float ac = a[c], sc = s[c], pc = (float)p[c];
    float out = 0.0f;  // net outgoing water flux
    const int nb[6] = {i > 0 ? c - 1 : -1, i < n - 1 ? c + 1 : -1, j > 0 ? c - n : -1,
                       j < n - 1 ? c + n : -1, k > 0 ? c - n * n : -1,
                       k < n - 1 ? c + n * n : -1};
    for (int f = 0; f < 6; ++f) {
        int o = nb[f];
        if (o < 0) continue;
        float q = harmonic(ac, a[o]) * (pc - (float)p[o]) * inv_h;  // > 0: out of this cell
        out += q * frac_w(q > 0.0f ? sc : s[o]);
    }
    if (i == 0) {
        float q = 2.0f * ac * (pc - 1.0f) * inv_h;  // < 0: inflow of water
        out += q * (q > 0.0f ? frac_w(sc) : 1.0f);
    }
    if (i == n - 1) {
        float q = 2.0f * ac * pc * inv_h;  // production face, p = 0 outside
        out += q * (q > 0.0f ? frac_w(sc) : 0.0f);
    }
    float sn = sc - dt * inv_h / kPhi * out;
    s_new[c] = fminf(1.0f, fmaxf(0.0f, sn));
}

// ---- host side -------------------------------------------------------------------------------
struct Level {
    int n;
    double *p, *f, *r;  // pressure (or its correction), right-hand side, residual
    float* a;           // cell coefficient K * total mobility
};

static int blocks_for(int ncell) { return (ncell + kThreads - 1) / kThreads; }

struct Solver {
    std::vector<Level> lv;
    double* d_partial = nullptr;
    double* d_norm = nullptr;
    int norm_blocks = 0;
    int coarse_sweeps = 30;

    void smooth(int l, int sweeps) {
        Level& L = lv[l];
        int nc = L.n * L.n * L.n;
        double inv_h2 = (double)L.n * L.n;
        double lo = l == 0 ? 1.0 : 0.0;
        for (int s = 0; s < sweeps; ++s) {
            LAUNCH(smooth_rb, blocks_for(nc), kThreads, L.p, L.f, L.a, L.n, inv_h2, 0, lo, 0.0);
            LAUNCH(smooth_rb, blocks_for(nc), kThreads, L.p, L.f, L.a, L.n, inv_h2, 1, lo, 0.0);
        }
    }

    void vcycle(int l) {
        if (l == (int)lv.size() - 1) {
            smooth(l, coarse_sweeps);
            return;
        }
        Level& L = lv[l];
        Level& C = lv[l + 1];
        int nc = L.n * L.n * L.n;
        double inv_h2 = (double)L.n * L.n;
        double lo = l == 0 ? 1.0 : 0.0;
        smooth(l, 2);
        LAUNCH(residual, blocks_for(nc), kThreads, L.r, L.p, L.f, L.a, L.n, inv_h2, lo, 0.0);
        LAUNCH(restrict_avg, blocks_for(C.n * C.n * C.n), kThreads, L.r, C.f, C.n);
        CUDA_CHECK(cudaMemsetAsync(C.p, 0, sizeof(double) * C.n * C.n * C.n));
        vcycle(l + 1);
        LAUNCH(prolong_add, blocks_for(nc), kThreads, L.p, C.p, L.n);
        smooth(l, 2);
    }

    // fine-grid residual norm, read back to decide convergence (one legitimate sync)
    double residual_norm() {
        Level& L = lv[0];
        int nc = L.n * L.n * L.n;
        double inv_h2 = (double)L.n * L.n;
        LAUNCH(residual, blocks_for(nc), kThreads, L.r, L.p, L.f, L.a, L.n, inv_h2, 1.0, 0.0);
        LAUNCH(sumsq_partial, norm_blocks, kThreads, L.r, nc, d_partial);
        LAUNCH(sum_partials, 1, kThreads, d_partial, norm_blocks, d_norm);
        double h = 0.0;
        CUDA_CHECK(cudaMemcpy(&h, d_norm, sizeof(double), cudaMemcpyDeviceToHost));
        return std::sqrt(h);
    }
};

// log-normal permeability: exp(sigma * G), G a unit-variance Gaussian field from random modes,
// plus three high-permeability channels meandering along x.
static std::vector<float> synthesize_permeability(int n, int modes, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> kdist(0.0f, 1.0f / 0.08f);
    std::uniform_real_distribution<float> phdist(0.0f, 6.2831853f);
    std::vector<float> kx(modes), ky(modes), kz(modes), ph(modes);
    for (int m = 0; m < modes; ++m) {
        kx[m] = kdist(rng);
        ky[m] = kdist(rng);
        kz[m] = kdist(rng);
        ph[m] = phdist(rng);
    }
    const float amp = std::sqrt(2.0f / (float)modes);
    const float sigma = 1.2f;
    std::vector<float> perm((size_t)n * n * n);
    for (int k = 0; k < n; ++k) {
        float z = (k + 0.5f) / n;
        for (int j = 0; j < n; ++j) {
            float y = (j + 0.5f) / n;
            for (int i = 0; i < n; ++i) {
                float x = (i + 0.5f) / n;
                float g = 0.0f;
                for (int m = 0; m < modes; ++m) g += std::cos(kx[m] * x + ky[m] * y + kz[m] * z + ph[m]);
                float logk = sigma * amp * g;
                for (int ch = 0; ch < 3; ++ch) {
                    float yc = 0.2f + 0.3f * ch + 0.06f * std::sin(6.2831853f * (1.5f + ch) * x);
                    float zc = 0.25f + 0.25f * ch;
                    float d2 = (y - yc) * (y - yc) / 0.0016f + (z - zc) * (z - zc) / 0.0009f;
                    if (d2 < 1.0f) logk += 2.0f;
                }
                perm[((size_t)k * n + j) * n + i] = std::exp(logk);
            }
        }
    }
    return perm;
}

struct StepStats {
    int vcycles = 0;
    double seconds = 0.0;
};

int main() {
    const bool small = std::getenv("BLIND_SMALL") && std::strcmp(std::getenv("BLIND_SMALL"), "1") == 0;
    if (const char* e = std::getenv("DARCY_DEBUG_SYNC")) g_debug_sync = std::strcmp(e, "0") != 0;
    const int n0 = small ? 32 : 128;
    const int modes = small ? 24 : 480;
    const int warm_steps = small ? 2 : 8;
    const int timed_steps = small ? 6 : 360;
    const int control_steps = small ? 3 : 15;
    const int max_vcycles = 12;
    const double rel_tol = 1e-7;

    Clock::time_point t_start = Clock::now();
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaFree(nullptr));
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("device: %s, grid %d^3, debug sync %s\n", prop.name, n0, g_debug_sync ? "on" : "off");

    Clock::time_point t_gen = Clock::now();
    std::vector<float> perm = synthesize_permeability(n0, modes, 2023u);
    std::printf("permeability field: %.1f s on the host (%d modes)\n", seconds_since(t_gen), modes);

    const int ncell = n0 * n0 * n0;
    Solver sv;
    for (int n = n0; n >= 4; n /= 2) {
        Level L;
        L.n = n;
        size_t bytes = sizeof(double) * (size_t)n * n * n;
        CUDA_CHECK(cudaMalloc(&L.p, bytes));
        CUDA_CHECK(cudaMalloc(&L.f, bytes));
        CUDA_CHECK(cudaMalloc(&L.r, bytes));
        CUDA_CHECK(cudaMalloc(&L.a, bytes / 2));
        CUDA_CHECK(cudaMemset(L.p, 0, bytes));
        CUDA_CHECK(cudaMemset(L.f, 0, bytes));
        CUDA_CHECK(cudaMemset(L.r, 0, bytes));
        sv.lv.push_back(L);
    }
    sv.norm_blocks = std::min(1024, blocks_for(ncell));
    CUDA_CHECK(cudaMalloc(&sv.d_partial, sizeof(double) * sv.norm_blocks));
    CUDA_CHECK(cudaMalloc(&sv.d_norm, sizeof(double)));
    float *d_perm, *d_sat, *d_sat_new, *d_fpartial, *d_fmax;
    CUDA_CHECK(cudaMalloc(&d_perm, sizeof(float) * ncell));
    CUDA_CHECK(cudaMalloc(&d_sat, sizeof(float) * ncell));
    CUDA_CHECK(cudaMalloc(&d_sat_new, sizeof(float) * ncell));
    CUDA_CHECK(cudaMalloc(&d_fpartial, sizeof(float) * sv.norm_blocks));
    CUDA_CHECK(cudaMalloc(&d_fmax, sizeof(float)));
    CUDA_CHECK(cudaMemcpy(d_perm, perm.data(), sizeof(float) * ncell, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(d_sat, 0, sizeof(float) * ncell));

    double ref_norm = -1.0;
    double sim_time = 0.0;
    const float inv_h = (float)n0;

    auto time_step = [&](StepStats* st) {
        Clock::time_point t0 = Clock::now();
        // coefficients
        LAUNCH(mobility_coef, blocks_for(ncell), kThreads, sv.lv[0].a, d_perm, d_sat, ncell);
        for (size_t l = 1; l < sv.lv.size(); ++l) {
            int nc = sv.lv[l].n;
            LAUNCH(restrict_coef, blocks_for(nc * nc * nc), kThreads, sv.lv[l - 1].a, sv.lv[l].a, nc);
        }
        // pressure: V-cycles until converged
        double rn = sv.residual_norm();
        if (ref_norm < 0.0) ref_norm = rn;
        int cycles = 0;
        while (rn > rel_tol * ref_norm && cycles < max_vcycles) {
            sv.vcycle(0);
            rn = sv.residual_norm();
            ++cycles;
        }
        if (!std::isfinite(rn)) {
            std::fprintf(stderr, "pressure solve diverged\n");
            std::exit(1);
        }
        // CFL time step from the largest face flux (read back: a legitimate sync)
        LAUNCH(max_flux_partial, sv.norm_blocks, kThreads, sv.lv[0].p, sv.lv[0].a, n0, inv_h, d_fpartial);
        LAUNCH(max_partials, 1, kThreads, d_fpartial, sv.norm_blocks, d_fmax);
        float fmax = 0.0f;
        CUDA_CHECK(cudaMemcpy(&fmax, d_fmax, sizeof(float), cudaMemcpyDeviceToHost));
        float dt = 0.1f * kPhi / (inv_h * std::max(fmax, 1e-6f));
        LAUNCH(saturation_update, blocks_for(ncell), kThreads, d_sat_new, d_sat, sv.lv[0].p,
               sv.lv[0].a, n0, inv_h, dt);
        std::swap(d_sat, d_sat_new);
        sim_time += dt;
        if (st) {
            st->vcycles = cycles;
            st->seconds = seconds_since(t0);
        }
    };

    // warm-up (the first solve starts from p = 0 and needs the most cycles)
    for (int s = 0; s < warm_steps; ++s) time_step(nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());

    // timed loop
    g_sync_s = 0.0;
    g_launch_s = 0.0;
    g_sync_calls = 0;
    g_launches = 0;
    std::vector<StepStats> stats(timed_steps);
    Clock::time_point t_loop = Clock::now();
    for (int s = 0; s < timed_steps; ++s) {
        time_step(&stats[s]);
        if ((s + 1) % 50 == 0)
            std::printf("step %d: %d V-cycles, %.2f ms, t = %.4g\n", s + 1, stats[s].vcycles,
                        stats[s].seconds * 1e3, sim_time);
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    const double loop_s = seconds_since(t_loop);
    const double sync_s = g_sync_s, launch_s = g_launch_s;
    const long sync_calls = g_sync_calls, launches = g_launches;
    long total_cycles = 0;
    int min_c = 1 << 30, max_c = 0;
    for (const StepStats& st : stats) {
        total_cycles += st.vcycles;
        min_c = std::min(min_c, st.vcycles);
        max_c = std::max(max_c, st.vcycles);
    }

    // control: the same time steps with the debug synchronisation off
    const bool was_on = g_debug_sync;
    g_debug_sync = false;
    std::vector<StepStats> cstats(control_steps);
    Clock::time_point t_ctrl = Clock::now();
    for (int s = 0; s < control_steps; ++s) time_step(&cstats[s]);
    CUDA_CHECK(cudaDeviceSynchronize());
    const double ctrl_s = seconds_since(t_ctrl);
    g_debug_sync = was_on;
    long ctrl_cycles = 0;
    for (const StepStats& st : cstats) ctrl_cycles += st.vcycles;

    // host check of the final pressure: residual in double precision, water in place
    std::vector<double> hp(ncell);
    std::vector<float> hs(ncell), ha(ncell);
    CUDA_CHECK(cudaMemcpy(hp.data(), sv.lv[0].p, sizeof(double) * ncell, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(hs.data(), d_sat, sizeof(float) * ncell, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(ha.data(), sv.lv[0].a, sizeof(float) * ncell, cudaMemcpyDeviceToHost));
    double water = 0.0, pmin = 1e30, pmax = -1e30, res2 = 0.0;
    for (int k = 0; k < n0; ++k)
        for (int j = 0; j < n0; ++j)
            for (int i = 0; i < n0; ++i) {
                int c = (k * n0 + j) * n0 + i;
                water += hs[c];
                pmin = std::min(pmin, hp[c]);
                pmax = std::max(pmax, hp[c]);
                const int nb[6] = {i > 0 ? c - 1 : -1, i < n0 - 1 ? c + 1 : -1,
                                   j > 0 ? c - n0 : -1, j < n0 - 1 ? c + n0 : -1,
                                   k > 0 ? c - n0 * n0 : -1, k < n0 - 1 ? c + n0 * n0 : -1};
                double flux = 0.0;
                for (int f = 0; f < 6; ++f) {
                    if (nb[f] < 0) continue;
                    double t = 2.0 * ha[c] * ha[nb[f]] / ((double)ha[c] + ha[nb[f]]);
                    flux += t * (hp[c] - hp[nb[f]]);
                }
                if (i == 0) flux += 2.0 * ha[c] * (hp[c] - 1.0);
                if (i == n0 - 1) flux += 2.0 * ha[c] * hp[c];
                res2 += flux * flux;
            }
    std::printf("water in place %.4f of the pore volume, pressure in [%.3f, %.3f], t = %.4g, "
                "host residual %.3e\n",
                water / ncell, pmin, pmax, sim_time, std::sqrt(res2) * n0 * n0);

    for (Level& L : sv.lv) {
        CUDA_CHECK(cudaFree(L.p));
        CUDA_CHECK(cudaFree(L.f));
        CUDA_CHECK(cudaFree(L.r));
        CUDA_CHECK(cudaFree(L.a));
    }
    CUDA_CHECK(cudaFree(sv.d_partial));
    CUDA_CHECK(cudaFree(sv.d_norm));
    CUDA_CHECK(cudaFree(d_perm));
    CUDA_CHECK(cudaFree(d_sat));
    CUDA_CHECK(cudaFree(d_sat_new));
    CUDA_CHECK(cudaFree(d_fpartial));
    CUDA_CHECK(cudaFree(d_fmax));

    const double main_ms_per_cycle = total_cycles ? loop_s * 1e3 / total_cycles : 0.0;
    const double ctrl_ms_per_cycle = ctrl_cycles ? ctrl_s * 1e3 / ctrl_cycles : 0.0;
    std::printf("timed loop: %d time steps, %ld V-cycles (%d to %d per step), %.2f s, %ld launches\n",
                timed_steps, total_cycles, min_c, max_c, loop_s, launches);
    std::printf("control (debug sync off): %d time steps, %ld V-cycles, %.3f s\n", control_steps,
                ctrl_cycles, ctrl_s);
    std::printf("total %.1f s\n", seconds_since(t_start));
    std::printf("GROUND TRUTH: planted=sync-stall share=%.3f sync_s=%.3f loop_s=%.3f "
                "debug_syncs=%ld launch_share=%.3f main_ms_per_vcycle=%.3f ctrl_ms_per_vcycle=%.3f "
                "ctrl_saving=%.3f\n",
                loop_s > 0 ? sync_s / loop_s : 0.0, sync_s, loop_s, sync_calls,
                loop_s > 0 ? launch_s / loop_s : 0.0, main_ms_per_cycle, ctrl_ms_per_cycle,
                main_ms_per_cycle > 0 ? 1.0 - ctrl_ms_per_cycle / main_ms_per_cycle : 0.0);
    return 0;
}
