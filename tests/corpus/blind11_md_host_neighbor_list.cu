// Corpus (blind, batch 11): a Lennard-Jones MD code that rebuilds its Verlet list on the host.
//
// Program: a molecular-dynamics run of a Lennard-Jones fluid (131,072 atoms from an fcc lattice,
// reduced density 0.8, T = 1.0, cutoff 2.5 sigma, skin 0.3 sigma, periodic box of ~54.7 sigma),
// written in CUDA C++ as a port of a CPU code: the force loop and the velocity-Verlet update moved
// to the GPU (one thread per atom over a CSR neighbour list: kick_drift, lj_forces, kick), but the
// Verlet list is still built on the host. Every outer step copies the positions back with a plain
// cudaMemcpy into a std::vector, bins the atoms into 19^3 cells (counting sort, main thread), then
// builds the list with the main thread and three std::threads started for the purpose, each taking
// a quarter of the atoms and scanning the 27 neighbouring cells of each (~68 M distance checks,
// ~9.4 M pairs kept), concatenates the four parts into a pinned buffer, uploads it with
// cudaMemcpyAsync (~38 MB) and launches 10 substeps (30 kernels, ~1-3 ms of GPU work in all). The
// build, timed here single-threaded on a slower machine (the same functions, g++ -O2, a jittered
// lattice): ~0.77 s; on the device with four threads ~0.1-0.2 s a step, against ~3-5 ms of GPU work
// (substeps and the upload). Every 10 outer steps the kinetic and potential energies are read with
// cublasSdot (host pointer mode) and printed. NVTX: one "md_step" range per outer step (nvtx3,
// header only). 100 outer steps (one warm-up step before the loop); one line printed at the end
// with the seconds spent building the list on the host (binning, the four threads, the
// concatenation), measured in-program with std::chrono, against the loop's total.
//
// Expected, written before it was recorded (2026-11-26): cpu-work, 88-98% of the steady step, the
// host threads in build_neighbors_range (and bin_atoms / the concatenation on the main thread)
// while the GPU idles; 100 steps (the md_step ranges). The main thread spends the build partly
// running its own quarter and partly blocked in std::thread::join waiting for the three workers:
// that wait is the same host computation, not input and not a GPU sync. Misses: sync-stall (the
// blocking cudaMemcpy of the positions waits ~1-3 ms for the substeps), copies (2 MB down pageable,
// ~38 MB up pinned), launch-bound, gpu-bound, input-bound.
// Advice that helps: build the list on the GPU (cell-list kernels), rebuild only when an atom has
// moved half the skin, or more substeps per rebuild; not faster copies.
//   nvcc -O2 -o blind11-md-host-neighbor-list blind11_md_host_neighbor_list.cu -lcublas
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace {

constexpr int kLattice = 32;                                  // fcc cells per side
constexpr int kAtoms = 4 * kLattice * kLattice * kLattice;    // 131072
constexpr float kDensity = 0.8f, kTemperature = 1.0f;
constexpr float kCutoff = 2.5f, kSkin = 0.3f, kDt = 0.003f;
constexpr int kOuterSteps = 100, kSubsteps = 10, kLogEvery = 10, kBuildThreads = 4;
constexpr int kMaxPairsPerAtom = 128;                         // capacity of the CSR buffers

bool check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
        std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
        return false;
    }
    return true;
}

__device__ __forceinline__ float wrap_delta(float d, float box) { return d - box * rintf(d / box); }

__global__ void lj_forces(const float4* __restrict__ pos, float4* __restrict__ force,
                          const int* __restrict__ offsets, const int* __restrict__ pairs, int n,
                          float box, float rc2) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const float4 pi = pos[i];
    float fx = 0.f, fy = 0.f, fz = 0.f, e = 0.f;
    for (int k = offsets[i]; k < offsets[i + 1]; ++k) {
        const float4 pj = pos[pairs[k]];
        const float dx = wrap_delta(pi.x - pj.x, box);
        const float dy = wrap_delta(pi.y - pj.y, box);
        const float dz = wrap_delta(pi.z - pj.z, box);
        const float r2 = dx * dx + dy * dy + dz * dz;
        if (r2 < rc2) {
            const float inv2 = 1.f / r2;
            const float inv6 = inv2 * inv2 * inv2;
            const float fmag = 24.f * inv2 * inv6 * (2.f * inv6 - 1.f);
            fx += fmag * dx;
            fy += fmag * dy;
            fz += fmag * dz;
            e += 4.f * inv6 * (inv6 - 1.f);
        }
    }
    force[i] = make_float4(fx, fy, fz, 0.5f * e);  // w: this atom's half of its pair energies
}

