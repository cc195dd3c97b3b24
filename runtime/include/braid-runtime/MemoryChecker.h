//===- MemoryChecker.h - catch a memory plan that reuses bytes too early --===//
//
// `braid-run --check-memory`: the backend tells the checker when a buffer is
// written (defined) and when it is read (used). The checker remembers which
// buffer last wrote each byte range of the arena. A read of a buffer whose
// bytes another buffer has written since is an error naming both: the memory
// plan gave two values that are live at once the same bytes, or reused the
// bytes of a collective's input while it was in flight.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_MEMORYCHECKER_H
#define BRAID_RUNTIME_MEMORYCHECKER_H

#include "braid-runtime/Plan.h"

#include <map>
#include <mutex>

namespace braid::rt {

class MemoryChecker {
public:
  explicit MemoryChecker(const Plan &plan);

  /// Buffer `id` now holds its value.
  void define(uint32_t id);
  /// `reader` reads buffer `id`; throws KernelError if its bytes were
  /// overwritten or never written.
  void use(uint32_t id, const std::string &reader);

private:
  const Plan &plan;
  /// Each buffer's value: a view (reshape) at its operand's exact bytes is
  /// its operand's value in another shape, so writing it leaves the
  /// operand readable.
  std::vector<uint32_t> valueOf;
  std::mutex mutex;
  /// start -> (end, buffer): who wrote each range last.
  std::map<uint64_t, std::pair<uint64_t, uint32_t>> owners;
};

} // namespace braid::rt

#endif // BRAID_RUNTIME_MEMORYCHECKER_H
