//===- braid-translate.cpp - braid's translations ---------------*- C++ -*-===//
//
// Translations only, like mlir-translate: `--braid-to-plan` writes the runtime
// plan of a scheduled, memory-planned step, `--braid-to-schedule-report` the
// schedule's streams and buckets as JSON.
//
//===----------------------------------------------------------------------===//

#include "braid/Target/Plan.h"
#include "braid/Target/ScheduleReport.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  braid::registerToPlanTranslation();
  braid::registerToScheduleReportTranslation();
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "braid translation driver\n"));
}
