// RUN: braid-opt %s --braid-schedule=max-live-increase=1000 | FileCheck %s
// RUN: braid-opt %s --braid-schedule=max-live-increase=1000 --braid-assign-streams | braid-opt --braid-verify-schedule -o /dev/null

shard.grid @world(shape = 2x2)

// A tensor-parallel all-reduce (no grad_of) is on the critical path: its
// wait and what follows from it run before a gradient bucket's wait, which
// stays deferred to the optimizer. (A tiny step: its peak rises by more
// than the default bound of 10%.)
// CHECK-LABEL: func.func @tensor_parallel_wait_first
// CHECK: %[[FG:.*]] = braid.all_reduce_start {{.*}} grid_axes = [0] reduction = avg grad_of = ["w"]
// CHECK: %[[FT:.*]] = braid.all_reduce_start {{.*}} grid_axes = [1] reduction = sum
// CHECK: %[[T:.*]] = braid.wait %[[FT]]
// CHECK-NEXT: braid.relu %[[T]]
// CHECK: braid.wait %[[FG]]
// CHECK-NEXT: braid.sgd
func.func @tensor_parallel_wait_first(
    %w: tensor<64xf32> {braid.role = #braid.role<parameter "w">},
    %m: tensor<64xf32> {braid.role = #braid.role<optimizer_state "w.momentum">},
    %x: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %g = braid.relu %w : tensor<64xf32>
  %fg = braid.all_reduce_start %g on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<64xf32>
  %ft = braid.all_reduce_start %x on @world grid_axes = [1] reduction = sum : tensor<64xf32>
  %r = braid.wait %fg : !braid.future<tensor<64xf32>>
  %w2, %m2 = braid.sgd %w, %r, %m lr = 0.1 momentum = 0.9 weight_decay = 0.0 : tensor<64xf32>
  %t = braid.wait %ft : !braid.future<tensor<64xf32>>
  %y = braid.relu %t : tensor<64xf32>
  return %w2, %m2, %y : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}

// The wait of a tensor-parallel reduce-scatter comes as late as the data
// allow: the weight gradient, which does not need it, runs while the input
// gradient is reduced (Megatron's asynchronous tensor-parallel backward).
// CHECK-LABEL: func.func @weight_gradient_under_the_wait
// CHECK: %[[F:.*]] = braid.reduce_scatter_start
// CHECK-NEXT: %[[DW:.*]] = braid.matmul %arg0, %arg1 {transpose_a}
// CHECK-NEXT: braid.all_reduce_start %[[DW]] on @world grid_axes = [0]
// CHECK-NEXT: %[[R:.*]] = braid.wait %[[F]]
// CHECK-NEXT: braid.relu %[[R]]
func.func @weight_gradient_under_the_wait(
    %dy: tensor<8x16xf32>, %x: tensor<8x16xf32>,
    %w: tensor<16x16xf32> {braid.role = #braid.role<parameter "w">})
    -> (tensor<16x16xf32>, tensor<4x16xf32>) {
  %dx = braid.matmul %dy, %w : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  %f = braid.reduce_scatter_start %dx on @world grid_axes = [1] reduction = sum scatter_dim = 0 : tensor<8x16xf32> -> !braid.future<tensor<4x16xf32>>
  %r = braid.wait %f : !braid.future<tensor<4x16xf32>>
  %a = braid.relu %r : tensor<4x16xf32>
  %dw = braid.matmul %dy, %x {transpose_a} : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<16x16xf32>
  %fg = braid.all_reduce_start %dw on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<16x16xf32>
  %g = braid.wait %fg : !braid.future<tensor<16x16xf32>>
  return %g, %a : tensor<16x16xf32>, tensor<4x16xf32>
}
