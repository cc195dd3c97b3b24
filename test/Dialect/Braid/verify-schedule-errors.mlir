// RUN: braid-opt %s --split-input-file --verify-diagnostics --braid-verify-schedule

shard.grid @world(shape = 8)
func.func @missing_wait(%x: tensor<64xf32>) {
  // expected-error @below {{yields a future that is never waited}}
  %f = braid.all_reduce_start %x on @world grid_axes = [0] reduction = sum : tensor<64xf32>
  return
}

// -----

shard.grid @world(shape = 8)
func.func @double_wait(%x: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %f = braid.all_reduce_start %x on @world grid_axes = [0] reduction = sum : tensor<64xf32>
  // expected-note @below {{first wait here}}
  %a = braid.wait %f : !braid.future<tensor<64xf32>>
  // expected-error @below {{waits a second time for the future of 'braid.all_reduce_start'}}
  %b = braid.wait %f : !braid.future<tensor<64xf32>>
  return %a, %b : tensor<64xf32>, tensor<64xf32>
}

// -----

shard.grid @world(shape = 8)
func.func @future_escapes(%x: tensor<64xf32>) -> !braid.future<tensor<64xf32>> {
  %f = braid.all_reduce_start %x on @world grid_axes = [0] reduction = sum : tensor<64xf32>
  // expected-error @below {{uses the future of 'braid.all_reduce_start' directly; only braid.wait may use a future}}
  return %f : !braid.future<tensor<64xf32>>
}

// -----

shard.grid @world(shape = 8)
func.func @unsynchronized(%x: tensor<64xf32>) -> tensor<64xf32> {
  // expected-note @below {{produced here}}
  %g = braid.relu %x {braid.stream = #braid.stream<compute, 0>} : tensor<64xf32>
  // expected-error @below {{uses a value produced on stream #braid.stream<compute, 0> with no synchronization after its producer (a braid.wait_event on an event recorded after it)}}
  %f = braid.all_reduce_start %g on @world grid_axes = [0] reduction = sum {braid.stream = #braid.stream<comm, 0>} : tensor<64xf32>
  %r = braid.wait %f {braid.stream = #braid.stream<compute, 0>} : !braid.future<tensor<64xf32>>
  return %r : tensor<64xf32>
}

// -----

// An event recorded before the producer does not order it.
shard.grid @world(shape = 8)
func.func @event_too_early(%x: tensor<64xf32>) -> tensor<64xf32> {
  %e = braid.record_event {braid.stream = #braid.stream<compute, 0>}
  // expected-note @below {{produced here}}
  %g = braid.relu %x {braid.stream = #braid.stream<compute, 0>} : tensor<64xf32>
  braid.wait_event %e {braid.stream = #braid.stream<comm, 0>}
  // expected-error @below {{uses a value produced on stream #braid.stream<compute, 0> with no synchronization after its producer}}
  %f = braid.all_reduce_start %g on @world grid_axes = [0] reduction = sum {braid.stream = #braid.stream<comm, 0>} : tensor<64xf32>
  %r = braid.wait %f {braid.stream = #braid.stream<compute, 0>} : !braid.future<tensor<64xf32>>
  return %r : tensor<64xf32>
}

// -----

// Two collectives of one group on two streams with nothing ordering them:
// one rank may run the second first while another runs the first.
shard.grid @world(shape = 8)
func.func @deadlock_order(%x: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  // expected-note @below {{previous collective here}}
  %f0 = braid.all_reduce_start %x on @world grid_axes = [0] reduction = sum {braid.stream = #braid.stream<comm, 0>} : tensor<64xf32>
  // expected-error @below {{is a collective on group @world[0] issued on stream #braid.stream<comm, 1> with no synchronization after the previous collective of that group on stream #braid.stream<comm, 0>; ranks may run them in different orders and deadlock}}
  %f1 = braid.all_reduce_start %x on @world grid_axes = [0] reduction = sum {braid.stream = #braid.stream<comm, 1>} : tensor<64xf32>
  %r0 = braid.wait %f0 {braid.stream = #braid.stream<compute, 0>} : !braid.future<tensor<64xf32>>
  %r1 = braid.wait %f1 {braid.stream = #braid.stream<compute, 0>} : !braid.future<tensor<64xf32>>
  return %r0, %r1 : tensor<64xf32>, tensor<64xf32>
}

// -----

func.func @missing_stream(%x: tensor<64xf32>) -> tensor<64xf32> {
  %a = braid.relu %x {braid.stream = #braid.stream<compute, 0>} : tensor<64xf32>
  // expected-error @below {{has no 'braid.stream' in a function whose other ops have one}}
  %b = braid.relu %a : tensor<64xf32>
  return %b : tensor<64xf32>
}

// -----

func.func @foreign_event(%e: !braid.event, %x: tensor<64xf32>) {
  // expected-error @below {{waits for an event that no braid.record_event of this function recorded}}
  braid.wait_event %e {braid.stream = #braid.stream<comm, 0>}
  return
}

// -----

// A use of a reduced value before its wait cannot even be written: the
// value does not exist yet, and the IR verifier rejects the use.
shard.grid @world(shape = 8)
func.func @use_before_wait(%x: tensor<64xf32>) -> tensor<64xf32> {
  %f = braid.all_reduce_start %x on @world grid_axes = [0] reduction = sum : tensor<64xf32>
  // expected-error @below {{operand #0 does not dominate this use}}
  %y = braid.relu %r : tensor<64xf32>
  // expected-note @below {{operand defined here}}
  %r = braid.wait %f : !braid.future<tensor<64xf32>>
  return %y : tensor<64xf32>
}

// -----

// A memory plan that reuses the bytes of a gradient while its all-reduce is
// in flight.
shard.grid @world(shape = 2)
func.func @reuse_in_flight(%x: tensor<16xf32> {braid.offset = 0 : i64}) -> tensor<16xf32> attributes {braid.arena_bytes = 192 : i64} {
  %g = braid.relu %x {braid.offsets = array<i64: 64>, braid.stream = #braid.stream<compute, 0>} : tensor<16xf32>
  %e = braid.record_event {braid.stream = #braid.stream<compute, 0>}
  braid.wait_event %e {braid.stream = #braid.stream<comm, 0>}
  %f = braid.all_reduce_start %g on @world grid_axes = [0] reduction = sum {braid.stream = #braid.stream<comm, 0>} : tensor<16xf32>
  // expected-error @below {{writes bytes [64, 128) of the arena while 'braid.all_reduce_start' reads or writes [64, 128) until its wait}}
  %h = braid.relu %x {braid.offsets = array<i64: 64>, braid.stream = #braid.stream<compute, 0>} : tensor<16xf32>
  // expected-note @below {{the wait}}
  %r = braid.wait %f {braid.offsets = array<i64: 128>, braid.stream = #braid.stream<compute, 0>} : !braid.future<tensor<16xf32>>
  %s = braid.add %r, %h {braid.offsets = array<i64: 64>, braid.stream = #braid.stream<compute, 0>} : tensor<16xf32>
  return %s : tensor<16xf32>
}
