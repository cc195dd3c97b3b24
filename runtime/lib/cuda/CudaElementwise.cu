//===- CudaElementwise.cu - the cuda backend's elementwise kernels --------===//
//
// The elementwise ops (arithmetic, activations, braid.unary and braid.pow,
// their backward, braid.where) as grid-stride loops, with the semantics of
// the cpu kernels (CpuKernels.cpp): each element is computed in double and
// rounded to float. Shapes were checked when the plan was loaded.
//
//===----------------------------------------------------------------------===//

#include "CudaDevice.cuh"
#include "CudaKernels.h"

#include "braid-common/Philox.h"
#include "braid-runtime/Executor.h"

#include <cmath>
#include <string>

using namespace braid;
using namespace braid::rt;

namespace {

__device__ double geluOf(double x, bool tanhApprox) {
  if (tanhApprox) {
    const double c = 0.7978845608028654; // sqrt(2 / pi)
    return 0.5 * x * (1.0 + tanh(c * (x + 0.044715 * x * x * x)));
  }
  return 0.5 * x * (1.0 + erf(x * 0.7071067811865476));
}

__device__ double geluGrad(double x, bool tanhApprox) {
  if (tanhApprox) {
    const double c = 0.7978845608028654;
    double u = c * (x + 0.044715 * x * x * x);
    double t = tanh(u);
    return 0.5 * (1.0 + t) +
           0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x);
  }
  double cdf = 0.5 * (1.0 + erf(x * 0.7071067811865476));
  double pdf = exp(-0.5 * x * x) * 0.3989422804014327;
  return cdf + x * pdf;
}

__device__ double sigmoidOf(double x) { return 1.0 / (1.0 + exp(-x)); }

/// braid.unary's functions, by the ops::UnaryKind value.
__device__ double unaryOf(int kind, double x) {
  switch (kind) {
  case int(ops::UnaryKind::Exp):
    return exp(x);
  case int(ops::UnaryKind::Log):
    return log(x);
  case int(ops::UnaryKind::Sqrt):
    return sqrt(x);
  case int(ops::UnaryKind::Rsqrt):
    return rsqrt(x);
  case int(ops::UnaryKind::Tanh):
    return tanh(x);
  case int(ops::UnaryKind::Sigmoid):
    return sigmoidOf(x);
  default: // silu
    return x * sigmoidOf(x);
  }
}

/// grad * f'(saved): tanh's and sigmoid's output, silu's input.
__device__ double unaryGrad(int kind, double g, double s) {
  if (kind == int(ops::UnaryKind::Tanh))
    return g * (1.0 - s * s);
  if (kind == int(ops::UnaryKind::Sigmoid))
    return g * s * (1.0 - s);
  double sig = sigmoidOf(s);
  return g * sig * (1.0 + s * (1.0 - sig));
}

} // namespace

