// RUN: braid-opt %s --braid-tensor-parallel | FileCheck %s
// RUN: braid-opt %s --braid-tensor-parallel | braid-opt | FileCheck %s

// Each op's tensor-parallel rule (its Braid_Shard* trait or its own in
// ShardingRules.cpp), one function per rule, on a tensor-parallel axis of 2
// ranks: the local types, where a partial value is summed (an all-reduce
// over axis 1), and the sharding each result comes out with.

#r = #braid.sharding<replicated>
#s0 = #braid.sharding<split 0>
#s1 = #braid.sharding<split 1>
shard.grid @world(shape = 3x2)

// Column-parallel: rows of the weight split give the output's last
// dimension split.
// CHECK-LABEL: func.func @matmul_column
// CHECK-SAME: -> (tensor<8x16xf32> {braid.sharding = #braid.sharding<split 1>})
// CHECK-SAME: braid.tensor_parallel = #braid.tensor_parallel<grid = @world, axis = 1>
// CHECK: braid.matmul %arg0, %arg1 {transpose_b} : tensor<8x4xf32>, tensor<16x4xf32> -> tensor<8x16xf32>
func.func @matmul_column(%x: tensor<8x4xf32>, %w: tensor<32x4xf32> {braid.sharding = #s0})
    -> tensor<8x32xf32> {
  %y = braid.matmul %x, %w {transpose_b} : tensor<8x4xf32>, tensor<32x4xf32> -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// Row-parallel: the contracted dimension split on both sides gives a
// partial sum, reduced before it leaves the function.
// CHECK-LABEL: func.func @matmul_row
// CHECK-SAME: -> tensor<8x4xf32>
// CHECK: %[[Y:.*]] = braid.matmul %arg0, %arg1 {transpose_b} : tensor<8x16xf32>, tensor<4x16xf32> -> tensor<8x4xf32>
// CHECK-NEXT: %[[R:.*]] = braid.all_reduce %[[Y]] on @world grid_axes = [1] reduction = sum : tensor<8x4xf32>
// CHECK-NEXT: return %[[R]]
func.func @matmul_row(%x: tensor<8x32xf32> {braid.sharding = #s1},
                      %w: tensor<4x32xf32> {braid.sharding = #s1}) -> tensor<8x4xf32> {
  %y = braid.matmul %x, %w {transpose_b} : tensor<8x32xf32>, tensor<4x32xf32> -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// Rows of the left side (transposed) and a split batch dimension.
// CHECK-LABEL: func.func @matmul_rows_and_batch
// CHECK: braid.matmul %arg0, %arg1 {transpose_a} : tensor<4x4xf32>, tensor<4x6xf32> -> tensor<4x6xf32>
// CHECK: braid.matmul %arg2, %arg3 : tensor<3x5x8x4xf32>, tensor<4x6xf32> -> tensor<3x5x8x6xf32>
// CHECK: braid.matmul %arg2, %arg4 {transpose_b} : tensor<3x5x8x4xf32>, tensor<3x5x8x4xf32> -> tensor<3x5x8x8xf32>
func.func @matmul_rows_and_batch(%a: tensor<4x8xf32> {braid.sharding = #s1}, %b: tensor<4x6xf32>,
                                 %q: tensor<3x10x8x4xf32> {braid.sharding = #s1},
                                 %w: tensor<4x6xf32>,
                                 %k: tensor<3x10x8x4xf32> {braid.sharding = #s1})
    -> (tensor<8x6xf32>, tensor<3x10x8x6xf32>, tensor<3x10x8x8xf32>) {
  %y = braid.matmul %a, %b {transpose_a} : tensor<4x8xf32>, tensor<4x6xf32> -> tensor<8x6xf32>
  %z = braid.matmul %q, %w : tensor<3x10x8x4xf32>, tensor<4x6xf32> -> tensor<3x10x8x6xf32>
  %s = braid.matmul %q, %k {transpose_b} : tensor<3x10x8x4xf32>, tensor<3x10x8x4xf32> -> tensor<3x10x8x8xf32>
  return %y, %z, %s : tensor<8x6xf32>, tensor<3x10x8x6xf32>, tensor<3x10x8x8xf32>
}

// A partial sum flows through the ops linear in it (matmul with a
// replicated side, scale, reshape, transpose, broadcast, slice, sum, mul
// by a replicated factor, add of two partial sums) and is reduced where
// it meets one that is not (relu).
// CHECK-LABEL: func.func @partial_through_linear_ops
// CHECK: %[[P:.*]] = braid.matmul %arg0, %arg1 {transpose_b} : tensor<8x16xf32>, tensor<4x16xf32> -> tensor<8x4xf32>
// CHECK-NEXT: braid.scale %[[P]]
// CHECK-NEXT: braid.reshape
// CHECK-NEXT: braid.transpose
// CHECK-NEXT: braid.broadcast
// CHECK-NEXT: braid.slice
// CHECK-NEXT: braid.reduce_sum
// CHECK-NEXT: braid.matmul %[[P]], %arg2
// CHECK-NEXT: braid.mul
// CHECK-NEXT: %[[SUM:.*]] = braid.add
// CHECK-NEXT: %[[R:.*]] = braid.all_reduce %[[SUM]] on @world grid_axes = [1] reduction = sum : tensor<8x4xf32>
// CHECK-NEXT: braid.relu %[[R]]
// CHECK-NEXT: braid.concat
// CHECK-NEXT: %[[S:.*]] = braid.all_reduce {{.*}} : tensor<4xf32>
// CHECK-NEXT: %[[C:.*]] = braid.all_reduce {{.*}} : tensor<2x2x4x8xf32>
// CHECK-NEXT: return %{{.*}}, %[[S]], %[[R]], %[[C]]
func.func @partial_through_linear_ops(%x: tensor<8x32xf32> {braid.sharding = #s1},
                                      %w: tensor<4x32xf32> {braid.sharding = #s1},
                                      %v: tensor<4x4xf32>, %f: tensor<8x4xf32>)
    -> (tensor<8x4xf32>, tensor<4xf32>, tensor<8x4xf32>, tensor<2x2x4x8xf32>) {
  %p = braid.matmul %x, %w {transpose_b} : tensor<8x32xf32>, tensor<4x32xf32> -> tensor<8x4xf32>
  %s = braid.scale %p by 2.0 : tensor<8x4xf32>
  %v4 = braid.reshape %s : tensor<8x4xf32> -> tensor<2x4x4xf32>
  %t = braid.transpose %v4 permutation = [0, 2, 1] : tensor<2x4x4xf32> -> tensor<2x4x4xf32>
  %b = braid.broadcast %t dims = [0] : tensor<2x4x4xf32> -> tensor<2x2x4x4xf32>
  %sl = braid.slice %b offsets = [0, 0, 0, 0] : tensor<2x2x4x4xf32> -> tensor<2x2x4x4xf32>
  %sum = braid.reduce_sum %p dims = [0] : tensor<8x4xf32> -> tensor<4xf32>
  %q = braid.matmul %p, %v : tensor<8x4xf32>, tensor<4x4xf32> -> tensor<8x4xf32>
  %m = braid.mul %q, %f : tensor<8x4xf32>
  %a = braid.add %m, %p : tensor<8x4xf32>
  %r = braid.relu %a : tensor<8x4xf32>
  %c = braid.concat %sl, %sl dim = 3 : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32> -> tensor<2x2x4x8xf32>
  return %r, %sum, %a, %c : tensor<8x4xf32>, tensor<4xf32>, tensor<8x4xf32>, tensor<2x2x4x8xf32>
}

// Braid_ShardLinearIn<[0]>: a quotient is linear in its dividend only. A
// partial dividend gives a partial quotient (summed once, at the return); a
// partial divisor is summed before the division.
// CHECK-LABEL: func.func @partial_linear_in
// CHECK: %[[P:.*]] = braid.matmul
// CHECK-NEXT: %[[Q:.*]] = braid.div %[[P]], %arg2 : tensor<8x4xf32>
// CHECK-NEXT: %[[RP:.*]] = braid.all_reduce %[[P]] on @world grid_axes = [1] reduction = sum : tensor<8x4xf32>
// CHECK-NEXT: %[[D:.*]] = braid.div %arg2, %[[RP]] : tensor<8x4xf32>
// CHECK-NEXT: %[[RQ:.*]] = braid.all_reduce %[[Q]] on @world grid_axes = [1] reduction = sum : tensor<8x4xf32>
// CHECK-NEXT: return %[[RQ]], %[[D]]
func.func @partial_linear_in(%x: tensor<8x32xf32> {braid.sharding = #s1},
                             %w: tensor<4x32xf32> {braid.sharding = #s1},
                             %f: tensor<8x4xf32>)
    -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %p = braid.matmul %x, %w {transpose_b} : tensor<8x32xf32>, tensor<4x32xf32> -> tensor<8x4xf32>
  %q = braid.div %p, %f : tensor<8x4xf32>
  %d = braid.div %f, %p : tensor<8x4xf32>
  return %q, %d : tensor<8x4xf32>, tensor<8x4xf32>
}

// Elementwise ops keep a split that all operands share; a bias split like
// the last dimension is added piece by piece, a replicated bias to a split
// along another dimension.
// CHECK-LABEL: func.func @elementwise
// CHECK: braid.add %arg0, %arg1 : tensor<8x8xf32>
// CHECK: braid.sub
// CHECK: braid.div
// CHECK: braid.gelu {{.*}} : tensor<8x8xf32>
// CHECK: braid.gelu_backward {{.*}} : tensor<8x8xf32>
// CHECK: braid.relu_backward {{.*}} : tensor<8x8xf32>
// CHECK: braid.cast {{.*}} : tensor<8x8xf32> -> tensor<8x8xf64>
// CHECK: braid.bias_add {{.*}} : tensor<8x8xf32>, tensor<8xf32>
// CHECK: braid.bias_add {{.*}} : tensor<4x6xf32>, tensor<6xf32>
// CHECK-NOT: braid.all_reduce
func.func @elementwise(%a: tensor<8x16xf32> {braid.sharding = #s1},
                       %b: tensor<8x16xf32> {braid.sharding = #s1},
                       %bias: tensor<16xf32> {braid.sharding = #s0},
                       %c: tensor<8x6xf32> {braid.sharding = #s0}, %bias2: tensor<6xf32>)
    -> (tensor<8x16xf64>, tensor<8x16xf32>, tensor<8x6xf32>) {
  %x = braid.add %a, %b : tensor<8x16xf32>
  %y = braid.sub %x, %b : tensor<8x16xf32>
  %z = braid.div %y, %a : tensor<8x16xf32>
  %g = braid.gelu %z : tensor<8x16xf32>
  %dg = braid.gelu_backward %g, %z : tensor<8x16xf32>
  %dr = braid.relu_backward %dg, %z : tensor<8x16xf32>
  %w = braid.cast %dr : tensor<8x16xf32> -> tensor<8x16xf64>
  %e = braid.bias_add %dr, %bias : tensor<8x16xf32>, tensor<16xf32>
  %f = braid.bias_add %c, %bias2 : tensor<8x6xf32>, tensor<6xf32>
  return %w, %e, %f : tensor<8x16xf64>, tensor<8x16xf32>, tensor<8x6xf32>
}

// A bias over the last two dimensions (a positional embedding): split like
// the input's dimension it covers (the sequence), or replicated where the
// input is split along a leading dimension (the batch).
// CHECK-LABEL: func.func @bias_trailing
// CHECK: braid.bias_add %arg0, %arg1 : tensor<2x4x16xf32>, tensor<4x16xf32>
// CHECK: braid.bias_add %arg2, %arg3 : tensor<1x8x16xf32>, tensor<8x16xf32>
// CHECK-NOT: braid.all_reduce
func.func @bias_trailing(%x: tensor<2x8x16xf32> {braid.sharding = #s1},
                         %pos: tensor<8x16xf32> {braid.sharding = #s0},
                         %y: tensor<2x8x16xf32> {braid.sharding = #s0}, %pos2: tensor<8x16xf32>)
    -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>) {
  %a = braid.bias_add %x, %pos : tensor<2x8x16xf32>, tensor<8x16xf32>
  %b = braid.bias_add %y, %pos2 : tensor<2x8x16xf32>, tensor<8x16xf32>
  return %a, %b : tensor<2x8x16xf32>, tensor<2x8x16xf32>
}

// Softmax-like ops and the causal mask keep a split off the dimensions
// they work along; the mask that fills zeros (the backward's) is linear.
// CHECK-LABEL: func.func @along_dims
// CHECK: braid.softmax {{.*}} dim = 3 : tensor<2x2x8x8xf32>
// CHECK: braid.softmax_backward {{.*}} dim = 3 : tensor<2x2x8x8xf32>
// CHECK: braid.log_softmax {{.*}} dim = 3 : tensor<2x2x8x8xf32>
// CHECK: braid.log_softmax_backward {{.*}} dim = 3 : tensor<2x2x8x8xf32>
// CHECK: braid.causal_mask {{.*}} fill = -1.000000e+09 : tensor<2x2x8x8xf32>
// CHECK: %[[M:.*]] = braid.causal_mask {{.*}} fill = 0.000000e+00 : tensor<2x4x8x8xf32>
// CHECK: braid.all_reduce %[[M]] on @world grid_axes = [1]
func.func @along_dims(%s: tensor<2x4x8x8xf32> {braid.sharding = #s1},
                      %x: tensor<8x4xf32> {braid.sharding = #s1},
                      %w: tensor<8x4xf32> {braid.sharding = #s1})
    -> (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<8x8xf32>) {
  %p = braid.softmax %s dim = 3 : tensor<2x4x8x8xf32>
  %dp = braid.softmax_backward %p, %p dim = 3 : tensor<2x4x8x8xf32>
  %l = braid.log_softmax %dp dim = 3 : tensor<2x4x8x8xf32>
  %dl = braid.log_softmax_backward %l, %l dim = 3 : tensor<2x4x8x8xf32>
  %m = braid.causal_mask %dl fill = -1.0e9 : tensor<2x4x8x8xf32>
  %part = braid.matmul %x, %w {transpose_b} : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x8xf32>
  %pb = braid.broadcast %part dims = [0, 1] : tensor<8x8xf32> -> tensor<2x4x8x8xf32>
  %pm = braid.causal_mask %pb fill = 0.0 : tensor<2x4x8x8xf32>
  %pr = braid.reduce_sum %pm dims = [0, 1] : tensor<2x4x8x8xf32> -> tensor<8x8xf32>
  return %p, %m, %pm, %pr : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<8x8xf32>
}

// A softmax with a folded causal mask keeps a split off the last two
// dimensions: split heads pass through.
// CHECK-LABEL: func.func @causal_softmax
// CHECK-SAME: -> (tensor<2x2x8x8xf32> {braid.sharding = #braid.sharding<split 1>}, tensor<2x2x8x8xf32> {braid.sharding = #braid.sharding<split 1>})
// CHECK: braid.softmax %arg0 dim = 3 {causal, scale = 5.000000e-01 : f64} : tensor<2x2x8x8xf32>
// CHECK: braid.softmax_backward {{.*}} dim = 3 {causal, scale = 5.000000e-01 : f64} : tensor<2x2x8x8xf32>
func.func @causal_softmax(%s: tensor<2x4x8x8xf32> {braid.sharding = #s1})
    -> (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) {
  %p = braid.softmax %s dim = 3 {causal, scale = 0.5} : tensor<2x4x8x8xf32>
  %dp = braid.softmax_backward %p, %p dim = 3 {causal, scale = 0.5} : tensor<2x4x8x8xf32>
  return %p, %dp : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>
}

// A gelu with a folded bias: the features split with the bias split,
// the tokens split with the bias whole.
// CHECK-LABEL: func.func @bias_gelu
// CHECK: braid.gelu %arg0, %arg1 : tensor<8x8xf32>, tensor<8xf32>
// CHECK: braid.gelu_backward %arg2, %arg0, %arg1 : tensor<8x8xf32>, tensor<8xf32>
// CHECK: braid.gelu %arg3, %arg4 : tensor<4x16xf32>, tensor<16xf32>
func.func @bias_gelu(%x: tensor<8x16xf32> {braid.sharding = #s1},
                     %b: tensor<16xf32> {braid.sharding = #s0},
                     %dy: tensor<8x16xf32> {braid.sharding = #s1},
                     %t: tensor<8x16xf32> {braid.sharding = #s0},
                     %bt: tensor<16xf32>)
    -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) {
  %y = braid.gelu %x, %b : tensor<8x16xf32>, tensor<16xf32>
  %d = braid.gelu_backward %dy, %x, %b : tensor<8x16xf32>, tensor<16xf32>
  %z = braid.gelu %t, %bt : tensor<8x16xf32>, tensor<16xf32>
  return %y, %d, %z : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}

// Reductions: a split elsewhere is renumbered; a sum over the split
// dimension is a partial sum.
// CHECK-LABEL: func.func @reductions
// CHECK-SAME: -> (tensor<8x3xf32> {braid.sharding = #braid.sharding<split 1>}, tensor<3xf32> {braid.sharding = #braid.sharding<split 0>}, tensor<4x8xf32>)
// CHECK: braid.reduce_mean %arg0 dims = [0] {keep_dims} : tensor<4x8x3xf32> -> tensor<1x8x3xf32>
// CHECK: braid.reduce_sum %arg0 dims = [0, 1] : tensor<4x8x3xf32> -> tensor<3xf32>
// CHECK: %[[P:.*]] = braid.reduce_sum %arg0 dims = [2] : tensor<4x8x3xf32> -> tensor<4x8xf32>
// CHECK: braid.all_reduce %[[P]] on @world grid_axes = [1] reduction = sum : tensor<4x8xf32>
func.func @reductions(%x: tensor<4x8x6xf32> {braid.sharding = #braid.sharding<split 2>})
    -> (tensor<8x6xf32>, tensor<6xf32>, tensor<4x8xf32>) {
  %m = braid.reduce_mean %x dims = [0] {keep_dims} : tensor<4x8x6xf32> -> tensor<1x8x6xf32>
  %m2 = braid.reshape %m : tensor<1x8x6xf32> -> tensor<8x6xf32>
  %s = braid.reduce_sum %x dims = [0, 1] : tensor<4x8x6xf32> -> tensor<6xf32>
  %p = braid.reduce_sum %x dims = [2] : tensor<4x8x6xf32> -> tensor<4x8xf32>
  return %m2, %s, %p : tensor<8x6xf32>, tensor<6xf32>, tensor<4x8xf32>
}

// Layer norm over a split token dimension (sequence parallelism): the
// backward's gamma and beta gradients are partial sums.
// CHECK-LABEL: func.func @layer_norm
// CHECK: braid.layer_norm %arg0, %arg1, %arg2 eps = 1.000000e-05 : tensor<4x16xf32>, tensor<16xf32> -> tensor<4xf32>
// CHECK: %[[DX:.*]], %[[DG:.*]], %[[DB:.*]] = braid.layer_norm_backward {{.*}} : tensor<4x16xf32>, tensor<4xf32>, tensor<16xf32>
// CHECK-DAG: braid.all_reduce %[[DG]] on @world grid_axes = [1] reduction = sum
// CHECK-DAG: braid.all_reduce %[[DB]] on @world grid_axes = [1] reduction = sum
func.func @layer_norm(%x: tensor<8x16xf32> {braid.sharding = #s0}, %g: tensor<16xf32>,
                      %b: tensor<16xf32>)
    -> (tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %y, %mean, %rstd = braid.layer_norm %x, %g, %b eps = 1.0e-5 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8xf32>
  %dx, %dg, %db = braid.layer_norm_backward %y, %x, %mean, %rstd, %g : tensor<8x16xf32>, tensor<8xf32>, tensor<16xf32>
  return %dx, %dg, %db : tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>
}

// Embedding tables split along their features, and the table gradient.
// CHECK-LABEL: func.func @embedding
// CHECK: braid.embedding %arg0, %arg1 : tensor<10x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
// CHECK: braid.embedding_backward {{.*}} : tensor<2x3x4xf32>, tensor<2x3xi64> -> tensor<10x4xf32>
func.func @embedding(%t: tensor<10x8xf32> {braid.sharding = #s1}, %ids: tensor<2x3xi64>)
    -> tensor<10x8xf32> {
  %e = braid.embedding %t, %ids : tensor<10x8xf32>, tensor<2x3xi64> -> tensor<2x3x8xf32>
  %d = braid.embedding_backward %e, %ids : tensor<2x3x8xf32>, tensor<2x3xi64> -> tensor<10x8xf32>
  return %d : tensor<10x8xf32>
}

// A table split by rows (the vocabulary): each rank looks up its rows
// (zero for the others), a partial sum reduced over the axis; the
// gradient, added to one split by rows (a tied lm head), computes this
// rank's rows only; its padding row stays a row of the whole table (the
// shard holding row 7 leaves it zero, the other has none).
// CHECK-LABEL: func.func @embedding_rows
// CHECK-SAME: -> (tensor<2x3x8xf32>, tensor<5x8xf32> {braid.sharding = #braid.sharding<split 0>})
// CHECK: %[[I:.*]] = braid.axis_index on @world grid_axes = [1] : tensor<i64>
// CHECK: %[[E:.*]] = braid.embedding_shard %arg0, %arg1, %[[I]] parts = 2 : tensor<5x8xf32>, tensor<2x3xi64> -> tensor<2x3x8xf32>
// CHECK-NEXT: %[[D:.*]] = braid.embedding_shard_backward %arg2, %arg1, %[[I]] parts = 2 padding_idx = 7 : tensor<2x3x8xf32>, tensor<2x3xi64> -> tensor<5x8xf32>
// CHECK-NEXT: %[[T:.*]] = braid.add %arg0, %[[D]] : tensor<5x8xf32>
// CHECK-NEXT: %[[R:.*]] = braid.all_reduce %[[E]] on @world grid_axes = [1] reduction = sum : tensor<2x3x8xf32>
// CHECK-NEXT: return %[[R]], %[[T]]
func.func @embedding_rows(%t: tensor<10x8xf32> {braid.sharding = #s0}, %ids: tensor<2x3xi64>,
                          %g: tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<10x8xf32>) {
  %e = braid.embedding %t, %ids : tensor<10x8xf32>, tensor<2x3xi64> -> tensor<2x3x8xf32>
  %d = braid.embedding_backward %g, %ids padding_idx = 7 : tensor<2x3x8xf32>, tensor<2x3xi64> -> tensor<10x8xf32>
  %tied = braid.add %t, %d : tensor<10x8xf32>
  return %e, %tied : tensor<2x3x8xf32>, tensor<10x8xf32>
}

// An untied table's gradient reaches its update through the data-parallel
// all-reduce (axis 0), which passes the request for this rank's rows on.
// CHECK-LABEL: func.func @embedding_rows_untied
// CHECK: %[[D:.*]] = braid.embedding_shard_backward %arg1, %arg2, %{{.*}} parts = 2 : tensor<2x3x8xf32>, tensor<2x3xi64> -> tensor<5x8xf32>
// CHECK-NEXT: %[[R:.*]] = braid.all_reduce %[[D]] on @world grid_axes = [0] reduction = avg grad_of = ["t"] : tensor<5x8xf32>
// CHECK-NEXT: braid.sgd %arg0, %[[R]], %arg3
func.func @embedding_rows_untied(%t: tensor<10x8xf32> {braid.role = #braid.role<parameter "t">, braid.sharding = #s0},
                                 %g: tensor<2x3x8xf32>, %ids: tensor<2x3xi64>,
                                 %m: tensor<10x8xf32> {braid.role = #braid.role<optimizer_state "t.momentum">, braid.sharding = #s0})
    -> (tensor<10x8xf32> {braid.role = #braid.role<parameter "t">},
        tensor<10x8xf32> {braid.role = #braid.role<optimizer_state "t.momentum">}) {
  %d = braid.embedding_backward %g, %ids : tensor<2x3x8xf32>, tensor<2x3xi64> -> tensor<10x8xf32>
  %r = braid.all_reduce %d on @world grid_axes = [0] reduction = avg grad_of = ["t"] : tensor<10x8xf32>
  %n:2 = braid.sgd %t, %r, %m lr = 0.1 momentum = 0.9 weight_decay = 0.0 : tensor<10x8xf32>
  return %n#0, %n#1 : tensor<10x8xf32>, tensor<10x8xf32>
}

// A whole table gradient with no user that wants it split stays whole.
// CHECK-LABEL: func.func @embedding_rows_whole_gradient
// CHECK-SAME: -> tensor<10x8xf32>
// CHECK: braid.embedding_backward {{.*}} -> tensor<10x8xf32>
func.func @embedding_rows_whole_gradient(%g: tensor<2x3x8xf32>, %ids: tensor<2x3xi64>)
    -> tensor<10x8xf32> {
  %d = braid.embedding_backward %g, %ids : tensor<2x3x8xf32>, tensor<2x3xi64> -> tensor<10x8xf32>
  return %d : tensor<10x8xf32>
}

// Logits split along the classes (a column-parallel lm head): the
// vocabulary-parallel cross-entropy, each rank's summary gathered once for
// the loss and again for the gradient, which stays split.
// CHECK-LABEL: func.func @cross_entropy_classes
// CHECK-SAME: -> (tensor<f32>, tensor<8x5xf32> {braid.sharding = #braid.sharding<split 1>})
// CHECK: %[[I:.*]] = braid.axis_index on @world grid_axes = [1] : tensor<i64>
// CHECK: %[[S:.*]] = braid.cross_entropy_shard_stats %arg0, %arg1, %[[I]] parts = 2 : tensor<8x5xf32>, tensor<8xi64> -> tensor<1x8x3xf32>
// CHECK-NEXT: %[[G:.*]] = braid.all_gather %[[S]] on @world grid_axes = [1] gather_dim = 0 : tensor<1x8x3xf32> -> tensor<2x8x3xf32>
// CHECK-NEXT: %[[L:.*]] = braid.cross_entropy_shard_loss %[[G]] reduction = sum : tensor<2x8x3xf32> -> tensor<f32>
// CHECK: %[[S2:.*]] = braid.cross_entropy_shard_stats %arg0, %arg1, %[[I]] parts = 2
// CHECK-NEXT: %[[G2:.*]] = braid.all_gather %[[S2]]
// CHECK-NEXT: braid.cross_entropy_shard_backward %{{.*}}, %arg0, %arg1, %[[G2]], %[[I]] reduction = sum : tensor<f32>, tensor<8x5xf32>, tensor<8xi64>, tensor<2x8x3xf32>
func.func @cross_entropy_classes(%logits: tensor<8x10xf32> {braid.sharding = #s1}, %l: tensor<8xi64>)
    -> (tensor<f32>, tensor<8x10xf32>) {
  %loss = braid.cross_entropy %logits, %l reduction = sum : tensor<8x10xf32>, tensor<8xi64> -> tensor<f32>
  %one = braid.constant dense<1.0> : tensor<f32>
  %d = braid.cross_entropy_backward %one, %logits, %l reduction = sum : tensor<f32>, tensor<8x10xf32>, tensor<8xi64>
  return %loss, %d : tensor<f32>, tensor<8x10xf32>
}

// Reshapes map a split to the outermost dimension of its group (features
// into heads and back); transposes and broadcasts renumber it.
// CHECK-LABEL: func.func @shapes
// CHECK: braid.reshape %arg0 : tensor<6x8xf32> -> tensor<2x3x2x4xf32>
// CHECK: braid.transpose {{.*}} : tensor<2x3x2x4xf32> -> tensor<2x2x3x4xf32>
// CHECK: braid.broadcast {{.*}} dims = [2] : tensor<2x2x3x4xf32> -> tensor<2x2x5x3x4xf32>
// CHECK: braid.reshape {{.*}} : tensor<2x2x5x3x4xf32> -> tensor<2x10x3x4xf32>
// CHECK: braid.transpose {{.*}} : tensor<2x2x3x4xf32> -> tensor<2x3x2x4xf32>
// CHECK: braid.reshape {{.*}} : tensor<2x3x2x4xf32> -> tensor<6x8xf32>
func.func @shapes(%x: tensor<6x16xf32> {braid.sharding = #s1})
    -> (tensor<2x20x3x4xf32>, tensor<6x16xf32>) {
  %h = braid.reshape %x : tensor<6x16xf32> -> tensor<2x3x4x4xf32>
  %t = braid.transpose %h permutation = [0, 2, 1, 3] : tensor<2x3x4x4xf32> -> tensor<2x4x3x4xf32>
  %b = braid.broadcast %t dims = [2] : tensor<2x4x3x4xf32> -> tensor<2x4x5x3x4xf32>
  %e = braid.reshape %b : tensor<2x4x5x3x4xf32> -> tensor<2x20x3x4xf32>
  %bt = braid.transpose %t permutation = [0, 2, 1, 3] : tensor<2x4x3x4xf32> -> tensor<2x3x4x4xf32>
  %m = braid.reshape %bt : tensor<2x3x4x4xf32> -> tensor<6x16xf32>
  return %e, %m : tensor<2x20x3x4xf32>, tensor<6x16xf32>
}

// Batch and heads merged for a batched matmul (as torch's bmm is exported):
// a split of the heads becomes one block per sequence, and back.
// CHECK-LABEL: func.func @merged_heads
// CHECK-SAME: -> (tensor<4x8x8xf32> {braid.sharding = #braid.sharding<split 0 blocks [4, 4]>}, tensor<2x2x8x8xf32> {braid.sharding = #braid.sharding<split 1>})
// CHECK: braid.reshape %arg0 : tensor<2x2x8x4xf32> -> tensor<4x8x4xf32>
// CHECK: braid.matmul {{.*}} : tensor<4x8x4xf32>, tensor<4x8x4xf32> -> tensor<4x8x8xf32>
// CHECK: braid.reshape {{.*}} : tensor<4x8x8xf32> -> tensor<2x2x8x8xf32>
func.func @merged_heads(%q: tensor<2x4x8x4xf32> {braid.sharding = #s1})
    -> (tensor<8x8x8xf32>, tensor<2x4x8x8xf32>) {
  %m = braid.reshape %q : tensor<2x4x8x4xf32> -> tensor<8x8x4xf32>
  %s = braid.matmul %m, %m {transpose_b} : tensor<8x8x4xf32>, tensor<8x8x4xf32> -> tensor<8x8x8xf32>
  %b = braid.reshape %s : tensor<8x8x8xf32> -> tensor<2x4x8x8xf32>
  return %s, %b : tensor<8x8x8xf32>, tensor<2x4x8x8xf32>
}

// A fused q/k/v projection split by blocks: slicing one block gives a
// plain split, at the block's local offset; concatenating splits (the
// gradient) gives blocks again.
// CHECK-LABEL: func.func @fused_blocks
// CHECK-SAME: -> (tensor<4x4xf32> {braid.sharding = #braid.sharding<split 1>}, tensor<4x2xf32> {braid.sharding = #braid.sharding<split 1>}, tensor<4x8xf32> {braid.sharding = #braid.sharding<split 1 blocks [8, 4, 4]>})
// CHECK: %[[QKV:.*]] = braid.matmul {{.*}} -> tensor<4x8xf32>
// CHECK: braid.slice %[[QKV]] offsets = [0, 0] : tensor<4x8xf32> -> tensor<4x4xf32>
// CHECK: braid.slice %[[QKV]] offsets = [0, 6] : tensor<4x8xf32> -> tensor<4x2xf32>
// CHECK: braid.concat {{.*}} dim = 1 : tensor<4x4xf32>, tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x8xf32>
func.func @fused_blocks(%x: tensor<4x3xf32>,
                        %w: tensor<16x3xf32> {braid.sharding = #braid.sharding<split 0 blocks [8, 4, 4]>})
    -> (tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x16xf32>) {
  %qkv = braid.matmul %x, %w {transpose_b} : tensor<4x3xf32>, tensor<16x3xf32> -> tensor<4x16xf32>
  %q = braid.slice %qkv offsets = [0, 0] : tensor<4x16xf32> -> tensor<4x8xf32>
  %v = braid.slice %qkv offsets = [0, 12] : tensor<4x16xf32> -> tensor<4x4xf32>
  %cat = braid.concat %q, %v, %v dim = 1 : tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x16xf32>
  return %q, %v, %cat : tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x16xf32>
}

// Constants and fills are replicated; losses take replicated logits. An
// nll_loss of a log_softmax over the classes is one cross_entropy (as
// torch exports F.cross_entropy); one of anything else stays.
// CHECK-LABEL: func.func @losses
// CHECK: %[[R:.*]] = braid.all_reduce {{.*}} grid_axes = [1]
// CHECK: braid.cross_entropy %[[R]]
// CHECK: braid.cross_entropy_backward
// CHECK: %[[LP:.*]] = braid.log_softmax %[[R]]
// CHECK: braid.cross_entropy %[[R]], %arg2
// CHECK: braid.nll_loss_backward %{{.*}}, %[[LP]]
// CHECK: braid.nll_loss %arg3, %arg2
func.func @losses(%x: tensor<8x32xf32> {braid.sharding = #s1},
                  %w: tensor<4x32xf32> {braid.sharding = #s1}, %l: tensor<8xi64>,
                  %p: tensor<8x4xf32>)
    -> (tensor<f32>, tensor<8x4xf32>, tensor<f32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>) {
  %logits = braid.matmul %x, %w {transpose_b} : tensor<8x32xf32>, tensor<4x32xf32> -> tensor<8x4xf32>
  %loss = braid.cross_entropy %logits, %l reduction = mean : tensor<8x4xf32>, tensor<8xi64> -> tensor<f32>
  %one = braid.constant dense<1.0> : tensor<f32>
  %d = braid.cross_entropy_backward %one, %logits, %l reduction = mean : tensor<f32>, tensor<8x4xf32>, tensor<8xi64>
  %lp = braid.log_softmax %logits dim = 1 : tensor<8x4xf32>
  %nll = braid.nll_loss %lp, %l reduction = mean : tensor<8x4xf32>, tensor<8xi64> -> tensor<f32>
  %dn = braid.nll_loss_backward %one, %lp, %l reduction = mean : tensor<f32>, tensor<8x4xf32>, tensor<8xi64>
  %other = braid.nll_loss %p, %l reduction = sum : tensor<8x4xf32>, tensor<8xi64> -> tensor<f32>
  %z = braid.fill 0.0 : tensor<8x4xf32>
  return %loss, %d, %nll, %dn, %z, %other : tensor<f32>, tensor<8x4xf32>, tensor<f32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>
}

// torch's cross-entropy of logits split along the classes (log_softmax,
// nll_loss and their backward): fused, then the vocabulary-parallel one.
// CHECK-LABEL: func.func @torch_cross_entropy_classes
// CHECK-NOT: braid.log_softmax
// CHECK-NOT: braid.nll_loss
// CHECK: braid.cross_entropy_shard_loss
// CHECK-NOT: braid.log_softmax
// CHECK-NOT: braid.nll_loss
// CHECK: braid.cross_entropy_shard_backward
// CHECK-NOT: braid.log_softmax
// CHECK-NOT: braid.nll_loss
// CHECK: return
func.func @torch_cross_entropy_classes(%logits: tensor<8x10xf32> {braid.sharding = #s1},
                                       %l: tensor<8xi64>) -> (tensor<f32>, tensor<8x10xf32>) {
  %lp = braid.log_softmax %logits dim = 1 : tensor<8x10xf32>
  %loss = braid.nll_loss %lp, %l reduction = mean : tensor<8x10xf32>, tensor<8xi64> -> tensor<f32>
  %one = braid.constant dense<1.0> : tensor<f32>
  %dlp = braid.nll_loss_backward %one, %lp, %l reduction = mean : tensor<f32>, tensor<8x10xf32>, tensor<8xi64>
  %d = braid.log_softmax_backward %dlp, %lp dim = 1 : tensor<8x10xf32>
  return %loss, %d : tensor<f32>, tensor<8x10xf32>
}

// The same with torch's ignore_index: every op of the fused and of the
// vocabulary-parallel form keeps it (the loss skips the rows whose
// summaries say they were ignored).
// CHECK-LABEL: func.func @torch_cross_entropy_ignore_index
// CHECK: braid.cross_entropy_shard_stats {{.*}} parts = 2 ignore_index = -100 :
// CHECK: braid.cross_entropy_shard_loss {{.*}} reduction = mean :
// CHECK: braid.cross_entropy_shard_stats {{.*}} parts = 2 ignore_index = -100 :
// CHECK: braid.cross_entropy_shard_backward {{.*}} reduction = mean ignore_index = -100 :
func.func @torch_cross_entropy_ignore_index(%logits: tensor<8x10xf32> {braid.sharding = #s1},
                                            %l: tensor<8xi64>) -> (tensor<f32>, tensor<8x10xf32>) {
  %lp = braid.log_softmax %logits dim = 1 : tensor<8x10xf32>
  %loss = braid.nll_loss %lp, %l reduction = mean ignore_index = -100 : tensor<8x10xf32>, tensor<8xi64> -> tensor<f32>
  %one = braid.constant dense<1.0> : tensor<f32>
  %dlp = braid.nll_loss_backward %one, %lp, %l reduction = mean ignore_index = -100 : tensor<f32>, tensor<8x10xf32>, tensor<8xi64>
  %d = braid.log_softmax_backward %dlp, %lp dim = 1 : tensor<8x10xf32>
  return %loss, %d : tensor<f32>, tensor<8x10xf32>
}

// Gradient clipping: the squared norm of split gradients is a partial sum,
// of replicated ones replicated; where the two meet, one scalar all-reduce
// over the tensor-parallel axis. The updates scaled by the factor keep each
// parameter's split.
// CHECK-LABEL: func.func @clip_norm
// CHECK: %[[SS:.*]] = braid.sum_squares %arg0, %arg1 : tensor<4x4xf32>, tensor<4x2xf32> -> tensor<f32>
// CHECK: %[[SR:.*]] = braid.sum_squares %arg2 : tensor<4xf32> -> tensor<f32>
// CHECK: %[[R:.*]] = braid.all_reduce %[[SS]] on @world grid_axes = [1] reduction = sum : tensor<f32>
// CHECK: %[[T:.*]] = braid.add %[[R]], %[[SR]] : tensor<f32>
// CHECK: %[[C:.*]] = braid.clip_coefficient %[[T]]
// CHECK: braid.sgd %arg0, %arg0, %arg0 lr = 1.000000e-01 grad_scale = %[[C]] {{.*}} : tensor<4x4xf32>
// CHECK-NOT: braid.all_reduce
// CHECK: return
func.func @clip_norm(%a: tensor<4x8xf32> {braid.sharding = #s1},
                     %b: tensor<4x4xf32> {braid.sharding = #s1}, %r: tensor<4xf32>)
    -> (tensor<4x8xf32>, tensor<4xf32>) {
  %ss = braid.sum_squares %a, %b : tensor<4x8xf32>, tensor<4x4xf32> -> tensor<f32>
  %sr = braid.sum_squares %r : tensor<4xf32> -> tensor<f32>
  %t = braid.add %ss, %sr : tensor<f32>
  %c = braid.clip_coefficient %t max_norm = 1.0 : tensor<f32>
  %ga:2 = braid.sgd %a, %a, %a lr = 0.1 grad_scale = %c momentum = 0.9 weight_decay = 0.0 : tensor<4x8xf32>
  %gr:2 = braid.sgd %r, %r, %r lr = 0.1 grad_scale = %c momentum = 0.9 weight_decay = 0.0 : tensor<4xf32>
  return %ga#0, %gr#0 : tensor<4x8xf32>, tensor<4xf32>
}

// Optimizer updates and the data-parallel gradient all-reduce (axis 0)
// keep the parameter's split; a partial gradient is summed first.
// CHECK-LABEL: func.func @updates
// CHECK: %[[G:.*]] = braid.all_reduce %arg1 on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<4x8xf32>
// CHECK: braid.adamw %arg0, %[[G]], %arg2, %arg3, %arg4 {{.*}} : tensor<4x8xf32>, tensor<f32>
// CHECK: %[[D:.*]] = braid.matmul %arg6, %arg7 {transpose_b} : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[P:.*]] = braid.all_reduce %[[D]] on @world grid_axes = [1] reduction = sum : tensor<4x8xf32>
// CHECK-NEXT: braid.sgd %arg5, %[[P]], %arg8 {{.*}} : tensor<4x8xf32>
func.func @updates(%w: tensor<4x16xf32> {braid.role = #braid.role<parameter "w">, braid.sharding = #s1},
                   %dw: tensor<4x16xf32> {braid.sharding = #s1},
                   %m: tensor<4x16xf32> {braid.role = #braid.role<optimizer_state "w.exp_avg">, braid.sharding = #s1},
                   %v: tensor<4x16xf32> {braid.role = #braid.role<optimizer_state "w.exp_avg_sq">, braid.sharding = #s1},
                   %step: tensor<f32> {braid.role = #braid.role<optimizer_state "step">},
                   %u: tensor<4x8xf32> {braid.role = #braid.role<parameter "u">},
                   %a: tensor<4x32xf32> {braid.sharding = #s1},
                   %b: tensor<8x32xf32> {braid.sharding = #s1},
                   %ub: tensor<4x8xf32> {braid.role = #braid.role<optimizer_state "u.momentum">})
    -> (tensor<4x16xf32> {braid.role = #braid.role<parameter "w">},
        tensor<4x8xf32> {braid.role = #braid.role<parameter "u">}) {
  %g = braid.all_reduce %dw on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<4x16xf32>
  %w2, %m2, %v2 = braid.adamw %w, %g, %m, %v, %step lr = 1.0e-3 beta1 = 0.9 beta2 = 0.999 eps = 1.0e-8 weight_decay = 0.0 : tensor<4x16xf32>, tensor<f32>
  %du = braid.matmul %a, %b {transpose_b} : tensor<4x32xf32>, tensor<8x32xf32> -> tensor<4x8xf32>
  %u2, %ub2 = braid.sgd %u, %du, %ub lr = 0.1 momentum = 0.0 weight_decay = 0.0 : tensor<4x8xf32>
  return %w2, %u2 : tensor<4x16xf32>, tensor<4x8xf32>
}

// A function without braid.sharding is not changed.
// CHECK-LABEL: func.func @unchanged
// CHECK-NOT: braid.tensor_parallel
// CHECK: braid.matmul %arg0, %arg1 : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
func.func @unchanged(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>) -> tensor<4x4xf32> {
  %y = braid.matmul %a, %b : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// Elementwise functions keep a split (each element its own), and a partial
// sum is reduced before them (none is linear).
// CHECK-LABEL: func.func @functions_split
// CHECK: braid.unary tanh %arg0 : tensor<8x8xf32>
// CHECK: braid.pow {{.*}} exponent = 3.000000e+00 : tensor<8x8xf32>
// CHECK: braid.unary_backward silu {{.*}} : tensor<8x8xf32>
// CHECK: braid.where %arg1, {{.*}} : tensor<8x8xi1>, tensor<8x8xf32>
func.func @functions_split(%x: tensor<8x16xf32> {braid.sharding = #s1},
                           %m: tensor<8x16xi1> {braid.sharding = #s1})
    -> (tensor<8x16xf32> {braid.sharding = #s1}) {
  %t = braid.unary tanh %x : tensor<8x16xf32>
  %p = braid.pow %t exponent = 3.0 : tensor<8x16xf32>
  %d = braid.unary_backward silu %p, %x : tensor<8x16xf32>
  %w = braid.where %m, %d, %x : tensor<8x16xi1>, tensor<8x16xf32>
  return %w : tensor<8x16xf32>
}

// Attention on heads split alike (query, key and value heads: 8 and 4
// grouped heads over 2 ranks), output and logsumexp split on the heads.
// CHECK-LABEL: func.func @attention_heads
// CHECK-SAME: -> (tensor<2x4x16x8xf32> {braid.sharding = #braid.sharding<split 1>})
// CHECK: braid.attention %arg0, %arg1, %arg2 {causal} scale = 2.500000e-01 : tensor<2x4x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32> -> tensor<2x4x16x8xf32>, tensor<2x4x16xf32>
func.func @attention_heads(%q: tensor<2x8x16x8xf32> {braid.sharding = #s1},
                           %k: tensor<2x4x16x8xf32> {braid.sharding = #s1},
                           %v: tensor<2x4x16x8xf32> {braid.sharding = #s1})
    -> (tensor<2x8x16x8xf32> {braid.sharding = #s1}) {
  %o, %l = braid.attention %q, %k, %v {causal} scale = 0.25 : tensor<2x8x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32> -> tensor<2x8x16x8xf32>, tensor<2x8x16xf32>
  return %o : tensor<2x8x16x8xf32>
}

// The dropout mask is drawn whole: from replicated operands, replicated.
// CHECK-LABEL: func.func @dropout_mask_replicated
// CHECK: braid.dropout_mask %arg0, %{{.*}} keep = 5.000000e-01 seed = 0 stream = 0 : tensor<8x16xi1>
func.func @dropout_mask_replicated(%s: tensor<f32>) -> tensor<8x16xi1> {
  %r = braid.axis_index on @world grid_axes = [0] : tensor<i64>
  %m = braid.dropout_mask %s, %r keep = 0.5 seed = 0 stream = 0 : tensor<8x16xi1>
  return %m : tensor<8x16xi1>
}
