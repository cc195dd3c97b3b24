// RUN: braid-opt --braid-plan-memory --braid-share-arena %s | FileCheck %s
// RUN: braid-opt --braid-plan-memory --braid-share-arena=report %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// The evaluation program's parameter takes the step's bytes (offset 0);
// its other buffers, planned at 512..2048, would meet the step's batch
// (512), its updated parameter (1536) and its loss (2048): they move by
// the first multiple of 4096 past the step's arguments and results, and
// both functions report the arena of the two.
// CHECK-LABEL: func.func @step
// CHECK-SAME: {braid.offset = 0 : i64, braid.role = #braid.role<parameter "w">}
// CHECK-SAME: braid.arena_bytes = 6144 : i64
// CHECK: braid.sub {{.*}}braid.offsets = array<i64: 1536>
// CHECK-LABEL: func.func @step_eval
// CHECK-SAME: {braid.offset = 0 : i64, braid.role = #braid.role<parameter "w">}
// CHECK-SAME: {braid.offset = 4608 : i64, braid.role = #braid.role<batch "x">}
// CHECK-SAME: braid.arena_bytes = 6144 : i64, braid.evaluates = @step
// CHECK: braid.mul {{.*}}braid.offsets = array<i64: 5120>
// CHECK: braid.mul {{.*}}braid.offsets = array<i64: 5632>
// CHECK: braid.reduce_sum {{.*}}braid.offsets = array<i64: 5120>
// REPORT: remark: evaluation program @step_eval shares @step's arena: 1 parameters in place, its other buffers at +4096, arena 6144 bytes (the step alone 2112, the evaluation alone 2048)
func.func @step(%w: tensor<128xf32> {braid.role = #braid.role<parameter "w">},
                %x: tensor<128xf32> {braid.role = #braid.role<batch "x">})
    -> (tensor<128xf32> {braid.role = #braid.role<parameter "w">},
        tensor<f32> {braid.role = #braid.role<loss "loss">}) {
  %0 = braid.mul %w, %x : tensor<128xf32>
  %1 = braid.relu %0 : tensor<128xf32>
  %l = braid.reduce_sum %1 dims = [0] : tensor<128xf32> -> tensor<f32>
  %g = braid.scale %1 by 2.0 : tensor<128xf32>
  %w2 = braid.sub %w, %g : tensor<128xf32>
  return %w2, %l : tensor<128xf32>, tensor<f32>
}

func.func @step_eval(%w: tensor<128xf32> {braid.role = #braid.role<parameter "w">},
                     %x: tensor<128xf32> {braid.role = #braid.role<batch "x">})
    -> (tensor<f32> {braid.role = #braid.role<loss "loss">})
    attributes {braid.evaluates = @step} {
  %0 = braid.mul %x, %x : tensor<128xf32>
  %1 = braid.mul %w, %0 : tensor<128xf32>
  %l = braid.reduce_sum %1 dims = [0] : tensor<128xf32> -> tensor<f32>
  return %l : tensor<f32>
}
