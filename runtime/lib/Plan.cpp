//===- Plan.cpp - loading and checking a plan file ------------------------===//

#include "braid-runtime/Plan.h"
#include "OpChecker.h"
#include "OpChecks.h"
#include "braid-common/DeviceGroup.h"
#include "braid-common/PlanFormat.h"

#include "plan_generated.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <type_traits>

using namespace braid;
using namespace braid::rt;

const char *rt::roleName(Role role) {
  switch (role) {
  case Role::Temporary:
    return "temporary";
  case Role::Parameter:
    return "parameter";
  case Role::OptimizerState:
    return "optimizer_state";
  case Role::Batch:
    return "batch";
  case Role::Loss:
    return "loss";
  case Role::Hyperparameter:
    return "hyperparameter";
  }
  return "?";
}

int64_t Buffer::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

int64_t Group::size() const {
  int64_t n = 1;
  for (int64_t axis : axes)
    n *= gridShape[axis];
  return n;
}

void Group::locate(int64_t rank, int64_t &color, int64_t &index) const {
  locateInGroup(gridShape, axes, rank, color, index);
}

std::vector<int64_t> rt::stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  return strides;
}

int64_t rt::product(const std::vector<int64_t> &shape, size_t begin,
                    size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i)
    p *= shape[i];
  return p;
}

std::string Stream::name() const {
  return std::string(comm ? "comm" : "compute") + " " + std::to_string(index);
}

std::string Instr::describe() const {
  // An instruction a backend makes for itself (the end of a step) has no op.
  if (!info)
    return location;
  return std::string("'") + name() + "' at " + location;
}

std::string Instr::actionLabel() const {
  if (action == 0 || microBatch < 0)
    return "";
  return "FBW"[action - 1] + std::to_string(microBatch);
}

/// A FlatBuffer vector's elements, copied bytewise: the verifier checks
/// the alignment of a vector's length, not of its 8-byte elements, so a
/// crafted plan can place them 4 bytes off (an element-wise read would be a
/// misaligned load). FlatBuffers are little-endian, as every host braid runs
/// on.
template <typename T>
static std::vector<T> toVector(const flatbuffers::Vector<T> *v) {
  static_assert(std::is_arithmetic_v<T>, "a vector of scalars");
  if (!v)
    return {};
  std::vector<T> out(v->size());
  if (!out.empty())
    std::memcpy(out.data(), v->Data(), out.size() * sizeof(T));
  return out;
}

static std::string toString(const flatbuffers::String *s) {
  return s ? s->str() : std::string();
}

/// Runs the streams' synchronization abstractly: each stream advances until
/// it waits for an event or a future not yet recorded or started. If every
/// unfinished stream is stuck, the executor would hang: reject the plan.
namespace {

/// A plan instruction's attributes by id, checked against the op table's
/// descriptors as the generated decoder (BraidOpDecode.inc) reads them.
class AttrReader {
public:
  AttrReader(const Instr &instr, const plan::Instr *fb) : instr(instr) {
    const ops::OpInfo &info = *instr.info;
    byId.assign(info.numAttrs, nullptr);
    if (fb->attrs())
      for (const plan::Attr *a : *fb->attrs()) {
        if (a->id() >= info.numAttrs)
          fail("has attribute id " + std::to_string(a->id()) +
               ", but the op has " + std::to_string(info.numAttrs) +
               " attributes");
        if (byId[a->id()])
          fail("has attribute '" + std::string(info.attrs[a->id()].name) +
               "' twice");
        byId[a->id()] = a;
      }
    for (unsigned id = 0; id < info.numAttrs; ++id)
      if (info.attrs[id].required && !byId[id])
        fail("has no attribute '" + std::string(info.attrs[id].name) + "'");
  }

