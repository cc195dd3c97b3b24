// A step whose step counts are not named "step": AdamW's reads "count"
// plus one, dropout's mask reads "draws"; "step" is a scalar optimizer
// state that is no step count (a loss scale, halved each step).
shard.grid @world(shape = 1)

func.func @step(%x: tensor<4x8xf32> {braid.role = #braid.role<batch "x">},
                %w: tensor<8x8xf32> {braid.role = #braid.role<parameter "w">},
                %m: tensor<8x8xf32> {braid.role = #braid.role<optimizer_state "w.exp_avg">},
                %v: tensor<8x8xf32> {braid.role = #braid.role<optimizer_state "w.exp_avg_sq">},
                %count: tensor<f32> {braid.role = #braid.role<optimizer_state "count">},
                %draws: tensor<f32> {braid.role = #braid.role<optimizer_state "draws">},
                %scale: tensor<f32> {braid.role = #braid.role<optimizer_state "step">})
    -> (tensor<8x8xf32> {braid.role = #braid.role<parameter "w">},
        tensor<8x8xf32> {braid.role = #braid.role<optimizer_state "w.exp_avg">},
        tensor<8x8xf32> {braid.role = #braid.role<optimizer_state "w.exp_avg_sq">},
        tensor<f32> {braid.role = #braid.role<optimizer_state "count">},
        tensor<f32> {braid.role = #braid.role<optimizer_state "draws">},
        tensor<f32> {braid.role = #braid.role<optimizer_state "step">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %rank = braid.axis_index on @world grid_axes = [0] : tensor<i64>
  %keep = braid.dropout_mask %draws, %rank keep = 5.000000e-01 seed = 1 stream = 0 : tensor<4x8xi1>
  %zero = braid.constant dense<0.000000e+00> : tensor<4x8xf32>
  %kept = braid.where %keep, %x, %zero : tensor<4x8xi1>, tensor<4x8xf32>
  %h = braid.matmul %kept, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %sum = braid.reduce_sum %h dims = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  %l = braid.mul %sum, %scale : tensor<f32>
  %ones = braid.constant dense<1.000000e+00> : tensor<4x8xf32>
  %g = braid.matmul %kept, %ones {transpose_a} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %r = braid.all_reduce %g on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<8x8xf32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %t = braid.add %count, %one : tensor<f32>
  %d = braid.add %draws, %one : tensor<f32>
  %half = braid.constant dense<5.000000e-01> : tensor<f32>
  %s = braid.mul %scale, %half : tensor<f32>
  %nw, %nm, %nv = braid.adamw %w, %r, %m, %v, %t lr = 1.000000e-03 beta1 = 9.000000e-01 beta2 = 9.990000e-01 eps = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<8x8xf32>, tensor<f32>
  return %nw, %nm, %nv, %t, %d, %s, %l : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
}
