//===- PlanWriter.cpp - one program's plan table ----------------*- C++ -*-===//
//
// Walks one function of a scheduled module in program order and builds its
// table of common/schema/plan.fbs: a buffer per tensor (offsets from
// braid-plan-memory), an instruction list per stream (each op by its opcode
// and its attributes by their ids in the generated op table), events,
// futures, device groups, and the argument and result bindings.
//
//===----------------------------------------------------------------------===//

#include "PlanWriter.h"

#include "braid/Dialect/Braid/Analysis/PipelineSchedule.h"
#include "braid/Dialect/Braid/BraidDialect.h"

#include "braid-common/CostModel.h"
#include "braid-common/PlanFormat.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/InterleavedRange.h"

#include <map>

using namespace mlir;
using namespace braid;
namespace fb = flatbuffers;

namespace {

/// The plan's action kind of a #braid.action's (the plan keeps 0 for an op
/// of no action).
plan::ActionKind toPlanAction(PipelineActionKind kind) {
  switch (kind) {
  case PipelineActionKind::Forward:
    return plan::ActionKind::Forward;
  case PipelineActionKind::Backward:
    return plan::ActionKind::Backward;
  case PipelineActionKind::Weight:
    return plan::ActionKind::Weight;
  }
  llvm_unreachable("a PipelineActionKind the plan has no kind for");
}

/// The opcode of a braid op (the generated table from BraidOps.td).
std::optional<ops::Opcode> getOpcode(Operation *op) {
#include "braid-common/BraidOpEncode.inc"
  auto it = opcodes.find(op->getName().getTypeID());
  if (it == opcodes.end())
    return std::nullopt;
  return it->second;
}

std::optional<plan::DType> getDType(Type type) {
  if (type.isF32())
    return plan::DType::F32;
  if (type.isF16())
    return plan::DType::F16;
  if (type.isBF16())
    return plan::DType::BF16;
  if (type.isF64())
    return plan::DType::F64;
  if (type.isInteger(1))
    return plan::DType::I1;
  if (type.isInteger(32))
    return plan::DType::I32;
  if (type.isInteger(64))
    return plan::DType::I64;
  return std::nullopt;
}

plan::Role getRole(RoleAttr role) {
  if (!role)
    return plan::Role::Temporary;
  switch (role.getKind()) {
  case RoleKind::Parameter:
    return plan::Role::Parameter;
  case RoleKind::OptimizerState:
    return plan::Role::OptimizerState;
  case RoleKind::Batch:
    return plan::Role::Batch;
  case RoleKind::Loss:
    return plan::Role::Loss;
  case RoleKind::Hyperparameter:
    return plan::Role::Hyperparameter;
  }
  return plan::Role::Temporary;
}

std::string getLocation(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  // The common case by hand: the printer sets up a state per call.
  Location loc = op->getLoc();
  if (isStrictFileLineColLoc(loc)) {
    auto file = cast<FileLineColLoc>(loc);
    os << "loc(\"";
    os.write_escaped(file.getFilename().getValue());
    os << "\":" << file.getLine() << ":" << file.getColumn() << ")";
    return text;
  }
  loc.print(os);
  return text;
}

/// Names for the values of a step, as the printer would give them: a name
/// from OpAsmOpInterface, made unique with a suffix, else a number (with
/// #i for the results of a multi-result op). Cheaper than an AsmState,
/// which prepares printing too.
class ValueNamer {
public:
  /// The names of `op`'s results, in order.
  SmallVector<std::string> nameResults(Operation &op) {
    unsigned n = op.getNumResults();
    SmallVector<std::string> names(n);
    if (n == 0)
      return names;
    SmallVector<StringRef> hints(n);
    if (auto asmOp = dyn_cast<OpAsmOpInterface>(op))
      asmOp.getAsmResultNames([&](Value v, StringRef name) {
        hints[cast<OpResult>(v).getResultNumber()] = name;
      });
    if (llvm::all_of(hints, [](StringRef h) { return h.empty(); })) {
      std::string base = "%" + std::to_string(next++);
      for (unsigned i = 0; i < n; ++i)
        names[i] = n > 1 ? base + "#" + std::to_string(i) : base;
      return names;
    }
    for (unsigned i = 0; i < n; ++i)
      names[i] =
          hints[i].empty() ? "%" + std::to_string(next++) : unique(hints[i]);
    return names;
  }

private:
  std::string unique(StringRef hint) {
    unsigned &count = used[hint];
    std::string name = "%" + hint.str();
    if (count++)
      name += "_" + std::to_string(count - 1);
    return name;
  }
  llvm::StringMap<unsigned> used;
  unsigned next = 0;
};
} // namespace

