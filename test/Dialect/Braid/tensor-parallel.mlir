// A GPT block (fused q/k/v, pre-norm attention and MLP, tied embedding)
// partitioned over 2 tensor-parallel ranks, forward and backward, as
// Megatron-LM does it: four all-reduces over the tensor-parallel axis (the
// row-parallel outputs of attention and the MLP in the forward, the input
// gradients of the column-parallel q/k/v and MLP matrices in the backward),
// each rank holding whole heads, and the data-parallel gradient
// all-reduces on axis 0 on the local pieces.
//
// RUN: env PYTHONPATH=%braid_src/python %python -m braid.models gpt --tiny --world-size 4 --tp 2 \
// RUN:   | braid-opt --braid-tensor-parallel | FileCheck %s
// RUN: env PYTHONPATH=%braid_src/python %python -m braid.models gpt --tiny --world-size 4 --tp 2 \
// RUN:   | braid-opt --braid-tensor-parallel | FileCheck %s --check-prefix=COUNT
// The partitioned step compiles with the overlap passes, and the schedule
// verifier proves it.
// RUN: env PYTHONPATH=%braid_src/python %python -m braid.models gpt --tiny --world-size 4 --tp 2 \
// RUN:   | braid-opt --braid-tensor-parallel --braid-overlap | braid-opt --braid-verify-schedule \
// RUN:   | FileCheck %s --check-prefix=OVERLAP
// braid-compile partitions it, overlaps, plans memory and proves the plan
// (the tensor-parallel all-reduces' inputs are read until their waits on the
// compute stream, and their bytes reused after: the live-bytes check).
// RUN: env PYTHONPATH=%braid_src/python %python -m braid.models gpt --tiny --world-size 4 --tp 2 \
// RUN:   > %t.mlir
// RUN: braid-compile %t.mlir -o %t.plan
// RUN: braid-compile %t.mlir --sequence-parallel=false --emit=mlir -o - | FileCheck %s --check-prefix=PLANNED
// RUN: braid-compile %t.mlir --emit=mlir -o - | FileCheck %s --check-prefix=SP
// The Megatron-style baseline keeps them synchronous.
// RUN: braid-compile %t.mlir --schedule=megatron --sequence-parallel=false --emit=mlir -o - \
// RUN:   | FileCheck %s --check-prefix=MEGATRON
// With the tied table split by rows (--vocab-parallel): Megatron's
// vocabulary-parallel embedding (each rank's rows, summed over the axis),
// the lm head's logits of this rank's classes, the vocabulary-parallel
// cross-entropy (one all-gather of each row's summary for the loss, one
// for the gradient), the lm head's input gradient summed, and the tied
// gradient of this rank's rows; it compiles and its schedule is proven,
// with sequence parallelism and without.
// RUN: env PYTHONPATH=%braid_src/python %python -m braid.models gpt --tiny --world-size 4 --tp 2 \
// RUN:   --vocab-parallel > %t.vocab.mlir
// RUN: braid-opt %t.vocab.mlir --braid-tensor-parallel | FileCheck %s --check-prefix=VOCAB
// RUN: braid-compile %t.vocab.mlir -o %t.vocab.plan
// RUN: braid-compile %t.vocab.mlir --sequence-parallel=false -o %t.vocab-nosp.plan
// The Megatron-style schedule keeps the summaries' all-gathers synchronous
// on a communication stream: their results live the whole step in the
// memory plan (they did not, and the schedule verifier caught the reuse).
// RUN: braid-compile %t.vocab.mlir --schedule=megatron --sequence-parallel=false -o %t.vocab-megatron.plan
// A step without braid.sharding (the data-parallel example) is unchanged.
// RUN: braid-opt %examples/gpt-tiny.mlir --braid-tensor-parallel | braid-opt > %t.after
// RUN: braid-opt %examples/gpt-tiny.mlir > %t.before
// RUN: diff %t.before %t.after

