//===- VerifySchedule.cpp - check a scheduled step --------------*- C++ -*-===//
//
// Checks futures, cross-stream synchronization and the issue order of
// collectives in a scheduled step, with a vector clock per stream, and the
// stage programs of a pipeline together (StagePrograms.cpp).
//
//===----------------------------------------------------------------------===//

#include "Pipeline/StagePrograms.h"
#include "ScheduleUtils.h"

#include "braid/Dialect/Braid/Analysis/StreamOrder.h"

#include "braid/Dialect/Braid/BraidDialect.h"
#include "braid/Dialect/Braid/BraidOps.h"
#include "braid/Dialect/Braid/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <map>

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "braid-verify-schedule"

namespace braid {
#define GEN_PASS_DEF_VERIFYSCHEDULE
#include "braid/Dialect/Braid/Passes.h.inc"
} // namespace braid

using namespace mlir;
using namespace braid;

namespace {

struct VerifySchedulePass
    : public braid::impl::VerifyScheduleBase<VerifySchedulePass> {
  void runOnOperation() override {
    bool stages = succeeded(verifyStagePrograms(getOperation()));
    if (!stages)
      signalPassFailure();
    if (failed(forEachSchedulableBody(
            getOperation(), [&](FunctionOpInterface func, Block &body) {
              // Both checks run, so that one run reports every problem.
              bool futures = succeeded(verifyFutures(body));
              bool streams = succeeded(verifyStreams(body));
              bool memory = succeeded(verifyMemory(func, body));
              bool live = succeeded(verifyLiveBytes(func, body));
              return success(futures && streams && memory && live);
            })))
      signalPassFailure();
  }

  LogicalResult verifyFutures(Block &body);
  LogicalResult verifyStreams(Block &body);
  LogicalResult verifyMemory(FunctionOpInterface func, Block &body);
  LogicalResult verifyLiveBytes(FunctionOpInterface func, Block &body);
};

/// The arena offset braid-plan-memory gave `value`, if any.
std::optional<int64_t> getOffset(FunctionOpInterface func, Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto offset = func.getArgAttrOfType<IntegerAttr>(
        arg.getArgNumber(), BraidDialect::kOffsetAttrName);
    return offset ? std::optional<int64_t>(offset.getInt()) : std::nullopt;
  }
  auto result = cast<OpResult>(value);
  auto offsets = result.getOwner()->getAttrOfType<DenseI64ArrayAttr>(
      BraidDialect::kOffsetsAttrName);
  if (!offsets || offsets[result.getResultNumber()] < 0)
    return std::nullopt;
  return offsets[result.getResultNumber()];
}

namespace {

/// Byte ranges of the arena in flight, each owned by a collective: a map of
/// disjoint segments, each listing the ranges that cover it. Adding,
/// removing and querying a range cost O(log n + segments it touches).
class InFlightBytes {
public:
  /// A range [lo, hi) that `value` of collective `owner` holds.
  struct Range {
    int64_t lo, hi;
    Value value;
    Operation *start;
    WaitOp wait;
  };

  void add(unsigned id) {
    const Range &r = ranges[id];
    split(r.lo);
    split(r.hi);
    int64_t at = r.lo;
    auto it = segments.lower_bound(r.lo);
    while (at < r.hi) {
      if (it == segments.end() || it->first > at) {
        // A gap up to the next segment (or hi).
        int64_t end = it == segments.end() ? r.hi : std::min(r.hi, it->first);
        it = segments.emplace_hint(it, at, Segment{end, {id}});
      } else {
        it->second.owners.push_back(id);
      }
      at = it->second.end;
      ++it;
    }
  }
  void remove(unsigned id) {
    const Range &r = ranges[id];
    for (auto it = segments.lower_bound(r.lo);
         it != segments.end() && it->first < r.hi;) {
      llvm::erase(it->second.owners, id);
      it = it->second.owners.empty() ? segments.erase(it) : std::next(it);
    }
  }
  /// Calls `fn` on each range overlapping [lo, hi).
  void overlapping(int64_t lo, int64_t hi,
                   llvm::function_ref<void(const Range &)> fn) {
    auto it = segments.upper_bound(lo);
    if (it != segments.begin() && std::prev(it)->second.end > lo)
      --it;
    llvm::SmallDenseSet<unsigned, 4> seen;
    for (; it != segments.end() && it->first < hi; ++it)
      for (unsigned id : it->second.owners)
        if (seen.insert(id).second)
          fn(ranges[id]);
  }

