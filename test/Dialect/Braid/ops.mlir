// RUN: braid-opt %s | braid-opt | FileCheck %s
// RUN: braid-opt %s --mlir-print-op-generic | braid-opt | FileCheck %s
//
// Every op's custom form round-trips, generic form included. Operands are
// matched by name (captured from the function's signature and from the op
// that defines them), so a printer or parser that drops, swaps or repeats
// an operand fails here.

shard.grid @world(shape = 4x2)

// CHECK-LABEL: func.func @compute
// CHECK-SAME: %[[V_A:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_B:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_BT:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_X:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_BIAS:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_H:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_Q:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_K:[a-z0-9_]+]]:
func.func @compute(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>,
                   %bt: tensor<32x16xf32>, %x: tensor<8x16xf32>,
                   %bias: tensor<16xf32>, %h: tensor<8x16xbf16>,
                   %q: tensor<2x4x8x8xf32>, %k: tensor<2x4x8x8xf32>) {
  // CHECK: %[[V_0:[a-z0-9_]+]] = braid.matmul %[[V_A]], %[[V_B]] : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %0 = braid.matmul %a, %b : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  // CHECK: %[[V_1:[a-z0-9_]+]] = braid.matmul %[[V_A]], %[[V_BT]] {transpose_b} : tensor<8x16xf32>, tensor<32x16xf32> -> tensor<8x32xf32>
  %1 = braid.matmul %a, %bt {transpose_b} : tensor<8x16xf32>, tensor<32x16xf32> -> tensor<8x32xf32>
  // CHECK: %[[V_2:[a-z0-9_]+]] = braid.matmul %[[V_A]], %[[V_X]] {transpose_a} : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<16x16xf32>
  %2 = braid.matmul %a, %x {transpose_a} : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<16x16xf32>
  // CHECK: braid.matmul %[[V_Q]], %[[V_K]] {lhs_permutation = array<i64: 0, 2, 1, 3>, result_permutation = array<i64: 0, 2, 1, 3>, rhs_permutation = array<i64: 0, 2, 3, 1>} : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x4xf32>
  %perm = braid.matmul %q, %k {lhs_permutation = array<i64: 0, 2, 1, 3>, rhs_permutation = array<i64: 0, 2, 3, 1>, result_permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x4xf32>
  // CHECK: %[[V_3:[a-z0-9_]+]] = braid.matmul %[[V_Q]], %[[V_K]] {transpose_b} : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %3 = braid.matmul %q, %k {transpose_b} : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  // CHECK: %[[V_4:[a-z0-9_]+]] = braid.matmul %[[V_Q]], %[[V_A]] : tensor<2x4x8x8xf32>, tensor<8x16xf32> -> tensor<2x4x8x16xf32>
  %4 = braid.matmul %q, %a : tensor<2x4x8x8xf32>, tensor<8x16xf32> -> tensor<2x4x8x16xf32>
  // CHECK: %[[V_5:[a-z0-9_]+]] = braid.add %[[V_A]], %[[V_X]] : tensor<8x16xf32>
  %5 = braid.add %a, %x : tensor<8x16xf32>
  // CHECK: %[[V_6:[a-z0-9_]+]] = braid.sub %[[V_A]], %[[V_X]] : tensor<8x16xf32>
  %6 = braid.sub %a, %x : tensor<8x16xf32>
  // CHECK: %[[V_7:[a-z0-9_]+]] = braid.mul %[[V_A]], %[[V_X]] : tensor<8x16xf32>
  %7 = braid.mul %a, %x : tensor<8x16xf32>
  // CHECK: %[[V_8:[a-z0-9_]+]] = braid.div %[[V_A]], %[[V_X]] : tensor<8x16xf32>
  %8 = braid.div %a, %x : tensor<8x16xf32>
  // CHECK: %[[V_9:[a-z0-9_]+]] = braid.scale %[[V_A]] by 1.250000e-01 : tensor<8x16xf32>
  %9 = braid.scale %a by 0.125 : tensor<8x16xf32>
  // CHECK: %[[V_10:[a-z0-9_]+]] = braid.bias_add %[[V_A]], %[[V_BIAS]] : tensor<8x16xf32>, tensor<16xf32>
  %10 = braid.bias_add %a, %bias : tensor<8x16xf32>, tensor<16xf32>
  // CHECK: braid.bias_add %[[V_4]], %[[V_A]] : tensor<2x4x8x16xf32>, tensor<8x16xf32>
  %pos = braid.bias_add %4, %a : tensor<2x4x8x16xf32>, tensor<8x16xf32>
  // CHECK: %[[V_11:[a-z0-9_]+]] = braid.cast %[[V_A]] : tensor<8x16xf32> -> tensor<8x16xbf16>
  %11 = braid.cast %a : tensor<8x16xf32> -> tensor<8x16xbf16>
  // CHECK: %[[V_12:[a-z0-9_]+]] = braid.add %[[V_H]], %[[V_11]] : tensor<8x16xbf16>
  %12 = braid.add %h, %11 : tensor<8x16xbf16>
  // CHECK: %[[V_13:[a-z0-9_]+]] = braid.reduce_sum %[[V_A]] dims = [0] : tensor<8x16xf32> -> tensor<16xf32>
  %13 = braid.reduce_sum %a dims = [0] : tensor<8x16xf32> -> tensor<16xf32>
  // CHECK: %[[V_14:[a-z0-9_]+]] = braid.reduce_mean %[[V_A]] dims = [1] {keep_dims} : tensor<8x16xf32> -> tensor<8x1xf32>
  %14 = braid.reduce_mean %a dims = [1] {keep_dims} : tensor<8x16xf32> -> tensor<8x1xf32>
  // CHECK: %[[V_15:[a-z0-9_]+]] = braid.reduce_sum %[[V_A]] dims = [0, 1] : tensor<8x16xf32> -> tensor<f32>
  %15 = braid.reduce_sum %a dims = [0, 1] : tensor<8x16xf32> -> tensor<f32>
  return
}

// CHECK-LABEL: func.func @functions
// CHECK-SAME: %[[V_X:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_DY:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_M:[a-z0-9_]+]]:
func.func @functions(%x: tensor<8x16xf32>, %dy: tensor<8x16xbf16>,
                     %m: tensor<8x16xi1>) {
  // CHECK: %[[V_0:[a-z0-9_]+]] = braid.unary exp %[[V_X]] : tensor<8x16xf32>
  %0 = braid.unary exp %x : tensor<8x16xf32>
  // CHECK: braid.unary log %[[V_X]] : tensor<8x16xf32>
  %1 = braid.unary log %x : tensor<8x16xf32>
  // CHECK: braid.unary sqrt %[[V_X]] : tensor<8x16xf32>
  %2 = braid.unary sqrt %x : tensor<8x16xf32>
  // CHECK: braid.unary rsqrt %[[V_X]] : tensor<8x16xf32>
  %3 = braid.unary rsqrt %x : tensor<8x16xf32>
  // CHECK: braid.unary tanh %[[V_X]] : tensor<8x16xf32>
  %4 = braid.unary tanh %x : tensor<8x16xf32>
  // CHECK: %[[V_5:[a-z0-9_]+]] = braid.unary sigmoid %[[V_DY]] : tensor<8x16xbf16>
  %5 = braid.unary sigmoid %dy : tensor<8x16xbf16>
  // CHECK: braid.unary silu %[[V_X]] : tensor<8x16xf32>
  %6 = braid.unary silu %x : tensor<8x16xf32>
  // CHECK: braid.unary_backward sigmoid %[[V_DY]], %[[V_5]] : tensor<8x16xbf16>
  %7 = braid.unary_backward sigmoid %dy, %5 : tensor<8x16xbf16>
  // CHECK: braid.unary_backward silu %[[V_0]], %[[V_X]] : tensor<8x16xf32>
  %8 = braid.unary_backward silu %0, %x : tensor<8x16xf32>
  // CHECK: %[[V_9:[a-z0-9_]+]] = braid.pow %[[V_X]] exponent = -1.500000e+00 : tensor<8x16xf32>
  %9 = braid.pow %x exponent = -1.5 : tensor<8x16xf32>
  // CHECK: braid.where %[[V_M]], %[[V_9]], %[[V_X]] : tensor<8x16xi1>, tensor<8x16xf32>
  %10 = braid.where %m, %9, %x : tensor<8x16xi1>, tensor<8x16xf32>
  %step = braid.constant dense<3.0> : tensor<f32>
  %rank = braid.axis_index on @world grid_axes = [0] : tensor<i64>
  // CHECK: braid.dropout_mask %{{.*}}, %{{.*}} keep = 9.000000e-01 seed = 7 stream = 2 : tensor<8x16xi1>
  %11 = braid.dropout_mask %step, %rank keep = 0.9 seed = 7 stream = 2 : tensor<8x16xi1>
  return
}

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<2x4x8x16xbf16>, %k: tensor<2x2x8x16xbf16>,
                     %v: tensor<2x2x8x16xbf16>, %do: tensor<2x4x8x16xbf16>) {
  // CHECK: %[[O:[a-z0-9_]+]], %[[L:[a-z0-9_]+]] = braid.attention %{{.*}}, %{{.*}}, %{{.*}} {causal} scale = 2.500000e-01 : tensor<2x4x8x16xbf16>, tensor<2x2x8x16xbf16>, tensor<2x2x8x16xbf16> -> tensor<2x4x8x16xbf16>, tensor<2x4x8xf32>
  %o, %l = braid.attention %q, %k, %v {causal} scale = 0.25 : tensor<2x4x8x16xbf16>, tensor<2x2x8x16xbf16>, tensor<2x2x8x16xbf16> -> tensor<2x4x8x16xbf16>, tensor<2x4x8xf32>
  // CHECK: braid.attention_backward %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[O]], %[[L]] {causal} scale = 2.500000e-01 : tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x2x8x16xbf16>, tensor<2x2x8x16xbf16>, tensor<2x4x8xf32>
  %dq, %dk, %dv = braid.attention_backward %do, %q, %k, %v, %o, %l {causal} scale = 0.25 : tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x2x8x16xbf16>, tensor<2x2x8x16xbf16>, tensor<2x4x8xf32>
  return
}

