// RUN: braid-opt --braid-cost-summary=top-ops=3 %s -o /dev/null | FileCheck %s
// RUN: braid-opt --braid-cost-summary %s | FileCheck %s --check-prefix=IR

// The pass only prints: the IR comes out unchanged.
// IR-LABEL: func.func @matmul
// IR: braid.matmul

// 2x3 @ 3x4: 2*M*N*K = 2*2*4*3 = 48 flops; reads (6 + 12) * 4 bytes, writes 8 * 4.
// CHECK-LABEL: braid cost summary: @matmul
// CHECK-NEXT:   compute ops               1
// CHECK-NEXT:   flops                     48 (48.00 FLOP)
// CHECK-NEXT:   bytes read                72 (72.00 B)
// CHECK-NEXT:   bytes written             32 (32.00 B)
// CHECK-NEXT:   collectives               0
// CHECK-NEXT:   collective bytes          0 (0.00 B)
// CHECK-NEXT:   parameter tensors         0
// CHECK-NEXT:   parameter elements        0
// CHECK-NEXT:   parameter bytes           0 (0.00 B)
// CHECK-NEXT:   gradient bytes to reduce  0 (0.00 B)
// CHECK-NEXT:   top ops by flops:
// CHECK-NEXT:     braid.matmul                      1 ops  48 (100.0%)
func.func @matmul(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) {
  %0 = braid.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  return
}

// Batched against a shared rank-2 rhs, transposed: 2 * (2*4) * 8 * 16 * 8 = 16384.
// bf16 halves the bytes: (2*4*8*8 + 16*8) * 2 = 1280 read.
// CHECK-LABEL: braid cost summary: @batched_matmul
// CHECK:        flops                     16384 (16.38 kFLOP)
// CHECK-NEXT:   bytes read                1280 (1.25 KiB)
func.func @batched_matmul(%a: tensor<2x4x8x8xbf16>, %b: tensor<16x8xbf16>) {
  %0 = braid.matmul %a, %b {transpose_b} : tensor<2x4x8x8xbf16>, tensor<16x8xbf16> -> tensor<2x4x8x16xbf16>
  return
}

// A cast is charged what it moves: 32 f32 elements read (128 bytes), 32
// bf16 written (64), one flop each; and back.
// CHECK-LABEL: braid cost summary: @casts
// CHECK-NEXT:   compute ops               2
// CHECK-NEXT:   flops                     64 (64.00 FLOP)
// CHECK-NEXT:   bytes read                192 (192.00 B)
// CHECK-NEXT:   bytes written             192 (192.00 B)
func.func @casts(%x: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  %0 = braid.cast %x : tensor<2x4x4xf32> -> tensor<2x4x4xbf16>
  %1 = braid.cast %0 : tensor<2x4x4xbf16> -> tensor<2x4x4xf32>
  return %1 : tensor<2x4x4xf32>
}

// 32 elements each. Per element: add, sub, mul, div, scale, bias_add, cast,
// relu, relu_backward, causal_mask 1; gelu 8; gelu_backward 14; softmax and
// log_softmax 5; their backward 4. Total 32 * (10 + 8 + 14 + 5 + 5 + 4 + 4) = 1600.
// CHECK-LABEL: braid cost summary: @elementwise
// CHECK-NEXT:   compute ops               16
// CHECK-NEXT:   flops                     1600 (1.60 kFLOP)
// CHECK:        top ops by flops:
// CHECK-NEXT:     braid.gelu_backward               1 ops  448 (28.0%)
// CHECK-NEXT:     braid.gelu                        1 ops  256 (16.0%)
// CHECK-NEXT:     braid.log_softmax                 1 ops  160 (10.0%)
func.func @elementwise(%x: tensor<2x4x4xf32>, %b: tensor<4xf32>) {
  %0 = braid.add %x, %x : tensor<2x4x4xf32>
  %1 = braid.sub %x, %x : tensor<2x4x4xf32>
  %2 = braid.mul %x, %x : tensor<2x4x4xf32>
  %3 = braid.div %x, %x : tensor<2x4x4xf32>
  %4 = braid.scale %x by 2.0 : tensor<2x4x4xf32>
  %5 = braid.bias_add %x, %b : tensor<2x4x4xf32>, tensor<4xf32>
  %6 = braid.cast %x : tensor<2x4x4xf32> -> tensor<2x4x4xbf16>
  %7 = braid.relu %x : tensor<2x4x4xf32>
  %8 = braid.relu_backward %x, %x : tensor<2x4x4xf32>
  %9 = braid.causal_mask %x fill = 0.0 : tensor<2x4x4xf32>
  %10 = braid.gelu %x : tensor<2x4x4xf32>
  %11 = braid.gelu_backward %x, %x : tensor<2x4x4xf32>
  %12 = braid.softmax %x dim = 2 : tensor<2x4x4xf32>
  %13 = braid.log_softmax %x dim = 2 : tensor<2x4x4xf32>
  %14 = braid.softmax_backward %x, %x dim = 2 : tensor<2x4x4xf32>
  %15 = braid.log_softmax_backward %x, %x dim = 2 : tensor<2x4x4xf32>
  return
}

