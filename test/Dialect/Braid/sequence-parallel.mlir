// Sequence parallelism on the GPT block of tensor-parallel.mlir (tp 2):
// each tensor-parallel all-reduce becomes a reduce-scatter along the
// tokens, the bias add, residual add and layer norm after it run on 32 of
// the 64 tokens, and an all-gather comes back before the next matmul. The
// backward mirrors it, and the layer norms' gamma and beta gradients
// (partial sums over the tokens) are all-reduced over the axis.
//
// RUN: env PYTHONPATH=%braid_src/python %python -m braid.models gpt --tiny --world-size 2 --tp 2 \
// RUN:   | braid-opt --braid-tensor-parallel --braid-sequence-parallel | FileCheck %s
// RUN: env PYTHONPATH=%braid_src/python %python -m braid.models gpt --tiny --world-size 2 --tp 2 \
// RUN:   | braid-opt --braid-tensor-parallel --braid-sequence-parallel | FileCheck %s --check-prefix=COUNT
// It compiles and the schedule verifier proves it (braid-compile runs the
// pass by default).
// RUN: env PYTHONPATH=%braid_src/python %python -m braid.models gpt --tiny --world-size 2 --tp 2 \
// RUN:   > %t.mlir
// RUN: braid-compile %t.mlir -o %t.plan
// regather=false: the backward reads the forward's gathered layer-norm
// outputs (one all-gather of each) instead of gathering them again.
// RUN: env PYTHONPATH=%braid_src/python %python -m braid.models gpt --tiny --world-size 2 --tp 2 \
// RUN:   | braid-opt --braid-tensor-parallel --braid-sequence-parallel=regather=false \
// RUN:   | FileCheck %s --check-prefix=KEEP
// Without a tensor-parallel step nothing changes.
// RUN: braid-opt %examples/gpt-tiny.mlir --braid-sequence-parallel | braid-opt > %t.after
// RUN: braid-opt %examples/gpt-tiny.mlir > %t.before
// RUN: diff %t.before %t.after

// CHECK-LABEL: func.func @gpt_step
// The embeddings' output (whole on every rank) cut to this rank's tokens
// (a local slice at the rank's index, no communication) before the first
// layer norm, whose output is gathered for the q/k/v matmul.
// CHECK: %[[I:.*]] = braid.axis_index on @world grid_axes = [1] : tensor<i64>
// CHECK: %[[X:.*]] = braid.shard_slice %{{.*}}, %[[I]] dim = 0 parts = 2 : tensor<64x64xf32> -> tensor<32x64xf32>
// CHECK-NEXT: %[[Y1:.*]], %{{.*}}, %{{.*}} = braid.layer_norm %[[X]], {{.*}} : tensor<32x64xf32>, tensor<64xf32> -> tensor<32xf32>
// CHECK-NEXT: %[[Y1G:.*]] = braid.all_gather %[[Y1]] on @world grid_axes = [1] gather_dim = 0 : tensor<32x64xf32> -> tensor<64x64xf32>
// CHECK-NEXT: braid.matmul %[[Y1G]], {{.*}} -> tensor<64x96xf32>
// The attention's row-parallel output, reduce-scattered.
// CHECK: %[[PROJ:.*]] = braid.matmul {{.*}} : tensor<64x32xf32>, tensor<64x32xf32> -> tensor<64x64xf32>
// CHECK-NEXT: %[[RS:.*]] = braid.reduce_scatter %[[PROJ]] on @world grid_axes = [1] reduction = sum scatter_dim = 0 : tensor<64x64xf32> -> tensor<32x64xf32>
// CHECK-NEXT: %[[B:.*]] = braid.bias_add %[[RS]], {{.*}} : tensor<32x64xf32>, tensor<64xf32>
// CHECK-NEXT: %[[X3:.*]] = braid.add %[[X]], %[[B]] : tensor<32x64xf32>
// CHECK-NEXT: %[[Y:.*]], %{{.*}}, %{{.*}} = braid.layer_norm %[[X3]], {{.*}} : tensor<32x64xf32>, tensor<64xf32> -> tensor<32xf32>
// CHECK-NEXT: %[[YG:.*]] = braid.all_gather %[[Y]] on @world grid_axes = [1] gather_dim = 0 : tensor<32x64xf32> -> tensor<64x64xf32>
// CHECK-NEXT: braid.matmul %[[YG]], {{.*}} -> tensor<64x128xf32>
// The MLP's output: the same, the residual stream already split.
// CHECK: braid.reduce_scatter {{.*}} reduction = sum scatter_dim = 0
// CHECK-NEXT: braid.bias_add {{.*}} : tensor<32x64xf32>
// CHECK-NEXT: braid.add %[[X3]], {{.*}} : tensor<32x64xf32>
// Backward: the lm head's gradient cut to the tokens for ln_f's backward;
// the MLP's input gradient reduce-scattered for ln_2's backward, on split
// inputs and statistics.
// CHECK: braid.layer_norm_backward {{.*}} : tensor<32x64xf32>, tensor<32xf32>, tensor<64xf32>
// CHECK: %[[DY2:.*]] = braid.matmul {{.*}} : tensor<64x128xf32>, tensor<128x64xf32> -> tensor<64x64xf32>
// CHECK-NEXT: %[[DY2S:.*]] = braid.reduce_scatter %[[DY2]] {{.*}} reduction = sum scatter_dim = 0
// CHECK-NEXT: %{{.*}}, %[[DG:.*]], %[[DB:.*]] = braid.layer_norm_backward %[[DY2S]], {{.*}} : tensor<32x64xf32>, tensor<32xf32>, tensor<64xf32>
// The layer norm's parameter gradients, summed over the axis before the
// update (after their data-parallel all-reduce).
// CHECK-DAG: %[[DGR:.*]] = braid.all_reduce %[[DG]] on @world grid_axes = [0] reduction = avg grad_of = ["h0.ln_2.weight"]
// CHECK-DAG: braid.all_reduce %[[DGR]] on @world grid_axes = [1] reduction = sum

