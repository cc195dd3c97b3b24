//===- BraidElementwiseOps.td - activations and functions --*- tablegen -*-===//
//
// The elementwise activations (braid.relu, braid.gelu), the elementwise
// functions (braid.unary, braid.pow), their backward, braid.where and the
// random keep-mask of dropout (braid.dropout_mask).
// Included by BraidOps.td, after the base classes.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_BRAIDELEMENTWISEOPS_TD
#define BRAID_DIALECT_BRAID_BRAIDELEMENTWISEOPS_TD

//===----------------------------------------------------------------------===//
// Activations and their backward
//===----------------------------------------------------------------------===//

def Braid_ReluOp : Braid_ElementwiseUnaryOp<"relu", [Braid_ShardElementwise]> {
  let kernelTables = ["cuda_elementwise"];
  let opcode = 30;
  let summary = "max(x, 0)";
}

def Braid_ReluBackwardOp : Braid_BackwardOp<"relu_backward", [Braid_ShardElementwise]> {
  let kernelTables = ["cuda_elementwise"];
  let opcode = 31;
  let summary = "gradient of relu";
  let description = [{
    `result = saved > 0 ? grad : 0`, where `saved` is the input or the output
    of the forward relu (both are positive at the same places).

    ```mlir
    %dx = braid.relu_backward %dy, %y : tensor<64x1024xf32>
    ```
  }];
}

