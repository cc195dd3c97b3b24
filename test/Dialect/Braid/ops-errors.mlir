// RUN: braid-opt %s --split-input-file --verify-diagnostics

func.func @matmul_lhs_rank(%a: tensor<8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @below {{'braid.matmul' op lhs must have rank 2 or more, but has rank 1}}
  // expected-error @below {{'braid.matmul' op failed to infer returned types}}
  %0 = braid.matmul %a, %b : tensor<8xf32>, tensor<8x4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @matmul_rhs_rank(%a: tensor<2x8xf32>, %b: tensor<8xf32>) {
  // expected-error @below {{rhs must have rank 2 or more, but has rank 1}}
  // expected-error @below {{'braid.matmul' op failed to infer returned types}}
  %0 = braid.matmul %a, %b : tensor<2x8xf32>, tensor<8xf32> -> tensor<2xf32>
  return
}

// -----

func.func @matmul_operand_types(%a: tensor<2x8xf32>, %b: tensor<8x4xbf16>) {
  // expected-error @below {{lhs element type 'f32' differs from rhs element type 'bf16'}}
  %0 = braid.matmul %a, %b : tensor<2x8xf32>, tensor<8x4xbf16> -> tensor<2x4xf32>
  return
}

// -----

func.func @matmul_result_type(%a: tensor<2x8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @below {{'braid.matmul' op inferred type(s) 'tensor<2x4xf32>' are incompatible with return type(s) of operation 'tensor<2x4xbf16>'}}
  // expected-error @below {{'braid.matmul' op failed to infer returned types}}
  %0 = braid.matmul %a, %b : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xbf16>
  return
}

// -----

func.func @matmul_batch(%a: tensor<3x2x8xf32>, %b: tensor<4x8x4xf32>) {
  // expected-error @below {{batch dimensions 3 of lhs and 4 of rhs differ (rhs may also have rank 2)}}
  // expected-error @below {{'braid.matmul' op failed to infer returned types}}
  %0 = braid.matmul %a, %b : tensor<3x2x8xf32>, tensor<4x8x4xf32> -> tensor<3x2x4xf32>
  return
}

// -----

func.func @matmul_contracting(%a: tensor<2x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error @below {{contracting sizes differ: lhs has 8, rhs has 4}}
  // expected-error @below {{'braid.matmul' op failed to infer returned types}}
  %0 = braid.matmul %a, %b : tensor<2x8xf32>, tensor<4x8xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @matmul_result_shape(%a: tensor<2x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error @below {{'braid.matmul' op inferred type(s) 'tensor<2x4xf32>' are incompatible with return type(s) of operation 'tensor<2x8xf32>'}}
  // expected-error @below {{'braid.matmul' op failed to infer returned types}}
  %0 = braid.matmul %a, %b {transpose_b} : tensor<2x8xf32>, tensor<4x8xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @elementwise_types(%a: tensor<2x8xf32>, %b: tensor<2x4xf32>) {
  // expected-error @below {{requires the same type for all operands and results}}
  %0 = "braid.add"(%a, %b) : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @integer_compute(%a: tensor<2x8xi32>) {
  // expected-error @below {{operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2x8xi32>'}}
  %0 = braid.relu %a : tensor<2x8xi32>
  return
}

// -----

func.func @dynamic_shape(%a: tensor<?x8xf32>) {
  // expected-error @below {{must be statically shaped tensor}}
  %0 = braid.relu %a : tensor<?x8xf32>
  return
}

// -----

func.func @bias_add_scalar_input(%a: tensor<f32>, %b: tensor<1xf32>) {
  // expected-error @below {{input must have rank 1 or more}}
  %0 = braid.bias_add %a, %b : tensor<f32>, tensor<1xf32>
  return
}

// -----

func.func @bias_add_shape(%a: tensor<2x8xf32>, %b: tensor<1x8xf32>) {
  // expected-error @below {{bias shape [1, 8] differs from the input's last 2 dimensions [2, 8]}}
  %0 = braid.bias_add %a, %b : tensor<2x8xf32>, tensor<1x8xf32>
  return
}

// -----

func.func @bias_add_rank(%a: tensor<2x8xf32>, %b: tensor<1x2x8xf32>) {
  // expected-error @below {{bias must have rank 1 to 2 (the input's), but has rank 3}}
  %0 = braid.bias_add %a, %b : tensor<2x8xf32>, tensor<1x2x8xf32>
  return
}

// -----

func.func @bias_add_scalar_bias(%a: tensor<2x8xf32>, %b: tensor<f32>) {
  // expected-error @below {{bias must have rank 1 to 2 (the input's), but has rank 0}}
  %0 = braid.bias_add %a, %b : tensor<2x8xf32>, tensor<f32>
  return
}

// -----

func.func @gelu_bias_rank(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error @below {{'braid.gelu' op bias must have rank 1, but has rank 2}}
  %0 = braid.gelu %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
  return
}

// -----

func.func @bias_add_size(%a: tensor<2x8xf32>, %b: tensor<2xf32>) {
  // expected-error @below {{bias size 2 differs from the last dimension of the input (8)}}
  %0 = braid.bias_add %a, %b : tensor<2x8xf32>, tensor<2xf32>
  return
}

// -----

func.func @bias_add_type(%a: tensor<2x8xf32>, %b: tensor<8xbf16>) {
  // expected-error @below {{input element type 'f32' differs from bias element type 'bf16'}}
  %0 = braid.bias_add %a, %b : tensor<2x8xf32>, tensor<8xbf16>
  return
}

// -----

func.func @cast_shape(%a: tensor<2x8xf32>) {
  // expected-error @below {{result has shape 8x2, expected 2x8}}
  %0 = braid.cast %a : tensor<2x8xf32> -> tensor<8x2xbf16>
  return
}

// -----

// A cast converts between float types only (mixed precision's f32, bf16,
// f16); integers are not values braid computes with.
func.func @cast_to_integer(%a: tensor<4xf32>) {
  // expected-error @below {{result #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xi32>'}}
  %0 = braid.cast %a : tensor<4xf32> -> tensor<4xi32>
  return
}

// -----

func.func @reduce_no_dims(%a: tensor<2x8xf32>) {
  // expected-error @below {{dims must not be empty}}
  // expected-error @below {{'braid.reduce_sum' op failed to infer returned types}}
  %0 = braid.reduce_sum %a dims = [] : tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @reduce_dim_range(%a: tensor<2x8xf32>) {
  // expected-error @below {{reduced dimension 2 is out of range for rank 2}}
  // expected-error @below {{'braid.reduce_mean' op failed to infer returned types}}
  %0 = braid.reduce_mean %a dims = [2] : tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @reduce_dim_order(%a: tensor<2x8xf32>) {
  // expected-error @below {{dims must be strictly increasing, but 0 follows 1}}
  // expected-error @below {{'braid.reduce_sum' op failed to infer returned types}}
  %0 = braid.reduce_sum %a dims = [1, 0] : tensor<2x8xf32> -> tensor<f32>
  return
}

// -----

func.func @reduce_type(%a: tensor<2x8xf32>) {
  // expected-error @below {{'braid.reduce_sum' op inferred type(s) 'tensor<8xf32>' are incompatible with return type(s) of operation 'tensor<8xbf16>'}}
  // expected-error @below {{'braid.reduce_sum' op failed to infer returned types}}
  %0 = braid.reduce_sum %a dims = [0] : tensor<2x8xf32> -> tensor<8xbf16>
  return
}

// -----

func.func @reduce_shape(%a: tensor<2x8xf32>) {
  // expected-error @below {{'braid.reduce_sum' op inferred type(s) 'tensor<1x8xf32>' are incompatible with return type(s) of operation 'tensor<8xf32>'}}
  // expected-error @below {{'braid.reduce_sum' op failed to infer returned types}}
  %0 = braid.reduce_sum %a dims = [0] {keep_dims} : tensor<2x8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @softmax_dim(%a: tensor<2x8xf32>) {
  // expected-error @below {{'braid.softmax' op dim 2 is out of range for rank 2}}
  %0 = braid.softmax %a dim = 2 : tensor<2x8xf32>
  return
}

// -----

func.func @softmax_backward_dim(%a: tensor<2x8xf32>) {
  // expected-error @below {{'braid.softmax_backward' op dim -1 is out of range for rank 2}}
  %0 = braid.softmax_backward %a, %a dim = -1 : tensor<2x8xf32>
  return
}

// -----

func.func @log_softmax_dim(%a: tensor<2x8xf32>) {
  // expected-error @below {{'braid.log_softmax' op dim 5 is out of range for rank 2}}
  %0 = braid.log_softmax %a dim = 5 : tensor<2x8xf32>
  return
}

// -----

func.func @log_softmax_backward_dim(%a: tensor<2x8xf32>) {
  // expected-error @below {{'braid.log_softmax_backward' op dim 2 is out of range for rank 2}}
  %0 = braid.log_softmax_backward %a, %a dim = 2 : tensor<2x8xf32>
  return
}

// -----

func.func @causal_mask_rank(%a: tensor<8xf32>) {
  // expected-error @below {{input must have rank 2 or more, but has rank 1}}
  %0 = braid.causal_mask %a fill = 0.0 : tensor<8xf32>
  return
}

// -----

func.func @causal_mask_square(%a: tensor<2x4x8xf32>) {
  // expected-error @below {{the last two dimensions must be equal, but are 4 and 8}}
  %0 = braid.causal_mask %a fill = 0.0 : tensor<2x4x8xf32>
  return
}

// -----

func.func @layer_norm_eps(%x: tensor<4x16xf32>, %g: tensor<16xf32>) {
  // expected-error @below {{epsilon must be positive, but is 0}}
  %y, %m, %r = braid.layer_norm %x, %g, %g eps = 0.0 : tensor<4x16xf32>, tensor<16xf32> -> tensor<4xf32>
  return
}

// -----

func.func @layer_norm_gamma_rank(%x: tensor<16xf32>, %g: tensor<1x16xf32>) {
  // expected-error @below {{gamma must have rank between 1 and the input's rank (1), but has rank 2}}
  %y, %m, %r = braid.layer_norm %x, %g, %g eps = 1.0e-5 : tensor<16xf32>, tensor<1x16xf32> -> tensor<f32>
  return
}

// -----

func.func @layer_norm_gamma_shape(%x: tensor<4x16xf32>, %g: tensor<8xf32>) {
  // expected-error @below {{gamma shape 8 differs from the trailing dimensions of the input (16)}}
  %y, %m, %r = braid.layer_norm %x, %g, %g eps = 1.0e-5 : tensor<4x16xf32>, tensor<8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @layer_norm_gamma_type(%x: tensor<4x16xf32>, %g: tensor<16xbf16>) {
  // expected-error @below {{input element type 'f32' differs from gamma element type 'bf16'}}
  %y, %m, %r = braid.layer_norm %x, %g, %g eps = 1.0e-5 : tensor<4x16xf32>, tensor<16xbf16> -> tensor<4xf32>
  return
}

// -----

func.func @layer_norm_stats(%x: tensor<4x16xf32>, %g: tensor<16xf32>) {
  // expected-error @below {{mean has shape 16, expected 4}}
  %y, %m, %r = braid.layer_norm %x, %g, %g eps = 1.0e-5 : tensor<4x16xf32>, tensor<16xf32> -> tensor<16xf32>
  return
}

// -----

func.func @layer_norm_backward_stats(%x: tensor<4x16xf32>, %g: tensor<16xf32>, %m: tensor<2xf32>) {
  // expected-error @below {{'braid.layer_norm_backward' op mean has shape 2, expected 4}}
  %0:3 = braid.layer_norm_backward %x, %x, %m, %m, %g : tensor<4x16xf32>, tensor<2xf32>, tensor<16xf32>
  return
}

// -----

func.func @nll_loss_rank(%x: tensor<4x8x16xf32>, %l: tensor<4xi64>) {
  // expected-error @below {{'braid.nll_loss' op input must have rank 2 ([N, C]), but has rank 3}}
  %0 = braid.nll_loss %x, %l reduction = mean : tensor<4x8x16xf32>, tensor<4xi64> -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_labels(%x: tensor<4x16xf32>, %l: tensor<8xi64>) {
  // expected-error @below {{'braid.cross_entropy' op labels have shape 8, expected 4}}
  %0 = braid.cross_entropy %x, %l reduction = sum : tensor<4x16xf32>, tensor<8xi64> -> tensor<f32>
  return
}

// -----

func.func @nll_loss_backward_labels(%d: tensor<f32>, %x: tensor<4x16xf32>, %l: tensor<4x1xi64>) {
  // expected-error @below {{'braid.nll_loss_backward' op labels have shape 4x1, expected 4}}
  %0 = braid.nll_loss_backward %d, %x, %l reduction = mean : tensor<f32>, tensor<4x16xf32>, tensor<4x1xi64>
  return
}

// -----

func.func @cross_entropy_backward_rank(%d: tensor<f32>, %x: tensor<16xf32>, %l: tensor<16xi64>) {
  // expected-error @below {{'braid.cross_entropy_backward' op input must have rank 2 ([N, C]), but has rank 1}}
  %0 = braid.cross_entropy_backward %d, %x, %l reduction = mean : tensor<f32>, tensor<16xf32>, tensor<16xi64>
  return
}

// -----

func.func @loss_float_labels(%x: tensor<4x16xf32>, %l: tensor<4xf32>) {
  // expected-error @below {{operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = "braid.cross_entropy"(%x, %l) : (tensor<4x16xf32>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

func.func @embedding_table_rank(%t: tensor<100xf32>, %i: tensor<4xi64>) {
  // expected-error @below {{table must have rank 2 ([V, D]), but has rank 1}}
  // expected-error @below {{'braid.embedding' op failed to infer returned types}}
  %0 = braid.embedding %t, %i : tensor<100xf32>, tensor<4xi64> -> tensor<4xf32>
  return
}

// -----

func.func @embedding_type(%t: tensor<100x16xf32>, %i: tensor<4xi64>) {
  // expected-error @below {{'braid.embedding' op inferred type(s) 'tensor<4x16xf32>' are incompatible with return type(s) of operation 'tensor<4x16xbf16>'}}
  // expected-error @below {{'braid.embedding' op failed to infer returned types}}
  %0 = braid.embedding %t, %i : tensor<100x16xf32>, tensor<4xi64> -> tensor<4x16xbf16>
  return
}

// -----

func.func @embedding_shape(%t: tensor<100x16xf32>, %i: tensor<4xi64>) {
  // expected-error @below {{'braid.embedding' op inferred type(s) 'tensor<4x16xf32>' are incompatible with return type(s) of operation 'tensor<4x8xf32>'}}
  // expected-error @below {{'braid.embedding' op failed to infer returned types}}
  %0 = braid.embedding %t, %i : tensor<100x16xf32>, tensor<4xi64> -> tensor<4x8xf32>
  return
}

// -----

func.func @shard_slice_dim(%x: tensor<4x8xf32>, %ix: tensor<i64>) {
  // expected-error @below {{'braid.shard_slice' op dim 2 is out of range for rank 2}}
  %0 = braid.shard_slice %x, %ix dim = 2 parts = 2 : tensor<4x8xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @shard_slice_divide(%x: tensor<4x8xf32>, %ix: tensor<i64>) {
  // expected-error @below {{'braid.shard_slice' op dimension 1 of size 8 does not divide into 3 parts}}
  %0 = braid.shard_slice %x, %ix dim = 1 parts = 3 : tensor<4x8xf32> -> tensor<4x2xf32>
  return
}

// -----

func.func @shard_slice_shape(%x: tensor<4x8xf32>, %ix: tensor<i64>) {
  // expected-error @below {{'braid.shard_slice' op result has shape 4x2, expected 4x4}}
  %0 = braid.shard_slice %x, %ix dim = 1 parts = 2 : tensor<4x8xf32> -> tensor<4x2xf32>
  return
}

// -----

func.func @shard_concat_empty(%ix: tensor<i64>) {
  // expected-error @below {{needs at least one piece}}
  // expected-error @below {{'braid.shard_concat' op failed to infer returned types}}
  %0 = "braid.shard_concat"(%ix) {dim = 0 : i64, shifts = array<i64>} : (tensor<i64>) -> tensor<2xf32>
  return
}

// -----

func.func @shard_concat_piece(%a: tensor<2x8xf32>, %b: tensor<2x4xf32>, %ix: tensor<i64>) {
  // expected-error @below {{'braid.shard_concat' op piece #1 has type 'tensor<2x4xf32>', piece #0 has 'tensor<2x8xf32>'}}
  // expected-error @below {{'braid.shard_concat' op failed to infer returned types}}
  %0 = braid.shard_concat %a, %b at %ix dim = 0 shifts = [0, 1] : tensor<2x8xf32>, tensor<2x4xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @shard_concat_dim(%a: tensor<2x8xf32>, %ix: tensor<i64>) {
  // expected-error @below {{'braid.shard_concat' op dim 2 is out of range for rank 2}}
  // expected-error @below {{'braid.shard_concat' op failed to infer returned types}}
  %0 = braid.shard_concat %a, %a at %ix dim = 2 shifts = [0, 1] : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @shard_concat_shifts(%a: tensor<2x8xf32>, %ix: tensor<i64>) {
  // expected-error @below {{'braid.shard_concat' op has 1 shifts for 2 pieces}}
  // expected-error @below {{'braid.shard_concat' op failed to infer returned types}}
  %0 = braid.shard_concat %a, %a at %ix dim = 0 shifts = [0] : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @shard_concat_twice(%a: tensor<2x8xf32>, %ix: tensor<i64>) {
  // expected-error @below {{'braid.shard_concat' op shift -1 fills a block another shift fills (modulo 2)}}
  // expected-error @below {{'braid.shard_concat' op failed to infer returned types}}
  %0 = braid.shard_concat %a, %a at %ix dim = 0 shifts = [1, -1] : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @shard_concat_result(%a: tensor<2x8xf32>, %ix: tensor<i64>) {
  // expected-error @below {{'braid.shard_concat' op inferred type(s) 'tensor<4x8xf32>' are incompatible with return type(s) of operation 'tensor<2x16xf32>'}}
  // expected-error @below {{'braid.shard_concat' op failed to infer returned types}}
  %0 = braid.shard_concat %a, %a at %ix dim = 0 shifts = [0, 1] : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x16xf32>
  return
}

// -----

func.func @embedding_shard_parts(%t: tensor<100x16xf32>, %i: tensor<4xi64>, %ix: tensor<i64>) {
  // expected-error @below {{'braid.embedding_shard' op parts must be positive, but is 0}}
  %0 = braid.embedding_shard %t, %i, %ix parts = 0 : tensor<100x16xf32>, tensor<4xi64> -> tensor<4x16xf32>
  return
}

// -----

func.func @cross_entropy_shard_stats_shape(%x: tensor<4x16xf32>, %l: tensor<4xi64>, %ix: tensor<i64>) {
  // expected-error @below {{'braid.cross_entropy_shard_stats' op stats have shape 2x4x3, expected [1, 4, 3]}}
  %0 = braid.cross_entropy_shard_stats %x, %l, %ix parts = 2 : tensor<4x16xf32>, tensor<4xi64> -> tensor<2x4x3xf32>
  return
}

// -----

func.func @cross_entropy_shard_backward_stats(%d: tensor<f32>, %x: tensor<4x16xf32>, %l: tensor<4xi64>, %s: tensor<2x8x3xf32>, %ix: tensor<i64>) {
  // expected-error @below {{'braid.cross_entropy_shard_backward' op stats have shape 2x8x3, expected [P, 4, 3]}}
  %0 = braid.cross_entropy_shard_backward %d, %x, %l, %s, %ix reduction = mean : tensor<f32>, tensor<4x16xf32>, tensor<4xi64>, tensor<2x8x3xf32>
  return
}

// -----

func.func @embedding_backward_shape(%d: tensor<4x8xf32>, %i: tensor<4xi64>) {
  // expected-error @below {{'braid.embedding_backward' op rows has shape 4x8, expected 4x16}}
  %0 = braid.embedding_backward %d, %i : tensor<4x8xf32>, tensor<4xi64> -> tensor<100x16xf32>
  return
}

// -----

func.func @embedding_backward_padding(%d: tensor<4x16xf32>, %i: tensor<4xi64>) {
  // expected-error @below {{'braid.embedding_backward' op padding_idx 100 is not a row of the table of 100 rows}}
  %0 = braid.embedding_backward %d, %i padding_idx = 100 : tensor<4x16xf32>, tensor<4xi64> -> tensor<100x16xf32>
  return
}

// -----

shard.grid @world(shape = 4)
func.func @embedding_shard_backward_padding(%d: tensor<4x16xf32>, %i: tensor<4xi64>) {
  %ix = braid.axis_index on @world grid_axes = [0] : tensor<i64>
  // expected-error @below {{'braid.embedding_shard_backward' op padding_idx -1 is not a row of the table of 400 rows}}
  %0 = braid.embedding_shard_backward %d, %i, %ix parts = 4 padding_idx = -1 : tensor<4x16xf32>, tensor<4xi64> -> tensor<100x16xf32>
  return
}

// -----

func.func @reshape_type(%a: tensor<2x8xf32>) {
  // expected-error @below {{input element type 'f32' differs from result element type 'bf16'}}
  %0 = braid.reshape %a : tensor<2x8xf32> -> tensor<16xbf16>
  return
}

// -----

func.func @reshape_size(%a: tensor<2x8xf32>) {
  // expected-error @below {{input has 16 elements but result has 15}}
  %0 = braid.reshape %a : tensor<2x8xf32> -> tensor<3x5xf32>
  return
}

// -----

func.func @transpose_length(%a: tensor<2x8xf32>) {
  // expected-error @below {{permutation has 3 entries for an input of rank 2}}
  // expected-error @below {{'braid.transpose' op failed to infer returned types}}
  %0 = braid.transpose %a permutation = [0, 1, 2] : tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @transpose_range(%a: tensor<2x8xf32>) {
  // expected-error @below {{permutation entry 2 is out of range for rank 2}}
  // expected-error @below {{'braid.transpose' op failed to infer returned types}}
  %0 = braid.transpose %a permutation = [2, 0] : tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @transpose_repeat(%a: tensor<2x8xf32>) {
  // expected-error @below {{permutation repeats dimension 0}}
  // expected-error @below {{'braid.transpose' op failed to infer returned types}}
  %0 = braid.transpose %a permutation = [0, 0] : tensor<2x8xf32> -> tensor<2x2xf32>
  return
}

// -----

func.func @transpose_type(%a: tensor<2x8xf32>) {
  // expected-error @below {{'braid.transpose' op inferred type(s) 'tensor<8x2xf32>' are incompatible with return type(s) of operation 'tensor<8x2xf16>'}}
  // expected-error @below {{'braid.transpose' op failed to infer returned types}}
  %0 = braid.transpose %a permutation = [1, 0] : tensor<2x8xf32> -> tensor<8x2xf16>
  return
}

// -----

func.func @transpose_shape(%a: tensor<2x8xf32>) {
  // expected-error @below {{'braid.transpose' op inferred type(s) 'tensor<8x2xf32>' are incompatible with return type(s) of operation 'tensor<2x8xf32>'}}
  // expected-error @below {{'braid.transpose' op failed to infer returned types}}
  %0 = braid.transpose %a permutation = [1, 0] : tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @broadcast_rank(%a: tensor<8xf32>) {
  // expected-error @below {{input rank 1 plus 2 new dimensions differs from result rank 2}}
  %0 = braid.broadcast %a dims = [0, 1] : tensor<8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @broadcast_range(%a: tensor<8xf32>) {
  // expected-error @below {{new dimension 2 is out of range for rank 2}}
  %0 = braid.broadcast %a dims = [2] : tensor<8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @broadcast_order(%a: tensor<8xf32>) {
  // expected-error @below {{dims must be strictly increasing, but 0 follows 1}}
  %0 = braid.broadcast %a dims = [1, 0] : tensor<8xf32> -> tensor<4x3x8xf32>
  return
}

// -----

func.func @broadcast_kept(%a: tensor<8xf32>) {
  // expected-error @below {{result dimensions 4 other than the new ones differ from the input shape 8}}
  %0 = braid.broadcast %a dims = [1] : tensor<8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @broadcast_type(%a: tensor<8xf32>) {
  // expected-error @below {{input element type 'f32' differs from result element type 'bf16'}}
  %0 = braid.broadcast %a dims = [0] : tensor<8xf32> -> tensor<4x8xbf16>
  return
}

// -----

func.func @slice_rank(%a: tensor<2x8xf32>) {
  // expected-error @below {{result rank 1 differs from input rank 2}}
  %0 = braid.slice %a offsets = [0, 0] : tensor<2x8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @slice_offsets(%a: tensor<2x8xf32>) {
  // expected-error @below {{needs 2 offsets and strides, one per dimension}}
  %0 = braid.slice %a offsets = [0] : tensor<2x8xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @slice_stride(%a: tensor<2x8xf32>) {
  // expected-error @below {{stride 0 of dimension 1 must be positive}}
  %0 = braid.slice %a offsets = [0, 0] strides = [1, 0] : tensor<2x8xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @slice_bounds(%a: tensor<2x8xf32>) {
  // expected-error @below {{dimension 1 reads from offset 6 4 elements with stride 1, past the input size 8}}
  %0 = braid.slice %a offsets = [0, 6] : tensor<2x8xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @slice_type(%a: tensor<2x8xf32>) {
  // expected-error @below {{input element type 'f32' differs from result element type 'bf16'}}
  %0 = braid.slice %a offsets = [0, 0] : tensor<2x8xf32> -> tensor<2x4xbf16>
  return
}

// -----

func.func @concat_empty() {
  // expected-error @below {{needs at least one input}}
  // expected-error @below {{'braid.concat' op failed to infer returned types}}
  %0 = "braid.concat"() {dim = 0 : i64} : () -> tensor<2xf32>
  return
}

// -----

func.func @concat_dim(%a: tensor<2x8xf32>) {
  // expected-error @below {{dim 2 is out of range for rank 2}}
  // expected-error @below {{'braid.concat' op failed to infer returned types}}
  %0 = braid.concat %a, %a dim = 2 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @concat_rank(%a: tensor<2x8xf32>, %b: tensor<8xf32>) {
  // expected-error @below {{'braid.concat' op input #1 has rank 1, input #0 has rank 2}}
  // expected-error @below {{'braid.concat' op failed to infer returned types}}
  %0 = braid.concat %a, %b dim = 0 : tensor<2x8xf32>, tensor<8xf32> -> tensor<3x8xf32>
  return
}

// -----

func.func @concat_type(%a: tensor<2x8xf32>, %b: tensor<2x8xbf16>) {
  // expected-error @below {{'braid.concat' op input #1 element type 'bf16' differs from input #0's element type 'f32'}}
  // expected-error @below {{'braid.concat' op failed to infer returned types}}
  %0 = braid.concat %a, %b dim = 0 : tensor<2x8xf32>, tensor<2x8xbf16> -> tensor<4x8xf32>
  return
}

// -----

func.func @concat_other_dim(%a: tensor<2x8xf32>, %b: tensor<2x4xf32>) {
  // expected-error @below {{'braid.concat' op input #1 has size 4 in dimension 1, input #0 has 8}}
  // expected-error @below {{'braid.concat' op failed to infer returned types}}
  %0 = braid.concat %a, %b dim = 0 : tensor<2x8xf32>, tensor<2x4xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @concat_total(%a: tensor<2x8xf32>) {
  // expected-error @below {{'braid.concat' op inferred type(s) 'tensor<4x8xf32>' are incompatible with return type(s) of operation 'tensor<5x8xf32>'}}
  // expected-error @below {{'braid.concat' op failed to infer returned types}}
  %0 = braid.concat %a, %a dim = 0 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<5x8xf32>
  return
}

// -----

func.func @sgd_lr(%p: tensor<4xf32>) {
  // expected-error @below {{lr must be non-negative, but is -5.000000e-01}}
  %0:2 = braid.sgd %p, %p, %p lr = -0.5 momentum = 0.9 weight_decay = 0.0 : tensor<4xf32>
  return
}

// -----

func.func @sgd_momentum(%p: tensor<4xf32>) {
  // expected-error @below {{momentum must be non-negative, but is -5.000000e-01}}
  %0:2 = braid.sgd %p, %p, %p lr = 0.1 momentum = -0.5 weight_decay = 0.0 : tensor<4xf32>
  return
}

// -----

func.func @sgd_weight_decay(%p: tensor<4xf32>) {
  // expected-error @below {{weight_decay must be non-negative, but is -1}}
  %0:2 = braid.sgd %p, %p, %p lr = 0.1 momentum = 0.9 weight_decay = -1.0 : tensor<4xf32>
  return
}

// -----

func.func @sgd_dampening(%p: tensor<4xf32>) {
  // expected-error @below {{dampening must be in [0, 1], but is 2}}
  %0:2 = braid.sgd %p, %p, %p lr = 0.1 momentum = 0.9 weight_decay = 0.0 {dampening = 2.0} : tensor<4xf32>
  return
}

// -----

func.func @sgd_nesterov(%p: tensor<4xf32>) {
  // expected-error @below {{nesterov needs a positive momentum and zero dampening}}
  %0:2 = braid.sgd %p, %p, %p lr = 0.1 momentum = 0.0 weight_decay = 0.0 {nesterov} : tensor<4xf32>
  return
}

// -----

func.func @sgd_types(%p: tensor<4xf32>, %g: tensor<4xbf16>) {
  // expected-error @below {{all of {param, grad, momentum_buffer, new_param, new_momentum_buffer} have same type}}
  %0:2 = "braid.sgd"(%p, %g, %p) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> {lr = 0.1, momentum = 0.9, weight_decay = 0.0} : (tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adamw_lr(%p: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @below {{lr must be non-negative, but is -1}}
  %0:3 = braid.adamw %p, %p, %p, %p, %s lr = -1.0 beta1 = 0.9 beta2 = 0.999 eps = 1.0e-8 weight_decay = 0.0 : tensor<4xf32>, tensor<f32>
  return
}

// -----

func.func @sgd_two_lrs(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @below {{has both a constant lr and a scheduled lr operand; give one}}
  %0:2 = "braid.sgd"(%p, %p, %p, %lr) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>}> {lr = 0.1, momentum = 0.9, weight_decay = 0.0} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adamw_no_lr(%p: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @below {{has no learning rate: give lr = <constant> or lr = <scalar f32 operand>}}
  %0:3 = "braid.adamw"(%p, %p, %p, %p, %s) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0>}> {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adamw_lr_not_scalar(%p: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @below {{operand #5 must be 0D tensor of 32-bit float values}}
  %0:3 = "braid.adamw"(%p, %p, %p, %p, %s, %p) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0>}> {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @sum_squares_none() {
  // expected-error @below {{needs at least one input}}
  %s = "braid.sum_squares"() : () -> tensor<f32>
  return
}

// -----

func.func @clip_max_norm(%s: tensor<f32>) {
  // expected-error @below {{max_norm must be positive and finite, but is 0}}
  %c = braid.clip_coefficient %s max_norm = 0.0 : tensor<f32>
  return
}

// -----

func.func @lion_beta1(%p: tensor<4xf32>) {
  // expected-error @below {{beta1 must be in [0, 1], but is 1.5}}
  %0:2 = braid.lion %p, %p, %p lr = 1.0e-4 beta1 = 1.5 beta2 = 0.99 weight_decay = 0.0 : tensor<4xf32>
  return
}

// -----

func.func @lion_beta2(%p: tensor<4xf32>) {
  // expected-error @below {{beta2 must be in [0, 1], but is -1}}
  %0:2 = braid.lion %p, %p, %p lr = 1.0e-4 beta1 = 0.9 beta2 = -1.0 weight_decay = 0.0 : tensor<4xf32>
  return
}

// -----

func.func @lion_weight_decay(%p: tensor<4xf32>) {
  // expected-error @below {{weight_decay must be non-negative, but is -1}}
  %0:2 = braid.lion %p, %p, %p lr = 1.0e-4 beta1 = 0.9 beta2 = 0.99 weight_decay = -1.0 : tensor<4xf32>
  return
}

// -----

func.func @lion_lr(%p: tensor<4xf32>) {
  // expected-error @below {{lr must be non-negative, but is -1}}
  %0:2 = braid.lion %p, %p, %p lr = -1.0 beta1 = 0.9 beta2 = 0.99 weight_decay = 0.0 : tensor<4xf32>
  return
}

// -----

func.func @adamw_beta1(%p: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @below {{beta1 must be in [0, 1), but is 1}}
  %0:3 = braid.adamw %p, %p, %p, %p, %s lr = 1.0e-3 beta1 = 1.0 beta2 = 0.999 eps = 1.0e-8 weight_decay = 0.0 : tensor<4xf32>, tensor<f32>
  return
}

// -----

func.func @adamw_beta2(%p: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @below {{beta2 must be in [0, 1), but is -5.000000e-01}}
  %0:3 = braid.adamw %p, %p, %p, %p, %s lr = 1.0e-3 beta1 = 0.9 beta2 = -0.5 eps = 1.0e-8 weight_decay = 0.0 : tensor<4xf32>, tensor<f32>
  return
}

// -----

func.func @adamw_eps(%p: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @below {{eps must be positive, but is 0}}
  %0:3 = braid.adamw %p, %p, %p, %p, %s lr = 1.0e-3 beta1 = 0.9 beta2 = 0.999 eps = 0.0 weight_decay = 0.0 : tensor<4xf32>, tensor<f32>
  return
}

// -----

func.func @adamw_weight_decay(%p: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @below {{weight_decay must be non-negative, but is -1.000000e-01}}
  %0:3 = braid.adamw %p, %p, %p, %p, %s lr = 1.0e-3 beta1 = 0.9 beta2 = 0.999 eps = 1.0e-8 weight_decay = -0.1 : tensor<4xf32>, tensor<f32>
  return
}

// -----

func.func @adamw_step(%p: tensor<4xf32>) {
  // expected-error @below {{operand #4 must be 0D tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xf32>'}}
  %0:3 = braid.adamw %p, %p, %p, %p, %p lr = 1.0e-3 beta1 = 0.9 beta2 = 0.999 eps = 1.0e-8 weight_decay = 0.0 : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @unary_backward_kind(%g: tensor<4xf32>, %x: tensor<4xf32>) {
  // expected-error @below {{'braid.unary_backward' op has no form for 'exp' (only tanh, sigmoid and silu): its gradient is written with the forward ops and braid.mul or braid.div}}
  %0 = braid.unary_backward exp %g, %x : tensor<4xf32>
  return
}

// -----

func.func @unary_kind(%x: tensor<4xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [exp, log, sqrt, rsqrt, tanh, sigmoid, silu]}}
  %0 = braid.unary cosh %x : tensor<4xf32>
  return
}

// -----

func.func @where_condition_type(%c: tensor<4xf32>, %x: tensor<4xf32>) {
  // expected-error @below {{operand #0 must be statically shaped tensor of 1-bit signless integer values}}
  %0 = braid.where %c, %x, %x : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @where_shapes(%c: tensor<2xi1>, %x: tensor<4xf32>) {
  // expected-error @below {{failed to verify that all of {condition, result} have same shape}}
  %0 = braid.where %c, %x, %x : tensor<2xi1>, tensor<4xf32>
  return
}

// -----

func.func @dropout_mask_keep(%s: tensor<f32>, %r: tensor<i64>) {
  // expected-error @below {{'braid.dropout_mask' op keep probability 1.500000e+00 is not in [0, 1]}}
  %0 = braid.dropout_mask %s, %r keep = 1.5 seed = 0 stream = 0 : tensor<4xi1>
  return
}

// -----

func.func @dropout_mask_seed(%s: tensor<f32>, %r: tensor<i64>) {
  // expected-error @below {{seed -1 and stream 0 must be in [0, 2^32)}}
  %0 = braid.dropout_mask %s, %r keep = 0.5 seed = -1 stream = 0 : tensor<4xi1>
  return
}

// -----

func.func @softmax_causal_rank(%a: tensor<8xf32>) {
  // expected-error @below {{'braid.softmax' op causal needs rank 2 or more, but the input has rank 1}}
  %0 = braid.softmax %a dim = 0 {causal} : tensor<8xf32>
  return
}

// -----

func.func @softmax_causal_dim(%a: tensor<8x8xf32>) {
  // expected-error @below {{'braid.softmax' op causal needs dim to be the last dimension (1), but dim is 0}}
  %0 = braid.softmax %a dim = 0 {causal} : tensor<8x8xf32>
  return
}

// -----

func.func @softmax_backward_causal_square(%a: tensor<4x8xf32>) {
  // expected-error @below {{'braid.softmax_backward' op causal needs the last two dimensions to be equal, but they are 4 and 8}}
  %0 = braid.softmax_backward %a, %a dim = 1 {causal} : tensor<4x8xf32>
  return
}

// -----

func.func @gelu_bias_size(%a: tensor<4x8xf32>, %b: tensor<4xf32>) {
  // expected-error @below {{'braid.gelu' op bias size 4 differs from the last dimension of the input (8)}}
  %0 = braid.gelu %a, %b : tensor<4x8xf32>, tensor<4xf32>
  return
}

// -----

func.func @gelu_backward_bias_type(%a: tensor<4x8xf32>, %b: tensor<8xbf16>) {
  // expected-error @below {{'braid.gelu_backward' op input element type 'f32' differs from bias element type 'bf16'}}
  %0 = braid.gelu_backward %a, %a, %b : tensor<4x8xf32>, tensor<8xbf16>
  return
}

// -----

func.func @matmul_permutation_rank(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) {
  // expected-error @below {{'braid.matmul' op lhs_permutation has 2 entries for rank 3}}
  // expected-error @below {{'braid.matmul' op failed to infer returned types}}
  %0 = braid.matmul %a, %b {lhs_permutation = array<i64: 1, 0>} : tensor<2x3x4xf32>, tensor<2x4x5xf32> -> tensor<2x3x5xf32>
  return
}

// -----

func.func @matmul_permutation_repeats(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) {
  // expected-error @below {{'braid.matmul' op rhs_permutation 0x0x2 is not a permutation of 3 dimensions}}
  // expected-error @below {{'braid.matmul' op failed to infer returned types}}
  %0 = braid.matmul %a, %b {rhs_permutation = array<i64: 0, 0, 2>} : tensor<2x3x4xf32>, tensor<2x4x5xf32> -> tensor<2x3x5xf32>
  return
}

// -----

func.func @matmul_permutation_no_unit_stride(%a: tensor<4x3x2xf32>, %b: tensor<2x4x5xf32>) {
  // expected-error @below {{'braid.matmul' op lhs_permutation must put the operand's last dimension at one of the last two places, but is 2x1x0}}
  // expected-error @below {{'braid.matmul' op failed to infer returned types}}
  %0 = braid.matmul %a, %b {lhs_permutation = array<i64: 2, 1, 0>} : tensor<4x3x2xf32>, tensor<2x4x5xf32> -> tensor<2x3x5xf32>
  return
}

// -----

func.func @matmul_slice_entries(%a: tensor<4x3x2xf32>, %b: tensor<2x5xf32>) {
  // expected-error @below {{'braid.matmul' op lhs_slice must be [dim, offset, size], but has 2 entries}}
  // expected-error @below {{'braid.matmul' op failed to infer returned types}}
  %0 = braid.matmul %a, %b {lhs_slice = array<i64: 0, 1>} : tensor<4x3x2xf32>, tensor<2x5xf32> -> tensor<4x3x5xf32>
  return
}

// -----

func.func @matmul_slice_range(%a: tensor<4x3x2xf32>, %b: tensor<2x5xf32>) {
  // expected-error @below {{'braid.matmul' op lhs_slice takes 2 entries from 3 of dimension 0, which has 4}}
  // expected-error @below {{'braid.matmul' op failed to infer returned types}}
  %0 = braid.matmul %a, %b {lhs_slice = array<i64: 0, 3, 2>} : tensor<4x3x2xf32>, tensor<2x5xf32> -> tensor<2x3x5xf32>
  return
}

// -----

func.func @matmul_slice_matrix(%a: tensor<4x3x2xf32>, %b: tensor<4x2x5xf32>) {
  // expected-error @below {{'braid.matmul' op rhs_slice slices dimension 1, which the product reads as a matrix dimension; only a batch dimension can be sliced}}
  // expected-error @below {{'braid.matmul' op failed to infer returned types}}
  %0 = braid.matmul %a, %b {rhs_slice = array<i64: 1, 0, 1>} : tensor<4x3x2xf32>, tensor<4x2x5xf32> -> tensor<4x3x5xf32>
  return
}

// -----

// The slice is taken before the permutation: dimension 1 of the operand is
// the product's batch dimension, and its 2 entries the product's batch.
func.func @matmul_slice_batch(%a: tensor<3x4x2xf32>, %b: tensor<2x5xf32>) {
  // expected-error @below {{'braid.matmul' op inferred type(s) 'tensor<2x3x5xf32>' are incompatible with return type(s) of operation 'tensor<4x3x5xf32>'}}
  // expected-error @below {{'braid.matmul' op failed to infer returned types}}
  %0 = braid.matmul %a, %b {lhs_slice = array<i64: 1, 1, 2>, lhs_permutation = array<i64: 1, 0, 2>} : tensor<3x4x2xf32>, tensor<2x5xf32> -> tensor<4x3x5xf32>
  return
}

// -----

func.func @matmul_result_permutation(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) {
  // expected-error @below {{'braid.matmul' op result_permutation must store one of the product's last two dimensions last, but is 1x2x0}}
  // expected-error @below {{'braid.matmul' op failed to infer returned types}}
  %0 = braid.matmul %a, %b {result_permutation = array<i64: 1, 2, 0>} : tensor<2x3x4xf32>, tensor<2x4x5xf32> -> tensor<3x5x2xf32>
  return
}

// -----

func.func @matmul_result_permuted_shape(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) {
  // expected-error @below {{'braid.matmul' op inferred type(s) 'tensor<3x2x5xf32>' are incompatible with return type(s) of operation 'tensor<2x3x5xf32>'}}
  // expected-error @below {{'braid.matmul' op failed to infer returned types}}
  %0 = braid.matmul %a, %b {result_permutation = array<i64: 1, 0, 2>} : tensor<2x3x4xf32>, tensor<2x4x5xf32> -> tensor<2x3x5xf32>
  return
}
