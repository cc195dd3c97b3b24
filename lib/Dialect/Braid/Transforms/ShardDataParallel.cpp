//===- ShardDataParallel.cpp - optimizer state sharded over dp (ZeRO) -----===//
//
// ZeRO stages 1 and 2 on one function: each update whose gradient is the
// data-parallel average runs on the rank's piece of its parameter; the
// gradient is reduce-scattered instead of all-reduced, the optimizer state
// holds the piece only, and the updated piece is all-gathered into the whole
// parameter (docs/ShardedDataParallel.md).
//
//===----------------------------------------------------------------------===//

#include "ScheduleUtils.h"

#include "braid/Dialect/Braid/BraidDialect.h"
#include "braid/Dialect/Braid/BraidOps.h"
#include "braid/Dialect/Braid/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/InterleavedRange.h"

#define DEBUG_TYPE "braid-shard-data-parallel"

namespace braid {
#define GEN_PASS_DEF_SHARDDATAPARALLEL
#include "braid/Dialect/Braid/Passes.h.inc"
} // namespace braid

using namespace mlir;
using namespace braid;

namespace {

/// One update to shard: the update, the data-parallel average its gradient
/// comes from, and the elementwise steps between them, each the one reader
/// of the one before: casts (mixed precision reduces in another type than
/// the update reads) and sums over other grid axes (sequence parallelism's
/// layer-norm gradients, summed over the tensor-parallel ranks).
struct Site {
  Operation *update;
  AllReduceOp average;
  SmallVector<Operation *> steps;
  /// Gradient clipping's sums of squares that read the average or a step
  /// (an operand each): they read the piece instead, a partial sum over
  /// the data-parallel ranks.
  SmallVector<OpOperand *> norms;
};

/// Whether `use` is a gradient clipping's sum of squares.
bool isNorm(OpOperand &use) { return isa<SumSquaresOp>(use.getOwner()); }

/// Whether every use of `v` but `reader` is a sum of squares.
bool onlyNormsBesides(Value v, Operation *reader) {
  return llvm::all_of(v.getUses(), [&](OpOperand &use) {
    return use.getOwner() == reader || isNorm(use);
  });
}

struct ShardDataParallelPass
    : public braid::impl::ShardDataParallelBase<ShardDataParallelPass> {
  using ShardDataParallelBase::ShardDataParallelBase;
  void runOnOperation() override;

private:
  /// The site of `update`, none where its gradient is not a data-parallel
  /// average, failure (diagnosed) where it is one that something else
  /// reads too.
  FailureOr<std::optional<Site>> findSite(Operation *update);
  /// Rewrites one site over `size` ranks of grid axis `axis` of `grid`.
  LogicalResult shard(Site site, shard::GridOp grid, int16_t axis,
                      int64_t size);
  /// Makes each sum of squares some of whose operands are pieces the whole
  /// sum again: the pieces' squares summed over the data-parallel ranks,
  /// plus the whole operands' (counted once).
  void sumNorms(FlatSymbolRefAttr grid, int16_t axis);

  /// The sums of squares that read pieces, and which operands.
  llvm::MapVector<Operation *, llvm::SmallDenseSet<unsigned, 8>> partialNorms;
};

/// The first dimension of `type` that `size` ranks cut into equal pieces of
/// at least one element; -1 if none.
int64_t pieceDim(RankedTensorType type, int64_t size) {
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.getDimSize(d) % size == 0 && type.getDimSize(d) >= size)
      return d;
  return -1;
}

RankedTensorType pieceType(Type type, int64_t dim, int64_t size) {
  auto tensor = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(tensor.getShape());
  shape[dim] /= size;
  return RankedTensorType::get(shape, tensor.getElementType());
}

std::string paramName(Operation *update, AllReduceOp average) {
  if (ArrayAttr names = average.getGradOfAttr())
    if (!names.empty())
      return cast<StringAttr>(names[0]).str();
  Value param = update->getOperand(0);
  if (auto arg = dyn_cast<BlockArgument>(param))
    if (auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
      if (auto role = func.getArgAttrOfType<RoleAttr>(
              arg.getArgNumber(), BraidDialect::kRoleAttrName))
        return role.getName().str();
  return "?";
}

} // namespace