void braid::rt::launchElementwiseKernel(const Plan &plan, const Instr &instr,
                                        uint8_t *arena, cudaStream_t stream) {
  auto inBuf = [&](size_t i) -> const Buffer & {
    return plan.buffers[instr.operands[i]];
  };
  auto in = [&](size_t i) {
    return reinterpret_cast<const float *>(arena + inBuf(i).offset);
  };
  auto outBuf = [&](size_t i) -> const Buffer & {
    return plan.buffers[instr.results[i]];
  };
  auto out = [&](size_t i) {
    return reinterpret_cast<float *>(arena + outBuf(i).offset);
  };
  const Opcode op = instr.opcode;
  int64_t n = outBuf(0).numElements();
  switch (op) {
  case Opcode::Add:
  case Opcode::Sub:
  case Opcode::Mul:
  case Opcode::Div: {
    const float *a = in(0), *b = in(1);
    float *y = out(0);
    int kind = op == Opcode::Add   ? 0
               : op == Opcode::Sub ? 1
               : op == Opcode::Mul ? 2
                                   : 3;
    forEach(n, stream, [=] __device__(int64_t i) {
      y[i] = kind == 0   ? a[i] + b[i]
             : kind == 1 ? a[i] - b[i]
             : kind == 2 ? a[i] * b[i]
                         : a[i] / b[i];
    });
    return;
  }
  case Opcode::Scale:
  case Opcode::Cast:
  case Opcode::Relu:
  case Opcode::Gelu: {
    const float *x = in(0);
    float *y = out(0);
    float factor =
        op == Opcode::Scale ? float(instr.as<ops::ScaleAttrs>().factor) : 1.0f;
    bool approx =
        op == Opcode::Gelu && instr.as<ops::GeluAttrs>().approximate_tanh;
    int kind = op == Opcode::Relu ? 1 : op == Opcode::Gelu ? 2 : 0;
    // A gelu's folded bias (braid-fuse-kernels), along the last dimension.
    const float *bias =
        op == Opcode::Gelu && instr.operands.size() == 2 ? in(1) : nullptr;
    int64_t c = outBuf(0).shape.empty() ? 1 : outBuf(0).shape.back();
    forEach(n, stream, [=] __device__(int64_t i) {
      float v = bias ? x[i] + bias[i % c] : x[i];
      // relu as PyTorch's: NaN stays NaN (only x <= 0 is cut).
      y[i] = kind == 1   ? (v <= 0 ? 0.0f : v)
             : kind == 2 ? float(geluOf(v, approx))
                         : v * factor;
    });
    return;
  }
  case Opcode::ReluBackward:
  case Opcode::GeluBackward: {
    const float *g = in(0), *s = in(1);
    float *y = out(0);
    bool relu = op == Opcode::ReluBackward;
    bool approx = !relu && instr.as<ops::GeluBackwardAttrs>().approximate_tanh;
    const float *bias = !relu && instr.operands.size() == 3 ? in(2) : nullptr;
    int64_t c = outBuf(0).shape.empty() ? 1 : outBuf(0).shape.back();
    forEach(n, stream, [=] __device__(int64_t i) {
      float v = bias ? s[i] + bias[i % c] : s[i];
      y[i] = relu ? (v <= 0 ? 0.0f : g[i]) : float(g[i] * geluGrad(v, approx));
    });
    return;
  }
  case Opcode::BiasAdd: {
    const float *x = in(0), *b = in(1);
    float *y = out(0);
    int64_t c = inBuf(1).numElements();
    forEach(n, stream, [=] __device__(int64_t i) { y[i] = x[i] + b[i % c]; });
    return;
  }
  case Opcode::Unary: {
    const float *x = in(0);
    float *y = out(0);
    int kind = int(instr.as<ops::UnaryAttrs>().kind);
    forEach(n, stream,
            [=] __device__(int64_t i) { y[i] = float(unaryOf(kind, x[i])); });
    return;
  }
  case Opcode::UnaryBackward: {
    const float *g = in(0), *s = in(1);
    float *y = out(0);
    int kind = int(instr.as<ops::UnaryBackwardAttrs>().kind);
    forEach(n, stream, [=] __device__(int64_t i) {
      y[i] = float(unaryGrad(kind, g[i], s[i]));
    });
    return;
  }
  case Opcode::Pow: {
    const float *x = in(0);
    float *y = out(0);
    double e = instr.as<ops::PowAttrs>().exponent;
    forEach(n, stream, [=] __device__(int64_t i) {
      y[i] = e == 2.0 ? x[i] * x[i] : float(pow(double(x[i]), e));
    });
    return;
  }
  case Opcode::Where: {
    const uint8_t *c = arena + inBuf(0).offset;
    const float *a = in(1), *b = in(2);
    float *y = out(0);
    forEach(n, stream,
            [=] __device__(int64_t i) { y[i] = c[i] ? a[i] : b[i]; });
    return;
  }
  case Opcode::DropoutMask: {
    const auto &attrs = instr.as<ops::DropoutMaskAttrs>();
    const float *step = in(0);
    const int64_t *rank =
        reinterpret_cast<const int64_t *>(arena + inBuf(1).offset);
    uint8_t *mask = arena + plan.buffers[instr.results[0]].offset;
    uint32_t seed = uint32_t(attrs.seed), site = uint32_t(attrs.stream);
    double keep = attrs.keep;
    forEach(n, stream, [=] __device__(int64_t i) {
      mask[i] = dropoutKeeps(seed, uint32_t(*rank), uint32_t(*step), site,
                             uint64_t(i), keep);
    });
    return;
  }
  default:
    throw KernelError(instr.describe() + ": not an elementwise op");
  }
}
