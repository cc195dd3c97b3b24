// RUN: not braid-opt %s --braid-schedule=max-live-increase=-5 2>&1 | FileCheck %s --check-prefix=OPTION
// RUN: braid-opt %s --split-input-file --verify-diagnostics --braid-schedule

// OPTION: error: max-live-increase must be non-negative, but is -5

func.func @already_streamed(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{braid-schedule runs before braid-assign-streams, but this op already has a stream or is an event}}
  %0 = braid.relu %x {braid.stream = #braid.stream<compute, 0>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}
