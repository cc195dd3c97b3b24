//===- braid-translate.cpp - braid's translations ---------------*- C++ -*-===//
//
// Translations only, like mlir-translate: `--braid-to-plan` writes the runtime
// plan of a scheduled, memory-planned step, `--braid-to-schedule-report` the
// schedule's streams and buckets as JSON.
//
//===----------------------------------------------------------------------===//

#include "../ToolSupport.h"
#include "braid/Target/Plan.h"
#include "braid/Target/ScheduleReport.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

#include <string>

int main(int argc, char **argv) {
  // mlir-translate's options are parsed inside mlirTranslateMain: the
  // input is the positional argument (not the value of -o).
  std::string input = "-";
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (arg == "-o") {
      ++i;
    } else if (!arg.starts_with("-") || arg == "-") {
      input = arg.str();
    }
  }
  if (!braid::tools::checkInputFile(input))
    return 1;
  braid::tools::installCrashNote("braid-translate", input);
  braid::registerToPlanTranslation();
  braid::registerToScheduleReportTranslation();
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "braid translation driver\n"));
}
