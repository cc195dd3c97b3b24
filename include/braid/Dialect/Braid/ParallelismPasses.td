//===- ParallelismPasses.td - braid's parallelism passes ---*- tablegen -*-===//
//
// The passes that split a training step over a grid's axes: pipeline
// stages, tensor-parallel shards, sequence-parallel pieces. Passes.td
// includes this file where they run, before braid-fuse-kernels.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_PARALLELISMPASSES_TD
#define BRAID_DIALECT_BRAID_PARALLELISMPASSES_TD

include "mlir/Pass/PassBase.td"

def Pipeline : Pass<"braid-pipeline", "mlir::ModuleOp"> {
  let summary = "Split a training step into pipeline stages, one program each, micro-batches in a schedule's order";
  let description = [{
    Turns the module's training step (the function whose arguments carry
    `braid.role`s) into one program per coordinate of the pipeline axis
    `axis` of its grid, each with `braid.stage` (docs/Pipeline.md):

    1. Stages. Each parameter belongs to a stage: `boundaries` names, for
       stages 1 to p - 1, the module whose first parameter (in argument
       order; a name equal to it or starting with it and a dot) starts the
       stage. Each optimizer state belongs to its parameter's stage (a
       state named `P.x` is parameter P's); the other arguments (batch,
       hyperparameters, a shared `step`) are given to every stage that
       reads them.
    2. Ops. The forward (what the loss depends on) runs on the latest stage
       among its operands': activations flow up. The backward (what the
       gradients depend on, besides) flows down: an op reading a parameter
       runs on its stage, any other on the latest stage among its users'
       and its forward operands', and one on gradients alone moves up to
       the earliest stage of its operands. The optimizer (the gradient
       all-reduces, carrying `grad_of`, and what depends on them) runs on
       its parameters' stage. Ops on constants, batch inputs and
       hyperparameters alone are computed again on each stage that needs
       them. Without `boundaries`, the stages are balanced: each parameter
       first a stage of its own, the parameters are cut into the p runs
       whose slowest forward and backward (on the module's cluster) is
       fastest.
    3. Micro-batches. The step is the step of one micro-batch; a stage
       program takes `micro-batches` times the batch (the batch arguments'
       first dimension) and runs its forward and backward once per slice,
       in the order of `schedule` (`gpipe`: all forwards, then all
       backwards; `1f1b`: stage i runs p - i - 1 forwards, then one of each
       in turn, then the rest; `zb-h1`: 1F1B with each backward split in
       B, what the stage's sends and more than one parameter's gradient
       need, and W, the rest (each op of which serves one parameter's
       gradient), stage i running micro-batch k's W after the B of
       k + i and the last i at the end, which fills 1F1B's drain: a
       bubble of (p - 1)(F + B - W) instead of (p - 1)(F + B + W);
       `interleaved`: the step split into p v stages, rank r running
       stages r, r + p, ..., r + (v - 1) p, in Megatron-LM's interleaved
       1F1B order, for a bubble of 1F1B's over v; the micro-batches a
       multiple of p).
       Gradients add up over the micro-batches and
       are scaled by 1/m before their all-reduce, which the stage's last
       micro-batch's backward issues as soon as the sum is complete (after
       that backward's sends, where it sends a gradient down), so that it
       overlaps the rest of the backward; the loss is the mean of the
       micro-batches'. The optimizer runs once, after the last
       backward.
    4. Transfers. A value computed on one stage and used on another is sent
       by its stage after the action (a micro-batch's forward or backward)
       that computes it and received by the other before the action that
       needs it (`braid.send`, `braid.recv` on the pipeline axis, the peer
       named by its stage index); a run of transfers with nothing computed
       between them, to one peer and from one, becomes one
       `braid.send_recv` of all its tensors, which 1F1B's steady state
       needs to run without deadlock. Values between two stages of one rank
       (interleaved) are not transferred, and under the interleaved
       schedule a value for a rank that is not a neighbour is relayed by the
       stages between (each passes it on after its own action). Each pair of ranks must issue its
       transfers in one order on both sides (they match in order); the pass
       proves it from the action lists, value by value, and refuses a step
       whose transfers would not.

    The stage programs are checked as `braid-verify-schedule` checks them
    (matching transfers, no deadlock) before the pass returns. A module
    attribute `braid.pipeline = #braid.pipeline<axis = 0, micro_batches =
    4, schedule = "gpipe", boundaries = ["h2"]>` (and `virtual_stages = 2`
    for the interleaved schedule; what braid.models --pp and braid.export
    write) fills the options left at their defaults, and is removed.

    A parameter that the forward of other stages reads too (tied weights:
    a GPT's lm head and token embedding) is shared: each of those stages
    takes a copy, computes its part of the gradient there and sends it to
    the parameter's stage, which sums, all-reduces and updates it and sends
    the new value back at the end of the step.

    Rejected with an error naming the cause: a boundary that names no
    parameter's module, boundaries out of order or not p v - 1 of them, a
    stage left without parameters, optimizer state read by another stage's
    forward, an optimizer that needs values from another stage other than
    through `braid.sum_squares` (gradient clipping's squared norm, which
    every stage computes: its own part, summed over the pipeline axis by
    one scalar all-reduce), a collective of the step on the pipeline axis,
    results other than the loss that depend on the batch, transfers whose
    order differs between the two sides of a pair of ranks, the interleaved
    schedule with fewer than 2 virtual stages or micro-batches that are
    not a multiple of p, virtual-stages with another schedule.

    Before (`--braid-pipeline="axis=0 micro-batches=2 boundaries=fc2"` on a
    grid of 2):
    ```mlir
    func.func @step(%x: ..., %fc1_weight: ..., %fc2_weight: ...) -> ... {
      %h = braid.matmul %x, %fc1_weight ...
      ...
    }
    ```
    After:
    ```mlir
    func.func @step_stage0(%x: tensor<16x...>, %fc1_weight: ...) -> ...
        attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
      %x0 = braid.slice %x offsets = [0, 0] ...
      %h = braid.matmul %x0, %fc1_weight ...
      braid.send %a on @world grid_axes = [0] peer = 1 ...
      ...
    }
    func.func @step_stage1(...) attributes {braid.stage = ... index = 1>} { ... }
    ```
  }];
  let options = [
    Option<"axis", "axis", "int64_t", /*default=*/"-1",
           "The pipeline axis of the step's grid (required)">,
    Option<"microBatches", "micro-batches", "int64_t", /*default=*/"1",
           "Micro-batches per step: each stage program takes this many times "
           "the step's batch">,
    Option<"schedule", "schedule", "std::string", /*default=*/"\"1f1b\"",
           "The order of a stage's micro-batches: gpipe, 1f1b, zb-h1 or "
           "interleaved">,
    Option<"virtualStages", "virtual-stages", "int64_t", /*default=*/"1",
           "With schedule=interleaved: the virtual stages (model chunks) per "
           "rank, v >= 2; the step is split into p v stages">,
    ListOption<"boundaries", "boundaries", "std::string",
               "The module that starts each stage after the first, p - 1 "
               "names in parameter order (none: balanced by the cost model)">,
    Option<"report", "report", "bool", /*default=*/"false",
           "With boundaries balanced by the cost model: a remark naming "
           "them and each stage's estimated forward and backward time">
  ];
  let statistics = [
    Statistic<"numTransfers", "transfers", "Sends and receives made, per stage program">,
    Statistic<"numPaired", "paired", "Send-receives made from a send and a receive">,
    Statistic<"numRelayed", "relayed", "Values sent stage by stage to a rank that is not a neighbour (interleaved)">
  ];
}

