//===- BraidOps.cpp - braid operations --------------------------*- C++ -*-===//
//
// Verifiers, type inference and costs of the braid ops, but for the data
// movement ops (BraidDataMovementOps.cpp), the optimizer ops
// (BraidOptimizerOps.cpp) and attention (BraidAttentionOps.cpp).
//
//===----------------------------------------------------------------------===//

#include "braid/Dialect/Braid/BraidOps.h"
#include "VerifierUtils.h"
#include "braid-common/DeviceGroup.h"
#include "braid-common/OpTable.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

#include <iterator>

using namespace mlir;
using namespace braid;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

/// `shape` read through `perm` (dimension d is shape[perm[d]]), or as it is.
static SmallVector<int64_t>
permutedShape(ArrayRef<int64_t> shape, std::optional<ArrayRef<int64_t>> perm) {
  if (!perm)
    return SmallVector<int64_t>(shape);
  SmallVector<int64_t> out;
  for (int64_t p : *perm)
    out.push_back(shape[p]);
  return out;
}

/// `shape` cut to `slice` (`[dim, offset, size]`: dimension dim has size
/// entries), or as it is.
static SmallVector<int64_t>
slicedShape(ArrayRef<int64_t> shape, std::optional<ArrayRef<int64_t>> slice) {
  SmallVector<int64_t> out(shape);
  if (slice)
    out[(*slice)[0]] = (*slice)[2];
  return out;
}

/// Operand `i` of a matmul (an op or its adaptor) as the product sees it:
/// sliced, then permuted.
template <typename MatmulLike>
static SmallVector<int64_t> productOperandShape(MatmulLike op, unsigned i) {
  ArrayRef<int64_t> shape =
      cast<ShapedType>((i == 0 ? op.getLhs() : op.getRhs()).getType())
          .getShape();
  return i == 0 ? permutedShape(slicedShape(shape, op.getLhsSlice()),
                                op.getLhsPermutation())
                : permutedShape(slicedShape(shape, op.getRhsSlice()),
                                op.getRhsPermutation());
}

/// The batch, M, K, N sizes of a matmul, from the operands as the product
/// sees them (through their slices and permutations); assumes operands
/// that inferReturnTypes accepts.
namespace {
struct MatmulSizes {
  SmallVector<int64_t> batch;
  int64_t m, k, n, rhsK;
};
} // namespace

template <typename MatmulLike>
static MatmulSizes getMatmulSizes(MatmulLike op) {
  SmallVector<int64_t> a = productOperandShape(op, 0);
  SmallVector<int64_t> b = productOperandShape(op, 1);
  MatmulSizes s;
  s.batch.assign(a.begin(), a.end() - 2);
  int64_t a0 = a[a.size() - 2], a1 = a[a.size() - 1];
  int64_t b0 = b[b.size() - 2], b1 = b[b.size() - 1];
  s.m = op.getTransposeA() ? a1 : a0;
  s.k = op.getTransposeA() ? a0 : a1;
  s.rhsK = op.getTransposeB() ? b1 : b0;
  s.n = op.getTransposeB() ? b0 : b1;
  return s;
}

/// Checks matmul permutation `name` of a rank-`rank` value: a permutation
/// whose matrices keep a unit-stride dimension (an operand's last dimension
/// at one of the last two places; the result's last dimension one of the
/// product's last two).
static LogicalResult checkMatmulPermutation(std::optional<Location> location,
                                            StringRef name,
                                            ArrayRef<int64_t> perm,
                                            int64_t rank, bool result) {
  StringRef op = MatmulOp::getOperationName();
  if (int64_t(perm.size()) != rank)
    return inferError(location, op, name, " has ", perm.size(),
                      " entries for rank ", rank);
  SmallVector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return inferError(location, op, name, " ", shapeString(perm),
                        " is not a permutation of ", rank, " dimensions");
    seen[p] = true;
  }
  if (result && perm.back() != rank - 1 && perm.back() != rank - 2)
    return inferError(location, op, name,
                      " must store one of the product's last two dimensions "
                      "last, but is ",
                      shapeString(perm));
  if (!result && perm[rank - 1] != rank - 1 && perm[rank - 2] != rank - 1)
    return inferError(location, op, name,
                      " must put the operand's last dimension at one of the "
                      "last two places, but is ",
                      shapeString(perm));
  return success();
}

