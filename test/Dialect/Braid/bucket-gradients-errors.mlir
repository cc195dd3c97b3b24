// RUN: not braid-opt %s --braid-bucket-gradients=bucket-cap-mb=0 2>&1 | FileCheck %s --check-prefix=CAP
// RUN: not braid-opt %s --braid-bucket-gradients=first-bucket-cap-mb=-1 2>&1 | FileCheck %s --check-prefix=FIRST
// RUN: not braid-opt %s --braid-bucket-gradients=bucket-cap-mb=1e-9 2>&1 | FileCheck %s --check-prefix=TINY
// RUN: not braid-opt %s --braid-bucket-gradients=bucket-cap-mb=lots 2>&1 | FileCheck %s --check-prefix=WORD
// RUN: braid-opt %s --split-input-file --verify-diagnostics --braid-bucket-gradients

// CAP: error: bucket-cap-mb must be a positive number of MiB, but is 0
// FIRST: error: first-bucket-cap-mb must be positive, but is -1
// The option is a number: the option parser names a word.
// WORD: for the --bucket-cap-mb option: 'lots' value invalid for floating point argument
// TINY: error: bucket-cap-mb and first-bucket-cap-mb must be at least one byte

// expected-error @below {{braid scheduling needs a function body of one block, but @two_blocks has 2}}
func.func @two_blocks(%x: tensor<4xf32>) -> tensor<4xf32> {
  cf.br ^next
^next:
  return %x : tensor<4xf32>
}
