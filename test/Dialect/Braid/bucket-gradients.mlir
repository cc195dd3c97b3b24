// RUN: braid-opt %s --braid-bucket-gradients="bucket-cap-mb=0.001 first-bucket-cap-mb=0.0003" | FileCheck %s
// RUN: braid-opt %s --braid-bucket-gradients="bucket-cap-mb=0.001 first-bucket-cap-mb=0.0003 split-large" | FileCheck %s --check-prefix=SPLIT
// RUN: braid-opt %s --braid-bucket-gradients="bucket-cap-mb=0.001 first-bucket-cap-mb=0.0003 report" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// Caps: 0.001 MiB = 1048 bytes, 0.0003 MiB = 314 bytes; a tensor<64xf32> is
// 256 bytes.

shard.grid @world(shape = 8)

// Gradients become ready last layer first. The first bucket holds only w4
// (a second gradient would pass 314 bytes); the next holds the other three
// (768 bytes), right after the last of their producers.
// CHECK-LABEL: func.func @ready_order
// CHECK:      %[[G4:.*]] = braid.relu %arg3
// CHECK-NEXT: %[[R4:.*]] = braid.all_reduce %[[G4]] on @world grid_axes = [0] reduction = avg grad_of = ["w4"] {bucket_bytes = 256 : i64, bucket_index = 0 : i64}
// CHECK-NEXT: %[[G3:.*]] = braid.relu %arg2
// CHECK-NEXT: %[[G2:.*]] = braid.relu %arg1
// CHECK-NEXT: %[[G1:.*]] = braid.relu %arg0
// CHECK-NEXT: %[[R:.*]]:3 = braid.all_reduce %[[G3]], %[[G2]], %[[G1]] on @world grid_axes = [0] reduction = avg grad_of = ["w3", "w2", "w1"] {bucket_bytes = 768 : i64, bucket_index = 1 : i64}
// CHECK-NEXT: return %[[R]]#2, %[[R]]#1, %[[R]]#0, %[[R4]]
// REPORT: remark: buckets: 2 (256, 768 bytes)
func.func @ready_order(%w1: tensor<64xf32> {braid.role = #braid.role<parameter "w1">},
                       %w2: tensor<64xf32> {braid.role = #braid.role<parameter "w2">},
                       %w3: tensor<64xf32> {braid.role = #braid.role<parameter "w3">},
                       %w4: tensor<64xf32> {braid.role = #braid.role<parameter "w4">})
    -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %g4 = braid.relu %w4 : tensor<64xf32>
  %g3 = braid.relu %w3 : tensor<64xf32>
  %g2 = braid.relu %w2 : tensor<64xf32>
  %g1 = braid.relu %w1 : tensor<64xf32>
  // The all-reduces may sit anywhere after their gradients.
  %r1 = braid.all_reduce %g1 on @world grid_axes = [0] reduction = avg grad_of = ["w1"] : tensor<64xf32>
  %r2 = braid.all_reduce %g2 on @world grid_axes = [0] reduction = avg grad_of = ["w2"] : tensor<64xf32>
  %r3 = braid.all_reduce %g3 on @world grid_axes = [0] reduction = avg grad_of = ["w3"] : tensor<64xf32>
  %r4 = braid.all_reduce %g4 on @world grid_axes = [0] reduction = avg grad_of = ["w4"] : tensor<64xf32>
  return %r1, %r2, %r3, %r4 : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}

// Gradient clipping's squared norm over the gradients of both buckets: one
// sum of squares per bucket, right after it, added where the norm was.
// CHECK-LABEL: func.func @clip_norm_per_bucket
// CHECK:      %[[R4:.*]] = braid.all_reduce {{.*}} grad_of = ["w4"]
// CHECK-NEXT: %[[S0:.*]] = braid.sum_squares %[[R4]] : tensor<64xf32> -> tensor<f32>
// CHECK:      %[[R:.*]]:3 = braid.all_reduce {{.*}} grad_of = ["w3", "w2", "w1"]
// CHECK-NEXT: %[[S1:.*]] = braid.sum_squares %[[R]]#2, %[[R]]#1, %[[R]]#0 : tensor<64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<f32>
// CHECK-NEXT: %[[T:.*]] = braid.add %[[S0]], %[[S1]] : tensor<f32>
// CHECK-NEXT: braid.clip_coefficient %[[T]]
func.func @clip_norm_per_bucket(%w1: tensor<64xf32> {braid.role = #braid.role<parameter "w1">},
                                %w2: tensor<64xf32> {braid.role = #braid.role<parameter "w2">},
                                %w3: tensor<64xf32> {braid.role = #braid.role<parameter "w3">},
                                %w4: tensor<64xf32> {braid.role = #braid.role<parameter "w4">})
    -> tensor<f32> {
  %g4 = braid.relu %w4 : tensor<64xf32>
  %g3 = braid.relu %w3 : tensor<64xf32>
  %g2 = braid.relu %w2 : tensor<64xf32>
  %g1 = braid.relu %w1 : tensor<64xf32>
  %r1 = braid.all_reduce %g1 on @world grid_axes = [0] reduction = avg grad_of = ["w1"] : tensor<64xf32>
  %r2 = braid.all_reduce %g2 on @world grid_axes = [0] reduction = avg grad_of = ["w2"] : tensor<64xf32>
  %r3 = braid.all_reduce %g3 on @world grid_axes = [0] reduction = avg grad_of = ["w3"] : tensor<64xf32>
  %r4 = braid.all_reduce %g4 on @world grid_axes = [0] reduction = avg grad_of = ["w4"] : tensor<64xf32>
  %s = braid.sum_squares %r1, %r2, %r3, %r4 : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<f32>
  %c = braid.clip_coefficient %s max_norm = 1.0 : tensor<f32>
  return %c : tensor<f32>
}

// A 1280-byte gradient is larger than the cap: a bucket of its own, between
// the buckets of its neighbours. With split-large it is cut into chunks of
// 1048 bytes (262 elements) and 232 bytes; the last chunk shares its bucket
// with the next gradient (232 + 256 bytes).
// CHECK-LABEL: func.func @oversized
// CHECK:      braid.all_reduce %{{.*}} grad_of = ["small1"] {bucket_bytes = 256 : i64, bucket_index = 0 : i64}
// CHECK:      braid.all_reduce %{{.*}} grad_of = ["big"] {bucket_bytes = 1280 : i64, bucket_index = 1 : i64}
// CHECK:      braid.all_reduce %{{.*}} grad_of = ["small2"] {bucket_bytes = 256 : i64, bucket_index = 2 : i64}
// SPLIT-LABEL: func.func @oversized
// SPLIT:      braid.all_reduce %{{.*}} grad_of = ["small1"] {bucket_bytes = 256 : i64, bucket_index = 0 : i64}
// SPLIT:      %[[BIG:.*]] = braid.relu %arg1 : tensor<8x40xf32>
// SPLIT-NEXT: %[[FLAT:.*]] = braid.reshape %[[BIG]] : tensor<8x40xf32> -> tensor<320xf32>
// SPLIT-NEXT: %[[C0:.*]] = braid.slice %[[FLAT]] offsets = [0] : tensor<320xf32> -> tensor<262xf32>
// SPLIT-NEXT: %[[C1:.*]] = braid.slice %[[FLAT]] offsets = [262] : tensor<320xf32> -> tensor<58xf32>
// SPLIT-NEXT: %[[R0:.*]] = braid.all_reduce %[[C0]] {{.*}} grad_of = ["big"] {bucket_bytes = 1048 : i64, bucket_index = 1 : i64}
// SPLIT:      %[[R1:.*]]:2 = braid.all_reduce %[[C1]], %{{.*}} grad_of = ["big", "small2"] {bucket_bytes = 488 : i64, bucket_index = 2 : i64}
// SPLIT-NEXT: %[[JOIN:.*]] = braid.concat %[[R0]], %[[R1]]#0 dim = 0 : tensor<262xf32>, tensor<58xf32> -> tensor<320xf32>
// SPLIT-NEXT: %[[BACK:.*]] = braid.reshape %[[JOIN]] : tensor<320xf32> -> tensor<8x40xf32>
// SPLIT-NEXT: return %{{.*}}, %[[BACK]], %[[R1]]#1
func.func @oversized(%s1: tensor<64xf32> {braid.role = #braid.role<parameter "small1">},
                     %b: tensor<8x40xf32> {braid.role = #braid.role<parameter "big">},
                     %s2: tensor<64xf32> {braid.role = #braid.role<parameter "small2">})
    -> (tensor<64xf32>, tensor<8x40xf32>, tensor<64xf32>) {
  %g1 = braid.relu %s1 : tensor<64xf32>
  %r1 = braid.all_reduce %g1 on @world grid_axes = [0] reduction = avg grad_of = ["small1"] : tensor<64xf32>
  %gb = braid.relu %b : tensor<8x40xf32>
  %rb = braid.all_reduce %gb on @world grid_axes = [0] reduction = avg grad_of = ["big"] : tensor<8x40xf32>
  %g2 = braid.relu %s2 : tensor<64xf32>
  %r2 = braid.all_reduce %g2 on @world grid_axes = [0] reduction = avg grad_of = ["small2"] : tensor<64xf32>
  return %r1, %rb, %r2 : tensor<64xf32>, tensor<8x40xf32>, tensor<64xf32>
}

// Gradients of different element types or reductions never share a bucket;
// each kind has its own first bucket.
// CHECK-LABEL: func.func @kinds
// CHECK: braid.all_reduce %{{.*}} reduction = avg grad_of = ["a"] {bucket_bytes = 256 : i64, bucket_index = 0 : i64} : tensor<64xf32>
// CHECK: braid.all_reduce %{{.*}} reduction = avg grad_of = ["h"] {bucket_bytes = 128 : i64, bucket_index = 1 : i64} : tensor<64xbf16>
// CHECK: braid.all_reduce %{{.*}} reduction = sum grad_of = ["s"] {bucket_bytes = 256 : i64, bucket_index = 2 : i64} : tensor<64xf32>
func.func @kinds(%a: tensor<64xf32> {braid.role = #braid.role<parameter "a">},
                 %h: tensor<64xbf16> {braid.role = #braid.role<parameter "h">},
                 %s: tensor<64xf32> {braid.role = #braid.role<parameter "s">})
    -> (tensor<64xf32>, tensor<64xbf16>, tensor<64xf32>) {
  %ra = braid.all_reduce %a on @world grid_axes = [0] reduction = avg grad_of = ["a"] : tensor<64xf32>
  %rh = braid.all_reduce %h on @world grid_axes = [0] reduction = avg grad_of = ["h"] : tensor<64xbf16>
  %rs = braid.all_reduce %s on @world grid_axes = [0] reduction = sum grad_of = ["s"] : tensor<64xf32>
  return %ra, %rh, %rs : tensor<64xf32>, tensor<64xbf16>, tensor<64xf32>
}

// Nothing to bucket: a collective without grad_of (here in the forward, as
// tensor parallelism has) is not a gradient.
// CHECK-LABEL: func.func @forward_collective
// CHECK: %[[R:.*]] = braid.all_reduce %arg0 on @world grid_axes = [0] reduction = sum : tensor<64xf32>
// CHECK-NOT: bucket_index
// CHECK: braid.relu %[[R]]
func.func @forward_collective(%x: tensor<64xf32>) -> tensor<64xf32> {
  %r = braid.all_reduce %x on @world grid_axes = [0] reduction = sum : tensor<64xf32>
  %y = braid.relu %r : tensor<64xf32>
  return %y : tensor<64xf32>
}

// A reduced gradient used before the end of the backward keeps its own
// collective, unchanged; the other gradient is still bucketed.
// CHECK-LABEL: func.func @used_early
// CHECK:      %[[R1:.*]] = braid.all_reduce %{{.*}} grad_of = ["w1"] : tensor<64xf32>
// CHECK-NEXT: braid.relu %[[R1]]
// CHECK:      braid.all_reduce %{{.*}} grad_of = ["w2"] {bucket_bytes = 256 : i64, bucket_index = 0 : i64}
func.func @used_early(%w1: tensor<64xf32> {braid.role = #braid.role<parameter "w1">},
                      %w2: tensor<64xf32> {braid.role = #braid.role<parameter "w2">})
    -> (tensor<64xf32>, tensor<64xf32>) {
  %g1 = braid.relu %w1 : tensor<64xf32>
  %r1 = braid.all_reduce %g1 on @world grid_axes = [0] reduction = avg grad_of = ["w1"] : tensor<64xf32>
  %u = braid.relu %r1 : tensor<64xf32>
  %g2 = braid.add %w2, %u : tensor<64xf32>
  %r2 = braid.all_reduce %g2 on @world grid_axes = [0] reduction = avg grad_of = ["w2"] : tensor<64xf32>
  return %r1, %r2 : tensor<64xf32>, tensor<64xf32>
}

// Already bucketed input is left as it is: the pass is idempotent.
// CHECK-LABEL: func.func @already_bucketed
// CHECK: braid.all_reduce %arg0, %arg1 {{.*}} {bucket_bytes = 512 : i64, bucket_index = 0 : i64}
func.func @already_bucketed(%a: tensor<64xf32> {braid.role = #braid.role<parameter "a">},
                            %b: tensor<64xf32> {braid.role = #braid.role<parameter "b">})
    -> (tensor<64xf32>, tensor<64xf32>) {
  %r:2 = braid.all_reduce %a, %b on @world grid_axes = [0] reduction = avg grad_of = ["a", "b"] {bucket_index = 0, bucket_bytes = 512} : tensor<64xf32>, tensor<64xf32>
  return %r#0, %r#1 : tensor<64xf32>, tensor<64xf32>
}

// A first gradient larger than the first cap (512 > 314 bytes) is the first
// bucket, alone; the next ones fill a bucket of the normal cap.
// CHECK-LABEL: func.func @large_first
// CHECK: braid.all_reduce %arg0 {{.*}} grad_of = ["a"] {bucket_bytes = 512 : i64, bucket_index = 0 : i64}
// CHECK: braid.all_reduce %arg1, %arg2 {{.*}} grad_of = ["b", "c"] {bucket_bytes = 512 : i64, bucket_index = 1 : i64}
func.func @large_first(%a: tensor<128xf32> {braid.role = #braid.role<parameter "a">},
                       %b: tensor<64xf32> {braid.role = #braid.role<parameter "b">},
                       %c: tensor<64xf32> {braid.role = #braid.role<parameter "c">})
    -> (tensor<128xf32>, tensor<64xf32>, tensor<64xf32>) {
  %ra = braid.all_reduce %a on @world grid_axes = [0] reduction = avg grad_of = ["a"] : tensor<128xf32>
  %rb = braid.all_reduce %b on @world grid_axes = [0] reduction = avg grad_of = ["b"] : tensor<64xf32>
  %rc = braid.all_reduce %c on @world grid_axes = [0] reduction = avg grad_of = ["c"] : tensor<64xf32>
  return %ra, %rb, %rc : tensor<128xf32>, tensor<64xf32>, tensor<64xf32>
}
