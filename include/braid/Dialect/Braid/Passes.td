//===- Passes.td - braid passes ----------------------------*- tablegen -*-===//

#ifndef BRAID_DIALECT_BRAID_PASSES_TD
#define BRAID_DIALECT_BRAID_PASSES_TD

include "mlir/Pass/PassBase.td"

def CostSummary : Pass<"braid-cost-summary", "mlir::ModuleOp"> {
  let summary = "Print the cost of each training step in the module";
  let description = [{
    For every function of the module, adds up the cost that the ops report
    through `CostOpInterface` and `CollectiveOpInterface` and prints a
    summary: floating-point operations, bytes read and written, the
    collectives and the bytes they move, the parameters, and the gradient
    bytes to reduce (the inputs of collectives that carry `grad_of`). The IR
    is not changed.

    ```
    $ braid-opt --braid-cost-summary=top-ops=1 examples/mlp.mlir -o /dev/null
    braid cost summary: @mlp_step
      compute ops               18
      flops                     214608700 (214.61 MFLOP)
      bytes read                15581348 (14.86 MiB)
      bytes written             11087488 (10.57 MiB)
      collectives               4 (4 all_reduce)
      collective bytes          3256360 (3.11 MiB)
      parameter tensors         4
      parameter elements        814090
      parameter bytes           3256360 (3.11 MiB)
      gradient bytes to reduce  3256360 (3.11 MiB)
      top ops by flops:
        braid.matmul                      5 ops  209453056 (97.6%)
    ```
  }];
  let options = [
    Option<"topOps", "top-ops", "unsigned", /*default=*/"5",
           "How many op kinds to list, by flops (0 lists none)">
  ];
  let statistics = [
    Statistic<"numComputeOps", "compute-ops", "Compute ops summarized">,
    Statistic<"numCollectives", "collectives", "Collectives summarized">
  ];
}


def BucketGradients : Pass<"braid-bucket-gradients", "mlir::ModuleOp"> {
  let summary = "Group gradient all-reduces into buckets, in the order gradients become ready";
  let description = [{
    Replaces the per-parameter gradient all-reduces of a data-parallel step
    (single-input `braid.all_reduce` ops with `grad_of`) by variadic
    all-reduces, one per bucket, as DDP does at run time, but ahead of time.

    Gradients are taken in the order they become ready: the program order of
    the ops that produce them, which in a backward pass is the last layer
    first. A bucket is filled until the next gradient would take it past
    `bucket-cap-mb` (`first-bucket-cap-mb` for the first bucket of each
    group, so that communication starts early). A gradient larger than the
    cap gets a bucket of its own, or, with `split-large`, is cut into chunks
    of at most the cap, each reduced in its own bucket. Only gradients of one
    element type, grid, grid axes and reduction share a bucket. Each bucket
    op is placed right after the last producer of its gradients and carries
    `bucket_index` and `bucket_bytes`.

    A gradient all-reduce whose result is used before the end of the
    backward (at or before the last gradient producer) is left alone, and so
    is every collective without `grad_of`.

    Gradient clipping's squared norm (`braid.sum_squares` over gradients of
    several buckets) becomes one sum of squares per bucket, placed right
    after it, and their sum where the norm was. Each part then runs as its
    bucket lands, and only the sum waits for the last bucket.

    With `auto-bucket-cap` the cost model of `cluster` (a preset such as
    `h100-8x8`, or a JSON file; docs/CostModel.md) places every bucket end,
    the first too: dynamic programming over where buckets end, in ready
    order, minimising the predicted end of the step (each bucket starts
    when its last gradient is ready and the previous one is done, and slows
    the compute it overlaps). Bucket sizes then differ from bucket to
    bucket. `split-large` does not combine with `auto-bucket-cap`.

    The bucket count and sizes are pass statistics (`--mlir-pass-statistics`,
    in an MLIR built with statistics; Debian's is not) and, with `report`, a
    remark per function: `buckets: 4 (6144, 20447232, 10238976, 154533888
    bytes)`.

    Before (MiB sizes):
    ```mlir
    %dw2 = braid.matmul ...                  // 4 MiB
    %r2 = braid.all_reduce %dw2 on @world grid_axes = [0] reduction = avg grad_of = ["w2"]
    %db2 = braid.reduce_sum ...              // 4 KiB
    %r3 = braid.all_reduce %db2 ... grad_of = ["b2"]
    %dw1 = braid.matmul ...                  // 3 MiB
    %r1 = braid.all_reduce %dw1 ... grad_of = ["w1"]
    ```
    After, with `bucket-cap-mb=25 first-bucket-cap-mb=1`:
    ```mlir
    %dw2 = braid.matmul ...
    %r2 = braid.all_reduce %dw2 ... grad_of = ["w2"] {bucket_bytes = 4194304, bucket_index = 0}
    %db2 = braid.reduce_sum ...
    %dw1 = braid.matmul ...
    %r:2 = braid.all_reduce %db2, %dw1 ... grad_of = ["b2", "w1"] {bucket_bytes = 3149824, bucket_index = 1}
    ```
  }];
  let options = [
    Option<"bucketCapMb", "bucket-cap-mb", "double", /*default=*/"25.0",
           "Most MiB of gradients in one bucket (inf: no cap)">,
    Option<"autoBucketCap", "auto-bucket-cap", "bool", /*default=*/"false",
           "Choose the bucket sizes from the cost model of `cluster` "
           "(bucket-cap-mb is then not used)">,
    Option<"firstBucketCapMb", "first-bucket-cap-mb", "double",
           /*default=*/"1.0",
           "Most MiB of gradients in the first bucket of each group">,
    Option<"splitLarge", "split-large", "bool", /*default=*/"false",
           "Cut gradients larger than the cap into chunks of at most the cap">,
    Option<"cluster", "cluster", "std::string", /*default=*/"\"\"",
           "The cluster auto-bucket-cap optimizes for: a preset name or "
           "a JSON file (default: the module's braid.cluster, else h100-8)">,
    Option<"report", "report", "bool", /*default=*/"false",
           "Report the buckets of each function as a remark">
  ];
  let statistics = [
    Statistic<"numBuckets", "buckets", "Buckets created">,
    Statistic<"numGradients", "gradients", "Gradient all-reduces bucketed">,
    Statistic<"numSplit", "split-gradients", "Gradients cut into chunks">,
    Statistic<"bucketedBytes", "bucketed-bytes", "Bytes of all buckets">,
    Statistic<"largestBucketBytes", "largest-bucket-bytes",
              "Bytes of the largest bucket">,
    Statistic<"smallestBucketBytes", "smallest-bucket-bytes",
              "Bytes of the smallest bucket">
  ];
}

