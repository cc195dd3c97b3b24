//===- BraidAttentionOps.td - fused attention --------------*- tablegen -*-===//
//
// braid.attention and its backward: scaled dot-product attention as one op,
// as FlashAttention computes it (no [S, S] score tensor is stored). Included
// by BraidOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_BRAIDATTENTIONOPS_TD
#define BRAID_DIALECT_BRAID_BRAIDATTENTIONOPS_TD

def Braid_AttentionOp : Braid_ComputeOp<"attention", [InferTypeOpAdaptor,
    AllElementTypesMatch<["query", "key", "value", "output"]>]> {
  let opcode = 42;
  let summary = "fused scaled dot-product attention";
  let description = [{
    `output[b, h] = softmax(scale * query[b, h] @ key[b, g]^T) @ value[b, g]`
    for query `[B, H, S, D]`, key `[B, Hkv, Skv, D]` and value
    `[B, Hkv, Skv, Dv]`, where query head `h` reads key/value head
    `g = h / (H / Hkv)` (grouped key/value heads: `H` is a multiple of
    `Hkv`; `Hkv == H` is plain multi-head attention). Under `causal`, query
    `i` attends to keys `j <= i` only (PyTorch's `is_causal`). `logsumexp`
    `[B, H, S]` (f32) is each row's `log(sum(exp(scores)))`, which the
    backward uses to recompute the probabilities instead of storing them:
    no `[S, Skv]` tensor exists in memory, and none is counted in the
    op's cost. Lowered from `torch.nn.functional.scaled_dot_product_attention`
    (aten's `_scaled_dot_product_flash_attention_for_cpu`).

    ```mlir
    %o, %lse = braid.attention %q, %k, %v {causal} scale = 0.125
        : tensor<8x12x1024x64xf32>, tensor<8x4x1024x64xf32>, tensor<8x4x1024x64xf32>
        -> tensor<8x12x1024x64xf32>, tensor<8x12x1024xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$query, Braid_FloatTensor:$key,
                       Braid_FloatTensor:$value, UnitAttr:$causal, F64Attr:$scale);
  let results = (outs Braid_FloatTensor:$output, Braid_FloatTensor:$logsumexp);
  let assemblyFormat = [{
    $query `,` $key `,` $value attr-dict `scale` `=` $scale `:` type($query) `,`
    type($key) `,` type($value) `->` type($output) `,` type($logsumexp)
  }];
}

def Braid_AttentionBackwardOp : Braid_ComputeOp<"attention_backward", [
    AllElementTypesMatch<["grad_output", "query", "key", "value", "output",
                          "grad_query", "grad_key", "grad_value"]>,
    AllTypesMatch<["query", "grad_query"]>, AllTypesMatch<["key", "grad_key"]>,
    AllTypesMatch<["value", "grad_value"]>, AllTypesMatch<["grad_output", "output"]>]> {
  let opcode = 43;
  let summary = "gradient of braid.attention";
  let description = [{
    The gradients of braid.attention's query, key and value from the
    gradient of its output, its operands, its output and its `logsumexp`
    (the probabilities are recomputed from them, FlashAttention's
    backward). `causal` and `scale` match the forward op. The gradient of a
    key/value head sums over the query heads that read it.

    ```mlir
    %dq, %dk, %dv = braid.attention_backward %do, %q, %k, %v, %o, %lse {causal} scale = 0.125
        : tensor<8x12x1024x64xf32>, tensor<8x12x1024x64xf32>, tensor<8x4x1024x64xf32>,
          tensor<8x4x1024x64xf32>, tensor<8x12x1024xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$grad_output, Braid_FloatTensor:$query,
                       Braid_FloatTensor:$key, Braid_FloatTensor:$value,
                       Braid_FloatTensor:$output, Braid_FloatTensor:$logsumexp,
                       UnitAttr:$causal, F64Attr:$scale);
  let results = (outs Braid_FloatTensor:$grad_query, Braid_FloatTensor:$grad_key,
                      Braid_FloatTensor:$grad_value);
  let assemblyFormat = [{
    $grad_output `,` $query `,` $key `,` $value `,` $output `,` $logsumexp attr-dict
    `scale` `=` $scale `:` type($grad_output) `,` type($query) `,` type($key) `,`
    type($value) `,` type($logsumexp)
  }];
  let hasVerifier = 1;
}

#endif // BRAID_DIALECT_BRAIDATTENTIONOPS_TD
