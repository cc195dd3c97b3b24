//===- CpuNorm.cpp - softmax and layer norm on the cpu --------------------===//
//
// Row-wise normalizations and their backward: softmax and log-softmax along
// any dimension (exponentials through CpuVectorMath.h), with the scale and
// causal mask braid-fuse-kernels folds into them, layer norm over the
// trailing dimensions. Sums accumulate in double; rows are split over the
// kernel's threads (CpuParallel.h), never inside a row, and layer norm's
// weight gradients by columns, each summed over the rows in order.
//
//===----------------------------------------------------------------------===//

#include "CpuArgs.h"
#include "CpuParallel.h"
#include "CpuVectorMath.h"
#include "braid-runtime/HalfFloat.h"

#include <algorithm>
#include <cmath>
#include <vector>

using namespace braid;
using namespace braid::rt;

namespace {

/// [outer, size, inner] around dimension `dim` of `shape`.
void splitAround(const std::vector<int64_t> &shape, int64_t dim, int64_t &outer,
                 int64_t &size, int64_t &inner) {
  outer = product(shape, 0, dim);
  size = shape[dim];
  inner = product(shape, dim + 1, shape.size());
}

/// One row of a softmax or log-softmax: `size` elements read `stride`
/// apart and written `inner` apart; `scratch` holds `size` floats.
void softmaxRowStrided(const float *row, int64_t stride, float *dst,
                       int64_t size, int64_t inner, bool log, bool safe,
                       float *scratch) {
  float mx = -INFINITY;
  for (int64_t k = 0; k < size; ++k)
    mx = std::max(mx, row[k * stride]);
  // Every entry masked: _safe_softmax's 0.
  if (safe && mx == -INFINITY) {
    for (int64_t k = 0; k < size; ++k)
      dst[k * inner] = 0.0f;
    return;
  }
  // The exponentials straight into a contiguous softmax's output.
  float *e = !log && inner == 1 ? dst : scratch;
  double sum = vectorMath().expShifted(row, stride, mx, e, size);
  if (log) {
    double shift = double(mx) + std::log(sum);
    for (int64_t k = 0; k < size; ++k)
      dst[k * inner] = float(row[k * stride] - shift);
    return;
  }
  float inv = float(1.0 / sum);
  for (int64_t k = 0; k < size; ++k)
    dst[k * inner] = e[k] * inv;
}

/// What a softmax folds in before it, or its backward after it
/// (braid-fuse-kernels): the scores' scale and the causal mask over the last
/// two dimensions, which the verifier has checked are equal and the
/// softmax's.
struct Folded {
  float scale = 1.0f;
  bool scaled = false;
  bool causal = false;
};

void softmax(const Args &a, bool log, int64_t dim, bool safe,
             Folded folded = {}) {
  int64_t outer, size, inner;
  splitAround(a.inBuf(0).shape, dim, outer, size, inner);
  const float *x = a.in(0);
  float *y = a.out(0);
  bool fold = folded.scaled || folded.causal;
  int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(size, 1));
  parallelFor(outer * inner, grain, [&](int64_t begin, int64_t end) {
    std::vector<float> scratch(static_cast<size_t>(size));
    std::vector<float> scores(fold ? static_cast<size_t>(size) : 0);
    for (int64_t r = begin; r < end; ++r) {
      int64_t base = r / inner * size * inner + r % inner;
      const float *row = x + base;
      int64_t stride = inner;
      if (fold) {
        // The row braid.scale and braid.causal_mask would have written
        // (a causal softmax is along the last dimension: inner is 1).
        int64_t keep = folded.causal ? r % size + 1 : size;
        for (int64_t k = 0; k < keep; ++k)
          scores[k] =
              folded.scaled ? row[k * inner] * folded.scale : row[k * inner];
        // The scaled scores as braid.scale would have stored them.
        if (folded.scaled)
          roundToHalf(a.inBuf(0).dtype, scores.data(), keep);
        std::fill(scores.begin() + keep, scores.end(), -INFINITY);
        row = scores.data();
        stride = 1;
      }
      softmaxRowStrided(row, stride, y + base, size, inner, log, safe,
                        scratch.data());
    }
  });
}

void softmaxBackward(const Args &a, bool log, int64_t dim, Folded folded = {}) {
  int64_t outer, size, inner;
  splitAround(a.inBuf(0).shape, dim, outer, size, inner);
  const float *g = a.in(0), *y = a.in(1);
  float *dx = a.out(0);
  forRows(outer * inner, size, [&](int64_t r) {
    int64_t base = r / inner * size * inner + r % inner;
    double sum = 0;
    for (int64_t k = 0; k < size; ++k)
      sum += log ? g[base + k * inner]
                 : double(g[base + k * inner]) * y[base + k * inner];
    // Columns past `keep` are the folded mask's zeros (inner is 1).
    int64_t keep = folded.causal ? r % size + 1 : size;
    for (int64_t k = 0; k < keep; ++k) {
      int64_t at = base + k * inner;
      dx[at] = log ? float(g[at] - std::exp(double(y[at])) * sum)
                   : float(y[at] * (g[at] - sum));
    }
    // The gradient as braid.softmax_backward would have stored it, then
    // braid.scale's product (rounded when the result is stored).
    if (folded.scaled) {
      DType stored = a.outBuf(0).dtype;
      if (inner == 1)
        roundToHalf(stored, dx + base, keep);
      for (int64_t k = 0; k < keep; ++k) {
        float *at = dx + base + k * inner;
        if (inner != 1)
          roundToHalf(stored, at, 1);
        *at *= folded.scale;
      }
    }
    for (int64_t k = keep; k < size; ++k)
      dx[base + k * inner] = folded.scaled ? 0.0f * folded.scale : 0.0f;
  });
}

