// Electrostatic 2D particle-in-cell plasma (two-stream setup) with binary Coulomb collisions.
//
// The field part runs on the GPU: cloud-in-cell charge deposition, a spectral Poisson solve done as
// dense DFT matrix products with cuBLAS (the grid is small), the field gradient, and the leapfrog
// push with periodic wrap. Collisions are subcycled: every cycle runs SUBCYCLES pushes, then the
// velocities and cell indices come back to the host (pinned buffers), where the collision module
// (ported from the group's CPU code) bins the particles by cell and scatters random pairs in each
// cell (Takizuka-Abe style, energy and momentum conserving) on four threads; the velocities go
// back to the GPU. Every DIAG_EVERY cycles the field and kinetic energies are printed.
//
// Build: nvcc -O2 -o pic blind19_pic_host_collisions.cu -lcublas
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#define CK(x)                                                                                   \
    do {                                                                                        \
        cudaError_t e_ = (x);                                                                   \
        if (e_ != cudaSuccess) {                                                                \
            std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));     \
            std::exit(1);                                                                       \
        }                                                                                       \
    } while (0)
#define CB(x)                                                                                   \
    do {                                                                                        \
        if ((x) != CUBLAS_STATUS_SUCCESS) {                                                     \
            std::fprintf(stderr, "%s:%d cuBLAS error\n", __FILE__, __LINE__);                  \
            std::exit(1);                                                                       \
        }                                                                                       \
    } while (0)

static const int NG = 256;              // grid points per side
static const int NP = 2 * 1024 * 1024;  // macro-electrons
static const int CYCLES = 240;
static const int WARMUP_CYCLES = 5;
static const int SUBCYCLES = 12;
static const int DIAG_EVERY = 20;
static const int THREADS = 4;
static const float L = 64.0f;  // domain length (Debye lengths)
static const float DT = 0.1f;
static const float NU_DT = 0.02f;  // collision strength per cycle

__device__ __forceinline__ float hash_uniform(uint32_t s) {
    s ^= s >> 16; s *= 0x7feb352dU; s ^= s >> 15; s *= 0x846ca68bU; s ^= s >> 16;
    return (s >> 8) * (1.0f / 16777216.0f);
}

__global__ void init_particles(float* x, float* y, float* vx, float* vy, float* vz, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float u1 = hash_uniform(4 * i + 1) + 1e-7f, u2 = hash_uniform(4 * i + 2);
    float u3 = hash_uniform(4 * i + 3) + 1e-7f, u4 = hash_uniform(4 * i + 4);
    float r1 = sqrtf(-2.0f * logf(u1)), r2 = sqrtf(-2.0f * logf(u3));
    x[i] = hash_uniform(7 * i + 11) * L;
    y[i] = hash_uniform(7 * i + 13) * L;
    float beam = (i & 1) ? 3.0f : -3.0f;
    vx[i] = beam + 0.3f * r1 * cosf(6.2831853f * u2) + 0.01f * sinf(6.2831853f * x[i] / L);
    vy[i] = 0.3f * r1 * sinf(6.2831853f * u2);
    vz[i] = 0.3f * r2 * cosf(6.2831853f * u4);
}

__global__ void deposit(const float* x, const float* y, float* rho, int n, float w) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float gx = x[i] * (NG / L), gy = y[i] * (NG / L);
    int ix = (int)gx, iy = (int)gy;
    float fx = gx - ix, fy = gy - iy;
    int ix1 = (ix + 1) % NG, iy1 = (iy + 1) % NG;
    ix %= NG; iy %= NG;
    atomicAdd(&rho[iy * NG + ix], w * (1 - fx) * (1 - fy));
    atomicAdd(&rho[iy * NG + ix1], w * fx * (1 - fy));
    atomicAdd(&rho[iy1 * NG + ix], w * (1 - fx) * fy);
    atomicAdd(&rho[iy1 * NG + ix1], w * fx * fy);
}

// rho (real, minus the neutralising background) -> complex
__global__ void to_complex(const float* rho, float2* c, int n, float background) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = make_float2(background - rho[i], 0.0f);
}

// phi_hat = rho_hat / k^2 (k = 0 mode removed)
__global__ void inverse_laplacian(float2* c) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= NG * NG) return;
    int kx = i % NG, ky = i / NG;
    kx = kx <= NG / 2 ? kx : kx - NG;
    ky = ky <= NG / 2 ? ky : ky - NG;
    float k2 = (kx * kx + ky * ky) * (6.2831853f / L) * (6.2831853f / L);
    float s = (kx == 0 && ky == 0) ? 0.0f : 1.0f / (k2 * NG * NG);
    c[i] = make_float2(c[i].x * s, c[i].y * s);
}

