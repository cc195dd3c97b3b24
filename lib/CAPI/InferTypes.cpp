//===- InferTypes.cpp - braid's result-type inference, as C -----*- C++ -*-===//
//
// braidInferResultTypes (include/braid-c/InferTypes.h): parses a one-op
// function in MLIR's generic syntax, unverified (the op has no results
// yet), and asks the op's InferTypeOpInterface for its result types. The
// diagnostics the inference emits are the error text.
//
//===----------------------------------------------------------------------===//

#include "braid-c/InferTypes.h"
#include "braid/Dialect/Braid/BraidDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"

#include <cstring>
#include <mutex>
#include <string>

using namespace mlir;

namespace {

/// The context every call shares: the braid, func and shard dialects,
/// single-threaded (a library loaded into another program's process).
MLIRContext &getContext() {
  static MLIRContext *context = [] {
    DialectRegistry registry;
    registry
        .insert<braid::BraidDialect, func::FuncDialect, shard::ShardDialect>();
    auto *ctx = new MLIRContext(registry, MLIRContext::Threading::DISABLED);
    ctx->loadAllAvailableDialects();
    return ctx;
  }();
  return *context;
}

/// The result types, one per line, or the error.
LogicalResult infer(StringRef name, StringRef operandTypes,
                    StringRef attributes, std::string &text) {
  MLIRContext &ctx = getContext();
  std::string errors;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      errors += (errors.empty() ? "" : "\n") + diag.str();
    return success();
  });
  auto fail = [&](const std::string &message) {
    text = errors.empty() ? message : errors;
    return failure();
  };
  if (!RegisteredOperationName::lookup(name, &ctx))
    return fail(("'" + name + "' is not an op of the braid dialect").str());

  // func.func @infer(%a0: T0, ...) { "op"(%a0, ...) {attrs} : (T0, ...) -> () }
  SmallVector<StringRef> types;
  if (!operandTypes.empty())
    operandTypes.split(types, '\n');
  std::string args, uses, typeList;
  for (auto [i, type] : llvm::enumerate(types)) {
    std::string sep = i ? ", " : "";
    args += sep + "%a" + std::to_string(i) + ": " + type.str();
    uses += sep + "%a" + std::to_string(i);
    typeList += sep + type.str();
  }
  std::string source = "func.func @infer(" + args + ") {\n  \"" + name.str() +
                       "\"(" + uses + ") " + attributes.str() + " : (" +
                       typeList + ") -> ()\n  func.return\n}\n";
  ParserConfig config(&ctx, /*verifyAfterParse=*/false);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, config);
  if (!module) {
    text = ("cannot parse the operand types [" + typeList + "] or attributes " +
            attributes + " of '" + name + "'")
               .str();
    if (!errors.empty())
      text += ": " + errors;
    return failure();
  }
  auto function = cast<func::FuncOp>(module->getBody()->front());
  Operation *op = &function.getBody().front().front();
  auto inference = dyn_cast<InferTypeOpInterface>(op);
  if (!inference)
    return fail(("'" + name + "' does not infer its result types").str());
  SmallVector<Type> results;
  if (failed(inference.inferReturnTypes(
          &ctx, op->getLoc(), op->getOperands(), op->getRawDictionaryAttrs(),
          op->getPropertiesStorage(), op->getRegions(), results)))
    return fail(("'" + name + "' rejects its operands").str());
  text.clear();
  llvm::raw_string_ostream os(text);
  llvm::interleave(results, os, "\n");
  return success();
}

} // namespace

extern "C" __attribute__((visibility("default"))) int
braidInferResultTypes(const char *name, const char *operandTypes,
                      const char *attributes, char *out, size_t outSize,
                      size_t *needed) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  std::string text;
  int status = succeeded(infer(name, operandTypes, attributes, text))
                   ? BraidInferOk
                   : BraidInferError;
  *needed = text.size() + 1;
  if (outSize < text.size() + 1)
    return BraidInferTooSmall;
  std::memcpy(out, text.c_str(), text.size() + 1);
  return status;
}
