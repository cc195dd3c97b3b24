//===- SequenceParallel.cpp - split the tokens between collectives -*- C++
//-*-===//
//
// Megatron-LM's sequence parallelism on a step braid-tensor-parallel
// partitioned: each tensor-parallel all-reduce becomes a reduce-scatter
// along the leading dimension, the per-token ops after it run on the
// rank's share of the tokens (by their sharding rules), and an all-gather
// comes back before the ops that need every token.
//
//===----------------------------------------------------------------------===//

#include "ScheduleUtils.h"

#include "braid/Dialect/Braid/BraidDialect.h"
#include "braid/Dialect/Braid/BraidOps.h"
#include "braid/Dialect/Braid/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/InterleavedRange.h"

#define DEBUG_TYPE "braid-sequence-parallel"

namespace braid {
#define GEN_PASS_DEF_SEQUENCEPARALLEL
#include "braid/Dialect/Braid/Passes.h.inc"
} // namespace braid

using namespace mlir;
using namespace braid;

namespace {

struct SequenceParallelPass
    : public braid::impl::SequenceParallelBase<SequenceParallelPass> {
  using SequenceParallelBase::SequenceParallelBase;
  void runOnOperation() override;
};

/// The rewrite of one function. Token-split values are split along their
/// leading dimension (ShardingAttr split 0, over the local types the
/// tensor-parallel pass made); every other value is whole on each rank.
class TokenSplitter {
public:
  TokenSplitter(func::FuncOp func, shard::GridOp grid, int64_t axis,
                int64_t size)
      : func(func), grid(grid), axis(axis), size(size),
        builder(func.getContext()) {}

  LogicalResult run();

  unsigned numReduceScatters = 0, numAllGathers = 0, numScatters = 0;
  /// Gather again in each stretch between tensor-parallel collectives.
  bool regather = true;

private:
  ShardingAttr stateOf(Value v) {
    auto it = state.find(v);
    return it != state.end() ? it->second
                             : ShardingAttr::getReplicated(func.getContext());
  }
  /// The dimension of `v` that holds its tokens: the outermost of size
  /// above 1 before the last (the features), or the only one of a vector
  /// (a layer norm's statistics); -1 if none. For `[tokens, h]` the first,
  /// for `[1, seq, h]` the sequence. (The runtime's collectives split the
  /// outermost dimension of size above 1.)
  int64_t tokenDim(Value v) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || type.getRank() == 0)
      return -1;
    if (type.getRank() == 1)
      return 0;
    for (int64_t d = 0; d + 1 < type.getRank(); ++d)
      if (type.getDimSize(d) != 1)
        return d;
    return -1;
  }
  bool splittable(Value v) {
    int64_t d = tokenDim(v);
    if (d < 0)
      return false;
    int64_t n = cast<RankedTensorType>(v.getType()).getDimSize(d);
    return n % size == 0 && n >= size;
  }
  bool isTensorParallelAllReduce(Operation *op);
  RankedTensorType splitType(Type type, int64_t dim, bool gather);
  /// A reduce-scatter of `v` along its token dimension over the axis,
  /// before `before`.
  Value reduceScatter(Value v, ReductionKind kind, Operation *before);
  /// Sums of partial values whose summand another reduce-scatter already
  /// split: the split plus the other summand reduce-scattered.
  void splitPartialSums(Block &body);
  Value gathered(Value v, Operation *before);
  /// This rank's share of the whole value `v` along its token dimension
  /// (a local braid.shard_slice), before `before`.
  Value scattered(Value v, Operation *before);
  /// This rank's index on the axis (one braid.axis_index per function).
  Value axisIndex();
  Value reduced(Value v, Operation *before);
  /// The op's results from its rule over the operands' states; false (and
  /// the op unchanged) where it has none.
  bool propagate(Operation *op);
  /// Makes every operand of `op` whole: gathers split ones, sums partial
  /// ones.
  void makeWhole(Operation *op);
  /// Cuts whole operands of the per-token `op` that are shaped as the
  /// global value of a token-split one to this rank's share, one at a time
  /// in operand order until the op's rule holds; false (nothing cut) if it
  /// never does.
  bool cutToShare(Operation *op);

  func::FuncOp func;
  shard::GridOp grid;
  int64_t axis, size;
  OpBuilder builder;
  DenseMap<Value, ShardingAttr> state;
  /// Gathers of the current stretch between two tensor-parallel
  /// collectives (the backward gathers again), scatters and sums of the
  /// whole step.
  DenseMap<Value, Value> gathers, scatters, sums;
  /// Whole values that per-token ops combine with a tensor-parallel
  /// all-reduce's result (the residual stream entering the first layer):
  /// cut to the rank's share at their first per-token use.
  llvm::DenseSet<Value> residuals;
  Value index;
  void findResiduals(Block &body);
};

} // namespace

