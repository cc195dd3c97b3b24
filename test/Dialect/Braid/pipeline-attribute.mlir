// RUN: braid-opt %s | braid-opt | FileCheck %s --check-prefix=ROUND
// RUN: braid-opt %s --braid-pipeline | FileCheck %s --check-prefix=REQUEST
// RUN: braid-opt %s --braid-pipeline="schedule=gpipe micro-batches=3" | FileCheck %s --check-prefix=OPTIONS
//
// #braid.pipeline, the module's request to braid-pipeline: it round-trips
// with its defaults (1 micro-batch, 1f1b, 1 virtual stage, balanced
// boundaries) elided, fills the options left at their defaults, and the
// options given override it.

// ROUND: module attributes {braid.pipeline = #braid.pipeline<axis = 1, micro_batches = 2, schedule = "zb-h1", boundaries = ["fc2"]>}
// The request: ZB-H1 (B and W actions) on the grid's axis 1, 2 micro-batches,
// stage 1 from fc2; the attribute is gone once the stages are built.
// REQUEST-NOT: braid.pipeline =
// REQUEST-LABEL: func.func @step_stage0(
// REQUEST-SAME: braid.stage = #braid.stage<grid = @world, axis = 1, index = 0>
// REQUEST: braid.action = #braid.action<W, micro_batch = 1>
// REQUEST-NOT: micro_batch = 2
// REQUEST-LABEL: func.func @step_stage1(
// REQUEST-SAME: %{{[a-z0-9]+}}: tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">}
// The options given win: GPipe (no W action), 3 micro-batches; the axis and
// the boundary still come from the request.
// OPTIONS-NOT: #braid.action<W
// OPTIONS-LABEL: func.func @step_stage0(
// OPTIONS-SAME: braid.stage = #braid.stage<grid = @world, axis = 1, index = 0>
// OPTIONS: braid.action = #braid.action<F, micro_batch = 2>
// OPTIONS-LABEL: func.func @step_stage1(
// OPTIONS-SAME: %{{[a-z0-9]+}}: tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">}
module attributes {braid.pipeline = #braid.pipeline<axis = 1, micro_batches = 2, schedule = "zb-h1", boundaries = ["fc2"]>} {
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
}
