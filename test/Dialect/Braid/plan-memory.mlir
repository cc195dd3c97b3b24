// RUN: braid-opt --braid-plan-memory --split-input-file %s | FileCheck %s
// RUN: braid-opt --braid-plan-memory=report --split-input-file %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// A chain: %1 reuses the bytes of %0, dead after %1's producer reads it.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: {braid.offset = 0 : i64}
// CHECK-SAME: braid.arena_bytes = 1536 : i64
// CHECK: braid.relu %{{.*}} {braid.offsets = array<i64: 512>}
// CHECK: braid.relu %{{.*}} {braid.offsets = array<i64: 1024>}
// CHECK: braid.relu %{{.*}} {braid.offsets = array<i64: 512>}
// REPORT: remark: memory plan of @chain: arena 1536 bytes, buffers 2048 bytes, live-bytes bound 1536 bytes (arena/bound 1.000)
func.func @chain(%x: tensor<128xf32>) -> tensor<128xf32> {
  %0 = braid.relu %x : tensor<128xf32>
  %1 = braid.relu %0 : tensor<128xf32>
  %2 = braid.relu %1 : tensor<128xf32>
  return %2 : tensor<128xf32>
}

// -----

// A bucket: the two gradients are adjacent and the all-reduce's results take
// their place; the sgd updates overwrite their arguments.
shard.grid @world(shape = 2)
// CHECK-LABEL: func.func @bucket
// CHECK-SAME: (%arg0: tensor<16xf32> {braid.offset = [[WOFF:[0-9]+]] : i64}
// CHECK: braid.scale {{.*}}braid.offsets = array<i64: [[G0OFF:[0-9]+]]>
// CHECK: braid.scale {{.*}}braid.offsets = array<i64: [[G1OFF:[0-9]+]]>
// CHECK: braid.all_reduce {{.*}}braid.offsets = array<i64: [[G0OFF]], [[G1OFF]]>
// CHECK: braid.sgd {{.*}}braid.offsets = array<i64: [[WOFF]],
// REPORT: remark: memory plan of @bucket: {{.*}}, 1 of 1 all-reduces in place
func.func @bucket(%w: tensor<16xf32>, %m: tensor<16xf32>, %v: tensor<16xf32>, %n: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %g0 = braid.scale %w by 2.0 : tensor<16xf32>
  %g1 = braid.scale %v by 2.0 : tensor<16xf32>
  %r:2 = braid.all_reduce %g0, %g1 on @world grid_axes = [0] reduction = avg : tensor<16xf32>, tensor<16xf32>
  %w2, %m2 = braid.sgd %w, %r#0, %m lr = 1.0e-1 momentum = 0.0 weight_decay = 0.0 : tensor<16xf32>
  %v2, %n2 = braid.sgd %v, %r#1, %n lr = 1.0e-1 momentum = 0.0 weight_decay = 0.0 : tensor<16xf32>
  return %w2, %m2, %v2, %n2 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// In flight: the start's input is not reused before its wait, although no op
// reads it in between.
shard.grid @world(shape = 2)
// CHECK-LABEL: func.func @in_flight
// CHECK: braid.relu %{{.*}} {braid.offsets = array<i64: [[GOFF:[0-9]+]]>
// CHECK: braid.all_reduce_start
// CHECK-NOT: braid.offsets = array<i64: [[GOFF]]>
// CHECK: braid.wait {{.*}}braid.offsets = array<i64: [[GOFF]]>
func.func @in_flight(%x: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %g = braid.relu %x : tensor<64xf32>
  %f = braid.all_reduce_start %g on @world grid_axes = [0] reduction = sum : tensor<64xf32>
  %a = braid.relu %x : tensor<64xf32>
  %b = braid.relu %a : tensor<64xf32>
  %c = braid.relu %b : tensor<64xf32>
  %r = braid.wait %f : !braid.future<tensor<64xf32>>
  return %r, %c : tensor<64xf32>, tensor<64xf32>
}

// -----

// In flight, not in place: a reduce_scatter_start and an all_gather_start
// read an intermediate (%g, %h) that has no use after the start. Each is
// still being read by its collective until its wait, so the compute between
// the start and the wait must not take its bytes (an async start treated as
// synchronous would free them at the start). The wait's result is written
// by the collective from the start on, so it has bytes of its own too.
shard.grid @world(shape = 2)
// CHECK-LABEL: func.func @in_flight_not_in_place
// CHECK: braid.relu %{{.*}} {braid.offsets = array<i64: [[G:[0-9]+]]>}
// CHECK: braid.relu %{{.*}} {braid.offsets = array<i64: [[H:[0-9]+]]>}
// CHECK: braid.reduce_scatter_start
// CHECK: braid.all_gather_start
// CHECK-NOT: array<i64: [[G]]>
// CHECK-NOT: array<i64: [[H]]>
// CHECK: braid.wait {{.*}} {braid.offsets = array<i64: [[RS:[0-9]+]]>}
// CHECK: braid.wait {{.*}} {braid.offsets = array<i64: [[AG:[0-9]+]]>}
// CHECK: return
// The arena holds all of x, g, h, a, b (512 bytes each), the 256 bytes of the
// reduce_scatter and the 1024 of the all_gather at once: 3840 bytes.
// REPORT: remark: memory plan of @in_flight_not_in_place: arena 3840 bytes, buffers 4352 bytes, live-bytes bound 3840 bytes
func.func @in_flight_not_in_place(%x: tensor<128xf32>) -> (tensor<64xf32>, tensor<256xf32>, tensor<128xf32>) {
  %g = braid.relu %x : tensor<128xf32>
  %h = braid.relu %x : tensor<128xf32>
  %f = braid.reduce_scatter_start %g on @world grid_axes = [0] reduction = sum scatter_dim = 0 : tensor<128xf32> -> !braid.future<tensor<64xf32>>
  %e = braid.all_gather_start %h on @world grid_axes = [0] gather_dim = 0 : tensor<128xf32> -> !braid.future<tensor<256xf32>>
  %a = braid.relu %x : tensor<128xf32>
  %b = braid.relu %a : tensor<128xf32>
  %c = braid.relu %b : tensor<128xf32>
  %r = braid.wait %f : !braid.future<tensor<64xf32>>
  %q = braid.wait %e : !braid.future<tensor<256xf32>>
  return %r, %q, %c : tensor<64xf32>, tensor<256xf32>, tensor<128xf32>
}

// -----

// A gradient with another use is not overwritten: the results get their own
// contiguous bytes.
shard.grid @world(shape = 2)
// CHECK-LABEL: func.func @shared_input
// REPORT: remark: memory plan of @shared_input: {{.*}}, 0 of 1 all-reduces in place
func.func @shared_input(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %g = braid.relu %x : tensor<8xf32>
  %r = braid.all_reduce %g on @world grid_axes = [0] reduction = sum : tensor<8xf32>
  return %r, %g : tensor<8xf32>, tensor<8xf32>
}

// -----

// Empty tensors take no bytes: they may sit at any offset and never free a
// range (an empty free range at a real range's offset used to overwrite its
// size in one of the packer's two indexes).
// CHECK-LABEL: func.func @empty_tensors
// CHECK-SAME: braid.arena_bytes = 192 : i64
// REPORT: remark: memory plan of @empty_tensors: arena 192 bytes, buffers 256 bytes, live-bytes bound 192 bytes
func.func @empty_tensors(%x: tensor<16xf32>, %e: tensor<0x4xf32>) -> (tensor<16xf32>, tensor<0x4xf32>) {
  %z = braid.relu %e : tensor<0x4xf32>
  %a = braid.relu %x : tensor<16xf32>
  %z2 = braid.relu %z : tensor<0x4xf32>
  %b = braid.relu %a : tensor<16xf32>
  %z3 = braid.relu %z2 : tensor<0x4xf32>
  %c = braid.relu %b : tensor<16xf32>
  return %c, %z3 : tensor<16xf32>, tensor<0x4xf32>
}

// -----

// Views: a reshape of an op's result takes that result's bytes (the runtime
// moves nothing), also a reshape of a reshape, and the two live as one (%a's
// bytes are not reused while its view %v is read). A reshape of an argument
// gets bytes of its own (the argument may be updated in place), and so does
// a reshape an all-reduce reads (which works in place on its own bytes).
shard.grid @world(shape = 2)
// CHECK-LABEL: func.func @views
// CHECK-SAME: (%arg0: tensor<8x16xf32> {braid.offset = [[X:[0-9]+]] : i64}
// CHECK: braid.reshape %arg0 {braid.offsets = array<i64: [[XV:[0-9]+]]>}
// CHECK: braid.relu %{{.*}} {braid.offsets = array<i64: [[A:[0-9]+]]>}
// CHECK: braid.reshape %{{.*}} {braid.offsets = array<i64: [[A]]>}
// CHECK: braid.reshape %{{.*}} {braid.offsets = array<i64: [[A]]>}
// CHECK-NOT: array<i64: [[A]]>
// CHECK: braid.reshape %{{.*}} {braid.offsets = array<i64: [[A]]>}
// CHECK: braid.relu %{{.*}} {braid.offsets = array<i64: [[G:[0-9]+]]>}
// CHECK: braid.reshape %{{.*}} {braid.offsets = array<i64: [[R:[0-9]+]]>}
// CHECK: braid.all_reduce %{{.*}} {braid.offsets = array<i64: [[R]]>}
// REPORT: remark: memory plan of @views: {{.*}}, 1 of 1 all-reduces in place, 3 views sharing their operand's bytes
func.func @views(%x: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<128xf32>, tensor<128xf32>, tensor<8x16xf32>) {
  %xv = braid.reshape %x : tensor<8x16xf32> -> tensor<128xf32>
  %a = braid.relu %x : tensor<8x16xf32>
  %v = braid.reshape %a : tensor<8x16xf32> -> tensor<128xf32>
  %w = braid.reshape %v : tensor<128xf32> -> tensor<16x8xf32>
  %b = braid.relu %x : tensor<8x16xf32>
  %c = braid.relu %b : tensor<8x16xf32>
  %s = braid.reshape %w : tensor<16x8xf32> -> tensor<8x16xf32>
  %g = braid.relu %c : tensor<8x16xf32>
  %gv = braid.reshape %g : tensor<8x16xf32> -> tensor<128xf32>
  %r = braid.all_reduce %gv on @world grid_axes = [0] reduction = sum : tensor<128xf32>
  return %s, %xv, %r, %c : tensor<8x16xf32>, tensor<128xf32>, tensor<128xf32>, tensor<8x16xf32>
}

// -----

// ZeRO (braid-shard-data-parallel): the parameter gathered from its updated
// pieces and returned lands in its argument's bytes (its last reader, the
// slice, runs before the update that makes the gather's input), as an
// update in place does; a parameter whose argument is read after that
// update gets bytes of its own.
shard.grid @world(shape = 2)
// CHECK-LABEL: func.func @gathered_parameter
// CHECK-SAME: %arg0: tensor<8x4xf32> {braid.offset = [[WOFF:[0-9]+]] : i64, braid.role = #braid.role<parameter "w">}
// CHECK-SAME: %arg1: tensor<8x4xf32> {braid.offset = [[VOFF:[0-9]+]] : i64, braid.role = #braid.role<parameter "v">}
// CHECK: braid.all_gather {{.*}}braid.offsets = array<i64: [[WOFF]]>
// CHECK-NOT: offsets = array<i64: [[VOFF]]>
// CHECK: braid.all_gather
// CHECK-NOT: offsets = array<i64: [[VOFF]]>
// CHECK: return
func.func @gathered_parameter(
    %w: tensor<8x4xf32> {braid.role = #braid.role<parameter "w">},
    %v: tensor<8x4xf32> {braid.role = #braid.role<parameter "v">},
    %m: tensor<4x4xf32>, %n: tensor<4x4xf32>)
    -> (tensor<8x4xf32> {braid.role = #braid.role<parameter "w">},
        tensor<8x4xf32> {braid.role = #braid.role<parameter "v">},
        tensor<4x4xf32>, tensor<4x4xf32>, tensor<8x4xf32>) {
  %i = braid.axis_index on @world grid_axes = [0] : tensor<i64>
  %ws = braid.shard_slice %w, %i dim = 0 parts = 2 : tensor<8x4xf32> -> tensor<4x4xf32>
  %w2, %m2 = braid.sgd %ws, %ws, %m lr = 1.0e-1 momentum = 0.0 weight_decay = 0.0 : tensor<4x4xf32>
  %wg = braid.all_gather %w2 on @world grid_axes = [0] gather_dim = 0 : tensor<4x4xf32> -> tensor<8x4xf32>
  %vs = braid.shard_slice %v, %i dim = 0 parts = 2 : tensor<8x4xf32> -> tensor<4x4xf32>
  %v2, %n2 = braid.sgd %vs, %vs, %n lr = 1.0e-1 momentum = 0.0 weight_decay = 0.0 : tensor<4x4xf32>
  %late = braid.relu %v : tensor<8x4xf32>
  %vg = braid.all_gather %v2 on @world grid_axes = [0] gather_dim = 0 : tensor<4x4xf32> -> tensor<8x4xf32>
  return %wg, %vg, %m2, %n2, %late : tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<8x4xf32>
}