FailureOr<std::optional<Site>>
ShardDataParallelPass::findSite(Operation *update) {
  Site site{update, nullptr, {}};
  // The gradient operand (operand 1 of every update: param, grad, state).
  Value v = update->getOperand(1);
  Operation *reader = update;
  while (Operation *def = v.getDefiningOp()) {
    auto sum = dyn_cast<AllReduceOp>(def);
    bool step = isa<CastOp>(def) ||
                (sum && !sum.getGradOfAttr() && sum.getInputs().size() == 1);
    if (!step || !onlyNormsBesides(v, reader))
      break;
    site.steps.push_back(def);
    reader = def;
    v = def->getOperand(0);
  }
  auto average = v.getDefiningOp<AllReduceOp>();
  if (!average || !average.getGradOfAttr() ||
      average.getReduction() != ReductionKind::Avg)
    return std::optional<Site>();
  site.average = average;
  std::string name = paramName(update, average);
  if (average.getInputs().size() != 1) {
    average.emitError() << "averages the gradient of '" << name
                        << "' with others (a bucket); run "
                           "braid-shard-data-parallel before "
                           "braid-bucket-gradients";
    return failure();
  }
  for (OpOperand &use : v.getUses()) {
    if (use.getOwner() == reader || isNorm(use))
      continue;
    InFlightDiagnostic diag =
        use.getOwner()->emitError()
        << "reads the data-parallel average of the gradient of '" << name
        << "' besides its update and gradient clipping's sum of squares; "
           "braid-shard-data-parallel (ZeRO stage "
        << unsigned(stage)
        << ") gives each rank only its piece of that average";
    diag.attachNote(average.getLoc()) << "the average";
    return failure();
  }
  std::reverse(site.steps.begin(), site.steps.end());
  // The sums of squares, in chain order: the average's, then each step's.
  auto addNorms = [&](Value value) {
    for (OpOperand &use : value.getUses())
      if (isNorm(use))
        site.norms.push_back(&use);
  };
  addNorms(v);
  for (Operation *step : site.steps)
    addNorms(step->getResult(0));
  return std::optional<Site>(site);
}

