// RUN: braid-opt %s --split-input-file --braid-pipeline="axis=1 micro-batches=2 boundaries=fc2,fc3" | FileCheck %s
// RUN: braid-opt %s --split-input-file --braid-pipeline="axis=1 micro-batches=3 schedule=gpipe boundaries=fc2,fc3" | FileCheck %s --check-prefix=GPIPE
// RUN: braid-opt %s --split-input-file --braid-pipeline="axis=1 micro-batches=2 schedule=zb-h1 boundaries=fc2,fc3" | FileCheck %s --check-prefix=ZB

// A three-layer MLP on data parallel 2 x pipeline 3, a layer per stage.
// 1F1B with two micro-batches: stage 0 runs one warm-up forward and sends
// its activation; its second forward's send pairs with the first
// gradient's receive; the middle stage pairs each send with the receive
// that follows it (to the last stage and from the first, to and from the
// last, to the first and from the last); the last stage alternates forward and backward at once and
// holds the loss, the mean of the micro-batches'. Each stage takes the
// batch of both micro-batches and slices it; its gradients add up over the
// micro-batches, halved before their data-parallel all-reduce.
shard.grid @world(shape = 2x3)

func.func @step(
    %x: tensor<8x16xf32> {braid.role = #braid.role<batch "x">},
    %labels: tensor<8xi64> {braid.role = #braid.role<batch "labels">},
    %fc1_weight: tensor<32x16xf32> {braid.role = #braid.role<parameter "fc1.weight">},
    %fc1_weight_m: tensor<32x16xf32> {braid.role = #braid.role<optimizer_state "fc1.weight.momentum">},
    %fc2_weight: tensor<32x32xf32> {braid.role = #braid.role<parameter "fc2.weight">},
    %fc2_weight_m: tensor<32x32xf32> {braid.role = #braid.role<optimizer_state "fc2.weight.momentum">},
    %fc3_weight: tensor<10x32xf32> {braid.role = #braid.role<parameter "fc3.weight">},
    %fc3_weight_m: tensor<10x32xf32> {braid.role = #braid.role<optimizer_state "fc3.weight.momentum">})
    -> (tensor<32x16xf32> {braid.role = #braid.role<parameter "fc1.weight">},
    tensor<32x16xf32> {braid.role = #braid.role<optimizer_state "fc1.weight.momentum">},
    tensor<32x32xf32> {braid.role = #braid.role<parameter "fc2.weight">},
    tensor<32x32xf32> {braid.role = #braid.role<optimizer_state "fc2.weight.momentum">},
    tensor<10x32xf32> {braid.role = #braid.role<parameter "fc3.weight">},
    tensor<10x32xf32> {braid.role = #braid.role<optimizer_state "fc3.weight.momentum">},
    tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %v1 = braid.matmul %x, %fc1_weight {transpose_b} : tensor<8x16xf32>, tensor<32x16xf32> -> tensor<8x32xf32>
  %v2 = braid.relu %v1 : tensor<8x32xf32>
  %v3 = braid.matmul %v2, %fc2_weight {transpose_b} : tensor<8x32xf32>, tensor<32x32xf32> -> tensor<8x32xf32>
  %v4 = braid.relu %v3 : tensor<8x32xf32>
  %v5 = braid.matmul %v4, %fc3_weight {transpose_b} : tensor<8x32xf32>, tensor<10x32xf32> -> tensor<8x10xf32>
  %v6 = braid.cross_entropy %v5, %labels reduction = mean : tensor<8x10xf32>, tensor<8xi64> -> tensor<f32>
  %v7 = braid.constant dense<1.000000e+00> : tensor<f32>
  %v8 = braid.cross_entropy_backward %v7, %v5, %labels reduction = mean : tensor<f32>, tensor<8x10xf32>, tensor<8xi64>
  %v9 = braid.matmul %v8, %v4 {transpose_a} : tensor<8x10xf32>, tensor<8x32xf32> -> tensor<10x32xf32>
  %v10 = braid.all_reduce %v9 on @world grid_axes = [0] reduction = avg grad_of = ["fc3.weight"] : tensor<10x32xf32>
  %v11 = braid.matmul %v8, %fc3_weight : tensor<8x10xf32>, tensor<10x32xf32> -> tensor<8x32xf32>
  %v12 = braid.relu_backward %v11, %v4 : tensor<8x32xf32>
  %v13 = braid.matmul %v12, %v2 {transpose_a} : tensor<8x32xf32>, tensor<8x32xf32> -> tensor<32x32xf32>
  %v14 = braid.all_reduce %v13 on @world grid_axes = [0] reduction = avg grad_of = ["fc2.weight"] : tensor<32x32xf32>
  %v15 = braid.matmul %v12, %fc2_weight : tensor<8x32xf32>, tensor<32x32xf32> -> tensor<8x32xf32>
  %v16 = braid.relu_backward %v15, %v2 : tensor<8x32xf32>
  %v17 = braid.matmul %v16, %x {transpose_a} : tensor<8x32xf32>, tensor<8x16xf32> -> tensor<32x16xf32>
  %v18 = braid.all_reduce %v17 on @world grid_axes = [0] reduction = avg grad_of = ["fc1.weight"] : tensor<32x16xf32>
  %w19, %m19 = braid.sgd %fc1_weight, %v18, %fc1_weight_m lr = 1.000000e-01 momentum = 9.000000e-01 weight_decay = 0.000000e+00 : tensor<32x16xf32>
  %w20, %m20 = braid.sgd %fc2_weight, %v14, %fc2_weight_m lr = 1.000000e-01 momentum = 9.000000e-01 weight_decay = 0.000000e+00 : tensor<32x32xf32>
  %w21, %m21 = braid.sgd %fc3_weight, %v10, %fc3_weight_m lr = 1.000000e-01 momentum = 9.000000e-01 weight_decay = 0.000000e+00 : tensor<10x32xf32>
  return %w19, %m19, %w20, %m20, %w21, %m21, %v6 : tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<10x32xf32>, tensor<10x32xf32>, tensor<f32>
}


// ZB-H1 splits each backward into B, the input's gradient that goes down
// a stage, and W, the weight's gradient: stage 0's whole backward is W
// (nothing goes down from it, and the relu's gradient serves fc1.weight's
// alone); stage i runs micro-batch k's W after the B of k + i, so the
// middle stage's first W follows its second B's send, and the last
// stage's two follow every send. Gradients still add up in micro-batch
// order before their mean.
// ZB-LABEL: func.func @step_stage0(
// ZB: %[[G0:.*]] = braid.send_recv
// ZB-NEXT: %[[R0:.*]] = braid.relu_backward %[[G0]]
// ZB-NEXT: %[[W0:.*]] = braid.matmul %[[R0]], %{{.*}} {braid.action = #braid.action<W, micro_batch = 0>, transpose_a}
// ZB-NEXT: %[[G1:.*]] = braid.recv
// ZB-NEXT: %[[R1:.*]] = braid.relu_backward %[[G1]]
// ZB-NEXT: %[[W1:.*]] = braid.matmul %[[R1]], %{{.*}} {braid.action = #braid.action<W, micro_batch = 1>, transpose_a}
// ZB-NEXT: braid.add %[[W0]], %[[W1]] {braid.action = #braid.action<W, micro_batch = 1>}
// ZB-LABEL: func.func @step_stage1(
// ZB: braid.send_recv %{{.*}} send_peer = 2 recv_peer = 2
// ZB-NEXT: %[[R0:.*]] = braid.relu_backward
// ZB-NEXT: braid.matmul %[[R0]], %arg0 {braid.action = #braid.action<B, micro_batch = 0>} :
// ZB-NEXT: braid.send_recv %{{.*}} send_peer = 0 recv_peer = 2
// ZB-NEXT: %[[R1:.*]] = braid.relu_backward
// ZB-NEXT: braid.matmul %[[R1]], %arg0 {braid.action = #braid.action<B, micro_batch = 1>} :
// ZB-NEXT: braid.send %{{.*}} peer = 0 {braid.action = #braid.action<B, micro_batch = 1>, braid.transfers = [{{.*}}]}
// ZB-NEXT: %[[W0:.*]] = braid.matmul %[[R0]], %{{.*}} {braid.action = #braid.action<W, micro_batch = 0>, transpose_a}
// ZB-NEXT: %[[W1:.*]] = braid.matmul %[[R1]], %{{.*}} {braid.action = #braid.action<W, micro_batch = 1>, transpose_a}
// ZB-NEXT: braid.add %[[W0]], %[[W1]]
// ZB-LABEL: func.func @step_stage2(
// ZB: braid.send_recv
// ZB: braid.send %{{.*}} peer = 1
// ZB-NEXT: %[[W0:.*]] = braid.matmul %{{.*}} {braid.action = #braid.action<W, micro_batch = 0>, transpose_a}
// ZB-NEXT: %[[W1:.*]] = braid.matmul %{{.*}} {braid.action = #braid.action<W, micro_batch = 1>, transpose_a}
// ZB-NEXT: braid.add %[[W0]], %[[W1]]

// CHECK-LABEL: func.func @step_stage0(
// CHECK-SAME: %[[X:.*]]: tensor<16x16xf32> {braid.role = #braid.role<batch "x">}
// CHECK-SAME: attributes {braid.stage = #braid.stage<grid = @world, axis = 1, index = 0>}
// CHECK: %[[X0:.*]] = braid.slice %[[X]] offsets = [0, 0] {braid.action = #braid.action<F, micro_batch = 0>} : tensor<16x16xf32> -> tensor<8x16xf32>
// CHECK: braid.send %{{.*}} on @world grid_axes = [1] peer = 1 {braid.action = #braid.action<F, micro_batch = 0>, braid.transfers = [{{.*}}]} : tensor<8x32xf32>
// CHECK: braid.slice %[[X]] offsets = [8, 0]
// CHECK: braid.send_recv %{{.*}} on @world grid_axes = [1] send_peer = 1 recv_peer = 1 {braid.action = #braid.action<B, micro_batch = 0>, braid.transfers = [{{.*}}]} : tensor<8x32xf32> -> tensor<8x32xf32>
// CHECK: braid.recv on @world grid_axes = [1] peer = 1 {braid.action = #braid.action<B, micro_batch = 1>, braid.transfers = [{{.*}}]} : tensor<8x32xf32>
// CHECK: %[[SUM:.*]] = braid.add
// CHECK: %[[MEAN:.*]] = braid.scale %[[SUM]] by 5.000000e-01 {braid.action = #braid.action<B, micro_batch = 1>} : tensor<32x16xf32>
// CHECK: braid.all_reduce %[[MEAN]] on @world grid_axes = [0] reduction = avg grad_of = ["fc1.weight"] {braid.action = #braid.action<B, micro_batch = 1>}
// CHECK: braid.sgd
// CHECK-NOT: braid.send
// CHECK: return

// CHECK-LABEL: func.func @step_stage1(
// CHECK-SAME: index = 1>
// CHECK: braid.recv on @world grid_axes = [1] peer = 0
// CHECK: braid.send_recv %{{.*}} send_peer = 2 recv_peer = 0
// CHECK: braid.send_recv %{{.*}} send_peer = 2 recv_peer = 2
// CHECK: braid.send_recv %{{.*}} send_peer = 0 recv_peer = 2
// The last micro-batch's backward reduces the weight's gradient after it
// sends the input's gradient down (stage 0, which sends nothing, reduces
// each gradient as soon as its sum is complete).
// CHECK: braid.send %{{.*}} peer = 0 {braid.action = #braid.action<B, micro_batch = 1>, braid.transfers = [{{.*}}]}
// CHECK-NEXT: braid.scale %{{.*}} by 5.000000e-01 {braid.action = #braid.action<B, micro_batch = 1>}
// CHECK-NEXT: grad_of = ["fc2.weight"] {braid.action = #braid.action<B, micro_batch = 1>}

// CHECK-LABEL: func.func @step_stage2(
// CHECK-SAME: tensor<16xi64> {braid.role = #braid.role<batch "labels">}
// CHECK-SAME: tensor<f32> {braid.role = #braid.role<loss "loss">}
// CHECK-SAME: index = 2>
// CHECK: braid.recv on @world grid_axes = [1] peer = 1
// CHECK: %[[L0:.*]] = braid.cross_entropy
// CHECK: braid.send_recv %{{.*}} send_peer = 1 recv_peer = 1
// CHECK: %[[L1:.*]] = braid.cross_entropy
// CHECK: %[[LS:.*]] = braid.add %[[L0]], %[[L1]] {braid.action = #braid.action<F, micro_batch = 1>} : tensor<f32>
// CHECK: braid.send %{{.*}} peer = 1
// CHECK: grad_of = ["fc3.weight"] {braid.action = #braid.action<B, micro_batch = 1>}
// CHECK: %[[LOSS:.*]] = braid.scale %[[LS]] by 5.000000e-01 : tensor<f32>
// CHECK: return {{.*}}, %[[LOSS]] :
// CHECK-NOT: func.func @step(

// GPipe with three micro-batches: every forward first. Stage 0 sends three
// activations (the third paired with the first gradient's receive, which
// follows it), then receives the other two gradients.
// GPIPE-LABEL: func.func @step_stage0(
// GPIPE-SAME: tensor<24x16xf32>
// GPIPE-COUNT-2: braid.send %{{.*}} peer = 1
// GPIPE: braid.send_recv %{{.*}} send_peer = 1 recv_peer = 1
// GPIPE-COUNT-2: braid.recv on @world grid_axes = [1] peer = 1
// GPIPE: braid.scale %{{.*}} by 0.33333333333333331 {braid.action = #braid.action<B, micro_batch = 2>} : tensor<32x16xf32>
// GPIPE-LABEL: func.func @step_stage2(
// GPIPE-COUNT-3: braid.recv on @world grid_axes = [1] peer = 1
// GPIPE-COUNT-3: braid.send %{{.*}} peer = 1