// CHECK-LABEL: func.func @gpt_step
// The q/k/v weight comes in as each rank's third of q, of k and of v.
// CHECK-SAME: tensor<96x64xf32> {braid.role = #braid.role<parameter "h0.attn.c_attn.weight">, braid.sharding = #braid.sharding<split 0 blocks [64, 64, 64]>}
// CHECK-SAME: tensor<64x128xf32> {braid.role = #braid.role<parameter "h0.mlp.c_proj.weight">, braid.sharding = #braid.sharding<split 1>}
// CHECK-SAME: braid.tensor_parallel = #braid.tensor_parallel<grid = @world, axis = 1>

// Forward: q, k and v of 2 local heads each, fused attention on the local
// heads, the
// row-parallel output projection summed before its bias.
// CHECK: %[[QKV:.*]] = braid.bias_add {{.*}} : tensor<64x96xf32>, tensor<96xf32>
// CHECK-NEXT: %[[Q:.*]] = braid.slice %[[QKV]] offsets = [0, 0] : tensor<64x96xf32> -> tensor<64x32xf32>
// CHECK-NEXT: braid.reshape %[[Q]] : tensor<64x32xf32> -> tensor<2x32x2x16xf32>
// CHECK: braid.slice %[[QKV]] offsets = [0, 32] : tensor<64x96xf32> -> tensor<64x32xf32>
// CHECK: braid.slice %[[QKV]] offsets = [0, 64] : tensor<64x96xf32> -> tensor<64x32xf32>
// CHECK: braid.attention {{.*}} {causal} scale = 2.500000e-01 : tensor<2x2x32x16xf32>, tensor<2x2x32x16xf32>, tensor<2x2x32x16xf32> -> tensor<2x2x32x16xf32>, tensor<2x2x32xf32>
// CHECK: %[[PROJ:.*]] = braid.matmul {{.*}} {transpose_b} : tensor<64x32xf32>, tensor<64x32xf32> -> tensor<64x64xf32>
// CHECK-NEXT: %[[PR:.*]] = braid.all_reduce %[[PROJ]] on @world grid_axes = [1] reduction = sum : tensor<64x64xf32>
// CHECK-NEXT: braid.bias_add %[[PR]]
// CHECK: braid.gelu {{.*}} : tensor<64x128xf32>
// CHECK-NEXT: %[[MLP:.*]] = braid.matmul {{.*}} : tensor<64x128xf32>, tensor<64x128xf32> -> tensor<64x64xf32>
// CHECK-NEXT: %[[MR:.*]] = braid.all_reduce %[[MLP]] on @world grid_axes = [1] reduction = sum
// CHECK-NEXT: braid.bias_add %[[MR]]
// The tied lm head is replicated: logits and loss need no collective.
// CHECK: braid.cross_entropy {{.*}} : tensor<64x64xf32>, tensor<64xi64> -> tensor<f32>

// Backward: the weight gradients stay local pieces; the input gradients
// of the column-parallel matrices are partial sums, reduced before the
// layer norms' backward.
// CHECK: braid.all_reduce {{.*}} on @world grid_axes = [0] reduction = avg grad_of = ["h0.mlp.c_proj.weight"] : tensor<64x128xf32>
// CHECK: %[[DY2:.*]] = braid.matmul {{.*}} : tensor<64x128xf32>, tensor<128x64xf32> -> tensor<64x64xf32>
// CHECK-NEXT: %[[DY2R:.*]] = braid.all_reduce %[[DY2]] on @world grid_axes = [1] reduction = sum
// CHECK-NEXT: braid.layer_norm_backward %[[DY2R]]
// CHECK: %[[DQKV:.*]] = braid.concat {{.*}} dim = 1 : tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32> -> tensor<64x96xf32>
// CHECK: braid.all_reduce {{.*}} grid_axes = [0] reduction = avg grad_of = ["h0.attn.c_attn.weight"] : tensor<96x64xf32>
// CHECK: %[[DY1:.*]] = braid.matmul %[[DQKV]], {{.*}} : tensor<64x96xf32>, tensor<96x64xf32> -> tensor<64x64xf32>
// CHECK-NEXT: %[[DY1R:.*]] = braid.all_reduce %[[DY1]] on @world grid_axes = [1] reduction = sum
// CHECK-NEXT: braid.layer_norm_backward %[[DY1R]]
// The optimizer updates the local pieces.
// CHECK: braid.adamw {{.*}} : tensor<96x64xf32>, tensor<f32>

