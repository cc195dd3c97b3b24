//===- Pipeline.cpp - split a training step into pipeline stages ----------===//
//
// Assigns every op of the step to a stage (the forward to the latest stage
// among its operands', the backward to the earliest among its users' where
// its forward operands exist, the optimizer to its parameters'), then
// builds one program per stage by emitting its micro-batches' forwards and
// backwards in the schedule's order, with a send after the action that
// computes a value another stage needs and a receive before the action
// there that needs it, and the optimizer once at the end.
//
//===----------------------------------------------------------------------===//

#include "CostUtils.h"
#include "StageAssignment.h"
#include "StagePrograms.h"

#include "braid/Dialect/Braid/Analysis/PipelineSchedule.h"
#include "braid/Dialect/Braid/BraidAttributes.h"
#include "braid/Dialect/Braid/BraidDialect.h"
#include "braid/Dialect/Braid/BraidOps.h"
#include "braid/Dialect/Braid/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallBitVector.h"

#include <cmath>
#include <map>
#include <set>
#include <vector>

#define DEBUG_TYPE "braid-pipeline"

namespace braid {
#define GEN_PASS_DEF_PIPELINE
#include "braid/Dialect/Braid/Passes.h.inc"
} // namespace braid

using namespace mlir;
using namespace braid;
using namespace braid::pipeline;

namespace {

/// Which action of a stage sends or receives a transfer: a micro-batch's
/// forward or backward (B where the schedule splits the backward; W sends
/// nothing).
using ActionKind = PipelineAction::Kind;

} // namespace

//===----------------------------------------------------------------------===//
// Building the stage programs
//===----------------------------------------------------------------------===//

namespace {

/// A value one stage computes and another needs: sent after the sender's
/// action of `sendKind`, received before the receiver's of `recvKind`.
struct Transfer {
  Value value;
  int from, to;
  ActionKind sendKind, recvKind;
};

class StageBuilder {
public:
  StageBuilder(Step &step, unsigned index, unsigned microBatches, bool split,
               ArrayRef<Transfer> transfers)
      : step(step), index(index), microBatches(microBatches), split(split),
        transfers(transfers), builder(step.func.getContext()),
        perBatch(microBatches) {}

  /// Makes the function, emits `actions` and the optimizer; false (with a
  /// diagnostic) if a value is missing.
  FailureOr<func::FuncOp> build(ArrayRef<PipelineAction> actions);

private:
  Value get(int k, Value v);
  void clone(int k, Operation *op);
  /// The step's arguments that `v` reads through free ops.
  void argumentsRead(Value v, llvm::SmallBitVector &into);
  /// The argument of the shared parameter whose new value result `i` is,
  /// or -1.
  int sharedParameterOf(unsigned i) {
    RoleAttr role = step.resultRole(i);
    if (!role || role.getKind() != RoleKind::Parameter)
      return -1;
    for (unsigned a = 0; a < step.func.getNumArguments(); ++a)
      if (RoleAttr r = step.argRole(a); r && !step.sharedWith[a].empty() &&
                                        r.getKind() == RoleKind::Parameter &&
                                        r.getName() == role.getName())
        return int(a);
    return -1;
  }
  /// The argument of the shared parameter result `i` is the new value of on
  /// another stage that has a copy of it (this one), or -1.
  int sharedCopyOf(unsigned i) {
    int arg = sharedParameterOf(i);
    return arg >= 0 && llvm::is_contained(step.sharedWith[arg], int(index))
               ? arg
               : -1;
  }
  /// Emits `action`: its receives (unless `received`, emitted before the
  /// W ahead of it), its ops, its sums and its sends; true if it emitted
  /// the next action's receives.
  bool emitAction(const PipelineAction &action, bool received);
  void emitReceives(const PipelineAction &action);
  /// Labels the ops after `before` (from the block's start if null) with
  /// `action`; returns the block's last op.
  Operation *tagSince(Operation *before, const PipelineAction &action);
  void emitActionOps(const PipelineAction &action);
  /// The action after the one being emitted, unless it is a W or there is
  /// none.
  const PipelineAction *next = nullptr;
  Value accumulate(Value sum, Value part) {
    return sum ? AddOp::create(builder, part.getLoc(), sum, part).getResult()
               : part;
  }

