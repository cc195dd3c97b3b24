//===- BraidDialect.cpp - braid dialect -------------------------*- C++ -*-===//
//
// Registration of the dialect and verification of the attributes braid puts on
// other ops: `braid.role` on function arguments and results, `braid.stream` on
// scheduled ops, and the memory plan (`braid.offset`, `braid.offsets`,
// `braid.arena_bytes`).
//
//===----------------------------------------------------------------------===//

#include "braid/Dialect/Braid/BraidDialect.h"
#include "braid/Dialect/Braid/Analysis/PipelineSchedule.h"
#include "braid/Dialect/Braid/BraidAttributes.h"
#include "braid/Dialect/Braid/BraidOps.h"
#include "braid/Dialect/Braid/BraidTypes.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace braid;

#include "braid/Dialect/Braid/BraidOpsDialect.cpp.inc"

void BraidDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "braid/Dialect/Braid/BraidOps.cpp.inc"
      >();
  registerTypes();
  registerAttributes();
}

/// The role attribute of argument `index` of `func`, if any.
static RoleAttr getArgRole(FunctionOpInterface func, unsigned index) {
  return func.getArgAttrOfType<RoleAttr>(index, BraidDialect::kRoleAttrName);
}

const RoleTable &BraidDialect::getRoleTable(FunctionOpInterface func) {
  // Attributes and types are uniqued and immutable: a changed argument list
  // is a new key, and the cache lives as long as the context.
  std::pair<const void *, const void *> key = {
      func.getArgAttrsAttr() ? func.getArgAttrsAttr().getAsOpaquePointer()
                             : nullptr,
      func.getFunctionType().getAsOpaquePointer()};
  std::lock_guard<std::mutex> lock(roleTablesMutex);
  std::unique_ptr<RoleTable> &table = roleTables[key];
  if (!table) {
    table = std::make_unique<RoleTable>();
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
      if (RoleAttr role = getArgRole(func, i))
        table->firstArgument.try_emplace(role.getName(), i);
  }
  return *table;
}

/// Checks a `braid.sharding` on argument or result `what` of type `type`
/// (or a value a transfer carries): a sharding the value can have (not
/// partial: every argument and result of a partitioned step is whole or
/// split), with the dimension in range
/// and blocks that sum to it.
static LogicalResult verifyShardingOf(Operation *op, const Twine &what,
                                      Attribute attr, Type type) {
  auto sharding = dyn_cast<ShardingAttr>(attr);
  if (!sharding)
    return op->emitError() << what << ": '" << BraidDialect::kShardingAttrName
                           << "' must be a #braid.sharding attribute, but is "
                           << attr;
  if (sharding.isPartial() || !sharding.getPartialAxes().empty())
    return op->emitError() << what
                           << " cannot be partial: a step's arguments and "
                              "results, and the values its transfers carry, "
                              "are replicated or split";
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (sharding.hasGridAxes()) {
    // Over grid axes: each split dimension in range; the blocks, global
    // sizes, checked by braid-tensor-parallel against the grid it
    // partitions.
    int64_t rank = tensor ? tensor.getRank() : 0;
    if (!tensor || int64_t(sharding.getSplitAxes().size()) > rank)
      return op->emitError()
             << what << " is " << sharding.str() << ", which splits "
             << sharding.getSplitAxes().size() << " dimensions, but has type "
             << type;
    return success();
  }
  if (!sharding.isSplit())
    return success();
  if (!tensor || sharding.getDim() >= tensor.getRank())
    return op->emitError() << what << " is split along dimension "
                           << sharding.getDim() << ", but has type " << type;
  if (sharding.getBlocks().empty())
    return success();
  int64_t sum = 0;
  for (int64_t b : sharding.getBlocks())
    sum += b;
  int64_t size = tensor.getDimSize(sharding.getDim());
  // A partitioned function's types are local and its blocks global sizes:
  // each block cut into one piece per rank of the tensor-parallel axis, the
  // pieces making the local dimension (what braid-run copies by).
  auto tp = op->getAttrOfType<TensorParallelAttr>(
      BraidDialect::kTensorParallelAttrName);
  if (!tp) {
    if (sum != size)
      return op->emitError()
             << what << " is " << sharding.str() << ", whose blocks sum to "
             << sum << ", but dimension " << sharding.getDim() << " has size "
             << size;
    return success();
  }
  FlatSymbolRefAttr grid = tp.getGrid();
  int64_t axis = tp.getAxis();
  auto gridOp = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(op, grid);
  // The attribute's users name a grid or axis that is not there.
  if (!gridOp || axis >= gridOp.getRank() ||
      ShapedType::isDynamic(gridOp.getShape()[axis]))
    return success();
  int64_t ranks = gridOp.getShape()[axis];
  for (int64_t b : sharding.getBlocks())
    if (b % ranks != 0)
      return op->emitError()
             << what << " is " << sharding.str() << ", whose block of " << b
             << " does not cut into the " << ranks
             << " ranks of tensor-parallel axis " << axis << " of " << grid;
  if (sum / ranks != size)
    return op->emitError() << what << " is " << sharding.str()
                           << ", whose blocks make a piece "
                           << "of " << sum / ranks << " on each of the "
                           << ranks << " ranks of tensor-parallel axis " << axis
                           << " of " << grid << ", but its local dimension "
                           << sharding.getDim() << " has size " << size;
  return success();
}

