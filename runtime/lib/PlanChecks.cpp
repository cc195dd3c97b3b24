//===- PlanChecks.cpp - the facts a loaded plan must satisfy --------------===//
//
// After decoding: buffer ranges inside the arena, ids in range, futures
// started and waited once, events recorded once, every op's own rules
// (OpChecks.cpp), streams that cannot deadlock on their events and
// futures, and buffers that do not share bytes while live
// (PlanLifetimes.cpp).
//
//===----------------------------------------------------------------------===//

#include "OpChecks.h"

#include "braid-common/Streams.h"

#include <set>

using namespace braid;
using namespace braid::rt;

/// A collective's operand and result are either the same bytes (in place)
/// or disjoint: a partial overlap is a memcpy of overlapping ranges (and a
/// reduction reading what it writes). Ids are checked by the caller first.
static void checkCollectiveOverlap(const Plan &plan, const Instr &instr) {
  if (!instr.info || !instr.info->isCollective())
    return;
  for (uint32_t in : instr.operands)
    for (uint32_t out : instr.results) {
      if (in >= plan.buffers.size() || out >= plan.buffers.size())
        return;
      const Buffer &x = plan.buffers[in], &y = plan.buffers[out];
      bool overlap =
          x.offset < y.offset + y.bytes && y.offset < x.offset + x.bytes;
      bool same = x.offset == y.offset && x.bytes == y.bytes;
      if (overlap && !same && x.bytes && y.bytes)
        throw PlanError(instr.describe() + " reads [" +
                        std::to_string(x.offset) + ", " +
                        std::to_string(x.offset + x.bytes) + ") and writes [" +
                        std::to_string(y.offset) + ", " +
                        std::to_string(y.offset + y.bytes) +
                        "): they overlap in part (a collective works in "
                        "place or on disjoint bytes)");
    }
}

static void checkProgress(const Plan &plan) {
  std::vector<size_t> next(plan.streams.size(), 0);
  std::vector<bool> recorded(plan.numEvents, false),
      started(plan.numFutures, false);
  for (bool moved = true; moved;) {
    moved = false;
    for (size_t s = 0; s < plan.streams.size(); ++s) {
      const std::vector<Instr> &instrs = plan.streams[s].instrs;
      while (next[s] < instrs.size()) {
        const Instr &i = instrs[next[s]];
        if ((i.kind == InstrKind::WaitEvent && !recorded[i.event]) ||
            (i.kind == InstrKind::Wait && !started[i.future]))
          break;
        if (i.kind == InstrKind::RecordEvent)
          recorded[i.event] = true;
        if (i.kind == InstrKind::CollectiveStart)
          started[i.future] = true;
        ++next[s];
        moved = true;
      }
    }
  }
  for (size_t s = 0; s < plan.streams.size(); ++s)
    if (next[s] < plan.streams[s].instrs.size())
      throw PlanError("the streams deadlock: stream " + plan.streams[s].name() +
                      " waits forever at " +
                      plan.streams[s].instrs[next[s]].describe());
}

