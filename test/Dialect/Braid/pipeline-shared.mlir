// RUN: braid-opt %s --braid-pipeline="axis=1 micro-batches=2 boundaries=fc2" | FileCheck %s

// A parameter of stage 0 read by stage 1's forward too (tied weights, as a
// GPT's lm head and token embedding): stage 1 takes a copy of it and
// computes its part of the gradient there (%gpart, from stage 1's values),
// sums it over the micro-batches and sends the sum once,
// after its last backward (per micro-batch, a transfer to a stage that is
// not the next one would wait for that stage's backward); stage 0 adds it
// to its own sum (%g1, from the input's gradient and the batch; the batch
// keeps it on the stage of fc1.weight), all-reduces and updates the parameter, and sends the new
// value up at the end of the step; stage 1 returns it as its copy.

shard.grid @world(shape = 1x2)
func.func @step(%x: tensor<4x8xf32> {braid.role = #braid.role<batch "x">},
                %labels: tensor<4xi64> {braid.role = #braid.role<batch "labels">},
                %w1: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
                %w2: tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">})
    -> (tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
        tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %h = braid.matmul %x, %w1 {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %ww = braid.matmul %w2, %w1 : tensor<3x8xf32>, tensor<8x8xf32> -> tensor<3x8xf32>
  %o = braid.matmul %h, %ww {transpose_b} : tensor<4x8xf32>, tensor<3x8xf32> -> tensor<4x3xf32>
  %l = braid.cross_entropy %o, %labels reduction = mean : tensor<4x3xf32>, tensor<4xi64> -> tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %do = braid.cross_entropy_backward %one, %o, %labels reduction = mean : tensor<f32>, tensor<4x3xf32>, tensor<4xi64>
  %g2 = braid.matmul %do, %h {transpose_a} : tensor<4x3xf32>, tensor<4x8xf32> -> tensor<3x8xf32>
  %dh = braid.matmul %do, %w2 : tensor<4x3xf32>, tensor<3x8xf32> -> tensor<4x8xf32>
  %g1 = braid.matmul %dh, %x {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %gpart = braid.matmul %w2, %ww {transpose_a} : tensor<3x8xf32>, tensor<3x8xf32> -> tensor<8x8xf32>
  %g1t = braid.add %g1, %gpart : tensor<8x8xf32>
  %r1 = braid.all_reduce %g1t on @world grid_axes = [0] reduction = avg grad_of = ["fc1.weight"] : tensor<8x8xf32>
  %r2 = braid.all_reduce %g2 on @world grid_axes = [0] reduction = avg grad_of = ["fc2.weight"] : tensor<3x8xf32>
  %n1 = braid.sub %w1, %r1 : tensor<8x8xf32>
  %n2 = braid.sub %w2, %r2 : tensor<3x8xf32>
  return %n1, %n2, %l : tensor<8x8xf32>, tensor<3x8xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @step_stage0(
// CHECK-SAME: %[[W1:[a-z0-9]+]]: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">}
// CHECK: %[[P0:.*]] = braid.matmul %{{.*}}, %{{.*}} {braid.action = #braid.action<B, micro_batch = 0>, transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK: %[[P1:.*]] = braid.matmul %{{.*}}, %{{.*}} {braid.action = #braid.action<B, micro_batch = 1>, transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[OWN:.*]] = braid.add %[[P0]], %[[P1]] {braid.action = #braid.action<B, micro_batch = 1>}
// CHECK-NEXT: %[[FAR:.*]] = braid.recv on @world grid_axes = [1] peer = 1 {braid.transfers = [{{.*}}]} : tensor<8x8xf32>
// CHECK-NEXT: %[[SUM:.*]] = braid.add %[[OWN]], %[[FAR]]
// CHECK-NEXT: %[[MEAN:.*]] = braid.scale %[[SUM]] by 5.000000e-01
// CHECK-NEXT: braid.all_reduce %[[MEAN]]
// CHECK-NEXT: %[[NEW:.*]] = braid.sub %[[W1]]
// CHECK-NEXT: braid.send %[[NEW]] on @world grid_axes = [1] peer = 1 {braid.transfers = [{{.*}}]} : tensor<8x8xf32>
// CHECK-NEXT: return %[[NEW]] :
// CHECK-LABEL: func.func @step_stage1(
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">}
// CHECK-SAME: -> (tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">}, tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">}, tensor<f32> {braid.role = #braid.role<loss "loss">})
// CHECK: %[[G0:.*]] = braid.matmul %{{.*}}, %{{.*}} {braid.action = #braid.action<B, micro_batch = 0>, transpose_a} : tensor<3x8xf32>, tensor<3x8xf32> -> tensor<8x8xf32>
// CHECK: %[[G1:.*]] = braid.matmul %{{.*}}, %{{.*}} {braid.action = #braid.action<B, micro_batch = 1>, transpose_a} : tensor<3x8xf32>, tensor<3x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[SUM:.*]] = braid.add %[[G0]], %[[G1]] {braid.action = #braid.action<B, micro_batch = 1>} : tensor<8x8xf32>
// CHECK: braid.send %[[SUM]] on @world grid_axes = [1] peer = 0 {braid.transfers = [{{.*}}]} : tensor<8x8xf32>
// CHECK: %[[COPY:.*]] = braid.recv on @world grid_axes = [1] peer = 0 {braid.transfers = [{{.*}}]} : tensor<8x8xf32>
// CHECK-NEXT: return %[[COPY]],