/// `braid.data_parallel_split` on `what` of type `type` of a function: a
/// dimension of the value, on a function that braid-shard-data-parallel
/// marked.
static LogicalResult verifyDataParallelSplit(Operation *op, const Twine &what,
                                             Attribute value, Type type) {
  auto dim = dyn_cast<IntegerAttr>(value);
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!dim || !tensor || dim.getInt() < 0 || dim.getInt() >= tensor.getRank())
    return op->emitError() << what << ": '"
                           << BraidDialect::kDataParallelSplitAttrName
                           << "' must be a dimension of its " << type
                           << ", but is " << value;
  if (!op->hasAttr(BraidDialect::kDataParallelAttrName))
    return op->emitError() << what << " has '"
                           << BraidDialect::kDataParallelSplitAttrName
                           << "', but the function has no '"
                           << BraidDialect::kDataParallelAttrName << "'";
  return success();
}

LogicalResult BraidDialect::verifyRegionArgAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned argIndex,
                                                     NamedAttribute attr) {
  if (attr.getName() == kOffsetAttrName) {
    auto offset = dyn_cast<IntegerAttr>(attr.getValue());
    if (!offset || offset.getValue().isNegative())
      return op->emitError()
             << "argument #" << argIndex << ": '" << kOffsetAttrName
             << "' must be a non-negative integer, but is " << attr.getValue();
    return success();
  }
  if (attr.getName() == kShardingAttrName) {
    auto func = dyn_cast<FunctionOpInterface>(op);
    return func ? verifyShardingOf(op, "argument #" + Twine(argIndex),
                                   attr.getValue(),
                                   func.getArgumentTypes()[argIndex])
                : success();
  }
  if (attr.getName() == kDataParallelSplitAttrName) {
    auto func = dyn_cast<FunctionOpInterface>(op);
    return func ? verifyDataParallelSplit(op, "argument #" + Twine(argIndex),
                                          attr.getValue(),
                                          func.getArgumentTypes()[argIndex])
                : success();
  }
  if (attr.getName() != kRoleAttrName)
    return op->emitError() << "argument #" << argIndex
                           << " has unknown braid attribute '"
                           << attr.getName().getValue() << "'";
  auto role = dyn_cast<RoleAttr>(attr.getValue());
  if (!role)
    return op->emitError() << "argument #" << argIndex << ": '" << kRoleAttrName
                           << "' must be a #braid.role attribute, but is "
                           << attr.getValue();
  if (role.getKind() == RoleKind::Loss)
    return op->emitError() << "argument #" << argIndex
                           << ": role 'loss' is only for function results";
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func)
    return success();
  Type type = func.getArgumentTypes()[argIndex];
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return op->emitError() << "argument #" << argIndex << " ('"
                           << role.getName()
                           << "') must be a statically shaped tensor, but is "
                           << type;
  if (role.getKind() == RoleKind::Hyperparameter &&
      (tensor.getRank() != 0 || !tensor.getElementType().isF32()))
    return op->emitError() << "argument #" << argIndex << " ('"
                           << role.getName()
                           << "'): a hyperparameter is a scalar f32 tensor "
                              "(tensor<f32>), but is "
                           << type;
  unsigned first = getRoleTable(func).firstArgument.lookup(role.getName());
  if (first != argIndex)
    return op->emitError() << "argument #" << argIndex << " repeats the name '"
                           << role.getName() << "' of argument #" << first;
  return success();
}

