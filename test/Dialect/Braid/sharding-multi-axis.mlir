// RUN: braid-opt %s --split-input-file | braid-opt --split-input-file | FileCheck %s --check-prefix=ROUND
// RUN: braid-opt %s --split-input-file --braid-tensor-parallel="axis=1" \
// RUN:   | FileCheck %s --check-prefix=AXIS1
// RUN: braid-opt %s --split-input-file --braid-tensor-parallel="axis=1" \
// RUN:   | braid-opt --split-input-file --braid-tensor-parallel="axis=0" | FileCheck %s
// RUN: braid-opt %s --split-input-file --braid-tensor-parallel="axis=1" \
// RUN:   | braid-opt --split-input-file --braid-tensor-parallel="axis=0" \
// RUN:   | braid-opt --split-input-file | FileCheck %s

// Shardings over two grid axes (#braid.sharding<split_axes = ...>),
// partitioned by braid-tensor-parallel one axis at a time: the first run
// (axis 1) makes each rank's piece of axis 1 and leaves the shardings over
// axis 0 on the arguments; the second (axis 0) cuts those pieces again.
// Each run propagates its axis's sharding through the ops' own rules, the
// same as a one-axis step's, and sums a partial value over its axis where
// the value must be whole.

// A linear layer, forward and backward, and its SGD update, on a 2x2 grid:
// the weight's rows split over axis 1 and each piece again over axis 0 (a
// column-parallel weight cut over four ranks, two axes).
//
// ROUND-LABEL: func.func @linear_2d
// ROUND-SAME: braid.sharding = #braid.sharding<split_axes = {{\[\[}}1, 0]]>
//
// After axis 1: the local rows (32 / 2), the shardings left as declared,
// the results marked with the axis that split them.
// AXIS1-LABEL: func.func @linear_2d
// AXIS1-SAME: %arg1: tensor<16x16xf32> {braid.role = #braid.role<parameter "w">, braid.sharding = #braid.sharding<split_axes = {{\[\[}}1, 0]]>}
// AXIS1-SAME: -> (tensor<8x16xf32>, tensor<16x16xf32> {braid.role = #braid.role<parameter "w">, braid.sharding = #braid.sharding<split_axes = {{\[\[}}1]]>}
// AXIS1-SAME: braid.tensor_parallel = #braid.tensor_parallel<grid = @world, axis = 1>
// AXIS1: braid.all_reduce {{.*}} on @world grid_axes = [1] reduction = sum : tensor<8x16xf32>
// AXIS1-NOT: grid_axes = [0]
//
// After axis 0: each rank holds 32 / 4 rows of the weight, of its
// gradient and of its momentum; the output's columns are split as the
// weight's rows (8 of 32); the input gradient contracts over the split
// dimension, a partial sum over both axes, summed over axis 1 by the
// first run and over axis 0 by the second; the weight gradient and the
// update stay local.
// CHECK-LABEL: func.func @linear_2d
// CHECK-SAME: %arg0: tensor<8x16xf32> {braid.role = #braid.role<batch "x">}
// CHECK-SAME: %arg1: tensor<8x16xf32> {braid.role = #braid.role<parameter "w">, braid.sharding = #braid.sharding<split_axes = {{\[\[}}1, 0]]>}
// CHECK-SAME: %arg2: tensor<8x16xf32> {braid.role = #braid.role<optimizer_state "w.momentum_buffer">, braid.sharding = #braid.sharding<split_axes = {{\[\[}}1, 0]]>}
// CHECK-SAME: -> (tensor<8x16xf32>, tensor<8x16xf32> {braid.role = #braid.role<parameter "w">, braid.sharding = #braid.sharding<split_axes = {{\[\[}}1, 0]]>}, tensor<8x16xf32> {braid.role = #braid.role<optimizer_state "w.momentum_buffer">, braid.sharding = #braid.sharding<split_axes = {{\[\[}}1, 0]]>})
// CHECK-SAME: braid.tensor_parallel = #braid.tensor_parallel<grid = @world, axis = 1, inner_axes = [0]>
// CHECK: %[[Y:.*]] = braid.matmul %arg0, %arg1 {transpose_b} : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[H:.*]] = braid.gelu %[[Y]] : tensor<8x8xf32>
// CHECK-NEXT: %[[DY:.*]] = braid.gelu_backward %[[H]], %[[Y]] : tensor<8x8xf32>
// CHECK-NEXT: %[[DX:.*]] = braid.matmul %[[DY]], %arg1 : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[DW:.*]] = braid.matmul %[[DY]], %arg0 {transpose_a} : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[W:.*]], %[[M:.*]] = braid.sgd %arg1, %[[DW]], %arg2 {{.*}} : tensor<8x16xf32>
// CHECK-NEXT: %[[DX1:.*]] = braid.all_reduce %[[DX]] on @world grid_axes = [1] reduction = sum : tensor<8x16xf32>
// CHECK-NEXT: %[[DX0:.*]] = braid.all_reduce %[[DX1]] on @world grid_axes = [0] reduction = sum : tensor<8x16xf32>
// CHECK-NEXT: return %[[DX0]], %[[W]], %[[M]]
shard.grid @world(shape = 2x2)

