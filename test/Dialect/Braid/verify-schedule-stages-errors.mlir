// RUN: braid-opt %s --split-input-file --verify-diagnostics --braid-verify-schedule

// 1F1B's order with blocking transfers: stage 0 sends the second
// activation while stage 1 sends the first gradient; each send waits for a
// receive that comes after the other's send.
shard.grid @world(shape = 2)
func.func @stage0(%x0: tensor<4x8xf32>, %x1: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
    attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
  braid.send %x0 on @world grid_axes = [0] peer = 1 : tensor<4x8xf32>
  // expected-error @below {{deadlocks: this 'braid.send' of stage 0 (@stage0) and 'braid.send' of stage 1 (@stage1) block each other in a cycle of 4 ops (each note waits for the next)}}
  // expected-note @below {{stage 0 (@stage0): 'braid.send' waits for its peer 'braid.recv' of stage 1 (@stage1) to start}}
  braid.send %x1 on @world grid_axes = [0] peer = 1 : tensor<4x8xf32>
  // expected-note @below {{stage 0 (@stage0): 'braid.recv' waits for 'braid.send' ahead of it on stream #braid.stream<compute, 0> to complete}}
  %g0 = braid.recv on @world grid_axes = [0] peer = 1 : tensor<4x8xf32>
  %g1 = braid.recv on @world grid_axes = [0] peer = 1 : tensor<4x8xf32>
  return %g0, %g1 : tensor<4x8xf32>, tensor<4x8xf32>
}
func.func @stage1() attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 1>} {
  %a0 = braid.recv on @world grid_axes = [0] peer = 0 : tensor<4x8xf32>
  // expected-note @below {{stage 1 (@stage1): 'braid.send' waits for its peer 'braid.recv' of stage 0 (@stage0) to start}}
  braid.send %a0 on @world grid_axes = [0] peer = 0 : tensor<4x8xf32>
  // expected-note @below {{stage 1 (@stage1): 'braid.recv' waits for 'braid.send' ahead of it on stream #braid.stream<compute, 0> to complete}}
  %a1 = braid.recv on @world grid_axes = [0] peer = 0 : tensor<4x8xf32>
  braid.send %a1 on @world grid_axes = [0] peer = 0 : tensor<4x8xf32>
  return
}

// -----

