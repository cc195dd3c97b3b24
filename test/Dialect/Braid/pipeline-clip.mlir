// RUN: braid-opt %s --braid-pipeline="axis=1 micro-batches=2 boundaries=fc2" | FileCheck %s

// Gradient clipping by the global norm across pipeline stages: the squared
// norm is one braid.sum_squares over every reduced gradient, which every
// stage computes over its own gradients and sums over the pipeline axis
// (a scalar all-reduce each stage issues after its gradients' all-reduces),
// then the clipping factor on every stage, each stage's update scaled by it.
shard.grid @world(shape = 2x2)
func.func @step(%x: tensor<4x8xf32> {braid.role = #braid.role<batch "x">},
                %labels: tensor<4xi64> {braid.role = #braid.role<batch "labels">},
                %w1: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
                %m1: tensor<8x8xf32> {braid.role = #braid.role<optimizer_state "fc1.weight.momentum">},
                %w2: tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">},
                %m2: tensor<3x8xf32> {braid.role = #braid.role<optimizer_state "fc2.weight.momentum">})
    -> (tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
        tensor<8x8xf32> {braid.role = #braid.role<optimizer_state "fc1.weight.momentum">},
        tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">},
        tensor<3x8xf32> {braid.role = #braid.role<optimizer_state "fc2.weight.momentum">},
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
  %sq = braid.sum_squares %r1, %r2 : tensor<8x8xf32>, tensor<3x8xf32> -> tensor<f32>
  %c = braid.clip_coefficient %sq max_norm = 1.000000e+00 : tensor<f32>
  %n1, %nm1 = braid.sgd %w1, %r1, %m1 lr = 1.000000e-01 grad_scale = %c momentum = 9.000000e-01 weight_decay = 0.000000e+00 : tensor<8x8xf32>
  %n2, %nm2 = braid.sgd %w2, %r2, %m2 lr = 1.000000e-01 grad_scale = %c momentum = 9.000000e-01 weight_decay = 0.000000e+00 : tensor<3x8xf32>
  return %n1, %nm1, %n2, %nm2, %l : tensor<8x8xf32>, tensor<8x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @step_stage0(
// CHECK: %[[R1:.*]] = braid.all_reduce %{{.*}} on @world grid_axes = [0] reduction = avg grad_of = ["fc1.weight"]
// CHECK: %[[PART:.*]] = braid.sum_squares %[[R1]] : tensor<8x8xf32> -> tensor<f32>
// CHECK-NEXT: %[[SQ:.*]] = braid.all_reduce %[[PART]] on @world grid_axes = [1] reduction = sum : tensor<f32>
// CHECK-NEXT: %[[C:.*]] = braid.clip_coefficient %[[SQ]] max_norm = 1.000000e+00
// CHECK-NEXT: braid.sgd %{{.*}}, %[[R1]], %{{.*}} lr = 1.000000e-01 grad_scale = %[[C]]
// CHECK-LABEL: func.func @step_stage1(
// CHECK: %[[R2:.*]] = braid.all_reduce %{{.*}} on @world grid_axes = [0] reduction = avg grad_of = ["fc2.weight"]
// CHECK: %[[PART:.*]] = braid.sum_squares %[[R2]] : tensor<3x8xf32> -> tensor<f32>
// CHECK-NEXT: %[[SQ:.*]] = braid.all_reduce %[[PART]] on @world grid_axes = [1] reduction = sum : tensor<f32>
// CHECK-NEXT: %[[C:.*]] = braid.clip_coefficient %[[SQ]] max_norm = 1.000000e+00
// CHECK-NEXT: braid.sgd %{{.*}}, %[[R2]], %{{.*}} lr = 1.000000e-01 grad_scale = %[[C]]
