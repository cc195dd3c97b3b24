//===- CudaKernels.h - the cuda backend's kernels ---------------*- C++ -*-===//

#ifndef BRAID_RUNTIME_LIB_CUDA_CUDAKERNELS_H
#define BRAID_RUNTIME_LIB_CUDA_CUDAKERNELS_H

#include "braid-runtime/Plan.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace braid::rt {

/// Enqueues kernel instruction `instr` on `stream`. A label or token id out
/// of range sets `*errorFlag` (device memory) instead of reading outside a
/// buffer; the backend checks the flag after the step.
void launchCudaKernel(const Plan &plan, const Instr &instr, uint8_t *arena,
                      cudaStream_t stream, cublasHandle_t blas, int *errorFlag);

/// The elementwise ops of launchCudaKernel (CudaElementwise.cu).
void launchElementwiseKernel(const Plan &plan, const Instr &instr,
                             uint8_t *arena, cudaStream_t stream);

/// The row-wise ops and reductions, as one block of threads per row with
/// FP32 arithmetic (CudaReductions.cu).
void launchReductionKernel(const Plan &plan, const Instr &instr, uint8_t *arena,
                           cudaStream_t stream, int *errorFlag);

/// braid.attention and its backward (CudaAttention.cu).
void launchAttentionKernel(const Plan &plan, const Instr &instr, uint8_t *arena,
                           cudaStream_t stream);

} // namespace braid::rt

#endif // BRAID_RUNTIME_LIB_CUDA_CUDAKERNELS_H
