//===- BraidInterfaces.td - braid op interfaces ------------*- tablegen -*-===//

#ifndef BRAID_DIALECT_BRAID_BRAIDINTERFACES_TD
#define BRAID_DIALECT_BRAID_BRAIDINTERFACES_TD

include "mlir/IR/OpBase.td"

def Braid_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::braid";
  let description = [{
    The cost of one compute op: the floating-point operations it performs and
    the bytes it reads and writes in device memory. One cost model serves the
    passes and the simulator; every compute and optimizer op implements it.
    Data movement that needs no kernel (a reshape) costs nothing.
  }];
  let methods = [
    InterfaceMethod<"Floating-point operations performed.",
      "uint64_t", "getFlops">,
    InterfaceMethod<"Bytes read from device memory.",
      "uint64_t", "getBytesRead", (ins), [{}], [{
        return ::braid::sumTensorBytes($_op->getOperandTypes());
      }]>,
    InterfaceMethod<"Bytes written to device memory.",
      "uint64_t", "getBytesWritten", (ins), [{}], [{
        return ::braid::sumTensorBytes($_op->getResultTypes());
      }]>
  ];
}

def Braid_CollectiveOpInterface : OpInterface<"CollectiveOpInterface"> {
  let cppNamespace = "::braid";
  let description = [{
    A collective over the device group that the grid axes of a `shard.grid`
    span. Synchronous collectives and the start forms of asynchronous ones
    implement it.
  }];
  let methods = [
    InterfaceMethod<"The grid the collective runs on.",
      "::mlir::FlatSymbolRefAttr", "getGridAttr">,
    InterfaceMethod<"The grid axes that span the device group.",
      "::llvm::ArrayRef<int16_t>", "getGridAxes">,
    InterfaceMethod<[{
        Bytes of the payload one rank contributes (its input tensors; for a
        receive, the tensor it receives).
      }],
      "uint64_t", "getCommBytes", (ins), [{
        return ::braid::detail::getCollectiveCommBytes($_op.getOperation());
      }]>,
    InterfaceMethod<"Whether this is the start form, yielding a future.",
      "bool", "isAsync", (ins), [{
        return ::braid::detail::isAsyncCollective($_op.getOperation());
      }]>
  ];
}

#endif // BRAID_DIALECT_BRAID_BRAIDINTERFACES_TD