LogicalResult BraidDialect::verifyRegionResultAttribute(Operation *op,
                                                        unsigned regionIndex,
                                                        unsigned resultIndex,
                                                        NamedAttribute attr) {
  if (attr.getName() == kShardingAttrName) {
    auto func = dyn_cast<FunctionOpInterface>(op);
    return func ? verifyShardingOf(op, "result #" + Twine(resultIndex),
                                   attr.getValue(),
                                   func.getResultTypes()[resultIndex])
                : success();
  }
  if (attr.getName() == kDataParallelSplitAttrName) {
    auto func = dyn_cast<FunctionOpInterface>(op);
    return func ? verifyDataParallelSplit(op, "result #" + Twine(resultIndex),
                                          attr.getValue(),
                                          func.getResultTypes()[resultIndex])
                : success();
  }
  if (attr.getName() != kRoleAttrName)
    return op->emitError() << "result #" << resultIndex
                           << " has unknown braid attribute '"
                           << attr.getName().getValue() << "'";
  auto role = dyn_cast<RoleAttr>(attr.getValue());
  if (!role)
    return op->emitError() << "result #" << resultIndex << ": '"
                           << kRoleAttrName
                           << "' must be a #braid.role attribute, but is "
                           << attr.getValue();
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func)
    return success();
  Type type = func.getResultTypes()[resultIndex];
  switch (role.getKind()) {
  case RoleKind::Batch:
  case RoleKind::Hyperparameter:
    return op->emitError() << "result #" << resultIndex << ": role '"
                           << stringifyRoleKind(role.getKind())
                           << "' is only for function arguments";
  case RoleKind::Loss: {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || tensor.getRank() != 0 ||
        !isa<FloatType>(tensor.getElementType()))
      return op->emitError() << "result #" << resultIndex
                             << ": the loss must be a rank-0 float tensor, "
                                "but is "
                             << type;
    return success();
  }
  case RoleKind::Parameter:
  case RoleKind::OptimizerState: {
    const RoleTable &table = getRoleTable(func);
    auto it = table.firstArgument.find(role.getName());
    if (it == table.firstArgument.end())
      return op->emitError()
             << "result #" << resultIndex << " is the updated "
             << stringifyRoleKind(role.getKind()) << " '" << role.getName()
             << "', but no argument has that name";
    unsigned i = it->second;
    RoleAttr arg = getArgRole(func, i);
    if (arg.getKind() != role.getKind())
      return op->emitError()
             << "result #" << resultIndex << " is the updated "
             << stringifyRoleKind(role.getKind()) << " '" << role.getName()
             << "', but argument #" << i << " of that name is "
             << stringifyRoleKind(arg.getKind());
    if (func.getArgumentTypes()[i] != type)
      return op->emitError()
             << "result #" << resultIndex << " is the updated '"
             << role.getName() << "' of type " << type << ", but argument #"
             << i << " has type " << func.getArgumentTypes()[i];
    return success();
  }
  }
  return success();
}

