//===- CollectiveVerifiers.h - the checks of the collective ops -*- C++ -*-===//
//
// One template per collective, instantiated for both its forms by the
// verify() and verifySymbolUses() that `defm Braid_Collective` generates
// (BraidOps.td): `verifyX(op)` checks the op alone, `verifyXGrid(op, table)`
// against its grid. Included by BraidOps.cpp, before the op definitions.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_DIALECT_BRAID_IR_COLLECTIVEVERIFIERS_H
#define BRAID_LIB_DIALECT_BRAID_IR_COLLECTIVEVERIFIERS_H

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// Checks the grid axes that need no grid: non-empty, non-negative, unique.
static LogicalResult verifyGridAxes(Operation *op, ArrayRef<int16_t> axes) {
  if (axes.empty())
    return op->emitOpError() << "grid_axes must not be empty";
  llvm::SmallSet<int16_t, 4> seen;
  for (int16_t axis : axes) {
    if (axis < 0)
      return op->emitOpError() << "grid axis " << axis << " is negative";
    if (!seen.insert(axis).second)
      return op->emitOpError() << "grid axis " << axis << " is repeated";
  }
  return success();
}

/// The single value type a collective yields: its result's type, or the one
/// value type of the future it yields (null if the future does not hold
/// exactly one, after an error).
static RankedTensorType getYieldedTensor(Operation *op, Value result) {
  if (auto future = dyn_cast<FutureType>(result.getType())) {
    if (future.getValueTypes().size() != 1) {
      op->emitOpError() << "yields " << future
                        << ", which must hold exactly one tensor";
      return {};
    }
    return cast<RankedTensorType>(future.getValueTypes()[0]);
  }
  return cast<RankedTensorType>(result.getType());
}

/// Checks that an avg reduction is over float tensors.
static LogicalResult verifyReduction(Operation *op, ReductionKind kind,
                                     TypeRange types) {
  if (kind != ReductionKind::Avg)
    return success();
  for (Type type : types)
    if (!isa<FloatType>(getElementTypeOrSelf(type)))
      return op->emitOpError() << "reduction 'avg' needs float tensors, but "
                               << "an input is " << type;
  return success();
}

/// Checks `grad_of`, `bucket_index` and `bucket_bytes` of a gradient
/// collective (all-reduce or reduce-scatter) with inputs `inputs`.
template <typename Op>
static LogicalResult verifyGradientAttrs(Op op, OperandRange inputs) {
  if (std::optional<int64_t> index = op.getBucketIndex(); index && *index < 0)
    return op.emitOpError()
           << "bucket_index must be non-negative, but is " << *index;
  if (std::optional<int64_t> bytes = op.getBucketBytes()) {
    uint64_t actual = sumTensorBytes(inputs.getTypes());
    if (*bytes < 0 || static_cast<uint64_t>(*bytes) != actual)
      return op.emitOpError() << "bucket_bytes is " << *bytes
                              << " but the inputs hold " << actual << " bytes";
  }
  std::optional<ArrayAttr> gradOf = op.getGradOf();
  if (!gradOf)
    return success();
  if (gradOf->size() != inputs.size())
    return op.emitOpError() << "grad_of names " << gradOf->size()
                            << " parameters for " << inputs.size() << " inputs";
  auto func = op->template getParentOfType<FunctionOpInterface>();
  if (!func)
    return success();
  auto *dialect = op->getContext()->template getLoadedDialect<BraidDialect>();
  const RoleTable &table = dialect->getRoleTable(func);
  for (auto [i, name] :
       llvm::enumerate(gradOf->getAsValueRange<StringAttr>())) {
    auto it = table.firstArgument.find(name);
    auto role = it == table.firstArgument.end()
                    ? RoleAttr()
                    : func.template getArgAttrOfType<RoleAttr>(
                          it->second, BraidDialect::kRoleAttrName);
    if (!role || role.getKind() != RoleKind::Parameter)
      return op.emitOpError()
             << "grad_of names '" << name
             << "', which is not a parameter argument of @" << func.getName();
    auto paramType =
        cast<RankedTensorType>(func.getArgumentTypes()[it->second]);
    auto inputType = cast<RankedTensorType>(inputs[i].getType());
    // The whole gradient, or a chunk of it (braid-bucket-gradients with
    // split-large): a rank-1 tensor, no larger. Its element type may be
    // another float type than the parameter's: a gradient cast to bf16 to
    // be reduced in half the bytes (braid.export's reduce_dtype).
    bool whole = paramType.getShape() == inputType.getShape();
    bool chunk = inputType.getRank() == 1 &&
                 inputType.getNumElements() <= paramType.getNumElements();
    if (!whole && !chunk)
      return op.emitOpError()
             << "input #" << i << " of type " << inputType
             << " is neither the gradient of '" << name << "' of type "
             << paramType << " nor a rank-1 chunk of it";
  }
  return success();
}

