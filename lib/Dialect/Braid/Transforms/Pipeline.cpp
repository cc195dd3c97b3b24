//===- Pipeline.cpp - split a training step into pipeline stages ----------===//
//
// Assigns every op of the step to a stage (the forward to the latest stage
// among its operands', the backward to the earliest among its users' where
// its forward operands exist, the optimizer to its parameters'), then
// builds one program per stage by emitting its micro-batches' forwards and
// backwards in the schedule's order, with a send after the action that
// computes a value another stage needs and a receive before the action
// there that needs it, and the optimizer once at the end.
//
//===----------------------------------------------------------------------===//

#include "CostUtils.h"
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

namespace {

enum class Phase { Forward, Backward, Optimizer };

/// The stage of a value computed again wherever it is needed.
constexpr int kFree = -1;

/// The step being split and where each of its ops runs.
struct Step {
  func::FuncOp func;
  Block *body = nullptr;
  Operation *terminator = nullptr;
  FlatSymbolRefAttr grid;
  unsigned stages = 0;
  int64_t axis = 0;
  int lossResult = -1;
  /// The gradient all-reduces (carrying grad_of): where the optimizer
  /// starts.
  SmallVector<Operation *> sinks;

  DenseMap<Operation *, Phase> phase;
  DenseMap<Operation *, int> stage;
  SmallVector<int> argStage;
  /// Per argument of a stage: the other stages whose forward reads it too
  /// (a tied parameter); each keeps a copy, updated from its own stage's
  /// optimizer at the end of the step.
  SmallVector<SmallVector<int, 1>> sharedWith;
  /// Per op: its position in the body, which orders transfers.
  DenseMap<Operation *, unsigned> position;
  /// A shared parameter's gradient part computed on another stage than the
  /// parameter's, and the sum that adds it to the rest right before the
  /// all-reduce: summed over the micro-batches where it is computed and
  /// sent once, after the last backward (per micro-batch, its transfer
  /// would wait for a stage that is not the next one). The sum is null
  /// where the part is the whole gradient, the all-reduce's operand.
  llvm::MapVector<Value, Operation *> deferred;

  RoleAttr argRole(unsigned i) {
    return func.getArgAttrOfType<RoleAttr>(i, BraidDialect::kRoleAttrName);
  }
  RoleAttr resultRole(unsigned i) {
    return func.getResultAttrOfType<RoleAttr>(i, BraidDialect::kRoleAttrName);
  }
  int stageOf(Value v) const {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return argStage[arg.getArgNumber()];
    return stage.lookup(v.getDefiningOp());
  }
  bool isFree(Value v) const { return stageOf(v) == kFree; }
};

/// Which action of a stage sends or receives a transfer: a micro-batch's
/// forward or backward.
using ActionKind = PipelineAction::Kind;

} // namespace

//===----------------------------------------------------------------------===//
// Stages of the parameters and the ops
//===----------------------------------------------------------------------===//

/// Phases: the optimizer is the gradient all-reduces and what depends on
/// them; the forward what the loss depends on; the backward what the
/// gradients depend on besides. Anything else (a learning rate computed
/// from hyperparameters) counts with the optimizer.
static void classify(Step &step) {
  DenseSet<Operation *> optimizer, forward, backward;
  SmallVector<Operation *> work(step.sinks.begin(), step.sinks.end());
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (op == step.terminator || !optimizer.insert(op).second)
      continue;
    for (Operation *user : op->getUsers())
      work.push_back(user);
  }
  auto ancestors = [&](ValueRange roots, DenseSet<Operation *> &into) {
    SmallVector<Value> values(roots.begin(), roots.end());
    while (!values.empty()) {
      Operation *def = values.pop_back_val().getDefiningOp();
      if (!def || optimizer.count(def) || !into.insert(def).second)
        continue;
      llvm::append_range(values, def->getOperands());
    }
  };
  ancestors(step.terminator->getOperand(step.lossResult), forward);
  for (Operation *sink : step.sinks)
    ancestors(sink->getOperands(), backward);
  for (auto [i, op] : llvm::enumerate(step.body->without_terminator())) {
    step.position[&op] = unsigned(i);
    step.phase[&op] = forward.count(&op)     ? Phase::Forward
                      : optimizer.count(&op) ? Phase::Optimizer
                      : backward.count(&op)  ? Phase::Backward
                                             : Phase::Optimizer;
  }
}

