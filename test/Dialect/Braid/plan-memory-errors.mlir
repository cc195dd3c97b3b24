// RUN: braid-opt --braid-plan-memory=alignment=48 --verify-diagnostics %s

// expected-error @below {{braid-plan-memory: alignment must be a power of two, but is 48}}
module {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
