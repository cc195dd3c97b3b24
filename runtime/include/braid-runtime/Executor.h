//===- Executor.h - streams and events over a backend -----------*- C++ -*-===//
//
// The one interpreter of plans. It runs each stream's instruction list on a
// host thread of its own and keeps the plan's ordering: an instruction after
// a wait_event runs only once the event's record_event has been issued this
// step, a wait only once its collective has been started. What an
// instruction means on the device is the backend's business: the cpu backend
// runs kernels and MPI calls on the spot, the cuda backend enqueues them on
// CUDA streams.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_EXECUTOR_H
#define BRAID_RUNTIME_EXECUTOR_H

#include "braid-runtime/KernelProfile.h"
#include "braid-runtime/Plan.h"

#include <atomic>
#include <condition_variable>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace braid::rt {

/// A kernel that cannot run on its data (an index out of range).
struct KernelError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A collective that failed or did not complete in time.
struct CommError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// What a backend does for each kind of instruction. Called from the
/// executor's thread for `stream` (an index into Plan::streams).
class Backend {
public:
  virtual ~Backend() = default;
  virtual const char *name() const = 0;
  /// Before the first step: allocate the arena and what else is local to
  /// this rank. May fail on one rank alone, so it makes no collective call.
  virtual void prepare(const Plan &plan) = 0;
  /// Makes `program` the plan whose buffers the kernels, reads and writes
  /// name: the prepared plan's evaluation program (Plan::evaluation, which
  /// shares its arena and holds no collective) between steps, then the
  /// prepared plan again. A backend that cannot run one throws.
  virtual void setProgram(const Plan &program) {
    throw std::runtime_error(std::string("the ") + name() +
                             " backend does not run evaluation programs");
  }
  /// After every rank has prepared: make the communicators (collective
  /// calls, in plan order on every rank).
  virtual void connect() {}
  /// Called once on each stream's thread, before that thread runs anything
  /// (the cuda backend makes the rank's GPU the thread's current device:
  /// a new host thread starts on device 0).
  virtual void startThread(unsigned stream) {}
  /// Whether the executor must issue every collective in collectiveOrder's
  /// order, the same on every rank, instead of as each stream reaches it.
  /// NCCL calls on several communicators from several host threads at once
  /// are not safe, and their order must match across ranks.
  virtual bool ordersCollectives() const { return false; }
  virtual void kernel(unsigned stream, const Instr &instr) = 0;
  /// A synchronous collective.
  virtual void collective(unsigned stream, const Instr &instr) = 0;
  virtual void startCollective(unsigned stream, const Instr &instr) = 0;
  /// Completes the collective started by `start`.
  virtual void waitCollective(unsigned stream, const Instr &start) = 0;
  /// Called now and then while `stream` waits for another stream, so that
  /// a backend can make progress on its collectives (MPI progresses
  /// non-blocking collectives only inside MPI calls).
  virtual void idle(unsigned stream) {}
  virtual void recordEvent(unsigned stream, int event) {}
  virtual void waitEvent(unsigned stream, int event) {}
  /// After every stream has issued the step: wait until it is done.
  virtual void synchronize() {}
  /// Host access to a buffer of the arena.
  virtual void read(const Buffer &buffer, void *dst) = 0;
  virtual void write(const Buffer &buffer, const void *src) = 0;
  /// Copies `src` to `dst` (same size) within the arena.
  virtual void copy(const Buffer &dst, const Buffer &src) = 0;
  /// The time its kernels took, when the backend was asked to keep it
  /// (braid-run --profile); null otherwise.
  virtual KernelProfile *kernelProfile() { return nullptr; }
};

/// The plan's collectives in one order that keeps each stream's order and
/// every cross-stream dependency (a wait_event after its record_event, a
/// wait after its start): the streams' instructions taken round-robin, one
/// at a time from each stream that can go on. It depends on the plan alone,
/// so every rank derives the same order. Throws PlanError when the streams
/// wait on each other in a cycle.
std::vector<const Instr *> collectiveOrder(const Plan &plan);

class Executor {
public:
  Executor(const Plan &plan, Backend &backend);
  ~Executor();
  Executor(const Executor &) = delete;
  Executor &operator=(const Executor &) = delete;

  /// Runs one step of the plan. Rethrows the first error of any stream.
  void runStep();

private:
  void worker(unsigned stream);
  void runStream(unsigned stream, uint64_t step);
  /// Blocks stream `stream` until `flag` reaches `step` (or the step failed).
  void waitFor(unsigned stream, const std::atomic<uint64_t> &flag,
               uint64_t step);
  void signal(std::atomic<uint64_t> &flag, uint64_t step);
  /// Issues collective `instr` (its turn first, when the backend orders
  /// collectives).
  void issue(unsigned stream, const Instr &instr, uint64_t step);

  const Plan &plan;
  Backend &backend;
  std::vector<std::thread> threads;
  std::vector<std::unique_ptr<std::atomic<uint64_t>>> events, futures;
  std::vector<const Instr *> futureStarts;
  /// With Backend::ordersCollectives: each collective's place in
  /// collectiveOrder, and how many collectives have been issued in all.
  std::map<const Instr *, uint64_t> tickets;
  std::atomic<uint64_t> issued{0};

  std::mutex mutex;
  std::condition_variable wake, done;
  uint64_t step = 0;
  unsigned running = 0;
  bool stopping = false;
  std::atomic<bool> failed{false};
  std::exception_ptr error;
};

} // namespace braid::rt

#endif // BRAID_RUNTIME_EXECUTOR_H