/// The cluster the step was compiled for, with its description, so that
/// the simulator times the plan on it (null offsets without one).
LogicalResult braid::getCluster(ModuleOp module, fb::FlatBufferBuilder &builder,
                                fb::Offset<fb::String> &name,
                                fb::Offset<fb::String> &json) {
  name = json = 0;
  auto cluster =
      module->getAttrOfType<StringAttr>(BraidDialect::kClusterAttrName);
  if (!cluster)
    return success();
  std::string text, error;
  if (!cost::readClusterText(cluster.getValue().str(), text, error))
    return module.emitError() << "cannot record the cluster: " << error;
  name = builder.CreateSharedString(cluster.getValue().str());
  json = builder.CreateSharedString(text);
  return success();
}

LogicalResult PlanWriter::addBuffer(Value value, int64_t offset,
                                    std::string name) {
  auto type = cast<RankedTensorType>(value.getType());
  std::optional<plan::DType> dtype = getDType(type.getElementType());
  if (!dtype)
    return emitError(value.getLoc())
           << "the plan has no element type for " << type;
  auto shape = builder.CreateVector(type.getShape().data(), type.getRank());
  auto nameOffset = builder.CreateString(name);
  bufferIds[value] = buffers.size();
  buffers.push_back(plan::CreateBuffer(builder, offset, getTensorBytes(type),
                                       *dtype, shape, nameOffset));
  return success();
}

FailureOr<int> PlanWriter::getGroup(CollectiveOpInterface op) {
  CollectiveGroup key = CollectiveGroup::of(op);
  auto it = groupIds.find(key);
  if (it != groupIds.end())
    return it->second;
  auto grid =
      SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(op, op.getGridAttr());
  if (!grid)
    // The verifier rules this out: not reachable from input.
    return op->emitError() << "grid " << op.getGridAttr() << " is not declared";
  ArrayRef<int64_t> shape = grid.getShape();
  std::vector<int64_t> axes(op.getGridAxes().begin(), op.getGridAxes().end());
  int id = groups.size();
  groups.push_back(plan::CreateGroup(
      builder, builder.CreateString(op.getGridAttr().getValue().str()),
      builder.CreateVector(shape.data(), shape.size()),
      builder.CreateVector(axes)));
  groupIds[key] = id;
  return id;
}

