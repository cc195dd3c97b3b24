// RUN: braid-opt %s --braid-pipeline="axis=0 micro-batches=2 boundaries=fc.weight" --braid-tensor-parallel | FileCheck %s
// RUN: braid-opt %s --braid-pipeline="axis=0 micro-batches=2 boundaries=fc.weight" | FileCheck %s --check-prefix=STAGES

// A pipeline of 2 stages x tensor parallel 2 (grid pipeline x data x
// tensor) with a tied vocabulary-parallel table, as a GPT's token embedding
// and lm head (Megatron's layout: the table split by rows): stage 0 looks
// tokens up, stage 1 keeps a copy for the head. braid-pipeline gives the
// transfers of the table's values the table's sharding (the gradient part
// stage 1 sends down, the update stage 0 sends up), so that
// braid-tensor-parallel makes each tensor-parallel rank send and receive
// its own rows: 16 of the 32, on both sides. Stage 0's own part (the
// embedding's gradient, summed over the micro-batches) is computed split
// too, to be added to the part received.

shard.grid @world(shape = 2x1x2)
func.func @step(%ids: tensor<4xi64> {braid.role = #braid.role<batch "ids">},
                %labels: tensor<4xi64> {braid.role = #braid.role<batch "labels">},
                %table: tensor<32x8xf32> {braid.role = #braid.role<parameter "wte.weight">, braid.sharding = #braid.sharding<split 0>},
                %w: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc.weight">})
    -> (tensor<32x8xf32> {braid.role = #braid.role<parameter "wte.weight">},
        tensor<8x8xf32> {braid.role = #braid.role<parameter "fc.weight">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %x = braid.embedding %table, %ids : tensor<32x8xf32>, tensor<4xi64> -> tensor<4x8xf32>
  %h = braid.matmul %x, %w {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %o = braid.matmul %h, %table {transpose_b} : tensor<4x8xf32>, tensor<32x8xf32> -> tensor<4x32xf32>
  %l = braid.cross_entropy %o, %labels reduction = mean : tensor<4x32xf32>, tensor<4xi64> -> tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %do = braid.cross_entropy_backward %one, %o, %labels reduction = mean : tensor<f32>, tensor<4x32xf32>, tensor<4xi64>
  %ghead = braid.matmul %do, %h {transpose_a} : tensor<4x32xf32>, tensor<4x8xf32> -> tensor<32x8xf32>
  %dh = braid.matmul %do, %table : tensor<4x32xf32>, tensor<32x8xf32> -> tensor<4x8xf32>
  %gw = braid.matmul %dh, %x {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %dx = braid.matmul %dh, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %gemb = braid.embedding_backward %dx, %ids : tensor<4x8xf32>, tensor<4xi64> -> tensor<32x8xf32>
  %gt = braid.add %gemb, %ghead : tensor<32x8xf32>
  %rt = braid.all_reduce %gt on @world grid_axes = [1] reduction = avg grad_of = ["wte.weight"] : tensor<32x8xf32>
  %rw = braid.all_reduce %gw on @world grid_axes = [1] reduction = avg grad_of = ["fc.weight"] : tensor<8x8xf32>
  %nt = braid.sub %table, %rt : tensor<32x8xf32>
  %nw = braid.sub %w, %rw : tensor<8x8xf32>
  return %nt, %nw, %l : tensor<32x8xf32>, tensor<8x8xf32>, tensor<f32>
}

// braid-pipeline marks the two transfers of the table's values.
// STAGES-LABEL: func.func @step_stage0(
// STAGES: braid.recv on @world grid_axes = [0] peer = 1 {braid.sharding = #braid.sharding<split 0>, braid.transfers = [#braid.transfer<value = {{[0-9]+}}>]} : tensor<32x8xf32>
// STAGES: braid.send %{{.*}} on @world grid_axes = [0] peer = 1 {braid.sharding = #braid.sharding<split 0>, braid.transfers = [#braid.transfer<value = {{[0-9]+}}>]} : tensor<32x8xf32>
// STAGES-LABEL: func.func @step_stage1(
// STAGES: braid.send %{{.*}} on @world grid_axes = [0] peer = 0 {braid.sharding = #braid.sharding<split 0>, braid.transfers = [#braid.transfer<value = {{[0-9]+}}>]} : tensor<32x8xf32>
// STAGES: braid.recv on @world grid_axes = [0] peer = 0 {braid.sharding = #braid.sharding<split 0>, braid.transfers = [#braid.transfer<value = {{[0-9]+}}>]} : tensor<32x8xf32>

// braid-tensor-parallel: each rank's 16 rows, the marks read and dropped.
// CHECK-LABEL: func.func @step_stage0(
// CHECK-SAME: %[[TABLE:[a-z0-9]+]]: tensor<16x8xf32> {braid.role = #braid.role<parameter "wte.weight">, braid.sharding = #braid.sharding<split 0>}
// CHECK: %[[E0:.*]] = braid.embedding_shard_backward {{.*}} : tensor<4x8xf32>, tensor<4xi64> -> tensor<16x8xf32>
// CHECK: %[[E1:.*]] = braid.embedding_shard_backward {{.*}} : tensor<4x8xf32>, tensor<4xi64> -> tensor<16x8xf32>
// CHECK-NEXT: %[[OWN:.*]] = braid.add %[[E0]], %[[E1]] {braid.action = #braid.action<B, micro_batch = 1>} : tensor<16x8xf32>
// CHECK-NEXT: %[[FAR:.*]] = braid.recv on @world grid_axes = [0] peer = 1 {braid.transfers = [{{.*}}]} : tensor<16x8xf32>
// CHECK-NEXT: %[[SUM:.*]] = braid.add %[[OWN]], %[[FAR]] : tensor<16x8xf32>
// CHECK: %[[NEW:.*]] = braid.sub %[[TABLE]], %{{.*}} : tensor<16x8xf32>
// CHECK-NEXT: braid.send %[[NEW]] on @world grid_axes = [0] peer = 1 {braid.transfers = [{{.*}}]} : tensor<16x8xf32>
// CHECK-LABEL: func.func @step_stage1(
// CHECK-SAME: tensor<16x8xf32> {braid.role = #braid.role<parameter "wte.weight">, braid.sharding = #braid.sharding<split 0>}
// CHECK: %[[G0:.*]] = braid.matmul {{.*}} {braid.action = #braid.action<B, micro_batch = 0>, transpose_a} : tensor<4x16xf32>, tensor<4x8xf32> -> tensor<16x8xf32>
// CHECK: %[[G1:.*]] = braid.matmul {{.*}} {braid.action = #braid.action<B, micro_batch = 1>, transpose_a} : tensor<4x16xf32>, tensor<4x8xf32> -> tensor<16x8xf32>
// CHECK: %[[PART:.*]] = braid.add %[[G0]], %[[G1]] {braid.action = #braid.action<B, micro_batch = 1>} : tensor<16x8xf32>
// CHECK: braid.send %[[PART]] on @world grid_axes = [0] peer = 0 {braid.transfers = [{{.*}}]} : tensor<16x8xf32>
// CHECK: %[[COPY:.*]] = braid.recv on @world grid_axes = [0] peer = 0 {braid.transfers = [{{.*}}]} : tensor<16x8xf32>
// CHECK-NEXT: return %[[COPY]],
