//===- SimReport.cpp - the simulator's report and trace
//--------------------===//

#include "SimItems.h"
#include "SimPlayer.h"
#include "braid-runtime/SimBackend.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <iomanip>
#include <sstream>

using namespace braid;
using namespace braid::rt;
using namespace braid::rt::sim;
using namespace braid::cost;

// Key order as written: the report reads in the order a reader expects.
using Json = nlohmann::ordered_json;

void braid::rt::sim::writeTrace(std::ostream &os,
                                const std::vector<Program> &programs,
                                const std::vector<uint32_t> &programOf,
                                const std::vector<TraceEvent> &events,
                                int64_t ranks) {
  // One JSON object a line (the Chrome trace format), each written by
  // nlohmann-json: names and locations are escaped, not filtered.
  os << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto emit = [&](const Json &event) {
    if (!first)
      os << ",\n";
    first = false;
    os << event.dump();
  };
  for (int64_t r = 0; r < ranks; ++r) {
    const Plan &plan = *programs[programOf[size_t(r)]].plan;
    std::string name = "rank " + std::to_string(r);
    if (plan.stage >= 0)
      name += " (stage " + std::to_string(plan.stage) + ")";
    emit({{"ph", "M"},
          {"name", "process_name"},
          {"pid", r},
          {"args", {{"name", name}}}});
    for (size_t s = 0; s < plan.streams.size(); ++s)
      emit({{"ph", "M"},
            {"name", "thread_name"},
            {"pid", r},
            {"tid", s},
            {"args", {{"name", plan.streams[s].name()}}}});
  }
  for (const TraceEvent &e : events) {
    const Instr &i = *e.item->instr;
    Json args = {{"location", i.location}};
    if (i.microBatch >= 0) {
      args["action"] = i.actionLabel();
      args["micro_batch"] = i.microBatch;
    }
    if (e.item->comm) {
      args["bytes"] = e.item->commBytes;
      args["algorithm"] = e.algorithm;
    } else {
      args["flops"] = i.flops;
      args["bytes"] = i.bytesRead + i.bytesWritten;
    }
    emit({{"ph", "X"},
          {"pid", e.rank},
          {"tid", e.stream},
          {"name", i.name()},
          {"cat", e.item->comm ? "comm" : "compute"},
          {"ts", e.start * 1e6},
          {"dur", (e.end - e.start) * 1e6},
          {"args", std::move(args)}});
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
  Json stages = Json::array();
  for (size_t i = 0; i < r.stageBusy.size(); ++i)
    stages.push_back({{"busy", r.stageBusy[i]},
                      {"compute", r.stageCompute[i]},
                      {"peak_memory_bytes", r.stageMemory[i]},
                      {"activation_peak_bytes", r.stageActivations[i]},
                      {"action_compute",
                       {{"none", r.stageActionCompute[i][0]},
                        {"F", r.stageActionCompute[i][1]},
                        {"B", r.stageActionCompute[i][2]},
                        {"W", r.stageActionCompute[i][3]}}}});
  Json report = {{"cluster", cluster.name},
                 {"ranks", r.ranks},
                 {"kernels", r.kernels},
                 {"collectives", r.collectives},
                 {"step_time", r.stepTime},
                 {"compute_time", r.computeTime},
                 {"comm_time", r.commTime},
                 {"comm_bytes", r.commBytes},
                 {"exposed_comm", r.exposedComm},
                 {"comm_wall_time", r.commWallTime},
                 {"overlap_fraction", r.overlapFraction},
                 {"peak_memory_bytes", r.peakMemoryBytes},
                 {"gpu_memory_bytes", r.gpuMemoryBytes},
                 {"fits", r.fits()},
                 {"memory",
                  {{"parameters", r.memory.parameters},
                   {"optimizer_state", r.memory.optimizerState},
                   {"batch", r.memory.batch},
                   {"communication", r.memory.communication},
                   {"other", r.memory.other}}},
                 {"bound", r.bound},
                 {"compute_bound", r.computeBound},
                 {"comm_bound", r.commBound},
                 {"tail_bound", r.tailBound},
                 {"efficiency", r.efficiency},
                 {"bubble_fraction", r.bubbleFraction},
                 {"stages", std::move(stages)}};
  os << report.dump() << "\n";
}
