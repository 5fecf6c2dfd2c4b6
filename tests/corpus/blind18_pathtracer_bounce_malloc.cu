// Progressive wavefront path tracer with material sorting (CUDA C++, NVTX).
//
// A 1280x720 image of ~100 spheres (diffuse, metal, glass and emissive) over a ground sphere is
// rendered progressively, two samples per pixel per frame, until a 12 s budget (or 4000 frames)
// is spent; the camera moves every 240 frames and accumulation restarts. Each bounce is a
// wavefront: intersect every live ray, count rays per material, build one queue per material,
// shade each queue with its own launch, and compact the survivors into the next ray buffers.
// The buffers of a bounce are sized to the live ray count read back from the GPU, so they are
// allocated with cudaMalloc when the bounce starts and released with cudaFree when it ends.
// Every 32 frames a denoised preview is tone-mapped and copied to the host (the viewer's
// thumbnail). The final image goes to /tmp/blind18_pathtracer.ppm.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

static void check(cudaError_t e, const char* what, int line) {
    if (e != cudaSuccess) {
        std::fprintf(stderr, "CUDA error %s at line %d: %s\n", cudaGetErrorString(e), line, what);
        std::exit(1);
    }
}
#define CK(x) check((x), #x, __LINE__)

constexpr int W = 1280, H = 720, SPP = 2;
constexpr int N_RAYS = W * H * SPP;
constexpr int N_SPHERES = 97;  // 96 + the ground
constexpr int MAX_BOUNCES = 6;
constexpr int N_MAT = 4;       // diffuse, metal, glass, emissive
constexpr int QUEUES = N_MAT + 1;  // + sky (the ray missed everything)
constexpr double BUDGET_S = 12.0;
constexpr int MAX_FRAMES = 4000;
constexpr int WARMUP_FRAMES = 5;
constexpr int PREVIEW_EVERY = 32;
constexpr int CAMERA_EVERY = 240;
constexpr int LOG_EVERY = 200;

struct Sphere {
    float cx, cy, cz, r;
    float ar, ag, ab, param;  // albedo; fuzz (metal) or index of refraction (glass)
    float er, eg, eb;         // emission
    int mat;
};
struct Ray {
    float ox, oy, oz, dx, dy, dz;
};
struct Hit {
    float t;
    int sphere;
};
struct Camera {
    float ox, oy, oz;
    float llx, lly, llz;  // lower-left corner of the image plane
    float hx, hy, hz;     // horizontal extent
    float vx, vy, vz;     // vertical extent
};

__host__ __device__ inline float3 mk(float x, float y, float z) { return make_float3(x, y, z); }
__host__ __device__ inline float3 operator+(float3 a, float3 b) { return mk(a.x + b.x, a.y + b.y, a.z + b.z); }
__host__ __device__ inline float3 operator-(float3 a, float3 b) { return mk(a.x - b.x, a.y - b.y, a.z - b.z); }
__host__ __device__ inline float3 operator*(float3 a, float s) { return mk(a.x * s, a.y * s, a.z * s); }
__host__ __device__ inline float3 operator*(float3 a, float3 b) { return mk(a.x * b.x, a.y * b.y, a.z * b.z); }
__host__ __device__ inline float dot(float3 a, float3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
__host__ __device__ inline float3 cross(float3 a, float3 b) {
    return mk(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
__host__ __device__ inline float3 normalize(float3 a) { return a * (1.0f / sqrtf(dot(a, a))); }

__device__ inline uint32_t pcg(uint32_t v) {
    uint32_t state = v * 747796405u + 2891336453u;
    uint32_t word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}
__device__ inline float rnd(uint32_t& s) {
    s = pcg(s);
    return (s >> 8) * (1.0f / 16777216.0f);
}
__device__ inline float3 rnd_unit(uint32_t& s) {
    float z = 2.0f * rnd(s) - 1.0f, a = 6.2831853f * rnd(s), r = sqrtf(fmaxf(0.0f, 1.0f - z * z));
    return mk(r * cosf(a), r * sinf(a), z);
}

__global__ void gen_rays(Ray* rays, float4* tp, int* pix, Camera cam, uint32_t frame) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N_RAYS) return;
    int p = i / SPP;
    uint32_t s = pcg(i * 9781u + frame * 6271u);
    float u = ((p % W) + rnd(s)) / W, v = 1.0f - ((p / W) + rnd(s)) / H;
    float3 d = mk(cam.llx + u * cam.hx + v * cam.vx - cam.ox, cam.lly + u * cam.hy + v * cam.vy - cam.oy,
                  cam.llz + u * cam.hz + v * cam.vz - cam.oz);
    d = normalize(d);
    rays[i] = Ray{cam.ox, cam.oy, cam.oz, d.x, d.y, d.z};
    tp[i] = make_float4(1.0f, 1.0f, 1.0f, 0.0f);
    pix[i] = p;
}

__global__ void intersect(const Ray* rays, int n, const Sphere* sph, Hit* hits) {
    __shared__ Sphere s[N_SPHERES];
    for (int k = threadIdx.x; k < N_SPHERES; k += blockDim.x) s[k] = sph[k];
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Ray r = rays[i];
    float best = 1e30f;
    int id = -1;
    for (int k = 0; k < N_SPHERES; ++k) {
        float ocx = r.ox - s[k].cx, ocy = r.oy - s[k].cy, ocz = r.oz - s[k].cz;
        float b = ocx * r.dx + ocy * r.dy + ocz * r.dz;
        float c = ocx * ocx + ocy * ocy + ocz * ocz - s[k].r * s[k].r;
        float disc = b * b - c;
        if (disc < 0.0f) continue;
        float sq = sqrtf(disc);
        float t = -b - sq;
        if (t < 1e-3f) t = -b + sq;
        if (t > 1e-3f && t < best) {
            best = t;
            id = k;
        }
    }
    hits[i] = Hit{best, id};
}

__global__ void classify(const Hit* hits, int n, const Sphere* sph, int* counts) {
    __shared__ int local[QUEUES];
    if (threadIdx.x < QUEUES) local[threadIdx.x] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int id = hits[i].sphere;
        atomicAdd(&local[id < 0 ? N_MAT : sph[id].mat], 1);
    }
    __syncthreads();
    if (threadIdx.x < QUEUES && local[threadIdx.x]) atomicAdd(&counts[threadIdx.x], local[threadIdx.x]);
}

