//===- CpuAttention.cpp - the cpu kernels of braid.attention ----*- C++ -*-===//
//
// Fused attention, forward and backward, one query row at a time as
// FlashAttention computes it: the scores of a row are made, used and
// dropped, never stored for the whole [S, Skv] matrix. Sums run in double
// and each result is rounded to float once. The backward recomputes the
// probabilities from the saved logsumexp.
//
//===----------------------------------------------------------------------===//

#include "CpuKernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

using namespace braid;
using namespace braid::rt;

namespace {

struct Sizes {
  int64_t batch, heads, kvHeads, seq, kvSeq, dim, valueDim;
  int64_t group() const { return heads / kvHeads; }
  /// Keys that query row i attends to: 0 .. keys(i) - 1.
  int64_t keys(int64_t i, bool causal) const {
    return causal ? std::min(i + 1, kvSeq) : kvSeq;
  }
};

Sizes sizesOf(const Plan &plan, const Instr &instr, size_t query, size_t key,
              size_t value) {
  const auto &q = plan.buffers[instr.operands[query]].shape;
  const auto &k = plan.buffers[instr.operands[key]].shape;
  const auto &v = plan.buffers[instr.operands[value]].shape;
  return {q[0], q[1], k[1], q[2], k[2], q[3], v[3]};
}

double dot(const float *a, const float *b, int64_t n) {
  double s = 0;
  for (int64_t d = 0; d < n; ++d)
    s += double(a[d]) * b[d];
  return s;
}

void forward(const Sizes &z, bool causal, double scale, const float *q,
             const float *k, const float *v, float *o, float *lse) {
  std::vector<double> p(z.kvSeq), acc(z.valueDim);
  for (int64_t b = 0; b < z.batch; ++b)
    for (int64_t h = 0; h < z.heads; ++h) {
      int64_t g = h / z.group();
      const float *kh = k + (b * z.kvHeads + g) * z.kvSeq * z.dim;
      const float *vh = v + (b * z.kvHeads + g) * z.kvSeq * z.valueDim;
      for (int64_t i = 0; i < z.seq; ++i) {
        int64_t row = (b * z.heads + h) * z.seq + i, n = z.keys(i, causal);
        const float *qi = q + row * z.dim;
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < n; ++j) {
          p[j] = scale * dot(qi, kh + j * z.dim, z.dim);
          mx = std::max(mx, p[j]);
        }
        double sum = 0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < n; ++j) {
          double e = std::exp(p[j] - mx);
          sum += e;
          for (int64_t d = 0; d < z.valueDim; ++d)
            acc[d] += e * vh[j * z.valueDim + d];
        }
        float *oi = o + row * z.valueDim;
        for (int64_t d = 0; d < z.valueDim; ++d)
          oi[d] = n ? float(acc[d] / sum) : 0.0f;
        lse[row] = n ? float(mx + std::log(sum))
                     : -std::numeric_limits<float>::infinity();
      }
    }
}

void backward(const Sizes &z, bool causal, double scale, const float *dout,
              const float *q, const float *k, const float *v, const float *o,
              const float *lse, float *dq, float *dk, float *dv) {
  // dK and dV sum over the query rows and the heads of a group: in double.
  std::vector<double> dkAcc(z.batch * z.kvHeads * z.kvSeq * z.dim, 0.0);
  std::vector<double> dvAcc(z.batch * z.kvHeads * z.kvSeq * z.valueDim, 0.0);
  std::vector<double> dqi(z.dim);
  for (int64_t b = 0; b < z.batch; ++b)
    for (int64_t h = 0; h < z.heads; ++h) {
      int64_t g = h / z.group(), kvBase = (b * z.kvHeads + g) * z.kvSeq;
      const float *kh = k + kvBase * z.dim, *vh = v + kvBase * z.valueDim;
      for (int64_t i = 0; i < z.seq; ++i) {
        int64_t row = (b * z.heads + h) * z.seq + i, n = z.keys(i, causal);
        const float *qi = q + row * z.dim, *doi = dout + row * z.valueDim;
        // D_i = dO_i . O_i, the softmax backward's row sum.
        double rowSum = dot(doi, o + row * z.valueDim, z.valueDim);
        std::fill(dqi.begin(), dqi.end(), 0.0);
        for (int64_t j = 0; j < n; ++j) {
          double p =
              std::exp(scale * dot(qi, kh + j * z.dim, z.dim) - lse[row]);
          double dp = dot(doi, vh + j * z.valueDim, z.valueDim);
          double ds = p * (dp - rowSum) * scale;
          double *dkj = &dkAcc[(kvBase + j) * z.dim];
          double *dvj = &dvAcc[(kvBase + j) * z.valueDim];
          for (int64_t d = 0; d < z.dim; ++d) {
            dqi[d] += ds * kh[j * z.dim + d];
            dkj[d] += ds * qi[d];
          }
          for (int64_t d = 0; d < z.valueDim; ++d)
            dvj[d] += p * doi[d];
        }
        for (int64_t d = 0; d < z.dim; ++d)
          dq[row * z.dim + d] = float(dqi[d]);
      }
    }
  for (size_t i = 0; i < dkAcc.size(); ++i)
    dk[i] = float(dkAcc[i]);
  for (size_t i = 0; i < dvAcc.size(); ++i)
    dv[i] = float(dvAcc[i]);
}

} // namespace

void braid::rt::runCpuAttention(const Plan &plan, const Instr &instr,
                                const std::vector<const float *> &in,
                                const std::vector<float *> &out) {
  if (instr.opcode == Opcode::Attention) {
    const auto &a = instr.as<ops::AttentionAttrs>();
    forward(sizesOf(plan, instr, 0, 1, 2), a.causal, a.scale, in[0], in[1],
            in[2], out[0], out[1]);
    return;
  }
  const auto &a = instr.as<ops::AttentionBackwardAttrs>();
  backward(sizesOf(plan, instr, 1, 2, 3), a.causal, a.scale, in[0], in[1],
           in[2], in[3], in[4], in[5], out[0], out[1], out[2]);
}
