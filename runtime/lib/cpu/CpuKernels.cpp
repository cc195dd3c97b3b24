//===- CpuKernels.cpp - the cpu backend's kernel for every op -------------===//
//
// One function per op of the dialect, in f32 (indices i32 or i64), matmul
// through BLAS. The plan loader has checked every shape (OpChecks.cpp), so the
// kernels index without further checks, except for data-dependent indices
// (labels, token ids), which are checked here. A kernel with bf16 or f16
// tensors computes in f32 on widened copies and rounds its results
// (CpuWidening.cpp); the ops that only move bytes move them as they are.
//
//===----------------------------------------------------------------------===//

#include "CpuKernels.h"
#include "../Views.h"
#include "CpuArgs.h"
#include "CpuMath.h"
#include "CpuParallel.h"
#include "CpuVectorMath.h"
#include "braid-runtime/HalfFloat.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <vector>

using namespace braid;
using namespace braid::rt;

namespace {

/// Calls fn(outIndex, inIndex) for every element of `outShape`, where the
/// input index is sum(coord[d] * inStrides[d]) + base: the general gather
/// behind transpose, broadcast and slice.
template <typename Fn>
void gather(const std::vector<int64_t> &outShape,
            const std::vector<int64_t> &inStrides, int64_t base, Fn fn) {
  size_t rank = outShape.size();
  int64_t total = product(outShape, 0, rank);
  if (total == 0)
    return;
  std::vector<int64_t> coord(rank, 0);
  int64_t inIndex = base;
  for (int64_t o = 0; o < total; ++o) {
    fn(o, inIndex);
    for (size_t d = rank; d-- > 0;) {
      if (++coord[d] < outShape[d]) {
        inIndex += inStrides[d];
        break;
      }
      inIndex -= inStrides[d] * (outShape[d] - 1);
      coord[d] = 0;
    }
  }
}

template <typename F> void unary(const Args &a, F f) {
  const float *x = a.in(0);
  float *y = a.out(0);
  parallelFor(a.n(), kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      y[i] = f(x[i]);
  });
}

template <typename F> void binary(const Args &a, F f) {
  const float *x = a.in(0), *z = a.in(1);
  float *y = a.out(0);
  parallelFor(a.n(), kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      y[i] = f(x[i], z[i]);
  });
}

/// Calls fn(h, r, n) for every row r of `x` (rows of the last dimension, n
/// wide), with h the row plus the instruction's last operand, a bias, as
/// braid.bias_add computes it: braid.gelu and its backward with a folded
/// bias. Rows are split over the kernel's threads.
template <typename Fn> void biasedRows(const Args &a, const float *x, Fn fn) {
  const float *bias = a.in(a.instr.operands.size() - 1);
  int64_t n = a.outBuf(0).shape.back();
  int64_t rows = n ? a.n() / n : 0;
  int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1));
  parallelFor(rows, grain, [&](int64_t begin, int64_t end) {
    std::vector<float> h(static_cast<size_t>(n));
    for (int64_t r = begin; r < end; ++r) {
      const float *row = x + r * n;
      for (int64_t k = 0; k < n; ++k)
        h[k] = row[k] + bias[k];
      // The sum as braid.bias_add would have stored it.
      roundToHalf(a.inBuf(0).dtype, h.data(), n);
      fn(h.data(), r, n);
    }
  });
}

/// Rows of C per block when a product is split over the kernel's threads: a
/// multiple of every BLAS register tile, so each block's elements take the
/// same path through BLAS as in one call over the whole.
constexpr int64_t kMatmulBlock = 64;
/// The least work (m n k) of one thread's block: above OpenBLAS's own
/// small-matrix paths, which sum in another order.
constexpr int64_t kMatmulGrain = int64_t(1) << 20;

