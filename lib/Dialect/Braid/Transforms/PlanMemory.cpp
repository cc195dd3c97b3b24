//===- PlanMemory.cpp - static arena offsets for a step ---------*- C++ -*-===//
//
// Gives every tensor of a step an offset in one arena: values are grouped into
// allocations (a bucket's gradients and the collective results that overwrite
// them are one allocation), each allocation gets a stream-aware lifetime in
// program-order positions, and allocations are packed greedily by size.
//
//===----------------------------------------------------------------------===//

#include "ArenaPacking.h"
#include "ScheduleUtils.h"

#include "braid/Dialect/Braid/BraidDialect.h"
#include "braid/Dialect/Braid/BraidOps.h"
#include "braid/Dialect/Braid/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "braid-plan-memory"

namespace braid {
#define GEN_PASS_DEF_PLANMEMORY
#include "braid/Dialect/Braid/Passes.h.inc"
} // namespace braid

using namespace mlir;
using namespace braid;

namespace {

/// Values that share storage: a single value, or a bucket whose members are
/// laid out back to back.
struct Allocation {
  uint64_t bytes = 0;
  /// First and last program-order position (inclusive) at which the bytes
  /// may be touched by any stream.
  size_t begin = ~size_t(0), end = 0;
  uint64_t offset = 0;
  /// How many values live here (an allocation of one may join a bucket).
  unsigned members = 0;
  bool dead = false;
};

/// Where a value lives: an allocation and the offset inside it.
struct Slot {
  unsigned allocation;
  uint64_t offset;
};

/// The results a collective produces: its own for the synchronous form, the
/// wait's for a start (none when the start is never waited).
static SmallVector<Value> getCollectiveResults(Operation *op, WaitOp &waitOut) {
  waitOut = nullptr;
  auto collective = dyn_cast<CollectiveOpInterface>(op);
  if (!collective || !collective.isAsync())
    return SmallVector<Value>(op->getResults());
  waitOut = getWaitOf(op);
  if (!waitOut)
    return {};
  return SmallVector<Value>(waitOut.getResults());
}

/// The largest buffer alignment braid-plan-memory accepts (a 4 KiB page).
constexpr int64_t kMaxAlignment = 4096;

struct PlanMemoryPass : public braid::impl::PlanMemoryBase<PlanMemoryPass> {
  using PlanMemoryBase::PlanMemoryBase;

  // Options are checked once, before any function is planned.
  LogicalResult initialize(MLIRContext *context) override {
    // Bounded: rounding a buffer up to a huge alignment overflows the
    // arena arithmetic (2^62 used to wrap sizes to zero and corrupt the
    // free list). No device wants more than a page.
    if (alignment <= 0 || !llvm::isPowerOf2_64(alignment) ||
        alignment > kMaxAlignment)
      return emitError(UnknownLoc::get(context))
             << "braid-plan-memory: alignment must be a power of two from 1 "
                "to "
             << kMaxAlignment << ", but is "
             << static_cast<int64_t>(alignment.getValue());
    return success();
  }

  void runOnOperation() override {
    FailureOr<Block *> body = schedulableBody(getOperation());
    if (failed(body) || (*body && failed(planFunction(getOperation(), **body))))
      signalPassFailure();
  }

