//===- ShardingRules.cpp - the tensor-parallel rule of every op -*- C++ -*-===//
//
// The tensor-parallel rules: from how an op's operands are spread over the
// tensor-parallel ranks (replicated, split along a dimension, a partial
// sum), how its results are, or failure where the op has no rule
// (docs/TensorParallel.md lists them). braid-tensor-parallel asks the ops
// (ShardingOpInterface::propagateSharding); it knows none of them. The
// rules a trait names (Braid_ShardElementwise, Braid_ShardSum,
// Braid_ShardLinearIn, Braid_ShardReplicated, Braid_ShardUpdate in
// BraidOps.td) are propagateShardingByRule's; the ops whose semantics
// demand more have their own propagateSharding here.
//
// A failed rule with a partial operand makes the pass reduce that operand
// over the tensor-parallel axis and ask again, so a rule only accepts a
// partial operand where the op is linear in it.
//
//===----------------------------------------------------------------------===//

#include "braid/Dialect/Braid/BraidOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace braid;

using Shardings = ArrayRef<ShardingAttr>;
using Results = SmallVectorImpl<ShardingAttr>;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static ShardingAttr replicated(Operation *op) {
  return ShardingAttr::getReplicated(op->getContext());
}

static ShardingAttr partial(Operation *op) {
  return ShardingAttr::getPartial(op->getContext());
}

static ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

static bool allReplicated(Shardings s) {
  return llvm::all_of(s, [](ShardingAttr a) { return a.isReplicated(); });
}

/// Every result gets `sharding`.
static LogicalResult all(Operation *op, ShardingAttr sharding, Results &out) {
  out.assign(op->getNumResults(), sharding);
  return success();
}

/// Replicated operands give replicated results; anything else has no rule.
static LogicalResult replicatedOnly(Operation *op, Shardings s, Results &out) {
  if (!allReplicated(s))
    return failure();
  return all(op, replicated(op), out);
}

/// An elementwise op over operands of one shape: equal shardings pass
/// through. A partial result needs the op to be linear in the partial
/// operands: `partialOk(i)` says whether operand `i` may be partial, and
/// `allPartialOk` whether they may all be (a sum of sums).
static LogicalResult elementwise(Operation *op, Shardings s, Results &out,
                                 function_ref<bool(unsigned)> partialOk = {},
                                 bool allPartialOk = false) {
  if (llvm::all_equal(s) && !s.empty() && !s.front().isPartial())
    return all(op, s.front(), out);
  if (s.empty())
    return all(op, replicated(op), out);
  bool anyPartial = false;
  for (auto [i, a] : llvm::enumerate(s)) {
    if (a.isSplit())
      return failure();
    if (a.isPartial()) {
      anyPartial = true;
      if (!allPartialOk && !(partialOk && partialOk(i)))
        return failure();
    }
  }
  if (!anyPartial)
    return all(op, replicated(op), out);
  // All partial (a sum), or exactly the linear operands partial.
  if (allPartialOk &&
      llvm::all_of(s, [](ShardingAttr a) { return a.isPartial(); }))
    return all(op, partial(op), out);
  if (partialOk &&
      llvm::count_if(s, [](ShardingAttr a) { return a.isPartial(); }) == 1)
    return all(op, partial(op), out);
  return failure();
}

/// An op over one tensor that works along `dims` of it (softmax's axis, a
/// mask's last two dimensions): a split along any other dimension passes
/// through; partial only where `linear`.
static LogicalResult alongDims(Operation *op, Shardings s, Results &out,
                               ArrayRef<int64_t> dims, bool linear) {
  if (!llvm::all_equal(s))
    return failure();
  ShardingAttr a = s.front();
  if (a.isPartial() && !linear)
    return failure();
  if (a.isSplit() && llvm::is_contained(dims, a.getDim()))
    return failure();
  return all(op, a, out);
}

