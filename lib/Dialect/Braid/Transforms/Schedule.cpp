//===- Schedule.cpp - list scheduling for overlap ---------------*- C++ -*-===//
//
// Reorders the ops of a step, within their dependencies, so that the ops each
// bucket needs run before those of later buckets and each bucket's optimizer
// updates run right after its wait.
//
//===----------------------------------------------------------------------===//

#include "ScheduleUtils.h"

#include "braid/Dialect/Braid/BraidDialect.h"
#include "braid/Dialect/Braid/BraidOps.h"
#include "braid/Dialect/Braid/Passes.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <queue>

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "braid-schedule"

namespace braid {
#define GEN_PASS_DEF_SCHEDULE
#include "braid/Dialect/Braid/Passes.h.inc"
} // namespace braid

using namespace mlir;
using namespace braid;

namespace {

constexpr unsigned kNoStart = ~0u;

/// The priority of an op: lower runs first among ready ops.
struct Priority {
  bool afterWait;    // Depends on a wait: runs in the optimizer phase.
  unsigned bucket;   // The start it feeds (before waits) or the wait it
                     // follows (after); kNoStart for neither.
  unsigned position; // Original position, to break ties stably.

  bool operator<(const Priority &other) const {
    return std::tie(afterWait, bucket, position) <
           std::tie(other.afterWait, other.bucket, other.position);
  }
};

struct SchedulePass : public braid::impl::ScheduleBase<SchedulePass> {
  using ScheduleBase::ScheduleBase;

  // Options are checked once, before any function is scheduled.
  LogicalResult initialize(MLIRContext *context) override {
    if (!(maxLiveIncrease >= 0))
      return emitError(UnknownLoc::get(context))
             << "max-live-increase must be non-negative, but is "
             << maxLiveIncrease;
    return success();
  }

  void runOnOperation() override {
    FailureOr<Block *> body = schedulableBody(getOperation());
    if (failed(body) || (*body && failed(runOnBlock(getOperation(), **body))))
      signalPassFailure();
  }

