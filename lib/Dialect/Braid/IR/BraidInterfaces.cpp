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

uint64_t braid::detail::getCollectiveCommBytes(Operation *op,
                                               CollectiveKind kind) {
  uint64_t results = 0;
  for (Type type : op->getResultTypes()) {
    if (auto future = dyn_cast<FutureType>(type))
      results += sumTensorBytes(future.getValueTypes());
    else
      results += getTensorBytes(type);
  }
  return getCommBytes(kind, sumTensorBytes(op->getOperandTypes()), results);
}

Operation *braid::detail::buildStartForm(Operation *op, OpBuilder &builder,
                                         StringRef startName) {
  OperationState state(op->getLoc(), startName);
  state.addOperands(op->getOperands());
  state.addAttributes(op->getAttrDictionary().getValue());
  state.addTypes(
      FutureType::get(op->getContext(), llvm::to_vector(op->getResultTypes())));
  return builder.create(state);
}

#include "braid/Dialect/Braid/BraidInterfaces.cpp.inc"
