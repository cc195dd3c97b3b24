//===- BraidAttributes.td - braid attributes ---------------*- tablegen -*-===//

#ifndef BRAID_DIALECT_BRAID_BRAIDATTRIBUTES_TD
#define BRAID_DIALECT_BRAID_BRAIDATTRIBUTES_TD

include "braid/Dialect/Braid/Braid.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Braid_ReductionKind : I32EnumAttr<"ReductionKind",
    "how a collective combines the values of the ranks", [
  I32EnumAttrCase<"Sum", 0, "sum">,
  I32EnumAttrCase<"Avg", 1, "avg">,
  I32EnumAttrCase<"Max", 2, "max">,
  I32EnumAttrCase<"Min", 3, "min">
]> {
  let cppNamespace = "::braid";
}

def Braid_LossReduction : I32EnumAttr<"LossReduction",
    "how a loss combines the per-sample losses", [
  I32EnumAttrCase<"Mean", 0, "mean">,
  I32EnumAttrCase<"Sum", 1, "sum">
]> {
  let cppNamespace = "::braid";
}

/// A braid.unary function; `hasBackward` says whether braid.unary_backward
/// computes its derivative (the one list: the verifier, the plan loader and
/// the kernels' switches take it from here, through common/gen-op-table.py).
class Braid_UnaryCase<string sym, int val, string str, bit backward>
    : I32EnumAttrCase<sym, val, str> {
  bit hasBackward = backward;
}

def Braid_UnaryKind : I32EnumAttr<"UnaryKind",
    "the function that braid.unary computes of each element", [
  Braid_UnaryCase<"Exp", 0, "exp", 0>,
  Braid_UnaryCase<"Log", 1, "log", 0>,
  Braid_UnaryCase<"Sqrt", 2, "sqrt", 0>,
  Braid_UnaryCase<"Rsqrt", 3, "rsqrt", 0>,
  Braid_UnaryCase<"Tanh", 4, "tanh", 1>,
  Braid_UnaryCase<"Sigmoid", 5, "sigmoid", 1>,
  Braid_UnaryCase<"Silu", 6, "silu", 1>
]> {
  let cppNamespace = "::braid";
}

def Braid_RoleKind : I32EnumAttr<"RoleKind",
    "what a function argument or result is to the training step", [
  I32EnumAttrCase<"Parameter", 0, "parameter">,
  I32EnumAttrCase<"OptimizerState", 1, "optimizer_state">,
  I32EnumAttrCase<"Batch", 2, "batch">,
  I32EnumAttrCase<"Loss", 3, "loss">,
  I32EnumAttrCase<"Hyperparameter", 4, "hyperparameter">
]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::braid";
}

def Braid_PipelineActionKind : I32EnumAttr<"PipelineActionKind",
    "what an action of a pipeline schedule computes of a micro-batch", [
  I32EnumAttrCase<"Forward", 0, "F">,
  I32EnumAttrCase<"Backward", 1, "B">,
  I32EnumAttrCase<"Weight", 2, "W">
]> {
  let cppNamespace = "::braid";
}

def Braid_PipelineScheduleKind : I32EnumAttr<"PipelineScheduleKind",
    "the order in which a pipeline stage runs its micro-batches", [
  // Every micro-batch's forward, then every backward (Huang et al. 2019).
  I32EnumAttrCase<"GPipe", 0, "gpipe">,
  // Stage i runs p - i - 1 forwards, then one forward and one backward in
  // turn, then the remaining backwards (PipeDream-Flush, Megatron-LM's
  // non-interleaved schedule, Narayanan et al. 2021).
  I32EnumAttrCase<"OneForwardOneBackward", 1, "1f1b">,
  // 1F1B with each backward split into B, the gradient of the stage's
  // input that the previous stage waits for, and W, the rest (the weights'
  // gradients); stage i runs micro-batch k's W right after the B of
  // micro-batch k + i, and the last i at the end, so that they fill the
  // waits of 1F1B's drain: ZB-H1 of Qi et al. 2024, a bubble of
  // (p - 1)(F + B - W) instead of (p - 1)(F + B + W) for m >= p, holding
  // p micro-batches on every stage (1F1B's most, on its first).
  I32EnumAttrCase<"ZeroBubbleH1", 2, "zb-h1">,
  // 1F1B over v virtual stages per rank (model chunks: rank r holds
  // virtual stages r, r + p, ..., r + (v - 1) p of p v): Megatron-LM's
  // interleaved schedule (Narayanan et al. 2021). Its forwards run in
  // groups of p micro-batches, each group through chunk 0, then chunk 1,
  // and so on (its backwards the chunks in reverse); rank r warms up with
  // 2 (p - r - 1) + (v - 1) p forwards, then alternates, then drains. A
  // bubble of (p - 1)(F + B) / v for m a multiple of p: 1F1B's divided by
  // v, for v times the transfers.
  I32EnumAttrCase<"Interleaved", 3, "interleaved">
]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::braid";
}

