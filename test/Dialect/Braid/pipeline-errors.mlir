// RUN: braid-opt %s --split-input-file --verify-diagnostics --braid-pipeline="axis=1 micro-batches=2 boundaries=fc2"
// RUN: not braid-opt %s --split-input-file --braid-pipeline="micro-batches=2 boundaries=fc2" 2>&1 | FileCheck %s --check-prefix=AXIS
// RUN: not braid-opt %s --split-input-file --braid-pipeline="axis=1 schedule=zb-h2 boundaries=fc2" 2>&1 | FileCheck %s --check-prefix=SCHEDULE
// RUN: not braid-opt %s --split-input-file --braid-pipeline="axis=1 micro-batches=0 boundaries=fc2" 2>&1 | FileCheck %s --check-prefix=MICRO
// RUN: not braid-opt %s --split-input-file --braid-pipeline="axis=1 boundaries=fc1,fc2" 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not braid-opt %s --split-input-file --braid-pipeline="axis=1 boundaries=fc1" 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not braid-opt %S/pipeline.mlir --split-input-file --braid-pipeline="axis=1 boundaries=fc3,fc2" 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: not braid-opt %s --split-input-file --braid-pipeline="axis=1 schedule=interleaved boundaries=fc2" 2>&1 | FileCheck %s --check-prefix=INTERLEAVED1
// RUN: not braid-opt %s --split-input-file --braid-pipeline="axis=1 virtual-stages=2 boundaries=fc2" 2>&1 | FileCheck %s --check-prefix=VIRTUAL
// RUN: not braid-opt %s --split-input-file --braid-pipeline="axis=1 schedule=interleaved virtual-stages=2 micro-batches=3 boundaries=fc2" 2>&1 | FileCheck %s --check-prefix=MULTIPLE
// RUN: not braid-opt %s --split-input-file --braid-pipeline="axis=1 schedule=interleaved virtual-stages=2 micro-batches=2 boundaries=fc2" 2>&1 | FileCheck %s --check-prefix=VCOUNT
// RUN: sed 's/shape = 2x3/shape = 2x4/' %S/pipeline.mlir | not braid-opt --split-input-file --braid-pipeline="axis=1" 2>&1 | FileCheck %s --check-prefix=FEW

// AXIS: error: braid-pipeline needs axis=N, the pipeline axis of grid @world (0 to 1), but axis is -1
// SCHEDULE: error: braid-pipeline: unknown schedule 'zb-h2' (known: gpipe, 1f1b, zb-h1, interleaved)
// MICRO: error: braid-pipeline: micro-batches must be 1 to 65536, but is 0
// COUNT: error: is split into 2 pipeline stages (axis 1 of grid @world), which needs 1 boundaries, but 2 are given
// INTERLEAVED1: error: braid-pipeline: the interleaved schedule needs virtual-stages of at least 2 (with 1 it is 1f1b), but virtual-stages is 1
// VIRTUAL: error: braid-pipeline: virtual-stages is for the interleaved schedule, not '1f1b', but virtual-stages is 2
// MULTIPLE: error: runs the interleaved schedule on 2 ranks, which needs a multiple of 2 micro-batches, but has 3
// VCOUNT: error: is split into 4 pipeline stages (2 virtual stages on each of the 2 ranks of axis 1 of grid @world), which needs 3 boundaries, but 1 are given
// FEW: error: has 3 parameters, too few for 4 pipeline stages
// ORDER: error: has stage boundary 'fc2' (#1) before the boundary ahead of it in parameter order; boundaries follow the parameters' order
// EMPTY: error: has stage boundary 'fc1' (#0) at its stage's first parameter 'fc1.weight': stage 0 would hold no parameters

