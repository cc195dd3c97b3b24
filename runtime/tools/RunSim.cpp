//===- RunSim.cpp - braid-run --backend=sim -------------------------------===//

#include "RunSim.h"

#include "braid-runtime/Executor.h"
#include "braid-runtime/Plan.h"
#include "braid-runtime/SimBackend.h"

#include <cstdio>
#include <fstream>
#include <iostream>

using namespace braid;
using namespace braid::rt;

/// What the arena of the plan file at `path` (loaded already) holds.
static braid::plan::MemoryUse simMemoryUse(const std::string &path) {
  std::vector<uint8_t> bytes = readPlanFile(path);
  braid::plan::MemoryUse use;
  std::string error;
  if (!braid::plan::planMemoryUse(bytes.data(), bytes.size(), use, error))
    throw std::runtime_error("'" + path + "': " + error);
  return use;
}

int braid::rt::simulate(const Options &o) {
  if (!o.params.empty() || !o.data.empty() || !o.save.empty() ||
      o.checkMemory || o.profile || o.threads || !o.fault.empty())
    usageError("--backend=sim simulates time only: --params, --data, "
               "--save, --check-memory, --profile, --threads and "
               "--inject-fault do not apply");
  if (o.stepsGiven)
    usageError("--backend=sim simulates one step (every step of a plan is "
               "the same); --steps does not apply");
  try {
    // The plan's cluster (braid-compile --cluster), unless told another.
    Plan plan = loadPlanFile(o.plan);
    Cluster cluster;
    std::string error;
    if (!o.cluster.empty()) {
      if (!braid::cost::loadCluster(o.cluster, cluster, error))
        throw std::runtime_error(error);
    } else if (plan.clusterJson.empty()) {
      usageError("the plan records no cluster (it was compiled without "
                 "--cluster): give --cluster=NAME or --cluster=FILE.json");
    } else if (!braid::cost::parseCluster(plan.clusterJson,
                                          "the plan's cluster '" +
                                              plan.cluster + "'",
                                          cluster, error)) {
      throw std::runtime_error(error);
    }
    SimBackend sim(cluster);
    // A pipeline's stage programs are recorded one after the other; each
    // rank plays its stage's.
    for (const Plan *program : programsOf(plan)) {
      sim.prepare(*program);
      Executor executor(*program, sim);
      executor.runStep();
    }
    std::ofstream trace;
    if (!o.trace.empty()) {
      trace.open(o.trace);
      if (!trace)
        throw std::runtime_error("cannot write trace file '" + o.trace + "'");
    }
    SimReport report =
        sim.simulate(o.trace.empty() ? nullptr : &trace, o.traceRanks);
    report.memory = simMemoryUse(o.plan);
    printSimReport(std::cout, report, cluster);
    if (!report.fits())
      std::fprintf(stderr,
                   "braid-run: warning: the plan does not fit cluster '%s': "
                   "%s\n",
                   cluster.name.c_str(),
                   braid::plan::memoryShortfall(
                       report.memory, report.gpuMemoryBytes, cluster.gpu)
                       .c_str());
    if (!o.report.empty()) {
      std::ofstream out(o.report);
      writeSimReportJson(out, report, cluster);
      out.close();
      if (!out)
        throw std::runtime_error("cannot write report file '" + o.report + "'");
    }
    if (!o.trace.empty()) {
      trace.close();
      if (!trace)
        throw std::runtime_error("writing trace file '" + o.trace + "' failed");
      std::cout << "trace: " << o.trace << "\n";
    }
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "braid-run: error: %s\n", e.what());
    return 1;
  }
}
