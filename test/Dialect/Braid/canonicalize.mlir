// RUN: braid-opt %s --canonicalize | FileCheck %s

// The data-movement ops' folders: a reshape to its input's type is its
// input, a reshape of a reshape reads the first one's input; the identity
// transpose is its input, a transpose of a transpose is one transpose by
// the composed permutation (result dimension i is the innermost input's
// inner[outer[i]]), and none at all where that is the identity.
// CHECK-LABEL: func.func @views
// CHECK-NEXT: %[[R:.*]] = braid.reshape %arg0 : tensor<2x3x4xf32> -> tensor<24xf32>
// CHECK-NEXT: %[[T:.*]] = braid.transpose %arg0 permutation = [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT: return %[[R]], %arg0, %[[T]], %arg0, %arg0
func.func @views(%x: tensor<2x3x4xf32>)
    -> (tensor<24xf32>, tensor<2x3x4xf32>, tensor<4x2x3xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %a = braid.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %b = braid.reshape %a : tensor<6x4xf32> -> tensor<24xf32>
  %c = braid.reshape %x : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %t = braid.transpose %x permutation = [1, 0, 2] : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %u = braid.transpose %t permutation = [2, 1, 0] : tensor<3x2x4xf32> -> tensor<4x2x3xf32>
  %v = braid.transpose %t permutation = [1, 0, 2] : tensor<3x2x4xf32> -> tensor<2x3x4xf32>
  %w = braid.transpose %x permutation = [0, 1, 2] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %b, %c, %u, %v, %w : tensor<24xf32>, tensor<2x3x4xf32>, tensor<4x2x3xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