__global__ void field_from_phi(const float2* phi, float* ex, float* ey) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= NG * NG) return;
    int x = i % NG, y = i / NG;
    float h = L / NG;
    ex[i] = -(phi[y * NG + (x + 1) % NG].x - phi[y * NG + (x + NG - 1) % NG].x) / (2 * h);
    ey[i] = -(phi[((y + 1) % NG) * NG + x].x - phi[((y + NG - 1) % NG) * NG + x].x) / (2 * h);
}

__global__ void push(float* x, float* y, float* vx, float* vy, const float* ex, const float* ey, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float gx = x[i] * (NG / L), gy = y[i] * (NG / L);
    int ix = (int)gx, iy = (int)gy;
    float fx = gx - ix, fy = gy - iy;
    int ix1 = (ix + 1) % NG, iy1 = (iy + 1) % NG;
    ix %= NG; iy %= NG;
    float w00 = (1 - fx) * (1 - fy), w10 = fx * (1 - fy), w01 = (1 - fx) * fy, w11 = fx * fy;
    float Ex = w00 * ex[iy * NG + ix] + w10 * ex[iy * NG + ix1] + w01 * ex[iy1 * NG + ix] + w11 * ex[iy1 * NG + ix1];
    float Ey = w00 * ey[iy * NG + ix] + w10 * ey[iy * NG + ix1] + w01 * ey[iy1 * NG + ix] + w11 * ey[iy1 * NG + ix1];
    float nvx = vx[i] - Ex * DT, nvy = vy[i] - Ey * DT;  // electron charge -1
    vx[i] = nvx;
    vy[i] = nvy;
    float nx = fmodf(x[i] + nvx * DT, L), ny = fmodf(y[i] + nvy * DT, L);
    x[i] = nx < 0 ? nx + L : nx;
    y[i] = ny < 0 ? ny + L : ny;
}

__global__ void cell_index(const float* x, const float* y, int* cell, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int ix = min(NG - 1, (int)(x[i] * (NG / L))), iy = min(NG - 1, (int)(y[i] * (NG / L)));
    cell[i] = iy * NG + ix;
}

__global__ void energies(const float* vx, const float* vy, const float* vz, const float* ex,
                         const float* ey, int n, double* out) {
    __shared__ double s[2][256];
    double ke = 0, fe = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        ke += 0.5 * (vx[i] * vx[i] + vy[i] * vy[i] + vz[i] * vz[i]);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < NG * NG; i += gridDim.x * blockDim.x)
        fe += 0.5 * (ex[i] * ex[i] + ey[i] * ey[i]);
    s[0][threadIdx.x] = ke;
    s[1][threadIdx.x] = fe;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) {
            s[0][threadIdx.x] += s[0][threadIdx.x + k];
            s[1][threadIdx.x] += s[1][threadIdx.x + k];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        atomicAdd(&out[0], s[0][0]);
        atomicAdd(&out[1], s[1][0]);
    }
}

// Host collision module: binary collisions between random partners in each cell.
struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ULL + 1) {}
    double uniform() {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        return (s >> 11) * (1.0 / 9007199254740992.0);
    }
};

static void collide_cells(int c0, int c1, const std::vector<int>& start, std::vector<int>& order,
                          float* vx, float* vy, float* vz, uint64_t seed) {
    Rng rng(seed);
    for (int c = c0; c < c1; ++c) {
        int b = start[c], e = start[c + 1], m = e - b;
        if (m < 2) continue;
        for (int k = m - 1; k > 0; --k) std::swap(order[b + k], order[b + (int)(rng.uniform() * (k + 1))]);
        for (int k = 0; k + 1 < m; k += 2) {
            int p = order[b + k], q = order[b + k + 1];
            double ux = vx[p] - vx[q], uy = vy[p] - vy[q], uz = vz[p] - vz[q];
            double u = std::sqrt(ux * ux + uy * uy + uz * uz) + 1e-12, up = std::sqrt(ux * ux + uy * uy) + 1e-12;
            double var = NU_DT / (u * u * u + 0.05);
            double g1 = std::sqrt(-2.0 * std::log(rng.uniform() + 1e-300)) * std::cos(6.283185307 * rng.uniform());
            double delta = g1 * std::sqrt(var);
            double st = 2 * delta / (1 + delta * delta), ct = 1 - 2 * delta * delta / (1 + delta * delta);
            double phi = 6.283185307 * rng.uniform(), sp = std::sin(phi), cp = std::cos(phi);
            double dux = ux / up * uz * st * cp - uy / up * u * st * sp - ux * (1 - ct);
            double duy = uy / up * uz * st * cp + ux / up * u * st * sp - uy * (1 - ct);
            double duz = -up * st * cp - uz * (1 - ct);
            vx[p] += 0.5f * dux; vy[p] += 0.5f * duy; vz[p] += 0.5f * duz;
            vx[q] -= 0.5f * dux; vy[q] -= 0.5f * duy; vz[q] -= 0.5f * duz;
        }
    }
}

