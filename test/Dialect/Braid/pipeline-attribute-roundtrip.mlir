// RUN: braid-opt %s --split-input-file | braid-opt --split-input-file | FileCheck %s
//
// #braid.pipeline prints its defaults (1 micro-batch, 1f1b, 1 virtual stage,
// no boundaries) elided and its parameters in declaration order.


// Each default is elided when printed.
// CHECK: module attributes {braid.pipeline = #braid.pipeline<axis = 0>}
module attributes {braid.pipeline = #braid.pipeline<axis = 0, micro_batches = 1, schedule = "1f1b", virtual_stages = 1>} {
}

// -----

// CHECK: module attributes {braid.pipeline = #braid.pipeline<axis = 0, micro_batches = 4, schedule = "interleaved", virtual_stages = 2>}
module attributes {braid.pipeline = #braid.pipeline<virtual_stages = 2, schedule = "interleaved", axis = 0, micro_batches = 4>} {
}