/// Checks matmul slice `name` (`[dim, offset, size]`) of operand `type`
/// read through `perm`: a range of a dimension the product reads as a batch
/// dimension.
static LogicalResult checkMatmulSlice(std::optional<Location> location,
                                      StringRef name, ArrayRef<int64_t> slice,
                                      RankedTensorType type,
                                      std::optional<ArrayRef<int64_t>> perm) {
  StringRef op = MatmulOp::getOperationName();
  int64_t rank = type.getRank();
  if (slice.size() != 3)
    return inferError(location, op, name,
                      " must be [dim, offset, size], but has ", slice.size(),
                      " entries");
  int64_t dim = slice[0], offset = slice[1], size = slice[2];
  if (dim < 0 || dim >= rank)
    return inferError(location, op, name, " slices dimension ", dim,
                      " of a rank-", rank, " operand");
  if (offset < 0 || size < 1 || offset + size > type.getDimSize(dim))
    return inferError(location, op, name, " takes ", size, " entries from ",
                      offset, " of dimension ", dim, ", which has ",
                      type.getDimSize(dim));
  int64_t at = perm ? llvm::find(*perm, dim) - perm->begin() : dim;
  if (at >= rank - 2)
    return inferError(location, op, name, " slices dimension ", dim,
                      ", which the product reads as a matrix dimension; only "
                      "a batch dimension can be sliced");
  return success();
}

// The one rule of a matmul's result type: the verifier compares the
// declared type with it (InferTypeOpInterface), and builders and the
// Python IR builder (braid.ir, through libBraidCAPI) take it from here.
LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  StringRef op = getOperationName();
  auto types = rankedOperandTypes(location, op, adaptor.getOperands());
  if (failed(types))
    return failure();
  RankedTensorType a = (*types)[0], b = (*types)[1];
  if (a.getRank() < 2)
    return inferError(location, op,
                      "lhs must have rank 2 or more, but has rank ",
                      a.getRank());
  if (b.getRank() < 2)
    return inferError(location, op,
                      "rhs must have rank 2 or more, but has rank ",
                      b.getRank());
  if (auto perm = adaptor.getLhsPermutation())
    if (failed(checkMatmulPermutation(location, "lhs_permutation", *perm,
                                      a.getRank(), false)))
      return failure();
  if (auto perm = adaptor.getRhsPermutation())
    if (failed(checkMatmulPermutation(location, "rhs_permutation", *perm,
                                      b.getRank(), false)))
      return failure();
  if (auto slice = adaptor.getLhsSlice())
    if (failed(checkMatmulSlice(location, "lhs_slice", *slice, a,
                                adaptor.getLhsPermutation())))
      return failure();
  if (auto slice = adaptor.getRhsSlice())
    if (failed(checkMatmulSlice(location, "rhs_slice", *slice, b,
                                adaptor.getRhsPermutation())))
      return failure();
  SmallVector<int64_t> aShape = productOperandShape(adaptor, 0);
  SmallVector<int64_t> bShape = productOperandShape(adaptor, 1);
  ArrayRef<int64_t> aBatch = ArrayRef<int64_t>(aShape).drop_back(2);
  ArrayRef<int64_t> bBatch = ArrayRef<int64_t>(bShape).drop_back(2);
  if (b.getRank() != 2 && aBatch != bBatch)
    return inferError(location, op, "batch dimensions ", shapeString(aBatch),
                      " of lhs and ", shapeString(bBatch),
                      " of rhs differ (rhs may also have rank 2)");
  MatmulSizes s = getMatmulSizes(adaptor);
  if (s.k != s.rhsK)
    return inferError(location, op, "contracting sizes differ: lhs has ", s.k,
                      ", rhs has ", s.rhsK);
  SmallVector<int64_t> shape(s.batch);
  shape.push_back(s.m);
  shape.push_back(s.n);
  if (auto perm = adaptor.getResultPermutation()) {
    if (failed(checkMatmulPermutation(location, "result_permutation", *perm,
                                      shape.size(), true)))
      return failure();
    shape = permutedShape(shape, *perm);
  }
  inferred.push_back(RankedTensorType::get(shape, a.getElementType()));
  return success();
}

