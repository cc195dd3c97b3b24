//===- BraidOptimizerOps.cpp - sgd, adamw, gradient clipping ----*- C++ -*-===//
//
// The verifiers and costs of the optimizer updates and gradient clipping
// (BraidOptimizerOps.td).
//
//===----------------------------------------------------------------------===//

#include "VerifierUtils.h"

#include "mlir/IR/BuiltinTypes.h"

#include <cmath>

using namespace mlir;
using namespace braid;

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

/// An update's learning rate: the `lr` attribute or the `scheduled_lr`
/// operand, exactly one, and a constant one non-negative.
template <typename Op> static LogicalResult verifyLearningRate(Op op) {
  std::optional<APFloat> lr = op.getLr();
  if (lr && op.getScheduledLr())
    return op.emitOpError() << "has both a constant lr and a scheduled lr "
                               "operand; give one";
  if (!lr && !op.getScheduledLr())
    return op.emitOpError() << "has no learning rate: give lr = <constant> "
                               "or lr = <scalar f32 operand>";
  // As torch.optim: a rate of 0 is a valid update that changes nothing.
  if (lr && !(lr->convertToDouble() >= 0))
    return op.emitOpError()
           << "lr must be non-negative, but is " << lr->convertToDouble();
  return success();
}

LogicalResult SgdOp::verify() {
  if (failed(verifyLearningRate(*this)))
    return failure();
  double momentum = getMomentum().convertToDouble();
  double dampening = getDampening().convertToDouble();
  double weightDecay = getWeightDecay().convertToDouble();
  if (!(momentum >= 0))
    return emitOpError() << "momentum must be non-negative, but is "
                         << momentum;
  if (!(weightDecay >= 0))
    return emitOpError() << "weight_decay must be non-negative, but is "
                         << weightDecay;
  if (!(dampening >= 0 && dampening <= 1))
    return emitOpError() << "dampening must be in [0, 1], but is " << dampening;
  if (getNesterov() && (momentum <= 0 || dampening != 0))
    return emitOpError() << "nesterov needs a positive momentum and zero "
                            "dampening";
  return success();
}
uint64_t SgdOp::getFlops() { return 6 * numElements(getParam()); }

LogicalResult AdamWOp::verify() {
  if (failed(verifyLearningRate(*this)))
    return failure();
  double beta1 = getBeta1().convertToDouble();
  double beta2 = getBeta2().convertToDouble();
  double eps = getEps().convertToDouble();
  double weightDecay = getWeightDecay().convertToDouble();
  if (!(beta1 >= 0 && beta1 < 1))
    return emitOpError() << "beta1 must be in [0, 1), but is " << beta1;
  if (!(beta2 >= 0 && beta2 < 1))
    return emitOpError() << "beta2 must be in [0, 1), but is " << beta2;
  if (!(eps > 0))
    return emitOpError() << "eps must be positive, but is " << eps;
  if (!(weightDecay >= 0))
    return emitOpError() << "weight_decay must be non-negative, but is "
                         << weightDecay;
  return success();
}
uint64_t AdamWOp::getFlops() { return 12 * numElements(getParam()); }

LogicalResult LionOp::verify() {
  if (failed(verifyLearningRate(*this)))
    return failure();
  double beta1 = getBeta1().convertToDouble();
  double beta2 = getBeta2().convertToDouble();
  double weightDecay = getWeightDecay().convertToDouble();
  if (!(beta1 >= 0 && beta1 <= 1))
    return emitOpError() << "beta1 must be in [0, 1], but is " << beta1;
  if (!(beta2 >= 0 && beta2 <= 1))
    return emitOpError() << "beta2 must be in [0, 1], but is " << beta2;
  if (!(weightDecay >= 0))
    return emitOpError() << "weight_decay must be non-negative, but is "
                         << weightDecay;
  return success();
}
// The decay (2), the interpolation (3), its sign and step (2), the momentum
// (3).
uint64_t LionOp::getFlops() { return 10 * numElements(getParam()); }

LogicalResult SumSquaresOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  return success();
}
uint64_t SumSquaresOp::getFlops() {
  uint64_t n = 0;
  for (Value input : getInputs())
    n += numElements(input);
  return 2 * n;
}

LogicalResult ClipCoefficientOp::verify() {
  double maxNorm = getMaxNorm().convertToDouble();
  if (!(maxNorm > 0) || std::isinf(maxNorm))
    return emitOpError() << "max_norm must be positive and finite, but is "
                         << maxNorm;
  return success();
}
uint64_t ClipCoefficientOp::getFlops() { return 4; }