// braid-pipeline, braid-tensor-parallel, braid-sequence-parallel.
include "braid/Dialect/Braid/ParallelismPasses.td"

def FuseKernels : Pass<"braid-fuse-kernels", "mlir::func::FuncOp"> {
  let summary = "Fold scales, masks, biases, transposes and slices into the kernels that read them";
  let description = [{
    Attention scores are scaled, masked and normalized by three ops, each a
    pass over a `[batch, heads, seq, seq]` tensor, and the backward mirrors
    them. This pass folds a `braid.scale` and a `braid.causal_mask` with
    fill -inf before a `braid.softmax` along the last dimension into its
    `scale` and `causal` attributes, and a `braid.causal_mask` with fill 0
    and a `braid.scale` after a `braid.softmax_backward` into the
    backward's. The folded ops must have no other use. The result is bit
    for bit that of the ops folded (the kernels compute the same float
    operations in the same order), and the tensors between them are gone
    from the memory plan (the same holds for the bias folded into gelu
    below):
    ```mlir
    %s = braid.scale %scores by 1.250000e-01 : tensor<8x12x64x64xf32>
    %m = braid.causal_mask %s fill = 0xFFF0000000000000 : tensor<8x12x64x64xf32>
    %p = braid.softmax %m dim = 3 : tensor<8x12x64x64xf32>
    ...
    %d = braid.softmax_backward %dp, %p dim = 3 : tensor<8x12x64x64xf32>
    %dm = braid.causal_mask %d fill = 0.000000e+00 : tensor<8x12x64x64xf32>
    %ds = braid.scale %dm by 1.250000e-01 : tensor<8x12x64x64xf32>
    ```
    becomes
    ```mlir
    %p = braid.softmax %scores dim = 3 {causal, scale = 1.250000e-01 : f64} : tensor<8x12x64x64xf32>
    ...
    %ds = braid.softmax_backward %dp, %p dim = 3 {causal, scale = 1.250000e-01 : f64} : tensor<8x12x64x64xf32>
    ```
    A scale or mask alone folds as well; a softmax that already has a
    scale or a mask, a negative scale before a mask (it would turn -inf
    into +inf) and ops on different streams are left as they are.

    A `braid.bias_add` whose sum only gelus read (the MLP's first layer:
    the gelu, and its backward, which saves the sum) folds into them as
    their `bias` operand: the sum is never written, and the backward adds
    the bias again (Megatron-LM's bias-GeLU fusion). A `braid.reshape`
    between them that keeps the last dimension then reshapes the
    bias_add's input:
    ```mlir
    %h = braid.bias_add %mm, %b : tensor<512x1024xf32>, tensor<1024xf32>
    %v = braid.reshape %h : tensor<512x1024xf32> -> tensor<8x64x1024xf32>
    %y = braid.gelu %v {approximate_tanh} : tensor<8x64x1024xf32>
    ...
    %dv = braid.gelu_backward %dy, %v {approximate_tanh} : tensor<8x64x1024xf32>
    ```
    becomes
    ```mlir
    %v = braid.reshape %mm : tensor<512x1024xf32> -> tensor<8x64x1024xf32>
    %y = braid.gelu %v, %b {approximate_tanh} : tensor<8x64x1024xf32>, tensor<1024xf32>
    ...
    %dv = braid.gelu_backward %dy, %v, %b {approximate_tanh} : tensor<8x64x1024xf32>, tensor<1024xf32>
    ```
    The bias's own gradient (a braid.reduce_sum of the gelu_backward's
    result) is unchanged. (A positional embedding broadcast over a batch
    and added to it is a multi-dimension `braid.bias_add` already:
    braid.add's canonicalizer folds the broadcast.)

    A `braid.transpose` that only matmuls read folds into their
    `lhs_permutation`/`rhs_permutation`, and one that is a matmul's only
    reader into its `result_permutation`, where each matrix keeps a
    unit-stride dimension (BLAS then reads and writes the tensor where it
    is). Attention's batched matmuls over `[batch x heads]`, which AOT
    autograd writes between reshapes, first take the `[batch, heads]`
    dimensions back (reshapes, which move nothing, take the other operand
    and the result to and from the merged form where needed), so that the
    head transposes fold:
    ```mlir
    %tq = braid.transpose %q permutation = [0, 2, 1, 3] : tensor<8x64x12x64xf32> -> tensor<8x12x64x64xf32>
    %q3 = braid.reshape %tq : tensor<8x12x64x64xf32> -> tensor<96x64x64xf32>
    ...
    %s3 = braid.matmul %q3, %k3 : tensor<96x64x64xf32>, tensor<96x64x64xf32> -> tensor<96x64x64xf32>
    ```
    becomes
    ```mlir
    %s = braid.matmul %q, %k {lhs_permutation = array<i64: 0, 2, 1, 3>, rhs_permutation = array<i64: 0, 2, 3, 1>}
        : tensor<8x64x12x64xf32>, tensor<8x64x12x64xf32> -> tensor<8x12x64x64xf32>
    ```
    The product is the same; BLAS may take another path for a transposed
    operand, so the result can differ in the last bits.

    A slice of a range of a tensor's last dimension (a fused projection's
    q, k or v), read only through reshapes that split that dimension into
    heads, each read only by matmuls that see the heads as a batch
    dimension, folds into their `lhs_slice`/`rhs_slice`: the matmuls read
    the whole tensor, reshaped into heads (a view), from the slice's first
    head, and the slice's copy goes:
    ```mlir
    %q = braid.slice %qkv offsets = [0, 0, 768] : tensor<8x64x2304xf32> -> tensor<8x64x768xf32>
    %q4 = braid.reshape %q : tensor<8x64x768xf32> -> tensor<8x64x12x64xf32>
    %s = braid.matmul %q4, %k4 {lhs_permutation = array<i64: 0, 2, 1, 3>, ...}
    ```
    becomes
    ```mlir
    %h = braid.reshape %qkv : tensor<8x64x2304xf32> -> tensor<8x64x36x64xf32>
    %s = braid.matmul %h, %h {lhs_permutation = array<i64: 0, 2, 1, 3>, lhs_slice = array<i64: 2, 12, 12>, ...}
    ```
    The product reads the same values in the same order: the same bits.

    Each fold is a rewrite pattern; the pass applies those its options
    leave on with MLIR's greedy driver, without the driver's own folding
    (braid-compile runs canonicalize just before). A transpose folds into
    its readers before its writer.
    braid-compile runs it after the parallelism passes and before the
    overlap passes (`--fuse=false` turns it off).
  }];
  let options = [
    Option<"softmax", "softmax", "bool", /*default=*/"true",
           "Fold scales and causal masks into softmax and its backward">,
    Option<"biasGelu", "bias-gelu", "bool", /*default=*/"true",
           "Fold a bias_add into the gelu and gelu_backward that read it">,
    Option<"transposes", "transposes", "bool", /*default=*/"true",
           "Fold transposes into the matmuls that read or write them">,
    Option<"slices", "slices", "bool", /*default=*/"true",
           "Fold slices of heads into the matmuls that read them">
  ];
  let statistics = [
    Statistic<"foldedOps", "folded-ops", "Ops folded into another">
  ];
}

