//===- BraidInterfaces.td - braid op interfaces ------------*- tablegen -*-===//

#ifndef BRAID_DIALECT_BRAID_BRAIDINTERFACES_TD
#define BRAID_DIALECT_BRAID_BRAIDINTERFACES_TD

include "mlir/IR/OpBase.td"

def Braid_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::braid";
  let description = [{
    The cost of one compute op: the floating-point operations it performs and
    the bytes it reads and writes in device memory. One cost model serves the
    passes and the simulator; every compute and optimizer op implements it.
    Data movement that needs no kernel (a reshape) costs nothing.
  }];
  let methods = [
    InterfaceMethod<"Floating-point operations performed.",
      "uint64_t", "getFlops">,
    InterfaceMethod<"Bytes read from device memory.",
      "uint64_t", "getBytesRead", (ins), [{}], [{
        return ::braid::sumTensorBytes($_op->getOperandTypes());
      }]>,
    InterfaceMethod<"Bytes written to device memory.",
      "uint64_t", "getBytesWritten", (ins), [{}], [{
        return ::braid::sumTensorBytes($_op->getResultTypes());
      }]>,
    InterfaceMethod<[{
        The sizes of the matrix product this kernel is (batch, m, n, k), for
        the GEMM model's tiles and waves (docs/CostModel.md); empty for any
        other kernel.
      }],
      "::braid::cost::ProductShape", "getProductShape", (ins), [{}], [{
        return {};
      }]>
  ];
}

def Braid_InPlaceOpInterface : OpInterface<"InPlaceOpInterface"> {
  let cppNamespace = "::braid";
  let description = [{
    An op whose results may overwrite operands element for element (an
    optimizer update writes the new parameter over the old). braid-plan-memory
    gives such a result its operand's buffer when nothing reads the operand
    later, and the runtime's plan checks allow exactly these overlaps; both
    read the pairs from the op (`Braid_UpdateOp` in BraidOps.td).
  }];
  let methods = [
    InterfaceMethod<[{
        The operand that result `result` may overwrite, or -1.
      }],
      "int", "getInPlaceOperand", (ins "unsigned":$result)>
  ];
}

def Braid_CollectiveOpInterface : OpInterface<"CollectiveOpInterface"> {
  let cppNamespace = "::braid";
  let description = [{
    A collective over the device group that the grid axes of a `shard.grid`
    span. Both forms of every collective implement it (the synchronous one
    and the start form yielding a future); `defm Braid_Collective` in
    BraidOps.td defines the pair and this interface's answers at once.
  }];
  let methods = [
    InterfaceMethod<"The grid the collective runs on.",
      "::mlir::FlatSymbolRefAttr", "getGridAttr">,
    InterfaceMethod<"The grid axes that span the device group.",
      "::llvm::ArrayRef<int16_t>", "getGridAxes">,
    InterfaceMethod<"The collective's kind in the cost model.",
      "::braid::CollectiveKind", "getCollectiveKind", (ins), [{}], [{
        return ConcreteOp::kCollectiveKind;
      }]>,
    InterfaceMethod<[{
        Bytes the collective moves for one rank, by the cost model's one rule
        (braid::getCommBytes): the input for most kinds, the gathered result
        for an all-gather, the received tensor for a receive.
      }],
      "uint64_t", "getCommBytes", (ins), [{}], [{
        return ::braid::detail::getCollectiveCommBytes($_op.getOperation(),
                                                       ConcreteOp::kCollectiveKind);
      }]>,
    InterfaceMethod<"Whether this is the start form, yielding a future.",
      "bool", "isAsync", (ins), [{}], [{
        return ConcreteOp::kIsStartForm;
      }]>,
    InterfaceMethod<[{
        Builds the start form of this synchronous collective at `builder`'s
        insertion point, with its operands and attributes and a future of its
        result types; null for a start form.
      }],
      "::mlir::Operation *", "buildStartForm", (ins "::mlir::OpBuilder &":$builder)>
  ];
}

def Braid_GradientCollectiveOpInterface
    : OpInterface<"GradientCollectiveOpInterface"> {
  let cppNamespace = "::braid";
  let description = [{
    A collective that may reduce gradients: all-reduce (data parallelism)
    and reduce-scatter (a sharded optimizer). `grad_of` names, per input,
    the parameter whose gradient it is; a bucket built by
    `braid-bucket-gradients` has an index and a size.
  }];
  let methods = [
    InterfaceMethod<"The parameters whose gradients the inputs are.",
      "std::optional<::mlir::ArrayAttr>", "getGradOf">,
    InterfaceMethod<"The bucket's index, if it is one.",
      "std::optional<uint64_t>", "getBucketIndex">,
    InterfaceMethod<"The bucket's bytes, if it is one.",
      "std::optional<uint64_t>", "getBucketBytes">
  ];
}

