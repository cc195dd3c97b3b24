//===- TensorParallel.cpp - partition a step over a grid axis ---*- C++ -*-===//
//
// Partitions a global step into the per-rank program of a tensor-parallel
// grid axis: propagates each value's sharding (replicated, split, partial)
// by the ops' own rules (ShardingOpInterface), inserts an all-reduce over
// the axis where a partial value meets an op that needs the whole, then
// rewrites every split value's type to its local piece.
//
//===----------------------------------------------------------------------===//

#include "TensorParallel.h"
#include "ScheduleUtils.h"

#include "braid/Dialect/Braid/BraidDialect.h"
#include "braid/Dialect/Braid/BraidOps.h"
#include "braid/Dialect/Braid/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/InterleavedRange.h"

#define DEBUG_TYPE "braid-tensor-parallel"

namespace braid {
#define GEN_PASS_DEF_TENSORPARALLEL
#include "braid/Dialect/Braid/Passes.h.inc"
} // namespace braid

using namespace mlir;
using namespace braid;

namespace {

struct TensorParallelPass
    : public braid::impl::TensorParallelBase<TensorParallelPass> {
  using TensorParallelBase::TensorParallelBase;
  void runOnOperation() override;
};

/// The partitioning of one function.
class Partitioner : public LocalizeContext {
public:
  /// `partitioned`: the axes of `grid` the function is already
  /// partitioned over (its types are their pieces), major first.
  Partitioner(func::FuncOp func, shard::GridOp grid, int64_t axis, int64_t size,
              ArrayRef<int64_t> partitioned = {})
      : func(func), grid(grid), axis(axis), size(size),
        partitioned(partitioned), builder(func.getContext()) {}

  /// Propagates the shardings and, unless `localizing` is false (an
  /// analysis of a copy: inferShardings), makes every value local.
  LogicalResult run(bool localizing = true);
  /// The sharding of `v` (replicated where none was found).
  ShardingAttr shardingOf(Value v) {
    auto it = sharding.find(v);
    return it != sharding.end()
               ? it->second
               : ShardingAttr::getReplicated(func.getContext());
  }

  unsigned numReduces = 0, numSplitValues = 0;

  // LocalizeContext.
  int64_t getSize() const override { return size; }
  Value getAxisIndex() override;
  Value allGather(OpBuilder &b, Value value, int64_t dim) override;

private:
  /// The value of `v` summed over the axis: one all-reduce per value,
  /// placed before its first use that needs it.
  Value reduced(Value v, Operation *before);
  /// Asks the producers of `op`'s replicated operands to make them split as
  /// another operand of the same type is; true if one did.
  bool reshardOperands(Operation *op, SmallVectorImpl<ShardingAttr> &in);
  /// Asks the producer of the whole value `v` (its one use is the op being
  /// propagated) to make it `wanted`, and so on up the operands it needs
  /// split; true if it did.
  bool reshard(Value v, ShardingAttr wanted);
  bool reshard(Value v, ShardingAttr wanted, bool apply);
  /// Checks that `sharding` fits `v`'s global type and that its blocks
  /// divide by the axis size; `what` names the value.
  LogicalResult checkDivides(Value v, ShardingAttr s, Operation *where,
                             const Twine &what);
  /// What sharding `s` (of `v`, named `what`) is over this axis: itself
  /// for a one-axis form, else its split or partial over `axis` with the
  /// blocks of the pieces the partitioned axes left.
  FailureOr<ShardingAttr> overAxis(ShardingAttr s, Operation *where,
                                   const Twine &what);
  LogicalResult propagate(Operation *op);
  LogicalResult propagateTransfer(Operation *op,
                                  ArrayRef<ShardingAttr> carried);
  LogicalResult finishResults(func::ReturnOp ret);
  void localize();
  std::string nameOf(Value v);

  func::FuncOp func;
  shard::GridOp grid;
  int64_t axis, size;
  SmallVector<int64_t> partitioned;
  /// The arguments' shardings name grid axes: the results' marks do too.
  bool onGridAxes = false;
  OpBuilder builder;
  DenseMap<Value, ShardingAttr> sharding;
  DenseMap<Value, Value> reducedOf;
  /// Each op's operand shardings as its rule accepted them.
  DenseMap<Operation *, SmallVector<ShardingAttr>> accepted;
  Value axisIndex;
};

} // namespace