// 32 elements each. Per element: unary sqrt 1, rsqrt 2, exp and log 4,
// sigmoid 6, tanh and silu 7; unary_backward 4 (tanh, sigmoid) and 11
// (silu); pow 9; where 1. Total 32 * (1 + 2 + 8 + 6 + 14 + 8 + 11 + 9 + 1) = 1920.
// CHECK-LABEL: braid cost summary: @functions
// CHECK-NEXT:   compute ops               12
// CHECK-NEXT:   flops                     1920 (1.92 kFLOP)
// CHECK:        top ops by flops:
// CHECK-NEXT:     braid.unary                       7 ops  992 (51.7%)
// CHECK-NEXT:     braid.unary_backward              3 ops  608 (31.7%)
// CHECK-NEXT:     braid.pow                         1 ops  288 (15.0%)
func.func @functions(%x: tensor<2x4x4xf32>, %m: tensor<2x4x4xi1>) {
  %0 = braid.unary sqrt %x : tensor<2x4x4xf32>
  %1 = braid.unary rsqrt %x : tensor<2x4x4xf32>
  %2 = braid.unary exp %x : tensor<2x4x4xf32>
  %3 = braid.unary log %x : tensor<2x4x4xf32>
  %4 = braid.unary sigmoid %x : tensor<2x4x4xf32>
  %5 = braid.unary tanh %x : tensor<2x4x4xf32>
  %6 = braid.unary silu %x : tensor<2x4x4xf32>
  %7 = braid.unary_backward tanh %x, %x : tensor<2x4x4xf32>
  %8 = braid.unary_backward sigmoid %x, %x : tensor<2x4x4xf32>
  %9 = braid.unary_backward silu %x, %x : tensor<2x4x4xf32>
  %10 = braid.pow %x exponent = 3.0 : tensor<2x4x4xf32>
  %11 = braid.where %m, %x, %x : tensor<2x4x4xi1>, tensor<2x4x4xf32>
  return
}

// Attention, B = 2, H = 4 (2 key/value heads), S = 8, D = Dv = 16: 64 scored
// pairs a head unmasked, 36 causal. Forward 2 * 4 * 64 * (2*16 + 2*16 + 5)
// = 35328; causal forward 2 * 4 * 36 * 69 = 19872; backward
// 2 * 4 * 64 * (6*16 + 4*16 + 8) = 86016. No [S, S] tensor: the bytes are
// the operands' and results' only.
// CHECK-LABEL: braid cost summary: @attention
// CHECK-NEXT:   compute ops               3
// CHECK-NEXT:   flops                     141216 (141.22 kFLOP)
func.func @attention(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>) {
  %o, %l = braid.attention %q, %k, %v scale = 0.25 : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  %o2, %l2 = braid.attention %q, %k, %v {causal} scale = 0.25 : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  %dq, %dk, %dv = braid.attention_backward %o, %q, %k, %v, %o, %l scale = 0.25 : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8xf32>
  return
}

