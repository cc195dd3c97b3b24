//===- FuseKernels.cpp - fold ops into the kernels that can run them -----===//
//
// Folds attention's score scaling and causal mask into braid.softmax, their
// gradients into braid.softmax_backward, a broadcast added to a tensor into
// a bias_add, a bias_add into the gelu and gelu_backward that read it, and
// transposes and slices of heads into the matmuls that read them (Passes.td
// shows the IR before and after). A
// folded op's result must have no reader but the ops it folds into, all on
// its stream.
//
//===----------------------------------------------------------------------===//

#include "braid/Dialect/Braid/BraidDialect.h"
#include "braid/Dialect/Braid/BraidOps.h"
#include "braid/Dialect/Braid/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"
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
    if (broadcasts) {
      SmallVector<BroadcastOp> spread;
      getOperation().walk([&](BroadcastOp op) { spread.push_back(op); });
      for (BroadcastOp op : spread)
        foldBroadcastIntoAdds(op);
    }
    SmallVector<SoftmaxOp> forward;
    SmallVector<SoftmaxBackwardOp> backward;
    SmallVector<BiasAddOp> biases;
    getOperation().walk([&](Operation *op) {
      if (auto forwardOp = dyn_cast<SoftmaxOp>(op))
        forward.push_back(forwardOp);
      else if (auto grad = dyn_cast<SoftmaxBackwardOp>(op))
        backward.push_back(grad);
      else if (auto bias = dyn_cast<BiasAddOp>(op))
        biases.push_back(bias);
    });
    if (softmax) {
      for (SoftmaxOp op : forward)
        foldIntoSoftmax(op);
      for (SoftmaxBackwardOp grad : backward)
        foldIntoSoftmaxBackward(grad);
    }
    if (biasGelu)
      for (BiasAddOp bias : biases)
        foldIntoGelu(bias);
    if (!transposes)
      return;
    // Batched matmuls over [batch x heads] flattened into one dimension
    // first take the two back, so that the head transposes around them
    // fold.
    SmallVector<MatmulOp> matmuls;
    getOperation().walk([&](MatmulOp matmul) { matmuls.push_back(matmul); });
    for (MatmulOp matmul : matmuls)
      unflattenBatch(matmul);
    SmallVector<TransposeOp> permutes;
    getOperation().walk(
        [&](TransposeOp transpose) { permutes.push_back(transpose); });
    for (TransposeOp transpose : permutes)
      if (!foldIntoMatmulOperands(transpose))
        foldIntoMatmulResult(transpose);
    if (!slices)
      return;
    SmallVector<SliceOp> cuts;
    getOperation().walk([&](SliceOp slice) { cuts.push_back(slice); });
    for (SliceOp slice : cuts)
      foldSliceIntoMatmuls(slice);
  }

  /// slice -> reshape -> matmul operands: a slice of a range of its input's
  /// last dimension (whole elsewhere, unit steps), read only by reshapes
  /// that split that dimension into [h, d] with d dividing the range's
  /// start, each read only by matmuls that see the h dimension as a batch
  /// dimension (a fused projection's q, k or v, split into heads): the
  /// matmuls read the input reshaped to [..., n / d, d] (a view) through
  /// `lhs_slice`/`rhs_slice`, h entries from start / d, and the slice's
  /// copy goes.
  bool foldSliceIntoMatmuls(SliceOp slice) {
    auto in = cast<RankedTensorType>(slice.getInput().getType());
    auto out = cast<RankedTensorType>(slice.getType());
    int64_t rank = in.getRank(), last = rank - 1;
    if (rank < 1 ||
        (slice.getStrides() &&
         llvm::any_of(*slice.getStrides(), [](int64_t s) { return s != 1; })))
      return false;
    ArrayRef<int64_t> offsets = slice.getOffsets();
    for (int64_t d = 0; d < last; ++d)
      if (offsets[d] != 0 || in.getDimSize(d) != out.getDimSize(d))
        return false;
    int64_t start = offsets[last], n = in.getDimSize(last);
    // The head size every reshape splits the range into, and the checks.
    int64_t head = 0;
    if (slice.getResult().use_empty())
      return false;
    for (Operation *user : slice.getResult().getUsers()) {
      auto reshape = dyn_cast<ReshapeOp>(user);
      if (!reshape || !sameStream(reshape, slice))
        return false;
      ArrayRef<int64_t> to =
          cast<RankedTensorType>(reshape.getType()).getShape();
      if (int64_t(to.size()) != rank + 1 ||
          to.take_front(last) != out.getShape().take_front(last) ||
          (head && to.back() != head))
        return false;
      head = to.back();
      if (head < 1 || start % head || n % head ||
          reshape.getResult().use_empty())
        return false;
      for (OpOperand &use : reshape.getResult().getUses()) {
        auto matmul = dyn_cast<MatmulOp>(use.getOwner());
        if (!matmul || !sameStream(matmul, reshape))
          return false;
        bool lhs = use.getOperandNumber() == 0;
        if (lhs ? matmul.getLhsSlice() : matmul.getRhsSlice())
          return false;
        // The heads (dimension `last` of the split value) must be a batch
        // dimension of the product.
        std::optional<ArrayRef<int64_t>> perm =
            lhs ? matmul.getLhsPermutation() : matmul.getRhsPermutation();
        int64_t at = perm ? llvm::find(*perm, last) - perm->begin() : last;
        if (at >= rank - 1)
          return false;
      }
    }
    // The input split into heads, a view, where the slice was.
    OpBuilder builder(slice);
    SmallVector<int64_t> split(in.getShape().drop_back());
    split.append({n / head, head});
    auto heads = ReshapeOp::create(builder, slice.getLoc(), in.clone(split),
                                   slice.getInput());
    if (Attribute stream = slice->getAttr(BraidDialect::kStreamAttrName))
      heads->setAttr(BraidDialect::kStreamAttrName, stream);
    auto range = builder.getDenseI64ArrayAttr(
        {last, start / head, out.getDimSize(last) / head});
    for (Operation *user : llvm::to_vector(slice.getResult().getUsers())) {
      auto reshape = cast<ReshapeOp>(user);
      for (OpOperand &use :
           llvm::make_early_inc_range(reshape.getResult().getUses())) {
        auto matmul = cast<MatmulOp>(use.getOwner());
        if (use.getOperandNumber() == 0)
          matmul.setLhsSliceAttr(range);
        else
          matmul.setRhsSliceAttr(range);
        use.set(heads.getResult());
      }
      reshape.erase();
      ++foldedOps;
    }
    slice.erase();
    ++foldedOps;
    return true;
  }

  /// The leading dimensions `value` had before a braid.reshape merged them
  /// into its first one (the last two kept), or none.
  static std::optional<SmallVector<int64_t>> mergedBatch(Value value) {
    auto reshape = value.getDefiningOp<ReshapeOp>();
    if (!reshape)
      return std::nullopt;
    ArrayRef<int64_t> to = cast<RankedTensorType>(value.getType()).getShape();
    ArrayRef<int64_t> from =
        cast<RankedTensorType>(reshape.getInput().getType()).getShape();
    if (to.size() != 3 || from.size() < 4 ||
        to.take_back(2) != from.take_back(2))
      return std::nullopt;
    return SmallVector<int64_t>(from.drop_back(2));
  }

  /// A batched matmul of [b x h, m, k] operands that reshapes merged from
  /// [b, h, m, k] (attention's bmm as AOT autograd writes it) becomes the
  /// matmul of the [b, h, ...] values, when a transpose is among them, so
  /// that the transpose can fold. Reshapes (views, which move nothing) take
  /// the other operand and the result to and from the merged form where
  /// nothing else does.
  void unflattenBatch(MatmulOp matmul) {
    auto type = cast<RankedTensorType>(matmul.getType());
    if (type.getRank() != 3 || matmul.getLhsPermutation() ||
        matmul.getRhsPermutation() || matmul.getResultPermutation())
      return;
    std::optional<SmallVector<int64_t>> batch = mergedBatch(matmul.getLhs());
    if (!batch)
      batch = mergedBatch(matmul.getRhs());
    if (!batch)
      return;
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
      return;
    OpBuilder builder(matmul);
    auto reshape = [&](Value v, Type to) -> Value {
      auto op = ReshapeOp::create(builder, matmul.getLoc(), to, v);
      if (Attribute stream = matmul->getAttr(BraidDialect::kStreamAttrName))
        op->setAttr(BraidDialect::kStreamAttrName, stream);
      return op.getResult();
    };
    if (!lhs)
      lhs = reshape(matmul.getLhs(), splitType(matmul.getLhs()));
    if (!rhs)
      rhs = reshape(matmul.getRhs(), splitType(matmul.getRhs()));
    auto split = cast<MatmulOp>(builder.clone(*matmul));
    split->setOperands({lhs, rhs});
    split.getResult().setType(resultType);
    // Readers of the merged result: a reshape to [b, h, ...] reads the new
    // one instead; anything else, a reshape back.
    Value merged;
    for (OpOperand &use :
         llvm::make_early_inc_range(matmul.getResult().getUses())) {
      auto user = dyn_cast<ReshapeOp>(use.getOwner());
      if (user && user.getType() == resultType) {
        user.getResult().replaceAllUsesWith(split.getResult());
        user.erase();
        continue;
      }
      if (!merged) {
        builder.setInsertionPointAfter(split);
        merged = reshape(split.getResult(), type);
      }
      use.set(merged);
    }
    llvm::SmallSetVector<Operation *, 2> defs;
    for (Value operand : matmul->getOperands())
      if (auto def = operand.getDefiningOp<ReshapeOp>())
        defs.insert(def);
    matmul.erase();
    for (Operation *def : defs)
      if (def->use_empty())
        def->erase();
  }

  /// transpose -> matmul operands: every reader a matmul that reads the
  /// operand where it is, through `lhs_permutation`/`rhs_permutation`.
  bool foldIntoMatmulOperands(TransposeOp transpose) {
    ArrayRef<int64_t> perm = transpose.getPermutation();
    int64_t rank = perm.size();
    // BLAS needs a unit-stride dimension in each matrix (MatmulOp's
    // verifier says the same).
    if (rank < 2 || (perm[rank - 1] != rank - 1 && perm[rank - 2] != rank - 1))
      return false;
    Value result = transpose.getResult();
    if (result.use_empty())
      return false;
    for (OpOperand &use : result.getUses()) {
      auto matmul = dyn_cast<MatmulOp>(use.getOwner());
      if (!matmul || !sameStream(matmul, transpose) ||
          (use.getOperandNumber() == 0 ? matmul.getLhsPermutation()
                                       : matmul.getRhsPermutation()))
        return false;
    }
    for (OpOperand &use : llvm::make_early_inc_range(result.getUses())) {
      auto matmul = cast<MatmulOp>(use.getOwner());
      if (use.getOperandNumber() == 0)
        matmul.setLhsPermutation(perm);
      else
        matmul.setRhsPermutation(perm);
      use.set(transpose.getInput());
    }
    transpose.erase();
    ++foldedOps;
    return true;
  }

  /// matmul -> transpose: the product written transposed, through
  /// `result_permutation`, when the transpose stores one of the product's
  /// last two dimensions last and is the product's only reader.
  void foldIntoMatmulResult(TransposeOp transpose) {
    ArrayRef<int64_t> perm = transpose.getPermutation();
    int64_t rank = perm.size();
    auto matmul = transpose.getInput().getDefiningOp<MatmulOp>();
    if (!matmul || rank < 2 ||
        (perm.back() != rank - 1 && perm.back() != rank - 2) ||
        matmul.getResultPermutation() || !foldsInto(matmul, transpose))
      return;
    matmul.setResultPermutation(perm);
    matmul.getResult().setType(transpose.getType());
    transpose.getResult().replaceAllUsesWith(matmul.getResult());
    transpose.erase();
    ++foldedOps;
  }

  /// broadcast -> add: a tensor broadcast along its result's leading
  /// dimensions (a positional embedding over a batch's sequences) that only
  /// adds read becomes the bias of a braid.bias_add instead, which reads it
  /// once per row: the broadcast's copy goes. The sums are the same.
  void foldBroadcastIntoAdds(BroadcastOp broadcast) {
    ArrayRef<int64_t> dims = broadcast.getDims();
    auto input = cast<RankedTensorType>(broadcast.getInput().getType());
    if (input.getRank() < 1 || !isa<FloatType>(input.getElementType()))
      return;
    for (size_t i = 0; i < dims.size(); ++i)
      if (dims[i] != int64_t(i))
        return;
    Value spread = broadcast.getResult();
    SmallVector<AddOp> adds;
    for (Operation *user : spread.getUsers()) {
      auto add = dyn_cast<AddOp>(user);
      if (!add || !sameStream(add, broadcast) || add.getLhs() == add.getRhs())
        return;
      adds.push_back(add);
    }
    if (adds.empty())
      return;
    for (AddOp add : adds) {
      Value other = add.getLhs() == spread ? add.getRhs() : add.getLhs();
      OpBuilder builder(add);
      auto biasAdd = BiasAddOp::create(builder, add.getLoc(), add.getType(),
                                       other, broadcast.getInput());
      biasAdd->setDiscardableAttrs(add->getDiscardableAttrDictionary());
      add.getResult().replaceAllUsesWith(biasAdd.getResult());
      add.erase();
    }
    broadcast.erase();
    ++foldedOps;
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
    // A gelu's bias runs along the last dimension only.
    if (!anyGelu ||
        cast<RankedTensorType>(biasAdd.getBias().getType()).getRank() != 1)
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
