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

constexpr int kMaxRank = 8;

/// A shape or a stride vector passed to kernels by value.
struct Dims {
  int rank = 0;
  int64_t d[kMaxRank] = {0};
};

Dims toDims(const std::vector<int64_t> &v, const Instr &instr) {
  if (v.size() > size_t(kMaxRank))
    throw KernelError(instr.describe() + ": the cuda backend handles rank " +
                      std::to_string(kMaxRank) + " at most");
  Dims dims;
  dims.rank = int(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    dims.d[i] = v[i];
  return dims;
}

__device__ int64_t loadIndex(const uint8_t *p, bool wide, int64_t i) {
  return wide ? reinterpret_cast<const int64_t *>(p)[i]
              : reinterpret_cast<const int32_t *>(p)[i];
}

/// Whether `id` (a token id or a label) is in range for `parts` shards of
/// `rows` rows and `index` is a shard: what the shard ops check before
/// they shift `id` to the shard's rows.
__device__ bool validShardId(int64_t id, int64_t rows, int64_t parts,
                             int64_t index) {
  return id >= 0 && id < parts * rows && index >= 0 && index < parts;
}

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

/// A loss's count of the rows it takes (labels other than its
/// ignore_index), in device memory allocated on `stream` and freed there
/// after the kernels that read it (free()).
struct RowCount {
  unsigned long long *count = nullptr;
  cudaStream_t stream = nullptr;
  RowCount(cudaStream_t s, const Instr &instr) : stream(s) {
    check(cudaMallocAsync(&count, sizeof(*count), stream), instr);
    check(cudaMemsetAsync(count, 0, sizeof(*count), stream), instr);
  }
  void free(const Instr &instr) { check(cudaFreeAsync(count, stream), instr); }
  /// Counts the `rows` labels that are not `ignore` (all of them unless
  /// `ignores`): a backward's divisor, before its rows run.
  void countLabels(int64_t rows, const uint8_t *labels, bool wide, bool ignores,
                   int64_t ignore) {
    unsigned long long *n = count;
    forEach(rows, stream, [=] __device__(int64_t r) {
      if (!ignores || loadIndex(labels, wide, r) != ignore)
        atomicAdd(n, 1ULL);
    });
  }
};

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

/// The mean (over the rows counted; NaN for none, as torch) or the sum of a
/// loss whose kernel added its rows into `y`.
void finishLoss(float *y, const RowCount &rows, bool mean,
                cudaStream_t stream) {
  const unsigned long long *count = rows.count;
  forEach(1, stream, [=] __device__(int64_t) {
    if (mean)
      y[0] = *count ? float(double(y[0]) / double(*count)) : NAN;
  });
}

} // namespace