// KEEP-LABEL: func.func @gpt_step
// KEEP: %[[G2:.*]] = braid.all_gather %result_0 on @world grid_axes = [1] gather_dim = 0
// KEEP: braid.matmul %{{.*}}, %[[G2]] {transpose_a}
// KEEP-NOT: braid.all_gather %result_0 on
// The default gathers it again for the weight gradient.
// RUN: env PYTHONPATH=%braid_src/python %python -m braid.models gpt --tiny --world-size 2 --tp 2 \
// RUN:   | braid-opt --braid-tensor-parallel --braid-sequence-parallel | FileCheck %s --check-prefix=REGATHER
// REGATHER: braid.all_gather %result_0 on @world grid_axes = [1] gather_dim = 0
// REGATHER: braid.all_gather %result_0 on @world grid_axes = [1] gather_dim = 0

// No tensor-parallel all-reduce of activations is left: only those of the
// norms' parameter gradients.
// COUNT-LABEL: func.func @gpt_step
// COUNT-NOT: braid.all_reduce {{.*}} grid_axes = [1] reduction = sum : tensor<64x64xf32>
// COUNT: braid.all_reduce {{.*}} grid_axes = [1] reduction = sum : tensor<64xf32>
// COUNT-NOT: braid.all_reduce {{.*}} grid_axes = [1] reduction = sum : tensor<64x64xf32>

// -----

// A [1, seq, hidden] step (one sequence per rank, as large models train):
// the tokens are the sequence, dimension 1.
// RUN: braid-opt %s --split-input-file --braid-sequence-parallel | FileCheck %s --check-prefix=SEQ
// SEQ-LABEL: func.func @one_sequence
// SEQ: %[[RS:.*]] = braid.reduce_scatter %arg0 on @world grid_axes = [1] reduction = sum scatter_dim = 1 : tensor<1x8x4xf32> -> tensor<1x4x4xf32>
// SEQ-NEXT: %[[Y:.*]], %{{.*}}, %{{.*}} = braid.layer_norm %[[RS]], %arg1, %arg2 {{.*}} : tensor<1x4x4xf32>, tensor<4xf32> -> tensor<1x4xf32>
// SEQ-NEXT: braid.all_gather %[[Y]] on @world grid_axes = [1] gather_dim = 1 : tensor<1x4x4xf32> -> tensor<1x8x4xf32>
shard.grid @world(shape = 1x2)
func.func @one_sequence(%p: tensor<1x8x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>)
    -> tensor<1x8x4xf32> attributes {braid.tensor_parallel = #braid.tensor_parallel<grid = @world, axis = 1>} {
  %r = braid.all_reduce %p on @world grid_axes = [1] reduction = sum : tensor<1x8x4xf32>
  %y, %m, %s = braid.layer_norm %r, %g, %b eps = 1.0e-5 : tensor<1x8x4xf32>, tensor<4xf32> -> tensor<1x8xf32>
  return %y : tensor<1x8x4xf32>
}

// -----

