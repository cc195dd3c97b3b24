//===- StagePrograms.cpp - check the programs of a pipeline ---------------===//
//
// Matches the transfers and the cross-stage collectives of the stage
// programs, then runs the programs' issue orders in StageSimulation and
// reports a deadlock as the cycle of ops that wait on each other.
//
//===----------------------------------------------------------------------===//

#include "StagePrograms.h"

#include "../ScheduleUtils.h"

#include "braid/Dialect/Braid/Analysis/CollectiveGroup.h"
#include "braid/Dialect/Braid/Analysis/StageSimulation.h"
#include "braid/Dialect/Braid/BraidAttributes.h"
#include "braid/Dialect/Braid/BraidDialect.h"
#include "braid/Dialect/Braid/BraidOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <map>

using namespace mlir;
using namespace braid;

namespace {

/// A stage program: its function, its attribute and its ops in order.
struct Stage {
  FunctionOpInterface func;
  StageAttr attr;
  SmallVector<Operation *> ops;
};

/// A send or a receive, or either half of a send-receive, in either form.
struct Transfer {
  int64_t peer;
  bool isSend;
  Type type;
  /// Which value of the step it moves (braid.transfers), if named.
  TransferAttr identity = {};
};

/// The halves of a transfer op, sent first.
SmallVector<Transfer, 2> getHalves(Operation *op) {
  auto yielded = [](Value result) -> Type {
    if (auto future = dyn_cast<FutureType>(result.getType()))
      return future.getValueTypes().front();
    return result.getType();
  };
  return TypeSwitch<Operation *, SmallVector<Transfer, 2>>(op)
      .Case<SendOp, SendStartOp>([](auto send) -> SmallVector<Transfer, 2> {
        return {{int64_t(send.getPeer()), true, send.getInput().getType()}};
      })
      .Case<RecvOp, RecvStartOp>([&](auto recv) -> SmallVector<Transfer, 2> {
        return {{int64_t(recv.getPeer()), false, yielded(recv->getResult(0))}};
      })
      .Case<SendRecvOp, SendRecvStartOp>([&](auto pair)
                                             -> SmallVector<Transfer, 2> {
        SmallVector<Transfer, 2> halves;
        for (Value v : pair.getInputs())
          halves.push_back({int64_t(pair.getSendPeer()), true, v.getType()});
        SmallVector<Type> received;
        if constexpr (std::is_same_v<decltype(pair), SendRecvStartOp>)
          llvm::append_range(received,
                             pair.getFuture().getType().getValueTypes());
        else
          llvm::append_range(received, pair->getResultTypes());
        for (Type t : received)
          halves.push_back({int64_t(pair.getRecvPeer()), false, t});
        return halves;
      })
      .Default([](Operation *) { return SmallVector<Transfer, 2>(); });
}

/// The halves with the values braid.transfers names.
SmallVector<Transfer, 2> getTransfers(Operation *op) {
  SmallVector<Transfer, 2> halves = getHalves(op);
  // braid.transfers names the halves in this order (the dialect checks
  // that it names each).
  if (auto ids = op->getAttrOfType<ArrayAttr>(BraidDialect::kTransfersAttrName);
      ids && ids.size() == halves.size())
    for (auto [half, id] : llvm::zip(halves, ids))
      half.identity = cast<TransferAttr>(id);
  return halves;
}

/// One direction of a transfer op: the op and the type it moves.
struct Half {
  Operation *op;
  Type type;
  TransferAttr identity;
};

/// What two ranks must agree on for one collective: its kind, its operand
/// and result types (a start form's future's) and its inherent attributes.
/// The synchronous and the start form of a collective agree.
struct Signature {
  CollectiveKind kind;
  SmallVector<Type> types;
  Attribute properties;