/// A user-facing name for a value: its role's name for an argument, else
/// the op that makes it and the result number.
std::string Partitioner::nameOf(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (auto role = func.getArgAttrOfType<RoleAttr>(
            arg.getArgNumber(), BraidDialect::kRoleAttrName))
      return "argument '" + role.getName().str() + "'";
    return "argument #" + std::to_string(arg.getArgNumber());
  }
  auto result = cast<OpResult>(v);
  return "result #" + std::to_string(result.getResultNumber()) + " of '" +
         result.getOwner()->getName().getStringRef().str() + "'";
}

Value Partitioner::reduced(Value v, Operation *before) {
  Value &r = reducedOf[v];
  if (r)
    return r;
  builder.setInsertionPoint(before);
  AllReduceOp op =
      createAxisSum(builder, v, FlatSymbolRefAttr::get(grid), axis);
  r = op.getResult(0);
  ShardingAttr whole = ShardingAttr::getReplicated(func.getContext());
  sharding[r] = whole;
  accepted[op] = {ShardingAttr::getPartial(func.getContext())};
  ++numReduces;
  return r;
}

Value Partitioner::getAxisIndex() {
  if (!axisIndex)
    axisIndex = getOrCreateAxisIndex(func, FlatSymbolRefAttr::get(grid), axis);
  return axisIndex;
}

Value Partitioner::allGather(OpBuilder &b, Value value, int64_t dim) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape = llvm::to_vector(type.getShape());
  shape[dim] *= size;
  return AllGatherOp::create(
      b, value.getLoc(), type.clone(shape), value, FlatSymbolRefAttr::get(grid),
      b.getDenseI16ArrayAttr({int16_t(axis)}), b.getI64IntegerAttr(dim));
}

bool Partitioner::reshard(Value v, ShardingAttr wanted) {
  // Tried first without changing anything, so that a request that fails
  // halfway (one operand of a sum can be split, the other not) leaves every
  // sharding as it was.
  return reshard(v, wanted, /*apply=*/false) &&
         reshard(v, wanted, /*apply=*/true);
}

bool Partitioner::reshard(Value v, ShardingAttr wanted, bool apply) {
  auto result = dyn_cast<OpResult>(v);
  if (!result || !result.hasOneUse() || !shardingOf(v).isReplicated())
    return false;
  Operation *op = result.getOwner();
  auto producer = dyn_cast<ShardingOpInterface>(op);
  SmallVector<ShardingAttr> operands;
  if (!producer || !accepted.count(op) ||
      failed(producer.reshardResult(result.getResultNumber(), wanted,
                                    accepted[op], operands)))
    return false;
  // The operands it needs split in turn (an all-reduce's input, a sum's
  // terms).
  for (auto [i, s] : llvm::enumerate(operands))
    if (s != accepted[op][i] && !reshard(op->getOperand(i), s, apply))
      return false;
  if (!apply)
    return true;
  accepted[op] = operands;
  sharding[v] = wanted;
  return true;
}

bool Partitioner::reshardOperands(Operation *op,
                                  SmallVectorImpl<ShardingAttr> &in) {
  bool changed = false;
  for (OpOperand &operand : op->getOpOperands()) {
    unsigned i = operand.getOperandNumber();
    if (!in[i].isReplicated())
      continue;
    for (OpOperand &other : op->getOpOperands()) {
      ShardingAttr wanted = in[other.getOperandNumber()];
      if (!wanted.isSplit() ||
          other.get().getType() != operand.get().getType() ||
          !reshard(operand.get(), wanted))
        continue;
      in[i] = wanted;
      changed = true;
      break;
    }
  }
  return changed;
}

LogicalResult Partitioner::checkDivides(Value v, ShardingAttr s,
                                        Operation *where, const Twine &what) {
  if (!s.isSplit())
    return success();
  auto type = cast<RankedTensorType>(v.getType());
  int64_t d = s.getDim();
  if (d >= type.getRank())
    return where->emitError()
           << what << " is " << s.str() << ", but has type " << type;
  int64_t sum = 0;
  for (int64_t block : s.getBlockSizes(type.getShape())) {
    sum += block;
    if (block % size)
      return where->emitError()
             << what << " is " << s.str() << ": dimension " << d << " of "
             << type << " (" << (s.getBlocks().empty() ? "" : "a block of ")
             << "size " << block << ") does not divide by the tensor-parallel "
             << "size " << size << " (grid axis " << axis << " of @"
             << grid.getSymName() << ")";
  }
  if (sum != type.getDimSize(d))
    return where->emitError()
           << what << " is " << s.str() << ", whose blocks sum to " << sum
           << ", but dimension " << d << " of " << type << " has size "
           << type.getDimSize(d);
  return success();
}