  Step &step;
  unsigned index, microBatches;
  /// Whether the actions split the backward into B and W.
  bool split;
  ArrayRef<Transfer> transfers;
  OpBuilder builder;
  Block *block = nullptr;
  /// The stage's argument for each of the step's it takes.
  DenseMap<unsigned, Value> args;
  /// Values per micro-batch, and those shared by the micro-batches.
  SmallVector<IRMapping> perBatch;
  IRMapping shared;
  /// The accumulated loss, and each all-reduce's accumulated operands.
  Value loss;
  /// The sums of the gradient parts this stage computes for another's
  /// parameter (Step::deferred).
  llvm::MapVector<Value, Value> partSums;
  DenseMap<Operation *, SmallVector<Value>> gradients;
  bool failed = false;
};

} // namespace

void StageBuilder::clone(int k, Operation *op) {
  SmallVector<Value> operands;
  for (Value v : op->getOperands())
    operands.push_back(get(k, v));
  if (failed)
    return;
  IRMapping map;
  map.map(op->getOperands(), operands);
  Operation *copy = builder.clone(*op, map);
  IRMapping &into = k < 0 ? shared : perBatch[k];
  into.map(op->getResults(), copy->getResults());
}

void StageBuilder::argumentsRead(Value v, llvm::SmallBitVector &into) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    into.set(arg.getArgNumber());
    return;
  }
  Operation *def = v.getDefiningOp();
  if (step.stage.lookup(def) != kFree)
    return;
  for (Value operand : def->getOperands())
    argumentsRead(operand, into);
}

Value StageBuilder::get(int k, Value v) {
  if (k >= 0 && perBatch[k].contains(v))
    return perBatch[k].lookup(v);
  if (shared.contains(v))
    return shared.lookup(v);
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    Value whole = args.lookup(arg.getArgNumber());
    RoleAttr role = step.argRole(arg.getArgNumber());
    if (!whole) {
      failed = true;
      // build() gives a stage every argument its ops read:
      // not reachable from input.
      step.func.emitError() << "braid-pipeline: stage " << index
                            << " lacks argument #" << arg.getArgNumber();
      return {};
    }
    if (!role || role.getKind() != RoleKind::Batch || microBatches == 1) {
      shared.map(v, whole);
      return whole;
    }
    // Micro-batch k's slice of the batch.
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> offsets(type.getRank(), 0);
    offsets[0] = std::max(k, 0) * type.getDimSize(0);
    Value slice =
        SliceOp::create(builder, v.getLoc(), type, whole,
                        builder.getDenseI64ArrayAttr(offsets), nullptr);
    perBatch[std::max(k, 0)].map(v, slice);
    return slice;
  }
  Operation *def = v.getDefiningOp();
  if (step.stageOf(v) == kFree) {
    clone(k, def);
    return failed ? Value() : get(k, v);
  }
  failed = true;
  // Receives come before the action that needs them and ops in step order:
  // not reachable from input.
  def->emitOpError() << "is needed on stage " << index
                     << " before braid-pipeline made it available there "
                        "(computed on stage "
                     << step.stageOf(v) << ")";
  return {};
}

Operation *StageBuilder::tagSince(Operation *before,
                                  const PipelineAction &action) {
  auto label = builder.getStringAttr(actionLabel(action));
  for (Operation &op : llvm::make_range(
           before ? std::next(before->getIterator()) : block->begin(),
           block->end()))
    op.setAttr(BraidDialect::kActionAttrName, label);
  return block->empty() ? nullptr : &block->back();
}

bool StageBuilder::emitAction(const PipelineAction &action, bool received) {
  // Every op the action emits carries its label (the pipeline diagram).
  Operation *before = block->empty() ? nullptr : &block->back();
  if (!received)
    emitReceives(action);
  // A W receives nothing: where the B before it ended with sends, the next
  // action's receives go before the W, next to those sends (one
  // send-receive, as in 1F1B), so that the neighbour's matching send waits
  // for no W. (Without sends before, they would join the B's receives and
  // hold the W back.)
  bool hoist = action.kind == ActionKind::Weight && next && before &&
               isa<SendOp>(before);
  if (hoist) {
    emitReceives(*next);
    before = tagSince(before, *next);
  }
  emitActionOps(action);
  tagSince(before, action);
  return hoist;
}

