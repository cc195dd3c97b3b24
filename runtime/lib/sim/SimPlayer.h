//===- SimPlayer.h - a recorded step played on every rank -------*- C++ -*-===//
//
// The fluid model of docs/CostModel.md: streams run their items in order; a
// collective starts when its whole group has arrived (a send or a receive
// when its peer's has) and occupies its stream; while collectives are in
// flight, compute runs slower and they run slower under compute, and
// concurrent collectives share the links. Every rank plays the program it
// runs: all the same one, or a pipeline's stage programs (docs/Pipeline.md).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_LIB_SIM_SIMPLAYER_H
#define BRAID_RUNTIME_LIB_SIM_SIMPLAYER_H

#include "SimItems.h"

#include "braid-common/CostModel.h"

#include <vector>

namespace braid::rt::sim {

/// A recorded program: its plan and what each of its streams issued.
struct Program {
  const Plan *plan = nullptr;
  std::vector<std::vector<Item>> streams;
};

/// What one playing gives: the step's end and rank 0's figures.
struct PlayResult {
  double now = 0, exposed = 0, commWall = 0;
  /// Rank 0's start of each item, flattened: item i of stream s is at
  /// offsets[s] + i.
  std::vector<double> startOf0;
  std::vector<size_t> offsets;
  /// Per rank: the time a kernel of it ran.
  std::vector<double> busy;
  /// Spans of the first traceRanks ranks (when asked for).
  std::vector<TraceEvent> trace;
};

/// Plays `programs` on `ranks` ranks of `cluster`, rank r running program
/// programOf[r]. `zeroComm`: collectives take no time; `contention`: the
/// slowdowns apply; `traceRanks` > 0 records that many ranks' spans. A
/// collective whose members lie beyond `ranks` waits for those that exist.
PlayResult play(const std::vector<Program> &programs,
                const std::vector<uint32_t> &programOf,
                const cost::Cluster &cluster, int64_t ranks, bool zeroComm,
                bool contention, int64_t traceRanks);

/// The uncontended seconds of collective `item` on world rank `rank`: its
/// group's world ranks placed on the cluster (a transfer's: the pair; a
/// send-receive's: the rank and its two peers).
double commSeconds(const Plan &plan, const cost::Cluster &cluster,
                   const Item &item, int64_t rank);

/// The algorithm and protocol that collective times (its name).
const char *commAlgorithm(const Plan &plan, const cost::Cluster &cluster,
                          const Item &item, int64_t rank);

} // namespace braid::rt::sim

#endif // BRAID_RUNTIME_LIB_SIM_SIMPLAYER_H