  LogicalResult runOnBlock(FunctionOpInterface func, Block &body);
  void scheduleAsDdp(Block &body);
};

/// DDP's order: the program's, except that every wait moves before the first
/// op that uses the result of any wait, in start order, so that the
/// optimizer runs once all communication has landed. A wait whose start
/// comes later stays where it is.
void SchedulePass::scheduleAsDdp(Block &body) {
  SmallVector<WaitOp> waits(body.getOps<WaitOp>().begin(),
                            body.getOps<WaitOp>().end());
  // In start order (the order of the buckets).
  llvm::stable_sort(waits, [](WaitOp a, WaitOp b) {
    Operation *sa = a.getFuture().getDefiningOp();
    Operation *sb = b.getFuture().getDefiningOp();
    return sa && sb && sa->getBlock() == sb->getBlock() &&
           sa->isBeforeInBlock(sb);
  });
  Operation *firstUser = nullptr;
  for (WaitOp wait : waits)
    for (Operation *user : wait->getUsers()) {
      Operation *ancestor = body.findAncestorOpInBlock(*user);
      if (ancestor && ancestor != body.getTerminator() &&
          (!firstUser || ancestor->isBeforeInBlock(firstUser)))
        firstUser = ancestor;
    }
  if (!firstUser)
    return;
  for (WaitOp wait : waits) {
    Operation *start = wait.getFuture().getDefiningOp();
    // (Moving a wait down to firstUser is safe too: nothing uses its
    // results before.)
    if (start && !start->isBeforeInBlock(firstUser))
      continue;
    wait->moveBefore(firstUser);
    ++numMoved;
  }
}

LogicalResult SchedulePass::runOnBlock(FunctionOpInterface func, Block &body) {
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  // A function with streams is already scheduled: its events order its
  // streams, and moving ops would break them. A pipeline stage's program is
  // in its schedule's order (braid-pipeline), which bounds the activations
  // it holds: the priorities below would pull later micro-batches' forwards
  // ahead of earlier backwards. Leave both as they are.
  if (ops.empty() || func->hasAttr(BraidDialect::kStageAttrName) ||
      llvm::any_of(ops, [](Operation *op) {
        return getStreamIndex(op) || isa<RecordEventOp, WaitEventOp>(op);
      }))
    return success();
  if (ddp) {
    scheduleAsDdp(body);
    return success();
  }
  DenseMap<Operation *, unsigned> position;
  for (auto [i, op] : llvm::enumerate(ops))
    position[op] = i;

  // Dependencies: operands (also those used in nested regions), the issue
  // order of each group's collectives, and the order of other ops with side
  // effects.
  SmallVector<SmallVector<unsigned>> preds(ops.size()), succs(ops.size());
  auto addEdge = [&](unsigned from, unsigned to) {
    preds[to].push_back(from);
    succs[from].push_back(to);
  };
  DenseMap<CollectiveGroup, unsigned> lastOfGroup;
  std::optional<unsigned> lastEffect;
  for (unsigned i = 0, e = ops.size(); i < e; ++i) {
    Operation *op = ops[i];
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (Operation *producer = operand.getDefiningOp())
          if (Operation *ancestor = body.findAncestorOpInBlock(*producer))
            if (ancestor != op)
              addEdge(position[ancestor], i);
    });
    if (auto collective = dyn_cast<CollectiveOpInterface>(op)) {
      auto [it, inserted] =
          lastOfGroup.try_emplace(CollectiveGroup::of(collective), i);
      if (!inserted) {
        addEdge(it->second, i);
        it->second = i;
      }
    } else if (!isa<WaitOp>(op) && !isMemoryEffectFree(op)) {
      if (lastEffect)
        addEdge(*lastEffect, i);
      lastEffect = i;
    }
  }

  // The earliest start each op feeds (backward over users) and the latest
  // wait it follows (forward over operands).
  DenseMap<Operation *, unsigned> startIndex;
  for (Operation *op : ops)
    if (auto collective = dyn_cast<CollectiveOpInterface>(op))
      startIndex.try_emplace(op, startIndex.size());
  SmallVector<unsigned> feeds(ops.size(), kNoStart);
  for (int i = ops.size() - 1; i >= 0; --i) {
    if (auto it = startIndex.find(ops[i]); it != startIndex.end())
      feeds[i] = it->second;
    for (unsigned succ : succs[i])
      feeds[i] = std::min(feeds[i], feeds[succ]);
  }
  // ZeRO stage 2 (braid-shard-data-parallel): a rank keeps only its piece
  // of each gradient, so a gradient's reduce-scatter is waited among the
  // ops of the bucket two collectives later (its whole gradient freed
  // there, its communication overlapping two buckets' compute: one is
  // often a bias's or a layer norm's, too little to hide it), and its
  // update and the parameter's all-gather follow it there, in the
  // backward, instead of in the optimizer phase. At most three whole
  // gradients are alive at once.
  auto dp = func->getAttrOfType<DataParallelAttr>(
      BraidDialect::kDataParallelAttrName);
  bool eagerScatters = dp && dp.getZeroStage() >= 2;
  SmallVector<bool> afterWait(ops.size(), false);
  SmallVector<unsigned> follows(ops.size(), 0);
  // The bucket an op runs in after an eager reduce-scatter's wait (two
  // after the reduce-scatter's); kNoStart for none.
  SmallVector<unsigned> eagerBucket(ops.size(), kNoStart);
  for (auto [i, op] : llvm::enumerate(ops)) {
    // The wait of a gradient collective may wait (its users are the
    // optimizer's); one of a collective without grad_of (tensor-parallel)
    // is on the step's critical path and is scheduled like compute.
    if (auto wait = dyn_cast<WaitOp>(op)) {
      Operation *start = wait.getFuture().getDefiningOp();
      auto gradient = dyn_cast_or_null<GradientCollectiveOpInterface>(start);
      if (eagerScatters && isa_and_nonnull<ReduceScatterStartOp>(start) &&
          gradient.getGradOf()) {
        eagerBucket[i] = startIndex.lookup(start) + 2;
      } else if (!start || (gradient && gradient.getGradOf())) {
        afterWait[i] = true;
        follows[i] = start ? startIndex.lookup(start) : 0;
      }
    }
    for (unsigned pred : preds[i]) {
      if (eagerBucket[pred] != kNoStart && !isa<WaitOp>(op))
        eagerBucket[i] = eagerBucket[i] == kNoStart
                             ? eagerBucket[pred]
                             : std::max(eagerBucket[i], eagerBucket[pred]);
      if (!afterWait[pred])
        continue;
      afterWait[i] = true;
      follows[i] = std::max(follows[i], follows[pred]);
    }
  }

  // List scheduling.
  // An op that feeds no collective (the loss, a step counter) runs as soon
  // as it is ready: it frees its operands early and delays no bucket much.
  // The wait of a collective on the critical path (not deferred to the
  // optimizer) comes after every other op that is ready: as late as
  // dependencies allow, so that what does not need it (a weight gradient
  // while the input gradient is reduce-scattered) overlaps it.
  auto priorityOf = [&](unsigned i) {
    if (!afterWait[i] && eagerBucket[i] != kNoStart)
      return Priority{false, eagerBucket[i], i};
    // A rank's index communicates nothing: its wait runs when ready, so
    // that what cuts a piece at it (a sharded parameter's slice) is not
    // held to the end.
    // A parameter gathered from its updated pieces is read by nothing but
    // the next step: its wait comes last.
    if (auto wait = dyn_cast<WaitOp>(ops[i])) {
      if (isa_and_nonnull<AxisIndexStartOp>(wait.getFuture().getDefiningOp()))
        return Priority{false, 0, i};
      if (wait->getNumResults() == 1 &&
          getCarriedParameter(func, wait.getResult(0)))
        return Priority{afterWait[i], kNoStart - 1, i};
    }
    if (!afterWait[i] && isa<WaitOp>(ops[i]))
      return Priority{false, kNoStart - 1, i};
    unsigned bucket = afterWait[i]           ? follows[i]
                      : feeds[i] == kNoStart ? 0
                                             : feeds[i];
    return Priority{afterWait[i], bucket, i};
  };
  // The ops before `from` as written, then the others list-scheduled (a
  // valid order: nothing before `from` depends on what comes after).
  auto scheduleFrom = [&](unsigned from) {
    std::priority_queue<std::pair<Priority, unsigned>,
                        std::vector<std::pair<Priority, unsigned>>,
                        std::greater<>>
        ready;
    SmallVector<unsigned> waiting(ops.size(), 0);
    SmallVector<Operation *> order(ops.begin(), ops.begin() + from);
    for (unsigned i = from; i < ops.size(); ++i) {
      for (unsigned pred : preds[i])
        waiting[i] += pred >= from;
      if (waiting[i] == 0)
        ready.push({priorityOf(i), i});
    }
    while (!ready.empty()) {
      unsigned i = ready.top().second;
      ready.pop();
      order.push_back(ops[i]);
      for (unsigned succ : succs[i])
        if (--waiting[succ] == 0)
          ready.push({priorityOf(succ), succ});
    }
    assert(order.size() == ops.size() &&
           "dependencies of one block are acyclic");
    return order;
  };

  uint64_t before = getPeakLiveBytes(body, ops);
  uint64_t limit = uint64_t(before * (1.0 + maxLiveIncrease / 100.0));
  SmallVector<Operation *> order = scheduleFrom(0);
  uint64_t after = getPeakLiveBytes(body, order), whole = after;
  LLVM_DEBUG(llvm::dbgs() << "@" << func.getName() << ": peak live bytes "
                          << before << " as written, " << after
                          << " scheduled\n");
  peakLiveBefore += before;
  if (report)
    emitRemark(func.getLoc())
        << "peak live bytes of @" << func.getName() << ": " << before
        << " before, " << after << " after scheduling";
  // Over the bound: schedule a shorter tail (the last half of the ops, a
  // quarter, ...) and keep the rest as written. A step of several
  // micro-batches (gradient accumulation) gets its last micro-batch's
  // backward, where the buckets start, scheduled so, instead of all of its
  // micro-batches' ops interleaved by the buckets they feed (which keeps
  // every micro-batch's activations live).
  unsigned from = 0;
  while (partial && after > limit && ops.size() - from >= 4) {
    from += (ops.size() - from) / 2;
    order = scheduleFrom(from);
    after = getPeakLiveBytes(body, order);
  }
  if (after > limit) {
    ++numKept;
    peakLiveAfter += before;
    emitRemark(func.getLoc())
        << "braid-schedule kept the order of @" << func.getName()
        << ": the new order would raise peak live bytes from " << before
        << " to " << whole << ", more than " << maxLiveIncrease << "%";
    return success();
  }
  if (from > 0)
    emitRemark(func.getLoc())
        << "braid-schedule scheduled the last " << ops.size() - from << " of "
        << ops.size() << " ops of @" << func.getName()
        << " and kept the others in order: scheduling all would raise peak "
           "live bytes from "
        << before << " to " << whole << ", more than " << maxLiveIncrease
        << "%";
  peakLiveAfter += after;
  Operation *terminator = body.getTerminator();
  for (auto [i, op] : llvm::enumerate(order)) {
    if (op != ops[i])
      ++numMoved;
    op->moveBefore(terminator);
  }
  return success();
}

} // namespace
