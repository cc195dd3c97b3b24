//===- FuseKernels.cpp - fold ops into the kernels that can run them -----===//
//
// Folds attention's score scaling and causal mask into braid.softmax, their
// gradients into braid.softmax_backward, and a bias_add into the gelu and
// gelu_backward that read it (Passes.td shows the IR before and after). A
// folded op's result must have no reader but the ops it folds into, all on
// its stream.
//
//===----------------------------------------------------------------------===//

#include "braid/Dialect/Braid/BraidDialect.h"
#include "braid/Dialect/Braid/BraidOps.h"
#include "braid/Dialect/Braid/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallVector.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "braid-fuse-kernels"

namespace braid {
#define GEN_PASS_DEF_FUSEKERNELS
#include "braid/Dialect/Braid/Passes.h.inc"
} // namespace braid

using namespace mlir;
using namespace braid;

namespace {

/// Whether `a` and `b` run on the same stream (or neither is scheduled).
bool sameStream(Operation *a, Operation *b) {
  return a->getAttr(BraidDialect::kStreamAttrName) ==
         b->getAttr(BraidDialect::kStreamAttrName);
}

/// Whether `op` can fold into `into`: its one result has one use, and both
/// run on the same stream.
bool foldsInto(Operation *op, Operation *into) {
  return op->getResult(0).hasOneUse() && sameStream(op, into);
}

/// Whether a softmax along `dim` of `value` runs along the last dimension.
bool alongLastDim(Value value, int64_t dim) {
  return dim == cast<RankedTensorType>(value.getType()).getRank() - 1;
}

struct FuseKernelsPass : public braid::impl::FuseKernelsBase<FuseKernelsPass> {
  using FuseKernelsBase::FuseKernelsBase;

  void runOnOperation() override {
    SmallVector<SoftmaxOp> forward;
    SmallVector<SoftmaxBackwardOp> backward;
    SmallVector<BiasAddOp> biases;
    getOperation().walk([&](Operation *op) {
      if (auto softmax = dyn_cast<SoftmaxOp>(op))
        forward.push_back(softmax);
      else if (auto grad = dyn_cast<SoftmaxBackwardOp>(op))
        backward.push_back(grad);
      else if (auto bias = dyn_cast<BiasAddOp>(op))
        biases.push_back(bias);
    });
    for (SoftmaxOp softmax : forward)
      foldIntoSoftmax(softmax);
    for (SoftmaxBackwardOp grad : backward)
      foldIntoSoftmaxBackward(grad);
    for (BiasAddOp bias : biases)
      foldIntoGelu(bias);
  }

  /// bias_add -> (reshape ->) gelu and gelu_backward: the sum's only
  /// readers are gelus (and their backward, as the saved input), which
  /// then add the bias themselves; a reshape between keeps the bias's
  /// dimension last and reads the bias_add's input instead.
  void foldIntoGelu(BiasAddOp biasAdd) {
    Value sum = biasAdd.getResult();
    auto reshape = dyn_cast_or_null<ReshapeOp>(
        sum.hasOneUse() ? *sum.user_begin() : nullptr);
    if (reshape && sameStream(reshape, biasAdd) &&
        cast<RankedTensorType>(reshape.getType()).getShape().back() ==
            cast<RankedTensorType>(sum.getType()).getShape().back())
      sum = reshape.getResult();
    else
      reshape = nullptr;
    // Every reader adds the bias itself: a gelu of the sum, or a gelu's
    // backward that reads the sum as its saved input (not its gradient).
    bool anyGelu = false;
    for (OpOperand &use : sum.getUses()) {
      Operation *user = use.getOwner();
      if (!sameStream(user, biasAdd))
        return;
      if (auto gelu = dyn_cast<GeluOp>(user)) {
        if (gelu.getBias())
          return;
        anyGelu = true;
        continue;
      }
      auto grad = dyn_cast<GeluBackwardOp>(user);
      if (!grad || grad.getBias() || use.getOperandNumber() != 1)
        return;
    }
    if (!anyGelu)
      return;
    Value input = biasAdd.getInput(), bias = biasAdd.getBias();
    if (reshape) {
      reshape.getInputMutable().assign(input);
      input = reshape.getResult();
    }
    for (Operation *user : llvm::to_vector(sum.getUsers())) {
      if (auto gelu = dyn_cast<GeluOp>(user)) {
        gelu.getInputMutable().assign(input);
        gelu.getBiasMutable().assign(bias);
      } else {
        auto grad = cast<GeluBackwardOp>(user);
        grad.getInputMutable().assign(input);
        grad.getBiasMutable().assign(bias);
      }
    }
    biasAdd.erase();
    ++foldedOps;
  }

  /// scale -> causal_mask (fill -inf) -> softmax, either one alone.
  void foldIntoSoftmax(SoftmaxOp softmax) {
    if (softmax.getCausal() || softmax.getScale().convertToDouble() != 1.0)
      return;
    Value input = softmax.getInput();
    CausalMaskOp mask = input.getDefiningOp<CausalMaskOp>();
    if (mask &&
        (!foldsInto(mask, softmax) || !alongLastDim(input, softmax.getDim()) ||
         !mask.getFill().isInfinity() || !mask.getFill().isNegative()))
      mask = nullptr;
    if (mask)
      input = mask.getInput();
    ScaleOp scale = input.getDefiningOp<ScaleOp>();
    Operation *scaleUser = mask ? mask.getOperation() : softmax.getOperation();
    // A negative factor before the mask would turn its -inf into +inf.
    if (scale && (!foldsInto(scale, scaleUser) ||
                  (mask && !(scale.getFactor().convertToDouble() > 0))))
      scale = nullptr;
    if (scale)
      input = scale.getInput();
    if (!mask && !scale)
      return;
    OpBuilder builder(softmax);
    softmax.getInputMutable().assign(input);
    if (mask) {
      softmax.setCausal(true);
      mask.erase();
      ++foldedOps;
    }
    if (scale) {
      softmax.setScaleAttr(
          builder.getF64FloatAttr(scale.getFactor().convertToDouble()));
      scale.erase();
      ++foldedOps;
    }
  }

  /// softmax_backward -> causal_mask (fill 0) -> scale, either one alone.
  void foldIntoSoftmaxBackward(SoftmaxBackwardOp grad) {
    if (grad.getCausal() || grad.getScale().convertToDouble() != 1.0)
      return;
    Value result = grad.getResult();
    CausalMaskOp mask;
    if (result.hasOneUse() && alongLastDim(result, grad.getDim()))
      mask = dyn_cast<CausalMaskOp>(*result.user_begin());
    if (mask && sameStream(mask, grad) && mask.getFill().isZero())
      result = mask.getResult();
    else
      mask = nullptr;
    ScaleOp scale;
    if (result.hasOneUse())
      scale = dyn_cast<ScaleOp>(*result.user_begin());
    if (scale && sameStream(scale, grad))
      result = scale.getResult();
    else
      scale = nullptr;
    if (!mask && !scale)
      return;
    OpBuilder builder(grad);
    if (mask)
      grad.setCausal(true);
    if (scale)
      grad.setScaleAttr(
          builder.getF64FloatAttr(scale.getFactor().convertToDouble()));
    result.replaceAllUsesWith(grad.getResult());
    if (scale) {
      scale.erase();
      ++foldedOps;
    }
    if (mask) {
      mask.erase();
      ++foldedOps;
    }
  }
};

} // namespace