// Asynchronous transfers do not help when the receive waits, through an
// event, for the send ahead of it on its stream: both stages send first.
shard.grid @world(shape = 2)
func.func @a(%x: tensor<4x8xf32>) -> tensor<4x8xf32>
    attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
  // expected-error @below {{deadlocks: this 'braid.send_start' of stage 0 (@a) and 'braid.send_start' of stage 1 (@b) block each other in a cycle of 4 ops}}
  // expected-note @below {{stage 0 (@a): 'braid.send_start' waits for its peer 'braid.recv_start' of stage 1 (@b) to start}}
  %s = braid.send_start %x on @world grid_axes = [0] peer = 1 {braid.stream = #braid.stream<comm, 0>} : tensor<4x8xf32> -> !braid.future<>
  // expected-note @below {{stage 0 (@a): 'braid.recv_start' waits for 'braid.send_start' ahead of it on stream #braid.stream<comm, 0> to complete}}
  %r = braid.recv_start on @world grid_axes = [0] peer = 1 {braid.stream = #braid.stream<comm, 0>} : !braid.future<tensor<4x8xf32>>
  braid.wait %s {braid.stream = #braid.stream<compute, 0>} : !braid.future<>
  %g = braid.wait %r {braid.stream = #braid.stream<compute, 0>} : !braid.future<tensor<4x8xf32>>
  return %g : tensor<4x8xf32>
}
func.func @b(%x: tensor<4x8xf32>) -> tensor<4x8xf32>
    attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 1>} {
  // expected-note @below {{stage 1 (@b): 'braid.send_start' waits for its peer 'braid.recv_start' of stage 0 (@a) to start}}
  %s = braid.send_start %x on @world grid_axes = [0] peer = 0 {braid.stream = #braid.stream<comm, 0>} : tensor<4x8xf32> -> !braid.future<>
  // expected-note @below {{stage 1 (@b): 'braid.recv_start' waits for 'braid.send_start' ahead of it on stream #braid.stream<comm, 0> to complete}}
  %r = braid.recv_start on @world grid_axes = [0] peer = 0 {braid.stream = #braid.stream<comm, 0>} : !braid.future<tensor<4x8xf32>>
  braid.wait %s {braid.stream = #braid.stream<compute, 0>} : !braid.future<>
  %g = braid.wait %r {braid.stream = #braid.stream<compute, 0>} : !braid.future<tensor<4x8xf32>>
  return %g : tensor<4x8xf32>
}

// -----

// A collective that spans the stages, issued before a transfer on one
// stage and after it on the other.
shard.grid @world(shape = 2)
func.func @a(%x: tensor<4x8xf32>, %l: tensor<f32>) -> tensor<f32>
    attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
  // expected-error @below {{deadlocks: this 'braid.all_reduce' of stage 0 (@a) and 'braid.recv' of stage 1 (@b) block each other in a cycle of 4 ops}}
  // expected-note @below {{stage 0 (@a): 'braid.all_reduce' waits for its peer 'braid.all_reduce' of stage 1 (@b) to start}}
  %r = braid.all_reduce %l on @world grid_axes = [0] reduction = sum : tensor<f32>
  // expected-note @below {{stage 0 (@a): 'braid.send' waits for 'braid.all_reduce' ahead of it on stream #braid.stream<compute, 0> to complete}}
  braid.send %x on @world grid_axes = [0] peer = 1 : tensor<4x8xf32>
  return %r : tensor<f32>
}
func.func @b(%l: tensor<f32>) -> tensor<f32>
    attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 1>} {
  // expected-note @below {{stage 1 (@b): 'braid.recv' waits for its peer 'braid.send' of stage 0 (@a) to start}}
  %a = braid.recv on @world grid_axes = [0] peer = 0 : tensor<4x8xf32>
  // expected-note @below {{stage 1 (@b): 'braid.all_reduce' waits for 'braid.recv' ahead of it on stream #braid.stream<compute, 0> to complete}}
  %r = braid.all_reduce %l on @world grid_axes = [0] reduction = sum : tensor<f32>
  return %r : tensor<f32>
}

// -----

// A send waits on the compute stream for a wait whose receive waits for
// the peer's send, which waits (through an event) for the peer's own
// receive.
shard.grid @world(shape = 2)
func.func @a(%x: tensor<4x8xf32>) -> tensor<4x8xf32>
    attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
  // expected-error @below {{deadlocks: this 'braid.recv_start' of stage 0 (@a) and 'braid.recv' of stage 1 (@b) block each other in a cycle of 7 ops}}
  // expected-note @below {{stage 0 (@a): 'braid.recv_start' waits for its peer 'braid.send' of stage 1 (@b) to start}}
  %r = braid.recv_start on @world grid_axes = [0] peer = 1 {braid.stream = #braid.stream<comm, 0>} : !braid.future<tensor<4x8xf32>>
  // expected-note @below {{stage 0 (@a): 'braid.wait' waits for its operand from 'braid.recv_start'}}
  %g = braid.wait %r {braid.stream = #braid.stream<compute, 0>} : !braid.future<tensor<4x8xf32>>
  // expected-note @below {{stage 0 (@a): 'braid.send' waits for 'braid.wait' ahead of it on stream #braid.stream<compute, 0> to complete}}
  braid.send %x on @world grid_axes = [0] peer = 1 {braid.stream = #braid.stream<compute, 0>} : tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}
func.func @b(%x: tensor<4x8xf32>) -> tensor<4x8xf32>
    attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 1>} {
  // expected-note @below {{stage 1 (@b): 'braid.recv' waits for its peer 'braid.send' of stage 0 (@a) to start}}
  %a = braid.recv on @world grid_axes = [0] peer = 0 {braid.stream = #braid.stream<compute, 0>} : tensor<4x8xf32>
  // expected-note @below {{stage 1 (@b): 'braid.record_event' waits for 'braid.recv' ahead of it on stream #braid.stream<compute, 0> to complete}}
  %e = braid.record_event {braid.stream = #braid.stream<compute, 0>}
  // expected-note @below {{stage 1 (@b): 'braid.wait_event' waits for its operand from 'braid.record_event'}}
  braid.wait_event %e {braid.stream = #braid.stream<comm, 0>}
  // expected-note @below {{stage 1 (@b): 'braid.send' waits for 'braid.wait_event' ahead of it on stream #braid.stream<comm, 0> to complete}}
  braid.send %x on @world grid_axes = [0] peer = 0 {braid.stream = #braid.stream<comm, 0>} : tensor<4x8xf32>
  return %a : tensor<4x8xf32>
}

// -----

// A send with no receive; a receive with no send.
shard.grid @world(shape = 2)
func.func @a(%x: tensor<4x8xf32>) attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
  braid.send %x on @world grid_axes = [0] peer = 1 : tensor<4x8xf32>
  // expected-error @below {{is send #1 of stage 0 (@a) to stage 1 (@b), which has no matching receive: stage 1 (@b) receives 1 tensors from it, but it sends 2}}
  braid.send %x on @world grid_axes = [0] peer = 1 : tensor<4x8xf32>
  // expected-error @below {{is receive #0 of stage 0 (@a) from stage 1 (@b), which has no matching send: stage 1 (@b) sends 0 tensors to it, but it receives 1}}
  %g = braid.recv on @world grid_axes = [0] peer = 1 : tensor<4x8xf32>
  return
}
func.func @b() attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 1>} {
  %a = braid.recv on @world grid_axes = [0] peer = 0 : tensor<4x8xf32>
  return
}

// -----

// A receive that expects another shape or element type than the send.
shard.grid @world(shape = 2)
func.func @a(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
  // expected-error @below {{sends 'tensor<4x8xf32>' to stage 1 (@b), whose matching receive (its receive #0 from stage 0 (@a)) expects 'tensor<8x4xf32>'}}
  braid.send %x on @world grid_axes = [0] peer = 1 : tensor<4x8xf32>
  // expected-error @below {{sends 'tensor<4x8xf32>' to stage 1 (@b), whose matching receive (its receive #1 from stage 0 (@a)) expects 'tensor<4x8xbf16>'}}
  braid.send %y on @world grid_axes = [0] peer = 1 : tensor<4x8xf32>
  return
}
func.func @b() attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 1>} {
  // expected-note @below {{the receive}}
  %a = braid.recv on @world grid_axes = [0] peer = 0 : tensor<8x4xf32>
  // expected-note @below {{the receive}}
  %b = braid.recv_start on @world grid_axes = [0] peer = 0 : !braid.future<tensor<4x8xbf16>>
  %c = braid.wait %b : !braid.future<tensor<4x8xbf16>>
  return
}

// -----

// Transfers between stages name the peer on the pipeline axis alone, on
// the stages' grid.
shard.grid @world(shape = 2x2)
shard.grid @other(shape = 2x2)
func.func @a(%x: tensor<4x8xf32>) attributes {braid.stage = #braid.stage<grid = @world, axis = 1, index = 0>} {
  // expected-error @below {{is a transfer of a stage program on grid axes [0, 1]; stages send and receive on the pipeline axis alone (grid_axes = [1]), naming the peer stage}}
  braid.send %x on @world grid_axes = [0, 1] peer = 1 : tensor<4x8xf32>
  // expected-error @below {{is a transfer of a stage program on grid axes [0]; stages send and receive on the pipeline axis alone (grid_axes = [1])}}
  braid.send %x on @world grid_axes = [0] peer = 1 : tensor<4x8xf32>
  // expected-error @below {{is a collective of a stage program on grid @other, but the stages are on grid @world}}
  %r = braid.all_reduce %x on @other grid_axes = [0] reduction = sum : tensor<4x8xf32>
  return
}
func.func @b() attributes {braid.stage = #braid.stage<grid = @world, axis = 1, index = 1>} {
  return
}

// -----

// A collective that spans the stages is issued by every stage, the same
// one at the same position.
shard.grid @world(shape = 2x3)
func.func @a(%x: tensor<4xf32>) attributes {braid.stage = #braid.stage<grid = @world, axis = 1, index = 0>} {
  // expected-note @below {{the collective of stage 0}}
  %r = braid.all_reduce %x on @world grid_axes = [1] reduction = sum : tensor<4xf32>
  // expected-note @below {{the first collective it lacks}}
  %s = braid.all_reduce %x on @world grid_axes = [1] reduction = sum : tensor<4xf32>
  return
}
func.func @b(%x: tensor<4xf32>) attributes {braid.stage = #braid.stage<grid = @world, axis = 1, index = 1>} {
  // expected-error @below {{is collective #0 of stage 1 (@b) on group @world[1], which spans the stages, but stage 0 (@a) issues a different one there (each rank of the group must issue the same collectives in the same order)}}
  %r = braid.all_reduce %x on @world grid_axes = [1] reduction = max : tensor<4xf32>
  %s = braid.all_reduce %x on @world grid_axes = [1] reduction = sum : tensor<4xf32>
  // expected-error @below {{stage 1 (@b) issues 3 collectives on group @world[1], which spans the stages, but stage 0 (@a) issues 2}}
  %t = braid.all_reduce %x on @world grid_axes = [1] reduction = sum : tensor<4xf32>
  return
}
// expected-error @below {{stage 2 (@c) issues 1 collectives on group @world[1], which spans the stages, but stage 0 (@a) issues 2}}
func.func @c(%x: tensor<4xf32>) attributes {braid.stage = #braid.stage<grid = @world, axis = 1, index = 2>} {
  %r = braid.all_reduce %x on @world grid_axes = [1] reduction = sum : tensor<4xf32>
  return
}

// -----

// The stages cover the pipeline axis, each index once, in one grid.
shard.grid @world(shape = 3)
// expected-error @below {{is a stage of a pipeline axis of 3 stages (axis 0 of grid @world), but no function is stage 2}}
func.func @a() attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
  return
}
// expected-note @below {{the other program}}
func.func @b() attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 1>} {
  return
}
// expected-error @below {{is stage 1, as @b is; each stage has one program}}
func.func @c() attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 1>} {
  return
}
// expected-error @below {{is stage 3 of a pipeline axis of 3 stages}}
func.func @d() attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 3>} {
  return
}

// -----

shard.grid @world(shape = 2)
func.func @a() attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
  return
}
// expected-error @below {{is a stage program, which needs a body of one block}}
func.func private @b() attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 1>}

// -----

shard.grid @world(shape = 2x2)
// expected-note @below {{the other stage}}
func.func @a() attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
  return
}
// expected-error @below {{is a stage on axis 1 of grid @world, but @a is one on axis 0 of grid @world; the stages of a module share one pipeline axis}}
func.func @b() attributes {braid.stage = #braid.stage<grid = @world, axis = 1, index = 1>} {
  return
}