// Gradient clipping's squared norm under sequence parallelism: a scalar
// summed over the tensor-parallel axis has no tokens to split, and stays
// one all-reduce that every rank's clipping factor reads; the activations'
// all-reduce beside it becomes a reduce-scatter.
// SEQ-LABEL: func.func @clip_norm_scalar
// SEQ: braid.reduce_scatter %arg0 on @world grid_axes = [1] reduction = sum scatter_dim = 1
// SEQ: %[[SQ:.*]] = braid.all_reduce %arg3 on @world grid_axes = [1] reduction = sum : tensor<f32>
// SEQ-NEXT: braid.clip_coefficient %[[SQ]] max_norm = 1.000000e+00 : tensor<f32>
// SEQ-NOT: braid.reduce_scatter
// SEQ: return
shard.grid @world(shape = 1x2)
func.func @clip_norm_scalar(%p: tensor<1x8x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>,
                            %sq: tensor<f32>) -> (tensor<1x8x4xf32>, tensor<f32>)
    attributes {braid.tensor_parallel = #braid.tensor_parallel<grid = @world, axis = 1>} {
  %r = braid.all_reduce %p on @world grid_axes = [1] reduction = sum : tensor<1x8x4xf32>
  %y, %m, %s = braid.layer_norm %r, %g, %b eps = 1.0e-5 : tensor<1x8x4xf32>, tensor<4xf32> -> tensor<1x8xf32>
  %t = braid.all_reduce %sq on @world grid_axes = [1] reduction = sum : tensor<f32>
  %c = braid.clip_coefficient %t max_norm = 1.0 : tensor<f32>
  return %y, %c : tensor<1x8x4xf32>, tensor<f32>
}

// -----

// A residual stream kept partial (a vocabulary-parallel embedding's output
// %e plus each row-parallel product): the tensor-parallel pass sums it at
// each layer norm. The first sum splits %e; each later sum is that split
// plus the new product reduce-scattered, so the additions run on the
// rank's share and no whole partial sum is left.
// SEQ-LABEL: func.func @partial_stream
// SEQ: %[[E:.*]] = braid.reduce_scatter %arg0 on @world grid_axes = [1] reduction = sum scatter_dim = 0 : tensor<8x4xf32> -> tensor<4x4xf32>
// SEQ: braid.layer_norm %[[E]]
// SEQ: %[[P:.*]] = braid.reduce_scatter %arg1 {{.*}} : tensor<8x4xf32> -> tensor<4x4xf32>
// SEQ-NEXT: %[[X3:.*]] = braid.add %[[E]], %[[P]] : tensor<4x4xf32>
// SEQ-NEXT: braid.layer_norm %[[X3]]
// SEQ: %[[M:.*]] = braid.reduce_scatter %arg2 {{.*}} : tensor<8x4xf32> -> tensor<4x4xf32>
// SEQ-NEXT: %[[X4:.*]] = braid.add %[[X3]], %[[M]] : tensor<4x4xf32>
// SEQ-NOT: braid.add {{.*}} : tensor<8x4xf32>
// SEQ: return
shard.grid @world(shape = 1x2)
func.func @partial_stream(%e: tensor<8x4xf32>, %p: tensor<8x4xf32>, %m: tensor<8x4xf32>,
                          %g: tensor<4xf32>, %b: tensor<4xf32>)
    -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>)
    attributes {braid.tensor_parallel = #braid.tensor_parallel<grid = @world, axis = 1>} {
  %r1 = braid.all_reduce %e on @world grid_axes = [1] reduction = sum : tensor<8x4xf32>
  %y1, %m1, %s1 = braid.layer_norm %r1, %g, %b eps = 1.0e-5 : tensor<8x4xf32>, tensor<4xf32> -> tensor<8xf32>
  %x3 = braid.add %e, %p : tensor<8x4xf32>
  %r2 = braid.all_reduce %x3 on @world grid_axes = [1] reduction = sum : tensor<8x4xf32>
  %y2, %m2, %s2 = braid.layer_norm %r2, %g, %b eps = 1.0e-5 : tensor<8x4xf32>, tensor<4xf32> -> tensor<8xf32>
  %x4 = braid.add %x3, %m : tensor<8x4xf32>
  %r3 = braid.all_reduce %x4 on @world grid_axes = [1] reduction = sum : tensor<8x4xf32>
  %y3, %m3, %s3 = braid.layer_norm %r3, %g, %b eps = 1.0e-5 : tensor<8x4xf32>, tensor<4xf32> -> tensor<8xf32>
  return %y1, %y2, %y3 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}