template <typename Op> static LogicalResult verifyAllReduce(Op op) {
  if (failed(verifyGridAxes(op, op.getGridAxes())))
    return failure();
  OperandRange inputs = op.getInputs();
  if (inputs.empty())
    return op.emitOpError() << "needs at least one input";
  if (failed(verifyReduction(op, op.getReduction(), inputs.getTypes())))
    return failure();
  return verifyGradientAttrs(op, inputs);
}

LogicalResult AllReduceOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location>,
                                            ValueRange operands, DictionaryAttr,
                                            OpaqueProperties, RegionRange,
                                            SmallVectorImpl<Type> &inferred) {
  llvm::append_range(inferred, operands.getTypes());
  return success();
}

LogicalResult AllReduceStartOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location>, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &inferred) {
  inferred.push_back(
      FutureType::get(context, llvm::to_vector(operands.getTypes())));
  return success();
}

/// Checks that a reduce-scatter or all-gather changes only `dim` of its
/// input, and the element type not at all.
static LogicalResult verifyResizedDim(Operation *op, StringRef what,
                                      RankedTensorType input,
                                      RankedTensorType result, int64_t dim) {
  if (failed(verifyDimIndex(op, what, dim, input.getRank())))
    return failure();
  if (input.getElementType() != result.getElementType())
    return op->emitOpError()
           << "result element type " << result.getElementType()
           << " differs from input element type " << input.getElementType();
  if (input.getRank() != result.getRank())
    return op->emitOpError() << "result rank " << result.getRank()
                             << " differs from input rank " << input.getRank();
  for (int64_t d = 0; d < input.getRank(); ++d)
    if (d != dim && input.getDimSize(d) != result.getDimSize(d))
      return op->emitOpError()
             << "result size " << result.getDimSize(d) << " in dimension " << d
             << " differs from the input's " << input.getDimSize(d) << "; only "
             << what << " " << dim << " may change";
  return success();
}

template <typename Op> static LogicalResult verifyReduceScatter(Op op) {
  if (failed(verifyGridAxes(op, op.getGridAxes())))
    return failure();
  RankedTensorType result = getYieldedTensor(op, op.getResult());
  if (!result)
    return failure();
  if (failed(verifyReduction(op, op.getReduction(), op.getInput().getType())))
    return failure();
  if (failed(verifyResizedDim(op, "scatter_dim", tensorType(op.getInput()),
                              result, op.getScatterDim())))
    return failure();
  return verifyGradientAttrs(op, op->getOperands());
}

template <typename Op> static LogicalResult verifyAllGather(Op op) {
  if (failed(verifyGridAxes(op, op.getGridAxes())))
    return failure();
  RankedTensorType result = getYieldedTensor(op, op.getResult());
  if (!result)
    return failure();
  return verifyResizedDim(op, "gather_dim", tensorType(op.getInput()), result,
                          op.getGatherDim());
}

