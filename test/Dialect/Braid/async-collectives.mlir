// RUN: braid-opt %s --braid-async-collectives | FileCheck %s
// RUN: braid-opt %s --braid-async-collectives | braid-opt --braid-verify-schedule -o /dev/null

shard.grid @world(shape = 4x2)

// The start goes right after the producer of its operand, the wait right
// before the first user of the result; compute that does not need the
// result runs in between.
// CHECK-LABEL: func.func @start_early_wait_late
// CHECK:      %[[G:.*]] = braid.relu %arg0
// CHECK-NEXT: %[[F:.*]] = braid.all_reduce_start %[[G]] on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<64xf32>
// CHECK-NEXT: %[[X:.*]] = braid.matmul
// CHECK-NEXT: %[[Y:.*]] = braid.matmul %[[X]]
// CHECK-NEXT: %[[R:.*]] = braid.wait %[[F]] : !braid.future<tensor<64xf32>>
// CHECK-NEXT: braid.add %[[R]], %arg0
func.func @start_early_wait_late(%w: tensor<64xf32> {braid.role = #braid.role<parameter "w">},
                                 %a: tensor<32x32xf32>) -> (tensor<64xf32>, tensor<32x32xf32>) {
  %g = braid.relu %w : tensor<64xf32>
  %x = braid.matmul %a, %a : tensor<32x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
  %y = braid.matmul %x, %a : tensor<32x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
  %r = braid.all_reduce %g on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<64xf32>
  %u = braid.add %r, %w : tensor<64xf32>
  return %u, %y : tensor<64xf32>, tensor<32x32xf32>
}

// Collectives of one group keep their issue order even when a later one's
// operands are ready first; another group's collective may move ahead.
// CHECK-LABEL: func.func @group_order
// CHECK:      %[[B:.*]] = braid.relu %arg1
// CHECK-NEXT: %[[FC:.*]] = braid.all_reduce_start %[[B]] on @world grid_axes = [1]
// CHECK-NEXT: %[[A:.*]] = braid.relu %arg0
// CHECK-NEXT: %[[FA:.*]] = braid.all_reduce_start %[[A]] on @world grid_axes = [0]
// CHECK-NEXT: %[[FB:.*]] = braid.all_reduce_start %[[B]] on @world grid_axes = [0]
func.func @group_order(%a: tensor<64xf32>, %b: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %pb = braid.relu %b : tensor<64xf32>
  %pa = braid.relu %a : tensor<64xf32>
  %ra = braid.all_reduce %pa on @world grid_axes = [0] reduction = sum : tensor<64xf32>
  %rb = braid.all_reduce %pb on @world grid_axes = [0] reduction = sum : tensor<64xf32>
  %rc = braid.all_reduce %pb on @world grid_axes = [1] reduction = sum : tensor<64xf32>
  return %ra, %rb, %rc : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}

// Every collective has a start form; operands that are arguments start at
// the top. A chain (reduce_scatter then all_gather) waits right before the
// next start, and the all_to_all of the same group stays after it. A wait
// without users (the send's) goes before the next start of its group (the
// receive), so that what it sends is not held to the end.
// CHECK-LABEL: func.func @all_kinds
// CHECK-NEXT: %[[S0:.*]] = braid.reduce_scatter_start %arg0 {{.*}} -> !braid.future<tensor<16x8xf32>>
// CHECK-NEXT: %[[S1:.*]] = braid.collective_broadcast_start %arg0 {{.*}} -> !braid.future<tensor<64x8xf32>>
// CHECK-NEXT: %[[S2:.*]] = braid.send_start %arg0 {{.*}} -> !braid.future<>
// CHECK-NEXT: braid.wait %[[S2]] : !braid.future<>
// CHECK-NEXT: %[[S3:.*]] = braid.recv_start on @world grid_axes = [1] peer = 0 : !braid.future<tensor<64x8xf32>>
// CHECK-NEXT: %[[W0:.*]] = braid.wait %[[S0]]
// CHECK-NEXT: %[[S4:.*]] = braid.all_gather_start %[[W0]] {{.*}} -> !braid.future<tensor<64x8xf32>>
// CHECK-NEXT: %[[S5:.*]] = braid.all_to_all_start %arg0 {{.*}} -> !braid.future<tensor<16x32xf32>>
// CHECK-NEXT: braid.wait %[[S5]]
// CHECK:      return
func.func @all_kinds(%x: tensor<64x8xf32>) -> (tensor<64x8xf32>, tensor<16x16xf32>, tensor<64x8xf32>, tensor<64x8xf32>) {
  %0 = braid.reduce_scatter %x on @world grid_axes = [0] reduction = sum scatter_dim = 0 : tensor<64x8xf32> -> tensor<16x8xf32>
  %1 = braid.all_gather %0 on @world grid_axes = [0] gather_dim = 0 : tensor<16x8xf32> -> tensor<64x8xf32>
  %2 = braid.all_to_all %x on @world grid_axes = [0] split_dim = 0 concat_dim = 1 : tensor<64x8xf32> -> tensor<16x32xf32>
  %3 = braid.reshape %2 : tensor<16x32xf32> -> tensor<16x16x2xf32>
  %4 = braid.reduce_sum %3 dims = [2] : tensor<16x16x2xf32> -> tensor<16x16xf32>
  %5 = braid.collective_broadcast %x on @world grid_axes = [1] root = 0 : tensor<64x8xf32> -> tensor<64x8xf32>
  braid.send %x on @world grid_axes = [1] peer = 1 : tensor<64x8xf32>
  %6 = braid.recv on @world grid_axes = [1] peer = 0 : tensor<64x8xf32>
  return %1, %4, %5, %6 : tensor<64x8xf32>, tensor<16x16xf32>, tensor<64x8xf32>, tensor<64x8xf32>
}

// Nothing to do without synchronous collectives.
// CHECK-LABEL: func.func @no_collectives
// CHECK-NEXT: braid.relu
// CHECK-NEXT: return
func.func @no_collectives(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = braid.relu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Every collective kind has its start form (defm Braid_Collective), which
// the pass builds from the synchronous op with its attributes (the group
// over axis 1 keeps its order; the one over axis 0 may start in between).
// CHECK-LABEL: func.func @every_kind
// CHECK-DAG: braid.collective_permute_start %arg0 on @world grid_axes = [1] offset = 1 : tensor<8xf32> -> !braid.future<tensor<8xf32>>
// CHECK-DAG: braid.reduce_scatter_start %arg0 on @world grid_axes = [0] reduction = sum scatter_dim = 0 : tensor<8xf32> -> !braid.future<tensor<2xf32>>
// CHECK-DAG: braid.send_start %arg0 on @world grid_axes = [1] peer = 1 : tensor<8xf32> -> !braid.future<>
// CHECK-DAG: braid.recv_start on @world grid_axes = [1] peer = 0 : !braid.future<tensor<8xf32>>
// CHECK-NOT: braid.collective_permute %
func.func @every_kind(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<2xf32>, tensor<8xf32>) {
  %p = braid.collective_permute %x on @world grid_axes = [1] offset = 1 : tensor<8xf32> -> tensor<8xf32>
  %s = braid.reduce_scatter %x on @world grid_axes = [0] reduction = sum scatter_dim = 0 : tensor<8xf32> -> tensor<2xf32>
  braid.send %x on @world grid_axes = [1] peer = 1 : tensor<8xf32>
  %r = braid.recv on @world grid_axes = [1] peer = 0 : tensor<8xf32>
  return %p, %s, %r : tensor<8xf32>, tensor<2xf32>, tensor<8xf32>
}

// gradients-only (the Megatron-style baseline): a collective without
// grad_of (a tensor-parallel all-reduce) stays synchronous.
// RUN: braid-opt %s --braid-async-collectives=gradients-only | FileCheck %s --check-prefix=GRADS
// GRADS-LABEL: func.func @gradients_only
// GRADS-DAG: braid.all_reduce %arg1 on @world grid_axes = [1] reduction = sum : tensor<64xf32>
// GRADS-DAG: braid.all_reduce_start %arg0 on @world grid_axes = [0] reduction = avg grad_of = ["w"]
func.func @gradients_only(%g: tensor<64xf32> {braid.role = #braid.role<parameter "w">},
                          %p: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %t = braid.all_reduce %p on @world grid_axes = [1] reduction = sum : tensor<64xf32>
  %r = braid.all_reduce %g on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<64xf32>
  return %r, %t : tensor<64xf32>, tensor<64xf32>
}

// forward-sync (the megatron-async baseline, Megatron-LM's asynchronous
// tensor-parallel backward): a collective without grad_of before the op
// that computes the loss stays synchronous; one after it is split, as are
// the gradients'. Without a loss result, nothing is the forward.
// RUN: braid-opt %s --braid-async-collectives=forward-sync | FileCheck %s --check-prefix=FWD
// FWD-LABEL: func.func @gradients_only
// FWD: braid.all_reduce_start %arg1 on @world grid_axes = [1] reduction = sum
// FWD-LABEL: func.func @forward_sync
// FWD: braid.all_gather %arg1 on @world grid_axes = [1] gather_dim = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
// FWD: braid.reduce_sum
// FWD-DAG: braid.reduce_scatter_start %{{.*}} on @world grid_axes = [1]
// FWD-DAG: braid.all_reduce_start %{{.*}} on @world grid_axes = [0] reduction = avg grad_of = ["w"]
func.func @forward_sync(%w: tensor<8x8xf32> {braid.role = #braid.role<parameter "w">},
                        %x: tensor<4x8xf32>)
    -> (tensor<8x8xf32> {braid.role = #braid.role<parameter "w">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %g = braid.all_gather %x on @world grid_axes = [1] gather_dim = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
  %y = braid.matmul %g, %w : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %l = braid.reduce_sum %y dims = [0, 1] : tensor<8x8xf32> -> tensor<f32>
  %d = braid.matmul %y, %w : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %s = braid.reduce_scatter %d on @world grid_axes = [1] reduction = sum scatter_dim = 0 : tensor<8x8xf32> -> tensor<4x8xf32>
  %dw = braid.matmul %g, %d {transpose_a} : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %r = braid.all_reduce %dw on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<8x8xf32>
  %u = braid.add %r, %w : tensor<8x8xf32>
  %z = braid.reduce_sum %s dims = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  %loss = braid.add %l, %z : tensor<f32>
  return %u, %l : tensor<8x8xf32>, tensor<f32>
}