// -----

// expected-error @below {{is a stage of grid @nowhere, which is not a shard.grid of the module}}
func.func @a() attributes {braid.stage = #braid.stage<grid = @nowhere, axis = 0, index = 0>} {
  return
}

// -----

shard.grid @world(shape = 4)
// expected-error @below {{is a stage on axis 1 of grid @world, which has 1 axes}}
func.func @a() attributes {braid.stage = #braid.stage<grid = @world, axis = 1, index = 0>} {
  return
}

// -----

shard.grid @world(shape = 2x?)
// expected-error @below {{is a stage on axis 1 of grid @world, whose size is dynamic; a pipeline has a static stage count}}
func.func @a() attributes {braid.stage = #braid.stage<grid = @world, axis = 1, index = 0>} {
  return
}

// -----

// A stage that sends to itself on one stream waits for its own receive.
shard.grid @world(shape = 2)
func.func @a(%x: tensor<4xf32>) -> tensor<4xf32> attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
  // expected-error @below {{deadlocks: this 'braid.send' of stage 0 (@a) waits on itself in a cycle of 2 ops}}
  // expected-note @below {{stage 0 (@a): 'braid.send' waits for its peer 'braid.recv' of stage 0 (@a) to start}}
  braid.send %x on @world grid_axes = [0] peer = 0 : tensor<4xf32>
  // expected-note @below {{stage 0 (@a): 'braid.recv' waits for 'braid.send' ahead of it on stream #braid.stream<compute, 0> to complete}}
  %y = braid.recv on @world grid_axes = [0] peer = 0 : tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func @b() attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 1>} {
  return
}

