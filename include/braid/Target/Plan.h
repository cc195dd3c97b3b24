//===- Plan.h - translation of scheduled braid IR to a plan -----*- C++ -*-===//

#ifndef BRAID_TARGET_PLAN_H
#define BRAID_TARGET_PLAN_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace braid {

/// Writes the plan file (common/schema/plan.fbs behind a checksummed header)
/// of the one step function of `module`. The function must have a memory
/// plan (braid-plan-memory); emits an error on the offending op otherwise.
mlir::LogicalResult translateToPlan(mlir::ModuleOp module,
                                    llvm::raw_ostream &os);

/// Registers `--braid-to-plan` with mlir-translate style drivers.
void registerToPlanTranslation();

} // namespace braid

#endif // BRAID_TARGET_PLAN_H
