// RUN: braid-opt %s --split-input-file --verify-diagnostics --braid-collective-matmul

// A step already scheduled: the ring steps would need futures of their own.
shard.grid @world(shape = 1x2)
func.func @scheduled(%x: tensor<4x8xf32>) -> tensor<8x8xf32> {
  %f = braid.all_gather_start %x on @world grid_axes = [1] gather_dim = 0 : tensor<4x8xf32> -> !braid.future<tensor<8x8xf32>>
  // expected-error @below {{braid-collective-matmul rewrites graph-level steps; 'braid.wait' is already scheduled (run it before the overlap passes)}}
  %g = braid.wait %f : !braid.future<tensor<8x8xf32>>
  return %g : tensor<8x8xf32>
}

// -----

// RUN: not braid-opt %s --split-input-file --braid-collective-matmul=mode=sometimes -o /dev/null 2>&1 | FileCheck %s --check-prefix=MODE
// MODE: error: braid-collective-matmul: mode 'sometimes' is none of on, auto
func.func @mode() {
  return
}

// -----

// RUN: not braid-opt %s --split-input-file --braid-collective-matmul="mode=auto cluster=h100-9" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CLUSTER
// CLUSTER: error: cannot load the cluster: {{.*}}h100-9
func.func @cluster() {
  return
}
