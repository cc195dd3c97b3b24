// RUN: braid-opt %s | braid-opt | FileCheck %s
// RUN: braid-opt %s --mlir-print-op-generic | braid-opt | FileCheck %s

shard.grid @world(shape = 4x2)

// CHECK-LABEL: func.func @compute
func.func @compute(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>,
                   %bt: tensor<32x16xf32>, %x: tensor<8x16xf32>,
                   %bias: tensor<16xf32>, %h: tensor<8x16xbf16>,
                   %q: tensor<2x4x8x8xf32>, %k: tensor<2x4x8x8xf32>) {
  // CHECK: braid.matmul %{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %0 = braid.matmul %a, %b : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  // CHECK: braid.matmul %{{.*}}, %{{.*}} {transpose_b} : tensor<8x16xf32>, tensor<32x16xf32> -> tensor<8x32xf32>
  %1 = braid.matmul %a, %bt {transpose_b} : tensor<8x16xf32>, tensor<32x16xf32> -> tensor<8x32xf32>
  // CHECK: braid.matmul %{{.*}}, %{{.*}} {transpose_a} : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<16x16xf32>
  %2 = braid.matmul %a, %x {transpose_a} : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<16x16xf32>
  // CHECK: braid.matmul %{{.*}}, %{{.*}} {transpose_b} : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %3 = braid.matmul %q, %k {transpose_b} : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  // CHECK: braid.matmul %{{.*}}, %{{.*}} : tensor<2x4x8x8xf32>, tensor<8x16xf32> -> tensor<2x4x8x16xf32>
  %4 = braid.matmul %q, %a : tensor<2x4x8x8xf32>, tensor<8x16xf32> -> tensor<2x4x8x16xf32>
  // CHECK: braid.add %{{.*}}, %{{.*}} : tensor<8x16xf32>
  %5 = braid.add %a, %x : tensor<8x16xf32>
  // CHECK: braid.sub %{{.*}}, %{{.*}} : tensor<8x16xf32>
  %6 = braid.sub %a, %x : tensor<8x16xf32>
  // CHECK: braid.mul %{{.*}}, %{{.*}} : tensor<8x16xf32>
  %7 = braid.mul %a, %x : tensor<8x16xf32>
  // CHECK: braid.div %{{.*}}, %{{.*}} : tensor<8x16xf32>
  %8 = braid.div %a, %x : tensor<8x16xf32>
  // CHECK: braid.scale %{{.*}} by 1.250000e-01 : tensor<8x16xf32>
  %9 = braid.scale %a by 0.125 : tensor<8x16xf32>
  // CHECK: braid.bias_add %{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<16xf32>
  %10 = braid.bias_add %a, %bias : tensor<8x16xf32>, tensor<16xf32>
  // CHECK: braid.cast %{{.*}} : tensor<8x16xf32> -> tensor<8x16xbf16>
  %11 = braid.cast %a : tensor<8x16xf32> -> tensor<8x16xbf16>
  // CHECK: braid.add %{{.*}}, %{{.*}} : tensor<8x16xbf16>
  %12 = braid.add %h, %11 : tensor<8x16xbf16>
  // CHECK: braid.reduce_sum %{{.*}} dims = [0] : tensor<8x16xf32> -> tensor<16xf32>
  %13 = braid.reduce_sum %a dims = [0] : tensor<8x16xf32> -> tensor<16xf32>
  // CHECK: braid.reduce_mean %{{.*}} dims = [1] {keep_dims} : tensor<8x16xf32> -> tensor<8x1xf32>
  %14 = braid.reduce_mean %a dims = [1] {keep_dims} : tensor<8x16xf32> -> tensor<8x1xf32>
  // CHECK: braid.reduce_sum %{{.*}} dims = [0, 1] : tensor<8x16xf32> -> tensor<f32>
  %15 = braid.reduce_sum %a dims = [0, 1] : tensor<8x16xf32> -> tensor<f32>
  return
}

