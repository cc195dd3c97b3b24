//===- Passes.h - braid passes ----------------------------------*- C++ -*-===//

#ifndef BRAID_DIALECT_BRAID_PASSES_H
#define BRAID_DIALECT_BRAID_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace braid {

#define GEN_PASS_DECL
#include "braid/Dialect/Braid/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "braid/Dialect/Braid/Passes.h.inc"

} // namespace braid

#endif // BRAID_DIALECT_BRAID_PASSES_H
