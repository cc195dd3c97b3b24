//===- Pipeline.cpp - split a training step into pipeline stages ----------===//
//
// Assigns every op of the step to a stage (the forward to the latest stage
// among its operands', the backward to the earliest among its users' where
// its forward operands exist, the optimizer to its parameters'), then
// builds one program per rank of the pipeline axis (its stage, or under the
// interleaved schedule its virtual stages) by emitting its micro-batches'
// forwards and backwards in the schedule's order, with a send after the
// action that computes a value another rank needs and a receive before the
// action there that needs it, and the optimizer once at the end.
//
//===----------------------------------------------------------------------===//

#include "CostUtils.h"
#include "ScheduleUtils.h"
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

/// A value one stage computes and another (on another rank) needs: sent
/// after the sender's action of `sendKind`, received before the receiver's
/// of `recvKind`.
struct Transfer {
  Value value;
  int from, to;
  ActionKind sendKind, recvKind;
};

class StageBuilder {
public:
  StageBuilder(Step &step, unsigned index, unsigned microBatches, bool split,
               bool interleaved, ArrayRef<Transfer> transfers)
      : step(step), index(index), microBatches(microBatches), split(split),
        interleaved(interleaved), transfers(transfers),
        builder(step.func.getContext()), perBatch(microBatches) {}

  /// Whether stage `s` runs on this rank.
  bool mine(int s) const { return s >= 0 && unsigned(s) % step.ranks == index; }
  /// The stage an action of this rank runs (its chunk's).
  int stageOf(const PipelineAction &a) const {
    return int(a.chunk * step.ranks + index);
  }
  /// The rank stage `s` runs on: a transfer's peer.
  IntegerAttr peer(int s) { return builder.getI64IntegerAttr(s % step.ranks); }

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
  /// another stage that has a copy of it (one of this rank's), or -1.
  int sharedCopyOf(unsigned i) {
    int arg = sharedParameterOf(i);
    return arg >= 0 && llvm::any_of(step.sharedWith[arg],
                                    [&](int s) { return mine(s); })
               ? arg
               : -1;
  }
  /// Gives the transfer `op` of a value of parameter argument `arg` (its
  /// update or a part of its gradient) the parameter's sharding, which
  /// braid-tensor-parallel then gives the value on both sides.
  void carryShardingOf(Operation *op, int arg) {
    if (arg < 0)
      return;
    if (auto s = step.func.getArgAttrOfType<ShardingAttr>(
            unsigned(arg), BraidDialect::kShardingAttrName))
      op->setAttr(BraidDialect::kShardingAttrName, s);
  }
  /// The parameter argument whose gradient the operand `total` of the
  /// gradient all-reduce `sink` is, or -1.
  int parameterOfGradient(Operation *sink, Value total) {
    auto names = cast<GradientCollectiveOpInterface>(sink).getGradOf();
    const RoleTable &roles =
        step.func->getContext()->getLoadedDialect<BraidDialect>()->getRoleTable(
            step.func);
    for (auto [i, operand] : llvm::enumerate(sink->getOperands()))
      if (operand == total && names && i < names->size())
        if (auto it = roles.firstArgument.find(
                cast<StringAttr>((*names)[i]).getValue());
            it != roles.firstArgument.end())
          return int(it->second);
    return -1;
  }
  /// Emits `action`: its receives (unless `received`, emitted before the
  /// W ahead of it), its ops, its sums and its sends; true if it emitted
  /// the next action's receives.
  bool emitAction(const PipelineAction &action, bool received);
  void emitReceives(const PipelineAction &action);
  /// The interleaved schedule's emission, Megatron-LM's: the actions in
  /// units (a warm-up forward; a forward and a backward; a drain backward),
  /// each unit's sends and the next unit's receives posted together after
  /// it, a send-receive per neighbour.
  void emitUnits(ArrayRef<PipelineAction> actions);
  void emitGroup(ArrayRef<PipelineAction> sending,
                 ArrayRef<PipelineAction> receiving);
  void emitSends(const PipelineAction &action);
  /// Emits the all-reduce of each of `stage`'s gradients whose sum over
  /// the micro-batches is complete with micro-batch `k`'s part (added to
  /// the sum here unless `summed`).
  void reduceReady(int k, int stage, bool summed = false);
  /// reduceReady for the actions in toReduce.
  void reducePending();
  /// Labels the ops after `before` (from the block's start if null) with
  /// `action`; returns the block's last op.
  Operation *tagSince(Operation *before, const PipelineAction &action);
  void emitActionOps(const PipelineAction &action);
  /// The action after the one being emitted, unless it is a W or there is
  /// none.
  const PipelineAction *next = nullptr;
  /// The micro-batches' mean of `sum`.
  Value mean(Value sum) {
    if (microBatches == 1)
      return sum;
    return ScaleOp::create(builder, sum.getLoc(), sum,
                           builder.getF64FloatAttr(1.0 / double(microBatches)))
        .getResult();
  }
  Value accumulate(Value sum, Value part) {
    return sum ? AddOp::create(builder, part.getLoc(), sum, part).getResult()
               : part;
  }

