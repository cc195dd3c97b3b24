//===- SimItems.h - a recorded step, as the simulator plays it --*- C++ -*-===//
//
// The sim backend records what each stream issues (Item: a kernel or a
// collective with its uncontended time or bytes, and what it must wait for)
// while the executor runs the step; the player (SimPlayer.h) then plays the
// recording on every rank in virtual time.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_LIB_SIM_SIMITEMS_H
#define BRAID_RUNTIME_LIB_SIM_SIMITEMS_H

#include "braid-runtime/Plan.h"

#include <cstdint>
#include <ostream>
#include <vector>

namespace braid::rt::sim {

/// A position in a stream: item `index` of stream `stream`.
struct Pos {
  unsigned stream = 0;
  int64_t index = -1;
};

/// One thing a stream does: a kernel, or a collective (sync or start).
struct Item {
  bool comm = false;
  const Instr *instr = nullptr;
  double seconds = 0; // uncontended; for a collective, set per group color
  uint64_t commBytes = 0;
  /// The position among this program's collectives of the same group (a
  /// send's or a receive's: among its transfers with the same peer in the
  /// same direction), in issue order.
  int64_t groupSeq = 0;
  /// A send-receive's first receive: its position among the receives from
  /// its peer (groupSeq is its first send's; the others follow).
  int64_t recvSeq = 0;
  /// Items (of this rank) that must have ended before this one starts.
  std::vector<Pos> deps;
};

/// A span of the trace: an item of a rank's stream, from start to end.
struct TraceEvent {
  int64_t rank;
  unsigned stream;
  const Item *item;
  double start, end;
  /// A collective's algorithm and protocol (cost::collectiveAlgorithm).
  const char *algorithm;
};

struct Program;

/// Writes the Chrome trace of `events` (a process per rank, a thread per
/// stream of its program) for the first `ranks` ranks, rank r running
/// programs[programOf[r]] (SimReport.cpp).
void writeTrace(std::ostream &os, const std::vector<Program> &programs,
                const std::vector<uint32_t> &programOf,
                const std::vector<TraceEvent> &events, int64_t ranks);

/// The most bytes of activations `plan` (a stage program) holds at once:
/// buffers a micro-batch's forward writes and its backward or W reads
/// (SimActivations.cpp).
uint64_t activationPeakBytes(const Plan &plan);

} // namespace braid::rt::sim

#endif // BRAID_RUNTIME_LIB_SIM_SIMITEMS_H