  static Signature of(Operation *op) {
    Signature s{cast<CollectiveOpInterface>(op).getCollectiveKind(), {}, {}};
    llvm::append_range(s.types, op->getOperandTypes());
    for (Type t : op->getResultTypes()) {
      if (auto future = dyn_cast<FutureType>(t))
        llvm::append_range(s.types, future.getValueTypes());
      else
        s.types.push_back(t);
    }
    s.properties = op->getPropertiesAsAttribute();
    return s;
  }
  bool operator==(const Signature &o) const {
    return kind == o.kind && types == o.types && properties == o.properties;
  }
};

class StageChecker {
public:
  explicit StageChecker(ModuleOp module) : module(module) {}

  LogicalResult run();

private:
  LogicalResult collectStages();
  LogicalResult matchTransfers();
  LogicalResult matchCollectives();
  LogicalResult simulate();

  std::string stageName(unsigned i) {
    return "stage " + std::to_string(i) + " (@" +
           stages[i].func.getName().str() + ")";
  }

  ModuleOp module;
  /// By index on the pipeline axis.
  SmallVector<Stage> stages;
  FlatSymbolRefAttr grid;
  int64_t axis = 0;
  /// Per (from, to): the sends of `from` to `to`, and the receives of `to`
  /// from `from`, in program order.
  std::map<std::pair<int64_t, int64_t>, SmallVector<Half>> sends, recvs;
  /// Per group that spans stages: each stage's collectives on it in order.
  llvm::MapVector<CollectiveGroup, SmallVector<SmallVector<Operation *>>>
      crossStage;
  /// The exchanges the simulation runs: the ops that complete together.
  SmallVector<SmallVector<Operation *, 2>> exchanges;
};

} // namespace

LogicalResult StageChecker::collectStages() {
  SmallVector<std::pair<FunctionOpInterface, StageAttr>> found;
  for (auto func : module.getOps<FunctionOpInterface>())
    if (auto attr =
            func->getAttrOfType<StageAttr>(BraidDialect::kStageAttrName))
      found.push_back({func, attr});
  if (found.empty())
    return success();
  auto [firstFunc, first] = found.front();
  bool ok = true;
  for (auto [func, attr] : llvm::drop_begin(found)) {
    if (attr.getGrid() == first.getGrid() && attr.getAxis() == first.getAxis())
      continue;
    InFlightDiagnostic diag =
        func.emitError() << "is a stage on axis " << attr.getAxis()
                         << " of grid " << attr.getGrid() << ", but @"
                         << firstFunc.getName() << " is one on axis "
                         << first.getAxis() << " of grid " << first.getGrid()
                         << "; the stages of a module share one pipeline axis";
    diag.attachNote(firstFunc.getLoc()) << "the other stage";
    ok = false;
  }
  if (!ok)
    return failure();
  grid = first.getGrid();
  axis = first.getAxis();
  auto gridOp = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(
      module.getOperation(), grid);
  if (!gridOp)
    return firstFunc.emitError() << "is a stage of grid " << grid
                                 << ", which is not a shard.grid of the module";
  if (axis >= gridOp.getRank())
    return firstFunc.emitError()
           << "is a stage on axis " << axis << " of grid " << grid
           << ", which has " << gridOp.getRank() << " axes";
  int64_t size = gridOp.getShape()[axis];
  if (ShapedType::isDynamic(size))
    return firstFunc.emitError()
           << "is a stage on axis " << axis << " of grid " << grid
           << ", whose size is dynamic; a pipeline has a static stage count";

  SmallVector<FunctionOpInterface> byIndex(size);
  SmallVector<bool> claimed(size, false);
  for (auto [func, attr] : found) {
    int64_t index = attr.getIndex();
    if (index >= size) {
      func.emitError() << "is stage " << index << " of a pipeline axis of "
                       << size << " stages";
      ok = false;
      continue;
    }
    if (byIndex[index]) {
      InFlightDiagnostic diag = func.emitError()
                                << "is stage " << index << ", as @"
                                << byIndex[index].getName()
                                << " is; each stage has one program";
      diag.attachNote(byIndex[index].getLoc()) << "the other program";
      ok = false;
      continue;
    }
    claimed[index] = true;
    if (func.isExternal() || !llvm::hasSingleElement(func.getFunctionBody())) {
      func.emitError() << "is a stage program, which needs a body of one "
                          "block";
      ok = false;
      continue;
    }
    byIndex[index] = func;
  }
  for (auto [index, isClaimed] : llvm::enumerate(claimed))
    if (!isClaimed) {
      firstFunc.emitError() << "is a stage of a pipeline axis of " << size
                            << " stages (axis " << axis << " of grid " << grid
                            << "), but no function is stage " << index;
      ok = false;
    }
  if (!ok)
    return failure();
  for (FunctionOpInterface func : byIndex) {
    Stage stage{
        func, func->getAttrOfType<StageAttr>(BraidDialect::kStageAttrName), {}};
    for (Operation &op : func.getFunctionBody().front().without_terminator())
      stage.ops.push_back(&op);
    stages.push_back(std::move(stage));
  }
  return success();
}