FailureOr<fb::Offset<fb::Vector<fb::Offset<plan::Attr>>>>
PlanWriter::encodeAttrs(Operation *op, const ops::OpInfo &info) {
  std::vector<fb::Offset<plan::Attr>> attrs;
  // The op's attributes in the table's order; the table gives each one's
  // id and kind. Scheduling and memory attributes are in the plan's
  // structure, the grid in the group; an absent optional or defaulted
  // attribute is left out (the runtime's struct holds the default).
  for (unsigned id = 0; id < info.numAttrs; ++id) {
    const ops::AttrInfo &attrInfo = info.attrs[id];
    Attribute attr = op->getAttr(attrInfo.name);
    if (!attr)
      continue;
    std::vector<int64_t> ints;
    std::vector<double> floats;
    std::vector<fb::Offset<fb::String>> strings;
    std::vector<uint8_t> data;
    // The verifier gives each attribute its kind: not reachable from input.
    auto bad = [&]() {
      return op->emitError() << "cannot write attribute '" << attrInfo.name
                             << "' into the plan: " << attr;
    };
    switch (attrInfo.kind) {
    case ops::AttrKind::Flag:
      ints.push_back(1);
      break;
    case ops::AttrKind::Int:
    case ops::AttrKind::Enum: {
      // Enum attributes are integer attributes (I32EnumAttr).
      auto i = dyn_cast<IntegerAttr>(attr);
      if (!i)
        return bad();
      ints.push_back(i.getValue().getSExtValue());
      break;
    }
    case ops::AttrKind::Float: {
      auto f = dyn_cast<FloatAttr>(attr);
      if (!f)
        return bad();
      floats.push_back(f.getValueAsDouble());
      break;
    }
    case ops::AttrKind::Ints: {
      auto a = dyn_cast<DenseI64ArrayAttr>(attr);
      if (!a)
        return bad();
      ints.assign(a.asArrayRef().begin(), a.asArrayRef().end());
      break;
    }
    case ops::AttrKind::Strings: {
      auto a = dyn_cast<ArrayAttr>(attr);
      if (!a)
        return bad();
      for (Attribute element : a) {
        auto s = dyn_cast<StringAttr>(element);
        if (!s)
          return bad();
        strings.push_back(builder.CreateSharedString(s.getValue().str()));
      }
      break;
    }
    case ops::AttrKind::Data: {
      auto dense = dyn_cast<DenseElementsAttr>(attr);
      if (!dense)
        return bad();
      // Full little-endian data, splats expanded.
      auto type = cast<ShapedType>(dense.getType());
      uint64_t bytes = getTensorBytes(type);
      data.resize(bytes);
      ArrayRef<char> raw = dense.getRawData();
      if (type.getElementType().isInteger(1)) {
        auto values = dense.getValues<bool>();
        for (auto [i, v] : llvm::enumerate(values))
          data[i] = v;
      } else if (dense.isSplat()) {
        uint64_t element = raw.size();
        for (uint64_t at = 0; at + element <= bytes; at += element)
          std::memcpy(data.data() + at, raw.data(), element);
      } else {
        std::memcpy(data.data(), raw.data(),
                    std::min<uint64_t>(bytes, raw.size()));
      }
      break;
    }
    }
    attrs.push_back(plan::CreateAttr(
        builder, uint8_t(id), ints.empty() ? 0 : builder.CreateVector(ints),
        floats.empty() ? 0 : builder.CreateVector(floats),
        strings.empty() ? 0 : builder.CreateVector(strings),
        data.empty() ? 0 : builder.CreateVector(data)));
  }
  return builder.CreateVector(attrs);
}

FailureOr<fb::Offset<fb::Vector<uint32_t>>>
PlanWriter::getBuffers(Operation *op, ValueRange values) {
  std::vector<uint32_t> ids;
  for (Value v : values) {
    auto it = bufferIds.find(v);
    if (it == bufferIds.end())
      // The verifier rules this out: not reachable from input.
      return op->emitError() << "a value of this op has no buffer in the "
                                "memory plan; run braid-plan-memory";
    ids.push_back(it->second);
  }
  return builder.CreateVector(ids);
}

