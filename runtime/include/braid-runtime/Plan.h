//===- Plan.h - loading and checking a plan file ----------------*- C++ -*-===//
//
// The loader reads a plan file, checks the header (magic, format version,
// size, CRC-32), verifies the FlatBuffer, and checks every fact the executor
// relies on (buffer ranges inside the arena, ids in range, shapes and dtypes
// consistent with each op). Anything wrong is a PlanError naming the problem;
// a loaded plan never makes the executor read or write outside its arena.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_PLAN_H
#define BRAID_RUNTIME_PLAN_H

#include "braid-common/CostModel.h"
#include "braid-common/DType.h"
#include "braid-common/OpTable.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace braid::rt {

/// A malformed plan, or a plan that cannot run here.
struct PlanError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using ops::InstrKind;
using ops::Opcode;

enum class Role : uint8_t {
  Temporary = 0,
  Parameter,
  OptimizerState,
  Batch,
  Loss,
  Hyperparameter
};
const char *roleName(Role role);

struct Buffer {
  uint64_t offset = 0, bytes = 0;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::string name;
  int64_t numElements() const;
};

/// One op of the plan, decoded once on load: its opcode and the op table's
/// entry for it, its buffers, and its attributes as the op's typed struct
/// (braid-common/OpTable.h, generated from BraidOps.td).
struct Instr {
  InstrKind kind = InstrKind::Kernel;
  Opcode opcode = Opcode::Matmul;
  const ops::OpInfo *info = nullptr;
  std::vector<uint32_t> operands, results;
  ops::OpAttrs attrs;
  int group = -1, future = -1, event = -1;
  std::string location;
  /// A kernel's cost (CostOpInterface); 0 for other instructions.
  uint64_t flops = 0, bytesRead = 0, bytesWritten = 0;
  /// A matrix product's sizes (getProductShape); empty for other kernels.
  cost::ProductShape product;
  /// Pipeline parallelism: the schedule's action the op belongs to (the
  /// plan's ActionKind: 0 none, 1 forward, 2 backward or B, 3 W) and its
  /// micro-batch, -1 outside one.
  uint8_t action = 0;
  int microBatch = -1;
  /// The action's label ("F3", "B3", "W3"; empty outside one), as
  /// braid-pipeline's braid.action spells it.
  std::string actionLabel() const;

  /// The attributes of an op whose struct is `T` (the loader made `attrs`
  /// the struct of `opcode`).
  template <typename T> const T &as() const { return std::get<T>(attrs); }
  /// The op's mnemonic without the dialect prefix, such as all_reduce_start.
  const char *name() const { return info ? info->name : "?"; }
  /// A collective's kind (None for other ops).
  CollectiveKind collective() const {
    return info ? info->collective : CollectiveKind::None;
  }
  /// "'op' at location", for messages (the location alone for an
  /// instruction without an op).
  std::string describe() const;
};

struct Group {
  std::string grid;
  std::vector<int64_t> gridShape, axes;
  int64_t size() const;
  /// Where world rank `rank` sits: `color` numbers its group among the
  /// groups of this kind (its coordinates off the axes), `index` is its
  /// rank within the group (its coordinates along the axes, row-major).
  void locate(int64_t rank, int64_t &color, int64_t &index) const;
};

/// Row-major strides of `shape`, and the product of `shape[begin, end)`.
std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape);
int64_t product(const std::vector<int64_t> &shape, size_t begin, size_t end);

struct Stream {
  bool comm = false;
  unsigned index = 0;
  std::vector<Instr> instrs;
  std::string name() const;
};

struct Binding {
  Role role = Role::Temporary;
  std::string name;
  uint32_t buffer = 0;
  /// Tensor parallelism: the dimension along which the buffer holds this
  /// rank's piece of the global value (-1: the whole value), and the global
  /// sizes of that dimension's blocks (empty: one block), each cut into one
  /// piece per rank of the tensor-parallel axis.
  int32_t splitDim = -1;
  std::vector<int64_t> splitBlocks;
  /// An argument holding a training step's count (plan.fbs's step_count):
  /// a whole number of steps taken.
  bool stepCount = false;
  /// ZeRO: the dimension along which the buffer holds this rank's piece,
  /// over the data-parallel axis, of its tensor-parallel piece (or of the
  /// global value); -1: all of it.
  int32_t dpSplitDim = -1;
};