def TensorParallel : Pass<"braid-tensor-parallel", "mlir::ModuleOp"> {
  let summary = "Partition a global step into the per-rank program of a tensor-parallel grid axis";
  let description = [{
    A step is written once with global shapes; its parameters and optimizer
    state say how they are spread over the ranks of the tensor-parallel axis
    of the grid with `braid.sharding` (`#braid.sharding<split D>`,
    `<split D blocks [...]>`, or replicated when absent). The pass
    propagates the shardings through every op in program order (forward,
    backward and optimizer alike) by each op's rule
    (`ShardingOpInterface`, declared with the op), then rewrites every split
    value's type to its local piece.

    Where an op has no rule for a partial operand (the output of a
    row-parallel matmul meeting a bias add, the input gradient of a
    column-parallel one meeting a layer norm's backward, a gradient that
    became partial meeting its optimizer update), the pass inserts a
    `braid.all_reduce` with `reduction = sum` over the tensor-parallel axis
    right before it; the overlap passes then treat it like any collective.
    An updated parameter or optimizer state comes out spread as its
    argument is, and the loss replicated (reduced if partial).

    Errors name the op, the value and the sharding: an op without a rule
    for what it receives, a split dimension (heads, a feature dimension)
    that does not divide by the axis size, a result spread unlike its
    argument, a step that already communicates over the tensor-parallel
    axis. A function without `braid.sharding` is not changed.

    Before (tp = 2, one MLP layer pair):
    ```mlir
    shard.grid @world(shape = 1x2)
    func.func @step(%x: tensor<8x16xf32>,
        %w1: tensor<32x16xf32> {braid.sharding = #braid.sharding<split 0>},
        %w2: tensor<16x32xf32> {braid.sharding = #braid.sharding<split 1>}, ...) {
      %h = braid.matmul %x, %w1 {transpose_b} : ... -> tensor<8x32xf32>
      %a = braid.relu %h : tensor<8x32xf32>
      %y = braid.matmul %a, %w2 {transpose_b} : ... -> tensor<8x16xf32>
      %z = braid.bias_add %y, %b2 : tensor<8x16xf32>, tensor<16xf32>
    ```
    After:
    ```mlir
      %h = braid.matmul %x, %w1 {transpose_b} : ... -> tensor<8x16xf32>
      %a = braid.relu %h : tensor<8x16xf32>
      %y = braid.matmul %a, %w2 {transpose_b} : ... -> tensor<8x16xf32>
      %r = braid.all_reduce %y on @world grid_axes = [1] reduction = sum
          : tensor<8x16xf32>
      %z = braid.bias_add %r, %b2 : tensor<8x16xf32>, tensor<16xf32>
    ```
    The function is marked `braid.tensor_parallel = #braid.tensor_parallel<grid = @world, axis = 1>`,
    and its split arguments and results keep `braid.sharding` for the
    runtime, which loads and saves the global values (docs/TensorParallel.md).
  }];
  let options = [
    Option<"gridName", "grid", "std::string", /*default=*/"\"\"",
           "The grid (default: the module's only shard.grid)">,
    Option<"axis", "axis", "int64_t", /*default=*/"-1",
           "The tensor-parallel grid axis (default: the last, innermost)">
  ];
  let statistics = [
    Statistic<"numReduces", "tp-all-reduces",
              "Tensor-parallel all-reduces inserted">,
    Statistic<"numSplitValues", "split-values",
              "Values split over the tensor-parallel axis">
  ];
}

