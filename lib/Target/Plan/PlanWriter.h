//===- PlanWriter.h - one program's plan table -------------------*- C++
//-*-===//
//
// Internal to braid-to-plan: PlanWriter builds the plan table of one
// function (the step, a stage program or the evaluation program);
// TranslateToPlan.cpp puts the tables of a module together into a file.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_TARGET_PLAN_PLANWRITER_H
#define BRAID_LIB_TARGET_PLAN_PLANWRITER_H

#include "braid/Dialect/Braid/Analysis/CollectiveGroup.h"
#include "braid/Dialect/Braid/BraidOps.h"

#include "braid-common/OpTable.h"
#include "plan_generated.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"

#include <string>
#include <vector>

namespace braid {

/// What wrote a plan (the plan's `producer`).
inline constexpr const char *kPlanProducer = "braid 0.1 (MLIR 22)";

/// The pipeline a stage program belongs to (docs/Pipeline.md).
struct PipelineLayout {
  int32_t axis = -1;
  std::vector<int64_t> grid;
};

/// Builds the plan table of one function: the whole step's program, or,
/// with a pipeline, that of stage `stage`.
class PlanWriter {
public:
  PlanWriter(mlir::ModuleOp module, mlir::func::FuncOp func,
             flatbuffers::FlatBufferBuilder &builder, int64_t worldSize,
             const PipelineLayout *pipeline = nullptr, int32_t stage = -1)
      : module(module), func(func), builder(builder), worldSize(worldSize),
        pipeline(pipeline), stage(stage) {}

  mlir::FailureOr<flatbuffers::Offset<plan::Plan>> build();

  /// The evaluation program's plan table, written into this one's.
  flatbuffers::Offset<plan::Plan> evaluation = 0;

private:
  mlir::LogicalResult addBuffer(mlir::Value value, int64_t offset,
                                std::string name);
  mlir::FailureOr<int> getGroup(CollectiveOpInterface op);
  mlir::FailureOr<
      flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<plan::Attr>>>>
  encodeAttrs(mlir::Operation *op, const ops::OpInfo &info);
  mlir::FailureOr<flatbuffers::Offset<flatbuffers::Vector<uint32_t>>>
  getBuffers(mlir::Operation *op, mlir::ValueRange values);

  mlir::ModuleOp module;
  mlir::func::FuncOp func;
  flatbuffers::FlatBufferBuilder &builder;
  int64_t worldSize;
  const PipelineLayout *pipeline;
  int32_t stage;
  std::vector<flatbuffers::Offset<plan::Buffer>> buffers;
  llvm::DenseMap<mlir::Value, uint32_t> bufferIds;
  std::vector<flatbuffers::Offset<plan::Group>> groups;
  llvm::DenseMap<CollectiveGroup, int> groupIds;
};

/// The cluster the step was compiled for, with its description, so that
/// the simulator times the plan on it (null offsets without one).
mlir::LogicalResult getCluster(mlir::ModuleOp module,
                               flatbuffers::FlatBufferBuilder &builder,
                               flatbuffers::Offset<flatbuffers::String> &name,
                               flatbuffers::Offset<flatbuffers::String> &json);

} // namespace braid

#endif // BRAID_LIB_TARGET_PLAN_PLANWRITER_H
