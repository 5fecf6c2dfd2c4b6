// blind24_cloth_pbd_tiny_kernels.cu: position-based dynamics cloth for a garment-fitting
// service, four garments simulated by four host threads, each with its own CUDA stream.
// build: nvcc -O2 -std=c++17 -o blind24_cloth_pbd_tiny_kernels blind24_cloth_pbd_tiny_kernels.cu
//
// Each garment is a 48x48 particle sheet (2304 particles) with stretch, shear and bending
// distance constraints (13,346), greedily coloured into 13 independent colour classes so that
// each class can be projected in parallel without races (Gauss-Seidel across colours). Per frame:
// 10 substeps; each substep predicts positions (gravity, wind), projects every colour class 4
// times, resolves collisions with the mannequin (a capsule body) and updates velocities. That is
// 1 + 10 x (1 + 4 x 13 + 2) = 551 kernel launches per frame per thread, each kernel touching one
// colour class (about 1,100 constraints; the last class has 31) or the 2304 particles: a
// microsecond or two of GPU work. The host
// launch rate is the limit (the plant: launch-bound tiny kernels, four threads launching into
// four streams at once); the GPU is mostly idle between kernels.
//
// At the end of every frame each thread copies 16 bytes of diagnostics (max stretch, kinetic
// energy) to pinned memory and synchronises its stream: one small sync per frame.
//
// NVTX: each thread names itself "garment<k>" and marks each frame "g<k>.frame" (80 per
// thread). After the timed frames a control phase ("control.graph" ranges) captures one frame
// per thread into a CUDA graph and replays it 40 times, which gives the same GPU work without
// the per-kernel launch cost. GROUND TRUTH: the host time in the launch loops over the frames'
// time, and eager frame time vs graph frame time. BLIND_SMALL=1: 8 frames, 2 threads.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

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

constexpr int SIDE = 48;
constexpr int NP = SIDE * SIDE;
constexpr int SUBSTEPS = 10;
constexpr int ITERS = 4;
constexpr float DT_FRAME = 1.0f / 60.0f;

struct Constraint {
    int a, b;
    float rest, stiffness;
};

// ---- kernels: each one is tiny -----------------------------------------------------------------
__global__ void predict(const float4* __restrict__ x, float4* __restrict__ v, float4* __restrict__ p,
                        const float* __restrict__ inv_mass, float dt, float wind, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float w = inv_mass[i];
    float4 vi = v[i];
    if (w > 0.0f) {
        vi.y -= 9.81f * dt;
        vi.z += wind * dt * (0.5f + 0.5f * __sinf(0.37f * i));
        vi.x *= 0.999f; vi.y *= 0.999f; vi.z *= 0.999f;
    }
    v[i] = vi;
    float4 xi = x[i];
    p[i] = make_float4(xi.x + vi.x * dt, xi.y + vi.y * dt, xi.z + vi.z * dt, 0.0f);
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__global__ void project_colour(const Constraint* __restrict__ c, int n, float4* __restrict__ p,
                               const float* __restrict__ inv_mass, float* __restrict__ max_stretch) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    float strain = 0.0f;
    if (k < n) {
        Constraint ck = c[k];
        float4 pa = p[ck.a], pb = p[ck.b];
        float wa = inv_mass[ck.a], wb = inv_mass[ck.b];
        float dx = pa.x - pb.x, dy = pa.y - pb.y, dz = pa.z - pb.z;
        float len = sqrtf(dx * dx + dy * dy + dz * dz) + 1e-9f;
        float wsum = wa + wb;
        if (wsum > 0.0f) {
            float s = ck.stiffness * (len - ck.rest) / (len * wsum);
            pa.x -= wa * s * dx; pa.y -= wa * s * dy; pa.z -= wa * s * dz;
            pb.x += wb * s * dx; pb.y += wb * s * dy; pb.z += wb * s * dz;
            p[ck.a] = pa;
            p[ck.b] = pb;
        }
        strain = fabsf(len - ck.rest) / ck.rest;
    }
    strain = warp_max(strain);  // blocks are whole warps (128 threads)
    if ((threadIdx.x & 31) == 0)
        atomicMax(reinterpret_cast<int*>(max_stretch), __float_as_int(strain));  // strain >= 0
}

