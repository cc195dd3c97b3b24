// RUN: braid-opt %s --braid-pipeline="axis=1 micro-batches=3 boundaries=fc2" | FileCheck %s

// Two values cross the boundary each way (an activation and the
// pre-activation both read by stage 1; their gradients back). Each run of
// transfers between two actions, with one peer each way, becomes one
// braid.send_recv of all its tensors, posted at once: paired one by one,
// the first pair would wait for a gradient that stage 1 computes only after
// receiving the second tensor, which the second pair sends (a deadlock).
// The sums of the micro-batches' gradients come before the sends, so that
// nothing computed splits a run.
shard.grid @world(shape = 1x2)
func.func @step(%x: tensor<4x8xf32> {braid.role = #braid.role<batch "x">},
                %labels: tensor<4xi64> {braid.role = #braid.role<batch "labels">},
                %w1: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
                %w2: tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">})
    -> (tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
        tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %h = braid.matmul %x, %w1 {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %a = braid.relu %h : tensor<4x8xf32>
  %oa = braid.matmul %a, %w2 {transpose_b} : tensor<4x8xf32>, tensor<3x8xf32> -> tensor<4x3xf32>
  %oh = braid.matmul %h, %w2 {transpose_b} : tensor<4x8xf32>, tensor<3x8xf32> -> tensor<4x3xf32>
  %o = braid.add %oa, %oh : tensor<4x3xf32>
  %l = braid.cross_entropy %o, %labels reduction = mean : tensor<4x3xf32>, tensor<4xi64> -> tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %do = braid.cross_entropy_backward %one, %o, %labels reduction = mean : tensor<f32>, tensor<4x3xf32>, tensor<4xi64>
  %g2a = braid.matmul %do, %a {transpose_a} : tensor<4x3xf32>, tensor<4x8xf32> -> tensor<3x8xf32>
  %g2h = braid.matmul %do, %h {transpose_a} : tensor<4x3xf32>, tensor<4x8xf32> -> tensor<3x8xf32>
  %g2 = braid.add %g2a, %g2h : tensor<3x8xf32>
  %da = braid.matmul %do, %w2 : tensor<4x3xf32>, tensor<3x8xf32> -> tensor<4x8xf32>
  %dhh = braid.matmul %do, %w2 : tensor<4x3xf32>, tensor<3x8xf32> -> tensor<4x8xf32>
  %dh1 = braid.relu_backward %da, %a : tensor<4x8xf32>
  %dh = braid.add %dh1, %dhh : tensor<4x8xf32>
  %g1 = braid.matmul %dh, %x {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %r1 = braid.all_reduce %g1 on @world grid_axes = [0] reduction = avg grad_of = ["fc1.weight"] : tensor<8x8xf32>
  %r2 = braid.all_reduce %g2 on @world grid_axes = [0] reduction = avg grad_of = ["fc2.weight"] : tensor<3x8xf32>
  %n1 = braid.sub %w1, %r1 : tensor<8x8xf32>
  %n2 = braid.sub %w2, %r2 : tensor<3x8xf32>
  return %n1, %n2, %l : tensor<8x8xf32>, tensor<3x8xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @step_stage0(
// CHECK-COUNT-2: braid.send %{{.*}} peer = 1 {braid.action = #braid.action<F, micro_batch = 0>, braid.transfers = [{{.*}}]} : tensor<4x8xf32>
// CHECK: braid.send_recv %{{.*}}, %{{.*}} on @world grid_axes = [1] send_peer = 1 recv_peer = 1 {braid.action = #braid.action<B, micro_batch = 0>, braid.transfers = [{{.*}}]} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>, tensor<4x8xf32>
// CHECK: braid.send_recv %{{.*}}, %{{.*}} on @world grid_axes = [1] send_peer = 1 recv_peer = 1
// CHECK-COUNT-2: braid.recv on @world grid_axes = [1] peer = 1
// CHECK-LABEL: func.func @step_stage1(
// CHECK-COUNT-2: braid.recv on @world grid_axes = [1] peer = 0
// CHECK: braid.send_recv %{{.*}}, %{{.*}} on @world grid_axes = [1] send_peer = 0 recv_peer = 0
// The second needs the sum of the gradients ahead of the sends:
// CHECK: braid.send_recv %{{.*}}, %{{.*}} on @world grid_axes = [1] send_peer = 0 recv_peer = 0
// CHECK-COUNT-2: braid.send %{{.*}} peer = 0
