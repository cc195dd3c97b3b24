func.func @f(%x: tensor<4xf32>) {
  %0 = braid.relu %x : tensor<4xf32
  return
}
