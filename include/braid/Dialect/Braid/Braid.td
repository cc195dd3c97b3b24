//===- Braid.td - braid dialect definition -----------------*- tablegen -*-===//
//
// The braid dialect: one training step (forward, backward, optimizer,
// collectives) at graph level, and the same step scheduled for overlap.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_BRAID_TD
#define BRAID_DIALECT_BRAID_BRAID_TD

include "mlir/IR/OpBase.td"

def Braid_Dialect : Dialect {
  let name = "braid";
  let cppNamespace = "::braid";
  let summary = "Distributed training steps that overlap communication";
  let description = [{
    The braid dialect describes one training step of a neural network:
    forward, backward, optimizer update and the collectives that keep the
    data-parallel, tensor-parallel or pipeline replicas consistent.

    It is used at two levels. At graph level, ops are value-semantic on ranked
    tensors with static shapes, program order is any topological order, and
    collectives are synchronous (`braid.all_reduce` returns the reduced
    tensor). At scheduled level, program order is the issue order, every op
    carries a `braid.stream` attribute, collectives are split into a start
    that yields a `!braid.future` and a `braid.wait` that yields the values,
    and cross-stream dependencies are ordered by `braid.record_event` and
    `braid.wait_event`.

    Collectives name a `shard.grid` and the grid axes they run over, as the
    upstream `shard` dialect does. Function arguments and results carry a
    `braid.role` attribute saying which are parameters, optimizer state, batch
    inputs and the loss; gradient collectives say which parameter they belong
    to with `grad_of`.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// The discardable attribute naming the stream an op runs on.
    static constexpr ::llvm::StringLiteral kStreamAttrName = "braid.stream";
    /// The argument and result attribute naming the role of a value.
    static constexpr ::llvm::StringLiteral kRoleAttrName = "braid.role";
    /// The discardable attribute of `braid-plan-memory`: the arena offset of
    /// each result of an op (-1 for a result that is not a tensor).
    static constexpr ::llvm::StringLiteral kOffsetsAttrName = "braid.offsets";
    /// The argument attribute of `braid-plan-memory`: an argument's offset.
    static constexpr ::llvm::StringLiteral kOffsetAttrName = "braid.offset";
    /// The module attribute naming the cluster the step is compiled for (a
    /// preset or a JSON file; braid-compile --cluster). The cost-model
    /// passes use it unless given a cluster, and the plan records it.
    static constexpr ::llvm::StringLiteral kClusterAttrName = "braid.cluster";
    /// The argument and result attribute saying how a value of a
    /// tensor-parallel step is spread over the tensor-parallel ranks; on a
    /// braid.send or braid.recv of a pipeline stage's program, how the value
    /// it carries is (braid-pipeline writes it for a shared parameter's
    /// values, braid-tensor-parallel reads it and drops it).
    static constexpr ::llvm::StringLiteral kShardingAttrName = "braid.sharding";
    /// The function attribute of `braid-tensor-parallel`: the grid and the
    /// axis the function was partitioned over,
    /// `{axis = 1 : i64, grid = @world}`.
    static constexpr ::llvm::StringLiteral kTensorParallelAttrName =
        "braid.tensor_parallel";
    /// The function attribute of a step whose optimizer state
    /// braid-shard-data-parallel sharded (ZeRO):
    /// `#braid.data_parallel<grid = @world, axis = 0, zero_stage = 1>`.
    static constexpr ::llvm::StringLiteral kDataParallelAttrName =
        "braid.data_parallel";
    /// The module attribute asking braid-compile for a ZeRO stage (0, 1 or
    /// 2; braid.models --zero, braid.export's zero_stage) unless --zero is
    /// given: `braid.zero_stage = 1 : i64`.
    static constexpr ::llvm::StringLiteral kZeroStageAttrName =
        "braid.zero_stage";
    /// The argument and result attribute of a value that holds the rank's
    /// piece along this dimension over the data-parallel axis (an i64).
    static constexpr ::llvm::StringLiteral kDataParallelSplitAttrName =
        "braid.data_parallel_split";
    /// The function attribute of a pipeline stage's program:
    /// `#braid.stage<grid = @world, axis = 1, index = 0>`.
    static constexpr ::llvm::StringLiteral kStageAttrName = "braid.stage";
    /// The module attribute asking braid-pipeline to split the step:
    /// `#braid.pipeline<axis = 0, micro_batches = 4, schedule = "1f1b",
    /// boundaries = ["h2"]>` (all but the axis optional; braid.models --pp
    /// and braid.export write it).
    static constexpr ::llvm::StringLiteral kPipelineAttrName = "braid.pipeline";
    /// The most micro-batches (and virtual stages) a pipeline may ask for:
    /// each is unrolled into the stage programs, and products with them
    /// (batch sizes, stage counts) stay far from overflow. braid-pipeline
    /// also refuses a count whose unrolled programs would exceed
    /// kMaxUnrolledOps.
    static constexpr int64_t kMaxMicroBatches = int64_t(1) << 16;
    /// The most ops braid-pipeline unrolls a step into (micro-batches x the
    /// step's ops): about 1 GB of IR.
    static constexpr int64_t kMaxUnrolledOps = int64_t(1) << 22;
    /// The op attribute braid-pipeline tags each op of a stage program's
    /// actions with: a #braid.action (`#braid.action<F, micro_batch = 3>`,
    /// micro-batch 3's forward; B its backward, or B where the schedule
    /// splits it; W its W). The plan and the simulator's trace carry it
    /// (the pipeline diagram).
    static constexpr ::llvm::StringLiteral kActionAttrName = "braid.action";
    /// The op attribute braid-pipeline gives each transfer of a stage
    /// program: one #braid.transfer per value it moves, the sent ones
    /// first (braid-verify-schedule matches sends and receives by it).
    static constexpr ::llvm::StringLiteral kTransfersAttrName =
        "braid.transfers";
    /// The function attribute of an evaluation program (braid.export's
    /// `evaluation=True`): the training step it evaluates,
    /// `braid.evaluates = @gpt_step`. Its parameter arguments are the step's
    /// (by name and type), it takes a batch and returns one loss, and
    /// braid-share-arena places it in the step's arena.
    static constexpr ::llvm::StringLiteral kEvaluatesAttrName =
        "braid.evaluates";
    /// The function attribute of `braid-plan-memory`: the arena size.
    static constexpr ::llvm::StringLiteral kArenaBytesAttrName =
        "braid.arena_bytes";

    /// The role names of `func`'s arguments, built once per version of its
    /// argument attributes and type, so that checks by name cost O(1) and a
    /// step with thousands of parameters verifies in linear time.
    const RoleTable &getRoleTable(::mlir::FunctionOpInterface func);

  private:
    std::mutex roleTablesMutex;
    ::llvm::DenseMap<std::pair<const void *, const void *>,
                     std::unique_ptr<RoleTable>> roleTables;

    void registerTypes();
    void registerAttributes();
  public:
  }];
}

