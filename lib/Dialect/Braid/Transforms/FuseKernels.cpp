//===- FuseKernels.cpp - fold ops into the kernels that can run them -----===//
//
// Folds attention's score scaling and causal mask into braid.softmax, their
// gradients into braid.softmax_backward, a bias_add into the gelu and
// gelu_backward that read it, and transposes and slices of heads into the
// matmuls that read them (Passes.td shows the IR before and after). A
// folded op's result must have no reader but the ops it folds into, all on
// its stream. Each fold is a rewrite pattern; the options pick which run
// under the greedy driver.
//
//===----------------------------------------------------------------------===//

#include "braid/Dialect/Braid/BraidDialect.h"
#include "braid/Dialect/Braid/BraidOps.h"
#include "braid/Dialect/Braid/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallVector.h"

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

/// A fold: a rewrite pattern on `OpTy` that counts the ops it folds away.
template <typename OpTy> struct Fold : public OpRewritePattern<OpTy> {
  Fold(MLIRContext *context, Pass::Statistic &folded,
       PatternBenefit benefit = 1)
      : OpRewritePattern<OpTy>(context, benefit), folded(folded) {}

protected:
  Pass::Statistic &folded;
};

/// slice -> reshape -> matmul operands: a slice of a range of its input's
/// last dimension (whole elsewhere, unit steps), read only by reshapes
/// that split that dimension into [h, d] with d dividing the range's
/// start, each read only by matmuls that see the h dimension as a batch
/// dimension (a fused projection's q, k or v, split into heads): the
/// matmuls read the input reshaped to [..., n / d, d] (a view) through
/// `lhs_slice`/`rhs_slice`, h entries from start / d, and the slice's
/// copy goes.
struct FoldSliceIntoMatmuls : public Fold<SliceOp> {
  using Fold::Fold;

  LogicalResult matchAndRewrite(SliceOp slice,
                                PatternRewriter &rewriter) const override {
    auto in = cast<RankedTensorType>(slice.getInput().getType());
    auto out = cast<RankedTensorType>(slice.getType());
    int64_t rank = in.getRank(), last = rank - 1;
    if (rank < 1 ||
        (slice.getStrides() &&
         llvm::any_of(*slice.getStrides(), [](int64_t s) { return s != 1; })))
      return failure();
    ArrayRef<int64_t> offsets = slice.getOffsets();
    for (int64_t d = 0; d < last; ++d)
      if (offsets[d] != 0 || in.getDimSize(d) != out.getDimSize(d))
        return failure();
    int64_t start = offsets[last], n = in.getDimSize(last);
    // The head size every reshape splits the range into, and the checks.
    int64_t head = 0;
    if (slice.getResult().use_empty())
      return failure();
    for (Operation *user : slice.getResult().getUsers()) {
      auto reshape = dyn_cast<ReshapeOp>(user);
      if (!reshape || !sameStream(reshape, slice))
        return failure();
      ArrayRef<int64_t> to =
          cast<RankedTensorType>(reshape.getType()).getShape();
      if (int64_t(to.size()) != rank + 1 ||
          to.take_front(last) != out.getShape().take_front(last) ||
          (head && to.back() != head))
        return failure();
      head = to.back();
      if (head < 1 || start % head || n % head ||
          reshape.getResult().use_empty())
        return failure();
      for (OpOperand &use : reshape.getResult().getUses()) {
        auto matmul = dyn_cast<MatmulOp>(use.getOwner());
        if (!matmul || !sameStream(matmul, reshape))
          return failure();
        bool lhs = use.getOperandNumber() == 0;
        if (lhs ? matmul.getLhsSlice() : matmul.getRhsSlice())
          return failure();
        // The heads (dimension `last` of the split value) must be a batch
        // dimension of the product.
        std::optional<ArrayRef<int64_t>> perm =
            lhs ? matmul.getLhsPermutation() : matmul.getRhsPermutation();
        int64_t at = perm ? llvm::find(*perm, last) - perm->begin() : last;
        if (at >= rank - 1)
          return failure();
      }
    }
    // The input split into heads, a view, where the slice was.
    SmallVector<int64_t> split(in.getShape().drop_back());
    split.append({n / head, head});
    auto heads = ReshapeOp::create(rewriter, slice.getLoc(), in.clone(split),
                                   slice.getInput());
    if (Attribute stream = slice->getAttr(BraidDialect::kStreamAttrName))
      heads->setAttr(BraidDialect::kStreamAttrName, stream);
    auto range = rewriter.getDenseI64ArrayAttr(
        {last, start / head, out.getDimSize(last) / head});
    for (Operation *user : llvm::to_vector(slice.getResult().getUsers())) {
      auto reshape = cast<ReshapeOp>(user);
      for (OpOperand &use :
           llvm::make_early_inc_range(reshape.getResult().getUses())) {
        auto matmul = cast<MatmulOp>(use.getOwner());
        rewriter.modifyOpInPlace(matmul, [&] {
          if (use.getOperandNumber() == 0)
            matmul.setLhsSliceAttr(range);
          else
            matmul.setRhsSliceAttr(range);
          use.set(heads.getResult());
        });
      }
      rewriter.eraseOp(reshape);
      ++folded;
    }
    rewriter.eraseOp(slice);
    ++folded;
    return success();
  }
};

