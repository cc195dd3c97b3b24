//===- BraidTypes.h - braid types -------------------------------*- C++ -*-===//

#ifndef BRAID_DIALECT_BRAID_BRAIDTYPES_H
#define BRAID_DIALECT_BRAID_BRAIDTYPES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Types.h"

#define GET_TYPEDEF_CLASSES
#include "braid/Dialect/Braid/BraidOpsTypes.h.inc"

#endif // BRAID_DIALECT_BRAID_BRAIDTYPES_H
