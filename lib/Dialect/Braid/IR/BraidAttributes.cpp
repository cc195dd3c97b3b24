//===- BraidAttributes.cpp - braid attributes -------------------*- C++ -*-===//

#include "braid/Dialect/Braid/BraidAttributes.h"
#include "braid/Dialect/Braid/BraidDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace braid;

#include "braid/Dialect/Braid/BraidEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "braid/Dialect/Braid/BraidAttributes.cpp.inc"

LogicalResult RoleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               RoleKind kind, StringRef name) {
  if (name.empty())
    return emitError() << "a " << stringifyRoleKind(kind)
                       << " role needs a non-empty name";
  return success();
}

void BraidDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "braid/Dialect/Braid/BraidAttributes.cpp.inc"
      >();
}