  std::vector<Range> ranges;

private:
  struct Segment {
    int64_t end;
    SmallVector<unsigned, 2> owners;
  };
  /// Makes `x` a segment boundary.
  void split(int64_t x) {
    auto it = segments.upper_bound(x);
    if (it == segments.begin())
      return;
    --it;
    if (it->first < x && x < it->second.end) {
      Segment tail{it->second.end, it->second.owners};
      it->second.end = x;
      segments.emplace_hint(std::next(it), x, std::move(tail));
    }
  }
  std::map<int64_t, Segment> segments;
};

} // namespace

/// With a memory plan: no op between a collective's start and its wait
/// writes the bytes the collective reads or writes. One sweep over the
/// block with the bytes in flight.
LogicalResult VerifySchedulePass::verifyMemory(FunctionOpInterface func,
                                               Block &body) {
  if (!func->hasAttr(BraidDialect::kArenaBytesAttrName))
    return success();
  bool ok = true;
  InFlightBytes inFlight;
  DenseMap<Operation *, SmallVector<unsigned>> rangesOfWait;
  for (Operation &op : body) {
    if (auto wait = dyn_cast<WaitOp>(op)) {
      auto it = rangesOfWait.find(&op);
      if (it != rangesOfWait.end()) {
        // The results land here: the collective writes them, but not the
        // bytes another collective has in flight.
        for (unsigned id : it->second)
          inFlight.remove(id);
        rangesOfWait.erase(it);
      }
    }
    // A view at its operand's bytes writes nothing (the backends move no
    // byte for it); reading bytes in flight is no conflict.
    bool aliasedView =
        op.hasTrait<View>() && getOffset(func, op.getResult(0)) &&
        getOffset(func, op.getResult(0)) == getOffset(func, op.getOperand(0));
    for (Value result : op.getResults()) {
      std::optional<int64_t> at = getOffset(func, result);
      if (!at || aliasedView)
        continue;
      int64_t end = *at + int64_t(getTensorBytes(result.getType()));
      inFlight.overlapping(*at, end, [&](const InFlightBytes::Range &r) {
        InFlightDiagnostic diag = op.emitError()
                                  << "writes bytes [" << *at << ", " << end
                                  << ") of the arena while '"
                                  << r.start->getName() << "' reads or writes ["
                                  << r.lo << ", " << r.hi << ") until its wait";
        diag.attachNote(r.wait->getLoc()) << "the wait";
        ok = false;
      });
    }
    auto collective = dyn_cast<CollectiveOpInterface>(op);
    if (!collective || !collective.isAsync())
      continue;
    WaitOp wait = getWaitOf(&op);
    if (!wait || wait->getBlock() != &body || wait->isBeforeInBlock(&op))
      continue;
    // The bytes in flight: the inputs, and where the results land.
    SmallVector<unsigned> &ids = rangesOfWait[wait.getOperation()];
    auto add = [&](Value v) {
      if (std::optional<int64_t> at = getOffset(func, v)) {
        int64_t hi = *at + int64_t(getTensorBytes(v.getType()));
        if (hi <= *at)
          return;
        ids.push_back(inFlight.ranges.size());
        inFlight.ranges.push_back({*at, hi, v, &op, wait});
        inFlight.add(ids.back());
      }
    };
    for (Value v : op.getOperands())
      add(v);
    for (Value v : wait.getResults())
      add(v);
  }
  return success(ok);
}

