//===- TranslateToPlan.cpp - scheduled braid IR to a plan file --*- C++ -*-===//
//
// Writes the FlatBuffer of common/schema/plan.fbs for a scheduled module:
// the step's plan table (PlanWriter.cpp) with its evaluation program's, or
// a pipelined module's root with one table per stage program and the
// program of each rank; the world size and the cluster.
//
//===----------------------------------------------------------------------===//

#include "braid/Target/Plan.h"

#include "PlanWriter.h"

#include "braid/Dialect/Braid/BraidDialect.h"
#include "braid/Dialect/Braid/BraidOps.h"

#include "braid-common/PlanFormat.h"
#include "plan_generated.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Tools/mlir-translate/Translation.h"

using namespace mlir;
using namespace braid;
namespace fb = flatbuffers;

namespace {

/// The number of ranks every grid of `module` spans (1 without a grid).
FailureOr<int64_t> getWorldSize(ModuleOp module) {
  int64_t worldSize = 0;
  for (auto grid : module.getOps<shard::GridOp>()) {
    int64_t size = 1;
    for (int64_t d : grid.getShape())
      size *= d;
    if (worldSize && size != worldSize)
      return grid.emitError()
             << "grid @" << grid.getSymName() << " spans " << size
             << " ranks, but another grid spans " << worldSize
             << "; a plan runs on one set of ranks";
    worldSize = size;
  }
  return worldSize ? worldSize : 1;
}
/// Writes the header and the finished FlatBuffer of `builder`.
void writeFile(fb::FlatBufferBuilder &builder, llvm::raw_ostream &os) {
  plan::FileHeader header =
      plan::makeHeader(builder.GetBufferPointer(), builder.GetSize());
  os.write(reinterpret_cast<const char *>(&header), sizeof(header));
  os.write(reinterpret_cast<const char *>(builder.GetBufferPointer()),
           builder.GetSize());
}
/// The plan of a pipelined module: a root with one plan per stage program
/// and the program of each rank. The stage functions are checked as
/// braid-verify-schedule checks them (StagePrograms.cpp); what the plan
/// relies on is checked again here.
LogicalResult writePipelinePlan(ModuleOp module, ArrayRef<func::FuncOp> funcs,
                                int64_t worldSize, llvm::raw_ostream &os) {
  auto stageOf = [](func::FuncOp f) {
    return f->getAttrOfType<StageAttr>(BraidDialect::kStageAttrName);
  };
  func::FuncOp front = funcs.front();
  StageAttr first = stageOf(front);
  PipelineLayout pipeline;
  pipeline.axis = int32_t(first.getAxis());
  auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(
      module.getOperation(), first.getGrid());
  if (!grid || first.getAxis() >= grid.getRank() ||
      ShapedType::isDynamic(grid.getShape()[first.getAxis()]))
    return front.emitError()
           << "is a stage of an axis that no grid of static size has; run "
              "braid-verify-schedule";
  pipeline.grid.assign(grid.getShape().begin(), grid.getShape().end());
  int64_t numStages = pipeline.grid[size_t(pipeline.axis)];
  SmallVector<func::FuncOp> byIndex(numStages);
  for (func::FuncOp f : funcs) {
    StageAttr attr = stageOf(f);
    if (!attr)
      return f.emitError() << "is not a stage program, but the module is "
                              "pipelined: a plan holds one step function or "
                              "one program per stage";
    if (attr.getGrid() != first.getGrid() ||
        attr.getAxis() != first.getAxis() || attr.getIndex() >= numStages ||
        byIndex[attr.getIndex()])
      return f.emitError() << "is not one stage of one pipeline axis with "
                              "the others; run braid-verify-schedule";
    byIndex[attr.getIndex()] = f;
  }
  for (auto [index, f] : llvm::enumerate(byIndex))
    if (!f)
      return module.emitError()
             << "the pipeline has " << numStages << " stages, but no "
             << "function is stage " << index;

  size_t ops = 0;
  for (func::FuncOp f : funcs)
    ops += f.getBody().front().getOperations().size();
  fb::FlatBufferBuilder builder(std::max<size_t>(1 << 16, 400 * ops));
  std::vector<fb::Offset<plan::Plan>> stages;
  for (auto [index, f] : llvm::enumerate(byIndex)) {
    FailureOr<fb::Offset<plan::Plan>> stagePlan =
        PlanWriter(module, f, builder, worldSize, &pipeline, int32_t(index))
            .build();
    if (failed(stagePlan))
      return failure();
    stages.push_back(*stagePlan);
  }
  // A rank runs the program of its coordinate on the pipeline axis.
  std::vector<uint32_t> programOfRank(static_cast<size_t>(worldSize), 0);
  int64_t stride = 1;
  for (size_t d = size_t(pipeline.axis) + 1; d < pipeline.grid.size(); ++d)
    stride *= pipeline.grid[d];
  for (int64_t rank = 0; rank < worldSize; ++rank)
    programOfRank[size_t(rank)] = uint32_t((rank / stride) % numStages);
  fb::Offset<fb::String> clusterName, clusterJson;
  if (failed(getCluster(module, builder, clusterName, clusterJson)))
    return failure();
  auto root = plan::CreatePlan(
      builder, builder.CreateSharedString(kPlanProducer),
      builder.CreateString("pipeline of @" + byIndex.front().getName().str()),
      worldSize, /*arena_bytes=*/0, /*buffers=*/0, /*groups=*/0,
      /*streams=*/0, 0, 0, /*arguments=*/0, /*results=*/0, clusterName,
      clusterJson, /*tensor_parallel_axis=*/-1, /*tensor_parallel_grid=*/0,
      builder.CreateVector(stages), builder.CreateVector(programOfRank),
      pipeline.axis, builder.CreateVector(pipeline.grid), /*stage=*/-1);
  builder.Finish(root, plan::PlanIdentifier());
  writeFile(builder, os);
  return success();
}

} // namespace