FailureOr<ShardingAttr> Partitioner::overAxis(ShardingAttr s, Operation *where,
                                              const Twine &what) {
  if (!s.hasGridAxes())
    return s;
  MLIRContext *context = func.getContext();
  ArrayRef<int64_t> shape = grid.getShape();
  for (int16_t a : s.getAllAxes())
    if (a >= int64_t(shape.size()))
      return where->emitError()
             << what << " is " << s.str() << ", but grid @" << grid.getSymName()
             << " has " << shape.size() << " axes";
  ShardingAttr over = s.onAxis(axis);
  if (!over.isSplit())
    return over;
  // The axes before this one cut the dimension first: the function's type
  // holds their piece, this axis cuts it again.
  int64_t d = over.getDim();
  ArrayRef<int16_t> list = s.getAxesOf(d);
  int64_t before = 1;
  for (int16_t major : ArrayRef(list.begin(), llvm::find(list, axis))) {
    if (!llvm::is_contained(partitioned, int64_t(major)))
      return where->emitError()
             << what << " is " << s.str() << ": dimension " << d
             << " is split over grid axes " << llvm::interleaved_array(list)
             << " major to minor, so axis " << major
             << " is partitioned before axis " << axis;
    before *= shape[major];
  }
  if (before == 1)
    return over;
  // Each block divides by them: their runs checked it.
  SmallVector<int64_t> blocks;
  for (int64_t block : over.getBlocks())
    blocks.push_back(block / before);
  return ShardingAttr::getSplit(context, d, blocks);
}

/// A transfer of a pipeline stage's program (braid.send, braid.recv,
/// braid.send_recv) whose values braid-pipeline gave shardings (a shared
/// parameter's update or gradient part; one for a send or a receive, an
/// array of the values sent then those received for a send-receive): each
/// value is received as it was sent, each tensor-parallel rank's piece from
/// the same rank of the peer stage. A partial value is summed before a
/// transfer that carries it whole; any other difference is an error.
LogicalResult Partitioner::propagateTransfer(Operation *op,
                                             ArrayRef<ShardingAttr> carried) {
  unsigned sent = op->getNumOperands();
  SmallVector<ShardingAttr> overThisAxis;
  for (auto [i, c] : llvm::enumerate(carried)) {
    Value v = i < sent ? op->getOperand(i) : op->getResult(i - sent);
    const char *what = i < sent ? "the value sent" : "the value received";
    FailureOr<ShardingAttr> over = overAxis(c, op, what);
    if (failed(over) || failed(checkDivides(v, *over, op, what)))
      return failure();
    overThisAxis.push_back(*over);
  }
  carried = overThisAxis;
  op->removeAttr(BraidDialect::kShardingAttrName);
  for (auto [i, c] : llvm::enumerate(carried)) {
    if (i >= sent) {
      sharding[op->getResult(i - sent)] = c;
      continue;
    }
    Value v = op->getOperand(i);
    ShardingAttr s = shardingOf(v);
    if (s.isPartial() && c.isReplicated()) {
      op->setOperand(i, reduced(v, op));
      s = c;
    }
    if (s != c && !reshard(v, c))
      return op->emitError()
             << "'" << op->getName() << "' carries " << c.str() << " (its '"
             << BraidDialect::kShardingAttrName << "'), but "
             << (sent > 1 ? "operand #" + std::to_string(i) : "its operand")
             << " (" << nameOf(v) << ") is " << s.str();
  }
  accepted[op] = SmallVector<ShardingAttr>(carried.take_front(sent));
  return success();
}

/// The shardings braid-pipeline gave the values of transfer `op`, or none.
static SmallVector<ShardingAttr> carriedShardings(Operation *op) {
  Attribute attr = op->getAttr(BraidDialect::kShardingAttrName);
  if (!attr || !isa<SendOp, RecvOp, SendRecvOp>(op))
    return {};
  if (auto one = dyn_cast<ShardingAttr>(attr))
    return {one};
  SmallVector<ShardingAttr> all;
  for (Attribute a : cast<ArrayAttr>(attr))
    all.push_back(cast<ShardingAttr>(a));
  return all;
}

