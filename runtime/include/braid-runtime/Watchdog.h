//===- Watchdog.h - turn a hung collective into an error --------*- C++ -*-===//
//
// Every rank tells the other members of a communicator, with a small
// message, that it has reached its n-th collective on it; a point-to-point
// transfer is announced to its peer alone, counted per pair of ranks. A
// wait polls its MPI requests until a deadline; past it, the error names the
// collective and the members (or peers) whose arrival message for it never
// came: the ranks that did not arrive (dead, hung, or running another plan).
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

  /// One announcement: this rank's `sequence`-th collective on `key` with
  /// `members` (world ranks).
  struct Arrival {
    int64_t key = 0, sequence = 0;
    std::vector<int> members;
  };

  /// Announces this rank's next collective on communicator `id` (the same
  /// number on every rank) to its `members`; its sequence number counts
  /// the collectives on `id`.
  Arrival arrive(int id, const std::vector<int> &members);
  /// Announces this rank's next point-to-point transfer with world rank
  /// `peer` on communicator `id` to that peer alone; its sequence number
  /// counts the transfers between the two on `id`, which match one to one.
  Arrival arrivePeer(int id, int peer);

  /// Waits for `requests`; throws CommError past the deadline.
  void wait(const Instr &instr, std::vector<MPI_Request> &requests,
            const std::vector<Arrival> &arrivals);

  /// Polls `test` until it returns true; throws CommError past the deadline
  /// (for backends whose waits are not MPI requests).
  void poll(const Instr &instr, const std::vector<Arrival> &arrivals,
            const std::function<bool()> &test);

  double timeout() const { return timeoutSeconds; }

  /// Receives the arrival messages that came in. Being an MPI call, it also
  /// progresses the rank's non-blocking collectives.
  void drain();

private:
  Arrival announce(int64_t key, const std::vector<int> &members);
  [[noreturn]] void fail(const Instr &instr,
                         const std::vector<Arrival> &arrivals);

  MPI_Comm comm;
  int rank = 0;
  double timeoutSeconds;
  std::mutex mutex;
  /// sent[{key, members}] = the last sequence number announced.
  std::map<std::pair<int64_t, std::vector<int>>, int64_t> sent;
  /// arrived[{key, world rank}] = highest sequence number announced.
  std::map<std::pair<int64_t, int>, int64_t> arrived;
  std::deque<int64_t> sendBuffers;
  std::vector<MPI_Request> sendRequests;
};

} // namespace braid::rt

#endif // BRAID_RUNTIME_WATCHDOG_H
