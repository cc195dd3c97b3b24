//===- BucketGradients.cpp - group gradient all-reduces ---------*- C++ -*-===//
//
// Replaces per-parameter gradient all-reduces by one variadic all-reduce per
// bucket, filled in the order the gradients become ready.
//
//===----------------------------------------------------------------------===//

#include "CostUtils.h"

#include "ScheduleUtils.h"
#include "braid-common/BucketPlan.h"

#include "braid/Dialect/Braid/BraidOps.h"
#include "braid/Dialect/Braid/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include "llvm/Support/Debug.h"
#include <deque>

#define DEBUG_TYPE "braid-bucket-gradients"

namespace braid {
#define GEN_PASS_DEF_BUCKETGRADIENTS
#include "braid/Dialect/Braid/Passes.h.inc"
} // namespace braid

using namespace mlir;
using namespace braid;

namespace {

/// A gradient, or a chunk of one, to be reduced in some bucket.
struct Piece {
  AllReduceOp source; // The per-gradient all-reduce it comes from.
  Value value;        // What the bucket reduces.
  uint64_t bytes;
  unsigned readyIndex; // Position of its producer; orders the pieces.
  Operation *anchor;   // The bucket goes after this op (null: block start).
};

struct Bucket {
  SmallVector<Piece *> pieces;
  uint64_t bytes = 0;
};

/// The open bucket and the count of closed ones of one group of compatible
/// gradients (grid, axes, reduction, element type).
struct GroupState {
  Bucket open;
  unsigned closed = 0;
};

/// Gradients share a bucket only with the same group, reduction and element
/// type: one collective call reduces them all.
using BucketKey = std::tuple<CollectiveGroup, unsigned, Type>;

BucketKey getBucketKey(AllReduceOp op) {
  return {CollectiveGroup::of(cast<CollectiveOpInterface>(op.getOperation())),
          unsigned(op.getReduction()), getElementTypeOrSelf(op.getInputs()[0])};
}

/// A gradient cut into chunks: the pieces, and the bucket results to join.
struct SplitGradient {
  AllReduceOp source;
  SmallVector<Value> reduced;
};

struct BucketGradientsPass
    : public braid::impl::BucketGradientsBase<BucketGradientsPass> {
  using BucketGradientsBase::BucketGradientsBase;

  void runOnOperation() override {
    double capMb = bucketCapMb;
    autoSize = autoBucketCap;
    if (autoSize) {
      FailureOr<cost::Cluster> loaded = loadClusterFor(getOperation(), cluster);
      if (failed(loaded))
        return signalPassFailure();
      costs = *loaded;
      if (splitLarge) {
        getOperation().emitError()
            << "split-large does not go with auto-bucket-cap";
        return signalPassFailure();
      }
      capMb = INFINITY;
    } else if (!(capMb > 0)) {
      getOperation().emitError()
          << "bucket-cap-mb must be a positive number of MiB, but is "
          << bucketCapMb;
      return signalPassFailure();
    }
    if (!(firstBucketCapMb > 0)) {
      getOperation().emitError()
          << "first-bucket-cap-mb must be positive, but is "
          << firstBucketCapMb;
      return signalPassFailure();
    }
    // Caps beyond any memory (up to infinity) mean "no cap".
    auto toBytes = [](double mb) -> uint64_t {
      double bytes = mb * 1024 * 1024;
      return bytes >= 9.0e18 ? UINT64_MAX / 2 : static_cast<uint64_t>(bytes);
    };
    capBytes = toBytes(capMb);
    // With auto the cost model places every bucket end, the first too.
    firstCapBytes = autoSize ? toBytes(INFINITY) : toBytes(firstBucketCapMb);
    if (capBytes == 0 || firstCapBytes == 0) {
      getOperation().emitError()
          << "bucket-cap-mb and first-bucket-cap-mb must be at least one byte";
      return signalPassFailure();
    }
    smallest = UINT64_MAX;
    if (failed(forEachSchedulableBody(getOperation(),
                                      [&](FunctionOpInterface, Block &body) {
                                        runOnBlock(body);
                                        return success();
                                      })))
      return signalPassFailure();
    if (smallest != UINT64_MAX)
      smallestBucketBytes = smallest;
  }

  void runOnBlock(Block &body);
  void splitSumSquares(Block &body);
  void closeBucket(GroupState &group, SmallVector<Bucket> &buckets);
  Operation *emitBucket(Bucket &bucket, unsigned index, OpBuilder &builder,
                        DenseMap<Operation *, Operation *> &lastPlaced,
                        DenseMap<Operation *, SplitGradient *> &splits);

  /// bucket-cap-mb=auto: where buckets end, by the cost model.
  DenseSet<Operation *> autoBoundaries(Block &body,
                                       ArrayRef<AllReduceOp> gradients);

  uint64_t capBytes = 0, firstCapBytes = 0, smallest = UINT64_MAX;
  bool autoSize = false;
  cost::Cluster costs;
};

DenseSet<Operation *>
BucketGradientsPass::autoBoundaries(Block &body,
                                    ArrayRef<AllReduceOp> gradients) {
  // When each gradient is ready, if the step ran alone on one GPU in
  // program order: the end of its producer.
  DenseMap<Operation *, double> endOf;
  double now = 0;
  for (Operation &op : body) {
    now += getOpSeconds(&op, costs);
    endOf[&op] = now;
  }
  auto readyOf = [&](AllReduceOp op) {
    Operation *producer = op.getInputs()[0].getDefiningOp();
    Operation *ancestor =
        producer ? body.findAncestorOpInBlock(*producer) : nullptr;
    return ancestor ? endOf.lookup(ancestor) : 0.0;
  };
  // The optimizer work that waits for each gradient.
  auto updateOf = [&](AllReduceOp op) {
    double seconds = 0;
    for (Operation *user : op.getResult(0).getUsers())
      seconds += getOpSeconds(user, costs);
    return seconds;
  };
  // Group the gradients as buckets are grouped, keeping ready order.
  DenseMap<BucketKey, SmallVector<AllReduceOp>> groups;
  SmallVector<BucketKey> order;
  for (AllReduceOp op : gradients) {
    BucketKey key = getBucketKey(op);
    if (!groups.count(key))
      order.push_back(key);
    groups[key].push_back(op);
  }
  DenseSet<Operation *> boundaries;
  for (const BucketKey &key : order) {
    SmallVector<AllReduceOp> grads = groups[key];
    // The dynamic program over where buckets end (braid-common/BucketPlan.h).
    cost::BucketProblem problem;
    for (AllReduceOp grad : grads) {
      problem.ready.push_back(readyOf(grad));
      problem.update.push_back(updateOf(grad));
      // What the collective moves, by the one rule (getCommBytes).
      problem.bytes.push_back(
          cast<CollectiveOpInterface>(grad.getOperation()).getCommBytes());
    }
    // The all-reduce of this group (all share one group).
    cost::GroupShape shape = getGroupShape(
        cast<CollectiveOpInterface>(grads[0].getOperation()), costs);
    problem.algorithms =
        cost::collectiveAlgorithms(costs, CollectiveKind::AllReduce, shape);
    problem.computeSlowdown = costs.computeSlowdownDuringComm;
    problem.commSlowdown = costs.commSlowdownDuringCompute;
    std::vector<size_t> bestEnds = cost::planBuckets(problem);
    for (size_t j : bestEnds)
      boundaries.insert(grads[j - 1]);
  }
  return boundaries;
}

void BucketGradientsPass::closeBucket(GroupState &group,
                                      SmallVector<Bucket> &buckets) {
  if (group.open.pieces.empty())
    return;
  buckets.push_back(std::move(group.open));
  group.open = Bucket();
  ++group.closed;
}

Operation *BucketGradientsPass::emitBucket(
    Bucket &bucket, unsigned index, OpBuilder &builder,
    DenseMap<Operation *, Operation *> &lastPlaced,
    DenseMap<Operation *, SplitGradient *> &splits) {
  AllReduceOp first = bucket.pieces.front()->source;
  Block &body = *first->getBlock();
  // The latest anchor among the pieces: all values exist after it.
  Piece *latest = bucket.pieces.front();
  for (Piece *piece : bucket.pieces)
    if (piece->readyIndex > latest->readyIndex)
      latest = piece;
  SmallVector<Value> inputs;
  SmallVector<Attribute> names;
  for (Piece *piece : bucket.pieces) {
    inputs.push_back(piece->value);
    names.push_back(cast<ArrayAttr>(*piece->source.getGradOf())[0]);
  }
  builder.setInsertionPoint(first);
  auto op = AllReduceOp::create(
      builder, first.getLoc(), inputs, first.getGridAttr(),
      first.getGridAxesAttr(), first.getReductionAttr(),
      builder.getArrayAttr(names), builder.getI64IntegerAttr(index),
      builder.getI64IntegerAttr(bucket.bytes));
  placeAfter(op, latest->anchor, body, lastPlaced);
  for (auto [piece, result] : llvm::zip(bucket.pieces, op.getResults())) {
    if (SplitGradient *split = splits.lookup(piece->source))
      split->reduced.push_back(result);
    else
      piece->source.getResult(0).replaceAllUsesWith(result);
  }
  ++numBuckets;
  bucketedBytes += bucket.bytes;
  if (bucket.bytes > largestBucketBytes)
    largestBucketBytes = bucket.bytes;
  smallest = std::min(smallest, bucket.bytes);
  return op;
}

void BucketGradientsPass::runOnBlock(Block &body) {
  DenseMap<Operation *, unsigned> position;
  for (auto [i, op] : llvm::enumerate(body))
    position[&op] = i + 1; // 0 stands for the block arguments.
  auto readyIndexOf = [&](Value value) -> unsigned {
    Operation *producer = value.getDefiningOp();
    if (!producer)
      return 0;
    Operation *ancestor = body.findAncestorOpInBlock(*producer);
    return ancestor ? position.lookup(ancestor) : 0;
  };

  // Gradient all-reduces, and the end of the backward: the last producer.
  SmallVector<AllReduceOp> gradients;
  unsigned endOfBackward = 0;
  for (auto op : body.getOps<AllReduceOp>()) {
    if (!op.getGradOf() || op.getInputs().size() != 1 || op.getBucketIndex())
      continue;
    gradients.push_back(op);
    endOfBackward = std::max(endOfBackward, readyIndexOf(op.getInputs()[0]));
  }
  // A reduced gradient used before the end of the backward keeps its
  // collective: delaying it into a bucket could delay its user.
  llvm::erase_if(gradients, [&](AllReduceOp op) {
    for (Operation *user : op.getResult(0).getUsers()) {
      Operation *ancestor = body.findAncestorOpInBlock(*user);
      if (ancestor && position.lookup(ancestor) <= endOfBackward) {
        LLVM_DEBUG(llvm::dbgs() << "keeping " << op << ": used before the "
                                << "end of the backward by " << *user << "\n");
        return true;
      }
    }
    return false;
  });
  if (gradients.empty())
    return;

  // Pieces in ready order; a gradient over the cap in force is split (with
  // split-large) or gets a bucket of its own.
  OpBuilder builder(body.getParent()->getContext());
  llvm::stable_sort(gradients, [&](AllReduceOp a, AllReduceOp b) {
    return readyIndexOf(a.getInputs()[0]) < readyIndexOf(b.getInputs()[0]);
  });
  std::deque<Piece> pieces;
  std::deque<SplitGradient> splitStorage;
  DenseMap<Operation *, SplitGradient *> splits;
  std::deque<GroupState> groups;
  DenseMap<BucketKey, GroupState *> groupOf;
  SmallVector<Bucket> buckets;
  DenseMap<Operation *, Operation *> lastPlaced;
  DenseSet<Operation *> boundaries;
  if (autoSize)
    boundaries = autoBoundaries(body, gradients);

  for (AllReduceOp op : gradients) {
    Value grad = op.getInputs()[0];
    auto type = cast<RankedTensorType>(grad.getType());
    // Gradients share a bucket only with the same group, reduction and
    // element type: one collective call reduces them all.
    GroupState *&slot = groupOf[getBucketKey(op)];
    if (!slot)
      slot = &groups.emplace_back();
    GroupState &state = *slot;
    uint64_t bytes = getTensorBytes(type);
    unsigned ready = readyIndexOf(grad);
    Operation *producer =
        grad.getDefiningOp() ? body.findAncestorOpInBlock(*grad.getDefiningOp())
                             : nullptr;
    auto capInForce = [&] {
      return state.closed == 0 ? firstCapBytes : capBytes;
    };
    ++numGradients;

    // A gradient that does not fit the open bucket closes it; the cap in
    // force is then the first bucket's only if no bucket was closed.
    if (!state.open.pieces.empty() && state.open.bytes + bytes > capInForce())
      closeBucket(state, buckets);

    if (bytes > capInForce() && splitLarge) {
      // Chunks of the flattened gradient, each as large as the cap in force:
      // every chunk fills a bucket, the last one may share its bucket.
      ++numSplit;
      closeBucket(state, buckets);
      uint64_t elementBytes = getElementBytes(type.getElementType());
      int64_t total = type.getNumElements();
      builder.setInsertionPoint(op);
      auto flatType = RankedTensorType::get({total}, type.getElementType());
      auto flat = ReshapeOp::create(builder, op.getLoc(), flatType, grad);
      placeAfter(flat, producer, body, lastPlaced);
      SmallVector<Piece *> chunks;
      Operation *anchor = flat;
      for (int64_t offset = 0; offset < total;) {
        uint64_t cap = capInForce();
        int64_t chunk = std::max<int64_t>(1, cap / elementBytes);
        chunk = std::min(chunk, total - offset);
        auto chunkType = RankedTensorType::get({chunk}, type.getElementType());
        auto slice = SliceOp::create(builder, op.getLoc(), chunkType, flat,
                                     builder.getDenseI64ArrayAttr({offset}),
                                     DenseI64ArrayAttr());
        slice->moveAfter(anchor);
        anchor = slice;
        Piece &piece = pieces.emplace_back(
            Piece{op, slice, chunk * elementBytes, ready, nullptr});
        chunks.push_back(&piece);
        state.open.pieces.push_back(&piece);
        state.open.bytes += piece.bytes;
        if (state.open.bytes >= cap)
          closeBucket(state, buckets);
        offset += chunk;
      }
      // The buckets of the chunks go after the last slice.
      for (Piece *piece : chunks)
        piece->anchor = anchor;
      lastPlaced[producer] = anchor;
      SplitGradient &split = splitStorage.emplace_back();
      split.source = op;
      splits[op] = &split;
      continue;
    }

    Piece &piece = pieces.emplace_back(Piece{op, grad, bytes, ready, producer});
    if (bytes > capInForce()) {
      // Oversized: a bucket of its own.
      closeBucket(state, buckets);
      state.open.pieces.push_back(&piece);
      state.open.bytes = bytes;
      closeBucket(state, buckets);
      continue;
    }
    state.open.pieces.push_back(&piece);
    state.open.bytes += bytes;
    if (boundaries.contains(op))
      closeBucket(state, buckets);
  }
  for (GroupState &state : groups)
    closeBucket(state, buckets);

  // Emit in ready order of each bucket's last piece; indices follow it.
  llvm::stable_sort(buckets, [](const Bucket &a, const Bucket &b) {
    auto last = [](const Bucket &bucket) {
      unsigned ready = 0;
      for (Piece *piece : bucket.pieces)
        ready = std::max(ready, piece->readyIndex);
      return ready;
    };
    return last(a) < last(b);
  });
  if (report) {
    InFlightDiagnostic remark = emitRemark(body.getParentOp()->getLoc())
                                << "buckets: " << buckets.size() << " (";
    llvm::interleaveComma(
        buckets, remark, [&](const Bucket &bucket) { remark << bucket.bytes; });
    remark << " bytes)";
  }
  DenseMap<Operation *, Operation *> lastBucketOf;
  for (auto [index, bucket] : llvm::enumerate(buckets)) {
    Operation *op = emitBucket(bucket, index, builder, lastPlaced, splits);
    for (Piece *piece : bucket.pieces)
      lastBucketOf[piece->source] = op;
  }
  // Join the chunks of split gradients after their last bucket.
  for (SplitGradient &split : splitStorage) {
    AllReduceOp source = split.source;
    auto type = cast<RankedTensorType>(source.getInputs()[0].getType());
    builder.setInsertionPointAfter(lastBucketOf[source]);
    auto flatType =
        RankedTensorType::get({type.getNumElements()}, type.getElementType());
    auto joined = ConcatOp::create(builder, source.getLoc(), flatType,
                                   split.reduced, builder.getI64IntegerAttr(0));
    auto reshaped =
        ReshapeOp::create(builder, source.getLoc(), type, joined.getResult());
    source.getResult(0).replaceAllUsesWith(reshaped.getResult());
  }
  for (AllReduceOp op : gradients)
    op.erase();
  splitSumSquares(body);
}

/// Gradient clipping's squared norm over gradients of several buckets
/// becomes one sum of squares per bucket, right after it, added up where
/// the norm was: each part runs as its bucket lands, while the later ones
/// are still in flight, and only their sum waits for the last.
void BucketGradientsPass::splitSumSquares(Block &body) {
  SmallVector<SumSquaresOp> sums(body.getOps<SumSquaresOp>());
  for (SumSquaresOp sum : sums) {
    // The inputs by the op that defines them (a bucket's all-reduce), in
    // the order of those ops.
    SmallVector<std::pair<Operation *, SmallVector<Value>>> groups;
    for (Value input : sum.getInputs()) {
      Operation *def = input.getDefiningOp();
      auto it = llvm::find_if(groups, [&](auto &g) { return g.first == def; });
      if (it == groups.end())
        groups.push_back({def, {input}});
      else
        it->second.push_back(input);
    }
    if (groups.size() < 2 ||
        llvm::any_of(groups, [](auto &g) { return g.first == nullptr; }))
      continue;
    llvm::stable_sort(groups, [](auto &a, auto &b) {
      return a.first->isBeforeInBlock(b.first);
    });
    OpBuilder builder(sum);
    Value total;
    for (auto &[def, inputs] : groups) {
      builder.setInsertionPointAfter(def);
      Value part =
          SumSquaresOp::create(builder, sum.getLoc(), sum.getType(), inputs)
              .getResult();
      builder.setInsertionPoint(sum);
      total =
          total ? AddOp::create(builder, sum.getLoc(), total, part).getResult()
                : part;
    }
    sum.getResult().replaceAllUsesWith(total);
    sum.erase();
  }
}

} // namespace