LogicalResult Partitioner::propagate(Operation *op) {
  if (SmallVector<ShardingAttr> carried = carriedShardings(op);
      !carried.empty())
    return propagateTransfer(op, carried);
  SmallVector<ShardingAttr> in;
  for (Value v : op->getOperands())
    in.push_back(shardingOf(v));
  SmallVector<ShardingAttr> out;
  auto rule = dyn_cast<ShardingOpInterface>(op);
  auto ask = [&] {
    out.clear();
    if (rule)
      return rule.propagateSharding(in, out);
    // An op braid has no rule for computes on whole values only.
    if (llvm::all_of(in, [](ShardingAttr a) { return a.isReplicated(); })) {
      out.assign(op->getNumResults(),
                 ShardingAttr::getReplicated(op->getContext()));
      return success();
    }
    return failure();
  };
  // A whole operand its producer can as well make split like another
  // operand (an embedding's gradient, added to the LM head's of a tied
  // table); else a partial operand the op cannot take: sum it over the axis
  // first.
  bool changed = false;
  if (failed(ask()) &&
      (!(changed = reshardOperands(op, in)) || failed(ask()))) {
    for (OpOperand &operand : op->getOpOperands()) {
      if (!in[operand.getOperandNumber()].isPartial())
        continue;
      operand.set(reduced(operand.get(), op));
      in[operand.getOperandNumber()] =
          ShardingAttr::getReplicated(op->getContext());
      changed = true;
    }
    if (!changed || failed(ask())) {
      InFlightDiagnostic diag = op->emitError()
                                << "'" << op->getName()
                                << "' has no tensor-parallel rule for ";
      bool first = true;
      for (auto [i, v] : llvm::enumerate(op->getOperands())) {
        if (in[i].isReplicated())
          continue;
        diag << (first ? "" : ", ") << "operand #" << i << " (" << nameOf(v)
             << ") " << in[i].str();
        first = false;
      }
      if (first)
        diag << "replicated operands";
      diag << " (docs/TensorParallel.md lists each op's rules)";
      return diag;
    }
  }
  for (auto [i, result] : llvm::enumerate(op->getResults())) {
    if (failed(checkDivides(result, out[i], op,
                            "result #" + Twine(i) + " of '" +
                                op->getName().getStringRef() + "'")))
      return failure();
    sharding[result] = out[i];
  }
  accepted[op] = in;
  return success();
}

LogicalResult Partitioner::finishResults(func::ReturnOp ret) {
  MLIRContext *context = func.getContext();
  for (OpOperand &operand : ret->getOpOperands()) {
    unsigned i = operand.getOperandNumber();
    if (shardingOf(operand.get()).isPartial())
      operand.set(reduced(operand.get(), ret));
    ShardingAttr s = shardingOf(operand.get());
    auto role =
        func.getResultAttrOfType<RoleAttr>(i, BraidDialect::kRoleAttrName);
    if (role && (role.getKind() == RoleKind::Parameter ||
                 role.getKind() == RoleKind::OptimizerState)) {
      unsigned arg = func->getContext()
                         ->getLoadedDialect<BraidDialect>()
                         ->getRoleTable(func)
                         .firstArgument.lookup(role.getName());
      ShardingAttr want = shardingOf(func.getArgument(arg));
      if (s != want)
        return ret.emitError()
               << "the updated " << stringifyRoleKind(role.getKind()) << " '"
               << role.getName() << "' (result #" << i << ") comes out "
               << s.str() << ", but its argument is " << want.str();
    }
    if (onGridAxes) {
      // The axes partitioned before, and this one's split.
      auto before = func.getResultAttrOfType<ShardingAttr>(
          i, BraidDialect::kShardingAttrName);
      SmallVector<SmallVector<int16_t>> axes;
      SmallVector<int64_t> blocks;
      if (before) {
        for (shard::GridAxesAttr a : before.getSplitAxes())
          axes.push_back(llvm::to_vector(a.asArrayRef()));
        blocks = llvm::to_vector(before.getBlocks());
      }
      if (s.isSplit()) {
        axes.resize(std::max<size_t>(axes.size(), s.getDim() + 1));
        axes[s.getDim()].push_back(int16_t(axis));
        if (blocks.empty())
          blocks = llvm::to_vector(s.getBlocks());
      }
      s = ShardingAttr::getOnAxes(context, axes, {}, blocks);
    }
    if (s.isSplit() || s.hasGridAxes())
      func.setResultAttr(i, BraidDialect::kShardingAttrName, s);
    else
      func.removeResultAttr(
          i, StringAttr::get(context, BraidDialect::kShardingAttrName));
  }
  accepted[ret] = {};
  return success();
}

