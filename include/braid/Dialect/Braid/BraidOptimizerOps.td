//===- BraidOptimizerOps.td - optimizers and clipping ------*- tablegen -*-===//
//
// The optimizer updates (braid.sgd, braid.adamw, braid.lion) and gradient clipping's
// ops (braid.sum_squares, braid.clip_coefficient). Included by BraidOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_BRAIDOPTIMIZEROPS_TD
#define BRAID_DIALECT_BRAID_BRAIDOPTIMIZEROPS_TD

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

def Braid_SgdOp : Braid_UpdateOp<"sgd", [0, 2], [AttrSizedOperandSegments,
    AllTypesMatch<["param", "grad", "momentum_buffer", "new_param",
                   "new_momentum_buffer"]>]> {
  let opcode = 80;
  let summary = "one SGD step with momentum, as torch.optim.SGD";
  let description = [{
    With `g = grad + weight_decay * param`:
    `buf' = momentum * buf + (1 - dampening) * g`, then
    `param' = param - lr * (nesterov ? g + momentum * buf' : buf')`.
    (torch initializes the buffer to `g` on the first step; the exporter
    writes the buffer accordingly.)

    The learning rate is a constant (`lr = 1.0e-02`) or, under a schedule,
    a scalar f32 operand (`lr = %lr`, typically a `hyperparameter` argument
    of the step that the runtime writes before each step); exactly one of
    the two. With `grad_scale = %c` (a scalar f32: gradient clipping's
    factor), the update uses `c * grad` for `grad`, as
    `clip_grad_norm_` before `optimizer.step()` does, without a pass of
    its own over the gradient.

    ```mlir
    %w2, %m2 = braid.sgd %w, %dw, %m lr = 1.000000e-02 momentum = 9.000000e-01
        weight_decay = 0.000000e+00 : tensor<1024x784xf32>
    %w3, %m3 = braid.sgd %w, %dw, %m lr = %lr grad_scale = %c
        momentum = 9.000000e-01 weight_decay = 0.000000e+00 : tensor<1024x784xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$param, Braid_FloatTensor:$grad,
                       Braid_FloatTensor:$momentum_buffer,
                       Optional<Braid_F32ScalarTensor>:$scheduled_lr,
                       Optional<Braid_F32ScalarTensor>:$grad_scale,
                       OptionalAttr<F64Attr>:$lr,
                       F64Attr:$momentum, F64Attr:$weight_decay,
                       DefaultValuedAttr<F64Attr, "0.0">:$dampening,
                       UnitAttr:$nesterov);
  let results = (outs Braid_FloatTensor:$new_param,
                      Braid_FloatTensor:$new_momentum_buffer);
  let assemblyFormat = [{
    $param `,` $grad `,` $momentum_buffer `lr` `=` ($scheduled_lr^):($lr)?
    (`grad_scale` `=` $grad_scale^)?
    `momentum` `=` $momentum `weight_decay` `=` $weight_decay attr-dict `:`
    type($param)
  }];
  let hasVerifier = 1;
}

def Braid_AdamWOp : Braid_UpdateOp<"adamw", [0, 2, 3], [AttrSizedOperandSegments,
    Braid_StepCountOpInterface,
    AllTypesMatch<["param", "grad", "exp_avg", "exp_avg_sq", "new_param",
                   "new_exp_avg", "new_exp_avg_sq"]>]> {
  let opcode = 81;
  let summary = "one AdamW step, as torch.optim.AdamW";
  let description = [{
    `step` is the 1-based number of this update (a scalar). With bias
    corrections `c1 = 1 - beta1^step`, `c2 = 1 - beta2^step`:
    `param -= lr * weight_decay * param`,
    `m' = beta1 * m + (1 - beta1) * grad`,
    `v' = beta2 * v + (1 - beta2) * grad^2`,
    `param' = param - lr * (m' / c1) / (sqrt(v' / c2) + eps)`.
    The learning rate is a constant or a scalar f32 operand, and
    `grad_scale` scales the gradient, as for `braid.sgd`.

    ```mlir
    %w2, %m2, %v2 = braid.adamw %w, %dw, %m, %v, %step lr = 3.000000e-04
        beta1 = 9.000000e-01 beta2 = 9.990000e-01 eps = 1.000000e-08
        weight_decay = 1.000000e-01 : tensor<768x768xf32>, tensor<f32>
    %w3, %m3, %v3 = braid.adamw %w, %dw, %m, %v, %step lr = %lr grad_scale = %c
        beta1 = 9.000000e-01 beta2 = 9.990000e-01 eps = 1.000000e-08
        weight_decay = 1.000000e-01 : tensor<768x768xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$param, Braid_FloatTensor:$grad,
                       Braid_FloatTensor:$exp_avg, Braid_FloatTensor:$exp_avg_sq,
                       Braid_ScalarTensor:$step,
                       Optional<Braid_F32ScalarTensor>:$scheduled_lr,
                       Optional<Braid_F32ScalarTensor>:$grad_scale,
                       OptionalAttr<F64Attr>:$lr, F64Attr:$beta1,
                       F64Attr:$beta2, F64Attr:$eps, F64Attr:$weight_decay);
  let results = (outs Braid_FloatTensor:$new_param,
                      Braid_FloatTensor:$new_exp_avg,
                      Braid_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $step
    `lr` `=` ($scheduled_lr^):($lr)? (`grad_scale` `=` $grad_scale^)?
    `beta1` `=` $beta1 `beta2` `=` $beta2 `eps` `=` $eps
    `weight_decay` `=` $weight_decay attr-dict `:` type($param) `,` type($step)
  }];
  let hasVerifier = 1;
}

def Braid_LionOp : Braid_UpdateOp<"lion", [0, 2], [AttrSizedOperandSegments,
    AllTypesMatch<["param", "grad", "exp_avg", "new_param", "new_exp_avg"]>]> {
  let opcode = 84;
  let summary = "one Lion step (Chen et al. 2023), as braid.optimizers.Lion";
  let description = [{
    The sign of an interpolation of the momentum and the gradient:
    `param -= lr * weight_decay * param`,
    `param' = param - lr * sign(beta1 * m + (1 - beta1) * grad)`,
    `m' = beta2 * m + (1 - beta2) * grad` (sign(0) = 0, as torch.sign). Every
    entry moves by exactly lr (or not at all) besides the decay. The
    learning rate is a constant or a scalar f32 operand, and `grad_scale`
    scales the gradient, as for `braid.sgd`.

    ```mlir
    %w2, %m2 = braid.lion %w, %dw, %m lr = 1.000000e-04 beta1 = 9.000000e-01
        beta2 = 9.900000e-01 weight_decay = 1.000000e+00 : tensor<768x768xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$param, Braid_FloatTensor:$grad,
                       Braid_FloatTensor:$exp_avg,
                       Optional<Braid_F32ScalarTensor>:$scheduled_lr,
                       Optional<Braid_F32ScalarTensor>:$grad_scale,
                       OptionalAttr<F64Attr>:$lr, F64Attr:$beta1,
                       F64Attr:$beta2, F64Attr:$weight_decay);
  let results = (outs Braid_FloatTensor:$new_param,
                      Braid_FloatTensor:$new_exp_avg);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg
    `lr` `=` ($scheduled_lr^):($lr)? (`grad_scale` `=` $grad_scale^)?
    `beta1` `=` $beta1 `beta2` `=` $beta2
    `weight_decay` `=` $weight_decay attr-dict `:` type($param)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Gradient clipping (torch.nn.utils.clip_grad_norm_)
//===----------------------------------------------------------------------===//

def Braid_SumSquaresOp : Braid_ComputeOp<"sum_squares"> {
  let kernelTables = ["cuda_reduction"];
  let opcode = 82;
  let summary = "the sum of the squares of every element of the inputs";
  let description = [{
    A scalar f32: `sum_i sum(inputs[i]^2)`, accumulated in f64 on the cpu
    backend. Gradient clipping adds up its partial sums (one per bucket or
    gradient) into the squared global norm. Over tensor-parallel ranks, the
    sum of inputs that are all split is a partial sum (reduced over the
    axis where it meets a replicated value); the sum of replicated inputs
    is replicated.

    ```mlir
    %s = braid.sum_squares %dw1, %db1 : tensor<1024x784xf32>, tensor<1024xf32>
        -> tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<Braid_FloatTensor>:$inputs);
  let results = (outs Braid_F32ScalarTensor:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` type($inputs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Braid_ClipCoefficientOp
    : Braid_ComputeOp<"clip_coefficient", [SameOperandsAndResultType,
                                            Braid_ShardReplicated]> {
  let opcode = 83;
  let summary = "the factor that clips gradients to a global norm";
  let description = [{
    From the squared global norm `s` of the gradients, torch's
    `clip_grad_norm_` factor: `min(1, max_norm / (sqrt(s) + 1e-6))`, which
    the optimizer updates take as their `grad_scale`. A non-finite norm
    gives a non-finite factor (as torch, without `error_if_nonfinite`), so
    the update goes NaN rather than silently on.

    ```mlir
    %c = braid.clip_coefficient %s max_norm = 1.000000e+00 : tensor<f32>
    ```
  }];
  let arguments = (ins Braid_F32ScalarTensor:$input, F64Attr:$max_norm);
  let results = (outs Braid_F32ScalarTensor:$result);
  let assemblyFormat = "$input `max_norm` `=` $max_norm attr-dict `:` type($result)";
  let hasVerifier = 1;
}

#endif // BRAID_DIALECT_BRAID_BRAIDOPTIMIZEROPS_TD