__global__ void kick_drift(float4* pos, float4* vel, const float4* force, int n, float dt,
                           float box) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float4 v = vel[i];
    const float4 f = force[i];
    v.x += 0.5f * dt * f.x;
    v.y += 0.5f * dt * f.y;
    v.z += 0.5f * dt * f.z;
    float4 p = pos[i];
    p.x += dt * v.x;
    p.y += dt * v.y;
    p.z += dt * v.z;
    p.x -= box * floorf(p.x / box);
    p.y -= box * floorf(p.y / box);
    p.z -= box * floorf(p.z / box);
    pos[i] = p;
    vel[i] = v;
}

__global__ void kick(float4* vel, const float4* force, int n, float dt) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const float4 f = force[i];
    float4 v = vel[i];
    v.x += 0.5f * dt * f.x;
    v.y += 0.5f * dt * f.y;
    v.z += 0.5f * dt * f.z;
    vel[i] = v;
}

struct Cells {
    int per_side = 0;
    float size = 0.f;
    std::vector<int> start;  // per_side^3 + 1
    std::vector<int> atoms;  // atom indices sorted by cell
    std::vector<int> of;     // each atom's cell
};

int cell_coord(float x, const Cells& c) {
    const int k = static_cast<int>(x / c.size);
    return std::min(std::max(k, 0), c.per_side - 1);
}

// Counting sort of the atoms into cells (main thread).
void bin_atoms(const std::vector<float4>& pos, Cells& c) {
    const int nc = c.per_side, ncell = nc * nc * nc;
    std::fill(c.start.begin(), c.start.end(), 0);
    for (int i = 0; i < kAtoms; ++i) {
        const float4 p = pos[i];
        const int id = (cell_coord(p.z, c) * nc + cell_coord(p.y, c)) * nc + cell_coord(p.x, c);
        c.of[i] = id;
        ++c.start[id + 1];
    }
    for (int k = 0; k < ncell; ++k)
        c.start[k + 1] += c.start[k];
    std::vector<int> fill(c.start.begin(), c.start.end() - 1);
    for (int i = 0; i < kAtoms; ++i)
        c.atoms[fill[c.of[i]]++] = i;
}

// Full Verlet list (both i-j and j-i) for atoms [begin, end): counts per atom, pairs appended.
void build_neighbors_range(const std::vector<float4>& pos, const Cells& c, float box,
                           float rlist2, int begin, int end, int* counts, std::vector<int>& out) {
    const int nc = c.per_side;
    out.clear();
    for (int i = begin; i < end; ++i) {
        const float4 pi = pos[i];
        const int id = c.of[i];
        const int cx = id % nc, cy = (id / nc) % nc, cz = id / (nc * nc);
        int found = 0;
        for (int dz = -1; dz <= 1; ++dz) {
            const int z = (cz + dz + nc) % nc;
            for (int dy = -1; dy <= 1; ++dy) {
                const int y = (cy + dy + nc) % nc;
                for (int dx = -1; dx <= 1; ++dx) {
                    const int x = (cx + dx + nc) % nc;
                    const int cell = (z * nc + y) * nc + x;
                    for (int k = c.start[cell]; k < c.start[cell + 1]; ++k) {
                        const int j = c.atoms[k];
                        if (j == i)
                            continue;
                        const float4 pj = pos[j];
                        float ddx = pi.x - pj.x, ddy = pi.y - pj.y, ddz = pi.z - pj.z;
                        ddx -= box * std::rint(ddx / box);
                        ddy -= box * std::rint(ddy / box);
                        ddz -= box * std::rint(ddz / box);
                        if (ddx * ddx + ddy * ddy + ddz * ddz < rlist2) {
                            out.push_back(j);
                            ++found;
                        }
                    }
                }
            }
        }
        counts[i - begin] = found;
    }
}

}  // namespace

