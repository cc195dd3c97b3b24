// RUN: braid-opt --braid-fuse-kernels --split-input-file %s | FileCheck %s
// RUN: braid-opt --braid-fuse-kernels --split-input-file %s | braid-opt --braid-fuse-kernels --split-input-file | FileCheck %s
// RUN: braid-opt --braid-fuse-kernels="softmax=false bias-gelu=false transposes=false slices=false" --split-input-file %s | FileCheck %s --check-prefix=NONE
// RUN: braid-opt --braid-fuse-kernels="transposes=false" --split-input-file %s | FileCheck %s --check-prefix=NOTRANSPOSE

// Each option turns its folds off.
// NONE-LABEL: func.func @attention
// NONE: braid.scale
// NONE-LABEL: func.func @bias_gelu
// NONE: braid.bias_add
// NONE-LABEL: func.func @attention_transposes
// NONE: braid.transpose
// NOTRANSPOSE-LABEL: func.func @attention
// NOTRANSPOSE-NEXT: braid.softmax %arg0 dim = 3 {causal
// NOTRANSPOSE-LABEL: func.func @attention_transposes
// NOTRANSPOSE-COUNT-4: braid.transpose

// Attention's scale and causal mask fold into the softmax, their gradients
// into its backward; the ops between are gone.
// CHECK-LABEL: func.func @attention
// CHECK-NEXT: %[[P:.*]] = braid.softmax %arg0 dim = 3 {causal, scale = 1.250000e-01 : f64} : tensor<2x4x8x8xf32>
// CHECK-NEXT: %[[D:.*]] = braid.softmax_backward %arg1, %[[P]] dim = 3 {causal, scale = 1.250000e-01 : f64} : tensor<2x4x8x8xf32>
// CHECK-NEXT: return %[[P]], %[[D]]
func.func @attention(%scores: tensor<2x4x8x8xf32>, %dp: tensor<2x4x8x8xf32>)
    -> (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) {
  %s = braid.scale %scores by 1.250000e-01 : tensor<2x4x8x8xf32>
  %m = braid.causal_mask %s fill = 0xFFF0000000000000 : tensor<2x4x8x8xf32>
  %p = braid.softmax %m dim = 3 : tensor<2x4x8x8xf32>
  %d = braid.softmax_backward %dp, %p dim = 3 : tensor<2x4x8x8xf32>
  %dm = braid.causal_mask %d fill = 0.0 : tensor<2x4x8x8xf32>
  %ds = braid.scale %dm by 1.250000e-01 : tensor<2x4x8x8xf32>
  return %p, %ds : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>
}

// -----

// A scale alone folds along any dimension; a mask alone folds too.
// CHECK-LABEL: func.func @alone
// CHECK-NEXT: braid.softmax %arg0 dim = 0 {scale = 2.000000e+00 : f64} : tensor<8x8xf32>
// CHECK-NEXT: braid.softmax %arg0 dim = 1 {causal} : tensor<8x8xf32>
// CHECK-NEXT: braid.softmax_backward %arg0, %arg0 dim = 0 {scale = 5.000000e-01 : f64} : tensor<8x8xf32>
// CHECK-NEXT: return
func.func @alone(%x: tensor<8x8xf32>)
    -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
  %s = braid.scale %x by 2.0 : tensor<8x8xf32>
  %p = braid.softmax %s dim = 0 : tensor<8x8xf32>
  %m = braid.causal_mask %x fill = 0xFFF0000000000000 : tensor<8x8xf32>
  %q = braid.softmax %m dim = 1 : tensor<8x8xf32>
  %d = braid.softmax_backward %x, %x dim = 0 : tensor<8x8xf32>
  %ds = braid.scale %d by 0.5 : tensor<8x8xf32>
  return %p, %q, %ds : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// What does not fold: a value with another use, a mask filling anything
