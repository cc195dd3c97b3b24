//===- BraidDialect.h - braid dialect ---------------------------*- C++ -*-===//

#ifndef BRAID_DIALECT_BRAID_BRAIDDIALECT_H
#define BRAID_DIALECT_BRAID_BRAIDDIALECT_H

#include "mlir/IR/Dialect.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <memory>
#include <mutex>

namespace braid {
/// The arguments of a function by `braid.role` name: the first argument of
/// each name.
struct RoleTable {
  llvm::StringMap<unsigned> firstArgument;
};
} // namespace braid

#include "braid/Dialect/Braid/BraidOpsDialect.h.inc"

#endif // BRAID_DIALECT_BRAID_BRAIDDIALECT_H