LogicalResult ShardDataParallelPass::shard(Site site, shard::GridOp grid,
                                           int16_t axis, int64_t size) {
  Operation *update = site.update;
  auto func = update->getParentOfType<func::FuncOp>();
  MLIRContext *context = &getContext();
  std::string name = paramName(update, site.average);
  auto paramType = cast<RankedTensorType>(update->getOperand(0).getType());
  int64_t dim = pieceDim(paramType, size);
  if (dim < 0) {
    ++numKept;
    if (report)
      update->emitRemark() << "'" << name << "' (" << paramType
                           << ") kept whole: no dimension divides by the "
                           << size << " data-parallel ranks";
    return success();
  }
  OpBuilder builder(update);
  auto gridRef = FlatSymbolRefAttr::get(grid);
  auto axes = builder.getDenseI16ArrayAttr({axis});
  // The gradient: reduce-scattered where it was all-reduced, then the steps
  // to what the update reads, on the piece.
  builder.setInsertionPoint(site.average);
  Value input = site.average.getInputs()[0];
  Value grad = ReduceScatterOp::create(
      builder, site.average.getLoc(), pieceType(input.getType(), dim, size),
      input, gridRef, axes, ReductionKindAttr::get(context, ReductionKind::Avg),
      builder.getI64IntegerAttr(dim), site.average.getGradOfAttr(),
      /*bucket_index=*/nullptr, /*bucket_bytes=*/nullptr);
  DenseMap<Value, Value> pieceOf = {{site.average.getResult(0), grad}};
  for (Operation *step : site.steps) {
    builder.setInsertionPoint(step);
    Operation *piece = builder.clone(*step);
    piece->setOperand(0, grad);
    piece->getResult(0).setType(
        pieceType(step->getResult(0).getType(), dim, size));
    grad = piece->getResult(0);
    pieceOf[step->getResult(0)] = grad;
  }
  // Clipping's sums of squares read the pieces: partial sums over the
  // data-parallel ranks (summed in runOnOperation).
  for (OpOperand *norm : site.norms) {
    norm->set(pieceOf.lookup(norm->get()));
    partialNorms[norm->getOwner()].insert(norm->getOperandNumber());
  }
  // The update on the pieces: the parameter cut here (a local copy), the
  // state arguments of its shape held as pieces.
  builder.setInsertionPoint(update);
  Value index = getOrCreateAxisIndex(func, gridRef, int64_t(axis));
  auto cut = [&](Value v) -> Value {
    return ShardSliceOp::create(
        builder, v.getLoc(), pieceType(v.getType(), dim, size), v, index,
        builder.getI64IntegerAttr(dim), builder.getI64IntegerAttr(size));
  };
  SmallVector<Value> operands;
  for (OpOperand &operand : update->getOpOperands()) {
    Value v = operand.get();
    if (operand.getOperandNumber() == 1) {
      operands.push_back(grad);
      continue;
    }
    if (v.getType() != paramType) {
      operands.push_back(v); // A scalar: a step count, a learning rate.
      continue;
    }
    auto arg = dyn_cast<BlockArgument>(v);
    if (operand.getOperandNumber() == 0 || !arg || !v.hasOneUse()) {
      operands.push_back(cut(v));
      continue;
    }
    // Optimizer state: only the piece, from the step's arguments on.
    arg.setType(pieceType(paramType, dim, size));
    func.setArgAttr(arg.getArgNumber(),
                    BraidDialect::kDataParallelSplitAttrName,
                    builder.getI64IntegerAttr(dim));
    operands.push_back(arg);
  }
  SmallVector<Type> resultTypes;
  for (Type t : update->getResultTypes())
    resultTypes.push_back(t == paramType ? pieceType(t, dim, size) : t);
  OperationState state(update->getLoc(), update->getName(), operands,
                       resultTypes, update->getAttrs());
  Operation *sharded = builder.create(state);
  // The whole parameter back: the updated pieces all-gathered. The state's
  // pieces go to the step's results as they are.
  Value whole = AllGatherOp::create(builder, update->getLoc(), paramType,
                                    sharded->getResult(0), gridRef, axes,
                                    builder.getI64IntegerAttr(dim));
  update->getResult(0).replaceAllUsesWith(whole);
  for (unsigned r = 1; r < update->getNumResults(); ++r) {
    Value old = update->getResult(r);
    if (old.getType() != paramType) {
      old.replaceAllUsesWith(sharded->getResult(r));
      continue;
    }
    for (OpOperand &use : old.getUses())
      if (!isa<func::ReturnOp>(use.getOwner()))
        return use.getOwner()->emitError()
               << "reads the updated optimizer state of '" << name
               << "', which braid-shard-data-parallel keeps as the rank's "
                  "piece; only the step's results may";
    for (OpOperand &use : llvm::make_early_inc_range(old.getUses())) {
      func.setResultAttr(use.getOperandNumber(),
                         BraidDialect::kDataParallelSplitAttrName,
                         builder.getI64IntegerAttr(dim));
      use.set(sharded->getResult(r));
    }
  }
  update->erase();
  for (Operation *step : llvm::reverse(site.steps))
    step->erase();
  site.average.erase();
  ++numSharded;
  if (report)
    sharded->emitRemark() << "'" << name << "' updated in pieces of "
                          << pieceType(paramType, dim, size)
                          << " along dimension " << dim << " over the " << size
                          << " data-parallel ranks";
  return success();
}