void matmul(const Args &a) {
  MatmulGeometry g = getMatmulGeometry(a.plan, a.instr);
  if (g.m == 0 || g.n == 0)
    return;
  const float *left = a.in(g.left), *right = a.in(1 - g.left);
  // The rows [r0, r1) and columns [c0, c1) of product i, one BLAS call.
  auto block = [&](int64_t i, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    float *out = a.out(0) + g.outOffset[i] + r0 * g.ldc + c0;
    if (g.k == 0) {
      for (int64_t r = r0; r < r1; ++r, out += g.ldc)
        std::fill(out, out + (c1 - c0), 0.0f);
      return;
    }
    const float *l =
        left + g.leftOffset[i] + (g.transLeft ? r0 : r0 * g.ldLeft);
    const float *r =
        right + g.rightOffset[i] + (g.transRight ? c0 * g.ldRight : c0);
    cblas_sgemm(CblasRowMajor, g.transLeft ? CblasTrans : CblasNoTrans,
                g.transRight ? CblasTrans : CblasNoTrans, r1 - r0, c1 - c0, g.k,
                1.0f, l, g.ldLeft, r, g.ldRight, 0.0f, out, g.ldc);
  };
  auto whole = [&](int64_t i) { block(i, 0, g.m, 0, g.n); };
  int64_t work = g.m * g.n * std::max<int64_t>(g.k, 1);
  // BLAS runs on one thread (setCpuThreads); the kernel's threads split a
  // product here, on the pool the other kernels use, so that no second set
  // of threads competes for the cores. A batch of small products (attention's,
  // one per head) is split by product; a larger one by blocks of rows of C,
  // or of columns where C has more of those.
  if (cpuThreads() > 1 && g.batch > 1 && work < 2 * kMatmulGrain) {
    parallelFor(g.batch, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        whole(i);
    });
    return;
  }
  bool byRows = g.m >= g.n;
  int64_t extent = byRows ? g.m : g.n;
  int64_t blocks = (extent + kMatmulBlock - 1) / kMatmulBlock;
  int64_t grain = std::max<int64_t>(
      1, kMatmulGrain / std::max<int64_t>(work / extent * kMatmulBlock, 1));
  for (int64_t i = 0; i < g.batch; ++i)
    parallelFor(blocks, grain, [&](int64_t begin, int64_t end) {
      int64_t lo = begin * kMatmulBlock,
              hi = std::min(extent, end * kMatmulBlock);
      if (byRows)
        block(i, lo, hi, 0, g.n);
      else
        block(i, 0, g.m, lo, hi);
    });
}

void reduce(const Args &a, bool mean, const std::vector<int64_t> &dims) {
  const Buffer &x = a.inBuf(0);
  std::vector<bool> reduced(x.shape.size(), false);
  for (int64_t d : dims)
    reduced[d] = true;
  // Output strides seen from the input's coordinates (0 along reduced dims).
  std::vector<int64_t> outShape, outStrides(x.shape.size(), 0);
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (!reduced[d])
      outShape.push_back(x.shape[d]);
  std::vector<int64_t> compact = stridesOf(outShape);
  for (size_t d = 0, k = 0; d < x.shape.size(); ++d)
    if (!reduced[d])
      outStrides[d] = compact[k++];
  float *y = a.out(0);
  int64_t outN = a.n();
  std::vector<double> acc(outN, 0.0);
  const float *in = a.in(0);
  // Leading dimensions reduced (a bias's gradient over the tokens): whole
  // rows added into the accumulators; trailing ones: runs summed; else the
  // general gather.
  size_t rank = x.shape.size(), lead = 0, trail = 0;
  while (lead < rank && reduced[lead])
    ++lead;
  while (trail < rank && reduced[rank - 1 - trail])
    ++trail;
  // The first two split the outputs over the kernel's threads, each summed
  // in order: the same bits on any number of threads.
  if (lead == dims.size() && outN > 0) {
    int64_t rows = product(x.shape, 0, lead);
    int64_t grain = std::max<int64_t>(16, kGrain / std::max<int64_t>(rows, 1));
    parallelFor(outN, grain, [&](int64_t begin, int64_t end) {
      for (int64_t r = 0; r < rows; ++r) {
        const float *row = in + r * outN;
        for (int64_t o = begin; o < end; ++o)
          acc[o] += row[o];
      }
    });
  } else if (trail == dims.size() && outN > 0) {
    int64_t run = product(x.shape, rank - trail, rank);
    forRows(outN, run, [&](int64_t o) {
      const float *row = in + o * run;
      double s = 0;
      for (int64_t k = 0; k < run; ++k)
        s += row[k];
      acc[o] = s;
    });
  } else {
    gather(x.shape, outStrides, 0,
           [&](int64_t i, int64_t o) { acc[o] += in[i]; });
  }
  int64_t count = 1;
  for (int64_t d : dims)
    count *= x.shape[d];
  for (int64_t o = 0; o < outN; ++o)
    y[o] = float(mean && count ? acc[o] / count : acc[o]);
}