LogicalResult StageChecker::matchTransfers() {
  bool ok = true;
  for (auto [index, stage] : llvm::enumerate(stages)) {
    for (Operation *op : stage.ops) {
      auto collective = dyn_cast<CollectiveOpInterface>(op);
      if (!collective)
        continue;
      if (collective.getGridAttr() != grid) {
        op->emitError() << "is a collective of a stage program on grid "
                        << collective.getGridAttr() << ", but the stages are "
                        << "on grid " << grid;
        ok = false;
        continue;
      }
      ArrayRef<int16_t> axes = collective.getGridAxes();
      SmallVector<Transfer, 2> transfers = getTransfers(op);
      if (transfers.empty()) {
        if (llvm::is_contained(axes, axis) &&
            collective.getCollectiveKind() != CollectiveKind::AxisIndex) {
          SmallVector<SmallVector<Operation *>> &perStage =
              crossStage[CollectiveGroup::of(collective)];
          perStage.resize(stages.size());
          perStage[index].push_back(op);
        }
        continue;
      }
      if (axes.size() != 1 || axes.front() != axis) {
        InFlightDiagnostic diag = op->emitError();
        diag << "is a transfer of a stage program on grid axes [";
        llvm::interleaveComma(axes, diag);
        diag << "]; stages send and receive on the pipeline axis alone "
                "(grid_axes = ["
             << axis << "]), naming the peer stage";
        ok = false;
        continue;
      }
      for (const Transfer &transfer : transfers) {
        auto key = transfer.isSend
                       ? std::make_pair(int64_t(index), transfer.peer)
                       : std::make_pair(transfer.peer, int64_t(index));
        (transfer.isSend ? sends : recvs)[key].push_back(
            {op, transfer.type, transfer.identity});
      }
    }
  }
  if (!ok)
    return failure();

  std::map<std::pair<int64_t, int64_t>, char> pairs;
  for (auto &entry : sends)
    pairs[entry.first];
  for (auto &entry : recvs)
    pairs[entry.first];
  for (auto &entry : pairs) {
    auto [from, to] = entry.first;
    ArrayRef<Half> out = sends[entry.first], in = recvs[entry.first];
    for (size_t k = 0; k < std::min(out.size(), in.size()); ++k) {
      if (out[k].type != in[k].type) {
        InFlightDiagnostic diag =
            out[k].op->emitError()
            << "sends " << out[k].type << " to " << stageName(to)
            << ", whose matching receive (its receive #" << k << " from "
            << stageName(from) << ") expects " << in[k].type;
        diag.attachNote(in[k].op->getLoc()) << "the receive";
        ok = false;
      }
      if (out[k].identity != in[k].identity) {
        // braid-pipeline names every transfer's value; the k-th send and
        // the k-th receive must move the same one, not only one of the
        // same type.
        auto name = [](TransferAttr id) -> std::string {
          if (!id)
            return "a value braid.transfers does not name";
          std::string s = "value " + std::to_string(id.getValue());
          return s + (id.getMicroBatch() < 0
                          ? " (of the whole step)"
                          : " of micro-batch " +
                                std::to_string(id.getMicroBatch()));
        };
        InFlightDiagnostic diag =
            out[k].op->emitError()
            << "sends " << name(out[k].identity) << " to " << stageName(to)
            << ", but its matching receive (its receive #" << k << " from "
            << stageName(from) << ") expects " << name(in[k].identity)
            << "; sends and receives match in order";
        diag.attachNote(in[k].op->getLoc()) << "the receive";
        ok = false;
      }
      std::optional<unsigned> sent = getStreamIndex(out[k].op),
                              received = getStreamIndex(in[k].op);
      if (sent && received && *sent != *received) {
        MLIRContext *context = module.getContext();
        InFlightDiagnostic diag =
            out[k].op->emitError()
            << "sends to " << stageName(to) << " on stream "
            << getStreamAttr(context, *sent)
            << ", but its matching receive (receive #" << k << " from "
            << stageName(from) << ") is on stream "
            << getStreamAttr(context, *received)
            << "; the runtime connects each group on each stream apart, so a "
               "transfer and its receive need one stream";
        diag.attachNote(in[k].op->getLoc()) << "the receive";
        ok = false;
      }
      exchanges.push_back({out[k].op, in[k].op});
    }
    if (out.size() > in.size()) {
      out[in.size()].op->emitError()
          << "is send #" << in.size() << " of " << stageName(from) << " to "
          << stageName(to)
          << ", which has no matching receive: " << stageName(to)
          << " receives " << in.size() << " tensors from it, "
          << "but it sends " << out.size();
      ok = false;
    } else if (in.size() > out.size()) {
      in[out.size()].op->emitError()
          << "is receive #" << out.size() << " of " << stageName(to) << " from "
          << stageName(from)
          << ", which has no matching send: " << stageName(from) << " sends "
          << out.size() << " tensors to it, but it receives " << in.size();
      ok = false;
    }
  }
  return success(ok);
}

