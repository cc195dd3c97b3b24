//===- CudaElementwise.cu - the cuda backend's elementwise kernels --------===//
//
// The elementwise ops (arithmetic, activations, braid.unary and braid.pow,
// their backward, braid.where) as grid-stride loops, with the semantics of
// the cpu kernels (CpuKernels.cpp). GELU and its backward, the
// activation of every GPT's MLP, compute in float (as PyTorch's CUDA
// kernels and the cpu backend's vector math do), as named functors whose
// PTX cuda-ptx.py checks for FP64; the rarer ops compute each element in
// double and round it to float. Shapes were checked when the plan was
// loaded.
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

// sqrt(2 / pi), 0.044715, 1 / sqrt(2), 1 / sqrt(2 pi): GELU's constants.
constexpr float kGeluC = 0.7978845608028654f, kGeluA = 0.044715f,
                kRsqrt2 = 0.7071067811865476f, kRsqrt2Pi = 0.3989422804014327f;

__device__ float geluOf(float x, bool tanhApprox) {
  if (tanhApprox)
    return 0.5f * x * (1.0f + tanhf(kGeluC * (x + kGeluA * x * x * x)));
  return 0.5f * x * (1.0f + erff(x * kRsqrt2));
}

__device__ float geluGrad(float x, bool tanhApprox) {
  if (tanhApprox) {
    float t = tanhf(kGeluC * (x + kGeluA * x * x * x));
    return 0.5f * (1.0f + t) +
           0.5f * x * (1.0f - t * t) * kGeluC * (1.0f + 3.0f * kGeluA * x * x);
  }
  float cdf = 0.5f * (1.0f + erff(x * kRsqrt2));
  return cdf + x * expf(-0.5f * x * x) * kRsqrt2Pi;
}

/// y = gelu(x + bias) (the bias along the last dimension, `c` wide, where
/// braid-fuse-kernels folded one in).
struct GeluForward {
  const float *x, *bias;
  float *y;
  int64_t c;
  bool approx;
  __device__ void operator()(int64_t i) const {
    y[i] = geluOf(bias ? x[i] + bias[i % c] : x[i], approx);
  }
};

/// y = g * gelu'(s + bias).
struct GeluBackward {
  const float *g, *s, *bias;
  float *y;
  int64_t c;
  bool approx;
  __device__ void operator()(int64_t i) const {
    y[i] = g[i] * geluGrad(bias ? s[i] + bias[i % c] : s[i], approx);
  }
};

__device__ double sigmoidOf(double x) { return 1.0 / (1.0 + exp(-x)); }

/// braid.unary's functions. Every kind is a case (no default, compiled
/// with -Werror=switch): a new kind must say here what it computes.
__device__ double unaryOf(ops::UnaryKind kind, double x) {
  switch (kind) {
  case ops::UnaryKind::Exp:
    return exp(x);
  case ops::UnaryKind::Log:
    return log(x);
  case ops::UnaryKind::Sqrt:
    return sqrt(x);
  case ops::UnaryKind::Rsqrt:
    return rsqrt(x);
  case ops::UnaryKind::Tanh:
    return tanh(x);
  case ops::UnaryKind::Sigmoid:
    return sigmoidOf(x);
  case ops::UnaryKind::Silu:
    return x * sigmoidOf(x);
  }
  // The loader checks the enum's range: not reachable.
  return nan("");
}

/// grad * f'(saved): tanh's and sigmoid's output, silu's input; every kind
/// a case, as unaryOf's.
__device__ double unaryGrad(ops::UnaryKind kind, double g, double s) {
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
  return nan("");
}

} // namespace