  bool has(unsigned id) const { return byId[id] != nullptr; }
  bool flag(unsigned id) const {
    if (!has(id))
      return false;
    return integer(id) != 0;
  }
  int64_t integer(unsigned id) const {
    const auto *v = byId[id]->ints();
    if (!v || v->size() != 1)
      fail(attr(id) + " is not one integer");
    return toVector(v)[0];
  }
  double real(unsigned id) const {
    const auto *v = byId[id]->floats();
    if (!v || v->size() != 1)
      fail(attr(id) + " is not one float");
    return toVector(v)[0];
  }
  std::vector<int64_t> ints(unsigned id) const {
    return toVector(byId[id]->ints());
  }
  std::vector<std::string> strings(unsigned id) const {
    std::vector<std::string> out;
    if (const auto *v = byId[id]->strings())
      for (const flatbuffers::String *s : *v)
        out.push_back(toString(s));
    return out;
  }
  std::vector<uint8_t> data(unsigned id) const {
    return toVector(byId[id]->data());
  }
  uint32_t enumeration(unsigned id) const {
    int64_t v = integer(id);
    const ops::AttrInfo &a = instr.info->attrs[id];
    if (v < 0 || v >= int64_t(a.enumCount))
      fail(attr(id) + " has value " + std::to_string(v) + ", not one of its " +
           std::to_string(a.enumCount) + " cases");
    return uint32_t(v);
  }

private:
  [[noreturn]] void fail(const std::string &message) const {
    throw PlanError(instr.describe() + " " + message);
  }
  std::string attr(unsigned id) const {
    return std::string("attribute '") + instr.info->attrs[id].name + "'";
  }
  const Instr &instr;
  std::vector<const plan::Attr *> byId;
};

ops::OpAttrs decodeOpAttrs(const ops::OpInfo &info, const AttrReader &r) {
  using namespace braid::ops;
#include "braid-common/BraidOpDecode.inc"
  return std::monostate();
}

} // namespace

static Plan decodePlan(const plan::Plan *fb, uint32_t version, bool isStage,
                       bool isEvaluation = false);
static void checkPipeline(const Plan &p);
static void checkEvaluation(const Plan &step, const Plan &eval);
static void checkStageTransfers(const Plan &p);

Plan rt::loadPayload(const uint8_t *bytes, size_t size, uint32_t version) {
  // The verifier checks alignment from the buffer's start: the start itself
  // must be 8-byte aligned for the reads to be.
  std::vector<uint64_t> aligned;
  if (reinterpret_cast<uintptr_t>(bytes) % alignof(uint64_t)) {
    aligned.resize((size + 7) / 8);
    if (size)
      std::memcpy(aligned.data(), bytes, size);
    bytes = reinterpret_cast<const uint8_t *>(aligned.data());
  }
  flatbuffers::Verifier verifier(bytes, size, /*max_depth=*/64,
                                 /*max_tables=*/50000000);
  if (!plan::VerifyPlanBuffer(verifier))
    throw PlanError("the plan's payload is not a valid plan FlatBuffer "
                    "(corrupt or from another program)");
  return decodePlan(plan::GetPlan(bytes), version, /*isStage=*/false);
}

