// Mixed precision's casts through the overlap passes (issue 15): bf16
// compute with f32 master weights and bf16 gradient all-reduces, the tiny
// GPT of braid.models (as braid.export's autocast="bf16" with
// reduce_dtype="bf16" writes a step). The parameters are cast to bf16 once,
// before the forward; the logits are cast to f32 for the loss and its
// gradient back to bf16; braid-bucket-gradients groups the bf16 gradients
// into bf16 buckets; braid-schedule runs each gradient's cast back to f32
// right after its bucket's wait, and the f32 AdamW update right after that.
//
// RUN: env PYTHONPATH=%braid_src/python %python -m braid.models gpt --tiny --world-size 2 --autocast bf16 --reduce-dtype bf16 \
// RUN:   | braid-opt --braid-bucket-gradients="bucket-cap-mb=0.05 first-bucket-cap-mb=0.01" \
// RUN:       --braid-async-collectives --braid-schedule | FileCheck %s
// The whole pipeline proves the schedule.
// RUN: env PYTHONPATH=%braid_src/python %python -m braid.models gpt --tiny --world-size 2 --autocast bf16 --reduce-dtype bf16 \
// RUN:   | braid-opt --braid-overlap | braid-opt --braid-verify-schedule -o /dev/null

// CHECK-LABEL: func.func @gpt_step
// CHECK-SAME:  tensor<64x64xf32> {braid.role = #braid.role<parameter "wte">}
// CHECK-NEXT:  braid.cast %arg{{[0-9]+}} : tensor<64x64xf32> -> tensor<64x64xbf16>
// CHECK:       %[[LOGITS:.*]] = braid.cast %{{.*}} : tensor<64x64xbf16> -> tensor<64x64xf32>
// CHECK-NEXT:  braid.cross_entropy %[[LOGITS]], {{.*}} : tensor<64x64xf32>, tensor<64xi64> -> tensor<f32>
// CHECK:       %[[DL:.*]] = braid.cross_entropy_backward
// CHECK-NEXT:  braid.cast %[[DL]] : tensor<64x64xf32> -> tensor<64x64xbf16>
// CHECK:       %[[B0:.*]] = braid.all_reduce_start %grad_gamma, %grad_beta {{.*}} grad_of = ["ln_f.weight", "ln_f.bias"] {{.*}} : tensor<64xbf16>, tensor<64xbf16>
// CHECK-NOT:   braid.adamw
// CHECK:       %[[W0:.*]]:2 = braid.wait %[[B0]] : !braid.future<tensor<64xbf16>, tensor<64xbf16>>
// CHECK-NEXT:  %[[G0:.*]] = braid.cast %[[W0]]#0 : tensor<64xbf16> -> tensor<64xf32>
// CHECK-NEXT:  %[[G1:.*]] = braid.cast %[[W0]]#1 : tensor<64xbf16> -> tensor<64xf32>
// CHECK-NEXT:  braid.adamw %{{.*}}, %[[G0]], {{.*}} : tensor<64xf32>
// CHECK-NEXT:  braid.adamw %{{.*}}, %[[G1]], {{.*}} : tensor<64xf32>
// CHECK:       return