def Braid_StepCountOpInterface : OpInterface<"StepCountOpInterface"> {
  let cppNamespace = "::braid";
  let description = [{
    An op that reads the training step's count, `step`: a scalar f32 that
    an optimizer-state argument holds and the step increments (AdamW's bias
    correction takes its power, dropout draws its mask from it). The plan
    marks the arguments it is computed from (a binding's `step_count`), and
    braid-run refuses one that is not a whole number of steps.
  }];
  let methods = [
    InterfaceMethod<"The step count the op reads.", "::mlir::Value",
      "getStepCount", (ins), [{ return $_op.getStep(); }]>
  ];
}

def Braid_ShardingOpInterface : OpInterface<"ShardingOpInterface"> {
  let cppNamespace = "::braid";
  let description = [{
    An op's tensor-parallel rule: given how each operand is spread over the
    ranks of the tensor-parallel axis (`#braid.sharding`: replicated, split
    along a dimension, or a partial sum), how each result is, so that every
    rank computing the op on its local pieces computes its piece of the
    global result. `braid-tensor-parallel` asks every op of a global step
    in program order (the backward is ops like the forward) and inserts a
    tensor-parallel all-reduce where an op has no rule for a partial
    operand; any other sharding without a rule is an error naming the op.

    The rules are declared with the ops, never in the pass: by a
    sharding-rule trait in the op's ODS (`Braid_ShardElementwise`,
    `Braid_ShardSum`, `Braid_ShardLinearIn<[i, ...]>`,
    `Braid_ShardReplicated`, `Braid_ShardUpdate`: the default
    propagateSharding applies it), or, where semantics demand, by the op's
    own propagateSharding (lib/Dialect/Braid/IR/ShardingRules.cpp). A collective's rule
    is for one over other grid axes (data parallelism): the pass refuses a
    step that already communicates over the tensor-parallel axis.
  }];
  let methods = [
    InterfaceMethod<[{
        The results' shardings, from the operands' (`operands[i]` is
        operand `i`'s), with the op's global types; failure where the op
        has no rule for them. Sizes need not divide here: the pass checks
        every split value's blocks against the axis size.
      }],
      "::llvm::LogicalResult", "propagateSharding",
      (ins "::llvm::ArrayRef<::braid::ShardingAttr>":$operands,
           "::llvm::SmallVectorImpl<::braid::ShardingAttr> &":$results),
      [{}], [{
        return ::braid::detail::propagateShardingByTrait<ConcreteOp>(
            $_op, operands, results);
      }]>,
    InterfaceMethod<[{
        Whether result `result` can be `wanted` instead of the sharding
        propagateSharding gave it, for these operand shardings (`operands`)
        and at no cost (an embedding's gradient split by rows: each rank
        computes its rows only). On success `newOperands` holds the operand
        shardings that needs: `operands` itself, or with some whole operand
        wanted split too (an all-reduce over another axis passes the request
        on to its input), which the pass asks of that operand's producer in
        turn. The pass asks when the result's one user has no rule for it as
        it is.
      }],
      "::llvm::LogicalResult", "reshardResult",
      (ins "unsigned":$result, "::braid::ShardingAttr":$wanted,
           "::llvm::ArrayRef<::braid::ShardingAttr>":$operands,
           "::llvm::SmallVectorImpl<::braid::ShardingAttr> &":$newOperands),
      [{}], [{
        return ::mlir::failure();
      }]>,
    InterfaceMethod<[{
        Makes the op its per-rank form, once propagation succeeded with
        these operand and result shardings: rewrites the attributes that
        hold global sizes or positions (a slice's offsets), or replaces the
        op by local ops and collectives built with `context` (the
        vocabulary-parallel embedding and cross-entropy). The operands have
        their local types already; the pass rewrites the results' types of
        an op that stays. Returns true if the op replaced itself (every use
        and the op are gone).
      }],
      "bool", "localizeForSharding",
      (ins "::llvm::ArrayRef<::braid::ShardingAttr>":$operands,
           "::llvm::ArrayRef<::braid::ShardingAttr>":$results,
           "::braid::LocalizeContext &":$context), [{}], [{
        return false;
      }]>
  ];
}

#endif // BRAID_DIALECT_BRAID_BRAIDINTERFACES_TD