/// Structural checks of the decoded plan: ranges, ids, bindings; then each
/// instruction's own rules (OpChecks).
void braid::rt::checkPlan(const Plan &plan) {
  if (plan.worldSize == 0)
    throw PlanError("the plan's world size is 0");
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const Buffer &b = plan.buffers[i];
    std::string what = "buffer #" + std::to_string(i) + " ('" + b.name + "')";
    if (static_cast<unsigned>(b.dtype) > static_cast<unsigned>(DType::I64))
      throw PlanError(what + " has an unknown element type");
    if (b.shape.size() > 16)
      throw PlanError(what + " has rank " + std::to_string(b.shape.size()) +
                      ", more than 16");
    uint64_t elements = 1;
    for (int64_t d : b.shape) {
      if (d < 0 || d > (int64_t(1) << 40))
        throw PlanError(what + " has a bad dimension " + std::to_string(d));
      if (d && elements > (uint64_t(1) << 50) / uint64_t(d))
        throw PlanError(what + " is too large");
      elements *= uint64_t(d);
    }
    if (elements * dtypeBytes(b.dtype) != b.bytes)
      throw PlanError(what + " holds " + std::to_string(b.bytes) +
                      " bytes, but its shape and type need " +
                      std::to_string(elements * dtypeBytes(b.dtype)));
    // The kernels load elements of the dtype: a misaligned buffer is
    // undefined behaviour on the cpu and a fault on the GPU.
    if (b.offset % dtypeBytes(b.dtype) != 0)
      throw PlanError(what + " at offset " + std::to_string(b.offset) +
                      " is not aligned for its " + dtypeName(b.dtype) +
                      " elements (" + std::to_string(dtypeBytes(b.dtype)) +
                      " bytes)");
    if (b.offset > plan.arenaBytes || b.bytes > plan.arenaBytes - b.offset)
      throw PlanError(what + " [" + std::to_string(b.offset) + ", " +
                      std::to_string(b.offset + b.bytes) +
                      ") lies outside the arena of " +
                      std::to_string(plan.arenaBytes) + " bytes");
  }
  for (size_t i = 0; i < plan.groups.size(); ++i) {
    const Group &g = plan.groups[i];
    std::string what = "group #" + std::to_string(i) + " (@" + g.grid + ")";
    int64_t size = 1;
    for (int64_t d : g.gridShape) {
      if (d <= 0 || d > (1 << 20))
        throw PlanError(what + " has a bad grid dimension " +
                        std::to_string(d));
      size *= d;
      if (size > (1 << 24))
        throw PlanError(what + " has too many ranks");
    }
    if (size != int64_t(plan.worldSize))
      throw PlanError(what + " spans " + std::to_string(size) +
                      " ranks, but the plan is for " +
                      std::to_string(plan.worldSize));
    std::set<int64_t> seen;
    for (int64_t axis : g.axes)
      if (axis < 0 || axis >= int64_t(g.gridShape.size()) ||
          !seen.insert(axis).second)
        throw PlanError(what + " has a bad axis " + std::to_string(axis));
  }
  auto checkBinding = [&](const Binding &b, const char *kind) {
    if (b.buffer >= plan.buffers.size())
      throw PlanError(std::string(kind) + " '" + b.name + "' names buffer #" +
                      std::to_string(b.buffer) + ", but the plan has " +
                      std::to_string(plan.buffers.size()));
    if (static_cast<unsigned>(b.role) >
        static_cast<unsigned>(Role::Hyperparameter))
      throw PlanError(std::string(kind) + " '" + b.name +
                      "' has an unknown role");
  };
  // The axis a kind of split binding is split over (tensor parallelism's,
  // ZeRO's): -1, or an axis of a grid over the plan's ranks.
  auto checkSplitAxis = [&](int32_t axis, const std::vector<int64_t> &grid,
                            const std::string &kind) {
    if (axis < 0) {
      if (axis != -1)
        throw PlanError("the " + kind + " axis is " + std::to_string(axis) +
                        " (-1 or an axis)");
      return;
    }
    int64_t size = 1;
    for (int64_t d : grid) {
      if (d <= 0 || d > (1 << 20))
        throw PlanError("the " + kind + " grid has a bad dimension " +
                        std::to_string(d));
      size *= d;
      if (size > (1 << 24))
        throw PlanError("the " + kind + " grid has too many ranks");
    }
    if (axis >= int32_t(grid.size()) || size != int64_t(plan.worldSize))
      throw PlanError("the " + kind + " axis " + std::to_string(axis) +
                      " of a grid of " + std::to_string(grid.size()) +
                      " axes spanning " + std::to_string(size) +
                      " ranks does not fit a plan for " +
                      std::to_string(plan.worldSize) + " ranks");
  };
  // Tensor parallelism: split bindings whose blocks cut into their buffers
  // (braid-run copies by them). ZeRO: data-parallel split bindings whose
  // pieces are whole elements of their dimension.
  checkSplitAxis(plan.tpAxis, plan.tpGrid, "tensor-parallel");
  checkSplitAxis(plan.dpAxis, plan.dpGrid, "data-parallel");
  auto checkDataParallelSplit = [&](const Binding &b, const char *kind) {
    if (b.dpSplitDim == -1)
      return;
    std::string what = std::string(kind) + " '" + b.name + "'";
    const Buffer &buffer = plan.buffers[b.buffer];
    if (plan.dpAxis < 0)
      throw PlanError(what + " is a data-parallel piece, but the plan shards "
                             "nothing over a data-parallel axis");
    if (b.dpSplitDim < 0 || b.dpSplitDim >= int32_t(buffer.shape.size()))
      throw PlanError(what + " is a data-parallel piece along dimension " +
                      std::to_string(b.dpSplitDim) + ", but its buffer has " +
                      std::to_string(buffer.shape.size()) + " dimensions");
    if (b.role != Role::OptimizerState)
      throw PlanError(what + " is a data-parallel piece, but only optimizer "
                             "state is sharded so (ZeRO stages 1 and 2)");
  };
  auto checkSplit = [&](const Binding &b, const char *kind) {
    checkDataParallelSplit(b, kind);
    if (b.splitDim == -1 && b.splitBlocks.empty())
      return;
    std::string what = std::string(kind) + " '" + b.name + "'";
    const Buffer &buffer = plan.buffers[b.buffer];
    if (plan.tpAxis < 0)
      throw PlanError(what + " is split, but the plan is not tensor-parallel");
    if (b.splitDim < 0 || b.splitDim >= int32_t(buffer.shape.size()))
      throw PlanError(what + " is split along dimension " +
                      std::to_string(b.splitDim) + ", but its buffer has " +
                      std::to_string(buffer.shape.size()) + " dimensions");
    int64_t t = plan.tpSize(), sum = 0;
    for (int64_t block : b.splitBlocks) {
      if (block <= 0 || block % t != 0 || block > (int64_t(1) << 40))
        throw PlanError(what + " has a block of " + std::to_string(block) +
                        ", which does not divide into " + std::to_string(t) +
                        " tensor-parallel pieces");
      sum += block / t;
    }
    int64_t local = tensorParallelShape(plan, b)[size_t(b.splitDim)];
    if (!b.splitBlocks.empty() && sum != local)
      throw PlanError(what + "'s blocks make pieces of " + std::to_string(sum) +
                      " along dimension " + std::to_string(b.splitDim) +
                      ", but its buffer has " + std::to_string(local));
  };
  for (const Binding &b : plan.arguments) {
    checkBinding(b, "argument");
    checkSplit(b, "argument");
    // braid-run writes a hyperparameter as one float before each step.
    const Buffer &buffer = plan.buffers[b.buffer];
    if (b.role == Role::Hyperparameter &&
        (!buffer.shape.empty() || buffer.dtype != DType::F32))
      throw PlanError("hyperparameter argument '" + b.name +
                      "' must be a scalar f32, but is " +
                      std::string(dtypeName(buffer.dtype)) + " of rank " +
                      std::to_string(buffer.shape.size()));
  }
  for (const Binding &b : plan.results) {
    checkBinding(b, "result");
    checkSplit(b, "result");
    if (b.role == Role::Hyperparameter)
      throw PlanError("result '" + b.name +
                      "' has role hyperparameter, which is only for arguments");
  }
  // A parameter or optimizer-state result is copied onto its argument after
  // every step: the two must be the same kind of array.
  for (const Binding &r : plan.results) {
    if (r.role != Role::Parameter && r.role != Role::OptimizerState)
      continue;
    for (const Binding &a : plan.arguments) {
      if (a.role != r.role || a.name != r.name)
        continue;
      const Buffer &x = plan.buffers[a.buffer], &y = plan.buffers[r.buffer];
      if (a.splitDim != r.splitDim || a.splitBlocks != r.splitBlocks ||
          a.dpSplitDim != r.dpSplitDim)
        throw PlanError("result '" + r.name +
                        "' carries to the next step into its argument, but "
                        "is split unlike it");
      if (x.dtype != y.dtype || x.shape != y.shape)
        throw PlanError("result '" + r.name +
                        "' carries to the next step "
                        "into its argument, but holds " +
                        std::to_string(y.bytes) + " bytes of " +
                        dtypeName(y.dtype) + " where the argument holds " +
                        std::to_string(x.bytes) + " bytes of " +
                        dtypeName(x.dtype));
    }
  }

  std::vector<int> futureStarts(plan.numFutures, 0),
      futureWaits(plan.numFutures, 0);
  std::vector<int> eventRecords(plan.numEvents, 0);
  if (plan.streams.empty())
    throw PlanError("the plan has no streams");
  std::set<std::pair<bool, unsigned>> streamKeys;
  for (const Stream &s : plan.streams) {
    if (!streamKeys.insert({s.comm, s.index}).second)
      throw PlanError("stream " + s.name() + " appears twice");
    // As the compiler's #braid.stream: one compute stream, at most 64
    // communication streams.
    if (!s.comm && s.index != 0)
      throw PlanError("stream " + s.name() +
                      ": a plan has one compute stream, compute 0");
    if (s.comm && s.index >= kMaxCommStreams)
      throw PlanError("stream " + s.name() + " is out of range: at most " +
                      std::to_string(kMaxCommStreams) +
                      " communication streams");
    for (const Instr &instr : s.instrs) {
      checkCollectiveOverlap(plan, instr);
      for (uint32_t id : instr.operands)
        if (id >= plan.buffers.size())
          throw PlanError(instr.describe() + " reads buffer #" +
                          std::to_string(id) + ", which does not exist");
      for (uint32_t id : instr.results)
        if (id >= plan.buffers.size())
          throw PlanError(instr.describe() + " writes buffer #" +
                          std::to_string(id) + ", which does not exist");
      bool collective = instr.kind == InstrKind::Collective ||
                        instr.kind == InstrKind::CollectiveStart;
      if (collective &&
          (instr.group < 0 || instr.group >= int(plan.groups.size())))
        throw PlanError(instr.describe() + " names group " +
                        std::to_string(instr.group) + ", but the plan has " +
                        std::to_string(plan.groups.size()));
      if ((instr.kind == InstrKind::CollectiveStart ||
           instr.kind == InstrKind::Wait) &&
          (instr.future < 0 || instr.future >= int(plan.numFutures)))
        throw PlanError(instr.describe() + " names future " +
                        std::to_string(instr.future) + ", but the plan has " +
                        std::to_string(plan.numFutures));
      if ((instr.kind == InstrKind::RecordEvent ||
           instr.kind == InstrKind::WaitEvent) &&
          (instr.event < 0 || instr.event >= int(plan.numEvents)))
        throw PlanError(instr.describe() + " names event " +
                        std::to_string(instr.event) + ", but the plan has " +
                        std::to_string(plan.numEvents));
      if (instr.kind == InstrKind::CollectiveStart)
        ++futureStarts[instr.future];
      if (instr.kind == InstrKind::Wait)
        ++futureWaits[instr.future];
      if (instr.kind == InstrKind::RecordEvent)
        ++eventRecords[instr.event];
      if (instr.kind == InstrKind::Kernel || collective)
        checkOp(plan, instr);
    }
  }
  for (uint32_t f = 0; f < plan.numFutures; ++f)
    if (futureStarts[f] != 1 || futureWaits[f] != 1)
      throw PlanError("future " + std::to_string(f) + " is started " +
                      std::to_string(futureStarts[f]) + " and waited " +
                      std::to_string(futureWaits[f]) +
                      " times; each must be once");
  for (uint32_t e = 0; e < plan.numEvents; ++e)
    if (eventRecords[e] != 1)
      throw PlanError("event " + std::to_string(e) + " is recorded " +
                      std::to_string(eventRecords[e]) +
                      " times; each must be once");
  checkProgress(plan);
  checkLifetimes(plan);
}
