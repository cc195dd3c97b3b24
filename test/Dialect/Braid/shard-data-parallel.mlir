// RUN: braid-opt %s --split-input-file --braid-shard-data-parallel | FileCheck %s
// RUN: braid-opt %s --split-input-file --braid-shard-data-parallel | braid-opt --split-input-file | FileCheck %s
// RUN: braid-opt %s --split-input-file --braid-shard-data-parallel="stage=2 report=true" 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=REPORT
// RUN: braid-opt %s --split-input-file --braid-shard-data-parallel="stage=0" | FileCheck %s --check-prefix=OFF

// ZeRO on a linear layer's SGD update, data-parallel over axis 0 of a 2x1
// grid: the gradient's average becomes a reduce-scatter along the first
// dimension the 2 ranks divide, the parameter is cut to the rank's rows,
// the momentum argument and result hold those rows only, and the updated
// rows are gathered into the whole weight the step returns.
//
// CHECK-LABEL: func.func @sgd
// CHECK-SAME: %[[W:[^:]*]]: tensor<64x32xf32> {braid.role = #braid.role<parameter "w">}
// CHECK-SAME: %[[M:[^:]*]]: tensor<32x32xf32> {braid.data_parallel_split = 0 : i64, braid.role = #braid.role<optimizer_state "w.momentum_buffer">}
// CHECK-SAME: -> (tensor<64x32xf32> {braid.role = #braid.role<parameter "w">}, tensor<32x32xf32> {braid.data_parallel_split = 0 : i64, braid.role = #braid.role<optimizer_state "w.momentum_buffer">})
// CHECK-SAME: attributes {braid.data_parallel = #braid.data_parallel<grid = @world, axis = 0, zero_stage = 1>}
// CHECK: %[[I:.*]] = braid.axis_index on @world grid_axes = [0] : tensor<i64>
// CHECK: %[[G:.*]] = braid.reduce_scatter %{{.*}} on @world grid_axes = [0] reduction = avg scatter_dim = 0 grad_of = ["w"] : tensor<64x32xf32> -> tensor<32x32xf32>
// CHECK-NEXT: %[[P:.*]] = braid.shard_slice %[[W]], %[[I]] dim = 0 parts = 2 : tensor<64x32xf32> -> tensor<32x32xf32>
// CHECK-NEXT: %[[U:.*]], %[[UM:.*]] = braid.sgd %[[P]], %[[G]], %[[M]] lr = 1.000000e-01 momentum = 9.000000e-01 weight_decay = 0.000000e+00 : tensor<32x32xf32>
// CHECK-NEXT: %[[WHOLE:.*]] = braid.all_gather %[[U]] on @world grid_axes = [0] gather_dim = 0 : tensor<32x32xf32> -> tensor<64x32xf32>
// CHECK-NEXT: return %[[WHOLE]], %[[UM]]
// CHECK-NOT: braid.all_reduce
//
// REPORT: remark: 'w' updated in pieces of 'tensor<32x32xf32>' along dimension 0 over the 2 data-parallel ranks
//
// Stage 0 changes nothing.
// OFF-LABEL: func.func @sgd
// OFF: braid.all_reduce
// OFF-NOT: braid.reduce_scatter
shard.grid @world(shape = 2x1)