LogicalResult StageChecker::matchCollectives() {
  bool ok = true;
  for (auto &[group, perStage] : crossStage) {
    // Stage 0's sequence is the reference; a stage that issues more or
    // fewer collectives on the group, or another one at a position, is
    // reported at its first difference.
    size_t count = perStage.front().size();
    for (unsigned s = 0; s < stages.size(); ++s) {
      ArrayRef<Operation *> mine = perStage[s], ref = perStage.front();
      for (size_t k = 0; k < std::min(mine.size(), ref.size()); ++k) {
        if (Signature::of(mine[k]) == Signature::of(ref[k]) &&
            getStreamIndex(mine[k]) == getStreamIndex(ref[k]))
          continue;
        InFlightDiagnostic diag =
            mine[k]->emitError()
            << "is collective #" << k << " of " << stageName(s) << " on group "
            << group << ", which spans the stages, but " << stageName(0)
            << " issues a different one there (each rank of "
            << "the group must issue the same collectives in the same order)";
        diag.attachNote(ref[k]->getLoc()) << "the collective of stage 0";
        ok = false;
        break;
      }
      if (mine.size() != count) {
        Operation *at = mine.size() > count ? mine[count] : nullptr;
        InFlightDiagnostic diag =
            (at ? at->emitError() : stages[s].func.emitError())
            << stageName(s) << " issues " << mine.size()
            << " collectives on group " << group << ", which spans the "
            << "stages, but " << stageName(0) << " issues " << count;
        if (!at && count > mine.size())
          diag.attachNote(ref[mine.size()]->getLoc())
              << "the first collective it lacks";
        ok = false;
      }
    }
    if (!ok)
      continue;
    for (size_t k = 0; k < count; ++k) {
      SmallVector<Operation *, 2> members;
      for (auto &ops : perStage)
        members.push_back(ops[k]);
      exchanges.push_back(std::move(members));
    }
  }
  return success(ok);
}

