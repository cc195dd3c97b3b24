// RUN: braid-opt %s --braid-assign-streams | FileCheck %s
// RUN: braid-opt %s --braid-assign-streams=comm-streams=2 | FileCheck %s --check-prefix=TWO
// RUN: braid-opt %s --braid-assign-streams=comm-streams=2 | braid-opt --braid-verify-schedule -o /dev/null
// RUN: braid-opt %s --braid-assign-streams | braid-opt --braid-assign-streams | FileCheck %s

shard.grid @world(shape = 4x2)

// Compute and waits on the compute stream, starts on a comm stream. The
// first start needs an event after its producer; the second start reads
// values produced before that event, so it needs none (no redundant sync);
// the third reads a newer value and gets a new event, recorded right after
// that value's producer. Waits need no event.
// CHECK-LABEL: func.func @events
// CHECK:      %[[A:.*]] = braid.relu %arg0 {braid.stream = #braid.stream<compute, 0>}
// CHECK-NEXT: %[[B:.*]] = braid.relu %arg1 {braid.stream = #braid.stream<compute, 0>}
// CHECK-NEXT: %[[E0:.*]] = braid.record_event {braid.stream = #braid.stream<compute, 0>}
// CHECK-NEXT: %[[C:.*]] = braid.relu %[[B]] {braid.stream = #braid.stream<compute, 0>}
// CHECK-NEXT: %[[E1:.*]] = braid.record_event {braid.stream = #braid.stream<compute, 0>}
// CHECK-NEXT: braid.wait_event %[[E0]] {braid.stream = #braid.stream<comm, 0>}
// CHECK-NEXT: %[[F0:.*]] = braid.all_reduce_start %[[B]] {{.*}}braid.stream = #braid.stream<comm, 0>
// CHECK-NEXT: %[[F1:.*]] = braid.all_reduce_start %[[A]] {{.*}}braid.stream = #braid.stream<comm, 0>
// CHECK-NEXT: braid.wait_event %[[E1]] {braid.stream = #braid.stream<comm, 0>}
// CHECK-NEXT: %[[F2:.*]] = braid.all_reduce_start %[[C]] {{.*}}braid.stream = #braid.stream<comm, 0>
// CHECK-NEXT: braid.wait %[[F0]] {braid.stream = #braid.stream<compute, 0>}
// CHECK-NEXT: braid.wait %[[F1]] {braid.stream = #braid.stream<compute, 0>}
// CHECK-NEXT: braid.wait %[[F2]] {braid.stream = #braid.stream<compute, 0>}
// CHECK-NEXT: return
func.func @events(%x: tensor<64xf32>, %y: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %a = braid.relu %x : tensor<64xf32>
  %b = braid.relu %y : tensor<64xf32>
  %c = braid.relu %b : tensor<64xf32>
  %f0 = braid.all_reduce_start %b on @world grid_axes = [0] reduction = sum : tensor<64xf32>
  %f1 = braid.all_reduce_start %a on @world grid_axes = [0] reduction = sum : tensor<64xf32>
  %f2 = braid.all_reduce_start %c on @world grid_axes = [0] reduction = sum : tensor<64xf32>
  %r0 = braid.wait %f0 : !braid.future<tensor<64xf32>>
  %r1 = braid.wait %f1 : !braid.future<tensor<64xf32>>
  %r2 = braid.wait %f2 : !braid.future<tensor<64xf32>>
  return %r0, %r1, %r2 : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}

// Groups go to comm streams in order of first appearance, modulo
// comm-streams: with one stream both groups share it, with two each has
// its own. Arguments need no event.
// CHECK-LABEL: func.func @groups
// CHECK:      braid.all_reduce_start %arg0 on @world grid_axes = [0] {{.*}}braid.stream = #braid.stream<comm, 0>
// CHECK-NEXT: braid.all_reduce_start %arg0 on @world grid_axes = [1] {{.*}}braid.stream = #braid.stream<comm, 0>
// CHECK-NEXT: braid.all_reduce_start %arg0 on @world grid_axes = [0] {{.*}}braid.stream = #braid.stream<comm, 0>
// TWO-LABEL: func.func @groups
// TWO:      braid.all_reduce_start %arg0 on @world grid_axes = [0] {{.*}}braid.stream = #braid.stream<comm, 0>
// TWO-NEXT: braid.all_reduce_start %arg0 on @world grid_axes = [1] {{.*}}braid.stream = #braid.stream<comm, 1>
// TWO-NEXT: braid.all_reduce_start %arg0 on @world grid_axes = [0] {{.*}}braid.stream = #braid.stream<comm, 0>
func.func @groups(%x: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %f0 = braid.all_reduce_start %x on @world grid_axes = [0] reduction = sum : tensor<64xf32>
  %f1 = braid.all_reduce_start %x on @world grid_axes = [1] reduction = sum : tensor<64xf32>
  %f2 = braid.all_reduce_start %x on @world grid_axes = [0] reduction = sum : tensor<64xf32>
  %r0 = braid.wait %f0 : !braid.future<tensor<64xf32>>
  %r1 = braid.wait %f1 : !braid.future<tensor<64xf32>>
  %r2 = braid.wait %f2 : !braid.future<tensor<64xf32>>
  return %r0, %r1, %r2 : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}

// A synchronous collective also runs on its comm stream; its result, used
// on the compute stream, is synchronized by an event on the comm stream.
// CHECK-LABEL: func.func @sync_collective
// CHECK:      %[[R:.*]] = braid.all_reduce %{{.*}} {braid.stream = #braid.stream<comm, 0>}
// CHECK-NEXT: %[[E:.*]] = braid.record_event {braid.stream = #braid.stream<comm, 0>}
// CHECK-NEXT: braid.wait_event %[[E]] {braid.stream = #braid.stream<compute, 0>}
// CHECK-NEXT: braid.relu %[[R]] {braid.stream = #braid.stream<compute, 0>}
func.func @sync_collective(%x: tensor<64xf32>) -> tensor<64xf32> {
  %r = braid.all_reduce %x on @world grid_axes = [0] reduction = sum : tensor<64xf32>
  %y = braid.relu %r : tensor<64xf32>
  return %y : tensor<64xf32>
}

// With stream-per-group, each group gets a stream of its own even when
// comm-streams says 1 (a tensor-parallel all-reduce does not queue behind a
// gradient bucket).
// RUN: braid-opt %s --braid-assign-streams=stream-per-group | FileCheck %s --check-prefix=PERGROUP
// PERGROUP-LABEL: func.func @two_groups
// PERGROUP: braid.all_reduce_start %arg0 on @world grid_axes = [0] {{.*}}#braid.stream<comm, 0>
// PERGROUP: braid.all_reduce_start %arg1 on @world grid_axes = [1] {{.*}}#braid.stream<comm, 1>
func.func @two_groups(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %f = braid.all_reduce_start %a on @world grid_axes = [0] reduction = avg : tensor<4xf32>
  %g = braid.all_reduce_start %b on @world grid_axes = [1] reduction = sum : tensor<4xf32>
  %x = braid.wait %f : !braid.future<tensor<4xf32>>
  %y = braid.wait %g : !braid.future<tensor<4xf32>>
  return %x, %y : tensor<4xf32>, tensor<4xf32>
}
