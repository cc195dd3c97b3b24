//===- BraidDialect.h - braid dialect ---------------------------*- C++ -*-===//

#ifndef BRAID_DIALECT_BRAID_BRAIDDIALECT_H
#define BRAID_DIALECT_BRAID_BRAIDDIALECT_H

#include "mlir/IR/Dialect.h"

#include "braid/Dialect/Braid/BraidOpsDialect.h.inc"

#endif // BRAID_DIALECT_BRAID_BRAIDDIALECT_H
