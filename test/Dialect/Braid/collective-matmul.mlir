// braid-collective-matmul: an all-gather read by matmuls, and a matmul read
// by a reduce-scatter, become ring steps on braid.collective_permute.
//
// RUN: braid-opt %s --split-input-file --braid-collective-matmul | FileCheck %s

// The forward's all-gather of the tokens before a column-parallel matmul
// (tp 4): rank i multiplies the piece it holds while passing it to rank
// i + 1; piece k is rank i - k's, and its product is block i - k of the
// result.
// CHECK-LABEL: func.func @gather_rows
// CHECK-NEXT: %[[I:.*]] = braid.axis_index on @world grid_axes = [1] : tensor<i64>
// CHECK-NEXT: %[[X1:.*]] = braid.collective_permute %arg0 on @world grid_axes = [1] offset = 1 : tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT: %[[P0:.*]] = braid.matmul %arg0, %arg1 {transpose_b} : tensor<2x8xf32>, tensor<16x8xf32> -> tensor<2x16xf32>
// CHECK-NEXT: %[[X2:.*]] = braid.collective_permute %[[X1]] on @world grid_axes = [1] offset = 1
// CHECK-NEXT: %[[P1:.*]] = braid.matmul %[[X1]], %arg1 {transpose_b}
// CHECK-NEXT: %[[X3:.*]] = braid.collective_permute %[[X2]] on @world grid_axes = [1] offset = 1
// CHECK-NEXT: %[[P2:.*]] = braid.matmul %[[X2]], %arg1 {transpose_b}
// CHECK-NEXT: %[[P3:.*]] = braid.matmul %[[X3]], %arg1 {transpose_b}
// CHECK-NEXT: %[[Y:.*]] = braid.shard_concat %[[P0]], %[[P1]], %[[P2]], %[[P3]] at %[[I]] dim = 0 shifts = [0, -1, -2, -3] : tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: return %[[Y]]
// CHECK-NOT: braid.all_gather
shard.grid @world(shape = 1x4)
func.func @gather_rows(%x: tensor<2x8xf32>, %w: tensor<16x8xf32>) -> tensor<8x16xf32> {
  %g = braid.all_gather %x on @world grid_axes = [1] gather_dim = 0 : tensor<2x8xf32> -> tensor<8x8xf32>
  %y = braid.matmul %g, %w {transpose_b} : tensor<8x8xf32>, tensor<16x8xf32> -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// One sequence per rank ([1, seq, hidden]): the sequence, dimension 1, is
// the product's rows.
// CHECK-LABEL: func.func @gather_sequence
// CHECK: braid.collective_permute %arg0 {{.*}} : tensor<1x4x8xf32> -> tensor<1x4x8xf32>
// CHECK: braid.shard_concat {{.*}} dim = 1 shifts = [0, -1] : tensor<1x4x16xf32>, tensor<1x4x16xf32> -> tensor<1x8x16xf32>
shard.grid @world(shape = 1x2)
func.func @gather_sequence(%x: tensor<1x4x8xf32>, %w: tensor<16x8xf32>) -> tensor<1x8x16xf32> {
  %g = braid.all_gather %x on @world grid_axes = [1] gather_dim = 1 : tensor<1x4x8xf32> -> tensor<1x8x8xf32>
  %y = braid.matmul %g, %w {transpose_b} : tensor<1x8x8xf32>, tensor<16x8xf32> -> tensor<1x8x16xf32>
  return %y : tensor<1x8x16xf32>
}

// -----

// The backward: the gathered gradient of a row-parallel layer's output is
// read by its input gradient (rows: a product per piece, joined), and by
// its weight gradient (the tokens contracted) and bias gradient (a sum over
// the tokens): those read the pieces joined once, after the ring (t
// products summed would add t - 1 sums of the whole weight gradient).
// CHECK-LABEL: func.func @backward
// CHECK-NEXT: %[[I:.*]] = braid.axis_index
// CHECK-NEXT: %[[G1:.*]] = braid.collective_permute %arg0 {{.*}} offset = 1
// CHECK-NEXT: %[[DX0:.*]] = braid.matmul %arg0, %arg1 : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %[[DX1:.*]] = braid.matmul %[[G1]], %arg1
// CHECK-NEXT: %[[DX:.*]] = braid.shard_concat %[[DX0]], %[[DX1]] at %[[I]] dim = 0 shifts = [0, -1]
// CHECK-NEXT: %[[G:.*]] = braid.shard_concat %arg0, %[[G1]] at %[[I]] dim = 0 shifts = [0, -1] : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[DB:.*]] = braid.reduce_sum %[[G]] dims = [0]
// CHECK-NEXT: %[[H:.*]] = braid.relu %arg2
// CHECK-NEXT: %[[DW:.*]] = braid.matmul %[[G]], %[[H]] {transpose_a}
// CHECK-NEXT: return %[[DX]], %[[DW]], %[[DB]]
shard.grid @world(shape = 1x2)
func.func @backward(%dy: tensor<4x8xf32>, %w: tensor<8x16xf32>, %a: tensor<8x16xf32>)
    -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8xf32>) {
  %g = braid.all_gather %dy on @world grid_axes = [1] gather_dim = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
  %dx = braid.matmul %g, %w : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %db = braid.reduce_sum %g dims = [0] : tensor<8x8xf32> -> tensor<8xf32>
  %h = braid.relu %a : tensor<8x16xf32>
  %dw = braid.matmul %g, %h {transpose_a} : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  return %dx, %dw, %db : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8xf32>
}

