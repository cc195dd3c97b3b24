//===- SimPlayer.h - a recorded step played on every rank -------*- C++ -*-===//
//
// The fluid model of docs/CostModel.md: streams run their items in order; a
// collective starts when its whole group has arrived and occupies its
// stream; while collectives are in flight, compute runs slower and they run
// slower under compute, and concurrent collectives share the links.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_LIB_SIM_SIMPLAYER_H
#define BRAID_RUNTIME_LIB_SIM_SIMPLAYER_H

#include "SimItems.h"

#include "braid-common/CostModel.h"

#include <vector>

namespace braid::rt::sim {

/// What one playing gives: the step's end and rank 0's figures.
struct PlayResult {
  double now = 0, exposed = 0, commWall = 0;
  /// Rank 0's start of each item, flattened: item i of stream s is at
  /// offsets[s] + i.
  std::vector<double> startOf0;
  std::vector<size_t> offsets;
  /// Spans of the first traceRanks ranks (when asked for).
  std::vector<TraceEvent> trace;
};

/// Plays `items` (per stream) on `ranks` ranks of `cluster`. `zeroComm`:
/// collectives take no time; `contention`: the slowdowns apply;
/// `traceRanks` > 0 records that many ranks' spans.
PlayResult play(const Plan &plan, const cost::Cluster &cluster,
                const std::vector<std::vector<Item>> &items, int64_t ranks,
                bool zeroComm, bool contention, int64_t traceRanks);

/// The uncontended seconds of collective `item` for the group of color
/// `color` (the group's world ranks placed on the cluster).
double commSeconds(const Plan &plan, const cost::Cluster &cluster,
                   const Item &item, int64_t color);

/// The algorithm and protocol that collective times (its name).
const char *commAlgorithm(const Plan &plan, const cost::Cluster &cluster,
                          const Item &item, int64_t color);

/// Rank `rank`'s color in group `group`.
int64_t colorOf(const Plan &plan, int group, int64_t rank);

} // namespace braid::rt::sim

#endif // BRAID_RUNTIME_LIB_SIM_SIMPLAYER_H