// CHECK-LABEL: func.func @activations
func.func @activations(%x: tensor<8x16xf32>, %dy: tensor<8x16xf32>,
                       %s: tensor<2x8x8xf32>) {
  // CHECK: braid.relu %{{.*}} : tensor<8x16xf32>
  %0 = braid.relu %x : tensor<8x16xf32>
  // CHECK: braid.relu_backward %{{.*}}, %{{.*}} : tensor<8x16xf32>
  %1 = braid.relu_backward %dy, %0 : tensor<8x16xf32>
  // CHECK: braid.gelu %{{.*}} : tensor<8x16xf32>
  %2 = braid.gelu %x : tensor<8x16xf32>
  // CHECK: braid.gelu %{{.*}} {approximate_tanh} : tensor<8x16xf32>
  %3 = braid.gelu %x {approximate_tanh} : tensor<8x16xf32>
  // CHECK: braid.gelu_backward %{{.*}}, %{{.*}} {approximate_tanh} : tensor<8x16xf32>
  %4 = braid.gelu_backward %dy, %x {approximate_tanh} : tensor<8x16xf32>
  // CHECK: braid.softmax %{{.*}} dim = 1 : tensor<8x16xf32>
  %5 = braid.softmax %x dim = 1 : tensor<8x16xf32>
  // CHECK: braid.softmax_backward %{{.*}}, %{{.*}} dim = 1 : tensor<8x16xf32>
  %6 = braid.softmax_backward %dy, %5 dim = 1 : tensor<8x16xf32>
  // CHECK: braid.log_softmax %{{.*}} dim = 0 : tensor<8x16xf32>
  %7 = braid.log_softmax %x dim = 0 : tensor<8x16xf32>
  // CHECK: braid.log_softmax_backward %{{.*}}, %{{.*}} dim = 0 : tensor<8x16xf32>
  %8 = braid.log_softmax_backward %dy, %7 dim = 0 : tensor<8x16xf32>
  // CHECK: braid.causal_mask %{{.*}} fill = -1.000000e+09 : tensor<2x8x8xf32>
  %9 = braid.causal_mask %s fill = -1.0e9 : tensor<2x8x8xf32>
  return
}

// CHECK-LABEL: func.func @norms_and_losses
func.func @norms_and_losses(%x: tensor<4x8x16xf32>, %g: tensor<16xf32>,
                            %b: tensor<16xf32>, %logits: tensor<32x10xf32>,
                            %labels: tensor<32xi64>, %labels32: tensor<32xi32>) {
  // CHECK: braid.layer_norm %{{.*}}, %{{.*}}, %{{.*}} eps = 1.000000e-05 : tensor<4x8x16xf32>, tensor<16xf32> -> tensor<4x8xf32>
  %y, %mean, %rstd = braid.layer_norm %x, %g, %b eps = 1.0e-5 : tensor<4x8x16xf32>, tensor<16xf32> -> tensor<4x8xf32>
  // CHECK: braid.layer_norm_backward %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<16xf32>
  %dx, %dg, %db = braid.layer_norm_backward %y, %x, %mean, %rstd, %g : tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<16xf32>
  // CHECK: braid.nll_loss %{{.*}}, %{{.*}} reduction = mean : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
  %l0 = braid.nll_loss %logits, %labels reduction = mean : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
  // CHECK: braid.nll_loss_backward %{{.*}}, %{{.*}}, %{{.*}} reduction = sum : tensor<f32>, tensor<32x10xf32>, tensor<32xi64>
  %d0 = braid.nll_loss_backward %l0, %logits, %labels reduction = sum : tensor<f32>, tensor<32x10xf32>, tensor<32xi64>
  // CHECK: braid.cross_entropy %{{.*}}, %{{.*}} reduction = mean : tensor<32x10xf32>, tensor<32xi32> -> tensor<f32>
  %l1 = braid.cross_entropy %logits, %labels32 reduction = mean : tensor<32x10xf32>, tensor<32xi32> -> tensor<f32>
  // CHECK: braid.cross_entropy_backward %{{.*}}, %{{.*}}, %{{.*}} reduction = mean : tensor<f32>, tensor<32x10xf32>, tensor<32xi32>
  %d1 = braid.cross_entropy_backward %l1, %logits, %labels32 reduction = mean : tensor<f32>, tensor<32x10xf32>, tensor<32xi32>
  return
}

