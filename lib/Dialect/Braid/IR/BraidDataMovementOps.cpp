//===- BraidDataMovementOps.cpp - reshape, transpose, slice, ... -*- C++
//-*-===//
//
// The verifiers and costs of the ops that move data without arithmetic
// (BraidDataMovementOps.td): reshape, transpose, broadcast, slice,
// shard_slice, concat, shard_concat, constant and fill.
//
//===----------------------------------------------------------------------===//

#include "VerifierUtils.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace braid;

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

LogicalResult ShardSliceOp::verify() {
  if (failed(verifyParts(*this, getParts())) ||
      failed(verifySameElementType(*this, "input", getInput(), "result",
                                   getResult())))
    return failure();
  ArrayRef<int64_t> in = tensorType(getInput()).getShape();
  int64_t dim = getDim();
  if (dim < 0 || dim >= int64_t(in.size()))
    return emitOpError() << "dim " << dim << " is out of range for rank "
                         << in.size();
  if (in[dim] % getParts())
    return emitOpError() << "dimension " << dim << " of size " << in[dim]
                         << " does not divide into " << getParts() << " parts";
  SmallVector<int64_t> expected(in);
  expected[dim] /= getParts();
  return verifyShape(*this, "result", getResult(), expected);
}

int64_t braid::outermostDim(ArrayRef<int64_t> shape) {
  for (auto [d, size] : llvm::enumerate(shape))
    if (size != 1)
      return int64_t(d);
  return -1;
}

LogicalResult ShardSliceOp::canonicalize(ShardSliceOp op,
                                         PatternRewriter &rewriter) {
  // Through a reshape whose blocks are the gathered pieces (both the
  // outermost dimension): [batch, seq, hidden] gathered, cut as [tokens,
  // hidden].
  auto reshape = op.getInput().getDefiningOp<ReshapeOp>();
  Value gathered = reshape ? reshape.getInput() : op.getInput();
  auto gather = gathered.getDefiningOp<AllGatherOp>();
  auto index = op.getIndex().getDefiningOp<AxisIndexOp>();
  if (!gather || !index || op.getShift() != 0 ||
      gather.getGridAttr() != index.getGridAttr() ||
      gather.getGridAxes() != index.getGridAxes())
    return failure();
  int64_t dim = gather.getGatherDim();
  // The group's size is the gathered dimension's growth.
  int64_t size = tensorType(gather.getInput()).getDimSize(dim);
  if (size * int64_t(op.getParts()) != gather.getType().getDimSize(dim))
    return failure();
  if (reshape ? outermostDim(gather.getType().getShape()) != dim ||
                    outermostDim(reshape.getType().getShape()) != op.getDim()
              : dim != int64_t(op.getDim()))
    return failure();
  Value piece = gather.getInput();
  if (piece.getType() != op.getType())
    piece = ReshapeOp::create(rewriter, op.getLoc(), op.getType(), piece);
  rewriter.replaceOp(op, piece);
  // Every rank of the group drops it alike: the same program.
  if (reshape && reshape->use_empty())
    rewriter.eraseOp(reshape);
  if (gather->use_empty())
    rewriter.eraseOp(gather);
  return success();
}
uint64_t ShardSliceOp::getFlops() { return 0; }
uint64_t ShardSliceOp::getBytesRead() {
  // Only the piece is read.
  return getTensorBytes(getResult().getType());
}

LogicalResult ReshapeOp::verify() {
  if (failed(verifySameElementType(*this, "input", getInput(), "result",
                                   getResult())))
    return failure();
  if (numElements(getInput()) != numElements(getResult()))
    return emitOpError() << "input has " << numElements(getInput())
                         << " elements but result has "
                         << numElements(getResult());
  return success();
}
OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  return {};
}

