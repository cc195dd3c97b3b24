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

#include "../CostUtils.h"
#include "../ScheduleUtils.h"
#include "../TensorParallel.h"
#include "StageAssignment.h"
#include "StageBuilder.h"
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
#include "llvm/Support/Format.h"

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
      // The values' identities, in the pair's order (sent, then received).
      SmallVector<Attribute> moved;
      auto identity = [&](Operation *op) {
        if (auto ids =
                op->getAttrOfType<ArrayAttr>(BraidDialect::kTransfersAttrName))
          llvm::append_range(moved, ids);
      };
      for (SendOp send : sends)
        identity(send);
      for (RecvOp recv : recvs)
        identity(recv);
      if (moved.size() == sends.size() + recvs.size())
        pair->setAttr(BraidDialect::kTransfersAttrName,
                      ArrayAttr::get(func.getContext(), moved));
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
  std::optional<PipelineScheduleKind> kind =
      symbolizePipelineScheduleKind(schedule);
  if (!kind) {
    mlir::emitError(module.getLoc())
        << "braid-pipeline: unknown schedule '" << schedule
        << "' (known: " << pipelineScheduleNames() << ")";
    return signalPassFailure();
  }
  // The module's request (braid.models --pp, braid.export) fills the
  // options left at their defaults.
  if (auto request = module->getAttrOfType<PipelineAttr>(
          BraidDialect::kPipelineAttrName)) {
    if (axis < 0)
      axis = request.getAxis();
    if (microBatches == 1)
      microBatches = request.getMicroBatches();
    if (*kind == PipelineScheduleKind::OneForwardOneBackward)
      kind = request.getSchedule();
    if (virtualStages == 1)
      virtualStages = request.getVirtualStages();
    if (ArrayAttr names = request.getBoundaries(); names && boundaries.empty())
      for (Attribute name : names)
        boundaries.push_back(cast<StringAttr>(name).str());
  }
  StringRef scheduleName = stringifyPipelineScheduleKind(*kind);
  if (microBatches < 1 || microBatches > BraidDialect::kMaxMicroBatches ||
      virtualStages > BraidDialect::kMaxMicroBatches) {
    bool m = microBatches < 1 || microBatches > BraidDialect::kMaxMicroBatches;
    mlir::emitError(module.getLoc())
        << "braid-pipeline: " << (m ? "micro-batches" : "virtual-stages")
        << " must be 1 to " << BraidDialect::kMaxMicroBatches << ", but is "
        << int64_t(m ? microBatches : virtualStages);
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
                              scheduleName.str() + "'")
        << ", but virtual-stages is " << int64_t(virtualStages);
    return signalPassFailure();
  }
  Step step;
  if (failed(findStep(module, step)))
    return signalPassFailure();
  // Each stage program repeats its part of the step once per micro-batch.
  int64_t ops = 0;
  step.func.walk([&](Operation *) { ++ops; });
  if (microBatches >
      BraidDialect::kMaxUnrolledOps / std::max<int64_t>(ops, 1)) {
    step.func.emitError() << "has " << ops << " ops, which "
                          << int64_t(microBatches)
                          << " micro-batches would unroll into about "
                          << ops * microBatches
                          << ", more than braid-pipeline makes ("
                          << BraidDialect::kMaxUnrolledOps << "); use at most "
                          << BraidDialect::kMaxUnrolledOps /
                                 std::max<int64_t>(ops, 1)
                          << " micro-batches";
    return signalPassFailure();
  }
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
    // The stacked batch's elements must still count in 48 bits (what the
    // plan's byte sizes hold with room).
    if (role && role.getKind() == RoleKind::Batch && microBatches > 1 &&
        type.getNumElements() > (int64_t(1) << 48) / microBatches) {
      step.func.emitError()
          << "has batch argument '" << role.getName() << "' of "
          << type.getNumElements() << " elements, too large to stack "
          << int64_t(microBatches) << " micro-batches of";
      return signalPassFailure();
    }
  }
  classify(step);
  // Under tensor parallelism (sharded arguments), the shardings
  // braid-tensor-parallel will find, on its default axis (the grid's
  // last), so that no boundary cuts a split value.
  DenseMap<Value, ShardingAttr> shardings;
  bool sharded = false;
  for (unsigned i = 0; i < step.func.getNumArguments(); ++i)
    sharded |= bool(step.func.getArgAttr(i, BraidDialect::kShardingAttrName));
  auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(
      module.getOperation(), step.grid);
  if (sharded && grid && grid.getRank() - 1 != step.axis) {
    FailureOr<DenseMap<Value, ShardingAttr>> found =
        inferShardings(step.func, grid, grid.getRank() - 1);
    if (succeeded(found)) {
      shardings = std::move(*found);
      step.shardings = &shardings;
    }
  }
  SmallVector<std::string> cuts(boundaries.begin(), boundaries.end());
  if (cuts.empty() && step.stages > 1) {
    FailureOr<cost::Cluster> cluster = loadClusterFor(module, "");
    if (failed(cluster))
      return signalPassFailure();
    SmallVector<double> seconds;
    FailureOr<SmallVector<std::string>> balanced =
        balancedBoundaries(step, *cluster, &seconds);
    if (failed(balanced))
      return signalPassFailure();
    cuts = std::move(*balanced);
    if (report) {
      InFlightDiagnostic remark = step.func.emitRemark()
                                  << "stage boundaries balanced by the cost "
                                     "model: ";
      llvm::interleaveComma(cuts, remark, [&](const std::string &c) {
        remark << "'" << c << "'";
      });
      remark << "; forward and backward per stage (ms, cluster '"
             << cluster->name << "'): ";
      llvm::interleaveComma(seconds, remark, [&](double s) {
        std::string text;
        llvm::raw_string_ostream(text) << llvm::format("%.3f", s * 1e3);
        remark << text;
      });
      remark << " (--stage-boundaries names others)";
    }
  }
  if (failed(assignArguments(step, cuts)) || failed(assignOps(step)))
    return signalPassFailure();
  markGlobalNorms(step);
  if (failed(checkAssignment(step)))
    return signalPassFailure();
  findDeferredParts(step);
  if (step.shardings && failed(checkSplitCrossings(step, cuts)))
    return signalPassFailure();
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
  if (failed(checkTransferOrder(step, transfers, actions, scheduleName)))
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
                       << scheduleName
                       << "' do not pass the stage checks above";
    return signalPassFailure();
  }
}
