//===- PlanMemory.h - a plan's arena by use, and its fit --------*- C++ -*-===//
//
// A rank's device memory is the plan's arena (braid-plan-memory packs every
// buffer into it). This splits the arena into what occupies it, the
// parameters, the optimizer state, the batch, the buffers collectives read
// and write (gradient buckets), and the rest (activations kept for the
// backward, gradients and other temporaries, packed over time), and says
// whether it fits a GPU's memory. It reads the plan file itself (the
// schema and the op table, no runtime), so that braid-compile warns and the
// simulator reports from the same figures. No exception crosses its API.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_COMMON_PLANMEMORY_H
#define BRAID_COMMON_PLANMEMORY_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace braid::plan {

/// The arena's bytes by what occupies them. Each byte is counted once, in
/// the first class that claims it (in the order of the fields); `other` is
/// the rest of the arena.
struct MemoryUse {
  uint64_t total = 0;
  uint64_t parameters = 0, optimizerState = 0, batch = 0, communication = 0,
           other = 0;

  /// The classes, largest first, as (name, bytes), without empty ones.
  std::vector<std::pair<const char *, uint64_t>> consumers() const;
};

/// The arena of the plan file `bytes` (header and payload, as
/// braid-compile writes it) by use: false, with `error` saying why, when
/// they are not a plan of this format. Of a pipelined plan, the largest
/// stage program's (what a rank must hold).
bool planMemoryUse(const uint8_t *bytes, size_t size, MemoryUse &use,
                   std::string &error);

/// Whether `use` fits a GPU of `capacityBytes` (0: unknown, fits): empty if
/// it does, else a sentence with the figures, such as "the plan needs 792.1
/// GiB a rank, 712.5 GiB more than the 79.6 GiB of one NVIDIA H100 (...);
/// largest: optimizer state 528.0 GiB, parameters 132.0 GiB, ...".
std::string memoryShortfall(const MemoryUse &use, uint64_t capacityBytes,
                            const std::string &gpu);

/// "parameters 1.2 GiB, optimizer state 2.5 GiB, ...", largest first.
std::string describeConsumers(const MemoryUse &use);

} // namespace braid::plan

#endif // BRAID_COMMON_PLANMEMORY_H
