//===- Views.cpp - data movement as strided reads -------------------------===//

#include "Views.h"

#include <algorithm>
#include <optional>

using namespace braid;
using namespace braid::rt;

StridedView braid::rt::getStridedView(const Plan &plan, const Instr &instr) {
  const Buffer &x = plan.buffers[instr.operands[0]];
  const Buffer &y = plan.buffers[instr.results[0]];
  std::vector<int64_t> inStrides = stridesOf(x.shape);
  StridedView view;
  // Only the three view ops call this (their kernels).
  if (instr.opcode == Opcode::Transpose) {
    for (int64_t p : instr.as<ops::TransposeAttrs>().permutation)
      view.strides.push_back(inStrides[p]);
  } else if (instr.opcode == Opcode::Broadcast) {
    // The added dimensions read the same input element (stride 0).
    const auto &dims = instr.as<ops::BroadcastAttrs>().dims;
    for (size_t d = 0, k = 0; d < y.shape.size(); ++d)
      view.strides.push_back(std::count(dims.begin(), dims.end(), int64_t(d))
                                 ? 0
                                 : inStrides[k++]);
  } else {
    const auto &attrs = instr.as<ops::SliceAttrs>();
    std::vector<int64_t> steps = attrs.strides
                                     ? *attrs.strides
                                     : std::vector<int64_t>(x.shape.size(), 1);
    for (size_t d = 0; d < x.shape.size(); ++d) {
      view.strides.push_back(inStrides[d] * steps[d]);
      view.base += attrs.offsets[d] * inStrides[d];
    }
  }
  return view;
}

namespace {

/// A value as the product sees it: shape and element strides of each
/// dimension, through a slice (`[dim, offset, size]`, its first element at
/// `base`) and a permutation when there are.
struct Logical {
  std::vector<int64_t> shape, strides;
  int64_t base = 0;
};

Logical logical(const Buffer &b,
                const std::optional<std::vector<int64_t>> &slice,
                const std::optional<std::vector<int64_t>> &perm) {
  Logical l;
  std::vector<int64_t> strides = stridesOf(b.shape), shape = b.shape;
  if (slice) {
    shape[(*slice)[0]] = (*slice)[2];
    l.base = (*slice)[1] * strides[(*slice)[0]];
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    size_t from = perm ? size_t((*perm)[d]) : d;
    l.shape.push_back(shape[from]);
    l.strides.push_back(strides[from]);
  }
  return l;
}

/// BLAS's view of a rows x cols matrix with strides (rowStride, colStride):
/// row-major with leading dimension rowStride, or transposed with
/// colStride. A dimension of size 1 takes any stride.
void blasMatrix(int64_t rows, int64_t cols, int64_t rowStride,
                int64_t colStride, bool &trans, int64_t &ld) {
  if (colStride == 1 || cols <= 1) {
    trans = false;
    ld = rows <= 1 ? std::max<int64_t>(cols, 1) : rowStride;
  } else {
    trans = true;
    ld = cols <= 1 ? std::max<int64_t>(rows, 1) : colStride;
  }
}

/// Offsets of every batch index (row-major over `shape`) under `strides`.
std::vector<int64_t> batchOffsets(const std::vector<int64_t> &shape,
                                  const std::vector<int64_t> &strides) {
  std::vector<int64_t> offsets = {0};
  for (size_t d = 0; d < shape.size(); ++d) {
    std::vector<int64_t> next;
    next.reserve(offsets.size() * size_t(shape[d]));
    for (int64_t base : offsets)
      for (int64_t i = 0; i < shape[d]; ++i)
        next.push_back(base + i * strides[d]);
    offsets = std::move(next);
  }
  return offsets;
}

} // namespace

MatmulGeometry braid::rt::getMatmulGeometry(const Plan &plan,
                                            const Instr &instr) {
  const auto &attrs = instr.as<ops::MatmulAttrs>();
  Logical a = logical(plan.buffers[instr.operands[0]], attrs.lhs_slice,
                      attrs.lhs_permutation);
  Logical b = logical(plan.buffers[instr.operands[1]], attrs.rhs_slice,
                      attrs.rhs_permutation);
  const Buffer &o = plan.buffers[instr.results[0]];
  size_t ra = a.shape.size(), rb = b.shape.size(), ro = o.shape.size();
  // The product's result dimension e is stored dimension d where
  // result_permutation[d] == e.
  std::vector<int64_t> oStrides(ro), stored = stridesOf(o.shape);
  for (size_t d = 0; d < ro; ++d)
    oStrides[attrs.result_permutation ? size_t((*attrs.result_permutation)[d])
                                      : d] = stored[d];

  MatmulGeometry g;
  bool ta = attrs.transpose_a, tb = attrs.transpose_b;
  size_t am = ta ? ra - 1 : ra - 2, ak = ta ? ra - 2 : ra - 1;
  size_t bk = tb ? rb - 1 : rb - 2, bn = tb ? rb - 2 : rb - 1;
  int64_t m = a.shape[am], k = a.shape[ak], n = b.shape[bn];
  std::vector<int64_t> batchShape(a.shape.begin(), a.shape.end() - 2);
  std::vector<int64_t> lhsOffset = batchOffsets(
      batchShape, std::vector<int64_t>(a.strides.begin(), a.strides.end() - 2));
  std::vector<int64_t> rhsOffset =
      rb == 2
          ? std::vector<int64_t>(lhsOffset.size(), 0)
          : batchOffsets(batchShape, std::vector<int64_t>(b.strides.begin(),
                                                          b.strides.end() - 2));
  for (int64_t &offset : lhsOffset)
    offset += a.base;
  for (int64_t &offset : rhsOffset)
    offset += b.base;
  g.outOffset = batchOffsets(
      batchShape, std::vector<int64_t>(oStrides.begin(), oStrides.end() - 2));
  g.batch = int64_t(lhsOffset.size());
  g.k = k;
  // A result whose rows have unit stride (its last two dimensions stored
  // swapped) is computed as its transpose: C^T = B^T A^T.
  if (oStrides[ro - 1] != 1 && n > 1) {
    g.left = 1;
    g.m = n;
    g.n = m;
    blasMatrix(n, k, b.strides[bn], b.strides[bk], g.transLeft, g.ldLeft);
    blasMatrix(k, m, a.strides[ak], a.strides[am], g.transRight, g.ldRight);
    g.ldc = oStrides[ro - 1];
    g.leftOffset = std::move(rhsOffset);
    g.rightOffset = std::move(lhsOffset);
    return g;
  }
  g.m = m;
  g.n = n;
  blasMatrix(m, k, a.strides[am], a.strides[ak], g.transLeft, g.ldLeft);
  blasMatrix(k, n, b.strides[bk], b.strides[bn], g.transRight, g.ldRight);
  g.ldc = m <= 1 ? std::max<int64_t>(n, 1) : oStrides[ro - 2];
  g.leftOffset = std::move(lhsOffset);
  g.rightOffset = std::move(rhsOffset);
  return g;
}

ShardRows braid::rt::getShardRows(const Buffer &whole, int64_t dim,
                                  int64_t parts) {
  ShardRows r;
  for (int64_t d = 0; d < dim; ++d)
    r.rows *= uint64_t(whole.shape[d]);
  if (!r.rows || !whole.bytes || parts < 1)
    return ShardRows{r.rows, 0, 0};
  r.pitch = whole.bytes / r.rows;
  r.piece = r.pitch / uint64_t(parts);
  return r;
}
