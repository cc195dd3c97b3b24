//===- braid-opt.cpp - braid's mlir-opt -------------------------*- C++ -*-===//
//
// Parses, verifies, transforms and prints braid IR, like mlir-opt: the tool
// for running single passes in tests and experiments.
//
//===----------------------------------------------------------------------===//

#include "braid/Dialect/Braid/BraidDialect.h"
#include "braid/Dialect/Braid/PassPipelines.h"
#include "braid/Dialect/Braid/Passes.h"

#include "../ToolSupport.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<braid::BraidDialect, mlir::arith::ArithDialect,
                  mlir::cf::ControlFlowDialect, mlir::func::FuncDialect,
                  mlir::shard::ShardDialect, mlir::tensor::TensorDialect>();
  mlir::registerTransformsPasses();
  braid::registerBraidPasses();
  braid::registerBraidPipelines();
  auto [input, output] = mlir::registerAndParseCLIOptions(
      argc, argv, "braid optimizer driver\n", registry);
  if (!braid::tools::checkInputFile(input))
    return 1;
  braid::tools::installCrashNote("braid-opt", input);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, input, output, registry));
}