/// Decodes and checks one plan table: a program, or a pipelined plan's
/// root with its stage programs.
static Plan decodePlan(const plan::Plan *fb, uint32_t version, bool isStage,
                       bool isEvaluation) {
  Plan p;
  p.formatVersion = version;
  p.producer = toString(fb->producer());
  p.function = toString(fb->function());
  p.worldSize = fb->world_size();
  p.arenaBytes = fb->arena_bytes();
  p.numEvents = fb->num_events();
  p.numFutures = fb->num_futures();
  if (p.numEvents > (1u << 24) || p.numFutures > (1u << 24))
    throw PlanError("the plan has too many events or futures");
  if (fb->buffers())
    for (const plan::Buffer *b : *fb->buffers()) {
      Buffer buffer;
      buffer.offset = b->offset();
      buffer.bytes = b->bytes();
      buffer.dtype = static_cast<DType>(b->dtype());
      buffer.shape = toVector(b->shape());
      buffer.name = toString(b->name());
      p.buffers.push_back(std::move(buffer));
    }
  if (fb->groups())
    for (const plan::Group *g : *fb->groups())
      p.groups.push_back({toString(g->grid()), toVector(g->grid_shape()),
                          toVector(g->axes())});
  if (fb->streams())
    for (const plan::Stream *s : *fb->streams()) {
      Stream stream;
      stream.comm = s->kind() == plan::StreamKind::Comm;
      stream.index = s->index();
      if (s->instrs())
        for (const plan::Instr *i : *s->instrs()) {
          Instr instr;
          instr.location = toString(i->location());
          instr.action = uint8_t(i->action());
          instr.microBatch = i->micro_batch();
          if (instr.action > uint8_t(plan::ActionKind::MAX) ||
              (instr.action != 0) != (instr.microBatch >= 0))
            throw PlanError("an instruction at " + instr.location +
                            " has action " + std::to_string(instr.action) +
                            " of micro-batch " +
                            std::to_string(instr.microBatch) +
                            ", which is no action of a pipeline schedule");
          instr.info = ops::findOp(i->opcode());
          if (!instr.info)
            throw PlanError("an instruction at " + instr.location +
                            " has opcode " + std::to_string(i->opcode()) +
                            ", which no op of this braid-run has");
          instr.opcode = instr.info->opcode;
          instr.kind = instr.info->instrKind;
          instr.attrs = decodeOpAttrs(*instr.info, AttrReader(instr, i));
          instr.operands = toVector(i->operands());
          instr.results = toVector(i->results());
          instr.group = i->group();
          instr.future = i->future();
          instr.event = i->event();
          instr.flops = i->flops();
          instr.bytesRead = i->bytes_read();
          instr.bytesWritten = i->bytes_written();
          instr.product = {i->product_batch(), i->product_m(), i->product_n(),
                           i->product_k()};
          stream.instrs.push_back(std::move(instr));
        }
      p.streams.push_back(std::move(stream));
    }
  auto bindings =
      [](const flatbuffers::Vector<flatbuffers::Offset<plan::Binding>> *v) {
        std::vector<Binding> out;
        if (v)
          for (const plan::Binding *b : *v)
            out.push_back({static_cast<Role>(b->role()), toString(b->name()),
                           b->buffer(), b->split_dim(),
                           toVector(b->split_blocks()), b->step_count(),
                           b->data_parallel_split_dim()});
        return out;
      };
  p.arguments = bindings(fb->arguments());
  p.results = bindings(fb->results());
  p.cluster = toString(fb->cluster());
  p.clusterJson = toString(fb->cluster_json());
  p.tpAxis = fb->tensor_parallel_axis();
  p.tpGrid = toVector(fb->tensor_parallel_grid());
  p.dpAxis = fb->data_parallel_axis();
  p.dpGrid = toVector(fb->data_parallel_grid());
  p.zeroStage = fb->zero_stage();
  p.ppAxis = fb->pipeline_axis();
  p.ppGrid = toVector(fb->pipeline_grid());
  p.stage = fb->stage();
  p.programOfRank = toVector(fb->program_of_rank());
  if (fb->evaluation()) {
    if (isStage || isEvaluation || (fb->stages() && fb->stages()->size()))
      throw PlanError("an evaluation program belongs to a step's plan, not "
                      "to a pipeline, a stage or another evaluation");
    p.evaluation.push_back(decodePlan(fb->evaluation(), version,
                                      /*isStage=*/false,
                                      /*isEvaluation=*/true));
  }
  if (fb->stages() && fb->stages()->size()) {
    if (isStage)
      throw PlanError("stage program " + std::to_string(p.stage) +
                      " holds stage programs of its own");
    if (!p.buffers.empty() || !p.streams.empty() || !p.arguments.empty() ||
        !p.results.empty())
      throw PlanError("a pipelined plan's root holds its stages' programs "
                      "and no program of its own, but it has buffers, "
                      "streams or bindings");
    for (const plan::Plan *stage : *fb->stages())
      p.stages.push_back(decodePlan(stage, version, /*isStage=*/true));
    checkPipeline(p);
    return p;
  }
  if (!isStage && (p.ppAxis >= 0 || p.stage >= 0 || !p.programOfRank.empty()))
    throw PlanError("the plan has a pipeline axis, a stage index or a "
                    "program per rank, but no stage programs");
  checkPlan(p);
  if (!p.evaluation.empty())
    checkEvaluation(p, p.evaluation.front());
  return p;
}