uint64_t ReshapeOp::getFlops() { return 0; }
uint64_t ReshapeOp::getBytesRead() { return 0; }
uint64_t ReshapeOp::getBytesWritten() { return 0; }

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  StringRef op = getOperationName();
  auto types = rankedOperandTypes(location, op, adaptor.getOperands());
  if (failed(types))
    return failure();
  RankedTensorType input = types->front();
  ArrayRef<int64_t> shape = input.getShape();
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  if (perm.size() != shape.size())
    return inferError(location, op, "permutation has ", perm.size(),
                      " entries for an input of rank ", shape.size());
  SmallVector<bool> seen(shape.size(), false);
  SmallVector<int64_t> result;
  for (int64_t p : perm) {
    if (p < 0 || p >= int64_t(shape.size()))
      return inferError(location, op, "permutation entry ", p,
                        " is out of range for rank ", shape.size());
    if (seen[p])
      return inferError(location, op, "permutation repeats dimension ", p);
    seen[p] = true;
    result.push_back(shape[p]);
  }
  inferred.push_back(RankedTensorType::get(result, input.getElementType()));
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> perm = getPermutation();
  if (llvm::equal(perm, llvm::seq<int64_t>(0, int64_t(perm.size()))))
    return getInput();
  auto inner = getInput().getDefiningOp<TransposeOp>();
  if (!inner)
    return {};
  // Result dimension i is this input's perm[i], the inner input's
  // innerPerm[perm[i]].
  SmallVector<int64_t> composed;
  for (int64_t p : perm)
    composed.push_back(inner.getPermutation()[p]);
  if (llvm::equal(composed, llvm::seq<int64_t>(0, int64_t(composed.size()))))
    return inner.getInput();
  getInputMutable().assign(inner.getInput());
  setPermutation(composed);
  return getResult();
}
uint64_t TransposeOp::getFlops() { return 0; }

LogicalResult BroadcastOp::verify() {
  ArrayRef<int64_t> in = tensorType(getInput()).getShape();
  ArrayRef<int64_t> out = tensorType(getResult()).getShape();
  ArrayRef<int64_t> dims = getDims();
  if (in.size() + dims.size() != out.size())
    return emitOpError() << "input rank " << in.size() << " plus "
                         << dims.size() << " new dimensions differs from "
                         << "result rank " << out.size();
  for (auto [i, dim] : llvm::enumerate(dims)) {
    if (failed(verifyDimIndex(*this, "new dimension", dim, out.size())))
      return failure();
    if (i > 0 && dims[i - 1] >= dim)
      return emitOpError() << "dims must be strictly increasing, but " << dim
                           << " follows " << dims[i - 1];
  }
  SmallVector<int64_t> kept;
  for (auto [i, size] : llvm::enumerate(out))
    if (!llvm::is_contained(dims, static_cast<int64_t>(i)))
      kept.push_back(size);
  if (kept != SmallVector<int64_t>(in))
    return emitOpError() << "result dimensions " << shapeString(kept)
                         << " other than the new ones differ from the input "
                         << "shape " << shapeString(in);
  return verifySameElementType(*this, "input", getInput(), "result",
                               getResult());
}
uint64_t BroadcastOp::getFlops() { return 0; }