/// Block `(index + shift) mod parts`, the shard ops' rank-relative place.
int64_t shardBlock(int64_t index, int64_t shift, int64_t parts) {
  return ((index + shift) % parts + parts) % parts;
}

/// Piece `(index + shift) mod parts` along `dim` of each row of the
/// dimensions before it.
void shardSlice(const Args &a, const ops::ShardSliceAttrs &attrs) {
  const Buffer &in = a.inBuf(0), &out = a.outBuf(0);
  int64_t index =
      shardBlock(a.rankIndex(1, attrs.parts), attrs.shift, attrs.parts);
  ShardRows cut = getShardRows(in, attrs.dim, attrs.parts);
  if (!cut.piece)
    return;
  const uint8_t *src = a.arena + in.offset + index * cut.piece;
  uint8_t *dst = a.arena + out.offset;
  for (uint64_t r = 0; r < cut.rows; ++r)
    std::memcpy(dst + r * cut.piece, src + r * cut.pitch, cut.piece);
}

/// Piece `k` into block `(index + shifts[k]) mod n` along `dim`.
void shardConcat(const Args &a, const ops::ShardConcatAttrs &attrs) {
  const Buffer &out = a.outBuf(0);
  int64_t n = int64_t(a.instr.operands.size()) - 1;
  int64_t index = a.rankIndex(size_t(n), n);
  ShardRows cut = getShardRows(out, attrs.dim, n);
  if (!cut.piece)
    return;
  for (int64_t k = 0; k < n; ++k) {
    int64_t block = shardBlock(index, attrs.shifts[k], n);
    const uint8_t *src = a.arena + a.inBuf(k).offset;
    uint8_t *dst = a.arena + out.offset + block * cut.piece;
    for (uint64_t r = 0; r < cut.rows; ++r)
      std::memcpy(dst + r * cut.pitch, src + r * cut.piece, cut.piece);
  }
}

void embedding(const Args &a) {
  const Buffer &table = a.inBuf(0);
  int64_t vocab = table.shape[0], dim = table.shape[1];
  int64_t count = a.inBuf(1).numElements();
  for (int64_t i = 0; i < count; ++i) {
    int64_t id = a.index(1, i, vocab, "token id");
    std::memcpy(a.out(0) + i * dim, a.in(0) + id * dim, dim * sizeof(float));
  }
}

void embeddingShard(const Args &a, int64_t parts) {
  const Buffer &table = a.inBuf(0);
  int64_t vocab = table.shape[0], dim = table.shape[1];
  int64_t first = a.rankIndex(2, parts) * vocab;
  int64_t count = a.inBuf(1).numElements();
  for (int64_t i = 0; i < count; ++i) {
    int64_t id = a.index(1, i, parts * vocab, "token id") - first;
    float *row = a.out(0) + i * dim;
    if (id >= 0 && id < vocab)
      std::memcpy(row, a.in(0) + id * dim, dim * sizeof(float));
    else
      std::fill(row, row + dim, 0.0f);
  }
}