FailureOr<fb::Offset<plan::Plan>> PlanWriter::build() {
  if (!func->hasAttr(BraidDialect::kArenaBytesAttrName))
    return func.emitError()
           << "@" << func.getName()
           << " has no memory plan; run braid-plan-memory first";
  uint64_t arenaBytes =
      cast<IntegerAttr>(func->getAttr(BraidDialect::kArenaBytesAttrName))
          .getInt();

  // Tensor parallelism: the axis and grid braid-tensor-parallel partitioned
  // the step over; split bindings say which piece each buffer holds.
  int32_t tpAxis = -1;
  std::vector<int64_t> tpGrid;
  if (auto tp = func->getAttrOfType<TensorParallelAttr>(
          BraidDialect::kTensorParallelAttrName)) {
    auto grid =
        SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(func, tp.getGrid());
    if (!grid)
      return func.emitError()
             << "'" << BraidDialect::kTensorParallelAttrName << "' names grid "
             << tp.getGrid() << ", which the module does not declare";
    tpAxis = int32_t(tp.getAxis());
    tpGrid.assign(grid.getShape().begin(), grid.getShape().end());
    if (tpAxis >= int32_t(tpGrid.size()))
      return func.emitError()
             << "'" << BraidDialect::kTensorParallelAttrName << "' names axis "
             << tpAxis << " of grid @" << grid.getSymName() << " of rank "
             << tpGrid.size();
    if (!tp.getInnerAxes().empty())
      return func.emitError()
             << "@" << func.getName() << " is partitioned over grid axes "
             << llvm::interleaved_array(tp.getAllAxes()) << " (its '"
             << BraidDialect::kTensorParallelAttrName << "' is " << tp
             << "), but the runtime places "
                "tensor parallelism on one axis";
  }
  // ZeRO: the axis and grid braid-shard-data-parallel sharded the optimizer
  // state over; a binding's data-parallel piece is named by its
  // braid.data_parallel_split.
  int32_t dpAxis = -1, zeroStage = 0;
  std::vector<int64_t> dpGrid;
  if (auto dp = func->getAttrOfType<DataParallelAttr>(
          BraidDialect::kDataParallelAttrName)) {
    auto grid =
        SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(func, dp.getGrid());
    if (!grid || dp.getAxis() >= grid.getRank())
      return func.emitError()
             << "'" << BraidDialect::kDataParallelAttrName << "' is " << dp
             << ", which names no axis of a grid the module declares";
    dpAxis = int32_t(dp.getAxis());
    zeroStage = int32_t(dp.getZeroStage());
    dpGrid.assign(grid.getShape().begin(), grid.getShape().end());
  }
  // A binding's sharding over the tensor-parallel axis: a one-axis form, or
  // grid axes that name that axis only (any other is not partitioned).
  auto overTpAxis = [&](ShardingAttr s,
                        const std::string &name) -> FailureOr<ShardingAttr> {
    if (!s || !s.hasGridAxes())
      return s;
    for (int16_t a : s.getAllAxes())
      if (a != tpAxis)
        return func.emitError()
               << "'" << name << "' is " << s.str() << ", but grid axis " << a
               << " is not partitioned (run braid-tensor-parallel with "
                  "axis="
               << a << ")";
    return s.onAxis(tpAxis);
  };
  // The optimizer state a step count is computed from (AdamW's `step` is
  // the argument plus one, dropout's the argument itself).
  DenseSet<BlockArgument> stepCounts;
  func.walk([&](StepCountOpInterface op) {
    SmallVector<Value> work{op.getStepCount()};
    DenseSet<Value> seen;
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (!seen.insert(v).second)
        continue;
      if (auto arg = dyn_cast<BlockArgument>(v))
        stepCounts.insert(arg);
      else
        llvm::append_range(work, v.getDefiningOp()->getOperands());
    }
  });
  auto createBinding = [&](RoleAttr role, const std::string &name,
                           uint32_t buffer, ShardingAttr sharding,
                           IntegerAttr dpSplit, bool stepCount = false) {
    int32_t dim = -1;
    fb::Offset<fb::Vector<int64_t>> blocks = 0;
    if (sharding && sharding.isSplit()) {
      dim = int32_t(sharding.getDim());
      blocks = builder.CreateVector(sharding.getBlocks().data(),
                                    sharding.getBlocks().size());
    }
    return plan::CreateBinding(
        builder, getRole(role), builder.CreateString(name), buffer, dim, blocks,
        stepCount, dpSplit ? int32_t(dpSplit.getInt()) : -1);
  };

  Block &body = func.getBody().front();
  std::vector<fb::Offset<plan::Binding>> arguments, results;
  for (BlockArgument arg : body.getArguments()) {
    if (!isa<RankedTensorType>(arg.getType()))
      return func.emitError()
             << "argument #" << arg.getArgNumber() << " is a " << arg.getType()
             << "; the arguments of a step are tensors";
    auto offset = func.getArgAttrOfType<IntegerAttr>(
        arg.getArgNumber(), BraidDialect::kOffsetAttrName);
    if (!offset)
      return func.emitError() << "argument #" << arg.getArgNumber()
                              << " has no offset; run braid-plan-memory";
    auto role = func.getArgAttrOfType<RoleAttr>(arg.getArgNumber(),
                                                BraidDialect::kRoleAttrName);
    std::string name = role ? role.getName().str()
                            : "arg" + std::to_string(arg.getArgNumber());
    if (failed(addBuffer(arg, offset.getInt(), name)))
      return failure();
    FailureOr<ShardingAttr> sharding =
        overTpAxis(func.getArgAttrOfType<ShardingAttr>(
                       arg.getArgNumber(), BraidDialect::kShardingAttrName),
                   name);
    if (failed(sharding))
      return failure();
    bool stepCount = role && role.getKind() == RoleKind::OptimizerState &&
                     stepCounts.contains(arg);
    arguments.push_back(createBinding(
        role, name, bufferIds[arg], *sharding,
        func.getArgAttrOfType<IntegerAttr>(
            arg.getArgNumber(), BraidDialect::kDataParallelSplitAttrName),
        stepCount));
  }

  // Buffers of op results, named by their SSA names.
  ValueNamer namer;
  for (Operation &op : body.without_terminator()) {
    SmallVector<std::string> names = namer.nameResults(op);
    auto offsets =
        op.getAttrOfType<DenseI64ArrayAttr>(BraidDialect::kOffsetsAttrName);
    for (auto [i, result] : llvm::enumerate(op.getResults())) {
      if (!isa<RankedTensorType>(result.getType()))
        continue;
      if (!offsets)
        return op.emitError()
               << "result #" << i << " has no offset; run braid-plan-memory";
      if (failed(addBuffer(result, offsets[i], std::move(names[i]))))
        return failure();
    }
  }

  // Streams, in the order of their dense index; events and futures.
  bool anyStream = llvm::any_of(body.without_terminator(), [](Operation &op) {
    return op.hasAttr(BraidDialect::kStreamAttrName);
  });
  std::map<std::pair<int, unsigned>, std::vector<fb::Offset<plan::Instr>>>
      streams;
  // Every plan has its compute stream, even a step with no ops (it returns
  // its arguments and runs as such).
  streams[{0, 0u}];
  llvm::DenseMap<Value, int> eventIds, futureIds;
  for (Operation &op : body.without_terminator()) {
    auto stream = op.getAttrOfType<StreamAttr>(BraidDialect::kStreamAttrName);
    if (!stream && anyStream)
      return op.emitError() << "has no braid.stream, but other ops of @"
                            << func.getName() << " do";
    std::pair<int, unsigned> key = {0, 0};
    if (stream)
      key = {stream.getKind() == StreamKind::Comm ? 1 : 0, stream.getIndex()};

    std::optional<ops::Opcode> opcode = getOpcode(&op);
    if (!opcode)
      return op.emitError() << "is not a braid op; a plan holds braid ops only";
    const ops::OpInfo &info = ops::getOpInfo(*opcode);
    int group = -1, future = -1, event = -1;
    ValueRange resultValues = op.getResults();
    if (auto record = dyn_cast<RecordEventOp>(op)) {
      event = eventIds.size();
      eventIds[record.getEvent()] = event;
    } else if (auto wait = dyn_cast<WaitEventOp>(op)) {
      auto it = eventIds.find(wait.getEvent());
      if (it == eventIds.end())
        // The verifier rules this out: not reachable from input.
        return op.emitError() << "waits on an event recorded later";
      event = it->second;
    } else if (auto wait = dyn_cast<WaitOp>(op)) {
      auto it = futureIds.find(wait.getFuture());
      if (it == futureIds.end())
        // The verifier rules this out: not reachable from input.
        return op.emitError() << "waits on a future that no start op yields";
      future = it->second;
    } else if (auto collective = dyn_cast<CollectiveOpInterface>(op)) {
      FailureOr<int> id = getGroup(collective);
      if (failed(id))
        return failure();
      group = *id;
      if (collective.isAsync()) {
        future = futureIds.size();
        Value futureValue = op.getResult(0);
        futureIds[futureValue] = future;
        WaitOp wait = getWaitOf(&op);
        if (!wait)
          return op.emitError() << "starts a collective that is never waited";
        resultValues = wait.getResults();
      }
    }

    SmallVector<Value> tensorOperands;
    for (Value v : op.getOperands())
      if (isa<RankedTensorType>(v.getType()))
        tensorOperands.push_back(v);
    SmallVector<Value> tensorResults;
    for (Value v : resultValues)
      if (isa<RankedTensorType>(v.getType()))
        tensorResults.push_back(v);
    auto operands = getBuffers(&op, tensorOperands);
    auto resultsVec = getBuffers(&op, tensorResults);
    auto attrs = encodeAttrs(&op, info);
    if (failed(operands) || failed(resultsVec) || failed(attrs))
      return failure();
    uint64_t flops = 0, bytesRead = 0, bytesWritten = 0;
    cost::ProductShape product;
    if (auto cost = dyn_cast<CostOpInterface>(op)) {
      flops = cost.getFlops();
      bytesRead = cost.getBytesRead();
      bytesWritten = cost.getBytesWritten();
      product = cost.getProductShape();
    }
    plan::ActionKind action = plan::ActionKind::None;
    int32_t microBatch = -1;
    if (auto a = op.getAttrOfType<ActionAttr>(BraidDialect::kActionAttrName)) {
      action = toPlanAction(a.getKind());
      microBatch = int32_t(a.getMicroBatch());
    }
    streams[key].push_back(plan::CreateInstr(
        builder, uint16_t(*opcode), *operands, *resultsVec, *attrs, group,
        future, event, builder.CreateString(getLocation(&op)), flops, bytesRead,
        bytesWritten, product.batch, product.m, product.n, product.k, action,
        microBatch));
  }

  Operation *terminator = body.getTerminator();
  for (auto [i, v] : llvm::enumerate(terminator->getOperands())) {
    auto it = bufferIds.find(v);
    if (it == bufferIds.end())
      return terminator->emitError()
             << "returns a value that has no buffer (operand #" << i << ")";
    auto role =
        func.getResultAttrOfType<RoleAttr>(i, BraidDialect::kRoleAttrName);
    std::string name =
        role ? role.getName().str() : "result" + std::to_string(i);
    FailureOr<ShardingAttr> sharding =
        overTpAxis(func.getResultAttrOfType<ShardingAttr>(
                       i, BraidDialect::kShardingAttrName),
                   name);
    if (failed(sharding))
      return failure();
    results.push_back(
        createBinding(role, name, it->second, *sharding,
                      func.getResultAttrOfType<IntegerAttr>(
                          i, BraidDialect::kDataParallelSplitAttrName)));
  }

  std::vector<fb::Offset<plan::Stream>> streamTables;
  for (auto &[key, instrs] : streams)
    streamTables.push_back(plan::CreateStream(
        builder, key.first ? plan::StreamKind::Comm : plan::StreamKind::Compute,
        key.second, builder.CreateVector(instrs)));

  fb::Offset<fb::String> clusterName, clusterJson;
  if (failed(getCluster(module, builder, clusterName, clusterJson)))
    return failure();
  fb::Offset<fb::Vector<int64_t>> pipelineGrid = 0;
  if (pipeline)
    pipelineGrid = builder.CreateVector(pipeline->grid);
  return plan::CreatePlan(
      builder, builder.CreateSharedString(kPlanProducer),
      builder.CreateString(func.getName().str()), worldSize, arenaBytes,
      builder.CreateVector(buffers), builder.CreateVector(groups),
      builder.CreateVector(streamTables), eventIds.size(), futureIds.size(),
      builder.CreateVector(arguments), builder.CreateVector(results),
      clusterName, clusterJson, tpAxis, builder.CreateVector(tpGrid),
      /*stages=*/0, /*program_of_rank=*/0, pipeline ? pipeline->axis : -1,
      pipelineGrid, stage, evaluation, dpAxis, builder.CreateVector(dpGrid),
      zeroStage);
}
