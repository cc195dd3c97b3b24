//===- BraidAttentionOps.cpp - braid.attention and its backward -*- C++ -*-===//
//
// The verifiers and costs of the fused attention ops (BraidAttentionOps.td);
// their tensor-parallel rule is in ShardingRules.cpp with the others.
//
//===----------------------------------------------------------------------===//

#include "VerifierUtils.h"
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

/// Checks the operands' ranks and sizes, naming the value that does not
/// fit, at `location` (as inferError words it for op `opName`).
LogicalResult checkAttentionOperands(std::optional<Location> location,
                                     StringRef opName, Value query, Value key,
                                     Value value) {
  if (failed(rankedOperandTypes(location, opName, {query, key, value})))
    return failure();
  for (auto [name, v] : {std::pair<StringRef, Value>{"query", query},
                         {"key", key},
                         {"value", value}}) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getRank() != 4)
      return inferError(location, opName, name,
                        " must be [batch, heads, sequence, head size], but is ",
                        shapeText(type.getShape()));
  }
  AttentionSizes s = sizesOf(query, key, value);
  auto k = cast<RankedTensorType>(key.getType()).getShape();
  auto v = cast<RankedTensorType>(value.getType()).getShape();
  if (k[0] != s.batch || v[0] != s.batch)
    return inferError(location, opName,
                      "query, key and value have batch sizes ", s.batch, ", ",
                      k[0], " and ", v[0]);
  if (v[1] != s.kvHeads || v[2] != s.kvSeq)
    return inferError(location, opName, "key ", shapeText(k), " and value ",
                      shapeText(v), " differ in heads or sequence");
  if (k[3] != s.dim)
    return inferError(location, opName, "key head size ", k[3],
                      " differs from the query's (", s.dim, ")");
  if (s.kvHeads <= 0 || s.heads % s.kvHeads)
    return inferError(location, opName, s.heads,
                      " query heads do not group over ", s.kvHeads,
                      " key/value heads (the query heads must be a multiple)");
  return success();
}

/// The output [B, H, S, Dv] and the logsumexp, f32 [B, H, S], of an
/// attention of these operands.
SmallVector<Type, 2> attentionResultTypes(Value query, Value key, Value value) {
  AttentionSizes s = sizesOf(query, key, value);
  Type element = cast<RankedTensorType>(query.getType()).getElementType();
  return {RankedTensorType::get({s.batch, s.heads, s.seq, s.valueDim}, element),
          RankedTensorType::get({s.batch, s.heads, s.seq},
                                Float32Type::get(query.getContext()))};
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

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  if (failed(checkAttentionOperands(location, getOperationName(),
                                    adaptor.getQuery(), adaptor.getKey(),
                                    adaptor.getValue())))
    return failure();
  llvm::append_range(inferred,
                     attentionResultTypes(adaptor.getQuery(), adaptor.getKey(),
                                          adaptor.getValue()));
  return success();
}

// The backward takes the forward's output and logsumexp: they have the types
// the forward infers.
LogicalResult AttentionBackwardOp::verify() {
  if (failed(checkAttentionOperands(getLoc(), getOperationName(), getQuery(),
                                    getKey(), getValue())))
    return failure();
  SmallVector<Type, 2> forward =
      attentionResultTypes(getQuery(), getKey(), getValue());
  if (getOutput().getType() != forward[0])
    return emitOpError() << "output is " << getOutput().getType()
                         << ", the forward's is " << forward[0];
  if (getLogsumexp().getType() != forward[1])
    return emitOpError() << "logsumexp is " << getLogsumexp().getType()
                         << ", the forward's is " << forward[1];
  return success();
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