def Braid_StreamKind : I32EnumAttr<"StreamKind",
    "what a stream is for", [
  I32EnumAttrCase<"Compute", 0, "compute">,
  I32EnumAttrCase<"Comm", 1, "comm">
]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::braid";
}

def Braid_ShardingKind : I32EnumAttr<"ShardingKind",
    "how a value of a tensor-parallel step is spread over the ranks of the "
    "tensor-parallel axis", [
  I32EnumAttrCase<"Replicated", 0, "replicated">,
  I32EnumAttrCase<"Split", 1, "split">,
  I32EnumAttrCase<"Partial", 2, "partial">
]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::braid";
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

class Braid_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Braid_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Braid_RoleAttr : Braid_Attr<"Role", "role"> {
  let summary = "the role of a function argument or result in a training step";
  let description = [{
    Marks a function argument as a `parameter`, an `optimizer_state` buffer,
    a `batch` input or a `hyperparameter` (a scalar f32 the runtime writes
    before each step from its schedule, such as a scheduled learning rate),
    and a function result as the updated value of a `parameter` or
    `optimizer_state` argument (same name, same type) or as the `loss`. The name is how the runtime binds values to files, and how a
    gradient collective's `grad_of` names its parameter.

    ```mlir
    func.func @step(%w: tensor<1024x784xf32>
                        {braid.role = #braid.role<parameter "fc1.weight">})
        -> (tensor<1024x784xf32> {braid.role = #braid.role<parameter "fc1.weight">})
    ```
  }];
  let parameters = (ins
    EnumParameter<Braid_RoleKind>:$kind,
    StringRefParameter<"the name of the value">:$name
  );
  let assemblyFormat = "`<` $kind $name `>`";
  let genVerifyDecl = 1;
}

def Braid_StreamAttr : Braid_Attr<"Stream", "stream"> {
  let summary = "the stream an op runs on in a scheduled step";
  let description = [{
    Scheduled IR names the stream of every op with the discardable attribute
    `braid.stream`: the compute stream `#braid.stream<compute, 0>` (braid
    has one) or one of the communication streams `#braid.stream<comm, N>`,
    N below `braid::kMaxCommStreams` (64, `braid-common/Streams.h`).
  }];
  let parameters = (ins
    EnumParameter<Braid_StreamKind>:$kind,
    "unsigned":$index
  );
  let assemblyFormat = "`<` $kind `,` $index `>`";
  let genVerifyDecl = 1;
}

