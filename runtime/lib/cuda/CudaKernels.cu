//===- CudaKernels.cu - the cuda backend's kernel for every op ------------===//
//
// Every op of the dialect as a grid-stride loop over its outputs (rows for
// the row-wise ops), matmul through cuBLAS. The same semantics as the cpu
// kernels (CpuKernels.cpp); shapes were checked when the plan was loaded.
//
//===----------------------------------------------------------------------===//

#include "../Views.h"
#include "CudaDevice.cuh"
#include "CudaKernels.h"

#include "braid-runtime/Executor.h"

#include <cmath>
#include <optional>
#include <string>
#include <utility>

using namespace braid;
using namespace braid::rt;

namespace {

/// out[o] = in[base + sum(coord(o)[k] * strides[k])], for any element size.
template <typename T>
void gatherElements(const uint8_t *src, uint8_t *dst, Dims shape, Dims strides,
                    int64_t base, int64_t n, cudaStream_t stream) {
  const T *in = reinterpret_cast<const T *>(src);
  T *out = reinterpret_cast<T *>(dst);
  forEach(n, stream, [=] __device__(int64_t o) {
    int64_t rest = o, at = base;
    for (int k = shape.rank - 1; k >= 0; --k) {
      at += (rest % shape.d[k]) * strides.d[k];
      rest /= shape.d[k];
    }
    out[o] = in[at];
  });
}

void gather(const Buffer &x, const Buffer &y, uint8_t *arena,
            const std::vector<int64_t> &strides, int64_t base,
            const Instr &instr, cudaStream_t stream) {
  Dims shape = toDims(y.shape, instr), st = toDims(strides, instr);
  const uint8_t *src = arena + x.offset;
  uint8_t *dst = arena + y.offset;
  int64_t n = y.numElements();
  switch (dtypeBytes(x.dtype)) {
  case 1:
    return gatherElements<uint8_t>(src, dst, shape, st, base, n, stream);
  case 2:
    return gatherElements<uint16_t>(src, dst, shape, st, base, n, stream);
  case 4:
    return gatherElements<uint32_t>(src, dst, shape, st, base, n, stream);
  default:
    return gatherElements<uint64_t>(src, dst, shape, st, base, n, stream);
  }
}

void check(cudaError_t error, const Instr &instr) {
  if (error != cudaSuccess)
    throw KernelError(instr.describe() + ": " + cudaGetErrorString(error));
}

/// An update's scalars: its learning rate (a constant, or a scheduled one in
/// device memory) and its gradient scale (gradient clipping's factor in
/// device memory, or none), read by the kernel.
struct UpdateScalars {
  double lrConstant = 0;
  const float *lrPtr = nullptr, *scalePtr = nullptr;
  __device__ double lr() const { return lrPtr ? double(lrPtr[0]) : lrConstant; }
  __device__ double scale() const {
    return scalePtr ? double(scalePtr[0]) : 1.0;
  }
};

} // namespace