/// The leading dimensions `value` had before a braid.reshape merged them
/// into its first one (the last two kept), or none.
std::optional<SmallVector<int64_t>> mergedBatch(Value value) {
  auto reshape = value.getDefiningOp<ReshapeOp>();
  if (!reshape)
    return std::nullopt;
  ArrayRef<int64_t> to = cast<RankedTensorType>(value.getType()).getShape();
  ArrayRef<int64_t> from =
      cast<RankedTensorType>(reshape.getInput().getType()).getShape();
  if (to.size() != 3 || from.size() < 4 || to.take_back(2) != from.take_back(2))
    return std::nullopt;
  return SmallVector<int64_t>(from.drop_back(2));
}

/// A batched matmul of [b x h, m, k] operands that reshapes merged from
/// [b, h, m, k] (attention's bmm as AOT autograd writes it) becomes the
/// matmul of the [b, h, ...] values, when a transpose is among them, so
/// that the transpose can fold. Reshapes (views, which move nothing) take
/// the other operand and the result to and from the merged form where
/// nothing else does.
struct UnflattenBatch : public OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp matmul,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(matmul.getType());
    if (type.getRank() != 3 || matmul.getLhsPermutation() ||
        matmul.getRhsPermutation() || matmul.getResultPermutation())
      return failure();
    std::optional<SmallVector<int64_t>> batch = mergedBatch(matmul.getLhs());
    if (!batch)
      batch = mergedBatch(matmul.getRhs());
    if (!batch)
      return failure();
    auto splitType = [&](Value v) {
      auto t = cast<RankedTensorType>(v.getType());
      SmallVector<int64_t> shape(*batch);
      llvm::append_range(shape, t.getShape().take_back(2));
      return RankedTensorType::get(shape, t.getElementType());
    };
    // An operand's [b, h, ...] form: the reshape's input, or a new reshape.
    auto source = [&](Value v) -> Value {
      if (auto reshape = v.getDefiningOp<ReshapeOp>())
        if (reshape.getInput().getType() == splitType(v))
          return reshape.getInput();
      return nullptr;
    };
    Value lhs = source(matmul.getLhs());
    Value rhs = cast<RankedTensorType>(matmul.getRhs().getType()).getRank() == 2
                    ? matmul.getRhs()
                    : source(matmul.getRhs());
    RankedTensorType resultType = splitType(matmul.getResult());
    // Worth it only where a transpose is to fold.
    auto transposed = [](Value v) {
      return v && v.getDefiningOp<TransposeOp>();
    };
    bool resultTransposed = llvm::any_of(matmul->getUsers(), [&](Operation *u) {
      auto reshape = dyn_cast<ReshapeOp>(u);
      return reshape && reshape.getType() == resultType &&
             llvm::any_of(reshape->getUsers(),
                          [](Operation *w) { return isa<TransposeOp>(w); });
    });
    if (!transposed(lhs) && !transposed(rhs) && !resultTransposed)
      return failure();
    rewriter.setInsertionPoint(matmul);
    auto reshape = [&](Value v, Type to) -> Value {
      auto op = ReshapeOp::create(rewriter, matmul.getLoc(), to, v);
      if (Attribute stream = matmul->getAttr(BraidDialect::kStreamAttrName))
        op->setAttr(BraidDialect::kStreamAttrName, stream);
      return op.getResult();
    };
    if (!lhs)
      lhs = reshape(matmul.getLhs(), splitType(matmul.getLhs()));
    if (!rhs)
      rhs = reshape(matmul.getRhs(), splitType(matmul.getRhs()));
    auto split = cast<MatmulOp>(rewriter.clone(*matmul));
    rewriter.modifyOpInPlace(split, [&] {
      split->setOperands({lhs, rhs});
      split.getResult().setType(resultType);
    });
    // Readers of the merged result: a reshape to [b, h, ...] reads the new
    // one instead; anything else, a reshape back.
    Value merged;
    for (OpOperand &use :
         llvm::make_early_inc_range(matmul.getResult().getUses())) {
      auto user = dyn_cast<ReshapeOp>(use.getOwner());
      if (user && user.getType() == resultType) {
        rewriter.replaceOp(user, split.getResult());
        continue;
      }
      if (!merged) {
        rewriter.setInsertionPointAfter(split);
        merged = reshape(split.getResult(), type);
      }
      rewriter.modifyOpInPlace(use.getOwner(), [&] { use.set(merged); });
    }
    llvm::SmallSetVector<Operation *, 2> defs;
    for (Value operand : matmul->getOperands())
      if (auto def = operand.getDefiningOp<ReshapeOp>())
        defs.insert(def);
    rewriter.eraseOp(matmul);
    for (Operation *def : defs)
      if (def->use_empty())
        rewriter.eraseOp(def);
    return success();
  }
};