/// A communicator a plan's ranks create: a device group, named by its grid
/// and axes (a stage program's group numbers are its own), and the stream
/// that issues collectives on it, named as the compiler's #braid.stream
/// (compute or comm, and its index): a stage program lists only the streams
/// it uses, so a stream's place in `Plan::streams` differs between stages.
struct CommunicatorSpec {
  Group group;
  bool comm = false;
  unsigned streamIndex = 0;
  /// Whether `g` on `s` is this communicator's group and stream.
  bool matches(const Group &g, const Stream &s) const {
    return s.comm == comm && s.index == streamIndex && g.grid == group.grid &&
           g.gridShape == group.gridShape && g.axes == group.axes;
  }
  /// "axes 1 of grid 'world' 2x2, stream comm 1", for messages.
  std::string describe() const;
};

struct Plan {
  uint32_t formatVersion = 0;
  std::string producer, function;
  uint32_t worldSize = 1;
  uint64_t arenaBytes = 0;
  std::vector<Buffer> buffers;
  std::vector<Group> groups;
  std::vector<Stream> streams;
  uint32_t numEvents = 0, numFutures = 0;
  std::vector<Binding> arguments, results;
  /// The cluster the plan was compiled for (name and JSON description);
  /// empty when braid-compile was given none.
  std::string cluster, clusterJson;
  /// Tensor parallelism: the grid axis split bindings are split over (-1:
  /// none) and the grid's shape.
  int32_t tpAxis = -1;
  std::vector<int64_t> tpGrid;

  /// ZeRO (format 6, docs/ShardedDataParallel.md): the grid axis the
  /// data-parallel split bindings are split over (-1: none), the grid's
  /// shape and the stage.
  int32_t dpAxis = -1;
  std::vector<int64_t> dpGrid;
  int32_t zeroStage = 0;

  /// Pipeline parallelism (format 5, docs/Pipeline.md). A pipelined plan's
  /// root has no program of its own: `stages` are the stage programs by
  /// index and `programOfRank` the one each world rank runs. `ppAxis` and
  /// `ppGrid` (the pipeline axis and its grid's shape) are set in the root
  /// and in every stage; `stage` is a stage program's index, -1 elsewhere.
  std::vector<Plan> stages;
  std::vector<uint32_t> programOfRank;
  int32_t ppAxis = -1;
  std::vector<int64_t> ppGrid;
  int32_t stage = -1;
  /// The step's evaluation program (docs/Runtime.md, "Evaluation"), at
  /// most one: a plan over the same arena, its parameter buffers at the
  /// step's parameter arguments' bytes, its other buffers clear of every
  /// buffer of the step's arguments and results, without collectives.
  std::vector<Plan> evaluation;
  /// Every communicator any rank of the whole plan creates (every stage
  /// program's), each once, in one order that does not depend on the rank:
  /// creating one is a call on every rank of the world, so every rank
  /// creates all of them in this order, those its own program does not
  /// use too (communicatorsOf; set by programOf).
  std::vector<CommunicatorSpec> communicators;

  /// The ranks of the tensor-parallel axis (1 without one).
  int64_t tpSize() const { return tpAxis < 0 ? 1 : tpGrid[size_t(tpAxis)]; }
  /// The ranks optimizer state is sharded over (1 without ZeRO).
  int64_t dpShards() const { return dpAxis < 0 ? 1 : dpGrid[size_t(dpAxis)]; }
  /// The stages of the pipeline axis (1 without one).
  int64_t ppSize() const { return ppAxis < 0 ? 1 : ppGrid[size_t(ppAxis)]; }
  /// Whether this is a pipelined plan's root (it holds stage programs).
  bool isPipelined() const { return !stages.empty(); }
};

