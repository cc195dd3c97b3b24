// RUN: braid-opt %s --split-input-file --verify-diagnostics

// expected-error @below {{argument #0 has unknown braid attribute 'braid.param'}}
func.func @unknown_arg_attr(%w: tensor<4xf32> {braid.param = "w"}) {
  return
}

// -----

// expected-error @below {{argument #0: 'braid.role' must be a #braid.role attribute, but is "w"}}
func.func @arg_role_not_role(%w: tensor<4xf32> {braid.role = "w"}) {
  return
}

// -----

// expected-error @below {{argument #0: role 'loss' is only for function results}}
func.func @arg_loss(%l: tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  return
}

// -----

// expected-error @below {{argument #0 ('w') must be a statically shaped tensor, but is 'tensor<?xf32>'}}
func.func @arg_dynamic(%w: tensor<?xf32> {braid.role = #braid.role<parameter "w">}) {
  return
}

// -----

// expected-error @below {{argument #1 repeats the name 'w' of argument #0}}
func.func @arg_repeated(%w: tensor<4xf32> {braid.role = #braid.role<parameter "w">},
                        %m: tensor<4xf32> {braid.role = #braid.role<optimizer_state "w">}) {
  return
}

// -----

// expected-error @below {{result #0 has unknown braid attribute 'braid.output'}}
func.func @unknown_result_attr(%w: tensor<4xf32>) -> (tensor<4xf32> {braid.output}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @below {{result #0: 'braid.role' must be a #braid.role attribute, but is 1 : i64}}
func.func @result_role_not_role(%w: tensor<4xf32>) -> (tensor<4xf32> {braid.role = 1}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @below {{result #0: role 'hyperparameter' is only for function arguments}}
func.func @result_hyperparameter(%lr: tensor<f32>) -> (tensor<f32> {braid.role = #braid.role<hyperparameter "lr">}) {
  return %lr : tensor<f32>
}

// -----

// expected-error @below {{argument #0 ('lr'): a hyperparameter is a scalar f32 tensor (tensor<f32>), but is 'tensor<2xf32>'}}
func.func @hyperparameter_not_scalar(%lr: tensor<2xf32> {braid.role = #braid.role<hyperparameter "lr">}) {
  return
}

// -----

// expected-error @below {{result #0: role 'batch' is only for function arguments}}
func.func @result_batch(%w: tensor<4xf32>) -> (tensor<4xf32> {braid.role = #braid.role<batch "x">}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @below {{result #0: the loss must be a rank-0 float tensor, but is 'tensor<4xf32>'}}
func.func @loss_not_scalar(%w: tensor<4xf32>) -> (tensor<4xf32> {braid.role = #braid.role<loss "loss">}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @below {{result #0 is the updated parameter 'w', but argument #0 of that name is optimizer_state}}
func.func @result_kind(%w: tensor<4xf32> {braid.role = #braid.role<optimizer_state "w">})
    -> (tensor<4xf32> {braid.role = #braid.role<parameter "w">}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @below {{result #0 is the updated 'w' of type 'tensor<8xf32>', but argument #0 has type 'tensor<4xf32>'}}
func.func @result_type(%w: tensor<4xf32> {braid.role = #braid.role<parameter "w">}, %x: tensor<8xf32>)
    -> (tensor<8xf32> {braid.role = #braid.role<parameter "w">}) {
  return %x : tensor<8xf32>
}

// -----

// expected-error @below {{result #0 is the updated optimizer_state 'w.m', but no argument has that name}}
func.func @result_unknown(%w: tensor<4xf32>) -> (tensor<4xf32> {braid.role = #braid.role<optimizer_state "w.m">}) {
  return %w : tensor<4xf32>
}

// -----

func.func @stream_not_stream(%x: tensor<4xf32>) {
  // expected-error @below {{'braid.stream' must be a #braid.stream attribute, but is 0 : i64}}
  %0 = braid.relu %x {braid.stream = 0} : tensor<4xf32>
  return
}

// -----

func.func @unknown_op_attr(%x: tensor<4xf32>) {
  // expected-error @below {{unknown braid attribute 'braid.streams'}}
  %0 = braid.relu %x {braid.streams = 0} : tensor<4xf32>
  return
}

// -----

// expected-error @below {{a parameter role needs a non-empty name}}
func.func @empty_name(%w: tensor<4xf32> {braid.role = #braid.role<parameter "">}) {
  return
}

// -----

// expected-error @below {{failed to parse Braid_StreamAttr parameter 'kind' which is to be a `::braid::StreamKind`}}
// expected-error @below {{expected ::braid::StreamKind to be one of: compute, comm}}
func.func @bad_stream_kind(%x: tensor<4xf32>) attributes {s = #braid.stream<copy, 0>} {
  return
}

// -----

// expected-error @below {{'braid.offsets' must be an array<i64>, but is 3 : i64}}
%0 = "braid.fill"() {value = 0.0 : f64, braid.offsets = 3} : () -> tensor<4xf32>

// -----

// expected-error @below {{'braid.offsets' has 2 entries, but the op has 1 results}}
%0 = "braid.fill"() {value = 0.0 : f64, braid.offsets = array<i64: 0, 64>} : () -> tensor<4xf32>

// -----

// expected-error @below {{'braid.offsets' gives tensor result #0 the negative offset -64}}
%0 = "braid.fill"() {value = 0.0 : f64, braid.offsets = array<i64: -64>} : () -> tensor<4xf32>

// -----

// expected-error @below {{'braid.offsets' gives result #0, which is not a tensor, offset 0 instead of -1}}
%e = "braid.record_event"() {braid.offsets = array<i64: 0>} : () -> !braid.event

// -----

// expected-error @below {{argument #0: 'braid.offset' must be a non-negative integer, but is -1 : i64}}
func.func @f(%x: tensor<4xf32> {braid.offset = -1 : i64}) {
  return
}

// -----

// expected-error @below {{'braid.arena_bytes' must be a non-negative integer on a function}}
%0 = "braid.fill"() {value = 0.0 : f64, braid.arena_bytes = 64 : i64} : () -> tensor<4xf32>

// -----

// expected-error @below {{'braid.cluster' must be a string on a builtin.module}}
module attributes {braid.cluster = 8 : i64} {
}

// -----

// expected-error @below {{'braid.cluster' must be a string on a builtin.module}}
%0 = "braid.fill"() {value = 0.0 : f64, braid.cluster = "h100-8"} : () -> tensor<4xf32>

// -----

// braid has one compute stream: another compute index would be taken for
// stream 0 by the schedule verifier while the plan gives it its own thread
// (a race the verifier could not see).
func.func @second_compute_stream(%x: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @below {{braid has one compute stream, #braid.stream<compute, 0>; there is no compute stream 1}}
  %0 = braid.relu %x {braid.stream = #braid.stream<compute, 1>} : tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

// A communication stream index is bounded (1 + 4294967295 would wrap to the
// compute stream's dense index 0).
func.func @comm_stream_wraps(%x: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @below {{communication stream 4294967295 is out of range: a step has at most 64 (#braid.stream<comm, 0> to <comm, 63>)}}
  %0 = braid.relu %x {braid.stream = #braid.stream<comm, 4294967295>} : tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

func.func @comm_stream_64(%x: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @below {{communication stream 64 is out of range}}
  %0 = braid.relu %x {braid.stream = #braid.stream<comm, 64>} : tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

// expected-error @below {{argument #0: 'braid.sharding' must be a #braid.sharding attribute, but is "split"}}
func.func @sharding_not_sharding(%w: tensor<4xf32> {braid.sharding = "split"}) {
  return
}

// -----

// expected-error @below {{argument #0 cannot be partial: a step's arguments and results, and the values its transfers carry, are replicated or split}}
func.func @sharding_partial(%w: tensor<4xf32> {braid.sharding = #braid.sharding<partial>}) {
  return
}

// -----

// expected-error @below {{result #0 is split along dimension 1, but has type 'tensor<4xf32>'}}
func.func @sharding_dim(%w: tensor<4xf32>) -> (tensor<4xf32> {braid.sharding = #braid.sharding<split 1>}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @below {{argument #0 is split 0 blocks [2, 3], whose blocks sum to 5, but dimension 0 has size 4}}
func.func @sharding_blocks(%w: tensor<4xf32> {braid.sharding = #braid.sharding<split 0 blocks [2, 3]>}) {
  return
}

// -----

// expected-error @below {{'braid.tensor_parallel' must be a #braid.tensor_parallel<grid = @grid, axis = N> on a function}}
func.func @tensor_parallel_attr() attributes {braid.tensor_parallel = 1} {
  return
}

// -----

// The dictionary of before the typed attribute.
// expected-error @below {{'braid.tensor_parallel' must be a #braid.tensor_parallel<grid = @grid, axis = N> on a function}}
func.func @tensor_parallel_dict() attributes {braid.tensor_parallel = {axis = 1 : i64, grid = @world}} {
  return
}

// -----

// expected-error @below {{a tensor-parallel axis is a grid and a non-negative axis, but is @world and -1}}
func.func @tensor_parallel_axis() attributes {braid.tensor_parallel = #braid.tensor_parallel<grid = @world, axis = -1>} {
  return
}

// -----

// expected-error @below {{'braid.data_parallel' must be a #braid.data_parallel<grid = @grid, axis = N, zero_stage = S> on a function}}
func.func @data_parallel_attr() attributes {braid.data_parallel = 1} {
  return
}

// -----

// expected-error @below {{'braid.zero_stage' must be a ZeRO stage braid builds (0, 1 or 2) on a builtin.module, but is 3 : i64}}
module attributes {braid.zero_stage = 3 : i64} {
}

// -----

// expected-error @below {{a data-parallel axis is a grid and a non-negative axis, but is @world and -1}}
func.func @data_parallel_axis() attributes {braid.data_parallel = #braid.data_parallel<grid = @world, axis = -1, zero_stage = 1>} {
  return
}

// -----

// expected-error @below {{a sharded step's ZeRO stage is 1, 2 or 3, but is 4}}
func.func @data_parallel_stage() attributes {braid.data_parallel = #braid.data_parallel<grid = @world, axis = 0, zero_stage = 4>} {
  return
}

// -----

// expected-error @below {{argument #0: 'braid.data_parallel_split' must be a dimension of its 'tensor<4xf32>', but is 1 : i64}}
func.func @data_parallel_split_dim(%m: tensor<4xf32> {braid.data_parallel_split = 1 : i64})
    attributes {braid.data_parallel = #braid.data_parallel<grid = @world, axis = 0, zero_stage = 1>} {
  return
}

// -----

// expected-error @below {{result #0 has 'braid.data_parallel_split', but the function has no 'braid.data_parallel'}}
func.func @data_parallel_split_unmarked(%m: tensor<4xf32>) -> (tensor<4xf32> {braid.data_parallel_split = 0 : i64}) {
  return %m : tensor<4xf32>
}

// -----

// expected-error @below {{a split sharding needs a dimension of 0 or more, not -2}}
func.func @sharding_negative(%w: tensor<4xf32> {braid.sharding = #braid.sharding<split -2>}) {
  return
}

// -----

// expected-error @below {{sharding blocks must be positive, not 0}}
func.func @sharding_zero_block(%w: tensor<4xf32> {braid.sharding = #braid.sharding<split 0 blocks [4, 0]>}) {
  return
}

// -----

// expected-error @below {{expected 'replicated', 'split', 'partial' or 'split_axes', not 'sharded'}}
func.func @sharding_keyword(%w: tensor<4xf32> {braid.sharding = #braid.sharding<sharded>}) {
  return
}

// -----

// expected-error @below {{a grid axis is non-negative, not -2}}
func.func @sharding_negative_axis(%w: tensor<4xf32> {braid.sharding = #braid.sharding<split_axes = [[-2]]>}) {
  return
}

// -----

// Grid axes and the one-axis forms (the tensor-parallel axis, whichever
// it is) cannot be told apart in one value.
// expected-error @below {{a sharding names grid axes or is one of the one-axis forms (over the tensor-parallel axis), not both}}
func.func @sharding_mixed(%w: tensor<4x4xf32> {braid.sharding = #braid.sharding<split_axes = [[0], [-1]]>}) {
  return
}

// -----

// expected-error @below {{grid axis 1 appears twice in a sharding}}
func.func @sharding_axis_twice(%w: tensor<4x4xf32> {braid.sharding = #braid.sharding<split_axes = [[1], [0, 1]]>}) {
  return
}

// -----

// expected-error @below {{grid axis 0 appears twice in a sharding}}
func.func @sharding_split_and_partial(%w: tensor<4x4xf32> {braid.sharding = #braid.sharding<split_axes = [[0]], partial = sum [0]>}) {
  return
}

// -----

// expected-error @below {{braid's partial values are sums, not 'max'}}
func.func @sharding_partial_max(%w: tensor<4xf32> {braid.sharding = #braid.sharding<split_axes = [], partial = max [0]>}) {
  return
}

// -----

// expected-error @below {{expected a reduction kind, not 'mean'}}
func.func @sharding_partial_kind(%w: tensor<4xf32> {braid.sharding = #braid.sharding<split_axes = [], partial = mean [0]>}) {
  return
}

// -----

// expected-error @below {{sharding blocks divide the one split dimension, but 2 dimensions are split}}
func.func @sharding_blocks_two_dims(%w: tensor<4x4xf32> {braid.sharding = #braid.sharding<split_axes = [[0], [1]] blocks [2, 2]>}) {
  return
}

// -----

// expected-error @below {{a stage's axis and index are non-negative, but they are 1 and -1}}
func.func @stage_negative() attributes {braid.stage = #braid.stage<grid = @world, axis = 1, index = -1>} {
  return
}

// -----

// expected-error @below {{'braid.stage' must be a #braid.stage attribute on a function, but is 0 : i64}}
func.func @stage_integer() attributes {braid.stage = 0 : i64} {
  return
}

// -----

// expected-error @below {{'braid.stage' must be a #braid.stage attribute on a function}}
module attributes {braid.stage = #braid.stage<grid = @world, axis = 0, index = 0>} {
}

// -----

// The old dictionary spelling names the typed one.
// expected-error @below {{'braid.pipeline' must be a #braid.pipeline attribute on a builtin.module (#braid.pipeline<axis = 0, micro_batches = 4, schedule = "1f1b", boundaries = ["h2"]>, all but the axis optional), but is {axis = 0 : i64, micro_batches = 4 : i64}}}
module attributes {braid.pipeline = {axis = 0 : i64, micro_batches = 4 : i64}} {
}

// -----

// expected-error @below {{'braid.pipeline' must be a #braid.pipeline attribute on a builtin.module}}
func.func @pipeline_on_func() attributes {braid.pipeline = #braid.pipeline<axis = 0>} {
  return
}

// -----

// expected-error @below {{struct is missing required parameter: axis}}
module attributes {braid.pipeline = #braid.pipeline<micro_batches = 4>} {
}

// -----

// expected-error @below {{a pipeline asks for 0 micro-batches, but braid-pipeline takes 1 to 65536}}
module attributes {braid.pipeline = #braid.pipeline<axis = 0, micro_batches = 0>} {
}

// -----

// expected-error @below {{a pipeline asks for 65537 micro-batches, but braid-pipeline takes 1 to 65536}}
module attributes {braid.pipeline = #braid.pipeline<axis = 0, micro_batches = 65537>} {
}

// -----

// expected-error @below {{a pipeline's axis is non-negative, but is -1}}
module attributes {braid.pipeline = #braid.pipeline<axis = -1>} {
}

// -----

// expected-error @below {{a pipeline's boundaries are module names (strings), but are ["h2", 3]}}
module attributes {braid.pipeline = #braid.pipeline<axis = 0, boundaries = ["h2", 3]>} {
}

// -----

// expected-error @below {{a pipeline asks for 0 virtual stages, but braid-pipeline takes 1 to 65536}}
module attributes {braid.pipeline = #braid.pipeline<axis = 0, schedule = "interleaved", virtual_stages = 0>} {
}

// -----

// expected-error @below {{the interleaved schedule needs virtual_stages of at least 2 (with 1 it is 1f1b), but a pipeline asks for 1 virtual stages under "interleaved"}}
module attributes {braid.pipeline = #braid.pipeline<axis = 0, schedule = "interleaved">} {
}

// -----

// expected-error @below {{virtual_stages is for the interleaved schedule, but a pipeline asks for 2 virtual stages under "gpipe"}}
module attributes {braid.pipeline = #braid.pipeline<axis = 0, schedule = "gpipe", virtual_stages = 2>} {
}

// -----

// expected-error @below {{unknown pipeline schedule 'zb-h2' (known: gpipe, 1f1b, zb-h1, interleaved)}}
// expected-error @below {{failed to parse Braid_PipelineAttr parameter 'schedule'}}
module attributes {braid.pipeline = #braid.pipeline<axis = 0, schedule = "zb-h2">} {
}

// -----

// A schedule is a quoted name: 1f1b is not an MLIR keyword.
// expected-error @below {{expected string}}
// expected-error @below {{failed to parse Braid_PipelineAttr parameter 'schedule'}}
module attributes {braid.pipeline = #braid.pipeline<axis = 0, schedule = gpipe>} {
}

// -----

// expected-error @below {{duplicate or unknown struct parameter name: stages}}
module attributes {braid.pipeline = #braid.pipeline<axis = 0, stages = 4>} {
}

// -----

func.func @action_kind(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{expected one of [F, B, W] for what an action of a pipeline schedule computes of a micro-batch, got: X}}
  // expected-error @below {{failed to parse Braid_ActionAttr parameter 'kind'}}
  %y = braid.relu %x {braid.action = #braid.action<X, micro_batch = 3>} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @action_number(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{an action's micro-batch is non-negative, but is -1}}
  %y = braid.relu %x {braid.action = #braid.action<W, micro_batch = -1>} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// The string form of before the typed attribute.
func.func @action_string(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{'braid.action' must be a #braid.action naming an action of a pipeline schedule (#braid.action<F, micro_batch = 3>), but is "F3"}}
  %y = braid.relu %x {braid.action = "F3"} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @action_integer(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{'braid.action' must be a #braid.action naming an action}}
  %y = braid.relu %x {braid.action = 3 : i64} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

shard.grid @world(shape = 2x2)
func.func @transfer_sharding_op(%x: tensor<4xf32>) {
  // expected-error @below {{'braid.sharding' is an argument or result attribute of a function, a #braid.sharding on a braid.send or braid.recv, or an array of one for each value a braid.send_recv sends and receives}}
  %y = braid.add %x, %x {braid.sharding = #braid.sharding<split 0>} : tensor<4xf32>
  return
}

// -----

shard.grid @world(shape = 2x2)
func.func @transfer_sharding_count(%x: tensor<4xf32>) {
  // expected-error @below {{'braid.sharding' is an argument or result attribute of a function, a #braid.sharding on a braid.send or braid.recv, or an array of one for each value a braid.send_recv sends and receives}}
  %y = braid.send_recv %x on @world grid_axes = [0] send_peer = 1 recv_peer = 1 {braid.sharding = [#braid.sharding<split 0>]} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

shard.grid @world(shape = 2x2)
func.func @transfer_sharding_partial(%x: tensor<4xf32>) {
  // expected-error @below {{the value received cannot be partial: a step's arguments and results, and the values its transfers carry, are replicated or split}}
  %y = braid.recv on @world grid_axes = [0] peer = 1 {braid.sharding = #braid.sharding<partial>} : tensor<4xf32>
  return
}

// -----

shard.grid @world(shape = 2)
func.func @transfer_negative(%x: tensor<4xf32>) {
  // expected-error @below {{a transfer's value is non-negative and its micro-batch non-negative or absent, but they are 0 and -2}}
  braid.send %x on @world grid_axes = [0] peer = 1 {braid.transfers = [#braid.transfer<value = 0, micro_batch = -2>]} : tensor<4xf32>
  return
}

// -----

func.func @transfers_on_a_kernel(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{'braid.transfers' must be an array of #braid.transfer on a send, a receive or a send-receive}}
  %y = braid.relu %x {braid.transfers = [#braid.transfer<value = 0>]} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

shard.grid @world(shape = 2)
func.func @transfers_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{'braid.transfers' names 1 transfers, but the op moves 2 values}}
  %y = braid.send_recv %x on @world grid_axes = [0] send_peer = 1 recv_peer = 1 {braid.transfers = [#braid.transfer<value = 0>]} : tensor<4xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// A partitioned function's blocks are global sizes, one piece of each per
// rank of its tensor-parallel axis: its local types must be those pieces
// (braid-run copies by them; the plan loader was the first to notice).
shard.grid @world(shape = 1x3)
// expected-error @below {{argument #0 is split 0 blocks [6, 6], whose blocks make a piece of 4 on each of the 3 ranks of tensor-parallel axis 1 of @world, but its local dimension 0 has size 8}}
func.func @blocks_against_the_grid(%w: tensor<8x4xf32> {braid.sharding = #braid.sharding<split 0 blocks [6, 6]>})
    attributes {braid.tensor_parallel = #braid.tensor_parallel<grid = @world, axis = 1>} {
  return
}

// -----

shard.grid @world(shape = 1x4)
// expected-error @below {{result #0 is split 0 blocks [6, 6], whose block of 6 does not cut into the 4 ranks of tensor-parallel axis 1 of @world}}
func.func @block_not_cut(%w: tensor<3x4xf32>) -> (tensor<3x4xf32> {braid.sharding = #braid.sharding<split 0 blocks [6, 6]>})
    attributes {braid.tensor_parallel = #braid.tensor_parallel<grid = @world, axis = 1>} {
  return %w : tensor<3x4xf32>
}

// -----

// expected-error @below {{argument #0 is split_axes = [[], [], [1]], which splits 3 dimensions, but has type 'tensor<4x4xf32>'}}
func.func @sharding_axes_rank(%w: tensor<4x4xf32> {braid.sharding = #braid.sharding<split_axes = [[], [], [1]]>}) {
  return
}

// -----

// expected-error @below {{argument #0 cannot be partial: a step's arguments and results, and the values its transfers carry, are replicated or split}}
func.func @sharding_axes_partial(%w: tensor<4x4xf32> {braid.sharding = #braid.sharding<split_axes = [[1]], partial = sum [0]>}) {
  return
}

// -----

// expected-error @below {{a tensor-parallel step's inner axes are non-negative and each partitioned once, but axis 1 is not}}
func.func @inner_axis_twice() attributes {braid.tensor_parallel = #braid.tensor_parallel<grid = @world, axis = 1, inner_axes = [1]>} {
  return
}

// -----

// expected-error @below {{'braid.evaluates' must be a symbol (@step) on a function}}
func.func @evaluates_not_symbol() attributes {braid.evaluates = "step"} {
  return
}

// -----

// expected-error @below {{'braid.evaluates' names @missing, which is not another function of the module}}
func.func @evaluates_missing() attributes {braid.evaluates = @missing} {
  return
}

// -----

func.func @step(%w: tensor<4xf32> {braid.role = #braid.role<parameter "w">}) {
  return
}
// expected-error @below {{an evaluation program takes parameters and a batch, but argument #0 is not one of them}}
func.func @evaluates_state(%m: tensor<4xf32> {braid.role = #braid.role<optimizer_state "m">})
    -> (tensor<f32> {braid.role = #braid.role<loss "loss">})
    attributes {braid.evaluates = @step} {
  %l = braid.reduce_sum %m dims = [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @step(%w: tensor<4xf32> {braid.role = #braid.role<parameter "w">}) {
  return
}
// expected-error @below {{the evaluation program's parameter 'v' is not a parameter of @step}}
func.func @evaluates_unknown(%v: tensor<4xf32> {braid.role = #braid.role<parameter "v">})
    -> (tensor<f32> {braid.role = #braid.role<loss "loss">})
    attributes {braid.evaluates = @step} {
  %l = braid.reduce_sum %v dims = [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @step(%w: tensor<4xf32> {braid.role = #braid.role<parameter "w">}) {
  return
}
// expected-error @below {{the evaluation program's parameter 'w' is 'tensor<8xf32>', but @step takes 'tensor<4xf32>'}}
func.func @evaluates_type(%w: tensor<8xf32> {braid.role = #braid.role<parameter "w">})
    -> (tensor<f32> {braid.role = #braid.role<loss "loss">})
    attributes {braid.evaluates = @step} {
  %l = braid.reduce_sum %w dims = [0] : tensor<8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @step(%w: tensor<4xf32> {braid.role = #braid.role<parameter "w">}) {
  return
}
// expected-error @below {{an evaluation program returns one result, its loss}}
func.func @evaluates_no_loss(%w: tensor<4xf32> {braid.role = #braid.role<parameter "w">})
    attributes {braid.evaluates = @step} {
  return
}