int main() {
    const float box = std::cbrt(kAtoms / kDensity);
    const float rlist = kCutoff + kSkin;
    Cells cells;
    cells.per_side = static_cast<int>(box / rlist);
    cells.size = box / cells.per_side;
    cells.start.assign(cells.per_side * cells.per_side * cells.per_side + 1, 0);
    cells.atoms.assign(kAtoms, 0);
    cells.of.assign(kAtoms, 0);

    // fcc lattice, Maxwell-Boltzmann velocities with the centre-of-mass drift removed.
    std::vector<float4> pos(kAtoms), vel(kAtoms);
    const float a = box / kLattice;
    const float basis[4][3] = {{0, 0, 0}, {0.5f, 0.5f, 0}, {0.5f, 0, 0.5f}, {0, 0.5f, 0.5f}};
    std::mt19937 rng(11);
    std::normal_distribution<float> gauss(0.f, std::sqrt(kTemperature));
    double vsum[3] = {0, 0, 0};
    for (int z = 0, i = 0; z < kLattice; ++z)
        for (int y = 0; y < kLattice; ++y)
            for (int x = 0; x < kLattice; ++x)
                for (const auto& b : basis) {
                    pos[i] = make_float4((x + b[0]) * a, (y + b[1]) * a, (z + b[2]) * a, 0.f);
                    vel[i] = make_float4(gauss(rng), gauss(rng), gauss(rng), 0.f);
                    vsum[0] += vel[i].x;
                    vsum[1] += vel[i].y;
                    vsum[2] += vel[i].z;
                    ++i;
                }
    for (float4& v : vel) {
        v.x -= static_cast<float>(vsum[0] / kAtoms);
        v.y -= static_cast<float>(vsum[1] / kAtoms);
        v.z -= static_cast<float>(vsum[2] / kAtoms);
    }

    float4 *d_pos, *d_vel, *d_force;
    int *d_offsets, *d_pairs, *h_offsets, *h_pairs;
    float* d_ones;
    const size_t pair_capacity = static_cast<size_t>(kAtoms) * kMaxPairsPerAtom;
    if (!check(cudaMalloc(&d_pos, kAtoms * sizeof(float4)), "cudaMalloc pos") ||
        !check(cudaMalloc(&d_vel, kAtoms * sizeof(float4)), "cudaMalloc vel") ||
        !check(cudaMalloc(&d_force, kAtoms * sizeof(float4)), "cudaMalloc force") ||
        !check(cudaMalloc(&d_offsets, (kAtoms + 1) * sizeof(int)), "cudaMalloc offsets") ||
        !check(cudaMalloc(&d_pairs, pair_capacity * sizeof(int)), "cudaMalloc pairs") ||
        !check(cudaMalloc(&d_ones, kAtoms * sizeof(float)), "cudaMalloc ones") ||
        !check(cudaMallocHost(&h_offsets, (kAtoms + 1) * sizeof(int)), "cudaMallocHost") ||
        !check(cudaMallocHost(&h_pairs, pair_capacity * sizeof(int)), "cudaMallocHost"))
        return 1;
    cublasHandle_t blas;
    if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) {
        std::fprintf(stderr, "cublasCreate failed\n");
        return 1;
    }
    {
        std::vector<float> ones(kAtoms, 1.f);
        cudaMemcpy(d_ones, ones.data(), kAtoms * sizeof(float), cudaMemcpyHostToDevice);
    }
    cudaMemcpy(d_pos, pos.data(), kAtoms * sizeof(float4), cudaMemcpyHostToDevice);
    cudaMemcpy(d_vel, vel.data(), kAtoms * sizeof(float4), cudaMemcpyHostToDevice);

    const int threads = 256, blocks = (kAtoms + threads - 1) / threads;
    const float rc2 = kCutoff * kCutoff, rlist2 = rlist * rlist;
    std::vector<std::vector<int>> parts(kBuildThreads);
    for (auto& p : parts)
        p.reserve(pair_capacity / kBuildThreads / 2);
    double build_seconds = 0.0, readback_seconds = 0.0;
    long long pairs_total = 0;
    using clock = std::chrono::steady_clock;

    // One outer step: positions back, Verlet list on the host, upload, kSubsteps on the GPU.
    auto outer_step = [&](int step, bool timed) -> bool {
        const auto t0 = clock::now();
        if (!check(cudaMemcpy(pos.data(), d_pos, kAtoms * sizeof(float4), cudaMemcpyDeviceToHost),
                   "positions D2H"))
            return false;
        const auto t1 = clock::now();

        bin_atoms(pos, cells);
        const int chunk = (kAtoms + kBuildThreads - 1) / kBuildThreads;
        std::vector<std::thread> workers;
        for (int w = 1; w < kBuildThreads; ++w) {
            const int begin = w * chunk, end = std::min(kAtoms, begin + chunk);
            workers.emplace_back(build_neighbors_range, std::cref(pos), std::cref(cells), box,
                                 rlist2, begin, end, h_offsets + 1 + begin, std::ref(parts[w]));
        }
        build_neighbors_range(pos, cells, box, rlist2, 0, std::min(kAtoms, chunk), h_offsets + 1,
                              parts[0]);
        for (std::thread& th : workers)
            th.join();
        h_offsets[0] = 0;
        for (int i = 0; i < kAtoms; ++i)
            h_offsets[i + 1] += h_offsets[i];
        size_t at = 0;
        for (const auto& p : parts) {
            if (at + p.size() > pair_capacity) {
                std::fprintf(stderr, "neighbour list overflow\n");
                return false;
            }
            std::memcpy(h_pairs + at, p.data(), p.size() * sizeof(int));
            at += p.size();
        }
        const auto t2 = clock::now();
        if (timed) {
            readback_seconds += std::chrono::duration<double>(t1 - t0).count();
            build_seconds += std::chrono::duration<double>(t2 - t1).count();
            pairs_total += static_cast<long long>(at);
        }

        cudaMemcpyAsync(d_offsets, h_offsets, (kAtoms + 1) * sizeof(int), cudaMemcpyHostToDevice);
        cudaMemcpyAsync(d_pairs, h_pairs, at * sizeof(int), cudaMemcpyHostToDevice);
        if (step < 0)  // forces for the first half-kick
            lj_forces<<<blocks, threads>>>(d_pos, d_force, d_offsets, d_pairs, kAtoms, box, rc2);
        for (int s = 0; s < kSubsteps; ++s) {
            kick_drift<<<blocks, threads>>>(d_pos, d_vel, d_force, kAtoms, kDt, box);
            lj_forces<<<blocks, threads>>>(d_pos, d_force, d_offsets, d_pairs, kAtoms, box, rc2);
            kick<<<blocks, threads>>>(d_vel, d_force, kAtoms, kDt);
        }
        if (!check(cudaGetLastError(), "launch"))
            return false;
        if (step >= 0 && (step + 1) % kLogEvery == 0) {
            float vv = 0.f, pe = 0.f;
            cublasSdot(blas, 4 * kAtoms, reinterpret_cast<const float*>(d_vel), 1,
                       reinterpret_cast<const float*>(d_vel), 1, &vv);
            cublasSdot(blas, kAtoms, reinterpret_cast<const float*>(d_force) + 3, 4, d_ones, 1,
                       &pe);
            std::printf("step %3d  KE/N %.4f  PE/N %.4f  E/N %.4f  pairs/atom %.1f\n", step + 1,
                        0.5f * vv / kAtoms, pe / kAtoms, (0.5f * vv + pe) / kAtoms,
                        static_cast<double>(at) / kAtoms);
        }
        return true;
    };

    if (!outer_step(-1, false))  // warm-up: first forces, thread start-up, lazy module loading
        return 1;
    cudaDeviceSynchronize();
    const auto start = clock::now();
    for (int step = 0; step < kOuterSteps; ++step) {
        nvtxRangePushA("md_step");
        const bool ok = outer_step(step, true);
        nvtxRangePop();
        if (!ok)
            return 1;
    }
    if (!check(cudaDeviceSynchronize(), "final sync"))
        return 1;
    const double total = std::chrono::duration<double>(clock::now() - start).count();
    std::printf("outer steps %d x %d substeps; host neighbour-list build %.2f s of loop %.2f s "
                "(%.0f%%), positions read-back %.2f s, %.1f pairs/atom\n",
                kOuterSteps, kSubsteps, build_seconds, total, 100.0 * build_seconds / total,
                readback_seconds, static_cast<double>(pairs_total) / kOuterSteps / kAtoms);
    cublasDestroy(blas);
    cudaFreeHost(h_pairs);
    cudaFreeHost(h_offsets);
    cudaFree(d_ones);
    cudaFree(d_pairs);
    cudaFree(d_offsets);
    cudaFree(d_force);
    cudaFree(d_vel);
    cudaFree(d_pos);
    return 0;
}