/// Every program of `plan`: a pipelined plan's stage programs in order, or
/// the plan itself.
inline std::vector<const Plan *> programsOf(const Plan &plan) {
  std::vector<const Plan *> programs;
  for (const Plan &stage : plan.stages)
    programs.push_back(&stage);
  if (programs.empty())
    programs.push_back(&plan);
  return programs;
}

/// The program world rank `rank` runs: a pipelined plan's stage program
/// for it (taken out of `plan`), or the plan itself; either with
/// `communicators` set from the whole plan.
Plan programOf(Plan plan, int64_t rank);

/// The communicators of `plan` (a pipelined plan's every stage program):
/// each (group, stream) that issues a collective, once, sorted by grid,
/// grid shape, axes and stream.
std::vector<CommunicatorSpec> communicatorsOf(const Plan &plan);

/// Where a rank sits: its place on the tensor-parallel axis, its stage on
/// the pipeline axis, and the data-parallel replica it belongs to (the
/// ranks of one tensor-parallel group, and the stages of one pipeline,
/// share a batch). Without either every rank is its own replica.
struct RankPlace {
  int64_t tpIndex = 0, tpSize = 1, dpIndex = 0, dpSize = 1, ppIndex = 0,
          ppSize = 1;
  /// ZeRO: the rank's place on the axis optimizer state is sharded over.
  int64_t shardIndex = 0, shards = 1;
};
RankPlace placeRank(const Plan &plan, int64_t rank);

/// The global shape of the value `binding` holds a piece of.
std::vector<int64_t> globalShape(const Plan &plan, const Binding &binding);
/// The shape of its tensor-parallel piece (the buffer's, but for a ZeRO
/// piece).
std::vector<int64_t> tensorParallelShape(const Plan &plan,
                                         const Binding &binding);

/// Copies between a global row-major array of `shape` (elements of
/// `elementBytes`) and the piece of it that rank `index` of `size` holds
/// when split along `dim` in `blocks` (global sizes; empty: one block):
/// to the piece if `toPiece`, else from it into the global array.
void copyPiece(const uint8_t *from, uint8_t *to,
               const std::vector<int64_t> &shape, size_t elementBytes,
               int32_t dim, const std::vector<int64_t> &blocks, int64_t size,
               int64_t index, bool toPiece);

/// The most bytes a plan file may have: FlatBuffers' limit (2 GiB).
inline constexpr uint64_t kMaxPlanFileBytes = uint64_t(1) << 31;

/// The bytes of the plan file at `path`: a regular file of at most
/// kMaxPlanFileBytes (a directory, FIFO or device is a PlanError naming
/// the path and what it is).
std::vector<uint8_t> readPlanFile(const std::string &path);

/// Reads and checks a plan file.
Plan loadPlanFile(const std::string &path);
/// Checks and decodes a whole plan file held in memory.
Plan loadPlan(const uint8_t *bytes, size_t size);
/// Checks and decodes the FlatBuffer payload alone (no header): what the
/// fuzzer drives, since random bytes rarely pass the checksum.
Plan loadPayload(const uint8_t *bytes, size_t size, uint32_t version);

/// Checks that every tensor an instruction touches is f32, i32, i64 or i1,
/// or also bf16 and f16 where `half` (the cpu backend widens them to f32;
/// the cuda backend takes f32 only); a PlanError names the first that is
/// not. (The loader takes every float type: the simulator times any.)
void checkComputeTypes(const Plan &plan, const char *backend, bool half);

/// The type a kernel computes in, for its cost: that of its first
/// floating-point result, else operand; f32 if it has none.
DType computeTypeOf(const Plan &plan, const Instr &instr);

/// Prints the plan for people: buffers, groups, streams, bindings.
std::string dumpPlan(const Plan &plan);

} // namespace braid::rt

#endif // BRAID_RUNTIME_PLAN_H
