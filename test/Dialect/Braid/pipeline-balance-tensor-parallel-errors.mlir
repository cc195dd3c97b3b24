// RUN: braid-opt %s --verify-diagnostics --braid-pipeline="axis=0"

// Megatron's MLP alone, fc1 column-parallel and fc2 row-parallel: the one
// cut into 2 stages is between them, where fc1's activations cross split
// over the tensor-parallel ranks. The balancer has no cut to offer.
shard.grid @world(shape = 2x1x2)
// expected-error @below {{has no cut into 2 pipeline stages where the values crossing each boundary are whole under tensor parallelism (a transfer moves no split value); name the boundaries with --stage-boundaries (braid-pipeline's boundaries=)}}
func.func @mlp(
    %x: tensor<64x256xf32> {braid.role = #braid.role<batch "x">},
    %w1: tensor<1024x256xf32> {braid.role = #braid.role<parameter "fc1.weight">, braid.sharding = #braid.sharding<split 0>},
    %w2: tensor<256x1024xf32> {braid.role = #braid.role<parameter "fc2.weight">, braid.sharding = #braid.sharding<split 1>})
    -> (tensor<1024x256xf32> {braid.role = #braid.role<parameter "fc1.weight">},
        tensor<256x1024xf32> {braid.role = #braid.role<parameter "fc2.weight">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %h = braid.matmul %x, %w1 {transpose_b} : tensor<64x256xf32>, tensor<1024x256xf32> -> tensor<64x1024xf32>
  %a = braid.relu %h : tensor<64x1024xf32>
  %y = braid.matmul %a, %w2 {transpose_b} : tensor<64x1024xf32>, tensor<256x1024xf32> -> tensor<64x256xf32>
  %l = braid.reduce_mean %y dims = [0, 1] : tensor<64x256xf32> -> tensor<f32>
  %dy = braid.constant dense<6.103515625e-05> : tensor<64x256xf32>
  %g2 = braid.matmul %dy, %a {transpose_a} : tensor<64x256xf32>, tensor<64x1024xf32> -> tensor<256x1024xf32>
  %da = braid.matmul %dy, %w2 : tensor<64x256xf32>, tensor<256x1024xf32> -> tensor<64x1024xf32>
  %dh = braid.relu_backward %da, %a : tensor<64x1024xf32>
  %g1 = braid.matmul %dh, %x {transpose_a} : tensor<64x1024xf32>, tensor<64x256xf32> -> tensor<1024x256xf32>
  %r2 = braid.all_reduce %g2 on @world grid_axes = [1] reduction = avg grad_of = ["fc2.weight"] : tensor<256x1024xf32>
  %r1 = braid.all_reduce %g1 on @world grid_axes = [1] reduction = avg grad_of = ["fc1.weight"] : tensor<1024x256xf32>
  %n1 = braid.sub %w1, %r1 : tensor<1024x256xf32>
  %n2 = braid.sub %w2, %r2 : tensor<256x1024xf32>
  return %n1, %n2, %l : tensor<1024x256xf32>, tensor<256x1024xf32>, tensor<f32>
}
