//===- BraidAttentionOps.cpp - braid.attention and its backward -*- C++ -*-===//
//
// The verifiers and costs of the fused attention ops (BraidAttentionOps.td);
// their tensor-parallel rule is in ShardingRules.cpp with the others.
//
//===----------------------------------------------------------------------===//

#include "braid/Dialect/Braid/BraidOps.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace braid;

namespace {

/// The sizes of one attention: query [B, H, S, D], key [B, Hkv, Skv, D],
/// value [B, Hkv, Skv, Dv].
struct AttentionSizes {
  int64_t batch, heads, kvHeads, seq, kvSeq, dim, valueDim;
};

AttentionSizes sizesOf(Value query, Value key, Value value) {
  auto q = cast<RankedTensorType>(query.getType()).getShape();
  auto k = cast<RankedTensorType>(key.getType()).getShape();
  auto v = cast<RankedTensorType>(value.getType()).getShape();
  return {q[0], q[1], k[1], q[2], k[2], q[3], v[3]};
}

std::string shapeText(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? ", " : "") + std::to_string(d);
  return s + "]";
}

/// Checks the operands' ranks and sizes and the output's and logsumexp's
/// shapes, naming the value that does not fit.
LogicalResult verifyAttention(Operation *op, Value query, Value key,
                              Value value, Value output, Value logsumexp) {
  for (auto [name, v] : {std::pair<StringRef, Value>{"query", query},
                         {"key", key},
                         {"value", value},
                         {"output", output}}) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getRank() != 4)
      return op->emitOpError()
             << name << " must be [batch, heads, sequence, head size], but is "
             << shapeText(type.getShape());
  }
  AttentionSizes s = sizesOf(query, key, value);
  auto k = cast<RankedTensorType>(key.getType()).getShape();
  auto v = cast<RankedTensorType>(value.getType()).getShape();
  if (k[0] != s.batch || v[0] != s.batch)
    return op->emitOpError() << "query, key and value have batch sizes "
                             << s.batch << ", " << k[0] << " and " << v[0];
  if (v[1] != s.kvHeads || v[2] != s.kvSeq)
    return op->emitOpError() << "key " << shapeText(k) << " and value "
                             << shapeText(v) << " differ in heads or sequence";
  if (k[3] != s.dim)
    return op->emitOpError() << "key head size " << k[3]
                             << " differs from the query's (" << s.dim << ")";
  if (s.kvHeads <= 0 || s.heads % s.kvHeads)
    return op->emitOpError()
           << s.heads << " query heads do not group over " << s.kvHeads
           << " key/value heads (the query heads must be a multiple)";
  SmallVector<int64_t> out = {s.batch, s.heads, s.seq, s.valueDim};
  auto outShape = cast<RankedTensorType>(output.getType()).getShape();
  if (outShape != ArrayRef<int64_t>(out))
    return op->emitOpError() << "output is " << shapeText(outShape)
                             << ", expected " << shapeText(out);
  auto lse = cast<RankedTensorType>(logsumexp.getType());
  SmallVector<int64_t> rows = {s.batch, s.heads, s.seq};
  if (lse.getShape() != ArrayRef<int64_t>(rows) ||
      !lse.getElementType().isF32())
    return op->emitOpError()
           << "logsumexp must be f32 " << shapeText(rows) << ", but is " << lse;
  return success();
}

/// Query-key pairs that one head of the attention scores: all of them, or
/// under `causal` those with key index <= query index.
uint64_t scoredPairs(const AttentionSizes &s, bool causal) {
  if (!causal)
    return uint64_t(s.seq) * s.kvSeq;
  uint64_t pairs = 0;
  for (int64_t i = 0; i < s.seq; ++i)
    pairs += std::min<int64_t>(i + 1, s.kvSeq);
  return pairs;
}

} // namespace

LogicalResult AttentionOp::verify() {
  return verifyAttention(*this, getQuery(), getKey(), getValue(), getOutput(),
                         getLogsumexp());
}

LogicalResult AttentionBackwardOp::verify() {
  return verifyAttention(*this, getQuery(), getKey(), getValue(), getOutput(),
                         getLogsumexp());
}

// FlashAttention's count: the two products of each scored pair, 2 * D for
// the scores and 2 * Dv for the output, and 5 for the softmax's exp, max,
// sum and scaling; the backward recomputes the scores and adds three more
// products (dP = dO V^T, dV = P^T dO, and dQ and dK from dS: 2 * D each):
// 2.5x the forward's matmuls, as the FlashAttention-2 paper counts.
uint64_t AttentionOp::getFlops() {
  AttentionSizes s = sizesOf(getQuery(), getKey(), getValue());
  return uint64_t(s.batch) * s.heads * scoredPairs(s, getCausal()) *
         (2 * s.dim + 2 * s.valueDim + 5);
}

uint64_t AttentionBackwardOp::getFlops() {
  AttentionSizes s = sizesOf(getQuery(), getKey(), getValue());
  return uint64_t(s.batch) * s.heads * scoredPairs(s, getCausal()) *
         (6 * s.dim + 4 * s.valueDim + 8);
}
