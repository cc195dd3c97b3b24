// RUN: not braid-opt %s --braid-schedule=max-live-increase=-5 2>&1 | FileCheck %s --check-prefix=OPTION
// RUN: braid-opt %s --split-input-file --verify-diagnostics --braid-schedule

// OPTION: error: max-live-increase must be non-negative, but is -5

// expected-error @below {{braid scheduling needs a function body of one block, but @two_blocks has 2}}
func.func @two_blocks(%x: tensor<4xf32>) -> tensor<4xf32> {
  cf.br ^next
^next:
  return %x : tensor<4xf32>
}
