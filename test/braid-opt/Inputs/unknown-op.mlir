func.func @f(%x: tensor<4xf32>) {
  %0 = braid.tanh %x : tensor<4xf32>
  return
}