__global__ void scatter_queues(const Hit* hits, int n, const Sphere* sph, int* const* queues, int* fill) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int id = hits[i].sphere;
    int q = id < 0 ? N_MAT : sph[id].mat;
    queues[q][atomicAdd(&fill[q], 1)] = i;
}

__global__ void shade(int mat, const int* queue, int count, int bounce, uint32_t frame, const Ray* rays,
                      const Hit* hits, const float4* tp, const int* pix, const Sphere* sph, float4* accum,
                      Ray* next_rays, float4* next_tp, int* next_pix, int* next_count) {
    int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= count) return;
    int i = queue[q];
    Ray r = rays[i];
    float4 t4 = tp[i];
    float3 thr = mk(t4.x, t4.y, t4.z), d = mk(r.dx, r.dy, r.dz);
    int p = pix[i];
    if (mat == N_MAT) {  // sky
        float a = 0.5f * (d.y + 1.0f);
        float3 sky = mk(1.0f, 1.0f, 1.0f) * (1.0f - a) + mk(0.5f, 0.7f, 1.0f) * a;
        float3 c = sky * thr;
        atomicAdd(&accum[p].x, c.x);
        atomicAdd(&accum[p].y, c.y);
        atomicAdd(&accum[p].z, c.z);
        return;
    }
    const Sphere& s = sph[hits[i].sphere];
    float3 o = mk(r.ox, r.oy, r.oz) + d * hits[i].t;
    float3 nrm = (o - mk(s.cx, s.cy, s.cz)) * (1.0f / s.r);
    float3 alb = mk(s.ar, s.ag, s.ab);
    uint32_t seed = pcg(i * 7919u + frame * 104729u + bounce * 15485863u);
    if (mat == 3) {  // emissive
        float3 c = mk(s.er, s.eg, s.eb) * thr;
        atomicAdd(&accum[p].x, c.x);
        atomicAdd(&accum[p].y, c.y);
        atomicAdd(&accum[p].z, c.z);
        return;
    }
    float3 nd;
    if (mat == 0) {  // diffuse
        nd = normalize(nrm + rnd_unit(seed));
    } else if (mat == 1) {  // metal
        float3 refl = d - nrm * (2.0f * dot(d, nrm));
        nd = normalize(refl + rnd_unit(seed) * s.param);
        if (dot(nd, nrm) <= 0.0f) return;
    } else {  // glass
        bool front = dot(d, nrm) < 0.0f;
        float3 n = front ? nrm : nrm * -1.0f;
        float eta = front ? 1.0f / s.param : s.param;
        float cosi = fminf(-dot(d, n), 1.0f);
        float sin2 = eta * eta * (1.0f - cosi * cosi);
        float r0 = (1.0f - eta) / (1.0f + eta);
        r0 *= r0;
        float fres = r0 + (1.0f - r0) * powf(1.0f - cosi, 5.0f);
        if (sin2 > 1.0f || rnd(seed) < fres) {
            nd = d + n * (2.0f * cosi);
        } else {
            nd = d * eta + n * (eta * cosi - sqrtf(1.0f - sin2));
        }
        nd = normalize(nd);
        alb = mk(1.0f, 1.0f, 1.0f);
    }
    thr = thr * alb;
    if (bounce >= 2) {  // Russian roulette
        float pr = fminf(0.95f, fmaxf(0.05f, fmaxf(thr.x, fmaxf(thr.y, thr.z))));
        if (rnd(seed) > pr) return;
        thr = thr * (1.0f / pr);
    }
    if (bounce == MAX_BOUNCES - 1) return;
    int k = atomicAdd(next_count, 1);
    float3 no = o + nd * 1e-3f;
    next_rays[k] = Ray{no.x, no.y, no.z, nd.x, nd.y, nd.z};
    next_tp[k] = make_float4(thr.x, thr.y, thr.z, 0.0f);
    next_pix[k] = p;
}

