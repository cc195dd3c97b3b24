//===- BraidTypes.td - braid types -------------------------*- tablegen -*-===//

#ifndef BRAID_DIALECT_BRAID_BRAIDTYPES_TD
#define BRAID_DIALECT_BRAID_BRAIDTYPES_TD

include "braid/Dialect/Braid/Braid.td"
include "mlir/IR/AttrTypeBase.td"

class Braid_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Braid_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Braid_FutureType : Braid_Type<"Future", "future"> {
  let summary = "the values of a collective still in flight";
  let description = [{
    A future is yielded by the start form of a collective
    (`braid.all_reduce_start`, ...) and turned into the collective's values by
    exactly one `braid.wait`. It holds the types of those values, in order; a
    collective that yields nothing (`braid.send_start`) yields
    `!braid.future<>`.

    ```mlir
    %f = braid.all_reduce_start %g on @world grid_axes = [0] reduction = sum
        : tensor<1024xf32>
    ...
    %r = braid.wait %f : !braid.future<tensor<1024xf32>>
    ```
  }];
  let parameters = (ins ArrayRefParameter<"::mlir::Type", "value types">:$valueTypes);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Braid_EventType : Braid_Type<"Event", "event"> {
  let summary = "a point in one stream that another stream can wait for";
  let description = [{
    Yielded by `braid.record_event` on the stream that produced a value and
    consumed by `braid.wait_event` on the stream that uses it.
  }];
}

#endif // BRAID_DIALECT_BRAID_BRAIDTYPES_TD
