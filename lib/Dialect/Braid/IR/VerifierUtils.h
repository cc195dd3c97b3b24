//===- VerifierUtils.h - checks the braid op verifiers share ----*- C++ -*-===//
//
// The small checks and shape helpers that the verifiers of more than one
// op file use (BraidOps.cpp, BraidDataMovementOps.cpp,
// BraidOptimizerOps.cpp), each defined once here.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_DIALECT_BRAID_IR_VERIFIERUTILS_H
#define BRAID_LIB_DIALECT_BRAID_IR_VERIFIERUTILS_H

#include "braid/Dialect/Braid/BraidOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"

#include <string>

namespace braid {

using namespace mlir;

inline RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

inline uint64_t numElements(Value value) {
  return getNumElements(value.getType());
}

/// Prints a shape as `8x128x768` (`scalar` for rank 0).
inline std::string shapeString(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleave(shape, os, "x");
  return s;
}

/// Reports what an op's type inference finds wrong with its operands or
/// attributes, worded as emitOpError words it ("'braid.matmul' op ..."), at
/// `location`; silent where there is none (inference outside verification,
/// as a builder's, only fails). The verifier of an op with
/// InferTypeOpInterface runs its inference before its own verify().
template <typename... Args>
LogicalResult inferError(std::optional<Location> location, StringRef opName,
                         Args &&...args) {
  return emitOptionalError(location, "'", opName, "' op ",
                           std::forward<Args>(args)...);
}

/// The ranked tensor types of `values`, the operands an op's type inference
/// reads; an error where one is not. A verified op's ODS type constraints
/// fail first, so only braidInferResultTypes (lib/CAPI), which infers the
/// types of an op it has not verified, reaches the error
/// (integration_test/python/ir-infer.py).
inline FailureOr<SmallVector<RankedTensorType>>
rankedOperandTypes(std::optional<Location> location, StringRef opName,
                   ValueRange values) {
  SmallVector<RankedTensorType> types;
  for (Value value : values) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type)
      // The verifier rules this out: not reachable from input to braid-opt.
      return inferError(location, opName,
                        "operands must be ranked tensors, not ",
                        value.getType());
    types.push_back(type);
  }
  return types;
}

/// Checks that `dim` indexes a dimension of a rank-`rank` tensor.
inline LogicalResult verifyDimIndex(Operation *op, StringRef what, int64_t dim,
                                    int64_t rank) {
  if (dim < 0 || dim >= rank)
    return op->emitOpError()
           << what << " " << dim << " is out of range for rank " << rank;
  return success();
}

/// Checks that two values have the same element type.
inline LogicalResult verifySameElementType(Operation *op, StringRef aName,
                                           Value a, StringRef bName, Value b) {
  Type ta = getElementTypeOrSelf(a.getType());
  Type tb = getElementTypeOrSelf(b.getType());
  if (ta != tb)
    return op->emitOpError()
           << aName << " element type " << ta << " differs from " << bName
           << " element type " << tb;
  return success();
}

/// Checks that `value` has shape `expected`.
inline LogicalResult verifyShape(Operation *op, StringRef name, Value value,
                                 ArrayRef<int64_t> expected) {
  ArrayRef<int64_t> actual = tensorType(value).getShape();
  if (actual != expected)
    return op->emitOpError() << name << " has shape " << shapeString(actual)
                             << ", expected " << shapeString(expected);
  return success();
}

/// Checks that a shard op's `parts` is positive.
inline LogicalResult verifyParts(Operation *op, int64_t parts) {
  if (parts < 1)
    return op->emitOpError() << "parts must be positive, but is " << parts;
  return success();
}

} // namespace braid

#endif // BRAID_LIB_DIALECT_BRAID_IR_VERIFIERUTILS_H
