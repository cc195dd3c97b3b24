//===- Watchdog.cpp - turn a hung collective into an error ----------------===//

#include "braid-runtime/Watchdog.h"
#include "braid-runtime/Executor.h"

#include <algorithm>
#include <chrono>
#include <sstream>
#include <thread>

using namespace braid;
using namespace braid::rt;

static constexpr int kArrivalTag = 7;

Watchdog::Watchdog(MPI_Comm world, double timeoutSeconds)
    : timeoutSeconds(timeoutSeconds) {
  MPI_Comm_dup(world, &comm);
  MPI_Comm_rank(comm, &rank);
}

Watchdog::~Watchdog() {
  // Announcements nobody received (a peer that stopped) are cancelled.
  for (MPI_Request &r : sendRequests) {
    int done = 0;
    MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    if (!done) {
      MPI_Cancel(&r);
      MPI_Request_free(&r);
    }
  }
  MPI_Comm_free(&comm);
}

Watchdog::Arrival Watchdog::arrive(int id, const std::vector<int> &members) {
  return announce(id, members);
}

Watchdog::Arrival Watchdog::arrivePeer(int id, int peer) {
  // Negative keys: a pair's transfers, counted apart from the collectives
  // of the whole communicator.
  return announce(-int64_t(id) - 1, {peer});
}

Watchdog::Arrival Watchdog::announce(int64_t key,
                                     const std::vector<int> &members) {
  std::lock_guard<std::mutex> lock(mutex);
  int64_t sequence = ++sent[{key, members}];
  // Forget completed announcements.
  size_t kept = 0;
  for (MPI_Request &r : sendRequests) {
    int done = 0;
    MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    if (!done)
      sendRequests[kept++] = r;
  }
  sendRequests.resize(kept);
  if (sendRequests.empty())
    sendBuffers.clear();
  for (int member : members) {
    if (member == rank)
      continue;
    sendBuffers.push_back(key);
    sendBuffers.push_back(sequence);
    sendRequests.emplace_back();
    MPI_Isend(&sendBuffers[sendBuffers.size() - 2], 2, MPI_INT64_T, member,
              kArrivalTag, comm, &sendRequests.back());
  }
  return {key, sequence, members};
}

void Watchdog::drain() {
  std::lock_guard<std::mutex> lock(mutex);
  for (;;) {
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kArrivalTag, comm, &flag, &status);
    if (!flag)
      return;
    int64_t message[2];
    MPI_Recv(message, 2, MPI_INT64_T, status.MPI_SOURCE, kArrivalTag, comm,
             MPI_STATUS_IGNORE);
    int64_t &seen = arrived[{message[0], status.MPI_SOURCE}];
    seen = std::max(seen, message[1]);
  }
}

void Watchdog::fail(const Instr &instr, const std::vector<Arrival> &arrivals) {
  drain();
  std::ostringstream os;
  os << "collective " << instr.describe();
  for (const Arrival &a : arrivals)
    os << (&a == &arrivals[0] ? " (" : ", ") << "number " << a.sequence
       << (a.key < 0 ? " with rank " + std::to_string(a.members[0]) +
                           " on communicator #" + std::to_string(-a.key - 1)
                     : " on communicator #" + std::to_string(a.key));
  os << (arrivals.empty() ? "" : ")") << " did not complete within "
     << timeoutSeconds << " s; ";
  std::vector<int> missing;
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (const Arrival &a : arrivals)
      for (int member : a.members)
        if (member != rank && arrived[{a.key, member}] < a.sequence &&
            std::find(missing.begin(), missing.end(), member) == missing.end())
          missing.push_back(member);
  }
  if (missing.empty()) {
    os << "every rank it waits for reached it";
  } else {
    os << "ranks that did not arrive: ";
    for (size_t i = 0; i < missing.size(); ++i)
      os << (i ? ", " : "") << missing[i];
  }
  throw CommError(os.str());
}

void Watchdog::poll(const Instr &instr, const std::vector<Arrival> &arrivals,
                    const std::function<bool()> &test) {
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(timeoutSeconds));
  for (unsigned spins = 0;; ++spins) {
    if (test())
      return;
    if (spins % 64 == 0)
      drain();
    auto now = Clock::now();
    if (timeoutSeconds > 0 && now > deadline)
      fail(instr, arrivals);
    // Spin for a moment, then back off so that the cores stay with compute.
    if (now - start > std::chrono::microseconds(200))
      std::this_thread::sleep_for(std::chrono::microseconds(
          now - start > std::chrono::milliseconds(20) ? 1000 : 50));
  }
}

void Watchdog::wait(const Instr &instr, std::vector<MPI_Request> &requests,
                    const std::vector<Arrival> &arrivals) {
  poll(instr, arrivals, [&] {
    int done = 0;
    MPI_Testall(int(requests.size()), requests.data(), &done,
                MPI_STATUSES_IGNORE);
    return done != 0;
  });
}