/// The stage of each op, from the stages of the arguments.
static LogicalResult assignOps(Step &step) {
  unsigned p = step.stages;
  auto latest = [&](Operation *op) {
    int s = kFree;
    for (Value v : op->getOperands())
      s = std::max(s, step.stageOf(v));
    return s;
  };
  // The forward: activations flow up the stages. A parameter read by the
  // forward of other stages than its own (tied weights) is shared with
  // them.
  step.sharedWith.assign(step.func.getNumArguments(), {});
  for (Operation &op : step.body->without_terminator()) {
    if (step.phase[&op] != Phase::Forward)
      continue;
    int s = step.stage[&op] = latest(&op);
    for (Value v : op.getOperands())
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        int own = step.argStage[arg.getArgNumber()];
        auto &with = step.sharedWith[arg.getArgNumber()];
        if (own != kFree && s != own && !llvm::is_contained(with, s))
          with.push_back(s);
      }
  }
  auto readableOn = [&](BlockArgument arg, int s) {
    return step.argStage[arg.getArgNumber()] == s ||
           llvm::is_contained(step.sharedWith[arg.getArgNumber()], s);
  };
  // The optimizer: a gradient all-reduce on its parameters' stage, an op
  // reading a parameter or its state (an update) on theirs, the rest on the
  // latest among its operands'.
  DenseMap<StringRef, int> stageOfParam;
  for (unsigned i = 0; i < step.func.getNumArguments(); ++i)
    if (RoleAttr role = step.argRole(i);
        role && role.getKind() == RoleKind::Parameter)
      stageOfParam[role.getName()] = step.argStage[i];
  DenseSet<Operation *> sinks(step.sinks.begin(), step.sinks.end());
  for (Operation &op : step.body->without_terminator()) {
    if (step.phase[&op] != Phase::Optimizer)
      continue;
    if (!sinks.count(&op)) {
      int own = kFree;
      for (Value v : op.getOperands())
        if (isa<BlockArgument>(v))
          own = std::max(own, step.stageOf(v));
      step.stage[&op] = own != kFree ? own : latest(&op);
      continue;
    }
    auto names = *cast<GradientCollectiveOpInterface>(op).getGradOf();
    int s = kFree;
    for (Attribute name : names) {
      auto it = stageOfParam.find(cast<StringAttr>(name).getValue());
      if (it == stageOfParam.end())
        // grad_of's verifier checks the names: not reachable from input.
        return op.emitOpError() << "carries the gradient of " << name
                                << ", which is not a parameter of the step";
      if (s != kFree && s != it->second)
        return op.emitOpError()
               << "reduces gradients of parameters of stages " << s << " and "
               << it->second << "; braid-pipeline needs one all-reduce per "
               << "stage's gradients (bucketing comes after it)";
      s = it->second;
    }
    step.stage[&op] = s;
  }
  // The backward, from the gradients back; gradients flow down the stages.
  // An op reading a parameter runs on its stage (the gradient of a layer's
  // input where its weight is); any other on the latest stage among its
  // users' and its forward operands', so that nothing it sends goes up and
  // what it reads of the forward comes from below.
  SmallVector<Operation *> backward;
  for (Operation &op : step.body->without_terminator())
    if (step.phase[&op] == Phase::Backward)
      backward.push_back(&op);
  auto isForward = [&](Value v) {
    Operation *def = v.getDefiningOp();
    return !def || step.phase[def] == Phase::Forward;
  };
  for (Operation *op : llvm::reverse(backward)) {
    if (latest(op) == kFree) {
      step.stage[op] = kFree;
      continue;
    }
    int own = kFree, s = kFree;
    SmallVector<BlockArgument> args;
    for (Value v : op->getOperands()) {
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        own = std::max(own, step.stageOf(v));
        args.push_back(arg);
      } else if (isForward(v)) {
        s = std::max(s, step.stageOf(v));
      }
    }
    for (Operation *user : op->getUsers()) {
      if (user == step.terminator)
        return op->emitOpError()
               << "is a result of the step that depends on the batch; a "
                  "pipelined step returns its loss, parameters and optimizer "
                  "state";
      s = std::max(s, step.stage.lookup(user));
    }
    // On a shared parameter, where the rest of the op would run if that
    // stage has a copy of each (the lm head's gradient next to the head).
    if (own != kFree && s != kFree && llvm::all_of(args, [&](BlockArgument a) {
          return step.isFree(a) || readableOn(a, s);
        }))
      own = s;
    step.stage[op] = own != kFree ? own : s != kFree ? s : latest(op);
  }
  // An op on gradients alone (a residual's sum) moves up to the earliest
  // stage of its operands: one tensor sent down instead of each operand.
  for (Operation *op : backward) {
    int lowest = int(p), &s = step.stage[op];
    bool gradientsOnly = s != kFree;
    for (Value v : op->getOperands()) {
      if (step.isFree(v))
        continue;
      gradientsOnly &= !isForward(v);
      lowest = std::min(lowest, step.stageOf(v));
    }
    if (gradientsOnly && lowest != int(p))
      s = std::max(s, lowest);
  }
  return success();
}

