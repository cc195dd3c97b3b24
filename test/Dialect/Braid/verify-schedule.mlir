// RUN: braid-opt %s --braid-verify-schedule | FileCheck %s

shard.grid @world(shape = 8)

// Synchronization is transitive: comm 1 waits for an event of comm 0, which
// waited for compute after %g; so comm 1 may read %g. The two collectives of
// one group on two streams are ordered by the same chain.
// CHECK-LABEL: func.func @transitive
func.func @transitive(%x: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %g = braid.relu %x {braid.stream = #braid.stream<compute, 0>} : tensor<64xf32>
  %e0 = braid.record_event {braid.stream = #braid.stream<compute, 0>}
  braid.wait_event %e0 {braid.stream = #braid.stream<comm, 0>}
  %f0 = braid.all_reduce_start %g on @world grid_axes = [0] reduction = sum {braid.stream = #braid.stream<comm, 0>} : tensor<64xf32>
  %e1 = braid.record_event {braid.stream = #braid.stream<comm, 0>}
  braid.wait_event %e1 {braid.stream = #braid.stream<comm, 1>}
  %f1 = braid.all_reduce_start %g on @world grid_axes = [0] reduction = sum {braid.stream = #braid.stream<comm, 1>} : tensor<64xf32>
  %r0 = braid.wait %f0 {braid.stream = #braid.stream<compute, 0>} : !braid.future<tensor<64xf32>>
  %r1 = braid.wait %f1 {braid.stream = #braid.stream<compute, 0>} : !braid.future<tensor<64xf32>>
  return %r0, %r1 : tensor<64xf32>, tensor<64xf32>
}

// Without streams, a function is one stream: only futures are checked.
// CHECK-LABEL: func.func @unstreamed
func.func @unstreamed(%x: tensor<64xf32>) -> tensor<64xf32> {
  %f = braid.all_reduce_start %x on @world grid_axes = [0] reduction = sum : tensor<64xf32>
  %r = braid.wait %f : !braid.future<tensor<64xf32>>
  return %r : tensor<64xf32>
}

// A send's future is waited like any other.
// CHECK-LABEL: func.func @send
func.func @send(%x: tensor<64xf32>) {
  %f = braid.send_start %x on @world grid_axes = [0] peer = 1 : tensor<64xf32> -> !braid.future<>
  braid.wait %f : !braid.future<>
  return
}

// A view (reshape) at its operand's bytes is that value in another shape:
// both are read after the reshape, and the update in place over the
// parameter comes after every reader of both.
// CHECK-LABEL: func.func @view
func.func @view(%w: tensor<16xf32> {braid.offset = 0 : i64, braid.role = #braid.role<parameter "w">}, %g: tensor<16xf32> {braid.offset = 64 : i64}, %m: tensor<16xf32> {braid.offset = 128 : i64})
    -> (tensor<16xf32>, tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>) attributes {braid.arena_bytes = 448 : i64} {
  %v = braid.reshape %w {braid.offsets = array<i64: 0>} : tensor<16xf32> -> tensor<4x4xf32>
  %a = braid.relu %v {braid.offsets = array<i64: 192>} : tensor<4x4xf32>
  %b = braid.relu %w {braid.offsets = array<i64: 256>} : tensor<16xf32>
  %w2, %m2 = braid.sgd %w, %g, %m lr = 1.0e-1 momentum = 0.0 weight_decay = 0.0 {braid.offsets = array<i64: 0, 128>} : tensor<16xf32>
  return %w2, %m2, %a, %b : tensor<16xf32>, tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>
}

// A view at its operand's bytes while the operand is in flight: the view
// moves no byte, so it does not write what the send reads (a pipeline stage
// reshapes an activation it is sending for the backward that needs it).
// CHECK-LABEL: func.func @view_of_value_in_flight
func.func @view_of_value_in_flight(%x: tensor<4x4xf32> {braid.offset = 0 : i64}) -> tensor<16xf32> attributes {braid.arena_bytes = 256 : i64} {
  %a = braid.relu %x {braid.offsets = array<i64: 64>, braid.stream = #braid.stream<compute, 0>} : tensor<4x4xf32>
  %e = braid.record_event {braid.stream = #braid.stream<compute, 0>}
  braid.wait_event %e {braid.stream = #braid.stream<comm, 0>}
  %f = braid.all_reduce_start %a on @world grid_axes = [0] reduction = sum {braid.stream = #braid.stream<comm, 0>} : tensor<4x4xf32>
  // CHECK: braid.reshape
  %v = braid.reshape %a {braid.offsets = array<i64: 64>, braid.stream = #braid.stream<compute, 0>} : tensor<4x4xf32> -> tensor<16xf32>
  %r = braid.wait %f {braid.offsets = array<i64: 128>, braid.stream = #braid.stream<compute, 0>} : !braid.future<tensor<4x4xf32>>
  return %v : tensor<16xf32>
}
