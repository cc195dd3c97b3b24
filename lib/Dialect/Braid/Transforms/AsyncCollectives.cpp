//===- AsyncCollectives.cpp - split collectives into start/wait -*- C++ -*-===//
//
// Replaces each synchronous collective by a start, placed right after the last
// producer of its operands, and a wait, placed right before the first user of
// its results.
//
//===----------------------------------------------------------------------===//

#include "ScheduleUtils.h"

#include "braid/Dialect/Braid/BraidDialect.h"
#include "braid/Dialect/Braid/BraidOps.h"
#include "braid/Dialect/Braid/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "braid-async-collectives"

namespace braid {
#define GEN_PASS_DEF_ASYNCCOLLECTIVES
#include "braid/Dialect/Braid/Passes.h.inc"
} // namespace braid

using namespace mlir;
using namespace braid;

namespace {

struct AsyncCollectivesPass
    : public braid::impl::AsyncCollectivesBase<AsyncCollectivesPass> {
  using AsyncCollectivesBase::AsyncCollectivesBase;
  void runOnOperation() override {
    FailureOr<Block *> body = schedulableBody(getOperation());
    if (failed(body) || (*body && failed(runOnBlock(**body))))
      signalPassFailure();
  }

  LogicalResult runOnBlock(Block &body);
};

/// Where an op stands in the block while starts move, without asking the
/// block (whose order cache each move invalidates, which would make the pass
/// quadratic): an op that did not move stands at its original index (a wait
/// made in step 1 half a step after its collective's); a start moved after
/// an anchor stands at the anchor's place, after every op placed there
/// before it (a global placement counter).
struct Place {
  double index = -1; // -1: the block start.
  unsigned placed = 0;
  bool operator<(const Place &other) const {
    return std::tie(index, placed) < std::tie(other.index, other.placed);
  }
};

/// The op of `body` that computes its function's loss result, or null.
static Operation *lossOp(Block &body) {
  auto func = dyn_cast<func::FuncOp>(body.getParentOp());
  if (!func)
    return nullptr;
  Operation *terminator = body.getTerminator();
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    auto role =
        func.getResultAttrOfType<RoleAttr>(i, BraidDialect::kRoleAttrName);
    if (!role || role.getKind() != RoleKind::Loss ||
        i >= terminator->getNumOperands())
      continue;
    if (Operation *def = terminator->getOperand(i).getDefiningOp())
      return body.findAncestorOpInBlock(*def);
  }
  return nullptr;
}

LogicalResult AsyncCollectivesPass::runOnBlock(Block &body) {
  MLIRContext *context = body.getParent()->getContext();
  OpBuilder builder(context);

  // 1. Split in place: each collective becomes its start, then its wait.
  DenseMap<Operation *, Place> place;
  for (auto [i, op] : llvm::enumerate(body))
    place[&op] = Place{static_cast<double>(i), 0};
  SmallVector<std::pair<Operation *, WaitOp>> splits;
  SmallVector<Operation *> collectives;
  // With forward-sync, the op that computes the step's loss (a result with
  // braid.role<loss>): the forward is what comes before it.
  Operation *loss = forwardSync ? lossOp(body) : nullptr;
  bool forward = loss != nullptr;
  for (Operation &op : body) {
    if (&op == loss)
      forward = false;
    if (auto collective = dyn_cast<CollectiveOpInterface>(op)) {
      auto gradient = dyn_cast<GradientCollectiveOpInterface>(op);
      bool carriesGradient = gradient && gradient.getGradOf();
      if (!collective.isAsync() &&
          (carriesGradient || (!gradientsOnly && !forward)))
        collectives.push_back(&op);
    }
  }
  for (Operation *op : collectives) {
    builder.setInsertionPoint(op);
    // Every synchronous collective has its start form (defm
    // Braid_Collective in BraidOps.td).
    Operation *start = cast<CollectiveOpInterface>(op).buildStartForm(builder);
    auto wait = WaitOp::create(builder, op->getLoc(), start->getResult(0));
    Place at = place[op];
    place[start] = at;
    place[wait] = Place{at.index + 0.5, 0};
    place.erase(op);
    op->replaceAllUsesWith(wait.getResults());
    op->erase();
    splits.emplace_back(start, wait);
    ++numSplit;
  }
  LLVM_DEBUG(llvm::dbgs() << "split " << splits.size()
                          << " collectives into start and wait\n");

  // 2. Hoist each start after the last producer of its operands and after
  // the previous start of its group, which keeps each group's issue order.
  DenseMap<CollectiveGroup, Operation *> previousStart;
  DenseMap<Operation *, Operation *> lastPlaced;
  unsigned placed = 0;
  for (auto [start, wait] : splits) {
    CollectiveGroup group =
        CollectiveGroup::of(cast<CollectiveOpInterface>(start));
    Operation *anchor = previousStart.lookup(group);
    for (Value operand : start->getOperands()) {
      Operation *producer = operand.getDefiningOp();
      if (!producer || !(producer = body.findAncestorOpInBlock(*producer)))
        continue;
      if (!anchor || place[anchor] < place[producer])
        anchor = producer;
    }
    placeAfter(start, anchor, body, lastPlaced);
    place[start] = Place{anchor ? place[anchor].index : -1, ++placed};
    previousStart[group] = start;
  }

  // 3. Sink each wait to right before the first user of its results. The
  // first users are found before any wait moves, in one numbering.
  DenseMap<Operation *, unsigned> index;
  for (auto [i, op] : llvm::enumerate(body))
    index[&op] = i;
  // A wait without results (a send's) has no user: it goes before the next
  // start of its group, whose transfers run in order anyway, so that what
  // it sends is not held to the end of the step (a pipeline stage sends an
  // activation per micro-batch).
  SmallVector<Operation *> firstUsers;
  DenseMap<CollectiveGroup, Operation *> nextStart;
  SmallVector<Operation *> nextOfSplit(splits.size(), nullptr);
  for (size_t i = splits.size(); i-- > 0;) {
    CollectiveGroup group =
        CollectiveGroup::of(cast<CollectiveOpInterface>(splits[i].first));
    nextOfSplit[i] = nextStart.lookup(group);
    nextStart[group] = splits[i].first;
  }
  for (auto [i, split] : llvm::enumerate(splits)) {
    auto [start, wait] = split;
    Operation *firstUser = body.getTerminator();
    for (Operation *user : wait->getUsers())
      if (Operation *ancestor = body.findAncestorOpInBlock(*user))
        if (index[ancestor] < index[firstUser])
          firstUser = ancestor;
    if (wait->getNumResults() == 0 && nextOfSplit[i])
      firstUser = nextOfSplit[i];
    firstUsers.push_back(firstUser);
  }
  for (auto [split, firstUser] : llvm::zip(splits, firstUsers))
    split.second->moveBefore(firstUser);
  return success();
}

} // namespace
