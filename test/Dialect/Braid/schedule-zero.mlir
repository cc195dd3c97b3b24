// braid-schedule on a step whose optimizer state braid-shard-data-parallel
// sharded (ZeRO). Stage 1 keeps each whole gradient to the optimizer phase:
// every reduce-scatter starts in the backward and is waited there, before
// its update. Stage 2 keeps only the pieces: a reduce-scatter is waited two
// collectives after its start, in the backward, and its update and the
// parameter's all-gather follow it there. Under both, the rank's index is
// waited at once (the slices of the parameters need it) and the gathered
// parameters, read by the next step only, are waited last.
// RUN: braid-opt %examples/mlp.mlir --braid-shard-data-parallel="stage=1" --braid-async-collectives --braid-schedule | FileCheck %s --check-prefix=STAGE1
// RUN: braid-opt %examples/mlp.mlir --braid-shard-data-parallel="stage=2" --braid-async-collectives --braid-schedule | FileCheck %s --check-prefix=STAGE2

// STAGE1: %[[I:.*]] = braid.axis_index_start
// STAGE1-NEXT: braid.wait %[[I]]
// STAGE1: %[[W2:.*]] = braid.reduce_scatter_start {{.*}} grad_of = ["fc2.weight"]
// STAGE1: %[[W1:.*]] = braid.reduce_scatter_start {{.*}} grad_of = ["fc1.weight"]
// STAGE1: %[[B1:.*]] = braid.reduce_scatter_start {{.*}} grad_of = ["fc1.bias"]
// STAGE1-NOT: braid.matmul
// STAGE1: braid.wait %[[W2]]
// STAGE1-NEXT: braid.sgd
// STAGE1: braid.wait %[[W1]]
// STAGE1-NEXT: braid.sgd
// STAGE1-NEXT: %[[G1:.*]] = braid.all_gather_start
// STAGE1: braid.wait %[[B1]]
// STAGE1-NEXT: braid.sgd
// STAGE1-NEXT: %[[G2:.*]] = braid.all_gather_start
// STAGE1-NEXT: %[[G3:.*]] = braid.all_gather_start
// STAGE1-NEXT: braid.wait %[[G1]]
// STAGE1-NEXT: braid.wait %[[G2]]
// STAGE1-NEXT: braid.wait %[[G3]]

// STAGE2: %[[I:.*]] = braid.axis_index_start
// STAGE2-NEXT: braid.wait %[[I]]
// STAGE2: %[[W2:.*]] = braid.reduce_scatter_start {{.*}} grad_of = ["fc2.weight"]
// STAGE2: %[[W1:.*]] = braid.reduce_scatter_start {{.*}} grad_of = ["fc1.weight"]
// STAGE2: braid.wait %[[W2]]
// STAGE2: %[[B1:.*]] = braid.reduce_scatter_start {{.*}} grad_of = ["fc1.bias"]
// STAGE2: braid.wait %[[W1]]
// STAGE2-NEXT: braid.sgd
// STAGE2-NEXT: %[[G1:.*]] = braid.all_gather_start
// STAGE2: braid.wait %[[B1]]
// STAGE2: braid.wait %[[G1]]
