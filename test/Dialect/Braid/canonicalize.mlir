// RUN: braid-opt %s --canonicalize | FileCheck %s

// The data-movement ops' folders: a reshape to its input's type is its
// input, a reshape of a reshape reads the first one's input; the identity
// transpose is its input, a transpose of a transpose is one transpose by
// the composed permutation (result dimension i is the innermost input's
// inner[outer[i]]), and none at all where that is the identity.
// CHECK-LABEL: func.func @views
// CHECK-NEXT: %[[R:.*]] = braid.reshape %arg0 : tensor<2x3x4xf32> -> tensor<24xf32>
// CHECK-NEXT: %[[T:.*]] = braid.transpose %arg0 permutation = [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT: return %[[R]], %arg0, %[[T]], %arg0, %arg0
func.func @views(%x: tensor<2x3x4xf32>)
    -> (tensor<24xf32>, tensor<2x3x4xf32>, tensor<4x2x3xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %a = braid.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %b = braid.reshape %a : tensor<6x4xf32> -> tensor<24xf32>
  %c = braid.reshape %x : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %t = braid.transpose %x permutation = [1, 0, 2] : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %u = braid.transpose %t permutation = [2, 1, 0] : tensor<3x2x4xf32> -> tensor<4x2x3xf32>
  %v = braid.transpose %t permutation = [1, 0, 2] : tensor<3x2x4xf32> -> tensor<2x3x4xf32>
  %w = braid.transpose %x permutation = [0, 1, 2] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %b, %c, %u, %v, %w : tensor<24xf32>, tensor<2x3x4xf32>, tensor<4x2x3xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>
}


// braid.matmul reads a transpose of an operand's last two dimensions
// through its transpose_a/transpose_b flag (toggling one already set); a
// transpose another op reads stays for that op, and an operand read
// through a permutation keeps its transpose.
// CHECK-LABEL: func.func @matmul_transposes
// CHECK-NEXT: %[[T:.*]] = braid.transpose %arg1 permutation = [1, 0]
// CHECK-NEXT: %[[A:.*]] = braid.matmul %arg0, %arg1 {transpose_b} : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %[[B:.*]] = braid.matmul %arg3, %arg1 : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[P:.*]] = braid.transpose %arg2 permutation = [0, 2, 1]
// CHECK-NEXT: %[[C:.*]] = braid.matmul %arg2, %arg2 {transpose_a} : tensor<2x8x4xf32>, tensor<2x8x4xf32> -> tensor<2x4x4xf32>
// CHECK-NEXT: %[[D:.*]] = braid.matmul %[[P]], %arg2 {lhs_permutation = array<i64: 0, 2, 1>, transpose_b} : tensor<2x4x8xf32>, tensor<2x8x4xf32> -> tensor<2x8x8xf32>
// CHECK-NEXT: return %[[A]], %[[B]], %[[T]], %[[C]], %[[D]]
func.func @matmul_transposes(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %h: tensor<2x8x4xf32>, %y: tensor<4x16xf32>)
    -> (tensor<4x16xf32>, tensor<4x8xf32>, tensor<8x16xf32>, tensor<2x4x4xf32>, tensor<2x8x8xf32>) {
  %wt = braid.transpose %w permutation = [1, 0] : tensor<16x8xf32> -> tensor<8x16xf32>
  %a = braid.matmul %x, %wt : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %b = braid.matmul %y, %wt {transpose_b} : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
  %ht = braid.transpose %h permutation = [0, 2, 1] : tensor<2x8x4xf32> -> tensor<2x4x8xf32>
  %c = braid.matmul %ht, %h : tensor<2x4x8xf32>, tensor<2x8x4xf32> -> tensor<2x4x4xf32>
  %d = braid.matmul %ht, %ht {lhs_permutation = array<i64: 0, 2, 1>} : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x8x8xf32>
  return %a, %b, %wt, %c, %d : tensor<4x16xf32>, tensor<4x8xf32>, tensor<8x16xf32>, tensor<2x4x4xf32>, tensor<2x8x8xf32>
}

