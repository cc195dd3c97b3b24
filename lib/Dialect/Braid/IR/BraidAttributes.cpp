//===- BraidAttributes.cpp - braid attributes -------------------*- C++ -*-===//

#include "braid/Dialect/Braid/BraidAttributes.h"
#include "braid-common/Streams.h"
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

LogicalResult StreamAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 StreamKind kind, unsigned index) {
  // One compute stream: every pass, the schedule verifier and the plan
  // give stream index 0 to it, so another would be taken for it.
  if (kind == StreamKind::Compute && index != 0)
    return emitError()
           << "braid has one compute stream, #braid.stream<compute, "
              "0>; there is no compute stream "
           << index;
  if (kind == StreamKind::Comm && index >= kMaxCommStreams)
    return emitError() << "communication stream " << index
                       << " is out of range: a step has at most "
                       << kMaxCommStreams
                       << " (#braid.stream<comm, 0> to <comm, "
                       << kMaxCommStreams - 1 << ">)";
  return success();
}

void BraidDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "braid/Dialect/Braid/BraidAttributes.cpp.inc"
      >();
}