// CHECK-LABEL: func.func @activations
// CHECK-SAME: %[[V_X:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_DY:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_S:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_B:[a-z0-9_]+]]:
func.func @activations(%x: tensor<8x16xf32>, %dy: tensor<8x16xf32>,
                       %s: tensor<2x8x8xf32>, %bias16: tensor<16xf32>) {
  // CHECK: %[[V_0:[a-z0-9_]+]] = braid.relu %[[V_X]] : tensor<8x16xf32>
  %0 = braid.relu %x : tensor<8x16xf32>
  // CHECK: %[[V_1:[a-z0-9_]+]] = braid.relu_backward %[[V_DY]], %[[V_0]] : tensor<8x16xf32>
  %1 = braid.relu_backward %dy, %0 : tensor<8x16xf32>
  // CHECK: %[[V_2:[a-z0-9_]+]] = braid.gelu %[[V_X]] : tensor<8x16xf32>
  %2 = braid.gelu %x : tensor<8x16xf32>
  // CHECK: %[[V_3:[a-z0-9_]+]] = braid.gelu %[[V_X]] {approximate_tanh} : tensor<8x16xf32>
  %3 = braid.gelu %x {approximate_tanh} : tensor<8x16xf32>
  // CHECK: %[[V_4:[a-z0-9_]+]] = braid.gelu_backward %[[V_DY]], %[[V_X]] {approximate_tanh} : tensor<8x16xf32>
  %4 = braid.gelu_backward %dy, %x {approximate_tanh} : tensor<8x16xf32>
  // CHECK: braid.gelu %[[V_X]], %[[V_B]] {approximate_tanh} : tensor<8x16xf32>, tensor<16xf32>
  %g = braid.gelu %x, %bias16 {approximate_tanh} : tensor<8x16xf32>, tensor<16xf32>
  // CHECK: braid.gelu_backward %[[V_DY]], %[[V_X]], %[[V_B]] : tensor<8x16xf32>, tensor<16xf32>
  %dg = braid.gelu_backward %dy, %x, %bias16 : tensor<8x16xf32>, tensor<16xf32>
  // CHECK: %[[V_5:[a-z0-9_]+]] = braid.softmax %[[V_X]] dim = 1 : tensor<8x16xf32>
  %5 = braid.softmax %x dim = 1 : tensor<8x16xf32>
  // CHECK: %[[V_6:[a-z0-9_]+]] = braid.softmax_backward %[[V_DY]], %[[V_5]] dim = 1 : tensor<8x16xf32>
  %6 = braid.softmax_backward %dy, %5 dim = 1 : tensor<8x16xf32>
  // CHECK: %[[V_7:[a-z0-9_]+]] = braid.log_softmax %[[V_X]] dim = 0 : tensor<8x16xf32>
  %7 = braid.log_softmax %x dim = 0 : tensor<8x16xf32>
  // CHECK: %[[V_8:[a-z0-9_]+]] = braid.log_softmax_backward %[[V_DY]], %[[V_7]] dim = 0 : tensor<8x16xf32>
  %8 = braid.log_softmax_backward %dy, %7 dim = 0 : tensor<8x16xf32>
  // CHECK: %[[V_9:[a-z0-9_]+]] = braid.causal_mask %[[V_S]] fill = -1.000000e+09 : tensor<2x8x8xf32>
  %9 = braid.causal_mask %s fill = -1.0e9 : tensor<2x8x8xf32>
  // CHECK: %[[V_10:[a-z0-9_]+]] = braid.softmax %[[V_S]] dim = 2 {causal, scale = 1.250000e-01 : f64} : tensor<2x8x8xf32>
  %10 = braid.softmax %s dim = 2 {causal, scale = 0.125} : tensor<2x8x8xf32>
  // CHECK: %[[V_11:[a-z0-9_]+]] = braid.softmax_backward %[[V_S]], %[[V_10]] dim = 2 {causal, scale = 1.250000e-01 : f64} : tensor<2x8x8xf32>
  %11 = braid.softmax_backward %s, %10 dim = 2 {causal, scale = 0.125} : tensor<2x8x8xf32>
  return
}