/// A sum over the tensor-parallel axis of one value with dimensions: a
/// scalar (gradient clipping's squared norm) has no tokens to split and
/// stays an all-reduce.
bool TokenSplitter::isTensorParallelAllReduce(Operation *op) {
  auto allReduce = dyn_cast<AllReduceOp>(op);
  return allReduce &&
         cast<RankedTensorType>(allReduce.getInputs().front().getType())
                 .getRank() > 0 &&
         allReduce.getGridAttr().getAttr() == grid.getSymNameAttr() &&
         allReduce.getGridAxes() == ArrayRef<int16_t>{int16_t(axis)} &&
         allReduce.getReduction() == ReductionKind::Sum &&
         allReduce.getInputs().size() == 1 && !allReduce.getGradOf();
}

RankedTensorType TokenSplitter::splitType(Type type, int64_t dim, bool gather) {
  auto tensor = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape = llvm::to_vector(tensor.getShape());
  shape[dim] = gather ? shape[dim] * size : shape[dim] / size;
  return tensor.clone(shape);
}

Value TokenSplitter::reduceScatter(Value v, ReductionKind kind,
                                   Operation *before) {
  builder.setInsertionPoint(before);
  int64_t d = tokenDim(v);
  auto op = ReduceScatterOp::create(
      builder, v.getLoc(), splitType(v.getType(), d, false), v,
      FlatSymbolRefAttr::get(grid),
      builder.getDenseI16ArrayAttr({int16_t(axis)}),
      ReductionKindAttr::get(func.getContext(), kind),
      builder.getI64IntegerAttr(d), /*grad_of=*/nullptr,
      /*bucket_index=*/nullptr, /*bucket_bytes=*/nullptr);
  state[op.getResult()] = ShardingAttr::getSplit(func.getContext(), d);
  return op.getResult();
}

/// A vocabulary-parallel embedding's output is a partial sum; the
/// tensor-parallel pass keeps the residual stream partial from it (the
/// embedding plus each row-parallel product), summing it at each layer
/// norm. Here each sum is a reduce-scatter of the whole partial stream, and
/// the stream's additions are of whole values. Where one summand of such a
/// sum was already reduce-scattered (the embedding, for the first layer
/// norm; each sum, for the next), the reduce-scatter of the sum becomes
/// that split plus the reduce-scatter of the other summand: as many
/// reduce-scatters, of the same bytes, the additions on the rank's share of
/// the tokens, and the other summand a matmul's product alone
/// (braid-collective-matmul can then ring it).
void TokenSplitter::splitPartialSums(Block &body) {
  // The split of each value a reduce-scatter of this pass reads.
  DenseMap<Value, Value> splits;
  SmallVector<AddOp> sums;
  for (auto scatter :
       llvm::make_early_inc_range(body.getOps<ReduceScatterOp>())) {
    if (scatter.getReduction() != ReductionKind::Sum || scatter.getGradOf() ||
        scatter.getGridAxes() != ArrayRef<int16_t>{int16_t(axis)})
      continue;
    Value input = scatter.getInput();
    auto add = input.getDefiningOp<AddOp>();
    Value known, other;
    for (unsigned i = 0; add && i < 2 && !known; ++i)
      if (Value split = splits.lookup(add->getOperand(i));
          split && split.getType() == scatter.getType()) {
        known = split;
        other = add->getOperand(1 - i);
      }
    if (!known) {
      splits[input] = scatter.getResult();
      continue;
    }
    Value rest = reduceScatter(other, ReductionKind::Sum, scatter);
    builder.setInsertionPoint(scatter);
    auto sum = AddOp::create(builder, scatter.getLoc(), known, rest);
    state[sum.getResult()] = state[scatter.getResult()];
    scatter.getResult().replaceAllUsesWith(sum.getResult());
    splits[input] = sum.getResult();
    scatter.erase();
    sums.push_back(add);
  }
  // The whole partial sums nothing reads any more, last first (a sum reads
  // the one before it).
  for (AddOp add : llvm::reverse(sums))
    if (add->use_empty())
      add.erase();
}