func.func @linear_2d(
    %x: tensor<8x16xf32> {braid.role = #braid.role<batch "x">},
    %w: tensor<32x16xf32> {braid.role = #braid.role<parameter "w">, braid.sharding = #braid.sharding<split_axes = [[1, 0]]>},
    %m: tensor<32x16xf32> {braid.role = #braid.role<optimizer_state "w.momentum_buffer">, braid.sharding = #braid.sharding<split_axes = [[1, 0]]>})
    -> (tensor<8x16xf32>,
        tensor<32x16xf32> {braid.role = #braid.role<parameter "w">},
        tensor<32x16xf32> {braid.role = #braid.role<optimizer_state "w.momentum_buffer">}) {
  %y = braid.matmul %x, %w {transpose_b} : tensor<8x16xf32>, tensor<32x16xf32> -> tensor<8x32xf32>
  %h = braid.gelu %y : tensor<8x32xf32>
  // The upstream gradient stands in as h itself.
  %dy = braid.gelu_backward %h, %y : tensor<8x32xf32>
  %dx = braid.matmul %dy, %w : tensor<8x32xf32>, tensor<32x16xf32> -> tensor<8x16xf32>
  %dw = braid.matmul %dy, %x {transpose_a} : tensor<8x32xf32>, tensor<8x16xf32> -> tensor<32x16xf32>
  %w2:2 = braid.sgd %w, %dw, %m lr = 0.1 momentum = 0.9 weight_decay = 0.0 : tensor<32x16xf32>
  return %dx, %w2#0, %w2#1 : tensor<8x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>
}

// -----

// The sequence split over one axis (0) and the heads over another (1): the
// tokens of a [sequence, heads * head size] activation split over axis 0,
// the q projection's rows (whole heads of 8) over axis 1. The projection
// keeps both splits (tokens over axis 0, heads over axis 1), and so does
// its bias; its weight gradient contracts over the split tokens, a partial
// sum over axis 0 summed there, its rows the heads of axis 1.
//
// ROUND-LABEL: func.func @sequence_and_heads
// ROUND-SAME: braid.sharding = #braid.sharding<split_axes = {{\[\[}}0]]>
// ROUND-SAME: braid.sharding = #braid.sharding<split_axes = {{\[\[}}1]]>
//
// CHECK-LABEL: func.func @sequence_and_heads
// CHECK-SAME: %arg0: tensor<16x32xf32> {braid.role = #braid.role<batch "x">, braid.sharding = #braid.sharding<split_axes = {{\[\[}}0]]>}
// CHECK-SAME: %arg1: tensor<16x32xf32> {braid.role = #braid.role<parameter "q.weight">, braid.sharding = #braid.sharding<split_axes = {{\[\[}}1]]>}
// CHECK-SAME: %arg2: tensor<16xf32> {braid.role = #braid.role<parameter "q.bias">, braid.sharding = #braid.sharding<split_axes = {{\[\[}}1]]>}
// CHECK-SAME: -> (tensor<16x16xf32> {braid.sharding = #braid.sharding<split_axes = {{\[\[}}0], [1]]>}, tensor<16x32xf32> {braid.sharding = #braid.sharding<split_axes = {{\[\[}}1]]>})
// CHECK-SAME: braid.tensor_parallel = #braid.tensor_parallel<grid = @world, axis = 1, inner_axes = [0]>
// CHECK: %[[Q:.*]] = braid.matmul %arg0, %arg1 {transpose_b} : tensor<16x32xf32>, tensor<16x32xf32> -> tensor<16x16xf32>
// CHECK-NEXT: %[[QB:.*]] = braid.bias_add %[[Q]], %arg2 : tensor<16x16xf32>, tensor<16xf32>
// CHECK-NEXT: %[[DW:.*]] = braid.matmul %[[QB]], %arg0 {transpose_a} : tensor<16x16xf32>, tensor<16x32xf32> -> tensor<16x32xf32>
// CHECK-NEXT: %[[DW0:.*]] = braid.all_reduce %[[DW]] on @world grid_axes = [0] reduction = sum : tensor<16x32xf32>
// CHECK-NEXT: return %[[QB]], %[[DW0]]
// CHECK-NOT: grid_axes = [1]
shard.grid @world(shape = 2x2)

func.func @sequence_and_heads(
    %x: tensor<32x32xf32> {braid.role = #braid.role<batch "x">, braid.sharding = #braid.sharding<split_axes = [[0]]>},
    %w: tensor<32x32xf32> {braid.role = #braid.role<parameter "q.weight">, braid.sharding = #braid.sharding<split_axes = [[1]]>},
    %b: tensor<32xf32> {braid.role = #braid.role<parameter "q.bias">, braid.sharding = #braid.sharding<split_axes = [[1]]>})
    -> (tensor<32x32xf32>, tensor<32x32xf32>) {
  %q = braid.matmul %x, %w {transpose_b} : tensor<32x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
  %qb = braid.bias_add %q, %b : tensor<32x32xf32>, tensor<32xf32>
  // The upstream gradient stands in as the projection itself.
  %dw = braid.matmul %qb, %x {transpose_a} : tensor<32x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
  return %qb, %dw : tensor<32x32xf32>, tensor<32x32xf32>
}
