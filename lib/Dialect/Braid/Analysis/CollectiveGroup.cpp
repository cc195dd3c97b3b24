//===- CollectiveGroup.cpp - the device group of a collective -------------===//

#include "braid/Dialect/Braid/Analysis/CollectiveGroup.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace braid;

CollectiveGroup CollectiveGroup::of(CollectiveOpInterface op) {
  return {op.getGridAttr().getAttr(),
          DenseI16ArrayAttr::get(op->getContext(), op.getGridAxes())};
}

raw_ostream &braid::operator<<(raw_ostream &os, const CollectiveGroup &group) {
  os << "@" << group.grid.getValue() << "[";
  llvm::interleaveComma(group.getAxes(), os);
  return os << "]";
}

Diagnostic &braid::operator<<(Diagnostic &diag, const CollectiveGroup &group) {
  std::string text;
  llvm::raw_string_ostream(text) << group;
  return diag << text;
}
