//===- BraidDataMovementOps.td - reshape, slice, ... -------*- tablegen -*-===//
//
// The ops that move data without arithmetic: braid.reshape, transpose,
// broadcast, slice, shard_slice, concat, constant and fill. Included by
// BraidOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_BRAIDDATAMOVEMENTOPS_TD
#define BRAID_DIALECT_BRAID_BRAIDDATAMOVEMENTOPS_TD

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

def Braid_ReshapeOp : Braid_ComputeOp<"reshape", [Braid_View],
                                      ["getBytesRead", "getBytesWritten"]> {
  let kernelTables = ["cpu_moves_bytes"];
  let opcode = 70;
  let summary = "reinterpret the shape, keeping the elements in order";
  let arguments = (ins Braid_Tensor:$input);
  let results = (outs Braid_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  // A reshape to its input's type is its input; a reshape of a reshape
  // reads the first one's input.
  let hasFolder = 1;
}

def Braid_TransposeOp : Braid_ComputeOp<"transpose", [InferTypeOpAdaptor]> {
  let kernelTables = ["cpu_moves_bytes"];
  let opcode = 71;
  let summary = "permute the dimensions";
  let description = [{
    `result` dimension `i` is `input` dimension `permutation[i]`.

    ```mlir
    %t = braid.transpose %x permutation = [0, 2, 1, 3]
        : tensor<8x128x12x64xf32> -> tensor<8x12x128x64xf32>
    ```
  }];
  let arguments = (ins Braid_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Braid_Tensor:$result);
  let assemblyFormat = [{
    $input `permutation` `=` $permutation attr-dict `:` type($input) `->` type($result)
  }];
  // The identity permutation is its input; a transpose of a transpose is
  // one transpose of the first one's input, by the composed permutation.
  let hasFolder = 1;
}

def Braid_BroadcastOp : Braid_ComputeOp<"broadcast"> {
  let kernelTables = ["cpu_moves_bytes"];
  let opcode = 72;
  let summary = "replicate a tensor along new dimensions";
  let description = [{
    `dims` lists, in increasing order, the result dimensions that the input
    does not have; the other result dimensions are the input's, in order.
    (The collective that sends one rank's tensor to the others is
    `braid.collective_broadcast`.)

    ```mlir
    %b = braid.broadcast %v dims = [0] : tensor<768xf32> -> tensor<1024x768xf32>
    ```
  }];
  let arguments = (ins Braid_Tensor:$input, DenseI64ArrayAttr:$dims);
  let results = (outs Braid_Tensor:$result);
  let assemblyFormat = [{
    $input `dims` `=` $dims attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Braid_SliceOp : Braid_ComputeOp<"slice", [], [], ["localizeForSharding"]> {
  let kernelTables = ["cpu_moves_bytes"];
  let opcode = 73;
  let summary = "a strided box of a tensor";
  let description = [{
    `result[i...] = input[offsets[k] + i[k] * strides[k] ...]`; the result
    type gives the sizes. `strides` defaults to all ones.

    ```mlir
    %q = braid.slice %qkv offsets = [0, 0] : tensor<1024x2304xf32> -> tensor<1024x768xf32>
    ```
  }];
  let arguments = (ins Braid_Tensor:$input, DenseI64ArrayAttr:$offsets,
                       OptionalAttr<DenseI64ArrayAttr>:$strides);
  let results = (outs Braid_Tensor:$result);
  let assemblyFormat = [{
    $input `offsets` `=` $offsets (`strides` `=` $strides^)? attr-dict `:`
    type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

// A rank's piece is per-rank already (braid-sequence-parallel makes it):
// Braid_ShardReplicated.
def Braid_ShardSliceOp : Braid_ComputeOp<"shard_slice", [Braid_ShardReplicated],
                                         ["getBytesRead"]> {
  let kernelTables = ["cpu_moves_bytes"];
  let opcode = 77;
  let summary = "one rank's piece of a whole tensor";
  let description = [{
    Piece `(index + shift) mod parts` of `input` cut into `parts` equal
    pieces along `dim`: with `shift` 0 (the default, not printed), what rank
    `index` of a group holds of a value split along `dim`. A local copy:
    braid-sequence-parallel cuts a whole value to a rank's tokens with it
    (`index` is `braid.axis_index`); braid-collective-matmul takes the piece
    that a ring step works on (the rank `-shift` behind, cyclically).

    ```mlir
    %x = braid.shard_slice %resid, %index dim = 0 parts = 2
        : tensor<1024x768xf32> -> tensor<512x768xf32>
    %y = braid.shard_slice %grad, %index dim = 0 parts = 4 shift = -1
        : tensor<1024x768xf32> -> tensor<256x768xf32>
    ```
  }];
  let arguments = (ins Braid_Tensor:$input, Braid_RankIndexTensor:$index,
                       I64Attr:$dim, I64Attr:$parts,
                       DefaultValuedAttr<I64Attr, "0">:$shift);
  let results = (outs Braid_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $index `dim` `=` $dim `parts` `=` $parts
    (`shift` `=` $shift^)? attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  // The rank's own piece of what its group gathered along `dim` is what it
  // sent: the gather's input (no copy, and the gather goes if nothing else
  // reads it).
  let hasCanonicalizeMethod = 1;
}

// Per-rank already, as shard_slice: Braid_ShardReplicated.
def Braid_ShardConcatOp : Braid_ComputeOp<"shard_concat", [InferTypeOpAdaptor,
    Braid_ShardReplicated]> {
  let kernelTables = ["cpu_moves_bytes"];
  let opcode = 78;
  let summary = "join pieces along one dimension, each at a rank-relative place";
  let description = [{
    The inverse of `braid.shard_slice` over all of a value's pieces: the
    result along `dim` is `n` blocks (`n` the number of `pieces`), and piece
    `k` fills block `(index + shifts[k]) mod n`. Each rank of a ring holds,
    after `k` steps, what the rank `k` behind it started with:
    braid-collective-matmul joins the products of a decomposed all-gather
    with it (`shifts = [0, -1, ..., 1 - n]`; a bidirectional ring
    alternates the two directions). The shifts are distinct modulo `n`, so
    every block is written once.

    ```mlir
    %y = braid.shard_concat %p0, %p1 at %index dim = 0 shifts = [0, -1]
        : tensor<512x768xf32>, tensor<512x768xf32> -> tensor<1024x768xf32>
    ```
  }];
  let arguments = (ins Variadic<Braid_Tensor>:$pieces,
                       Braid_RankIndexTensor:$index, I64Attr:$dim,
                       DenseI64ArrayAttr:$shifts);
  let results = (outs Braid_Tensor:$result);
  let assemblyFormat = [{
    $pieces `at` $index `dim` `=` $dim `shifts` `=` $shifts attr-dict `:`
    type($pieces) `->` type($result)
  }];
}

def Braid_ConcatOp : Braid_ComputeOp<"concat", [InferTypeOpAdaptor]> {
  let kernelTables = ["cpu_moves_bytes"];
  let opcode = 74;
  let summary = "join tensors along one dimension";
  let arguments = (ins Variadic<Braid_Tensor>:$inputs, I64Attr:$dim);
  let results = (outs Braid_Tensor:$result);
  let assemblyFormat = [{
    $inputs `dim` `=` $dim attr-dict `:` type($inputs) `->` type($result)
  }];
}

def Braid_ConstantOp : Braid_ComputeOp<"constant", [
    ConstantLike, AllTypesMatch<["value", "result"]>, Braid_ShardReplicated]> {
  let kernelTables = ["cpu_moves_bytes"];
  let opcode = 75;
  let summary = "a tensor of given elements";
  let description = [{
    ```mlir
    %one = braid.constant dense<1.000000e+00> : tensor<f32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Braid_Tensor:$result);
  let assemblyFormat = "$value attr-dict";
  let hasFolder = 1;
}

def Braid_FillOp : Braid_ComputeOp<"fill", [Braid_ShardReplicated]> {
  let opcode = 76;
  let summary = "a tensor with every element equal to one number";
  let description = [{
    ```mlir
    %z = braid.fill 0.000000e+00 : tensor<1024x768xf32>
    ```
  }];
  let arguments = (ins F64Attr:$value);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
}

#endif // BRAID_DIALECT_BRAID_BRAIDDATAMOVEMENTOPS_TD
