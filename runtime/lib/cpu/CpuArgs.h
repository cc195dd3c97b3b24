//===- CpuArgs.h - one instruction's buffers, for the cpu kernels -*- C++
//-*-===//
//
// Shared by the kernel files of the cpu backend (CpuKernels.cpp, CpuNorm.cpp,
// CpuLosses.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_LIB_CPU_CPUARGS_H
#define BRAID_RUNTIME_LIB_CPU_CPUARGS_H

#include "braid-runtime/Executor.h"
#include "braid-runtime/Plan.h"

#include <optional>
#include <string>
#include <vector>

namespace braid::rt {

/// The buffers of one instruction in the arena, and where each float
/// operand and result is read and written in f32: in the arena, or in a
/// widened copy of a half buffer.
struct Args {
  const Plan &plan;
  const Instr &instr;
  uint8_t *arena;
  std::vector<const float *> inData;
  std::vector<float *> outData;

  const Buffer &inBuf(size_t i) const {
    return plan.buffers[instr.operands[i]];
  }
  const Buffer &outBuf(size_t i) const {
    return plan.buffers[instr.results[i]];
  }
  const float *in(size_t i) const { return inData[i]; }
  float *out(size_t i) const { return outData[i]; }
  int64_t n(size_t i = 0) const { return outBuf(i).numElements(); }
  /// Index `k` of index operand `i`, checked against `limit`.
  int64_t index(size_t i, int64_t k, int64_t limit, const char *what) const {
    const Buffer &b = inBuf(i);
    int64_t v = b.dtype == DType::I64
                    ? reinterpret_cast<const int64_t *>(arena + b.offset)[k]
                    : reinterpret_cast<const int32_t *>(arena + b.offset)[k];
    if (v < 0 || v >= limit)
      throw KernelError(instr.describe() + ": " + what + " " +
                        std::to_string(v) + " at position " +
                        std::to_string(k) + " is out of range [0, " +
                        std::to_string(limit) + ")");
    return v;
  }
  /// A shard op's rank index (operand `i`, a tensor<i64>), checked against
  /// `parts`.
  int64_t rankIndex(size_t i, int64_t parts) const {
    int64_t index =
        reinterpret_cast<const int64_t *>(arena + inBuf(i).offset)[0];
    if (index < 0 || index >= parts)
      throw KernelError(instr.describe() + ": rank index " +
                        std::to_string(index) + " is out of range [0, " +
                        std::to_string(parts) + ")");
    return index;
  }
  /// Whether label `k` of operand `i` is the loss's `ignore_index`.
  bool ignored(size_t i, int64_t k, std::optional<int64_t> ignore) const {
    if (!ignore)
      return false;
    const Buffer &b = inBuf(i);
    int64_t v = b.dtype == DType::I64
                    ? reinterpret_cast<const int64_t *>(arena + b.offset)[k]
                    : reinterpret_cast<const int32_t *>(arena + b.offset)[k];
    return v == *ignore;
  }
};

/// Softmax, log-softmax, layer norm and their backward (CpuNorm.cpp).
void runCpuNormKernel(const Args &a);

/// The losses, their backward and the vocabulary-parallel cross-entropy's
/// three parts (CpuLosses.cpp).
void runCpuLossKernel(const Args &a);

} // namespace braid::rt

#endif // BRAID_RUNTIME_LIB_CPU_CPUARGS_H
