// RUN: braid-opt %s --split-input-file --verify-diagnostics --braid-tensor-parallel="grid=world"

// braid-tensor-parallel over shardings that name grid axes
// (sharding-multi-axis.mlir partitions them): what it refuses.

shard.grid @world(shape = 2x2)
// Grid axes and the one-axis forms in one step: which axis `split 0` is
// over would depend on the run.
// expected-error @below {{@mixed has 1 arguments sharded over the tensor-parallel axis (split D) and 1 over grid axes (split_axes = ...); name the grid axes in all of them}}
func.func @mixed(%x: tensor<4x8xf32> {braid.sharding = #braid.sharding<split 1>},
                 %y: tensor<4x8xf32> {braid.sharding = #braid.sharding<split_axes = [[1]]>}) {
  return
}

// -----

shard.grid @world(shape = 2x2)
// A dimension's axes are partitioned major to minor: axis 1 cuts axis 0's
// pieces, so axis 0 goes first.
// expected-error @below {{argument #0 is split_axes = [[0, 1]]: dimension 0 is split over grid axes [0, 1] major to minor, so axis 0 is partitioned before axis 1}}
func.func @minor_first(%x: tensor<8x4xf32> {braid.sharding = #braid.sharding<split_axes = [[0, 1]]>}) {
  return
}

// -----

shard.grid @world(shape = 2x2)
// expected-error @below {{argument #0 is split_axes = [[2]], but grid @world has 2 axes}}
func.func @axis_out_of_grid(%x: tensor<8x4xf32> {braid.sharding = #braid.sharding<split_axes = [[2]]>}) {
  return
}

// -----

shard.grid @world(shape = 2x2)
// expected-error @below {{@twice is already partitioned over grid axis 1 of @world (its 'braid.tensor_parallel' is #braid.tensor_parallel<grid = @world, axis = 1>)}}
func.func @twice(%x: tensor<4x4xf32> {braid.sharding = #braid.sharding<split_axes = [[1, 0]]>})
    attributes {braid.tensor_parallel = #braid.tensor_parallel<grid = @world, axis = 1>} {
  return
}

// -----

shard.grid @world(shape = 2x2)
shard.grid @other(shape = 2x2)
// expected-error @below {{@other_grid is partitioned over @other; it can be partitioned again over another axis of that grid only, not of @world}}
func.func @other_grid(%x: tensor<4x4xf32> {braid.sharding = #braid.sharding<split_axes = [[1, 0]]>})
    attributes {braid.tensor_parallel = #braid.tensor_parallel<grid = @other, axis = 0>} {
  return
}
