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
func.func @reuse_in_flight(%x: tensor<16xf32> {braid.offset = 0 : i64}) -> tensor<16xf32> attributes {braid.arena_bytes = 256 : i64} {
  // expected-note @below {{the other value}}
  %g = braid.relu %x {braid.offsets = array<i64: 64>, braid.stream = #braid.stream<compute, 0>} : tensor<16xf32>
  %e = braid.record_event {braid.stream = #braid.stream<compute, 0>}
  braid.wait_event %e {braid.stream = #braid.stream<comm, 0>}
  %f = braid.all_reduce_start %g on @world grid_axes = [0] reduction = sum {braid.stream = #braid.stream<comm, 0>} : tensor<16xf32>
  // expected-error @below {{writes bytes [64, 128) of the arena while 'braid.all_reduce_start' reads or writes [64, 128) until its wait}}
  // expected-error @below {{result #0 of 'braid.relu' [64, 128) shares bytes with result #0 of 'braid.relu' [64, 128) while both are live}}
  %h = braid.relu %x {braid.offsets = array<i64: 64>, braid.stream = #braid.stream<compute, 0>} : tensor<16xf32>
  // expected-note @below {{the wait}}
  %r = braid.wait %f {braid.offsets = array<i64: 128>, braid.stream = #braid.stream<compute, 0>} : !braid.future<tensor<16xf32>>
  %s = braid.add %r, %h {braid.offsets = array<i64: 192>, braid.stream = #braid.stream<compute, 0>} : tensor<16xf32>
  return %s : tensor<16xf32>
}

// -----

// Two values live at once in the same bytes, with no collective involved:
// %b is written over %a, which the add still reads (an edited offset, or ops
// reordered after plan-memory). Every pass before and the translator accept
// it; the step would compute relu(x) * 2 + relu(x) * 2.
func.func @overlap_live(%x: tensor<16xf32> {braid.offset = 0 : i64}) -> tensor<16xf32> attributes {braid.arena_bytes = 256 : i64} {
  // expected-note @below {{the other value}}
  %a = braid.relu %x {braid.offsets = array<i64: 64>} : tensor<16xf32>
  // expected-error @below {{result #0 of 'braid.scale' [96, 160) shares bytes with result #0 of 'braid.relu' [64, 128) while both are live}}
  %b = braid.scale %a by 2.0 {braid.offsets = array<i64: 96>} : tensor<16xf32>
  %c = braid.add %a, %b {braid.offsets = array<i64: 192>} : tensor<16xf32>
  return %c : tensor<16xf32>
}

// -----

// A buffer outside the arena.
func.func @outside_arena(%x: tensor<16xf32> {braid.offset = 0 : i64}) -> tensor<16xf32> attributes {braid.arena_bytes = 128 : i64} {
  // expected-error @below {{result #0 of 'braid.relu' at [96, 160) lies outside the arena of 128 bytes}}
  %a = braid.relu %x {braid.offsets = array<i64: 96>} : tensor<16xf32>
  return %a : tensor<16xf32>
}

// -----

// An update written in place over a parameter that is read after it.
func.func @in_place_read_after(%w: tensor<16xf32> {braid.offset = 0 : i64, braid.role = #braid.role<parameter "w">}, %g: tensor<16xf32> {braid.offset = 64 : i64}, %m: tensor<16xf32> {braid.offset = 128 : i64})
    -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) attributes {braid.arena_bytes = 256 : i64} {
  // expected-error @below {{writes result #0 of 'braid.sgd' in place over argument #0 [0, 64), which is read after it or with no synchronization before it}}
  %w2, %m2 = braid.sgd %w, %g, %m lr = 1.0e-1 momentum = 0.0 weight_decay = 0.0 {braid.offsets = array<i64: 0, 128>} : tensor<16xf32>
  // expected-note @below {{read here}}
  %late = braid.relu %w {braid.offsets = array<i64: 192>} : tensor<16xf32>
  return %w2, %m2, %late : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// An all-reduce on a communication stream written in place over a gradient
// that the compute stream still reads: the read comes before the start in
// program order, but after the event the communication stream waits for, so
// the two run at once and the read may see reduced values.
shard.grid @world(shape = 2)
func.func @in_place_unsynchronized(%x: tensor<16xf32> {braid.offset = 0 : i64})
    -> (tensor<16xf32>, tensor<16xf32>) attributes {braid.arena_bytes = 256 : i64} {
  %g = braid.relu %x {braid.stream = #braid.stream<compute, 0>, braid.offsets = array<i64: 64>} : tensor<16xf32>
  %e = braid.record_event {braid.stream = #braid.stream<compute, 0>}
  // expected-note @below {{read here}}
  %h = braid.scale %g by 2.0 {braid.stream = #braid.stream<compute, 0>, braid.offsets = array<i64: 128>} : tensor<16xf32>
  braid.wait_event %e {braid.stream = #braid.stream<comm, 0>}
  // expected-error @below {{writes result #0 of 'braid.wait' in place over result #0 of 'braid.relu' [64, 128), which is read after it or with no synchronization before it}}
  %f = braid.all_reduce_start %g on @world grid_axes = [0] reduction = sum {braid.stream = #braid.stream<comm, 0>} : tensor<16xf32>
  %r = braid.wait %f {braid.stream = #braid.stream<compute, 0>, braid.offsets = array<i64: 64>} : !braid.future<tensor<16xf32>>
  return %r, %h : tensor<16xf32>, tensor<16xf32>
}

// -----

// A view (reshape) at its operand's bytes is the same value: an update
// written in place over the parameter overwrites what the view holds, and
// the view is read after it.
func.func @view_read_after_in_place(%w: tensor<16xf32> {braid.offset = 0 : i64, braid.role = #braid.role<parameter "w">}, %g: tensor<16xf32> {braid.offset = 64 : i64}, %m: tensor<16xf32> {braid.offset = 128 : i64})
    -> (tensor<16xf32>, tensor<16xf32>, tensor<4x4xf32>) attributes {braid.arena_bytes = 256 : i64} {
  %v = braid.reshape %w {braid.offsets = array<i64: 0>} : tensor<16xf32> -> tensor<4x4xf32>
  // expected-error @below {{writes result #0 of 'braid.sgd' in place over result #0 of 'braid.reshape' [0, 64), which is read after it or with no synchronization before it}}
  %w2, %m2 = braid.sgd %w, %g, %m lr = 1.0e-1 momentum = 0.0 weight_decay = 0.0 {braid.offsets = array<i64: 0, 128>} : tensor<16xf32>
  // expected-note @below {{read here}}
  %late = braid.relu %v {braid.offsets = array<i64: 192>} : tensor<4x4xf32>
  return %w2, %m2, %late : tensor<16xf32>, tensor<16xf32>, tensor<4x4xf32>
}