__global__ void tonemap_denoise(const float4* accum, float inv_spp, uchar4* out) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= W || y >= H) return;
    float4 c0 = accum[y * W + x];
    float3 sum = mk(0, 0, 0);
    float wsum = 0.0f;
    for (int dy = -3; dy <= 3; ++dy)
        for (int dx = -3; dx <= 3; ++dx) {
            int xx = min(max(x + dx, 0), W - 1), yy = min(max(y + dy, 0), H - 1);
            float4 c = accum[yy * W + xx];
            float dc = (c.x - c0.x) * (c.x - c0.x) + (c.y - c0.y) * (c.y - c0.y) + (c.z - c0.z) * (c.z - c0.z);
            float w = __expf(-(dx * dx + dy * dy) / 8.0f - dc * inv_spp * inv_spp * 4.0f);
            sum = sum + mk(c.x, c.y, c.z) * w;
            wsum += w;
        }
    float3 c = sum * (inv_spp / wsum);
    out[y * W + x] = make_uchar4((unsigned char)(255.0f * sqrtf(fminf(c.x, 1.0f))),
                                 (unsigned char)(255.0f * sqrtf(fminf(c.y, 1.0f))),
                                 (unsigned char)(255.0f * sqrtf(fminf(c.z, 1.0f))), 255);
}

using Clock = std::chrono::steady_clock;
static double g_alloc_s = 0.0;
static long g_allocs = 0;

static void* dmalloc(size_t bytes) {
    auto t0 = Clock::now();
    void* p = nullptr;
    CK(cudaMalloc(&p, std::max<size_t>(bytes, 16)));
    g_alloc_s += std::chrono::duration<double>(Clock::now() - t0).count();
    ++g_allocs;
    return p;
}
static void dfree(void* p) {
    auto t0 = Clock::now();
    CK(cudaFree(p));
    g_alloc_s += std::chrono::duration<double>(Clock::now() - t0).count();
}

static Camera make_camera(float angle) {
    float3 from = mk(13.0f * cosf(angle), 2.2f, 13.0f * sinf(angle)), at = mk(0, 0.6f, 0), up = mk(0, 1, 0);
    float vfov = 28.0f * 3.14159265f / 180.0f, aspect = float(W) / H;
    float hh = tanf(vfov / 2), hw = aspect * hh;
    float3 w = normalize(from - at), u = normalize(cross(up, w)), v = cross(w, u);
    float3 ll = from - u * hw - v * hh - w;
    float3 hz = u * (2 * hw), vt = v * (2 * hh);
    return Camera{from.x, from.y, from.z, ll.x, ll.y, ll.z, hz.x, hz.y, hz.z, vt.x, vt.y, vt.z};
}

