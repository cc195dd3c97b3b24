//===- BraidCollectiveOps.td - braid collectives -----------*- tablegen -*-===//
//
// The collectives, each a synchronous form and a start form from one
// `defm Braid_Collective`, and the scheduling ops their start forms need
// (braid.wait) with the cross-stream events. Included by BraidOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_BRAIDCOLLECTIVEOPS_TD
#define BRAID_DIALECT_BRAID_BRAIDCOLLECTIVEOPS_TD

//===----------------------------------------------------------------------===//
// Base classes
//===----------------------------------------------------------------------===//

/// The arguments every collective shares: the grid and the axes of it that
/// span the device group.
defvar Braid_CollectiveArgs =
    (ins FlatSymbolRefAttr:$grid, DenseI16ArrayAttr:$grid_axes);

/// One form of a collective. `kind` names the collective kind of the cost
/// model (braid::CollectiveKind); `verifier` is the C++ template that
/// verifies both forms.
class Braid_CollectiveOp<string mnemonic, Braid_CollectiveKind kind, bit start,
                         string verifier, string startFormDef,
                         list<Trait> traits = []>
    : Braid_Op<mnemonic, !listconcat(traits, [
        DeclareOpInterfaceMethods<SymbolUserOpInterface>,
        Braid_CollectiveOpInterface,
        DeclareOpInterfaceMethods<Braid_ShardingOpInterface,
                                  ["propagateSharding", "reshardResult"]>
      ])> {
  let collectiveKind = kind;
  let isStartForm = start;
  let instrKind = !if(start, Braid_CollectiveStartInstr, Braid_CollectiveInstr);
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The collective kind of the cost model, and which form this is.
    static constexpr ::braid::CollectiveKind kCollectiveKind =
        ::braid::CollectiveKind::}] # kind.name # [{;
    static constexpr bool kIsStartForm = }] # !if(start, "true", "false") # [{;
    ::mlir::Operation *buildStartForm(::mlir::OpBuilder &builder);
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::verify() {
      return }] # verifier # [{(*this);
    }
    ::llvm::LogicalResult
    $cppClass::verifySymbolUses(::mlir::SymbolTableCollection &table) {
      return }] # verifier # [{Grid(*this, table);
    }
    ::llvm::LogicalResult $cppClass::propagateSharding(
        ::llvm::ArrayRef<::braid::ShardingAttr> operands,
        ::llvm::SmallVectorImpl<::braid::ShardingAttr> &results) {
      return ::braid::detail::propagateCollectiveSharding(getOperation(), operands,
                                                          results);
    }
    ::llvm::LogicalResult $cppClass::reshardResult(unsigned result,
        ::braid::ShardingAttr wanted,
        ::llvm::ArrayRef<::braid::ShardingAttr> operands,
        ::llvm::SmallVectorImpl<::braid::ShardingAttr> &newOperands) {
      return ::braid::detail::reshardCollectiveResult(getOperation(), result,
                                                      wanted, operands,
                                                      newOperands);
    }
    ::mlir::Operation *$cppClass::buildStartForm(::mlir::OpBuilder &builder) {
      return }] # !if(start, "nullptr",
          "::braid::detail::buildStartForm(*this, builder, " #
          !subst("Braid_", "", startFormDef) # "::getOperationName())") # [{;
    }
  }];
}

/// A collective's synchronous form and its start form, from one definition:
/// `defm Braid_X` makes `Braid_XOp` (`mnemonic`, opcode `number`) and
/// `Braid_XStartOp` (`mnemonic_start`, opcode `number + 1`), with the same
/// arguments and verifier. The start form yields a `!braid.future` that
/// `braid.wait` turns into the synchronous form's results; its assembly is
/// the synchronous one unless `startFormat` is given.
multiclass Braid_Collective<string mnemonic, int number, Braid_CollectiveKind kind,
                            string verifier, dag args, dag syncResults,
                            dag startResults, string syncFormat,
                            string startFormat, string syncSummary,
                            string syncDescription, list<Trait> traits = []> {
  def Op : Braid_CollectiveOp<mnemonic, kind, 0, verifier,
                              NAME # "StartOp", traits> {
    let opcode = number;
    let summary = syncSummary;
    let description = syncDescription;
    let arguments = args;
    let results = syncResults;
    let assemblyFormat = syncFormat;
    let startForm = NAME # "StartOp";
  }
  def StartOp : Braid_CollectiveOp<mnemonic # "_start", kind, 1, verifier,
                                   "", traits> {
    let opcode = !add(number, 1);
    let summary = "start a `braid." # mnemonic # "`";
    let description = "The start form of `braid." # mnemonic # "`, with the "
        # "same operands and attributes; `braid.wait` on its future yields "
        # "the results.";
    let arguments = args;
    let results = startResults;
    let assemblyFormat = !if(!empty(startFormat), syncFormat, startFormat);
    let syncForm = NAME # "Op";
  }
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

