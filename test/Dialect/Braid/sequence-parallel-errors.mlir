// RUN: braid-opt %s --split-input-file --verify-diagnostics --braid-sequence-parallel

// expected-error @below {{braid-sequence-parallel: 'braid.tensor_parallel' names no static axis of a grid of the module}}
func.func @no_grid(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {braid.tensor_parallel = #braid.tensor_parallel<grid = @mesh, axis = 1>} {
  return %x : tensor<4xf32>
}

// -----

shard.grid @world(shape = 2x2)
// expected-error @below {{braid-sequence-parallel needs a function body of one block, but @blocks has 2}}
func.func @blocks(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {braid.tensor_parallel = #braid.tensor_parallel<grid = @world, axis = 1>} {
  cf.br ^next
^next:
  return %x : tensor<4xf32>
}

// -----

shard.grid @world(shape = 2x2)
func.func @scheduled(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {braid.tensor_parallel = #braid.tensor_parallel<grid = @world, axis = 1>} {
  %f = braid.all_reduce_start %x on @world grid_axes = [1] reduction = sum : tensor<4xf32>
  // expected-error @below {{braid-sequence-parallel rewrites graph-level steps; 'braid.wait' is already scheduled (run it before the overlap passes)}}
  %r = braid.wait %f : !braid.future<tensor<4xf32>>
  return %r : tensor<4xf32>
}

// -----

shard.grid @world(shape = 1x2)
func.func @odd_tokens(%q: tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
    attributes {braid.tensor_parallel = #braid.tensor_parallel<grid = @world, axis = 1>} {
  // expected-error @below {{sequence parallelism splits the tokens of 'tensor<1x3x4xf32>' over 2 tensor-parallel ranks, but dimension 1 has 3 tokens, which do not divide by 2; compile with --sequence-parallel=false}}
  %t = braid.all_reduce %q on @world grid_axes = [1] reduction = sum : tensor<1x3x4xf32>
  return %t : tensor<1x3x4xf32>
}

// -----

shard.grid @world(shape = 1x2)
func.func @no_tokens(%q: tensor<1x1x4xf32>) -> tensor<1x1x4xf32>
    attributes {braid.tensor_parallel = #braid.tensor_parallel<grid = @world, axis = 1>} {
  // expected-error @below {{sequence parallelism splits the tokens of 'tensor<1x1x4xf32>' over 2 tensor-parallel ranks, but it has no token dimension (every dimension before the features is 1); compile with --sequence-parallel=false}}
  %t = braid.all_reduce %q on @world grid_axes = [1] reduction = sum : tensor<1x1x4xf32>
  return %t : tensor<1x1x4xf32>
}

// -----

shard.grid @world(shape = 2x2)
// expected-error @below {{braid-sequence-parallel splits the tokens over the one tensor-parallel axis, but @two_axes is partitioned over grid axes [1, 0]}}
func.func @two_axes(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {braid.tensor_parallel = #braid.tensor_parallel<grid = @world, axis = 1, inner_axes = [0]>} {
  return %x : tensor<4xf32>
}