def SequenceParallel : Pass<"braid-sequence-parallel", "mlir::func::FuncOp"> {
  let summary = "Split the tokens between tensor-parallel collectives (Megatron-LM sequence parallelism)";
  let description = [{
    Runs on each function partitioned by `braid-tensor-parallel` (its
    `braid.tensor_parallel` attribute names the axis), one function at a
    time: stage programs can be rewritten in parallel. Each tensor-parallel
    all-reduce becomes a reduce-scatter along the token dimension: the
    outermost of size above 1 before the features (the tokens of
    `[tokens, hidden]`, the sequences of `[batch, seq, hidden]`, the
    sequence of `[1, seq, hidden]`): the ops
    that follow it and compute each token alone (ops with the `PerToken`
    trait: bias add, residual add, layer norm, elementwise activations,
    and their backward) run on the rank's share of the tokens, by their
    sharding rules; an op that needs every token (a matmul) gets an
    all-gather along that dimension right before it. A ring all-reduce is a
    reduce-scatter and an all-gather, so the bytes sent stay the same, and
    what the backward keeps of these ops (the residual stream, the layer
    norms' inputs and statistics) is the local share (Korthikanti et al.
    2022). The backward is rewritten by the same rules: a token-split
    gradient is gathered before the matmuls of a row-parallel layer's
    backward, the partial input gradient of a column-parallel one is
    reduce-scattered before the layer norm's backward, and the layer norms'
    parameter gradients, partial sums over the tokens, are all-reduced over
    the axis before their update.

    An all-gather is made again for each stretch of the step between two
    tensor-parallel collectives, so the backward gathers its saved inputs
    again instead of keeping the forward's whole copies alive, as Megatron
    does. Where a replicated value meets a token-split one in a per-token op
    (the embeddings' output meets the first layer, the lm head's gradient
    meets the last layer norm), the replicated value is cut to the rank's
    share by a `braid.shard_slice` (a local copy of the rank's piece, at
    `braid.axis_index`; no communication). A token dimension that does not divide by
    the axis size is an error that names it (compile with
    `--sequence-parallel=false`).

    Before (per rank, after braid-tensor-parallel):
    ```mlir
    %p = braid.matmul %ctx, %w_proj {transpose_b} : ... -> tensor<64x64xf32>
    %r = braid.all_reduce %p on @world grid_axes = [1] reduction = sum : tensor<64x64xf32>
    %b = braid.bias_add %r, %bias : tensor<64x64xf32>, tensor<64xf32>
    %x3 = braid.add %x, %b : tensor<64x64xf32>
    %y, %mean, %rstd = braid.layer_norm %x3, %g, %beta eps = 1.0e-05 : ...
    %fc = braid.matmul %y, %w_fc {transpose_b} : ...
    ```
    After:
    ```mlir
    %p = braid.matmul %ctx, %w_proj {transpose_b} : ... -> tensor<64x64xf32>
    %r = braid.reduce_scatter %p on @world grid_axes = [1] reduction = sum
        scatter_dim = 0 : tensor<64x64xf32> -> tensor<32x64xf32>
    %b = braid.bias_add %r, %bias : tensor<32x64xf32>, tensor<64xf32>
    %x3 = braid.add %x, %b : tensor<32x64xf32>
    %y, %mean, %rstd = braid.layer_norm %x3, %g, %beta eps = 1.0e-05 : ...
    %yg = braid.all_gather %y on @world grid_axes = [1] gather_dim = 0
        : tensor<32x64xf32> -> tensor<64x64xf32>
    %fc = braid.matmul %yg, %w_fc {transpose_b} : ...
    ```
  }];
  let options = [
    Option<"regather", "regather", "bool", /*default=*/"true",
           "Gather a token-split value again in each stretch between "
           "tensor-parallel collectives (the backward's re-gathers of the "
           "saved layer-norm outputs, as Megatron does); false keeps the "
           "first gathered copy alive for every later reader instead: "
           "fewer all-gathers, more memory">
  ];
  let statistics = [
    Statistic<"numReduceScatters", "reduce-scatters",
              "Tensor-parallel all-reduces made reduce-scatters">,
    Statistic<"numAllGathers", "all-gathers", "All-gathers inserted">,
    Statistic<"numScatters", "scatters",
              "Replicated values cut to the rank's share">
  ];
}

