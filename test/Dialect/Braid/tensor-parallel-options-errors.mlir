// RUN: braid-opt %s --split-input-file --verify-diagnostics --braid-tensor-parallel=axis=2
// RUN: not braid-opt %s --braid-tensor-parallel=grid=mesh 2>&1 | FileCheck %s --check-prefix=GRID

shard.grid @world(shape = 2x2)
// expected-error @below {{braid-tensor-parallel: axis 2 is out of range for grid @world of rank 2}}
func.func @axis(%w: tensor<4xf32> {braid.sharding = #braid.sharding<split 0>}) -> tensor<4xf32> {
  return %w : tensor<4xf32>
}

// GRID: braid-tensor-parallel: no shard.grid @mesh in the module