defm Braid_AllReduce : Braid_Collective<"all_reduce", 100, Braid_AllReduceKind,
    "verifyAllReduce",
    !con((ins Variadic<Braid_Tensor>:$inputs), Braid_CollectiveArgs,
         (ins Braid_ReductionKind:$reduction,
              OptionalAttr<StrArrayAttr>:$grad_of,
              OptionalAttr<I64Attr>:$bucket_index,
              OptionalAttr<I64Attr>:$bucket_bytes)),
    (outs Variadic<Braid_Tensor>:$results),
    (outs Braid_FutureType:$future),
    [{
      $inputs `on` $grid `grid_axes` `=` $grid_axes `reduction` `=` $reduction
      (`grad_of` `=` $grad_of^)? attr-dict `:` type($inputs)
    }], "",
    "reduce tensors across a device group; every rank gets the result", [{
    Reduces each input across the ranks of the group that `grid_axes` span on
    `grid`. Several inputs form a bucket: one collective over their
    concatenation. `grad_of` names, per input, the parameter whose gradient
    it is; `bucket_index` and `bucket_bytes` describe a bucket built by
    `braid-bucket-gradients`.

    ```mlir
    shard.grid @world(shape = 8)
    %r = braid.all_reduce %g on @world grid_axes = [0] reduction = avg
        grad_of = ["fc1.weight"] : tensor<1024x784xf32>
    %f = braid.all_reduce_start %g0, %g1 on @world grid_axes = [0]
        reduction = avg : tensor<1024xf32>, tensor<10x1024xf32>
    %r:2 = braid.wait %f : !braid.future<tensor<1024xf32>, tensor<10x1024xf32>>
    ```
  }], [DeclareOpInterfaceMethods<InferTypeOpInterface>,
       DeclareOpInterfaceMethods<Braid_GradientCollectiveOpInterface>]>;

defm Braid_ReduceScatter : Braid_Collective<"reduce_scatter", 102,
    Braid_ReduceScatterKind, "verifyReduceScatter",
    !con((ins Braid_Tensor:$input), Braid_CollectiveArgs,
         (ins Braid_ReductionKind:$reduction, I64Attr:$scatter_dim,
              OptionalAttr<StrArrayAttr>:$grad_of,
              OptionalAttr<I64Attr>:$bucket_index,
              OptionalAttr<I64Attr>:$bucket_bytes)),
    (outs Braid_Tensor:$result), (outs Braid_FutureType:$result),
    [{
      $input `on` $grid `grid_axes` `=` $grid_axes `reduction` `=` $reduction
      `scatter_dim` `=` $scatter_dim (`grad_of` `=` $grad_of^)? attr-dict `:`
      type($input) `->` qualified(type($result))
    }], "",
    "reduce across a device group; each rank keeps one slice", [{
    Reduces `input` across the group, then splits the result along
    `scatter_dim` into as many slices as the group has ranks; rank `i` of the
    group keeps slice `i`. Like `braid.all_reduce` it may carry `grad_of`
    and a bucket (a sharded optimizer reduce-scatters its gradients).

    ```mlir
    %s = braid.reduce_scatter %x on @world grid_axes = [1] reduction = sum
        scatter_dim = 0 : tensor<1024x768xf32> -> tensor<512x768xf32>
    ```
  }], [DeclareOpInterfaceMethods<Braid_GradientCollectiveOpInterface>]>;

defm Braid_AllGather : Braid_Collective<"all_gather", 104, Braid_AllGatherKind,
    "verifyAllGather",
    !con((ins Braid_Tensor:$input), Braid_CollectiveArgs,
         (ins I64Attr:$gather_dim)),
    (outs Braid_Tensor:$result), (outs Braid_FutureType:$result),
    [{
      $input `on` $grid `grid_axes` `=` $grid_axes `gather_dim` `=` $gather_dim
      attr-dict `:` type($input) `->` qualified(type($result))
    }], "",
    "concatenate the ranks' tensors; every rank gets the whole", [{
    ```mlir
    %g = braid.all_gather %x on @world grid_axes = [1] gather_dim = 0
        : tensor<512x768xf32> -> tensor<1024x768xf32>
    ```
  }]>;