def CollectiveMatmul : Pass<"braid-collective-matmul", "mlir::func::FuncOp"> {
  let summary = "Decompose an all-gather into a matmul, and a matmul into a reduce-scatter, into ring steps that overlap (collective matmul)";
  let description = [{
    The forward of a sequence-parallel layer gathers the tokens before its
    matmul, and the matmul cannot start before the gather ends; the
    row-parallel matmul's product is reduce-scattered after it ends. This
    pass cuts each such pair into `t` ring steps over the collective's group
    of `t` ranks, each step's product computed while
    `braid.collective_permute` moves the next piece (Wang et al., ASPLOS'23;
    XLA's windowed einsum; Transformer Engine's ring exchange):

    - an all-gather read by matmuls: rank `i` multiplies the piece it holds
      while passing it to rank `i + 1`; after `k` steps it holds rank
      `i - k`'s piece. Where the gathered dimension is a row (or batch)
      dimension of the product, the pieces' products are joined by
      `braid.shard_concat` (`shifts = [0, -1, ...]`); where it is the
      contracted dimension (a weight gradient over the tokens), each step
      multiplies by the other operand's matching piece (`braid.shard_slice`
      with `shift = -k`) and the products are summed.
    - a matmul whose only reader is a sum reduce-scatter along a row (or
      batch, or column) dimension of its product: at step `k` rank `i`
      computes the product for block `i - k - 1` (its operand cut by
      `braid.shard_slice`, `shift = -k - 1`), adds the partial sum that
      arrives from rank `i - 1`, and passes it on; after `t` steps it holds
      the sum of block `i`.

    Every permute sends to the rank one ahead (`offset = 1`). An all-gather
    with another reader, or a matmul that reads its operands through
    permutations or slices (braid-fuse-kernels makes them, after this pass),
    is left as it is. `mode=on` decomposes every site; `mode=auto` only
    where the cost model of `cluster` predicts the ring faster than the
    collective followed (or preceded) by the whole matmul: the ring's steps
    each take the longer of the piece's product and the permute, both slowed
    by the cluster's contention, plus the joins and sums the ring adds.
    `report` emits each site's decision as a remark with both predictions.
    The sums of a ring add the ranks' partial products in another order
    than the reduce-scatter does, so the results differ from the
    undecomposed step by rounding only.

    Before (tp 2):
    ```mlir
    %g = braid.all_gather %y on @world grid_axes = [1] gather_dim = 0
        : tensor<32x64xf32> -> tensor<64x64xf32>
    %fc = braid.matmul %g, %w {transpose_b} : tensor<64x64xf32>, tensor<128x64xf32> -> tensor<64x128xf32>
    ```
    After:
    ```mlir
    %i = braid.axis_index on @world grid_axes = [1] : tensor<i64>
    %y1 = braid.collective_permute %y on @world grid_axes = [1] offset = 1
        : tensor<32x64xf32> -> tensor<32x64xf32>
    %p0 = braid.matmul %y, %w {transpose_b} : tensor<32x64xf32>, tensor<128x64xf32> -> tensor<32x128xf32>
    %p1 = braid.matmul %y1, %w {transpose_b} : tensor<32x64xf32>, tensor<128x64xf32> -> tensor<32x128xf32>
    %fc = braid.shard_concat %p0, %p1 at %i dim = 0 shifts = [0, -1]
        : tensor<32x128xf32>, tensor<32x128xf32> -> tensor<64x128xf32>
    ```
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"on\"",
           "on: decompose every site; auto: where the cost model predicts a gain">,
    Option<"cluster", "cluster", "std::string", /*default=*/"\"\"",
           "The cluster for mode=auto (default: the module's braid.cluster, else h100-8)">,
    Option<"report", "report", "bool", /*default=*/"false",
           "Report each site's decision and predicted times as a remark">
  ];
  let statistics = [
    Statistic<"numAllGathers", "all-gathers", "All-gathers decomposed into rings">,
    Statistic<"numReduceScatters", "reduce-scatters", "Reduce-scatters decomposed into rings">,
    Statistic<"numKept", "kept", "Sites the cost model kept whole">
  ];
}