void Partitioner::localize() {
  auto local = [&](Value v) {
    ShardingAttr s = shardingOf(v);
    if (!s.isSplit())
      return;
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape = llvm::to_vector(type.getShape());
    shape[s.getDim()] /= size;
    v.setType(type.clone(shape));
    ++numSplitValues;
  };
  Block &body = func.getBody().front();
  for (BlockArgument arg : body.getArguments())
    local(arg);
  for (Operation &op : llvm::make_early_inc_range(body)) {
    auto rule = dyn_cast<ShardingOpInterface>(&op);
    if (rule && accepted.count(&op)) {
      SmallVector<ShardingAttr> results;
      for (Value result : op.getResults())
        results.push_back(shardingOf(result));
      // An op that replaced itself made local values already.
      if (rule.localizeForSharding(accepted[&op], results, *this))
        continue;
    }
    for (Value result : op.getResults())
      local(result);
  }
  func.setFunctionType(
      FunctionType::get(func.getContext(), body.getArgumentTypes(),
                        body.getTerminator()->getOperandTypes()));
  // The axes partitioned before, then this one.
  SmallVector<int64_t> inner(partitioned.begin(), partitioned.end());
  inner.push_back(axis);
  func->setAttr(
      BraidDialect::kTensorParallelAttrName,
      TensorParallelAttr::get(func.getContext(), FlatSymbolRefAttr::get(grid),
                              inner.front(), ArrayRef(inner).drop_front()));
}

/// The log-softmax over the classes of `[N, C]` logits that `v` is, if it is
/// one.
static LogSoftmaxOp classLogSoftmax(Value v) {
  auto op = v.getDefiningOp<LogSoftmaxOp>();
  if (!op || cast<RankedTensorType>(op.getType()).getRank() != 2 ||
      op.getDim() != 1)
    return {};
  return op;
}

/// torch exports F.cross_entropy as log_softmax and nll_loss (and their
/// backward, log_softmax_backward of nll_loss_backward): one
/// braid.cross_entropy (and cross_entropy_backward) again, the op with the
/// vocabulary-parallel rule. The same values, in one pass over the logits.
static void fuseCrossEntropy(func::FuncOp func) {
  SmallVector<Operation *> dead;
  func.walk([&](Operation *op) {
    OpBuilder b(op);
    if (auto nll = dyn_cast<NllLossOp>(op)) {
      LogSoftmaxOp logp = classLogSoftmax(nll.getInput());
      if (!logp)
        return;
      Value loss = CrossEntropyOp::create(
          b, nll.getLoc(), nll.getType(), logp.getInput(), nll.getLabels(),
          nll.getReduction(), nll.getIgnoreIndexAttr());
      nll.getResult().replaceAllUsesWith(loss);
      dead.push_back(nll);
      return;
    }
    auto back = dyn_cast<LogSoftmaxBackwardOp>(op);
    if (!back || !back.getGrad().hasOneUse())
      return;
    auto nllBack = back.getGrad().getDefiningOp<NllLossBackwardOp>();
    LogSoftmaxOp logp = classLogSoftmax(back.getOutput());
    if (!nllBack || !logp || nllBack.getInput() != back.getOutput())
      return;
    Value grad = CrossEntropyBackwardOp::create(
        b, back.getLoc(), back.getType(), nllBack.getGrad(), logp.getInput(),
        nllBack.getLabels(), nllBack.getReduction(),
        nllBack.getIgnoreIndexAttr());
    back.getResult().replaceAllUsesWith(grad);
    dead.push_back(back);
    dead.push_back(nllBack);
  });
  for (Operation *op : dead)
    op->erase();
  // The log-softmaxes no one reads now.
  func.walk([&](LogSoftmaxOp op) {
    if (op->use_empty())
      op->erase();
  });
}