// A boundary that names no parameter's module.
shard.grid @world(shape = 1x2)
// expected-error @below {{has stage boundary 'fc2' (#0), which names no module of the step's parameters (their top-level modules: fc1, head)}}
func.func @step(%x: tensor<4x8xf32> {braid.role = #braid.role<batch "x">},
                %labels: tensor<4xi64> {braid.role = #braid.role<batch "labels">},
                %w1: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
                %w2: tensor<3x8xf32> {braid.role = #braid.role<parameter "head.weight">})
    -> (tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
        tensor<3x8xf32> {braid.role = #braid.role<parameter "head.weight">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %h = braid.matmul %x, %w1 {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %o = braid.matmul %h, %w2 {transpose_b} : tensor<4x8xf32>, tensor<3x8xf32> -> tensor<4x3xf32>
  %l = braid.cross_entropy %o, %labels reduction = mean : tensor<4x3xf32>, tensor<4xi64> -> tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %do = braid.cross_entropy_backward %one, %o, %labels reduction = mean : tensor<f32>, tensor<4x3xf32>, tensor<4xi64>
  %g2 = braid.matmul %do, %h {transpose_a} : tensor<4x3xf32>, tensor<4x8xf32> -> tensor<3x8xf32>
  %dh = braid.matmul %do, %w2 : tensor<4x3xf32>, tensor<3x8xf32> -> tensor<4x8xf32>
  %g1 = braid.matmul %dh, %x {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %r1 = braid.all_reduce %g1 on @world grid_axes = [0] reduction = avg grad_of = ["fc1.weight"] : tensor<8x8xf32>
  %r2 = braid.all_reduce %g2 on @world grid_axes = [0] reduction = avg grad_of = ["head.weight"] : tensor<3x8xf32>
  %n1 = braid.sub %w1, %r1 : tensor<8x8xf32>
  %n2 = braid.sub %w2, %r2 : tensor<3x8xf32>
  return %n1, %n2, %l : tensor<8x8xf32>, tensor<3x8xf32>, tensor<f32>
}

// -----

// A collective of the step on the pipeline axis.
shard.grid @world(shape = 1x2)
func.func @step(%x: tensor<4x8xf32> {braid.role = #braid.role<batch "x">},
                %labels: tensor<4xi64> {braid.role = #braid.role<batch "labels">},
                %w1: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
                %w2: tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">})
    -> (tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
        tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %h = braid.matmul %x, %w1 {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %o = braid.matmul %h, %w2 {transpose_b} : tensor<4x8xf32>, tensor<3x8xf32> -> tensor<4x3xf32>
  %l = braid.cross_entropy %o, %labels reduction = mean : tensor<4x3xf32>, tensor<4xi64> -> tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %do = braid.cross_entropy_backward %one, %o, %labels reduction = mean : tensor<f32>, tensor<4x3xf32>, tensor<4xi64>
  %g2 = braid.matmul %do, %h {transpose_a} : tensor<4x3xf32>, tensor<4x8xf32> -> tensor<3x8xf32>
  %dh = braid.matmul %do, %w2 : tensor<4x3xf32>, tensor<3x8xf32> -> tensor<4x8xf32>
  %g1 = braid.matmul %dh, %x {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %r1 = braid.all_reduce %g1 on @world grid_axes = [0] reduction = avg grad_of = ["fc1.weight"] : tensor<8x8xf32>
  // expected-error @below {{spans the pipeline axis 1; the step before braid-pipeline is one stage replica's, whose collectives run on the other axes}}
  %r2 = braid.all_reduce %g2 on @world grid_axes = [0, 1] reduction = avg grad_of = ["fc2.weight"] : tensor<3x8xf32>
  %n1 = braid.sub %w1, %r1 : tensor<8x8xf32>
  %n2 = braid.sub %w2, %r2 : tensor<3x8xf32>
  return %n1, %n2, %l : tensor<8x8xf32>, tensor<3x8xf32>, tensor<f32>
}

// -----

// No loss result.
shard.grid @world(shape = 1x2)
// expected-error @below {{has no loss result (braid.role<loss>); braid-pipeline needs the loss to tell the forward from the backward}}
func.func @step(%x: tensor<4x8xf32> {braid.role = #braid.role<batch "x">},
                %labels: tensor<4xi64> {braid.role = #braid.role<batch "labels">},
                %w1: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
                %w2: tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">})
    -> (tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
        tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">},
        tensor<f32>) {
  %h = braid.matmul %x, %w1 {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %o = braid.matmul %h, %w2 {transpose_b} : tensor<4x8xf32>, tensor<3x8xf32> -> tensor<4x3xf32>
  %l = braid.cross_entropy %o, %labels reduction = mean : tensor<4x3xf32>, tensor<4xi64> -> tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %do = braid.cross_entropy_backward %one, %o, %labels reduction = mean : tensor<f32>, tensor<4x3xf32>, tensor<4xi64>
  %g2 = braid.matmul %do, %h {transpose_a} : tensor<4x3xf32>, tensor<4x8xf32> -> tensor<3x8xf32>
  %dh = braid.matmul %do, %w2 : tensor<4x3xf32>, tensor<3x8xf32> -> tensor<4x8xf32>
  %g1 = braid.matmul %dh, %x {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %r1 = braid.all_reduce %g1 on @world grid_axes = [0] reduction = avg grad_of = ["fc1.weight"] : tensor<8x8xf32>
  %r2 = braid.all_reduce %g2 on @world grid_axes = [0] reduction = avg grad_of = ["fc2.weight"] : tensor<3x8xf32>
  %n1 = braid.sub %w1, %r1 : tensor<8x8xf32>
  %n2 = braid.sub %w2, %r2 : tensor<3x8xf32>
  return %n1, %n2, %l : tensor<8x8xf32>, tensor<3x8xf32>, tensor<f32>
}

// -----

// No gradient all-reduce.
shard.grid @world(shape = 1x2)
// expected-error @below {{has no gradient all-reduce (a collective with grad_of); braid-pipeline finds the optimizer from them}}
func.func @step(%x: tensor<4x8xf32> {braid.role = #braid.role<batch "x">},
                %labels: tensor<4xi64> {braid.role = #braid.role<batch "labels">},
                %w1: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
                %w2: tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">})
    -> (tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
        tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %h = braid.matmul %x, %w1 {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %o = braid.matmul %h, %w2 {transpose_b} : tensor<4x8xf32>, tensor<3x8xf32> -> tensor<4x3xf32>
  %l = braid.cross_entropy %o, %labels reduction = mean : tensor<4x3xf32>, tensor<4xi64> -> tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %do = braid.cross_entropy_backward %one, %o, %labels reduction = mean : tensor<f32>, tensor<4x3xf32>, tensor<4xi64>
  %g2 = braid.matmul %do, %h {transpose_a} : tensor<4x3xf32>, tensor<4x8xf32> -> tensor<3x8xf32>
  %dh = braid.matmul %do, %w2 : tensor<4x3xf32>, tensor<3x8xf32> -> tensor<4x8xf32>
  %g1 = braid.matmul %dh, %x {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %r1 = braid.all_reduce %g1 on @world grid_axes = [0] reduction = avg : tensor<8x8xf32>
  %r2 = braid.all_reduce %g2 on @world grid_axes = [0] reduction = avg : tensor<3x8xf32>
  %n1 = braid.sub %w1, %r1 : tensor<8x8xf32>
  %n2 = braid.sub %w2, %r2 : tensor<3x8xf32>
  return %n1, %n2, %l : tensor<8x8xf32>, tensor<3x8xf32>, tensor<f32>
}

// -----

// An optimizer reading another stage's optimizer values other than through
// braid.sum_squares (a norm written as a plain reduce_sum).
shard.grid @world(shape = 1x2)
func.func @step(%x: tensor<4x8xf32> {braid.role = #braid.role<batch "x">},
                %labels: tensor<4xi64> {braid.role = #braid.role<batch "labels">},
                %w1: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
                %w2: tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">})
    -> (tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
        tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %h = braid.matmul %x, %w1 {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %o = braid.matmul %h, %w2 {transpose_b} : tensor<4x8xf32>, tensor<3x8xf32> -> tensor<4x3xf32>
  %l = braid.cross_entropy %o, %labels reduction = mean : tensor<4x3xf32>, tensor<4xi64> -> tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %do = braid.cross_entropy_backward %one, %o, %labels reduction = mean : tensor<f32>, tensor<4x3xf32>, tensor<4xi64>
  %g2 = braid.matmul %do, %h {transpose_a} : tensor<4x3xf32>, tensor<4x8xf32> -> tensor<3x8xf32>
  %dh = braid.matmul %do, %w2 : tensor<4x3xf32>, tensor<3x8xf32> -> tensor<4x8xf32>
  %g1 = braid.matmul %dh, %x {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %r1 = braid.all_reduce %g1 on @world grid_axes = [0] reduction = avg grad_of = ["fc1.weight"] : tensor<8x8xf32>
  %r2 = braid.all_reduce %g2 on @world grid_axes = [0] reduction = avg grad_of = ["fc2.weight"] : tensor<3x8xf32>
  %s2 = braid.reduce_sum %r2 dims = [0, 1] : tensor<3x8xf32> -> tensor<f32>
  %b2 = braid.broadcast %s2 dims = [0, 1] : tensor<f32> -> tensor<8x8xf32>
  // expected-error @below {{on stage 1 reads a value of the optimizer of stage 0; across stages braid-pipeline sums braid.sum_squares alone (the squared norm of gradient clipping)}}
  %c1 = braid.mul %r1, %b2 : tensor<8x8xf32>
  %n1 = braid.sub %w1, %c1 : tensor<8x8xf32>
  %n2 = braid.sub %w2, %r2 : tensor<3x8xf32>
  return %n1, %n2, %l : tensor<8x8xf32>, tensor<3x8xf32>, tensor<f32>
}

// -----

// A result other than the loss that depends on the batch.
shard.grid @world(shape = 1x2)
func.func @step(%x: tensor<4x8xf32> {braid.role = #braid.role<batch "x">},
                %labels: tensor<4xi64> {braid.role = #braid.role<batch "labels">},
                %w1: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
                %w2: tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">})
    -> (tensor<4x8xf32>, tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
        tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %h = braid.matmul %x, %w1 {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %o = braid.matmul %h, %w2 {transpose_b} : tensor<4x8xf32>, tensor<3x8xf32> -> tensor<4x3xf32>
  %l = braid.cross_entropy %o, %labels reduction = mean : tensor<4x3xf32>, tensor<4xi64> -> tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %do = braid.cross_entropy_backward %one, %o, %labels reduction = mean : tensor<f32>, tensor<4x3xf32>, tensor<4xi64>
  %g2 = braid.matmul %do, %h {transpose_a} : tensor<4x3xf32>, tensor<4x8xf32> -> tensor<3x8xf32>
  // expected-error @below {{is a result of the step that depends on the batch; a pipelined step returns its loss, parameters and optimizer state}}
  %dh = braid.matmul %do, %w2 : tensor<4x3xf32>, tensor<3x8xf32> -> tensor<4x8xf32>
  %g1 = braid.matmul %dh, %x {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %r1 = braid.all_reduce %g1 on @world grid_axes = [0] reduction = avg grad_of = ["fc1.weight"] : tensor<8x8xf32>
  %r2 = braid.all_reduce %g2 on @world grid_axes = [0] reduction = avg grad_of = ["fc2.weight"] : tensor<3x8xf32>
  %n1 = braid.sub %w1, %r1 : tensor<8x8xf32>
  %n2 = braid.sub %w2, %r2 : tensor<3x8xf32>
  return %dh, %n1, %n2, %l : tensor<4x8xf32>, tensor<8x8xf32>, tensor<3x8xf32>, tensor<f32>
}

// -----

// Two steps in one module.
// expected-error @below {{braid-pipeline splits one training step (a function whose arguments have braid.role), but the module has 2}}
module {
shard.grid @world(shape = 1x2)
func.func @step(%x: tensor<4x8xf32> {braid.role = #braid.role<batch "x">},
                %labels: tensor<4xi64> {braid.role = #braid.role<batch "labels">},
                %w1: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
                %w2: tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">})
    -> (tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
        tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %h = braid.matmul %x, %w1 {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %o = braid.matmul %h, %w2 {transpose_b} : tensor<4x8xf32>, tensor<3x8xf32> -> tensor<4x3xf32>
  %l = braid.cross_entropy %o, %labels reduction = mean : tensor<4x3xf32>, tensor<4xi64> -> tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %do = braid.cross_entropy_backward %one, %o, %labels reduction = mean : tensor<f32>, tensor<4x3xf32>, tensor<4xi64>
  %g2 = braid.matmul %do, %h {transpose_a} : tensor<4x3xf32>, tensor<4x8xf32> -> tensor<3x8xf32>
  %dh = braid.matmul %do, %w2 : tensor<4x3xf32>, tensor<3x8xf32> -> tensor<4x8xf32>
  %g1 = braid.matmul %dh, %x {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %r1 = braid.all_reduce %g1 on @world grid_axes = [0] reduction = avg grad_of = ["fc1.weight"] : tensor<8x8xf32>
  %r2 = braid.all_reduce %g2 on @world grid_axes = [0] reduction = avg grad_of = ["fc2.weight"] : tensor<3x8xf32>
  %n1 = braid.sub %w1, %r1 : tensor<8x8xf32>
  %n2 = braid.sub %w2, %r2 : tensor<3x8xf32>
  return %n1, %n2, %l : tensor<8x8xf32>, tensor<3x8xf32>, tensor<f32>
}
func.func @other(%y: tensor<4xf32> {braid.role = #braid.role<batch "y">}) -> tensor<4xf32> {
  return %y : tensor<4xf32>
}
}

// -----

// A batch argument without a first dimension.
shard.grid @world(shape = 1x2)
// expected-error @below {{has batch argument 'temperature' without a static first dimension to stack micro-batches on}}
func.func @step(%x: tensor<4x8xf32> {braid.role = #braid.role<batch "x">},
                %labels: tensor<4xi64> {braid.role = #braid.role<batch "labels">},
                %w1: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
                %w2: tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">},
                %t: tensor<f32> {braid.role = #braid.role<batch "temperature">})
    -> (tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
        tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %h = braid.matmul %x, %w1 {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %o = braid.matmul %h, %w2 {transpose_b} : tensor<4x8xf32>, tensor<3x8xf32> -> tensor<4x3xf32>
  %l = braid.cross_entropy %o, %labels reduction = mean : tensor<4x3xf32>, tensor<4xi64> -> tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %do = braid.cross_entropy_backward %one, %o, %labels reduction = mean : tensor<f32>, tensor<4x3xf32>, tensor<4xi64>
  %g2 = braid.matmul %do, %h {transpose_a} : tensor<4x3xf32>, tensor<4x8xf32> -> tensor<3x8xf32>
  %dh = braid.matmul %do, %w2 : tensor<4x3xf32>, tensor<3x8xf32> -> tensor<4x8xf32>
  %g1 = braid.matmul %dh, %x {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %r1 = braid.all_reduce %g1 on @world grid_axes = [0] reduction = avg grad_of = ["fc1.weight"] : tensor<8x8xf32>
  %r2 = braid.all_reduce %g2 on @world grid_axes = [0] reduction = avg grad_of = ["fc2.weight"] : tensor<3x8xf32>
  %n1 = braid.sub %w1, %r1 : tensor<8x8xf32>
  %n2 = braid.sub %w2, %r2 : tensor<3x8xf32>
  return %n1, %n2, %l : tensor<8x8xf32>, tensor<3x8xf32>, tensor<f32>
}

// -----

// A bucket of gradients of two stages.
shard.grid @world(shape = 1x2)
func.func @step(%x: tensor<4x8xf32> {braid.role = #braid.role<batch "x">},
                %labels: tensor<4xi64> {braid.role = #braid.role<batch "labels">},
                %w1: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
                %w2: tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">})
    -> (tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
        tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %h = braid.matmul %x, %w1 {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %o = braid.matmul %h, %w2 {transpose_b} : tensor<4x8xf32>, tensor<3x8xf32> -> tensor<4x3xf32>
  %l = braid.cross_entropy %o, %labels reduction = mean : tensor<4x3xf32>, tensor<4xi64> -> tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %do = braid.cross_entropy_backward %one, %o, %labels reduction = mean : tensor<f32>, tensor<4x3xf32>, tensor<4xi64>
  %g2 = braid.matmul %do, %h {transpose_a} : tensor<4x3xf32>, tensor<4x8xf32> -> tensor<3x8xf32>
  %dh = braid.matmul %do, %w2 : tensor<4x3xf32>, tensor<3x8xf32> -> tensor<4x8xf32>
  %g1 = braid.matmul %dh, %x {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  // expected-error @below {{reduces gradients of parameters of stages 0 and 1; braid-pipeline needs one all-reduce per stage's gradients (bucketing comes after it)}}
  %r1, %r2 = braid.all_reduce %g1, %g2 on @world grid_axes = [0] reduction = avg grad_of = ["fc1.weight", "fc2.weight"] : tensor<8x8xf32>, tensor<3x8xf32>
  %n1 = braid.sub %w1, %r1 : tensor<8x8xf32>
  %n2 = braid.sub %w2, %r2 : tensor<3x8xf32>
  return %n1, %n2, %l : tensor<8x8xf32>, tensor<3x8xf32>, tensor<f32>
}

// -----

// An optimizer that reads an activation.
shard.grid @world(shape = 1x2)
func.func @step(%x: tensor<4x8xf32> {braid.role = #braid.role<batch "x">},
                %labels: tensor<4xi64> {braid.role = #braid.role<batch "labels">},
                %w1: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
                %w2: tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">})
    -> (tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
        tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %h = braid.matmul %x, %w1 {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %o = braid.matmul %h, %w2 {transpose_b} : tensor<4x8xf32>, tensor<3x8xf32> -> tensor<4x3xf32>
  %l = braid.cross_entropy %o, %labels reduction = mean : tensor<4x3xf32>, tensor<4xi64> -> tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %do = braid.cross_entropy_backward %one, %o, %labels reduction = mean : tensor<f32>, tensor<4x3xf32>, tensor<4xi64>
  %g2 = braid.matmul %do, %h {transpose_a} : tensor<4x3xf32>, tensor<4x8xf32> -> tensor<3x8xf32>
  %dh = braid.matmul %do, %w2 : tensor<4x3xf32>, tensor<3x8xf32> -> tensor<4x8xf32>
  %g1 = braid.matmul %dh, %x {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %r1 = braid.all_reduce %g1 on @world grid_axes = [0] reduction = avg grad_of = ["fc1.weight"] : tensor<8x8xf32>
  %r2 = braid.all_reduce %g2 on @world grid_axes = [0] reduction = avg grad_of = ["fc2.weight"] : tensor<3x8xf32>
  // expected-error @below {{reads a value of the forward or backward, which a pipelined step computes once per micro-batch; only the gradient all-reduces may}}
  %hs = braid.reduce_sum %h dims = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  %hb = braid.broadcast %hs dims = [0, 1] : tensor<f32> -> tensor<8x8xf32>
  %c1 = braid.mul %r1, %hb : tensor<8x8xf32>
  %n1 = braid.sub %w1, %c1 : tensor<8x8xf32>
  %n2 = braid.sub %w2, %r2 : tensor<3x8xf32>
  return %n1, %n2, %l : tensor<8x8xf32>, tensor<3x8xf32>, tensor<f32>
}

// -----

// Collectives on two grids.
shard.grid @world(shape = 1x2)
shard.grid @other(shape = 1x2)
func.func @step(%x: tensor<4x8xf32> {braid.role = #braid.role<batch "x">},
                %labels: tensor<4xi64> {braid.role = #braid.role<batch "labels">},
                %w1: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
                %w2: tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">})
    -> (tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
        tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %h = braid.matmul %x, %w1 {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %o = braid.matmul %h, %w2 {transpose_b} : tensor<4x8xf32>, tensor<3x8xf32> -> tensor<4x3xf32>
  %l = braid.cross_entropy %o, %labels reduction = mean : tensor<4x3xf32>, tensor<4xi64> -> tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %do = braid.cross_entropy_backward %one, %o, %labels reduction = mean : tensor<f32>, tensor<4x3xf32>, tensor<4xi64>
  %g2 = braid.matmul %do, %h {transpose_a} : tensor<4x3xf32>, tensor<4x8xf32> -> tensor<3x8xf32>
  %dh = braid.matmul %do, %w2 : tensor<4x3xf32>, tensor<3x8xf32> -> tensor<4x8xf32>
  %g1 = braid.matmul %dh, %x {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %r1 = braid.all_reduce %g1 on @world grid_axes = [0] reduction = avg grad_of = ["fc1.weight"] : tensor<8x8xf32>
  // expected-error @below {{is on grid @other, but the step's collectives are on @world}}
  %r2 = braid.all_reduce %g2 on @other grid_axes = [0] reduction = avg grad_of = ["fc2.weight"] : tensor<3x8xf32>
  %n1 = braid.sub %w1, %r1 : tensor<8x8xf32>
  %n2 = braid.sub %w2, %r2 : tensor<3x8xf32>
  return %n1, %n2, %l : tensor<8x8xf32>, tensor<3x8xf32>, tensor<f32>
}

// -----

// A pipeline axis of dynamic size.
shard.grid @world(shape = 1x?)
// expected-error @below {{has a pipeline axis of dynamic size}}
func.func @step(%x: tensor<4x8xf32> {braid.role = #braid.role<batch "x">},
                %labels: tensor<4xi64> {braid.role = #braid.role<batch "labels">},
                %w1: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
                %w2: tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">})
    -> (tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
        tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %h = braid.matmul %x, %w1 {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %o = braid.matmul %h, %w2 {transpose_b} : tensor<4x8xf32>, tensor<3x8xf32> -> tensor<4x3xf32>
  %l = braid.cross_entropy %o, %labels reduction = mean : tensor<4x3xf32>, tensor<4xi64> -> tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %do = braid.cross_entropy_backward %one, %o, %labels reduction = mean : tensor<f32>, tensor<4x3xf32>, tensor<4xi64>
  %g2 = braid.matmul %do, %h {transpose_a} : tensor<4x3xf32>, tensor<4x8xf32> -> tensor<3x8xf32>
  %dh = braid.matmul %do, %w2 : tensor<4x3xf32>, tensor<3x8xf32> -> tensor<4x8xf32>
  %g1 = braid.matmul %dh, %x {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %r1 = braid.all_reduce %g1 on @world grid_axes = [0] reduction = avg grad_of = ["fc1.weight"] : tensor<8x8xf32>
  %r2 = braid.all_reduce %g2 on @world grid_axes = [0] reduction = avg grad_of = ["fc2.weight"] : tensor<3x8xf32>
  %n1 = braid.sub %w1, %r1 : tensor<8x8xf32>
  %n2 = braid.sub %w2, %r2 : tensor<3x8xf32>
  return %n1, %n2, %l : tensor<8x8xf32>, tensor<3x8xf32>, tensor<f32>
}

// -----

// A step of two blocks.
shard.grid @world(shape = 1x2)
// expected-error @below {{needs a body of one block to be split into pipeline stages}}
func.func @step(%x: tensor<4x8xf32> {braid.role = #braid.role<batch "x">},
                %labels: tensor<4xi64> {braid.role = #braid.role<batch "labels">},
                %w1: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
                %w2: tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">})
    -> (tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
        tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %h = braid.matmul %x, %w1 {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %o = braid.matmul %h, %w2 {transpose_b} : tensor<4x8xf32>, tensor<3x8xf32> -> tensor<4x3xf32>
  %l = braid.cross_entropy %o, %labels reduction = mean : tensor<4x3xf32>, tensor<4xi64> -> tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %do = braid.cross_entropy_backward %one, %o, %labels reduction = mean : tensor<f32>, tensor<4x3xf32>, tensor<4xi64>
  %g2 = braid.matmul %do, %h {transpose_a} : tensor<4x3xf32>, tensor<4x8xf32> -> tensor<3x8xf32>
  %dh = braid.matmul %do, %w2 : tensor<4x3xf32>, tensor<3x8xf32> -> tensor<4x8xf32>
  %g1 = braid.matmul %dh, %x {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %r1 = braid.all_reduce %g1 on @world grid_axes = [0] reduction = avg grad_of = ["fc1.weight"] : tensor<8x8xf32>
  %r2 = braid.all_reduce %g2 on @world grid_axes = [0] reduction = avg grad_of = ["fc2.weight"] : tensor<3x8xf32>
  %n1 = braid.sub %w1, %r1 : tensor<8x8xf32>
  %n2 = braid.sub %w2, %r2 : tensor<3x8xf32>
  return %n1, %n2, %l : tensor<8x8xf32>, tensor<3x8xf32>, tensor<f32>
^unreached:
  return %w1, %w2, %l : tensor<8x8xf32>, tensor<3x8xf32>, tensor<f32>
}

// -----

// A backward op that reads a parameter of stage 0 runs there, but feeds a
// gradient of stage 1: stage 0 would send stage 1 forward and backward
// values, whose orders differ between the two (the second send is micro-batch
// 1's activation, the second receive micro-batch 0's backward value).
shard.grid @world(shape = 1x2)
func.func @step(%x: tensor<4x8xf32> {braid.role = #braid.role<batch "x">},
                %labels: tensor<4xi64> {braid.role = #braid.role<batch "labels">},
                %w1: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
                %w2: tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">})
    -> (tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
        tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  // expected-error @below {{is rank 0's send #2 to rank 1 under schedule '1f1b' (after micro-batch 1's forward of stage 0), but rank 1's receive #2 from rank 0 is for another value (before micro-batch 0's backward of stage 1); the two sides' orders of transfers differ, and sends and receives match in order}}
  %h = braid.matmul %x, %w1 {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %o = braid.matmul %h, %w2 {transpose_b} : tensor<4x8xf32>, tensor<3x8xf32> -> tensor<4x3xf32>
  %l = braid.cross_entropy %o, %labels reduction = mean : tensor<4x3xf32>, tensor<4xi64> -> tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %do = braid.cross_entropy_backward %one, %o, %labels reduction = mean : tensor<f32>, tensor<4x3xf32>, tensor<4xi64>
  %g2 = braid.matmul %do, %h {transpose_a} : tensor<4x3xf32>, tensor<4x8xf32> -> tensor<3x8xf32>
  %dh = braid.matmul %do, %w2 : tensor<4x3xf32>, tensor<3x8xf32> -> tensor<4x8xf32>
  %g1 = braid.matmul %dh, %x {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %r1 = braid.all_reduce %g1 on @world grid_axes = [0] reduction = avg grad_of = ["fc1.weight"] : tensor<8x8xf32>
  // expected-note @below {{the value that receive expects}}
  %ks = braid.reduce_sum %w1 dims = [0, 1] : tensor<8x8xf32> -> tensor<f32>
  %kb = braid.broadcast %ks dims = [0, 1] : tensor<f32> -> tensor<3x8xf32>
  %g2x = braid.add %g2, %kb : tensor<3x8xf32>
  %r2 = braid.all_reduce %g2x on @world grid_axes = [0] reduction = avg grad_of = ["fc2.weight"] : tensor<3x8xf32>
  %n1 = braid.sub %w1, %r1 : tensor<8x8xf32>
  %n2 = braid.sub %w2, %r2 : tensor<3x8xf32>
  return %n1, %n2, %l : tensor<8x8xf32>, tensor<3x8xf32>, tensor<f32>
}

// -----

// Optimizer state read by another stage's forward.
shard.grid @world(shape = 1x2)
// expected-error @below {{has 'fc1.weight.momentum' read by the forward of stages 0 and 1; only a parameter may be shared between stages}}
func.func @step(%x: tensor<4x8xf32> {braid.role = #braid.role<batch "x">},
                %labels: tensor<4xi64> {braid.role = #braid.role<batch "labels">},
                %w1: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
                %w2: tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">},
                %m1: tensor<8x8xf32> {braid.role = #braid.role<optimizer_state "fc1.weight.momentum">})
    -> (tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
        tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %h = braid.matmul %x, %w1 {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %ww = braid.matmul %w2, %m1 : tensor<3x8xf32>, tensor<8x8xf32> -> tensor<3x8xf32>
  %o = braid.matmul %h, %ww {transpose_b} : tensor<4x8xf32>, tensor<3x8xf32> -> tensor<4x3xf32>
  %l = braid.cross_entropy %o, %labels reduction = mean : tensor<4x3xf32>, tensor<4xi64> -> tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %do = braid.cross_entropy_backward %one, %o, %labels reduction = mean : tensor<f32>, tensor<4x3xf32>, tensor<4xi64>
  %g2 = braid.matmul %do, %h {transpose_a} : tensor<4x3xf32>, tensor<4x8xf32> -> tensor<3x8xf32>
  %dh = braid.matmul %do, %w2 : tensor<4x3xf32>, tensor<3x8xf32> -> tensor<4x8xf32>
  %g1 = braid.matmul %dh, %x {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %r1 = braid.all_reduce %g1 on @world grid_axes = [0] reduction = avg grad_of = ["fc1.weight"] : tensor<8x8xf32>
  %r2 = braid.all_reduce %g2 on @world grid_axes = [0] reduction = avg grad_of = ["fc2.weight"] : tensor<3x8xf32>
  %n1 = braid.sub %w1, %r1 : tensor<8x8xf32>
  %n2 = braid.sub %w2, %r2 : tensor<3x8xf32>
  return %n1, %n2, %l : tensor<8x8xf32>, tensor<3x8xf32>, tensor<f32>
}