def Braid_GeluOp : Braid_ComputeOp<"gelu", [
    AllTypesMatch<["input", "result"]>, Braid_PerToken]> {
  let kernelTables = ["cuda_elementwise"];
  let opcode = 32;
  let summary = "Gaussian error linear unit";
  let description = [{
    `x * Phi(x)` with the exact normal CDF, or its tanh approximation under
    `approximate_tanh` (GPT-2's `gelu_new`).

    With a `bias` (rank 1, the input's last dimension), `x` is
    `input[..., j] + bias[j]`: braid-fuse-kernels folds a braid.bias_add
    into the gelu and its backward, so that the sum is never written
    (Megatron-LM's bias-GeLU fusion). The result is that of braid.bias_add
    and braid.gelu in turn, bit for bit.

    ```mlir
    %y = braid.gelu %h, %b {approximate_tanh} : tensor<8x512x3072xf32>, tensor<3072xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input,
                       Optional<Braid_FloatTensor>:$bias,
                       UnitAttr:$approximate_tanh);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`,` $bias^)? attr-dict `:` type($result) (`,` type($bias)^)?
  }];
  let hasVerifier = 1;
}

def Braid_GeluBackwardOp : Braid_ComputeOp<"gelu_backward", [
    AllTypesMatch<["grad", "input", "result"]>, Braid_PerToken]> {
  let kernelTables = ["cuda_elementwise"];
  let opcode = 33;
  let summary = "gradient of gelu";
  let description = [{
    `result = grad * gelu'(x)`, where `input` (and `bias`) are the forward
    op's and `approximate_tanh` matches it.

    ```mlir
    %dx = braid.gelu_backward %dy, %x {approximate_tanh} : tensor<8192x3072xf32>
    %dh = braid.gelu_backward %dy, %h, %b {approximate_tanh} : tensor<8192x3072xf32>, tensor<3072xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$grad, Braid_FloatTensor:$input,
                       Optional<Braid_FloatTensor>:$bias,
                       UnitAttr:$approximate_tanh);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input (`,` $bias^)? attr-dict `:` type($result) (`,` type($bias)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise functions and their backward
//===----------------------------------------------------------------------===//

def Braid_UnaryOp : Braid_ComputeOp<"unary", [SameOperandsAndResultType,
                                                Braid_PerToken, Braid_ShardElementwise]> {
  let kernelTables = ["cuda_elementwise"];
  let opcode = 17;
  let summary = "an elementwise function: exp, log, sqrt, rsqrt, tanh, sigmoid, silu";
  let description = [{
    `result = f(input)` for each element, with `f` named by `kind`: `exp`,
    `log`, `sqrt`, `rsqrt` (`1 / sqrt(x)`), `tanh`, `sigmoid`
    (`1 / (1 + exp(-x))`) or `silu` (`x * sigmoid(x)`). Outside a function's
    domain the result is what IEEE arithmetic gives, as in PyTorch
    (`log(-1)` is NaN, `rsqrt(0)` is +inf).

    The gradients of `exp`, `log`, `sqrt` and `rsqrt` are written with the
    forward ops and braid.mul or braid.div (PyTorch's autograd formulas do
    the same); `tanh`, `sigmoid` and `silu` have braid.unary_backward.

    ```mlir
    %y = braid.unary tanh %x : tensor<64x3072xf32>
    ```
  }];
  let arguments = (ins Braid_UnaryKind:$kind, Braid_FloatTensor:$input);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$kind $input attr-dict `:` type($result)";
}

def Braid_UnaryBackwardOp : Braid_ComputeOp<"unary_backward", [
    SameOperandsAndResultType, Braid_PerToken, Braid_ShardElementwise]> {
  let kernelTables = ["cuda_elementwise"];
  let opcode = 39;
  let summary = "gradient of braid.unary tanh, sigmoid or silu";
  let description = [{
    `result = grad * f'(...)` from a saved forward value: for `tanh` and
    `sigmoid` the forward op's output `y` (`1 - y * y` and `y * (1 - y)`,
    as PyTorch's `tanh_backward` and `sigmoid_backward`), for `silu` its
    input `x` (`s * (1 + x * (1 - s))` with `s = sigmoid(x)`). The other
    kinds have no backward op (see braid.unary) and are refused.

    ```mlir
    %dx = braid.unary_backward silu %dy, %x : tensor<64x3072xf32>
    ```
  }];
  let arguments = (ins Braid_UnaryKind:$kind, Braid_FloatTensor:$grad,
                       Braid_FloatTensor:$saved);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$kind $grad `,` $saved attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Braid_PowOp : Braid_ComputeOp<"pow", [SameOperandsAndResultType, Braid_PerToken,
                                         Braid_ShardElementwise]> {
  let kernelTables = ["cuda_elementwise"];
  let opcode = 18;
  let summary = "each element raised to a constant power";
  let description = [{
    `result = input ^ exponent`, as `torch.pow(x, exponent)` with a number
    exponent: a negative element with a non-integer exponent gives NaN.
    The gradient is written with braid.pow and braid.mul (`exponent * x ^
    (exponent - 1) * grad`), as PyTorch's autograd writes it.

    ```mlir
    %x3 = braid.pow %x exponent = 3.000000e+00 : tensor<64x3072xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input, F64Attr:$exponent);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$input `exponent` `=` $exponent attr-dict `:` type($result)";
}

def Braid_WhereOp : Braid_ComputeOp<"where", [Braid_PerToken, Braid_ShardElementwise,
    AllTypesMatch<["lhs", "rhs", "result"]>, AllShapesMatch<["condition", "result"]>]> {
  let kernelTables = ["cuda_elementwise"];
  let opcode = 19;
  let summary = "choose between two tensors element by element";
  let description = [{
    `result = condition ? lhs : rhs` for each element, as `torch.where`
    with operands of one shape (braid.export broadcasts them first). The
    exporter writes it for a mask that is a constant of the step (built
    from buffers or constants), and for the mask's backward.

    ```mlir
    %y = braid.where %mask, %x, %fill : tensor<8x64xi1>, tensor<8x64xf32>
    ```
  }];
  let arguments = (ins StaticShapeTensorOf<[I1]>:$condition,
                       Braid_FloatTensor:$lhs, Braid_FloatTensor:$rhs);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` type($condition) `,` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Random masks
//===----------------------------------------------------------------------===//

// A mask drawn for the whole tensor: a split one would draw each rank's part
// with the first elements' numbers.
def Braid_DropoutMaskOp : Braid_ComputeOp<"dropout_mask", [Braid_ShardReplicated,
    Braid_StepCountOpInterface]> {
  let kernelTables = ["cuda_elementwise"];
  let opcode = 44;
  let summary = "a seeded random keep-mask, the same on every backend";
  let description = [{
    `result[i]` is true with probability `keep`, drawn by Philox4x32-10
    (common/include/braid-common/Philox.h; PyTorch's CUDA dropout uses the
    same generator) from the counter (i, `step`, `stream`) under the key
    (`seed`, `rank`): a counter-based draw, so the same seed, rank, step,
    stream and element give the same bit on every backend and in any
    order, and no generator state exists but the step. `step` is the
    training step's count (an optimizer-state scalar the step increments),
    `rank` the rank's index on the data-parallel axis (braid.axis_index),
    `stream` tells a step's dropout sites apart. braid.export writes
    dropout as `where(mask, x / keep, 0)` and its backward as the same
    selection of the gradient, reading the mask once: the forward and the
    backward see the same bits.

    ```mlir
    %keep = braid.dropout_mask %step, %rank keep = 9.000000e-01 seed = 0 stream = 3
        : tensor<8x1024x768xi1>
    ```
  }];
  let arguments = (ins Braid_F32ScalarTensor:$step, Braid_RankIndexTensor:$rank,
                       F64Attr:$keep, I64Attr:$seed, I64Attr:$stream);
  let results = (outs StaticShapeTensorOf<[I1]>:$result);
  let assemblyFormat = [{
    $step `,` $rank `keep` `=` $keep `seed` `=` $seed `stream` `=` $stream attr-dict
    `:` type($result)
  }];
  let hasVerifier = 1;
}

#endif // BRAID_DIALECT_BRAIDELEMENTWISEOPS_TD