/// `braid.evaluates = @step` on an evaluation program: a function of the
/// same module whose parameters are the step's (by name and type), that
/// takes a batch and returns one loss.
static LogicalResult verifyEvaluates(Operation *op, Attribute value) {
  auto ref = dyn_cast<FlatSymbolRefAttr>(value);
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!ref || !func)
    return op->emitError() << "'" << BraidDialect::kEvaluatesAttrName
                           << "' must be a symbol (@step) on a function";
  auto step = dyn_cast_or_null<FunctionOpInterface>(
      SymbolTable::lookupNearestSymbolFrom(op, ref));
  if (!step || step == func)
    return op->emitError() << "'" << BraidDialect::kEvaluatesAttrName
                           << "' names " << ref
                           << ", which is not another function of the module";
  llvm::StringMap<Type> stepParams;
  for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i)
    if (auto role =
            step.getArgAttrOfType<RoleAttr>(i, BraidDialect::kRoleAttrName);
        role && role.getKind() == RoleKind::Parameter)
      stepParams[role.getName()] = step.getArgumentTypes()[i];
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    auto role = func.getArgAttrOfType<RoleAttr>(i, BraidDialect::kRoleAttrName);
    if (!role || (role.getKind() != RoleKind::Parameter &&
                  role.getKind() != RoleKind::Batch))
      return op->emitError()
             << "an evaluation program takes parameters and a batch, but "
                "argument #"
             << i << " is " << (role ? "not one of them" : "without a role");
    if (role.getKind() != RoleKind::Parameter)
      continue;
    auto it = stepParams.find(role.getName());
    if (it == stepParams.end())
      return op->emitError()
             << "the evaluation program's parameter '" << role.getName()
             << "' is not a parameter of " << ref;
    if (it->second != func.getArgumentTypes()[i])
      return op->emitError()
             << "the evaluation program's parameter '" << role.getName()
             << "' is " << func.getArgumentTypes()[i] << ", but " << ref
             << " takes " << it->second;
  }
  auto loss =
      func.getNumResults() == 1
          ? func.getResultAttrOfType<RoleAttr>(0, BraidDialect::kRoleAttrName)
          : RoleAttr();
  if (!loss || loss.getKind() != RoleKind::Loss)
    return op->emitError()
           << "an evaluation program returns one result, its loss";
  return success();
}