LogicalResult StageChecker::simulate() {
  StageSimulation sim;
  DenseMap<Operation *, StageSimulation::OpRef> refOf;
  for (Stage &stage : stages) {
    unsigned program = sim.addProgram();
    DenseMap<Operation *, unsigned> index;
    Block &body = stage.func.getFunctionBody().front();
    for (Operation *op : stage.ops) {
      SmallVector<unsigned, 4> deps;
      op->walk([&](Operation *nested) {
        for (Value operand : nested->getOperands()) {
          Operation *def = operand.getDefiningOp();
          Operation *top = def ? body.findAncestorOpInBlock(*def) : nullptr;
          if (top && top != op)
            deps.push_back(index.lookup(top));
        }
      });
      unsigned i = sim.addOp(program, getStreamIndex(op).value_or(0), deps,
                             isa<CollectiveOpInterface>(op));
      index[op] = i;
      refOf[op] = {program, i};
    }
  }
  for (ArrayRef<Operation *> members : exchanges) {
    SmallVector<StageSimulation::OpRef> refs;
    for (Operation *op : members)
      refs.push_back(refOf.lookup(op));
    sim.addExchange(refs);
  }
  SmallVector<StageSimulation::Link> cycle = sim.run();
  if (cycle.empty())
    return success();

  // Start the report at a transfer or collective waiting for its peer;
  // name the next such op of the cycle as the one it blocks with.
  auto opOf = [&](StageSimulation::OpRef r) {
    return stages[r.program].ops[r.op];
  };
  auto isExchange = [](const StageSimulation::Link &l) {
    return l.waits == StageSimulation::Wait::Exchange;
  };
  auto first = llvm::find_if(cycle, isExchange);
  if (first != cycle.end())
    std::rotate(cycle.begin(), first, cycle.end());
  auto second = std::find_if(std::next(cycle.begin()), cycle.end(), isExchange);
  Operation *head = opOf(cycle.front().op);
  InFlightDiagnostic diag = head->emitError();
  diag << "deadlocks: this '" << head->getName() << "' of "
       << stageName(cycle.front().op.program);
  if (second != cycle.end())
    diag << " and '" << opOf(second->op)->getName() << "' of "
         << stageName(second->op.program) << " block each other";
  else
    diag << " waits on itself";
  diag << " in a cycle of " << cycle.size()
       << " ops (each note waits for the next)";
  MLIRContext *context = module.getContext();
  for (auto [i, link] : llvm::enumerate(cycle)) {
    Operation *op = opOf(link.op);
    StageSimulation::OpRef nextRef = cycle[(i + 1) % cycle.size()].op;
    Operation *next = opOf(nextRef);
    Diagnostic &note = diag.attachNote(op->getLoc());
    note << stageName(link.op.program) << ": '" << op->getName() << "' ";
    switch (link.waits) {
    case StageSimulation::Wait::Exchange:
      note << "waits for its peer '" << next->getName() << "' of "
           << stageName(nextRef.program) << " to start";
      break;
    case StageSimulation::Wait::Stream:
      note << "waits for '" << next->getName() << "' ahead of it on stream "
           << getStreamAttr(context, getStreamIndex(op).value_or(0))
           << " to complete";
      break;
    case StageSimulation::Wait::Operand:
      note << "waits for its operand from '" << next->getName() << "'";
      break;
    case StageSimulation::Wait::Order:
      note << "waits for '" << next->getName()
           << "', the collective issued before it, to start";
      break;
    }
  }
  return failure();
}

LogicalResult StageChecker::run() {
  if (failed(collectStages()))
    return failure();
  if (stages.empty())
    return success();
  // Both matchings run, so that one run reports every mismatch; the
  // simulation needs them to hold.
  bool transfers = succeeded(matchTransfers());
  bool collectives = succeeded(matchCollectives());
  if (!transfers || !collectives)
    return failure();
  return simulate();
}

LogicalResult braid::verifyStagePrograms(ModuleOp module) {
  return StageChecker(module).run();
}