/// What running `eval` between steps of `step` relies on (the plan's
/// Evaluation field, braid-share-arena): one arena, the step's parameters
/// read where the step keeps them, nothing else of the step's overwritten,
/// no collective, one loss.
static void checkEvaluation(const Plan &step, const Plan &eval) {
  auto fail = [&](const std::string &what) {
    throw PlanError("the evaluation program @" + eval.function + " " + what);
  };
  if (eval.arenaBytes != step.arenaBytes || eval.worldSize != step.worldSize)
    fail("has an arena of " + std::to_string(eval.arenaBytes) + " bytes on " +
         std::to_string(eval.worldSize) + " ranks, the step " +
         std::to_string(step.arenaBytes) + " on " +
         std::to_string(step.worldSize) + ": it must share the step's");
  if (eval.tpAxis >= 0)
    fail("is tensor-parallel, which braid-run does not evaluate yet");
  for (const Stream &s : eval.streams)
    for (const Instr &i : s.instrs)
      if (i.group >= 0)
        fail("holds a collective (" + i.location +
             "), which braid-run does not run in an evaluation yet");
  size_t losses = 0;
  for (const Binding &r : eval.results)
    losses += r.role == Role::Loss;
  if (losses != 1 || eval.results.size() != 1)
    fail("must return one result, its loss");
  std::vector<bool> shared(eval.buffers.size(), false);
  for (const Binding &a : eval.arguments) {
    if (a.role != Role::Parameter && a.role != Role::Batch)
      fail("takes '" + a.name + "', which is neither a parameter nor batch");
    if (a.role != Role::Parameter)
      continue;
    const Binding *match = nullptr;
    for (const Binding &b : step.arguments)
      if (b.role == Role::Parameter && b.name == a.name)
        match = &b;
    const Buffer &mine = eval.buffers[a.buffer];
    if (!match)
      fail("reads parameter '" + a.name + "', which the step does not take");
    const Buffer &theirs = step.buffers[match->buffer];
    if (mine.offset != theirs.offset || mine.bytes != theirs.bytes ||
        mine.dtype != theirs.dtype || mine.shape != theirs.shape)
      fail("reads parameter '" + a.name + "' at bytes " +
           std::to_string(mine.offset) + "+" + std::to_string(mine.bytes) +
           ", but the step keeps it at " + std::to_string(theirs.offset) + "+" +
           std::to_string(theirs.bytes) + " (or in another type)");
    shared[a.buffer] = true;
  }
  // The step's arguments and results: what braid-run keeps between steps.
  std::vector<const Buffer *> kept;
  for (const auto *bindings : {&step.arguments, &step.results})
    for (const Binding &b : *bindings)
      kept.push_back(&step.buffers[b.buffer]);
  for (size_t id = 0; id < eval.buffers.size(); ++id) {
    const Buffer &e = eval.buffers[id];
    if (shared[id] || !e.bytes)
      continue;
    for (const Buffer *k : kept)
      if (k->bytes && e.offset < k->offset + k->bytes &&
          k->offset < e.offset + e.bytes)
        fail("writes '" + e.name + "' over the step's '" + k->name +
             "', which braid-run keeps between steps");
  }
}

