//===- StageAssignment.h - where each op of a pipelined step runs -*- C++
//-*-===//
//
// braid-pipeline's first half (Pipeline.cpp builds the stage programs): the
// phase of every op of the step (forward, backward, optimizer) and the stage
// it runs on, from the stages of the parameters; the tied parameters each
// stage keeps a copy of, and the gradient parts sent once per step.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_DIALECT_BRAID_TRANSFORMS_STAGEASSIGNMENT_H
#define BRAID_LIB_DIALECT_BRAID_TRANSFORMS_STAGEASSIGNMENT_H

#include "braid/Dialect/Braid/BraidAttributes.h"
#include "braid/Dialect/Braid/BraidDialect.h"

#include "braid-common/CostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

#include <string>

namespace braid::pipeline {

using namespace mlir;

enum class Phase { Forward, Backward, Optimizer };

/// The stage of a value computed again wherever it is needed.
constexpr int kFree = -1;
/// The stage of an optimizer value every stage computes from all stages'
/// gradients: the squared global norm of gradient clipping (a partial
/// braid.sum_squares per stage, summed over the pipeline axis) and what
/// follows from it alone (the clipping factor).
constexpr int kEvery = -2;

/// The step being split and where each of its ops runs.
struct Step {
  func::FuncOp func;
  Block *body = nullptr;
  Operation *terminator = nullptr;
  FlatSymbolRefAttr grid;
  /// The stages the step is split into: the pipeline axis's ranks times
  /// the virtual stages per rank (1 but under the interleaved schedule);
  /// stage s runs on rank s mod ranks.
  unsigned stages = 0, ranks = 0;
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
  /// The backward ops that make W where the schedule splits the backward
  /// (splitBackward); the others make B.
  DenseSet<Operation *> weight;
  /// Under tensor parallelism, the sharding braid-tensor-parallel will
  /// give each value (inferShardings; null without): a stage boundary
  /// must not cut a split value, which no transfer has a rule for.
  const DenseMap<Value, ShardingAttr> *shardings = nullptr;

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

/// Phases: the optimizer is the gradient all-reduces and what depends on
/// them; the forward what the loss depends on; the backward what the
/// gradients depend on besides.
void classify(Step &step);

/// The stage of each parameter from the boundary modules; optimizer state
/// follows its parameter, everything else is free.
LogicalResult assignArguments(Step &step, ArrayRef<std::string> boundaries);

/// The stage of each op, from the stages of the arguments.
LogicalResult assignOps(Step &step);

/// Boundaries that balance the stages' forward and backward time on
/// `cluster`, cut only where no split value crosses (Step::shardings);
/// each stage's estimated seconds into `seconds` if given.
FailureOr<SmallVector<std::string>>
balancedBoundaries(Step &step, const cost::Cluster &cluster,
                   SmallVectorImpl<double> *seconds = nullptr);

/// Under tensor parallelism, that no value crossing `boundaries` is split:
/// an error naming the boundary, the value and its sharding.
LogicalResult checkSplitCrossings(Step &step, ArrayRef<std::string> boundaries);

/// The gradient parts that go to their parameter's stage once, summed
/// (Step::deferred).
void findDeferredParts(Step &step);

/// Splits the backward into B and W (Step::weight): B is what a stage's
/// sends of the backward need and what more than one parameter's gradient
/// needs (the gradient of the input, passed down the layers), W the rest,
/// each op of which serves one parameter's gradient alone (dW = X^T dY).
void splitBackward(Step &step);

/// Marks kEvery the optimizer's braid.sum_squares, and the optimizer ops
/// that read nothing but them and free values.
void markGlobalNorms(Step &step);

/// What braid-pipeline cannot split, named.
LogicalResult checkAssignment(Step &step);

} // namespace braid::pipeline

#endif // BRAID_LIB_DIALECT_BRAID_TRANSFORMS_STAGEASSIGNMENT_H