def AsyncCollectives : Pass<"braid-async-collectives", "mlir::func::FuncOp"> {
  let summary = "Split collectives into a start and a wait, as far apart as the data allows";
  let description = [{
    Replaces each synchronous collective by its start form, which yields a
    `!braid.future`, and a `braid.wait`. The start is placed right after the
    last producer of its operands; the wait right before the first user of
    its results (before the terminator if there is none). A collective
    without results (a send) is waited right before the next start of its
    group, whose collectives run in order anyway, so that its input is not
    held to the end of the step.

    Issue order rule: starts on the same group (same grid and grid axes)
    keep the relative order the collectives had, so a start is also placed
    after the previous start on its group. The pass is deterministic and every
    rank runs the same program, so every rank issues the collectives of a
    group in the same order, which is what NCCL and MPI require.

    Before:
    ```mlir
    %g = braid.matmul ...
    %x = braid.matmul ...                    // does not need %r
    %r = braid.all_reduce %g on @world grid_axes = [0] reduction = avg ...
    %y = braid.sgd %w, %r, ...
    ```
    After:
    ```mlir
    %g = braid.matmul ...
    %f = braid.all_reduce_start %g on @world grid_axes = [0] reduction = avg ...
    %x = braid.matmul ...
    %r = braid.wait %f : !braid.future<...>
    %y = braid.sgd %w, %r, ...
    ```
  }];
  let options = [
    Option<"gradientsOnly", "gradients-only", "bool", /*default=*/"false",
           "Split only the collectives that carry grad_of; the others (the "
           "tensor-parallel ones) stay synchronous (the Megatron-style "
           "baseline of utils/bench-tensor-parallel.py)">,
    Option<"forwardSync", "forward-sync", "bool", /*default=*/"false",
           "Keep the collectives without grad_of that come before the "
           "loss synchronous: the forward's tensor-parallel collectives "
           "wait where they are, the backward's overlap (Megatron-LM's "
           "asynchronous tensor-parallel backward, the megatron-async "
           "baseline of utils/bench-tensor-parallel.py)">
  ];
  let statistics = [
    Statistic<"numSplit", "collectives", "Collectives split into start and wait">
  ];
}