/// `padding` (the table's padding_idx, -1 for none): a row whose tokens
/// add nothing, as torch.nn.Embedding(padding_idx=...)'s.
void embeddingShardBackward(const Args &a, int64_t parts, int64_t padding) {
  const Buffer &out = a.outBuf(0);
  int64_t vocab = out.shape[0], dim = out.shape[1];
  int64_t first = a.rankIndex(2, parts) * vocab;
  int64_t count = a.inBuf(1).numElements();
  float *dt = a.out(0);
  std::fill(dt, dt + vocab * dim, 0.0f);
  for (int64_t i = 0; i < count; ++i) {
    int64_t global = a.index(1, i, parts * vocab, "token id");
    int64_t id = global - first;
    if (id < 0 || id >= vocab || global == padding)
      continue;
    const float *g = a.in(0) + i * dim;
    for (int64_t k = 0; k < dim; ++k)
      dt[id * dim + k] += g[k];
  }
}

void embeddingBackward(const Args &a, int64_t padding) {
  const Buffer &out = a.outBuf(0);
  int64_t vocab = out.shape[0], dim = out.shape[1];
  int64_t count = a.inBuf(1).numElements();
  float *dt = a.out(0);
  std::fill(dt, dt + vocab * dim, 0.0f);
  for (int64_t i = 0; i < count; ++i) {
    int64_t id = a.index(1, i, vocab, "token id");
    if (id == padding)
      continue;
    const float *g = a.in(0) + i * dim;
    for (int64_t k = 0; k < dim; ++k)
      dt[id * dim + k] += g[k];
  }
}

/// transpose, broadcast and slice: a strided read of the input.
void gatherView(const Args &a) {
  const Buffer &x = a.inBuf(0), &y = a.outBuf(0);
  StridedView view = getStridedView(a.plan, a.instr);
  unsigned size = dtypeBytes(x.dtype);
  const uint8_t *src = a.arena + x.offset;
  uint8_t *dst = a.arena + y.offset;
  if (y.shape.empty() || product(y.shape, 0, y.shape.size()) == 0) {
    if (y.shape.empty())
      std::memcpy(dst, src + view.base * size, size);
    return;
  }
  // Row by row along the last dimension: a copy where it is contiguous, a
  // fill where it is broadcast, a strided loop otherwise.
  int64_t len = y.shape.back(), stride = view.strides.back();
  std::vector<int64_t> rows(y.shape.begin(), y.shape.end() - 1);
  std::vector<int64_t> rowStrides(view.strides.begin(), view.strides.end() - 1);
  auto copyRow = [&](uint8_t *out, const uint8_t *in) {
    if (stride == 1) {
      std::memcpy(out, in, size_t(len) * size);
    } else if (size == 4) {
      const uint32_t *from = reinterpret_cast<const uint32_t *>(in);
      uint32_t *to = reinterpret_cast<uint32_t *>(out);
      for (int64_t k = 0; k < len; ++k)
        to[k] = from[k * stride];
    } else {
      for (int64_t k = 0; k < len; ++k)
        std::memcpy(out + k * size, in + k * stride * size, size);
    }
  };
  if (rows.empty())
    return copyRow(dst, src + view.base * size);
  // Rows split over the kernel's threads, each piece from its first row's
  // coordinates on.
  int64_t count = product(rows, 0, rows.size());
  parallelFor(count, std::max<int64_t>(1, kGrain / std::max<int64_t>(len, 1)),
              [&](int64_t begin, int64_t end) {
                std::vector<int64_t> coord(rows.size());
                int64_t i = view.base;
                for (size_t d = rows.size(), r = size_t(begin); d-- > 0;) {
                  coord[d] = int64_t(r) % rows[d];
                  r /= size_t(rows[d]);
                  i += coord[d] * rowStrides[d];
                }
                for (int64_t o = begin; o < end; ++o) {
                  copyRow(dst + o * len * size, src + i * size);
                  for (size_t d = rows.size(); d-- > 0;) {
                    if (++coord[d] < rows[d]) {
                      i += rowStrides[d];
                      break;
                    }
                    i -= rowStrides[d] * (rows[d] - 1);
                    coord[d] = 0;
                  }
                }
              });
}