// CHECK-LABEL: func.func @norms_and_losses
// CHECK-SAME: %[[V_X:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_G:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_B:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_LOGITS:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_LABELS:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_LABELS32:[a-z0-9_]+]]:
func.func @norms_and_losses(%x: tensor<4x8x16xf32>, %g: tensor<16xf32>,
                            %b: tensor<16xf32>, %logits: tensor<32x10xf32>,
                            %labels: tensor<32xi64>, %labels32: tensor<32xi32>) {
  // CHECK: %[[V_Y:[a-z0-9_]+]], %[[V_MEAN:[a-z0-9_]+]], %[[V_RSTD:[a-z0-9_]+]] = braid.layer_norm %[[V_X]], %[[V_G]], %[[V_B]] eps = 1.000000e-05 : tensor<4x8x16xf32>, tensor<16xf32> -> tensor<4x8xf32>
  %y, %mean, %rstd = braid.layer_norm %x, %g, %b eps = 1.0e-5 : tensor<4x8x16xf32>, tensor<16xf32> -> tensor<4x8xf32>
  // CHECK: braid.layer_norm_backward %[[V_Y]], %[[V_X]], %[[V_MEAN]], %[[V_RSTD]], %[[V_G]] : tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<16xf32>
  %dx, %dg, %db = braid.layer_norm_backward %y, %x, %mean, %rstd, %g : tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<16xf32>
  // CHECK: %[[V_L0:[a-z0-9_]+]] = braid.nll_loss %[[V_LOGITS]], %[[V_LABELS]] reduction = mean : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
  %l0 = braid.nll_loss %logits, %labels reduction = mean : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
  // CHECK: %[[V_D0:[a-z0-9_]+]] = braid.nll_loss_backward %[[V_L0]], %[[V_LOGITS]], %[[V_LABELS]] reduction = sum : tensor<f32>, tensor<32x10xf32>, tensor<32xi64>
  %d0 = braid.nll_loss_backward %l0, %logits, %labels reduction = sum : tensor<f32>, tensor<32x10xf32>, tensor<32xi64>
  // CHECK: %[[V_L1:[a-z0-9_]+]] = braid.cross_entropy %[[V_LOGITS]], %[[V_LABELS32]] reduction = mean : tensor<32x10xf32>, tensor<32xi32> -> tensor<f32>
  %l1 = braid.cross_entropy %logits, %labels32 reduction = mean : tensor<32x10xf32>, tensor<32xi32> -> tensor<f32>
  // CHECK: %[[V_D1:[a-z0-9_]+]] = braid.cross_entropy_backward %[[V_L1]], %[[V_LOGITS]], %[[V_LABELS32]] reduction = mean : tensor<f32>, tensor<32x10xf32>, tensor<32xi32>
  %d1 = braid.cross_entropy_backward %l1, %logits, %labels32 reduction = mean : tensor<f32>, tensor<32x10xf32>, tensor<32xi32>
  // CHECK: %[[V_IX:[a-z0-9_]+]] = braid.axis_index
  %ix = braid.axis_index on @world grid_axes = [0] : tensor<i64>
  // CHECK: %[[V_ST:[a-z0-9_]+]] = braid.cross_entropy_shard_stats %[[V_LOGITS]], %[[V_LABELS]], %[[V_IX]] parts = 2 : tensor<32x10xf32>, tensor<32xi64> -> tensor<1x32x3xf32>
  %st = braid.cross_entropy_shard_stats %logits, %labels, %ix parts = 2 : tensor<32x10xf32>, tensor<32xi64> -> tensor<1x32x3xf32>
  // CHECK: %[[V_L2:[a-z0-9_]+]] = braid.cross_entropy_shard_loss %[[V_ST]] reduction = sum : tensor<1x32x3xf32> -> tensor<f32>
  %l2 = braid.cross_entropy_shard_loss %st reduction = sum : tensor<1x32x3xf32> -> tensor<f32>
  // CHECK: braid.cross_entropy_shard_backward %[[V_L2]], %[[V_LOGITS]], %[[V_LABELS]], %[[V_ST]], %[[V_IX]] reduction = mean : tensor<f32>, tensor<32x10xf32>, tensor<32xi64>, tensor<1x32x3xf32>
  %d2 = braid.cross_entropy_shard_backward %l2, %logits, %labels, %st, %ix reduction = mean : tensor<f32>, tensor<32x10xf32>, tensor<32xi64>, tensor<1x32x3xf32>
  // torch's ignore_index, on every loss that reads labels.
  // CHECK: braid.nll_loss %[[V_LOGITS]], %[[V_LABELS]] reduction = mean ignore_index = -100 : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
  %l3 = braid.nll_loss %logits, %labels reduction = mean ignore_index = -100 : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
  // CHECK: braid.nll_loss_backward {{.*}} reduction = mean ignore_index = -1 : tensor<f32>, tensor<32x10xf32>, tensor<32xi64>
  %d3 = braid.nll_loss_backward %l3, %logits, %labels reduction = mean ignore_index = -1 : tensor<f32>, tensor<32x10xf32>, tensor<32xi64>
  // CHECK: braid.cross_entropy %[[V_LOGITS]], %[[V_LABELS32]] reduction = sum ignore_index = -1 : tensor<32x10xf32>, tensor<32xi32> -> tensor<f32>
  %l4 = braid.cross_entropy %logits, %labels32 reduction = sum ignore_index = -1 : tensor<32x10xf32>, tensor<32xi32> -> tensor<f32>
  // CHECK: braid.cross_entropy_backward {{.*}} reduction = mean ignore_index = -100 : tensor<f32>, tensor<32x10xf32>, tensor<32xi32>
  %d4 = braid.cross_entropy_backward %l4, %logits, %labels32 reduction = mean ignore_index = -100 : tensor<f32>, tensor<32x10xf32>, tensor<32xi32>
  // CHECK: braid.cross_entropy_shard_stats {{.*}} parts = 2 ignore_index = -100 : tensor<32x10xf32>, tensor<32xi64> -> tensor<1x32x3xf32>
  %st5 = braid.cross_entropy_shard_stats %logits, %labels, %ix parts = 2 ignore_index = -100 : tensor<32x10xf32>, tensor<32xi64> -> tensor<1x32x3xf32>
  // CHECK: braid.cross_entropy_shard_backward {{.*}} reduction = mean ignore_index = -100 : tensor<f32>, tensor<32x10xf32>, tensor<32xi64>, tensor<1x32x3xf32>
  %d5 = braid.cross_entropy_shard_backward %l2, %logits, %labels, %st5, %ix reduction = mean ignore_index = -100 : tensor<f32>, tensor<32x10xf32>, tensor<32xi64>, tensor<1x32x3xf32>
  return
}

