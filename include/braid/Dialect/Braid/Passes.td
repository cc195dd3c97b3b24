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
    $ braid-opt --braid-cost-summary examples/mlp.mlir -o /dev/null
    braid cost summary: @mlp_step
      compute ops                     22
      flops                           ...
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