LogicalResult MatmulOp::verify() {
  // The shapes are inferReturnTypes'; the operands' element types remain.
  return verifySameElementType(*this, "lhs", getLhs(), "rhs", getRhs());
}

/// Whether `perm` swaps the last two dimensions and keeps the others.
static bool swapsLastTwo(ArrayRef<int64_t> perm) {
  int64_t rank = perm.size();
  if (rank < 2 || perm[rank - 2] != rank - 1 || perm[rank - 1] != rank - 2)
    return false;
  return llvm::equal(perm.drop_back(2), llvm::seq<int64_t>(0, rank - 2));
}

LogicalResult MatmulOp::canonicalize(MatmulOp op, PatternRewriter &rewriter) {
  // The operand a transpose of its last two dimensions writes, where the
  // product reads it without a permutation or a slice.
  auto transposed = [&](unsigned i) -> Value {
    bool lhs = i == 0;
    if (lhs ? op.getLhsPermutation() || op.getLhsSlice()
            : op.getRhsPermutation() || op.getRhsSlice())
      return nullptr;
    auto transpose = op->getOperand(i).getDefiningOp<TransposeOp>();
    if (!transpose || !swapsLastTwo(transpose.getPermutation()))
      return nullptr;
    return transpose.getInput();
  };
  Value lhs = transposed(0), rhs = transposed(1);
  if (!lhs && !rhs)
    return failure();
  rewriter.modifyOpInPlace(op, [&] {
    if (lhs) {
      op.getLhsMutable().assign(lhs);
      op.setTransposeA(!op.getTransposeA());
    }
    if (rhs) {
      op.getRhsMutable().assign(rhs);
      op.setTransposeB(!op.getTransposeB());
    }
  });
  return success();
}

cost::ProductShape MatmulOp::getProductShape() {
  MatmulSizes s = getMatmulSizes(*this);
  uint64_t batch = 1;
  for (int64_t d : s.batch)
    batch *= d;
  return {batch, uint64_t(s.m), uint64_t(s.n), uint64_t(s.k)};
}

// A sliced operand is read in part: the slice's bytes.
uint64_t MatmulOp::getBytesRead() {
  uint64_t bytes = 0;
  for (unsigned i = 0; i < 2; ++i) {
    auto type = tensorType(getOperand(i));
    uint64_t whole = getTensorBytes(type), elements = 1;
    for (int64_t d : productOperandShape(*this, i))
      elements *= uint64_t(d);
    if (type.getNumElements() > 0)
      bytes += whole / uint64_t(type.getNumElements()) * elements;
  }
  return bytes;
}