int main() {
    const int nc = NG * NG;
    const size_t pb = sizeof(float) * NP;
    float *x, *y, *vx, *vy, *vz, *rho, *ex, *ey;
    int* cell;
    float2 *crho, *ctmp, *F, *Finv;
    double* d_en;
    CK(cudaMalloc(&x, pb)); CK(cudaMalloc(&y, pb));
    CK(cudaMalloc(&vx, pb)); CK(cudaMalloc(&vy, pb)); CK(cudaMalloc(&vz, pb));
    CK(cudaMalloc(&cell, sizeof(int) * NP));
    CK(cudaMalloc(&rho, sizeof(float) * nc)); CK(cudaMalloc(&ex, sizeof(float) * nc)); CK(cudaMalloc(&ey, sizeof(float) * nc));
    CK(cudaMalloc(&crho, sizeof(float2) * nc)); CK(cudaMalloc(&ctmp, sizeof(float2) * nc));
    CK(cudaMalloc(&F, sizeof(float2) * nc)); CK(cudaMalloc(&Finv, sizeof(float2) * nc));
    CK(cudaMalloc(&d_en, 2 * sizeof(double)));

    // DFT matrices.
    std::vector<float2> hF(nc), hFi(nc);
    for (int j = 0; j < NG; ++j)
        for (int k = 0; k < NG; ++k) {
            double a = -2.0 * M_PI * j * k / NG;
            hF[j * NG + k] = make_float2((float)std::cos(a), (float)std::sin(a));
            hFi[j * NG + k] = make_float2((float)std::cos(a), (float)-std::sin(a));
        }
    CK(cudaMemcpy(F, hF.data(), sizeof(float2) * nc, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(Finv, hFi.data(), sizeof(float2) * nc, cudaMemcpyHostToDevice));

    float *h_vx, *h_vy, *h_vz;
    int* h_cell;
    CK(cudaMallocHost(&h_vx, pb)); CK(cudaMallocHost(&h_vy, pb)); CK(cudaMallocHost(&h_vz, pb));
    CK(cudaMallocHost(&h_cell, sizeof(int) * NP));
    std::vector<int> start(nc + 1), order(NP), fill(nc);

    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    cublasHandle_t blas;
    CB(cublasCreate(&blas));
    CB(cublasSetStream(blas, st));
    const int TB = 256, GP = (NP + TB - 1) / TB, GC = (nc + TB - 1) / TB;
    init_particles<<<GP, TB, 0, st>>>(x, y, vx, vy, vz, NP);
    CK(cudaGetLastError());
    const float w = (float)nc / NP;  // mean density 1 per cell
    const cuComplex one = make_cuComplex(1, 0), zero = make_cuComplex(0, 0);

    auto field_solve = [&]() {
        CK(cudaMemsetAsync(rho, 0, sizeof(float) * nc, st));
        deposit<<<GP, TB, 0, st>>>(x, y, rho, NP, w);
        to_complex<<<GC, TB, 0, st>>>(rho, crho, nc, 1.0f);
        // rho_hat = F * rho * F (F symmetric), phi = Finv * phi_hat * Finv
        CB(cublasCgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, NG, NG, NG, &one, F, NG, crho, NG, &zero, ctmp, NG));
        CB(cublasCgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, NG, NG, NG, &one, ctmp, NG, F, NG, &zero, crho, NG));
        inverse_laplacian<<<GC, TB, 0, st>>>(crho);
        CB(cublasCgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, NG, NG, NG, &one, Finv, NG, crho, NG, &zero, ctmp, NG));
        CB(cublasCgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, NG, NG, NG, &one, ctmp, NG, Finv, NG, &zero, crho, NG));
        field_from_phi<<<GC, TB, 0, st>>>(crho, ex, ey);
    };

    using clk = std::chrono::steady_clock;
    double host_s = 0.0;
    auto t_loop = clk::now();
    for (int cycle = 0; cycle < CYCLES + WARMUP_CYCLES; ++cycle) {
        if (cycle == WARMUP_CYCLES) {
            CK(cudaStreamSynchronize(st));
            t_loop = clk::now();
            host_s = 0.0;
        }
        nvtxRangePushA("pic_cycle");
        nvtxRangePushA("field_push");
        for (int s = 0; s < SUBCYCLES; ++s) {
            field_solve();
            push<<<GP, TB, 0, st>>>(x, y, vx, vy, ex, ey, NP);
        }
        cell_index<<<GP, TB, 0, st>>>(x, y, cell, NP);
        CK(cudaGetLastError());
        nvtxRangePop();

        CK(cudaMemcpyAsync(h_vx, vx, pb, cudaMemcpyDeviceToHost, st));
        CK(cudaMemcpyAsync(h_vy, vy, pb, cudaMemcpyDeviceToHost, st));
        CK(cudaMemcpyAsync(h_vz, vz, pb, cudaMemcpyDeviceToHost, st));
        CK(cudaMemcpyAsync(h_cell, cell, sizeof(int) * NP, cudaMemcpyDeviceToHost, st));
        CK(cudaStreamSynchronize(st));

        nvtxRangePushA("host_collisions");
        auto h0 = clk::now();
        std::fill(start.begin(), start.end(), 0);
        for (int i = 0; i < NP; ++i) start[h_cell[i] + 1]++;
        for (int c = 0; c < nc; ++c) start[c + 1] += start[c];
        std::copy(start.begin(), start.end() - 1, fill.begin());
        for (int i = 0; i < NP; ++i) order[fill[h_cell[i]]++] = i;
        std::vector<std::thread> pool;
        for (int t = 0; t < THREADS; ++t) {
            int c0 = nc * t / THREADS, c1 = nc * (t + 1) / THREADS;
            pool.emplace_back(collide_cells, c0, c1, std::cref(start), std::ref(order), h_vx, h_vy, h_vz,
                              (uint64_t)cycle * THREADS + t);
        }
        for (auto& th : pool) th.join();
        auto h1 = clk::now();
        if (cycle >= WARMUP_CYCLES) host_s += std::chrono::duration<double>(h1 - h0).count();
        nvtxRangePop();

        CK(cudaMemcpyAsync(vx, h_vx, pb, cudaMemcpyHostToDevice, st));
        CK(cudaMemcpyAsync(vy, h_vy, pb, cudaMemcpyHostToDevice, st));
        CK(cudaMemcpyAsync(vz, h_vz, pb, cudaMemcpyHostToDevice, st));

        if ((cycle + 1) % DIAG_EVERY == 0) {
            double en[2];
            CK(cudaMemsetAsync(d_en, 0, 2 * sizeof(double), st));
            energies<<<264, 256, 0, st>>>(vx, vy, vz, ex, ey, NP, d_en);
            CK(cudaMemcpyAsync(en, d_en, 2 * sizeof(double), cudaMemcpyDeviceToHost, st));
            CK(cudaStreamSynchronize(st));
            std::printf("cycle %d  kinetic %.6e  field %.6e\n", cycle + 1, en[0] * w, en[1] * (L / NG) * (L / NG));
        }
        nvtxRangePop();
    }
    CK(cudaStreamSynchronize(st));
    double loop_s = std::chrono::duration<double>(clk::now() - t_loop).count();

    CB(cublasDestroy(blas));
    CK(cudaStreamDestroy(st));
    CK(cudaFreeHost(h_vx)); CK(cudaFreeHost(h_vy)); CK(cudaFreeHost(h_vz)); CK(cudaFreeHost(h_cell));
    for (void* p : {(void*)x, (void*)y, (void*)vx, (void*)vy, (void*)vz, (void*)cell, (void*)rho, (void*)ex,
                    (void*)ey, (void*)crho, (void*)ctmp, (void*)F, (void*)Finv, (void*)d_en})
        CK(cudaFree(p));
    std::printf("GROUND TRUTH: host collision binning and pair scattering %.2f s of %.2f s timed loop (%.0f%%), "
                "%d cycles of %d subcycles\n", host_s, loop_s, 100.0 * host_s / loop_s, CYCLES, SUBCYCLES);
    return 0;
}