// -----

// A send-receive does not save a peer that receives its send only after a
// send of its own that the stage receives later: stage 1's second send
// waits for stage 0's receive, which waits behind the send-receive, whose
// send waits for stage 1's receive behind that second send.
shard.grid @world(shape = 2)
func.func @a(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
    attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
  // expected-error @below {{deadlocks: this 'braid.send_recv' of stage 0 (@a) and 'braid.send' of stage 1 (@b) block each other in a cycle of 4 ops}}
  // expected-note @below {{stage 0 (@a): 'braid.send_recv' waits for its peer 'braid.recv' of stage 1 (@b) to start}}
  %g0 = braid.send_recv %x on @world grid_axes = [0] send_peer = 1 recv_peer = 1 : tensor<4x8xf32> -> tensor<4x8xf32>
  // expected-note @below {{stage 0 (@a): 'braid.recv' waits for 'braid.send_recv' ahead of it on stream #braid.stream<compute, 0> to complete}}
  %g1 = braid.recv on @world grid_axes = [0] peer = 1 : tensor<4x8xf32>
  return %g0, %g1 : tensor<4x8xf32>, tensor<4x8xf32>
}
func.func @b(%g: tensor<4x8xf32>) -> tensor<4x8xf32>
    attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 1>} {
  braid.send %g on @world grid_axes = [0] peer = 0 : tensor<4x8xf32>
  // expected-note @below {{stage 1 (@b): 'braid.send' waits for its peer 'braid.recv' of stage 0 (@a) to start}}
  braid.send %g on @world grid_axes = [0] peer = 0 : tensor<4x8xf32>
  // expected-note @below {{stage 1 (@b): 'braid.recv' waits for 'braid.send' ahead of it on stream #braid.stream<compute, 0> to complete}}
  %a = braid.recv on @world grid_axes = [0] peer = 0 : tensor<4x8xf32>
  return %a : tensor<4x8xf32>
}

