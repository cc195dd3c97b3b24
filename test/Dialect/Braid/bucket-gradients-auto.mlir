// auto-bucket-cap sizes buckets from the cost model of the cluster.
// On h100-8 the GPT example's gradients go in several buckets that start
// during the backward; when every collective costs a second to start
// (Inputs/slow-start.json), one bucket is best. When collectives cost their
// latency only (Inputs/latency-bound.json), a gradient ready early goes in a
// bucket of its own, so that its optimizer update is done before the last
// gradient is: the last bucket's end counts the updates that wait for it.
// RUN: braid-opt %examples/gpt.mlir --braid-bucket-gradients="auto-bucket-cap cluster=h100-8 report=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=H100
// RUN: braid-opt %examples/gpt.mlir --braid-bucket-gradients="auto-bucket-cap cluster=%S/Inputs/slow-start.json report=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SLOW
// RUN: braid-opt %S/Inputs/late-update.mlir --braid-bucket-gradients="auto-bucket-cap cluster=%S/Inputs/latency-bound.json report=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=LATE
// RUN: not braid-opt %examples/gpt.mlir --braid-bucket-gradients="auto-bucket-cap cluster=nope" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOPE
// RUN: not braid-opt %examples/gpt.mlir --braid-bucket-gradients="auto-bucket-cap split-large=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SPLIT

// The tied embedding's large gradient, ready last, goes alone.
// H100: remark: buckets: 5 ({{[0-9]+}}, {{[0-9]+}}, {{[0-9]+}}, {{[0-9]+}}, 154533888 bytes)
// SLOW: remark: buckets: 1 (
// LATE: remark: buckets: 2 (16777216, 8192 bytes)
// NOPE: error: cannot load the cluster: unknown cluster 'nope' (presets: a100-8, h100-8, h100-8x32, h100-8x8, h200-8; or give a .json file)
// SPLIT: error: split-large does not go with auto-bucket-cap
