//===- RunStartup.cpp - braid-run from MPI_Init to the first step ---------===//
//
// RunStartup.h.
//
//===----------------------------------------------------------------------===//

#include "RunStartup.h"

#include "RunDeadline.h"
#include "RunSave.h"

#include "braid-runtime/BackendRegistry.h"
#include "braid-runtime/Communicator.h"

#include <mpi.h>

#include <cstdio>
#include <functional>
#include <set>
#include <stdexcept>

using namespace braid;
using namespace braid::rt;

/// True on every rank if `ok` on every rank.
static bool agree(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

int braid::rt::rankError(int rank, const std::string &message) {
  std::fprintf(stderr, "braid-run: error: rank %d: %s\n", rank,
               message.c_str());
  std::fflush(stderr);
  return 1;
}

int braid::rt::startRanks(int *argc, char ***argv, const Options &o,
                          Started &started) {
  // Startup (MPI_Init, loading, connecting) and the end (saving,
  // finalizing) are covered by --timeout too: a rank that never starts
  // would otherwise leave the others in MPI_Init or in the first agreement
  // forever, and one that stops after the last step would leave rank 0 in
  // the --save gather.
  startDeadline(o.timeout);
  int provided = 0;
  setPhase("in MPI_Init");
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  int &rank = started.rank, &world = started.world;
  int localRank = 0, localRanks = 1;
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
    int code = rankError(rank, "the MPI library does not provide "
                               "MPI_THREAD_MULTIPLE, which the streams need");
    MPI_Finalize();
    return code;
  }

  // Load and check everything; all ranks agree before any collective.
  Plan &plan = started.plan;
  Inputs &inputs = started.inputs;
  std::unique_ptr<Backend> &backend = started.backend;
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
      phase("loading the plan and the inputs",
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
                   (!o.faultAtEnd &&
                    (o.faultStep < 1 || o.faultStep > inputs.steps))))
                throw std::runtime_error(
                    "--inject-fault names rank " + std::to_string(o.faultRank) +
                    " and step " + std::to_string(o.faultStep) +
                    ", but the run has ranks "
                    "0 to " +
                    std::to_string(world - 1) + " and steps 1 to " +
                    std::to_string(inputs.steps));
              checkWritable(o.save, rank);
              prepareCheckpointDir(o, rank);
              checkWritable(o.metrics, rank, "--metrics");
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
    int code = rankError(rank, error);
    setEndTimeout(o.timeout);
    endPhase("stopping after a failed start: in MPI_Finalize");
    backend.reset();
    MPI_Finalize();
    return code;
  }
  return 0;
}