void braid::rt::launchCudaKernel(const Plan &plan, const Instr &instr,
                                 uint8_t *arena, cudaStream_t stream,
                                 cublasHandle_t blas, int *errorFlag) {
  auto inBuf = [&](size_t i) -> const Buffer & {
    return plan.buffers[instr.operands[i]];
  };
  auto outBuf = [&](size_t i) -> const Buffer & {
    return plan.buffers[instr.results[i]];
  };
  auto in = [&](size_t i) {
    return reinterpret_cast<const float *>(arena + inBuf(i).offset);
  };
  auto out = [&](size_t i) {
    return reinterpret_cast<float *>(arena + outBuf(i).offset);
  };
  // A shard op's rank index (a tensor<i64>, read on the device).
  auto rankIndex = [&](size_t i) {
    return reinterpret_cast<const int64_t *>(arena + inBuf(i).offset);
  };
  const Opcode op = instr.opcode;
  int64_t n = instr.results.empty() ? 0 : outBuf(0).numElements();
  // An update's operands after its `fixed` ones: the scheduled learning
  // rate where it has no lr attribute, then the gradient scale if any.
  auto updateScalars = [&](std::optional<double> lr, size_t fixed) {
    UpdateScalars s;
    size_t next = fixed;
    s.lrConstant = lr.value_or(0.0);
    s.lrPtr = lr ? nullptr : in(next++);
    s.scalePtr = instr.operands.size() > next ? in(next) : nullptr;
    return s;
  };

  switch (op) {
  case Opcode::Matmul: {
    MatmulGeometry g = getMatmulGeometry(plan, instr);
    if (g.m == 0 || g.n == 0 || g.batch == 0)
      return;
    if (g.k == 0) {
      for (int64_t i = 0; i < g.batch; ++i)
        check(cudaMemset2DAsync(out(0) + g.outOffset[i],
                                size_t(g.ldc) * sizeof(float), 0,
                                size_t(g.n) * sizeof(float), size_t(g.m),
                                stream),
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
    const float *left = in(g.left), *right = in(1 - g.left);
    float one = 1.0f, zero = 0.0f;
    for (int64_t i = 0; i < (uniform ? 1 : g.batch); ++i) {
      cublasStatus_t status = cublasSgemmStridedBatched(
          blas, g.transRight ? CUBLAS_OP_T : CUBLAS_OP_N,
          g.transLeft ? CUBLAS_OP_T : CUBLAS_OP_N, int(g.n), int(g.m),
          int(g.k), &one, right + g.rightOffset[i], int(g.ldRight),
          uniform ? sb : 0, left + g.leftOffset[i], int(g.ldLeft),
          uniform ? sa : 0, &zero, out(0) + g.outOffset[i], int(g.ldc),
          uniform ? sc : 0, uniform ? int(g.batch) : 1);
      if (status != CUBLAS_STATUS_SUCCESS)
        throw KernelError(instr.describe() + ": cuBLAS failed (status " +
                          std::to_string(int(status)) + ")");
    }
    return;
  }
  case Opcode::Add:
  case Opcode::Sub:
  case Opcode::Mul:
  case Opcode::Div:
  case Opcode::Scale:
  case Opcode::Cast:
  case Opcode::BiasAdd:
  case Opcode::Relu:
  case Opcode::ReluBackward:
  case Opcode::Gelu:
  case Opcode::GeluBackward:
  case Opcode::Unary:
  case Opcode::UnaryBackward:
  case Opcode::Pow:
  case Opcode::Where:
  case Opcode::DropoutMask:
    return launchElementwiseKernel(plan, instr, arena, stream);
  case Opcode::Attention:
  case Opcode::AttentionBackward:
    return launchAttentionKernel(plan, instr, arena, stream);
  case Opcode::ReduceSum:
  case Opcode::ReduceMean: {
    const Buffer &x = inBuf(0);
    std::vector<bool> reduced(x.shape.size(), false);
    bool mean = op == Opcode::ReduceMean;
    for (int64_t d : mean ? instr.as<ops::ReduceMeanAttrs>().dims
                          : instr.as<ops::ReduceSumAttrs>().dims)
      reduced[d] = true;
    std::vector<int64_t> strides = stridesOf(x.shape), keptShape, keptStrides,
                         redShape, redStrides;
    for (size_t d = 0; d < x.shape.size(); ++d) {
      (reduced[d] ? redShape : keptShape).push_back(x.shape[d]);
      (reduced[d] ? redStrides : keptStrides).push_back(strides[d]);
    }
    Dims ks = toDims(keptShape, instr), kst = toDims(keptStrides, instr),
         rs = toDims(redShape, instr), rst = toDims(redStrides, instr);
    int64_t count = product(redShape, 0, redShape.size());
    const float *src = in(0);
    float *y = out(0);
    forEach(n, stream, [=] __device__(int64_t o) {
      int64_t rest = o, base = 0;
      for (int k = ks.rank - 1; k >= 0; --k) {
        base += (rest % ks.d[k]) * kst.d[k];
        rest /= ks.d[k];
      }
      double sum = 0;
      for (int64_t r = 0; r < count; ++r) {
        int64_t rr = r, at = base;
        for (int k = rs.rank - 1; k >= 0; --k) {
          at += (rr % rs.d[k]) * rst.d[k];
          rr /= rs.d[k];
        }
        sum += src[at];
      }
      y[o] = float(mean && count ? sum / count : sum);
    });
    return;
  }
  case Opcode::Softmax:
  case Opcode::LogSoftmax:
  case Opcode::SoftmaxBackward:
  case Opcode::LogSoftmaxBackward: {
    const auto &shape = inBuf(0).shape;
    bool log = op == Opcode::LogSoftmax || op == Opcode::LogSoftmaxBackward;
    bool backward =
        op == Opcode::SoftmaxBackward || op == Opcode::LogSoftmaxBackward;
    int64_t dim = op == Opcode::Softmax ? instr.as<ops::SoftmaxAttrs>().dim
                  : op == Opcode::LogSoftmax
                      ? instr.as<ops::LogSoftmaxAttrs>().dim
                  : op == Opcode::SoftmaxBackward
                      ? instr.as<ops::SoftmaxBackwardAttrs>().dim
                      : instr.as<ops::LogSoftmaxBackwardAttrs>().dim;
    int64_t outer = product(shape, 0, dim), size = shape[dim],
            inner = product(shape, dim + 1, shape.size());
    const float *a = in(0), *b = backward ? in(1) : nullptr;
    float *y = out(0);
    bool safe = op == Opcode::Softmax && instr.as<ops::SoftmaxAttrs>().safe;
    // The scale and causal mask braid-fuse-kernels folds in (a causal
    // softmax runs along the last dimension: inner is 1).
    double factor = op == Opcode::Softmax
                        ? instr.as<ops::SoftmaxAttrs>().scale
                    : op == Opcode::SoftmaxBackward
                        ? instr.as<ops::SoftmaxBackwardAttrs>().scale
                        : 1.0;
    bool scaled = factor != 1.0;
    float scale = float(factor);
    bool causal = op == Opcode::Softmax
                      ? instr.as<ops::SoftmaxAttrs>().causal
                  : op == Opcode::SoftmaxBackward
                      ? instr.as<ops::SoftmaxBackwardAttrs>().causal
                      : false;
    forEach(outer * inner, stream, [=] __device__(int64_t t) {
      int64_t base = (t / inner) * size * inner + t % inner;
      int64_t keep = causal ? t % size + 1 : size;
      if (!backward) {
        // Entry k of the row as braid.scale and braid.causal_mask give it.
        auto score = [&](int64_t k) {
          float v = a[base + k * inner];
          return k >= keep ? -INFINITY : scaled ? v * scale : v;
        };
        float mx = -INFINITY;
        for (int64_t k = 0; k < size; ++k)
          mx = fmaxf(mx, score(k));
        if (safe && mx == -INFINITY) { // every entry masked: 0, not NaN
          for (int64_t k = 0; k < size; ++k)
            y[base + k * inner] = 0.0f;
          return;
        }
        double sum = 0;
        for (int64_t k = 0; k < size; ++k)
          sum += exp(double(score(k)) - mx);
        for (int64_t k = 0; k < size; ++k) {
          int64_t at = base + k * inner;
          y[at] = log ? float(score(k) - mx - ::log(sum))
                      : float(exp(double(score(k)) - mx) / sum);
        }
        return;
      }
      double sum = 0;
      for (int64_t k = 0; k < size; ++k) {
        int64_t at = base + k * inner;
        sum += log ? double(a[at]) : double(a[at]) * b[at];
      }
      for (int64_t k = 0; k < size; ++k) {
        int64_t at = base + k * inner;
        float v = k >= keep ? 0.0f
                  : log     ? float(a[at] - exp(double(b[at])) * sum)
                            : float(b[at] * (a[at] - sum));
        y[at] = scaled ? v * scale : v;
      }
    });
    return;
  }
  case Opcode::CausalMask: {
    int64_t s = inBuf(0).shape.back();
    float fill = float(instr.as<ops::CausalMaskAttrs>().fill);
    const float *x = in(0);
    float *y = out(0);
    forEach(n, stream, [=] __device__(int64_t i) {
      int64_t col = i % s, row = (i / s) % s;
      y[i] = col > row ? fill : x[i];
    });
    return;
  }
  case Opcode::LayerNorm: {
    int64_t d = inBuf(1).numElements();
    int64_t rows = d ? inBuf(0).numElements() / d : 0;
    double eps = instr.as<ops::LayerNormAttrs>().epsilon;
    const float *x = in(0), *g = in(1), *b = in(2);
    float *y = out(0), *mean = out(1), *rstd = out(2);
    forEach(rows, stream, [=] __device__(int64_t r) {
      const float *row = x + r * d;
      double mu = 0, var = 0;
      for (int64_t k = 0; k < d; ++k)
        mu += row[k];
      mu /= d;
      for (int64_t k = 0; k < d; ++k)
        var += (row[k] - mu) * (row[k] - mu);
      var /= d;
      double rs = 1.0 / sqrt(var + eps);
      mean[r] = float(mu);
      rstd[r] = float(rs);
      for (int64_t k = 0; k < d; ++k)
        y[r * d + k] = float((row[k] - mu) * rs * g[k] + b[k]);
    });
    return;
  }
  case Opcode::LayerNormBackward: {
    int64_t d = inBuf(4).numElements();
    int64_t rows = d ? inBuf(1).numElements() / d : 0;
    const float *dy = in(0), *x = in(1), *mean = in(2), *rstd = in(3),
                *g = in(4);
    float *dx = out(0), *dg = out(1), *db = out(2);
    forEach(rows, stream, [=] __device__(int64_t r) {
      double mu = mean[r], rs = rstd[r], sumDyG = 0, sumDyGXhat = 0;
      for (int64_t k = 0; k < d; ++k) {
        double xhat = (x[r * d + k] - mu) * rs,
               dyg = double(dy[r * d + k]) * g[k];
        sumDyG += dyg;
        sumDyGXhat += dyg * xhat;
      }
      for (int64_t k = 0; k < d; ++k) {
        double xhat = (x[r * d + k] - mu) * rs,
               dyg = double(dy[r * d + k]) * g[k];
        dx[r * d + k] = float(rs * (dyg - sumDyG / d - xhat * sumDyGXhat / d));
      }
    });
    forEach(d, stream, [=] __device__(int64_t k) {
      double sg = 0, sb = 0;
      for (int64_t r = 0; r < rows; ++r) {
        double xhat = (x[r * d + k] - mean[r]) * rstd[r];
        sg += double(dy[r * d + k]) * xhat;
        sb += dy[r * d + k];
      }
      dg[k] = float(sg);
      db[k] = float(sb);
    });
    return;
  }
  case Opcode::NllLoss:
  case Opcode::CrossEntropy:
  case Opcode::NllLossBackward:
  case Opcode::CrossEntropyBackward: {
    bool backward =
        op == Opcode::NllLossBackward || op == Opcode::CrossEntropyBackward;
    bool logits =
        op == Opcode::CrossEntropy || op == Opcode::CrossEntropyBackward;
    size_t xi = backward ? 1 : 0, li = backward ? 2 : 1;
    int64_t rows = inBuf(xi).shape[0], classes = inBuf(xi).shape[1];
    auto [reduction, ignoreIndex] =
        op == Opcode::NllLoss
            ? std::pair(instr.as<ops::NllLossAttrs>().reduction,
                        instr.as<ops::NllLossAttrs>().ignore_index)
        : op == Opcode::CrossEntropy
            ? std::pair(instr.as<ops::CrossEntropyAttrs>().reduction,
                        instr.as<ops::CrossEntropyAttrs>().ignore_index)
        : op == Opcode::NllLossBackward
            ? std::pair(instr.as<ops::NllLossBackwardAttrs>().reduction,
                        instr.as<ops::NllLossBackwardAttrs>().ignore_index)
            : std::pair(
                  instr.as<ops::CrossEntropyBackwardAttrs>().reduction,
                  instr.as<ops::CrossEntropyBackwardAttrs>().ignore_index);
    bool mean = reduction == ops::LossReduction::Mean;
    bool ignores = ignoreIndex.has_value();
    int64_t ignore = ignoreIndex.value_or(0);
    const float *x = in(xi), *grad = backward ? in(0) : nullptr;
    const uint8_t *labels = arena + inBuf(li).offset;
    bool wide = inBuf(li).dtype == DType::I64;
    float *y = out(0);
    int *flag = errorFlag;
    // The rows counted: first for the backward (its scale), as the rows
    // are added for the loss (finishLoss divides).
    RowCount counted(stream, instr);
    unsigned long long *count = counted.count;
    if (backward)
      counted.countLabels(rows, labels, wide, ignores, ignore);
    else
      check(cudaMemsetAsync(y, 0, sizeof(float), stream), instr);
    forEach(rows, stream, [=] __device__(int64_t r) {
      int64_t label = loadIndex(labels, wide, r);
      if (ignores && label == ignore) {
        if (backward)
          for (int64_t c = 0; c < classes; ++c)
            y[r * classes + c] = 0.0f;
        return;
      }
      if (label < 0 || label >= classes) {
        atomicExch(flag, 1);
        return;
      }
      const float *row = x + r * classes;
      float mx = -INFINITY;
      double sum = 0;
      if (logits) {
        for (int64_t c = 0; c < classes; ++c)
          mx = fmaxf(mx, row[c]);
        for (int64_t c = 0; c < classes; ++c)
          sum += exp(double(row[c]) - mx);
      }
      if (!backward) {
        double logp = logits ? row[label] - mx - ::log(sum) : row[label];
        atomicAdd(y, float(-logp));
        atomicAdd(count, 1ULL);
        return;
      }
      double scale = grad[0] / (mean && *count ? double(*count) : 1.0);
      float *drow = y + r * classes;
      for (int64_t c = 0; c < classes; ++c)
        drow[c] = logits ? float(scale * (exp(double(row[c]) - mx) / sum -
                                          (c == label ? 1.0 : 0.0)))
                         : (c == label ? float(-scale) : 0.0f);
    });
    if (!backward)
      finishLoss(y, counted, mean, stream);
    counted.free(instr);
    return;
  }
  case Opcode::CrossEntropyShardStats: {
    int64_t rows = inBuf(0).shape[0], classes = inBuf(0).shape[1];
    int64_t parts = instr.as<ops::CrossEntropyShardStatsAttrs>().parts;
    std::optional<int64_t> ignoreIndex =
        instr.as<ops::CrossEntropyShardStatsAttrs>().ignore_index;
    bool ignores = ignoreIndex.has_value();
    int64_t ignore = ignoreIndex.value_or(0);
    const float *x = in(0);
    const uint8_t *labels = arena + inBuf(1).offset;
    bool wide = inBuf(1).dtype == DType::I64;
    const int64_t *index = rankIndex(2);
    float *stats = out(0);
    int *flag = errorFlag;
    forEach(rows, stream, [=] __device__(int64_t r) {
      int64_t label = loadIndex(labels, wide, r);
      if (ignores && label == ignore) {
        // An ignored row's summary: (0, 0, 0), which the loss skips.
        stats[3 * r] = stats[3 * r + 1] = stats[3 * r + 2] = 0.0f;
        return;
      }
      if (!validShardId(label, classes, parts, *index)) {
        atomicExch(flag, 1);
        return;
      }
      label -= *index * classes;
      const float *row = x + r * classes;
      float mx = -INFINITY;
      double sum = 0;
      for (int64_t c = 0; c < classes; ++c)
        mx = fmaxf(mx, row[c]);
      for (int64_t c = 0; c < classes; ++c)
        sum += exp(double(row[c]) - mx);
      stats[3 * r] = mx;
      stats[3 * r + 1] = float(sum);
      stats[3 * r + 2] = label >= 0 && label < classes ? row[label] : 0.0f;
    });
    return;
  }
  case Opcode::CrossEntropyShardLoss:
  case Opcode::CrossEntropyShardBackward: {
    bool backward = op == Opcode::CrossEntropyShardBackward;
    size_t si = backward ? 3 : 0;
    int64_t parts = inBuf(si).shape[0], rows = inBuf(si).shape[1];
    int64_t classes = backward ? inBuf(1).shape[1] : 0;
    ops::LossReduction reduction =
        backward ? instr.as<ops::CrossEntropyShardBackwardAttrs>().reduction
                 : instr.as<ops::CrossEntropyShardLossAttrs>().reduction;
    bool mean = reduction == ops::LossReduction::Mean;
    std::optional<int64_t> ignoreIndex =
        backward ? instr.as<ops::CrossEntropyShardBackwardAttrs>().ignore_index
                 : std::nullopt;
    bool ignores = ignoreIndex.has_value();
    int64_t ignore = ignoreIndex.value_or(0);
    const float *stats = in(si);
    const float *x = backward ? in(1) : nullptr,
                *grad = backward ? in(0) : nullptr;
    const uint8_t *labels = backward ? arena + inBuf(2).offset : nullptr;
    bool wide = backward && inBuf(2).dtype == DType::I64;
    const int64_t *index = backward ? rankIndex(4) : nullptr;
    float *y = out(0);
    int *flag = errorFlag;
    RowCount counted(stream, instr);
    unsigned long long *count = counted.count;
    if (backward)
      counted.countLabels(rows, labels, wide, ignores, ignore);
    else
      check(cudaMemsetAsync(y, 0, sizeof(float), stream), instr);
    forEach(rows, stream, [=] __device__(int64_t r) {
      if (backward && ignores && loadIndex(labels, wide, r) == ignore) {
        for (int64_t c = 0; c < classes; ++c)
          y[r * classes + c] = 0.0f;
        return;
      }
      double mx = -INFINITY, sum = 0, target = 0;
      for (int64_t p = 0; p < parts; ++p)
        mx = fmax(mx, double(stats[3 * (p * rows + r)]));
      for (int64_t p = 0; p < parts; ++p) {
        const float *s = stats + 3 * (p * rows + r);
        sum += double(s[1]) * exp(double(s[0]) - mx);
        target += s[2];
      }
      if (!backward) {
        if (sum == 0) // every shard's summary (0, 0, 0): an ignored label
          return;
        atomicAdd(y, float(::log(sum) + mx - target));
        atomicAdd(count, 1ULL);
        return;
      }
      int64_t label = loadIndex(labels, wide, r);
      if (!validShardId(label, classes, parts, *index)) {
        atomicExch(flag, 1);
        return;
      }
      label -= *index * classes;
      double scale = grad[0] / (mean && *count ? double(*count) : 1.0);
      for (int64_t c = 0; c < classes; ++c)
        y[r * classes + c] =
            float(scale * (exp(double(x[r * classes + c]) - mx) / sum -
                           (c == label ? 1.0 : 0.0)));
    });
    if (!backward)
      finishLoss(y, counted, mean, stream);
    counted.free(instr);
    return;
  }
  case Opcode::ShardSlice: {
    const auto &attrs = instr.as<ops::ShardSliceAttrs>();
    uint64_t rows = 1;
    for (int64_t d = 0; d < attrs.dim; ++d)
      rows *= inBuf(0).shape[d];
    if (!rows || !outBuf(0).bytes)
      return;
    uint64_t piece = outBuf(0).bytes / rows, pitch = inBuf(0).bytes / rows;
    int64_t parts = attrs.parts;
    const uint8_t *src = arena + inBuf(0).offset;
    const int64_t *index = rankIndex(1);
    uint8_t *dst = arena + outBuf(0).offset;
    int *flag = errorFlag;
    // A byte a thread: any element type.
    forEach(int64_t(outBuf(0).bytes), stream, [=] __device__(int64_t i) {
      if (*index < 0 || *index >= parts) {
        atomicExch(flag, 1);
        return;
      }
      uint64_t r = uint64_t(i) / piece, k = uint64_t(i) % piece;
      dst[i] = src[r * pitch + uint64_t(*index) * piece + k];
    });
    return;
  }
  case Opcode::EmbeddingShard: {
    int64_t vocab = inBuf(0).shape[0], dim = inBuf(0).shape[1];
    int64_t parts = instr.as<ops::EmbeddingShardAttrs>().parts;
    const float *table = in(0);
    const uint8_t *ids = arena + inBuf(1).offset;
    bool wide = inBuf(1).dtype == DType::I64;
    const int64_t *index = rankIndex(2);
    float *y = out(0);
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
  case Opcode::EmbeddingShardBackward: {
    int64_t vocab = outBuf(0).shape[0], dim = outBuf(0).shape[1];
    int64_t parts = instr.as<ops::EmbeddingShardBackwardAttrs>().parts;
    int64_t count = inBuf(1).numElements();
    const float *g = in(0);
    const uint8_t *ids = arena + inBuf(1).offset;
    bool wide = inBuf(1).dtype == DType::I64;
    const int64_t *index = rankIndex(2);
    float *y = out(0);
    int *flag = errorFlag;
    check(cudaMemsetAsync(y, 0, outBuf(0).bytes, stream), instr);
    // A thread per column, in token order (deterministic, as above).
    forEach(dim, stream, [=] __device__(int64_t k) {
      for (int64_t t = 0; t < count; ++t) {
        int64_t id = loadIndex(ids, wide, t);
        if (!validShardId(id, vocab, parts, *index)) {
          atomicExch(flag, 1);
          continue;
        }
        id -= *index * vocab;
        if (id >= 0 && id < vocab)
          y[id * dim + k] += g[t * dim + k];
      }
    });
    return;
  }
  case Opcode::Embedding: {
    int64_t vocab = inBuf(0).shape[0], dim = inBuf(0).shape[1];
    const float *table = in(0);
    const uint8_t *ids = arena + inBuf(1).offset;
    bool wide = inBuf(1).dtype == DType::I64;
    float *y = out(0);
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
  case Opcode::EmbeddingBackward: {
    int64_t vocab = outBuf(0).shape[0], dim = outBuf(0).shape[1];
    int64_t count = inBuf(1).numElements();
    const float *g = in(0);
    const uint8_t *ids = arena + inBuf(1).offset;
    bool wide = inBuf(1).dtype == DType::I64;
    float *y = out(0);
    int *flag = errorFlag;
    check(cudaMemsetAsync(y, 0, outBuf(0).bytes, stream), instr);
    // A thread per column: each sums its column in token order, without
    // atomics, so the result is deterministic.
    forEach(dim, stream, [=] __device__(int64_t k) {
      for (int64_t t = 0; t < count; ++t) {
        int64_t id = loadIndex(ids, wide, t);
        if (id < 0 || id >= vocab) {
          atomicExch(flag, 1);
          continue;
        }
        y[id * dim + k] += g[t * dim + k];
      }
    });
    return;
  }
  case Opcode::Reshape: {
    // Nothing to move where the memory plan gave the result its operand's
    // bytes (a view: Braid_View).
    if (outBuf(0).offset != inBuf(0).offset)
      check(cudaMemcpyAsync(arena + outBuf(0).offset, arena + inBuf(0).offset,
                            outBuf(0).bytes, cudaMemcpyDeviceToDevice, stream),
            instr);
    return;
  }
  case Opcode::Transpose:
  case Opcode::Broadcast:
  case Opcode::Slice: {
    StridedView view = getStridedView(plan, instr);
    return gather(inBuf(0), outBuf(0), arena, view.strides, view.base, instr,
                  stream);
  }
  case Opcode::Concat: {
    const Buffer &y = outBuf(0);
    int64_t dim = instr.as<ops::ConcatAttrs>().dim;
    unsigned size = dtypeBytes(y.dtype);
    int64_t outer = product(y.shape, 0, dim);
    int64_t inner = product(y.shape, dim + 1, y.shape.size()) * size;
    int64_t outRow = y.shape[dim] * inner, at = 0;
    for (size_t i = 0; i < instr.operands.size(); ++i) {
      int64_t row = inBuf(i).shape[dim] * inner;
      if (row && outer)
        check(cudaMemcpy2DAsync(arena + y.offset + at, outRow,
                                arena + inBuf(i).offset, row, row, outer,
                                cudaMemcpyDeviceToDevice, stream),
              instr);
      at += row;
    }
    return;
  }
  case Opcode::Constant: {
    const auto &data = instr.as<ops::ConstantAttrs>().value;
    check(cudaMemcpyAsync(arena + outBuf(0).offset, data.data(), data.size(),
                          cudaMemcpyHostToDevice, stream),
          instr);
    return;
  }
  case Opcode::Fill: {
    float v = float(instr.as<ops::FillAttrs>().value);
    float *y = out(0);
    forEach(n, stream, [=] __device__(int64_t i) { y[i] = v; });
    return;
  }
  case Opcode::SumSquares: {
    // One thread per input element, accumulated in f64 (atomicAdd on
    // doubles: sm_60 and later), then written as f32.
    double *sum = nullptr;
    check(cudaMallocAsync(&sum, sizeof(double), stream), instr);
    check(cudaMemsetAsync(sum, 0, sizeof(double), stream), instr);
    for (size_t i = 0; i < instr.operands.size(); ++i) {
      const float *x = in(i);
      forEach(inBuf(i).numElements(), stream, [=] __device__(int64_t k) {
        atomicAdd(sum, double(x[k]) * x[k]);
      });
    }
    float *y = out(0);
    forEach(1, stream, [=] __device__(int64_t) { y[0] = float(*sum); });
    check(cudaFreeAsync(sum, stream), instr);
    return;
  }
  case Opcode::ClipCoefficient: {
    double maxNorm = instr.as<ops::ClipCoefficientAttrs>().max_norm;
    const float *s = in(0);
    float *y = out(0);
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
    const float *p = in(0), *g = in(1), *buf = in(2);
    float *np = out(0), *nbuf = out(1);
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
    const float *p = in(0), *g = in(1), *m = in(2), *v = in(3),
                *stepPtr = in(4);
    float *np = out(0), *nm = out(1), *nv = out(2);
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
    BRAID_CASE_NON_KERNEL_OPCODES
    break;
  }
  throw KernelError(instr.describe() + ": is not a kernel");
}