def Schedule : Pass<"braid-schedule", "mlir::func::FuncOp"> {
  let summary = "Reorder compute so buckets launch earlier and optimizer updates overlap communication";
  let description = [{
    List-schedules the ops of each function body within their data
    dependencies, after `braid-async-collectives`. Priorities:

    1. Ops that do not depend on any `braid.wait` come first, ordered by the
       earliest collective start they feed (transitively): the ops a bucket
       needs run before those of later buckets, so a weight-gradient matmul
       runs before the next input-gradient matmul when its bucket comes
       first, and each start is issued as soon as its gradients exist.
    2. Then each wait, in start order, directly followed by the ops that
       become ready through it (the optimizer updates of that bucket), so the
       optimizer of late layers overlaps the communication of early ones.

    Only the waits of gradient collectives (with `grad_of`) are deferred
    so: the wait of a tensor-parallel collective is on the step's critical
    path and is ordered with the compute of priority 1, so that the
    backward does not stall behind a gradient bucket's wait, but after
    every other op of priority 1 that is ready: as late as the data allow,
    so that a weight gradient runs while the input gradient is
    reduce-scattered (Megatron's asynchronous tensor-parallel backward).

    Starts on one group keep their relative order. The pass measures the
    peak of live tensor bytes before and after (statistics, and with
    `report` a remark). If the new order raises it by more than
    `max-live-increase` percent, the pass schedules only the last half of
    the ops, then the last quarter, and so on, keeping the rest in
    program order, and takes the longest such tail within the bound (a
    remark says how many ops). This is what keeps the overlap of a step of
    several micro-batches (gradient accumulation). There, scheduling the
    whole function would interleave every micro-batch's ops by the buckets
    they feed through the accumulated sums and keep all their activations
    live, while the buckets only start in the last micro-batch's backward.
    If no tail fits, or `partial` is false, the function keeps its order. A function
    that already has streams (after `braid-assign-streams`) is left as it
    is, so the pipeline can run twice, and so is a pipeline stage's program
    (`braid.stage`): braid-pipeline wrote it in its schedule's order, which
    bounds the micro-batches whose activations it holds, and these
    priorities would pull later micro-batches' forwards ahead of earlier
    backwards.

    Before (as autograd emits it):
    ```mlir
    %dx1 = braid.matmul %dy, %w2 ...                    // input gradient
    %dw2 = braid.matmul %dy, %x {transpose_a} ...       // weight gradient
    %f2 = braid.all_reduce_start %dw2 ... grad_of = ["w2"]
    %dw1 = braid.matmul %dx1, %x {transpose_a} ...
    %f1 = braid.all_reduce_start %dw1 ... grad_of = ["w1"]
    %r1 = braid.wait %f1 ...
    %n1:2 = braid.sgd %w1, %r1, %m1 ...
    %r2 = braid.wait %f2 ...
    %n2:2 = braid.sgd %w2, %r2, %m2 ...
    ```
    After:
    ```mlir
    %dw2 = braid.matmul %dy, %x {transpose_a} ...
    %f2 = braid.all_reduce_start %dw2 ... grad_of = ["w2"]
    %dx1 = braid.matmul %dy, %w2 ...                    // overlaps %f2
    %dw1 = braid.matmul %dx1, %x {transpose_a} ...
    %f1 = braid.all_reduce_start %dw1 ... grad_of = ["w1"]
    %r2 = braid.wait %f2 ...
    %n2:2 = braid.sgd %w2, %r2, %m2 ...                 // overlaps %f1
    %r1 = braid.wait %f1 ...
    %n1:2 = braid.sgd %w1, %r1, %m1 ...
    ```
  }];
  let options = [
    Option<"maxLiveIncrease", "max-live-increase", "double", /*default=*/"10.0",
           "Largest allowed increase of peak live bytes, in percent">,
    Option<"partial", "partial", "bool", /*default=*/"true",
           "When scheduling the whole function raises peak live bytes past "
           "max-live-increase, schedule the longest tail (half the ops, a "
           "quarter, ...) that does not">,
    Option<"ddp", "ddp", "bool", /*default=*/"false",
           "Instead, schedule as PyTorch DDP does: keep the order, and move "
           "every wait before the first user of any wait (the optimizer "
           "runs after all communication)">,
    Option<"report", "report", "bool", /*default=*/"false",
           "Report peak live bytes before and after as a remark">
  ];
  let statistics = [
    Statistic<"peakLiveBefore", "peak-live-bytes-before",
              "Peak live tensor bytes before scheduling">,
    Statistic<"peakLiveAfter", "peak-live-bytes-after",
              "Peak live tensor bytes after scheduling">,
    Statistic<"numMoved", "ops-moved", "Ops whose position changed">,
    Statistic<"numKept", "functions-kept",
              "Functions kept in their order by max-live-increase">
  ];
}

def AssignStreams : Pass<"braid-assign-streams", "mlir::ModuleOp"> {
  let summary = "Put every op on a stream and synchronize the values that cross streams";
  let description = [{
    Compute ops, waits and events run on the compute stream
    `#braid.stream<compute, 0>`; collective starts (and synchronous
    collectives) on communication stream `#braid.stream<comm, i>`, where `i`
    is the index of the collective's group (grid and grid axes, in order of
    first appearance) modulo `comm-streams`. One group stays on one stream,
    so its collectives are serialized in issue order. The stage programs of
    a pipeline (functions with `braid.stage`) number their groups together,
    in order of first appearance over the stages, so that a group has the
    same stream in every stage: the runtime connects each group and stream
    with a communicator of its own, and a transfer meets its receive there.

    A value produced on one stream and used on another is synchronized by a
    `braid.record_event` right after its producer and a `braid.wait_event`
    right before the use, unless an earlier synchronization already orders
    them (the pass tracks a vector clock per stream). A `braid.wait` on the
    compute stream orders it after the collective, so futures need no event.

    ```mlir
    %g = braid.matmul ... {braid.stream = #braid.stream<compute, 0>}
    %e = braid.record_event {braid.stream = #braid.stream<compute, 0>}
    braid.wait_event %e {braid.stream = #braid.stream<comm, 0>}
    %f = braid.all_reduce_start %g ... {braid.stream = #braid.stream<comm, 0>}
    ```
  }];
  let options = [
    Option<"commStreams", "comm-streams", "unsigned", /*default=*/"1",
           "Number of communication streams (1 to 64)">,
    Option<"streamPerGroup", "stream-per-group", "bool", /*default=*/"false",
           "At least one communication stream per collective group (up to "
           "64): a tensor-parallel all-reduce on the critical path does not "
           "queue behind a data-parallel bucket (braid-compile's default)">
  ];
  let statistics = [
    Statistic<"numEvents", "events", "Record/wait event pairs inserted">,
    Statistic<"numElided", "elided-syncs",
              "Cross-stream uses already ordered by an earlier sync">
  ];
}