void StageBuilder::emitReceives(const PipelineAction &action) {
  int k = int(action.microBatch);
  auto axes = builder.getDenseI16ArrayAttr({int16_t(step.axis)});
  for (const Transfer &t : transfers)
    if (t.to == int(index) && t.recvKind == action.kind) {
      auto recv =
          RecvOp::create(builder, t.value.getLoc(), t.value.getType(),
                         step.grid, axes, builder.getI64IntegerAttr(t.from));
      perBatch[k].map(t.value, recv.getResult());
    }
}

void StageBuilder::emitActionOps(const PipelineAction &action) {
  int k = int(action.microBatch);
  auto axes = builder.getDenseI16ArrayAttr({int16_t(step.axis)});
  Phase phase =
      action.kind == ActionKind::Forward ? Phase::Forward : Phase::Backward;
  // The action that completes a micro-batch's gradients.
  bool last =
      action.kind == (split ? ActionKind::Weight : ActionKind::Backward);
  for (Operation &op : step.body->without_terminator()) {
    if (step.phase[&op] != phase || step.stage[&op] != int(index))
      continue;
    if (split && phase == Phase::Backward &&
        step.weight.count(&op) != (action.kind == ActionKind::Weight))
      continue;
    // A sum with a part from afar is the local part until the end.
    auto part = llvm::find_if(step.deferred, [&](const auto &d) {
      return d.second && d.second == &op;
    });
    if (part != step.deferred.end()) {
      Value local = op.getOperand(op.getOperand(0) == part->first ? 1 : 0);
      perBatch[k].map(op.getResult(0), get(k, local));
      continue;
    }
    clone(k, &op);
  }
  // The sums first, then the sends, so that the sends and the next action's
  // receives form one run (braid.send_recv).
  if (phase == Phase::Forward &&
      step.stageOf(step.terminator->getOperand(step.lossResult)) == int(index))
    loss =
        accumulate(loss, get(k, step.terminator->getOperand(step.lossResult)));
  if (last)
    for (auto &[part, sum] : step.deferred)
      if (step.stageOf(part) == int(index))
        partSums[part] = accumulate(partSums.lookup(part), get(k, part));
  if (last)
    for (Operation *sink : step.sinks) {
      if (step.stage[sink] != int(index))
        continue;
      SmallVector<Value> &sums = gradients[sink];
      sums.resize(sink->getNumOperands());
      for (auto [i, operand] : llvm::enumerate(sink->getOperands()))
        if (!step.deferred.count(operand))
          sums[i] = accumulate(sums[i], get(k, operand));
    }
  for (const Transfer &t : transfers)
    if (t.from == int(index) && t.sendKind == action.kind) {
      Value v = get(k, t.value);
      if (failed)
        return;
      SendOp::create(builder, t.value.getLoc(), v, step.grid, axes,
                     builder.getI64IntegerAttr(t.to));
    }
}

