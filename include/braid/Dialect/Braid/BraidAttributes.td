//===- BraidAttributes.td - braid attributes ---------------*- tablegen -*-===//

#ifndef BRAID_DIALECT_BRAID_BRAIDATTRIBUTES_TD
#define BRAID_DIALECT_BRAID_BRAIDATTRIBUTES_TD

include "braid/Dialect/Braid/Braid.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Braid_ReductionKind : I32EnumAttr<"ReductionKind",
    "how a collective combines the values of the ranks", [
  I32EnumAttrCase<"Sum", 0, "sum">,
  I32EnumAttrCase<"Avg", 1, "avg">,
  I32EnumAttrCase<"Max", 2, "max">,
  I32EnumAttrCase<"Min", 3, "min">
]> {
  let cppNamespace = "::braid";
}

def Braid_LossReduction : I32EnumAttr<"LossReduction",
    "how a loss combines the per-sample losses", [
  I32EnumAttrCase<"Mean", 0, "mean">,
  I32EnumAttrCase<"Sum", 1, "sum">
]> {
  let cppNamespace = "::braid";
}

def Braid_RoleKind : I32EnumAttr<"RoleKind",
    "what a function argument or result is to the training step", [
  I32EnumAttrCase<"Parameter", 0, "parameter">,
  I32EnumAttrCase<"OptimizerState", 1, "optimizer_state">,
  I32EnumAttrCase<"Batch", 2, "batch">,
  I32EnumAttrCase<"Loss", 3, "loss">
]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::braid";
}

def Braid_StreamKind : I32EnumAttr<"StreamKind",
    "what a stream is for", [
  I32EnumAttrCase<"Compute", 0, "compute">,
  I32EnumAttrCase<"Comm", 1, "comm">
]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::braid";
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

class Braid_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Braid_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Braid_RoleAttr : Braid_Attr<"Role", "role"> {
  let summary = "the role of a function argument or result in a training step";
  let description = [{
    Marks a function argument as a `parameter`, an `optimizer_state` buffer or
    a `batch` input, and a function result as the updated value of a
    `parameter` or `optimizer_state` argument (same name, same type) or as the
    `loss`. The name is how the runtime binds values to files, and how a
    gradient collective's `grad_of` names its parameter.

    ```mlir
    func.func @step(%w: tensor<1024x784xf32>
                        {braid.role = #braid.role<parameter "fc1.weight">})
        -> (tensor<1024x784xf32> {braid.role = #braid.role<parameter "fc1.weight">})
    ```
  }];
  let parameters = (ins
    EnumParameter<Braid_RoleKind>:$kind,
    StringRefParameter<"the name of the value">:$name
  );
  let assemblyFormat = "`<` $kind $name `>`";
  let genVerifyDecl = 1;
}

def Braid_StreamAttr : Braid_Attr<"Stream", "stream"> {
  let summary = "the stream an op runs on in a scheduled step";
  let description = [{
    Scheduled IR names the stream of every op with the discardable attribute
    `braid.stream`: the compute stream `#braid.stream<compute, 0>` (braid
    has one) or one of the communication streams `#braid.stream<comm, N>`,
    N below `braid::kMaxCommStreams` (64, `braid-common/Streams.h`).
  }];
  let parameters = (ins
    EnumParameter<Braid_StreamKind>:$kind,
    "unsigned":$index
  );
  let assemblyFormat = "`<` $kind `,` $index `>`";
  let genVerifyDecl = 1;
}

#endif // BRAID_DIALECT_BRAID_BRAIDATTRIBUTES_TD
