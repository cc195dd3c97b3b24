// RUN: braid-opt %s --braid-pipeline="axis=0 micro-batches=2 schedule=interleaved virtual-stages=2 boundaries=w2,w3,w4" | FileCheck %s
// RUN: braid-opt %s --braid-pipeline="axis=0 micro-batches=4 schedule=interleaved virtual-stages=2 boundaries=w2,w3,w4" | FileCheck %s --check-prefix=STEADY

// A chain of four layers on a pipeline of 2 ranks, 2 virtual stages each
// (Megatron-LM's interleaved 1F1B): rank 0 holds stages 0 and 2 (w1, w3),
// rank 1 stages 1 and 3 (w2, w4, the loss). With m = p = 2 every forward
// comes first, chunk 0's micro-batches, then chunk 1's; the backwards go
// through chunk 1, then chunk 0. Both chunks' activations go to the other
// rank, and with two ranks its gradients come back from there too: each
// unit's sends and the next unit's receives are one send-receive.

// CHECK-LABEL: func.func @step_stage0
// CHECK-SAME: parameter "w1"
// CHECK-SAME: parameter "w3"
// CHECK-SAME: index = 0
// CHECK:      %[[X0:.*]] = braid.slice %{{.*}} offsets = [0, 0] {braid.action = #braid.action<F, micro_batch = 0>}
// CHECK-NEXT: %[[H0:.*]] = braid.matmul %[[X0]], %arg0 {braid.action = #braid.action<F, micro_batch = 0>, transpose_b}
// CHECK-NEXT: braid.send %[[H0]] on @world grid_axes = [0] peer = 1 {braid.action = #braid.action<F, micro_batch = 0>, braid.transfers = [{{.*}}]}
// CHECK:      %[[H1:.*]] = braid.matmul %{{.*}}, %arg0 {braid.action = #braid.action<F, micro_batch = 1>, transpose_b}
// The second micro-batch's activation out, the first's of stage 1 in (for
// stage 2's forward).
// CHECK-NEXT: %[[A0:.*]] = braid.send_recv %[[H1]] on @world grid_axes = [0] send_peer = 1 recv_peer = 1 {braid.action = #braid.action<F, micro_batch = 0>, braid.transfers = [{{.*}}]}
// CHECK-NEXT: %[[G0:.*]] = braid.matmul %[[A0]], %arg2 {braid.action = #braid.action<F, micro_batch = 0>, transpose_b}
// CHECK-NEXT: braid.send_recv %[[G0]]
// CHECK-NEXT: braid.matmul %{{.*}}, %arg2 {braid.action = #braid.action<F, micro_batch = 1>, transpose_b}
// CHECK-NEXT: braid.send_recv %{{.*}} {braid.action = #braid.action<B, micro_batch = 0>, braid.transfers = [{{.*}}]}
// CHECK-NEXT: braid.matmul %{{.*}}, %[[A0]] {braid.action = #braid.action<B, micro_batch = 0>, transpose_a}
// Each stage's gradient is reduced at the end of its last backward (after
// its sends), stage 2's (w3) while stage 0's backwards still run.
// CHECK:      braid.all_reduce %{{.*}} grad_of = ["w3"] {braid.action = #braid.action<B, micro_batch = 1>}
// CHECK:      braid.matmul %{{.*}}, %[[X0]] {braid.action = #braid.action<B, micro_batch = 0>, transpose_a}
// CHECK:      braid.recv on @world grid_axes = [0] peer = 1 {braid.action = #braid.action<B, micro_batch = 1>, braid.transfers = [{{.*}}]}
// CHECK:      braid.all_reduce %{{.*}} grad_of = ["w1"] {braid.action = #braid.action<B, micro_batch = 1>}
// CHECK-NOT:  braid.send
// CHECK:      return

// CHECK-LABEL: func.func @step_stage1
// CHECK-SAME: parameter "w2"
// CHECK-SAME: parameter "w4"
// CHECK-SAME: loss "loss"
// CHECK-SAME: index = 1
// CHECK:      braid.recv on @world grid_axes = [0] peer = 0 {braid.action = #braid.action<F, micro_batch = 0>, braid.transfers = [{{.*}}]}
// CHECK:      braid.cross_entropy
// CHECK:      braid.cross_entropy
// CHECK:      braid.cross_entropy_backward
// CHECK:      braid.send %{{.*}} on @world grid_axes = [0] peer = 0 {braid.action = #braid.action<B, micro_batch = 0>, braid.transfers = [{{.*}}]}
// CHECK:      braid.all_reduce %{{.*}} grad_of = ["w4"]
// CHECK:      braid.all_reduce %{{.*}} grad_of = ["w2"]