def ShardDataParallel : Pass<"braid-shard-data-parallel", "mlir::func::FuncOp"> {
  let summary = "Shard the optimizer state over the data-parallel axis (ZeRO stages 1 and 2)";
  let description = [{
    ZeRO (Rajbhandari et al. 2020) on one function: each optimizer update
    whose gradient is the data-parallel average (a `braid.all_reduce` with
    `grad_of`, possibly cast before the update reads it) runs on the rank's
    piece of the parameter. The gradient's all-reduce becomes a
    reduce-scatter (average) along the piece's dimension, the parameter is
    cut to the rank's piece (`braid.shard_slice` at `braid.axis_index`), the
    optimizer state arguments hold only the rank's piece, and the updated
    piece is all-gathered into the whole parameter the step returns. The
    piece's dimension is the first of the parameter's (local) dimensions
    that the data-parallel size divides; a parameter with none keeps its
    all-reduce and whole state, and `report` names it.

    Each sharded state argument and result carries `braid.data_parallel_split`
    (the dimension), and the function `braid.data_parallel` (the grid, the
    axis and the stage): the plan records both, and braid-run loads global
    state files into pieces and gathers them on save. Stage 1 and stage 2
    rewrite alike; braid-schedule tells them apart: under stage 2 it waits
    each reduce-scatter in the backward, so the whole gradient is freed
    there, and under stage 1 in the optimizer phase
    (docs/ShardedDataParallel.md).
    Gradient clipping's sum of squares reads the pieces, and the pieces'
    sum is all-reduced over the data-parallel axis (the squares of
    parameters kept whole added once, after). A gradient read by anything
    else is an error that names the reader.

    Before (dp 2):
    ```mlir
    %g = braid.all_reduce %dw on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<64x32xf32>
    %w2, %m2 = braid.sgd %w, %g, %m lr = 0.1 momentum = 0.9 weight_decay = 0.0 : tensor<64x32xf32>
    ```
    After:
    ```mlir
    %i = braid.axis_index on @world grid_axes = [0] : tensor<i64>
    %g = braid.reduce_scatter %dw on @world grid_axes = [0] reduction = avg scatter_dim = 0 grad_of = ["w"]
        : tensor<64x32xf32> -> tensor<32x32xf32>
    %ws = braid.shard_slice %w, %i dim = 0 parts = 2 : tensor<64x32xf32> -> tensor<32x32xf32>
    %w2s, %m2 = braid.sgd %ws, %g, %m lr = 0.1 momentum = 0.9 weight_decay = 0.0 : tensor<32x32xf32>
    %w2 = braid.all_gather %w2s on @world grid_axes = [0] gather_dim = 0 : tensor<32x32xf32> -> tensor<64x32xf32>
    ```
  }];
  let options = [
    Option<"stage", "stage", "unsigned", /*default=*/"1",
           "The ZeRO stage: 0 (nothing sharded), 1 or 2">,
    Option<"report", "report", "bool", /*default=*/"false",
           "Report each sharded parameter (and each kept whole) as a remark">
  ];
  let statistics = [
    Statistic<"numSharded", "sharded", "Parameters updated in pieces">,
    Statistic<"numKept", "kept", "Parameters with no dimension the data-parallel size divides">
  ];
}

#endif // BRAID_DIALECT_BRAID_PARALLELISMPASSES_TD