void ShardDataParallelPass::sumNorms(FlatSymbolRefAttr grid, int16_t axis) {
  for (auto &[op, pieces] : partialNorms) {
    auto norm = cast<SumSquaresOp>(op);
    SmallVector<Value> partial, whole;
    for (OpOperand &operand : norm->getOpOperands())
      (pieces.contains(operand.getOperandNumber()) ? partial : whole)
          .push_back(operand.get());
    OpBuilder builder(norm);
    Type scalar = norm.getType();
    Value squares =
        SumSquaresOp::create(builder, norm.getLoc(), scalar, partial);
    Value sum = createAxisSum(builder, squares, grid, axis).getResult(0);
    if (!whole.empty())
      sum = AddOp::create(
          builder, norm.getLoc(), sum,
          SumSquaresOp::create(builder, norm.getLoc(), scalar, whole));
    norm.replaceAllUsesWith(sum);
    norm.erase();
  }
  partialNorms.clear();
}

void ShardDataParallelPass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (stage == 0 || func.isExternal())
    return;
  if (stage > 2) {
    func.emitError() << "ZeRO stage " << unsigned(stage)
                     << " is not supported by braid-shard-data-parallel "
                        "(stages 0, 1 and 2 are; stage 3 shards the "
                        "parameters too, and is not built yet)";
    return signalPassFailure();
  }
  partialNorms.clear();
  if (func->hasAttr(BraidDialect::kDataParallelAttrName))
    return; // Sharded already.
  if (!llvm::hasSingleElement(func.getBody())) {
    func.emitError() << "braid-shard-data-parallel needs a function body of "
                        "one block, but @"
                     << func.getName() << " has "
                     << func.getBody().getBlocks().size();
    return signalPassFailure();
  }
  SmallVector<Site> sites;
  WalkResult walk = func.walk([&](Operation *op) {
    if (!op->hasTrait<ShardUpdate>())
      return WalkResult::advance();
    FailureOr<std::optional<Site>> site = findSite(op);
    if (failed(site))
      return WalkResult::interrupt();
    if (*site)
      sites.push_back(**site);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return signalPassFailure();
  if (sites.empty())
    return; // No data-parallel gradient: nothing to shard.
  // Every average over one axis of one grid: the data-parallel axis.
  AllReduceOp first = sites.front().average;
  for (Site &site : sites)
    if (site.average.getGridAttr() != first.getGridAttr() ||
        site.average.getGridAxes() != first.getGridAxes() ||
        site.average.getGridAxes().size() != 1) {
      InFlightDiagnostic diag =
          site.average.emitError()
          << "braid-shard-data-parallel shards over one grid axis, but this "
             "gradient is averaged over grid axes "
          << llvm::interleaved_array(site.average.getGridAxes()) << " of "
          << site.average.getGridAttr();
      diag.attachNote(first.getLoc())
          << "and this one over "
          << llvm::interleaved_array(first.getGridAxes()) << " of "
          << first.getGridAttr();
      return signalPassFailure();
    }
  auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(
      func, first.getGridAttr());
  int16_t axis = first.getGridAxes()[0];
  if (!grid || ShapedType::isDynamic(grid.getShape()[axis])) {
    first.emitError() << "is averaged over axis " << axis << " of "
                      << first.getGridAttr()
                      << ", whose size is not known; "
                         "braid-shard-data-parallel cuts pieces for a "
                         "static number of ranks";
    return signalPassFailure();
  }
  int64_t size = grid.getShape()[axis];
  FlatSymbolRefAttr gridRef = first.getGridAttr(); // The sites erase `first`.
  if (size == 1)
    return; // One replica: nothing to shard.
  for (Site &site : sites)
    if (failed(shard(site, grid, axis, size)))
      return signalPassFailure();
  sumNorms(gridRef, axis);
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  func.setType(FunctionType::get(&getContext(),
                                 func.getBody().front().getArgumentTypes(),
                                 ret.getOperandTypes()));
  func->setAttr(BraidDialect::kDataParallelAttrName,
                DataParallelAttr::get(&getContext(), gridRef, axis, stage));
}