// but -inf (or 0 after the backward), a mask of a softmax along another
// dimension, a negative scale before the mask (the mask still folds),
// ops on different streams, and a softmax that already folds something.
// CHECK-LABEL: func.func @kept
// CHECK: %[[S:.*]] = braid.scale %arg0 by 1.250000e-01
// CHECK-NEXT: braid.softmax %[[S]] dim = 1 : tensor<8x8xf32>
// CHECK-NEXT: %[[M:.*]] = braid.causal_mask %arg0 fill = -1.000000e+09
// CHECK-NEXT: braid.softmax %[[M]] dim = 1 : tensor<8x8xf32>
// CHECK-NEXT: %[[M0:.*]] = braid.causal_mask %arg0 fill = 0xFFF0000000000000
// CHECK-NEXT: braid.softmax %[[M0]] dim = 0 : tensor<8x8xf32>
// CHECK-NEXT: %[[N:.*]] = braid.scale %arg0 by -1.000000e+00
// CHECK-NEXT: braid.softmax %[[N]] dim = 1 {causal} : tensor<8x8xf32>
// CHECK-NEXT: %[[T:.*]] = braid.scale %arg0 by 3.000000e+00 {braid.stream = #braid.stream<comm, 0>}
// CHECK-NEXT: braid.softmax %[[T]] dim = 1 : tensor<8x8xf32>
// CHECK-NEXT: %[[U:.*]] = braid.scale %arg0 by 3.000000e+00 : tensor<8x8xf32>
// CHECK-NEXT: braid.softmax %[[U]] dim = 1 {scale = 2.000000e+00 : f64}
// CHECK-NEXT: %[[D:.*]] = braid.softmax_backward %arg0, %arg0 dim = 1
// CHECK-NEXT: braid.causal_mask %[[D]] fill = 1.000000e+00
func.func @kept(%x: tensor<8x8xf32>)
    -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>,
        tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
  %s = braid.scale %x by 0.125 : tensor<8x8xf32>
  %p = braid.softmax %s dim = 1 : tensor<8x8xf32>
  %m = braid.causal_mask %x fill = -1.0e9 : tensor<8x8xf32>
  %q = braid.softmax %m dim = 1 : tensor<8x8xf32>
  %m0 = braid.causal_mask %x fill = 0xFFF0000000000000 : tensor<8x8xf32>
  %r = braid.softmax %m0 dim = 0 : tensor<8x8xf32>
  %n = braid.scale %x by -1.0 : tensor<8x8xf32>
  %nm = braid.causal_mask %n fill = 0xFFF0000000000000 : tensor<8x8xf32>
  %t = braid.softmax %nm dim = 1 : tensor<8x8xf32>
  %c = braid.scale %x by 3.0 {braid.stream = #braid.stream<comm, 0>} : tensor<8x8xf32>
  %u = braid.softmax %c dim = 1 : tensor<8x8xf32>
  %c2 = braid.scale %x by 3.0 : tensor<8x8xf32>
  %v = braid.softmax %c2 dim = 1 {scale = 2.0} : tensor<8x8xf32>
  %d = braid.softmax_backward %x, %x dim = 1 : tensor<8x8xf32>
  %dm = braid.causal_mask %d fill = 1.0 : tensor<8x8xf32>
  return %s, %p, %q, %r, %t, %u, %v, %dm : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>,
      tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// A bias_add only gelus read folds into the gelu and its backward, through
// a reshape that keeps the last dimension; the bias's gradient is kept.
// CHECK-LABEL: func.func @bias_gelu
// CHECK-NEXT: %[[V:.*]] = braid.reshape %arg0 : tensor<8x16xf32> -> tensor<2x4x16xf32>
// CHECK-NEXT: %[[Y:.*]] = braid.gelu %[[V]], %arg1 {approximate_tanh} : tensor<2x4x16xf32>, tensor<16xf32>
// CHECK-NEXT: %[[D:.*]] = braid.gelu_backward %arg2, %[[V]], %arg1 {approximate_tanh} : tensor<2x4x16xf32>, tensor<16xf32>
// CHECK-NEXT: %[[G:.*]] = braid.gelu %arg0, %arg1 : tensor<8x16xf32>, tensor<16xf32>
// CHECK-NEXT: braid.gelu_backward %arg3, %arg0, %arg1 : tensor<8x16xf32>, tensor<16xf32>
// CHECK-NEXT: braid.reduce_sum %[[D]] dims = [0, 1]
func.func @bias_gelu(%mm: tensor<8x16xf32>, %b: tensor<16xf32>, %dy: tensor<2x4x16xf32>,
                     %dz: tensor<8x16xf32>)
    -> (tensor<2x4x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16xf32>) {
  %h = braid.bias_add %mm, %b : tensor<8x16xf32>, tensor<16xf32>
  %v = braid.reshape %h : tensor<8x16xf32> -> tensor<2x4x16xf32>
  %y = braid.gelu %v {approximate_tanh} : tensor<2x4x16xf32>
  %dv = braid.gelu_backward %dy, %v {approximate_tanh} : tensor<2x4x16xf32>
  %h2 = braid.bias_add %mm, %b : tensor<8x16xf32>, tensor<16xf32>
  %z = braid.gelu %h2 : tensor<8x16xf32>
  %dh = braid.gelu_backward %dz, %h2 : tensor<8x16xf32>
  %db = braid.reduce_sum %dv dims = [0, 1] : tensor<2x4x16xf32> -> tensor<16xf32>
  return %y, %z, %dh, %db : tensor<2x4x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16xf32>
}

// -----

// The sum is kept when anything but a gelu reads it: another op, a gelu
// backward that takes it as its gradient, a reshape that moves the bias's
// dimension, a gelu on another stream; or when no gelu reads it at all.
// CHECK-LABEL: func.func @bias_kept
// CHECK-COUNT-5: braid.bias_add
// CHECK-NOT: braid.gelu {{.*}}, %arg1
func.func @bias_kept(%mm: tensor<8x16xf32>, %b: tensor<16xf32>)
    -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>,
        tensor<8x16xf32>, tensor<4x32xf32>, tensor<8x16xf32>, tensor<8x16xf32>) {
  %h = braid.bias_add %mm, %b : tensor<8x16xf32>, tensor<16xf32>
  %y = braid.gelu %h : tensor<8x16xf32>
  %r = braid.relu %h : tensor<8x16xf32>
  %h2 = braid.bias_add %mm, %b : tensor<8x16xf32>, tensor<16xf32>
  %y2 = braid.gelu %h2 : tensor<8x16xf32>
  %d2 = braid.gelu_backward %h2, %mm : tensor<8x16xf32>
  %h3 = braid.bias_add %mm, %b : tensor<8x16xf32>, tensor<16xf32>
  %v3 = braid.reshape %h3 : tensor<8x16xf32> -> tensor<4x32xf32>
  %y3 = braid.gelu %v3 : tensor<4x32xf32>
  %h4 = braid.bias_add %mm, %b : tensor<8x16xf32>, tensor<16xf32>
  %y4 = braid.gelu %h4 {braid.stream = #braid.stream<comm, 0>} : tensor<8x16xf32>
  %h5 = braid.bias_add %mm, %b : tensor<8x16xf32>, tensor<16xf32>
  %d5 = braid.gelu_backward %mm, %h5 : tensor<8x16xf32>
  return %y, %r, %y2, %d2, %y4, %y3, %d5, %mm : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>,
      tensor<8x16xf32>, tensor<4x32xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

// Attention's forward as AOT autograd writes it: head transposes around
// batched matmuls over [batch x heads]. The matmuls take the [batch, heads]
// dimensions back, and every transpose folds: q and k are read where the
// projection wrote them, the output is written in [batch, seq, heads].
// CHECK-LABEL: func.func @attention_transposes
// CHECK-NOT: braid.transpose
// CHECK: %[[S:.*]] = braid.matmul %arg0, %arg1 {lhs_permutation = array<i64: 0, 2, 1, 3>, rhs_permutation = array<i64: 0, 2, 3, 1>} : tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32> -> tensor<2x4x8x8xf32>
// CHECK: %[[O:.*]] = braid.matmul %[[S]], %arg2 {result_permutation = array<i64: 0, 2, 1, 3>, rhs_permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x8x8xf32>, tensor<2x8x4x16xf32> -> tensor<2x8x4x16xf32>
// CHECK-NEXT: %[[Y:.*]] = braid.reshape %[[O]] : tensor<2x8x4x16xf32> -> tensor<16x64xf32>
// CHECK-NEXT: return %[[S]], %[[Y]]
func.func @attention_transposes(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x4x16xf32>,
                                %v: tensor<2x8x4x16xf32>)
    -> (tensor<2x4x8x8xf32>, tensor<16x64xf32>) {
  %tq = braid.transpose %q permutation = [0, 2, 1, 3] : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %tk = braid.transpose %k permutation = [0, 2, 3, 1] : tensor<2x8x4x16xf32> -> tensor<2x4x16x8xf32>
  %q3 = braid.reshape %tq : tensor<2x4x8x16xf32> -> tensor<8x8x16xf32>
  %k3 = braid.reshape %tk : tensor<2x4x16x8xf32> -> tensor<8x16x8xf32>
  %s3 = braid.matmul %q3, %k3 : tensor<8x8x16xf32>, tensor<8x16x8xf32> -> tensor<8x8x8xf32>
  %s = braid.reshape %s3 : tensor<8x8x8xf32> -> tensor<2x4x8x8xf32>
  %tv = braid.transpose %v permutation = [0, 2, 1, 3] : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %p3 = braid.reshape %s : tensor<2x4x8x8xf32> -> tensor<8x8x8xf32>
  %v3 = braid.reshape %tv : tensor<2x4x8x16xf32> -> tensor<8x8x16xf32>
  %o3 = braid.matmul %p3, %v3 : tensor<8x8x8xf32>, tensor<8x8x16xf32> -> tensor<8x8x16xf32>
  %o = braid.reshape %o3 : tensor<8x8x16xf32> -> tensor<2x4x8x16xf32>
  %to = braid.transpose %o permutation = [0, 2, 1, 3] : tensor<2x4x8x16xf32> -> tensor<2x8x4x16xf32>
  %y = braid.reshape %to : tensor<2x8x4x16xf32> -> tensor<16x64xf32>
  return %s, %y : tensor<2x4x8x8xf32>, tensor<16x64xf32>
}

// -----

// The key gradient's transpose moves the product's last dimension: it is
// written with its rows of unit stride. A flattened operand that no
// reshape made gets a reshape (a view); a merged result another op reads
// gets one back.
// CHECK-LABEL: func.func @gradient_transposes
// CHECK: %[[G:.*]] = braid.reshape %arg1 : tensor<8x8x8xf32> -> tensor<2x4x8x8xf32>
// CHECK-NEXT: %[[DK:.*]] = braid.matmul %arg0, %[[G]] {lhs_permutation = array<i64: 0, 2, 1, 3>, result_permutation = array<i64: 0, 3, 1, 2>, transpose_a} : tensor<2x8x4x16xf32>, tensor<2x4x8x8xf32> -> tensor<2x8x4x16xf32>
// CHECK: %[[M:.*]] = braid.matmul %arg0, %arg2 {lhs_permutation = array<i64: 0, 2, 1, 3>} : tensor<2x8x4x16xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x8x8xf32>
// CHECK-NEXT: %[[M3:.*]] = braid.reshape %[[M]] : tensor<2x4x8x8xf32> -> tensor<8x8x8xf32>
// CHECK-NEXT: braid.relu %[[M3]]
func.func @gradient_transposes(%q: tensor<2x8x4x16xf32>, %g: tensor<8x8x8xf32>,
                               %kt: tensor<2x4x16x8xf32>)
    -> (tensor<2x8x4x16xf32>, tensor<8x8x8xf32>) {
  %tq = braid.transpose %q permutation = [0, 2, 1, 3] : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %q3 = braid.reshape %tq : tensor<2x4x8x16xf32> -> tensor<8x8x16xf32>
  %dk3 = braid.matmul %q3, %g {transpose_a} : tensor<8x8x16xf32>, tensor<8x8x8xf32> -> tensor<8x16x8xf32>
  %dk4 = braid.reshape %dk3 : tensor<8x16x8xf32> -> tensor<2x4x16x8xf32>
  %dk = braid.transpose %dk4 permutation = [0, 3, 1, 2] : tensor<2x4x16x8xf32> -> tensor<2x8x4x16xf32>
  %kt3 = braid.reshape %kt : tensor<2x4x16x8xf32> -> tensor<8x16x8xf32>
  %m3 = braid.matmul %q3, %kt3 : tensor<8x8x16xf32>, tensor<8x16x8xf32> -> tensor<8x8x8xf32>
  %r = braid.relu %m3 : tensor<8x8x8xf32>
  return %dk, %r : tensor<2x8x4x16xf32>, tensor<8x8x8xf32>
}

// -----

// Transposes that stay: one another op reads too, one that moves the
// operand's last dimension to the front, and one of a product another op
// reads.
// CHECK-LABEL: func.func @transposes_kept
// CHECK-COUNT-3: braid.transpose
func.func @transposes_kept(%a: tensor<4x8xf32>, %b: tensor<2x3x4xf32>, %r: tensor<4x3x5xf32>,
                           %w: tensor<8x4xf32>)
    -> (tensor<8x8xf32>, tensor<8x4xf32>, tensor<4x2x5xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %t = braid.transpose %a permutation = [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  %m = braid.matmul %t, %a : tensor<8x4xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %u = braid.transpose %b permutation = [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %c = braid.matmul %u, %r : tensor<4x2x3xf32>, tensor<4x3x5xf32> -> tensor<4x2x5xf32>
  %p = braid.matmul %a, %w : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
  %pt = braid.transpose %p permutation = [1, 0] : tensor<4x4xf32> -> tensor<4x4xf32>
  return %m, %t, %c, %p, %pt : tensor<8x8xf32>, tensor<8x4xf32>, tensor<4x2x5xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// A batched matmul between reshapes with no transpose to fold is left as
// it is.
// CHECK-LABEL: func.func @bmm_kept
// CHECK-NEXT: braid.reshape
// CHECK-NEXT: braid.reshape
// CHECK-NEXT: braid.matmul {{.*}} : tensor<8x8x16xf32>, tensor<8x16x8xf32> -> tensor<8x8x8xf32>
func.func @bmm_kept(%a: tensor<2x4x8x16xf32>, %b: tensor<2x4x16x8xf32>) -> tensor<8x8x8xf32> {
  %a3 = braid.reshape %a : tensor<2x4x8x16xf32> -> tensor<8x8x16xf32>
  %b3 = braid.reshape %b : tensor<2x4x16x8xf32> -> tensor<8x16x8xf32>
  %m = braid.matmul %a3, %b3 : tensor<8x8x16xf32>, tensor<8x16x8xf32> -> tensor<8x8x8xf32>
  return %m : tensor<8x8x8xf32>
}

// -----

// The slices of a fused q/k/v projection ([batch, seq, 3 x 16]: 4 heads of
// 4 each), split into heads and read by attention's matmuls: the matmuls
// read the projection split into its 12 heads (a reshape each, a view),
// q from head 0, k from head 4 and v from head 8, and no slice is left.
// CHECK-LABEL: func.func @qkv_slices
// CHECK-NOT: braid.slice
// CHECK: %[[H:.*]] = braid.reshape %{{.*}} : tensor<2x8x48xf32> -> tensor<2x8x12x4xf32>
// CHECK-NOT: braid.slice
// CHECK: %[[H2:.*]] = braid.reshape %{{.*}} : tensor<2x8x48xf32> -> tensor<2x8x12x4xf32>
// CHECK: %[[S:.*]] = braid.matmul %[[H]], %[[H2]] {lhs_permutation = array<i64: 0, 2, 1, 3>, lhs_slice = array<i64: 2, 0, 4>, rhs_permutation = array<i64: 0, 2, 3, 1>, rhs_slice = array<i64: 2, 4, 4>} : tensor<2x8x12x4xf32>, tensor<2x8x12x4xf32> -> tensor<2x4x8x8xf32>
// CHECK: braid.matmul %[[S]], %{{.*}} {{{.*}}rhs_slice = array<i64: 2, 8, 4>} : tensor<2x4x8x8xf32>, tensor<2x8x12x4xf32> -> tensor<2x8x4x4xf32>
// NONE-LABEL: func.func @qkv_slices
// NONE-COUNT-3: braid.slice
func.func @qkv_slices(%qkv: tensor<2x8x48xf32>) -> tensor<2x8x4x4xf32> {
  %q = braid.slice %qkv offsets = [0, 0, 0] : tensor<2x8x48xf32> -> tensor<2x8x16xf32>
  %k = braid.slice %qkv offsets = [0, 0, 16] : tensor<2x8x48xf32> -> tensor<2x8x16xf32>
  %v = braid.slice %qkv offsets = [0, 0, 32] : tensor<2x8x48xf32> -> tensor<2x8x16xf32>
  %q4 = braid.reshape %q : tensor<2x8x16xf32> -> tensor<2x8x4x4xf32>
  %k4 = braid.reshape %k : tensor<2x8x16xf32> -> tensor<2x8x4x4xf32>
  %v4 = braid.reshape %v : tensor<2x8x16xf32> -> tensor<2x8x4x4xf32>
  %tq = braid.transpose %q4 permutation = [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %tk = braid.transpose %k4 permutation = [0, 2, 3, 1] : tensor<2x8x4x4xf32> -> tensor<2x4x4x8xf32>
  %tv = braid.transpose %v4 permutation = [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %s = braid.matmul %tq, %tk : tensor<2x4x8x4xf32>, tensor<2x4x4x8xf32> -> tensor<2x4x8x8xf32>
  %o = braid.matmul %s, %tv : tensor<2x4x8x8xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x4xf32>
  %y = braid.transpose %o permutation = [0, 2, 1, 3] : tensor<2x4x8x4xf32> -> tensor<2x8x4x4xf32>
  return %y : tensor<2x8x4x4xf32>
}

// -----

// Slices kept: q, which another op reads as well (the function returns
// it), and v, whose heads the product reads as its rows (a matrix
// dimension: heads of size 1 at the next-to-last place).
// CHECK-LABEL: func.func @slices_kept
// CHECK-COUNT-2: braid.slice
// CHECK-NOT: braid.slice
func.func @slices_kept(%qkv: tensor<2x8x48xf32>, %w: tensor<2x8x16x8xf32>)
    -> (tensor<2x8x16xf32>, tensor<2x8x4x4xf32>, tensor<2x8x8x1xf32>) {
  %q = braid.slice %qkv offsets = [0, 0, 0] : tensor<2x8x48xf32> -> tensor<2x8x16xf32>
  %q4 = braid.reshape %q : tensor<2x8x16xf32> -> tensor<2x8x4x4xf32>
  %qq = braid.matmul %q4, %q4 {transpose_b} : tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32> -> tensor<2x8x4x4xf32>
  %v = braid.slice %qkv offsets = [0, 0, 32] : tensor<2x8x48xf32> -> tensor<2x8x16xf32>
  %v4 = braid.reshape %v : tensor<2x8x16xf32> -> tensor<2x8x16x1xf32>
  %vv = braid.matmul %w, %v4 {transpose_a} : tensor<2x8x16x8xf32>, tensor<2x8x16x1xf32> -> tensor<2x8x8x1xf32>
  return %q, %qq, %vv : tensor<2x8x16xf32>, tensor<2x8x4x4xf32>, tensor<2x8x8x1xf32>
}