LogicalResult braid::translateToPlan(ModuleOp module, llvm::raw_ostream &os) {
  SmallVector<func::FuncOp> funcs;
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal())
      funcs.push_back(func);
  for (func::FuncOp func : funcs)
    if (!llvm::hasSingleElement(func.getBody()))
      // The verifier rules this out: not reachable from input.
      return func.emitError() << "a plan needs a function body of one block";
  FailureOr<int64_t> worldSize = getWorldSize(module);
  if (failed(worldSize))
    return failure();
  // An evaluation program (braid.evaluates) goes into its step's plan.
  func::FuncOp eval;
  size_t ops = 0;
  for (func::FuncOp f : funcs) {
    ops += f.getBody().front().getOperations().size();
    if (!f->hasAttr(BraidDialect::kEvaluatesAttrName))
      continue;
    if (eval)
      return f.emitError() << "is a second evaluation program; a plan holds "
                              "one (@"
                           << eval.getName() << ")";
    eval = f;
  }
  if (eval)
    llvm::erase(funcs, eval);
  bool pipelined = llvm::any_of(funcs, [](func::FuncOp f) {
    return f->hasAttr(BraidDialect::kStageAttrName);
  });
  if (pipelined && eval)
    return eval.emitError() << "evaluates a pipelined step, which braid has "
                               "no evaluation plan for yet";
  if (pipelined)
    return writePipelinePlan(module, funcs, *worldSize, os);
  if (funcs.size() != 1)
    return module.emitError()
           << "a plan holds one step function, but the module has "
           << funcs.size() << " (a pipeline's stage programs carry "
           << "'braid.stage'; an evaluation program 'braid.evaluates')";
  func::FuncOp func = funcs.front();
  fb::FlatBufferBuilder builder(std::max<size_t>(
      // About 330 bytes a op: sized once, the buffer never regrows.
      1 << 16, 400 * ops));
  PlanWriter writer(module, func, builder, *worldSize);
  if (eval) {
    auto evaluated = eval->getAttrOfType<FlatSymbolRefAttr>(
        BraidDialect::kEvaluatesAttrName);
    auto arena = [](func::FuncOp f) {
      return f->getAttrOfType<IntegerAttr>(BraidDialect::kArenaBytesAttrName);
    };
    if (evaluated.getValue() != func.getName())
      return eval.emitError() << "evaluates " << evaluated << ", but the step "
                              << "is @" << func.getName();
    if (!arena(eval) || arena(eval) != arena(func))
      return eval.emitError()
             << "does not share @" << func.getName()
             << "'s arena; run braid-share-arena after braid-plan-memory";
    FailureOr<fb::Offset<plan::Plan>> evalPlan =
        PlanWriter(module, eval, builder, *worldSize).build();
    if (failed(evalPlan))
      return failure();
    writer.evaluation = *evalPlan;
  }
  FailureOr<fb::Offset<plan::Plan>> root = writer.build();
  if (failed(root))
    return failure();
  builder.Finish(*root, plan::PlanIdentifier());
  writeFile(builder, os);
  return success();
}

void braid::registerToPlanTranslation() {
  TranslateFromMLIRRegistration registration(
      "braid-to-plan", "write the runtime plan of a scheduled braid step",
      [](Operation *op, llvm::raw_ostream &os) -> LogicalResult {
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          // The verifier rules this out: not reachable from input.
          return op->emitError() << "expected a builtin.module";
        return translateToPlan(module, os);
      },
      [](DialectRegistry &registry) {
        registry.insert<BraidDialect, func::FuncDialect, shard::ShardDialect>();
      });
}
