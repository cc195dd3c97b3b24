//===- Views.h - data movement as strided reads -----------------*- C++ -*-===//

#ifndef BRAID_RUNTIME_LIB_VIEWS_H
#define BRAID_RUNTIME_LIB_VIEWS_H

#include "braid-runtime/Plan.h"

namespace braid::rt {

/// How transpose, broadcast and slice read their input: result element at
/// coordinates c reads input element `base + sum(c[k] * strides[k])`.
/// Shared by the backends, which then copy element by element.
struct StridedView {
  std::vector<int64_t> strides;
  int64_t base = 0;
};

/// The view of a `transpose`, `broadcast` or `slice` instruction (checked by
/// the loader).
StridedView getStridedView(const Plan &plan, const Instr &instr);

/// How a matmul instruction reads its operands and writes its result, in
/// BLAS's row-major terms: each operand's matrix transposed or not with its
/// leading dimension, the result's leading dimension, and per batch the
/// element offsets of the three matrices. Permuted operands and results
/// (`lhs_permutation` ...) are read and written where they are: the loader
/// has checked that each matrix keeps a unit-stride dimension. The call is
/// gemm(transLeft, transRight, m, n, k, left + leftOffset, ldLeft, right +
/// rightOffset, ldRight, out + outOffset, ldc), row-major.
struct MatmulGeometry {
  /// The operand BLAS takes as its left matrix: 0, or 1 where the result
  /// is written transposed (C^T = B^T A^T, its rows of unit stride).
  int left = 0;
  int64_t batch = 0, m = 0, n = 0, k = 0;
  bool transLeft = false, transRight = false;
  int64_t ldLeft = 1, ldRight = 1, ldc = 1;
  std::vector<int64_t> leftOffset, rightOffset, outOffset;
};

/// The geometry of a (checked) matmul instruction.
MatmulGeometry getMatmulGeometry(const Plan &plan, const Instr &instr);

/// How a shard op (shard_slice, shard_concat) cuts its whole tensor into
/// `parts` pieces along `dim`: `rows` rows (the dimensions before `dim`),
/// each `pitch` bytes of `parts` runs of `piece` bytes, run i of every row
/// being piece i.
struct ShardRows {
  uint64_t rows = 1, pitch = 0, piece = 0;
};

/// The cut of `whole` (checked by the loader); all 0 bytes when it is empty.
ShardRows getShardRows(const Buffer &whole, int64_t dim, int64_t parts);

} // namespace braid::rt

#endif // BRAID_RUNTIME_LIB_VIEWS_H
