func.func @f(%x: tensor<4x8xf32>, %w: tensor<16x4xf32>) {
  %0 = braid.matmul %x, %w : tensor<4x8xf32>, tensor<16x4xf32> -> tensor<4x4xf32>
  return
}
