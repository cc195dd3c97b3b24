shard.grid @world(shape = 8)

func.func @f(%g: tensor<1024xf32>) -> tensor<1024xf32> {
  %0 = braid.all_reduce %g on @world grid_axes = [1] reduction = avg : tensor<1024xf32>
  return %0 : tensor<1024xf32>
}
