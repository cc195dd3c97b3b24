//===- PlanDump.cpp - a plan printed for people (braid-run --dump) --------===//

#include "braid-runtime/Plan.h"

#include <sstream>

using namespace braid;
using namespace braid::rt;

static std::string shapeString(const Buffer &b) {
  std::string s = "tensor<";
  for (int64_t d : b.shape)
    s += std::to_string(d) + "x";
  return s + dtypeName(b.dtype) + ">";
}

std::string rt::dumpPlan(const Plan &plan) {
  std::ostringstream os;
  if (plan.isPipelined()) {
    os << plan.function << " (format " << plan.formatVersion << ", written by "
       << plan.producer << ")\n";
    os << "  world size " << plan.worldSize << ", " << plan.stages.size()
       << " stages on axis " << plan.ppAxis << " of a grid [";
    for (size_t d = 0; d < plan.ppGrid.size(); ++d)
      os << (d ? ", " : "") << plan.ppGrid[d];
    os << "]\n  program of each rank:";
    for (uint32_t program : plan.programOfRank)
      os << " " << program;
    os << "\n";
    if (!plan.cluster.empty())
      os << "  compiled for cluster " << plan.cluster << "\n";
    for (const Plan &stage : plan.stages)
      os << "stage " << stage.stage << ": " << dumpPlan(stage);
    return os.str();
  }
  os << "plan of @" << plan.function << " (format " << plan.formatVersion
     << ", written by " << plan.producer << ")\n";
  os << "  world size " << plan.worldSize << ", arena " << plan.arenaBytes
     << " bytes, " << plan.buffers.size() << " buffers, " << plan.streams.size()
     << " streams, " << plan.numEvents << " events, " << plan.numFutures
     << " futures\n";
  if (!plan.cluster.empty())
    os << "  compiled for cluster " << plan.cluster << "\n";
  os << "groups:\n";
  for (size_t i = 0; i < plan.groups.size(); ++i) {
    const Group &g = plan.groups[i];
    os << "  #" << i << " @" << g.grid << " axes [";
    for (size_t a = 0; a < g.axes.size(); ++a)
      os << (a ? ", " : "") << g.axes[a];
    os << "] (" << g.size() << " ranks)\n";
  }
  auto bindings = [&](const char *title, const std::vector<Binding> &list) {
    os << title << ":\n";
    for (const Binding &b : list) {
      const Buffer &buf = plan.buffers[b.buffer];
      os << "  " << roleName(b.role) << " '" << b.name << "' "
         << shapeString(buf) << " @" << buf.offset
         << (b.stepCount ? " (step count)" : "") << "\n";
    }
  };
  bindings("arguments", plan.arguments);
  bindings("results", plan.results);
  auto names = [&](const std::vector<uint32_t> &ids) {
    std::string s;
    for (size_t k = 0; k < ids.size(); ++k)
      s += (k ? ", " : "") + plan.buffers[ids[k]].name + "@" +
           std::to_string(plan.buffers[ids[k]].offset);
    return s;
  };
  for (const Stream &s : plan.streams) {
    os << "stream " << s.name() << " (" << s.instrs.size()
       << " instructions):\n";
    for (const Instr &i : s.instrs) {
      os << "  ";
      switch (i.kind) {
      case InstrKind::RecordEvent:
        os << "record_event e" << i.event;
        break;
      case InstrKind::WaitEvent:
        os << "wait_event e" << i.event;
        break;
      case InstrKind::Wait:
        os << "wait f" << i.future << " -> " << names(i.results);
        break;
      case InstrKind::Kernel:
      case InstrKind::Collective:
      case InstrKind::CollectiveStart:
        if (!i.results.empty())
          os << names(i.results) << " = ";
        os << i.name();
        if (i.kind == InstrKind::CollectiveStart)
          os << " f" << i.future;
        if (i.group >= 0)
          os << " group #" << i.group;
        os << " (" << names(i.operands) << ")";
        if (i.kind == InstrKind::Kernel)
          os << " [" << i.flops << " flops, " << i.bytesRead << " B read, "
             << i.bytesWritten << " B written, "
             << dtypeName(computeTypeOf(plan, i)) << "]";
        if (!i.product.empty())
          os << " product " << i.product.batch << "x" << i.product.m << "x"
             << i.product.n << "x" << i.product.k;
      }
      os << "\n";
    }
  }
  for (const Plan &eval : plan.evaluation) {
    size_t instrs = 0;
    for (const Stream &s : eval.streams)
      instrs += s.instrs.size();
    std::string params;
    for (const Binding &b : eval.arguments)
      if (b.role == Role::Parameter)
        params += (params.empty() ? "" : ", ") + b.name;
    os << "evaluation program @" << eval.function << ": " << instrs
       << " instructions on " << eval.streams.size()
       << (eval.streams.size() == 1 ? " stream, " : " streams, ")
       << eval.buffers.size() << " buffers, its parameters " << params
       << " at the step's bytes\n"
       << dumpPlan(eval);
  }
  return os.str();
}
