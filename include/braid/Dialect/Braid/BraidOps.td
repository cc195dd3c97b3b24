//===- BraidOps.td - braid operations ----------------------*- tablegen -*-===//

#ifndef BRAID_DIALECT_BRAID_BRAIDOPS_TD
#define BRAID_DIALECT_BRAID_BRAIDOPS_TD

include "braid/Dialect/Braid/Braid.td"
include "braid/Dialect/Braid/BraidAttributes.td"
include "braid/Dialect/Braid/BraidInterfaces.td"
include "braid/Dialect/Braid/BraidTypes.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Braid_FloatTensor : StaticShapeTensorOf<[F16, BF16, F32, F64]>;
def Braid_IndexTensor : StaticShapeTensorOf<[I32, I64]>;
def Braid_Tensor : StaticShapeTensorOf<[F16, BF16, F32, F64, I1, I32, I64]>;
def Braid_ScalarTensor : 0DTensorOf<[F16, BF16, F32, F64]>;
// A scalar f32 computed by the step (a scheduled learning rate, a clipping
// factor): its type is implied where an op takes one.
def Braid_F32ScalarTensor : 0DTensorOf<[F32]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getF32Type())">;
/// A rank's index in its group (braid.axis_index), as the shard ops take it.
def Braid_RankIndexTensor : 0DTensorOf<[I64]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getI64Type())">;

//===----------------------------------------------------------------------===//
// Traits
//===----------------------------------------------------------------------===//

/// An op that computes each token (each index of its tensors' leading
/// dimension) from that token alone: elementwise ops, the bias add, the
/// layer norm and their backward. braid-sequence-parallel runs these on a
/// rank's share of the tokens.
def Braid_PerToken : NativeOpTrait<"PerToken"> {
  let cppNamespace = "::braid";
}

/// An op whose result is its operand's bytes as they are, in another shape
/// (reshape). braid-plan-memory may give the result its operand's bytes
/// instead of copying them; braid-verify-schedule and the plan loader then
/// treat the two as one value (the op table's `isView`).
def Braid_View : NativeOpTrait<"View"> {
  let cppNamespace = "::braid";
}

/// A tensor-parallel rule given by a trait (BraidInterfaces.h): a compute
/// op with one takes ShardingOpInterface's default propagateSharding, which
/// applies it; a compute op without one declares its own
/// (ShardingRules.cpp). Upstream Shard attaches its elementwise rule by
/// template the same way.
class Braid_ShardingRule<string name> : NativeOpTrait<name> {
  let cppNamespace = "::braid";
}
/// Equal operand shardings pass through; no partial operand.
def Braid_ShardElementwise : Braid_ShardingRule<"ShardElementwise">;
/// Elementwise, and all operands partial give a partial result (a sum).
def Braid_ShardSum : Braid_ShardingRule<"ShardSum">;
/// Elementwise and linear in each of `operands`: one of them partial, the
/// rest replicated, gives a partial result.
class Braid_ShardLinearIn<list<int> operands>
    : Braid_ShardingRule<"ShardLinearIn<" # !interleave(operands, ", ") # ">::Impl">;
/// Replicated operands give replicated results; nothing else has a rule.
def Braid_ShardReplicated : Braid_ShardingRule<"ShardReplicated">;
/// An optimizer update: gradient and state spread as the parameter.
def Braid_ShardUpdate : Braid_ShardingRule<"ShardUpdate">;

//===----------------------------------------------------------------------===//
// Base classes
//===----------------------------------------------------------------------===//

/// A compute op: pure, with a cost and a tensor-parallel rule: a
/// Braid_ShardingRule trait among `traits`, or else its own
/// propagateSharding (ShardingRules.cpp). `costOverrides` and
/// `shardingOverrides` name the other methods with defaults that the op
/// implements itself.
class Braid_ComputeOp<string mnemonic, list<Trait> traits = [],
                      list<string> costOverrides = [],
                      list<string> shardingOverrides = []>
    : Braid_Op<mnemonic, !listconcat(traits, [
        Pure, DeclareOpInterfaceMethods<Braid_CostOpInterface, costOverrides>,
        DeclareOpInterfaceMethods<Braid_ShardingOpInterface,
            !if(!empty(!filter(t, traits, !isa<Braid_ShardingRule>(t))),
                !listconcat(["propagateSharding"], shardingOverrides),
                shardingOverrides)>
      ])> {
  let instrKind = Braid_KernelInstr;
}