/// The stage of each parameter from the boundary modules; optimizer state
/// follows its parameter, everything else is free.
static LogicalResult assignArguments(Step &step,
                                     ArrayRef<std::string> boundaries) {
  unsigned n = step.func.getNumArguments();
  step.argStage.assign(n, kFree);
  SmallVector<unsigned> params;
  for (unsigned i = 0; i < n; ++i)
    if (RoleAttr role = step.argRole(i);
        role && role.getKind() == RoleKind::Parameter)
      params.push_back(i);
  if (boundaries.size() + 1 != step.stages)
    return step.func.emitError()
           << "is split into " << step.stages << " pipeline stages (axis "
           << step.axis << " of grid " << step.grid << "), which needs "
           << step.stages - 1 << " boundaries, but " << boundaries.size()
           << " are given";
  auto inModule = [](StringRef param, StringRef module) {
    return param == module ||
           (param.starts_with(module) && param[module.size()] == '.');
  };
  unsigned stage = 0;
  size_t at = 0;
  for (auto [b, boundary] : llvm::enumerate(boundaries)) {
    StringRef module = boundary;
    size_t first = at;
    while (first < params.size() &&
           !inModule(step.argRole(params[first]).getName(), module))
      ++first;
    if (first == params.size()) {
      bool anywhere = llvm::any_of(params, [&](unsigned i) {
        return inModule(step.argRole(i).getName(), module);
      });
      InFlightDiagnostic diag = step.func.emitError();
      if (anywhere)
        diag << "has stage boundary '" << module << "' (#" << b
             << ") before the boundary ahead of it in parameter order; "
                "boundaries follow the parameters' order";
      else {
        diag << "has stage boundary '" << module << "' (#" << b
             << "), which names no module of the step's parameters (their "
                "top-level modules: ";
        llvm::SetVector<StringRef> tops;
        for (unsigned i : params)
          tops.insert(step.argRole(i).getName().split('.').first);
        llvm::interleaveComma(tops, diag);
        diag << ")";
      }
      return diag;
    }
    if (first == at)
      return step.func.emitError()
             << "has stage boundary '" << module << "' (#" << b
             << ") at its stage's first parameter '"
             << step.argRole(params[first]).getName() << "': stage " << stage
             << " would hold no parameters";
    for (; at < first; ++at)
      step.argStage[params[at]] = int(stage);
    ++stage;
  }
  // The last boundary found a parameter after the one before it, so the
  // last stage has one: not reachable from input.
  if (at == params.size())
    return step.func.emitError() << "has no parameters for its last stage";
  for (; at < params.size(); ++at)
    step.argStage[params[at]] = int(stage);

  // Optimizer state: "P.x" belongs to parameter P.
  llvm::StringMap<int> byName;
  for (unsigned i : params)
    byName[step.argRole(i).getName()] = step.argStage[i];
  for (unsigned i = 0; i < n; ++i) {
    RoleAttr role = step.argRole(i);
    if (!role || role.getKind() != RoleKind::OptimizerState)
      continue;
    StringRef name = role.getName();
    for (size_t dot = name.rfind('.'); dot != StringRef::npos;
         dot = name.substr(0, dot).rfind('.'))
      if (auto it = byName.find(name.substr(0, dot)); it != byName.end()) {
        step.argStage[i] = it->second;
        break;
      }
  }
  return success();
}