template <typename Op> static LogicalResult verifyAllToAll(Op op) {
  if (failed(verifyGridAxes(op, op.getGridAxes())))
    return failure();
  RankedTensorType result = getYieldedTensor(op, op.getResult());
  if (!result)
    return failure();
  RankedTensorType input = tensorType(op.getInput());
  if (failed(
          verifyDimIndex(op, "split_dim", op.getSplitDim(), input.getRank())) ||
      failed(
          verifyDimIndex(op, "concat_dim", op.getConcatDim(), input.getRank())))
    return failure();
  if (input.getElementType() != result.getElementType() ||
      input.getRank() != result.getRank())
    return op.emitOpError() << "result type " << result
                            << " must have the rank and element type of the "
                               "input type "
                            << input;
  return success();
}

/// Checks the grid axes and that a collective yields its input's type
/// (broadcast, permute).
template <typename Op> static LogicalResult verifyYieldsInputType(Op op) {
  if (failed(verifyGridAxes(op, op.getGridAxes())))
    return failure();
  RankedTensorType result = getYieldedTensor(op, op.getResult());
  if (!result)
    return failure();
  if (result != op.getInput().getType())
    return op.emitOpError()
           << "yields " << result << ", which differs from the input type "
           << op.getInput().getType();
  return success();
}

template <typename Op> static LogicalResult verifyCollectiveBroadcast(Op op) {
  if (failed(verifyYieldsInputType(op)))
    return failure();
  // I64Attr accessors return uint64_t; read the root as signed.
  int64_t root = op.getRoot();
  if (root < 0)
    return op.emitOpError() << "root " << root << " is negative";
  return success();
}

static LogicalResult verifyPeer(Operation *op, ArrayRef<int16_t> axes,
                                int64_t peer, StringRef what = "peer") {
  if (failed(verifyGridAxes(op, axes)))
    return failure();
  if (peer < 0)
    return op->emitOpError() << what << " " << peer << " is negative";
  return success();
}

template <typename Op> static LogicalResult verifySend(Op op) {
  if constexpr (Op::kIsStartForm) {
    if (!op.getFuture().getType().getValueTypes().empty())
      return op.emitOpError() << "yields " << op.getFuture().getType()
                              << ", but a send's future holds no value "
                                 "(!braid.future<>)";
  }
  return verifyPeer(op, op.getGridAxes(), op.getPeer());
}

template <typename Op> static LogicalResult verifyRecv(Op op) {
  if constexpr (Op::kIsStartForm) {
    if (!getYieldedTensor(op, op.getFuture()))
      return failure();
  }
  return verifyPeer(op, op.getGridAxes(), op.getPeer());
}

template <typename Op> static LogicalResult verifySendRecv(Op op) {
  if (op.getInputs().empty())
    return op.emitOpError() << "sends nothing; a send-receive sends at least "
                               "one tensor (braid.recv receives alone)";
  size_t received = 0;
  if constexpr (Op::kIsStartForm)
    received = op.getFuture().getType().getValueTypes().size();
  else
    received = op.getResults().size();
  if (received == 0)
    return op.emitOpError()
           << "receives nothing; a send-receive receives at least one "
              "tensor (braid.send sends alone)";
  if (failed(verifyPeer(op, op.getGridAxes(), op.getSendPeer(), "send_peer")))
    return failure();
  return verifyPeer(op, op.getGridAxes(), op.getRecvPeer(), "recv_peer");
}

template <typename Op> static LogicalResult verifyCollectivePermute(Op op) {
  return verifyYieldsInputType(op);
}

template <typename Op> static LogicalResult verifyAxisIndex(Op op) {
  if (failed(verifyGridAxes(op, op.getGridAxes())))
    return failure();
  RankedTensorType result = getYieldedTensor(op, op.getResult());
  if (!result)
    return failure();
  if (result.getRank() != 0 || !result.getElementType().isInteger(64))
    return op.emitOpError()
           << "yields " << result << ", but a rank index is a tensor<i64>";
  return success();
}