FailureOr<func::FuncOp> StageBuilder::build(ArrayRef<PipelineAction> actions) {
  func::FuncOp func = step.func;
  // The arguments: the stage's own, and the free ones it reads (through
  // free ops, which it computes again).
  unsigned n = func.getNumArguments();
  llvm::SmallBitVector used(n);
  for (Operation &op : step.body->without_terminator())
    if (step.stage[&op] == int(index))
      for (Value v : op.getOperands())
        argumentsRead(v, used);
  for (unsigned i = 0; i < n; ++i)
    if (step.argStage[i] == int(index))
      used.set(i);
  // The results: the stage's own, the loss where it is computed, free ones
  // on every stage that reads all their arguments (a shared step count),
  // and those that read none on stage 0.
  // A shared parameter's new value too, on every stage that has a copy.
  SmallVector<unsigned> results;
  for (unsigned i = 0; i < step.terminator->getNumOperands(); ++i) {
    Value v = step.terminator->getOperand(i);
    int s = step.stageOf(v);
    if (s == int(index) || sharedCopyOf(i) >= 0) {
      results.push_back(i);
      continue;
    }
    if (s != kFree)
      continue;
    llvm::SmallBitVector reads(n);
    argumentsRead(v, reads);
    if (reads.any() ? !reads.test(used) : index == 0)
      results.push_back(i);
  }

  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  for (unsigned i : used.set_bits()) {
    Type type = func.getArgument(i).getType();
    RoleAttr role = step.argRole(i);
    if (role && role.getKind() == RoleKind::Batch && microBatches > 1) {
      auto tensor = cast<RankedTensorType>(type);
      SmallVector<int64_t> shape(tensor.getShape());
      shape[0] *= int64_t(microBatches);
      type = tensor.clone(shape);
    }
    argTypes.push_back(type);
    argAttrs.push_back(func.getArgAttrDict(i));
  }
  SmallVector<Type> resultTypes;
  SmallVector<DictionaryAttr> resultAttrs;
  for (unsigned i : results) {
    resultTypes.push_back(step.terminator->getOperand(i).getType());
    resultAttrs.push_back(func.getResultAttrDict(i));
  }
  builder.setInsertionPoint(func);
  auto stageFunc = func::FuncOp::create(
      builder, func.getLoc(), (func.getName() + "_stage" + Twine(index)).str(),
      builder.getFunctionType(argTypes, resultTypes));
  for (auto [i, attrs] : llvm::enumerate(argAttrs))
    if (attrs)
      stageFunc.setArgAttrs(i, attrs);
  for (auto [i, attrs] : llvm::enumerate(resultAttrs))
    if (attrs)
      stageFunc.setResultAttrs(i, attrs);
  stageFunc->setAttr(
      BraidDialect::kStageAttrName,
      StageAttr::get(func.getContext(), step.grid, step.axis, int64_t(index)));
  block = stageFunc.addEntryBlock();
  for (auto [i, arg] : llvm::enumerate(used.set_bits()))
    args[arg] = block->getArgument(i);
  builder.setInsertionPointToEnd(block);

  bool received = false;
  for (auto [i, action] : llvm::enumerate(actions)) {
    next = i + 1 < actions.size() && actions[i + 1].kind != ActionKind::Weight
               ? &actions[i + 1]
               : nullptr;
    received = emitAction(action, received);
    if (failed)
      return failure();
  }
  // Gradient parts for another stage's parameter: sent once, summed; the
  // parameter's stage adds them to its own sums (in step order on both
  // sides, after every transfer of the micro-batches).
  auto axes = builder.getDenseI16ArrayAttr({int16_t(step.axis)});
  for (auto &[part, sum] : step.deferred) {
    Value total = sum ? sum->getResult(0) : part;
    Operation *sink = *total.getUsers().begin();
    int from = step.stageOf(part), to = step.stage[sink];
    if (from == int(index)) {
      SendOp::create(builder, part.getLoc(), partSums[part], step.grid, axes,
                     builder.getI64IntegerAttr(to));
    } else if (to == int(index)) {
      Value far =
          RecvOp::create(builder, part.getLoc(), part.getType(), step.grid,
                         axes, builder.getI64IntegerAttr(from))
              .getResult();
      SmallVector<Value> &sums = gradients[sink];
      sums.resize(sink->getNumOperands());
      for (auto [i, operand] : llvm::enumerate(sink->getOperands()))
        if (operand == total)
          sums[i] = accumulate(sums[i], far);
    }
  }
  // The micro-batches' mean.
  double share = 1.0 / double(microBatches);
  auto mean = [&](Value sum) {
    return microBatches == 1 ? sum
                             : ScaleOp::create(builder, sum.getLoc(), sum,
                                               builder.getF64FloatAttr(share))
                                   .getResult();
  };
  if (loss)
    shared.map(step.terminator->getOperand(step.lossResult), mean(loss));
  for (Operation &op : step.body->without_terminator()) {
    if (step.phase[&op] != Phase::Optimizer || step.stage[&op] != int(index))
      continue;
    if (auto it = gradients.find(&op); it != gradients.end())
      for (auto [operand, sum] : llvm::zip(op.getOperands(), it->second))
        shared.map(operand, mean(sum));
    clone(-1, &op);
    if (failed)
      return failure();
  }
  // Shared parameters: their stage sends each update to the stages with a
  // copy, which take it as theirs (after every transfer of the actions on
  // both sides, so the order of each pair's transfers stays one).
  DenseMap<unsigned, Value> copies;
  for (unsigned i = 0; i < step.terminator->getNumOperands(); ++i) {
    int arg = sharedParameterOf(i);
    if (arg < 0)
      continue;
    Value v = step.terminator->getOperand(i);
    int owner = step.argStage[arg];
    if (owner == int(index)) {
      Value update = get(-1, v);
      if (failed)
        return failure();
      for (int t : step.sharedWith[arg])
        SendOp::create(builder, v.getLoc(), update, step.grid, axes,
                       builder.getI64IntegerAttr(t));
    } else if (llvm::is_contained(step.sharedWith[arg], int(index))) {
      copies[i] = RecvOp::create(builder, v.getLoc(), v.getType(), step.grid,
                                 axes, builder.getI64IntegerAttr(owner))
                      .getResult();
    }
  }
  SmallVector<Value> values;
  for (unsigned i : results)
    values.push_back(copies.count(i) ? copies[i]
                                     : get(-1, step.terminator->getOperand(i)));
  if (failed)
    return failure();
  func::ReturnOp::create(builder, step.terminator->getLoc(), values);
  return stageFunc;
}

