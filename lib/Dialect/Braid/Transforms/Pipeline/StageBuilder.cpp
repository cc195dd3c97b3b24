//===- StageBuilder.cpp - emit one rank's program of a pipeline ----------===//
//
// StageBuilder.h says what a rank's program holds; docs/Pipeline.md why.
//
//===----------------------------------------------------------------------===//

#include "StageBuilder.h"
#include "../CostUtils.h"
#include "../ScheduleUtils.h"

#include "braid/Dialect/Braid/BraidAttributes.h"
#include "braid/Dialect/Braid/BraidDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <map>
#include <set>
#include <vector>

using namespace mlir;
using namespace braid;
using namespace braid::pipeline;

/// The #braid.action that tags the ops of `action` (the chunk is not part
/// of it: an interleaved rank's chunks of one micro-batch's forward are all
/// that micro-batch's F).
static ActionAttr actionAttr(MLIRContext *context,
                             const PipelineAction &action) {
  PipelineActionKind kind = PipelineActionKind::Forward;
  switch (action.kind) {
  case PipelineAction::Forward:
    kind = PipelineActionKind::Forward;
    break;
  case PipelineAction::Backward:
    kind = PipelineActionKind::Backward;
    break;
  case PipelineAction::Weight:
    kind = PipelineActionKind::Weight;
    break;
  }
  return ActionAttr::get(context, kind, action.microBatch);
}

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
  auto label = actionAttr(builder.getContext(), action);
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
      identify(recv, transferOf(t, k));
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
      identify(SendOp::create(builder, t.value.getLoc(), v, step.grid, axes,
                              peer(t.to)),
               transferOf(t, k));
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
                actionAttr(builder.getContext(), a));
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
      SmallVector<Attribute> moved;
      for (auto &[t, a] : part.sends)
        moved.push_back(transferOf(*t, int(a.microBatch)));
      for (auto &[t, a] : part.recvs)
        moved.push_back(transferOf(*t, int(a.microBatch)));
      identify(pair, moved);
      for (auto [recv, result] : llvm::zip(part.recvs, pair.getResults()))
        perBatch[recv.second.microBatch].map(recv.first->value, result);
      continue;
    }
    for (auto [send, v] : llvm::zip(part.sends, inputs)) {
      auto op = SendOp::create(builder, send.first->value.getLoc(), v,
                               step.grid, axes, rank);
      label(op, send.second);
      identify(op, transferOf(*send.first, int(send.second.microBatch)));
    }
    for (auto &[t, a] : part.recvs) {
      auto recv = RecvOp::create(builder, t->value.getLoc(), t->value.getType(),
                                 step.grid, axes, rank);
      label(recv, a);
      identify(recv, transferOf(*t, int(a.microBatch)));
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
  for (auto [n, entry] : llvm::enumerate(step.deferred)) {
    auto [part, sum] = entry;
    Value total = sum ? sum->getResult(0) : part;
    Operation *sink = *total.getUsers().begin();
    int from = step.stageOf(part), to = step.stage[sink];
    int param = parameterOfGradient(sink, total);
    if (mine(from) && !mine(to)) {
      auto send = SendOp::create(builder, part.getLoc(), partSums[part],
                                 step.grid, axes, peer(to));
      carryShardingOf(send, param);
      identify(send, stepTransfer(int64_t(n)));
    } else if (mine(to)) {
      Value far = partSums[part];
      if (!mine(from)) {
        auto recv = RecvOp::create(builder, part.getLoc(), part.getType(),
                                   step.grid, axes, peer(from));
        carryShardingOf(recv, param);
        identify(recv, stepTransfer(int64_t(n)));
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
        if (sent.insert(unsigned(t) % step.ranks).second) {
          auto send = SendOp::create(builder, v.getLoc(), update, step.grid,
                                     axes, peer(t));
          carryShardingOf(send, arg);
          identify(send, stepTransfer(int64_t(step.deferred.size() + i)));
        }
    } else if (sharedCopyOf(i) >= 0) {
      auto recv = RecvOp::create(builder, v.getLoc(), v.getType(), step.grid,
                                 axes, peer(owner));
      carryShardingOf(recv, arg);
      identify(recv, stepTransfer(int64_t(step.deferred.size() + i)));
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