/// The facts of a pipelined plan the runtime relies on: one program per
/// coordinate of the pipeline axis, each rank running that of its
/// coordinate, every stage on the same ranks and grid.
static void checkPipeline(const Plan &p) {
  if (p.worldSize == 0)
    throw PlanError("the plan's world size is 0");
  if (p.ppAxis < 0 || size_t(p.ppAxis) >= p.ppGrid.size())
    throw PlanError("the pipeline axis " + std::to_string(p.ppAxis) +
                    " is not an axis of the pipeline grid of " +
                    std::to_string(p.ppGrid.size()) + " axes");
  int64_t ranks = 1;
  for (int64_t d : p.ppGrid) {
    if (d < 1 || d > (1 << 20))
      throw PlanError("the pipeline grid has a bad dimension " +
                      std::to_string(d));
    ranks *= d;
    if (ranks > (1 << 20))
      throw PlanError("the pipeline grid has too many ranks");
  }
  if (ranks != int64_t(p.worldSize))
    throw PlanError("the pipeline grid spans " + std::to_string(ranks) +
                    " ranks, but the plan runs on " +
                    std::to_string(p.worldSize));
  if (int64_t(p.stages.size()) != p.ppSize())
    throw PlanError("the pipeline axis has " + std::to_string(p.ppSize()) +
                    " stages, but the plan holds " +
                    std::to_string(p.stages.size()) + " stage programs");
  for (size_t i = 0; i < p.stages.size(); ++i) {
    const Plan &s = p.stages[i];
    std::string what = "stage program " + std::to_string(i);
    if (s.stage != int32_t(i))
      throw PlanError(what + " says it is stage " + std::to_string(s.stage));
    if (s.worldSize != p.worldSize || s.ppAxis != p.ppAxis ||
        s.ppGrid != p.ppGrid)
      throw PlanError(what + " runs on another grid or pipeline axis than "
                             "the plan");
    if (s.tpAxis >= 0 && s.tpGrid != s.ppGrid)
      throw PlanError(what + " is tensor-parallel on another grid than its "
                             "pipeline");
  }
  if (p.programOfRank.size() != p.worldSize)
    throw PlanError("the plan names the program of " +
                    std::to_string(p.programOfRank.size()) +
                    " ranks, but "
                    "runs on " +
                    std::to_string(p.worldSize));
  for (size_t rank = 0; rank < p.programOfRank.size(); ++rank) {
    int64_t color = 0, index = 0;
    locateInGroup(p.ppGrid, {p.ppAxis}, int64_t(rank), color, index);
    if (p.programOfRank[rank] != uint64_t(index))
      throw PlanError("rank " + std::to_string(rank) + " runs stage program " +
                      std::to_string(p.programOfRank[rank]) +
                      ", but its coordinate on the pipeline axis is " +
                      std::to_string(index) + " (its peers name it so)");
  }
  checkStageTransfers(p);
}