// reduce_sum: one add per input element (32); reduce_mean also divides each
// output (32 + 4). layer_norm 8 and its backward 12 per element: 256 + 384.
// Total 32 + 36 + 256 + 384 = 708.
// CHECK-LABEL: braid cost summary: @reductions_and_norms
// CHECK:        flops                     708 (708.00 FLOP)
func.func @reductions_and_norms(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  %0 = braid.reduce_sum %x dims = [0] : tensor<4x8xf32> -> tensor<8xf32>
  %1 = braid.reduce_mean %x dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  %y, %m, %r = braid.layer_norm %x, %g, %g eps = 1.0e-5 : tensor<4x8xf32>, tensor<8xf32> -> tensor<4xf32>
  %2:3 = braid.layer_norm_backward %x, %x, %m, %r, %g : tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>
  return
}

// [4, 10] inputs: nll_loss reads one entry a row (4); its backward writes 40;
// cross_entropy and its backward 6 per logit (240 each). Total 524.
// CHECK-LABEL: braid cost summary: @losses
// CHECK:        flops                     524 (524.00 FLOP)
func.func @losses(%x: tensor<4x10xf32>, %l: tensor<4xi64>, %d: tensor<f32>) {
  %0 = braid.nll_loss %x, %l reduction = mean : tensor<4x10xf32>, tensor<4xi64> -> tensor<f32>
  %1 = braid.nll_loss_backward %d, %x, %l reduction = mean : tensor<f32>, tensor<4x10xf32>, tensor<4xi64>
  %2 = braid.cross_entropy %x, %l reduction = mean : tensor<4x10xf32>, tensor<4xi64> -> tensor<f32>
  %3 = braid.cross_entropy_backward %d, %x, %l reduction = mean : tensor<f32>, tensor<4x10xf32>, tensor<4xi64>
  return
}

// The embedding reads only the gathered rows (4*5*8 f32 = 640 bytes) and the
// ids (20 i64 = 160), not the 100-row table; its backward adds 160 row
// elements and writes the whole table (100*8*4 = 3200).
// CHECK-LABEL: braid cost summary: @embedding
// CHECK:        flops                     160 (160.00 FLOP)
// CHECK-NEXT:   bytes read                1600 (1.56 KiB)
// CHECK-NEXT:   bytes written             3840 (3.75 KiB)
func.func @embedding(%t: tensor<100x8xf32>, %i: tensor<4x5xi64>, %d: tensor<4x5x8xf32>) {
  %0 = braid.embedding %t, %i : tensor<100x8xf32>, tensor<4x5xi64> -> tensor<4x5x8xf32>
  %1 = braid.embedding_backward %d, %i : tensor<4x5x8xf32>, tensor<4x5xi64> -> tensor<100x8xf32>
  return
}

// Data movement costs no flops; a reshape moves no bytes, a transpose reads
// and writes its 64 bytes once.
// CHECK-LABEL: braid cost summary: @movement
// CHECK-NEXT:   compute ops               2
// CHECK-NEXT:   flops                     0 (0.00 FLOP)
// CHECK-NEXT:   bytes read                64 (64.00 B)
// CHECK-NEXT:   bytes written             64 (64.00 B)
func.func @movement(%x: tensor<4x4xf32>) {
  %0 = braid.reshape %x : tensor<4x4xf32> -> tensor<16xf32>
  %1 = braid.transpose %x permutation = [1, 0] : tensor<4x4xf32> -> tensor<4x4xf32>
  return
}

// sgd 6 and adamw 12 flops per parameter element: 16 * 18 = 288.
// CHECK-LABEL: braid cost summary: @optimizers
// CHECK:        flops                     288 (288.00 FLOP)
func.func @optimizers(%p: tensor<16xf32>, %s: tensor<f32>) {
  %0:2 = braid.sgd %p, %p, %p lr = 0.1 momentum = 0.9 weight_decay = 0.0 : tensor<16xf32>
  %1:3 = braid.adamw %p, %p, %p, %p, %s lr = 0.1 beta1 = 0.9 beta2 = 0.99 eps = 1.0e-8 weight_decay = 0.0 : tensor<16xf32>, tensor<f32>
  return
}