/// The values that cross stages, in the order both sides issue them: by
/// the position of the op computing them, then the receiving stage.
static FailureOr<SmallVector<Transfer>> findTransfers(Step &step) {
  SmallVector<Transfer> transfers;
  std::map<std::pair<int, int>, std::pair<ActionKind, ActionKind>> kinds;
  for (Operation &op : step.body->without_terminator()) {
    Phase phase = step.phase[&op];
    int from = step.stage[&op];
    if (phase == Phase::Optimizer || from == kFree)
      continue;
    for (Value v : op.getResults()) {
      if (step.deferred.count(v))
        continue;
      std::set<int> to;
      for (Operation *user : v.getUsers())
        if (user != step.terminator && step.stage.lookup(user) != from)
          to.insert(step.stage.lookup(user));
      for (int t : to) {
        ActionKind send = phase == Phase::Forward ? ActionKind::Forward
                                                  : ActionKind::Backward;
        ActionKind recv = phase == Phase::Forward && t > from
                              ? ActionKind::Forward
                              : ActionKind::Backward;
        auto [it, added] = kinds.try_emplace({from, t}, send, recv);
        if (!added && it->second != std::make_pair(send, recv))
          return op.emitOpError()
                 << "sends a value of the "
                 << (phase == Phase::Forward ? "forward" : "backward")
                 << " from stage " << from << " to stage " << t
                 << ", which also receives values of the other pass from it; "
                    "braid-pipeline orders one kind of transfer per pair of "
                    "stages";
        transfers.push_back({v, from, t, send, recv});
      }
    }
  }
  return transfers;
}

