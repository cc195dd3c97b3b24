// RUN: braid-opt %s --braid-share-arena --split-input-file --verify-diagnostics

// Without braid-plan-memory there is no arena to share.
func.func @step(%w: tensor<4xf32> {braid.role = #braid.role<parameter "w">})
    -> (tensor<4xf32> {braid.role = #braid.role<parameter "w">}) {
  return %w : tensor<4xf32>
}

// expected-error @below {{braid-share-arena needs the memory plan of @step_eval and of @step (run braid-plan-memory first)}}
func.func @step_eval(%w: tensor<4xf32> {braid.role = #braid.role<parameter "w">})
    -> (tensor<f32> {braid.role = #braid.role<loss "loss">})
    attributes {braid.evaluates = @step} {
  %l = braid.reduce_sum %w dims = [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A memory plan that leaves a tensor of the step without an offset.
// expected-error @+1 {{a tensor of @step2 has no arena offset}}
func.func @step2(%w: tensor<4xf32> {braid.role = #braid.role<parameter "w">})
    -> (tensor<4xf32> {braid.role = #braid.role<parameter "w">})
    attributes {braid.arena_bytes = 64 : i64} {
  return %w : tensor<4xf32>
}

func.func @step2_eval(%w: tensor<4xf32> {braid.role = #braid.role<parameter "w">, braid.offset = 0 : i64})
    -> (tensor<f32> {braid.role = #braid.role<loss "loss">})
    attributes {braid.evaluates = @step2, braid.arena_bytes = 128 : i64} {
  %l = braid.reduce_sum %w dims = [0] {braid.offsets = array<i64: 64>} : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