/// transpose -> matmul operands: every reader a matmul that reads the
/// operand where it is, through `lhs_permutation`/`rhs_permutation`.
struct FoldTransposeIntoMatmulOperands : public Fold<TransposeOp> {
  using Fold::Fold;

  LogicalResult matchAndRewrite(TransposeOp transpose,
                                PatternRewriter &rewriter) const override {
    ArrayRef<int64_t> perm = transpose.getPermutation();
    int64_t rank = perm.size();
    // BLAS needs a unit-stride dimension in each matrix (MatmulOp's
    // verifier says the same).
    if (rank < 2 || (perm[rank - 1] != rank - 1 && perm[rank - 2] != rank - 1))
      return failure();
    Value result = transpose.getResult();
    if (result.use_empty())
      return failure();
    for (OpOperand &use : result.getUses()) {
      auto matmul = dyn_cast<MatmulOp>(use.getOwner());
      if (!matmul || !sameStream(matmul, transpose) ||
          (use.getOperandNumber() == 0 ? matmul.getLhsPermutation()
                                       : matmul.getRhsPermutation()))
        return failure();
    }
    for (OpOperand &use : llvm::make_early_inc_range(result.getUses())) {
      auto matmul = cast<MatmulOp>(use.getOwner());
      rewriter.modifyOpInPlace(matmul, [&] {
        if (use.getOperandNumber() == 0)
          matmul.setLhsPermutation(perm);
        else
          matmul.setRhsPermutation(perm);
        use.set(transpose.getInput());
      });
    }
    rewriter.eraseOp(transpose);
    ++folded;
    return success();
  }
};

/// matmul -> transpose: the product written transposed, through
/// `result_permutation`, when the transpose stores one of the product's
/// last two dimensions last and is the product's only reader. Tried after
/// the fold into the transpose's readers.
struct FoldTransposeIntoMatmulResult : public Fold<TransposeOp> {
  using Fold::Fold;

  LogicalResult matchAndRewrite(TransposeOp transpose,
                                PatternRewriter &rewriter) const override {
    ArrayRef<int64_t> perm = transpose.getPermutation();
    int64_t rank = perm.size();
    auto matmul = transpose.getInput().getDefiningOp<MatmulOp>();
    if (!matmul || rank < 2 ||
        (perm.back() != rank - 1 && perm.back() != rank - 2) ||
        matmul.getResultPermutation() || !foldsInto(matmul, transpose))
      return failure();
    rewriter.modifyOpInPlace(matmul, [&] {
      matmul.setResultPermutation(perm);
      matmul.getResult().setType(transpose.getType());
    });
    rewriter.replaceOp(transpose, matmul.getResult());
    ++folded;
    return success();
  }
};

/// bias_add -> (reshape ->) gelu and gelu_backward: the sum's only
/// readers are gelus (and their backward, as the saved input), which
/// then add the bias themselves; a reshape between keeps the bias's
/// dimension last and reads the bias_add's input instead.
struct FoldBiasAddIntoGelu : public Fold<BiasAddOp> {
  using Fold::Fold;