/// Merges each run of transfers (nothing computed between them) that sends
/// to one peer and receives from one into one braid.send_recv, placed
/// where the run starts: its sends, and its receives, keep their order,
/// which is what matching needs, and nothing completes later than before
/// (the run's last transfer waited for all the others). A run with several
/// peers a direction stays as it is. Returns how many it made.
static unsigned pairTransfers(func::FuncOp func) {
  unsigned made = 0;
  Block &body = func.getBody().front();
  SmallVector<Operation *> run;
  auto flush = [&]() {
    SmallVector<SendOp> sends;
    SmallVector<RecvOp> recvs;
    for (Operation *op : run) {
      if (auto send = dyn_cast<SendOp>(op))
        sends.push_back(send);
      else
        recvs.push_back(cast<RecvOp>(op));
    }
    auto onePeer = [](auto &ops) {
      return llvm::all_of(
          ops, [&](auto op) { return op.getPeer() == ops.front().getPeer(); });
    };
    if (!sends.empty() && !recvs.empty() && onePeer(sends) && onePeer(recvs)) {
      OpBuilder builder(run.front());
      SmallVector<Value> inputs;
      SmallVector<Type> types;
      for (SendOp send : sends)
        inputs.push_back(send.getInput());
      for (RecvOp recv : recvs)
        types.push_back(recv.getResult().getType());
      auto pair = SendRecvOp::create(
          builder, recvs.front().getLoc(), types, inputs,
          recvs.front().getGridAttr(), recvs.front().getGridAxesAttr(),
          sends.front().getPeerAttr(), recvs.front().getPeerAttr());
      // It receives for the action that follows (the pipeline diagram and
      // the activations it holds count its results there).
      if (Attribute action =
              recvs.front()->getAttr(BraidDialect::kActionAttrName))
        pair->setAttr(BraidDialect::kActionAttrName, action);
      for (auto [recv, result] : llvm::zip(recvs, pair.getResults()))
        recv.getResult().replaceAllUsesWith(result);
      for (Operation *op : run)
        op->erase();
      ++made;
    }
    run.clear();
  };
  for (Operation &op : llvm::make_early_inc_range(body)) {
    if (isa<SendOp, RecvOp>(op))
      run.push_back(&op);
    else
      flush();
  }
  flush();
  return made;
}

namespace {

struct PipelinePass : public braid::impl::PipelineBase<PipelinePass> {
  using PipelineBase::PipelineBase;
  void runOnOperation() override;
  LogicalResult findStep(ModuleOp module, Step &step);
};

} // namespace

LogicalResult PipelinePass::findStep(ModuleOp module, Step &step) {
  SmallVector<func::FuncOp> steps;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal() || func->hasAttr(BraidDialect::kStageAttrName))
      continue;
    bool roles = false;
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      roles |= bool(func.getArgAttr(i, BraidDialect::kRoleAttrName));
    if (roles)
      steps.push_back(func);
  }
  if (steps.size() != 1)
    return module.emitError()
           << "braid-pipeline splits one training step (a function whose "
              "arguments have braid.role), but the module has "
           << steps.size();
  step.func = steps.front();
  Region &region = step.func.getBody();
  if (!llvm::hasSingleElement(region))
    return step.func.emitError() << "needs a body of one block to be split "
                                    "into pipeline stages";
  step.body = &region.front();
  step.terminator = step.body->getTerminator();
  for (unsigned i = 0; i < step.func.getNumResults(); ++i)
    if (RoleAttr role = step.resultRole(i);
        role && role.getKind() == RoleKind::Loss)
      step.lossResult = int(i);
  if (step.lossResult < 0)
    return step.func.emitError() << "has no loss result (braid.role<loss>); "
                                    "braid-pipeline needs the loss to tell "
                                    "the forward from the backward";
  for (Operation &op : step.body->without_terminator()) {
    auto collective = dyn_cast<CollectiveOpInterface>(op);
    if (!collective)
      continue;
    if (!step.grid)
      step.grid = collective.getGridAttr();
    if (collective.getGridAttr() != step.grid)
      return op.emitOpError()
             << "is on grid " << collective.getGridAttr()
             << ", but the step's collectives are on " << step.grid;
    if (llvm::is_contained(collective.getGridAxes(), int16_t(axis)))
      return op.emitOpError()
             << "spans the pipeline axis " << int64_t(axis)
             << "; the step before braid-pipeline is one stage replica's, "
                "whose collectives run on the other axes";
    auto gradient = dyn_cast<GradientCollectiveOpInterface>(op);
    if (gradient && gradient.getGradOf())
      step.sinks.push_back(&op);
  }
  if (step.sinks.empty())
    return step.func.emitError()
           << "has no gradient all-reduce (a collective with grad_of); "
              "braid-pipeline finds the optimizer from them";
  auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(
      module.getOperation(), step.grid);
  // The collectives' verifiers check their grid: not reachable from input.
  if (!grid)
    return step.func.emitError()
           << "has collectives on " << step.grid << ", which is not a grid";
  if (axis < 0 || axis >= grid.getRank())
    return step.func.emitError()
           << "braid-pipeline needs axis=N, the pipeline axis of grid "
           << step.grid << " (0 to " << grid.getRank() - 1 << "), but axis is "
           << int64_t(axis);
  int64_t size = grid.getShape()[axis];
  if (ShapedType::isDynamic(size))
    return step.func.emitError() << "has a pipeline axis of dynamic size";
  step.stages = unsigned(size);
  step.axis = axis;
  return success();
}