defm Braid_AllToAll : Braid_Collective<"all_to_all", 106, Braid_AllToAllKind,
    "verifyAllToAll",
    !con((ins Braid_Tensor:$input), Braid_CollectiveArgs,
         (ins I64Attr:$split_dim, I64Attr:$concat_dim)),
    (outs Braid_Tensor:$result), (outs Braid_FutureType:$result),
    [{
      $input `on` $grid `grid_axes` `=` $grid_axes `split_dim` `=` $split_dim
      `concat_dim` `=` $concat_dim attr-dict `:` type($input) `->`
      qualified(type($result))
    }], "",
    "split along one dimension, exchange, concatenate along another", [{
    Rank `i` sends slice `j` of its input along `split_dim` to rank `j` of
    the group, and concatenates what it receives along `concat_dim`.
  }]>;

defm Braid_CollectiveBroadcast : Braid_Collective<"collective_broadcast", 108,
    Braid_BroadcastKind, "verifyCollectiveBroadcast",
    !con((ins Braid_Tensor:$input), Braid_CollectiveArgs, (ins I64Attr:$root)),
    (outs Braid_Tensor:$result), (outs Braid_FutureType:$result),
    [{
      $input `on` $grid `grid_axes` `=` $grid_axes `root` `=` $root attr-dict
      `:` type($input) `->` qualified(type($result))
    }], "",
    "every rank of the group gets the root rank's tensor", [{
    `root` is the index of the sending rank within the group. (The name
    follows StableHLO, which, like braid, keeps `broadcast` for the shape op.)
  }]>;

defm Braid_Send : Braid_Collective<"send", 110, Braid_SendKind, "verifySend",
    !con((ins Braid_Tensor:$input), Braid_CollectiveArgs, (ins I64Attr:$peer)),
    (outs), (outs Braid_FutureType:$future),
    [{
      $input `on` $grid `grid_axes` `=` $grid_axes `peer` `=` $peer attr-dict
      `:` type($input)
    }], [{
      $input `on` $grid `grid_axes` `=` $grid_axes `peer` `=` $peer attr-dict
      `:` type($input) `->` qualified(type($future))
    }],
    "send a tensor to one peer of the group (pipeline stages)", [{
    `peer` is the index of the receiving rank within the group. The start
    form's future holds no value.

    ```mlir
    braid.send %act on @world grid_axes = [1] peer = 1 : tensor<8x128x768xf32>
    ```
  }]>;

defm Braid_Recv : Braid_Collective<"recv", 112, Braid_RecvKind, "verifyRecv",
    !con(Braid_CollectiveArgs, (ins I64Attr:$peer)),
    (outs Braid_Tensor:$result), (outs Braid_FutureType:$future),
    [{
      `on` $grid `grid_axes` `=` $grid_axes `peer` `=` $peer attr-dict
      `:` type($result)
    }], [{
      `on` $grid `grid_axes` `=` $grid_axes `peer` `=` $peer attr-dict
      `:` qualified(type($future))
    }],
    "receive a tensor from one peer of the group", [{
    `peer` is the index of the sending rank within the group.
  }]>;

defm Braid_SendRecv : Braid_Collective<"send_recv", 118, Braid_SendRecvKind,
    "verifySendRecv",
    !con((ins Variadic<Braid_Tensor>:$inputs), Braid_CollectiveArgs,
         (ins I64Attr:$send_peer, I64Attr:$recv_peer)),
    (outs Variadic<Braid_Tensor>:$results), (outs Braid_FutureType:$future),
    [{
      $inputs `on` $grid `grid_axes` `=` $grid_axes `send_peer` `=` $send_peer
      `recv_peer` `=` $recv_peer attr-dict `:` type($inputs) `->`
      type($results)
    }], [{
      $inputs `on` $grid `grid_axes` `=` $grid_axes `send_peer` `=` $send_peer
      `recv_peer` `=` $recv_peer attr-dict `:` type($inputs) `->`
      qualified(type($future))
    }],
    "send to one peer and receive from one, all posted at once", [{
    Sends each of `inputs` to rank `send_peer` of the group and receives each
    of `results` from rank `recv_peer`, all posted at once, as MPI's
    `MPI_Sendrecv`, NCCL's grouped `ncclSend`/`ncclRecv` and torch's
    `batch_isend_irecv` do; it completes when all of them have. Its sends
    are the rank's next sends to `send_peer`, in order, and its receives its
    next receives from `recv_peer`: each matches the peer's `braid.send` or
    `braid.recv` as well as a part of the peer's `braid.send_recv`, in the
    order of each direction. Inputs and results need not have one type.

    A pair of stages that each send before they receive deadlocks when
    sends are rendezvous; issued together, the exchange cannot. 1F1B's
    steady state is built on it: stage `i` sends the activation of one
    micro-batch forward while it receives the gradient of an earlier one
    back from the same peer (several tensors each way where several values
    cross the boundary).

    ```mlir
    %grad = braid.send_recv %act on @world grid_axes = [1] send_peer = 2
        recv_peer = 2 : tensor<8x128x768xf32> -> tensor<8x128x768xf32>
    %f = braid.send_recv_start %a, %b on @world grid_axes = [1] send_peer = 1
        recv_peer = 1 : tensor<8x768xf32>, tensor<8xf32>
        -> !braid.future<tensor<8x768xf32>, tensor<8xf32>>
    ```
  }]>;