  LogicalResult planFunction(FunctionOpInterface func, Block &body);
};

LogicalResult PlanMemoryPass::planFunction(FunctionOpInterface func,
                                           Block &body) {
  // Program-order positions: arguments at 0, ops from 1, the terminator last.
  llvm::DenseMap<Operation *, size_t> position;
  size_t next = 1;
  for (Operation &op : body)
    position[&op] = next++;
  const size_t end = next;

  SmallVector<Allocation> allocations;
  llvm::DenseMap<Value, Slot> slots;
  auto newAllocation = [&](ArrayRef<Value> members) {
    unsigned index = allocations.size();
    allocations.emplace_back();
    uint64_t at = 0;
    for (Value v : members) {
      slots[v] = {index, at};
      at += getTensorBytes(v.getType());
      ++allocations.back().members;
    }
    allocations.back().bytes = at;
    return index;
  };
  auto isTensor = [](Value v) { return isa<RankedTensorType>(v.getType()); };

  for (BlockArgument arg : body.getArguments())
    if (isTensor(arg))
      newAllocation(arg);

  // The parameter argument that `result` of the collective `op` carries
  // into at the end of the step (getCarriedParameter), if every read of
  // that argument comes before the compute op that makes `op`'s input on
  // the compute stream (so that `op`, which waits for that op, may write
  // its bytes); null otherwise.
  auto carriedInto = [&](Value result, Operation &op) -> BlockArgument {
    Operation *producer = op.getOperand(0).getDefiningOp();
    BlockArgument arg = getCarriedParameter(func, result);
    if (!arg || !producer || !isOnComputeStream(producer))
      return nullptr;
    for (Operation *user : arg.getUsers())
      if (!isOnComputeStream(user) ||
          position.lookup(user) >= position.lookup(producer))
        return nullptr;
    return arg;
  };
  unsigned inPlace = 0, collectives = 0, views = 0;
  for (Operation &op : body.without_terminator()) {
    // A view (reshape) takes its operand's bytes instead of a copy of them.
    // Its operand is an op result on the compute stream (an argument may be
    // overwritten in place by its update), and no collective reads it (an
    // all-reduce works in place only on an allocation of its own).
    if (op.hasTrait<View>() && isOnComputeStream(&op)) {
      Value input = op.getOperand(0), result = op.getResult(0);
      Operation *def = input.getDefiningOp();
      bool collectiveUse = llvm::any_of(result.getUsers(), [](Operation *u) {
        return isa<CollectiveOpInterface>(u);
      });
      if (def && isOnComputeStream(def) && !collectiveUse &&
          getTensorBytes(input.getType()) == getTensorBytes(result.getType())) {
        Slot slot = slots.lookup(input);
        slots[result] = slot;
        ++allocations[slot.allocation].members;
        ++views;
        continue;
      }
    }
    // Optimizer updates overwrite their argument when nothing reads it later.
    auto aliasUpdate = [&](unsigned operand, unsigned result) {
      auto arg = dyn_cast<BlockArgument>(op.getOperand(operand));
      if (!arg || !isOnComputeStream(&op))
        return;
      for (OpOperand &use : arg.getUses()) {
        Operation *user = use.getOwner();
        if (user == &op) {
          if (use.getOperandNumber() != operand)
            return;
          continue;
        }
        if (!isOnComputeStream(user) ||
            user->hasTrait<OpTrait::IsTerminator>() ||
            position.lookup(user) > position.lookup(&op))
          return;
      }
      Slot slot = slots.lookup(arg);
      slots[op.getResult(result)] = slot;
      ++allocations[slot.allocation].members;
    };
    if (auto update = dyn_cast<InPlaceOpInterface>(op)) {
      for (unsigned result = 0; result < op.getNumResults(); ++result)
        if (int operand = update.getInPlaceOperand(result); operand >= 0)
          aliasUpdate(operand, result);
    } else if (isa<AllReduceOp, AllReduceStartOp>(op)) {
      ++collectives;
      WaitOp wait;
      SmallVector<Value> results = getCollectiveResults(&op, wait);
      if (!results.empty()) {
        // In place when every input is an op result used only here, alone in
        // its allocation, of one element type.
        bool canAlias = true;
        Type elementType;
        llvm::SmallPtrSet<Value, 8> seen;
        for (Value input : op.getOperands()) {
          auto type = cast<RankedTensorType>(input.getType());
          if (!elementType)
            elementType = type.getElementType();
          if (!isa<OpResult>(input) || !input.hasOneUse() ||
              !seen.insert(input).second ||
              type.getElementType() != elementType ||
              !isOnComputeStream(input.getDefiningOp()) ||
              allocations[slots.lookup(input).allocation].members != 1) {
            canAlias = false;
            break;
          }
        }
        if (canAlias) {
          for (Value input : op.getOperands())
            allocations[slots.lookup(input).allocation].dead = true;
          newAllocation(SmallVector<Value>(op.getOperands()));
          for (auto [input, result] : llvm::zip(op.getOperands(), results)) {
            slots[result] = slots.lookup(input);
            ++allocations.back().members;
          }
          ++inPlace;
        } else {
          newAllocation(results);
        }
      }
    } else if (isa<CollectiveOpInterface>(op)) {
      WaitOp wait;
      for (Value result : getCollectiveResults(&op, wait)) {
        // A whole parameter gathered from its updated pieces (ZeRO) and
        // returned: into its argument's bytes, as an update in place.
        if (isa<AllGatherOp, AllGatherStartOp>(op))
          if (BlockArgument arg = carriedInto(result, op)) {
            Slot slot = slots.lookup(arg);
            slots[result] = slot;
            ++allocations[slot.allocation].members;
            continue;
          }
        newAllocation(result);
      }
    }
    for (Value result : op.getResults())
      if (isTensor(result) && !slots.count(result))
        newAllocation(result);
  }

  // Lifetimes. A start's inputs and results are in flight until its wait;
  // anything touched off the compute stream is kept for the whole step.
  // (A wait on the compute stream orders every later compute op after the
  // collective; one elsewhere does not, and keeps them to the end.)
  auto waitPosition = [&](Operation *start) {
    WaitOp wait = getWaitOf(start);
    return wait && isOnComputeStream(wait) ? position.lookup(wait) : end;
  };
  auto extend = [&](Value v, size_t from, size_t to) {
    Allocation &a = allocations[slots.lookup(v).allocation];
    a.begin = std::min(a.begin, from);
    a.end = std::max(a.end, to);
  };
  for (BlockArgument arg : body.getArguments())
    if (isTensor(arg))
      extend(arg, 0, end);
  for (Operation &op : body.without_terminator()) {
    size_t at = position.lookup(&op);
    auto collective = dyn_cast<CollectiveOpInterface>(op);
    bool async = collective && collective.isAsync();
    size_t inFlightUntil = async ? waitPosition(&op) : at;
    for (Value input : op.getOperands())
      if (isTensor(input))
        extend(input, at,
               isOnComputeStream(&op) || async ? inFlightUntil : end);
    for (Value result : op.getResults()) {
      if (!isTensor(result))
        continue;
      size_t from = isOnComputeStream(&op) ? at : 0;
      // Written off the compute stream (a synchronous collective on its
      // own stream): the whole step, as its inputs.
      if (!isOnComputeStream(&op))
        extend(result, 0, end);
      // The results of a wait are written by its start's collective.
      if (auto wait = dyn_cast<WaitOp>(op)) {
        Operation *start = wait.getFuture().getDefiningOp();
        if (start && !isOnComputeStream(start))
          from = 0;
        if (start)
          from = std::min(from, position.lookup(start));
      }
      // Its uses extend it as operands of their ops, above and below.
      extend(result, from, at);
    }
  }
  // What the step returns lives to the end.
  for (Value v : body.getTerminator()->getOperands())
    if (isTensor(v))
      extend(v, end, end);

  // The bound: the most bytes live at once under these lifetimes.
  SmallVector<int64_t> delta(end + 2, 0);
  uint64_t totalBytes = 0;
  SmallVector<unsigned> order;
  for (auto [i, a] : llvm::enumerate(allocations)) {
    if (a.dead)
      continue;
    a.bytes = llvm::alignTo(a.bytes, alignment);
    totalBytes += a.bytes;
    delta[a.begin] += a.bytes;
    delta[a.end + 1] -= a.bytes;
    order.push_back(i);
  }
  uint64_t bound = 0;
  int64_t live = 0;
  for (int64_t d : delta) {
    live += d;
    bound = std::max<uint64_t>(bound, live);
  }

  // Two packings: a sweep in program order with best-fit reuse of freed
  // ranges (O(n log n)), and, for steps small enough, greedy by size (the
  // largest allocation first, each at the lowest offset free during its
  // lifetime; O(n^2)). The smaller arena wins.
  SmallVector<Lifetime> lifetimes;
  for (const Allocation &a : allocations)
    lifetimes.push_back({a.bytes, a.begin, a.end});
  SmallVector<uint64_t> offsets(allocations.size(), 0);
  uint64_t arenaBytes = packBySweep(lifetimes, order, offsets);
  if (order.size() <= kGreedyLimit) {
    SmallVector<uint64_t> greedy(allocations.size(), 0);
    uint64_t greedyBytes = packGreedyBySize(lifetimes, order, greedy);
    if (greedyBytes < arenaBytes) {
      arenaBytes = greedyBytes;
      offsets = std::move(greedy);
    }
  }
  for (unsigned i : order)
    allocations[i].offset = offsets[i];

  // Record the plan.
  Builder builder(func.getContext());
  auto offsetOf = [&](Value v) -> int64_t {
    auto it = slots.find(v);
    if (it == slots.end())
      return -1;
    return allocations[it->second.allocation].offset + it->second.offset;
  };
  // All argument attributes at once: setting them one by one would build a
  // new attribute array per argument (quadratic in the argument count).
  SmallVector<DictionaryAttr> argAttrs;
  for (BlockArgument arg : body.getArguments()) {
    NamedAttrList attrs(func.getArgAttrDict(arg.getArgNumber()));
    if (isTensor(arg))
      attrs.set(BraidDialect::kOffsetAttrName,
                builder.getI64IntegerAttr(offsetOf(arg)));
    argAttrs.push_back(attrs.getDictionary(func.getContext()));
  }
  func.setAllArgAttrs(argAttrs);
  for (Operation &op : body.without_terminator()) {
    if (op.getNumResults() == 0 || llvm::none_of(op.getResults(), isTensor))
      continue;
    SmallVector<int64_t> offsets;
    for (Value result : op.getResults())
      offsets.push_back(isTensor(result) ? offsetOf(result) : -1);
    op.setAttr(BraidDialect::kOffsetsAttrName,
               builder.getDenseI64ArrayAttr(offsets));
  }
  func->setAttr(BraidDialect::kArenaBytesAttrName,
                builder.getI64IntegerAttr(arenaBytes));

  LLVM_DEBUG(llvm::dbgs() << "@" << func.getName() << ": arena " << arenaBytes
                          << " bytes for " << totalBytes
                          << " bytes of buffers, live-bytes bound " << bound
                          << "\n");
  peakArenaBytes += arenaBytes;
  totalBufferBytes += totalBytes;
  if (report) {
    std::string ratio;
    llvm::raw_string_ostream(ratio)
        << llvm::format("%.3f", bound ? double(arenaBytes) / bound : 1.0);
    emitRemark(func.getLoc())
        << "memory plan of @" << func.getName() << ": arena " << arenaBytes
        << " bytes, buffers " << totalBytes << " bytes, live-bytes bound "
        << bound << " bytes (arena/bound " << ratio << "), " << inPlace
        << " of " << collectives << " all-reduces in place, " << views
        << " views sharing their operand's bytes";
  }
  return success();
}

} // namespace