// CHECK-LABEL: func.func @data_movement
// CHECK-SAME: %[[V_TABLE:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_IDS:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_X:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_V:[a-z0-9_]+]]:
func.func @data_movement(%table: tensor<100x16xf32>, %ids: tensor<4x8xi64>,
                         %x: tensor<4x8x16xf32>, %v: tensor<16xf32>) {
  // CHECK: %[[V_0:[a-z0-9_]+]] = braid.embedding %[[V_TABLE]], %[[V_IDS]] : tensor<100x16xf32>, tensor<4x8xi64> -> tensor<4x8x16xf32>
  %0 = braid.embedding %table, %ids : tensor<100x16xf32>, tensor<4x8xi64> -> tensor<4x8x16xf32>
  // CHECK: %[[V_1:[a-z0-9_]+]] = braid.embedding_backward %[[V_X]], %[[V_IDS]] : tensor<4x8x16xf32>, tensor<4x8xi64> -> tensor<100x16xf32>
  %1 = braid.embedding_backward %x, %ids : tensor<4x8x16xf32>, tensor<4x8xi64> -> tensor<100x16xf32>
  // CHECK: braid.embedding_backward %[[V_X]], %[[V_IDS]] padding_idx = 0 : tensor<4x8x16xf32>, tensor<4x8xi64> -> tensor<100x16xf32>
  %pad = braid.embedding_backward %x, %ids padding_idx = 0 : tensor<4x8x16xf32>, tensor<4x8xi64> -> tensor<100x16xf32>
  %ix = braid.axis_index on @world grid_axes = [0] : tensor<i64>
  // CHECK: braid.embedding_shard %[[V_TABLE]], %[[V_IDS]], %{{.*}} parts = 4 : tensor<100x16xf32>, tensor<4x8xi64> -> tensor<4x8x16xf32>
  %es = braid.embedding_shard %table, %ids, %ix parts = 4 : tensor<100x16xf32>, tensor<4x8xi64> -> tensor<4x8x16xf32>
  // CHECK: braid.embedding_shard_backward %[[V_X]], %[[V_IDS]], %{{.*}} parts = 4 : tensor<4x8x16xf32>, tensor<4x8xi64> -> tensor<100x16xf32>
  %esb = braid.embedding_shard_backward %x, %ids, %ix parts = 4 : tensor<4x8x16xf32>, tensor<4x8xi64> -> tensor<100x16xf32>
  // CHECK: braid.embedding_shard_backward %[[V_X]], %[[V_IDS]], %{{.*}} parts = 4 padding_idx = 399 : tensor<4x8x16xf32>, tensor<4x8xi64> -> tensor<100x16xf32>
  %esp = braid.embedding_shard_backward %x, %ids, %ix parts = 4 padding_idx = 399 : tensor<4x8x16xf32>, tensor<4x8xi64> -> tensor<100x16xf32>
  // CHECK: braid.shard_slice %[[V_X]], %{{.*}} dim = 1 parts = 2 : tensor<4x8x16xf32> -> tensor<4x4x16xf32>
  %ss = braid.shard_slice %x, %ix dim = 1 parts = 2 : tensor<4x8x16xf32> -> tensor<4x4x16xf32>
  // CHECK: braid.shard_slice %[[V_X]], %{{.*}} dim = 1 parts = 4 shift = -3 : tensor<4x8x16xf32> -> tensor<4x2x16xf32>
  %ssh = braid.shard_slice %x, %ix dim = 1 parts = 4 shift = -3 : tensor<4x8x16xf32> -> tensor<4x2x16xf32>
  // A shift of 0 is the default and not printed.
  // CHECK: braid.shard_slice %[[V_X]], %{{.*}} dim = 0 parts = 2 : tensor<4x8x16xf32> -> tensor<2x8x16xf32>
  %ss0 = braid.shard_slice %x, %ix dim = 0 parts = 2 shift = 0 : tensor<4x8x16xf32> -> tensor<2x8x16xf32>
  // CHECK: braid.shard_concat %[[V_X]], %{{.*}} at %{{.*}} dim = 1 shifts = [0, -1] : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<4x16x16xf32>
  %sc = braid.shard_concat %x, %x at %ix dim = 1 shifts = [0, -1] : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<4x16x16xf32>
  // CHECK: %[[V_2:[a-z0-9_]+]] = braid.reshape %[[V_X]] : tensor<4x8x16xf32> -> tensor<32x16xf32>
  %2 = braid.reshape %x : tensor<4x8x16xf32> -> tensor<32x16xf32>
  // CHECK: %[[V_3:[a-z0-9_]+]] = braid.transpose %[[V_X]] permutation = [1, 0, 2] : tensor<4x8x16xf32> -> tensor<8x4x16xf32>
  %3 = braid.transpose %x permutation = [1, 0, 2] : tensor<4x8x16xf32> -> tensor<8x4x16xf32>
  // CHECK: %[[V_4:[a-z0-9_]+]] = braid.broadcast %[[V_V]] dims = [0, 1] : tensor<16xf32> -> tensor<4x8x16xf32>
  %4 = braid.broadcast %v dims = [0, 1] : tensor<16xf32> -> tensor<4x8x16xf32>
  // CHECK: %[[V_5:[a-z0-9_]+]] = braid.slice %[[V_X]] offsets = [0, 0, 8] : tensor<4x8x16xf32> -> tensor<4x8x8xf32>
  %5 = braid.slice %x offsets = [0, 0, 8] : tensor<4x8x16xf32> -> tensor<4x8x8xf32>
  // CHECK: %[[V_6:[a-z0-9_]+]] = braid.slice %[[V_X]] offsets = [0, 1, 0] strides = [1, 2, 1] : tensor<4x8x16xf32> -> tensor<4x4x16xf32>
  %6 = braid.slice %x offsets = [0, 1, 0] strides = [1, 2, 1] : tensor<4x8x16xf32> -> tensor<4x4x16xf32>
  // CHECK: %[[V_7:[a-z0-9_]+]] = braid.concat %[[V_5]], %[[V_X]] dim = 2 : tensor<4x8x8xf32>, tensor<4x8x16xf32> -> tensor<4x8x24xf32>
  %7 = braid.concat %5, %x dim = 2 : tensor<4x8x8xf32>, tensor<4x8x16xf32> -> tensor<4x8x24xf32>
  // CHECK: %[[V_8:[a-z0-9_]+]] = braid.constant dense<1.000000e+00> : tensor<f32>
  %8 = braid.constant dense<1.0> : tensor<f32>
  // CHECK: %[[V_9:[a-z0-9_]+]] = braid.constant dense<[0, 1, 2]> : tensor<3xi64>
  %9 = braid.constant dense<[0, 1, 2]> : tensor<3xi64>
  // CHECK: %[[V_10:[a-z0-9_]+]] = braid.fill 0.000000e+00 : tensor<4x16xbf16>
  %10 = braid.fill 0.0 : tensor<4x16xbf16>
  return
}