Value TokenSplitter::gathered(Value v, Operation *before) {
  Value &g = gathers[v];
  if (g)
    return g;
  builder.setInsertionPoint(before);
  int64_t d = stateOf(v).getDim();
  auto op =
      AllGatherOp::create(builder, v.getLoc(), splitType(v.getType(), d, true),
                          v, FlatSymbolRefAttr::get(grid),
                          builder.getDenseI16ArrayAttr({int16_t(axis)}),
                          builder.getI64IntegerAttr(d));
  ++numAllGathers;
  return g = op.getResult();
}

Value TokenSplitter::axisIndex() {
  // braid-tensor-parallel's, if it made one (the vocabulary's shards).
  if (!index)
    index = getOrCreateAxisIndex(func, FlatSymbolRefAttr::get(grid), axis);
  return index;
}

Value TokenSplitter::scattered(Value v, Operation *before) {
  Value &s = scatters[v];
  if (s)
    return s;
  Value i = axisIndex();
  builder.setInsertionPoint(before);
  int64_t d = tokenDim(v);
  s = ShardSliceOp::create(
      builder, v.getLoc(), splitType(v.getType(), d, false), v, i,
      builder.getI64IntegerAttr(d), builder.getI64IntegerAttr(size));
  state[s] = ShardingAttr::getSplit(func.getContext(), d);
  ++numScatters;
  return s;
}

Value TokenSplitter::reduced(Value v, Operation *before) {
  Value &r = sums[v];
  if (r)
    return r;
  builder.setInsertionPoint(before);
  AllReduceOp op =
      createAxisSum(builder, v, FlatSymbolRefAttr::get(grid), axis);
  return r = op.getResult(0);
}

bool TokenSplitter::propagate(Operation *op) {
  auto rule = dyn_cast<ShardingOpInterface>(op);
  if (!rule)
    return false;
  SmallVector<ShardingAttr> in, out;
  for (Value v : op->getOperands())
    in.push_back(stateOf(v));
  if (failed(rule.propagateSharding(in, out)))
    return false;
  for (auto [result, s] : llvm::zip(op->getResults(), out)) {
    if (s.isSplit())
      result.setType(splitType(result.getType(), s.getDim(), false));
    if (!s.isReplicated())
      state[result] = s;
  }
  return true;
}

void TokenSplitter::makeWhole(Operation *op) {
  for (OpOperand &operand : op->getOpOperands()) {
    ShardingAttr s = stateOf(operand.get());
    if (s.isSplit())
      operand.set(gathered(operand.get(), op));
    else if (s.isPartial())
      operand.set(reduced(operand.get(), op));
  }
}

bool TokenSplitter::cutToShare(Operation *op) {
  auto rule = cast<ShardingOpInterface>(op);
  SmallVector<ShardingAttr> in, out;
  SmallVector<ArrayRef<int64_t>> globals;
  SmallVector<SmallVector<int64_t>> storage;
  for (Value v : op->getOperands()) {
    in.push_back(stateOf(v));
    if (in.back().isSplit()) {
      storage.push_back(llvm::to_vector(
          splitType(v.getType(), in.back().getDim(), true).getShape()));
    }
  }
  for (auto &shape : storage)
    globals.push_back(shape);
  SmallVector<unsigned> cut;
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!in[i].isReplicated() || !type || !splittable(v) ||
        !llvm::is_contained(globals, type.getShape()))
      continue;
    in[i] = ShardingAttr::getSplit(op->getContext(), tokenDim(v));
    cut.push_back(i);
    out.clear();
    if (succeeded(rule.propagateSharding(in, out))) {
      for (unsigned k : cut)
        op->setOperand(k, scattered(op->getOperand(k), op));
      return propagate(op);
    }
  }
  return false;
}

void TokenSplitter::findResiduals(Block &body) {
  for (Operation &op : body) {
    if (!isTensorParallelAllReduce(&op) || !splittable(op.getOperand(0)))
      continue;
    Type type = op.getResult(0).getType();
    SmallVector<Value> work = {op.getResult(0)};
    llvm::DenseSet<Value> reached(work.begin(), work.end());
    while (!work.empty()) {
      Value v = work.pop_back_val();
      for (Operation *user : v.getUsers()) {
        if (!user->hasTrait<PerToken>())
          continue;
        for (Value operand : user->getOperands())
          if (!reached.count(operand) && operand.getType() == type &&
              !isa_and_nonnull<AllReduceOp>(operand.getDefiningOp()))
            residuals.insert(operand);
        for (Value result : user->getResults())
          if (result.getType() == type && reached.insert(result).second)
            work.push_back(result);
      }
    }
  }
}

