//===- BraidAttributes.h - braid attributes ---------------------*- C++ -*-===//

#ifndef BRAID_DIALECT_BRAID_BRAIDATTRIBUTES_H
#define BRAID_DIALECT_BRAID_BRAIDATTRIBUTES_H

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "braid/Dialect/Braid/BraidEnums.h.inc"

namespace mlir {
class AsmParser;
class AsmPrinter;
} // namespace mlir

namespace braid {
/// A pipeline schedule's name in quotes (`"1f1b"`), as #braid.pipeline
/// spells its schedule; an unknown name is an error listing the known ones.
mlir::FailureOr<PipelineScheduleKind>
parsePipelineScheduleName(mlir::AsmParser &parser);

/// A bracketed list of grid axes, `[0, 2]` (an attribute parameter).
mlir::FailureOr<llvm::SmallVector<int64_t>>
parseAxisList(mlir::AsmParser &parser);
void printAxisList(mlir::AsmPrinter &printer, llvm::ArrayRef<int64_t> axes);

/// The pipeline schedules' names, in ODS order, for messages:
/// "gpipe, 1f1b, zb-h1, interleaved".
std::string pipelineScheduleNames();
} // namespace braid

#define GET_ATTRDEF_CLASSES
#include "braid/Dialect/Braid/BraidAttributes.h.inc"

#endif // BRAID_DIALECT_BRAID_BRAIDATTRIBUTES_H
