//===- CpuMath.h - the cpu kernels' elementwise functions -------*- C++ -*-===//
//
// The derivatives of braid.unary's functions, in double: the cpu kernels
// round each result to float once (CpuKernels.cpp). The functions
// themselves and the activations run on whole rows in f32
// (CpuVectorMath.h); the cuda kernels have their device twins
// (CudaElementwise.cu).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_LIB_CPU_CPUMATH_H
#define BRAID_RUNTIME_LIB_CPU_CPUMATH_H

#include "braid-runtime/Plan.h"

#include <cmath>

namespace braid::rt {

inline double sigmoidOf(double x) { return 1.0 / (1.0 + std::exp(-x)); }

/// grad * f'(saved): saved is tanh's and sigmoid's output, silu's input.
/// Every kind is a case (no default): a new one must say here what its
/// derivative is, or that it has none.
inline double unaryGrad(ops::UnaryKind kind, double g, double s) {
  switch (kind) {
  case ops::UnaryKind::Tanh:
    return g * (1.0 - s * s);
  case ops::UnaryKind::Sigmoid:
    return g * s * (1.0 - s);
  case ops::UnaryKind::Silu: {
    double sig = sigmoidOf(s);
    return g * sig * (1.0 + s * (1.0 - sig));
  }
  case ops::UnaryKind::Exp:
  case ops::UnaryKind::Log:
  case ops::UnaryKind::Sqrt:
  case ops::UnaryKind::Rsqrt:
    // No backward (ops::hasBackward): the plan loader refuses these.
    break;
  }
  return std::nan("");
}

} // namespace braid::rt

#endif // BRAID_RUNTIME_LIB_CPU_CPUMATH_H
