//===- braid-run.cpp - execute a plan: train for K steps ------------------===//
//
//   mpirun -np N braid-run [--backend=cpu|cuda] step.plan --steps K
//       [--params p.npz] [--data d.npz] [--save out.npz] [--seed S]
//       [--timeout SECONDS]
//   braid-run --dump step.plan
//
// Every rank loads the plan, binds parameters, optimizer state and its batch,
// runs the steps and prints (rank 0) the loss averaged over ranks. Errors
// before the first step are agreed on by all ranks, which then exit non-zero
// together; an error during a step (a collective past --timeout, bad data)
// stops every rank through MPI_Abort.
//
//===----------------------------------------------------------------------===//

#include "RunDeadline.h"
#include "RunInputs.h"
#include "RunOptions.h"
#include "RunSave.h"

#include "braid-runtime/BackendRegistry.h"
#include "braid-runtime/Communicator.h"
#include "braid-runtime/CpuBackend.h"
#include "braid-runtime/Executor.h"
#include "braid-runtime/HalfFloat.h"
#include "braid-runtime/Npz.h"
#include "braid-runtime/Plan.h"
#include "braid-runtime/SimBackend.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <limits>
#include <random>
#include <sched.h>
#include <set>
#include <thread>

#include <unistd.h>

using namespace braid;
using namespace braid::rt;

