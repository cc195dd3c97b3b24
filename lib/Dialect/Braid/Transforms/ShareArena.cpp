//===- ShareArena.cpp - an evaluation program in its step's arena --------===//
//
// braid-share-arena (Passes.td): after braid-plan-memory, the evaluation
// program's parameters take the step's bytes, and its other buffers move
// to a place in the step's arena that no buffer the runtime keeps between
// steps occupies.
//
//===----------------------------------------------------------------------===//

#include "braid/Dialect/Braid/BraidDialect.h"
#include "braid/Dialect/Braid/BraidInterfaces.h"
#include "braid/Dialect/Braid/BraidOps.h"
#include "braid/Dialect/Braid/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"

namespace braid {
#define GEN_PASS_DEF_SHAREARENA
#include "braid/Dialect/Braid/Passes.h.inc"
} // namespace braid

using namespace mlir;
using namespace braid;

namespace {

/// The evaluation program's buffers move by a multiple of this: the largest
/// alignment braid-plan-memory accepts, so that every buffer keeps its own.
constexpr uint64_t kMoveAlignment = 4096;

/// A byte range of the arena.
struct Range {
  uint64_t begin, end;
  bool overlaps(const Range &other) const {
    return begin < other.end && other.begin < end;
  }
};

/// The arena offset braid-plan-memory gave `value` (an argument or an op's
/// result) in `func`, or nullopt.
std::optional<uint64_t> offsetOf(func::FuncOp func, Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto offset = func.getArgAttrOfType<IntegerAttr>(
        arg.getArgNumber(), BraidDialect::kOffsetAttrName);
    if (!offset)
      return std::nullopt;
    return uint64_t(offset.getInt());
  }
  auto result = cast<OpResult>(value);
  auto offsets = result.getOwner()->getAttrOfType<DenseI64ArrayAttr>(
      BraidDialect::kOffsetsAttrName);
  if (!offsets || offsets[result.getResultNumber()] < 0)
    return std::nullopt;
  return uint64_t(offsets[result.getResultNumber()]);
}

struct ShareArenaPass : public braid::impl::ShareArenaBase<ShareArenaPass> {
  using ShareArenaBase::ShareArenaBase;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (auto step = func->getAttrOfType<FlatSymbolRefAttr>(
              BraidDialect::kEvaluatesAttrName))
        if (failed(share(func, step)))
          return signalPassFailure();
  }

  LogicalResult share(func::FuncOp eval, FlatSymbolRefAttr stepRef);
};

