//===- ScheduleUtils.cpp - helpers shared by the overlap passes -*- C++ -*-===//

#include "ScheduleUtils.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

LogicalResult braid::forEachSchedulableBody(
    ModuleOp module,
    function_ref<LogicalResult(FunctionOpInterface, Block &)> fn) {
  bool ok = true;
  for (auto func : module.getOps<FunctionOpInterface>()) {
    FailureOr<Block *> body = schedulableBody(func);
    if (failed(body) || (*body && failed(fn(func, **body))))
      ok = false;
  }
  return success(ok);
}

FailureOr<Block *> braid::schedulableBody(FunctionOpInterface func) {
  if (func.isExternal())
    return static_cast<Block *>(nullptr);
  Region &body = func.getFunctionBody();
  if (!llvm::hasSingleElement(body))
    return func.emitError()
           << "braid scheduling needs a function body of one block, but @"
           << func.getName() << " has " << body.getBlocks().size();
  return &body.front();
}

void braid::placeAfter(Operation *op, Operation *anchor, Block &body,
                       DenseMap<Operation *, Operation *> &lastPlaced) {
  Operation *&last = lastPlaced[anchor];
  if (last)
    op->moveAfter(last);
  else if (anchor)
    op->moveAfter(anchor);
  else
    op->moveBefore(&body, body.begin());
  last = op;
}

std::optional<unsigned> braid::getStreamIndex(Operation *op) {
  auto stream = op->getAttrOfType<StreamAttr>(BraidDialect::kStreamAttrName);
  if (!stream)
    return std::nullopt;
  return stream.getKind() == StreamKind::Compute ? 0 : 1 + stream.getIndex();
}

bool braid::isOnComputeStream(Operation *op) {
  std::optional<unsigned> stream = getStreamIndex(op);
  return !stream || *stream == 0;
}

braid::StreamAttr braid::getStreamAttr(MLIRContext *context, unsigned index) {
  if (index == 0)
    return StreamAttr::get(context, StreamKind::Compute, 0);
  return StreamAttr::get(context, StreamKind::Comm, index - 1);
}

uint64_t braid::getPeakLiveBytes(Block &block, ArrayRef<Operation *> order) {
  llvm::DenseMap<Operation *, size_t> position;
  for (auto [i, op] : llvm::enumerate(order))
    position[op] = i;
  const size_t end = order.size();
  // The last position at which each value is used.
  auto lastUse = [&](Value value) {
    size_t last = 0;
    bool used = false;
    for (Operation *user : value.getUsers()) {
      Operation *ancestor = block.findAncestorOpInBlock(*user);
      if (!ancestor)
        continue;
      auto it = position.find(ancestor);
      size_t at = it == position.end() ? end : it->second;
      last = used ? std::max(last, at) : at;
      used = true;
    }
    return used ? last : size_t(0);
  };
  // Bytes freed after each position.
  SmallVector<uint64_t> freed(end + 1, 0);
  uint64_t live = 0;
  for (BlockArgument arg : block.getArguments()) {
    uint64_t bytes = getTensorBytes(arg.getType());
    live += bytes;
    freed[lastUse(arg)] += bytes;
  }
  uint64_t peak = live;
  for (auto [i, op] : llvm::enumerate(order)) {
    for (Value result : op->getResults()) {
      uint64_t bytes = getTensorBytes(result.getType());
      if (!bytes)
        continue;
      live += bytes;
      // An unused result is freed right after its producer.
      size_t last = result.use_empty() ? i : lastUse(result);
      freed[std::max(last, i)] += bytes;
    }
    peak = std::max(peak, live);
    live -= freed[i];
  }
  return peak;
}

Value braid::getOrCreateAxisIndex(FunctionOpInterface func,
                                  FlatSymbolRefAttr grid,
                                  ArrayRef<int16_t> axes) {
  Block &body = func.getFunctionBody().front();
  for (auto op : body.getOps<AxisIndexOp>())
    if (op.getGridAttr().getAttr() == grid.getAttr() &&
        op.getGridAxes() == axes)
      return op.getResult();
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  return AxisIndexOp::create(b, func.getLoc(),
                             RankedTensorType::get({}, b.getI64Type()), grid,
                             b.getDenseI16ArrayAttr(axes));
}

Value braid::getOrCreateAxisIndex(FunctionOpInterface func,
                                  FlatSymbolRefAttr grid, int64_t axis) {
  return getOrCreateAxisIndex(func, grid, ArrayRef<int16_t>{int16_t(axis)});
}

braid::AllReduceOp braid::createAxisSum(OpBuilder &builder, Value value,
                                        FlatSymbolRefAttr grid, int64_t axis) {
  return AllReduceOp::create(
      builder, value.getLoc(), ValueRange{value}, grid,
      builder.getDenseI16ArrayAttr({int16_t(axis)}),
      ReductionKindAttr::get(builder.getContext(), ReductionKind::Sum),
      /*grad_of=*/nullptr, /*bucket_index=*/nullptr, /*bucket_bytes=*/nullptr);
}

BlockArgument braid::getCarriedParameter(FunctionOpInterface func,
                                         Value result) {
  if (func.isExternal() || !result.hasOneUse())
    return nullptr;
  OpOperand &use = *result.use_begin();
  if (!use.getOwner()->hasTrait<OpTrait::IsTerminator>())
    return nullptr;
  auto role = func.getResultAttrOfType<RoleAttr>(use.getOperandNumber(),
                                                 BraidDialect::kRoleAttrName);
  if (!role || role.getKind() != RoleKind::Parameter)
    return nullptr;
  for (BlockArgument arg : func.getArguments())
    if (arg.getType() == result.getType() &&
        func.getArgAttrOfType<RoleAttr>(arg.getArgNumber(),
                                        BraidDialect::kRoleAttrName) == role)
      return arg;
  return nullptr;
}