// -----

// A row-parallel matmul's product reduce-scattered over the tokens (tp 4):
// at step k rank i computes block i - k - 1 of the product, adds the
// partial sum arriving from rank i - 1 and passes it on; after the last
// step (k = 3, block i itself: no shift) it holds the sum of block i.
// CHECK-LABEL: func.func @scatter_rows
// CHECK-NEXT: %[[I:.*]] = braid.axis_index
// CHECK-NEXT: %[[A0:.*]] = braid.shard_slice %arg0, %[[I]] dim = 0 parts = 4 shift = -1 : tensor<8x16xf32> -> tensor<2x16xf32>
// CHECK-NEXT: %[[S0:.*]] = braid.matmul %[[A0]], %arg1 {transpose_b} : tensor<2x16xf32>, tensor<8x16xf32> -> tensor<2x8xf32>
// CHECK-NEXT: %[[A1:.*]] = braid.shard_slice %arg0, %[[I]] dim = 0 parts = 4 shift = -2
// CHECK-NEXT: %[[P1:.*]] = braid.matmul %[[A1]], %arg1 {transpose_b}
// CHECK-NEXT: %[[R1:.*]] = braid.collective_permute %[[S0]] on @world grid_axes = [1] offset = 1 : tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT: %[[S1:.*]] = braid.add %[[P1]], %[[R1]]
// CHECK-NEXT: %[[A2:.*]] = braid.shard_slice %arg0, %[[I]] dim = 0 parts = 4 shift = -3
// CHECK-NEXT: %[[P2:.*]] = braid.matmul %[[A2]], %arg1 {transpose_b}
// CHECK-NEXT: %[[R2:.*]] = braid.collective_permute %[[S1]]
// CHECK-NEXT: %[[S2:.*]] = braid.add %[[P2]], %[[R2]]
// CHECK-NEXT: %[[A3:.*]] = braid.shard_slice %arg0, %[[I]] dim = 0 parts = 4 :
// CHECK-NEXT: %[[P3:.*]] = braid.matmul %[[A3]], %arg1 {transpose_b}
// CHECK-NEXT: %[[R3:.*]] = braid.collective_permute %[[S2]]
// CHECK-NEXT: %[[S3:.*]] = braid.add %[[P3]], %[[R3]]
// CHECK-NEXT: return %[[S3]]
shard.grid @world(shape = 1x4)
func.func @scatter_rows(%h: tensor<8x16xf32>, %w: tensor<8x16xf32>) -> tensor<2x8xf32> {
  %p = braid.matmul %h, %w {transpose_b} : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x8xf32>
  %r = braid.reduce_scatter %p on @world grid_axes = [1] reduction = sum scatter_dim = 0 : tensor<8x8xf32> -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}