/// An optimizer update: result `i` may overwrite operand `inPlace[i]` (-1:
/// none), element for element.
class Braid_UpdateOp<string mnemonic, list<int> inPlace, list<Trait> traits = []>
    : Braid_ComputeOp<mnemonic, !listconcat(traits, [Braid_ShardUpdate,
        DeclareOpInterfaceMethods<Braid_InPlaceOpInterface>])> {
  let inPlaceOperands = inPlace;
  let extraClassDefinition = [{
    int $cppClass::getInPlaceOperand(unsigned result) {
      static constexpr int operands[] = {}] # !interleave(inPlace, ", ") # [{};
      return result < std::size(operands) ? operands[result] : -1;
    }
  }];
}

class Braid_ElementwiseUnaryOp<string mnemonic, list<Trait> traits = []>
    : Braid_ComputeOp<mnemonic, !listconcat(traits, [SameOperandsAndResultType,
                                                     Braid_PerToken])> {
  let arguments = (ins Braid_FloatTensor:$input);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

class Braid_BinaryOp<string mnemonic, list<Trait> traits = [],
                     list<string> shardingOverrides = []>
    : Braid_ComputeOp<mnemonic, !listconcat(traits, [SameOperandsAndResultType,
                                                     Braid_PerToken]),
                      [], shardingOverrides> {
  let arguments = (ins Braid_FloatTensor:$lhs, Braid_FloatTensor:$rhs);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

/// An elementwise backward op: the gradient of the result from the gradient
/// of the forward op's output and a saved forward value.
class Braid_BackwardOp<string mnemonic, list<Trait> traits = []>
    : Braid_ComputeOp<mnemonic, !listconcat(traits, [SameOperandsAndResultType,
                                                     Braid_PerToken])> {
  let arguments = (ins Braid_FloatTensor:$grad, Braid_FloatTensor:$saved);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $saved attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def Braid_MatmulOp
    : Braid_ComputeOp<"matmul", [InferTypeOpAdaptor],
                      ["getProductShape", "getBytesRead"]> {
  let opcode = 1;
  let summary = "matrix product, optionally batched and transposed";
  let description = [{
    `result[..., m, n] = sum_k a[..., m, k] * b[..., k, n]`, where
    `transpose_a` reads `a` as `[..., k, m]` and `transpose_b` reads `b` as
    `[..., n, k]`. Both operands have rank 2 or more. The leading (batch)
    dimensions of `a` and `b` are equal, or `b` has rank 2 and is shared by
    every batch (a weight applied to a batch of sequences).

    ```mlir
    %y = braid.matmul %x, %w {transpose_b}
        : tensor<64x784xf32>, tensor<1024x784xf32> -> tensor<64x1024xf32>
    ```

    Canonicalization reads an operand that a `braid.transpose` of its last
    two dimensions writes through the flag instead (toggling one already
    set), where no permutation or slice reads that operand: the exporter
    writes aten's `t` as a transpose and leaves the rest to it.

    `lhs_permutation` and `rhs_permutation` read an operand through a
    transpose (as braid.transpose's `permutation`: dimension d of what the
    product sees is dimension `permutation[d]` of the operand), before
    `transpose_a`/`transpose_b`; `result_permutation` writes the product
    transposed (the result is braid.transpose of the product). braid-fuse-
    kernels folds attention's head transposes into them, so that BLAS reads
    and writes the tensors where they are instead of a copy. Each matrix must
    keep a dimension of unit stride: an operand permutation puts the
    operand's last dimension at one of the last two places, and a result
    permutation stores one of the product's last two dimensions last.

    `lhs_slice` and `rhs_slice` (`[dim, offset, size]`) read a slice of the
    operand along its dimension `dim`, one the product reads as a batch
    dimension (through the permutation): the product sees the operand with
    dimension `dim` cut to `size` entries from `offset`, read where they are
    (the operand's strides stay the whole tensor's). braid-fuse-kernels folds the slices of a fused
    query/key/value projection into the attention products that read them,
    so that no copy of q, k or v is made: `[batch, seq, 3 x heads, head]`
    sliced along the heads.

    ```mlir
    // q, the first 12 of the 36 heads of qkv, read as [batch, heads, seq, 64]
    %s = braid.matmul %qkv, %qkv {lhs_slice = array<i64: 2, 0, 12>, lhs_permutation = array<i64: 0, 2, 1, 3>, rhs_slice = array<i64: 2, 12, 12>, rhs_permutation = array<i64: 0, 2, 3, 1>}
        : tensor<8x512x36x64xf32>, tensor<8x512x36x64xf32> -> tensor<8x12x512x512xf32>
    ```

    ```mlir
    // q [batch, seq, heads, 64] read as [batch, heads, seq, 64]
    %s = braid.matmul %q, %k {lhs_permutation = array<i64: 0, 2, 1, 3>, rhs_permutation = array<i64: 0, 2, 3, 1>}
        : tensor<8x512x12x64xf32>, tensor<8x512x12x64xf32> -> tensor<8x12x512x512xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$lhs, Braid_FloatTensor:$rhs,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b,
                       OptionalAttr<DenseI64ArrayAttr>:$lhs_permutation,
                       OptionalAttr<DenseI64ArrayAttr>:$rhs_permutation,
                       OptionalAttr<DenseI64ArrayAttr>:$result_permutation,
                       OptionalAttr<DenseI64ArrayAttr>:$lhs_slice,
                       OptionalAttr<DenseI64ArrayAttr>:$rhs_slice);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
  // An operand that is a braid.transpose of its last two dimensions is read
  // through `transpose_a`/`transpose_b` instead (where no permutation or
  // slice reads it).
  let hasCanonicalizeMethod = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise arithmetic
//===----------------------------------------------------------------------===//

def Braid_AddOp : Braid_BinaryOp<"add", [Commutative, Braid_ShardSum],
                                 ["reshardResult"]> {
  let kernelTables = ["cuda_elementwise"];
  let opcode = 10;
  let summary = "elementwise sum of two tensors of one type";
  // A tensor broadcast along the sum's leading dimensions (a positional
  // embedding over a batch's sequences) is added as a braid.bias_add's bias
  // instead, read once per row: the sums are the same.
  let hasCanonicalizeMethod = 1;
}
def Braid_SubOp : Braid_BinaryOp<"sub", [Braid_ShardSum]> {
  let kernelTables = ["cuda_elementwise"];
  let opcode = 11;
  let summary = "elementwise difference of two tensors of one type";
}
def Braid_MulOp : Braid_BinaryOp<"mul", [Commutative, Braid_ShardLinearIn<[0, 1]>]> {
  let kernelTables = ["cuda_elementwise"];
  let opcode = 12;
  let summary = "elementwise product of two tensors of one type";
}
def Braid_DivOp : Braid_BinaryOp<"div", [Braid_ShardLinearIn<[0]>]> {
  let kernelTables = ["cuda_elementwise"];
  let opcode = 13;
  let summary = "elementwise quotient of two tensors of one type";
}

def Braid_ScaleOp : Braid_ComputeOp<"scale", [SameOperandsAndResultType, Braid_PerToken,
                                             Braid_ShardLinearIn<[0]>]> {
  let kernelTables = ["cuda_elementwise"];
  let opcode = 14;
  let summary = "multiply every element by a constant";
  let description = [{
    ```mlir
    %y = braid.scale %x by 1.250000e-01 : tensor<8x12x128x128xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input, F64Attr:$factor);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$input `by` $factor attr-dict `:` type($result)";
}

def Braid_BiasAddOp : Braid_ComputeOp<"bias_add", [
    AllTypesMatch<["input", "result"]>, Braid_PerToken]> {
  let kernelTables = ["cuda_elementwise"];
  let opcode = 15;
  let summary = "add a bias along the last dimensions";
  let description = [{
    `result[..., j] = input[..., j] + bias[j]`, where `j` runs over the
    bias's dimensions, which are the input's last ones: a linear layer's
    bias (rank 1), or a positional embedding added to every sequence of a
    batch (braid.add's canonicalizer folds a braid.broadcast into it).

    ```mlir
    %y = braid.bias_add %x, %b : tensor<64x1024xf32>, tensor<1024xf32>
    %h = braid.bias_add %tok, %pos : tensor<8x64x256xf32>, tensor<64x256xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input, Braid_FloatTensor:$bias);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$input `,` $bias attr-dict `:` type($input) `,` type($bias)";
  let hasVerifier = 1;
}

// Not linear: rounding each part of a partial sum is not rounding the sum.
def Braid_CastOp : Braid_ComputeOp<"cast", [Braid_PerToken, Braid_ShardElementwise]> {
  let kernelTables = ["cuda_elementwise"];
  let opcode = 16;
  let summary = "convert the element type, keeping the shape";
  let description = [{
    ```mlir
    %h = braid.cast %x : tensor<64x1024xf32> -> tensor<64x1024xbf16>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class Braid_ReduceOp<string mnemonic>
    : Braid_ComputeOp<mnemonic, [InferTypeOpAdaptor]> {
  let arguments = (ins Braid_FloatTensor:$input, DenseI64ArrayAttr:$dims,
                       UnitAttr:$keep_dims);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $input `dims` `=` $dims attr-dict `:` type($input) `->` type($result)
  }];
}

def Braid_ReduceSumOp : Braid_ReduceOp<"reduce_sum"> {
  let kernelTables = ["cuda_reduction"];
  let opcode = 20;
  let summary = "sum over dimensions";
  let description = [{
    Sums over the listed dimensions, given in increasing order. The result
    drops them, or keeps them with size 1 under `keep_dims`.

    ```mlir
    %db = braid.reduce_sum %dy dims = [0] : tensor<64x1024xf32> -> tensor<1024xf32>
    ```
  }];
}

def Braid_ReduceMeanOp : Braid_ReduceOp<"reduce_mean"> {
  let kernelTables = ["cuda_reduction"];
  let opcode = 21;
  let summary = "mean over dimensions";
  let description = [{
    As `braid.reduce_sum`, divided by the number of elements reduced.
  }];
}

// Activations, elementwise functions and their backward; braid.where.
include "braid/Dialect/Braid/BraidElementwiseOps.td"

//===----------------------------------------------------------------------===//
// Softmax and the causal mask
//===----------------------------------------------------------------------===//

class Braid_SoftmaxFamilyOp<string mnemonic>
    : Braid_ComputeOp<mnemonic, [SameOperandsAndResultType]> {
  let arguments = (ins Braid_FloatTensor:$input, I64Attr:$dim);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$input `dim` `=` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

class Braid_SoftmaxFamilyBackwardOp<string mnemonic>
    : Braid_ComputeOp<mnemonic, [SameOperandsAndResultType]> {
  let arguments = (ins Braid_FloatTensor:$grad, Braid_FloatTensor:$output,
                       I64Attr:$dim);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $output `dim` `=` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Braid_SoftmaxOp : Braid_SoftmaxFamilyOp<"softmax"> {
  let kernelTables = ["cuda_reduction", "cpu_norm"];
  let opcode = 34;
  let summary = "softmax along one dimension";
  let description = [{
    Under `safe`, a row whose entries are all -inf (every position masked)
    is all 0 instead of NaN, as PyTorch's `_safe_softmax`; its backward is
    braid.softmax_backward as for any softmax (0 where the output is 0).

    `scale` and `causal` fold attention's score scaling and causal mask in
    (braid-fuse-kernels writes them): the softmax is taken of
    `input * scale` with the entries above the diagonal of the last two
    dimensions set to -inf, which needs `dim` to be the last dimension and
    the last two dimensions to be equal. The result is that of braid.scale,
    braid.causal_mask with fill -inf and braid.softmax in turn, bit for bit,
    without the two tensors between them.

    ```mlir
    %p = braid.softmax %scores dim = 3 {causal, scale = 1.250000e-01 : f64} : tensor<8x12x512x512xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input, I64Attr:$dim, UnitAttr:$safe,
                       DefaultValuedAttr<F64Attr, "1.0">:$scale,
                       UnitAttr:$causal);
}

def Braid_SoftmaxBackwardOp : Braid_SoftmaxFamilyBackwardOp<"softmax_backward"> {
  let kernelTables = ["cuda_reduction", "cpu_norm"];
  let opcode = 35;
  let summary = "gradient of softmax from its output";
  let description = [{
    `result = output * (grad - sum(grad * output, dim))`, where `output` is the
    forward softmax's result.

    With the forward's `scale` and `causal`, it is also the gradient through
    them: the entries above the diagonal of the last two dimensions are 0
    and the result is multiplied by `scale`, as braid.causal_mask with fill
    0 and braid.scale after it would give.
  }];
  let arguments = (ins Braid_FloatTensor:$grad, Braid_FloatTensor:$output,
                       I64Attr:$dim, DefaultValuedAttr<F64Attr, "1.0">:$scale,
                       UnitAttr:$causal);
}

def Braid_LogSoftmaxOp : Braid_SoftmaxFamilyOp<"log_softmax"> {
  let kernelTables = ["cuda_reduction", "cpu_norm"];
  let opcode = 36;
  let summary = "log of softmax along one dimension";
}

def Braid_LogSoftmaxBackwardOp
    : Braid_SoftmaxFamilyBackwardOp<"log_softmax_backward"> {
  let kernelTables = ["cuda_reduction", "cpu_norm"];
  let opcode = 37;
  let summary = "gradient of log_softmax from its output";
  let description = [{
    `result = grad - exp(output) * sum(grad, dim)`, where `output` is the
    forward log_softmax's result.
  }];
}

def Braid_CausalMaskOp : Braid_ComputeOp<"causal_mask", [SameOperandsAndResultType]> {
  let opcode = 38;
  let summary = "replace the entries above the diagonal of the last two dimensions";
  let description = [{
    `result[..., i, j] = j > i ? fill : input[..., i, j]` over the last two
    dimensions, which are equal (attention scores of a sequence against
    itself). The backward of a mask that fills `-inf`-like values before a
    softmax is the same op with `fill` 0 applied to the gradient.

    ```mlir
    %m = braid.causal_mask %s fill = -1.000000e+09 : tensor<8x12x128x128xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input, F64Attr:$fill);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$input `fill` `=` $fill attr-dict `:` type($result)";
  let hasVerifier = 1;
}

// Fused attention and its backward.
include "braid/Dialect/Braid/BraidAttentionOps.td"

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

def Braid_LayerNormOp : Braid_ComputeOp<"layer_norm", [InferTypeOpAdaptor,
    AllTypesMatch<["input", "result"]>, AllTypesMatch<["gamma", "beta"]>,
    AllTypesMatch<["mean", "rstd"]>, Braid_PerToken]> {
  let kernelTables = ["cuda_reduction", "cpu_norm"];
  let opcode = 40;
  let summary = "layer normalization over the trailing dimensions";
  let description = [{
    Normalizes over the trailing dimensions that `gamma` spans:
    `result = (input - mean) * rstd * gamma + beta`, with
    `rstd = 1 / sqrt(var + epsilon)`. Also yields `mean` and `rstd`, shaped as
    the leading dimensions, for the backward op.

    ```mlir
    %y, %mean, %rstd = braid.layer_norm %x, %g, %b eps = 1.000000e-05
        : tensor<8x128x768xf32>, tensor<768xf32> -> tensor<8x128xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input, Braid_FloatTensor:$gamma,
                       Braid_FloatTensor:$beta, F64Attr:$epsilon);
  let results = (outs Braid_FloatTensor:$result, Braid_FloatTensor:$mean,
                      Braid_FloatTensor:$rstd);
  let assemblyFormat = [{
    $input `,` $gamma `,` $beta `eps` `=` $epsilon attr-dict `:`
    type($input) `,` type($gamma) `->` type($mean)
  }];
  let hasVerifier = 1;
}

def Braid_LayerNormBackwardOp : Braid_ComputeOp<"layer_norm_backward", [
    AllTypesMatch<["grad", "input", "grad_input"]>,
    AllTypesMatch<["gamma", "grad_gamma", "grad_beta"]>,
    AllTypesMatch<["mean", "rstd"]>, Braid_PerToken]> {
  let kernelTables = ["cuda_reduction", "cpu_norm"];
  let opcode = 41;
  let summary = "gradients of layer_norm: dx, dgamma, dbeta";
  let description = [{
    From the gradient of the output, the forward input, its saved `mean` and
    `rstd` and `gamma`, computes the gradients of the input, of `gamma` and of
    `beta`.

    ```mlir
    %dx, %dg, %db = braid.layer_norm_backward %dy, %x, %mean, %rstd, %g
        : tensor<8x128x768xf32>, tensor<8x128xf32>, tensor<768xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$grad, Braid_FloatTensor:$input,
                       Braid_FloatTensor:$mean, Braid_FloatTensor:$rstd,
                       Braid_FloatTensor:$gamma);
  let results = (outs Braid_FloatTensor:$grad_input,
                      Braid_FloatTensor:$grad_gamma,
                      Braid_FloatTensor:$grad_beta);
  let assemblyFormat = [{
    $grad `,` $input `,` $mean `,` $rstd `,` $gamma attr-dict `:`
    type($input) `,` type($mean) `,` type($gamma)
  }];
  let hasVerifier = 1;
}

// The losses: negative log-likelihood, cross-entropy, their backward and the
// vocabulary-parallel cross-entropy's parts.
include "braid/Dialect/Braid/BraidLossOps.td"

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

def Braid_EmbeddingOp : Braid_ComputeOp<"embedding", [InferTypeOpAdaptor],
                                         ["getBytesRead"],
                                         ["localizeForSharding"]> {
  let opcode = 60;
  let summary = "gather rows of a table";
  let description = [{
    `result[i..., d] = table[ids[i...], d]`.

    ```mlir
    %e = braid.embedding %wte, %ids
        : tensor<50304x768xf32>, tensor<8x128xi64> -> tensor<8x128x768xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$table, Braid_IndexTensor:$ids);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $ids attr-dict `:` type($table) `,` type($ids) `->` type($result)
  }];
}

def Braid_EmbeddingBackwardOp
    : Braid_ComputeOp<"embedding_backward", [], [],
                      ["reshardResult", "localizeForSharding"]> {
  let kernelTables = ["cuda_reduction"];
  let opcode = 61;
  let summary = "scatter-add row gradients into a table gradient";
  let description = [{
    `result[v, d] = sum over i... with ids[i...] == v of grad[i..., d]`; the
    result type gives the table shape. With `padding_idx = P`
    (`torch.nn.Embedding(padding_idx=P)`), the tokens whose id is P add
    nothing: row P's gradient is zero.
  }];
  let arguments = (ins Braid_FloatTensor:$grad, Braid_IndexTensor:$ids,
                       OptionalAttr<I64Attr>:$padding_idx);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $ids (`padding_idx` `=` $padding_idx^)? attr-dict `:` type($grad)
    `,` type($ids) `->` type($result)
  }];
  let hasVerifier = 1;
}

/// The vocabulary-parallel embedding (Megatron's VocabParallelEmbedding):
/// each rank holds a shard of the table's rows, looks up the ids in its
/// shard and gives zero rows for the others; a sum over the group gives the
/// embedding. braid-tensor-parallel builds these from `braid.embedding` and
/// `braid.embedding_backward` for a table split along its rows.
def Braid_EmbeddingShardOp : Braid_ComputeOp<"embedding_shard", [Braid_ShardReplicated],
                                             ["getBytesRead"]> {
  let opcode = 62;
  let summary = "gather rows of one shard of a table, zero for the others";
  let description = [{
    `table` `[V, D]` holds rows `[index * V, (index + 1) * V)` of a table of
    `parts * V` rows: `result[i..., d] = table[ids[i...] - index * V, d]`
    for an id in the shard, 0 otherwise. An id outside `[0, parts * V)` is
    an error.

    ```mlir
    %e = braid.embedding_shard %wte, %ids, %index parts = 2
        : tensor<25152x768xf32>, tensor<8x128xi64> -> tensor<8x128x768xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$table, Braid_IndexTensor:$ids,
                       Braid_RankIndexTensor:$index, I64Attr:$parts);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $ids `,` $index `parts` `=` $parts attr-dict `:` type($table)
    `,` type($ids) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Braid_EmbeddingShardBackwardOp
    : Braid_ComputeOp<"embedding_shard_backward", [Braid_ShardReplicated]> {
  let kernelTables = ["cuda_reduction"];
  let opcode = 63;
  let summary = "scatter-add the row gradients of one shard of a table";
  let description = [{
    The rows `[index * V, (index + 1) * V)` of `braid.embedding_backward`,
    for a table of `parts * V` rows (the result type gives `[V, D]`); ids
    outside the shard add nothing. An id outside `[0, parts * V)` is an
    error. `padding_idx` is a row of the whole table, as
    `braid.embedding_backward`'s.
  }];
  let arguments = (ins Braid_FloatTensor:$grad, Braid_IndexTensor:$ids,
                       Braid_RankIndexTensor:$index, I64Attr:$parts,
                       OptionalAttr<I64Attr>:$padding_idx);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $ids `,` $index `parts` `=` $parts
    (`padding_idx` `=` $padding_idx^)? attr-dict `:` type($grad)
    `,` type($ids) `->` type($result)
  }];
  let hasVerifier = 1;
}

// Reshape, transpose, broadcast, slice, concat, constant and fill.
include "braid/Dialect/Braid/BraidDataMovementOps.td"

// The optimizer updates and gradient clipping.
include "braid/Dialect/Braid/BraidOptimizerOps.td"

// The collectives and the scheduling ops (wait, events).
include "braid/Dialect/Braid/BraidCollectiveOps.td"

#endif // BRAID_DIALECT_BRAID_BRAIDOPS_TD
