//===- CpuVectorMath.h - the cpu kernels' vectorized functions --*- C++ -*-===//
//
// The transcendental loops of the cpu kernels (the activations, softmax's
// exponentials, braid.unary) on whole rows of f32, through SLEEF's vector
// functions (1 ULP, NaN and infinity as libm), and the optimizer updates
// (AdamW, SGD) vectorized by the compiler: 16 lanes on a CPU with
// AVX-512, 8 with AVX2 and FMA, else libm's float functions one element at
// a time. The CPU is asked once (vectorMath()); the three implementations
// are one template (CpuVectorMathImpl.h) over the width.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_LIB_CPU_CPUVECTORMATH_H
#define BRAID_RUNTIME_LIB_CPU_CPUVECTORMATH_H

#include "braid-common/OpTable.h"

#include <cstdint>

namespace braid::rt {

/// One AdamW step's scalars: p' = p (1 - lr wd) - lr (m' / c1) /
/// (sqrt(v' / c2) + eps), where m' = b1 m + (1 - b1) g,
/// v' = b2 v + (1 - b2) g^2, g = scale x gradient, c1 = 1 - b1^step and
/// c2 = 1 - b2^step; computed in double and rounded once.
struct AdamWStep {
  double lr, wd, scale, b1, b2, c1, c2, eps;
};

/// One SGD step's scalars (PyTorch's SGD): g = scale x gradient + wd p,
/// b' = momentum b + (1 - dampening) g, p' = p - lr (nesterov ?
/// g + momentum b' : b'); computed in double and rounded once.
struct SgdStep {
  double lr, wd, scale, momentum, dampening;
  bool nesterov;
};

struct VectorMath {
  /// The width's name: "avx512", "avx2" or "scalar".
  const char *name;
  /// y = gelu(x), exact (erf) or tanh-approximated.
  void (*gelu)(const float *x, float *y, int64_t n, bool tanhApprox);
  /// y = g * gelu'(x).
  void (*geluBackward)(const float *g, const float *x, float *y, int64_t n,
                       bool tanhApprox);
  /// y[k] = exp(x[k * stride] - shift) for k < n (y contiguous); returns
  /// the sum of the y (f32 lanes, added in double at the end).
  double (*expShifted)(const float *x, int64_t stride, float shift, float *y,
                       int64_t n);
  /// y = f(x) for braid.unary's functions.
  void (*unary)(ops::UnaryKind kind, const float *x, float *y, int64_t n);
  /// One AdamW step of n elements: parameters, gradients and both moments
  /// in, the updated three out (an output may be its input).
  void (*adamw)(const float *p, const float *g, const float *m, const float *v,
                float *np, float *nm, float *nv, int64_t n, const AdamWStep &s);
  /// One SGD step of n elements: parameters, gradients and the momentum
  /// buffer in, the updated two out (an output may be its input).
  void (*sgd)(const float *p, const float *g, const float *buf, float *np,
              float *nbuf, int64_t n, const SgdStep &s);
};

/// The widest implementation this CPU runs.
const VectorMath &vectorMath();

/// Each width's implementation (null where the build or the CPU has none).
const VectorMath *avx512Math();
const VectorMath *avx2Math();
const VectorMath &scalarMath();

} // namespace braid::rt

#endif // BRAID_RUNTIME_LIB_CPU_CPUVECTORMATH_H
