// Blind batch 14: voxel-grid downsampling of a car's four lidar sweeps, frame after frame.
//
// Each frame the four sensors' sweeps (2^19 points each, delivered into device buffers by the
// driver; synthesised here by a kernel) are each reduced to one point per occupied 0.2 m voxel:
// voxel keys, a CUB radix sort of (key, index) pairs, a CUB run-length encode of the sorted keys,
// a CUB exclusive scan of the run lengths, one centroid per voxel, and a CUB select of the voxels
// that hold at least two points, appended to the frame's merged cloud. The merged cloud is copied
// to a pinned buffer and "published" (a checksum here).
//
// voxel_downsample() is written the way CUB's documentation shows its algorithms: ask for the
// temporary storage size, cudaMalloc it, run, cudaFree it; and every intermediate array is a
// cudaMalloc at the top of the function and a cudaFree at its end. No NVTX besides one
// process_frame range per frame.
//
// Ground truth printed at the end: host seconds inside cudaMalloc and cudaFree (timed around every
// call), seconds in the two count read-backs, against the loop's seconds and the frame count.
#include <cub/cub.cuh>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define CUDA_CHECK(call)                                                                   \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call,              \
                         cudaGetErrorString(err_));                                        \
            std::exit(1);                                                                  \
        }                                                                                  \
    } while (0)

namespace {

constexpr int kSensors = 4;
constexpr int kBeams = 256;
constexpr int kAzimuth = 2048;
constexpr int kPoints = kBeams * kAzimuth;  // 524,288 points a sweep
constexpr float kVoxel = 0.2f;
constexpr int kGridXY = 512;                // 102.4 m square around the car
constexpr int kGridZ = 40;                  // -3 m .. 5 m
constexpr uint32_t kInvalidKey = (1u << 24) - 1;  // above every voxel key (512*512*40 < 2^24)
constexpr int kMinPoints = 2;
constexpr int kWarmupFrames = 2;
constexpr int kFrames = 400;                // 40 s of driving at 10 Hz

struct Pose {
    float x, y, z, yaw;
};
// Front, left, right and rear sensors on the roof rack.
const Pose kMounts[kSensors] = {
    {1.6f, 0.0f, 1.9f, 0.0f},
    {0.2f, 0.9f, 1.8f, 1.5708f},
    {0.2f, -0.9f, 1.8f, -1.5708f},
    {-1.3f, 0.0f, 1.8f, 3.1416f},
};

// Ground-truth bookkeeping (not part of the pipeline's logic).
double g_malloc_s = 0.0, g_free_s = 0.0, g_readback_s = 0.0;
long g_mallocs = 0, g_frees = 0;
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

template <class T>
void dev_malloc(T** ptr, size_t bytes) {
    auto t0 = Clock::now();
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(ptr), bytes));
    g_malloc_s += since(t0);
    ++g_mallocs;
}
void dev_free(void* ptr) {
    auto t0 = Clock::now();
    CUDA_CHECK(cudaFree(ptr));
    g_free_s += since(t0);
    ++g_frees;
}
int read_count(const int* d_count) {
    auto t0 = Clock::now();
    int n = 0;
    CUDA_CHECK(cudaMemcpy(&n, d_count, sizeof(int), cudaMemcpyDeviceToHost));
    g_readback_s += since(t0);
    return n;
}

__device__ __forceinline__ uint32_t hash32(uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}
__device__ __forceinline__ float unit(uint32_t h) { return (h >> 8) * (1.0f / 16777216.0f); }

// One sweep in the sensor's frame: ground returns below the horizon, parked cars and buildings
// around, range noise, drop-outs beyond 100 m (w = -1).
__global__ void simulate_sweep(float4* pts, int sensor, int frame) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= kPoints) return;
    int beam = i / kAzimuth, az = i % kAzimuth;
    float el = (-25.0f + 40.0f * beam / (kBeams - 1)) * 0.0174533f;
    float th = 6.2831853f * az / kAzimuth;
    uint32_t h = hash32(i * 2654435761u ^ (sensor * 97u + frame * 7919u));
    float r;
    int sector = (az * 64 / kAzimuth + frame / 10 + sensor * 5) & 63;
    float building = 18.0f + 40.0f * unit(hash32(sector * 131u + sensor));
    if (el < 0.0f) {
        r = fminf(1.85f / sinf(-el), building);
    } else {
        r = unit(h) < 0.15f ? 200.0f : building;  // sky
    }
    uint32_t car = hash32(sector * 977u + (frame / 25) * 31u);
    if ((car & 3) == 0 && el > -0.15f && el < 0.03f) r = fminf(r, 6.0f + 10.0f * unit(car));
    r += 0.03f * (unit(hash32(h)) - 0.5f);
    float ce = cosf(el);
    float w = r > 100.0f ? -1.0f : unit(hash32(h ^ 0x9e3779b9u));
    pts[i] = make_float4(r * ce * cosf(th), r * ce * sinf(th), r * sinf(el), w);
}