LogicalResult Partitioner::run(bool localizing) {
  fuseCrossEntropy(func);
  Block &body = func.getBody().front();
  // Arguments: their declared sharding, checked against their types.
  for (BlockArgument arg : body.getArguments()) {
    auto declared = func.getArgAttrOfType<ShardingAttr>(
        arg.getArgNumber(), BraidDialect::kShardingAttrName);
    if (!declared)
      continue;
    onGridAxes |= declared.hasGridAxes();
    FailureOr<ShardingAttr> s = overAxis(declared, func, nameOf(arg));
    if (failed(s) || failed(checkDivides(arg, *s, func, nameOf(arg))))
      return failure();
    sharding[arg] = *s;
  }
  // A graph-level step that does not yet talk over the axis.
  for (Operation &op : body) {
    if (isa<WaitOp>(op) || llvm::any_of(op.getResultTypes(), [](Type t) {
          return isa<FutureType>(t);
        }))
      return op.emitError()
             << "braid-tensor-parallel partitions graph-level steps; '"
             << op.getName() << "' is already scheduled (run it before the "
             << "overlap passes)";
    auto collective = dyn_cast<CollectiveOpInterface>(&op);
    if (collective &&
        collective.getGridAttr().getAttr() == grid.getSymNameAttr() &&
        llvm::is_contained(collective.getGridAxes(), int16_t(axis)))
      return op.emitError()
             << "'" << op.getName() << "' already communicates over grid axis "
             << axis << " of @" << grid.getSymName()
             << ", the tensor-parallel axis; the global step may use the "
                "other axes only";
  }
  for (Operation &op : llvm::make_early_inc_range(body)) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (failed(finishResults(ret)))
        return failure();
      continue;
    }
    if (failed(propagate(&op)))
      return failure();
  }
  if (localizing)
    localize();
  return success();
}

FailureOr<DenseMap<Value, ShardingAttr>>
braid::inferShardings(func::FuncOp func, shard::GridOp grid, int64_t axis) {
  MLIRContext *context = func.getContext();
  ArrayRef<int64_t> shape = grid.getShape();
  if (axis < 0 || axis >= int64_t(shape.size()) ||
      ShapedType::isDynamic(shape[axis]) ||
      !llvm::hasSingleElement(func.getBody()))
    return failure();
  // The copy's ops name their originals by position, so that an op the
  // partitioner replaces maps to nothing.
  constexpr StringLiteral kOrigin = "braid.origin";
  SmallVector<Operation *> originals;
  for (Operation &op : func.getBody().front())
    originals.push_back(&op);
  OwningOpRef<func::FuncOp> copy(func.clone());
  Block &body = copy->getBody().front();
  Builder b(context);
  for (auto [i, op] : llvm::enumerate(body))
    op.setAttr(kOrigin, b.getI64IntegerAttr(int64_t(i)));
  // Its errors are the pass's to report, on the step it partitions.
  ScopedDiagnosticHandler quiet(context,
                                [](Diagnostic &) { return success(); });
  Partitioner partitioner(*copy, grid, axis, shape[axis]);
  if (failed(partitioner.run(/*localizing=*/false)))
    return failure();
  DenseMap<Value, ShardingAttr> found;
  for (auto [arg, copied] : llvm::zip(func.getArguments(), body.getArguments()))
    found[arg] = partitioner.shardingOf(copied);
  for (Operation &op : body) {
    auto origin = op.getAttrOfType<IntegerAttr>(kOrigin);
    if (!origin || origin.getInt() >= int64_t(originals.size()))
      continue;
    Operation *original = originals[size_t(origin.getInt())];
    if (original->getName() != op.getName() ||
        original->getNumResults() != op.getNumResults())
      continue;
    for (auto [result, copied] :
         llvm::zip(original->getResults(), op.getResults()))
      found[result] = partitioner.shardingOf(copied);
  }
  return found;
}