void braid::rt::launchElementwiseKernel(const Plan &plan, const Instr &instr,
                                        uint8_t *arena, cudaStream_t stream) {
  const CudaArgs args{plan, instr, arena};
  const Opcode op = instr.opcode;
  int64_t n = args.outBuf(0).numElements();
  switch (op) {
  case Opcode::Add:
  case Opcode::Sub:
  case Opcode::Mul:
  case Opcode::Div: {
    const float *a = args.in(0), *b = args.in(1);
    float *y = args.out(0);
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
  case Opcode::Gelu: {
    const float *bias = instr.operands.size() == 2 ? args.in(1) : nullptr;
    int64_t c = args.outBuf(0).shape.empty() ? 1 : args.outBuf(0).shape.back();
    forEach(n, stream,
            GeluForward{args.in(0), bias, args.out(0), c,
                        instr.as<ops::GeluAttrs>().approximate_tanh});
    return;
  }
  case Opcode::GeluBackward: {
    const float *bias = instr.operands.size() == 3 ? args.in(2) : nullptr;
    int64_t c = args.outBuf(0).shape.empty() ? 1 : args.outBuf(0).shape.back();
    forEach(n, stream,
            GeluBackward{args.in(0), args.in(1), bias, args.out(0), c,
                         instr.as<ops::GeluBackwardAttrs>().approximate_tanh});
    return;
  }
  case Opcode::Scale:
  case Opcode::Cast:
  case Opcode::Relu: {
    const float *x = args.in(0);
    float *y = args.out(0);
    float factor =
        op == Opcode::Scale ? float(instr.as<ops::ScaleAttrs>().factor) : 1.0f;
    bool relu = op == Opcode::Relu;
    forEach(n, stream, [=] __device__(int64_t i) {
      float v = x[i];
      // relu as PyTorch's: NaN stays NaN (only x <= 0 is cut).
      y[i] = relu ? (v <= 0 ? 0.0f : v) : v * factor;
    });
    return;
  }
  case Opcode::ReluBackward: {
    const float *g = args.in(0), *s = args.in(1);
    float *y = args.out(0);
    forEach(n, stream,
            [=] __device__(int64_t i) { y[i] = s[i] <= 0 ? 0.0f : g[i]; });
    return;
  }
  case Opcode::BiasAdd: {
    const float *x = args.in(0), *b = args.in(1);
    float *y = args.out(0);
    int64_t c = args.inBuf(1).numElements();
    forEach(n, stream, [=] __device__(int64_t i) { y[i] = x[i] + b[i % c]; });
    return;
  }
  case Opcode::Unary: {
    const float *x = args.in(0);
    float *y = args.out(0);
    ops::UnaryKind kind = instr.as<ops::UnaryAttrs>().kind;
    forEach(n, stream,
            [=] __device__(int64_t i) { y[i] = float(unaryOf(kind, x[i])); });
    return;
  }
  case Opcode::UnaryBackward: {
    const float *g = args.in(0), *s = args.in(1);
    float *y = args.out(0);
    ops::UnaryKind kind = instr.as<ops::UnaryBackwardAttrs>().kind;
    forEach(n, stream, [=] __device__(int64_t i) {
      y[i] = float(unaryGrad(kind, g[i], s[i]));
    });
    return;
  }
  case Opcode::Pow: {
    const float *x = args.in(0);
    float *y = args.out(0);
    double e = instr.as<ops::PowAttrs>().exponent;
    forEach(n, stream, [=] __device__(int64_t i) {
      y[i] = e == 2.0 ? x[i] * x[i] : float(pow(double(x[i]), e));
    });
    return;
  }
  case Opcode::Where: {
    const uint8_t *c = arena + args.inBuf(0).offset;
    const float *a = args.in(1), *b = args.in(2);
    float *y = args.out(0);
    forEach(n, stream,
            [=] __device__(int64_t i) { y[i] = c[i] ? a[i] : b[i]; });
    return;
  }
  case Opcode::DropoutMask: {
    const auto &attrs = instr.as<ops::DropoutMaskAttrs>();
    const float *step = args.in(0);
    const int64_t *rank =
        reinterpret_cast<const int64_t *>(arena + args.inBuf(1).offset);
    uint8_t *mask = arena + plan.buffers[instr.results[0]].offset;
    uint32_t seed = uint32_t(attrs.seed), site = uint32_t(attrs.stream);
    double keep = attrs.keep;
    forEach(n, stream, [=] __device__(int64_t i) {
      mask[i] = dropoutKeeps(seed, uint32_t(*rank), uint32_t(*step), site,
                             uint64_t(i), keep);
    });
    return;
  }
    // The cuda_elementwise table's ops (the ODS's kernelTables) are the
    // cases above; a new one does not compile until it has its case.
    BRAID_CASE_NOT_CUDA_ELEMENTWISE_OPCODES
    break;
  }
  throw KernelError(instr.describe() + ": not an elementwise op");
}
