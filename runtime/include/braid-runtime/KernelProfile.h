//===- KernelProfile.h - time spent in each op's kernels --------*- C++ -*-===//
//
// `braid-run --profile`: the cpu backend times every kernel it runs and adds
// the time to its op's entry. Each stream thread has entries of its own, so
// that no lock is taken per kernel; they are summed when read, between
// steps.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_KERNELPROFILE_H
#define BRAID_RUNTIME_KERNELPROFILE_H

#include "braid-common/OpTable.h"

#include <cstdint>
#include <string>
#include <vector>

namespace braid::rt {

class KernelProfile {
public:
  struct Entry {
    ops::Opcode opcode;
    uint64_t calls = 0;
    double seconds = 0;
  };

  /// `setting`: how the backend runs its kernels, for the report's header.
  KernelProfile(size_t streams, std::string setting);
  /// From the thread of `stream` only.
  void add(unsigned stream, ops::Opcode opcode, double seconds);
  /// Every op that ran, summed over the streams, the most time first.
  std::vector<Entry> totals() const;
  void clear();

  /// The table braid-run prints: per op, calls and milliseconds per step
  /// over `steps` steps, and each one's share of `stepSeconds` (the mean
  /// step's wall time); then what the kernels leave of the step.
  std::string report(uint64_t steps, double stepSeconds) const;

private:
  /// perStream[stream][opcode].
  std::vector<std::vector<Entry>> perStream;
  std::string setting;
};

} // namespace braid::rt

#endif // BRAID_RUNTIME_KERNELPROFILE_H