LogicalResult BraidDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  if (attr.getName() == kClusterAttrName) {
    if (!isa<ModuleOp>(op) || !isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'" << kClusterAttrName
                             << "' must be a string on a builtin.module";
    return success();
  }
  if (attr.getName() == kStreamAttrName) {
    if (!isa<StreamAttr>(attr.getValue()))
      return op->emitError() << "'" << kStreamAttrName
                             << "' must be a #braid.stream attribute, but is "
                             << attr.getValue();
    return success();
  }
  if (attr.getName() == kOffsetsAttrName) {
    auto offsets = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!offsets)
      return op->emitError()
             << "'" << kOffsetsAttrName << "' must be an array<i64>, but is "
             << attr.getValue();
    if (offsets.size() != static_cast<int64_t>(op->getNumResults()))
      return op->emitError() << "'" << kOffsetsAttrName << "' has "
                             << offsets.size() << " entries, but the op has "
                             << op->getNumResults() << " results";
    for (auto [i, result] : llvm::enumerate(op->getResults())) {
      bool tensor = isa<RankedTensorType>(result.getType());
      if (tensor && offsets[i] < 0)
        return op->emitError()
               << "'" << kOffsetsAttrName << "' gives tensor result #" << i
               << " the negative offset " << offsets[i];
      if (!tensor && offsets[i] != -1)
        return op->emitError() << "'" << kOffsetsAttrName << "' gives result #"
                               << i << ", which is not a tensor, offset "
                               << offsets[i] << " instead of -1";
    }
    return success();
  }
  if (attr.getName() == kTensorParallelAttrName) {
    if (!isa<FunctionOpInterface>(op) ||
        !isa<TensorParallelAttr>(attr.getValue()))
      return op->emitError()
             << "'" << kTensorParallelAttrName
             << "' must be a #braid.tensor_parallel<grid = @grid, axis = N> "
                "on a function";
    return success();
  }
  if (attr.getName() == kZeroStageAttrName) {
    auto stage = dyn_cast<IntegerAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !stage || stage.getInt() < 0 ||
        stage.getInt() > 2)
      return op->emitError() << "'" << kZeroStageAttrName
                             << "' must be a ZeRO stage braid builds (0, 1 or "
                                "2) on a builtin.module, but is "
                             << attr.getValue();
    return success();
  }
  if (attr.getName() == kDataParallelAttrName) {
    if (!isa<FunctionOpInterface>(op) ||
        !isa<DataParallelAttr>(attr.getValue()))
      return op->emitError()
             << "'" << kDataParallelAttrName
             << "' must be a #braid.data_parallel<grid = @grid, axis = N, "
                "zero_stage = S> on a function";
    return success();
  }
  if (attr.getName() == kEvaluatesAttrName)
    return verifyEvaluates(op, attr.getValue());
  if (attr.getName() == kTransfersAttrName) {
    auto transfers = dyn_cast<ArrayAttr>(attr.getValue());
    auto collective = dyn_cast<CollectiveOpInterface>(op);
    CollectiveKind kind =
        collective ? collective.getCollectiveKind() : CollectiveKind::None;
    bool pointToPoint = kind == CollectiveKind::Send ||
                        kind == CollectiveKind::Recv ||
                        kind == CollectiveKind::SendRecv;
    if (!pointToPoint || !transfers ||
        !llvm::all_of(transfers, llvm::IsaPred<TransferAttr>))
      return op->emitError() << "'" << kTransfersAttrName
                             << "' must be an array of #braid.transfer on a "
                                "send, a receive or a send-receive";
    // One per value moved: the operands, then the results (a start
    // form's future's values).
    size_t moved = op->getNumOperands();
    for (Type t : op->getResultTypes())
      moved +=
          isa<FutureType>(t) ? cast<FutureType>(t).getValueTypes().size() : 1;
    if (transfers.size() != moved)
      return op->emitError() << "'" << kTransfersAttrName << "' names "
                             << transfers.size() << " transfers, but the op "
                             << "moves " << moved << " values";
    return success();
  }
  if (attr.getName() == kStageAttrName) {
    if (!isa<FunctionOpInterface>(op) || !isa<StageAttr>(attr.getValue()))
      return op->emitError()
             << "'" << kStageAttrName
             << "' must be a #braid.stage attribute on a function, but is "
             << attr.getValue();
    return success();
  }
  if (attr.getName() == kPipelineAttrName) {
    if (!isa<ModuleOp>(op) || !isa<PipelineAttr>(attr.getValue()))
      return op->emitError()
             << "'" << kPipelineAttrName
             << "' must be a #braid.pipeline attribute on a builtin.module "
                "(#braid.pipeline<axis = 0, micro_batches = 4, schedule = "
                "\"1f1b\", boundaries = [\"h2\"]>, all but the axis "
                "optional), but is "
             << attr.getValue();
    return success();
  }
  if (attr.getName() == kActionAttrName) {
    if (!isa<ActionAttr>(attr.getValue()))
      return op->emitError()
             << "'" << kActionAttrName
             << "' must be a #braid.action naming an action of a pipeline "
                "schedule (#braid.action<F, micro_batch = 3>), but is "
             << attr.getValue();
    return success();
  }
  if (attr.getName() == kShardingAttrName) {
    // On a transfer of a pipeline stage's program: how the value it carries
    // is spread over the tensor-parallel ranks (braid-pipeline writes it,
    // braid-tensor-parallel reads and drops it).
    if (isa<SendOp>(op))
      return verifyShardingOf(op, "the value sent", attr.getValue(),
                              op->getOperand(0).getType());
    if (isa<RecvOp>(op))
      return verifyShardingOf(op, "the value received", attr.getValue(),
                              op->getResult(0).getType());
    // A send-receive's: the values sent, then those received.
    auto all = dyn_cast<ArrayAttr>(attr.getValue());
    unsigned sent = op->getNumOperands();
    if (isa<SendRecvOp>(op) && all &&
        all.size() == sent + op->getNumResults()) {
      for (auto [i, a] : llvm::enumerate(all.getValue()))
        if (failed(verifyShardingOf(
                op,
                i < sent ? "sent value #" + Twine(i)
                         : "received value #" + Twine(i - sent),
                a,
                i < sent ? op->getOperand(i).getType()
                         : op->getResult(i - sent).getType())))
          return failure();
      return success();
    }
    return op->emitError()
           << "'" << kShardingAttrName
           << "' is an argument or result attribute of a function, a "
              "#braid.sharding on a braid.send or braid.recv, or an array of "
              "one for each value a braid.send_recv sends and receives";
  }
  if (attr.getName() == kArenaBytesAttrName) {
    auto bytes = dyn_cast<IntegerAttr>(attr.getValue());
    if (!isa<FunctionOpInterface>(op) || !bytes ||
        bytes.getValue().isNegative())
      return op->emitError()
             << "'" << kArenaBytesAttrName
             << "' must be a non-negative integer on a function";
    return success();
  }
  return op->emitError() << "unknown braid attribute '"
                         << attr.getName().getValue() << "'";
}