uint64_t MatmulOp::getFlops() {
  cost::ProductShape p = getProductShape();
  return 2 * p.batch * p.m * p.n * p.k;
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

/// The input of `value` where a braid.broadcast along its leading
/// dimensions writes it from a float tensor of rank 1 or more, on
/// `reader`'s stream.
static Value broadcastAlongLeadingDims(Value value, Operation *reader) {
  auto broadcast = value.getDefiningOp<BroadcastOp>();
  if (!broadcast || broadcast->getAttr(BraidDialect::kStreamAttrName) !=
                        reader->getAttr(BraidDialect::kStreamAttrName))
    return nullptr;
  auto input = cast<RankedTensorType>(broadcast.getInput().getType());
  if (input.getRank() < 1 || !isa<FloatType>(input.getElementType()) ||
      !llvm::equal(broadcast.getDims(),
                   llvm::seq<int64_t>(0, broadcast.getDims().size())))
    return nullptr;
  return broadcast.getInput();
}

LogicalResult AddOp::canonicalize(AddOp op, PatternRewriter &rewriter) {
  // x + broadcast(b) (either side) adds b as a bias; x + x stays.
  if (op.getLhs() == op.getRhs())
    return failure();
  Value input = op.getLhs(), bias = broadcastAlongLeadingDims(op.getRhs(), op);
  if (!bias) {
    input = op.getRhs();
    bias = broadcastAlongLeadingDims(op.getLhs(), op);
  }
  if (!bias)
    return failure();
  auto biasAdd =
      BiasAddOp::create(rewriter, op.getLoc(), op.getType(), input, bias);
  biasAdd->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  rewriter.replaceOp(op, biasAdd.getResult());
  return success();
}

// One flop an element for the simple elementwise ops. Transcendental and
// multi-pass ops count the arithmetic of their usual formulation; these
// constants are documented in docs/Dialect.md.
uint64_t AddOp::getFlops() { return numElements(getResult()); }
uint64_t SubOp::getFlops() { return numElements(getResult()); }
uint64_t MulOp::getFlops() { return numElements(getResult()); }
uint64_t DivOp::getFlops() { return numElements(getResult()); }
uint64_t ScaleOp::getFlops() { return numElements(getResult()); }
uint64_t BiasAddOp::getFlops() { return numElements(getResult()); }
uint64_t CastOp::getFlops() { return numElements(getResult()); }
uint64_t ReluOp::getFlops() { return numElements(getResult()); }
uint64_t ReluBackwardOp::getFlops() { return numElements(getResult()); }
// A folded bias adds one flop an element, as braid.bias_add is charged.
uint64_t GeluOp::getFlops() {
  return (getBias() ? 9 : 8) * numElements(getResult());
}
uint64_t GeluBackwardOp::getFlops() {
  return (getBias() ? 15 : 14) * numElements(getResult());
}
/// The flops of a folded scale and causal mask: one per element each, as
/// braid.scale and braid.causal_mask are charged.
template <typename Op> static uint64_t foldedFlops(Op op) {
  uint64_t n = numElements(op.getResult());
  return (op.getScale().convertToDouble() != 1.0 ? n : 0) +
         (op.getCausal() ? n : 0);
}
uint64_t SoftmaxOp::getFlops() {
  return 5 * numElements(getResult()) + foldedFlops(*this);
}
uint64_t SoftmaxBackwardOp::getFlops() {
  return 4 * numElements(getResult()) + foldedFlops(*this);
}
uint64_t LogSoftmaxOp::getFlops() { return 5 * numElements(getResult()); }
uint64_t LogSoftmaxBackwardOp::getFlops() {
  return 4 * numElements(getResult());
}
uint64_t CausalMaskOp::getFlops() { return numElements(getResult()); }

/// The flops of one element of braid.unary's functions: exp and log as a
/// few multiply-adds of their polynomial, tanh, sigmoid and silu with the
/// exp they are built on (docs/Dialect.md).
static uint64_t unaryFlops(UnaryKind kind) {
  switch (kind) {
  case UnaryKind::Sqrt:
    return 1;
  case UnaryKind::Rsqrt:
    return 2;
  case UnaryKind::Exp:
  case UnaryKind::Log:
    return 4;
  case UnaryKind::Sigmoid:
    return 6;
  case UnaryKind::Tanh:
  case UnaryKind::Silu:
    return 7;
  }
  llvm_unreachable("unknown unary kind");
}

uint64_t UnaryOp::getFlops() {
  return unaryFlops(getKind()) * numElements(getResult());
}
// tanh and sigmoid: two multiplies and a subtraction on the saved output,
// then the gradient's multiply; silu recomputes its sigmoid.
uint64_t UnaryBackwardOp::getFlops() {
  uint64_t perElement = getKind() == UnaryKind::Silu ? 11 : 4;
  return perElement * numElements(getResult());
}
// exp(exponent * log(x)), as std::pow computes it.
uint64_t PowOp::getFlops() { return 9 * numElements(getResult()); }
uint64_t WhereOp::getFlops() { return numElements(getResult()); }

// A Philox draw an element (ten rounds of two multiplies): charged as one
// flop, the op being bound by writing the mask.
uint64_t DropoutMaskOp::getFlops() { return numElements(getResult()); }

LogicalResult DropoutMaskOp::verify() {
  double keep = getKeep().convertToDouble();
  if (!(keep >= 0.0 && keep <= 1.0))
    return emitOpError() << "keep probability " << keep << " is not in [0, 1]";
  int64_t seed = int64_t(getSeed()), stream = int64_t(getStream());
  if (seed < 0 || seed > 0xFFFFFFFFll || stream < 0 || stream > 0xFFFFFFFFll)
    return emitOpError() << "seed " << seed << " and stream " << stream
                         << " must be in [0, 2^32)";
  return success();
}

LogicalResult UnaryBackwardOp::verify() {
  // The kinds with a backward: Braid_UnaryCase's hasBackward in the ODS,
  // the plan loader's list too (the enums share their values).
  if (ops::hasBackward(ops::UnaryKind(uint32_t(getKind()))))
    return success();
  return emitOpError() << "has no form for '" << stringifyUnaryKind(getKind())
                       << "' (only tanh, sigmoid and silu): its gradient is "
                          "written with the forward ops and braid.mul or "
                          "braid.div";
}

/// Checks a bias added along the last dimension of `inputValue`
/// (braid.gelu's folded one), or along its last dimensions where
/// `trailing` (braid.bias_add).
static LogicalResult verifyBias(Operation *op, Value inputValue,
                                Value biasValue, bool trailing = false) {
  RankedTensorType input = tensorType(inputValue), bias = tensorType(biasValue);
  if (input.getRank() < 1)
    return op->emitOpError() << "input must have rank 1 or more";
  if (!trailing && bias.getRank() != 1)
    return op->emitOpError()
           << "bias must have rank 1, but has rank " << bias.getRank();
  if (bias.getRank() < 1 || bias.getRank() > input.getRank())
    return op->emitOpError()
           << "bias must have rank 1 to " << input.getRank()
           << " (the input's), but has rank " << bias.getRank();
  if (bias.getRank() == 1 && bias.getDimSize(0) != input.getShape().back())
    return op->emitOpError()
           << "bias size " << bias.getDimSize(0)
           << " differs from the last dimension of the input ("
           << input.getShape().back() << ")";
  if (bias.getShape() != input.getShape().take_back(size_t(bias.getRank())))
    return op->emitOpError()
           << "bias shape [" << bias.getShape()
           << "] differs from the input's last " << bias.getRank()
           << " dimensions ["
           << input.getShape().take_back(size_t(bias.getRank())) << "]";
  return verifySameElementType(op, "input", inputValue, "bias", biasValue);
}

LogicalResult BiasAddOp::verify() {
  return verifyBias(*this, getInput(), getBias(), /*trailing=*/true);
}

LogicalResult GeluOp::verify() {
  return getBias() ? verifyBias(*this, getInput(), getBias()) : success();
}

LogicalResult GeluBackwardOp::verify() {
  return getBias() ? verifyBias(*this, getInput(), getBias()) : success();
}

LogicalResult CastOp::verify() {
  return verifyShape(*this, "result", getResult(),
                     tensorType(getInput()).getShape());
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// A reduction's result type, the one rule that its verifier
/// (InferTypeOpInterface) and its builders share.
template <typename ReduceOp>
static LogicalResult inferReduce(std::optional<Location> location,
                                 typename ReduceOp::Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  StringRef op = ReduceOp::getOperationName();
  auto types = rankedOperandTypes(location, op, adaptor.getOperands());
  if (failed(types))
    return failure();
  RankedTensorType input = types->front();
  ArrayRef<int64_t> dims = adaptor.getDims();
  if (dims.empty())
    return inferError(location, op, "dims must not be empty");
  for (auto [i, dim] : llvm::enumerate(dims)) {
    if (dim < 0 || dim >= input.getRank())
      return inferError(location, op, "reduced dimension ", dim,
                        " is out of range for rank ", input.getRank());
    if (i > 0 && dims[i - 1] >= dim)
      return inferError(location, op, "dims must be strictly increasing, but ",
                        dim, " follows ", dims[i - 1]);
  }
  SmallVector<int64_t> shape;
  for (auto [i, size] : llvm::enumerate(input.getShape())) {
    if (!llvm::is_contained(dims, static_cast<int64_t>(i)))
      shape.push_back(size);
    else if (adaptor.getKeepDims())
      shape.push_back(1);
  }
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult ReduceSumOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  return inferReduce<ReduceSumOp>(location, adaptor, inferred);
}
LogicalResult ReduceMeanOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> location,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  return inferReduce<ReduceMeanOp>(location, adaptor, inferred);
}
uint64_t ReduceSumOp::getFlops() { return numElements(getInput()); }
uint64_t ReduceMeanOp::getFlops() {
  return numElements(getInput()) + numElements(getResult());
}

//===----------------------------------------------------------------------===//
// Softmax family and the causal mask
//===----------------------------------------------------------------------===//

/// Checks a softmax's or its backward's folded causal mask: over the last
/// two dimensions, which are equal, along the last one.
static LogicalResult verifyFoldedCausal(Operation *op, Value input,
                                        int64_t dim) {
  ArrayRef<int64_t> shape = tensorType(input).getShape();
  int64_t rank = shape.size();
  if (rank < 2)
    return op->emitOpError()
           << "causal needs rank 2 or more, but the input has rank " << rank;
  if (dim != rank - 1)
    return op->emitOpError() << "causal needs dim to be the last dimension ("
                             << rank - 1 << "), but dim is " << dim;
  if (shape[rank - 2] != shape[rank - 1])
    return op->emitOpError()
           << "causal needs the last two dimensions to be equal, but they are "
           << shape[rank - 2] << " and " << shape[rank - 1];
  return success();
}

LogicalResult SoftmaxOp::verify() {
  if (failed(verifyDimIndex(*this, "dim", getDim(),
                            tensorType(getInput()).getRank())))
    return failure();
  return getCausal() ? verifyFoldedCausal(*this, getInput(), getDim())
                     : success();
}
LogicalResult LogSoftmaxOp::verify() {
  return verifyDimIndex(*this, "dim", getDim(),
                        tensorType(getInput()).getRank());
}
LogicalResult SoftmaxBackwardOp::verify() {
  if (failed(verifyDimIndex(*this, "dim", getDim(),
                            tensorType(getGrad()).getRank())))
    return failure();
  return getCausal() ? verifyFoldedCausal(*this, getGrad(), getDim())
                     : success();
}
LogicalResult LogSoftmaxBackwardOp::verify() {
  return verifyDimIndex(*this, "dim", getDim(),
                        tensorType(getGrad()).getRank());
}

LogicalResult CausalMaskOp::verify() {
  ArrayRef<int64_t> shape = tensorType(getInput()).getShape();
  if (shape.size() < 2)
    return emitOpError() << "input must have rank 2 or more, but has rank "
                         << shape.size();
  if (shape[shape.size() - 2] != shape.back())
    return emitOpError() << "the last two dimensions must be equal, but are "
                         << shape[shape.size() - 2] << " and " << shape.back();
  return success();
}

//===----------------------------------------------------------------------===//
// Layer norm
//===----------------------------------------------------------------------===//

/// Checks the shapes shared by layer_norm and its backward: `gamma` spans
/// the trailing dimensions of `input`, `mean` its leading ones.
static LogicalResult verifyLayerNormShapes(Operation *op, Value input,
                                           Value gamma, Value mean) {
  ArrayRef<int64_t> x = tensorType(input).getShape();
  ArrayRef<int64_t> g = tensorType(gamma).getShape();
  if (g.empty() || g.size() > x.size())
    return op->emitOpError()
           << "gamma must have rank between 1 and the input's rank ("
           << x.size() << "), but has rank " << g.size();
  if (x.take_back(g.size()) != g)
    return op->emitOpError()
           << "gamma shape " << shapeString(g)
           << " differs from the trailing dimensions of the input ("
           << shapeString(x.take_back(g.size())) << ")";
  if (failed(verifySameElementType(op, "input", input, "gamma", gamma)))
    return failure();
  return verifyShape(op, "mean", mean, x.drop_back(g.size()));
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *context,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto types =
      rankedOperandTypes(location, getOperationName(), adaptor.getOperands());
  if (failed(types))
    return failure();
  RankedTensorType input = (*types)[0], gamma = (*types)[1];
  ArrayRef<int64_t> x = input.getShape(), g = gamma.getShape();
  if (g.empty() || g.size() > x.size())
    return inferError(location, getOperationName(),
                      "gamma must have rank between 1 and the input's rank (",
                      x.size(), "), but has rank ", g.size());
  // The statistics: one f32 per normalized row.
  auto stats =
      RankedTensorType::get(x.drop_back(g.size()), Float32Type::get(context));
  inferred.append({input, stats, stats});
  return success();
}

LogicalResult LayerNormOp::verify() {
  if (getEpsilon().convertToDouble() <= 0)
    return emitOpError() << "epsilon must be positive, but is "
                         << getEpsilon().convertToDouble();
  return verifyLayerNormShapes(*this, getInput(), getGamma(), getMean());
}

LogicalResult LayerNormBackwardOp::verify() {
  return verifyLayerNormShapes(*this, getInput(), getGamma(), getMean());
}

uint64_t LayerNormOp::getFlops() { return 8 * numElements(getInput()); }
uint64_t LayerNormBackwardOp::getFlops() {
  return 12 * numElements(getInput());
}

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

/// Checks a `[V, D]` table (or its gradient) against rows shaped
/// `ids.shape + [D]`.
static LogicalResult verifyEmbeddingShapes(Operation *op, Value table,
                                           Value ids, Value rows) {
  ArrayRef<int64_t> t = tensorType(table).getShape();
  if (t.size() != 2)
    return op->emitOpError()
           << "table must have rank 2 ([V, D]), but has rank " << t.size();
  SmallVector<int64_t> expected(tensorType(ids).getShape());
  expected.push_back(t[1]);
  if (failed(verifySameElementType(op, "table", table, "rows", rows)))
    return failure();
  return verifyShape(op, "rows", rows, expected);
}

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto types =
      rankedOperandTypes(location, getOperationName(), adaptor.getOperands());
  if (failed(types))
    return failure();
  RankedTensorType table = (*types)[0], ids = (*types)[1];
  if (table.getRank() != 2)
    return inferError(location, getOperationName(),
                      "table must have rank 2 ([V, D]), but has rank ",
                      table.getRank());
  SmallVector<int64_t> shape(ids.getShape());
  shape.push_back(table.getDimSize(1));
  inferred.push_back(RankedTensorType::get(shape, table.getElementType()));
  return success();
}