void concat(const Args &a) {
  const Buffer &y = a.outBuf(0);
  int64_t dim = a.instr.as<ops::ConcatAttrs>().dim;
  unsigned size = dtypeBytes(y.dtype);
  int64_t outer = product(y.shape, 0, dim);
  int64_t inner = product(y.shape, dim + 1, y.shape.size()) * size;
  int64_t outRow = y.shape[dim] * inner;
  int64_t at = 0;
  for (size_t i = 0; i < a.instr.operands.size(); ++i) {
    const Buffer &x = a.inBuf(i);
    int64_t row = x.shape[dim] * inner;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(a.arena + y.offset + o * outRow + at,
                  a.arena + x.offset + o * row, row);
    at += row;
  }
}

/// An update's learning rate (its attribute, or the operand after the
/// `fixed` ones) and gradient scale (the operand after that, or 1).
struct UpdateScalars {
  double lr, scale;
};
template <typename Attrs>
UpdateScalars updateScalars(const Args &a, const Attrs &attrs, size_t fixed) {
  size_t next = fixed;
  double lr = attrs.lr ? *attrs.lr : double(a.in(next++)[0]);
  double scale = a.instr.operands.size() > next ? double(a.in(next)[0]) : 1.0;
  return {lr, scale};
}

void sgd(const Args &a) {
  const auto &attrs = a.instr.as<ops::SgdAttrs>();
  auto [lr, scale] = updateScalars(a, attrs, 3);
  SgdStep s = {lr,
               attrs.weight_decay,
               scale,
               attrs.momentum,
               attrs.dampening,
               attrs.nesterov};
  const float *p = a.in(0), *g = a.in(1), *buf = a.in(2);
  float *np = a.out(0), *nbuf = a.out(1);
  parallelFor(a.n(), kGrain, [&](int64_t b, int64_t e) {
    vectorMath().sgd(p + b, g + b, buf + b, np + b, nbuf + b, e - b, s);
  });
}

void adamw(const Args &a) {
  const auto &attrs = a.instr.as<ops::AdamWAttrs>();
  auto [lr, scale] = updateScalars(a, attrs, 5);
  double b1 = attrs.beta1, b2 = attrs.beta2, eps = attrs.eps;
  double wd = attrs.weight_decay;
  double step = a.in(4)[0];
  double c1 = 1.0 - std::pow(b1, step), c2 = 1.0 - std::pow(b2, step);
  AdamWStep s = {lr, wd, scale, b1, b2, c1, c2, eps};
  const float *p = a.in(0), *g = a.in(1), *m = a.in(2), *v = a.in(3);
  float *np = a.out(0), *nm = a.out(1), *nv = a.out(2);
  parallelFor(a.n(), kGrain, [&](int64_t b, int64_t e) {
    vectorMath().adamw(p + b, g + b, m + b, v + b, np + b, nm + b, nv + b,
                       e - b, s);
  });
}

/// Lion (braid.lion): in double per element, as the cuda kernel.
void lion(const Args &a) {
  const auto &attrs = a.instr.as<ops::LionAttrs>();
  UpdateScalars scalars = updateScalars(a, attrs, 3);
  double lr = scalars.lr, scale = scalars.scale;
  double b1 = attrs.beta1, b2 = attrs.beta2,
         decay = 1.0 - lr * attrs.weight_decay;
  const float *p = a.in(0), *g = a.in(1), *m = a.in(2);
  float *np = a.out(0), *nm = a.out(1);
  parallelFor(a.n(), kGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      double gi = scale * g[i];
      double c = b1 * m[i] + (1.0 - b1) * gi;
      double sign = double(c > 0) - double(c < 0);
      np[i] = float(p[i] * decay - lr * sign);
      nm[i] = float(b2 * m[i] + (1.0 - b2) * gi);
    }
  });
}