static std::vector<Sphere> make_scene() {
    std::vector<Sphere> s;
    s.push_back(Sphere{0, -1000.0f, 0, 1000.0f, 0.5f, 0.5f, 0.5f, 0, 0, 0, 0, 0});
    uint32_t state = 12345u;
    auto r01 = [&]() {
        state = state * 1664525u + 1013904223u;
        return (state >> 8) * (1.0f / 16777216.0f);
    };
    for (int k = 0; k < N_SPHERES - 1; ++k) {
        float rad = 0.2f + 0.5f * r01();
        float x = (r01() - 0.5f) * 16.0f, z = (r01() - 0.5f) * 16.0f;
        float pick = r01();
        int mat = pick < 0.55f ? 0 : pick < 0.8f ? 1 : pick < 0.93f ? 2 : 3;
        float e = mat == 3 ? 4.0f : 0.0f;
        s.push_back(Sphere{x, rad, z, rad, 0.2f + 0.7f * r01(), 0.2f + 0.7f * r01(), 0.2f + 0.7f * r01(),
                           mat == 1 ? 0.3f * r01() : 1.5f, e, e * 0.8f, e * 0.6f, mat});
    }
    return s;
}

int main() {
    auto t_start = Clock::now();
    std::vector<Sphere> scene = make_scene();
    Sphere* d_spheres;
    CK(cudaMalloc(&d_spheres, sizeof(Sphere) * N_SPHERES));
    CK(cudaMemcpy(d_spheres, scene.data(), sizeof(Sphere) * N_SPHERES, cudaMemcpyHostToDevice));
    float4* d_accum;
    CK(cudaMalloc(&d_accum, sizeof(float4) * W * H));
    CK(cudaMemset(d_accum, 0, sizeof(float4) * W * H));
    std::vector<uchar4> preview(W * H);
    std::printf("scene: %d spheres, %dx%d, %d spp per frame, budget %.0f s\n", N_SPHERES, W, H, SPP, BUDGET_S);

    const int TB = 256;
    int frame = 0, frames_since_reset = 0, previews = 0;
    long rays_traced = 0, bounces_run = 0;
    Clock::time_point loop_t0;
    double loop_s = 0.0;
    for (; frame < MAX_FRAMES; ++frame) {
        if (frame == WARMUP_FRAMES) {
            CK(cudaDeviceSynchronize());
            loop_t0 = Clock::now();
            g_alloc_s = 0.0;
            g_allocs = 0;
            rays_traced = bounces_run = 0;
        }
        if (frame > WARMUP_FRAMES &&
            std::chrono::duration<double>(Clock::now() - loop_t0).count() > BUDGET_S)
            break;
        if (frame % CAMERA_EVERY == 0) {
            CK(cudaMemset(d_accum, 0, sizeof(float4) * W * H));
            frames_since_reset = 0;
        }
        Camera cam = make_camera(0.6f + 0.35f * (frame / CAMERA_EVERY));
        nvtxRangePushA("frame");
        Ray* rays = (Ray*)dmalloc(sizeof(Ray) * N_RAYS);
        float4* tp = (float4*)dmalloc(sizeof(float4) * N_RAYS);
        int* pix = (int*)dmalloc(sizeof(int) * N_RAYS);
        gen_rays<<<(N_RAYS + TB - 1) / TB, TB>>>(rays, tp, pix, cam, frame);
        CK(cudaGetLastError());
        int live = N_RAYS;
        for (int bounce = 0; bounce < MAX_BOUNCES && live > 0; ++bounce) {
            nvtxRangePushA("bounce");
            rays_traced += live;
            ++bounces_run;
            int blocks = (live + TB - 1) / TB;
            Hit* hits = (Hit*)dmalloc(sizeof(Hit) * live);
            intersect<<<blocks, TB>>>(rays, live, d_spheres, hits);
            int* d_counts = (int*)dmalloc(sizeof(int) * QUEUES);
            CK(cudaMemset(d_counts, 0, sizeof(int) * QUEUES));
            classify<<<blocks, TB>>>(hits, live, d_spheres, d_counts);
            int counts[QUEUES];
            CK(cudaMemcpy(counts, d_counts, sizeof(counts), cudaMemcpyDeviceToHost));
            int* queues[QUEUES];
            for (int m = 0; m < QUEUES; ++m) queues[m] = (int*)dmalloc(sizeof(int) * std::max(counts[m], 1));
            int** d_queues = (int**)dmalloc(sizeof(queues));
            CK(cudaMemcpy(d_queues, queues, sizeof(queues), cudaMemcpyHostToDevice));
            int* d_fill = (int*)dmalloc(sizeof(int) * QUEUES);
            CK(cudaMemset(d_fill, 0, sizeof(int) * QUEUES));
            scatter_queues<<<blocks, TB>>>(hits, live, d_spheres, d_queues, d_fill);
            Ray* next_rays = (Ray*)dmalloc(sizeof(Ray) * live);
            float4* next_tp = (float4*)dmalloc(sizeof(float4) * live);
            int* next_pix = (int*)dmalloc(sizeof(int) * live);
            int* d_next = (int*)dmalloc(sizeof(int));
            CK(cudaMemset(d_next, 0, sizeof(int)));
            for (int m = 0; m < QUEUES; ++m) {
                if (!counts[m]) continue;
                shade<<<(counts[m] + TB - 1) / TB, TB>>>(m, queues[m], counts[m], bounce, frame, rays, hits, tp,
                                                        pix, d_spheres, d_accum, next_rays, next_tp, next_pix,
                                                        d_next);
            }
            CK(cudaGetLastError());
            CK(cudaMemcpy(&live, d_next, sizeof(int), cudaMemcpyDeviceToHost));
            for (int m = 0; m < QUEUES; ++m) dfree(queues[m]);
            dfree(d_queues);
            dfree(d_fill);
            dfree(d_counts);
            dfree(hits);
            dfree(d_next);
            dfree(rays);
            dfree(tp);
            dfree(pix);
            rays = next_rays;
            tp = next_tp;
            pix = next_pix;
            nvtxRangePop();
        }
        dfree(rays);
        dfree(tp);
        dfree(pix);
        ++frames_since_reset;
        if (frame % PREVIEW_EVERY == PREVIEW_EVERY - 1) {
            nvtxRangePushA("preview");
            uchar4* d_img = (uchar4*)dmalloc(sizeof(uchar4) * W * H);
            dim3 b2(16, 16), g2((W + 15) / 16, (H + 15) / 16);
            tonemap_denoise<<<g2, b2>>>(d_accum, 1.0f / (SPP * frames_since_reset), d_img);
            CK(cudaMemcpy(preview.data(), d_img, sizeof(uchar4) * W * H, cudaMemcpyDeviceToHost));
            dfree(d_img);
            ++previews;
            nvtxRangePop();
        }
        nvtxRangePop();
        if (frame % LOG_EVERY == 0 && frame >= WARMUP_FRAMES) {
            double el = std::chrono::duration<double>(Clock::now() - loop_t0).count();
            std::printf("frame %d: %.1f frames/s, %.2f bounces/frame, %.0f rays/bounce, centre pixel %d\n",
                        frame, (frame - WARMUP_FRAMES + 1) / std::max(el, 1e-9),
                        double(bounces_run) / (frame - WARMUP_FRAMES + 1), double(rays_traced) / std::max(1L, bounces_run),
                        int(preview[(H / 2) * W + W / 2].x));
            std::fflush(stdout);
        }
    }
    CK(cudaDeviceSynchronize());
    loop_s = std::chrono::duration<double>(Clock::now() - loop_t0).count();
    int steady = frame - WARMUP_FRAMES;

    std::vector<float4> img(W * H);
    CK(cudaMemcpy(img.data(), d_accum, sizeof(float4) * W * H, cudaMemcpyDeviceToHost));
    FILE* f = std::fopen("/tmp/blind18_pathtracer.ppm", "wb");
    if (f) {
        std::fprintf(f, "P6\n%d %d\n255\n", W, H);
        float inv = 1.0f / (SPP * std::max(frames_since_reset, 1));
        for (int i = 0; i < W * H; ++i) {
            unsigned char c[3] = {(unsigned char)(255.0f * sqrtf(std::min(img[i].x * inv, 1.0f))),
                                  (unsigned char)(255.0f * sqrtf(std::min(img[i].y * inv, 1.0f))),
                                  (unsigned char)(255.0f * sqrtf(std::min(img[i].z * inv, 1.0f)))};
            std::fwrite(c, 1, 3, f);
        }
        std::fclose(f);
    }
    CK(cudaFree(d_accum));
    CK(cudaFree(d_spheres));
    double total = std::chrono::duration<double>(Clock::now() - t_start).count();
    std::printf("done: %d frames (%d after warm-up), %d previews, %.2f bounces/frame, %.1f ms/frame, total %.1f s\n",
                frame, steady, previews, double(bounces_run) / std::max(steady, 1), 1e3 * loop_s / std::max(steady, 1),
                total);
    std::printf("GROUND TRUTH: seconds in cudaMalloc/cudaFree (%ld allocations of per-bounce wavefront "
                "buffers) %.2f of loop %.2f (%.1f%%)\n",
                g_allocs, g_alloc_s, loop_s, 100.0 * g_alloc_s / loop_s);
    return 0;
}
