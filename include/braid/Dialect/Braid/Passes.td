//===- Passes.td - braid passes ----------------------------*- tablegen -*-===//

#ifndef BRAID_DIALECT_BRAID_PASSES_TD
#define BRAID_DIALECT_BRAID_PASSES_TD

include "mlir/Pass/PassBase.td"

def CostSummary : Pass<"braid-cost-summary", "mlir::ModuleOp"> {
  let summary = "Print the cost of each training step in the module";
  let description = [{
    For every function of the module, adds up the cost that the ops report
    through `CostOpInterface` and `CollectiveOpInterface` and prints a
    summary: floating-point operations, bytes read and written, the
    collectives and the bytes they move, the parameters, and the gradient
    bytes to reduce (the inputs of collectives that carry `grad_of`). The IR
    is not changed.

    ```
    $ braid-opt --braid-cost-summary=top-ops=1 examples/mlp.mlir -o /dev/null
    braid cost summary: @mlp_step
      compute ops               18
      flops                     214608700 (214.61 MFLOP)
      bytes read                15581348 (14.86 MiB)
      bytes written             11087488 (10.57 MiB)
      collectives               4 (4 all_reduce)
      collective bytes          3256360 (3.11 MiB)
      parameter tensors         4
      parameter elements        814090
      parameter bytes           3256360 (3.11 MiB)
      gradient bytes to reduce  3256360 (3.11 MiB)
      top ops by flops:
        braid.matmul                      5 ops  209453056 (97.6%)
    ```
  }];
  let options = [
    Option<"topOps", "top-ops", "unsigned", /*default=*/"5",
           "How many op kinds to list, by flops (0 lists none)">
  ];
  let statistics = [
    Statistic<"numComputeOps", "compute-ops", "Compute ops summarized">,
    Statistic<"numCollectives", "collectives", "Collectives summarized">
  ];
}

#endif // BRAID_DIALECT_BRAID_PASSES_TD
