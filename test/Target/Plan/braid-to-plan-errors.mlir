// RUN: braid-translate --braid-to-plan --split-input-file --verify-diagnostics %s -o /dev/null

// expected-error @below {{@f has no memory plan; run braid-plan-memory first}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// expected-error @below {{a plan holds one step function, but the module has 2}}
module {
  func.func @f() {
    return
  }
  func.func @g() {
    return
  }
}

// -----

func.func @f(%x: tensor<4xf32> {braid.offset = 0 : i64}) -> tensor<4xf32> attributes {braid.arena_bytes = 64 : i64} {
  // expected-error @below {{result #0 has no offset; run braid-plan-memory}}
  %0 = braid.relu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @below {{argument #0 has no offset; run braid-plan-memory}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> attributes {braid.arena_bytes = 64 : i64} {
  return %x : tensor<4xf32>
}

// -----

shard.grid @a(shape = 2)
// expected-error @below {{grid @b spans 4 ranks, but another grid spans 2; a plan runs on one set of ranks}}
shard.grid @b(shape = 4)
func.func @f(%x: tensor<4xf32> {braid.offset = 0 : i64}) -> tensor<4xf32> attributes {braid.arena_bytes = 64 : i64} {
  return %x : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32> {braid.offset = 0 : i64}) -> tensor<4xf32> attributes {braid.arena_bytes = 128 : i64} {
  %0 = braid.relu %x {braid.offsets = array<i64: 64>, braid.stream = #braid.stream<compute, 0>} : tensor<4xf32>
  // expected-error @below {{has no braid.stream, but other ops of @f do}}
  %1 = braid.relu %0 {braid.offsets = array<i64: 0>} : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

shard.grid @world(shape = 2)
func.func @f(%x: tensor<4xf32> {braid.offset = 0 : i64}) attributes {braid.arena_bytes = 64 : i64} {
  // expected-error @below {{starts a collective that is never waited}}
  %f = braid.all_reduce_start %x on @world grid_axes = [0] reduction = sum : tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{the plan has no element type for 'tensor<4xf8E4M3FN>'}}
func.func @f(%x: tensor<4xf8E4M3FN> {braid.offset = 0 : i64}) attributes {braid.arena_bytes = 64 : i64} {
  return
}

// -----

// expected-error @below {{argument #1 is a '!braid.future<tensor<4xf32>>'; the arguments of a step are tensors}}
func.func @f(%x: tensor<4xf32> {braid.offset = 0 : i64}, %f: !braid.future<tensor<4xf32>>) -> tensor<4xf32> attributes {braid.arena_bytes = 128 : i64} {
  %r = braid.wait %f {braid.offsets = array<i64: 64>} : !braid.future<tensor<4xf32>>
  return %r : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32> {braid.offset = 0 : i64}) -> !braid.event attributes {braid.arena_bytes = 64 : i64} {
  %e = braid.record_event
  // expected-error @below {{returns a value that has no buffer (operand #0)}}
  return %e : !braid.event
}

// -----

// The plan records the cluster's description: an unknown one is an error.
// expected-error @below {{cannot record the cluster: unknown cluster 'h100-9000' (presets: a100-8, h100-8, h100-8x32, h100-8x8, h200-8; or give a .json file)}}
module attributes {braid.cluster = "h100-9000"} {
func.func @f(%x: tensor<4xf32> {braid.offset = 0 : i64}) -> tensor<4xf32> attributes {braid.arena_bytes = 64 : i64} {
  return %x : tensor<4xf32>
}
}

// -----

// expected-error @below {{cannot record the cluster: cannot open cluster file 'no/such.json'}}
module attributes {braid.cluster = "no/such.json"} {
func.func @f(%x: tensor<4xf32> {braid.offset = 0 : i64}) -> tensor<4xf32> attributes {braid.arena_bytes = 64 : i64} {
  return %x : tensor<4xf32>
}
}

// -----

// expected-error @below {{'braid.data_parallel' is #braid.data_parallel<grid = @mesh, axis = 0, zero_stage = 1>, which names no axis of a grid the module declares}}
func.func @f(%x: tensor<4xf32> {braid.offset = 0 : i64}) -> tensor<4xf32>
    attributes {braid.arena_bytes = 64 : i64, braid.data_parallel = #braid.data_parallel<grid = @mesh, axis = 0, zero_stage = 1>} {
  return %x : tensor<4xf32>
}

// -----

// expected-error @below {{'braid.tensor_parallel' names grid @mesh, which the module does not declare}}
func.func @f(%x: tensor<4xf32> {braid.offset = 0 : i64}) -> tensor<4xf32>
    attributes {braid.arena_bytes = 64 : i64, braid.tensor_parallel = #braid.tensor_parallel<grid = @mesh, axis = 0>} {
  return %x : tensor<4xf32>
}

// -----

shard.grid @world(shape = 2)
// expected-error @below {{'braid.tensor_parallel' names axis 1 of grid @world of rank 1}}
func.func @f(%x: tensor<4xf32> {braid.offset = 0 : i64}) -> tensor<4xf32>
    attributes {braid.arena_bytes = 64 : i64, braid.tensor_parallel = #braid.tensor_parallel<grid = @world, axis = 1>} {
  return %x : tensor<4xf32>
}

// -----

// A pipelined module's functions are all stage programs.
shard.grid @world(shape = 2)
func.func @s0() attributes {braid.arena_bytes = 0 : i64, braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
  return
}
// expected-error @below {{is not a stage program, but the module is pipelined: a plan holds one step function or one program per stage}}
func.func @other() attributes {braid.arena_bytes = 0 : i64} {
  return
}

// -----

shard.grid @world(shape = 2)
func.func @s0() attributes {braid.arena_bytes = 0 : i64, braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
  return
}
// expected-error @below {{is not one stage of one pipeline axis with the others; run braid-verify-schedule}}
func.func @s1() attributes {braid.arena_bytes = 0 : i64, braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
  return
}

// -----

// expected-error @below {{the pipeline has 2 stages, but no function is stage 1}}
module {
  shard.grid @world(shape = 2)
  func.func @s0() attributes {braid.arena_bytes = 0 : i64, braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
    return
  }
}

// -----

shard.grid @world(shape = 2)
// expected-error @below {{is a stage of an axis that no grid of static size has; run braid-verify-schedule}}
func.func @s0() attributes {braid.arena_bytes = 0 : i64, braid.stage = #braid.stage<grid = @world, axis = 3, index = 0>} {
  return
}

// -----

shard.grid @world(shape = 2)
func.func @s0() attributes {braid.arena_bytes = 0 : i64, braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
  return
}
// expected-error @below {{@s1 has no memory plan; run braid-plan-memory first}}
func.func @s1() attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 1>} {
  return
}

// -----

// Partitioned over two axes (sharding-multi-axis.mlir): the runtime places
// one tensor-parallel axis.
shard.grid @world(shape = 2x2)
// expected-error @below {{@two_axes is partitioned over grid axes [1, 0] (its 'braid.tensor_parallel' is #braid.tensor_parallel<grid = @world, axis = 1, inner_axes = [0]>), but the runtime places tensor parallelism on one axis}}
func.func @two_axes(%x: tensor<4xf32> {braid.offset = 0 : i64}) -> tensor<4xf32>
    attributes {braid.arena_bytes = 64 : i64, braid.tensor_parallel = #braid.tensor_parallel<grid = @world, axis = 1, inner_axes = [0]>} {
  return %x : tensor<4xf32>
}

// -----

// A sharding over an axis no pass partitioned.
shard.grid @world(shape = 2x2)
// expected-error @below {{'w' is split_axes = [[1, 0]], but grid axis 0 is not partitioned (run braid-tensor-parallel with axis=0)}}
func.func @not_partitioned(%x: tensor<2xf32> {braid.offset = 0 : i64, braid.role = #braid.role<parameter "w">, braid.sharding = #braid.sharding<split_axes = [[1, 0]]>}) -> tensor<2xf32>
    attributes {braid.arena_bytes = 64 : i64, braid.tensor_parallel = #braid.tensor_parallel<grid = @world, axis = 1>} {
  return %x : tensor<2xf32>
}

// -----

// An evaluation program with an arena of its own (braid-share-arena not run).
func.func @step(%w: tensor<16xf32> {braid.role = #braid.role<parameter "w">, braid.offset = 0 : i64})
    -> (tensor<16xf32> {braid.role = #braid.role<parameter "w">})
    attributes {braid.arena_bytes = 64 : i64} {
  return %w : tensor<16xf32>
}
// expected-error @below {{does not share @step's arena; run braid-share-arena after braid-plan-memory}}
func.func @step_eval(%w: tensor<16xf32> {braid.role = #braid.role<parameter "w">, braid.offset = 0 : i64})
    -> (tensor<f32> {braid.role = #braid.role<loss "loss">})
    attributes {braid.arena_bytes = 128 : i64, braid.evaluates = @step} {
  %l = braid.reduce_sum %w dims = [0] {braid.offsets = array<i64: 64>} : tensor<16xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// An evaluation program of a pipelined step.
shard.grid @world(shape = 2)
func.func @stage0(%w: tensor<16xf32> {braid.role = #braid.role<parameter "w">, braid.offset = 0 : i64})
    -> (tensor<16xf32> {braid.role = #braid.role<parameter "w">})
    attributes {braid.arena_bytes = 64 : i64,
                braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
  return %w : tensor<16xf32>
}
// expected-error @below {{evaluates a pipelined step, which braid has no evaluation plan for yet}}
func.func @stage0_eval(%w: tensor<16xf32> {braid.role = #braid.role<parameter "w">, braid.offset = 0 : i64})
    -> (tensor<f32> {braid.role = #braid.role<loss "loss">})
    attributes {braid.arena_bytes = 64 : i64, braid.evaluates = @stage0} {
  %l = braid.reduce_sum %w dims = [0] {braid.offsets = array<i64: 64>} : tensor<16xf32> -> tensor<f32>
  return %l : tensor<f32>
}
