//===- ScheduleReport.h - a scheduled step's structure as JSON --*- C++ -*-===//
//
// What a schedule is, for tools and people: the streams and their op counts,
// the cross-stream events, the synchronous all-reduces left, and every
// gradient bucket in issue order (kind, bytes, parameters, where it starts,
// where it is waited for). braid-compile --schedule-report writes it,
// braid-translate --braid-to-schedule-report too; python3 -m braid.schedule
// prints it. docs/Overlap.md describes the fields.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_TARGET_SCHEDULEREPORT_H
#define BRAID_TARGET_SCHEDULEREPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace braid {

/// Writes the report of the one step function of `module` (scheduled or
/// not) as JSON.
mlir::LogicalResult writeScheduleReport(mlir::ModuleOp module,
                                        llvm::raw_ostream &os);

/// Registers `--braid-to-schedule-report` with mlir-translate style drivers.
void registerToScheduleReportTranslation();

} // namespace braid

#endif // BRAID_TARGET_SCHEDULEREPORT_H