//===----------------------------------------------------------------------===//
// Grid checks (SymbolUserOpInterface)
//===----------------------------------------------------------------------===//

/// Looks up the grid of `op` and checks its axes against it. Returns the
/// number of ranks in the group the axes span, or std::nullopt if that is
/// not static. Sets `failed` on an error.
static std::optional<int64_t> verifyGridUse(CollectiveOpInterface op,
                                            SymbolTableCollection &symbolTable,
                                            bool &failedCheck) {
  failedCheck = false;
  FlatSymbolRefAttr gridName = op.getGridAttr();
  shard::GridOp grid = shard::getGridOrNull(op, gridName, symbolTable);
  if (!grid) {
    op->emitOpError() << "grid " << gridName
                      << " does not name a shard.grid in scope";
    failedCheck = true;
    return std::nullopt;
  }
  ArrayRef<int64_t> shape = grid.getShape();
  // The whole grid within braid's bound (each dimension is, and so is their
  // product: checked without overflow).
  int64_t ranks = 1;
  for (int64_t d : shape) {
    if (ShapedType::isDynamic(d))
      continue;
    if (d > kMaxRanks || ranks > kMaxRanks / std::max<int64_t>(d, 1)) {
      std::string text;
      llvm::raw_string_ostream os(text);
      llvm::interleave(shape, os, "x");
      op->emitOpError() << "grid " << gridName << " of shape " << text
                        << " has more than " << kMaxRanks
                        << " ranks, the most braid supports";
      failedCheck = true;
      return std::nullopt;
    }
    ranks *= d;
  }
  int64_t groupSize = 1;
  bool dynamic = false;
  for (int16_t axis : op.getGridAxes()) {
    if (axis < 0 || axis >= static_cast<int64_t>(shape.size())) {
      op->emitOpError() << "grid axis " << axis << " is out of range for grid "
                        << gridName << " of rank " << shape.size();
      failedCheck = true;
      return std::nullopt;
    }
    if (ShapedType::isDynamic(shape[axis]))
      dynamic = true;
    else
      groupSize *= shape[axis];
  }
  if (dynamic)
    return std::nullopt;
  return groupSize;
}

/// Checks that `result` is `input` with dimension `dim` scaled: divided by
/// `groupSize` (scatter) or multiplied by it (gather).
static LogicalResult verifyGroupScaledDim(Operation *op, StringRef what,
                                          int64_t dim, int64_t inputSize,
                                          int64_t resultSize, int64_t groupSize,
                                          bool divide) {
  if (divide && inputSize % groupSize != 0)
    return op->emitOpError()
           << what << " " << dim << " has size " << inputSize
           << ", which the group of " << groupSize << " ranks does not divide";
  int64_t expected = divide ? inputSize / groupSize : inputSize * groupSize;
  if (resultSize != expected)
    return op->emitOpError() << "result size " << resultSize << " in " << what
                             << " " << dim << " should be " << expected
                             << " for a group of " << groupSize << " ranks";
  return success();
}

/// The number of ranks in the group of `op`, after checking its grid; 0 if
/// the grid is dynamic (nothing to check against), failure after an error.
template <typename Op>
static FailureOr<int64_t> getStaticGroupSize(Op op,
                                             SymbolTableCollection &table) {
  bool failedCheck;
  std::optional<int64_t> n = verifyGridUse(
      cast<CollectiveOpInterface>(op.getOperation()), table, failedCheck);
  if (failedCheck)
    return failure();
  return n.value_or(0);
}

template <typename Op>
static LogicalResult verifyGridOnly(Op op, SymbolTableCollection &table) {
  bool failedCheck;
  verifyGridUse(cast<CollectiveOpInterface>(op.getOperation()), table,
                failedCheck);
  return failure(failedCheck);
}

template <typename Op>
static LogicalResult verifyAllReduceGrid(Op op, SymbolTableCollection &table) {
  return verifyGridOnly(op, table);
}

