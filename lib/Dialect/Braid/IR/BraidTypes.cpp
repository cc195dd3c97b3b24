//===- BraidTypes.cpp - braid types -----------------------------*- C++ -*-===//

#include "braid/Dialect/Braid/BraidTypes.h"
#include "braid/Dialect/Braid/BraidDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace braid;

#define GET_TYPEDEF_CLASSES
#include "braid/Dialect/Braid/BraidOpsTypes.cpp.inc"

/// `!braid.future<>` or `!braid.future<tensor<4xf32>, tensor<8xbf16>>`.
Type FutureType::parse(AsmParser &parser) {
  SmallVector<Type> valueTypes;
  if (parser.parseLess())
    return {};
  if (failed(parser.parseOptionalGreater())) {
    if (parser.parseTypeList(valueTypes) || parser.parseGreater())
      return {};
  }
  return getChecked([&] { return parser.emitError(parser.getNameLoc()); },
                    parser.getContext(), valueTypes);
}

void FutureType::print(AsmPrinter &printer) const {
  printer << '<';
  llvm::interleaveComma(getValueTypes(), printer);
  printer << '>';
}

LogicalResult FutureType::verify(function_ref<InFlightDiagnostic()> emitError,
                                 ArrayRef<Type> valueTypes) {
  for (auto [i, type] : llvm::enumerate(valueTypes)) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape())
      return emitError() << "future value #" << i
                         << " must be a statically shaped tensor, but is "
                         << type;
  }
  return success();
}

void BraidDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "braid/Dialect/Braid/BraidOpsTypes.cpp.inc"
      >();
}
