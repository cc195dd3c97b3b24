//===- SimReport.cpp - the simulator's report and trace
//--------------------===//

#include "SimItems.h"
#include "SimPlayer.h"
#include "braid-runtime/SimBackend.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

using namespace braid;
using namespace braid::rt;
using namespace braid::rt::sim;
using namespace braid::cost;

void braid::rt::sim::writeTrace(std::ostream &os,
                                const std::vector<Program> &programs,
                                const std::vector<uint32_t> &programOf,
                                const std::vector<TraceEvent> &events,
                                int64_t ranks) {
  os << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&] {
    if (!first)
      os << ",\n";
    first = false;
  };
  auto quoted = [](const std::string &s) {
    std::string q = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\')
        q += '\\';
      if (static_cast<unsigned char>(c) >= 0x20)
        q += c;
    }
    return q + "\"";
  };
  for (int64_t r = 0; r < ranks; ++r) {
    const Plan &plan = *programs[programOf[size_t(r)]].plan;
    sep();
    os << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << r
       << ",\"args\":{\"name\":\"rank " << r;
    if (plan.stage >= 0)
      os << " (stage " << plan.stage << ")";
    os << "\"}}";
    for (size_t s = 0; s < plan.streams.size(); ++s) {
      sep();
      os << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << r
         << ",\"tid\":" << s
         << ",\"args\":{\"name\":" << quoted(plan.streams[s].name()) << "}}";
    }
  }
  os << std::setprecision(12);
  for (const TraceEvent &e : events) {
    sep();
    const Instr &i = *e.item->instr;
    os << "{\"ph\":\"X\",\"pid\":" << e.rank << ",\"tid\":" << e.stream
       << ",\"name\":" << quoted(i.name()) << ",\"cat\":\""
       << (e.item->comm ? "comm" : "compute") << "\",\"ts\":" << e.start * 1e6
       << ",\"dur\":" << (e.end - e.start) * 1e6
       << ",\"args\":{\"location\":" << quoted(i.location);
    if (i.microBatch >= 0)
      os << ",\"action\":" << quoted(i.actionLabel())
         << ",\"micro_batch\":" << i.microBatch;
    if (e.item->comm)
      os << ",\"bytes\":" << e.item->commBytes
         << ",\"algorithm\":" << quoted(e.algorithm);
    else
      os << ",\"flops\":" << i.flops
         << ",\"bytes\":" << i.bytesRead + i.bytesWritten;
    os << "}}";
  }
  os << "\n]}\n";
}

