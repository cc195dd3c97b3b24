//===- CudaDevice.cuh - helpers of the cuda kernels -------------*- CUDA
//-*-===//
//
// The grid-stride loop that every cuda kernel is written with, and the
// device functions that more than one kernel file uses.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_LIB_CUDA_CUDADEVICE_CUH
#define BRAID_RUNTIME_LIB_CUDA_CUDADEVICE_CUH

#include <cuda_runtime.h>

#include <cstdint>

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

} // namespace braid::rt

#endif // BRAID_RUNTIME_LIB_CUDA_CUDADEVICE_CUH