// CHECK-LABEL: func.func @data_movement
func.func @data_movement(%table: tensor<100x16xf32>, %ids: tensor<4x8xi64>,
                         %x: tensor<4x8x16xf32>, %v: tensor<16xf32>) {
  // CHECK: braid.embedding %{{.*}}, %{{.*}} : tensor<100x16xf32>, tensor<4x8xi64> -> tensor<4x8x16xf32>
  %0 = braid.embedding %table, %ids : tensor<100x16xf32>, tensor<4x8xi64> -> tensor<4x8x16xf32>
  // CHECK: braid.embedding_backward %{{.*}}, %{{.*}} : tensor<4x8x16xf32>, tensor<4x8xi64> -> tensor<100x16xf32>
  %1 = braid.embedding_backward %x, %ids : tensor<4x8x16xf32>, tensor<4x8xi64> -> tensor<100x16xf32>
  // CHECK: braid.reshape %{{.*}} : tensor<4x8x16xf32> -> tensor<32x16xf32>
  %2 = braid.reshape %x : tensor<4x8x16xf32> -> tensor<32x16xf32>
  // CHECK: braid.transpose %{{.*}} permutation = [1, 0, 2] : tensor<4x8x16xf32> -> tensor<8x4x16xf32>
  %3 = braid.transpose %x permutation = [1, 0, 2] : tensor<4x8x16xf32> -> tensor<8x4x16xf32>
  // CHECK: braid.broadcast %{{.*}} dims = [0, 1] : tensor<16xf32> -> tensor<4x8x16xf32>
  %4 = braid.broadcast %v dims = [0, 1] : tensor<16xf32> -> tensor<4x8x16xf32>
  // CHECK: braid.slice %{{.*}} offsets = [0, 0, 8] : tensor<4x8x16xf32> -> tensor<4x8x8xf32>
  %5 = braid.slice %x offsets = [0, 0, 8] : tensor<4x8x16xf32> -> tensor<4x8x8xf32>
  // CHECK: braid.slice %{{.*}} offsets = [0, 1, 0] strides = [1, 2, 1] : tensor<4x8x16xf32> -> tensor<4x4x16xf32>
  %6 = braid.slice %x offsets = [0, 1, 0] strides = [1, 2, 1] : tensor<4x8x16xf32> -> tensor<4x4x16xf32>
  // CHECK: braid.concat %{{.*}}, %{{.*}} dim = 2 : tensor<4x8x8xf32>, tensor<4x8x16xf32> -> tensor<4x8x24xf32>
  %7 = braid.concat %5, %x dim = 2 : tensor<4x8x8xf32>, tensor<4x8x16xf32> -> tensor<4x8x24xf32>
  // CHECK: braid.constant dense<1.000000e+00> : tensor<f32>
  %8 = braid.constant dense<1.0> : tensor<f32>
  // CHECK: braid.constant dense<[0, 1, 2]> : tensor<3xi64>
  %9 = braid.constant dense<[0, 1, 2]> : tensor<3xi64>
  // CHECK: braid.fill 0.000000e+00 : tensor<4x16xbf16>
  %10 = braid.fill 0.0 : tensor<4x16xbf16>
  return
}

// CHECK-LABEL: func.func @optimizers
func.func @optimizers(%p: tensor<16x16xf32>, %g: tensor<16x16xf32>,
                      %m: tensor<16x16xf32>, %v: tensor<16x16xf32>,
                      %step: tensor<f32>) {
  // CHECK: braid.sgd %{{.*}}, %{{.*}}, %{{.*}} lr = 1.000000e-02 momentum = 9.000000e-01 weight_decay = 0.000000e+00 : tensor<16x16xf32>
  %0:2 = braid.sgd %p, %g, %m lr = 0.01 momentum = 0.9 weight_decay = 0.0 : tensor<16x16xf32>
  // CHECK: braid.sgd {{.*}} weight_decay = 1.000000e-04 {nesterov} : tensor<16x16xf32>
  %1:2 = braid.sgd %p, %g, %m lr = 0.01 momentum = 0.9 weight_decay = 1.0e-4 {nesterov} : tensor<16x16xf32>
  // CHECK: braid.adamw %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} lr = 3.000000e-04 beta1 = 9.000000e-01 beta2 = 0.99899999999999999 eps = 1.000000e-08 weight_decay = 1.000000e-01 : tensor<16x16xf32>, tensor<f32>
  %2:3 = braid.adamw %p, %g, %m, %v, %step lr = 3.0e-4 beta1 = 0.9 beta2 = 0.999 eps = 1.0e-8 weight_decay = 0.1 : tensor<16x16xf32>, tensor<f32>
  return
}

