//===- BraidInterfaces.cpp - braid op interfaces ----------------*- C++ -*-===//

#include "braid/Dialect/Braid/BraidInterfaces.h"
#include "braid/Dialect/Braid/BraidTypes.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

uint64_t braid::getElementBytes(Type elementType) {
  return (elementType.getIntOrFloatBitWidth() + 7) / 8;
}

uint64_t braid::getNumElements(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  return tensor.getNumElements();
}

uint64_t braid::getTensorBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  return tensor.getNumElements() * getElementBytes(tensor.getElementType());
}

uint64_t braid::sumTensorBytes(TypeRange types) {
  uint64_t bytes = 0;
  for (Type type : types)
    bytes += getTensorBytes(type);
  return bytes;
}

uint64_t braid::detail::getCollectiveCommBytes(Operation *op) {
  if (uint64_t bytes = sumTensorBytes(op->getOperandTypes()))
    return bytes;
  // A receive has no tensor operand: it moves what it yields.
  uint64_t bytes = 0;
  for (Type type : op->getResultTypes()) {
    if (auto future = dyn_cast<FutureType>(type))
      bytes += sumTensorBytes(future.getValueTypes());
    else
      bytes += getTensorBytes(type);
  }
  return bytes;
}

bool braid::detail::isAsyncCollective(Operation *op) {
  return op->getNumResults() == 1 &&
         isa<FutureType>(op->getResult(0).getType());
}

#include "braid/Dialect/Braid/BraidInterfaces.cpp.inc"