def ShareArena : Pass<"braid-share-arena", "mlir::ModuleOp"> {
  let summary = "Place an evaluation program in its training step's arena";
  let description = [{
    An evaluation program (a function with `braid.evaluates = @step`,
    braid.export's `evaluation=True`) runs between steps on the step's
    parameters. After `braid-plan-memory` has planned each function alone,
    this pass makes them one arena:
    - each parameter argument of the evaluation program takes the offset of
      the step's parameter argument of the same name (the runtime copies
      nothing: the step's updates are what the evaluation reads);
    - its other buffers move together, by one offset (a multiple of 4096,
      so that every alignment braid-plan-memory allows is kept), to the
      lowest place where none of them shares a byte with a buffer of the
      step's arguments or results (the state carried to the next step, and
      what braid-run reads after a step: the loss, --save's results); the
      step's temporaries are free between steps, so the evaluation's
      activations reuse their bytes;
    - both functions' `braid.arena_bytes` become the larger arena.
    A module without an evaluation program is left as it is. `report` emits
    a remark per evaluation program with where it went.

    ```mlir
    func.func @step(%w: tensor<64xf32> {braid.offset = 0 : i64, ...}) ...
        attributes {braid.arena_bytes = 4352 : i64}
    func.func @step_eval(%w: tensor<64xf32> {braid.offset = 0 : i64, ...},
                         %x: tensor<64xf32> {braid.offset = 4352 : i64, ...})
        attributes {braid.evaluates = @step, braid.arena_bytes = 8704 : i64}
    ```
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"false",
           "Emit a remark with each evaluation program's placement">
  ];
}

def VerifySchedule : Pass<"braid-verify-schedule", "mlir::ModuleOp"> {
  let summary = "Check that a scheduled step is free of races and deadlocks";
  let description = [{
    Rejects, with an error on the offending op:
    - a future that is never waited, waited twice, or used by an op other
      than `braid.wait`;
    - an op without `braid.stream` in a function where some ops have one;
    - a value used on a stream other than its producer's without a
      `braid.wait_event` on an event recorded after the producer (directly
      or through a chain of events);
    - an event waited before it is recorded, or never recorded on a stream;
    - collectives of one group (grid and grid axes) issued on different
      streams with no synchronization ordering them, whose order can then
      differ from rank to rank and deadlock;
    - after `braid-plan-memory`: an op between a collective's start and its
      wait that writes arena bytes the collective reads or writes;
    - after `braid-plan-memory`: a buffer outside the arena, or two values
      that share a byte while both are live under the lifetimes
      `braid-plan-memory` documents (recomputed here), except a value
      written in place over its operand (an optimizer update, an
      all-reduce) at exactly its bytes when nothing reads the operand
      afterwards. An edited offset or ops reordered after the memory plan
      is caught here instead of computing a wrong loss.

    - a pipeline's stage programs (functions with `braid.stage`) that do not
      cover the pipeline axis of one grid, each index once;
    - a transfer (`braid.send`, `braid.recv`, `braid.send_recv`) of a stage
      program on other grid axes than the pipeline axis alone, or a
      collective on another grid;
    - a send without its receive in the peer stage's program (the k-th send
      of stage a to stage b meets the k-th receive of b from a; a
      send-receive's halves count among the sends and the receives of their
      directions), or one whose receive expects another type;
    - a collective whose group spans the stages that the stages do not all
      issue alike (the same op, types and attributes at the same position);
    - stage programs whose issue orders deadlock: they run under a model
      stricter than every backend's (in-order streams, a transfer or
      collective holding its stream until all its members have started, a
      send-receive until both of its halves' peers have, collectives issued
      in program order), and a cycle of ops that wait on
      each other is reported on one of them, naming the op it blocks with,
      with a note per op of the cycle (docs/Pipeline.md).

    Program order is the issue order, and every rank of a stage runs the same
    program, so collectives issued on one stream are issued in the same order
    on every rank. The IR is not changed.

    Rejected: the start reads `%g` from the compute stream, but nothing
    orders it after `%g`'s producer.
    ```mlir
    %g = braid.relu %x {braid.stream = #braid.stream<compute, 0>} ...
    %f = braid.all_reduce_start %g ... {braid.stream = #braid.stream<comm, 0>} ...
    ```
    Accepted:
    ```mlir
    %g = braid.relu %x {braid.stream = #braid.stream<compute, 0>} ...
    %e = braid.record_event {braid.stream = #braid.stream<compute, 0>}
    braid.wait_event %e {braid.stream = #braid.stream<comm, 0>}
    %f = braid.all_reduce_start %g ... {braid.stream = #braid.stream<comm, 0>} ...
    ```
  }];
  let statistics = [
    Statistic<"numChecked", "ops-checked", "Ops checked">
  ];
}