__global__ void collide_body(float4* __restrict__ p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    // mannequin torso: a vertical capsule of radius 0.16 m from y=-0.6 to y=0.1 at x=z=0
    float4 pi = p[i];
    float y = fminf(fmaxf(pi.y, -0.6f), 0.1f);
    float dx = pi.x, dy = pi.y - y, dz = pi.z - 0.02f;
    float d = sqrtf(dx * dx + dy * dy + dz * dz) + 1e-9f;
    const float r = 0.16f + 0.005f;
    if (d < r) {
        float s = r / d;
        pi.x = dx * s; pi.y = y + dy * s; pi.z = 0.02f + dz * s;
    }
    p[i] = pi;
}

__global__ void update_velocity(float4* __restrict__ x, float4* __restrict__ v, const float4* __restrict__ p,
                                float inv_dt, int n, float* __restrict__ kinetic) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float e = 0.0f;
    if (i < n) {
        float4 pi = p[i], xi = x[i];
        float4 vi = make_float4((pi.x - xi.x) * inv_dt, (pi.y - xi.y) * inv_dt, (pi.z - xi.z) * inv_dt, 0.0f);
        v[i] = vi;
        x[i] = pi;
        e = 0.5f * (vi.x * vi.x + vi.y * vi.y + vi.z * vi.z);
    }
    e = warp_sum(e);
    if ((threadIdx.x & 31) == 0) atomicAdd(kinetic, e);
}

__global__ void reset_diag(float* d) {
    if (threadIdx.x < 4) d[threadIdx.x] = 0.0f;
}

// ---- host: garment set-up ----------------------------------------------------------------------
struct Garment {
    int id = 0;
    cudaStream_t stream{};
    float4 *x = nullptr, *v = nullptr, *p = nullptr;
    float* inv_mass = nullptr;
    float* diag = nullptr;       // device: max stretch, kinetic energy
    float* diag_host = nullptr;  // pinned
    Constraint* cons = nullptr;
    std::vector<int> colour_offset, colour_count;
    int n_cons = 0;
    // results
    double launch_s = 0.0, frames_s = 0.0, graph_frame_s = 0.0;
    int frames = 0;
    long launches = 0;
    float last_stretch = 0.0f, last_ke = 0.0f;
};

