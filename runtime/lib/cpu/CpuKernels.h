//===- CpuKernels.h - the cpu backend's kernels -----------------*- C++ -*-===//

#ifndef BRAID_RUNTIME_LIB_CPU_CPUKERNELS_H
#define BRAID_RUNTIME_LIB_CPU_CPUKERNELS_H

#include "braid-runtime/Executor.h"
#include "braid-runtime/Plan.h"

#include <vector>

namespace braid::rt {

/// Whether the cpu backend has a kernel for compute op `op`.
/// Runs kernel instruction `instr` on the arena. Throws KernelError on bad
/// data (a label or token id out of range).
void runCpuKernel(const Plan &plan, const Instr &instr, uint8_t *arena);

/// The f32 kernel of `instr`, reading float operand i at inData[i] and
/// writing float result i at outData[i] (the arena, or widened copies of
/// half buffers: CpuWidening.cpp). Index operands are read in the arena.
void runF32Kernel(const Plan &plan, const Instr &instr, uint8_t *arena,
                  std::vector<const float *> inData,
                  std::vector<float *> outData);

/// braid.attention and braid.attention_backward on f32 data
/// (CpuAttention.cpp).
void runCpuAttention(const Plan &plan, const Instr &instr,
                     const std::vector<const float *> &in,
                     const std::vector<float *> &out);

/// braid.where and braid.dropout_mask (CpuMasks.cpp); the i1 masks are
/// read and written in the arena, the float operands at in/out.
void runCpuMaskKernel(const Plan &plan, const Instr &instr, uint8_t *arena,
                      const std::vector<const float *> &in,
                      const std::vector<float *> &out);

} // namespace braid::rt

#endif // BRAID_RUNTIME_LIB_CPU_CPUKERNELS_H