LogicalResult TokenSplitter::run() {
  Block &body = func.getBody().front();
  findResiduals(body);
  for (Operation &op : llvm::make_early_inc_range(body)) {
    // A tensor-parallel all-reduce: a reduce-scatter along the tokens, and
    // a new stretch for gathers.
    if (isTensorParallelAllReduce(&op)) {
      if (regather)
        gathers.clear();
      Value input = op.getOperand(0);
      if (!stateOf(input).isReplicated())
        continue;
      if (!splittable(input)) {
        int64_t d = tokenDim(input);
        InFlightDiagnostic diag =
            op.emitError() << "sequence parallelism splits the tokens of "
                           << input.getType() << " over " << size
                           << " tensor-parallel ranks, but ";
        if (d < 0)
          diag << "it has no token dimension (every dimension before the "
                  "features is 1)";
        else
          diag << "dimension " << d << " has "
               << cast<RankedTensorType>(input.getType()).getDimSize(d)
               << " tokens, which do not divide by " << size;
        diag << "; compile with --sequence-parallel=false";
        return failure();
      }
      Value split = reduceScatter(input, ReductionKind::Sum, &op);
      op.getResult(0).replaceAllUsesWith(split);
      op.erase();
      ++numReduceScatters;
      continue;
    }
    if (auto collective = dyn_cast<CollectiveOpInterface>(&op))
      if (regather &&
          collective.getGridAxes() == ArrayRef<int16_t>{int16_t(axis)})
        gathers.clear();
    if (op.hasTrait<PerToken>())
      for (OpOperand &operand : op.getOpOperands())
        if (residuals.count(operand.get()) &&
            stateOf(operand.get()).isReplicated())
          operand.set(scattered(operand.get(), &op));
    bool touched = llvm::any_of(
        op.getOperands(), [&](Value v) { return !stateOf(v).isReplicated(); });
    if (!touched)
      continue;
    if (isa<func::ReturnOp>(op)) {
      makeWhole(&op);
      continue;
    }
    // Per-token ops (and collectives over other axes, which keep a
    // sharding) run on the tokens they get; a whole value that meets a
    // token-split one is cut to this rank's share first.
    bool perToken = op.hasTrait<PerToken>() || isa<CollectiveOpInterface>(op);
    if (perToken && propagate(&op))
      continue;
    if (op.hasTrait<PerToken>() && cutToShare(&op))
      continue;
    makeWhole(&op);
  }
  splitPartialSums(body);
  func.setFunctionType(
      FunctionType::get(func.getContext(), body.getArgumentTypes(),
                        body.getTerminator()->getOperandTypes()));
  return success();
}

void SequenceParallelPass::runOnOperation() {
  func::FuncOp func = getOperation();
  auto tp = func->getAttrOfType<TensorParallelAttr>(
      BraidDialect::kTensorParallelAttrName);
  if (!tp || func.isExternal())
    return;
  auto grid =
      SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(func, tp.getGrid());
  int64_t axis = tp.getAxis();
  if (!grid || axis >= int64_t(grid.getShape().size()) ||
      ShapedType::isDynamic(grid.getShape()[axis])) {
    func.emitError() << "braid-sequence-parallel: '"
                     << BraidDialect::kTensorParallelAttrName
                     << "' names no static axis of a grid of the module";
    return signalPassFailure();
  }
  if (!tp.getInnerAxes().empty()) {
    func.emitError() << "braid-sequence-parallel splits the tokens over the "
                        "one tensor-parallel axis, but @"
                     << func.getName() << " is partitioned over grid axes "
                     << llvm::interleaved_array(tp.getAllAxes());
    return signalPassFailure();
  }
  if (!llvm::hasSingleElement(func.getBody())) {
    func.emitError() << "braid-sequence-parallel needs a function body of "
                        "one block, but @"
                     << func.getName() << " has "
                     << func.getBody().getBlocks().size();
    return signalPassFailure();
  }
  for (Operation &op : func.getBody().front())
    if (isa<WaitOp>(op)) {
      op.emitError() << "braid-sequence-parallel rewrites graph-level "
                        "steps; '"
                     << op.getName()
                     << "' is already scheduled (run it before the overlap "
                        "passes)";
      return signalPassFailure();
    }
  TokenSplitter splitter(func, grid, axis, grid.getShape()[axis]);
  splitter.regather = regather;
  if (failed(splitter.run()))
    return signalPassFailure();
  numReduceScatters += splitter.numReduceScatters;
  numAllGathers += splitter.numAllGathers;
  numScatters += splitter.numScatters;
}