void braid::rt::printSimReport(std::ostream &os, const SimReport &r,
                               const Cluster &cluster) {
  auto ms = [](double s) {
    std::ostringstream o;
    o << std::fixed << std::setprecision(6) << s * 1e3 << " ms";
    return o.str();
  };
  os << "simulated on " << cluster.name << " (" << cluster.gpus() << " x "
     << cluster.gpu << "), " << r.ranks << " ranks, " << r.kernels
     << " kernels and " << r.collectives << " collectives a rank\n";
  os << "  step time              " << ms(r.stepTime) << "\n";
  os << "  compute time           " << ms(r.computeTime) << "\n";
  os << "  communication time     " << ms(r.commTime) << "\n";
  os << "  exposed communication  " << ms(r.exposedComm) << "\n";
  os << "  overlap fraction       " << std::fixed << std::setprecision(4)
     << r.overlapFraction << "\n";
  os << "  peak memory            " << r.peakMemoryBytes << " bytes ("
     << std::setprecision(2) << double(r.peakMemoryBytes) / (1 << 30)
     << " GiB, the plan's arena)\n";
  os << "  memory by use          " << plan::describeConsumers(r.memory)
     << "\n";
  if (r.gpuMemoryBytes == 0)
    os << "  GPU memory             not given by the cluster: not checked\n";
  else if (r.fits())
    os << "  GPU memory             " << std::setprecision(1)
       << double(r.gpuMemoryBytes) / (1 << 30) << " GiB: fits, "
       << std::setprecision(2)
       << 100.0 * double(r.peakMemoryBytes) / double(r.gpuMemoryBytes)
       << "% used\n";
  else
    os << "  GPU memory             DOES NOT FIT: "
       << plan::memoryShortfall(r.memory, r.gpuMemoryBytes, cluster.gpu)
       << "\n";
  os << "  lower bound            " << ms(r.bound) << " (compute "
     << ms(r.computeBound) << ", communication " << ms(r.commBound)
     << ", last bucket " << ms(r.tailBound) << ")\n";
  os << "  efficiency             " << std::setprecision(4) << r.efficiency
     << "\n";
  if (r.stageBusy.empty())
    return;
  os << "  pipeline stages        " << r.stageBusy.size()
     << ", bubble fraction " << std::setprecision(4) << r.bubbleFraction
     << " (the share of the step a stage computes nothing, averaged)\n";
  for (size_t i = 0; i < r.stageBusy.size(); ++i)
    os << "  stage " << std::left << std::setw(17) << i << std::right
       << "computing " << ms(r.stageBusy[i]) << " (kernels "
       << ms(r.stageCompute[i]) << " uncontended), idle "
       << std::setprecision(4)
       << (r.stepTime > 0 ? 1 - r.stageBusy[i] / r.stepTime : 0)
       << ", peak memory " << r.stageMemory[i] << " bytes\n"
       << "  " << std::setw(23) << ""
       << "kernels of forwards " << ms(r.stageActionCompute[i][1])
       << ", backwards " << ms(r.stageActionCompute[i][2]) << ", W "
       << ms(r.stageActionCompute[i][3]) << ", the rest "
       << ms(r.stageActionCompute[i][0]) << "; activations at most "
       << r.stageActivations[i] << " bytes\n";
}

void braid::rt::writeSimReportJson(std::ostream &os, const SimReport &r,
                                   const Cluster &cluster) {
  os << std::setprecision(17);
  os << "{\"cluster\": \"" << cluster.name << "\", \"ranks\": " << r.ranks
     << ", \"kernels\": " << r.kernels << ", \"collectives\": " << r.collectives
     << ", \"step_time\": " << r.stepTime
     << ", \"compute_time\": " << r.computeTime
     << ", \"comm_time\": " << r.commTime << ", \"comm_bytes\": " << r.commBytes
     << ", \"exposed_comm\": " << r.exposedComm
     << ", \"comm_wall_time\": " << r.commWallTime
     << ", \"overlap_fraction\": " << r.overlapFraction
     << ", \"peak_memory_bytes\": " << r.peakMemoryBytes
     << ", \"gpu_memory_bytes\": " << r.gpuMemoryBytes
     << ", \"fits\": " << (r.fits() ? "true" : "false")
     << ", \"memory\": {\"parameters\": " << r.memory.parameters
     << ", \"optimizer_state\": " << r.memory.optimizerState
     << ", \"batch\": " << r.memory.batch
     << ", \"communication\": " << r.memory.communication
     << ", \"other\": " << r.memory.other << "}"
     << ", \"bound\": " << r.bound << ", \"compute_bound\": " << r.computeBound
     << ", \"comm_bound\": " << r.commBound
     << ", \"tail_bound\": " << r.tailBound
     << ", \"efficiency\": " << r.efficiency
     << ", \"bubble_fraction\": " << r.bubbleFraction << ", \"stages\": [";
  for (size_t i = 0; i < r.stageBusy.size(); ++i)
    os << (i ? ", " : "") << "{\"busy\": " << r.stageBusy[i]
       << ", \"compute\": " << r.stageCompute[i]
       << ", \"peak_memory_bytes\": " << r.stageMemory[i]
       << ", \"activation_peak_bytes\": " << r.stageActivations[i]
       << ", \"action_compute\": {\"none\": " << r.stageActionCompute[i][0]
       << ", \"F\": " << r.stageActionCompute[i][1]
       << ", \"B\": " << r.stageActionCompute[i][2]
       << ", \"W\": " << r.stageActionCompute[i][3] << "}}";
  os << "]}\n";
}