func.func @sgd(
    %x: tensor<8x32xf32> {braid.role = #braid.role<batch "x">},
    %w: tensor<64x32xf32> {braid.role = #braid.role<parameter "w">},
    %m: tensor<64x32xf32> {braid.role = #braid.role<optimizer_state "w.momentum_buffer">})
    -> (tensor<64x32xf32> {braid.role = #braid.role<parameter "w">},
        tensor<64x32xf32> {braid.role = #braid.role<optimizer_state "w.momentum_buffer">}) {
  %y = braid.matmul %x, %w {transpose_b} : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
  %dw = braid.matmul %y, %x {transpose_a} : tensor<8x64xf32>, tensor<8x32xf32> -> tensor<64x32xf32>
  %g = braid.all_reduce %dw on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<64x32xf32>
  %w2:2 = braid.sgd %w, %g, %m lr = 0.1 momentum = 0.9 weight_decay = 0.0 : tensor<64x32xf32>
  return %w2#0, %w2#1 : tensor<64x32xf32>, tensor<64x32xf32>
}

// -----

// AdamW with the gradient reduced in bf16 and cast back (mixed precision),
// over 4 ranks: the cast runs on the piece; the step count stays whole. The
// bias [6] has no dimension 4 divides: its all-reduce and state stay whole.
//
// CHECK-LABEL: func.func @adamw_mixed
// CHECK-SAME: %[[W:[^:]*]]: tensor<6x8xf32> {braid.role = #braid.role<parameter "w">}
// CHECK-SAME: %[[B:[^:]*]]: tensor<6xf32> {braid.role = #braid.role<parameter "b">}
// CHECK-SAME: tensor<6x2xf32> {braid.data_parallel_split = 1 : i64, braid.role = #braid.role<optimizer_state "w.exp_avg">}
// CHECK-SAME: tensor<6x2xf32> {braid.data_parallel_split = 1 : i64, braid.role = #braid.role<optimizer_state "w.exp_avg_sq">}
// CHECK-SAME: %{{[^:]*}}: tensor<6xf32> {braid.role = #braid.role<optimizer_state "b.exp_avg">}
// CHECK-SAME: %[[STEP:[^:]*]]: tensor<f32> {braid.role = #braid.role<optimizer_state "step">}
// CHECK: %[[G16:.*]] = braid.reduce_scatter %{{.*}} on @world grid_axes = [0] reduction = avg scatter_dim = 1 grad_of = ["w"] : tensor<6x8xbf16> -> tensor<6x2xbf16>
// CHECK-NEXT: %[[G:.*]] = braid.cast %[[G16]] : tensor<6x2xbf16> -> tensor<6x2xf32>
// CHECK: %[[GB:.*]] = braid.all_reduce %{{.*}} on @world grid_axes = [0] reduction = avg grad_of = ["b"] : tensor<6xf32>
// CHECK: braid.shard_slice %[[W]], %{{.*}} dim = 1 parts = 4 : tensor<6x8xf32> -> tensor<6x2xf32>
// CHECK: braid.adamw %{{.*}}, %[[G]], %{{.*}}, %{{.*}}, %[[STEP]] {{.*}} : tensor<6x2xf32>, tensor<f32>
// CHECK: braid.all_gather %{{.*}} on @world grid_axes = [0] gather_dim = 1 : tensor<6x2xf32> -> tensor<6x8xf32>
// CHECK: braid.adamw %[[B]], %[[GB]], {{.*}} : tensor<6xf32>, tensor<f32>
//
// REPORT: remark: 'w' updated in pieces of 'tensor<6x2xf32>' along dimension 1 over the 4 data-parallel ranks
// REPORT: remark: 'b' ('tensor<6xf32>') kept whole: no dimension divides by the 4 data-parallel ranks
shard.grid @world(shape = 4)

func.func @adamw_mixed(
    %w: tensor<6x8xf32> {braid.role = #braid.role<parameter "w">},
    %b: tensor<6xf32> {braid.role = #braid.role<parameter "b">},
    %mw: tensor<6x8xf32> {braid.role = #braid.role<optimizer_state "w.exp_avg">},
    %vw: tensor<6x8xf32> {braid.role = #braid.role<optimizer_state "w.exp_avg_sq">},
    %mb: tensor<6xf32> {braid.role = #braid.role<optimizer_state "b.exp_avg">},
    %vb: tensor<6xf32> {braid.role = #braid.role<optimizer_state "b.exp_avg_sq">},
    %step: tensor<f32> {braid.role = #braid.role<optimizer_state "step">})
    -> (tensor<6x8xf32> {braid.role = #braid.role<parameter "w">},
        tensor<6xf32> {braid.role = #braid.role<parameter "b">},
        tensor<6x8xf32> {braid.role = #braid.role<optimizer_state "w.exp_avg">},
        tensor<6x8xf32> {braid.role = #braid.role<optimizer_state "w.exp_avg_sq">},
        tensor<6xf32> {braid.role = #braid.role<optimizer_state "b.exp_avg">},
        tensor<6xf32> {braid.role = #braid.role<optimizer_state "b.exp_avg_sq">}) {
  %w16 = braid.cast %w : tensor<6x8xf32> -> tensor<6x8xbf16>
  %dw16 = braid.mul %w16, %w16 : tensor<6x8xbf16>
  %gw16 = braid.all_reduce %dw16 on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<6x8xbf16>
  %gw = braid.cast %gw16 : tensor<6x8xbf16> -> tensor<6x8xf32>
  %db = braid.mul %b, %b : tensor<6xf32>
  %gb = braid.all_reduce %db on @world grid_axes = [0] reduction = avg grad_of = ["b"] : tensor<6xf32>
  %uw:3 = braid.adamw %w, %gw, %mw, %vw, %step lr = 1.0e-3 beta1 = 0.9 beta2 = 0.999 eps = 1.0e-8 weight_decay = 0.1 : tensor<6x8xf32>, tensor<f32>
  %ub:3 = braid.adamw %b, %gb, %mb, %vb, %step lr = 1.0e-3 beta1 = 0.9 beta2 = 0.999 eps = 1.0e-8 weight_decay = 0.1 : tensor<6xf32>, tensor<f32>
  return %uw#0, %ub#0, %uw#1, %uw#2, %ub#1, %ub#2 : tensor<6x8xf32>, tensor<6xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6xf32>, tensor<6xf32>
}

// -----

// One data-parallel rank (the axis of size 1): nothing to shard, and a
// gradient that is no average (tensor-parallel sum) is not a site.
//
// CHECK-LABEL: func.func @one_replica
// CHECK-NOT: braid.data_parallel
// CHECK: braid.all_reduce %{{.*}} reduction = avg grad_of = ["w"]
shard.grid @world(shape = 1x2)

func.func @one_replica(
    %w: tensor<4x4xf32> {braid.role = #braid.role<parameter "w">},
    %m: tensor<4x4xf32> {braid.role = #braid.role<optimizer_state "w.momentum_buffer">})
    -> (tensor<4x4xf32> {braid.role = #braid.role<parameter "w">},
        tensor<4x4xf32> {braid.role = #braid.role<optimizer_state "w.momentum_buffer">}) {
  %g = braid.all_reduce %w on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<4x4xf32>
  %u:2 = braid.sgd %w, %g, %m lr = 0.1 momentum = 0.9 weight_decay = 0.0 : tensor<4x4xf32>
  return %u#0, %u#1 : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// Sequence parallelism's layer-norm gradient: averaged over the
// data-parallel axis (0), then summed over the tensor-parallel one (1). The
// sum runs on the piece.
//
// CHECK-LABEL: func.func @summed_over_tp
// CHECK: %[[G:.*]] = braid.reduce_scatter %{{.*}} on @world grid_axes = [0] reduction = avg scatter_dim = 0 grad_of = ["g"] : tensor<8xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[S:.*]] = braid.all_reduce %[[G]] on @world grid_axes = [1] reduction = sum : tensor<4xf32>
// CHECK: braid.sgd %{{.*}}, %[[S]], %{{.*}} : tensor<4xf32>
// CHECK-NOT: grid_axes = [0] reduction = avg
shard.grid @world(shape = 2x2)

func.func @summed_over_tp(
    %g: tensor<8xf32> {braid.role = #braid.role<parameter "g">},
    %m: tensor<8xf32> {braid.role = #braid.role<optimizer_state "g.momentum_buffer">})
    -> (tensor<8xf32> {braid.role = #braid.role<parameter "g">},
        tensor<8xf32> {braid.role = #braid.role<optimizer_state "g.momentum_buffer">}) {
  %d = braid.mul %g, %g : tensor<8xf32>
  %a = braid.all_reduce %d on @world grid_axes = [0] reduction = avg grad_of = ["g"] : tensor<8xf32>
  %s = braid.all_reduce %a on @world grid_axes = [1] reduction = sum : tensor<8xf32>
  %u:2 = braid.sgd %g, %s, %m lr = 0.1 momentum = 0.9 weight_decay = 0.0 : tensor<8xf32>
  return %u#0, %u#1 : tensor<8xf32>, tensor<8xf32>
}

// -----

// Gradient clipping: the sum of squares reads the pieces (through the cast
// for the one reduced in bf16) and is summed over the data-parallel ranks;
// the squares of the bias kept whole are added once, after.
//
// CHECK-LABEL: func.func @clipped
// CHECK: %[[GW:.*]] = braid.reduce_scatter %{{.*}} grad_of = ["w"] : tensor<8x4xbf16> -> tensor<4x4xbf16>
// CHECK-NEXT: %[[CW:.*]] = braid.cast %[[GW]] : tensor<4x4xbf16> -> tensor<4x4xf32>
// CHECK: %[[GB:.*]] = braid.all_reduce %{{.*}} grad_of = ["b"] : tensor<3xf32>
// CHECK: %[[P:.*]] = braid.sum_squares %[[CW]] : tensor<4x4xf32> -> tensor<f32>
// CHECK-NEXT: %[[S:.*]] = braid.all_reduce %[[P]] on @world grid_axes = [0] reduction = sum : tensor<f32>
// CHECK-NEXT: %[[Q:.*]] = braid.sum_squares %[[GB]] : tensor<3xf32> -> tensor<f32>
// CHECK-NEXT: %[[T:.*]] = braid.add %[[S]], %[[Q]] : tensor<f32>
// CHECK-NEXT: %[[C:.*]] = braid.clip_coefficient %[[T]]
// CHECK: braid.sgd %{{.*}}, %[[CW]], %{{.*}} lr = 1.000000e-01 grad_scale = %[[C]]
// CHECK-NOT: braid.sum_squares
shard.grid @world(shape = 2)

func.func @clipped(
    %w: tensor<8x4xf32> {braid.role = #braid.role<parameter "w">},
    %b: tensor<3xf32> {braid.role = #braid.role<parameter "b">},
    %m: tensor<8x4xf32> {braid.role = #braid.role<optimizer_state "w.momentum_buffer">},
    %n: tensor<3xf32> {braid.role = #braid.role<optimizer_state "b.momentum_buffer">})
    -> (tensor<8x4xf32> {braid.role = #braid.role<parameter "w">},
        tensor<3xf32> {braid.role = #braid.role<parameter "b">},
        tensor<8x4xf32> {braid.role = #braid.role<optimizer_state "w.momentum_buffer">},
        tensor<3xf32> {braid.role = #braid.role<optimizer_state "b.momentum_buffer">}) {
  %w16 = braid.cast %w : tensor<8x4xf32> -> tensor<8x4xbf16>
  %gw16 = braid.all_reduce %w16 on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<8x4xbf16>
  %gw = braid.cast %gw16 : tensor<8x4xbf16> -> tensor<8x4xf32>
  %gb = braid.all_reduce %b on @world grid_axes = [0] reduction = avg grad_of = ["b"] : tensor<3xf32>
  %s = braid.sum_squares %gw, %gb : tensor<8x4xf32>, tensor<3xf32> -> tensor<f32>
  %c = braid.clip_coefficient %s max_norm = 1.0 : tensor<f32>
  %uw:2 = braid.sgd %w, %gw, %m lr = 0.1 grad_scale = %c momentum = 0.9 weight_decay = 0.0 : tensor<8x4xf32>
  %ub:2 = braid.sgd %b, %gb, %n lr = 0.1 grad_scale = %c momentum = 0.9 weight_decay = 0.0 : tensor<3xf32>
  return %uw#0, %ub#0, %uw#1, %ub#1 : tensor<8x4xf32>, tensor<3xf32>, tensor<8x4xf32>, tensor<3xf32>
}
