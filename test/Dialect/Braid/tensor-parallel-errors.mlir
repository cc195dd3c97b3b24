// RUN: braid-opt %s --split-input-file --verify-diagnostics --braid-tensor-parallel

shard.grid @world(shape = 1x2)
// An op without a rule for what it receives: a softmax along the split
// dimension.
func.func @no_rule(%x: tensor<4x8xf32> {braid.sharding = #braid.sharding<split 1>}) -> tensor<4x8xf32> {
  // expected-error @below {{'braid.softmax' has no tensor-parallel rule for operand #0 (argument #0) split 1 (docs/TensorParallel.md lists each op's rules)}}
  %y = braid.softmax %x dim = 1 : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

shard.grid @world(shape = 1x2)
// A matmul that reads an operand through a permutation (braid-fuse-kernels
// runs after the tensor-parallel pass) has no rule for a split one.
func.func @permuted_matmul(%x: tensor<8x4xf32> {braid.sharding = #braid.sharding<split 0>}, %w: tensor<8x4xf32>) -> tensor<4x4xf32> {
  // expected-error @below {{'braid.matmul' has no tensor-parallel rule for operand #0 (argument #0) split 0}}
  %y = braid.matmul %x, %w {lhs_permutation = array<i64: 1, 0>} : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

shard.grid @world(shape = 1x2)
// A folded causal mask mixes the rows of the last two dimensions too: a
// split of the queries has no rule.
func.func @causal_rows(%x: tensor<2x8x8xf32> {braid.sharding = #braid.sharding<split 1>}) -> tensor<2x8x8xf32> {
  // expected-error @below {{'braid.softmax' has no tensor-parallel rule for operand #0 (argument #0) split 1}}
  %y = braid.softmax %x dim = 2 {causal} : tensor<2x8x8xf32>
  return %y : tensor<2x8x8xf32>
}

// -----

shard.grid @world(shape = 1x4)
// Six heads do not divide by 4 ranks.
func.func @heads(%x: tensor<4x24xf32> {braid.sharding = #braid.sharding<split 1>}) -> tensor<4x6x4xf32> {
  // expected-error @below {{result #0 of 'braid.reshape' is split 1: dimension 1 of 'tensor<4x6x4xf32>' (size 6) does not divide by the tensor-parallel size 4 (grid axis 1 of @world)}}
  %h = braid.reshape %x : tensor<4x24xf32> -> tensor<4x6x4xf32>
  return %h : tensor<4x6x4xf32>
}

// -----

shard.grid @world(shape = 3)
// expected-error @below {{argument 'w' is split 0 blocks [4, 2]: dimension 0 of 'tensor<6x4xf32>' (a block of size 4) does not divide by the tensor-parallel size 3 (grid axis 0 of @world)}}
func.func @argument(%w: tensor<6x4xf32> {braid.role = #braid.role<parameter "w">,
                                         braid.sharding = #braid.sharding<split 0 blocks [4, 2]>}) {
  return
}

// -----

shard.grid @world(shape = 2)
// An updated parameter must come out spread as it came in.
func.func @result(%w: tensor<4x4xf32> {braid.role = #braid.role<parameter "w">, braid.sharding = #braid.sharding<split 0>},
                  %v: tensor<4x4xf32>)
    -> (tensor<4x4xf32> {braid.role = #braid.role<parameter "w">}) {
  // expected-error @below {{the updated parameter 'w' (result #0) comes out replicated, but its argument is split 0}}
  return %v : tensor<4x4xf32>
}

// -----

shard.grid @world(shape = 2x2)
// The global step may not already talk over the tensor-parallel axis.
func.func @collective(%w: tensor<4xf32> {braid.sharding = #braid.sharding<split 0>}, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{'braid.all_reduce' already communicates over grid axis 1 of @world, the tensor-parallel axis; the global step may use the other axes only}}
  %r = braid.all_reduce %x on @world grid_axes = [1] reduction = sum : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

shard.grid @world(shape = 2)
func.func @scheduled(%w: tensor<4xf32> {braid.sharding = #braid.sharding<split 0>}, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{braid-tensor-parallel partitions graph-level steps; 'braid.all_reduce_start' is already scheduled (run it before the overlap passes)}}
  %f = braid.all_reduce_start %x on @world grid_axes = [0] reduction = sum : tensor<4xf32>
  %r = braid.wait %f : !braid.future<tensor<4xf32>>
  return %r : tensor<4xf32>
}

// -----

shard.grid @world(shape = 2)
// expected-error @below {{@again is already partitioned (it has 'braid.tensor_parallel')}}
func.func @again(%w: tensor<4xf32> {braid.sharding = #braid.sharding<split 0>}) -> tensor<4xf32>
    attributes {braid.tensor_parallel = #braid.tensor_parallel<grid = @world, axis = 0>} {
  return %w : tensor<4xf32>
}

// -----

// expected-error @below {{@no_grid has sharded arguments, so it needs a grid: the module declares 0 shard.grid ops; name one with grid=NAME}}
func.func @no_grid(%w: tensor<4xf32> {braid.sharding = #braid.sharding<split 0>}) -> tensor<4xf32> {
  return %w : tensor<4xf32>
}

// -----

shard.grid @world(shape = 2)
// expected-error @below {{braid-tensor-parallel needs a function body of one block, but @blocks has 2}}
func.func @blocks(%w: tensor<4xf32> {braid.sharding = #braid.sharding<split 0>}) -> tensor<4xf32> {
  cf.br ^next
^next:
  return %w : tensor<4xf32>
}

// -----

shard.grid @world(shape = 2x?)
// expected-error @below {{braid-tensor-parallel: grid axis 1 of @world has no static size}}
func.func @dynamic(%w: tensor<4xf32> {braid.sharding = #braid.sharding<split 0>}) -> tensor<4xf32> {
  return %w : tensor<4xf32>
}

// -----

shard.grid @world(shape = 1x2)
// A vocabulary of 50257 rows does not divide by 2 ranks (GPT-2 pads it to
// 50304 for this).
// expected-error @below {{argument 'wte' is split 0: dimension 0 of 'tensor<50257x8xf32>' (size 50257) does not divide by the tensor-parallel size 2 (grid axis 1 of @world)}}
func.func @vocabulary(%t: tensor<50257x8xf32> {braid.role = #braid.role<parameter "wte">, braid.sharding = #braid.sharding<split 0>},
                      %ids: tensor<4xi64>) -> tensor<4x8xf32> {
  %e = braid.embedding %t, %ids : tensor<50257x8xf32>, tensor<4xi64> -> tensor<4x8xf32>
  return %e : tensor<4x8xf32>
}

// -----

shard.grid @world(shape = 1x2)
// The cross-entropy takes logits split along the classes, not the rows.
func.func @cross_entropy_rows(%x: tensor<8x10xf32> {braid.sharding = #braid.sharding<split 0>},
                              %l: tensor<8xi64>) -> tensor<f32> {
  // expected-error @below {{'braid.cross_entropy' has no tensor-parallel rule for operand #0 (argument #0) split 0}}
  %loss = braid.cross_entropy %x, %l reduction = mean : tensor<8x10xf32>, tensor<8xi64> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

shard.grid @world(shape = 2x2)
// A transfer that carries a value split by rows (a shared parameter's, as
// braid-pipeline marks it) whose operand is split by columns: the ranks'
// pieces would not be the peer's.
func.func @transfer_sharding(%w: tensor<4x8xf32> {braid.sharding = #braid.sharding<split 1>}) {
  // expected-error @below {{'braid.send' carries split 0 (its 'braid.sharding'), but its operand (argument #0) is split 1}}
  braid.send %w on @world grid_axes = [0] peer = 1 {braid.sharding = #braid.sharding<split 0>} : tensor<4x8xf32>
  return
}

// -----

shard.grid @world(shape = 2x2)
// A partial value that a transfer carries whole is summed over the
// tensor-parallel axis first (no error at the send-receive), and the value
// it receives split by rows is split for its users: a softmax along the
// rows has no rule for it.
func.func @transfer_partial(%a: tensor<4x8xf32> {braid.sharding = #braid.sharding<split 1>},
                            %b: tensor<8x6xf32> {braid.sharding = #braid.sharding<split 0>}) {
  %p = braid.matmul %a, %b : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  %r = braid.send_recv %p on @world grid_axes = [0] send_peer = 1 recv_peer = 1 {braid.sharding = [#braid.sharding<replicated>, #braid.sharding<split 0>]} : tensor<4x6xf32> -> tensor<4x6xf32>
  // expected-error @below {{'braid.softmax' has no tensor-parallel rule for operand #0 (result #0 of 'braid.send_recv') split 0}}
  %s = braid.softmax %r dim = 0 : tensor<4x6xf32>
  return
}

// -----

// A bias over the last two dimensions replicated while the input is split
// along one of them.
shard.grid @world(shape = 2)
func.func @bias_trailing_mismatch(%x: tensor<2x8x16xf32> {braid.sharding = #braid.sharding<split 1>},
                                  %pos: tensor<8x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @below {{'braid.bias_add' has no tensor-parallel rule for operand #0 (argument #0) split 1}}
  %a = braid.bias_add %x, %pos : tensor<2x8x16xf32>, tensor<8x16xf32>
  return %a : tensor<2x8x16xf32>
}

// -----

// A mean over the split dimension is no partial sum: each rank's mean of
// its piece, summed over the ranks, is the axis size times the mean. (A
// sum over it is partial: sharding-rules.mlir.)
shard.grid @world(shape = 1x2)
func.func @mean_over_split(%x: tensor<4x8xf32> {braid.sharding = #braid.sharding<split 1>}) -> tensor<4xf32> {
  // expected-error @below {{'braid.reduce_mean' has no tensor-parallel rule for operand #0 (argument #0) split 1}}
  %m = braid.reduce_mean %x dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  return %m : tensor<4xf32>
}

// -----

// A sum of squares over split and replicated gradients together: as a
// partial sum it would count each replicated gradient once per rank in the
// clipping norm, as a whole one miss the others' pieces. The steps braid
// writes square the two kinds apart (sharding-rules.mlir, @clip_norm).
shard.grid @world(shape = 1x2)
func.func @sum_squares_mixed(%a: tensor<4x4xf32> {braid.sharding = #braid.sharding<split 0>}, %b: tensor<4xf32>) -> tensor<f32> {
  // expected-error @below {{'braid.sum_squares' has no tensor-parallel rule for operand #0 (argument #0) split 0}}
  %s = braid.sum_squares %a, %b : tensor<4x4xf32>, tensor<4xf32> -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// expected-error @below {{@gone is partitioned over @mesh, which the module does not declare}}
func.func @gone(%x: tensor<4x4xf32> {braid.sharding = #braid.sharding<split_axes = [[1, 0]]>})
    attributes {braid.tensor_parallel = #braid.tensor_parallel<grid = @mesh, axis = 1>} {
  return
}
