//===- Device.h - the layer under the device backend ------------*- C++ -*-===//
//
// What DeviceBackend needs of a GPU and its communication library, and no
// more: streams and events named by index, stream-ordered copies, kernel
// launches whose errors are asked for, and communicators that report
// asynchronous errors and can be aborted. The cuda backend implements it
// over CUDA, cuBLAS and NCCL (CudaBackend.cu); the tests implement it on the
// host (runtime/tests/FakeDevice.h), so that the backend's logic (which
// thread selects the device, how launches are checked, how copies are
// ordered, how a hung or failed collective is reported) is tested without a
// GPU.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_DEVICE_H
#define BRAID_RUNTIME_DEVICE_H

#include "braid-runtime/Communicator.h"

#include <memory>
#include <string>

namespace braid::rt {

/// A device group's communicator on one stream (NCCL's ncclComm_t).
class DeviceComm : public Communicator {
public:
  /// What the library reported asynchronously since the communicator was
  /// made (ncclCommGetAsyncError), or "" when nothing went wrong.
  virtual std::string asyncError() = 0;
  /// Abandons the communicator's outstanding operations, so that the
  /// streams waiting in them can finish (ncclCommAbort). Unusable after.
  virtual void abort() = 0;
};

class Device {
public:
  virtual ~Device() = default;
  /// The backend's name, for messages ("cuda").
  virtual const char *name() const = 0;
  /// How many devices this node has; throws when none is usable.
  virtual int count() = 0;
  /// Makes `device` the calling thread's current device. Every thread that
  /// enqueues work calls it first.
  virtual void select(int device) = 0;

  /// Device memory of `bytes` bytes and pinned host memory (for staging
  /// host copies), both freed with the device.
  virtual uint8_t *allocate(uint64_t bytes) = 0;
  virtual uint8_t *allocateHost(uint64_t bytes) = 0;
  /// Makes streams 0 to `streams` - 1 and events 0 to `events` - 1.
  virtual void create(unsigned streams, unsigned events) = 0;

  /// Enqueues kernel `instr` of `plan` on `stream`, over `arena`.
  virtual void launch(const Plan &plan, const Instr &instr, uint8_t *arena,
                      unsigned stream) = 0;
  /// The error of the calling thread's last launch, or "" when it
  /// succeeded (cudaGetLastError, which also clears it).
  virtual std::string launchError() = 0;
  /// Stream-ordered copy between any two of device and pinned host memory,
  /// and fill of device memory.
  virtual void copy(void *dst, const void *src, uint64_t bytes,
                    unsigned stream) = 0;
  virtual void fill(uint8_t *dst, uint8_t value, uint64_t bytes,
                    unsigned stream) = 0;
  virtual void record(unsigned event, unsigned stream) = 0;
  /// Makes `stream` wait for `event` (on the device; the host goes on).
  virtual void wait(unsigned stream, unsigned event) = 0;
  /// Whether all the work enqueued on `stream`, or before `event`, has
  /// completed. Throws when it failed.
  virtual bool done(unsigned stream) = 0;
  virtual bool reached(unsigned event) = 0;
  /// Blocks until `stream`'s work has completed.
  virtual void synchronize(unsigned stream) = 0;
  /// Copies and staging memory for issueCollective, in `stream`'s order.
  virtual std::unique_ptr<CollectiveMemory>
  collectiveMemory(unsigned stream) = 0;
  /// Makes communicator number `group` of the plan (forEachCommunicator),
  /// the one of its `size` ranks whose color is `color` (Group::locate),
  /// this rank being `index`; its calls are enqueued on `stream`. A
  /// collective call: every rank makes the communicators in the same order.
  virtual std::unique_ptr<DeviceComm> connect(int group, int64_t color,
                                              int64_t index, int64_t size,
                                              unsigned stream) = 0;
  /// Whether a kernel found a label or token id out of range since the last
  /// call (which clears it). Called with every stream idle.
  virtual bool indexError() = 0;

  /// --profile: makes timers 0 to `count` - 1 (CUDA events that keep
  /// time), records one on `stream`, and gives the seconds between two
  /// recorded timers once both have completed.
  virtual void createTimers(unsigned count) = 0;
  virtual void recordTimer(unsigned timer, unsigned stream) = 0;
  virtual double elapsed(unsigned from, unsigned to) = 0;
};

} // namespace braid::rt

#endif // BRAID_RUNTIME_DEVICE_H
