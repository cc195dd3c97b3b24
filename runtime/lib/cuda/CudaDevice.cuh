//===- CudaDevice.cuh - helpers of the cuda kernels --------------*- CUDA
//-*-===//
//
// The grid-stride loop that the elementwise kernels are written with, the
// block-per-row loop and block reductions of the row-wise kernels
// (CudaReductions.cu), and the device functions that more than one kernel
// file uses.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_LIB_CUDA_CUDADEVICE_CUH
#define BRAID_RUNTIME_LIB_CUDA_CUDADEVICE_CUH

#include "braid-runtime/Executor.h"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace braid::rt {

template <typename F> __global__ void forEachKernel(int64_t n, F f) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x)
    f(i);
}

template <typename F> void forEach(int64_t n, cudaStream_t stream, F f) {
  if (n <= 0)
    return;
  int64_t blocks = (n + 255) / 256;
  if (blocks > 65535)
    blocks = 65535;
  forEachKernel<<<unsigned(blocks), 256, 0, stream>>>(n, f);
}

constexpr int kMaxRank = 8;

/// A shape or a stride vector passed to kernels by value.
struct Dims {
  int rank = 0;
  int64_t d[kMaxRank] = {0};
};

inline Dims toDims(const std::vector<int64_t> &v, const Instr &instr) {
  if (v.size() > size_t(kMaxRank))
    throw KernelError(instr.describe() + ": the cuda backend handles rank " +
                      std::to_string(kMaxRank) + " at most");
  Dims dims;
  dims.rank = int(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    dims.d[i] = v[i];
  return dims;
}

/// One instruction's buffers in the arena, as the kernel files read them:
/// operand and result `i`'s Buffer, its f32 data, and a shard op's rank
/// index (a tensor<i64> read on the device).
struct CudaArgs {
  const Plan &plan;
  const Instr &instr;
  uint8_t *arena;
  const Buffer &inBuf(size_t i) const {
    return plan.buffers[instr.operands[i]];
  }
  const Buffer &outBuf(size_t i) const {
    return plan.buffers[instr.results[i]];
  }
  const float *in(size_t i) const {
    return reinterpret_cast<const float *>(arena + inBuf(i).offset);
  }
  float *out(size_t i) const {
    return reinterpret_cast<float *>(arena + outBuf(i).offset);
  }
  const int64_t *rankIndex(size_t i) const {
    return reinterpret_cast<const int64_t *>(arena + inBuf(i).offset);
  }
};

/// Threads of a row-wise kernel's block.
constexpr int kRowThreads = 256;

template <typename F>
__global__ void __launch_bounds__(kRowThreads)
    forEachRowKernel(int64_t rows, F f) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x)
    f(r);
}

/// Runs `f(r)` on every thread of one block of kRowThreads threads for each
/// of `rows` rows: the threads share the row's columns (a stride loop
/// from threadIdx.x) and combine with blockSum and blockMax.
template <typename F> void forEachRow(int64_t rows, cudaStream_t stream, F f) {
  if (rows <= 0)
    return;
  int64_t blocks = rows < 65535 ? rows : 65535;
  forEachRowKernel<<<unsigned(blocks), kRowThreads, 0, stream>>>(rows, f);
}

/// The sum (or the maximum) of every thread's `v` in the block, returned to
/// every thread. All threads of the block call it. The additions run in one
/// fixed order, so the result is the same from run to run.
__device__ inline float blockReduce(float v, bool max) {
  __shared__ float partial[32];
  for (int o = 16; o > 0; o /= 2) {
    float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = max ? fmaxf(v, w) : v + w;
  }
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads(); // the previous call's readers are done with `partial`
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  int warps = (blockDim.x + 31) / 32;
  v = lane < warps ? partial[lane] : (max ? -INFINITY : 0.0f);
  for (int o = 16; o > 0; o /= 2) {
    float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = max ? fmaxf(v, w) : v + w;
  }
  return v;
}
__device__ inline float blockSum(float v) { return blockReduce(v, false); }
__device__ inline float blockMax(float v) { return blockReduce(v, true); }

__device__ inline int64_t loadIndex(const uint8_t *p, bool wide, int64_t i) {
  return wide ? reinterpret_cast<const int64_t *>(p)[i]
              : reinterpret_cast<const int32_t *>(p)[i];
}

/// Whether `id` (a token id or a label) is in range for `parts` shards of
/// `rows` rows and `index` is a shard: what the shard ops check before
/// they shift `id` to the shard's rows.
__device__ inline bool validShardId(int64_t id, int64_t rows, int64_t parts,
                                    int64_t index) {
  return id >= 0 && id < parts * rows && index >= 0 && index < parts;
}

} // namespace braid::rt

#endif // BRAID_RUNTIME_LIB_CUDA_CUDADEVICE_CUH