/// Boundaries that balance the stages' forward and backward time on
/// `cluster`: each parameter is first a stage of its own, so that every op
/// lands with the parameter it follows; the parameters are then cut into
/// `stages` runs whose largest time is smallest (the linear partition).
static FailureOr<SmallVector<std::string>>
balancedBoundaries(Step &step, const cost::Cluster &cluster) {
  SmallVector<unsigned> params;
  for (unsigned i = 0; i < step.func.getNumArguments(); ++i)
    if (RoleAttr role = step.argRole(i);
        role && role.getKind() == RoleKind::Parameter)
      params.push_back(i);
  unsigned n = params.size(), p = step.stages;
  if (n < p)
    return step.func.emitError() << "has " << n << " parameters, too few for "
                                 << p << " pipeline stages";
  Step each = step;
  each.stages = n;
  each.argStage.assign(step.func.getNumArguments(), kFree);
  for (auto [j, i] : llvm::enumerate(params))
    each.argStage[i] = int(j);
  if (failed(assignOps(each)))
    return failure();
  SmallVector<double> cost(n, 0);
  for (Operation &op : step.body->without_terminator()) {
    int s = each.stage[&op];
    if (s != kFree && each.phase[&op] != Phase::Optimizer)
      cost[s] += getOpSeconds(&op, cluster);
  }
  // best[k][j]: the least largest run when params [0, j) form k runs.
  SmallVector<double> prefix(n + 1, 0);
  for (unsigned j = 0; j < n; ++j)
    prefix[j + 1] = prefix[j] + cost[j];
  std::vector<std::vector<double>> best(p + 1,
                                        std::vector<double>(n + 1, INFINITY));
  std::vector<std::vector<unsigned>> cut(p + 1,
                                         std::vector<unsigned>(n + 1, 0));
  best[0][0] = 0;
  for (unsigned k = 1; k <= p; ++k)
    for (unsigned j = k; j <= n; ++j)
      for (unsigned i = k - 1; i < j; ++i) {
        double worst = std::max(best[k - 1][i], prefix[j] - prefix[i]);
        if (worst < best[k][j]) {
          best[k][j] = worst;
          cut[k][j] = i;
        }
      }
  SmallVector<std::string> boundaries(p - 1);
  for (unsigned k = p, j = n; k > 1; --k) {
    j = cut[k][j];
    boundaries[k - 2] = step.argRole(params[j]).getName().str();
  }
  return boundaries;
}

/// The gradient parts that go to their parameter's stage once, summed
/// (Step::deferred): a backward value used only by a sum whose only use is
/// a gradient all-reduce on another stage.
static void findDeferredParts(Step &step) {
  for (Operation *sink : step.sinks)
    for (Value total : sink->getOperands()) {
      // The whole gradient computed on another stage: the sink's operand.
      Operation *def = total.getDefiningOp();
      if (def && total.hasOneUse() &&
          step.phase.lookup(def) == Phase::Backward &&
          step.stage.lookup(def) != kFree &&
          step.stage.lookup(def) != step.stage[sink]) {
        step.deferred[total] = nullptr;
        continue;
      }
      auto sum = total.getDefiningOp<AddOp>();
      if (!sum || !total.hasOneUse() ||
          step.stage.lookup(sum) != step.stage[sink])
        continue;
      SmallVector<Value> far;
      for (Value part : sum->getOperands()) {
        Operation *def = part.getDefiningOp();
        if (def && part.hasOneUse() &&
            step.phase.lookup(def) == Phase::Backward &&
            step.stage.lookup(def) != kFree &&
            step.stage.lookup(def) != step.stage[sink])
          far.push_back(part);
      }
      if (far.size() == 1)
        step.deferred[far.front()] = sum;
    }
}