template <typename Attrs> Folded foldedOf(const Attrs &attrs) {
  Folded f;
  f.scale = float(attrs.scale);
  f.scaled = attrs.scale != 1.0;
  f.causal = attrs.causal;
  return f;
}

void layerNorm(const Args &a) {
  int64_t d = a.inBuf(1).numElements();
  int64_t rows = d ? a.inBuf(0).numElements() / d : 0;
  double eps = a.instr.as<ops::LayerNormAttrs>().epsilon;
  const float *x = a.in(0), *g = a.in(1), *b = a.in(2);
  float *y = a.out(0), *mean = a.out(1), *rstd = a.out(2);
  forRows(rows, d, [&](int64_t r) {
    const float *row = x + r * d;
    double mu = 0;
    for (int64_t k = 0; k < d; ++k)
      mu += row[k];
    mu /= d;
    double var = 0;
    for (int64_t k = 0; k < d; ++k)
      var += (row[k] - mu) * (row[k] - mu);
    var /= d;
    double rs = 1.0 / std::sqrt(var + eps);
    mean[r] = float(mu);
    rstd[r] = float(rs);
    for (int64_t k = 0; k < d; ++k)
      y[r * d + k] = float((row[k] - mu) * rs * g[k] + b[k]);
  });
}

void layerNormBackward(const Args &a) {
  int64_t d = a.inBuf(4).numElements();
  int64_t rows = d ? a.inBuf(1).numElements() / d : 0;
  const float *dy = a.in(0), *x = a.in(1), *mean = a.in(2), *rstd = a.in(3),
              *g = a.in(4);
  float *dx = a.out(0), *dg = a.out(1), *db = a.out(2);
  // dx row by row; gamma's and beta's gradients column by column, each
  // summed over the rows in order: the same bits on any number of threads.
  auto rowGrad = [&](int64_t r, double *dgAcc, double *dbAcc) {
    double mu = mean[r], rs = rstd[r];
    double sumDyG = 0, sumDyGXhat = 0;
    for (int64_t k = 0; k < d; ++k) {
      double xhat = (x[r * d + k] - mu) * rs;
      double dyg = double(dy[r * d + k]) * g[k];
      sumDyG += dyg;
      sumDyGXhat += dyg * xhat;
      if (dgAcc) {
        dgAcc[k] += double(dy[r * d + k]) * xhat;
        dbAcc[k] += dy[r * d + k];
      }
    }
    for (int64_t k = 0; k < d; ++k) {
      double xhat = (x[r * d + k] - mu) * rs;
      double dyg = double(dy[r * d + k]) * g[k];
      dx[r * d + k] = float(rs * (dyg - sumDyG / d - xhat * sumDyGXhat / d));
    }
  };
  std::vector<double> dgAcc(d, 0.0), dbAcc(d, 0.0);
  if (cpuThreads() == 1 || rows * d < 2 * kGrain) {
    // One pass over the rows.
    for (int64_t r = 0; r < rows; ++r)
      rowGrad(r, dgAcc.data(), dbAcc.data());
  } else {
    forRows(rows, d, [&](int64_t r) { rowGrad(r, nullptr, nullptr); });
    int64_t grain = std::max<int64_t>(16, kGrain / std::max<int64_t>(rows, 1));
    parallelFor(d, grain, [&](int64_t begin, int64_t end) {
      for (int64_t r = 0; r < rows; ++r) {
        double mu = mean[r], rs = rstd[r];
        for (int64_t k = begin; k < end; ++k) {
          double xhat = (x[r * d + k] - mu) * rs;
          dgAcc[k] += double(dy[r * d + k]) * xhat;
          dbAcc[k] += dy[r * d + k];
        }
      }
    });
  }
  for (int64_t k = 0; k < d; ++k) {
    dg[k] = float(dgAcc[k]);
    db[k] = float(dbAcc[k]);
  }
}

} // namespace

void braid::rt::runCpuNormKernel(const Args &a) {
  const Instr &instr = a.instr;
  switch (instr.opcode) {
  case Opcode::Softmax: {
    const auto &attrs = instr.as<ops::SoftmaxAttrs>();
    return softmax(a, false, attrs.dim, attrs.safe, foldedOf(attrs));
  }
  case Opcode::LogSoftmax:
    return softmax(a, true, instr.as<ops::LogSoftmaxAttrs>().dim, false);
  case Opcode::SoftmaxBackward: {
    const auto &attrs = instr.as<ops::SoftmaxBackwardAttrs>();
    return softmaxBackward(a, false, attrs.dim, foldedOf(attrs));
  }
  case Opcode::LogSoftmaxBackward:
    return softmaxBackward(a, true,
                           instr.as<ops::LogSoftmaxBackwardAttrs>().dim);
  case Opcode::LayerNorm:
    return layerNorm(a);
  case Opcode::LayerNormBackward:
    return layerNormBackward(a);
    // The cpu_norm table's ops (the ODS's kernelTables) are the cases
    // above; a new one does not compile until it has its case.
    BRAID_CASE_NOT_CPU_NORM_OPCODES
    break;
  }
  throw KernelError(instr.describe() + ": not a normalization kernel");
}
