// Gradient clipping's schedule (issue 15): the squared norm is split per
// bucket by braid-bucket-gradients, and braid-schedule runs each part right
// after its bucket's wait, summed as they come; the clipping factor and
// every update (each scaled by it) follow the last wait, since the factor
// needs every gradient. The tiny GPT of braid.models, clipped at 1.0.
//
// RUN: env PYTHONPATH=%braid_src/python %python -m braid.models gpt --tiny --world-size 2 --max-grad-norm 1.0 \
// RUN:   | braid-opt --braid-bucket-gradients="bucket-cap-mb=0.05 first-bucket-cap-mb=0.01" \
// RUN:       --braid-async-collectives --braid-schedule | FileCheck %s
// The whole pipeline proves the schedule.
// RUN: env PYTHONPATH=%braid_src/python %python -m braid.models gpt --tiny --world-size 2 --max-grad-norm 1.0 \
// RUN:   | braid-opt --braid-overlap | braid-opt --braid-verify-schedule -o /dev/null

// CHECK-LABEL: func.func @gpt_step
// CHECK:      %[[W0:.*]]:2 = braid.wait
// CHECK-NEXT: %[[S0:.*]] = braid.sum_squares %[[W0]]#0, %[[W0]]#1
// CHECK-NEXT: %[[W1:.*]] = braid.wait
// CHECK-NEXT: %[[S1:.*]] = braid.sum_squares %[[W1]] :
// CHECK-NEXT: braid.add %[[S0]], %[[S1]] : tensor<f32>
// CHECK-NOT:  braid.adamw
// CHECK:      %[[LAST:.*]]:2 = braid.wait
// CHECK-NEXT: %[[SL:.*]] = braid.sum_squares %[[LAST]]#0, %[[LAST]]#1
// CHECK-NEXT: %[[T:.*]] = braid.add %{{.*}}, %[[SL]] : tensor<f32>
// CHECK-NEXT: %[[C:.*]] = braid.clip_coefficient %[[T]] max_norm = 1.000000e+00
// CHECK-NEXT: braid.adamw {{.*}} grad_scale = %[[C]]
// CHECK-NOT:  braid.wait
// CHECK:      return
