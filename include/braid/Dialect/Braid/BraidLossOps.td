//===- BraidLossOps.td - losses ----------------------------*- tablegen -*-===//
//
// braid.nll_loss, braid.cross_entropy and their backward, and the parts of
// the vocabulary-parallel cross-entropy that braid-tensor-parallel writes
// (shard statistics, the loss from them, the backward from them). Included
// by BraidOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_BRAIDLOSSOPS_TD
#define BRAID_DIALECT_BRAID_BRAIDLOSSOPS_TD

/// The losses take an optional `ignore_index`, as torch's: a row whose
/// label equals it adds nothing to the loss, gets a zero gradient, and is
/// not counted in the mean (which is NaN when every row is ignored).
class Braid_LossOp<string mnemonic, list<Trait> traits = [],
                   list<string> shardingOverrides = []>
    : Braid_ComputeOp<mnemonic, traits, [], shardingOverrides> {
  let arguments = (ins Braid_FloatTensor:$input, Braid_IndexTensor:$labels,
                       DefaultValuedAttr<Braid_LossReduction,
                                         "::braid::LossReduction::Mean">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Braid_ScalarTensor:$result);
  let assemblyFormat = [{
    $input `,` $labels `reduction` `=` $reduction
    (`ignore_index` `=` $ignore_index^)? attr-dict `:`
    type($input) `,` type($labels) `->` type($result)
  }];
  let hasVerifier = 1;
}

class Braid_LossBackwardOp<string mnemonic, list<Trait> traits = [],
                           list<string> shardingOverrides = []>
    : Braid_ComputeOp<mnemonic, !listconcat(traits,
                                            [AllTypesMatch<["input", "result"]>]),
                      [], shardingOverrides> {
  let arguments = (ins Braid_ScalarTensor:$grad, Braid_FloatTensor:$input,
                       Braid_IndexTensor:$labels,
                       DefaultValuedAttr<Braid_LossReduction,
                                         "::braid::LossReduction::Mean">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input `,` $labels `reduction` `=` $reduction
    (`ignore_index` `=` $ignore_index^)? attr-dict `:`
    type($grad) `,` type($input) `,` type($labels)
  }];
  let hasVerifier = 1;
}

def Braid_NllLossOp : Braid_LossOp<"nll_loss", [Braid_ShardReplicated]> {
  let kernelTables = ["cuda_reduction", "cpu_loss"];
  let opcode = 50;
  let summary = "negative log-likelihood of labels under log-probabilities";
  let description = [{
    `input` is `[N, C]` log-probabilities, `labels` `[N]` class indices; the
    result is `-mean(input[i, labels[i]])` (or the sum) over the rows whose
    label is not `ignore_index`.

    ```mlir
    %loss = braid.nll_loss %logp, %labels reduction = mean ignore_index = -100
        : tensor<1024x50304xf32>, tensor<1024xi64> -> tensor<f32>
    ```
  }];
}

def Braid_NllLossBackwardOp
    : Braid_LossBackwardOp<"nll_loss_backward", [Braid_ShardReplicated]> {
  let kernelTables = ["cuda_reduction", "cpu_loss"];
  let opcode = 51;
  let summary = "gradient of nll_loss with respect to the log-probabilities";
}

def Braid_CrossEntropyOp
    : Braid_LossOp<"cross_entropy", [], ["localizeForSharding"]> {
  let kernelTables = ["cuda_reduction", "cpu_loss"];
  let opcode = 52;
  let summary = "cross-entropy of labels under logits (log_softmax + nll_loss)";
  let description = [{
    ```mlir
    %loss = braid.cross_entropy %logits, %labels reduction = mean
        : tensor<1024x50304xf32>, tensor<1024xi64> -> tensor<f32>
    ```
  }];
}

def Braid_CrossEntropyBackwardOp
    : Braid_LossBackwardOp<"cross_entropy_backward", [], ["localizeForSharding"]> {
  let kernelTables = ["cuda_reduction", "cpu_loss"];
  let opcode = 53;
  let summary = "gradient of cross_entropy with respect to the logits";
  let description = [{
    `result = grad * (softmax(input) - onehot(labels))`, divided by `N` for
    the mean.
  }];
}

