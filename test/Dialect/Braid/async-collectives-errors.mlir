// RUN: braid-opt %s --split-input-file --verify-diagnostics --braid-async-collectives

// expected-error @below {{braid scheduling needs a function body of one block, but @two_blocks has 2}}
func.func @two_blocks(%x: tensor<4xf32>) -> tensor<4xf32> {
  cf.br ^next
^next:
  return %x : tensor<4xf32>
}
