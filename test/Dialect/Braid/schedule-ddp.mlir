// braid-schedule ddp=true orders a step as PyTorch DDP runs it: the
// program's order, with every wait, in start order, before the first
// optimizer update. Without it, each bucket's update follows its wait.
// RUN: braid-opt %examples/mlp.mlir --braid-bucket-gradients="bucket-cap-mb=0.5 first-bucket-cap-mb=0.01" --braid-async-collectives --braid-schedule="ddp=true" | FileCheck %s --check-prefix=DDP
// RUN: braid-opt %examples/mlp.mlir --braid-bucket-gradients="bucket-cap-mb=0.5 first-bucket-cap-mb=0.01" --braid-async-collectives --braid-schedule | FileCheck %s --check-prefix=BRAID

// DDP: %[[F0:.*]] = braid.all_reduce_start
// DDP: %[[F1:.*]] = braid.all_reduce_start
// DDP: %[[F2:.*]] = braid.all_reduce_start
// DDP: %[[F3:.*]] = braid.all_reduce_start
// DDP-NEXT: = braid.wait %[[F0]]
// DDP-NEXT: = braid.wait %[[F1]]
// DDP-NEXT: = braid.wait %[[F2]]
// DDP-NEXT: = braid.wait %[[F3]]
// DDP-NEXT: braid.sgd
// DDP-NOT: braid.wait

// braid's own schedule waits the buckets in the order they were started,
// each followed by its update (the input, before the pass, waits them in
// parameter order: the last-started bucket first).
// BRAID: %[[F0:.*]] = braid.all_reduce_start
// BRAID: %[[F1:.*]] = braid.all_reduce_start
// BRAID: %[[F2:.*]] = braid.all_reduce_start
// BRAID: %[[F3:.*]] = braid.all_reduce_start
// BRAID-NEXT: = braid.wait %[[F0]]
// BRAID-NEXT: braid.sgd
// BRAID-NEXT: = braid.wait %[[F1]]
// BRAID-NEXT: braid.sgd
// BRAID-NEXT: = braid.wait %[[F2]]
// BRAID-NEXT: braid.sgd
// BRAID-NEXT: = braid.wait %[[F3]]
// BRAID-NEXT: braid.sgd
// BRAID-NEXT: return

// Without the pass the BRAID checks fail (they would pass a no-op).
// RUN: braid-opt %examples/mlp.mlir --braid-bucket-gradients="bucket-cap-mb=0.5 first-bucket-cap-mb=0.01" --braid-async-collectives | not FileCheck %s --check-prefix=BRAID