// -----

// Each half of a send-receive matches the peer's transfer of its
// direction, and their types must agree: stage 1's receive expects the
// activation's type, but the send-receive sends a gradient of another.
shard.grid @world(shape = 2)
func.func @a(%x: tensor<2x8xf32>) -> tensor<4x8xf32>
    attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
  // expected-error @below {{sends 'tensor<2x8xf32>' to stage 1 (@b), whose matching receive (its receive #0 from stage 0 (@a)) expects 'tensor<4x8xf32>'}}
  %g = braid.send_recv %x on @world grid_axes = [0] send_peer = 1 recv_peer = 1 : tensor<2x8xf32> -> tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}
func.func @b(%g: tensor<4x8xf32>) -> tensor<4x8xf32>
    attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 1>} {
  // expected-note @below {{the receive}}
  %a = braid.send_recv %g on @world grid_axes = [0] send_peer = 0 recv_peer = 0 : tensor<4x8xf32> -> tensor<4x8xf32>
  return %a : tensor<4x8xf32>
}

// -----

// A transfer and its receive on different streams: the runtime connects
// each group on each stream apart, so they would never meet.
shard.grid @world(shape = 2)
func.func @a(%x: tensor<4x8xf32>) attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
  // expected-error @below {{sends to stage 1 (@b) on stream #braid.stream<comm, 0>, but its matching receive (receive #0 from stage 0 (@a)) is on stream #braid.stream<comm, 1>; the runtime connects each group on each stream apart, so a transfer and its receive need one stream}}
  braid.send %x on @world grid_axes = [0] peer = 1 {braid.stream = #braid.stream<comm, 0>} : tensor<4x8xf32>
  return
}
func.func @b() -> tensor<4x8xf32> attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 1>} {
  // expected-note @below {{the receive}}
  %r = braid.recv on @world grid_axes = [0] peer = 0 {braid.stream = #braid.stream<comm, 1>} : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// Value by value: braid-pipeline names what each transfer moves. A receive
// moved above another of the same shape and peer pairs the k-th send with
// another value (two activations of micro-batch 0 swapped), and a
// send-receive's sent values swapped with their names: both match by type
// and by order, and train wrong.
shard.grid @world(shape = 2)
func.func @a(%h: tensor<4x8xf32>, %r: tensor<4x8xf32>) -> tensor<4x8xf32>
    attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
  // expected-error @below {{sends value 0 of micro-batch 0 to stage 1 (@b), but its matching receive (its receive #0 from stage 0 (@a)) expects value 1 of micro-batch 0; sends and receives match in order}}
  braid.send %h on @world grid_axes = [0] peer = 1 {braid.transfers = [#braid.transfer<value = 0, micro_batch = 0>]} : tensor<4x8xf32>
  // expected-error @below {{sends value 1 of micro-batch 0 to stage 1 (@b), but its matching receive (its receive #1 from stage 0 (@a)) expects value 0 of micro-batch 0}}
  braid.send %r on @world grid_axes = [0] peer = 1 {braid.transfers = [#braid.transfer<value = 1, micro_batch = 0>]} : tensor<4x8xf32>
  // expected-error @below {{sends value 2 (of the whole step) to stage 1 (@b), but its matching receive (its receive #2 from stage 0 (@a)) expects a value braid.transfers does not name}}
  braid.send %h on @world grid_axes = [0] peer = 1 {braid.transfers = [#braid.transfer<value = 2>]} : tensor<4x8xf32>
  %g = braid.recv on @world grid_axes = [0] peer = 1 {braid.transfers = [#braid.transfer<value = 3, micro_batch = 0>]} : tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}
func.func @b(%g: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
    attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 1>} {
  // expected-note @below {{the receive}}
  %r = braid.recv on @world grid_axes = [0] peer = 0 {braid.transfers = [#braid.transfer<value = 1, micro_batch = 0>]} : tensor<4x8xf32>
  // expected-note @below {{the receive}}
  %h = braid.recv on @world grid_axes = [0] peer = 0 {braid.transfers = [#braid.transfer<value = 0, micro_batch = 0>]} : tensor<4x8xf32>
  // expected-note @below {{the receive}}
  %x = braid.recv on @world grid_axes = [0] peer = 0 : tensor<4x8xf32>
  braid.send %g on @world grid_axes = [0] peer = 0 {braid.transfers = [#braid.transfer<value = 3, micro_batch = 0>]} : tensor<4x8xf32>
  return %r, %h, %x : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A send-receive's halves in order: its sent values, then its received
// ones. Micro-batch 1's activation sent where micro-batch 0's is expected.
shard.grid @world(shape = 2)
func.func @a(%h0: tensor<4x8xf32>, %h1: tensor<4x8xf32>) -> tensor<4x8xf32>
    attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
  // expected-error @below {{sends value 0 of micro-batch 1 to stage 1 (@b), but its matching receive (its receive #0 from stage 0 (@a)) expects value 0 of micro-batch 0}}
  %g = braid.send_recv %h1 on @world grid_axes = [0] send_peer = 1 recv_peer = 1 {braid.transfers = [#braid.transfer<value = 0, micro_batch = 1>, #braid.transfer<value = 4, micro_batch = 0>]} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}
func.func @b(%g: tensor<4x8xf32>) -> tensor<4x8xf32>
    attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 1>} {
  // expected-note @below {{the receive}}
  %h = braid.send_recv %g on @world grid_axes = [0] send_peer = 0 recv_peer = 0 {braid.transfers = [#braid.transfer<value = 4, micro_batch = 0>, #braid.transfer<value = 0, micro_batch = 0>]} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %h : tensor<4x8xf32>
}
