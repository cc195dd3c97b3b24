//===- StageAssignment.cpp - where each op of a pipelined step runs -------===//

#include "StageAssignment.h"

#include "../CostUtils.h"

#include "braid/Dialect/Braid/BraidOps.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallBitVector.h"

#include <cmath>
#include <set>
#include <vector>

using namespace mlir;
using namespace braid;
using namespace braid::pipeline;

//===----------------------------------------------------------------------===//
// Stages of the parameters and the ops
//===----------------------------------------------------------------------===//

/// Phases: the optimizer is the gradient all-reduces and what depends on
/// them; the forward what the loss depends on; the backward what the
/// gradients depend on besides. Anything else (a learning rate computed
/// from hyperparameters) counts with the optimizer.
void pipeline::classify(Step &step) {
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
LogicalResult pipeline::assignOps(Step &step) {
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
  // The gradient all-reduces, on their parameters' stage (the backward
  // below follows them; the rest of the optimizer comes last).
  DenseMap<StringRef, int> stageOfParam;
  for (unsigned i = 0; i < step.func.getNumArguments(); ++i)
    if (RoleAttr role = step.argRole(i);
        role && role.getKind() == RoleKind::Parameter)
      stageOfParam[role.getName()] = step.argStage[i];
  DenseSet<Operation *> sinks(step.sinks.begin(), step.sinks.end());
  for (Operation *op : step.sinks) {
    auto names = *cast<GradientCollectiveOpInterface>(op).getGradOf();
    int s = kFree;
    for (Attribute name : names) {
      auto it = stageOfParam.find(cast<StringAttr>(name).getValue());
      if (it == stageOfParam.end())
        // grad_of's verifier checks the names: not reachable from input.
        return op->emitOpError() << "carries the gradient of " << name
                                 << ", which is not a parameter of the step";
      if (s != kFree && s != it->second)
        return op->emitOpError()
               << "reduces gradients of parameters of stages " << s << " and "
               << it->second << "; braid-pipeline needs one all-reduce per "
               << "stage's gradients (bucketing comes after it)";
      s = it->second;
    }
    step.stage[op] = s;
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
  // One that reads the batch (a first layer's weight gradient, dY^T x)
  // stays, as one reading any forward value does; so does a view (a
  // reshape) of a gradient that its own stage reads too: the gradient is
  // sent down anyway, and the view made there moves nothing (up, both would
  // be sent: the same bytes twice).
  auto sentAnyway = [&](Operation *op, int s) {
    if (!op->hasTrait<View>())
      return false;
    return llvm::any_of(op->getOperand(0).getUsers(), [&](Operation *user) {
      return user != op && step.stage.lookup(user) == s;
    });
  };
  for (Operation *op : backward) {
    int lowest = int(p), &s = step.stage[op];
    bool gradientsOnly = s != kFree && !sentAnyway(op, s);
    for (Value v : op->getOperands()) {
      gradientsOnly &= !isForward(v);
      if (!step.isFree(v))
        lowest = std::min(lowest, step.stageOf(v));
    }
    if (gradientsOnly && lowest != int(p))
      s = std::max(s, lowest);
  }
  // The rest of the optimizer, once every value it may read has its stage
  // (a constant shared with the backward, as CSE leaves the step count's
  // 1.0 and the loss gradient's): an op reading a parameter or its state
  // (an update) on theirs, the rest on the latest among its operands'.
  for (Operation &op : step.body->without_terminator()) {
    if (step.phase[&op] != Phase::Optimizer || sinks.count(&op))
      continue;
    int own = kFree;
    for (Value v : op.getOperands())
      if (isa<BlockArgument>(v))
        own = std::max(own, step.stageOf(v));
    step.stage[&op] = own != kFree ? own : latest(&op);
  }
  return success();
}

/// The stage of each parameter from the boundary modules; optimizer state
/// follows its parameter, everything else is free.
LogicalResult pipeline::assignArguments(Step &step,
                                        ArrayRef<std::string> boundaries) {
  unsigned n = step.func.getNumArguments();
  step.argStage.assign(n, kFree);
  SmallVector<unsigned> params;
  for (unsigned i = 0; i < n; ++i)
    if (RoleAttr role = step.argRole(i);
        role && role.getKind() == RoleKind::Parameter)
      params.push_back(i);
  if (boundaries.size() + 1 != step.stages) {
    InFlightDiagnostic diag = step.func.emitError()
                              << "is split into " << step.stages
                              << " pipeline stages (";
    if (step.stages != step.ranks)
      diag << step.stages / step.ranks << " virtual stages on each of the "
           << step.ranks << " ranks of ";
    return diag << "axis " << step.axis << " of grid " << step.grid
                << "), which needs " << step.stages - 1 << " boundaries, but "
                << boundaries.size() << " are given";
  }
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

/// Calls `fn` on each forward or backward value that an op of another
/// stage uses (but a gradient part sent once, Step::deferred, which
/// carries its parameter's sharding), with the two stages.
static void
forEachCrossing(Step &step,
                function_ref<void(Value, Operation *, int, int)> fn) {
  for (Operation &op : step.body->without_terminator()) {
    int from = step.stage.lookup(&op);
    if (step.phase.lookup(&op) == Phase::Optimizer || from < 0)
      continue;
    for (Value v : op.getResults()) {
      if (step.deferred.count(v))
        continue;
      // The users in program order (a use list is not).
      SmallVector<Operation *> users(v.getUsers().begin(), v.getUsers().end());
      llvm::sort(users, [](Operation *a, Operation *b) {
        return a->isBeforeInBlock(b);
      });
      for (Operation *user : users) {
        int to = step.stage.lookup(user);
        if (user != step.terminator && to >= 0 && to != from)
          fn(v, user, from, to);
      }
    }
  }
}

static bool isSplit(const Step &step, Value v) {
  if (!step.shardings)
    return false;
  auto it = step.shardings->find(v);
  return it != step.shardings->end() && it->second.isSplit();
}

/// Boundaries that balance the stages' forward and backward time on
/// `cluster`: each parameter is first a stage of its own, so that every op
/// lands with the parameter it follows; the parameters are then cut into
/// `stages` runs whose largest time is smallest (the linear partition).
FailureOr<SmallVector<std::string>>
pipeline::balancedBoundaries(Step &step, const cost::Cluster &cluster,
                             SmallVectorImpl<double> *seconds) {
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
  // Under tensor parallelism, a cut before parameter j is allowed unless
  // a split value crosses it (a transfer has no rule for one: the
  // activations inside a block, between its column- and its row-parallel
  // matmul, or a split weight's product and its bias).
  SmallVector<bool> allowed(n + 1, true);
  if (step.shardings) {
    findDeferredParts(each);
    forEachCrossing(each, [&](Value v, Operation *, int from, int to) {
      if (isSplit(step, v))
        for (int c = std::min(from, to) + 1; c <= std::max(from, to); ++c)
          allowed[size_t(c)] = false;
    });
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
        if (!allowed[i] || best[k - 1][i] == INFINITY)
          continue;
        double worst = std::max(best[k - 1][i], prefix[j] - prefix[i]);
        if (worst < best[k][j]) {
          best[k][j] = worst;
          cut[k][j] = i;
        }
      }
  if (best[p][n] == INFINITY)
    return step.func.emitError()
           << "has no cut into " << p
           << " pipeline stages where the values crossing each boundary "
              "are whole under tensor parallelism (a transfer moves no "
              "split value); name the boundaries with --stage-boundaries "
              "(braid-pipeline's boundaries=)";
  SmallVector<std::string> boundaries(p - 1);
  if (seconds)
    seconds->assign(p, 0);
  for (unsigned k = p, j = n; k > 0; --k) {
    unsigned i = cut[k][j];
    if (seconds)
      (*seconds)[k - 1] = prefix[j] - prefix[i];
    if (k > 1)
      boundaries[k - 2] = step.argRole(params[i]).getName().str();
    j = i;
  }
  return boundaries;
}

LogicalResult pipeline::checkSplitCrossings(Step &step,
                                            ArrayRef<std::string> boundaries) {
  LogicalResult result = success();
  forEachCrossing(step, [&](Value v, Operation *user, int from, int to) {
    // One error, at the first split value found (program order).
    if (failed(result) || !isSplit(step, v))
      return;
    // Stages on one rank exchange nothing (interleaved).
    if (unsigned(from) % step.ranks == unsigned(to) % step.ranks)
      return;
    unsigned b = unsigned(std::min(from, to));
    InFlightDiagnostic diag =
        v.getDefiningOp()->emitError()
        << "is cut by stage boundary '" << boundaries[b] << "' (#" << b
        << "): its result goes from stage " << from << " to stage " << to
        << ", but it is " << step.shardings->lookup(v).str()
        << " under tensor parallelism, and a transfer moves whole values "
           "only; put the boundary where the values are whole (between "
           "transformer blocks, before a norm) with --stage-boundaries";
    diag.attachNote(user->getLoc()) << "used here, on stage " << to;
    result = failure();
  });
  return result;
}

/// The gradient parts that go to their parameter's stage once, summed
/// (Step::deferred): a backward value used only by a sum whose only use is
/// a gradient all-reduce on another stage.
void pipeline::findDeferredParts(Step &step) {
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

void pipeline::splitBackward(Step &step) {
  // Each operand of a gradient all-reduce is one parameter's gradient; an
  // op of W serves one of them, or none.
  constexpr int kNone = -1, kMany = -2;
  DenseMap<OpOperand *, int> gradient;
  for (Operation *sink : step.sinks)
    for (OpOperand &use : sink->getOpOperands())
      gradient[&use] = int(gradient.size());
  auto join = [&](int a, int b) {
    return a == kNone ? b : b == kNone || a == b ? a : kMany;
  };
  DenseMap<Operation *, int> serves;
  // Users first: an op is B if one of its users is.
  for (Operation &op : llvm::reverse(step.body->without_terminator())) {
    int s = step.stage[&op];
    if (step.phase[&op] != Phase::Backward || s == kFree)
      continue;
    int r = kNone;
    bool input = false;
    for (OpOperand &use : op.getUses()) {
      Operation *user = use.getOwner();
      if (auto it = gradient.find(&use); it != gradient.end()) {
        r = join(r, it->second);
        continue;
      }
      if (user == step.terminator || step.phase[user] != Phase::Backward)
        continue;
      // A value of the backward that another stage needs is sent after B
      // (but a gradient part sent once at the end of the step is not).
      if (step.stage[user] != s && !step.deferred.count(use.get()))
        input = true;
      else if (!step.weight.count(user))
        input = true;
      else
        r = join(r, serves[user]);
    }
    if (input || r == kMany)
      continue;
    step.weight.insert(&op);
    serves[&op] = r;
  }
}

void pipeline::markGlobalNorms(Step &step) {
  for (Operation &op : step.body->without_terminator()) {
    if (step.phase[&op] != Phase::Optimizer)
      continue;
    std::set<int> from;
    bool every = !op.getOperands().empty();
    for (Value v : op.getOperands()) {
      int s = step.stageOf(v);
      if (s != kFree)
        from.insert(s);
      every &= s == kEvery || (s == kFree && !isa<BlockArgument>(v));
    }
    // (A sum of squares is the sum of its stages' parts wherever its
    // inputs are, so every one is summed over the stages.)
    if (isa<SumSquaresOp>(op) || (every && from.count(kEvery)))
      step.stage[&op] = kEvery;
  }
}

/// What braid-pipeline cannot split, named.
LogicalResult pipeline::checkAssignment(Step &step) {
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
      if (step.isFree(v) || sink || step.stageOf(v) == kEvery)
        continue;
      if (def && step.phase[def] != Phase::Optimizer)
        return op.emitOpError()
               << "reads a value of the forward or backward, which a "
                  "pipelined step computes once per micro-batch; only the "
                  "gradient all-reduces may";
      if (step.stageOf(v) != s && s != kEvery)
        return op.emitOpError()
               << "on stage " << s << " reads a value of the optimizer of "
               << "stage " << step.stageOf(v)
               << "; across stages braid-pipeline sums braid.sum_squares "
                  "alone (the squared norm of gradient clipping)";
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
