// RUN: braid-opt %s --braid-pipeline="axis=1 micro-batches=2 schedule=interleaved virtual-stages=2 boundaries=fc2,fc3,fc4" | FileCheck %s

// Gradient clipping by the global norm under the interleaved schedule: 4
// stages on 2 ranks, rank 0 running stages 0 and 2 (fc1, fc3), rank 1
// stages 1 and 3 (fc2, fc4). Each rank squares the gradients of both its
// stages in one braid.sum_squares and sums that over the pipeline axis
// once: a part that left out a chunk's gradients (or counted a chunk once
// per virtual stage) clips by another norm, on every rank.
shard.grid @world(shape = 2x2)
func.func @step(%x: tensor<4x8xf32> {braid.role = #braid.role<batch "x">},
                %labels: tensor<4xi64> {braid.role = #braid.role<batch "labels">},
                %w1: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
                %m1: tensor<8x8xf32> {braid.role = #braid.role<optimizer_state "fc1.weight.momentum">},
                %w2: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc2.weight">},
                %m2: tensor<8x8xf32> {braid.role = #braid.role<optimizer_state "fc2.weight.momentum">},
                %w3: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc3.weight">},
                %m3: tensor<8x8xf32> {braid.role = #braid.role<optimizer_state "fc3.weight.momentum">},
                %w4: tensor<3x8xf32> {braid.role = #braid.role<parameter "fc4.weight">},
                %m4: tensor<3x8xf32> {braid.role = #braid.role<optimizer_state "fc4.weight.momentum">})
    -> (tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
        tensor<8x8xf32> {braid.role = #braid.role<optimizer_state "fc1.weight.momentum">},
        tensor<8x8xf32> {braid.role = #braid.role<parameter "fc2.weight">},
        tensor<8x8xf32> {braid.role = #braid.role<optimizer_state "fc2.weight.momentum">},
        tensor<8x8xf32> {braid.role = #braid.role<parameter "fc3.weight">},
        tensor<8x8xf32> {braid.role = #braid.role<optimizer_state "fc3.weight.momentum">},
        tensor<3x8xf32> {braid.role = #braid.role<parameter "fc4.weight">},
        tensor<3x8xf32> {braid.role = #braid.role<optimizer_state "fc4.weight.momentum">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %h1 = braid.matmul %x, %w1 {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %h2 = braid.matmul %h1, %w2 {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %h3 = braid.matmul %h2, %w3 {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %h4 = braid.matmul %h3, %w4 {transpose_b} : tensor<4x8xf32>, tensor<3x8xf32> -> tensor<4x3xf32>
  %l = braid.cross_entropy %h4, %labels reduction = mean : tensor<4x3xf32>, tensor<4xi64> -> tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %d4 = braid.cross_entropy_backward %one, %h4, %labels reduction = mean : tensor<f32>, tensor<4x3xf32>, tensor<4xi64>
  %g4 = braid.matmul %d4, %h3 {transpose_a} : tensor<4x3xf32>, tensor<4x8xf32> -> tensor<3x8xf32>
  %d3 = braid.matmul %d4, %w4 : tensor<4x3xf32>, tensor<3x8xf32> -> tensor<4x8xf32>
  %g3 = braid.matmul %d3, %h2 {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %d2 = braid.matmul %d3, %w3 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %g2 = braid.matmul %d2, %h1 {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %d1 = braid.matmul %d2, %w2 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %g1 = braid.matmul %d1, %x {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %r1 = braid.all_reduce %g1 on @world grid_axes = [0] reduction = avg grad_of = ["fc1.weight"] : tensor<8x8xf32>
  %r2 = braid.all_reduce %g2 on @world grid_axes = [0] reduction = avg grad_of = ["fc2.weight"] : tensor<8x8xf32>
  %r3 = braid.all_reduce %g3 on @world grid_axes = [0] reduction = avg grad_of = ["fc3.weight"] : tensor<8x8xf32>
  %r4 = braid.all_reduce %g4 on @world grid_axes = [0] reduction = avg grad_of = ["fc4.weight"] : tensor<3x8xf32>
  %sq = braid.sum_squares %r1, %r2, %r3, %r4 : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<3x8xf32> -> tensor<f32>
  %c = braid.clip_coefficient %sq max_norm = 1.000000e+00 : tensor<f32>
  %n1, %nm1 = braid.sgd %w1, %r1, %m1 lr = 1.000000e-01 grad_scale = %c momentum = 9.000000e-01 weight_decay = 0.000000e+00 : tensor<8x8xf32>
  %n2, %nm2 = braid.sgd %w2, %r2, %m2 lr = 1.000000e-01 grad_scale = %c momentum = 9.000000e-01 weight_decay = 0.000000e+00 : tensor<8x8xf32>
  %n3, %nm3 = braid.sgd %w3, %r3, %m3 lr = 1.000000e-01 grad_scale = %c momentum = 9.000000e-01 weight_decay = 0.000000e+00 : tensor<8x8xf32>
  %n4, %nm4 = braid.sgd %w4, %r4, %m4 lr = 1.000000e-01 grad_scale = %c momentum = 9.000000e-01 weight_decay = 0.000000e+00 : tensor<3x8xf32>
  return %n1, %nm1, %n2, %nm2, %n3, %nm3, %n4, %nm4, %l : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @step_stage0(
// CHECK-DAG: %[[R1:.*]] = braid.all_reduce %{{.*}} on @world grid_axes = [0] reduction = avg grad_of = ["fc1.weight"]
// CHECK-DAG: %[[R3:.*]] = braid.all_reduce %{{.*}} on @world grid_axes = [0] reduction = avg grad_of = ["fc3.weight"]
// CHECK: %[[PART:.*]] = braid.sum_squares %[[R1]], %[[R3]] : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<f32>
// CHECK-NEXT: %[[SQ:.*]] = braid.all_reduce %[[PART]] on @world grid_axes = [1] reduction = sum : tensor<f32>
// CHECK-NEXT: %[[C:.*]] = braid.clip_coefficient %[[SQ]] max_norm = 1.000000e+00
// CHECK-NEXT: braid.sgd %{{.*}}, %[[R1]], %{{.*}} lr = 1.000000e-01 grad_scale = %[[C]]
// CHECK-NEXT: braid.sgd %{{.*}}, %[[R3]], %{{.*}} lr = 1.000000e-01 grad_scale = %[[C]]
// CHECK-NOT: braid.all_reduce
// CHECK-LABEL: func.func @step_stage1(
// CHECK-DAG: %[[R2:.*]] = braid.all_reduce %{{.*}} on @world grid_axes = [0] reduction = avg grad_of = ["fc2.weight"]
// CHECK-DAG: %[[R4:.*]] = braid.all_reduce %{{.*}} on @world grid_axes = [0] reduction = avg grad_of = ["fc4.weight"]
// CHECK: %[[PART:.*]] = braid.sum_squares %[[R2]], %[[R4]] : tensor<8x8xf32>, tensor<3x8xf32> -> tensor<f32>
// CHECK-NEXT: %[[SQ:.*]] = braid.all_reduce %[[PART]] on @world grid_axes = [1] reduction = sum : tensor<f32>
// CHECK-NEXT: %[[C:.*]] = braid.clip_coefficient %[[SQ]] max_norm = 1.000000e+00
// CHECK-NEXT: braid.sgd %{{.*}}, %[[R2]], %{{.*}} lr = 1.000000e-01 grad_scale = %[[C]]
// CHECK-NEXT: braid.sgd %{{.*}}, %[[R4]], %{{.*}} lr = 1.000000e-01 grad_scale = %[[C]]
// CHECK-NOT: braid.all_reduce