/// The vocabulary-parallel cross-entropy (Megatron's
/// vocab_parallel_cross_entropy): each rank holds the logits of one shard of
/// the classes, `cross_entropy_shard_stats` summarizes them per row, an
/// all-gather over the group brings every shard's summary, and
/// `cross_entropy_shard_loss` and `cross_entropy_shard_backward` finish from
/// those. braid-tensor-parallel builds this from `braid.cross_entropy`.
// The shard ops are what braid-tensor-parallel makes of the cross-entropy of
// a split of the classes: per-rank programs, not partitioned again
// (Braid_ShardReplicated).
def Braid_CrossEntropyShardStatsOp
    : Braid_ComputeOp<"cross_entropy_shard_stats", [Braid_ShardReplicated]> {
  let kernelTables = ["cuda_reduction", "cpu_loss"];
  let opcode = 54;
  let summary = "per-row summary of one shard of the logits";
  let description = [{
    `logits` `[N, C]` are the columns `[index * C, (index + 1) * C)` of
    logits with `parts * C` classes. Row `i` of the `[1, N, 3]` result is
    `(m, s, t)`: the row's largest logit `m`, `sum(exp(logits[i] - m))`, and
    the logit of `labels[i]` if this shard holds it, else 0. A label outside
    `[0, parts * C)` is an error, except `ignore_index`: an ignored row's
    summary is `(0, 0, 0)` (a real one has `s >= 1`), which
    `cross_entropy_shard_loss` skips.

    ```mlir
    %s = braid.cross_entropy_shard_stats %logits, %labels, %index parts = 2
        : tensor<1024x25152xf32>, tensor<1024xi64> -> tensor<1x1024x3xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$logits, Braid_IndexTensor:$labels,
                       Braid_RankIndexTensor:$index, I64Attr:$parts,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $index `parts` `=` $parts
    (`ignore_index` `=` $ignore_index^)? attr-dict `:`
    type($logits) `,` type($labels) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Braid_CrossEntropyShardLossOp
    : Braid_ComputeOp<"cross_entropy_shard_loss", [Braid_ShardReplicated]> {
  let kernelTables = ["cuda_reduction", "cpu_loss"];
  let opcode = 55;
  let summary = "cross-entropy from every shard's summary";
  let description = [{
    `stats` `[P, N, 3]` holds `cross_entropy_shard_stats` of each of the `P`
    shards. With `M = max_p m_p`, `S = sum_p s_p exp(m_p - M)` and
    `T = sum_p t_p` per row, the loss of a row is `log(S) + M - T`; the
    result is their mean (or sum): `braid.cross_entropy` of the whole
    logits. A row with `S = 0` (every shard's summary `(0, 0, 0)`: its label
    was ignored) adds nothing and is not counted in the mean.

    ```mlir
    %loss = braid.cross_entropy_shard_loss %stats reduction = mean
        : tensor<2x1024x3xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$stats,
                       DefaultValuedAttr<Braid_LossReduction,
                                         "::braid::LossReduction::Mean">:$reduction);
  let results = (outs Braid_ScalarTensor:$result);
  let assemblyFormat = [{
    $stats `reduction` `=` $reduction attr-dict `:` type($stats) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Braid_CrossEntropyShardBackwardOp
    : Braid_ComputeOp<"cross_entropy_shard_backward",
                      [AllTypesMatch<["logits", "result"]>, Braid_ShardReplicated]> {
  let kernelTables = ["cuda_reduction", "cpu_loss"];
  let opcode = 56;
  let summary = "gradient of the cross-entropy for one shard of the logits";
  let description = [{
    The columns of this shard of `braid.cross_entropy_backward`:
    `grad * (exp(logits - M) / S - onehot(labels - index * C))`, divided by
    `N` for the mean, with `M` and `S` from `stats` (every shard's
    summary, as `cross_entropy_shard_loss` takes it). A row whose label is
    `ignore_index` gets a zero gradient and is not counted in `N`.

    ```mlir
    %d = braid.cross_entropy_shard_backward %g, %logits, %labels, %stats,
        %index reduction = mean : tensor<f32>, tensor<1024x25152xf32>,
        tensor<1024xi64>, tensor<2x1024x3xf32>
    ```
  }];
  let arguments = (ins Braid_ScalarTensor:$grad, Braid_FloatTensor:$logits,
                       Braid_IndexTensor:$labels, Braid_FloatTensor:$stats,
                       Braid_RankIndexTensor:$index,
                       DefaultValuedAttr<Braid_LossReduction,
                                         "::braid::LossReduction::Mean">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $logits `,` $labels `,` $stats `,` $index `reduction` `=`
    $reduction (`ignore_index` `=` $ignore_index^)? attr-dict `:`
    type($grad) `,` type($logits) `,` type($labels) `,` type($stats)
  }];
  let hasVerifier = 1;
}

#endif // BRAID_DIALECT_BRAID_BRAIDLOSSOPS_TD