def PlanMemory : Pass<"braid-plan-memory", "mlir::func::FuncOp"> {
  let summary = "Give every tensor a static offset in one arena per rank";
  let description = [{
    Assigns each tensor value of a step (arguments, op results) a byte offset
    in one arena, so that the runtime allocates once and never during a step.
    Two values share bytes only when their lifetimes cannot overlap at run
    time on any stream:
    - a value lives from its producer to its last use in program order;
    - a value read or written by a collective stays live until the
      collective's `braid.wait` (it is in flight until then);
    - a value used on a stream other than the compute stream, or produced
      there, is not reused within the step;
    - arguments and returned values live for the whole step (the runtime
      binds them before the step and reads them after it).

    The gradients of a bucket are placed contiguously, in operand order, and
    the collective's results take their place (an in-place all-reduce over
    one range, with no pack or unpack copy) when the gradients have no other
    use. Otherwise the results are contiguous on their own and the runtime
    copies the inputs in first. The updates of `braid.sgd` and `braid.adamw`
    overwrite their parameter and state arguments when the update is the
    argument's last use on its stream. A view (`braid.reshape`, the
    `Braid_View` trait) takes its operand's bytes, so that the runtime moves
    nothing, when both are on the compute stream, the operand is an op's
    result (an argument may be updated in place), and no collective reads
    the view (an in-place all-reduce needs an allocation of its own); the
    two then live as one.

    Results get `braid.offsets` (one entry per result, -1 for a result that
    is not a tensor), arguments `braid.offset`, the function
    `braid.arena_bytes`:
    ```mlir
    func.func @f(%x: tensor<4xf32> {braid.offset = 0 : i64}, ...)
        attributes {braid.arena_bytes = 128 : i64} {
      %y = braid.relu %x {braid.offsets = array<i64: 64>, ...} : tensor<4xf32>
    ```
    `report` emits a remark per function with the arena size, the sum of all
    buffer sizes, the live-bytes bound (the most bytes live at once under
    the lifetimes above, which no placement can beat), the all-reduces done
    in place and the views that share their operand's bytes.
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"64",
           "Alignment of each buffer in bytes (a power of two, at most 4096)">,
    Option<"report", "report", "bool", /*default=*/"false",
           "Emit a remark per function with the arena figures">
  ];
  let statistics = [
    Statistic<"peakArenaBytes", "peak-arena-bytes",
              "Arena bytes, summed over functions">,
    Statistic<"totalBufferBytes", "total-buffer-bytes",
              "Bytes of all buffers before sharing, summed over functions">
  ];
}

#endif // BRAID_DIALECT_BRAID_PASSES_TD