// -----

// A product plus another partial sum, read by nothing else (a Llama's
// vocabulary-parallel embedding plus the attention's row-parallel output):
// each step adds its block of the addend too.
// CHECK-LABEL: func.func @scatter_sum
// CHECK: %[[I:.*]] = braid.axis_index
// CHECK: %[[P0:.*]] = braid.matmul
// CHECK-NEXT: %[[E0:.*]] = braid.shard_slice %arg2, %[[I]] dim = 0 parts = 2 shift = -1
// CHECK-NEXT: %[[S0:.*]] = braid.add %[[P0]], %[[E0]]
// CHECK: %[[P1:.*]] = braid.matmul
// CHECK-NEXT: %[[E1:.*]] = braid.shard_slice %arg2, %[[I]] dim = 0 parts = 2 :
// CHECK-NEXT: %[[Q1:.*]] = braid.add %[[P1]], %[[E1]]
// CHECK-NEXT: %[[R1:.*]] = braid.collective_permute %[[S0]]
// CHECK-NEXT: %[[S1:.*]] = braid.add %[[Q1]], %[[R1]]
// CHECK-NEXT: return %[[S1]]
shard.grid @world(shape = 1x2)
func.func @scatter_sum(%h: tensor<8x16xf32>, %w: tensor<8x16xf32>, %e: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %p = braid.matmul %h, %w {transpose_b} : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x8xf32>
  %s = braid.add %e, %p : tensor<8x8xf32>
  %r = braid.reduce_scatter %s on @world grid_axes = [1] reduction = sum scatter_dim = 0 : tensor<8x8xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// The exporter flattens [batch, seq, hidden] to [tokens, hidden] around its
// matmuls: a gather whose one reader is such a reshape gathers the pieces
// reshaped (the blocks are the same), and a reduce-scatter of one scatters
// before it; the rings then find their matmuls.
// CHECK-LABEL: func.func @reshapes
// CHECK: %[[X:.*]] = braid.reshape %arg0 : tensor<2x4x8xf32> -> tensor<8x8xf32>
// CHECK: braid.collective_permute %[[X]] {{.*}} : tensor<8x8xf32> -> tensor<8x8xf32>
// CHECK: %[[Y:.*]] = braid.shard_concat {{.*}} -> tensor<16x16xf32>
// CHECK: braid.shard_slice %[[Y]], %{{.*}} dim = 0 parts = 2 shift = -1 : tensor<16x16xf32> -> tensor<8x16xf32>
// CHECK: %[[S:.*]] = braid.add
// CHECK-NEXT: %[[R:.*]] = braid.reshape %[[S]] : tensor<8x8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT: return %[[R]]
// CHECK-NOT: braid.all_gather
shard.grid @world(shape = 1x2)
func.func @reshapes(%x: tensor<2x4x8xf32>, %w: tensor<16x8xf32>, %v: tensor<8x16xf32>) -> tensor<2x4x8xf32> {
  %g = braid.all_gather %x on @world grid_axes = [1] gather_dim = 0 : tensor<2x4x8xf32> -> tensor<4x4x8xf32>
  %f = braid.reshape %g : tensor<4x4x8xf32> -> tensor<16x8xf32>
  %y = braid.matmul %f, %w {transpose_b} : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x16xf32>
  %p = braid.matmul %y, %v {transpose_b} : tensor<16x16xf32>, tensor<8x16xf32> -> tensor<16x8xf32>
  %b = braid.reshape %p : tensor<16x8xf32> -> tensor<4x4x8xf32>
  %r = braid.reduce_scatter %b on @world grid_axes = [1] reduction = sum scatter_dim = 0 : tensor<4x4x8xf32> -> tensor<2x4x8xf32>
  return %r : tensor<2x4x8xf32>
}

// -----

// A gather along an inner dimension: its pieces are not the blocks of the
// flattened value, so it stays before the reshape, and the ring finds no
// matmul behind it.
// CHECK-LABEL: func.func @reshape_inner
// CHECK-NEXT: %[[G:.*]] = braid.all_gather %arg0 on @world grid_axes = [1] gather_dim = 1 : tensor<2x4x8xf32> -> tensor<2x8x8xf32>
// CHECK-NEXT: braid.reshape %[[G]] : tensor<2x8x8xf32> -> tensor<16x8xf32>
shard.grid @world(shape = 1x2)
func.func @reshape_inner(%x: tensor<2x4x8xf32>, %w: tensor<16x8xf32>) -> tensor<16x16xf32> {
  %g = braid.all_gather %x on @world grid_axes = [1] gather_dim = 1 : tensor<2x4x8xf32> -> tensor<2x8x8xf32>
  %f = braid.reshape %g : tensor<2x8x8xf32> -> tensor<16x8xf32>
  %y = braid.matmul %f, %w {transpose_b} : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x16xf32>
  return %y : tensor<16x16xf32>
}

// -----

// Scattered along the product's columns: the weight's rows are cut.
// CHECK-LABEL: func.func @scatter_columns
// CHECK: braid.shard_slice %arg1, %{{.*}} dim = 0 parts = 2 shift = -1 : tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK: braid.matmul %arg0, %{{.*}} {transpose_b} : tensor<8x16xf32>, tensor<4x16xf32> -> tensor<8x4xf32>
// CHECK-NOT: braid.reduce_scatter
shard.grid @world(shape = 1x2)
func.func @scatter_columns(%h: tensor<8x16xf32>, %w: tensor<8x16xf32>) -> tensor<8x4xf32> {
  %p = braid.matmul %h, %w {transpose_b} : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x8xf32>
  %r = braid.reduce_scatter %p on @world grid_axes = [1] reduction = sum scatter_dim = 1 : tensor<8x8xf32> -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

// Declined sites stay as they are: an all-gather no matmul multiplies
// along a dimension of its product (here a relu and a weight gradient
// read it), a product read by more than the reduce-scatter, an average, a
// gradient's reduce-scatter (a sharded optimizer's), and a group of one.
// CHECK-LABEL: func.func @declined
// CHECK-NOT: collective_permute
// CHECK: braid.all_gather %arg0 on @world grid_axes = [1]
// CHECK: braid.reduce_scatter {{.*}} reduction = sum scatter_dim = 0
// CHECK: braid.reduce_scatter {{.*}} reduction = avg
// CHECK: braid.reduce_scatter {{.*}} grad_of = ["v"]
// CHECK: braid.all_gather %arg0 on @world grid_axes = [0]
// CHECK-NOT: collective_permute
shard.grid @world(shape = 1x2)
func.func @declined(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %h: tensor<8x16xf32>,
                    %v: tensor<8x8xf32> {braid.role = #braid.role<parameter "v">})
    -> (tensor<8x16xf32>, tensor<8x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x16xf32>) {
  %g = braid.all_gather %x on @world grid_axes = [1] gather_dim = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
  %y = braid.matmul %g, %h {transpose_a} : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %z = braid.relu %g : tensor<8x8xf32>
  %p = braid.matmul %h, %w : tensor<8x16xf32>, tensor<16x8xf32> -> tensor<8x8xf32>
  %r = braid.reduce_scatter %p on @world grid_axes = [1] reduction = sum scatter_dim = 0 : tensor<8x8xf32> -> tensor<4x8xf32>
  %q = braid.matmul %h, %w : tensor<8x16xf32>, tensor<16x8xf32> -> tensor<8x8xf32>
  %a = braid.reduce_scatter %q on @world grid_axes = [1] reduction = avg scatter_dim = 0 : tensor<8x8xf32> -> tensor<4x8xf32>
  %s = braid.matmul %h, %w : tensor<8x16xf32>, tensor<16x8xf32> -> tensor<8x8xf32>
  %gr = braid.reduce_scatter %s on @world grid_axes = [1] reduction = sum scatter_dim = 0 grad_of = ["v"] : tensor<8x8xf32> -> tensor<4x8xf32>
  %one = braid.all_gather %x on @world grid_axes = [0] gather_dim = 0 : tensor<4x8xf32> -> tensor<4x8xf32>
  %o = braid.matmul %one, %w {transpose_b} : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  return %y, %z, %r, %a, %gr, %p, %o : tensor<8x16xf32>, tensor<8x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x16xf32>
}

// -----

// mode=auto asks the cost model. On 8 A100s the gathered 8192 x 1024
// tokens' product (8.6 GFLOP) is predicted faster as a ring, the 16 x 8
// one (a permute's latency a step, nothing to hide) slower: it stays
// whole. `report` names each decision with both predictions.
// RUN: braid-opt %s --split-input-file --braid-collective-matmul="mode=auto cluster=a100-8 report=true" 2>&1 | FileCheck %s --check-prefix=AUTO
// Each remark names its site: the piece, and the products it feeds.
// AUTO-DAG: remark: collective matmul: all_gather (tensor<1024x1024xbf16> a rank, 2.00 MiB, into matmuls of tensor<8192x512xbf16>) decomposed (predicted [[RING:[0-9.]+]] us as a ring, [[WHOLE:[0-9.]+]] us whole)
// AUTO-DAG: remark: collective matmul: all_gather (tensor<2x8xbf16> a rank, 32.00 B, into matmuls of tensor<16x16xbf16>) kept whole (predicted {{[0-9.]+}} us as a ring, {{[0-9.]+}} us whole)
// AUTO-DAG: remark: collective matmul: reduce_scatter (of a matmul's tensor<8x8xf32> product over k = 16 plus an addend, 128.00 B a block) kept whole
// AUTO-LABEL: func.func @auto
// (mode=on, the default, decomposes both.)
// CHECK-LABEL: func.func @auto
// CHECK-COUNT-8: braid.matmul {{.*}} -> tensor<1024x512xbf16>
// CHECK-COUNT-8: braid.matmul {{.*}} -> tensor<2x16xbf16>
// AUTO: braid.shard_concat {{.*}} -> tensor<8192x512xbf16>
// AUTO: braid.all_gather %arg2
// AUTO-NOT: braid.all_gather
shard.grid @world(shape = 1x8)
func.func @auto(%x: tensor<1024x1024xbf16>, %w: tensor<512x1024xbf16>, %s: tensor<2x8xbf16>,
                %v: tensor<16x8xbf16>) -> (tensor<8192x512xbf16>, tensor<16x16xbf16>) {
  %g = braid.all_gather %x on @world grid_axes = [1] gather_dim = 0 : tensor<1024x1024xbf16> -> tensor<8192x1024xbf16>
  %y = braid.matmul %g, %w {transpose_b} : tensor<8192x1024xbf16>, tensor<512x1024xbf16> -> tensor<8192x512xbf16>
  %h = braid.all_gather %s on @world grid_axes = [1] gather_dim = 0 : tensor<2x8xbf16> -> tensor<16x8xbf16>
  %z = braid.matmul %h, %v {transpose_b} : tensor<16x8xbf16>, tensor<16x8xbf16> -> tensor<16x16xbf16>
  return %y, %z : tensor<8192x512xbf16>, tensor<16x16xbf16>
}