// Collective bytes are what one rank moves (braid::getCommBytes): 32 + 8
// for the bucket, 64 gathered, 64 received. Only the bucket carries grad_of.
// CHECK-LABEL: braid cost summary: @collectives
// CHECK-NEXT:   compute ops               0
// CHECK:        collectives               3 (1 all_gather_start, 1 all_reduce, 1 recv)
// CHECK-NEXT:   collective bytes          168 (168.00 B)
// CHECK-NEXT:   parameter tensors         2
// CHECK-NEXT:   parameter elements        12
// CHECK-NEXT:   parameter bytes           40 (40.00 B)
// CHECK-NEXT:   gradient bytes to reduce  40 (40.00 B)
// CHECK-NOT:    top ops
shard.grid @world(shape = 2)
func.func @collectives(%w: tensor<8xf32> {braid.role = #braid.role<parameter "w">},
                       %b: tensor<4xbf16> {braid.role = #braid.role<parameter "b">}) {
  %0:2 = braid.all_reduce %w, %b on @world grid_axes = [0] reduction = avg grad_of = ["w", "b"] : tensor<8xf32>, tensor<4xbf16>
  %1 = braid.all_gather_start %w on @world grid_axes = [0] gather_dim = 0 : tensor<8xf32> -> !braid.future<tensor<16xf32>>
  %2 = braid.recv on @world grid_axes = [0] peer = 1 : tensor<16xf32>
  return
}

// A reduce-scatter of gradients (a sharded optimizer's) counts as gradient
// bytes too, in either form: 32 + 32.
// CHECK-LABEL: braid cost summary: @sharded
// CHECK:        collectives               2 (1 reduce_scatter, 1 reduce_scatter_start)
// CHECK-NEXT:   collective bytes          64 (64.00 B)
// CHECK:        gradient bytes to reduce  64 (64.00 B)
func.func @sharded(%w: tensor<8xf32> {braid.role = #braid.role<parameter "w">}) {
  %0 = braid.reduce_scatter %w on @world grid_axes = [0] reduction = avg scatter_dim = 0 grad_of = ["w"] : tensor<8xf32> -> tensor<4xf32>
  %1 = braid.reduce_scatter_start %w on @world grid_axes = [0] reduction = avg scatter_dim = 0 grad_of = ["w"] : tensor<8xf32> -> !braid.future<tensor<4xf32>>
  return
}

// The folded forms braid-fuse-kernels writes, 2x4x4 = 32 elements each:
// softmax 5 + scale 1 + causal 1 = 7, its backward 4 + 1 + 1 = 6, gelu with
// a bias 8 + 1 = 9, its backward 14 + 1 = 15: 32 * 37 = 1184 flops. Bytes
// are one kernel's: 32 floats in and out per softmax, the gelus also read
// the bias (4 floats), the backward ops a second 32: read (32 + 64 + 36 + 68)
// * 4 = 800, written 4 * 32 * 4 = 512. A permuted matmul counts what a plain
// one does: 2 * 2 * 4 * 4 * 4 = 256 flops, (32 + 32) * 4 read, 32 * 4
// written. In all 1440 flops, 1056 bytes read, 640 written.
// CHECK-LABEL: braid cost summary: @folded
// CHECK-NEXT:   compute ops               5
// CHECK-NEXT:   flops                     1440 (1.44 kFLOP)
// CHECK-NEXT:   bytes read                1056 (1.03 KiB)
// CHECK-NEXT:   bytes written             640 (640.00 B)
func.func @folded(%x: tensor<2x4x4xf32>, %b: tensor<4xf32>) {
  %0 = braid.softmax %x dim = 2 {causal, scale = 0.5} : tensor<2x4x4xf32>
  %1 = braid.softmax_backward %x, %0 dim = 2 {causal, scale = 0.5} : tensor<2x4x4xf32>
  %2 = braid.gelu %x, %b : tensor<2x4x4xf32>, tensor<4xf32>
  %3 = braid.gelu_backward %x, %x, %b : tensor<2x4x4xf32>, tensor<4xf32>
  %4 = braid.matmul %x, %x {lhs_permutation = array<i64: 0, 2, 1>, result_permutation = array<i64: 0, 2, 1>} : tensor<2x4x4xf32>, tensor<2x4x4xf32> -> tensor<2x4x4xf32>
  return
}