LogicalResult VerifySchedulePass::verifyFutures(Block &body) {
  bool ok = true;
  body.walk([&](Operation *op) {
    for (Value result : op->getResults()) {
      if (!isa<FutureType>(result.getType()))
        continue;
      // Waits in program order (use lists are not).
      SmallVector<WaitOp> waits;
      for (OpOperand &use : result.getUses()) {
        if (auto wait = dyn_cast<WaitOp>(use.getOwner())) {
          waits.push_back(wait);
          continue;
        }
        use.getOwner()->emitError()
            << "uses the future of '" << op->getName()
            << "' directly; only braid.wait may use a future";
        ok = false;
      }
      llvm::sort(waits, [](WaitOp a, WaitOp b) {
        return a->getBlock() == b->getBlock() && a->isBeforeInBlock(b);
      });
      if (waits.empty()) {
        if (result.use_empty()) {
          op->emitError() << "yields a future that is never waited";
          ok = false;
        }
        continue;
      }
      WaitOp firstWait = waits.front();
      for (WaitOp wait : llvm::drop_begin(waits)) {
        InFlightDiagnostic diag = wait.emitError()
                                  << "waits a second time for the future of '"
                                  << op->getName() << "'";
        diag.attachNote(firstWait.getLoc()) << "first wait here";
        ok = false;
      }
    }
  });
  return success(ok);
}

LogicalResult VerifySchedulePass::verifyStreams(Block &body) {
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  bool anyStream =
      llvm::any_of(ops, [](Operation *op) { return getStreamIndex(op); });
  bool ok = true;

  StreamOrder order;
  DenseMap<CollectiveGroup, Operation *> lastOfGroup;

  for (Operation *op : ops) {
    ++numChecked;
    std::optional<unsigned> stream = getStreamIndex(op);
    if (anyStream && !stream) {
      op->emitError() << "has no 'braid.stream' in a function whose other "
                         "ops have one";
      ok = false;
      continue;
    }
    unsigned s = stream.value_or(0);

    // Synchronization this op performs.
    if (auto wait = dyn_cast<WaitOp>(op)) {
      if (Operation *start = wait.getFuture().getDefiningOp())
        order.waitFor(s, start);
    } else if (auto waitEvent = dyn_cast<WaitEventOp>(op)) {
      Operation *record = waitEvent.getEvent().getDefiningOp();
      if (!record || !order.waitFor(s, record)) {
        op->emitError() << "waits for an event that no braid.record_event "
                           "of this function recorded";
        ok = false;
      }
    }

    // Every value from another stream must be ordered before this op.
    for (Value operand : op->getOperands()) {
      if (isa<FutureType, EventType>(operand.getType()))
        continue;
      Operation *producer = operand.getDefiningOp();
      std::optional<unsigned> t =
          producer ? order.getStream(producer) : std::nullopt;
      if (!t || order.isOrderedBefore(producer, s))
        continue;
      InFlightDiagnostic diag =
          op->emitError() << "uses a value produced on stream "
                          << getStreamAttr(op->getContext(), *t)
                          << " with no synchronization after its producer "
                             "(a braid.wait_event on an event recorded after "
                             "it)";
      diag.attachNote(producer->getLoc()) << "produced here";
      ok = false;
    }

    // Collectives of one group must be ordered, so every rank issues them in
    // the same order.
    if (auto collective = dyn_cast<CollectiveOpInterface>(op)) {
      CollectiveGroup group = CollectiveGroup::of(collective);
      Operation *&previous = lastOfGroup[group];
      if (previous && !order.isOrderedBefore(previous, s)) {
        InFlightDiagnostic diag =
            op->emitError()
            << "is a collective on group " << group << " issued on stream "
            << getStreamAttr(op->getContext(), s)
            << " with no synchronization after the previous collective of "
               "that group on stream "
            << getStreamAttr(op->getContext(), *order.getStream(previous))
            << "; ranks may run them in different orders and deadlock";
        diag.attachNote(previous->getLoc()) << "previous collective here";
        ok = false;
      }
      previous = op;
    }
    order.issue(op, s);
  }
  LLVM_DEBUG(llvm::dbgs() << "checked the stream order of " << ops.size()
                          << " ops: " << (ok ? "ok" : "errors") << "\n");
  return success(ok);
}

} // namespace

