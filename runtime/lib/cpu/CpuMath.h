//===- CpuMath.h - the cpu kernels' elementwise functions -------*- C++ -*-===//
//
// The functions of the activations and of braid.unary, and their
// derivatives, in double: the cpu kernels round each result to float once
// (CpuKernels.cpp), the cuda kernels have their device twins
// (CudaElementwise.cu).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_LIB_CPU_CPUMATH_H
#define BRAID_RUNTIME_LIB_CPU_CPUMATH_H

#include "braid-runtime/Plan.h"

#include <cmath>

namespace braid::rt {

inline double geluOf(double x, bool tanhApprox) {
  if (tanhApprox) {
    const double c = std::sqrt(2.0 / M_PI);
    return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
  }
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

inline double geluGrad(double x, bool tanhApprox) {
  if (tanhApprox) {
    const double c = std::sqrt(2.0 / M_PI);
    double u = c * (x + 0.044715 * x * x * x);
    double t = std::tanh(u);
    double du = c * (1.0 + 3.0 * 0.044715 * x * x);
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du;
  }
  double cdf = 0.5 * (1.0 + std::erf(x / std::sqrt(2.0)));
  double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
  return cdf + x * pdf;
}

inline double sigmoidOf(double x) { return 1.0 / (1.0 + std::exp(-x)); }

inline double unaryOf(ops::UnaryKind kind, double x) {
  switch (kind) {
  case ops::UnaryKind::Exp:
    return std::exp(x);
  case ops::UnaryKind::Log:
    return std::log(x);
  case ops::UnaryKind::Sqrt:
    return std::sqrt(x);
  case ops::UnaryKind::Rsqrt:
    return 1.0 / std::sqrt(x);
  case ops::UnaryKind::Tanh:
    return std::tanh(x);
  case ops::UnaryKind::Sigmoid:
    return sigmoidOf(x);
  case ops::UnaryKind::Silu:
    return x * sigmoidOf(x);
  }
  return x;
}

/// grad * f'(saved): saved is tanh's and sigmoid's output, silu's input
/// (OpChecks refuses the other kinds).
inline double unaryGrad(ops::UnaryKind kind, double g, double s) {
  switch (kind) {
  case ops::UnaryKind::Tanh:
    return g * (1.0 - s * s);
  case ops::UnaryKind::Sigmoid:
    return g * s * (1.0 - s);
  default: {
    double sig = sigmoidOf(s);
    return g * sig * (1.0 + s * (1.0 - sig));
  }
  }
}

} // namespace braid::rt

#endif // BRAID_RUNTIME_LIB_CPU_CPUMATH_H
