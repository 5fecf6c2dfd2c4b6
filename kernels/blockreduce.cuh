#pragma once

// Internal to kernels/: block-wide reductions through shared memory, written out plainly (a tree,
// one __syncthreads per level) so the lesson kernels stay readable.
//
// Contract: every thread of the block calls with its own value; blockDim.x is a power of two and
// smem holds at least blockDim.x floats; blockDim.y == blockDim.z == 1. All threads get the
// result. The trailing __syncthreads lets the caller reuse smem for the next reduction at once.
// The order of additions is fixed by the block size, so results are deterministic run to run.

namespace warpline::kernels {

__device__ inline float blockReduceSum(float value, float* smem) {
    const unsigned int tid = threadIdx.x;
    smem[tid] = value;
    __syncthreads();
    for (unsigned int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (tid < stride) {
            smem[tid] += smem[tid + stride];
        }
        __syncthreads();
    }
    const float total = smem[0];
    __syncthreads();
    return total;
}

__device__ inline float blockReduceMax(float value, float* smem) {
    const unsigned int tid = threadIdx.x;
    smem[tid] = value;
    __syncthreads();
    for (unsigned int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (tid < stride) {
            smem[tid] = fmaxf(smem[tid], smem[tid + stride]);
        }
        __syncthreads();
    }
    const float result = smem[0];
    __syncthreads();
    return result;
}

} // namespace warpline::kernels