def Braid_StageAttr : Braid_Attr<"Stage", "stage"> {
  let summary = "the pipeline stage a function is the program of";
  let description = [{
    A pipeline-parallel step is several programs in one module, one per
    stage: the function attribute `braid.stage` says which coordinate of
    the pipeline axis `axis` of grid `grid` runs the function. Every rank
    whose coordinate on that axis is `index` runs it; the ranks of the
    other axes (data, tensor parallelism) run it alike. Stages exchange
    activations and gradients with `braid.send`/`braid.recv` on the
    pipeline axis alone, naming the peer by its coordinate on that axis,
    never by an absolute rank. `braid-verify-schedule` checks the stages
    together (docs/Pipeline.md).

    ```mlir
    func.func @stage0(...) attributes {braid.stage = #braid.stage<grid = @world, axis = 1, index = 0>}
    ```
  }];
  let parameters = (ins
    "::mlir::FlatSymbolRefAttr":$grid,
    "int64_t":$axis,
    "int64_t":$index
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Braid_PipelineScheduleParameter
    : AttrParameter<"::braid::PipelineScheduleKind",
                    "a pipeline schedule, by its name in quotes"> {
  // The names (1f1b, zb-h1) are not MLIR keywords: quoted strings.
  let parser = "::braid::parsePipelineScheduleName($_parser)";
  let printer = "$_printer << '\"' << ::braid::stringifyPipelineScheduleKind($_self) << '\"'";
  let defaultValue = "::braid::PipelineScheduleKind::OneForwardOneBackward";
}

def Braid_PipelineAttr : Braid_Attr<"Pipeline", "pipeline"> {
  let summary = "how a module asks braid-pipeline to split its step";
  let description = [{
    The module attribute `braid.pipeline` asks braid-pipeline to split the
    step into stages on grid axis `axis`, running `micro_batches` per step
    in `schedule`'s order (`"gpipe"`, `"1f1b"`, `"zb-h1"` or
    `"interleaved"`, docs/Pipeline.md), with `virtual_stages` model chunks
    per rank under the interleaved schedule, the stages starting at the
    modules `boundaries` (none: balanced by the cost model). All but the
    axis are optional; braid.models --pp and braid.export write it, and
    braid-pipeline's options, where given, override it.

    ```mlir
    module attributes {braid.pipeline = #braid.pipeline<axis = 0, micro_batches = 4, schedule = "gpipe", boundaries = ["h2"]>} {
    ```
  }];
  let parameters = (ins
    "int64_t":$axis,
    DefaultValuedParameter<"int64_t", "1">:$micro_batches,
    Braid_PipelineScheduleParameter:$schedule,
    DefaultValuedParameter<"int64_t", "1">:$virtual_stages,
    OptionalParameter<"::mlir::ArrayAttr">:$boundaries
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

/// A list of grid axes, in brackets: `[0, 2]`.
class Braid_AxisListParameter<string desc>
    : OptionalArrayRefParameter<"int64_t", desc> {
  let parser = [{ ::braid::parseAxisList($_parser) }];
  let printer = [{ ::braid::printAxisList($_printer, $_self) }];
}

def Braid_TensorParallelAttr : Braid_Attr<"TensorParallel", "tensor_parallel"> {
  let summary = "the grid axis a partitioned function's tensor parallelism spans";
  let description = [{
    braid-tensor-parallel marks each function it partitions (its types are
    then each rank's local piece) with the discardable attribute
    `braid.tensor_parallel`: the grid and the axis whose ranks split the
    sharded values. braid-sequence-parallel, the sharding verifier and the
    plan writer read it (docs/TensorParallel.md).

    ```mlir
    func.func @step(...) attributes {braid.tensor_parallel = #braid.tensor_parallel<grid = @world, axis = 1>}
    ```

    A step whose shardings name grid axes (`#braid.sharding<split_axes =
    ...>`) can be partitioned again over another axis of the same grid:
    `inner_axes` lists those, in the order they were partitioned, each
    cutting the pieces of the ones before (2D tensor parallelism). The
    runtime places one tensor-parallel axis: braid-translate-to-plan
    refuses a step with inner axes.

    ```mlir
    #braid.tensor_parallel<grid = @world, axis = 1, inner_axes = [0]>
    ```
  }];
  let parameters = (ins
    "::mlir::FlatSymbolRefAttr":$grid,
    "int64_t":$axis,
    Braid_AxisListParameter<"the axes partitioned after `axis`">:$inner_axes
  );
  let builders = [
    AttrBuilder<(ins "::mlir::FlatSymbolRefAttr":$grid, "int64_t":$axis), [{
      return $_get($_ctxt, grid, axis, ::llvm::ArrayRef<int64_t>{});
    }]>
  ];
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Every partitioned axis: `axis`, then `inner_axes`.
    ::llvm::SmallVector<int64_t> getAllAxes() const;
  }];
}

def Braid_DataParallelAttr : Braid_Attr<"DataParallel", "data_parallel"> {
  let summary = "the grid axis a step's optimizer state is sharded over (ZeRO)";
  let description = [{
    braid-shard-data-parallel marks each function whose optimizer state it
    shards over the data-parallel axis with the discardable attribute
    `braid.data_parallel`: the grid, the axis and the ZeRO stage. Each
    sharded state argument and result names the dimension of its piece
    with `braid.data_parallel_split`; the plan writer records both
    (docs/ShardedDataParallel.md).

    ```mlir
    func.func @step(...) attributes {braid.data_parallel = #braid.data_parallel<grid = @world, axis = 0, zero_stage = 1>}
    ```
  }];
  let parameters = (ins
    "::mlir::FlatSymbolRefAttr":$grid,
    "int64_t":$axis,
    "int64_t":$zero_stage
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Braid_ActionAttr : Braid_Attr<"Action", "action"> {
  let summary = "the action of a pipeline schedule an op belongs to";
  let description = [{
    braid-pipeline tags every op it emits for an action of the schedule
    with the discardable attribute `braid.action`: `F` a micro-batch's
    forward, `B` its backward (the input gradient where the schedule splits
    the backward, as ZB-H1 does), `W` its weight gradient. The plan and the
    simulator's trace carry it (the pipeline diagram); an interleaved
    rank's chunks of one micro-batch's forward are all that micro-batch's
    `F`.

    ```mlir
    %h = braid.matmul %x, %w {braid.action = #braid.action<F, micro_batch = 3>} : ...
    ```
  }];
  let parameters = (ins
    "::braid::PipelineActionKind":$kind,
    "int64_t":$microBatch
  );
  let assemblyFormat = "`<` $kind `,` `micro_batch` `=` $microBatch `>`";
  let genVerifyDecl = 1;
}

def Braid_TransferAttr : Braid_Attr<"Transfer", "transfer"> {
  let summary = "which value of the step a pipeline transfer moves";
  let description = [{
    braid-pipeline names each value its stage programs send or receive:
    `value` numbers the step's values that cross stages (activations and
    gradients first, then the gradient parts summed on another stage, then
    the updates of shared parameters), and `micro_batch` is the
    micro-batch the value is of (absent for a value of the whole step). The
    discardable attribute `braid.transfers` on a `braid.send`, `braid.recv`
    or `braid.send_recv` (and their start forms) lists one per value the op
    moves: the sent ones, then the received ones. `braid-verify-schedule`
    then proves that the k-th send from one stage to another and the k-th
    receive of that stage from it are the same value, not only the same
    type (docs/Pipeline.md).

    ```mlir
    %h = braid.recv ... {braid.transfers = [#braid.transfer<value = 0, micro_batch = 1>]}
    ```
  }];
  let parameters = (ins
    "int64_t":$value,
    DefaultValuedParameter<"int64_t", "-1">:$microBatch
  );
  let assemblyFormat =
      "`<` `value` `=` $value (`,` `micro_batch` `=` $microBatch^)? `>`";
  let genVerifyDecl = 1;
}

def Braid_ShardingAttr : Braid_Attr<"Sharding", "sharding"> {
  let summary = "how a value is spread over the ranks of a grid's axes";
  let description = [{
    The shape of upstream `shard`'s sharding (docs/TensorParallel.md,
    docs/Dialect.md on why braid keeps its own attribute): for each tensor
    dimension, the list of grid axes it is split over, major to minor, and
    the grid axes over which the value is partial (each rank holds a value
    of the full shape and the value is their reduction; braid's partial
    values are sums, `shard::ReductionKind::Sum`). A dimension split over
    axes `[a, b]` is cut into `size(a) * size(b)` equal pieces, the rank at
    `(i, j)` of those axes holding piece `i * size(b) + j`: axis `a`'s
    pieces, each cut again over `b`. With `blocks [b0, b1, ...]` (global
    sizes summing to the one split dimension), each block is cut so and a
    rank holds its piece of every block, in block order: a fused q/k/v
    projection split so that each rank holds whole heads of q, of k and of
    v. Trailing dimensions split over no axis are left out.

    ```mlir
    // Rows over grid axis 1 (tensor parallel), each piece again over axis 0.
    #braid.sharding<split_axes = [[1, 0], []]>
    // The sequence over axis 0, the heads over axis 1.
    #braid.sharding<split_axes = [[0], [1]]>
    // Partial over axis 1, columns over axis 0.
    #braid.sharding<split_axes = [[], [0]], partial = sum [1]>
    ```

    The one-axis forms name no axis: they are over the tensor-parallel
    axis, the one braid-tensor-parallel partitions (its `axis` option), so
    that a step exported once can be partitioned over any axis of any grid.
    They are the special case of one axis; grid axes and the one-axis forms
    do not mix in one attribute:

    - `replicated`: every rank holds the whole value (no axis at all);
    - `split D` (and `split D blocks [...]`): dimension `D` split over the
      tensor-parallel axis;
    - `partial`: partial over the tensor-parallel axis.

    A parameter or optimizer state argument of a global step names its
    sharding with the argument attribute `braid.sharding`;
    `braid-tensor-parallel` propagates it to every value and marks the
    arguments and results of the per-rank program it makes.

    ```mlir
    %w: tensor<2304x768xf32> {braid.sharding = #braid.sharding<split 0 blocks [768, 768, 768]>}
    %b: tensor<768xf32> {braid.sharding = #braid.sharding<replicated>}
    ```
  }];
  let parameters = (ins
    OptionalArrayRefParameter<"::mlir::shard::GridAxesAttr">:$splitAxes,
    OptionalArrayRefParameter<"int16_t">:$partialAxes,
    DefaultValuedParameter<"::mlir::shard::ReductionKind",
                           "::mlir::shard::ReductionKind::Sum">:$partialType,
    OptionalArrayRefParameter<"int64_t">:$blocks
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The axis the one-axis forms stand for: the tensor-parallel axis,
    /// whichever braid-tensor-parallel partitions.
    static constexpr int16_t kTensorParallelAxis = -1;

    static ShardingAttr getReplicated(::mlir::MLIRContext *context);
    static ShardingAttr getPartial(::mlir::MLIRContext *context);
    static ShardingAttr getSplit(::mlir::MLIRContext *context, int64_t dim,
                                 ::llvm::ArrayRef<int64_t> blocks = {});
    /// Over grid axes: `splitAxes[d]` the axes dimension `d` is split over
    /// (trailing empty lists dropped), `partialAxes` those it is partial
    /// over.
    static ShardingAttr getOnAxes(::mlir::MLIRContext *context,
                                  ::llvm::ArrayRef<::llvm::SmallVector<int16_t>> splitAxes,
                                  ::llvm::ArrayRef<int16_t> partialAxes = {},
                                  ::llvm::ArrayRef<int64_t> blocks = {});

    /// True if it names grid axes (not one of the one-axis forms).
    bool hasGridAxes() const;
    /// The axes dimension `d` is split over, major to minor.
    ::llvm::ArrayRef<int16_t> getAxesOf(int64_t d) const;
    /// Every grid axis it names.
    ::llvm::SmallVector<int16_t> getAllAxes() const;
    /// Its state over grid axis `axis` alone, in the one-axis form: partial
    /// if `axis` is a partial axis, split along the dimension whose axes
    /// list it (blocks kept as they are), replicated if it names `axis`
    /// nowhere. A one-axis form is returned as it is.
    ShardingAttr onAxis(int16_t axis) const;

    // The one-axis view (over the tensor-parallel axis).
    ShardingKind getKind() const;
    /// The split dimension, or -1.
    int64_t getDim() const;
    bool isReplicated() const { return getKind() == ShardingKind::Replicated; }
    bool isSplit() const { return getKind() == ShardingKind::Split; }
    bool isPartial() const { return getKind() == ShardingKind::Partial; }
    /// Split along `d` (any blocks).
    bool isSplitAlong(int64_t d) const { return isSplit() && getDim() == d; }
    /// The same state with the split moved to dimension `d` (blocks kept).
    ShardingAttr withDim(int64_t d) const;
    /// The global sizes of the blocks along the split dimension of a value
    /// of global shape `shape`: `blocks`, or the whole dimension.
    ::llvm::SmallVector<int64_t> getBlockSizes(::llvm::ArrayRef<int64_t> shape) const;
    /// `replicated`, `partial`, `split 1`, `split 0 blocks [64, 16, 16]` or
    /// `split_axes = [[1, 0], []], partial = sum [2]`.
    std::string str() const;
  }];
}

#endif // BRAID_DIALECT_BRAID_BRAIDATTRIBUTES_TD