__device__ __forceinline__ float3 to_vehicle(float4 p, Pose s) {
    float c = cosf(s.yaw), sn = sinf(s.yaw);
    return make_float3(c * p.x - sn * p.y + s.x, sn * p.x + c * p.y + s.y, p.z + s.z);
}

__global__ void voxel_keys(const float4* pts, int n, Pose s, uint32_t* keys, uint32_t* idx) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float4 p = pts[i];
    float3 v = to_vehicle(p, s);
    int gx = (int)floorf(v.x / kVoxel) + kGridXY / 2;
    int gy = (int)floorf(v.y / kVoxel) + kGridXY / 2;
    int gz = (int)floorf((v.z + 3.0f) / kVoxel);
    bool ok = p.w >= 0.0f && gx >= 0 && gx < kGridXY && gy >= 0 && gy < kGridXY && gz >= 0 &&
              gz < kGridZ;
    keys[i] = ok ? (uint32_t)((gz * kGridXY + gy) * kGridXY + gx) : kInvalidKey;
    idx[i] = i;
}

__global__ void voxel_centroids(const float4* pts, const uint32_t* sorted_idx,
                                const uint32_t* uniq, const uint32_t* offsets,
                                const uint32_t* counts, int nvox, Pose s, float4* cent,
                                uint8_t* keep) {
    int v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= nvox) return;
    uint32_t start = offsets[v], cnt = counts[v];
    if (uniq[v] == kInvalidKey) {  // the run of dropped and out-of-grid points
        keep[v] = 0;
        return;
    }
    float sx = 0.f, sy = 0.f, sz = 0.f, si = 0.f;
    for (uint32_t k = 0; k < cnt; ++k) {
        float4 p = pts[sorted_idx[start + k]];
        float3 q = to_vehicle(p, s);
        sx += q.x;
        sy += q.y;
        sz += q.z;
        si += p.w;
    }
    float inv = 1.0f / (float)cnt;
    cent[v] = make_float4(sx * inv, sy * inv, sz * inv, si * inv);
    keep[v] = cnt >= (uint32_t)kMinPoints ? 1 : 0;
}

// Reduces one sweep to voxel centroids appended at d_out; returns how many were appended.
int voxel_downsample(const float4* d_pts, int n, Pose pose, float4* d_out) {
    const int threads = 256;
    uint32_t *d_keys, *d_idx, *d_keys_sorted, *d_idx_sorted;
    dev_malloc(&d_keys, n * sizeof(uint32_t));
    dev_malloc(&d_idx, n * sizeof(uint32_t));
    dev_malloc(&d_keys_sorted, n * sizeof(uint32_t));
    dev_malloc(&d_idx_sorted, n * sizeof(uint32_t));
    voxel_keys<<<(n + threads - 1) / threads, threads>>>(d_pts, n, pose, d_keys, d_idx);

    // Sort the points by voxel.
    void* d_temp = nullptr;
    size_t temp_bytes = 0;
    cub::DeviceRadixSort::SortPairs(d_temp, temp_bytes, d_keys, d_keys_sorted, d_idx,
                                    d_idx_sorted, n, 0, 24);
    dev_malloc(&d_temp, temp_bytes);
    cub::DeviceRadixSort::SortPairs(d_temp, temp_bytes, d_keys, d_keys_sorted, d_idx,
                                    d_idx_sorted, n, 0, 24);
    dev_free(d_temp);

    // One run per occupied voxel.
    uint32_t *d_uniq, *d_counts;
    int* d_nruns;
    dev_malloc(&d_uniq, n * sizeof(uint32_t));
    dev_malloc(&d_counts, n * sizeof(uint32_t));
    dev_malloc(&d_nruns, sizeof(int));
    d_temp = nullptr;
    temp_bytes = 0;
    cub::DeviceRunLengthEncode::Encode(d_temp, temp_bytes, d_keys_sorted, d_uniq, d_counts,
                                       d_nruns, n);
    dev_malloc(&d_temp, temp_bytes);
    cub::DeviceRunLengthEncode::Encode(d_temp, temp_bytes, d_keys_sorted, d_uniq, d_counts,
                                       d_nruns, n);
    dev_free(d_temp);
    int nruns = read_count(d_nruns);

    // Where each voxel's points start in the sorted order.
    uint32_t* d_offsets;
    dev_malloc(&d_offsets, nruns * sizeof(uint32_t));
    d_temp = nullptr;
    temp_bytes = 0;
    cub::DeviceScan::ExclusiveSum(d_temp, temp_bytes, d_counts, d_offsets, nruns);
    dev_malloc(&d_temp, temp_bytes);
    cub::DeviceScan::ExclusiveSum(d_temp, temp_bytes, d_counts, d_offsets, nruns);
    dev_free(d_temp);

    float4* d_cent;
    uint8_t* d_keep;
    dev_malloc(&d_cent, nruns * sizeof(float4));
    dev_malloc(&d_keep, nruns * sizeof(uint8_t));
    voxel_centroids<<<(nruns + threads - 1) / threads, threads>>>(
        d_pts, d_idx_sorted, d_uniq, d_offsets, d_counts, nruns, pose, d_cent, d_keep);

    // Keep the voxels with enough points, appended to the frame's cloud.
    int* d_nsel;
    dev_malloc(&d_nsel, sizeof(int));
    d_temp = nullptr;
    temp_bytes = 0;
    cub::DeviceSelect::Flagged(d_temp, temp_bytes, d_cent, d_keep, d_out, d_nsel, nruns);
    dev_malloc(&d_temp, temp_bytes);
    cub::DeviceSelect::Flagged(d_temp, temp_bytes, d_cent, d_keep, d_out, d_nsel, nruns);
    dev_free(d_temp);
    int nsel = read_count(d_nsel);

    dev_free(d_keys);
    dev_free(d_idx);
    dev_free(d_keys_sorted);
    dev_free(d_idx_sorted);
    dev_free(d_uniq);
    dev_free(d_counts);
    dev_free(d_nruns);
    dev_free(d_offsets);
    dev_free(d_cent);
    dev_free(d_keep);
    dev_free(d_nsel);
    return nsel;
}