/// A padding row inside a table of `rows` rows.
static LogicalResult
verifyPaddingIdx(Operation *op, std::optional<int64_t> padding, int64_t rows) {
  if (padding && (*padding < 0 || *padding >= rows))
    return op->emitOpError()
           << "padding_idx " << *padding << " is not a row of the table of "
           << rows << " rows";
  return success();
}

LogicalResult EmbeddingBackwardOp::verify() {
  if (failed(verifyEmbeddingShapes(*this, getResult(), getIds(), getGrad())))
    return failure();
  return verifyPaddingIdx(*this, getPaddingIdx(),
                          getResult().getType().getDimSize(0));
}

uint64_t EmbeddingOp::getFlops() { return 0; }
uint64_t EmbeddingOp::getBytesRead() {
  // Only the gathered rows are read from the table.
  return getTensorBytes(getResult().getType()) +
         getTensorBytes(getIds().getType());
}
uint64_t EmbeddingBackwardOp::getFlops() { return numElements(getGrad()); }

LogicalResult EmbeddingShardOp::verify() {
  if (failed(verifyParts(*this, getParts())))
    return failure();
  return verifyEmbeddingShapes(*this, getTable(), getIds(), getResult());
}
LogicalResult EmbeddingShardBackwardOp::verify() {
  if (failed(verifyParts(*this, getParts())) ||
      failed(verifyEmbeddingShapes(*this, getResult(), getIds(), getGrad())))
    return failure();
  // The padding row is one of the whole table's.
  return verifyPaddingIdx(*this, getPaddingIdx(),
                          getResult().getType().getDimSize(0) *
                              int64_t(getParts()));
}