LogicalResult ShareArenaPass::share(func::FuncOp eval,
                                    FlatSymbolRefAttr stepRef) {
  auto step = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(eval, stepRef);
  if (!step)
    // The verifier rules this out: not reachable from input.
    return eval.emitError() << "evaluates " << stepRef
                            << ", which is not a function of the module";
  auto stepArena =
      step->getAttrOfType<IntegerAttr>(BraidDialect::kArenaBytesAttrName);
  auto evalArena =
      eval->getAttrOfType<IntegerAttr>(BraidDialect::kArenaBytesAttrName);
  if (!stepArena || !evalArena)
    return eval.emitError()
           << "braid-share-arena needs the memory plan of @" << eval.getName()
           << " and of " << stepRef << " (run braid-plan-memory first)";

  // What the runtime keeps between steps: every argument and result of the
  // step, and where each parameter lies.
  SmallVector<Range> kept;
  llvm::StringMap<uint64_t> paramOffset;
  auto keep = [&](func::FuncOp f, Value v) -> LogicalResult {
    uint64_t bytes = getTensorBytes(v.getType());
    if (!bytes)
      return success();
    std::optional<uint64_t> offset = offsetOf(f, v);
    if (!offset)
      return f.emitError() << "a tensor of @" << f.getName()
                           << " has no arena offset";
    kept.push_back({*offset, *offset + bytes});
    return success();
  };
  for (BlockArgument arg : step.getArguments()) {
    if (failed(keep(step, arg)))
      return failure();
    if (auto role = step.getArgAttrOfType<RoleAttr>(
            arg.getArgNumber(), BraidDialect::kRoleAttrName);
        role && role.getKind() == RoleKind::Parameter)
      paramOffset[role.getName()] = *offsetOf(step, arg);
  }
  for (Value v : step.getBody().front().getTerminator()->getOperands())
    if (failed(keep(step, v)))
      return failure();

  // The evaluation program's buffers that move: all but its parameters.
  SmallVector<Range> moving;
  uint64_t extent = 0;
  auto collect = [&](Value v) {
    uint64_t bytes = getTensorBytes(v.getType());
    if (!bytes)
      return;
    if (std::optional<uint64_t> offset = offsetOf(eval, v)) {
      moving.push_back({*offset, *offset + bytes});
      extent = std::max(extent, *offset + bytes);
    }
  };
  Block &body = eval.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    auto role = eval.getArgAttrOfType<RoleAttr>(arg.getArgNumber(),
                                                BraidDialect::kRoleAttrName);
    if (!role || role.getKind() != RoleKind::Parameter)
      collect(arg);
  }
  for (Operation &op : body.without_terminator())
    for (Value v : op.getResults())
      collect(v);

  // The lowest aligned shift at which no moving buffer meets a kept one:
  // 0, or just past a kept range (past them all always fits).
  SmallVector<uint64_t> candidates = {0};
  for (const Range &r : kept)
    candidates.push_back(llvm::alignTo(r.end, kMoveAlignment));
  llvm::sort(candidates);
  uint64_t shift = candidates.back();
  for (uint64_t c : candidates) {
    bool clear = llvm::none_of(moving, [&](const Range &m) {
      Range at{m.begin + c, m.end + c};
      return llvm::any_of(kept, [&](const Range &k) { return k.overlaps(at); });
    });
    if (clear) {
      shift = c;
      break;
    }
  }

  // Rewrite the evaluation program's offsets.
  Builder builder(eval.getContext());
  SmallVector<DictionaryAttr> argAttrs;
  for (BlockArgument arg : body.getArguments()) {
    NamedAttrList attrs(eval.getArgAttrDict(arg.getArgNumber()));
    if (std::optional<uint64_t> offset = offsetOf(eval, arg)) {
      auto role = eval.getArgAttrOfType<RoleAttr>(arg.getArgNumber(),
                                                  BraidDialect::kRoleAttrName);
      uint64_t placed = *offset + shift;
      if (role && role.getKind() == RoleKind::Parameter)
        placed = paramOffset.lookup(role.getName());
      attrs.set(BraidDialect::kOffsetAttrName,
                builder.getI64IntegerAttr(int64_t(placed)));
    }
    argAttrs.push_back(attrs.getDictionary(eval.getContext()));
  }
  eval.setAllArgAttrs(argAttrs);
  for (Operation &op : body.without_terminator()) {
    auto offsets =
        op.getAttrOfType<DenseI64ArrayAttr>(BraidDialect::kOffsetsAttrName);
    if (!offsets)
      continue;
    SmallVector<int64_t> moved(offsets.asArrayRef());
    for (int64_t &o : moved)
      if (o >= 0)
        o += int64_t(shift);
    op.setAttr(BraidDialect::kOffsetsAttrName,
               builder.getDenseI64ArrayAttr(moved));
  }
  uint64_t arena = std::max<uint64_t>(stepArena.getInt(), shift + extent);
  for (func::FuncOp f : {step, eval})
    f->setAttr(BraidDialect::kArenaBytesAttrName,
               builder.getI64IntegerAttr(int64_t(arena)));
  if (report)
    emitRemark(eval.getLoc())
        << "evaluation program @" << eval.getName() << " shares " << stepRef
        << "'s arena: " << paramOffset.size()
        << " parameters in place, its other buffers at +" << shift << ", arena "
        << arena << " bytes (the step alone " << stepArena.getInt()
        << ", the evaluation alone " << evalArena.getInt() << ")";
  return success();
}

} // namespace