/// With a memory plan: every buffer lies inside the arena, and no two values
/// whose lifetimes meet share a byte, under the lifetimes braid-plan-memory
/// documents (recomputed here, not taken from the pass):
///   - a value lives from its producer to its last use in program order;
///     arguments and returned values for the whole step;
///   - an input of an async collective until its wait; the results of a
///     wait from its start on;
///   - a value produced or used off the compute stream for the whole step.
/// A value may share its bytes only with what it is computed from in place
/// (an optimizer update's in-place operand, an all-reduce's operand), at
/// exactly the same bytes, and only if every other reader of that operand is
/// on the compute stream and ordered before the op: earlier on its stream,
/// or synchronized before it when it runs on a communication stream. A view
/// (reshape) may share its operand's exact bytes: the two are one value, and
/// an in-place write over either waits for the readers of both. One sweep
/// over the values in order of their first position.
LogicalResult VerifySchedulePass::verifyLiveBytes(FunctionOpInterface func,
                                                  Block &body) {
  auto arenaAttr =
      func->getAttrOfType<IntegerAttr>(BraidDialect::kArenaBytesAttrName);
  if (!arenaAttr)
    return success();
  int64_t arena = arenaAttr.getInt();
  DenseMap<Operation *, size_t> position;
  size_t next = 1;
  for (Operation &op : body.without_terminator())
    position[&op] = next++;
  const size_t end = next;
  auto describe = [](Value v) -> std::string {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return "argument #" + std::to_string(arg.getArgNumber());
    auto result = cast<OpResult>(v);
    return "result #" + std::to_string(result.getResultNumber()) + " of '" +
           result.getOwner()->getName().getStringRef().str() + "'";
  };
  auto locOf = [&](Value v) {
    return isa<BlockArgument>(v) ? func.getLoc() : v.getDefiningOp()->getLoc();
  };

  struct Live {
    Value value;
    int64_t lo, hi;
    size_t begin, end;
    unsigned leader; // alias class
  };
  SmallVector<Live> values;
  DenseMap<Value, unsigned> index;
  bool ok = true;
  auto add = [&](Value v) {
    std::optional<int64_t> at = getOffset(func, v);
    if (!at || !isa<RankedTensorType>(v.getType()))
      return;
    int64_t bytes = int64_t(getTensorBytes(v.getType()));
    if (*at < 0 || *at > arena || bytes > arena - *at) {
      mlir::emitError(locOf(v))
          << describe(v) << " at [" << *at << ", " << *at + bytes
          << ") lies outside the arena of " << arena << " bytes";
      ok = false;
      return;
    }
    size_t begin = 0, last = 0;
    if (Operation *def = v.getDefiningOp()) {
      begin = last = position.lookup(def);
      if (auto wait = dyn_cast<WaitOp>(def))
        if (Operation *start = wait.getFuture().getDefiningOp())
          begin = isOnComputeStream(start) ? position.lookup(start) : 0;
      if (!isOnComputeStream(def))
        begin = 0, last = end;
    } else {
      last = end;
    }
    for (OpOperand &use : v.getUses()) {
      Operation *user = body.findAncestorOpInBlock(*use.getOwner());
      size_t at = !user || user->hasTrait<OpTrait::IsTerminator>() ||
                          !isOnComputeStream(user)
                      ? end
                      : position.lookup(user);
      auto collective = dyn_cast_or_null<CollectiveOpInterface>(user);
      // A start's inputs are read until its wait, wherever the start runs:
      // a wait on the compute stream orders every later compute op after
      // the collective (one elsewhere does not: the whole step).
      if (collective && collective.isAsync()) {
        WaitOp wait = getWaitOf(user);
        at = wait && isOnComputeStream(wait) ? size_t(position.lookup(wait))
                                             : end;
      }
      last = std::max(last, at);
    }
    index[v] = values.size();
    values.push_back(
        {v, *at, *at + bytes, begin, last, unsigned(values.size())});
  };
  for (BlockArgument arg : body.getArguments())
    add(arg);
  for (Operation &op : body.without_terminator())
    for (Value result : op.getResults())
      add(result);

  // Alias classes: a result written in place over its operand.
  std::function<unsigned(unsigned)> find = [&](unsigned i) {
    return values[i].leader == i ? i
                                 : values[i].leader = find(values[i].leader);
  };
  // Where the in-place op runs off the compute stream, a reader of its
  // operand must be ordered before it by synchronization, not by program
  // order alone (the plan loader's rule too).
  StreamOrder issued;
  // The views of a value (and the value), by the value they all view.
  DenseMap<Value, Value> viewRoot;
  DenseMap<Value, SmallVector<Value, 2>> viewsOf;
  auto alias = [&](Operation &op, Value operand, Value result) {
    auto a = index.find(operand), b = index.find(result);
    if (a == index.end() || b == index.end())
      return;
    Live &x = values[a->second], &y = values[b->second];
    if (x.lo != y.lo || x.hi != y.hi)
      return; // Not in place: two buffers, checked as such.
    unsigned stream = getStreamIndex(&op).value_or(0);
    // The operand's readers, and those of the views that share its bytes.
    SmallVector<Value, 2> sharing = {operand};
    if (auto it = viewsOf.find(viewRoot.lookup(operand)); it != viewsOf.end())
      sharing = it->second;
    for (Value shared : sharing)
      for (OpOperand &use : shared.getUses()) {
        Operation *user = body.findAncestorOpInBlock(*use.getOwner());
        if (user == &op)
          continue;
        if (!user || user->hasTrait<OpTrait::IsTerminator>() ||
            !isOnComputeStream(user) || !issued.isOrderedBefore(user, stream)) {
          InFlightDiagnostic diag = op.emitError()
                                    << "writes " << describe(result)
                                    << " in place over " << describe(shared)
                                    << " [" << x.lo << ", " << x.hi
                                    << "), which is read after it or with no "
                                       "synchronization before it";
          diag.attachNote(use.getOwner()->getLoc()) << "read here";
          ok = false;
          values[find(b->second)].leader = find(a->second);
          return; // (Joined anyway: one error for one problem.)
        }
      }
    values[find(b->second)].leader = find(a->second);
  };
  // A view (Braid_View) at its operand's bytes is that value read through
  // another shape: one class, with no ordering asked of their readers, but
  // an in-place write over either must come after every reader of both.
  auto view = [&](Value operand, Value result) {
    auto a = index.find(operand), b = index.find(result);
    if (a == index.end() || b == index.end())
      return;
    Live &x = values[a->second], &y = values[b->second];
    if (x.lo != y.lo || x.hi != y.hi)
      return; // A copy: two buffers, checked as such.
    Value root = viewRoot.lookup(operand);
    if (!root)
      root = viewRoot[operand] = operand;
    viewRoot[result] = root;
    SmallVector<Value, 2> &group = viewsOf[root];
    if (group.empty())
      group.push_back(root);
    group.push_back(result);
    values[find(b->second)].leader = find(a->second);
  };
  for (Operation &op : body.without_terminator()) {
    unsigned stream = getStreamIndex(&op).value_or(0);
    if (auto wait = dyn_cast<WaitOp>(op)) {
      if (Operation *start = wait.getFuture().getDefiningOp())
        issued.waitFor(stream, start);
    } else if (auto waitEvent = dyn_cast<WaitEventOp>(op)) {
      if (Operation *record = waitEvent.getEvent().getDefiningOp())
        issued.waitFor(stream, record);
    }
    if (op.hasTrait<View>()) {
      view(op.getOperand(0), op.getResult(0));
    } else if (auto update = dyn_cast<InPlaceOpInterface>(op)) {
      for (unsigned r = 0; r < op.getNumResults(); ++r)
        if (int operand = update.getInPlaceOperand(r); operand >= 0)
          alias(op, op.getOperand(operand), op.getResult(r));
    } else if (isa<AllReduceOp>(op)) {
      for (auto [operand, result] :
           llvm::zip(op.getOperands(), op.getResults()))
        alias(op, operand, result);
    } else if (isa<AllReduceStartOp>(op)) {
      if (WaitOp wait = getWaitOf(&op))
        for (auto [operand, result] :
             llvm::zip(op.getOperands(), wait.getResults()))
          alias(op, operand, result);
    } else if (isa<AllGatherOp, AllGatherStartOp>(op)) {
      // A sharded parameter gathered into its argument's bytes
      // (braid-plan-memory): in place over the argument it carries into.
      WaitOp wait = isa<AllGatherStartOp>(op) ? getWaitOf(&op) : nullptr;
      Value result = wait ? wait.getResult(0)
                          : (isa<AllGatherOp>(op) ? op.getResult(0) : Value());
      if (result)
        if (BlockArgument arg = getCarriedParameter(func, result))
          alias(op, arg, result);
    }
    issued.issue(&op, stream);
  }
  // One range per class: its bytes, and the union of its members' lives.
  struct Class {
    int64_t lo, hi;
    size_t begin, end;
    unsigned member;
  };
  DenseMap<unsigned, Class> classes;
  for (auto [i, v] : llvm::enumerate(values)) {
    if (v.hi == v.lo)
      continue; // No bytes.
    unsigned leader = find(i);
    auto [it, inserted] = classes.try_emplace(
        leader, Class{v.lo, v.hi, v.begin, v.end, unsigned(i)});
    if (!inserted) {
      it->second.begin = std::min(it->second.begin, v.begin);
      it->second.end = std::max(it->second.end, v.end);
    }
  }
  SmallVector<Class> order;
  for (auto &entry : classes)
    order.push_back(entry.second);
  llvm::sort(order, [](const Class &a, const Class &b) {
    return std::tie(a.begin, a.lo) < std::tie(b.begin, b.lo);
  });
  // The ranges live so far, by offset (disjoint while no error is found).
  std::map<int64_t, Class> active;
  for (const Class &c : order) {
    auto conflict = [&](std::map<int64_t, Class>::iterator it) {
      const Class &o = it->second;
      if (o.end < c.begin) {
        active.erase(it);
        return false;
      }
      const Live &a = values[c.member], &b = values[o.member];
      InFlightDiagnostic diag = mlir::emitError(locOf(a.value))
                                << describe(a.value) << " [" << a.lo << ", "
                                << a.hi << ") shares bytes with "
                                << describe(b.value) << " [" << b.lo << ", "
                                << b.hi << ") while both are live";
      diag.attachNote(locOf(b.value)) << "the other value";
      ok = false;
      return true;
    };
    bool clash = false;
    auto it = active.lower_bound(c.lo);
    if (it != active.begin()) {
      auto prev = std::prev(it);
      if (prev->second.hi > c.lo)
        clash = conflict(prev);
    }
    while (!clash) {
      it = active.lower_bound(c.lo);
      if (it == active.end() || it->first >= c.hi)
        break;
      clash = conflict(it);
    }
    if (!clash)
      active[c.lo] = c;
  }
  return success(ok);
}
