// RUN: braid-opt %s --braid-overlap | braid-translate --braid-to-schedule-report | FileCheck %s

// The report of a scheduled step: one bucket, started on the comm stream
// after the gradients, waited on the compute stream before the updates.
// CHECK:      "buckets": [
// CHECK-NEXT:   {
// CHECK-NEXT:     "bytes": 48,
// CHECK-NEXT:     "index": 0,
// CHECK-NEXT:     "kind": "all_reduce",
// CHECK-NEXT:     "params": [
// CHECK-NEXT:       "w",
// CHECK-NEXT:       "b"
// CHECK-NEXT:     ],
// CHECK-NEXT:     "position": [[START:[0-9]+]],
// CHECK-NEXT:     "stream": [
// CHECK-NEXT:       "comm",
// CHECK-NEXT:       0
// CHECK-NEXT:     ],
// CHECK-NEXT:     "wait": [
// CHECK-NEXT:       {{[0-9]+}},
// CHECK-NEXT:       [
// CHECK-NEXT:         "compute",
// CHECK-NEXT:         0
// CHECK:      "events": 1,
// CHECK-NEXT: "function": "step",
// CHECK-NEXT: "ops": [[OPS:[0-9]+]],
// CHECK:      "sync_collectives": 0,
// CHECK:      "world": "4"

shard.grid @world(shape = 4)
func.func @step(%w: tensor<8xf32> {braid.role = #braid.role<parameter "w">},
                %b: tensor<4xf32> {braid.role = #braid.role<parameter "b">},
                %mw: tensor<8xf32> {braid.role = #braid.role<optimizer_state "w.m">},
                %mb: tensor<4xf32> {braid.role = #braid.role<optimizer_state "b.m">},
                %x: tensor<8xf32> {braid.role = #braid.role<batch "x">})
    -> (tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>) {
  %gw = braid.mul %x, %w : tensor<8xf32>
  %rw = braid.all_reduce %gw on @world grid_axes = [0] reduction = avg grad_of = ["w"] : tensor<8xf32>
  %gb = braid.relu %b : tensor<4xf32>
  %rb = braid.all_reduce %gb on @world grid_axes = [0] reduction = avg grad_of = ["b"] : tensor<4xf32>
  %w2, %mw2 = braid.sgd %w, %rw, %mw lr = 0.1 momentum = 0.9 weight_decay = 0.0 : tensor<8xf32>
  %b2, %mb2 = braid.sgd %b, %rb, %mb lr = 0.1 momentum = 0.9 weight_decay = 0.0 : tensor<4xf32>
  return %w2, %mw2, %b2, %mb2 : tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>
}