// braid.add's canonicalizer: a tensor broadcast along the sum's leading
// dimensions (a positional embedding added to every sequence, on either
// side of the sum) is added as a braid.bias_add's bias, read once per row;
// the broadcast, read by nothing else, goes, and the sums keep their
// stream.
// CHECK-LABEL: func.func @broadcast_bias
// CHECK-NEXT: %[[A:.*]] = braid.bias_add %arg0, %arg1 : tensor<2x8x16xf32>, tensor<8x16xf32>
// CHECK-NEXT: %[[B:.*]] = braid.bias_add %arg2, %arg1 : tensor<2x8x16xf32>, tensor<8x16xf32>
// CHECK-NEXT: %[[C:.*]] = braid.bias_add %arg3, %arg1 {braid.stream = #braid.stream<comm, 0>} : tensor<4x2x8x16xf32>, tensor<8x16xf32>
// CHECK-NEXT: return %[[A]], %[[B]], %[[C]]
func.func @broadcast_bias(%tok: tensor<2x8x16xf32>, %pos: tensor<8x16xf32>, %tok2: tensor<2x8x16xf32>,
                          %tok3: tensor<4x2x8x16xf32>)
    -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<4x2x8x16xf32>) {
  %p = braid.broadcast %pos dims = [0] : tensor<8x16xf32> -> tensor<2x8x16xf32>
  %a = braid.add %tok, %p : tensor<2x8x16xf32>
  %b = braid.add %p, %tok2 : tensor<2x8x16xf32>
  %q = braid.broadcast %pos dims = [0, 1] {braid.stream = #braid.stream<comm, 0>} : tensor<8x16xf32> -> tensor<4x2x8x16xf32>
  %c = braid.add %q, %tok3 {braid.stream = #braid.stream<comm, 0>} : tensor<4x2x8x16xf32>
  return %a, %b, %c : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<4x2x8x16xf32>
}

// Sums kept: with a broadcast along an inner dimension, one added to
// itself, one written on another stream than the sum's, and a scalar's. A
// broadcast another op reads as well stays for that reader; the sum reads
// its input.
// CHECK-LABEL: func.func @broadcast_kept
// CHECK: %[[R:.*]] = braid.broadcast %arg1 dims = [1]
// CHECK-NEXT: braid.add %arg0, %[[R]]
// CHECK-NEXT: %[[P:.*]] = braid.broadcast %arg2 dims = [0]
// CHECK-NEXT: braid.bias_add %arg0, %arg2
// CHECK-NEXT: %[[P2:.*]] = braid.broadcast %arg2 dims = [0]
// CHECK-NEXT: braid.add %[[P2]], %[[P2]]
// CHECK-NEXT: %[[P3:.*]] = braid.broadcast %arg2 dims = [0]
// CHECK-NEXT: braid.add %arg0, %[[P3]] {braid.stream
// CHECK-NEXT: %[[T:.*]] = braid.broadcast %arg3 dims = [0]
// CHECK-NEXT: braid.add %arg4, %[[T]]
// CHECK-NEXT: return
func.func @broadcast_kept(%x: tensor<2x8x16xf32>, %row: tensor<2x16xf32>, %pos: tensor<8x16xf32>,
                          %s: tensor<f32>, %v: tensor<4xf32>)
    -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>,
        tensor<2x8x16xf32>, tensor<4xf32>) {
  %r = braid.broadcast %row dims = [1] : tensor<2x16xf32> -> tensor<2x8x16xf32>
  %a = braid.add %x, %r : tensor<2x8x16xf32>
  %p = braid.broadcast %pos dims = [0] : tensor<8x16xf32> -> tensor<2x8x16xf32>
  %b = braid.add %x, %p : tensor<2x8x16xf32>
  %p2 = braid.broadcast %pos dims = [0] : tensor<8x16xf32> -> tensor<2x8x16xf32>
  %c = braid.add %p2, %p2 : tensor<2x8x16xf32>
  %p3 = braid.broadcast %pos dims = [0] : tensor<8x16xf32> -> tensor<2x8x16xf32>
  %d = braid.add %x, %p3 {braid.stream = #braid.stream<comm, 0>} : tensor<2x8x16xf32>
  %t = braid.broadcast %s dims = [0] : tensor<f32> -> tensor<4xf32>
  %e = braid.add %v, %t : tensor<4xf32>
  return %a, %b, %p, %c, %d, %e : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>,
      tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<4xf32>
}

// A rank's own piece of what its group gathered is what it sent: the
// gather's input, directly or through a reshape whose blocks are the pieces
// (sequence parallelism's gather before a flattening reshape, cut again for
// a per-token op); the gather goes when nothing else reads it. Another
// rank's piece (a shift), another dimension, or another group's index
// keep it.
// CHECK-LABEL: func.func @own_piece
// CHECK-NEXT: %[[I:.*]] = braid.axis_index on @world grid_axes = [1]
// CHECK-NEXT: %[[G:.*]] = braid.all_gather %arg0 {{.*}} gather_dim = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[R:.*]] = braid.reshape %arg1 : tensor<4x8xf32> -> tensor<1x4x8xf32>
// CHECK-NEXT: %[[S:.*]] = braid.shard_slice %[[G]], %[[I]] dim = 0 parts = 2 shift = 1
// CHECK-NEXT: %[[J:.*]] = braid.axis_index on @world grid_axes = [0]
// CHECK-NEXT: %[[T:.*]] = braid.shard_slice %[[G]], %[[J]] dim = 0 parts = 2 :
// CHECK-NEXT: return %arg0, %[[R]], %[[S]], %[[T]]
shard.grid @world(shape = 2x2)
func.func @own_piece(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<1x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %i = braid.axis_index on @world grid_axes = [1] : tensor<i64>
  %g = braid.all_gather %x on @world grid_axes = [1] gather_dim = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
  %own = braid.shard_slice %g, %i dim = 0 parts = 2 : tensor<8x8xf32> -> tensor<4x8xf32>
  %h = braid.all_gather %y on @world grid_axes = [1] gather_dim = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
  %f = braid.reshape %h : tensor<8x8xf32> -> tensor<1x8x8xf32>
  %ownf = braid.shard_slice %f, %i dim = 1 parts = 2 : tensor<1x8x8xf32> -> tensor<1x4x8xf32>
  %next = braid.shard_slice %g, %i dim = 0 parts = 2 shift = 1 : tensor<8x8xf32> -> tensor<4x8xf32>
  %j = braid.axis_index on @world grid_axes = [0] : tensor<i64>
  %other = braid.shard_slice %g, %j dim = 0 parts = 2 : tensor<8x8xf32> -> tensor<4x8xf32>
  return %own, %ownf, %next, %other : tensor<4x8xf32>, tensor<1x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