// CHECK-LABEL: func.func @collectives
func.func @collectives(%w: tensor<16x8xf32> {braid.role = #braid.role<parameter "w">},
                       %b: tensor<8xf32> {braid.role = #braid.role<parameter "b">},
                       %x: tensor<8x16xf32>, %i: tensor<8xi32>) {
  // CHECK: braid.all_reduce %{{.*}} on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<16x8xf32>
  %0 = braid.all_reduce %w on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<16x8xf32>
  // CHECK: braid.all_reduce %{{.*}}, %{{.*}} on @world grid_axes = [0, 1] reduction = sum grad_of = ["w", "b"] {bucket_bytes = 544 : i64, bucket_index = 0 : i64} : tensor<16x8xf32>, tensor<8xf32>
  %1:2 = braid.all_reduce %w, %b on @world grid_axes = [0, 1] reduction = sum grad_of = ["w", "b"] {bucket_index = 0, bucket_bytes = 544} : tensor<16x8xf32>, tensor<8xf32>
  // CHECK: braid.all_reduce %{{.*}} on @world grid_axes = [1] reduction = max : tensor<8xi32>
  %2 = braid.all_reduce %i on @world grid_axes = [1] reduction = max : tensor<8xi32>
  // CHECK: braid.all_reduce %{{.*}} on @world grid_axes = [1] reduction = min : tensor<8xi32>
  %3 = braid.all_reduce %i on @world grid_axes = [1] reduction = min : tensor<8xi32>
  // CHECK: braid.reduce_scatter %{{.*}} on @world grid_axes = [0] reduction = sum scatter_dim = 0 : tensor<8x16xf32> -> tensor<2x16xf32>
  %4 = braid.reduce_scatter %x on @world grid_axes = [0] reduction = sum scatter_dim = 0 : tensor<8x16xf32> -> tensor<2x16xf32>
  // CHECK: braid.all_gather %{{.*}} on @world grid_axes = [1] gather_dim = 1 : tensor<8x16xf32> -> tensor<8x32xf32>
  %5 = braid.all_gather %x on @world grid_axes = [1] gather_dim = 1 : tensor<8x16xf32> -> tensor<8x32xf32>
  // CHECK: braid.all_to_all %{{.*}} on @world grid_axes = [0] split_dim = 0 concat_dim = 1 : tensor<8x16xf32> -> tensor<2x64xf32>
  %6 = braid.all_to_all %x on @world grid_axes = [0] split_dim = 0 concat_dim = 1 : tensor<8x16xf32> -> tensor<2x64xf32>
  // CHECK: braid.collective_broadcast %{{.*}} on @world grid_axes = [0] root = 3 : tensor<8x16xf32> -> tensor<8x16xf32>
  %7 = braid.collective_broadcast %x on @world grid_axes = [0] root = 3 : tensor<8x16xf32> -> tensor<8x16xf32>
  // CHECK: braid.collective_permute %{{.*}} on @world grid_axes = [1] offset = -1 : tensor<8x16xf32> -> tensor<8x16xf32>
  %perm = braid.collective_permute %x on @world grid_axes = [1] offset = -1 : tensor<8x16xf32> -> tensor<8x16xf32>
  // CHECK: braid.reduce_scatter %{{.*}} scatter_dim = 0 grad_of = ["w"] : tensor<16x8xf32> -> tensor<4x8xf32>
  %rsg = braid.reduce_scatter %w on @world grid_axes = [0] reduction = avg scatter_dim = 0 grad_of = ["w"] : tensor<16x8xf32> -> tensor<4x8xf32>
  // CHECK: braid.send %{{.*}} on @world grid_axes = [1] peer = 1 : tensor<8x16xf32>
  braid.send %x on @world grid_axes = [1] peer = 1 : tensor<8x16xf32>
  // CHECK: braid.recv on @world grid_axes = [1] peer = 0 : tensor<8x16xf32>
  %8 = braid.recv on @world grid_axes = [1] peer = 0 : tensor<8x16xf32>
  return
}

// CHECK-LABEL: func.func @async_collectives
func.func @async_collectives(%w: tensor<16x8xf32> {braid.role = #braid.role<parameter "w">},
                             %x: tensor<8x16xf32>) {
  // CHECK: %[[F:.*]] = braid.all_reduce_start %{{.*}}, %{{.*}} on @world grid_axes = [0] reduction = avg grad_of = ["w", "w"] : tensor<16x8xf32>, tensor<16x8xf32>
  %f0 = braid.all_reduce_start %w, %w on @world grid_axes = [0] reduction = avg grad_of = ["w", "w"] : tensor<16x8xf32>, tensor<16x8xf32>
  // CHECK: braid.wait %[[F]] : !braid.future<tensor<16x8xf32>, tensor<16x8xf32>>
  %r0:2 = braid.wait %f0 : !braid.future<tensor<16x8xf32>, tensor<16x8xf32>>
  // CHECK: braid.reduce_scatter_start %{{.*}} scatter_dim = 1 : tensor<8x16xf32> -> !braid.future<tensor<8x4xf32>>
  %f1 = braid.reduce_scatter_start %x on @world grid_axes = [0] reduction = sum scatter_dim = 1 : tensor<8x16xf32> -> !braid.future<tensor<8x4xf32>>
  %r1 = braid.wait %f1 : !braid.future<tensor<8x4xf32>>
  // CHECK: braid.all_gather_start %{{.*}} gather_dim = 0 : tensor<8x16xf32> -> !braid.future<tensor<64x16xf32>>
  %f2 = braid.all_gather_start %x on @world grid_axes = [0, 1] gather_dim = 0 : tensor<8x16xf32> -> !braid.future<tensor<64x16xf32>>
  %r2 = braid.wait %f2 : !braid.future<tensor<64x16xf32>>
  // CHECK: braid.all_to_all_start %{{.*}} split_dim = 1 concat_dim = 1 : tensor<8x16xf32> -> !braid.future<tensor<8x16xf32>>
  %f3 = braid.all_to_all_start %x on @world grid_axes = [1] split_dim = 1 concat_dim = 1 : tensor<8x16xf32> -> !braid.future<tensor<8x16xf32>>
  %r3 = braid.wait %f3 : !braid.future<tensor<8x16xf32>>
  // CHECK: braid.collective_broadcast_start %{{.*}} root = 0 : tensor<8x16xf32> -> !braid.future<tensor<8x16xf32>>
  %f4 = braid.collective_broadcast_start %x on @world grid_axes = [0] root = 0 : tensor<8x16xf32> -> !braid.future<tensor<8x16xf32>>
  %r4 = braid.wait %f4 : !braid.future<tensor<8x16xf32>>
  // CHECK: braid.collective_permute_start %{{.*}} offset = 1 : tensor<8x16xf32> -> !braid.future<tensor<8x16xf32>>
  %f7 = braid.collective_permute_start %x on @world grid_axes = [0, 1] offset = 1 : tensor<8x16xf32> -> !braid.future<tensor<8x16xf32>>
  %r7 = braid.wait %f7 : !braid.future<tensor<8x16xf32>>
  // CHECK: %[[S:.*]] = braid.send_start %{{.*}} peer = 1 : tensor<8x16xf32> -> !braid.future<>
  %f5 = braid.send_start %x on @world grid_axes = [1] peer = 1 : tensor<8x16xf32> -> !braid.future<>
  // CHECK: braid.wait %[[S]] : !braid.future<>
  braid.wait %f5 : !braid.future<>
  // CHECK: braid.recv_start on @world grid_axes = [1] peer = 0 : !braid.future<tensor<8x16xf32>>
  %f6 = braid.recv_start on @world grid_axes = [1] peer = 0 : !braid.future<tensor<8x16xf32>>
  %r6 = braid.wait %f6 : !braid.future<tensor<8x16xf32>>
  return
}

// CHECK-LABEL: func.func @streams
func.func @streams(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // CHECK: braid.relu %{{.*}} {braid.stream = #braid.stream<compute, 0>}
  %0 = braid.relu %x {braid.stream = #braid.stream<compute, 0>} : tensor<8x16xf32>
  // CHECK: %[[E:.*]] = braid.record_event {braid.stream = #braid.stream<compute, 0>}
  %e = braid.record_event {braid.stream = #braid.stream<compute, 0>}
  // CHECK: braid.wait_event %[[E]] {braid.stream = #braid.stream<comm, 1>}
  braid.wait_event %e {braid.stream = #braid.stream<comm, 1>}
  // CHECK: braid.all_reduce {{.*}} {braid.stream = #braid.stream<comm, 1>}
  %1 = braid.all_reduce %0 on @world grid_axes = [0] reduction = sum {braid.stream = #braid.stream<comm, 1>} : tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @roles
// CHECK-SAME: {braid.role = #braid.role<parameter "w">}
// CHECK-SAME: {braid.role = #braid.role<optimizer_state "w.momentum">}
// CHECK-SAME: {braid.role = #braid.role<batch "x">}
// CHECK-SAME: -> (tensor<4x4xf32> {braid.role = #braid.role<parameter "w">}, tensor<4x4xf32> {braid.role = #braid.role<optimizer_state "w.momentum">}, tensor<f32> {braid.role = #braid.role<loss "loss">})
func.func @roles(%w: tensor<4x4xf32> {braid.role = #braid.role<parameter "w">},
                 %m: tensor<4x4xf32> {braid.role = #braid.role<optimizer_state "w.momentum">},
                 %x: tensor<4x4xf32> {braid.role = #braid.role<batch "x">},
                 %l: tensor<f32>)
    -> (tensor<4x4xf32> {braid.role = #braid.role<parameter "w">},
        tensor<4x4xf32> {braid.role = #braid.role<optimizer_state "w.momentum">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  return %w, %m, %l : tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>
}