uint64_t EmbeddingShardOp::getFlops() { return 0; }
uint64_t EmbeddingShardOp::getBytesRead() {
  // At most the gathered rows are read from the table.
  return getTensorBytes(getResult().getType()) +
         getTensorBytes(getIds().getType());
}
uint64_t EmbeddingShardBackwardOp::getFlops() { return numElements(getGrad()); }

#include "CollectiveVerifiers.h"

//===----------------------------------------------------------------------===//
// WaitOp
//===----------------------------------------------------------------------===//

LogicalResult WaitOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> location,
                                       ValueRange operands, DictionaryAttr,
                                       OpaqueProperties, RegionRange,
                                       SmallVectorImpl<Type> &inferred) {
  auto future = dyn_cast<FutureType>(operands[0].getType());
  if (!future)
    return emitOptionalError(location, "braid.wait needs a !braid.future, got ",
                             operands[0].getType());
  llvm::append_range(inferred, future.getValueTypes());
  return success();
}

#define GET_OP_CLASSES
#include "braid/Dialect/Braid/BraidOps.cpp.inc"

WaitOp braid::getWaitOf(Operation *start) {
  for (Operation *user : start->getUsers())
    if (auto wait = dyn_cast<WaitOp>(user))
      return wait;
  return nullptr;
}
