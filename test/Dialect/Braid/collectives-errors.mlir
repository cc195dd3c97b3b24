// RUN: braid-opt %s --split-input-file --verify-diagnostics

shard.grid @world(shape = 4x2)
func.func @no_axes(%x: tensor<8xf32>) {
  // expected-error @below {{grid_axes must not be empty}}
  %0 = braid.all_reduce %x on @world grid_axes = [] reduction = sum : tensor<8xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @negative_axis(%x: tensor<8xf32>) {
  // expected-error @below {{grid axis -1 is negative}}
  %0 = braid.all_gather %x on @world grid_axes = [-1] gather_dim = 0 : tensor<8xf32> -> tensor<32xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @repeated_axis(%x: tensor<8xf32>) {
  // expected-error @below {{grid axis 0 is repeated}}
  %0 = braid.reduce_scatter %x on @world grid_axes = [0, 0] reduction = sum scatter_dim = 0 : tensor<8xf32> -> tensor<2xf32>
  return
}

// -----

func.func @missing_grid(%x: tensor<8xf32>) {
  // expected-error @below {{grid @world does not name a shard.grid in scope}}
  %0 = braid.all_reduce %x on @world grid_axes = [0] reduction = sum : tensor<8xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @axis_out_of_range(%x: tensor<8xf32>) {
  // expected-error @below {{grid axis 2 is out of range for grid @world of rank 2}}
  %0 = braid.all_reduce %x on @world grid_axes = [2] reduction = sum : tensor<8xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @axis_out_of_range_async(%x: tensor<8xf32>) {
  // expected-error @below {{grid axis 3 is out of range for grid @world of rank 2}}
  %0 = braid.all_reduce_start %x on @world grid_axes = [3] reduction = sum : tensor<8xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @avg_of_integers(%x: tensor<8xi32>) {
  // expected-error @below {{reduction 'avg' needs float tensors, but an input is 'tensor<8xi32>'}}
  %0 = braid.all_reduce %x on @world grid_axes = [0] reduction = avg : tensor<8xi32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @avg_scatter_integers(%x: tensor<8xi64>) {
  // expected-error @below {{reduction 'avg' needs float tensors, but an input is 'tensor<8xi64>'}}
  %0 = braid.reduce_scatter %x on @world grid_axes = [0] reduction = avg scatter_dim = 0 : tensor<8xi64> -> tensor<2xi64>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @all_reduce_empty() {
  // expected-error @below {{needs at least one input}}
  "braid.all_reduce"() {grid = @world, grid_axes = array<i16: 0>, reduction = 0 : i32} : () -> ()
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @bucket_index(%x: tensor<8xf32>) {
  // expected-error @below {{bucket_index must be non-negative, but is -1}}
  %0 = braid.all_reduce %x on @world grid_axes = [0] reduction = sum {bucket_index = -1} : tensor<8xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @bucket_bytes(%x: tensor<8xf32>, %y: tensor<4xbf16>) {
  // expected-error @below {{bucket_bytes is 64 but the inputs hold 40 bytes}}
  %0 = braid.all_reduce_start %x, %y on @world grid_axes = [0] reduction = sum {bucket_bytes = 64} : tensor<8xf32>, tensor<4xbf16>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @grad_of_count(%w: tensor<8xf32> {braid.role = #braid.role<parameter "w">}) {
  // expected-error @below {{grad_of names 2 parameters for 1 inputs}}
  %0 = braid.all_reduce %w on @world grid_axes = [0] reduction = avg grad_of = ["w", "w"] : tensor<8xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @grad_of_unknown(%w: tensor<8xf32> {braid.role = #braid.role<parameter "w">}) {
  // expected-error @below {{grad_of names 'v', which is not a parameter argument of @grad_of_unknown}}
  %0 = braid.all_reduce %w on @world grid_axes = [0] reduction = avg grad_of = ["v"] : tensor<8xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @grad_of_state(%m: tensor<8xf32> {braid.role = #braid.role<optimizer_state "m">}) {
  // expected-error @below {{grad_of names 'm', which is not a parameter argument of @grad_of_state}}
  %0 = braid.all_reduce_start %m on @world grid_axes = [0] reduction = avg grad_of = ["m"] : tensor<8xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @grad_of_type(%w: tensor<8xf32> {braid.role = #braid.role<parameter "w">}, %g: tensor<4xf32>, %h: tensor<2x2xf32>, %b: tensor<8xbf16>) {
  // A chunk of the gradient is fine, and so is the gradient cast to bf16
  // (reduced in half the bytes).
  %0 = braid.all_reduce %g on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<4xf32>
  %2 = braid.all_reduce %b on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<8xbf16>
  // expected-error @below {{input #0 of type 'tensor<2x2xf32>' is neither the gradient of 'w' of type 'tensor<8xf32>' nor a rank-1 chunk of it}}
  %1 = braid.all_reduce %h on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<2x2xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @scatter_dim(%x: tensor<8xf32>) {
  // expected-error @below {{scatter_dim 1 is out of range for rank 1}}
  %0 = braid.reduce_scatter %x on @world grid_axes = [0] reduction = sum scatter_dim = 1 : tensor<8xf32> -> tensor<2xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @scatter_type(%x: tensor<8xf32>) {
  // expected-error @below {{result element type 'bf16' differs from input element type 'f32'}}
  %0 = braid.reduce_scatter %x on @world grid_axes = [0] reduction = sum scatter_dim = 0 : tensor<8xf32> -> tensor<2xbf16>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @gather_rank(%x: tensor<8xf32>) {
  // expected-error @below {{result rank 2 differs from input rank 1}}
  %0 = braid.all_gather %x on @world grid_axes = [0] gather_dim = 0 : tensor<8xf32> -> tensor<32x1xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @gather_other_dim(%x: tensor<8x3xf32>) {
  // expected-error @below {{result size 4 in dimension 1 differs from the input's 3; only gather_dim 0 may change}}
  %0 = braid.all_gather_start %x on @world grid_axes = [0] gather_dim = 0 : tensor<8x3xf32> -> !braid.future<tensor<32x4xf32>>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @scatter_divisible(%x: tensor<6xf32>) {
  // expected-error @below {{scatter_dim 0 has size 6, which the group of 4 ranks does not divide}}
  %0 = braid.reduce_scatter %x on @world grid_axes = [0] reduction = sum scatter_dim = 0 : tensor<6xf32> -> tensor<1xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @scatter_result(%x: tensor<8xf32>) {
  // expected-error @below {{result size 4 in scatter_dim 0 should be 1 for a group of 8 ranks}}
  %0 = braid.reduce_scatter_start %x on @world grid_axes = [0, 1] reduction = sum scatter_dim = 0 : tensor<8xf32> -> !braid.future<tensor<4xf32>>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @gather_result(%x: tensor<8xf32>) {
  // expected-error @below {{result size 32 in gather_dim 0 should be 16 for a group of 2 ranks}}
  %0 = braid.all_gather %x on @world grid_axes = [1] gather_dim = 0 : tensor<8xf32> -> tensor<32xf32>
  return
}

// -----

shard.grid @world(shape = ?x2)
func.func @dynamic_grid(%x: tensor<8xf32>) {
  // A group of unknown size: the sizes are checked at run time.
  %0 = braid.all_gather %x on @world grid_axes = [0] gather_dim = 0 : tensor<8xf32> -> tensor<32xf32>
  // expected-error @below {{grid axis 2 is out of range for grid @world of rank 2}}
  %1 = braid.all_gather %x on @world grid_axes = [2] gather_dim = 0 : tensor<8xf32> -> tensor<32xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @future_of_two(%x: tensor<8xf32>) {
  // expected-error @below {{yields '!braid.future<tensor<8xf32>, tensor<8xf32>>', which must hold exactly one tensor}}
  %0 = braid.all_gather_start %x on @world grid_axes = [0] gather_dim = 0 : tensor<8xf32> -> !braid.future<tensor<8xf32>, tensor<8xf32>>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @all_to_all_split(%x: tensor<8x4xf32>) {
  // expected-error @below {{split_dim 2 is out of range for rank 2}}
  %0 = braid.all_to_all %x on @world grid_axes = [0] split_dim = 2 concat_dim = 0 : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @all_to_all_concat(%x: tensor<8x4xf32>) {
  // expected-error @below {{concat_dim -1 is out of range for rank 2}}
  %0 = braid.all_to_all %x on @world grid_axes = [0] split_dim = 0 concat_dim = -1 : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @all_to_all_type(%x: tensor<8x4xf32>) {
  // expected-error @below {{result type 'tensor<2x16xbf16>' must have the rank and element type of the input type 'tensor<8x4xf32>'}}
  %0 = braid.all_to_all_start %x on @world grid_axes = [0] split_dim = 0 concat_dim = 1 : tensor<8x4xf32> -> !braid.future<tensor<2x16xbf16>>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @all_to_all_divisible(%x: tensor<6x4xf32>) {
  // expected-error @below {{split_dim 0 has size 6, which the group of 4 ranks does not divide}}
  %0 = braid.all_to_all %x on @world grid_axes = [0] split_dim = 0 concat_dim = 1 : tensor<6x4xf32> -> tensor<1x16xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @all_to_all_shape(%x: tensor<8x4xf32>) {
  // expected-error @below {{result has shape 2x4, expected 2x16 for a group of 4 ranks}}
  %0 = braid.all_to_all %x on @world grid_axes = [0] split_dim = 0 concat_dim = 1 : tensor<8x4xf32> -> tensor<2x4xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @broadcast_type(%x: tensor<8xf32>) {
  // expected-error @below {{yields 'tensor<4xf32>', which differs from the input type 'tensor<8xf32>'}}
  %0 = braid.collective_broadcast %x on @world grid_axes = [0] root = 0 : tensor<8xf32> -> tensor<4xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @broadcast_root(%x: tensor<8xf32>) {
  // expected-error @below {{root -1 is negative}}
  %0 = braid.collective_broadcast_start %x on @world grid_axes = [0] root = -1 : tensor<8xf32> -> !braid.future<tensor<8xf32>>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @broadcast_root_range(%x: tensor<8xf32>) {
  // expected-error @below {{root 4 is out of range for a group of 4 ranks}}
  %0 = braid.collective_broadcast %x on @world grid_axes = [0] root = 4 : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @send_peer(%x: tensor<8xf32>) {
  // expected-error @below {{peer -2 is negative}}
  braid.send %x on @world grid_axes = [1] peer = -2 : tensor<8xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @send_peer_range(%x: tensor<8xf32>) {
  // expected-error @below {{peer 2 is out of range for a group of 2 ranks}}
  braid.send %x on @world grid_axes = [1] peer = 2 : tensor<8xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @send_start_future(%x: tensor<8xf32>) {
  // expected-error @below {{yields '!braid.future<tensor<8xf32>>', but a send's future holds no value (!braid.future<>)}}
  %0 = braid.send_start %x on @world grid_axes = [1] peer = 1 : tensor<8xf32> -> !braid.future<tensor<8xf32>>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @recv_peer(%x: tensor<8xf32>) {
  // expected-error @below {{peer -1 is negative}}
  %0 = braid.recv on @world grid_axes = [0] peer = -1 : tensor<8xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @recv_start_future() {
  // expected-error @below {{yields '!braid.future<>', which must hold exactly one tensor}}
  %0 = braid.recv_start on @world grid_axes = [0] peer = 1 : !braid.future<>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @recv_start_peer_range() {
  // expected-error @below {{peer 8 is out of range for a group of 8 ranks}}
  %0 = braid.recv_start on @world grid_axes = [0, 1] peer = 8 : !braid.future<tensor<8xf32>>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @send_recv_send_peer(%x: tensor<8xf32>) {
  // expected-error @below {{send_peer -1 is negative}}
  %0 = braid.send_recv %x on @world grid_axes = [1] send_peer = -1 recv_peer = 0 : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @send_recv_recv_peer(%x: tensor<8xf32>) {
  // expected-error @below {{recv_peer -3 is negative}}
  %0 = braid.send_recv %x on @world grid_axes = [1] send_peer = 0 recv_peer = -3 : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @send_recv_send_peer_range(%x: tensor<8xf32>) {
  // expected-error @below {{send_peer 4 is out of range for a group of 4 ranks}}
  %0 = braid.send_recv %x on @world grid_axes = [0] send_peer = 4 recv_peer = 0 : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @send_recv_recv_peer_range(%x: tensor<8xf32>) {
  // expected-error @below {{recv_peer 2 is out of range for a group of 2 ranks}}
  %0 = braid.send_recv_start %x on @world grid_axes = [1] send_peer = 1 recv_peer = 2 : tensor<8xf32> -> !braid.future<tensor<8xf32>>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @send_recv_nothing_sent() {
  // expected-error @below {{sends nothing; a send-receive sends at least one tensor (braid.recv receives alone)}}
  %0 = "braid.send_recv"() <{grid = @world, grid_axes = array<i16: 1>, send_peer = 1 : i64, recv_peer = 1 : i64}> : () -> tensor<8xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @send_recv_start_future(%x: tensor<8xf32>) {
  // expected-error @below {{receives nothing; a send-receive receives at least one tensor (braid.send sends alone)}}
  %0 = braid.send_recv_start %x on @world grid_axes = [1] send_peer = 1 recv_peer = 1 : tensor<8xf32> -> !braid.future<>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @grad_of_chunk_too_large(%w: tensor<2x2xf32> {braid.role = #braid.role<parameter "w">}, %g: tensor<8xf32>) {
  // expected-error @below {{input #0 of type 'tensor<8xf32>' is neither the gradient of 'w' of type 'tensor<2x2xf32>' nor a rank-1 chunk of it}}
  %0 = braid.all_reduce %g on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<8xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @permute_type(%x: tensor<8xf32>) {
  // expected-error @below {{yields 'tensor<8xbf16>', which differs from the input type 'tensor<8xf32>'}}
  %0 = braid.collective_permute %x on @world grid_axes = [0] offset = 1 : tensor<8xf32> -> tensor<8xbf16>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @permute_start_future(%x: tensor<8xf32>) {
  // expected-error @below {{yields '!braid.future<tensor<8xf32>, tensor<8xf32>>', which must hold exactly one tensor}}
  %0 = braid.collective_permute_start %x on @world grid_axes = [0] offset = 1 : tensor<8xf32> -> !braid.future<tensor<8xf32>, tensor<8xf32>>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @permute_axis(%x: tensor<8xf32>) {
  // expected-error @below {{grid axis 2 is out of range for grid @world of rank 2}}
  %0 = braid.collective_permute %x on @world grid_axes = [2] offset = 1 : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @axis_index_type() {
  // expected-error @below {{yields 'tensor<1xi64>', but a rank index is a tensor<i64>}}
  %0 = braid.axis_index_start on @world grid_axes = [0] : !braid.future<tensor<1xi64>>
  return
}

// -----

shard.grid @world(shape = 4x2)
func.func @axis_index_axis() {
  // expected-error @below {{grid axis 2 is out of range for grid @world of rank 2}}
  %0 = braid.axis_index on @world grid_axes = [2] : tensor<i64>
  return
}

// -----

func.func @scatter_grad_of(%w: tensor<8xf32> {braid.role = #braid.role<parameter "w">}, %x: tensor<8xf32>) {
  // expected-error @below {{grad_of names 'x', which is not a parameter argument of @scatter_grad_of}}
  %0 = braid.reduce_scatter %w on @world grid_axes = [0] reduction = sum scatter_dim = 0 grad_of = ["x"] : tensor<8xf32> -> tensor<2xf32>
  return
}

// -----

// A grid beyond braid's bound (found by utils/fuzz-compiler.py: the group's
// members were listed for the cost model, and the list could not be made).
shard.grid @huge(shape = 9223372036854775807)
func.func @grid_too_large(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @below {{grid @huge of shape 9223372036854775807 has more than 16777216 ranks, the most braid supports}}
  %0 = braid.all_reduce %x on @huge grid_axes = [0] reduction = sum : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

shard.grid @wide(shape = 4096x4096x2)
func.func @grid_product_too_large(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @below {{grid @wide of shape 4096x4096x2 has more than 16777216 ranks, the most braid supports}}
  %0 = braid.all_reduce %x on @wide grid_axes = [2] reduction = sum : tensor<8xf32>
  return %0 : tensor<8xf32>
}