// CHECK-LABEL: func.func @optimizers
// CHECK-SAME: %[[V_P:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_G:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_M:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_V:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_STEP:[a-z0-9_]+]]:
func.func @optimizers(%p: tensor<16x16xf32>, %g: tensor<16x16xf32>,
                      %m: tensor<16x16xf32>, %v: tensor<16x16xf32>,
                      %step: tensor<f32>) {
  // CHECK: braid.sgd %[[V_P]], %[[V_G]], %[[V_M]] lr = 1.000000e-02 momentum = 9.000000e-01 weight_decay = 0.000000e+00 : tensor<16x16xf32>
  %0:2 = braid.sgd %p, %g, %m lr = 0.01 momentum = 0.9 weight_decay = 0.0 : tensor<16x16xf32>
  // A rate of 0 (a frozen update) is valid, as in torch.optim (issue 18, item 17).
  // CHECK: braid.sgd {{.*}} lr = 0.000000e+00 momentum
  %z:2 = braid.sgd %p, %g, %m lr = 0.0 momentum = 0.9 weight_decay = 0.0 : tensor<16x16xf32>
  // CHECK: braid.sgd {{.*}} weight_decay = 1.000000e-04 {nesterov} : tensor<16x16xf32>
  %1:2 = braid.sgd %p, %g, %m lr = 0.01 momentum = 0.9 weight_decay = 1.0e-4 {nesterov} : tensor<16x16xf32>
  // CHECK: braid.adamw %[[V_P]], %[[V_G]], %[[V_M]], %[[V_V]], %[[V_STEP]] lr = 3.000000e-04 beta1 = 9.000000e-01 beta2 = 0.99899999999999999 eps = 1.000000e-08 weight_decay = 1.000000e-01 : tensor<16x16xf32>, tensor<f32>
  %2:3 = braid.adamw %p, %g, %m, %v, %step lr = 3.0e-4 beta1 = 0.9 beta2 = 0.999 eps = 1.0e-8 weight_decay = 0.1 : tensor<16x16xf32>, tensor<f32>
  // CHECK: braid.lion %[[V_P]], %[[V_G]], %[[V_M]] lr = 1.000000e-04 beta1 = 9.000000e-01 beta2 = 0.98999999999999999 weight_decay = 1.000000e+00 : tensor<16x16xf32>
  %3:2 = braid.lion %p, %g, %m lr = 1.0e-4 beta1 = 0.9 beta2 = 0.99 weight_decay = 1.0 : tensor<16x16xf32>
  return
}