  Step &step;
  unsigned index, microBatches;
  /// Whether the actions split the backward into B and W; whether they
  /// are the interleaved schedule's (emitUnits).
  bool split, interleaved;
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
  /// The gradient all-reduces emitted in the last micro-batch's backward,
  /// and the last backwards whose all-reduces wait for their sends.
  DenseSet<Operation *> reduced;
  SmallVector<PipelineAction> toReduce;
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
  emitSends(action);
  reducePending();
  tagSince(before, action);
  return hoist;
}

void StageBuilder::emitReceives(const PipelineAction &action) {
  int k = int(action.microBatch);
  auto axes = builder.getDenseI16ArrayAttr({int16_t(step.axis)});
  for (const Transfer &t : transfers)
    if (t.to == stageOf(action) && t.recvKind == action.kind) {
      auto recv = RecvOp::create(builder, t.value.getLoc(), t.value.getType(),
                                 step.grid, axes, peer(t.from));
      perBatch[k].map(t.value, recv.getResult());
    }
}

void StageBuilder::emitActionOps(const PipelineAction &action) {
  int k = int(action.microBatch);
  Phase phase =
      action.kind == ActionKind::Forward ? Phase::Forward : Phase::Backward;
  // The action that completes a micro-batch's gradients.
  bool last =
      action.kind == (split ? ActionKind::Weight : ActionKind::Backward);
  int stage = stageOf(action);
  // The stage's last micro-batch reduces each gradient as soon as its sum
  // is complete, as a data-parallel step does, so that the all-reduces
  // overlap the rest of its backward; where the action sends a gradient
  // down, after its sends instead (the next stage's drain then waits for
  // no all-reduce sharing the links; the stage idles from there on). Those
  // with a part from another stage wait for it, after every action.
  bool final = last && k + 1 == int(microBatches);
  bool sends = llvm::any_of(transfers, [&](const Transfer &t) {
    return t.from == stage && t.sendKind == action.kind;
  });
  if (final && sends)
    toReduce.push_back(action);
  final &= !sends;
  if (final)
    reduceReady(k, stage);
  for (Operation &op : step.body->without_terminator()) {
    if (step.phase[&op] != phase || step.stage[&op] != stage)
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
    if (final)
      reduceReady(k, stage);
  }
  // The sums first, then the sends, so that the sends and the next action's
  // receives form one run (braid.send_recv).
  if (phase == Phase::Forward &&
      step.stageOf(step.terminator->getOperand(step.lossResult)) == stage)
    loss =
        accumulate(loss, get(k, step.terminator->getOperand(step.lossResult)));
  if (last)
    for (auto &[part, sum] : step.deferred)
      if (step.stageOf(part) == stage)
        partSums[part] = accumulate(partSums.lookup(part), get(k, part));
  if (last)
    for (Operation *sink : step.sinks) {
      if (step.stage[sink] != stage || reduced.count(sink))
        continue;
      SmallVector<Value> &sums = gradients[sink];
      sums.resize(sink->getNumOperands());
      for (auto [i, operand] : llvm::enumerate(sink->getOperands()))
        if (!step.deferred.count(operand))
          sums[i] = accumulate(sums[i], get(k, operand));
    }
}

