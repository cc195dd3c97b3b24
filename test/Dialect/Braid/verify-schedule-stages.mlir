// RUN: braid-opt %s --split-input-file --braid-verify-schedule | FileCheck %s

// Two stages, two micro-batches in GPipe order: stage 0 sends both
// activations before it receives the first gradient; stage 1 receives both
// before it sends the gradients back, and the transfers match in program
// order. (1F1B's order with blocking transfers deadlocks:
// verify-schedule-stages-errors.mlir; with a send-receive it does not: below.)
shard.grid @world(shape = 2)

// CHECK-LABEL: func.func @stage0
func.func @stage0(%x0: tensor<4x8xf32>, %x1: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
    attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
  %a0 = braid.matmul %x0, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  braid.send %a0 on @world grid_axes = [0] peer = 1 : tensor<4x8xf32>
  %a1 = braid.matmul %x1, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  braid.send %a1 on @world grid_axes = [0] peer = 1 : tensor<4x8xf32>
  %g0 = braid.recv on @world grid_axes = [0] peer = 1 : tensor<4x8xf32>
  %g1 = braid.recv on @world grid_axes = [0] peer = 1 : tensor<4x8xf32>
  return %g0, %g1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @stage1
func.func @stage1(%w: tensor<8x8xf32>) attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 1>} {
  %a0 = braid.recv on @world grid_axes = [0] peer = 0 : tensor<4x8xf32>
  %a1 = braid.recv on @world grid_axes = [0] peer = 0 : tensor<4x8xf32>
  %g0 = braid.matmul %a0, %w {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  braid.send %g0 on @world grid_axes = [0] peer = 0 : tensor<4x8xf32>
  %g1 = braid.matmul %a1, %w {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  braid.send %g1 on @world grid_axes = [0] peer = 0 : tensor<4x8xf32>
  return
}

// -----

// Data parallel 2 x pipeline 4: the transfers run on the pipeline axis
// (axis 1) between neighbours; each stage reduces its gradient over the
// data-parallel axis alone (a collective among the replicas of one stage,
// which run one program), and all ranks sum the loss over both axes, a
// collective every stage issues at the same position.
shard.grid @world(shape = 2x4)

// CHECK-LABEL: func.func @first
func.func @first(%x: tensor<4x8xf32>, %loss: tensor<f32>) -> (tensor<4x8xf32>, tensor<f32>)
    attributes {braid.stage = #braid.stage<grid = @world, axis = 1, index = 0>} {
  braid.send %x on @world grid_axes = [1] peer = 1 : tensor<4x8xf32>
  %g = braid.recv on @world grid_axes = [1] peer = 1 : tensor<4x8xf32>
  %r = braid.all_reduce %g on @world grid_axes = [0] reduction = sum : tensor<4x8xf32>
  %l = braid.all_reduce %loss on @world grid_axes = [0, 1] reduction = sum : tensor<f32>
  return %r, %l : tensor<4x8xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @middle1
func.func @middle1(%loss: tensor<f32>) -> tensor<f32>
    attributes {braid.stage = #braid.stage<grid = @world, axis = 1, index = 1>} {
  %a = braid.recv on @world grid_axes = [1] peer = 0 : tensor<4x8xf32>
  braid.send %a on @world grid_axes = [1] peer = 2 : tensor<4x8xf32>
  %g = braid.recv on @world grid_axes = [1] peer = 2 : tensor<4x8xf32>
  braid.send %g on @world grid_axes = [1] peer = 0 : tensor<4x8xf32>
  %l = braid.all_reduce %loss on @world grid_axes = [0, 1] reduction = sum : tensor<f32>
  return %l : tensor<f32>
}

// CHECK-LABEL: func.func @middle2
func.func @middle2(%loss: tensor<f32>) -> tensor<f32>
    attributes {braid.stage = #braid.stage<grid = @world, axis = 1, index = 2>} {
  %a = braid.recv on @world grid_axes = [1] peer = 1 : tensor<4x8xf32>
  braid.send %a on @world grid_axes = [1] peer = 3 : tensor<4x8xf32>
  %g = braid.recv on @world grid_axes = [1] peer = 3 : tensor<4x8xf32>
  braid.send %g on @world grid_axes = [1] peer = 1 : tensor<4x8xf32>
  %l = braid.all_reduce %loss on @world grid_axes = [0, 1] reduction = sum : tensor<f32>
  return %l : tensor<f32>
}

// CHECK-LABEL: func.func @last
func.func @last(%loss: tensor<f32>) -> tensor<f32>
    attributes {braid.stage = #braid.stage<grid = @world, axis = 1, index = 3>} {
  %a = braid.recv on @world grid_axes = [1] peer = 2 : tensor<4x8xf32>
  braid.send %a on @world grid_axes = [1] peer = 2 : tensor<4x8xf32>
  %l = braid.all_reduce %loss on @world grid_axes = [0, 1] reduction = sum : tensor<f32>
  return %l : tensor<f32>
}

// -----

// Asynchronous transfers on a communication stream overlap the compute
// stream: stage 0 starts sending its activation and computes while it is
// in flight; stage 1 waits for it only where it uses it.
shard.grid @world(shape = 2)

// CHECK-LABEL: func.func @async0
func.func @async0(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
    attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
  %a = braid.matmul %x, %w {braid.stream = #braid.stream<compute, 0>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %e = braid.record_event {braid.stream = #braid.stream<compute, 0>}
  braid.wait_event %e {braid.stream = #braid.stream<comm, 0>}
  %s = braid.send_start %a on @world grid_axes = [0] peer = 1 {braid.stream = #braid.stream<comm, 0>} : tensor<4x8xf32> -> !braid.future<>
  %more = braid.matmul %a, %w {braid.stream = #braid.stream<compute, 0>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %r = braid.recv_start on @world grid_axes = [0] peer = 1 {braid.stream = #braid.stream<comm, 0>} : !braid.future<tensor<4x8xf32>>
  braid.wait %s {braid.stream = #braid.stream<compute, 0>} : !braid.future<>
  %g = braid.wait %r {braid.stream = #braid.stream<compute, 0>} : !braid.future<tensor<4x8xf32>>
  return %more, %g : tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @async1
func.func @async1(%w: tensor<8x8xf32>) attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 1>} {
  %r = braid.recv_start on @world grid_axes = [0] peer = 0 {braid.stream = #braid.stream<comm, 0>} : !braid.future<tensor<4x8xf32>>
  %a = braid.wait %r {braid.stream = #braid.stream<compute, 0>} : !braid.future<tensor<4x8xf32>>
  %g = braid.matmul %a, %w {braid.stream = #braid.stream<compute, 0>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %e = braid.record_event {braid.stream = #braid.stream<compute, 0>}
  braid.wait_event %e {braid.stream = #braid.stream<comm, 0>}
  %s = braid.send_start %g on @world grid_axes = [0] peer = 0 {braid.stream = #braid.stream<comm, 0>} : tensor<4x8xf32> -> !braid.future<>
  braid.wait %s {braid.stream = #braid.stream<compute, 0>} : !braid.future<>
  return
}

// -----

// 1F1B on two stages, two micro-batches: stage 0's steady state sends the
// second activation while it receives the first gradient, one
// send-receive; stage 1 sends the first gradient back while it receives
// the second activation. Each half matches the peer's transfer of its
// direction in order: the plain send and receive as well as the other
// send-receive's halves.
shard.grid @world(shape = 2)

// CHECK-LABEL: func.func @stage0
func.func @stage0(%x0: tensor<4x8xf32>, %x1: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
    attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
  %a0 = braid.matmul %x0, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  braid.send %a0 on @world grid_axes = [0] peer = 1 : tensor<4x8xf32>
  %a1 = braid.matmul %x1, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  // CHECK: braid.send_recv
  %g0 = braid.send_recv %a1 on @world grid_axes = [0] send_peer = 1 recv_peer = 1 : tensor<4x8xf32> -> tensor<4x8xf32>
  %d0 = braid.matmul %g0, %w {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %g1 = braid.recv on @world grid_axes = [0] peer = 1 : tensor<4x8xf32>
  %d1 = braid.matmul %g1, %w {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  return %d0, %d1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @stage1
func.func @stage1(%w: tensor<8x8xf32>) attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 1>} {
  %a0 = braid.recv on @world grid_axes = [0] peer = 0 : tensor<4x8xf32>
  %g0 = braid.matmul %a0, %w {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  // CHECK: braid.send_recv
  %a1 = braid.send_recv %g0 on @world grid_axes = [0] send_peer = 0 recv_peer = 0 : tensor<4x8xf32> -> tensor<4x8xf32>
  %g1 = braid.matmul %a1, %w {transpose_b} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  braid.send %g1 on @world grid_axes = [0] peer = 0 : tensor<4x8xf32>
  return
}

// -----

// Three stages in a ring, as interleaved schedules wrap the last stage
// round to the first: each stage sends to the next and receives from the
// one before in one asynchronous send-receive on its communication stream.
// Its two halves are two exchanges with two different peers; none can
// complete alone, and all three complete together.
shard.grid @world(shape = 3)

// CHECK-LABEL: func.func @s0
func.func @s0(%x: tensor<4x8xf32>) -> tensor<2x8xf32>
    attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
  %f = braid.send_recv_start %x on @world grid_axes = [0] send_peer = 1 recv_peer = 2 {braid.stream = #braid.stream<comm, 0>} : tensor<4x8xf32> -> !braid.future<tensor<2x8xf32>>
  %r = braid.wait %f {braid.stream = #braid.stream<compute, 0>} : !braid.future<tensor<2x8xf32>>
  return %r : tensor<2x8xf32>
}

// CHECK-LABEL: func.func @s1
func.func @s1(%x: tensor<2x8xf32>) -> tensor<4x8xf32>
    attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 1>} {
  %f = braid.send_recv_start %x on @world grid_axes = [0] send_peer = 2 recv_peer = 0 {braid.stream = #braid.stream<comm, 0>} : tensor<2x8xf32> -> !braid.future<tensor<4x8xf32>>
  %r = braid.wait %f {braid.stream = #braid.stream<compute, 0>} : !braid.future<tensor<4x8xf32>>
  return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @s2
func.func @s2(%x: tensor<2x8xf32>) -> tensor<2x8xf32>
    attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 2>} {
  %f = braid.send_recv_start %x on @world grid_axes = [0] send_peer = 0 recv_peer = 1 {braid.stream = #braid.stream<comm, 0>} : tensor<2x8xf32> -> !braid.future<tensor<2x8xf32>>
  %r = braid.wait %f {braid.stream = #braid.stream<compute, 0>} : !braid.future<tensor<2x8xf32>>
  return %r : tensor<2x8xf32>
}
