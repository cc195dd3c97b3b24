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
