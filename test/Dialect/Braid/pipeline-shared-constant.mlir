// RUN: braid-opt %s --braid-pipeline="axis=1 micro-batches=2 boundaries=fc2" | FileCheck %s
// RUN: braid-opt %s --cse --braid-pipeline="axis=1 micro-batches=2 boundaries=fc2" | FileCheck %s

// One constant read by the backward and the optimizer: the loss gradient's
// 1.0 is also the step count's increment, as CSE (or an exporter) leaves
// it. The constant is free (every stage makes its own), and so is the step
// count's sum, which each stage computes for its AdamW. The second RUN
// line makes the shared constant from two, as braid-opt --cse would on an
// exported step.
shard.grid @world(shape = 2x2)
func.func @step(%x: tensor<4x8xf32> {braid.role = #braid.role<batch "x">},
                %labels: tensor<4xi64> {braid.role = #braid.role<batch "labels">},
                %w1: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
                %m1: tensor<8x8xf32> {braid.role = #braid.role<optimizer_state "fc1.weight.exp_avg">},
                %v1: tensor<8x8xf32> {braid.role = #braid.role<optimizer_state "fc1.weight.exp_avg_sq">},
                %w2: tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">},
                %m2: tensor<3x8xf32> {braid.role = #braid.role<optimizer_state "fc2.weight.exp_avg">},
                %v2: tensor<3x8xf32> {braid.role = #braid.role<optimizer_state "fc2.weight.exp_avg_sq">},
                %step: tensor<f32> {braid.role = #braid.role<optimizer_state "step">})
    -> (tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
        tensor<8x8xf32> {braid.role = #braid.role<optimizer_state "fc1.weight.exp_avg">},
        tensor<8x8xf32> {braid.role = #braid.role<optimizer_state "fc1.weight.exp_avg_sq">},
        tensor<3x8xf32> {braid.role = #braid.role<parameter "fc2.weight">},
        tensor<3x8xf32> {braid.role = #braid.role<optimizer_state "fc2.weight.exp_avg">},
        tensor<3x8xf32> {braid.role = #braid.role<optimizer_state "fc2.weight.exp_avg_sq">},
        tensor<f32> {braid.role = #braid.role<optimizer_state "step">},
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
  %inc = braid.constant dense<1.000000e+00> : tensor<f32>
  %t = braid.add %step, %inc : tensor<f32>
  %n1, %nm1, %nv1 = braid.adamw %w1, %r1, %m1, %v1, %t lr = 1.000000e-03 beta1 = 9.000000e-01 beta2 = 9.990000e-01 eps = 1.000000e-08 weight_decay = 1.000000e-01 : tensor<8x8xf32>, tensor<f32>
  %n2, %nm2, %nv2 = braid.adamw %w2, %r2, %m2, %v2, %t lr = 1.000000e-03 beta1 = 9.000000e-01 beta2 = 9.990000e-01 eps = 1.000000e-08 weight_decay = 1.000000e-01 : tensor<3x8xf32>, tensor<f32>
  return %n1, %nm1, %nv1, %n2, %nm2, %nv2, %t, %l : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<f32>, tensor<f32>
}

// CHECK-LABEL: func.func @step_stage0(
// CHECK-SAME: %[[STEP:[^:]*]]: tensor<f32> {braid.role = #braid.role<optimizer_state "step">}
// CHECK: %[[ONE:.*]] = braid.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[T:.*]] = braid.add %[[STEP]], %[[ONE]] : tensor<f32>
// CHECK-NEXT: braid.adamw %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[T]] lr
// CHECK-LABEL: func.func @step_stage1(
// CHECK-SAME: %[[STEP:[^:]*]]: tensor<f32> {braid.role = #braid.role<optimizer_state "step">}
// CHECK: %[[SEED:.*]] = braid.constant dense<1.000000e+00> : tensor<f32> {braid.action = #braid.action<B, micro_batch = 0>}
// CHECK-NEXT: braid.cross_entropy_backward %[[SEED]]
// CHECK: %[[SEED:.*]] = braid.constant dense<1.000000e+00> : tensor<f32> {braid.action = #braid.action<B, micro_batch = 1>}
// CHECK-NEXT: braid.cross_entropy_backward %[[SEED]]
// CHECK: %[[ONE:.*]] = braid.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[T:.*]] = braid.add %[[STEP]], %[[ONE]] : tensor<f32>
// CHECK-NEXT: braid.adamw %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[T]] lr
