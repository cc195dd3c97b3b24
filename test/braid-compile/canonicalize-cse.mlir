// RUN: braid-compile %s --emit=mlir -o - | FileCheck %s

// braid-compile canonicalizes and runs cse on the per-rank program before
// fusing and scheduling: the reshape chain is one reshape and the
// repeated exp one op, read twice.
// CHECK-LABEL: func.func @step
// CHECK: %[[R:.*]] = braid.reshape %arg0 {{.*}}: tensor<4x6xf32> -> tensor<24xf32>
// CHECK-NEXT: %[[E:.*]] = braid.unary exp %[[R]]
// CHECK-NEXT: braid.add %[[E]], %[[E]]
// CHECK-NOT: braid.unary exp
func.func @step(%x: tensor<4x6xf32> {braid.role = #braid.role<batch "x">})
    -> (tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %a = braid.reshape %x : tensor<4x6xf32> -> tensor<2x12xf32>
  %b = braid.reshape %a : tensor<2x12xf32> -> tensor<24xf32>
  %e1 = braid.unary exp %b : tensor<24xf32>
  %e2 = braid.unary exp %b : tensor<24xf32>
  %s = braid.add %e1, %e2 : tensor<24xf32>
  %l = braid.reduce_sum %s dims = [0] : tensor<24xf32> -> tensor<f32>
  return %l : tensor<f32>
}