// Stands in for handing the cloud to the mapping process.
double publish(const float4* cloud, int n) {
    double sum = 0.0;
    for (int i = 0; i < n; i += 16) sum += cloud[i].x + 0.5 * cloud[i].y + 0.25 * cloud[i].z;
    return sum;
}

}  // namespace

int main() {
    CUDA_CHECK(cudaSetDevice(0));
    // The driver's sweep buffers and the pinned publish buffer live for the whole drive.
    float4* d_sweep[kSensors];
    for (int s = 0; s < kSensors; ++s)
        CUDA_CHECK(cudaMalloc(&d_sweep[s], kPoints * sizeof(float4)));
    float4* h_cloud;
    CUDA_CHECK(cudaMallocHost(&h_cloud, kSensors * kPoints * sizeof(float4)));

    double checksum = 0.0;
    long points_out = 0;
    Clock::time_point loop_start;
    for (int frame = 0; frame < kWarmupFrames + kFrames; ++frame) {
        if (frame == kWarmupFrames) {
            CUDA_CHECK(cudaDeviceSynchronize());
            g_malloc_s = g_free_s = g_readback_s = 0.0;
            g_mallocs = g_frees = 0;
            points_out = 0;
            loop_start = Clock::now();
        }
        nvtxRangePushA("process_frame");
        float4* d_merged;
        dev_malloc(&d_merged, kSensors * kPoints * sizeof(float4));
        int total = 0;
        for (int s = 0; s < kSensors; ++s) {
            simulate_sweep<<<(kPoints + 255) / 256, 256>>>(d_sweep[s], s, frame);
            total += voxel_downsample(d_sweep[s], kPoints, kMounts[s], d_merged + total);
        }
        CUDA_CHECK(cudaMemcpyAsync(h_cloud, d_merged, total * sizeof(float4),
                                   cudaMemcpyDeviceToHost, 0));
        CUDA_CHECK(cudaStreamSynchronize(0));
        checksum += publish(h_cloud, total);
        points_out += total;
        dev_free(d_merged);
        nvtxRangePop();
        if (frame % 100 == 0) std::printf("frame %d: %d voxels\n", frame, total);
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    double loop_s = since(loop_start);
    CUDA_CHECK(cudaGetLastError());

    for (int s = 0; s < kSensors; ++s) CUDA_CHECK(cudaFree(d_sweep[s]));
    CUDA_CHECK(cudaFreeHost(h_cloud));
    double alloc_s = g_malloc_s + g_free_s;
    std::printf("ground truth: cudaMalloc %.3f s (%ld calls) + cudaFree %.3f s (%ld calls) = %.3f s "
                "of %.3f s loop (%.1f%%); count read-backs %.3f s; %d frames (%d sweeps), "
                "%.1f voxels a frame, checksum %.3g\n",
                g_malloc_s, g_mallocs, g_free_s, g_frees, alloc_s, loop_s,
                100.0 * alloc_s / loop_s, g_readback_s, kFrames, kFrames * kSensors,
                (double)points_out / kFrames, checksum);
    return 0;
}