// Gradient clipping: squared norms, the factor, the scaled gradients.
// CHECK-LABEL: func.func @clipping
// CHECK: %[[S:.*]] = braid.sum_squares %arg0, %arg1 : tensor<16x16xf32>, tensor<16xf32> -> tensor<f32>
// CHECK: %[[C:.*]] = braid.clip_coefficient %[[S]] max_norm = 1.000000e+00 : tensor<f32>
// CHECK: braid.sgd %arg0, %arg0, %arg0 lr = 1.000000e-01 grad_scale = %[[C]] momentum = 9.000000e-01 weight_decay = 0.000000e+00 : tensor<16x16xf32>
func.func @clipping(%g: tensor<16x16xf32>, %b: tensor<16xf32>) -> tensor<16x16xf32> {
  %s = braid.sum_squares %g, %b : tensor<16x16xf32>, tensor<16xf32> -> tensor<f32>
  %c = braid.clip_coefficient %s max_norm = 1.0 : tensor<f32>
  %r:2 = braid.sgd %g, %g, %g lr = 0.1 grad_scale = %c momentum = 0.9 weight_decay = 0.0 : tensor<16x16xf32>
  return %r#0 : tensor<16x16xf32>
}

// A scheduled learning rate: a hyperparameter argument, an operand of the
// updates instead of their lr attribute.
// CHECK-LABEL: func.func @scheduled_lr
// CHECK-SAME: %[[V_LR:[a-z0-9_]+]]: tensor<f32> {braid.role = #braid.role<hyperparameter "lr">}
func.func @scheduled_lr(%lr: tensor<f32> {braid.role = #braid.role<hyperparameter "lr">},
                        %p: tensor<16x16xf32>, %g: tensor<16x16xf32>,
                        %m: tensor<16x16xf32>, %v: tensor<16x16xf32>,
                        %step: tensor<f32>) {
  // CHECK: braid.sgd %{{.*}}, %{{.*}}, %{{.*}} lr = %[[V_LR]] momentum = 9.000000e-01 weight_decay = 0.000000e+00 : tensor<16x16xf32>
  %0:2 = braid.sgd %p, %g, %m lr = %lr momentum = 0.9 weight_decay = 0.0 : tensor<16x16xf32>
  // CHECK: braid.adamw %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} lr = %[[V_LR]] beta1 = 9.000000e-01 {{.*}} : tensor<16x16xf32>, tensor<f32>
  %1:3 = braid.adamw %p, %g, %m, %v, %step lr = %lr beta1 = 0.9 beta2 = 0.999 eps = 1.0e-8 weight_decay = 0.1 : tensor<16x16xf32>, tensor<f32>
  // CHECK: braid.adamw {{.*}} lr = %[[V_LR]] grad_scale = %[[V_LR]] beta1
  %2:3 = braid.adamw %p, %g, %m, %v, %step lr = %lr grad_scale = %lr beta1 = 0.9 beta2 = 0.999 eps = 1.0e-8 weight_decay = 0.1 : tensor<16x16xf32>, tensor<f32>
  // CHECK: braid.lion {{.*}} lr = %[[V_LR]] grad_scale = %[[V_LR]] beta1 = 9.000000e-01
  %3:2 = braid.lion %p, %g, %m lr = %lr grad_scale = %lr beta1 = 0.9 beta2 = 0.99 weight_decay = 0.0 : tensor<16x16xf32>
  return
}

// CHECK-LABEL: func.func @collectives
// CHECK-SAME: %[[V_W:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_B:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_X:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_I:[a-z0-9_]+]]:
func.func @collectives(%w: tensor<16x8xf32> {braid.role = #braid.role<parameter "w">},
                       %b: tensor<8xf32> {braid.role = #braid.role<parameter "b">},
                       %x: tensor<8x16xf32>, %i: tensor<8xi32>) {
  // CHECK: %[[V_0:[a-z0-9_]+]] = braid.all_reduce %[[V_W]] on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<16x8xf32>
  %0 = braid.all_reduce %w on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<16x8xf32>
  // CHECK: braid.all_reduce %[[V_W]], %[[V_B]] on @world grid_axes = [0, 1] reduction = sum grad_of = ["w", "b"] {bucket_bytes = 544 : i64, bucket_index = 0 : i64} : tensor<16x8xf32>, tensor<8xf32>
  %1:2 = braid.all_reduce %w, %b on @world grid_axes = [0, 1] reduction = sum grad_of = ["w", "b"] {bucket_index = 0, bucket_bytes = 544} : tensor<16x8xf32>, tensor<8xf32>
  // CHECK: %[[V_2:[a-z0-9_]+]] = braid.all_reduce %[[V_I]] on @world grid_axes = [1] reduction = max : tensor<8xi32>
  %2 = braid.all_reduce %i on @world grid_axes = [1] reduction = max : tensor<8xi32>
  // CHECK: %[[V_3:[a-z0-9_]+]] = braid.all_reduce %[[V_I]] on @world grid_axes = [1] reduction = min : tensor<8xi32>
  %3 = braid.all_reduce %i on @world grid_axes = [1] reduction = min : tensor<8xi32>
  // CHECK: %[[V_4:[a-z0-9_]+]] = braid.reduce_scatter %[[V_X]] on @world grid_axes = [0] reduction = sum scatter_dim = 0 : tensor<8x16xf32> -> tensor<2x16xf32>
  %4 = braid.reduce_scatter %x on @world grid_axes = [0] reduction = sum scatter_dim = 0 : tensor<8x16xf32> -> tensor<2x16xf32>
  // CHECK: %[[V_5:[a-z0-9_]+]] = braid.all_gather %[[V_X]] on @world grid_axes = [1] gather_dim = 1 : tensor<8x16xf32> -> tensor<8x32xf32>
  %5 = braid.all_gather %x on @world grid_axes = [1] gather_dim = 1 : tensor<8x16xf32> -> tensor<8x32xf32>
  // CHECK: %[[V_6:[a-z0-9_]+]] = braid.all_to_all %[[V_X]] on @world grid_axes = [0] split_dim = 0 concat_dim = 1 : tensor<8x16xf32> -> tensor<2x64xf32>
  %6 = braid.all_to_all %x on @world grid_axes = [0] split_dim = 0 concat_dim = 1 : tensor<8x16xf32> -> tensor<2x64xf32>
  // CHECK: %[[V_7:[a-z0-9_]+]] = braid.collective_broadcast %[[V_X]] on @world grid_axes = [0] root = 3 : tensor<8x16xf32> -> tensor<8x16xf32>
  %7 = braid.collective_broadcast %x on @world grid_axes = [0] root = 3 : tensor<8x16xf32> -> tensor<8x16xf32>
  // CHECK: %[[V_PERM:[a-z0-9_]+]] = braid.collective_permute %[[V_X]] on @world grid_axes = [1] offset = -1 : tensor<8x16xf32> -> tensor<8x16xf32>
  %perm = braid.collective_permute %x on @world grid_axes = [1] offset = -1 : tensor<8x16xf32> -> tensor<8x16xf32>
  // CHECK: %[[V_IDX:[a-z0-9_]+]] = braid.axis_index on @world grid_axes = [1] : tensor<i64>
  %idx = braid.axis_index on @world grid_axes = [1] : tensor<i64>
  // CHECK: %[[V_RSG:[a-z0-9_]+]] = braid.reduce_scatter %[[V_W]] on @world grid_axes = [0] reduction = avg scatter_dim = 0 grad_of = ["w"] : tensor<16x8xf32> -> tensor<4x8xf32>
  %rsg = braid.reduce_scatter %w on @world grid_axes = [0] reduction = avg scatter_dim = 0 grad_of = ["w"] : tensor<16x8xf32> -> tensor<4x8xf32>
  // CHECK: braid.send %[[V_X]] on @world grid_axes = [1] peer = 1 : tensor<8x16xf32>
  braid.send %x on @world grid_axes = [1] peer = 1 : tensor<8x16xf32>
  // CHECK: %[[V_8:[a-z0-9_]+]] = braid.recv on @world grid_axes = [1] peer = 0 : tensor<8x16xf32>
  %8 = braid.recv on @world grid_axes = [1] peer = 0 : tensor<8x16xf32>
  // CHECK: %[[V_SR:[a-z0-9_]+]] = braid.send_recv %[[V_X]] on @world grid_axes = [1] send_peer = 1 recv_peer = 0 : tensor<8x16xf32> -> tensor<4x16xf32>
  %sr = braid.send_recv %x on @world grid_axes = [1] send_peer = 1 recv_peer = 0 : tensor<8x16xf32> -> tensor<4x16xf32>
  return
}

// CHECK-LABEL: func.func @async_collectives
// CHECK-SAME: %[[V_W:[a-z0-9_]+]]:
// CHECK-SAME: %[[V_X:[a-z0-9_]+]]:
func.func @async_collectives(%w: tensor<16x8xf32> {braid.role = #braid.role<parameter "w">},
                             %x: tensor<8x16xf32>) {
  // CHECK: %[[F:.*]] = braid.all_reduce_start %[[V_W]], %[[V_W]] on @world grid_axes = [0] reduction = avg grad_of = ["w", "w"] : tensor<16x8xf32>, tensor<16x8xf32>
  %f0 = braid.all_reduce_start %w, %w on @world grid_axes = [0] reduction = avg grad_of = ["w", "w"] : tensor<16x8xf32>, tensor<16x8xf32>
  // CHECK: braid.wait %[[F]] : !braid.future<tensor<16x8xf32>, tensor<16x8xf32>>
  %r0:2 = braid.wait %f0 : !braid.future<tensor<16x8xf32>, tensor<16x8xf32>>
  // CHECK: %[[V_F1:[a-z0-9_]+]] = braid.reduce_scatter_start %[[V_X]] on @world grid_axes = [0] reduction = sum scatter_dim = 1 : tensor<8x16xf32> -> !braid.future<tensor<8x4xf32>>
  %f1 = braid.reduce_scatter_start %x on @world grid_axes = [0] reduction = sum scatter_dim = 1 : tensor<8x16xf32> -> !braid.future<tensor<8x4xf32>>
  %r1 = braid.wait %f1 : !braid.future<tensor<8x4xf32>>
  // CHECK: %[[V_F2:[a-z0-9_]+]] = braid.all_gather_start %[[V_X]] on @world grid_axes = [0, 1] gather_dim = 0 : tensor<8x16xf32> -> !braid.future<tensor<64x16xf32>>
  %f2 = braid.all_gather_start %x on @world grid_axes = [0, 1] gather_dim = 0 : tensor<8x16xf32> -> !braid.future<tensor<64x16xf32>>
  %r2 = braid.wait %f2 : !braid.future<tensor<64x16xf32>>
  // CHECK: %[[V_F3:[a-z0-9_]+]] = braid.all_to_all_start %[[V_X]] on @world grid_axes = [1] split_dim = 1 concat_dim = 1 : tensor<8x16xf32> -> !braid.future<tensor<8x16xf32>>
  %f3 = braid.all_to_all_start %x on @world grid_axes = [1] split_dim = 1 concat_dim = 1 : tensor<8x16xf32> -> !braid.future<tensor<8x16xf32>>
  %r3 = braid.wait %f3 : !braid.future<tensor<8x16xf32>>
  // CHECK: %[[V_F4:[a-z0-9_]+]] = braid.collective_broadcast_start %[[V_X]] on @world grid_axes = [0] root = 0 : tensor<8x16xf32> -> !braid.future<tensor<8x16xf32>>
  %f4 = braid.collective_broadcast_start %x on @world grid_axes = [0] root = 0 : tensor<8x16xf32> -> !braid.future<tensor<8x16xf32>>
  %r4 = braid.wait %f4 : !braid.future<tensor<8x16xf32>>
  // CHECK: %[[V_F7:[a-z0-9_]+]] = braid.collective_permute_start %[[V_X]] on @world grid_axes = [0, 1] offset = 1 : tensor<8x16xf32> -> !braid.future<tensor<8x16xf32>>
  %f7 = braid.collective_permute_start %x on @world grid_axes = [0, 1] offset = 1 : tensor<8x16xf32> -> !braid.future<tensor<8x16xf32>>
  %r7 = braid.wait %f7 : !braid.future<tensor<8x16xf32>>
  // CHECK: %[[V_F8:[a-z0-9_]+]] = braid.axis_index_start on @world grid_axes = [0, 1] : !braid.future<tensor<i64>>
  %f8 = braid.axis_index_start on @world grid_axes = [0, 1] : !braid.future<tensor<i64>>
  %r8 = braid.wait %f8 : !braid.future<tensor<i64>>
  // CHECK: %[[S:.*]] = braid.send_start %[[V_X]] on @world grid_axes = [1] peer = 1 : tensor<8x16xf32> -> !braid.future<>
  %f5 = braid.send_start %x on @world grid_axes = [1] peer = 1 : tensor<8x16xf32> -> !braid.future<>
  // CHECK: braid.wait %[[S]] : !braid.future<>
  braid.wait %f5 : !braid.future<>
  // CHECK: %[[V_F6:[a-z0-9_]+]] = braid.recv_start on @world grid_axes = [1] peer = 0 : !braid.future<tensor<8x16xf32>>
  %f6 = braid.recv_start on @world grid_axes = [1] peer = 0 : !braid.future<tensor<8x16xf32>>
  %r6 = braid.wait %f6 : !braid.future<tensor<8x16xf32>>
  // CHECK: %[[V_F9:[a-z0-9_]+]] = braid.send_recv_start %[[V_X]] on @world grid_axes = [1] send_peer = 0 recv_peer = 0 : tensor<8x16xf32> -> !braid.future<tensor<8x16xf32>>
  %f9 = braid.send_recv_start %x on @world grid_axes = [1] send_peer = 0 recv_peer = 0 : tensor<8x16xf32> -> !braid.future<tensor<8x16xf32>>
  %r9 = braid.wait %f9 : !braid.future<tensor<8x16xf32>>
  return
}

// CHECK-LABEL: func.func @streams
// CHECK-SAME: %[[V_X:[a-z0-9_]+]]:
func.func @streams(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // CHECK: %[[V_0:[a-z0-9_]+]] = braid.relu %[[V_X]] {braid.stream = #braid.stream<compute, 0>}
  %0 = braid.relu %x {braid.stream = #braid.stream<compute, 0>} : tensor<8x16xf32>
  // CHECK: %[[E:.*]] = braid.record_event {braid.stream = #braid.stream<compute, 0>}
  %e = braid.record_event {braid.stream = #braid.stream<compute, 0>}
  // CHECK: braid.wait_event %[[E]] {braid.stream = #braid.stream<comm, 1>}
  braid.wait_event %e {braid.stream = #braid.stream<comm, 1>}
  // CHECK: %[[V_1:[a-z0-9_]+]] = braid.all_reduce {{.*}} {braid.stream = #braid.stream<comm, 1>}
  %1 = braid.all_reduce %0 on @world grid_axes = [0] reduction = sum {braid.stream = #braid.stream<comm, 1>} : tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @roles
// CHECK-SAME: %[[V_W:[a-z0-9_]+]]: tensor<4x4xf32> {braid.role = #braid.role<parameter "w">}
// CHECK-SAME: %[[V_M:[a-z0-9_]+]]: tensor<4x4xf32> {braid.role = #braid.role<optimizer_state "w.momentum">}
// CHECK-SAME: %[[V_X:[a-z0-9_]+]]: tensor<4x4xf32> {braid.role = #braid.role<batch "x">}
// CHECK-SAME: %[[V_L:[a-z0-9_]+]]: tensor<f32>)
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
