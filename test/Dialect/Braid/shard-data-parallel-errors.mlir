// RUN: braid-opt %s --split-input-file --verify-diagnostics --braid-shard-data-parallel
// RUN: not braid-opt %s --split-input-file --braid-shard-data-parallel="stage=3" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=STAGE3

// STAGE3: error: ZeRO stage 3 is not supported by braid-shard-data-parallel (stages 0, 1 and 2 are; stage 3 shards the parameters too, and is not built yet)

// Something other than the update and clipping's sum of squares reads the
// average: a rank holds only its piece of it.
shard.grid @world(shape = 2)
func.func @other_reader(%w: tensor<4x4xf32> {braid.role = #braid.role<parameter "w">},
                        %m: tensor<4x4xf32> {braid.role = #braid.role<optimizer_state "w.momentum_buffer">})
    -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  // expected-note @below {{the average}}
  %g = braid.all_reduce %w on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<4x4xf32>
  // expected-error @below {{reads the data-parallel average of the gradient of 'w' besides its update and gradient clipping's sum of squares; braid-shard-data-parallel (ZeRO stage 1) gives each rank only its piece of that average}}
  %r = braid.relu %g : tensor<4x4xf32>
  %u:2 = braid.sgd %w, %g, %m lr = 0.1 momentum = 0.9 weight_decay = 0.0 : tensor<4x4xf32>
  return %u#0, %u#1, %r : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// Bucketing comes after: a bucket's all-reduce averages several gradients.
shard.grid @world(shape = 2)
func.func @bucketed(%w: tensor<4x4xf32> {braid.role = #braid.role<parameter "w">},
                    %m: tensor<4x4xf32> {braid.role = #braid.role<optimizer_state "w.momentum_buffer">},
                    %v: tensor<4x4xf32> {braid.role = #braid.role<parameter "v">})
    -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  // expected-error @below {{averages the gradient of 'w' with others (a bucket); run braid-shard-data-parallel before braid-bucket-gradients}}
  %g:2 = braid.all_reduce %w, %v on @world grid_axes = [0] reduction = avg grad_of = ["w", "v"] : tensor<4x4xf32>, tensor<4x4xf32>
  %u:2 = braid.sgd %w, %g#0, %m lr = 0.1 momentum = 0.9 weight_decay = 0.0 : tensor<4x4xf32>
  return %u#0, %u#1, %g#1 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// Two gradients averaged over different axes: no one data-parallel axis.
shard.grid @world(shape = 2x2)
func.func @two_axes(%w: tensor<4x4xf32> {braid.role = #braid.role<parameter "w">},
                    %m: tensor<4x4xf32> {braid.role = #braid.role<optimizer_state "w.momentum_buffer">},
                    %v: tensor<4x4xf32> {braid.role = #braid.role<parameter "v">},
                    %n: tensor<4x4xf32> {braid.role = #braid.role<optimizer_state "v.momentum_buffer">})
    -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  // expected-note @below {{and this one over [0] of @world}}
  %g = braid.all_reduce %w on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<4x4xf32>
  // expected-error @below {{braid-shard-data-parallel shards over one grid axis, but this gradient is averaged over grid axes [1] of @world}}
  %h = braid.all_reduce %v on @world grid_axes = [1] reduction = avg grad_of = ["v"] : tensor<4x4xf32>
  %u:2 = braid.sgd %w, %g, %m lr = 0.1 momentum = 0.9 weight_decay = 0.0 : tensor<4x4xf32>
  %t:2 = braid.sgd %v, %h, %n lr = 0.1 momentum = 0.9 weight_decay = 0.0 : tensor<4x4xf32>
  return %u#0, %u#1, %t#0, %t#1 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// A grid whose data-parallel size is not known until run time.
shard.grid @world(shape = ?)
func.func @dynamic(%w: tensor<4x4xf32> {braid.role = #braid.role<parameter "w">},
                   %m: tensor<4x4xf32> {braid.role = #braid.role<optimizer_state "w.momentum_buffer">})
    -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  // expected-error @below {{is averaged over axis 0 of @world, whose size is not known; braid-shard-data-parallel cuts pieces for a static number of ranks}}
  %g = braid.all_reduce %w on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<4x4xf32>
  %u:2 = braid.sgd %w, %g, %m lr = 0.1 momentum = 0.9 weight_decay = 0.0 : tensor<4x4xf32>
  return %u#0, %u#1 : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// The updated state read inside the step: only the step's results may
// read the pieces.
shard.grid @world(shape = 2)
func.func @state_read(%w: tensor<4x4xf32> {braid.role = #braid.role<parameter "w">},
                      %m: tensor<4x4xf32> {braid.role = #braid.role<optimizer_state "w.momentum_buffer">})
    -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %g = braid.all_reduce %w on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<4x4xf32>
  %u:2 = braid.sgd %w, %g, %m lr = 0.1 momentum = 0.9 weight_decay = 0.0 : tensor<4x4xf32>
  // expected-error @below {{reads the updated optimizer state of 'w', which braid-shard-data-parallel keeps as the rank's piece; only the step's results may}}
  %r = braid.relu %u#1 : tensor<4x4xf32>
  return %u#0, %u#1, %r : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

shard.grid @world(shape = 2)
// expected-error @below {{braid-shard-data-parallel needs a function body of one block, but @blocks has 2}}
func.func @blocks(%x: tensor<4xf32>) -> tensor<4xf32> {
  cf.br ^next
^next:
  return %x : tensor<4xf32>
}