void StageBuilder::reduceReady(int k, int stage, bool summed) {
  for (Operation *sink : step.sinks) {
    if (step.stage[sink] != stage || reduced.count(sink) ||
        !llvm::all_of(sink->getOperands(), [&](Value v) {
          return !step.deferred.count(v) && perBatch[k].contains(v);
        }))
      continue;
    reduced.insert(sink);
    SmallVector<Value> &sums = gradients[sink];
    sums.resize(sink->getNumOperands());
    for (auto [i, operand] : llvm::enumerate(sink->getOperands())) {
      if (!summed)
        sums[i] = accumulate(sums[i], get(k, operand));
      shared.map(operand, mean(sums[i]));
    }
    clone(-1, sink);
  }
}

void StageBuilder::reducePending() {
  for (const PipelineAction &a : toReduce) {
    Operation *before = block->empty() ? nullptr : &block->back();
    reduceReady(int(a.microBatch), stageOf(a), /*summed=*/true);
    tagSince(before, a);
  }
  toReduce.clear();
}

void StageBuilder::emitSends(const PipelineAction &action) {
  int k = int(action.microBatch), stage = stageOf(action);
  auto axes = builder.getDenseI16ArrayAttr({int16_t(step.axis)});
  for (const Transfer &t : transfers)
    if (t.from == stage && t.sendKind == action.kind) {
      Value v = get(k, t.value);
      if (failed)
        return;
      SendOp::create(builder, t.value.getLoc(), v, step.grid, axes, peer(t.to));
    }
}

void StageBuilder::emitGroup(ArrayRef<PipelineAction> sending,
                             ArrayRef<PipelineAction> receiving) {
  // Per peer, in the actions' order (checkTransferOrder's): what goes to
  // it and what comes from it, with the action each is for.
  struct Part {
    SmallVector<std::pair<const Transfer *, PipelineAction>> sends, recvs;
  };
  std::map<unsigned, Part> parts;
  unsigned p = step.ranks;
  for (const PipelineAction &a : sending)
    for (const Transfer &t : transfers)
      if (t.from == stageOf(a) && t.sendKind == a.kind)
        parts[unsigned(t.to) % p].sends.push_back({&t, a});
  for (const PipelineAction &a : receiving)
    for (const Transfer &t : transfers)
      if (t.to == stageOf(a) && t.recvKind == a.kind)
        parts[unsigned(t.from) % p].recvs.push_back({&t, a});
  // Even ranks exchange with the next rank first, odd ones with the
  // previous first, so that each neighbour's first part meets its peer's
  // first (and the wrap from the last rank to the first waits for one
  // exchange at most).
  SmallVector<unsigned> peers;
  for (auto &[r, part] : parts)
    peers.push_back(r);
  llvm::sort(peers, [&](unsigned a, unsigned b) {
    unsigned da = (a + p - index) % p, db = (b + p - index) % p;
    return index % 2 ? da > db : da < db;
  });
  auto axes = builder.getDenseI16ArrayAttr({int16_t(step.axis)});
  auto label = [&](Operation *op, const PipelineAction &a) {
    op->setAttr(BraidDialect::kActionAttrName,
                builder.getStringAttr(actionLabel(a)));
  };
  for (unsigned r : peers) {
    Part &part = parts[r];
    SmallVector<Value> inputs;
    for (auto &[t, a] : part.sends) {
      inputs.push_back(get(int(a.microBatch), t->value));
      if (failed)
        return;
    }
    auto rank = builder.getI64IntegerAttr(r);
    if (!part.sends.empty() && !part.recvs.empty()) {
      SmallVector<Type> types;
      for (auto &[t, a] : part.recvs)
        types.push_back(t->value.getType());
      auto pair =
          SendRecvOp::create(builder, part.recvs.front().first->value.getLoc(),
                             types, inputs, step.grid, axes, rank, rank);
      // It receives for the first action it receives for (as pairTransfers
      // labels one).
      label(pair, part.recvs.front().second);
      for (auto [recv, result] : llvm::zip(part.recvs, pair.getResults()))
        perBatch[recv.second.microBatch].map(recv.first->value, result);
      continue;
    }
    for (auto [send, v] : llvm::zip(part.sends, inputs))
      label(SendOp::create(builder, send.first->value.getLoc(), v, step.grid,
                           axes, rank),
            send.second);
    for (auto &[t, a] : part.recvs) {
      auto recv = RecvOp::create(builder, t->value.getLoc(), t->value.getType(),
                                 step.grid, axes, rank);
      label(recv, a);
      perBatch[a.microBatch].map(t->value, recv.getResult());
    }
  }
}