/// The stage programs' transfers pair up as MPI and NCCL match them: per
/// pair of stages and stream, the k-th value one sends to the other and the
/// k-th the other receives from it have one element type and shape.
/// braid-verify-schedule proves this (and that they are one value) on the
/// IR; a plan file is checked again, so that a crafted or corrupt one fails
/// here, naming the transfer, instead of in the transport.
static void checkStageTransfers(const Plan &p) {
  struct Moved {
    const Buffer *buffer;
    const Instr *instr;
  };
  // (from, to, communication stream?, stream index): the values in order.
  using Key = std::tuple<int64_t, int64_t, bool, unsigned>;
  std::map<Key, std::vector<Moved>> sent, received;
  for (size_t s = 0; s < p.stages.size(); ++s) {
    const Plan &stage = p.stages[s];
    for (const Stream &stream : stage.streams)
      for (const Instr &instr : stream.instrs) {
        CollectiveKind kind = instr.collective();
        if (instr.group < 0 ||
            (kind != CollectiveKind::Send && kind != CollectiveKind::Recv &&
             kind != CollectiveKind::SendRecv))
          continue;
        // Transfers on the pipeline axis name the peer's stage (others are
        // checked per program).
        if (stage.groups[size_t(instr.group)].axes !=
            std::vector<int64_t>{p.ppAxis})
          continue;
        auto add = [&](bool isSend, int64_t peer, uint32_t id) {
          Key key = isSend ? Key{int64_t(s), peer, stream.comm, stream.index}
                           : Key{peer, int64_t(s), stream.comm, stream.index};
          (isSend ? sent : received)[key].push_back(
              {&stage.buffers[id], &instr});
        };
        if (kind == CollectiveKind::Send) {
          add(true, instr.as<ops::SendAttrs>().peer, instr.operands.at(0));
        } else if (kind == CollectiveKind::Recv) {
          add(false, instr.as<ops::RecvAttrs>().peer, instr.results.at(0));
        } else {
          const auto &a = instr.as<ops::SendRecvAttrs>();
          for (uint32_t id : instr.operands)
            add(true, a.send_peer, id);
          for (uint32_t id : instr.results)
            add(false, a.recv_peer, id);
        }
      }
  }
  std::set<Key> keys;
  for (auto &entry : sent)
    keys.insert(entry.first);
  for (auto &entry : received)
    keys.insert(entry.first);
  for (const Key &key : keys) {
    auto [from, to, comm, index] = key;
    const std::vector<Moved> &out = sent[key], &in = received[key];
    std::string between = " from stage " + std::to_string(from) + " to stage " +
                          std::to_string(to) + " on stream " +
                          (comm ? "comm " : "compute ") + std::to_string(index);
    for (size_t k = 0; k < std::min(out.size(), in.size()); ++k)
      if (out[k].buffer->dtype != in[k].buffer->dtype ||
          out[k].buffer->shape != in[k].buffer->shape)
        throw PlanError("transfer #" + std::to_string(k) + between + " sends " +
                        opcheck::shapeOf(*out[k].buffer) + " (" +
                        out[k].instr->describe() + "), but the receive " +
                        "matching it expects " +
                        opcheck::shapeOf(*in[k].buffer) + " (" +
                        in[k].instr->describe() + ")");
    if (out.size() != in.size())
      throw PlanError("stage " + std::to_string(from) + " sends " +
                      std::to_string(out.size()) + " values to stage " +
                      std::to_string(to) + " on stream " +
                      (comm ? "comm " : "compute ") + std::to_string(index) +
                      ", but stage " + std::to_string(to) + " receives " +
                      std::to_string(in.size()) +
                      " from it; each send needs "
                      "its receive");
  }
}

std::string CommunicatorSpec::describe() const {
  std::ostringstream os;
  os << "axes";
  for (int64_t a : group.axes)
    os << " " << a;
  os << " of grid '" << group.grid << "' ";
  for (size_t d = 0; d < group.gridShape.size(); ++d)
    os << (d ? "x" : "") << group.gridShape[d];
  os << ", stream " << (comm ? "comm " : "compute ") << streamIndex;
  return os.str();
}

std::vector<CommunicatorSpec> rt::communicatorsOf(const Plan &plan) {
  using Key = std::tuple<std::string, std::vector<int64_t>,
                         std::vector<int64_t>, bool, unsigned>;
  std::map<Key, CommunicatorSpec> found;
  auto add = [&](const Plan &program) {
    for (unsigned s = 0; s < program.streams.size(); ++s)
      for (const Instr &instr : program.streams[s].instrs) {
        if (!instr.info || !instr.info->isCollective() || instr.group < 0 ||
            size_t(instr.group) >= program.groups.size())
          continue;
        const Group &g = program.groups[size_t(instr.group)];
        const Stream &stream = program.streams[s];
        found.insert(
            {Key{g.grid, g.gridShape, g.axes, stream.comm, stream.index},
             {g, stream.comm, stream.index}});
      }
  };
  add(plan);
  for (const Plan &stage : plan.stages)
    add(stage);
  std::vector<CommunicatorSpec> out;
  for (auto &[key, spec] : found)
    out.push_back(spec);
  return out;
}

