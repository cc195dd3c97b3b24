//===- AssignStreams.cpp - streams and cross-stream sync --------*- C++ -*-===//
//
// Puts every op on the compute stream or a communication stream and inserts
// record/wait event pairs where a value crosses streams and nothing orders
// its producer before its user yet.
//
//===----------------------------------------------------------------------===//

#include "ScheduleUtils.h"

#include "braid-common/Streams.h"

#include "braid/Dialect/Braid/Analysis/StreamOrder.h"

#include "braid/Dialect/Braid/BraidOps.h"
#include "braid/Dialect/Braid/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "braid-assign-streams"

namespace braid {
#define GEN_PASS_DEF_ASSIGNSTREAMS
#include "braid/Dialect/Braid/Passes.h.inc"
} // namespace braid

using namespace mlir;
using namespace braid;

namespace {

/// More streams than this buy nothing (one group a stream) and would make
/// the vector clocks large.

struct AssignStreamsPass
    : public braid::impl::AssignStreamsBase<AssignStreamsPass> {
  using AssignStreamsBase::AssignStreamsBase;

  void runOnOperation() override {
    if (commStreams == 0 || commStreams > kMaxCommStreams) {
      getOperation().emitError()
          << "comm-streams must be between 1 and " << kMaxCommStreams
          << ", but is " << static_cast<unsigned>(commStreams);
      return signalPassFailure();
    }
    // The stage programs of a pipeline number their groups together, in
    // order of first appearance over the stages: a group has one stream in
    // every stage, so that a transfer and its receive (and a collective
    // spanning the stages) meet on one communicator at run time, which
    // the runtime makes per group and stream.
    DenseMap<CollectiveGroup, unsigned> stageGroups;
    for (auto func : getOperation().getOps<FunctionOpInterface>())
      if (func->hasAttr(BraidDialect::kStageAttrName))
        func->walk([&](CollectiveOpInterface collective) {
          stageGroups.try_emplace(CollectiveGroup::of(collective),
                                  stageGroups.size());
        });
    if (failed(forEachSchedulableBody(
            getOperation(), [&](FunctionOpInterface func, Block &body) {
              DenseMap<CollectiveGroup, unsigned> groups;
              if (func->hasAttr(BraidDialect::kStageAttrName))
                groups = stageGroups;
              runOnBlock(body, groups);
              return success();
            })))
      signalPassFailure();
  }

  /// Assigns the ops of `body`; `groupIndex` numbers the collective groups
  /// (those it lacks in order of first appearance in `body`).
  void runOnBlock(Block &body, DenseMap<CollectiveGroup, unsigned> &groupIndex);
};

void AssignStreamsPass::runOnBlock(
    Block &body, DenseMap<CollectiveGroup, unsigned> &groupIndex) {
  MLIRContext *context = body.getParent()->getContext();
  OpBuilder builder(context);
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  if (llvm::any_of(ops, [](Operation *op) { return getStreamIndex(op); }))
    return; // Already assigned: the pass is idempotent.

  for (Operation *op : ops)
    if (auto collective = dyn_cast<CollectiveOpInterface>(op))
      groupIndex.try_emplace(CollectiveGroup::of(collective),
                             groupIndex.size());
  unsigned streams = commStreams;
  if (streamPerGroup)
    streams = std::min<unsigned>(
        kMaxCommStreams,
        std::max<unsigned>(streams, unsigned(groupIndex.size())));
  const unsigned numStreams = 1 + streams;
  auto streamOf = [&](Operation *op) -> unsigned {
    auto collective = dyn_cast<CollectiveOpInterface>(op);
    if (!collective)
      return 0;
    return 1 + groupIndex.lookup(CollectiveGroup::of(collective)) % streams;
  };

  StreamOrder order;
  DenseMap<Operation *, Value> eventAfter;
  for (Operation *op : ops) {
    unsigned s = streamOf(op);
    op->setAttr(BraidDialect::kStreamAttrName, getStreamAttr(context, s));
    // A wait orders its stream after the collective.
    if (auto wait = dyn_cast<WaitOp>(op))
      if (Operation *start = wait.getFuture().getDefiningOp())
        order.waitFor(s, start);
    // The latest producer on each other stream that this op reads from and
    // that is not yet ordered before it.
    SmallVector<Operation *> needed(numStreams, nullptr);
    for (Value operand : op->getOperands()) {
      if (isa<FutureType, EventType>(operand.getType()))
        continue;
      Operation *producer = operand.getDefiningOp();
      std::optional<unsigned> t =
          producer ? order.getStream(producer) : std::nullopt;
      if (!t || *t == s)
        continue; // Block arguments are ready before the step starts.
      if (order.isOrderedBefore(producer, s)) {
        ++numElided;
        continue;
      }
      if (!needed[*t] ||
          order.getPosition(needed[*t]) < order.getPosition(producer))
        needed[*t] = producer;
    }
    for (unsigned t = 0; t < numStreams; ++t) {
      Operation *producer = needed[t];
      if (!producer)
        continue;
      Value &event = eventAfter[producer];
      if (!event) {
        builder.setInsertionPointAfter(producer);
        auto record = RecordEventOp::create(builder, producer->getLoc());
        record->setAttr(BraidDialect::kStreamAttrName,
                        getStreamAttr(context, t));
        event = record.getEvent();
      }
      builder.setInsertionPoint(op);
      auto waitEvent = WaitEventOp::create(builder, op->getLoc(), event);
      waitEvent->setAttr(BraidDialect::kStreamAttrName,
                         getStreamAttr(context, s));
      order.waitFor(s, producer);
      ++numEvents;
    }
    order.issue(op, s);
  }
  LLVM_DEBUG(llvm::dbgs() << ops.size() << " ops on " << numStreams
                          << " streams, " << eventAfter.size()
                          << " events recorded\n");
}

} // namespace
