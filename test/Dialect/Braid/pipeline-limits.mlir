// RUN: not braid-opt %s --split-input-file --braid-pipeline="axis=1 micro-batches=65536 boundaries=head" 2>&1 | FileCheck %s --check-prefix=UNROLL
// RUN: not braid-opt %s --split-input-file --braid-pipeline="axis=1 micro-batches=65537 boundaries=head" 2>&1 | FileCheck %s --check-prefix=MICRO
// RUN: not braid-opt %s --split-input-file --braid-pipeline="axis=1 schedule=interleaved virtual-stages=65537 boundaries=head" 2>&1 | FileCheck %s --check-prefix=VIRTUAL

// The limits braid-pipeline keeps (Braid.td: kMaxMicroBatches,
// kMaxUnrolledOps): micro-batches and virtual stages up to 2^16, a stage
// program of at most 2^22 ops once unrolled, and a stacked batch whose
// elements count in 48 bits. Past them it stops with an error naming the
// limit instead of running out of memory or overflowing a size.

// MICRO: error: braid-pipeline: micro-batches must be 1 to 65536, but is 65537
// VIRTUAL: error: braid-pipeline: virtual-stages must be 1 to 65536, but is 65537

// A step made long by 71 adds: 65536 micro-batches would unroll it into
// more than 2^22 ops.
// UNROLL: error: has [[OPS:[0-9]+]] ops, which 65536 micro-batches would unroll into about {{[0-9]+}}, more than braid-pipeline makes (4194304); use at most {{[0-9]+}} micro-batches
shard.grid @world(shape = 1x2)
func.func @step(%x: tensor<4x8xf32> {braid.role = #braid.role<batch "x">},
                %labels: tensor<4xi64> {braid.role = #braid.role<batch "labels">},
                %w1: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
                %w2: tensor<3x8xf32> {braid.role = #braid.role<parameter "head.weight">})
    -> (tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
        tensor<3x8xf32> {braid.role = #braid.role<parameter "head.weight">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %h = braid.matmul %x, %w1 {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %o = braid.matmul %h, %w2 {transpose_b} : tensor<4x8xf32>, tensor<3x8xf32> -> tensor<4x3xf32>
  %l = braid.cross_entropy %o, %labels reduction = mean : tensor<4x3xf32>, tensor<4xi64> -> tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %do = braid.cross_entropy_backward %one, %o, %labels reduction = mean : tensor<f32>, tensor<4x3xf32>, tensor<4xi64>
  %g2 = braid.matmul %do, %h {transpose_a} : tensor<4x3xf32>, tensor<4x8xf32> -> tensor<3x8xf32>
  %dh = braid.matmul %do, %w2 : tensor<4x3xf32>, tensor<3x8xf32> -> tensor<4x8xf32>
  %g1 = braid.matmul %dh, %x {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %a0 = braid.add %h, %h : tensor<4x8xf32>
  %a1 = braid.add %a0, %a0 : tensor<4x8xf32>
  %a2 = braid.add %a1, %a1 : tensor<4x8xf32>
  %a3 = braid.add %a2, %a2 : tensor<4x8xf32>
  %a4 = braid.add %a3, %a3 : tensor<4x8xf32>
  %a5 = braid.add %a4, %a4 : tensor<4x8xf32>
  %a6 = braid.add %a5, %a5 : tensor<4x8xf32>
  %a7 = braid.add %a6, %a6 : tensor<4x8xf32>
  %a8 = braid.add %a7, %a7 : tensor<4x8xf32>
  %a9 = braid.add %a8, %a8 : tensor<4x8xf32>
  %a10 = braid.add %a9, %a9 : tensor<4x8xf32>
  %a11 = braid.add %a10, %a10 : tensor<4x8xf32>
  %a12 = braid.add %a11, %a11 : tensor<4x8xf32>
  %a13 = braid.add %a12, %a12 : tensor<4x8xf32>
  %a14 = braid.add %a13, %a13 : tensor<4x8xf32>
  %a15 = braid.add %a14, %a14 : tensor<4x8xf32>
  %a16 = braid.add %a15, %a15 : tensor<4x8xf32>
  %a17 = braid.add %a16, %a16 : tensor<4x8xf32>
  %a18 = braid.add %a17, %a17 : tensor<4x8xf32>
  %a19 = braid.add %a18, %a18 : tensor<4x8xf32>
  %a20 = braid.add %a19, %a19 : tensor<4x8xf32>
  %a21 = braid.add %a20, %a20 : tensor<4x8xf32>
  %a22 = braid.add %a21, %a21 : tensor<4x8xf32>
  %a23 = braid.add %a22, %a22 : tensor<4x8xf32>
  %a24 = braid.add %a23, %a23 : tensor<4x8xf32>
  %a25 = braid.add %a24, %a24 : tensor<4x8xf32>
  %a26 = braid.add %a25, %a25 : tensor<4x8xf32>
  %a27 = braid.add %a26, %a26 : tensor<4x8xf32>
  %a28 = braid.add %a27, %a27 : tensor<4x8xf32>
  %a29 = braid.add %a28, %a28 : tensor<4x8xf32>
  %a30 = braid.add %a29, %a29 : tensor<4x8xf32>
  %a31 = braid.add %a30, %a30 : tensor<4x8xf32>
  %a32 = braid.add %a31, %a31 : tensor<4x8xf32>
  %a33 = braid.add %a32, %a32 : tensor<4x8xf32>
  %a34 = braid.add %a33, %a33 : tensor<4x8xf32>
  %a35 = braid.add %a34, %a34 : tensor<4x8xf32>
  %a36 = braid.add %a35, %a35 : tensor<4x8xf32>
  %a37 = braid.add %a36, %a36 : tensor<4x8xf32>
  %a38 = braid.add %a37, %a37 : tensor<4x8xf32>
  %a39 = braid.add %a38, %a38 : tensor<4x8xf32>
  %a40 = braid.add %a39, %a39 : tensor<4x8xf32>
  %a41 = braid.add %a40, %a40 : tensor<4x8xf32>
  %a42 = braid.add %a41, %a41 : tensor<4x8xf32>
  %a43 = braid.add %a42, %a42 : tensor<4x8xf32>
  %a44 = braid.add %a43, %a43 : tensor<4x8xf32>
  %a45 = braid.add %a44, %a44 : tensor<4x8xf32>
  %a46 = braid.add %a45, %a45 : tensor<4x8xf32>
  %a47 = braid.add %a46, %a46 : tensor<4x8xf32>
  %a48 = braid.add %a47, %a47 : tensor<4x8xf32>
  %a49 = braid.add %a48, %a48 : tensor<4x8xf32>
  %a50 = braid.add %a49, %a49 : tensor<4x8xf32>
  %a51 = braid.add %a50, %a50 : tensor<4x8xf32>
  %a52 = braid.add %a51, %a51 : tensor<4x8xf32>
  %a53 = braid.add %a52, %a52 : tensor<4x8xf32>
  %a54 = braid.add %a53, %a53 : tensor<4x8xf32>
  %a55 = braid.add %a54, %a54 : tensor<4x8xf32>
  %a56 = braid.add %a55, %a55 : tensor<4x8xf32>
  %a57 = braid.add %a56, %a56 : tensor<4x8xf32>
  %a58 = braid.add %a57, %a57 : tensor<4x8xf32>
  %a59 = braid.add %a58, %a58 : tensor<4x8xf32>
  %a60 = braid.add %a59, %a59 : tensor<4x8xf32>
  %a61 = braid.add %a60, %a60 : tensor<4x8xf32>
  %a62 = braid.add %a61, %a61 : tensor<4x8xf32>
  %a63 = braid.add %a62, %a62 : tensor<4x8xf32>
  %a64 = braid.add %a63, %a63 : tensor<4x8xf32>
  %a65 = braid.add %a64, %a64 : tensor<4x8xf32>
  %a66 = braid.add %a65, %a65 : tensor<4x8xf32>
  %a67 = braid.add %a66, %a66 : tensor<4x8xf32>
  %a68 = braid.add %a67, %a67 : tensor<4x8xf32>
  %a69 = braid.add %a68, %a68 : tensor<4x8xf32>
  %a70 = braid.add %a69, %a69 : tensor<4x8xf32>
  %r1 = braid.all_reduce %g1 on @world grid_axes = [0] reduction = avg grad_of = ["fc1.weight"] : tensor<8x8xf32>
  %r2 = braid.all_reduce %g2 on @world grid_axes = [0] reduction = avg grad_of = ["head.weight"] : tensor<3x8xf32>
  %n1 = braid.sub %w1, %r1 : tensor<8x8xf32>
  %n2 = braid.sub %w2, %r2 : tensor<3x8xf32>
  return %n1, %n2, %l : tensor<8x8xf32>, tensor<3x8xf32>, tensor<f32>
}

// -----

// A batch of 2^46 rows of 8 (2^49 elements) cannot stack 65536
// micro-batches (2^65 elements).
// UNROLL: error: has batch argument 'x' of 562949953421312 elements, too large to stack 65536 micro-batches of
shard.grid @world(shape = 1x2)
func.func @step(%x: tensor<70368744177664x8xf32> {braid.role = #braid.role<batch "x">},
                %labels: tensor<70368744177664xi64> {braid.role = #braid.role<batch "labels">},
                %w1: tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
                %w2: tensor<3x8xf32> {braid.role = #braid.role<parameter "head.weight">})
    -> (tensor<8x8xf32> {braid.role = #braid.role<parameter "fc1.weight">},
        tensor<3x8xf32> {braid.role = #braid.role<parameter "head.weight">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %h = braid.matmul %x, %w1 {transpose_b} : tensor<70368744177664x8xf32>, tensor<8x8xf32> -> tensor<70368744177664x8xf32>
  %o = braid.matmul %h, %w2 {transpose_b} : tensor<70368744177664x8xf32>, tensor<3x8xf32> -> tensor<70368744177664x3xf32>
  %l = braid.cross_entropy %o, %labels reduction = mean : tensor<70368744177664x3xf32>, tensor<70368744177664xi64> -> tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %do = braid.cross_entropy_backward %one, %o, %labels reduction = mean : tensor<f32>, tensor<70368744177664x3xf32>, tensor<70368744177664xi64>
  %g2 = braid.matmul %do, %h {transpose_a} : tensor<70368744177664x3xf32>, tensor<70368744177664x8xf32> -> tensor<3x8xf32>
  %dh = braid.matmul %do, %w2 : tensor<70368744177664x3xf32>, tensor<3x8xf32> -> tensor<70368744177664x8xf32>
  %g1 = braid.matmul %dh, %x {transpose_a} : tensor<70368744177664x8xf32>, tensor<70368744177664x8xf32> -> tensor<8x8xf32>

  %r1 = braid.all_reduce %g1 on @world grid_axes = [0] reduction = avg grad_of = ["fc1.weight"] : tensor<8x8xf32>
  %r2 = braid.all_reduce %g2 on @world grid_axes = [0] reduction = avg grad_of = ["head.weight"] : tensor<3x8xf32>
  %n1 = braid.sub %w1, %r1 : tensor<8x8xf32>
  %n2 = braid.sub %w2, %r2 : tensor<3x8xf32>
  return %n1, %n2, %l : tensor<8x8xf32>, tensor<3x8xf32>, tensor<f32>
}