void TensorParallelPass::runOnOperation() {
  ModuleOp module = getOperation();
  for (func::FuncOp func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    // Its arguments' shardings: the one-axis forms, or over grid axes.
    unsigned oneAxis = 0, onGridAxes = 0;
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
      if (auto s = func.getArgAttrOfType<ShardingAttr>(
              i, BraidDialect::kShardingAttrName))
        ++(s.hasGridAxes() ? onGridAxes : oneAxis);
    if (!oneAxis && !onGridAxes)
      continue;
    if (oneAxis && onGridAxes) {
      func.emitError() << "@" << func.getName() << " has " << oneAxis
                       << " arguments sharded over the tensor-parallel axis "
                          "(split D) and "
                       << onGridAxes
                       << " over grid axes (split_axes = ...); name the grid "
                          "axes in all of them";
      return signalPassFailure();
    }
    // Partitioned before: again only over another axis of the same grid,
    // which the arguments' shardings name.
    auto before = func->getAttrOfType<TensorParallelAttr>(
        BraidDialect::kTensorParallelAttrName);
    if (before && !onGridAxes) {
      func.emitError() << "@" << func.getName()
                       << " is already partitioned (it has '"
                       << BraidDialect::kTensorParallelAttrName << "')";
      return signalPassFailure();
    }
    if (!llvm::hasSingleElement(func.getBody())) {
      func.emitError() << "braid-tensor-parallel needs a function body of one "
                          "block, but @"
                       << func.getName() << " has "
                       << func.getBody().getBlocks().size();
      return signalPassFailure();
    }
    // The grid: named, the one it is partitioned over, or the module's
    // only one.
    shard::GridOp grid;
    if (gridName.empty() && before) {
      grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(
          func, before.getGrid());
      if (!grid) {
        func.emitError() << "@" << func.getName() << " is partitioned over "
                         << before.getGrid()
                         << ", which the module does not declare";
        return signalPassFailure();
      }
    } else if (!gridName.empty()) {
      grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(
          func, StringAttr::get(&getContext(), gridName));
      if (!grid) {
        func.emitError() << "braid-tensor-parallel: no shard.grid @" << gridName
                         << " in the module";
        return signalPassFailure();
      }
    } else {
      auto grids = llvm::to_vector(module.getOps<shard::GridOp>());
      if (grids.size() != 1) {
        func.emitError() << "@" << func.getName()
                         << " has sharded arguments, so it needs a grid: the "
                            "module declares "
                         << grids.size()
                         << " shard.grid ops; name one with grid=NAME";
        return signalPassFailure();
      }
      grid = grids.front();
    }
    if (before && before.getGrid().getAttr() != grid.getSymNameAttr()) {
      func.emitError() << "@" << func.getName() << " is partitioned over @"
                       << before.getGrid().getValue()
                       << "; it can be partitioned again over another axis of "
                          "that grid only, not of @"
                       << grid.getSymName();
      return signalPassFailure();
    }
    ArrayRef<int64_t> shape = grid.getShape();
    int64_t a = axis < 0 ? int64_t(shape.size()) - 1 : int64_t(axis);
    if (a < 0 || a >= int64_t(shape.size())) {
      func.emitError() << "braid-tensor-parallel: axis " << int64_t(axis)
                       << " is out of range for grid @" << grid.getSymName()
                       << " of rank " << shape.size();
      return signalPassFailure();
    }
    if (ShapedType::isDynamic(shape[a])) {
      func.emitError() << "braid-tensor-parallel: grid axis " << a << " of @"
                       << grid.getSymName() << " has no static size";
      return signalPassFailure();
    }
    SmallVector<int64_t> partitioned;
    if (before)
      partitioned = before.getAllAxes();
    if (llvm::is_contained(partitioned, a)) {
      func.emitError() << "@" << func.getName()
                       << " is already partitioned over grid axis " << a
                       << " of @" << grid.getSymName() << " (its '"
                       << BraidDialect::kTensorParallelAttrName << "' is "
                       << before << ")";
      return signalPassFailure();
    }
    Partitioner partitioner(func, grid, a, shape[a], partitioned);
    if (failed(partitioner.run()))
      return signalPassFailure();
    numReduces += partitioner.numReduces;
    numSplitValues += partitioner.numSplitValues;
  }
  // A pipeline's stage that holds no sharded parameter (the final norm and
  // a head left whole) still runs on every rank of the tensor-parallel
  // axis, replicated: it says so too, so that the runtime places its ranks
  // on that axis (one replica, the same batch) instead of taking them for
  // data-parallel replicas.
  TensorParallelAttr partitioned;
  for (func::FuncOp func : module.getOps<func::FuncOp>())
    if (func->hasAttr(BraidDialect::kStageAttrName))
      if (auto tp = func->getAttrOfType<TensorParallelAttr>(
              BraidDialect::kTensorParallelAttrName))
        partitioned = tp;
  if (!partitioned)
    return;
  for (func::FuncOp func : module.getOps<func::FuncOp>())
    if (func->hasAttr(BraidDialect::kStageAttrName) &&
        !func->hasAttr(BraidDialect::kTensorParallelAttrName))
      func->setAttr(BraidDialect::kTensorParallelAttrName, partitioned);
}
