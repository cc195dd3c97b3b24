//===- CudaAttention.cu - the cuda kernels of braid.attention -------------===//
//
// Fused attention, forward and backward, one thread per query row (the
// cpu kernels' formulation: CpuAttention.cpp), the row's scores recomputed
// where they are needed instead of stored. The backward adds each row's
// share of the key and value gradients with atomics. Written for
// correctness first: the cost model charges FlashAttention's time, which
// a tiled kernel (or cuDNN's) would approach.
//
//===----------------------------------------------------------------------===//

#include "CudaDevice.cuh"
#include "CudaKernels.h"

#include "braid-runtime/Executor.h"

#include <cmath>

using namespace braid;
using namespace braid::rt;

namespace {

struct Sizes {
  int64_t batch, heads, kvHeads, seq, kvSeq, dim, valueDim;
};

__device__ double dotRow(const float *a, const float *b, int64_t n) {
  double s = 0;
  for (int64_t d = 0; d < n; ++d)
    s += double(a[d]) * b[d];
  return s;
}

} // namespace

void braid::rt::launchAttentionKernel(const Plan &plan, const Instr &instr,
                                      uint8_t *arena, cudaStream_t stream) {
  auto buf = [&](uint32_t id) { return plan.buffers[id]; };
  auto in = [&](size_t i) {
    return reinterpret_cast<const float *>(arena +
                                           buf(instr.operands[i]).offset);
  };
  auto out = [&](size_t i) {
    return reinterpret_cast<float *>(arena + buf(instr.results[i]).offset);
  };
  bool fwd = instr.opcode == Opcode::Attention;
  size_t first = fwd ? 0 : 1;
  const auto &qs = buf(instr.operands[first]).shape;
  const auto &ks = buf(instr.operands[first + 1]).shape;
  const auto &vs = buf(instr.operands[first + 2]).shape;
  Sizes z{qs[0], qs[1], ks[1], qs[2], ks[2], qs[3], vs[3]};
  int64_t rows = z.batch * z.heads * z.seq;
  if (fwd) {
    const auto &a = instr.as<ops::AttentionAttrs>();
    bool causal = a.causal;
    double scale = a.scale;
    const float *q = in(0), *k = in(1), *v = in(2);
    float *o = out(0), *lse = out(1);
    forEach(rows, stream, [=] __device__(int64_t row) {
      int64_t i = row % z.seq, h = (row / z.seq) % z.heads,
              b = row / (z.seq * z.heads);
      int64_t base = (b * z.kvHeads + h / (z.heads / z.kvHeads)) * z.kvSeq;
      int64_t n = causal ? (i + 1 < z.kvSeq ? i + 1 : z.kvSeq) : z.kvSeq;
      const float *qi = q + row * z.dim;
      double mx = -INFINITY;
      for (int64_t j = 0; j < n; ++j)
        mx = fmax(mx, scale * dotRow(qi, k + (base + j) * z.dim, z.dim));
      float *oi = o + row * z.valueDim;
      for (int64_t d = 0; d < z.valueDim; ++d)
        oi[d] = 0.0f;
      double sum = 0;
      for (int64_t j = 0; j < n; ++j)
        sum += exp(scale * dotRow(qi, k + (base + j) * z.dim, z.dim) - mx);
      for (int64_t j = 0; j < n; ++j) {
        double p =
            exp(scale * dotRow(qi, k + (base + j) * z.dim, z.dim) - mx) / sum;
        for (int64_t d = 0; d < z.valueDim; ++d)
          oi[d] += float(p * v[(base + j) * z.valueDim + d]);
      }
      lse[row] = n ? float(mx + log(sum)) : -INFINITY;
    });
    return;
  }
  const auto &a = instr.as<ops::AttentionBackwardAttrs>();
  bool causal = a.causal;
  double scale = a.scale;
  const float *dout = in(0), *q = in(1), *k = in(2), *v = in(3), *o = in(4),
              *lse = in(5);
  float *dq = out(0), *dk = out(1), *dv = out(2);
  cudaMemsetAsync(dk, 0, buf(instr.results[1]).bytes, stream);
  cudaMemsetAsync(dv, 0, buf(instr.results[2]).bytes, stream);
  forEach(rows, stream, [=] __device__(int64_t row) {
    int64_t i = row % z.seq, h = (row / z.seq) % z.heads,
            b = row / (z.seq * z.heads);
    int64_t base = (b * z.kvHeads + h / (z.heads / z.kvHeads)) * z.kvSeq;
    int64_t n = causal ? (i + 1 < z.kvSeq ? i + 1 : z.kvSeq) : z.kvSeq;
    const float *qi = q + row * z.dim, *doi = dout + row * z.valueDim;
    double rowSum = dotRow(doi, o + row * z.valueDim, z.valueDim);
    float *dqi = dq + row * z.dim;
    for (int64_t d = 0; d < z.dim; ++d)
      dqi[d] = 0.0f;
    for (int64_t j = 0; j < n; ++j) {
      const float *kj = k + (base + j) * z.dim;
      double p = exp(scale * dotRow(qi, kj, z.dim) - lse[row]);
      double dp = dotRow(doi, v + (base + j) * z.valueDim, z.valueDim);
      double ds = p * (dp - rowSum) * scale;
      for (int64_t d = 0; d < z.dim; ++d) {
        dqi[d] += float(ds * kj[d]);
        atomicAdd(dk + (base + j) * z.dim + d, float(ds * qi[d]));
      }
      for (int64_t d = 0; d < z.valueDim; ++d)
        atomicAdd(dv + (base + j) * z.valueDim + d, float(p * doi[d]));
    }
  });
}
