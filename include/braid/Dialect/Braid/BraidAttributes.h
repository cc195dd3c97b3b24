//===- BraidAttributes.h - braid attributes ---------------------*- C++ -*-===//

#ifndef BRAID_DIALECT_BRAID_BRAIDATTRIBUTES_H
#define BRAID_DIALECT_BRAID_BRAIDATTRIBUTES_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "braid/Dialect/Braid/BraidEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "braid/Dialect/Braid/BraidAttributes.h.inc"

#endif // BRAID_DIALECT_BRAID_BRAIDATTRIBUTES_H
