//===- StageBuilder.h - emit one rank's program of a pipeline --*- C++ -*-===//
//
// braid-pipeline's second half (Pipeline.cpp runs it once per rank of the
// pipeline axis): the program of one rank, its stage's (or, interleaved,
// its virtual stages') forwards and backwards of each micro-batch in the
// schedule's order, a receive before the action that needs a value another
// rank computes and a send after the action that computes one, the
// gradient all-reduces as their sums complete, and the optimizer once at
// the end.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_DIALECT_BRAID_TRANSFORMS_STAGEBUILDER_H
#define BRAID_LIB_DIALECT_BRAID_TRANSFORMS_STAGEBUILDER_H

#include "StageAssignment.h"

#include "braid/Dialect/Braid/Analysis/PipelineSchedule.h"
#include "braid/Dialect/Braid/BraidOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallBitVector.h"

namespace braid::pipeline {

/// Which action of a stage sends or receives a transfer: a micro-batch's
/// forward or backward (B where the schedule splits the backward; W sends
/// nothing).
using ActionKind = PipelineAction::Kind;

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
  /// The identity of transfer `t` for micro-batch `k` (braid.transfers):
  /// its index among the step's transfers.
  TransferAttr transferOf(const Transfer &t, int k) {
    return TransferAttr::get(builder.getContext(), &t - transfers.data(), k);
  }
  /// The identity of a value of the whole step sent after the
  /// micro-batches: `n` counts the gradient parts (Step::deferred), then
  /// the shared parameters' updates, after the transfers.
  TransferAttr stepTransfer(int64_t n) {
    return TransferAttr::get(builder.getContext(),
                             int64_t(transfers.size()) + n, -1);
  }
  /// Names the values `op` moves (the sent ones first).
  void identify(Operation *op, ArrayRef<Attribute> moved) {
    op->setAttr(BraidDialect::kTransfersAttrName, builder.getArrayAttr(moved));
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

} // namespace braid::pipeline

#endif // BRAID_LIB_DIALECT_BRAID_TRANSFORMS_STAGEBUILDER_H