defm Braid_CollectivePermute : Braid_Collective<"collective_permute", 114,
    Braid_PermuteKind, "verifyCollectivePermute",
    !con((ins Braid_Tensor:$input), Braid_CollectiveArgs, (ins SI64Attr:$offset)),
    (outs Braid_Tensor:$result), (outs Braid_FutureType:$result),
    [{
      $input `on` $grid `grid_axes` `=` $grid_axes `offset` `=` $offset
      attr-dict `:` type($input) `->` qualified(type($result))
    }], "",
    "send to the rank `offset` ahead in the group, receive from the one behind", [{
    Every rank `i` of the group sends its tensor to rank `(i + offset) mod n`
    and receives the tensor of rank `(i - offset) mod n`, as XLA's
    collective-permute and upstream `shard.shift` with a cyclic shift do.
    The result has the input's type. Ring-style collective matmul and
    pipeline transfers are built on it.

    ```mlir
    %next = braid.collective_permute %chunk on @world grid_axes = [1]
        offset = 1 : tensor<512x768xf32> -> tensor<512x768xf32>
    ```
  }]>;

defm Braid_AxisIndex : Braid_Collective<"axis_index", 116, Braid_AxisIndexKind,
    "verifyAxisIndex", Braid_CollectiveArgs,
    (outs 0DTensorOf<[I64]>:$result), (outs Braid_FutureType:$result),
    [{
      `on` $grid `grid_axes` `=` $grid_axes attr-dict `:` type($result)
    }], [{
      `on` $grid `grid_axes` `=` $grid_axes attr-dict `:`
      qualified(type($result))
    }],
    "this rank's index in the group", [{
    The index of the rank within the group that `grid_axes` span, as JAX's
    `axis_index` and upstream `shard.process_linear_index` give it. It
    communicates nothing; it is a collective because its value is the
    group's (braid-tensor-parallel uses it to find a rank's shard of a
    table split by rows). It costs nothing in the cost model.

    ```mlir
    %i = braid.axis_index on @world grid_axes = [1] : tensor<i64>
    ```
  }]>;

//===----------------------------------------------------------------------===//
// Scheduling
//===----------------------------------------------------------------------===//

def Braid_WaitOp : Braid_Op<"wait", [
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let instrKind = Braid_WaitInstr;
  let opcode = 200;
  let summary = "wait for a collective and yield its values";
  let description = [{
    Each future is waited exactly once (checked by `braid-verify-schedule`);
    the results are the future's value types.
  }];
  let arguments = (ins Braid_FutureType:$future);
  let results = (outs Variadic<Braid_Tensor>:$results);
  let assemblyFormat = "$future attr-dict `:` qualified(type($future))";
}

def Braid_RecordEventOp : Braid_Op<"record_event"> {
  let instrKind = Braid_RecordEventInstr;
  let opcode = 201;
  let summary = "mark the current point of this op's stream";
  let description = [{
    Everything issued before it on its stream (`braid.stream`) happens before
    any op issued after a `braid.wait_event` on the event.

    ```mlir
    %e = braid.record_event {braid.stream = #braid.stream<compute, 0>}
    braid.wait_event %e {braid.stream = #braid.stream<comm, 0>}
    ```
  }];
  let results = (outs Braid_EventType:$event);
  let assemblyFormat = "attr-dict";
}

def Braid_WaitEventOp : Braid_Op<"wait_event"> {
  let instrKind = Braid_WaitEventInstr;
  let opcode = 202;
  let summary = "make this op's stream wait for an event of another stream";
  let arguments = (ins Braid_EventType:$event);
  let assemblyFormat = "$event attr-dict";
}

#endif // BRAID_DIALECT_BRAID_BRAIDCOLLECTIVEOPS_TD
