//===- RunOptions.h - braid-run's command line ------------------*- C++ -*-===//

#ifndef BRAID_RUNTIME_TOOLS_RUNOPTIONS_H
#define BRAID_RUNTIME_TOOLS_RUNOPTIONS_H

#include <cstdint>
#include <string>

namespace braid::rt {

/// How a token file's windows are drawn (--sampling; RunData.h).
enum class Sampling { Random, Sequential };

/// braid-run's options, as given.
struct Options {
  std::string plan, backend = "cpu", params, data, save;
  /// --backend=sim: the cluster, the trace file and how many ranks it shows.
  std::string cluster, trace, report;
  int64_t traceRanks = -1;
  int64_t steps = 1;
  bool stepsGiven = false;
  uint64_t seed = 0;
  /// A token file as --data (RunData.h): the width of a token, how the
  /// windows are drawn, and where each rank logs them.
  int tokenBytes = 2;
  Sampling sampling = Sampling::Random;
  std::string dataLog;
  /// A .npz --data with --sampling: a dataset of samples iterated in epochs
  /// (RunData.h, SampleStream), not a batch.
  bool samples = false;
  /// Evaluation (RunSteps.h): the held-out token file, every how many steps
  /// of the training (0: after the run's last step only) and on how many
  /// batches the evaluation program runs.
  std::string evalData;
  int64_t evalEvery = 0;
  int64_t evalBatches = 1;
  /// Checkpoints (RunSave.h): where they are written, every how many steps
  /// (0: at the end only), how many are kept; --resume's folder, and the
  /// checkpoint found there (empty: none, the run starts from --params).
  std::string checkpointDir;
  int64_t saveEvery = 0;
  int64_t keepCheckpoints = 2;
  std::string resume, resumedFrom;
  /// RunProgress.h: a progress line every --log-every steps (0: none), a
  /// JSON line a step to --metrics.
  int64_t logEvery = 0;
  std::string metrics;
  double timeout = 60;
  bool dump = false;
  bool checkMemory = false;
  /// --profile: the cpu backend's time per op (KernelProfile.h).
  bool profile = false;
  /// --threads: threads per rank for the cpu backend's kernels (0: the
  /// node's cores over its ranks).
  int64_t threads = 0;
  /// Testing aid: "hang:RANK:STEP" or "kill:RANK:STEP".
  std::string fault;
  int faultRank = -1;
  int64_t faultStep = -1;
  /// --inject-fault=KIND:RANK:end: after the last step, before --save.
  bool faultAtEnd = false;
};

extern const char *const kUsage;

/// Prints `message` and the usage, and exits with status 2.
[[noreturn]] void usageError(const std::string &message);

/// Parses and checks the command line; exits through usageError.
Options parseOptions(int argc, char **argv);

/// Threads per rank for the cpu kernels when --threads is not given: the
/// cores this rank may run on (mpirun binds each rank to its own by
/// default), or, when it may run on every core of the node, its share of
/// them. Never more threads than cores for the node's ranks together.
int defaultThreads(int localRanks);

/// The ranks on this node, as the launcher says before MPI starts (Open
/// MPI's and MPICH's variables; 1 without a launcher).
int launcherLocalRanks();

} // namespace braid::rt

#endif // BRAID_RUNTIME_TOOLS_RUNOPTIONS_H