// With m = 4, rank 0 warms up with 2 (p - 1) + (v - 1) p = 4 forwards
// (micro-batches 0 and 1 through both chunks), then alternates: each
// forward-backward pair (micro-batch 2's forward of stage 0, micro-batch
// 0's backward of stage 2) ends in one send-receive that sends both (the
// activation and the gradient) and receives the next pair's inputs (one
// tensor, then two).
// STEADY-LABEL: func.func @step_stage0
// STEADY:      %[[F2:.*]] = braid.matmul %{{.*}}, %arg0 {braid.action = #braid.action<F, micro_batch = 2>, transpose_b}
// STEADY-NEXT: braid.matmul %{{.*}} {braid.action = #braid.action<B, micro_batch = 0>, transpose_a}
// STEADY-NEXT: %[[D0:.*]] = braid.matmul %{{.*}}, %arg2 {braid.action = #braid.action<B, micro_batch = 0>}
// STEADY-NEXT: braid.send_recv %[[F2]], %[[D0]] on @world grid_axes = [0] send_peer = 1 recv_peer = 1 {braid.action = #braid.action<B, micro_batch = 1>, braid.transfers = [{{.*}}]}
// STEADY:      %{{.*}}:2 = braid.send_recv %{{.*}}, %{{.*}} on @world grid_axes = [0] send_peer = 1 recv_peer = 1 {braid.action = #braid.action<F, micro_batch = 2>, braid.transfers = [{{.*}}]}
// STEADY-LABEL: func.func @step_stage1

shard.grid @world(shape = 2x1)

func.func @step(%w1: tensor<8x8xf32> {braid.role = #braid.role<parameter "w1">}, %m1: tensor<8x8xf32> {braid.role = #braid.role<optimizer_state "w1.momentum">}, %w2: tensor<8x8xf32> {braid.role = #braid.role<parameter "w2">}, %m2: tensor<8x8xf32> {braid.role = #braid.role<optimizer_state "w2.momentum">}, %w3: tensor<8x8xf32> {braid.role = #braid.role<parameter "w3">}, %m3: tensor<8x8xf32> {braid.role = #braid.role<optimizer_state "w3.momentum">}, %w4: tensor<8x8xf32> {braid.role = #braid.role<parameter "w4">}, %m4: tensor<8x8xf32> {braid.role = #braid.role<optimizer_state "w4.momentum">}, %x: tensor<4x8xf32> {braid.role = #braid.role<batch "x">}, %labels: tensor<4xi64> {braid.role = #braid.role<batch "labels">})
    -> (tensor<8x8xf32> {braid.role = #braid.role<parameter "w1">}, tensor<8x8xf32> {braid.role = #braid.role<optimizer_state "w1.momentum">}, tensor<8x8xf32> {braid.role = #braid.role<parameter "w2">}, tensor<8x8xf32> {braid.role = #braid.role<optimizer_state "w2.momentum">}, tensor<8x8xf32> {braid.role = #braid.role<parameter "w3">}, tensor<8x8xf32> {braid.role = #braid.role<optimizer_state "w3.momentum">}, tensor<8x8xf32> {braid.role = #braid.role<parameter "w4">}, tensor<8x8xf32> {braid.role = #braid.role<optimizer_state "w4.momentum">}, tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %h1 = braid.matmul %x, %w1 {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %h2 = braid.matmul %h1, %w2 {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %h3 = braid.matmul %h2, %w3 {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %h4 = braid.matmul %h3, %w4 {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %loss = braid.cross_entropy %h4, %labels reduction = mean : tensor<4x8xf32>, tensor<4xi64> -> tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %g4 = braid.cross_entropy_backward %one, %h4, %labels reduction = mean : tensor<f32>, tensor<4x8xf32>, tensor<4xi64>
  %dw4 = braid.matmul %g4, %h3 {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %r4 = braid.all_reduce %dw4 on @world grid_axes = [1] reduction = avg grad_of = ["w4"] : tensor<8x8xf32>
  %g3 = braid.matmul %g4, %w4 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %dw3 = braid.matmul %g3, %h2 {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %r3 = braid.all_reduce %dw3 on @world grid_axes = [1] reduction = avg grad_of = ["w3"] : tensor<8x8xf32>
  %g2 = braid.matmul %g3, %w3 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %dw2 = braid.matmul %g2, %h1 {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %r2 = braid.all_reduce %dw2 on @world grid_axes = [1] reduction = avg grad_of = ["w2"] : tensor<8x8xf32>
  %g1 = braid.matmul %g2, %w2 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %dw1 = braid.matmul %g1, %x {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %r1 = braid.all_reduce %dw1 on @world grid_axes = [1] reduction = avg grad_of = ["w1"] : tensor<8x8xf32>
  %nw1, %nm1 = braid.sgd %w1, %r1, %m1 lr = 1.000000e-01 momentum = 9.000000e-01 weight_decay = 0.000000e+00 : tensor<8x8xf32>
  %nw2, %nm2 = braid.sgd %w2, %r2, %m2 lr = 1.000000e-01 momentum = 9.000000e-01 weight_decay = 0.000000e+00 : tensor<8x8xf32>
  %nw3, %nm3 = braid.sgd %w3, %r3, %m3 lr = 1.000000e-01 momentum = 9.000000e-01 weight_decay = 0.000000e+00 : tensor<8x8xf32>
  %nw4, %nm4 = braid.sgd %w4, %r4, %m4 lr = 1.000000e-01 momentum = 9.000000e-01 weight_decay = 0.000000e+00 : tensor<8x8xf32>
  return %nw1, %nm1, %nw2, %nm2, %nw3, %nm3, %nw4, %nm4, %loss : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<f32>
}