/// The kernel of every compute op, by opcode.
void run(const Args &a) {
  const Instr &instr = a.instr;
  switch (instr.opcode) {
  case Opcode::Matmul:
    return matmul(a);
  case Opcode::Add:
    return binary(a, std::plus<float>());
  case Opcode::Sub:
    return binary(a, std::minus<float>());
  case Opcode::Mul:
    return binary(a, std::multiplies<float>());
  case Opcode::Div:
    return binary(a, std::divides<float>());
  case Opcode::Scale: {
    float f = float(instr.as<ops::ScaleAttrs>().factor);
    return unary(a, [f](float x) { return x * f; });
  }
  case Opcode::Cast:
    return unary(a, [](float x) { return x; });
  case Opcode::BiasAdd: {
    int64_t c = a.inBuf(1).numElements();
    const float *x = a.in(0), *b = a.in(1);
    float *y = a.out(0);
    forRows(c ? a.n() / c : 0, c, [&](int64_t r) {
      for (int64_t k = 0; k < c; ++k)
        y[r * c + k] = x[r * c + k] + b[k];
    });
    return;
  }
  case Opcode::ReduceSum:
    return reduce(a, false, instr.as<ops::ReduceSumAttrs>().dims);
  case Opcode::ReduceMean:
    return reduce(a, true, instr.as<ops::ReduceMeanAttrs>().dims);
  case Opcode::Relu:
    // As PyTorch: relu(NaN) is NaN, and its backward (threshold_backward)
    // passes the gradient where the input is NaN: only x <= 0 is cut.
    return unary(a, [](float x) { return x <= 0 ? 0.0f : x; });
  case Opcode::ReluBackward:
    return binary(a, [](float g, float s) { return s <= 0 ? 0.0f : g; });
  case Opcode::Gelu: {
    bool t = instr.as<ops::GeluAttrs>().approximate_tanh;
    const float *x = a.in(0);
    float *y = a.out(0);
    if (instr.operands.size() == 2)
      return biasedRows(a, x, [&](const float *h, int64_t r, int64_t n) {
        vectorMath().gelu(h, y + r * n, n, t);
      });
    return parallelFor(a.n(), kGrain, [&](int64_t b, int64_t e) {
      vectorMath().gelu(x + b, y + b, e - b, t);
    });
  }
  case Opcode::GeluBackward: {
    bool t = instr.as<ops::GeluBackwardAttrs>().approximate_tanh;
    const float *g = a.in(0), *x = a.in(1);
    float *y = a.out(0);
    if (instr.operands.size() == 3)
      return biasedRows(a, x, [&](const float *h, int64_t r, int64_t n) {
        vectorMath().geluBackward(g + r * n, h, y + r * n, n, t);
      });
    return parallelFor(a.n(), kGrain, [&](int64_t b, int64_t e) {
      vectorMath().geluBackward(g + b, x + b, y + b, e - b, t);
    });
  }
  case Opcode::Unary: {
    ops::UnaryKind k = instr.as<ops::UnaryAttrs>().kind;
    const float *x = a.in(0);
    float *y = a.out(0);
    return parallelFor(a.n(), kGrain, [&](int64_t b, int64_t e) {
      vectorMath().unary(k, x + b, y + b, e - b);
    });
  }
  case Opcode::UnaryBackward: {
    ops::UnaryKind k = instr.as<ops::UnaryBackwardAttrs>().kind;
    return binary(a,
                  [k](float g, float s) { return float(unaryGrad(k, g, s)); });
  }
  case Opcode::Pow: {
    double e = instr.as<ops::PowAttrs>().exponent;
    if (e == 2.0)
      return unary(a, [](float x) { return x * x; });
    return unary(a, [e](float x) { return float(std::pow(double(x), e)); });
  }
  case Opcode::Where:
  case Opcode::DropoutMask:
    return runCpuMaskKernel(a.plan, instr, a.arena, a.inData, a.outData);
  case Opcode::Attention:
  case Opcode::AttentionBackward:
    return runCpuAttention(a.plan, instr, a.inData, a.outData);
    BRAID_CASE_CPU_NORM_OPCODES
    return runCpuNormKernel(a);
  case Opcode::CausalMask: {
    const auto &s = a.inBuf(0).shape;
    int64_t n = s.back();
    float fill = float(instr.as<ops::CausalMaskAttrs>().fill);
    const float *x = a.in(0);
    float *y = a.out(0);
    // Row `row` of each [n, n] matrix keeps columns 0..row.
    forRows(n ? a.n() / n : 0, n, [&](int64_t r) {
      int64_t row = r % n;
      const float *in = x + r * n;
      float *out = y + r * n;
      std::copy(in, in + row + 1, out);
      std::fill(out + row + 1, out + n, fill);
    });
    return;
  }
    BRAID_CASE_CPU_LOSS_OPCODES
    return runCpuLossKernel(a);
  case Opcode::ShardSlice:
    return shardSlice(a, instr.as<ops::ShardSliceAttrs>());
  case Opcode::ShardConcat:
    return shardConcat(a, instr.as<ops::ShardConcatAttrs>());
  case Opcode::Embedding:
    return embedding(a);
  case Opcode::EmbeddingBackward:
    return embeddingBackward(
        a, instr.as<ops::EmbeddingBackwardAttrs>().padding_idx.value_or(-1));
  case Opcode::EmbeddingShard:
    return embeddingShard(a, instr.as<ops::EmbeddingShardAttrs>().parts);
  case Opcode::EmbeddingShardBackward: {
    const auto &attrs = instr.as<ops::EmbeddingShardBackwardAttrs>();
    return embeddingShardBackward(a, attrs.parts,
                                  attrs.padding_idx.value_or(-1));
  }
  case Opcode::Reshape:
    // Nothing to move where the memory plan gave the result its operand's
    // bytes (a view: Braid_View).
    if (a.outBuf(0).offset != a.inBuf(0).offset)
      std::memmove(a.arena + a.outBuf(0).offset, a.arena + a.inBuf(0).offset,
                   a.outBuf(0).bytes);
    return;
  case Opcode::Transpose:
  case Opcode::Broadcast:
  case Opcode::Slice:
    return gatherView(a);
  case Opcode::Concat:
    return concat(a);
  case Opcode::Constant: {
    const auto &data = instr.as<ops::ConstantAttrs>().value;
    std::memcpy(a.arena + a.outBuf(0).offset, data.data(), data.size());
    return;
  }
  case Opcode::Fill: {
    float v = float(instr.as<ops::FillAttrs>().value);
    std::fill(a.out(0), a.out(0) + a.n(), v);
    return;
  }
  case Opcode::SumSquares: {
    double total = 0;
    for (size_t i = 0; i < instr.operands.size(); ++i) {
      const float *x = a.in(i);
      for (int64_t k = 0, n = a.inBuf(i).numElements(); k < n; ++k)
        total += double(x[k]) * x[k];
    }
    a.out(0)[0] = float(total);
    return;
  }
  case Opcode::ClipCoefficient: {
    // torch.nn.utils.clip_grad_norm_: max_norm / (norm + 1e-6), at most 1.
    double norm = std::sqrt(double(a.in(0)[0]));
    double coefficient =
        instr.as<ops::ClipCoefficientAttrs>().max_norm / (norm + 1e-6);
    a.out(0)[0] = float(std::isnan(coefficient) ? coefficient
                                                : std::min(coefficient, 1.0));
    return;
  }
  case Opcode::Sgd:
    return sgd(a);
  case Opcode::AdamW:
    return adamw(a);
  case Opcode::Lion:
    return lion(a);
    BRAID_CASE_NON_KERNEL_OPCODES
    throw KernelError(instr.describe() + ": is not a kernel");
  }
}

} // namespace

void braid::rt::runF32Kernel(const Plan &plan, const Instr &instr,
                             uint8_t *arena, std::vector<const float *> inData,
                             std::vector<float *> outData) {
  run(Args{plan, instr, arena, std::move(inData), std::move(outData)});
}
