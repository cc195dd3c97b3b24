//===- Watchdog.h - turn a hung collective into an error --------*- C++ -*-===//
//
// Every rank tells the other members of a group, with a small message, that
// it has reached its n-th collective on that group. A wait polls its MPI
// requests until a deadline; past it, the error names the collective and the
// members whose arrival message for it never came: the ranks that did not
// arrive (dead, hung, or running another plan).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_WATCHDOG_H
#define BRAID_RUNTIME_WATCHDOG_H

#include "braid-runtime/Plan.h"

#include <mpi.h>

#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

namespace braid::rt {

class Watchdog {
public:
  /// `timeoutSeconds` <= 0 waits forever.
  Watchdog(MPI_Comm world, double timeoutSeconds);
  ~Watchdog();

  /// Announces this rank's next collective on `group` to its `members`
  /// (world ranks); returns its sequence number on the group.
  int64_t arrive(int group, const std::vector<int> &members);

  /// Waits for `requests`; throws CommError past the deadline.
  void wait(const Instr &instr, std::vector<MPI_Request> &requests,
            int64_t sequence, const std::vector<int> &members);

  /// Polls `test` until it returns true; throws CommError past the deadline
  /// (for backends whose waits are not MPI requests).
  void poll(const Instr &instr, int64_t sequence,
            const std::vector<int> &members, const std::function<bool()> &test);

  double timeout() const { return timeoutSeconds; }

  /// Receives the arrival messages that came in. Being an MPI call, it also
  /// progresses the rank's non-blocking collectives.
  void drain();

private:
  [[noreturn]] void fail(const Instr &instr, int64_t sequence,
                         const std::vector<int> &members);

  MPI_Comm comm;
  int rank = 0;
  double timeoutSeconds;
  std::mutex mutex;
  std::map<int, int64_t> sent;
  /// arrived[{group, world rank}] = highest sequence number announced.
  std::map<std::pair<int, int>, int64_t> arrived;
  std::deque<int64_t> sendBuffers;
  std::vector<MPI_Request> sendRequests;
};

} // namespace braid::rt

#endif // BRAID_RUNTIME_WATCHDOG_H