void PipelinePass::runOnOperation() {
  ModuleOp module = getOperation();
  // The module's request (braid.models --pp, braid.export) fills the
  // options left at their defaults.
  if (auto request = module->getAttrOfType<DictionaryAttr>(
          BraidDialect::kPipelineAttrName)) {
    if (auto a = request.getAs<IntegerAttr>("axis"); a && axis < 0)
      axis = a.getInt();
    if (auto m = request.getAs<IntegerAttr>("micro_batches");
        m && microBatches == 1)
      microBatches = m.getInt();
    if (auto name = request.getAs<StringAttr>("schedule");
        name && schedule == "1f1b")
      schedule = name.str();
    if (auto names = request.getAs<ArrayAttr>("boundaries");
        names && boundaries.empty())
      for (Attribute name : names)
        boundaries.push_back(cast<StringAttr>(name).str());
  }
  std::optional<PipelineScheduleKind> kind = parsePipelineSchedule(schedule);
  if (!kind) {
    mlir::emitError(module.getLoc())
        << "braid-pipeline: unknown schedule '" << schedule
        << "' (known: " << pipelineScheduleNames() << ")";
    return signalPassFailure();
  }
  if (microBatches < 1) {
    mlir::emitError(module.getLoc())
        << "braid-pipeline: micro-batches must be at least 1, but is "
        << int64_t(microBatches);
    return signalPassFailure();
  }
  Step step;
  if (failed(findStep(module, step)))
    return signalPassFailure();
  for (unsigned i = 0; i < step.func.getNumArguments(); ++i) {
    RoleAttr role = step.argRole(i);
    auto type = dyn_cast<RankedTensorType>(step.func.getArgument(i).getType());
    if (role && role.getKind() == RoleKind::Batch && microBatches > 1 &&
        (!type || type.getRank() == 0 || type.isDynamicDim(0))) {
      step.func.emitError() << "has batch argument '" << role.getName()
                            << "' without a static first dimension to "
                               "stack micro-batches on";
      return signalPassFailure();
    }
  }
  classify(step);
  SmallVector<std::string> cuts(boundaries.begin(), boundaries.end());
  if (cuts.empty() && step.stages > 1) {
    FailureOr<cost::Cluster> cluster = loadClusterFor(module, "");
    if (failed(cluster))
      return signalPassFailure();
    FailureOr<SmallVector<std::string>> balanced =
        balancedBoundaries(step, *cluster);
    if (failed(balanced))
      return signalPassFailure();
    cuts = std::move(*balanced);
  }
  if (failed(assignArguments(step, cuts)) || failed(assignOps(step)) ||
      failed(checkAssignment(step)))
    return signalPassFailure();
  findDeferredParts(step);
  if (splitsBackward(*kind))
    splitBackward(step);
  FailureOr<SmallVector<Transfer>> transfers = findTransfers(step);
  if (failed(transfers))
    return signalPassFailure();

  unsigned m = unsigned(microBatches);
  for (unsigned s = 0; s < step.stages; ++s) {
    StageBuilder builder(step, s, m, splitsBackward(*kind), *transfers);
    FailureOr<func::FuncOp> func =
        builder.build(pipelineActions(*kind, step.stages, s, m));
    if (failed(func))
      return signalPassFailure();
    numPaired += pairTransfers(*func);
  }
  numTransfers += 2 * m * transfers->size();
  step.func.erase();
  module->removeAttr(BraidDialect::kPipelineAttrName);
  if (failed(verifyStagePrograms(module))) {
    // A safety net: transfers of one kind per pair of stages, issued in one
    // order on both sides in a schedule's order, pass these checks:
    // not reachable from input that we know of.
    module.emitError() << "braid-pipeline: the stage programs of schedule '"
                       << schedule << "' do not pass the stage checks above";
    return signalPassFailure();
  }
}