Plan rt::programOf(Plan plan, int64_t rank) {
  std::vector<CommunicatorSpec> communicators = communicatorsOf(plan);
  if (!plan.isPipelined()) {
    plan.communicators = std::move(communicators);
    return plan;
  }
  if (rank < 0 || size_t(rank) >= plan.programOfRank.size())
    throw PlanError("rank " + std::to_string(rank) +
                    " is not a rank of the "
                    "plan's " +
                    std::to_string(plan.worldSize));
  Plan program = std::move(plan.stages[plan.programOfRank[size_t(rank)]]);
  program.communicators = std::move(communicators);
  return program;
}

Plan rt::loadPlan(const uint8_t *bytes, size_t size) {
  plan::FileHeader header;
  if (size < sizeof(header))
    throw PlanError("the file is " + std::to_string(size) +
                    " bytes, shorter than a plan header (" +
                    std::to_string(sizeof(header)) + " bytes): truncated?");
  std::memcpy(&header, bytes, sizeof(header));
  if (std::memcmp(header.magic, plan::kMagic, sizeof(plan::kMagic)) != 0)
    throw PlanError("not a braid plan (bad magic number)");
  if (header.version != plan::kFormatVersion)
    throw PlanError("plan format version " + std::to_string(header.version) +
                    ", but this braid-run reads version " +
                    std::to_string(plan::kFormatVersion) +
                    "; recompile the plan with a matching braid-compile");
  if (header.payloadBytes != size - sizeof(header))
    throw PlanError("the header announces " +
                    std::to_string(header.payloadBytes) +
                    " bytes of payload, but the file has " +
                    std::to_string(size - sizeof(header)) + ": truncated?");
  const uint8_t *payload = bytes + sizeof(header);
  if (plan::checksum(payload, header.payloadBytes) != header.crc32)
    throw PlanError("checksum mismatch: the plan file is corrupt");
  return loadPayload(payload, header.payloadBytes, header.version);
}

std::vector<uint8_t> rt::readPlanFile(const std::string &path) {
  // A plan is a regular file of at most FlatBuffers' 2 GiB: a directory,
  // a FIFO or a device (/dev/zero) would be read forever or fail late.
  std::error_code error;
  std::filesystem::file_status status = std::filesystem::status(path, error);
  if (error || !std::filesystem::exists(status))
    throw PlanError("cannot open plan file '" + path + "'" +
                    (error ? ": " + error.message() : ""));
  if (!std::filesystem::is_regular_file(status))
    throw PlanError("'" + path + "' is " +
                    (std::filesystem::is_directory(status) ? "a directory"
                     : std::filesystem::is_fifo(status)    ? "a FIFO"
                     : std::filesystem::is_character_file(status) ||
                             std::filesystem::is_block_file(status)
                         ? "a device"
                         : "not a regular file") +
                    ", not a plan file");
  uintmax_t size = std::filesystem::file_size(path, error);
  if (error)
    throw PlanError("cannot read plan file '" + path + "': " + error.message());
  if (size > kMaxPlanFileBytes)
    throw PlanError("'" + path + "' has " + std::to_string(size) +
                    " bytes, more than a plan can hold (" +
                    std::to_string(kMaxPlanFileBytes) +
                    ", FlatBuffers' limit)");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw PlanError("cannot open plan file '" + path + "'");
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  in.read(reinterpret_cast<char *>(bytes.data()), std::streamsize(size));
  if (size_t(in.gcount()) != bytes.size())
    throw PlanError("cannot read plan file '" + path + "': it ended after " +
                    std::to_string(in.gcount()) + " of " +
                    std::to_string(size) + " bytes");
  return bytes;
}

Plan rt::loadPlanFile(const std::string &path) {
  std::vector<uint8_t> bytes = readPlanFile(path);
  try {
    return loadPlan(bytes.data(), bytes.size());
  } catch (const PlanError &e) {
    throw PlanError(path + ": " + e.what());
  }
}

DType rt::computeTypeOf(const Plan &plan, const Instr &instr) {
  for (const auto *ids : {&instr.results, &instr.operands})
    for (uint32_t id : *ids)
      if (isFloat(plan.buffers[id].dtype))
        return plan.buffers[id].dtype;
  return DType::F32;
}
