//===- SimBackend.h - the simulated cluster ----------------------*- C++
//-*-===//
//
// The third backend. Driven by the executor like the others, it runs no
// kernel: it records, per stream, what the executor issues (kernels,
// collectives, event and future waits, in the executor's order and with its
// cross-stream dependencies). simulate() then plays the recorded step on
// every rank of the plan at once, in virtual time, on a cluster of the cost
// model (CostModel.h):
//   - a stream runs one item at a time, in order; a wait_event waits for
//     everything its stream recorded before the event, a wait for the end of
//     its collective (as CUDA streams and events do);
//   - a collective starts once every rank of its group has reached it, and
//     occupies its stream until it ends (as an NCCL kernel does);
//   - while a rank has a collective in flight its kernels run
//     1 + compute_slowdown_during_comm times slower, and collectives run
//     1 + comm_slowdown_during_compute times slower while it computes;
//     collectives in flight at once on a rank share its links equally.
// Rates change only when an item starts or ends, so the simulation advances
// from one such event to the next (a fluid model).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_SIMBACKEND_H
#define BRAID_RUNTIME_SIMBACKEND_H

#include "braid-common/CostModel.h"
#include "braid-runtime/Executor.h"

#include "braid-common/PlanMemory.h"

#include <array>
#include <ostream>
#include <vector>

namespace braid::rt {

using cost::Cluster;

/// What a simulated step came to (seconds; rank 0's figures where a figure
/// is per rank, and every rank's are equal in an SPMD plan).
struct SimReport {
  double stepTime = 0;
  /// Sums of the items' uncontended times.
  double computeTime = 0, commTime = 0;
  /// What rank 0's collectives move (getCommBytes), summed.
  uint64_t commBytes = 0;
  /// Time with a collective in flight and no kernel running; time with a
  /// collective in flight at all.
  double exposedComm = 0, commWallTime = 0;
  /// commWallTime - exposedComm over commWallTime (1 without collectives).
  double overlapFraction = 1;
  uint64_t peakMemoryBytes = 0;
  /// What the arena holds (filled by whoever has the plan file:
  /// plan::planMemoryUse), and one GPU's memory (the cluster's; 0 when it
  /// does not say).
  plan::MemoryUse memory;
  uint64_t gpuMemoryBytes = 0;
  /// Whether the arena fits one GPU's memory (true when unknown).
  bool fits() const {
    return gpuMemoryBytes == 0 || peakMemoryBytes <= gpuMemoryBytes;
  }
  /// The lower bound and its three parts (docs/CostModel.md).
  double bound = 0, computeBound = 0, commBound = 0, tailBound = 0;
  double efficiency = 0;
  int64_t ranks = 0, kernels = 0, collectives = 0;
  /// A pipeline (docs/Pipeline.md): per stage, the time a kernel ran on its
  /// first rank, its kernels' uncontended sum and its program's peak memory
  /// (the memory plan's arena); the bubble fraction, the share of the step
  /// a stage computes nothing, averaged over the stages. Empty and 0 for
  /// one program.
  std::vector<double> stageBusy, stageCompute;
  /// Per stage, its kernels' uncontended time by the schedule's action
  /// they belong to (braid.action): outside any action (the optimizer),
  /// forwards, backwards (B where the schedule splits them), and W.
  std::vector<std::array<double, 4>> stageActionCompute;
  std::vector<uint64_t> stageMemory;
  /// Per stage, the most bytes of activations its program holds at once
  /// (buffers a micro-batch's forward writes and its backward reads).
  std::vector<uint64_t> stageActivations;
  double bubbleFraction = 0;
};

class SimBackend : public Backend {
public:
  explicit SimBackend(Cluster cluster);
  ~SimBackend() override;
  const char *name() const override { return "sim"; }
  void prepare(const Plan &plan) override;
  void kernel(unsigned stream, const Instr &instr) override;
  void collective(unsigned stream, const Instr &instr) override;
  void startCollective(unsigned stream, const Instr &instr) override;
  void waitCollective(unsigned stream, const Instr &start) override;
  void recordEvent(unsigned stream, int event) override;
  void waitEvent(unsigned stream, int event) override;
  /// No data: writes are dropped, reads give zeros.
  void read(const Buffer &buffer, void *dst) override;
  void write(const Buffer &buffer, const void *src) override {}
  void copy(const Buffer &dst, const Buffer &src) override {}

  /// Plays the step the executor issued last on every rank (a pipeline's:
  /// the stage programs prepared and issued one after the other, each rank
  /// playing its stage's). With `trace`, writes a Chrome trace (a process
  /// per rank, a thread per stream) of the first `traceRanks` ranks.
  SimReport simulate(std::ostream *trace = nullptr, int64_t traceRanks = -1);

private:
  struct State;
  Cluster cluster;
  std::unique_ptr<State> state;
};

/// Writes the report as one JSON object, in seconds, at full precision.
void writeSimReportJson(std::ostream &os, const SimReport &report,
                        const Cluster &cluster);

/// Prints the report for people.
void printSimReport(std::ostream &os, const SimReport &report,
                    const Cluster &cluster);

} // namespace braid::rt

#endif // BRAID_RUNTIME_SIMBACKEND_H
