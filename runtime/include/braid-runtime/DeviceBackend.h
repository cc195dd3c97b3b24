//===- DeviceBackend.h - the executor's backend over a Device ---*- C++ -*-===//
//
// The GPU backend's logic, apart from CUDA (Device.h): one device stream per
// plan stream; every stream thread selects the rank's device before it
// enqueues anything; every launch is checked and a failed one names its
// instruction; host copies go through pinned memory on a plan stream, which
// the host then synchronizes; collectives are issued in collectiveOrder on
// every rank (Backend::ordersCollectives); the communicators are made and
// warmed up with one small all-reduce each in connect, under the deadline;
// and the end of a step polls the streams and every communicator's
// asynchronous error against the deadline, aborting all communicators and
// naming the collective, its group and what the library said when one
// fails or hangs.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_DEVICEBACKEND_H
#define BRAID_RUNTIME_DEVICEBACKEND_H

#include "braid-runtime/Device.h"
#include "braid-runtime/Executor.h"

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace braid::rt {

class DeviceBackend : public Backend {
public:
  struct Options {
    /// How long a step, or a communicator's warm-up, may take (<= 0: no
    /// limit).
    double timeoutSeconds = 300;
    /// This rank in the world, and among the ranks of its node.
    int worldRank = 0;
    int localRank = 0, localRanks = 1;
    /// --profile: each kernel's device time, between two timers recorded on
    /// its stream around it, added to its op at the end of the step.
    bool profile = false;
  };

  /// Takes device `localRank` of the node. Throws when the node has fewer
  /// devices than ranks: NCCL needs one device per rank.
  DeviceBackend(std::unique_ptr<Device> device, const Options &options);
  ~DeviceBackend() override;

  const char *name() const override { return device->name(); }
  /// The device this rank uses.
  int deviceIndex() const { return deviceId; }
  void prepare(const Plan &plan) override;
  void setProgram(const Plan &program) override;
  void connect() override;
  void startThread(unsigned stream) override;
  bool ordersCollectives() const override { return true; }
  void kernel(unsigned stream, const Instr &instr) override;
  void collective(unsigned stream, const Instr &instr) override;
  void startCollective(unsigned stream, const Instr &instr) override;
  void waitCollective(unsigned stream, const Instr &start) override;
  void recordEvent(unsigned stream, int event) override;
  void waitEvent(unsigned stream, int event) override;
  void synchronize() override;
  void read(const Buffer &buffer, void *dst) override;
  void write(const Buffer &buffer, const void *src) override;
  void copy(const Buffer &dst, const Buffer &src) override;
  KernelProfile *kernelProfile() override { return profile.get(); }

private:
  /// Issues `instr` and records the event that marks its completion.
  void issue(unsigned stream, const Instr &instr);
  /// Polls `finished` until it returns true, checking every communicator's
  /// asynchronous error; past the deadline calls `late`. Either failure
  /// aborts every communicator and throws CommError.
  void poll(const std::function<bool()> &finished,
            const std::function<std::string()> &late);
  [[noreturn]] void fail(const std::string &message);
  /// "device group G (...)" for messages.
  std::string describeGroup(int group) const;
  /// "axes 0 of grid 'world' 2, stream comm 0 (2 ranks, this rank 1 is
  /// number 1)": a communicator, for messages.
  std::string describeComm(const CommunicatorSpec &spec) const;
  /// The first collective issued this step that has not completed, or null.
  const Instr *firstPending();
  /// Pinned host memory of at least `bytes`.
  uint8_t *pinned(uint64_t bytes);

  std::unique_ptr<Device> device;
  Options options;
  int deviceId = 0;
  /// The program running (setProgram) and the plan prepared.
  const Plan *plan = nullptr, *prepared = nullptr;
  uint8_t *arena = nullptr, *scratch = nullptr, *staging = nullptr;
  uint64_t stagingBytes = 0;
  /// Event numbers: the plan's events, then one per collective instruction
  /// (recorded after it is issued; a start's future is its event).
  std::map<const Instr *, unsigned> collectiveEvents;
  /// Every communicator of the plan, those this program does not use too,
  /// and the program's (device group, stream) -> its communicator.
  std::vector<std::pair<CommunicatorSpec, std::unique_ptr<DeviceComm>>>
      communicators;
  std::map<std::pair<int, unsigned>, DeviceComm *> comms;
  /// --profile: each kernel's pair of timers (2k, 2k + 1) and stream.
  std::unique_ptr<KernelProfile> profile;
  std::map<const Instr *, unsigned> kernelTimers;
  std::vector<std::pair<const Instr *, unsigned>> timedKernels;
  std::mutex mutex;
  /// The collectives issued this step, in order.
  std::vector<const Instr *> issued;
};

} // namespace braid::rt

#endif // BRAID_RUNTIME_DEVICEBACKEND_H
