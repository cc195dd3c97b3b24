// RUN: braid-opt %s --braid-pipeline="axis=1 micro-batches=2 boundaries=fc2" | FileCheck %s

// A gradient that crosses the boundary and a view of it (a reshape) that
// the stage below reads too: the view is made below, where the gradient
// arrives anyway, so only the gradient is sent (as the step's gradients
// flow down, a gradient-only op moves up to its operands' stage to send one
// tensor instead of several; for a view of a tensor that is sent anyway,
// that would send the same bytes twice). An exported model's activations
// are [batch, seq, hidden] and its matmuls' operands their [tokens,
// hidden] views: both crossed before.

shard.grid @world(shape = 1x2)
func.func @step(%x: tensor<8x8xf32> {braid.role = #braid.role<batch "x">},
                %labels: tensor<8xi64> {braid.role = #braid.role<batch "labels">},
                %w1: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
                %w2: tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">})
    -> (tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
        tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %h = braid.matmul %x, %w1 {transpose_b} : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %h3 = braid.reshape %h : tensor<8x8xf32> -> tensor<2x4x8xf32>
  %r3 = braid.relu %h3 : tensor<2x4x8xf32>
  %r = braid.reshape %r3 : tensor<2x4x8xf32> -> tensor<8x8xf32>
  %o = braid.matmul %r, %w2 {transpose_b} : tensor<8x8xf32>, tensor<3x8xf32> -> tensor<8x3xf32>
  %l = braid.cross_entropy %o, %labels reduction = mean : tensor<8x3xf32>, tensor<8xi64> -> tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %do = braid.cross_entropy_backward %one, %o, %labels reduction = mean : tensor<f32>, tensor<8x3xf32>, tensor<8xi64>
  %g2 = braid.matmul %do, %r {transpose_a} : tensor<8x3xf32>, tensor<8x8xf32> -> tensor<3x8xf32>
  %dr = braid.matmul %do, %w2 : tensor<8x3xf32>, tensor<3x8xf32> -> tensor<8x8xf32>
  %dr3 = braid.reshape %dr : tensor<8x8xf32> -> tensor<2x4x8xf32>
  %dh3 = braid.relu_backward %dr3, %h3 : tensor<2x4x8xf32>
  %dh = braid.reshape %dh3 : tensor<2x4x8xf32> -> tensor<8x8xf32>
  %ga = braid.matmul %dh, %x {transpose_a} : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %gb = braid.matmul %dr, %h {transpose_a} : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %g1 = braid.add %ga, %gb : tensor<8x8xf32>
  %r1 = braid.all_reduce %g1 on @world grid_axes = [0] reduction = avg grad_of = ["fc1.weight"] : tensor<8x8xf32>
  %r2 = braid.all_reduce %g2 on @world grid_axes = [0] reduction = avg grad_of = ["fc2.weight"] : tensor<3x8xf32>
  %n1 = braid.sub %w1, %r1 : tensor<8x8xf32>
  %n2 = braid.sub %w2, %r2 : tensor<3x8xf32>
  return %n1, %n2, %l : tensor<8x8xf32>, tensor<3x8xf32>, tensor<f32>
}

// Stage 0 receives each micro-batch's gradient once and makes its view.
// CHECK-LABEL: func.func @step_stage0(
// CHECK-NOT: tensor<2x4x8xf32> -> tensor<2x4x8xf32>
// CHECK: %[[G:.*]] = braid.send_recv %{{.*}} on @world grid_axes = [1] send_peer = 1 recv_peer = 1 {braid.action = #braid.action<B, micro_batch = 0>, braid.transfers = [{{.*}}]} : tensor<8x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: braid.reshape %[[G]] {braid.action = #braid.action<B, micro_batch = 0>} : tensor<8x8xf32> -> tensor<2x4x8xf32>
// CHECK-NOT: braid.recv {{.*}} : tensor<2x4x8xf32>
// CHECK-LABEL: func.func @step_stage1(
// CHECK-NOT: braid.reshape %{{.*}} : tensor<8x8xf32> -> tensor<2x4x8xf32>
// CHECK-NOT: tensor<8x8xf32>, tensor<2x4x8xf32>
// CHECK: return