static void build_garment(Garment& g, int id) {
    g.id = id;
    std::vector<float4> x(NP), v(NP, make_float4(0, 0, 0, 0));
    std::vector<float> w(NP, 1.0f);
    const float spacing = 0.02f;
    for (int r = 0; r < SIDE; ++r)
        for (int c = 0; c < SIDE; ++c) {
            float jitter = 0.002f * std::sin(0.7f * r + 1.3f * c + id);
            x[r * SIDE + c] = make_float4((c - SIDE / 2) * spacing, 0.35f - 0.0f * r, (r - SIDE / 2) * spacing + jitter, 0);
        }
    // pinned along one edge (the garment's shoulder seam), slightly different per garment
    for (int c = 0; c < SIDE; c += 1 + (id % 2)) w[c] = 0.0f;
    // constraints by type, then greedy colouring (no two constraints of a colour share a particle)
    std::vector<Constraint> all;
    auto add = [&](int a, int b, float k) {
        float4 pa = x[a], pb = x[b];
        float d = std::sqrt((pa.x - pb.x) * (pa.x - pb.x) + (pa.y - pb.y) * (pa.y - pb.y) + (pa.z - pb.z) * (pa.z - pb.z));
        all.push_back({a, b, d, k});
    };
    for (int r = 0; r < SIDE; ++r)
        for (int c = 0; c < SIDE; ++c) {
            int i = r * SIDE + c;
            if (c + 1 < SIDE) add(i, i + 1, 0.9f);                   // stretch
            if (r + 1 < SIDE) add(i, i + SIDE, 0.9f);
            if (r + 1 < SIDE && c + 1 < SIDE) add(i, i + SIDE + 1, 0.5f);  // shear
            if (r + 1 < SIDE && c > 0) add(i, i + SIDE - 1, 0.5f);
            if (c + 2 < SIDE) add(i, i + 2, 0.1f);                   // bending
            if (r + 2 < SIDE) add(i, i + 2 * SIDE, 0.1f);
        }
    std::vector<std::vector<Constraint>> colours;
    std::vector<std::vector<char>> used;
    for (const auto& c : all) {
        bool placed = false;
        for (size_t k = 0; k < colours.size() && !placed; ++k)
            if (!used[k][c.a] && !used[k][c.b]) {
                used[k][c.a] = used[k][c.b] = 1;
                colours[k].push_back(c);
                placed = true;
            }
        if (!placed) {  // open a new colour class
            colours.emplace_back(1, c);
            used.emplace_back(NP, 0);
            used.back()[c.a] = used.back()[c.b] = 1;
        }
    }
    std::vector<Constraint> flat;
    for (size_t k = 0; k < colours.size(); ++k) {
        g.colour_offset.push_back(static_cast<int>(flat.size()));
        g.colour_count.push_back(static_cast<int>(colours[k].size()));
        flat.insert(flat.end(), colours[k].begin(), colours[k].end());
    }
    g.n_cons = static_cast<int>(flat.size());
    CUDA_CHECK(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking));
    CUDA_CHECK(cudaMalloc(&g.x, NP * sizeof(float4)));
    CUDA_CHECK(cudaMalloc(&g.v, NP * sizeof(float4)));
    CUDA_CHECK(cudaMalloc(&g.p, NP * sizeof(float4)));
    CUDA_CHECK(cudaMalloc(&g.inv_mass, NP * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&g.diag, 4 * sizeof(float)));
    CUDA_CHECK(cudaMallocHost(&g.diag_host, 4 * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&g.cons, flat.size() * sizeof(Constraint)));
    CUDA_CHECK(cudaMemcpy(g.x, x.data(), NP * sizeof(float4), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(g.v, v.data(), NP * sizeof(float4), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(g.inv_mass, w.data(), NP * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(g.cons, flat.data(), flat.size() * sizeof(Constraint), cudaMemcpyHostToDevice));
}

// Enqueue one frame's kernels on the garment's stream; returns the number of launches.
static long enqueue_frame(Garment& g, int frame) {
    const int tpb = 128;
    const int pblocks = (NP + tpb - 1) / tpb;
    const float dt = DT_FRAME / SUBSTEPS;
    const float wind = 1.5f * std::sin(0.05f * frame + g.id);
    long n = 0;
    reset_diag<<<1, 32, 0, g.stream>>>(g.diag);
    ++n;
    for (int s = 0; s < SUBSTEPS; ++s) {
        predict<<<pblocks, tpb, 0, g.stream>>>(g.x, g.v, g.p, g.inv_mass, dt, wind, NP);
        ++n;
        for (int it = 0; it < ITERS; ++it)
            for (size_t k = 0; k < g.colour_count.size(); ++k) {
                int cnt = g.colour_count[k];
                if (cnt == 0) continue;
                project_colour<<<(cnt + tpb - 1) / tpb, tpb, 0, g.stream>>>(g.cons + g.colour_offset[k], cnt, g.p,
                                                                            g.inv_mass, g.diag);
                ++n;
            }
        collide_body<<<pblocks, tpb, 0, g.stream>>>(g.p, NP);
        ++n;
        update_velocity<<<pblocks, tpb, 0, g.stream>>>(g.x, g.v, g.p, 1.0f / dt, NP, g.diag + 1);
        ++n;
    }
    return n;
}

static void run_garment(Garment& g, int frames, std::atomic<int>* ready, int n_threads) {
    std::string name = "garment" + std::to_string(g.id);
    nvtxNameOsThreadA(static_cast<uint32_t>(syscall(SYS_gettid)), name.c_str());
    pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
    std::string frame_name = "g" + std::to_string(g.id) + ".frame";
    // warm-up: 2 frames, then wait for the other threads
    for (int f = 0; f < 2; ++f) enqueue_frame(g, f);
    CUDA_CHECK(cudaStreamSynchronize(g.stream));
    ready->fetch_add(1);
    while (ready->load() < n_threads) std::this_thread::yield();
    auto t_all = Clock::now();
    for (int f = 0; f < frames; ++f) {
        nvtxRangePushA(frame_name.c_str());
        auto t0 = Clock::now();
        g.launches += enqueue_frame(g, f + 2);
        g.launch_s += seconds_since(t0);
        CUDA_CHECK(cudaMemcpyAsync(g.diag_host, g.diag, 4 * sizeof(float), cudaMemcpyDeviceToHost, g.stream));
        CUDA_CHECK(cudaStreamSynchronize(g.stream));
        g.last_stretch = g.diag_host[0];
        g.last_ke = g.diag_host[1];
        nvtxRangePop();
    }
    g.frames_s = seconds_since(t_all);
    g.frames = frames;
}

static void run_graph_control(Garment& g, int replays, std::atomic<int>* ready, int n_threads) {
    std::string rname = "control.graph";
    nvtxRangePushA(rname.c_str());
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUDA_CHECK(cudaStreamBeginCapture(g.stream, cudaStreamCaptureModeThreadLocal));
    enqueue_frame(g, 1000);
    CUDA_CHECK(cudaStreamEndCapture(g.stream, &graph));
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CUDA_CHECK(cudaGraphLaunch(exec, g.stream));
    CUDA_CHECK(cudaStreamSynchronize(g.stream));
    ready->fetch_add(1);
    while (ready->load() < n_threads) std::this_thread::yield();
    auto t0 = Clock::now();
    for (int r = 0; r < replays; ++r) {
        CUDA_CHECK(cudaGraphLaunch(exec, g.stream));
        CUDA_CHECK(cudaMemcpyAsync(g.diag_host, g.diag, 4 * sizeof(float), cudaMemcpyDeviceToHost, g.stream));
        CUDA_CHECK(cudaStreamSynchronize(g.stream));
    }
    g.graph_frame_s = seconds_since(t0) / replays;
    CUDA_CHECK(cudaGraphExecDestroy(exec));
    CUDA_CHECK(cudaGraphDestroy(graph));
    nvtxRangePop();
}

int main() {
    const bool small = std::getenv("BLIND_SMALL") && std::strcmp(std::getenv("BLIND_SMALL"), "1") == 0;
    const int n_threads = small ? 2 : 4;
    const int frames = small ? 8 : 80;
    const int replays = small ? 4 : 40;
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaFree(nullptr));
    std::vector<Garment> gs(n_threads);
    for (int k = 0; k < n_threads; ++k) build_garment(gs[k], k);
    std::printf("%d garments x %d particles, %d constraints in %d colours each; %d frames per thread\n",
                n_threads, NP, gs[0].n_cons, static_cast<int>(gs[0].colour_count.size()), frames);

    std::atomic<int> ready{0};
    auto t0 = Clock::now();
    std::vector<std::thread> th;
    for (int k = 0; k < n_threads; ++k) th.emplace_back(run_garment, std::ref(gs[k]), frames, &ready, n_threads);
    for (auto& t : th) t.join();
    double wall = seconds_since(t0);
    th.clear();

    std::atomic<int> ready2{0};
    for (int k = 0; k < n_threads; ++k) th.emplace_back(run_graph_control, std::ref(gs[k]), replays, &ready2, n_threads);
    for (auto& t : th) t.join();

    double launch = 0, frame_s = 0, graph_s = 0;
    long launches = 0;
    for (auto& g : gs) {
        std::printf("garment %d: %d frames in %.3f s (%.3f ms/frame), %ld launches, host in launch loops %.3f s, "
                    "graph frame %.3f ms, max stretch %.4f, kinetic energy %.3e\n",
                    g.id, g.frames, g.frames_s, 1e3 * g.frames_s / g.frames, g.launches, g.launch_s,
                    1e3 * g.graph_frame_s, g.last_stretch, g.last_ke);
        launch += g.launch_s;
        frame_s += g.frames_s;
        graph_s += g.graph_frame_s;
        launches += g.launches;
    }
    double eager_frame = frame_s / (n_threads * frames);
    double graph_frame = graph_s / n_threads;
    std::printf("timed frames: %d threads x %d frames in %.3f s wall, %ld kernel launches (%.2f us of host time each)\n",
                n_threads, frames, wall, launches, 1e6 * launch / launches);
    std::printf("GROUND TRUTH: host time in the launch loops = %.1f%% of the threads' frame time (launch-bound); "
                "eager frame %.3f ms vs %.3f ms as a CUDA graph (%.1fx)\n",
                100.0 * launch / frame_s, 1e3 * eager_frame, 1e3 * graph_frame, eager_frame / graph_frame);
    for (auto& g : gs) {
        cudaFree(g.x); cudaFree(g.v); cudaFree(g.p); cudaFree(g.inv_mass); cudaFree(g.diag);
        cudaFree(g.cons); cudaFreeHost(g.diag_host); cudaStreamDestroy(g.stream);
    }
    return 0;
}