/// What a plan instruction of an op is (braid::plan::InstrKind): one def a
/// kind, so that a kind that does not exist is a TableGen error, not a
/// string the op-table generator finds wrong later.
class Braid_InstrKind<string kindName> {
  string name = kindName;
}
def Braid_KernelInstr : Braid_InstrKind<"Kernel">;
def Braid_CollectiveInstr : Braid_InstrKind<"Collective">;
def Braid_CollectiveStartInstr : Braid_InstrKind<"CollectiveStart">;
def Braid_WaitInstr : Braid_InstrKind<"Wait">;
def Braid_RecordEventInstr : Braid_InstrKind<"RecordEvent">;
def Braid_WaitEventInstr : Braid_InstrKind<"WaitEvent">;

/// A collective's kind in the cost model (braid::CollectiveKind,
/// common/include/braid-common/CollectiveKind.h), one def a kind.
class Braid_CollectiveKind<string kindName> {
  string name = kindName;
}
def Braid_AllReduceKind : Braid_CollectiveKind<"AllReduce">;
def Braid_ReduceScatterKind : Braid_CollectiveKind<"ReduceScatter">;
def Braid_AllGatherKind : Braid_CollectiveKind<"AllGather">;
def Braid_AllToAllKind : Braid_CollectiveKind<"AllToAll">;
def Braid_BroadcastKind : Braid_CollectiveKind<"Broadcast">;
def Braid_SendKind : Braid_CollectiveKind<"Send">;
def Braid_RecvKind : Braid_CollectiveKind<"Recv">;
def Braid_SendRecvKind : Braid_CollectiveKind<"SendRecv">;
def Braid_PermuteKind : Braid_CollectiveKind<"Permute">;
def Braid_AxisIndexKind : Braid_CollectiveKind<"AxisIndex">;

/// A braid op. Besides what mlir-tblgen reads, each op declares what the
/// plan and the runtime know it by (common/gen-op-table.py generates their
/// tables from these fields; docs/Architecture.md):
class Braid_Op<string mnemonic, list<Trait> traits = []>
    : Op<Braid_Dialect, mnemonic, traits> {
  /// The op's number in plan files: unique, stable, never reused.
  int opcode = 0;
  /// What a plan instruction of this op is (braid::plan::InstrKind): a
  /// Braid_InstrKind, Braid_KernelInstr for compute ops.
  Braid_InstrKind instrKind = ?;
  /// For result i, the operand it may overwrite element for element (an
  /// optimizer update); set through Braid_UpdateOp, which also implements
  /// InPlaceOpInterface from it.
  list<int> inPlaceOperands = [];
  /// For a collective, its kind in the cost model (braid::CollectiveKind).
  Braid_CollectiveKind collectiveKind = ?;
  /// For a collective: whether this is the start form, and the def of the
  /// other form.
  bit isStartForm = 0;
  string startForm = "";
  string syncForm = "";
  /// The backends' second-level kernel tables that run this op (such as
  /// "cuda_elementwise"), or the kernel classes it belongs to (the cpu's
  /// "cpu_moves_bytes": kernels that copy bytes of any type): common/gen-op-table.py writes each table's case
  /// list, and the list of every other opcode, so that the dispatcher
  /// routes the table's ops with one macro and the table's own switch has
  /// a case for each of them and no default.
  list<string> kernelTables = [];
}

#endif // BRAID_DIALECT_BRAID_BRAID_TD
