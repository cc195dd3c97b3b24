// Two gradients: w1's (16 MiB, its AdamW update about 37 us on h100-8) is
// ready 640 us before w2's (8 KiB). For bucket-gradients-auto.mlir.
shard.grid @world(shape = 8)

func.func @late_update(
    %x: tensor<4096x2048xf32> {braid.role = #braid.role<batch "x">},
    %w1: tensor<2048x2048xf32> {braid.role = #braid.role<parameter "w1">},
    %w2: tensor<2048xf32> {braid.role = #braid.role<parameter "w2">},
    %m1: tensor<2048x2048xf32> {braid.role = #braid.role<optimizer_state "w1.exp_avg">},
    %v1: tensor<2048x2048xf32> {braid.role = #braid.role<optimizer_state "w1.exp_avg_sq">},
    %m2: tensor<2048xf32> {braid.role = #braid.role<optimizer_state "w2.exp_avg">},
    %v2: tensor<2048xf32> {braid.role = #braid.role<optimizer_state "w2.exp_avg_sq">},
    %step: tensor<f32> {braid.role = #braid.role<optimizer_state "step">})
    -> (tensor<2048x2048xf32> {braid.role = #braid.role<parameter "w1">},
        tensor<2048xf32> {braid.role = #braid.role<parameter "w2">}) {
  %g1 = braid.matmul %x, %x {transpose_a} : tensor<4096x2048xf32>, tensor<4096x2048xf32> -> tensor<2048x2048xf32>
  %r1 = braid.all_reduce %g1 on @world grid_axes = [0] reduction = avg grad_of = ["w1"] : tensor<2048x2048xf32>
  %y = braid.matmul %x, %w1 : tensor<4096x2048xf32>, tensor<2048x2048xf32> -> tensor<4096x2048xf32>
  %g2 = braid.reduce_sum %y dims = [0] : tensor<4096x2048xf32> -> tensor<2048xf32>
  %r2 = braid.all_reduce %g2 on @world grid_axes = [0] reduction = avg grad_of = ["w2"] : tensor<2048xf32>
  %n1, %nm1, %nv1 = braid.adamw %w1, %r1, %m1, %v1, %step lr = 1.000000e-03 beta1 = 9.000000e-01 beta2 = 9.990000e-01 eps = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<2048x2048xf32>, tensor<f32>
  %n2, %nm2, %nv2 = braid.adamw %w2, %r2, %m2, %v2, %step lr = 1.000000e-03 beta1 = 9.000000e-01 beta2 = 9.990000e-01 eps = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<2048xf32>, tensor<f32>
  return %n1, %n2 : tensor<2048x2048xf32>, tensor<2048xf32>
}