/// What braid-pipeline cannot split, named.
static LogicalResult checkAssignment(Step &step) {
  for (unsigned i = 0; i < step.func.getNumArguments(); ++i) {
    int own = step.argStage[i];
    if (own == kFree)
      continue;
    for (Operation *user : step.func.getArgument(i).getUsers()) {
      int s = step.stage.lookup(user);
      if (user == step.terminator || s == own ||
          llvm::is_contained(step.sharedWith[i], s))
        continue;
      // The forward's readers make the copies and the backward runs on
      // one: not reachable from input.
      return user->emitOpError()
             << "reads '" << step.argRole(i).getName() << "' of stage " << own
             << " on stage " << s << ", which has no copy of it";
    }
    if (!step.sharedWith[i].empty() &&
        step.argRole(i).getKind() != RoleKind::Parameter)
      return step.func.emitError()
             << "has '" << step.argRole(i).getName()
             << "' read by the forward of stages " << own << " and "
             << step.sharedWith[i].front()
             << "; only a parameter may be shared between stages";
  }
  for (Operation &op : step.body->without_terminator()) {
    if (step.phase[&op] != Phase::Optimizer)
      continue;
    int s = step.stage[&op];
    bool sink = llvm::is_contained(step.sinks, &op);
    for (Value v : op.getOperands()) {
      Operation *def = v.getDefiningOp();
      if (step.isFree(v) || sink)
        continue;
      if (def && step.phase[def] != Phase::Optimizer)
        return op.emitOpError()
               << "reads a value of the forward or backward, which a "
                  "pipelined step computes once per micro-batch; only the "
                  "gradient all-reduces may";
      if (step.stageOf(v) != s)
        return op.emitOpError()
               << "on stage " << s << " reads a value of the optimizer of "
               << "stage " << step.stageOf(v)
               << " (gradient clipping by the global norm needs the norm "
                  "across stages, which braid-pipeline does not build yet)";
    }
  }
  for (unsigned s = 0; s < step.stages; ++s)
    if (!llvm::is_contained(step.argStage, int(s)))
      // Each boundary starts its stage at a parameter (assignArguments):
      // not reachable from input.
      return step.func.emitError()
             << "leaves stage " << s << " without parameters";
  return success();
}

//===----------------------------------------------------------------------===//
// Building the stage programs
//===----------------------------------------------------------------------===//

namespace {

/// A value one stage computes and another needs: sent after the sender's
/// action of `sendKind`, received before the receiver's of `recvKind`.
struct Transfer {
  Value value;
  int from, to;
  ActionKind sendKind, recvKind;
};

class StageBuilder {
public:
  StageBuilder(Step &step, unsigned index, unsigned microBatches,
               ArrayRef<Transfer> transfers)
      : step(step), index(index), microBatches(microBatches),
        transfers(transfers), builder(step.func.getContext()),
        perBatch(microBatches) {}

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
  /// another stage that has a copy of it (this one), or -1.
  int sharedCopyOf(unsigned i) {
    int arg = sharedParameterOf(i);
    return arg >= 0 && llvm::is_contained(step.sharedWith[arg], int(index))
               ? arg
               : -1;
  }
  void emitAction(const PipelineAction &action);
  Value accumulate(Value sum, Value part) {
    return sum ? AddOp::create(builder, part.getLoc(), sum, part).getResult()
               : part;
  }

  Step &step;
  unsigned index, microBatches;
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
  bool failed = false;
};

} // namespace

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

void StageBuilder::emitAction(const PipelineAction &action) {
  int k = int(action.microBatch);
  auto axes = builder.getDenseI16ArrayAttr({int16_t(step.axis)});
  for (const Transfer &t : transfers)
    if (t.to == int(index) && t.recvKind == action.kind) {
      auto recv =
          RecvOp::create(builder, t.value.getLoc(), t.value.getType(),
                         step.grid, axes, builder.getI64IntegerAttr(t.from));
      perBatch[k].map(t.value, recv.getResult());
    }
  Phase phase =
      action.kind == ActionKind::Forward ? Phase::Forward : Phase::Backward;
  for (Operation &op : step.body->without_terminator()) {
    if (step.phase[&op] != phase || step.stage[&op] != int(index))
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
  }
  // The sums first, then the sends, so that the sends and the next action's
  // receives form one run (braid.send_recv).
  if (phase == Phase::Forward &&
      step.stageOf(step.terminator->getOperand(step.lossResult)) == int(index))
    loss =
        accumulate(loss, get(k, step.terminator->getOperand(step.lossResult)));
  if (phase == Phase::Backward)
    for (auto &[part, sum] : step.deferred)
      if (step.stageOf(part) == int(index))
        partSums[part] = accumulate(partSums.lookup(part), get(k, part));
  if (phase == Phase::Backward)
    for (Operation *sink : step.sinks) {
      if (step.stage[sink] != int(index))
        continue;
      SmallVector<Value> &sums = gradients[sink];
      sums.resize(sink->getNumOperands());
      for (auto [i, operand] : llvm::enumerate(sink->getOperands()))
        if (!step.deferred.count(operand))
          sums[i] = accumulate(sums[i], get(k, operand));
    }
  for (const Transfer &t : transfers)
    if (t.from == int(index) && t.sendKind == action.kind) {
      Value v = get(k, t.value);
      if (failed)
        return;
      SendOp::create(builder, t.value.getLoc(), v, step.grid, axes,
                     builder.getI64IntegerAttr(t.to));
    }
}