void braid::rt::launchCudaKernel(const Plan &plan, const Instr &instr,
                                 uint8_t *arena, cudaStream_t stream,
                                 cublasHandle_t blas, int *errorFlag) {
  const CudaArgs args{plan, instr, arena};
  const Opcode op = instr.opcode;
  int64_t n = instr.results.empty() ? 0 : args.outBuf(0).numElements();
  // An update's operands after its `fixed` ones: the scheduled learning
  // rate where it has no lr attribute, then the gradient scale if any.
  auto updateScalars = [&](std::optional<double> lr, size_t fixed) {
    UpdateScalars s;
    size_t next = fixed;
    s.lrConstant = lr.value_or(0.0);
    s.lrPtr = lr ? nullptr : args.in(next++);
    s.scalePtr = instr.operands.size() > next ? args.in(next) : nullptr;
    return s;
  };

  switch (op) {
  case Opcode::Matmul: {
    MatmulGeometry g = getMatmulGeometry(plan, instr);
    if (g.m == 0 || g.n == 0 || g.batch == 0)
      return;
    if (g.k == 0) {
      for (int64_t i = 0; i < g.batch; ++i)
        check(cudaMemset2DAsync(
                  args.out(0) + g.outOffset[i], size_t(g.ldc) * sizeof(float),
                  0, size_t(g.n) * sizeof(float), size_t(g.m), stream),
              instr);
      return;
    }
    // Row-major C = A B is column-major C^T = B^T A^T. One strided-batched
    // call where every batch's matrices lie a fixed stride apart (always,
    // unless a permutation mixes the batch dimensions' strides), else a
    // call per batch.
    auto stride = [](const std::vector<int64_t> &offsets) -> int64_t {
      int64_t s = offsets.size() > 1 ? offsets[1] - offsets[0] : 0;
      for (size_t i = 1; i < offsets.size(); ++i)
        if (offsets[i] - offsets[i - 1] != s)
          return -1;
      return s;
    };
    int64_t sa = stride(g.leftOffset), sb = stride(g.rightOffset),
            sc = stride(g.outOffset);
    bool uniform = sa >= 0 && sb >= 0 && sc >= 0;
    const float *left = args.in(g.left), *right = args.in(1 - g.left);
    float one = 1.0f, zero = 0.0f;
    for (int64_t i = 0; i < (uniform ? 1 : g.batch); ++i) {
      cublasStatus_t status = cublasSgemmStridedBatched(
          blas, g.transRight ? CUBLAS_OP_T : CUBLAS_OP_N,
          g.transLeft ? CUBLAS_OP_T : CUBLAS_OP_N, int(g.n), int(g.m), int(g.k),
          &one, right + g.rightOffset[i], int(g.ldRight), uniform ? sb : 0,
          left + g.leftOffset[i], int(g.ldLeft), uniform ? sa : 0, &zero,
          args.out(0) + g.outOffset[i], int(g.ldc), uniform ? sc : 0,
          uniform ? int(g.batch) : 1);
      if (status != CUBLAS_STATUS_SUCCESS)
        throw KernelError(instr.describe() + ": cuBLAS failed (status " +
                          std::to_string(int(status)) + ")");
    }
    return;
  }
    BRAID_CASE_CUDA_ELEMENTWISE_OPCODES
    return launchElementwiseKernel(plan, instr, arena, stream);
  case Opcode::Attention:
  case Opcode::AttentionBackward:
    return launchAttentionKernel(plan, instr, arena, stream);
    BRAID_CASE_CUDA_REDUCTION_OPCODES
    return launchReductionKernel(plan, instr, arena, stream, errorFlag);
  case Opcode::CausalMask: {
    int64_t s = args.inBuf(0).shape.back();
    float fill = float(instr.as<ops::CausalMaskAttrs>().fill);
    const float *x = args.in(0);
    float *y = args.out(0);
    forEach(n, stream, [=] __device__(int64_t i) {
      int64_t col = i % s, row = (i / s) % s;
      y[i] = col > row ? fill : x[i];
    });
    return;
  }
  case Opcode::ShardSlice: {
    const auto &attrs = instr.as<ops::ShardSliceAttrs>();
    ShardRows cut = getShardRows(args.inBuf(0), attrs.dim, attrs.parts);
    if (!cut.piece)
      return;
    uint64_t piece = cut.piece, pitch = cut.pitch;
    int64_t parts = attrs.parts, shift = attrs.shift;
    const uint8_t *src = arena + args.inBuf(0).offset;
    const int64_t *index = args.rankIndex(1);
    uint8_t *dst = arena + args.outBuf(0).offset;
    int *flag = errorFlag;
    // A byte a thread: any element type.
    forEach(int64_t(args.outBuf(0).bytes), stream, [=] __device__(int64_t i) {
      if (*index < 0 || *index >= parts) {
        atomicExch(flag, 1);
        return;
      }
      uint64_t block = uint64_t(((*index + shift) % parts + parts) % parts);
      uint64_t r = uint64_t(i) / piece, k = uint64_t(i) % piece;
      dst[i] = src[r * pitch + block * piece + k];
    });
    return;
  }
  case Opcode::ShardConcat: {
    // Piece k into block (index + shifts[k]) mod n: one kernel a piece, a
    // byte a thread, the block read from the device's rank index.
    const auto &attrs = instr.as<ops::ShardConcatAttrs>();
    int64_t n = int64_t(instr.operands.size()) - 1;
    ShardRows cut = getShardRows(args.outBuf(0), attrs.dim, n);
    if (!cut.piece)
      return;
    uint64_t piece = cut.piece, pitch = cut.pitch;
    const int64_t *index = args.rankIndex(size_t(n));
    uint8_t *dst = arena + args.outBuf(0).offset;
    int *flag = errorFlag;
    for (int64_t k = 0; k < n; ++k) {
      const uint8_t *src = arena + args.inBuf(size_t(k)).offset;
      int64_t shift = attrs.shifts[size_t(k)];
      forEach(int64_t(cut.rows * piece), stream, [=] __device__(int64_t i) {
        if (*index < 0 || *index >= n) {
          atomicExch(flag, 1);
          return;
        }
        uint64_t block = uint64_t(((*index + shift) % n + n) % n);
        uint64_t r = uint64_t(i) / piece, b = uint64_t(i) % piece;
        dst[r * pitch + block * piece + b] = src[i];
      });
    }
    return;
  }
  case Opcode::EmbeddingShard: {
    int64_t vocab = args.inBuf(0).shape[0], dim = args.inBuf(0).shape[1];
    int64_t parts = instr.as<ops::EmbeddingShardAttrs>().parts;
    const float *table = args.in(0);
    const uint8_t *ids = arena + args.inBuf(1).offset;
    bool wide = args.inBuf(1).dtype == DType::I64;
    const int64_t *index = args.rankIndex(2);
    float *y = args.out(0);
    int *flag = errorFlag;
    forEach(n, stream, [=] __device__(int64_t i) {
      int64_t id = loadIndex(ids, wide, i / dim);
      if (!validShardId(id, vocab, parts, *index)) {
        atomicExch(flag, 1);
        y[i] = 0;
        return;
      }
      id -= *index * vocab;
      y[i] = id >= 0 && id < vocab ? table[id * dim + i % dim] : 0.0f;
    });
    return;
  }
  case Opcode::Embedding: {
    int64_t vocab = args.inBuf(0).shape[0], dim = args.inBuf(0).shape[1];
    const float *table = args.in(0);
    const uint8_t *ids = arena + args.inBuf(1).offset;
    bool wide = args.inBuf(1).dtype == DType::I64;
    float *y = args.out(0);
    int *flag = errorFlag;
    forEach(n, stream, [=] __device__(int64_t i) {
      int64_t id = loadIndex(ids, wide, i / dim);
      if (id < 0 || id >= vocab) {
        atomicExch(flag, 1);
        y[i] = 0;
        return;
      }
      y[i] = table[id * dim + i % dim];
    });
    return;
  }
  case Opcode::Reshape: {
    // Nothing to move where the memory plan gave the result its operand's
    // bytes (a view: Braid_View).
    if (args.outBuf(0).offset != args.inBuf(0).offset)
      check(cudaMemcpyAsync(arena + args.outBuf(0).offset,
                            arena + args.inBuf(0).offset, args.outBuf(0).bytes,
                            cudaMemcpyDeviceToDevice, stream),
            instr);
    return;
  }
  case Opcode::Transpose:
  case Opcode::Broadcast:
  case Opcode::Slice: {
    StridedView view = getStridedView(plan, instr);
    return gather(args.inBuf(0), args.outBuf(0), arena, view.strides, view.base,
                  instr, stream);
  }
  case Opcode::Concat: {
    const Buffer &y = args.outBuf(0);
    int64_t dim = instr.as<ops::ConcatAttrs>().dim;
    unsigned size = dtypeBytes(y.dtype);
    int64_t outer = product(y.shape, 0, dim);
    int64_t inner = product(y.shape, dim + 1, y.shape.size()) * size;
    int64_t outRow = y.shape[dim] * inner, at = 0;
    for (size_t i = 0; i < instr.operands.size(); ++i) {
      int64_t row = args.inBuf(i).shape[dim] * inner;
      if (row && outer)
        check(cudaMemcpy2DAsync(arena + y.offset + at, outRow,
                                arena + args.inBuf(i).offset, row, row, outer,
                                cudaMemcpyDeviceToDevice, stream),
              instr);
      at += row;
    }
    return;
  }
  case Opcode::Constant: {
    const auto &data = instr.as<ops::ConstantAttrs>().value;
    check(cudaMemcpyAsync(arena + args.outBuf(0).offset, data.data(),
                          data.size(), cudaMemcpyHostToDevice, stream),
          instr);
    return;
  }
  case Opcode::Fill: {
    float v = float(instr.as<ops::FillAttrs>().value);
    float *y = args.out(0);
    forEach(n, stream, [=] __device__(int64_t i) { y[i] = v; });
    return;
  }
  case Opcode::ClipCoefficient: {
    double maxNorm = instr.as<ops::ClipCoefficientAttrs>().max_norm;
    const float *s = args.in(0);
    float *y = args.out(0);
    forEach(1, stream, [=] __device__(int64_t) {
      double c = maxNorm / (sqrt(double(s[0])) + 1e-6);
      y[0] = float(isnan(c) ? c : fmin(c, 1.0));
    });
    return;
  }
  case Opcode::Sgd: {
    const auto &attrs = instr.as<ops::SgdAttrs>();
    UpdateScalars scalars = updateScalars(attrs.lr, 3);
    double mom = attrs.momentum, wd = attrs.weight_decay;
    double damp = attrs.dampening;
    bool nesterov = attrs.nesterov;
    const float *p = args.in(0), *g = args.in(1), *buf = args.in(2);
    float *np = args.out(0), *nbuf = args.out(1);
    forEach(n, stream, [=] __device__(int64_t i) {
      double lr = scalars.lr();
      double gi = scalars.scale() * g[i] + wd * p[i];
      double b = mom * buf[i] + (1.0 - damp) * gi;
      double step = nesterov ? gi + mom * b : b;
      nbuf[i] = float(b);
      np[i] = float(p[i] - lr * step);
    });
    return;
  }
  case Opcode::AdamW: {
    const auto &attrs = instr.as<ops::AdamWAttrs>();
    UpdateScalars scalars = updateScalars(attrs.lr, 5);
    double b1 = attrs.beta1, b2 = attrs.beta2, eps = attrs.eps;
    double wd = attrs.weight_decay;
    const float *p = args.in(0), *g = args.in(1), *m = args.in(2),
                *v = args.in(3), *stepPtr = args.in(4);
    float *np = args.out(0), *nm = args.out(1), *nv = args.out(2);
    forEach(n, stream, [=] __device__(int64_t i) {
      double lr = scalars.lr();
      double step = stepPtr[0];
      double scale = scalars.scale();
      double c1 = 1.0 - pow(b1, step), c2 = 1.0 - pow(b2, step);
      double pi = p[i] * (1.0 - lr * wd);
      double gi = scale * g[i];
      double mi = b1 * m[i] + (1.0 - b1) * gi;
      double vi = b2 * v[i] + (1.0 - b2) * gi * gi;
      nm[i] = float(mi);
      nv[i] = float(vi);
      np[i] = float(pi - lr * (mi / c1) / (sqrt(vi / c2) + eps));
    });
    return;
  }
  case Opcode::Lion: {
    const auto &attrs = instr.as<ops::LionAttrs>();
    UpdateScalars scalars = updateScalars(attrs.lr, 3);
    double b1 = attrs.beta1, b2 = attrs.beta2, wd = attrs.weight_decay;
    const float *p = args.in(0), *g = args.in(1), *m = args.in(2);
    float *np = args.out(0), *nm = args.out(1);
    forEach(n, stream, [=] __device__(int64_t i) {
      double lr = scalars.lr();
      double gi = scalars.scale() * g[i];
      double c = b1 * m[i] + (1.0 - b1) * gi;
      double sign = double(c > 0) - double(c < 0);
      np[i] = float(p[i] * (1.0 - lr * wd) - lr * sign);
      nm[i] = float(b2 * m[i] + (1.0 - b2) * gi);
    });
    return;
  }
    BRAID_CASE_NON_KERNEL_OPCODES
    break;
  }
  throw KernelError(instr.describe() + ": is not a kernel");
}
