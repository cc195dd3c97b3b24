// RUN: braid-opt --braid-plan-memory=alignment=48 --verify-diagnostics %s
// A power of two too large to round sizes with (2^62 used to corrupt the
// packer's free list: a double free on the GPT example).
// RUN: not braid-opt --braid-plan-memory=alignment=4611686018427387904 %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=HUGE
// HUGE: braid-plan-memory: alignment must be a power of two from 1 to 4096, but is 4611686018427387904
// RUN: not braid-opt %examples/gpt.mlir --braid-overlap --braid-plan-memory=alignment=4611686018427387904 -o /dev/null 2>&1 | FileCheck %s --check-prefix=HUGE
// RUN: not braid-opt --braid-plan-memory=alignment=8192 %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=HUGE8K
// HUGE8K: but is 8192
// RUN: braid-opt --braid-plan-memory=alignment=4096 %s -o /dev/null

// expected-error @unknown {{braid-plan-memory: alignment must be a power of two from 1 to 4096, but is 48}}
module {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