FailureOr<func::FuncOp> StageBuilder::build(ArrayRef<PipelineAction> actions) {
  func::FuncOp func = step.func;
  // The arguments: the stage's own, and the free ones it reads (through
  // free ops, which it computes again).
  unsigned n = func.getNumArguments();
  llvm::SmallBitVector used(n);
  for (Operation &op : step.body->without_terminator())
    if (step.stage[&op] == int(index))
      for (Value v : op.getOperands())
        argumentsRead(v, used);
  for (unsigned i = 0; i < n; ++i)
    if (step.argStage[i] == int(index))
      used.set(i);
  // The results: the stage's own, the loss where it is computed, free ones
  // on every stage that reads all their arguments (a shared step count),
  // and those that read none on stage 0.
  // A shared parameter's new value too, on every stage that has a copy.
  SmallVector<unsigned> results;
  for (unsigned i = 0; i < step.terminator->getNumOperands(); ++i) {
    Value v = step.terminator->getOperand(i);
    int s = step.stageOf(v);
    if (s == int(index) || sharedCopyOf(i) >= 0) {
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

  for (const PipelineAction &action : actions) {
    emitAction(action);
    if (failed)
      return failure();
  }
  // Gradient parts for another stage's parameter: sent once, summed; the
  // parameter's stage adds them to its own sums (in step order on both
  // sides, after every transfer of the micro-batches).
  auto axes = builder.getDenseI16ArrayAttr({int16_t(step.axis)});
  for (auto &[part, sum] : step.deferred) {
    Value total = sum ? sum->getResult(0) : part;
    Operation *sink = *total.getUsers().begin();
    int from = step.stageOf(part), to = step.stage[sink];
    if (from == int(index)) {
      SendOp::create(builder, part.getLoc(), partSums[part], step.grid, axes,
                     builder.getI64IntegerAttr(to));
    } else if (to == int(index)) {
      Value far =
          RecvOp::create(builder, part.getLoc(), part.getType(), step.grid,
                         axes, builder.getI64IntegerAttr(from))
              .getResult();
      SmallVector<Value> &sums = gradients[sink];
      sums.resize(sink->getNumOperands());
      for (auto [i, operand] : llvm::enumerate(sink->getOperands()))
        if (operand == total)
          sums[i] = accumulate(sums[i], far);
    }
  }
  // The micro-batches' mean.
  double share = 1.0 / double(microBatches);
  auto mean = [&](Value sum) {
    return microBatches == 1 ? sum
                             : ScaleOp::create(builder, sum.getLoc(), sum,
                                               builder.getF64FloatAttr(share))
                                   .getResult();
  };
  if (loss)
    shared.map(step.terminator->getOperand(step.lossResult), mean(loss));
  for (Operation &op : step.body->without_terminator()) {
    if (step.phase[&op] != Phase::Optimizer || step.stage[&op] != int(index))
      continue;
    if (auto it = gradients.find(&op); it != gradients.end())
      for (auto [operand, sum] : llvm::zip(op.getOperands(), it->second))
        shared.map(operand, mean(sum));
    clone(-1, &op);
    if (failed)
      return failure();
  }
  // Shared parameters: their stage sends each update to the stages with a
  // copy, which take it as theirs (after every transfer of the actions on
  // both sides, so the order of each pair's transfers stays one).
  DenseMap<unsigned, Value> copies;
  for (unsigned i = 0; i < step.terminator->getNumOperands(); ++i) {
    int arg = sharedParameterOf(i);
    if (arg < 0)
      continue;
    Value v = step.terminator->getOperand(i);
    int owner = step.argStage[arg];
    if (owner == int(index)) {
      Value update = get(-1, v);
      if (failed)
        return failure();
      for (int t : step.sharedWith[arg])
        SendOp::create(builder, v.getLoc(), update, step.grid, axes,
                       builder.getI64IntegerAttr(t));
    } else if (llvm::is_contained(step.sharedWith[arg], int(index))) {
      copies[i] = RecvOp::create(builder, v.getLoc(), v.getType(), step.grid,
                                 axes, builder.getI64IntegerAttr(owner))
                      .getResult();
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

/// The values that cross stages, in the order both sides issue them: by
/// the position of the op computing them, then the receiving stage.
static FailureOr<SmallVector<Transfer>> findTransfers(Step &step) {
  SmallVector<Transfer> transfers;
  std::map<std::pair<int, int>, std::pair<ActionKind, ActionKind>> kinds;
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
        if (user != step.terminator && step.stage.lookup(user) != from)
          to.insert(step.stage.lookup(user));
      for (int t : to) {
        ActionKind send = phase == Phase::Forward ? ActionKind::Forward
                                                  : ActionKind::Backward;
        ActionKind recv = phase == Phase::Forward && t > from
                              ? ActionKind::Forward
                              : ActionKind::Backward;
        auto [it, added] = kinds.try_emplace({from, t}, send, recv);
        if (!added && it->second != std::make_pair(send, recv))
          return op.emitOpError()
                 << "sends a value of the "
                 << (phase == Phase::Forward ? "forward" : "backward")
                 << " from stage " << from << " to stage " << t
                 << ", which also receives values of the other pass from it; "
                    "braid-pipeline orders one kind of transfer per pair of "
                    "stages";
        transfers.push_back({v, from, t, send, recv});
      }
    }
  }
  return transfers;
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
  step.stages = unsigned(size);
  step.axis = axis;
  return success();
}

void PipelinePass::runOnOperation() {
  ModuleOp module = getOperation();
  // The module's request (braid.models --pp, braid.export) fills the
  // options left at their defaults.
  if (auto request = module->getAttrOfType<DictionaryAttr>(
          BraidDialect::kPipelineAttrName)) {
    if (auto a = request.getAs<IntegerAttr>("axis"); a && axis < 0)
      axis = a.getInt();
    if (auto m = request.getAs<IntegerAttr>("micro_batches");
        m && microBatches == 1)
      microBatches = m.getInt();
    if (auto name = request.getAs<StringAttr>("schedule");
        name && schedule == "1f1b")
      schedule = name.str();
    if (auto names = request.getAs<ArrayAttr>("boundaries");
        names && boundaries.empty())
      for (Attribute name : names)
        boundaries.push_back(cast<StringAttr>(name).str());
  }
  std::optional<PipelineScheduleKind> kind = parsePipelineSchedule(schedule);
  if (!kind) {
    mlir::emitError(module.getLoc())
        << "braid-pipeline: unknown schedule '" << schedule
        << "' (known: " << pipelineScheduleNames() << ")";
    return signalPassFailure();
  }
  if (microBatches < 1) {
    mlir::emitError(module.getLoc())
        << "braid-pipeline: micro-batches must be at least 1, but is "
        << int64_t(microBatches);
    return signalPassFailure();
  }
  Step step;
  if (failed(findStep(module, step)))
    return signalPassFailure();
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
  }
  classify(step);
  SmallVector<std::string> cuts(boundaries.begin(), boundaries.end());
  if (cuts.empty() && step.stages > 1) {
    FailureOr<cost::Cluster> cluster = loadClusterFor(module, "");
    if (failed(cluster))
      return signalPassFailure();
    FailureOr<SmallVector<std::string>> balanced =
        balancedBoundaries(step, *cluster);
    if (failed(balanced))
      return signalPassFailure();
    cuts = std::move(*balanced);
  }
  if (failed(assignArguments(step, cuts)) || failed(assignOps(step)) ||
      failed(checkAssignment(step)))
    return signalPassFailure();
  findDeferredParts(step);
  FailureOr<SmallVector<Transfer>> transfers = findTransfers(step);
  if (failed(transfers))
    return signalPassFailure();

  unsigned m = unsigned(microBatches);
  for (unsigned s = 0; s < step.stages; ++s) {
    StageBuilder builder(step, s, m, *transfers);
    FailureOr<func::FuncOp> func =
        builder.build(pipelineActions(*kind, step.stages, s, m));
    if (failed(func))
      return signalPassFailure();
    numPaired += pairTransfers(*func);
  }
  numTransfers += 2 * m * transfers->size();
  step.func.erase();
  module->removeAttr(BraidDialect::kPipelineAttrName);
  if (failed(verifyStagePrograms(module))) {
    // A safety net: transfers of one kind per pair of stages, issued in one
    // order on both sides in a schedule's order, pass these checks:
    // not reachable from input that we know of.
    module.emitError() << "braid-pipeline: the stage programs of schedule '"
                       << schedule << "' do not pass the stage checks above";
    return signalPassFailure();
  }
}