void StageBuilder::emitUnits(ArrayRef<PipelineAction> actions) {
  // The steady state's forward and backward make one unit, every other
  // action one of its own.
  unsigned warmup = interleavedWarmup(step.ranks, index, microBatches,
                                      step.stages / step.ranks);
  unsigned forwards = microBatches * (step.stages / step.ranks);
  SmallVector<SmallVector<PipelineAction, 2>> units;
  for (size_t i = 0; i < actions.size(); ++i) {
    units.emplace_back(1, actions[i]);
    if (i >= warmup && i < 2 * forwards - warmup)
      units.back().push_back(actions[++i]);
  }
  emitGroup({}, units.front());
  for (size_t u = 0; u < units.size() && !failed; ++u) {
    for (const PipelineAction &a : units[u]) {
      Operation *before = block->empty() ? nullptr : &block->back();
      emitActionOps(a);
      tagSince(before, a);
    }
    emitGroup(units[u], u + 1 < units.size() ? ArrayRef(units[u + 1])
                                             : ArrayRef<PipelineAction>());
    reducePending();
  }
}

FailureOr<func::FuncOp> StageBuilder::build(ArrayRef<PipelineAction> actions) {
  func::FuncOp func = step.func;
  // The arguments: the stage's own, and the free ones it reads (through
  // free ops, which it computes again).
  unsigned n = func.getNumArguments();
  llvm::SmallBitVector used(n);
  for (Operation &op : step.body->without_terminator())
    if (mine(step.stage[&op]))
      for (Value v : op.getOperands())
        argumentsRead(v, used);
  for (unsigned i = 0; i < n; ++i)
    if (mine(step.argStage[i]))
      used.set(i);
  // The results: the stage's own, the loss where it is computed, free ones
  // on every stage that reads all their arguments (a shared step count),
  // and those that read none on stage 0.
  // A shared parameter's new value too, on every stage that has a copy.
  SmallVector<unsigned> results;
  for (unsigned i = 0; i < step.terminator->getNumOperands(); ++i) {
    Value v = step.terminator->getOperand(i);
    int s = step.stageOf(v);
    if (mine(s) || sharedCopyOf(i) >= 0) {
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
  if (interleaved)
    emitUnits(actions);
  for (auto [i, action] :
       llvm::enumerate(interleaved ? ArrayRef<PipelineAction>() : actions)) {
    next = i + 1 < actions.size() && actions[i + 1].kind != ActionKind::Weight
               ? &actions[i + 1]
               : nullptr;
    received = emitAction(action, received);
    if (failed)
      return failure();
  }
  // Gradient parts for another stage's parameter: sent once, summed; the
  // parameter's stage adds them to its own sums (in step order on both
  // sides, after every transfer of the micro-batches). Between two stages
  // of one rank, added without a transfer.
  auto axes = builder.getDenseI16ArrayAttr({int16_t(step.axis)});
  for (auto &[part, sum] : step.deferred) {
    Value total = sum ? sum->getResult(0) : part;
    Operation *sink = *total.getUsers().begin();
    int from = step.stageOf(part), to = step.stage[sink];
    int param = parameterOfGradient(sink, total);
    if (mine(from) && !mine(to)) {
      carryShardingOf(SendOp::create(builder, part.getLoc(), partSums[part],
                                     step.grid, axes, peer(to)),
                      param);
    } else if (mine(to)) {
      Value far = partSums[part];
      if (!mine(from)) {
        auto recv = RecvOp::create(builder, part.getLoc(), part.getType(),
                                   step.grid, axes, peer(from));
        carryShardingOf(recv, param);
        far = recv.getResult();
      }
      SmallVector<Value> &sums = gradients[sink];
      sums.resize(sink->getNumOperands());
      for (auto [i, operand] : llvm::enumerate(sink->getOperands()))
        if (operand == total)
          sums[i] = accumulate(sums[i], far);
    }
  }
  if (loss)
    shared.map(step.terminator->getOperand(step.lossResult), mean(loss));
  for (Operation &op : step.body->without_terminator()) {
    int s = step.stage[&op];
    if (step.phase[&op] != Phase::Optimizer || (!mine(s) && s != kEvery) ||
        reduced.count(&op))
      continue;
    // A sum of squares across stages: this rank's part, summed over the
    // pipeline axis (every rank issues it here, in step order).
    if (auto squares = dyn_cast<SumSquaresOp>(op); squares && s == kEvery) {
      SmallVector<Value> local;
      for (Value v : squares.getInputs())
        if (mine(step.stageOf(v)))
          local.push_back(get(-1, v));
      if (failed)
        return failure();
      auto type = cast<RankedTensorType>(squares.getType());
      Value part = local.empty()
                       ? ConstantOp::create(builder, op.getLoc(), type,
                                            DenseElementsAttr::get(type, 0.0f))
                             .getResult()
                       : SumSquaresOp::create(builder, op.getLoc(), type, local)
                             .getResult();
      shared.map(
          squares.getResult(),
          createAxisSum(builder, part, step.grid, step.axis)->getResult(0));
      continue;
    }
    if (auto it = gradients.find(&op); it != gradients.end())
      for (auto [operand, sum] : llvm::zip(op.getOperands(), it->second))
        shared.map(operand, mean(sum));
    clone(-1, &op);
    if (failed)
      return failure();
  }
  // Shared parameters: their stage sends each update to the ranks with a
  // copy, which take it as theirs (after every transfer of the actions on
  // both sides, so the order of each pair's transfers stays one); a copy on
  // the parameter's own rank is the parameter.
  DenseMap<unsigned, Value> copies;
  for (unsigned i = 0; i < step.terminator->getNumOperands(); ++i) {
    int arg = sharedParameterOf(i);
    if (arg < 0)
      continue;
    Value v = step.terminator->getOperand(i);
    int owner = step.argStage[arg];
    if (mine(owner)) {
      Value update = get(-1, v);
      if (failed)
        return failure();
      std::set<unsigned> sent{index};
      for (int t : step.sharedWith[arg])
        if (sent.insert(unsigned(t) % step.ranks).second)
          carryShardingOf(SendOp::create(builder, v.getLoc(), update, step.grid,
                                         axes, peer(t)),
                          arg);
    } else if (sharedCopyOf(i) >= 0) {
      auto recv = RecvOp::create(builder, v.getLoc(), v.getType(), step.grid,
                                 axes, peer(owner));
      carryShardingOf(recv, arg);
      copies[i] = recv.getResult();
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

/// The values that cross ranks, by the position of the op computing them,
/// then the receiving stage: a forward value going up is received at the
/// receiver's forward of its micro-batch, anything else at its backward.
/// (Between two stages of one rank a value stays where it is.) With
/// `relay` (the interleaved schedule, whose programs exchange with their
/// two neighbours on the ring of ranks alone), a value for a stage whose
/// rank is not a neighbour goes stage by stage instead, each stage between
/// receiving it and passing it on after its own action of that
/// micro-batch: a forward value up at each forward, any value down at each
/// backward (a residual that skips a small stage, as Megatron-LM's hidden
/// state carries it).
static SmallVector<Transfer> findTransfers(Step &step, bool relay,
                                           unsigned &relayed) {
  SmallVector<Transfer> transfers;
  unsigned p = step.ranks;
  auto neighbours = [&](int a, int b) {
    unsigned d = (unsigned(b) % p + p - unsigned(a) % p) % p;
    return d == 1 || d == p - 1;
  };
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
        if (user != step.terminator && step.stage.lookup(user) != from &&
            unsigned(step.stage.lookup(user)) % p != unsigned(from) % p)
          to.insert(step.stage.lookup(user));
      ActionKind send =
          phase == Phase::Forward ? ActionKind::Forward : ActionKind::Backward;
      size_t first = transfers.size();
      // One hop, or the hop already there, received no later than `recv`.
      auto hop = [&](int a, int b, ActionKind sendKind, ActionKind recv) {
        for (Transfer &t : llvm::drop_begin(transfers, first))
          if (t.from == a && t.to == b) {
            if (recv == ActionKind::Forward)
              t.recvKind = recv;
            return;
          }
        transfers.push_back({v, a, b, sendKind, recv});
      };
      for (int t : to) {
        ActionKind recv = phase == Phase::Forward && t > from
                              ? ActionKind::Forward
                              : ActionKind::Backward;
        bool up = phase == Phase::Forward && t > from;
        if (!relay || neighbours(from, t) || (!up && t > from)) {
          hop(from, t, send, recv);
          continue;
        }
        ++relayed;
        int step1 = up ? 1 : -1;
        for (int a = from; a != t; a += step1)
          hop(a, a + step1,
              a == from ? send
              : up      ? ActionKind::Forward
                        : ActionKind::Backward,
              a + step1 == t ? recv
              : up           ? ActionKind::Forward
                             : ActionKind::Backward);
      }
    }
  }
  return transfers;
}

/// Proves that each pair of ranks issues its transfers of the micro-batches
/// in one order on both sides: the n-th send of rank a to rank b carries
/// the value and micro-batch that b's n-th receive from a expects (the
/// order in which NCCL and MPI match them). StageBuilder issues an
/// action's receives before it and its sends after it, each in `transfers`'
/// order; the sums of gradient parts and the shared parameters' updates
/// come after every action on both sides, in one order. Under GPipe and
/// 1F1B a pair carries one kind of value each way and the orders agree by
/// construction; under the interleaved schedule a rank's sends to its
/// neighbour carry several chunks' values (with two ranks, activations and
/// gradients alike), which Megatron-LM's order keeps in step. A step whose
/// values cross stages otherwise (a backward value sent up next to the
/// activations) can break it, and is refused here, before anything runs.
static LogicalResult
checkTransferOrder(Step &step, ArrayRef<Transfer> transfers,
                   ArrayRef<SmallVector<PipelineAction>> actions,
                   StringRef schedule) {
  struct Issued {
    const Transfer *transfer;
    PipelineAction action;
  };
  std::map<std::pair<unsigned, unsigned>, SmallVector<Issued>> sends, recvs;
  unsigned p = step.ranks;
  for (unsigned r = 0; r < p; ++r)
    for (const PipelineAction &a : actions[r]) {
      int stage = int(a.chunk * p + r);
      for (const Transfer &t : transfers)
        if (t.to == stage && t.recvKind == a.kind)
          recvs[{unsigned(t.from) % p, r}].push_back({&t, a});
      for (const Transfer &t : transfers)
        if (t.from == stage && t.sendKind == a.kind)
          sends[{r, unsigned(t.to) % p}].push_back({&t, a});
    }
  auto describe = [](const Issued &i) {
    std::string kinds[] = {"forward", "backward", "W"};
    return "micro-batch " + std::to_string(i.action.microBatch) + "'s " +
           kinds[i.action.kind] + " of stage ";
  };
  for (auto &[pair, sent] : sends) {
    SmallVector<Issued> &received = recvs[pair];
    for (size_t n = 0; n < std::max(sent.size(), received.size()); ++n) {
      // Each transfer is sent and received once per micro-batch: a
      // shorter side is not reachable from input.
      if (n >= sent.size() || n >= received.size() ||
          sent[n].transfer != received[n].transfer ||
          sent[n].action.microBatch != received[n].action.microBatch) {
        const Issued &s = sent[std::min(n, sent.size() - 1)];
        const Issued &q =
            received.empty() ? s : received[std::min(n, received.size() - 1)];
        InFlightDiagnostic diag =
            s.transfer->value.getDefiningOp()->emitOpError()
            << "is rank " << pair.first << "'s send #" << n + 1 << " to rank "
            << pair.second << " under schedule '" << schedule << "' (after "
            << describe(s) << s.transfer->from << "), but rank " << pair.second
            << "'s receive #" << n + 1 << " from rank " << pair.first
            << " is for another value (before " << describe(q) << q.transfer->to
            << "); the two sides' orders of transfers differ, and sends "
               "and receives match in order";
        diag.attachNote(q.transfer->value.getLoc())
            << "the value that receive expects";
        return failure();
      }
    }
  }
  return success();
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
      // The values' shardings (a shared parameter's), each kept.
      SmallVector<Attribute> carried;
      bool anyCarried = false;
      auto carry = [&](Operation *op) {
        Attribute s = op->getAttr(BraidDialect::kShardingAttrName);
        anyCarried |= bool(s);
        carried.push_back(s ? s
                            : ShardingAttr::getReplicated(func.getContext()));
      };
      for (SendOp send : sends)
        carry(send);
      for (RecvOp recv : recvs)
        carry(recv);
      if (anyCarried)
        pair->setAttr(BraidDialect::kShardingAttrName,
                      ArrayAttr::get(func.getContext(), carried));
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
  step.ranks = unsigned(size);
  step.stages = step.ranks * unsigned(virtualStages);
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
    if (auto v = request.getAs<IntegerAttr>("virtual_stages");
        v && virtualStages == 1)
      virtualStages = v.getInt();
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
  bool interleaved = *kind == PipelineScheduleKind::Interleaved;
  if (interleaved ? virtualStages < 2 : virtualStages != 1) {
    mlir::emitError(module.getLoc())
        << "braid-pipeline: "
        << (interleaved ? "the interleaved schedule needs virtual-stages of "
                          "at least 2 (with 1 it is 1f1b)"
                        : "virtual-stages is for the interleaved schedule, "
                          "not '" +
                              schedule + "'")
        << ", but virtual-stages is " << int64_t(virtualStages);
    return signalPassFailure();
  }
  Step step;
  if (failed(findStep(module, step)))
    return signalPassFailure();
  if (interleaved && microBatches % step.ranks) {
    // Megatron-LM asks the same: its forwards go through the chunks in
    // groups of p micro-batches.
    step.func.emitError() << "runs the interleaved schedule on " << step.ranks
                          << " ranks, which needs a multiple of " << step.ranks
                          << " micro-batches, but has "
                          << int64_t(microBatches);
    return signalPassFailure();
  }
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
  if (failed(assignArguments(step, cuts)) || failed(assignOps(step)))
    return signalPassFailure();
  markGlobalNorms(step);
  if (failed(checkAssignment(step)))
    return signalPassFailure();
  findDeferredParts(step);
  if (splitsBackward(*kind))
    splitBackward(step);
  unsigned relayed = 0;
  SmallVector<Transfer> transfers = findTransfers(step, interleaved, relayed);
  numRelayed += relayed;
  unsigned m = unsigned(microBatches);
  SmallVector<SmallVector<PipelineAction>> actions;
  for (unsigned r = 0; r < step.ranks; ++r)
    actions.push_back(
        pipelineActions(*kind, step.ranks, r, m, unsigned(virtualStages)));
  if (failed(checkTransferOrder(step, transfers, actions, schedule)))
    return signalPassFailure();

  for (unsigned r = 0; r < step.ranks; ++r) {
    StageBuilder builder(step, r, m, splitsBackward(*kind), interleaved,
                         transfers);
    FailureOr<func::FuncOp> func = builder.build(actions[r]);
    if (failed(func))
      return signalPassFailure();
    numPaired += pairTransfers(*func);
  }
  numTransfers += 2 * m * transfers.size();
  step.func.erase();
  module->removeAttr(BraidDialect::kPipelineAttrName);
  if (failed(verifyStagePrograms(module))) {
    // A safety net: transfers issued in one order on both sides
    // (checkTransferOrder) in a schedule's order pass these checks:
    // not reachable from input that we know of.
    module.emitError() << "braid-pipeline: the stage programs of schedule '"
                       << schedule << "' do not pass the stage checks above";
    return signalPassFailure();
  }
}
