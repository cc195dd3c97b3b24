//===- BraidLossOps.cpp - the losses ----------------------------*- C++ -*-===//
//
// The verifiers and costs of the loss ops (BraidLossOps.td); their
// tensor-parallel rules are in ShardingRules.cpp with the others.
//
//===----------------------------------------------------------------------===//

#include "VerifierUtils.h"

#include "braid/Dialect/Braid/BraidOps.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace braid;

/// Checks `[N, C]` inputs against `[N]` labels.
static LogicalResult verifyLossShapes(Operation *op, Value input,
                                      Value labels) {
  ArrayRef<int64_t> x = tensorType(input).getShape();
  ArrayRef<int64_t> l = tensorType(labels).getShape();
  if (x.size() != 2)
    return op->emitOpError()
           << "input must have rank 2 ([N, C]), but has rank " << x.size();
  if (l.size() != 1 || l[0] != x[0])
    return op->emitOpError()
           << "labels have shape " << shapeString(l) << ", expected " << x[0];
  return success();
}

LogicalResult NllLossOp::verify() {
  return verifyLossShapes(*this, getInput(), getLabels());
}
LogicalResult CrossEntropyOp::verify() {
  return verifyLossShapes(*this, getInput(), getLabels());
}
LogicalResult NllLossBackwardOp::verify() {
  return verifyLossShapes(*this, getInput(), getLabels());
}
LogicalResult CrossEntropyBackwardOp::verify() {
  return verifyLossShapes(*this, getInput(), getLabels());
}

uint64_t NllLossOp::getFlops() { return numElements(getLabels()); }
uint64_t NllLossBackwardOp::getFlops() { return numElements(getInput()); }
uint64_t CrossEntropyOp::getFlops() { return 6 * numElements(getInput()); }
uint64_t CrossEntropyBackwardOp::getFlops() {
  return 6 * numElements(getInput());
}

/// Checks `stats` against `[P, N, 3]` summaries of `rows` rows (P == 1 for
/// one shard's).
static LogicalResult verifyShardStats(Operation *op, Value stats, int64_t rows,
                                      std::optional<int64_t> parts) {
  ArrayRef<int64_t> t = tensorType(stats).getShape();
  if (t.size() != 3 || t[1] != rows || t[2] != 3 || (parts && t[0] != *parts))
    return op->emitOpError()
           << "stats have shape " << shapeString(t) << ", expected ["
           << (parts ? std::to_string(*parts) : std::string("P")) << ", "
           << rows << ", 3]";
  return success();
}

LogicalResult CrossEntropyShardStatsOp::verify() {
  if (failed(verifyLossShapes(*this, getLogits(), getLabels())) ||
      failed(verifyParts(*this, getParts())) ||
      failed(verifySameElementType(*this, "logits", getLogits(), "result",
                                   getResult())))
    return failure();
  return verifyShardStats(*this, getResult(),
                          tensorType(getLogits()).getDimSize(0), 1);
}
LogicalResult CrossEntropyShardLossOp::verify() {
  ArrayRef<int64_t> t = tensorType(getStats()).getShape();
  if (failed(verifySameElementType(*this, "stats", getStats(), "result",
                                   getResult())))
    return failure();
  return verifyShardStats(*this, getStats(), t.size() == 3 ? t[1] : 0,
                          std::nullopt);
}
LogicalResult CrossEntropyShardBackwardOp::verify() {
  if (failed(verifyLossShapes(*this, getLogits(), getLabels())) ||
      failed(verifySameElementType(*this, "logits", getLogits(), "stats",
                                   getStats())))
    return failure();
  return verifyShardStats(*this, getStats(),
                          tensorType(getLogits()).getDimSize(0), std::nullopt);
}

uint64_t CrossEntropyShardStatsOp::getFlops() {
  return 4 * numElements(getLogits());
}
uint64_t CrossEntropyShardLossOp::getFlops() {
  return 4 * numElements(getStats());
}
uint64_t CrossEntropyShardBackwardOp::getFlops() {
  return 4 * numElements(getLogits()) + 4 * numElements(getStats());
}