template <typename Op>
static LogicalResult verifyCollectivePermuteGrid(Op op,
                                                 SymbolTableCollection &table) {
  return verifyGridOnly(op, table);
}

template <typename Op>
static LogicalResult verifyAxisIndexGrid(Op op, SymbolTableCollection &table) {
  return verifyGridOnly(op, table);
}

/// Checks that dimension `dim` of a reduce-scatter or all-gather is the
/// input's divided (`divide`) or multiplied by the group size.
template <typename Op>
static LogicalResult verifyResizedDimGrid(Op op, SymbolTableCollection &table,
                                          StringRef what, int64_t dim,
                                          bool divide) {
  FailureOr<int64_t> n = getStaticGroupSize(op, table);
  if (failed(n) || *n == 0)
    return failure(failed(n));
  return verifyGroupScaledDim(
      op, what, dim, tensorType(op.getInput()).getDimSize(dim),
      getYieldedTensor(op, op.getResult()).getDimSize(dim), *n, divide);
}

template <typename Op>
static LogicalResult verifyReduceScatterGrid(Op op,
                                             SymbolTableCollection &table) {
  return verifyResizedDimGrid(op, table, "scatter_dim", op.getScatterDim(),
                              /*divide=*/true);
}

template <typename Op>
static LogicalResult verifyAllGatherGrid(Op op, SymbolTableCollection &table) {
  return verifyResizedDimGrid(op, table, "gather_dim", op.getGatherDim(),
                              /*divide=*/false);
}

template <typename Op>
static LogicalResult verifyAllToAllGrid(Op op, SymbolTableCollection &table) {
  FailureOr<int64_t> n = getStaticGroupSize(op, table);
  if (failed(n) || *n == 0)
    return failure(failed(n));
  RankedTensorType input = tensorType(op.getInput());
  RankedTensorType result = getYieldedTensor(op, op.getResult());
  SmallVector<int64_t> expected(input.getShape());
  int64_t split = op.getSplitDim(), concat = op.getConcatDim();
  if (expected[split] % *n != 0)
    return op.emitOpError()
           << "split_dim " << split << " has size " << expected[split]
           << ", which the group of " << *n << " ranks does not divide";
  expected[split] /= *n;
  expected[concat] *= *n;
  if (result.getShape() != ArrayRef<int64_t>(expected))
    return op.emitOpError()
           << "result has shape " << shapeString(result.getShape())
           << ", expected " << shapeString(expected) << " for a group of " << *n
           << " ranks";
  return success();
}

/// Checks that a rank index (`root`, `peer`) lies within the group.
template <typename Op>
static LogicalResult verifyRankInGroup(Op op, SymbolTableCollection &table,
                                       StringRef what, int64_t rank) {
  FailureOr<int64_t> n = getStaticGroupSize(op, table);
  if (failed(n) || *n == 0)
    return failure(failed(n));
  if (rank >= *n)
    return op.emitOpError()
           << what << " " << rank << " is out of range for a group of " << *n
           << " ranks";
  return success();
}

template <typename Op>
static LogicalResult
verifyCollectiveBroadcastGrid(Op op, SymbolTableCollection &table) {
  return verifyRankInGroup(op, table, "root", op.getRoot());
}
template <typename Op>
static LogicalResult verifySendGrid(Op op, SymbolTableCollection &table) {
  return verifyRankInGroup(op, table, "peer", op.getPeer());
}
template <typename Op>
static LogicalResult verifyRecvGrid(Op op, SymbolTableCollection &table) {
  return verifyRankInGroup(op, table, "peer", op.getPeer());
}
template <typename Op>
static LogicalResult verifySendRecvGrid(Op op, SymbolTableCollection &table) {
  if (failed(verifyRankInGroup(op, table, "send_peer", op.getSendPeer())))
    return failure();
  return verifyRankInGroup(op, table, "recv_peer", op.getRecvPeer());
}

#endif // BRAID_LIB_DIALECT_BRAID_IR_COLLECTIVEVERIFIERS_H
