//===- HalfFloat.h - bf16 and f16 to and from f32 on the host ---*- C++ -*-===//
//
// The cpu backend stores bf16 and f16 tensors as they are and computes in
// f32: a kernel's half operands are widened to f32 (exactly), it computes and
// accumulates in f32, and its half results are rounded to the nearest even
// value, as PyTorch's cpu kernels for bf16 do. braid-run's files hold half
// tensors widened to f32. The conversions are Eigen's.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_HALFFLOAT_H
#define BRAID_RUNTIME_HALFFLOAT_H

#include "braid-common/DType.h"

#include <cstdint>

namespace braid::rt {

/// Whether `dtype` is bf16 or f16, the types the cpu backend widens.
inline bool isHalf(DType dtype) {
  return dtype == DType::BF16 || dtype == DType::F16;
}

/// `n` half values of type `dtype` at `src`, widened into `dst`.
void widenHalf(DType dtype, const void *src, float *dst, int64_t n);

/// `n` f32 values at `src`, rounded to the nearest even `dtype` value into
/// `dst`.
void narrowHalf(DType dtype, const float *src, void *dst, int64_t n);

/// Rounds `n` f32 values at `x` in place to the nearest even `dtype` value
/// (a no-op for a type that is not half): what storing a half tensor and
/// reading it back gives, for the values a fused kernel keeps in f32
/// between the ops it stands for.
void roundToHalf(DType dtype, float *x, int64_t n);

} // namespace braid::rt

#endif // BRAID_RUNTIME_HALFFLOAT_H
