//===- StreamOrder.h - happens-before across streams ------------*- C++ -*-===//
//
// The one vector-clock sweep of braid: ops are issued in program order, each
// on a stream; a braid.wait orders its stream after its collective's start,
// a braid.wait_event after its record_event. StreamOrder answers, at each
// point of the sweep, whether an op is known to have completed before the
// next op of a stream. braid-assign-streams asks it where synchronization is
// missing (and adds the events), braid-verify-schedule where it is missing in
// a given schedule.
//
// It keys ops by address and never looks inside them, so that it is tested
// without IR (unittests/StreamOrderTest.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_ANALYSIS_STREAMORDER_H
#define BRAID_DIALECT_BRAID_ANALYSIS_STREAMORDER_H

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace braid {

class StreamOrder {
public:
  /// Issues `op` on stream `stream`: it follows everything its stream knows.
  void issue(const void *op, unsigned stream);

  /// Stream `stream` now waits for `op` (a wait for `op`'s collective, a
  /// wait_event on the event `op` recorded): everything `op`'s stream had
  /// issued up to `op`, and everything that knew, is ordered before the
  /// stream's next op. False if `op` has not been issued.
  bool waitFor(unsigned stream, const void *op);

  /// Whether `op` (issued) is ordered before the next op of `stream`: it is
  /// on `stream`, or `stream` has waited for it or for a later op of its
  /// stream.
  bool isOrderedBefore(const void *op, unsigned stream) const;

  /// The stream and the issue position (1-based, across streams) of an
  /// issued op.
  std::optional<unsigned> getStream(const void *op) const;
  unsigned getPosition(const void *op) const;

private:
  using Clock = llvm::SmallVector<unsigned, 4>;
  struct Issued {
    unsigned stream, position;
    /// The clock of its stream right after it.
    Clock after;
  };
  Clock &clockOf(unsigned stream);
  static void merge(Clock &into, const Clock &from);

  llvm::SmallVector<Clock> clocks;
  llvm::DenseMap<const void *, Issued> issued;
  unsigned position = 0;
};

} // namespace braid

#endif // BRAID_DIALECT_BRAID_ANALYSIS_STREAMORDER_H
