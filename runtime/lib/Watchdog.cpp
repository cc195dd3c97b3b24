//===- Watchdog.cpp - turn a hung collective into an error ----------------===//

#include "braid-runtime/Watchdog.h"
#include "braid-runtime/Executor.h"

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

int64_t Watchdog::arrive(int group, const std::vector<int> &members) {
  std::lock_guard<std::mutex> lock(mutex);
  int64_t sequence = ++sent[group];
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
    sendBuffers.push_back(group);
    sendBuffers.push_back(sequence);
    sendRequests.emplace_back();
    MPI_Isend(&sendBuffers[sendBuffers.size() - 2], 2, MPI_INT64_T, member,
              kArrivalTag, comm, &sendRequests.back());
  }
  return sequence;
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
    int64_t &seen = arrived[{int(message[0]), status.MPI_SOURCE}];
    seen = std::max(seen, message[1]);
  }
}

void Watchdog::fail(const Instr &instr, int64_t sequence,
                    const std::vector<int> &members) {
  drain();
  std::ostringstream os;
  os << "collective " << instr.describe() << " (number " << sequence
     << " on group #" << instr.group << ") did not complete within "
     << timeoutSeconds << " s; ";
  std::vector<int> missing;
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (int member : members)
      if (member != rank && arrived[{instr.group, member}] < sequence)
        missing.push_back(member);
  }
  if (missing.empty()) {
    os << "every rank of the group reached it";
  } else {
    os << "ranks that did not arrive: ";
    for (size_t i = 0; i < missing.size(); ++i)
      os << (i ? ", " : "") << missing[i];
  }
  throw CommError(os.str());
}

void Watchdog::poll(const Instr &instr, int64_t sequence,
                    const std::vector<int> &members,
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
      fail(instr, sequence, members);
    // Spin for a moment, then back off so that the cores stay with compute.
    if (now - start > std::chrono::microseconds(200))
      std::this_thread::sleep_for(std::chrono::microseconds(
          now - start > std::chrono::milliseconds(20) ? 1000 : 50));
  }
}

void Watchdog::wait(const Instr &instr, std::vector<MPI_Request> &requests,
                    int64_t sequence, const std::vector<int> &members) {
  poll(instr, sequence, members, [&] {
    int done = 0;
    MPI_Testall(int(requests.size()), requests.data(), &done,
                MPI_STATUSES_IGNORE);
    return done != 0;
  });
}