/// An update is elementwise over the parameter, its gradient and its state;
/// each must be spread as the parameter is (a partial gradient is reduced
/// first), and scalar operands (AdamW's step) replicated.
static LogicalResult update(Operation *op, Shardings s, Results &out) {
  Type paramType = op->getOperand(0).getType();
  ShardingAttr param = s[0];
  if (param.isPartial())
    return failure();
  for (auto [a, operand] : llvm::zip(s, op->getOperands()))
    if (operand.getType() == paramType ? a != param : !a.isReplicated())
      return failure();
  return all(op, param, out);
}

//===----------------------------------------------------------------------===//
// The rules of the sharding-rule traits
//===----------------------------------------------------------------------===//

LogicalResult
braid::detail::propagateShardingByRule(Operation *op, ShardingRule rule,
                                       ArrayRef<unsigned> linearOperands,
                                       Shardings s, Results &out) {
  switch (rule) {
  case ShardingRule::Elementwise:
    return elementwise(op, s, out);
  case ShardingRule::Sum:
    return elementwise(op, s, out, {}, /*allPartialOk=*/true);
  case ShardingRule::LinearIn:
    return elementwise(op, s, out, [&](unsigned i) {
      return llvm::is_contained(linearOperands, i);
    });
  case ShardingRule::Replicated:
    return replicatedOnly(op, s, out);
  case ShardingRule::Update:
    return update(op, s, out);
  }
  llvm_unreachable("every sharding rule is handled");
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::propagateSharding(Shardings s, Results &out) {
  ShardingAttr a = s[0], b = s[1];
  int64_t rank = shapeOf(getLhs()).size();
  int64_t rankB = shapeOf(getRhs()).size();
  bool ta = getTransposeA(), tb = getTransposeB();
  int64_t mA = ta ? rank - 1 : rank - 2, kA = ta ? rank - 2 : rank - 1;
  int64_t kB = tb ? rankB - 1 : rankB - 2, nB = tb ? rankB - 2 : rankB - 1;
  bool sharedB = rankB == 2 && rank > 2;
  auto isBatch = [&](int64_t d) { return d < rank - 2; };

  if (a.isReplicated() && b.isReplicated())
    return all(*this, a, out);
  // Linear in each operand: one partial side, the other replicated.
  if ((a.isPartial() && b.isReplicated()) ||
      (a.isReplicated() && b.isPartial()))
    return all(*this, partial(*this), out);
  if (a.isPartial() || b.isPartial())
    return failure();
  // A split read through a permutation has no rule yet: braid-fuse-kernels,
  // which writes permutations, runs after braid-tensor-parallel.
  if (getLhsPermutation() || getRhsPermutation() || getResultPermutation() ||
      getLhsSlice() || getRhsSlice())
    return failure();
  // Contraction over a split dimension: each rank's product is a part of
  // the sum (a row-parallel matmul).
  if (a.isSplitAlong(kA) && b.isSplitAlong(kB) &&
      a.getBlocks() == b.getBlocks())
    return all(*this, partial(*this), out);
  // A split batch dimension: the weight shared, or split alike.
  if (a.isSplit() && isBatch(a.getDim())) {
    if ((sharedB && b.isReplicated()) || (!sharedB && a == b))
      return all(*this, a, out);
    return failure();
  }
  // Rows of the left side, columns of the right (column-parallel).
  if (a.isSplitAlong(mA) && b.isReplicated())
    return all(*this, a.withDim(rank - 2), out);
  if (a.isReplicated() && b.isSplitAlong(nB))
    return all(*this, b.withDim(rank - 1), out);
  return failure();
}

//===----------------------------------------------------------------------===//
// Elementwise arithmetic
//===----------------------------------------------------------------------===//

LogicalResult AddOp::reshardResult(unsigned, ShardingAttr wanted, Shardings s,
                                   Results &newOperands) {
  // A whole sum can as well be split if both terms can (the gradient parts
  // of a tied table, summed over micro-batches on a pipeline stage): the
  // pass asks their producers in turn.
  if (!s[0].isReplicated() || !s[1].isReplicated() || !wanted.isSplit())
    return failure();
  newOperands.assign({wanted, wanted});
  return success();
}

LogicalResult BiasAddOp::propagateSharding(Shardings s, Results &out) {
  ShardingAttr x = s[0], bias = s[1];
  // The input's dimensions from `lead` on are the bias's.
  int64_t lead = shapeOf(getInput()).size() - shapeOf(getBias()).size();
  if (x.isPartial() || bias.isPartial())
    return failure();
  for (int64_t d = lead, e = shapeOf(getInput()).size(); d < e; ++d)
    if (x.isSplitAlong(d))
      return bias == x.withDim(d - lead) ? all(*this, x, out) : failure();
  return bias.isReplicated() ? all(*this, x, out) : failure();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// A reduction over `dims`: a split elsewhere moves to the result's
/// numbering; a split along a reduced dimension leaves each rank a part of
/// the sum (`sum` only).
static LogicalResult reduction(Operation *op, ShardingAttr a,
                               ArrayRef<int64_t> dims, bool keepDims, bool sum,
                               Results &out) {
  if (!a.isSplit())
    return all(op, a, out);
  int64_t d = a.getDim();
  if (llvm::is_contained(dims, d))
    return sum && a.getBlocks().empty() ? all(op, partial(op), out) : failure();
  if (!keepDims)
    d -= llvm::count_if(dims, [&](int64_t r) { return r < a.getDim(); });
  return all(op, a.withDim(d), out);
}

LogicalResult ReduceSumOp::propagateSharding(Shardings s, Results &out) {
  return reduction(*this, s[0], getDims(), getKeepDims(), /*sum=*/true, out);
}

LogicalResult ReduceMeanOp::propagateSharding(Shardings s, Results &out) {
  return reduction(*this, s[0], getDims(), getKeepDims(), /*sum=*/false, out);
}

//===----------------------------------------------------------------------===//
// Activations, softmax, masks
//===----------------------------------------------------------------------===//

/// An activation of `input + bias` (braid.gelu with a folded bias): the
/// tensors split alike, not partial (gelu is not linear), and the bias split
/// with the features where they are, else replicated.
static LogicalResult biasedActivation(Operation *op, Shardings tensors,
                                      ShardingAttr bias, int64_t rank,
                                      Results &out) {
  if (!llvm::all_equal(tensors) || tensors.front().isPartial() ||
      bias.isPartial())
    return failure();
  ShardingAttr x = tensors.front();
  if (x.isSplitAlong(rank - 1))
    return bias == x.withDim(0) ? all(op, x, out) : failure();
  return bias.isReplicated() ? all(op, x, out) : failure();
}

LogicalResult GeluOp::propagateSharding(Shardings s, Results &out) {
  if (!getBias())
    return elementwise(*this, s, out);
  return biasedActivation(*this, s.take_front(1), s[1],
                          shapeOf(getInput()).size(), out);
}

LogicalResult GeluBackwardOp::propagateSharding(Shardings s, Results &out) {
  if (!getBias())
    return elementwise(*this, s, out);
  return biasedActivation(*this, s.take_front(2), s[2],
                          shapeOf(getInput()).size(), out);
}

/// Attention mixes tokens and features within a head: every operand split
/// alike along the batch or the heads (grouped key/value heads split with
/// their query heads) passes through; nothing is linear.
static LogicalResult attention(Operation *op, Shardings s, Results &out) {
  if (!llvm::all_equal(s) || s.front().isPartial())
    return failure();
  ShardingAttr a = s.front();
  if (a.isSplit() && a.getDim() > 1)
    return failure();
  return all(op, a, out);
}

LogicalResult AttentionOp::propagateSharding(Shardings s, Results &out) {
  return attention(*this, s, out);
}

LogicalResult AttentionBackwardOp::propagateSharding(Shardings s,
                                                     Results &out) {
  return attention(*this, s, out);
}

/// A softmax mixes its row; a folded causal mask also the row's position in
/// the last two dimensions.
template <typename Op>
static SmallVector<int64_t> softmaxDims(Op op, int64_t rank) {
  if (op.getCausal())
    return {rank - 2, rank - 1};
  return {int64_t(op.getDim())};
}

LogicalResult SoftmaxOp::propagateSharding(Shardings s, Results &out) {
  return alongDims(*this, s, out,
                   softmaxDims(*this, shapeOf(getInput()).size()),
                   /*linear=*/false);
}

LogicalResult SoftmaxBackwardOp::propagateSharding(Shardings s, Results &out) {
  return alongDims(*this, s, out, softmaxDims(*this, shapeOf(getGrad()).size()),
                   /*linear=*/false);
}

LogicalResult LogSoftmaxOp::propagateSharding(Shardings s, Results &out) {
  return alongDims(*this, s, out, {int64_t(getDim())}, /*linear=*/false);
}

LogicalResult LogSoftmaxBackwardOp::propagateSharding(Shardings s,
                                                      Results &out) {
  return alongDims(*this, s, out, {int64_t(getDim())}, /*linear=*/false);
}

LogicalResult CausalMaskOp::propagateSharding(Shardings s, Results &out) {
  int64_t rank = shapeOf(getInput()).size();
  // Filling zeros is linear (the mask of the backward).
  return alongDims(*this, s, out, {rank - 2, rank - 1},
                   /*linear=*/getFill().convertToDouble() == 0.0);
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

LogicalResult LayerNormOp::propagateSharding(Shardings s, Results &out) {
  // Normalizes over the trailing dimensions gamma spans: tokens may be
  // split (sequence parallelism), the normalized dimensions not.
  ShardingAttr x = s[0];
  int64_t leading = shapeOf(getInput()).size() - shapeOf(getGamma()).size();
  if (!s[1].isReplicated() || !s[2].isReplicated() || x.isPartial())
    return failure();
  if (x.isSplit() && x.getDim() >= leading)
    return failure();
  return all(*this, x, out);
}

LogicalResult LayerNormBackwardOp::propagateSharding(Shardings s,
                                                     Results &out) {
  // dy, x split along a token dimension (with mean and rstd): dx is split
  // alike, and dgamma, dbeta, sums over the tokens, are partial.
  ShardingAttr dy = s[0];
  int64_t leading = shapeOf(getInput()).size() - shapeOf(getGamma()).size();
  if (!s[4].isReplicated())
    return failure();
  if (allReplicated(s))
    return all(*this, dy, out);
  if (!dy.isSplit() || dy.getDim() >= leading || s[1] != dy || s[2] != dy ||
      s[3] != dy)
    return failure();
  out.assign({dy, partial(*this), partial(*this)});
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

// The negative log-likelihood sees whole rows: replicated only. The
// cross-entropy takes its logits split along the classes (the output of a
// column-parallel LM head) and becomes the vocabulary-parallel one.

/// A plain split (no blocks) along `dim`.
static bool isPlainSplitAlong(ShardingAttr a, int64_t dim) {
  return a.isSplitAlong(dim) && a.getBlocks().empty();
}
LogicalResult CrossEntropyOp::propagateSharding(Shardings s, Results &out) {
  if (isPlainSplitAlong(s[0], 1) && s[1].isReplicated())
    return all(*this, replicated(*this), out);
  return replicatedOnly(*this, s, out);
}

/// The summaries of every shard of `logits`' classes, [P, N, 3], gathered
/// over the axis after this rank's.
static Value gatherShardStats(Operation *op, Value logits, Value labels,
                              IntegerAttr ignoreIndex,
                              LocalizeContext &context) {
  OpBuilder b(op);
  auto type = cast<RankedTensorType>(logits.getType());
  auto statsType =
      RankedTensorType::get({1, type.getDimSize(0), 3}, type.getElementType());
  Value stats = CrossEntropyShardStatsOp::create(
      b, op->getLoc(), statsType, logits, labels, context.getAxisIndex(),
      context.getSize(), ignoreIndex);
  return context.allGather(b, stats, 0);
}

bool CrossEntropyOp::localizeForSharding(Shardings s, Shardings,
                                         LocalizeContext &context) {
  if (!s[0].isSplit())
    return false;
  Value stats = gatherShardStats(*this, getInput(), getLabels(),
                                 getIgnoreIndexAttr(), context);
  OpBuilder b(*this);
  Value loss = CrossEntropyShardLossOp::create(
      b, getLoc(), getResult().getType(), stats, getReduction());
  getResult().replaceAllUsesWith(loss);
  erase();
  return true;
}

LogicalResult CrossEntropyBackwardOp::propagateSharding(Shardings s,
                                                        Results &out) {
  if (s[0].isReplicated() && isPlainSplitAlong(s[1], 1) && s[2].isReplicated())
    return all(*this, s[1], out);
  return replicatedOnly(*this, s, out);
}

bool CrossEntropyBackwardOp::localizeForSharding(Shardings s, Shardings,
                                                 LocalizeContext &context) {
  if (!s[1].isSplit())
    return false;
  // The summaries again (a gather of 3 values a row), rather than a value
  // kept from the forward.
  Value stats = gatherShardStats(*this, getInput(), getLabels(),
                                 getIgnoreIndexAttr(), context);
  OpBuilder b(*this);
  Value grad = CrossEntropyShardBackwardOp::create(
      b, getLoc(), getInput().getType(), getGrad(), getInput(), getLabels(),
      stats, context.getAxisIndex(), getReduction(), getIgnoreIndexAttr());
  getResult().replaceAllUsesWith(grad);
  erase();
  return true;
}

// Gradient clipping: a sum of squares over split inputs is a partial sum
// (each rank's pieces); over replicated inputs, replicated. A mix has no
// rule: the replicated ones would be counted once per rank.
LogicalResult SumSquaresOp::propagateSharding(Shardings s, Results &out) {
  if (allReplicated(s))
    return all(*this, replicated(*this), out);
  if (llvm::all_of(s, [](ShardingAttr a) { return a.isSplit(); }))
    return all(*this, partial(*this), out);
  return failure();
}

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::propagateSharding(Shardings s, Results &out) {
  // The table split along its features gives each token's features split;
  // split along its rows (the vocabulary), each rank's lookup is a partial
  // sum: its rows, zero for the others (Megatron's VocabParallelEmbedding).
  ShardingAttr table = s[0];
  if (!s[1].isReplicated() || table.isPartial())
    return failure();
  if (table.isSplitAlong(0))
    return table.getBlocks().empty() ? all(*this, partial(*this), out)
                                     : failure();
  int64_t last = shapeOf(getResult()).size() - 1;
  return all(*this, table.isSplit() ? table.withDim(last) : table, out);
}

bool EmbeddingOp::localizeForSharding(Shardings s, Shardings,
                                      LocalizeContext &context) {
  if (!s[0].isSplitAlong(0))
    return false;
  OpBuilder b(*this);
  Value rows = EmbeddingShardOp::create(
      b, getLoc(), getResult().getType(), getTable(), getIds(),
      context.getAxisIndex(), context.getSize());
  getResult().replaceAllUsesWith(rows);
  erase();
  return true;
}

LogicalResult EmbeddingBackwardOp::reshardResult(unsigned, ShardingAttr wanted,
                                                 Shardings s,
                                                 Results &newOperands) {
  // A whole gradient can as well be this rank's rows of it: the ids of the
  // other rows add nothing there.
  if (!s[0].isReplicated() || !s[1].isReplicated() ||
      !isPlainSplitAlong(wanted, 0))
    return failure();
  newOperands.assign(s.begin(), s.end());
  return success();
}

bool EmbeddingBackwardOp::localizeForSharding(Shardings, Shardings results,
                                              LocalizeContext &context) {
  if (!results[0].isSplitAlong(0))
    return false;
  OpBuilder b(*this);
  auto type = cast<RankedTensorType>(getResult().getType());
  SmallVector<int64_t> shape = llvm::to_vector(type.getShape());
  shape[0] /= context.getSize();
  Value rows = EmbeddingShardBackwardOp::create(
      b, getLoc(), type.clone(shape), getGrad(), getIds(),
      context.getAxisIndex(), context.getSize(), getPaddingIdxAttr());
  getResult().replaceAllUsesWith(rows);
  erase();
  return true;
}

LogicalResult EmbeddingBackwardOp::propagateSharding(Shardings s,
                                                     Results &out) {
  ShardingAttr grad = s[0];
  int64_t last = shapeOf(getGrad()).size() - 1;
  if (!s[1].isReplicated())
    return failure();
  if (grad.isSplit())
    return grad.isSplitAlong(last) ? all(*this, grad.withDim(1), out)
                                   : failure();
  return all(*this, grad, out);
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::propagateSharding(Shardings s, Results &out) {
  ShardingAttr a = s[0];
  if (!a.isSplit())
    return all(*this, a, out);
  // Pair the dimensions into groups of equal products; the split
  // dimension's group is reshaped on its own. Over the group's elements in
  // order, the split cuts runs (one per block, for every index of the
  // group's dimensions before it), each into as many contiguous pieces as
  // the axis has ranks. A result dimension split (with blocks) into the same
  // runs holds the same pieces; of those, the one with the fewest blocks:
  // features into heads (the same split), batch and heads merged for a
  // batched matmul (a block per sequence) and back.
  ArrayRef<int64_t> in = shapeOf(getInput()), res = shapeOf(getResult());
  int64_t d = a.getDim();
  size_t i = 0, j = 0;
  while (i < in.size() && j < res.size()) {
    size_t i0 = i, j0 = j;
    int64_t pi = in[i++], pj = res[j++];
    while (pi != pj) {
      if (pi < pj && i < in.size())
        pi *= in[i++];
      else if (pj < pi && j < res.size())
        pj *= res[j++];
      else
        return failure();
    }
    if (d < int64_t(i0) || d >= int64_t(i))
      continue;
    int64_t outer = 1, inner = 1;
    for (size_t k = i0; k < size_t(d); ++k)
      outer *= in[k];
    for (size_t k = size_t(d) + 1; k < i; ++k)
      inner *= in[k];
    SmallVector<int64_t> period;
    for (int64_t block : a.getBlockSizes(in))
      period.push_back(block * inner);
    int64_t runs = outer * int64_t(period.size());
    if (runs > (int64_t(1) << 20))
      return failure();
    auto run = [&](int64_t r) { return period[size_t(r) % period.size()]; };
    std::optional<ShardingAttr> best;
    for (size_t e = j0; e < j; ++e) {
      if (res[e] == 1)
        continue;
      int64_t outerE = 1, innerE = 1;
      for (size_t k = j0; k < e; ++k)
        outerE *= res[k];
      for (size_t k = e + 1; k < j; ++k)
        innerE *= res[k];
      if (runs % outerE)
        continue;
      // Split along e with blocks, the runs repeat every `q`.
      int64_t q = runs / outerE;
      bool same = true;
      for (int64_t r = q; r < runs && same; ++r)
        same = run(r) == run(r % q);
      SmallVector<int64_t> blocks;
      for (int64_t r = 0; r < q && same; ++r) {
        same = run(r) % innerE == 0;
        blocks.push_back(run(r) / innerE);
      }
      if (same && (!best || blocks.size() < best->getBlockSizes(res).size()))
        best = ShardingAttr::getSplit(getContext(), int64_t(e), blocks);
    }
    return best ? all(*this, *best, out) : failure();
  }
  return failure();
}

LogicalResult TransposeOp::propagateSharding(Shardings s, Results &out) {
  ShardingAttr a = s[0];
  if (!a.isSplit())
    return all(*this, a, out);
  auto perm = getPermutation();
  auto it = llvm::find(perm, a.getDim());
  return all(*this, a.withDim(std::distance(perm.begin(), it)), out);
}

LogicalResult BroadcastOp::propagateSharding(Shardings s, Results &out) {
  ShardingAttr a = s[0];
  if (!a.isSplit())
    return all(*this, a, out);
  // The input's dimensions are the result's not in `dims`, in order.
  int64_t rank = shapeOf(getResult()).size(), seen = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (llvm::is_contained(getDims(), d))
      continue;
    if (seen++ == a.getDim())
      return all(*this, a.withDim(d), out);
  }
  return failure();
}

LogicalResult SliceOp::propagateSharding(Shardings s, Results &out) {
  ShardingAttr a = s[0];
  if (!a.isSplit())
    return all(*this, a, out);
  int64_t d = a.getDim();
  if (getStrides() && (*getStrides())[d] != 1)
    return failure();
  ArrayRef<int64_t> in = shapeOf(getInput());
  int64_t offset = getOffsets()[d], size = shapeOf(getResult())[d];
  if (offset == 0 && size == in[d])
    return all(*this, a, out);
  // Exactly one block of the split dimension (q of a fused q/k/v).
  int64_t start = 0;
  for (int64_t block : a.getBlockSizes(in)) {
    if (start == offset && block == size)
      return all(*this, ShardingAttr::getSplit(getContext(), d), out);
    start += block;
  }
  return failure();
}

bool SliceOp::localizeForSharding(Shardings s, Shardings,
                                  LocalizeContext &context) {
  // Block j of the split dimension starts at its global start / size
  // locally: every block before it holds 1/size of itself there.
  if (!s[0].isSplit())
    return false;
  SmallVector<int64_t> offsets = llvm::to_vector(getOffsets());
  offsets[s[0].getDim()] /= context.getSize();
  setOffsets(offsets);
  return false;
}

LogicalResult ConcatOp::propagateSharding(Shardings s, Results &out) {
  int64_t dim = getDim();
  if (llvm::all_equal(s) && !(s.front().isSplitAlong(dim)))
    return all(*this, s.front(), out);
  // Pieces split along the concatenated dimension: each becomes blocks of
  // the result (the gradient of a fused q/k/v).
  SmallVector<int64_t> blocks;
  for (auto [a, input] : llvm::zip(s, getInputs())) {
    if (!a.isSplitAlong(dim))
      return failure();
    llvm::append_range(blocks, a.getBlockSizes(shapeOf(input)));
  }
  return all(*this, ShardingAttr::getSplit(getContext(), dim, blocks), out);
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

LogicalResult braid::detail::reshardCollectiveResult(Operation *op,
                                                     unsigned result,
                                                     ShardingAttr wanted,
                                                     Shardings s,
                                                     Results &newOperands) {
  // An all-reduce over other axes (the data-parallel gradient's) is
  // elementwise over each input: its result is split as its input is.
  if (!isa<AllReduceOp>(op) || !s[result].isReplicated())
    return failure();
  newOperands.assign(s.begin(), s.end());
  newOperands[result] = wanted;
  return success();
}

LogicalResult braid::detail::propagateCollectiveSharding(Operation *op,
                                                         Shardings s,
                                                         Results &out) {
  if (auto allReduce = dyn_cast<AllReduceOp>(op)) {
    bool linear = allReduce.getReduction() == ReductionKind::Sum ||
                  allReduce.getReduction() == ReductionKind::Avg;
    if (!linear &&
        llvm::any_of(s, [](ShardingAttr a) { return a.isPartial(); }))
      return failure();
    out.assign(s.begin(), s.end());
    return success();
  }
  return replicatedOnly(op, s, out);
}