LogicalResult SliceOp::verify() {
  ArrayRef<int64_t> in = tensorType(getInput()).getShape();
  ArrayRef<int64_t> out = tensorType(getResult()).getShape();
  ArrayRef<int64_t> offsets = getOffsets();
  SmallVector<int64_t> strides(in.size(), 1);
  if (std::optional<ArrayRef<int64_t>> s = getStrides())
    strides.assign(s->begin(), s->end());
  if (out.size() != in.size())
    return emitOpError() << "result rank " << out.size()
                         << " differs from input rank " << in.size();
  if (offsets.size() != in.size() || strides.size() != in.size())
    return emitOpError() << "needs " << in.size()
                         << " offsets and strides, one per dimension";
  for (size_t d = 0; d < in.size(); ++d) {
    if (strides[d] < 1)
      return emitOpError() << "stride " << strides[d] << " of dimension " << d
                           << " must be positive";
    if (offsets[d] < 0 ||
        (out[d] > 0 && offsets[d] + (out[d] - 1) * strides[d] >= in[d]))
      return emitOpError() << "dimension " << d << " reads from offset "
                           << offsets[d] << " " << out[d]
                           << " elements with stride " << strides[d]
                           << ", past the input size " << in[d];
  }
  return verifySameElementType(*this, "input", getInput(), "result",
                               getResult());
}
uint64_t SliceOp::getFlops() { return 0; }

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  StringRef op = getOperationName();
  if (adaptor.getInputs().empty())
    return inferError(location, op, "needs at least one input");
  auto ranked = rankedOperandTypes(location, op, adaptor.getInputs());
  if (failed(ranked))
    return failure();
  ArrayRef<RankedTensorType> types = *ranked;
  RankedTensorType first = types.front();
  // I64Attr accessors return uint64_t; read the dimension as signed.
  int64_t dim = adaptor.getDim();
  if (dim < 0 || dim >= first.getRank())
    return inferError(location, op, "dim ", dim, " is out of range for rank ",
                      first.getRank());
  SmallVector<int64_t> shape(first.getShape());
  for (auto [i, type] : llvm::enumerate(ArrayRef(types).drop_front())) {
    size_t index = i + 1;
    if (type.getRank() != first.getRank())
      return inferError(location, op, "input #", index, " has rank ",
                        type.getRank(), ", input #0 has rank ",
                        first.getRank());
    if (type.getElementType() != first.getElementType())
      return inferError(location, op, "input #", index, " element type ",
                        type.getElementType(),
                        " differs from input #0's element type ",
                        first.getElementType());
    for (int64_t d = 0; d < first.getRank(); ++d)
      if (d != dim && type.getDimSize(d) != first.getDimSize(d))
        return inferError(location, op, "input #", index, " has size ",
                          type.getDimSize(d), " in dimension ", d,
                          ", input #0 has ", first.getDimSize(d));
    shape[dim] += type.getDimSize(dim);
  }
  inferred.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}
uint64_t ConcatOp::getFlops() { return 0; }

LogicalResult ShardConcatOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> location,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &inferred) {
  StringRef op = getOperationName();
  if (adaptor.getPieces().empty())
    return inferError(location, op, "needs at least one piece");
  auto ranked = rankedOperandTypes(location, op, adaptor.getPieces());
  if (failed(ranked))
    return failure();
  RankedTensorType first = ranked->front();
  for (auto [k, type] : llvm::enumerate(*ranked))
    if (type != first)
      return inferError(location, op, "piece #", k, " has type ", type,
                        ", piece #0 has ", first);
  int64_t dim = adaptor.getDim();
  if (dim < 0 || dim >= first.getRank())
    return inferError(location, op, "dim ", dim, " is out of range for rank ",
                      first.getRank());
  ArrayRef<int64_t> shifts = adaptor.getShifts();
  int64_t n = int64_t(ranked->size());
  if (int64_t(shifts.size()) != n)
    return inferError(location, op, "has ", shifts.size(), " shifts for ", n,
                      " pieces");
  // Every block written once: the shifts are distinct modulo n.
  SmallVector<bool> taken(n, false);
  for (int64_t shift : shifts) {
    int64_t block = ((shift % n) + n) % n;
    if (taken[block])
      return inferError(location, op, "shift ", shift,
                        " fills a block another shift fills (modulo ", n, ")");
    taken[block] = true;
  }
  SmallVector<int64_t> shape(first.getShape());
  shape[dim] *= n;
  inferred.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}
uint64_t ShardConcatOp::getFlops() { return 0; }

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }
uint64_t ConstantOp::getFlops() { return 0; }
uint64_t FillOp::getFlops() { return 0; }