namespace {

/// True on every rank if `ok` on every rank.
bool agree(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

int fail(int rank, const std::string &message) {
  std::fprintf(stderr, "braid-run: error: rank %d: %s\n", rank,
               message.c_str());
  std::fflush(stderr);
  return 1;
}

/// What the arena of the plan file at `path` (loaded already) holds.
braid::plan::MemoryUse simMemoryUse(const std::string &path) {
  std::vector<uint8_t> bytes = readPlanFile(path);
  braid::plan::MemoryUse use;
  std::string error;
  if (!braid::plan::planMemoryUse(bytes.data(), bytes.size(), use, error))
    throw std::runtime_error("'" + path + "': " + error);
  return use;
}

/// --backend=sim: one process plays every rank on the cluster; no MPI.
int simulate(const Options &o) {
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
    std::vector<const Plan *> programs;
    for (const Plan &stage : plan.stages)
      programs.push_back(&stage);
    if (programs.empty())
      programs.push_back(&plan);
    for (const Plan *program : programs) {
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

} // namespace

namespace {

/// One step of copying the carried state back: a copy from a result to its
/// argument, or a result set aside in host memory first (`stage`) and
/// written from there (`fromHost`).
struct CarryAction {
  uint32_t arg = 0, res = 0;
  bool stage = false, fromHost = false;
  size_t slot = 0;
};

/// The carried results are copied to their arguments as one parallel
/// assignment: a step may return its state in another order than it takes
/// it, and an update made in place shares its result's bytes with an
/// argument another copy writes. Each copy runs once no copy still to come
/// reads the bytes it writes; a cycle of such copies goes through host
/// memory. Computed once: the plan does not change between steps.
std::vector<CarryAction>
orderCarry(const Plan &plan,
           const std::vector<std::pair<uint32_t, uint32_t>> &carry) {
  auto overlap = [&](uint32_t a, uint32_t b) {
    const Buffer &x = plan.buffers[a], &y = plan.buffers[b];
    return x.offset < y.offset + y.bytes && y.offset < x.offset + x.bytes;
  };
  std::vector<CarryAction> out;
  std::vector<std::pair<uint32_t, uint32_t>> pending;
  // A copy in place (the update wrote its argument's bytes) is a no-op
  // that still orders: nothing may write those bytes before it.
  for (auto [arg, res] : carry)
    pending.push_back({arg, res});
  std::vector<bool> staged(pending.size(), false);
  std::vector<size_t> slotOf(pending.size(), 0);
  size_t slots = 0;
  std::vector<bool> done(pending.size(), false);
  for (size_t left = pending.size(); left > 0;) {
    bool progressed = false;
    for (size_t i = 0; i < pending.size(); ++i) {
      if (done[i])
        continue;
      bool blocked = false;
      for (size_t j = 0; j < pending.size() && !blocked; ++j)
        blocked = j != i && !done[j] && !staged[j] &&
                  overlap(pending[i].first, pending[j].second);
      if (blocked)
        continue;
      CarryAction a{pending[i].first, pending[i].second};
      a.fromHost = staged[i];
      a.slot = slotOf[i];
      out.push_back(a);
      done[i] = true;
      --left;
      progressed = true;
    }
    if (progressed)
      continue;
    // A cycle: set one source aside.
    for (size_t i = 0; i < pending.size(); ++i)
      if (!done[i] && !staged[i]) {
        staged[i] = true;
        slotOf[i] = slots++;
        CarryAction a{pending[i].first, pending[i].second};
        a.stage = true;
        a.slot = slotOf[i];
        out.push_back(a);
        break;
      }
  }
  return out;
}

void runCarry(Backend &backend, const Plan &plan,
              const std::vector<CarryAction> &steps) {
  std::vector<std::vector<uint8_t>> host;
  for (const CarryAction &a : steps) {
    const Buffer &arg = plan.buffers[a.arg], &res = plan.buffers[a.res];
    if (a.stage) {
      if (host.size() <= a.slot)
        host.resize(a.slot + 1);
      host[a.slot].resize(res.bytes);
      backend.read(res, host[a.slot].data());
    } else if (a.fromHost) {
      backend.write(arg, host[a.slot].data());
    } else {
      backend.copy(arg, res);
    }
  }
}

} // namespace

int main(int argc, char **argv) {
  registerBuiltinBackends();
  Options o = parseOptions(argc, argv);
  // Before anything else (no thread, no MPI yet): OpenBLAS read its
  // environment when it loaded. Where it fell back to generic kernels on a
  // CPU it does not know (CpuBackend.h), run again with the right core. If
  // the exec fails, go on as it is.
  if (const char *core = betterOpenblasCore()) {
    setenv("OPENBLAS_CORETYPE", core, 1);
    execv("/proc/self/exe", argv);
  }
  if (o.dump) {
    try {
      std::cout << dumpPlan(loadPlanFile(o.plan));
      return 0;
    } catch (const std::exception &e) {
      std::fprintf(stderr, "braid-run: error: %s\n", e.what());
      return 1;
    }
  }

  if (o.backend == "sim")
    return simulate(o);
  if (!o.cluster.empty() || !o.trace.empty() || o.traceRanks >= 0 ||
      !o.report.empty())
    usageError("--cluster, --trace, --trace-ranks and --report go with "
               "--backend=sim");

  // Startup (MPI_Init, loading, connecting) and the end (saving,
  // finalizing) are covered by --timeout too: a rank that never starts
  // would otherwise leave the others in MPI_Init or in the first agreement
  // forever, and one that stops after the last step would leave rank 0 in
  // the --save gather.
  startDeadline(o.timeout);
  int provided = 0;
  setPhase("in MPI_Init");
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, world = 1, localRank = 0, localRanks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  reportTermination(rank);
  // The rank's index on its node (a collective call, before anything can
  // fail on one rank alone); the cuda backend picks its GPU with it.
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL,
                      &node);
  MPI_Comm_rank(node, &localRank);
  MPI_Comm_size(node, &localRanks);
  MPI_Comm_free(&node);
  if (provided < MPI_THREAD_MULTIPLE) {
    armDeadline("startup", 0);
    int code = fail(rank, "the MPI library does not provide "
                          "MPI_THREAD_MULTIPLE, which the streams need");
    MPI_Finalize();
    return code;
  }

  // Load and check everything; all ranks agree before any collective.
  Plan plan;
  Inputs inputs;
  std::unique_ptr<Backend> backend;
  std::string error;
  // Setup runs in phases, each ending with all ranks agreeing that it went
  // well, so that a rank never waits in a collective call for a rank that
  // failed. Loading, constructing and preparing are local; connect() makes
  // the communicators. (The cpu backend's constructor duplicates the world
  // communicator, which every rank that starts the phase reaches.)
  auto phase = [&](const char *name, const std::function<void()> &work) {
    setPhase(std::string("in ") + name);
    try {
      work();
    } catch (const std::exception &e) {
      error = e.what();
    }
    setPhase(std::string("waiting for every rank to finish ") + name);
    if (agree(error.empty()))
      return true;
    if (error.empty())
      error = "stopping: another rank failed to start";
    return false;
  };
  bool ready =
      phase(
          "loading the plan and the inputs",
          [&] {
            Plan whole = loadPlanFile(o.plan);
            if (whole.worldSize != uint32_t(world))
              throw PlanError(o.plan + " was compiled for " +
                              std::to_string(whole.worldSize) +
                              " ranks, but runs on " + std::to_string(world) +
                              " (mpirun -np " +
                              std::to_string(whole.worldSize) + ")");
            // The files name the state and batch of every stage.
            std::set<std::string> stateNames, batchNames;
            collectInputNames(whole, stateNames, batchNames);
            plan = programOf(std::move(whole), rank);
            inputs =
                prepareInputs(plan, o, rank, world, stateNames, batchNames);
            if (!o.fault.empty() &&
                (o.faultRank < 0 || o.faultRank >= world ||
                 (!o.faultAtEnd && (o.faultStep < 1 || o.faultStep > o.steps))))
              throw std::runtime_error(
                  "--inject-fault names rank " + std::to_string(o.faultRank) +
                  " and step " + std::to_string(o.faultStep) +
                  ", but the run has ranks "
                  "0 to " +
                  std::to_string(world - 1) + " and steps 1 to " +
                  std::to_string(o.steps));
            checkWritable(o.save, rank);
          }) &&
      phase("preparing the backend",
            [&] {
              BackendOptions options;
              options.timeoutSeconds = o.timeout;
              options.localRank = localRank;
              options.localRanks = localRanks;
              options.checkMemory = o.checkMemory;
              options.profile = o.profile;
              options.threads =
                  o.threads ? int(o.threads) : defaultThreads(localRanks);
              backend = createBackend(o.backend, options);
              backend->prepare(plan);
              for (auto &[id, bytes] : inputs.state)
                backend->write(plan.buffers[id], bytes.data());
            }) &&
      phase("connecting the ranks", [&] { backend->connect(); });
  armDeadline("startup", 0);
  if (!ready) {
    int code = fail(rank, error);
    setEndTimeout(o.timeout);
    endPhase("stopping after a failed start: in MPI_Finalize");
    backend.reset();
    MPI_Finalize();
    return code;
  }

  // Results that carry state to the next step, by role and name.
  std::vector<std::pair<uint32_t, uint32_t>> carry; // (argument, result)
  int loss = -1;
  for (const Binding &r : plan.results) {
    if (r.role == Role::Loss && loss < 0)
      loss = int(r.buffer);
    if (r.role != Role::Parameter && r.role != Role::OptimizerState)
      continue;
    for (const Binding &a : plan.arguments)
      if (a.role == r.role && a.name == r.name)
        carry.push_back({a.buffer, r.buffer});
  }

  std::vector<CarryAction> carrySteps = orderCarry(plan, carry);
  // The ranks that compute a loss: all of them, or a pipeline's last
  // stage; the printed loss is their mean.
  int hasLoss = loss >= 0 ? 1 : 0, lossRanks = 0;
  MPI_Allreduce(&hasLoss, &lossRanks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

  MPI_Comm lossComm;
  MPI_Comm_dup(MPI_COMM_WORLD, &lossComm);
  {
    Executor executor(plan, *backend);
    using Clock = std::chrono::steady_clock;
    double firstMs = 0;
    std::vector<double> restMs; // steps 2..N
    for (int64_t step = 1; step <= o.steps; ++step) {
      Clock::time_point start = Clock::now();
      setCurrentStep(step);
      if (step == o.faultStep && rank == o.faultRank) {
        if (o.fault == "hang")
          for (;;)
            std::this_thread::sleep_for(std::chrono::seconds(1));
        // Killed as the step begins, before its first collective: the other
        // ranks block in this step's collectives until mpirun ends them. (A
        // kill some time into the step raced with steps that finish sooner,
        // such as fused attention's.)
        std::raise(SIGKILL);
      }
      try {
        for (auto &[id, bytes] : inputs.batch)
          backend->write(plan.buffers[id], bytes.data());
        // Scheduled hyperparameters: this step's value (checked in range
        // before the first step).
        for (auto &[id, schedule] : inputs.schedules)
          backend->write(plan.buffers[id],
                         &schedule[size_t(inputs.stepsDone + step - 1)]);
        executor.runStep();
        // A no-op where the update was made in place.
        runCarry(*backend, plan, carrySteps);
      } catch (const std::exception &e) {
        fail(rank, "step " + std::to_string(step) + ": " + e.what());
        MPI_Abort(MPI_COMM_WORLD, 1);
        return 1;
      }
      if (lossRanks > 0) {
        float local = 0, sum = 0;
        if (loss >= 0) {
          const Buffer &lossBuffer = plan.buffers[loss];
          if (isHalf(lossBuffer.dtype)) {
            uint16_t half = 0;
            backend->read(lossBuffer, &half);
            widenHalf(lossBuffer.dtype, &half, &local, 1);
          } else {
            backend->read(lossBuffer, &local);
          }
        }
        MPI_Allreduce(&local, &sum, 1, MPI_FLOAT, MPI_SUM, lossComm);
        if (rank == 0) {
          // %.9g: every float32 loss round-trips, so two runs can be
          // compared to 1e-7 relative from the printed numbers alone.
          std::printf("step %lld/%lld loss %.9g\n", (long long)step,
                      (long long)o.steps, double(sum / lossRanks));
          std::fflush(stdout);
        }
      }
      double ms =
          std::chrono::duration<double, std::milli>(Clock::now() - start)
              .count();
      if (step == 1) {
        firstMs = ms;
        // The profile covers the steps the time line's median does.
        if (KernelProfile *profile = backend->kernelProfile())
          profile->clear();
      } else {
        restMs.push_back(ms);
      }
    }
    // Rank 0's wall time per step, which includes writing the batch, the
    // loss's all-reduce and printing; the first step (warm-up: cuBLAS and
    // NCCL set themselves up) apart, then the median and the mean.
    if (rank == 0 && o.steps > 0) {
      if (!restMs.empty()) {
        double mean = 0;
        for (double ms : restMs)
          mean += ms;
        mean /= double(restMs.size());
        std::vector<double> sorted = restMs;
        std::sort(sorted.begin(), sorted.end());
        size_t n = sorted.size();
        double median =
            n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
        std::printf("time: first step %.3f ms, then median %.3f ms, mean "
                    "%.3f ms per step over steps 2-%lld (rank 0's wall "
                    "time, the loss's all-reduce and printing included)\n",
                    firstMs, median, mean, (long long)o.steps);
        if (KernelProfile *profile = backend->kernelProfile())
          std::fputs(profile->report(restMs.size(), mean / 1e3).c_str(),
                     stdout);
      } else {
        std::printf("time: first step %.3f ms\n", firstMs);
        if (backend->kernelProfile())
          std::printf("profile: needs 2 steps or more (the first, a "
                      "warm-up, is left out)\n");
      }
      std::fflush(stdout);
    }
  }
  if (o.faultAtEnd && rank == o.faultRank) {
    if (o.fault == "hang")
      for (;;)
        std::this_thread::sleep_for(std::chrono::seconds(1));
    std::raise(SIGKILL);
  }
  setEndTimeout(o.timeout);
  endPhase("freeing the loss's communicator after the last step");
  MPI_Comm_free(&lossComm);

  // --save: rank 0 writes OUT.npz; a path with {rank} is written by every
  // rank, {rank} replaced by its number. A tensor-parallel value is
  // gathered from the ranks of its group first, so files hold global values
  // (every rank takes part in the gathers, writing or not).
  if (!o.save.empty()) {
    bool writes = rank == 0 || o.save.find("{rank}") != std::string::npos;
    RankPlace place = placeRank(plan, rank);
    MPI_Comm tpComm = MPI_COMM_NULL;
    // One communicator per tensor-parallel group: the ranks of one
    // data-parallel replica and one pipeline stage.
    endPhase("saving: making the tensor-parallel groups' communicators");
    if (plan.tpAxis >= 0)
      MPI_Comm_split(MPI_COMM_WORLD,
                     int(place.dpIndex * place.ppSize + place.ppIndex),
                     int(place.tpIndex), &tpComm);
    std::string savePath = savePathOf(o.save, rank);
    try {
      std::map<std::string, NpyArray> out;
      auto save = [&](const Binding &b) {
        const Buffer &buffer = plan.buffers[b.buffer];
        NpyArray &array = out[b.name];
        array.descr = descrOf(buffer.dtype);
        array.shape = buffer.shape;
        array.data.resize(buffer.bytes);
        backend->read(buffer, array.data.data());
        if (b.splitDim < 0)
          return widenSaved(array, buffer.dtype);
        if (buffer.bytes > uint64_t(std::numeric_limits<int>::max()))
          throw std::runtime_error(
              "cannot gather '" + b.name +
              "' for --save: " + std::to_string(buffer.bytes) +
              " bytes per rank, more than MPI_Allgather "
              "counts");
        std::vector<uint8_t> pieces(buffer.bytes * uint64_t(place.tpSize));
        endPhase("saving: gathering '" + b.name +
                 "' from its tensor-parallel group");
        MPI_Allgather(array.data.data(), int(buffer.bytes), MPI_BYTE,
                      pieces.data(), int(buffer.bytes), MPI_BYTE, tpComm);
        array.shape = globalShape(plan, b);
        array.data.assign(pieces.size(), 0);
        for (int64_t r = 0; r < place.tpSize; ++r)
          copyPiece(pieces.data() + uint64_t(r) * buffer.bytes,
                    array.data.data(), array.shape, dtypeBytes(buffer.dtype),
                    b.splitDim, b.splitBlocks, place.tpSize, r,
                    /*toPiece=*/false);
        widenSaved(array, buffer.dtype);
      };
      auto isState = [](const Binding &b) {
        return b.role == Role::Parameter || b.role == Role::OptimizerState;
      };
      for (const Binding &b : plan.arguments)
        if (isState(b))
          save(b);
      // The schedules and the steps taken, so that the file resumes the
      // run at the next step of its schedule.
      if (!inputs.schedules.empty()) {
        for (const Binding &b : plan.arguments) {
          auto it = inputs.schedules.find(b.buffer);
          if (b.role != Role::Hyperparameter || it == inputs.schedules.end())
            continue;
          NpyArray &array = out[b.name];
          array.descr = "<f4";
          array.shape = {int64_t(it->second.size())};
          array.data.resize(it->second.size() * sizeof(float));
          std::memcpy(array.data.data(), it->second.data(), array.data.size());
        }
        NpyArray &done = out[kStepsDoneName];
        done.descr = "<i8";
        done.shape = {};
        int64_t count = inputs.stepsDone + o.steps;
        done.data.resize(sizeof(count));
        std::memcpy(done.data.data(), &count, sizeof(count));
      }
      // The other results of the last step (the loss, unnamed results).
      for (const Binding &b : plan.results)
        if (!isState(b) && !out.count(b.name))
          save(b);
      if (plan.ppAxis >= 0 && o.save.find("{rank}") == std::string::npos)
        gatherStages(plan, rank, world, out);
      if (writes) {
        // writeNpz writes a temporary file and renames it: a rank stopped
        // meanwhile leaves no partial file.
        endPhase("saving: writing '" + savePath + "'");
        writeNpz(savePath, out);
      }
    } catch (const std::exception &e) {
      fail(rank, e.what());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (tpComm != MPI_COMM_NULL)
      MPI_Comm_free(&tpComm);
  }
  endPhase("stopping: freeing the backend's communicators");
  backend.reset();
  endPhase("stopping: in MPI_Finalize");
  MPI_Finalize();
  return 0;
}