// COUNT-COUNT-4: grid_axes = [1]
// COUNT-NOT: grid_axes = [1]

// OVERLAP-LABEL: func.func @gpt_step
// OVERLAP-COUNT-4: braid.all_reduce_start {{.*}} on @world grid_axes = [1] reduction = sum

// On their own stream (one per group): the gradient buckets on comm 1.
// PLANNED: braid.arena_bytes
// PLANNED: braid.all_reduce_start {{.*}} grid_axes = [1] reduction = sum {braid.stream = #braid.stream<comm, 0>}
// PLANNED: braid.all_reduce_start {{.*}} grid_axes = [0] reduction = avg {{.*}}#braid.stream<comm, 1>

// With sequence parallelism (braid-compile's default): reduce-scatters and
// all-gathers on the tensor-parallel stream.
// SP: braid.arena_bytes
// SP: braid.reduce_scatter_start {{.*}} grid_axes = [1] reduction = sum scatter_dim = 0 {braid.stream = #braid.stream<comm, 0>}
// SP: braid.all_gather_start {{.*}} grid_axes = [1] gather_dim = 0 {braid.stream = #braid.stream<comm, 0>}

// MEGATRON-NOT: braid.all_reduce_start {{.*}} grid_axes = [1]
// MEGATRON: braid.all_reduce {{.*}} grid_axes = [1] reduction = sum
// MEGATRON: braid.all_reduce_start {{.*}} grid_axes = [0] reduction = avg

// VOCAB-LABEL: func.func @gpt_step
// VOCAB-SAME: tensor<32x64xf32> {braid.role = #braid.role<parameter "wte">, braid.sharding = #braid.sharding<split 0>}
// VOCAB: %[[I:.*]] = braid.axis_index on @world grid_axes = [1] : tensor<i64>
// VOCAB-NEXT: %[[E:.*]] = braid.embedding_shard %{{.*}}, %{{.*}}, %[[I]] parts = 2 : tensor<32x64xf32>, tensor<2x32xi64> -> tensor<2x32x64xf32>
// VOCAB: braid.all_reduce %[[E]] on @world grid_axes = [1] reduction = sum : tensor<2x32x64xf32>
// VOCAB: %[[LOGITS:.*]] = braid.matmul {{.*}} {transpose_b} : tensor<64x64xf32>, tensor<32x64xf32> -> tensor<64x32xf32>
// VOCAB: %[[S:.*]] = braid.cross_entropy_shard_stats %[[LOGITS]], %{{.*}}, %[[I]] parts = 2 : tensor<64x32xf32>, tensor<64xi64> -> tensor<1x64x3xf32>
// VOCAB-NEXT: %[[G:.*]] = braid.all_gather %[[S]] on @world grid_axes = [1] gather_dim = 0 : tensor<1x64x3xf32> -> tensor<2x64x3xf32>
// VOCAB-NEXT: braid.cross_entropy_shard_loss %[[G]] reduction = mean
// VOCAB: %[[DL:.*]] = braid.cross_entropy_shard_backward {{.*}}, %[[LOGITS]], {{.*}}, %[[I]] reduction = mean
// VOCAB: %[[HEAD:.*]] = braid.matmul %[[DL]], {{.*}} {transpose_a} : tensor<64x32xf32>, tensor<64x64xf32> -> tensor<32x64xf32>
// VOCAB: %[[DYF:.*]] = braid.matmul %[[DL]], {{.*}} : tensor<64x32xf32>, tensor<32x64xf32> -> tensor<64x64xf32>
// VOCAB-NEXT: braid.all_reduce %[[DYF]] on @world grid_axes = [1] reduction = sum : tensor<64x64xf32>
// VOCAB: %[[DE:.*]] = braid.embedding_shard_backward %{{.*}}, %{{.*}}, %[[I]] parts = 2 : tensor<2x32x64xf32>, tensor<2x32xi64> -> tensor<32x64xf32>
// VOCAB-NEXT: %[[DW:.*]] = braid.add %[[HEAD]], %[[DE]] : tensor<32x64xf32>
// VOCAB-NEXT: braid.all_reduce %[[DW]] on @world grid_axes = [0] reduction = avg grad_of = ["wte"] : tensor<32x64xf32>
