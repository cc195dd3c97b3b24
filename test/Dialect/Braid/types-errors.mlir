// RUN: braid-opt %s --split-input-file --verify-diagnostics

// expected-error @below {{future value #1 must be a statically shaped tensor, but is 'f32'}}
func.func @future_of_scalar(%f: !braid.future<tensor<4xf32>, f32>) {
  return
}

// -----

// expected-error @below {{future value #0 must be a statically shaped tensor, but is 'tensor<?xf32>'}}
func.func @future_dynamic(%f: !braid.future<tensor<?xf32>>) {
  return
}

// -----

func.func @wait_not_future(%x: tensor<4xf32>) {
  // expected-error @below {{'braid.wait' op operand #0 must be the values of a collective still in flight, but got 'tensor<4xf32>'}}
  %0 = "braid.wait"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @wait_wrong_results(%f: !braid.future<tensor<4xf32>>) {
  // expected-error @below {{'braid.wait' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<8xf32>'}}
  // expected-error @below {{'braid.wait' op failed to infer returned types}}
  %0 = "braid.wait"(%f) : (!braid.future<tensor<4xf32>>) -> tensor<8xf32>
  return
}

// -----

func.func @wait_event_not_event(%x: tensor<4xf32>) {
  // expected-error @below {{operand #0 must be a point in one stream that another stream can wait for, but got 'tensor<4xf32>'}}
  "braid.wait_event"(%x) : (tensor<4xf32>) -> ()
  return
}

// -----

func.func @wait_custom_not_future(%x: tensor<4xf32>) {
  // expected-error @below {{braid.wait needs a !braid.future, got 'tensor<4xf32>'}}
  %0 = braid.wait %x : tensor<4xf32>
  return
}
