// RUN: braid-opt %s --split-input-file --braid-pipeline="axis=1" | FileCheck %s

// Without boundaries braid-pipeline balances the stages by the cost model:
// each parameter's forward and backward time, the parameters cut into runs
// whose largest time is smallest. A first layer of 2048 x 2048 outweighs the
// three small ones after it, and takes stage 0 alone.
// CHECK-LABEL: func.func @heavy_first_stage0(
// CHECK-SAME: "fc1.weight"
// CHECK-NOT: "fc2.weight"
// CHECK-SAME: index = 0>
// CHECK-LABEL: func.func @heavy_first_stage1(
// CHECK-SAME: "fc2.weight"
// CHECK-SAME: "fc3.weight"
// CHECK-SAME: "fc4.weight"
shard.grid @world(shape = 1x2)
func.func @heavy_first(
    %x: tensor<256x2048xf32> {braid.role = #braid.role<batch "x">},
    %labels: tensor<256xi64> {braid.role = #braid.role<batch "labels">},
    %w1: tensor<2048x2048xf32> {braid.role = #braid.role<parameter "fc1.weight">},
    %w2: tensor<64x2048xf32> {braid.role = #braid.role<parameter "fc2.weight">},
    %w3: tensor<64x64xf32> {braid.role = #braid.role<parameter "fc3.weight">},
    %w4: tensor<10x64xf32> {braid.role = #braid.role<parameter "fc4.weight">})
    -> (tensor<2048x2048xf32> {braid.role = #braid.role<parameter "fc1.weight">},
        tensor<64x2048xf32> {braid.role = #braid.role<parameter "fc2.weight">},
        tensor<64x64xf32> {braid.role = #braid.role<parameter "fc3.weight">},
        tensor<10x64xf32> {braid.role = #braid.role<parameter "fc4.weight">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %v1 = braid.matmul %x, %w1 {transpose_b} : tensor<256x2048xf32>, tensor<2048x2048xf32> -> tensor<256x2048xf32>
  %v2 = braid.relu %v1 : tensor<256x2048xf32>
  %v3 = braid.matmul %v2, %w2 {transpose_b} : tensor<256x2048xf32>, tensor<64x2048xf32> -> tensor<256x64xf32>
  %v4 = braid.relu %v3 : tensor<256x64xf32>
  %v5 = braid.matmul %v4, %w3 {transpose_b} : tensor<256x64xf32>, tensor<64x64xf32> -> tensor<256x64xf32>
  %v6 = braid.relu %v5 : tensor<256x64xf32>
  %v7 = braid.matmul %v6, %w4 {transpose_b} : tensor<256x64xf32>, tensor<10x64xf32> -> tensor<256x10xf32>
  %v8 = braid.cross_entropy %v7, %labels reduction = mean : tensor<256x10xf32>, tensor<256xi64> -> tensor<f32>
  %v9 = braid.constant dense<1.000000e+00> : tensor<f32>
  %v10 = braid.cross_entropy_backward %v9, %v7, %labels reduction = mean : tensor<f32>, tensor<256x10xf32>, tensor<256xi64>
  %v11 = braid.matmul %v10, %v6 {transpose_a} : tensor<256x10xf32>, tensor<256x64xf32> -> tensor<10x64xf32>
  %v12 = braid.all_reduce %v11 on @world grid_axes = [0] reduction = avg grad_of = ["fc4.weight"] : tensor<10x64xf32>
  %v13 = braid.matmul %v10, %w4 : tensor<256x10xf32>, tensor<10x64xf32> -> tensor<256x64xf32>
  %v14 = braid.relu_backward %v13, %v6 : tensor<256x64xf32>
  %v15 = braid.matmul %v14, %v4 {transpose_a} : tensor<256x64xf32>, tensor<256x64xf32> -> tensor<64x64xf32>
  %v16 = braid.all_reduce %v15 on @world grid_axes = [0] reduction = avg grad_of = ["fc3.weight"] : tensor<64x64xf32>
  %v17 = braid.matmul %v14, %w3 : tensor<256x64xf32>, tensor<64x64xf32> -> tensor<256x64xf32>
  %v18 = braid.relu_backward %v17, %v4 : tensor<256x64xf32>
  %v19 = braid.matmul %v18, %v2 {transpose_a} : tensor<256x64xf32>, tensor<256x2048xf32> -> tensor<64x2048xf32>
  %v20 = braid.all_reduce %v19 on @world grid_axes = [0] reduction = avg grad_of = ["fc2.weight"] : tensor<64x2048xf32>
  %v21 = braid.matmul %v18, %w2 : tensor<256x64xf32>, tensor<64x2048xf32> -> tensor<256x2048xf32>
  %v22 = braid.relu_backward %v21, %v2 : tensor<256x2048xf32>
  %v23 = braid.matmul %v22, %x {transpose_a} : tensor<256x2048xf32>, tensor<256x2048xf32> -> tensor<2048x2048xf32>
  %v24 = braid.all_reduce %v23 on @world grid_axes = [0] reduction = avg grad_of = ["fc1.weight"] : tensor<2048x2048xf32>
  %v25 = braid.sub %w1, %v24 : tensor<2048x2048xf32>
  %v26 = braid.sub %w2, %v20 : tensor<64x2048xf32>
  %v27 = braid.sub %w3, %v16 : tensor<64x64xf32>
  %v28 = braid.sub %w4, %v12 : tensor<10x64xf32>
  return %v25, %v26, %v27, %v28, %v8 : tensor<2048x2048xf32>, tensor<64x2048xf32>, tensor<64x64xf32>, tensor<10x64xf32>, tensor<f32>
}

// -----

// Four equal layers: two per stage.
// CHECK-LABEL: func.func @uniform_stage0(
// CHECK-SAME: "fc1.weight"
// CHECK-SAME: "fc2.weight"
// CHECK-NOT: "fc3.weight"
// CHECK-SAME: index = 0>
// CHECK-LABEL: func.func @uniform_stage1(
// CHECK-SAME: "fc3.weight"
// CHECK-SAME: "fc4.weight"
shard.grid @world(shape = 1x2)
func.func @uniform(
    %x: tensor<256x512xf32> {braid.role = #braid.role<batch "x">},
    %labels: tensor<256xi64> {braid.role = #braid.role<batch "labels">},
    %w1: tensor<512x512xf32> {braid.role = #braid.role<parameter "fc1.weight">},
    %w2: tensor<512x512xf32> {braid.role = #braid.role<parameter "fc2.weight">},
    %w3: tensor<512x512xf32> {braid.role = #braid.role<parameter "fc3.weight">},
    %w4: tensor<512x512xf32> {braid.role = #braid.role<parameter "fc4.weight">})
    -> (tensor<512x512xf32> {braid.role = #braid.role<parameter "fc1.weight">},
        tensor<512x512xf32> {braid.role = #braid.role<parameter "fc2.weight">},
        tensor<512x512xf32> {braid.role = #braid.role<parameter "fc3.weight">},
        tensor<512x512xf32> {braid.role = #braid.role<parameter "fc4.weight">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %v1 = braid.matmul %x, %w1 {transpose_b} : tensor<256x512xf32>, tensor<512x512xf32> -> tensor<256x512xf32>
  %v2 = braid.relu %v1 : tensor<256x512xf32>
  %v3 = braid.matmul %v2, %w2 {transpose_b} : tensor<256x512xf32>, tensor<512x512xf32> -> tensor<256x512xf32>
  %v4 = braid.relu %v3 : tensor<256x512xf32>
  %v5 = braid.matmul %v4, %w3 {transpose_b} : tensor<256x512xf32>, tensor<512x512xf32> -> tensor<256x512xf32>
  %v6 = braid.relu %v5 : tensor<256x512xf32>
  %v7 = braid.matmul %v6, %w4 {transpose_b} : tensor<256x512xf32>, tensor<512x512xf32> -> tensor<256x512xf32>
  %v8 = braid.cross_entropy %v7, %labels reduction = mean : tensor<256x512xf32>, tensor<256xi64> -> tensor<f32>
  %v9 = braid.constant dense<1.000000e+00> : tensor<f32>
  %v10 = braid.cross_entropy_backward %v9, %v7, %labels reduction = mean : tensor<f32>, tensor<256x512xf32>, tensor<256xi64>
  %v11 = braid.matmul %v10, %v6 {transpose_a} : tensor<256x512xf32>, tensor<256x512xf32> -> tensor<512x512xf32>
  %v12 = braid.all_reduce %v11 on @world grid_axes = [0] reduction = avg grad_of = ["fc4.weight"] : tensor<512x512xf32>
  %v13 = braid.matmul %v10, %w4 : tensor<256x512xf32>, tensor<512x512xf32> -> tensor<256x512xf32>
  %v14 = braid.relu_backward %v13, %v6 : tensor<256x512xf32>
  %v15 = braid.matmul %v14, %v4 {transpose_a} : tensor<256x512xf32>, tensor<256x512xf32> -> tensor<512x512xf32>
  %v16 = braid.all_reduce %v15 on @world grid_axes = [0] reduction = avg grad_of = ["fc3.weight"] : tensor<512x512xf32>
  %v17 = braid.matmul %v14, %w3 : tensor<256x512xf32>, tensor<512x512xf32> -> tensor<256x512xf32>
  %v18 = braid.relu_backward %v17, %v4 : tensor<256x512xf32>
  %v19 = braid.matmul %v18, %v2 {transpose_a} : tensor<256x512xf32>, tensor<256x512xf32> -> tensor<512x512xf32>
  %v20 = braid.all_reduce %v19 on @world grid_axes = [0] reduction = avg grad_of = ["fc2.weight"] : tensor<512x512xf32>
  %v21 = braid.matmul %v18, %w2 : tensor<256x512xf32>, tensor<512x512xf32> -> tensor<256x512xf32>
  %v22 = braid.relu_backward %v21, %v2 : tensor<256x512xf32>
  %v23 = braid.matmul %v22, %x {transpose_a} : tensor<256x512xf32>, tensor<256x512xf32> -> tensor<512x512xf32>
  %v24 = braid.all_reduce %v23 on @world grid_axes = [0] reduction = avg grad_of = ["fc1.weight"] : tensor<512x512xf32>
  %v25 = braid.sub %w1, %v24 : tensor<512x512xf32>
  %v26 = braid.sub %w2, %v20 : tensor<512x512xf32>
  %v27 = braid.sub %w3, %v16 : tensor<512x512xf32>
  %v28 = braid.sub %w4, %v12 : tensor<512x512xf32>
  return %v25, %v26, %v27, %v28, %v8 : tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<f32>
}