  LogicalResult matchAndRewrite(BiasAddOp biasAdd,
                                PatternRewriter &rewriter) const override {
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
        return failure();
      if (auto gelu = dyn_cast<GeluOp>(user)) {
        if (gelu.getBias())
          return failure();
        anyGelu = true;
        continue;
      }
      auto grad = dyn_cast<GeluBackwardOp>(user);
      if (!grad || grad.getBias() || use.getOperandNumber() != 1)
        return failure();
    }
    // A gelu's bias runs along the last dimension only.
    if (!anyGelu ||
        cast<RankedTensorType>(biasAdd.getBias().getType()).getRank() != 1)
      return failure();
    Value input = biasAdd.getInput(), bias = biasAdd.getBias();
    if (reshape) {
      rewriter.modifyOpInPlace(
          reshape, [&] { reshape.getInputMutable().assign(input); });
      input = reshape.getResult();
    }
    for (Operation *user : llvm::to_vector(sum.getUsers()))
      rewriter.modifyOpInPlace(user, [&] {
        if (auto gelu = dyn_cast<GeluOp>(user)) {
          gelu.getInputMutable().assign(input);
          gelu.getBiasMutable().assign(bias);
        } else {
          auto grad = cast<GeluBackwardOp>(user);
          grad.getInputMutable().assign(input);
          grad.getBiasMutable().assign(bias);
        }
      });
    rewriter.eraseOp(biasAdd);
    ++folded;
    return success();
  }
};

/// scale -> causal_mask (fill -inf) -> softmax, either one alone.
struct FoldIntoSoftmax : public Fold<SoftmaxOp> {
  using Fold::Fold;

  LogicalResult matchAndRewrite(SoftmaxOp softmax,
                                PatternRewriter &rewriter) const override {
    if (softmax.getCausal() || softmax.getScale().convertToDouble() != 1.0)
      return failure();
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
      return failure();
    rewriter.modifyOpInPlace(softmax, [&] {
      softmax.getInputMutable().assign(input);
      if (mask)
        softmax.setCausal(true);
      if (scale)
        softmax.setScaleAttr(
            rewriter.getF64FloatAttr(scale.getFactor().convertToDouble()));
    });
    if (mask) {
      rewriter.eraseOp(mask);
      ++folded;
    }
    if (scale) {
      rewriter.eraseOp(scale);
      ++folded;
    }
    return success();
  }
};

/// softmax_backward -> causal_mask (fill 0) -> scale, either one alone.
struct FoldIntoSoftmaxBackward : public Fold<SoftmaxBackwardOp> {
  using Fold::Fold;

  LogicalResult matchAndRewrite(SoftmaxBackwardOp grad,
                                PatternRewriter &rewriter) const override {
    if (grad.getCausal() || grad.getScale().convertToDouble() != 1.0)
      return failure();
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
      return failure();
    rewriter.modifyOpInPlace(grad, [&] {
      if (mask)
        grad.setCausal(true);
      if (scale)
        grad.setScaleAttr(
            rewriter.getF64FloatAttr(scale.getFactor().convertToDouble()));
    });
    rewriter.replaceAllUsesWith(result, grad.getResult());
    if (scale) {
      rewriter.eraseOp(scale);
      ++folded;
    }
    if (mask) {
      rewriter.eraseOp(mask);
      ++folded;
    }
    return success();
  }
};

struct FuseKernelsPass : public braid::impl::FuseKernelsBase<FuseKernelsPass> {
  using FuseKernelsBase::FuseKernelsBase;

  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    if (softmax)
      patterns.add<FoldIntoSoftmax, FoldIntoSoftmaxBackward>(context,
                                                             foldedOps);
    if (biasGelu)
      patterns.add<FoldBiasAddIntoGelu>(context, foldedOps);
    if (transposes) {
      // Batched matmuls over [batch x heads] flattened into one dimension
      // take the two back, so that the head transposes around them fold;
      // a transpose folds into its readers before its writer.
      patterns.add<UnflattenBatch>(context);
      patterns.add<FoldTransposeIntoMatmulOperands>(context, foldedOps,
                                                    /*benefit=*/2);
      patterns.add<FoldTransposeIntoMatmulResult>(context, foldedOps);
      if (slices)
        patterns.add<FoldSliceIntoMatmuls>(context, foldedOps);
    }
    // Only the folds: canonicalize runs before (braid-compile's pipeline),
    // and folding here would rewrite what the tests hold fixed.
    GreedyRewriteConfig config;
    config.enableFolding(false)
        .enableConstantCSE(false)
        .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    // Each fold removes an op, so the folds end well within the driver's
    // iterations; like canonicalize, the pass does not fail if they did not.
    (void)applyPatternsGreedily(getOperation(), std::move(patterns), config);
  }
};

} // namespace
