// RUN: braid-translate --braid-to-schedule-report --split-input-file --verify-diagnostics %s -o /dev/null

// expected-error @below {{the module has no step function}}
module {
  func.func private @external(tensor<4xf32>)
}

// -----

// expected-error @below {{a schedule report needs a function body of one block}}
func.func @two(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
^unreachable:
  return %x : tensor<4xf32>
}
