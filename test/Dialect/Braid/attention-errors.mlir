// RUN: braid-opt %s --split-input-file --verify-diagnostics

// The verifier of braid.attention (BraidAttentionOps.cpp): ranks, batch,
// key/value agreement, head sizes, head groups, the output and logsumexp.

func.func @attention_rank(%q: tensor<4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>) {
  // expected-error @below {{query must be [batch, heads, sequence, head size], but is [4, 8, 16]}}
  // expected-error @below {{'braid.attention' op failed to infer returned types}}
  %o, %l = braid.attention %q, %k, %v scale = 0.25 : tensor<4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<4x8x16xf32>, tensor<4x8xf32>
  return
}

// -----

func.func @attention_batch(%q: tensor<2x4x8x16xf32>, %k: tensor<3x2x8x16xf32>, %v: tensor<3x2x8x16xf32>) {
  // expected-error @below {{query, key and value have batch sizes 2, 3 and 3}}
  // expected-error @below {{'braid.attention' op failed to infer returned types}}
  %o, %l = braid.attention %q, %k, %v scale = 0.25 : tensor<2x4x8x16xf32>, tensor<3x2x8x16xf32>, tensor<3x2x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_key_value(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x6x16xf32>) {
  // expected-error @below {{key [2, 2, 8, 16] and value [2, 2, 6, 16] differ in heads or sequence}}
  // expected-error @below {{'braid.attention' op failed to infer returned types}}
  %o, %l = braid.attention %q, %k, %v scale = 0.25 : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x6x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_head_size(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x8xf32>, %v: tensor<2x2x8x16xf32>) {
  // expected-error @below {{key head size 8 differs from the query's (16)}}
  // expected-error @below {{'braid.attention' op failed to infer returned types}}
  %o, %l = braid.attention %q, %k, %v scale = 0.25 : tensor<2x4x8x16xf32>, tensor<2x2x8x8xf32>, tensor<2x2x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_groups(%q: tensor<2x4x8x16xf32>, %k: tensor<2x3x8x16xf32>, %v: tensor<2x3x8x16xf32>) {
  // expected-error @below {{4 query heads do not group over 3 key/value heads (the query heads must be a multiple)}}
  // expected-error @below {{'braid.attention' op failed to infer returned types}}
  %o, %l = braid.attention %q, %k, %v scale = 0.25 : tensor<2x4x8x16xf32>, tensor<2x3x8x16xf32>, tensor<2x3x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_output(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>) {
  // expected-error @below {{'braid.attention' op inferred type(s) 'tensor<2x4x8x16xf32>', 'tensor<2x4x8xf32>' are incompatible with return type(s) of operation 'tensor<2x4x8x8xf32>', 'tensor<2x4x8xf32>'}}
  // expected-error @below {{'braid.attention' op failed to infer returned types}}
  %o, %l = braid.attention %q, %k, %v scale = 0.25 : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x4x8x8xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_logsumexp(%q: tensor<2x4x8x16xbf16>, %k: tensor<2x2x8x16xbf16>, %v: tensor<2x2x8x16xbf16>) {
  // expected-error @below {{'braid.attention' op inferred type(s) 'tensor<2x4x8x16xbf16>', 'tensor<2x4x8xf32>' are incompatible with return type(s) of operation 'tensor<2x4x8x16xbf16>', 'tensor<2x4x8xbf16>'}}
  // expected-error @below {{'braid.attention' op failed to infer returned types}}
  %o, %l = braid.attention %q, %k, %v scale = 0.25 : tensor<2x4x8x16xbf16>, tensor<2x2x8x16xbf16>, tensor<2x2x8x16xbf16> -> tensor<2x4x8x16xbf16>, tensor<2x4x8xbf16>
  return
}

// -----

func.func @attention_backward_output(%do: tensor<2x4x8x8xf32>, %q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>, %l: tensor<2x4x8xf32>) {
  // expected-error @below {{'braid.attention_backward' op output is 'tensor<2x4x8x8xf32>', the forward's is 'tensor<2x4x8x16xf32>'}}
  %dq, %dk, %dv = braid.attention_backward %do, %q, %k, %v, %do, %l scale = 0.25 : tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_backward_logsumexp(%do: tensor<2x4x8x16xf32>, %q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>, %l: tensor<2x4x4xf32>) {
  // expected-error @below {{'braid.attention_backward' op logsumexp is 'tensor<2x4x4xf32>', the forward's is 'tensor<2x4x8xf32>'}}
  %dq, %dk, %dv = braid.attention_backward %do, %q, %k, %v, %do, %l scale = 0.25 : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x4xf32>
  return
}
