//===- FakeDevice.h - a Device on the host, for DeviceBackend tests -*- C++
//-*-===//
//
// Device memory is host memory; kernels run the cpu kernels at once (or
// nothing); events are reached when recorded. What the tests look for is
// recorded: which device each thread selected and whether a launch came
// from a thread that had selected this rank's device, whether host copies
// come from pinned memory (a copy is applied only when its stream is
// synchronized or found done, as a real copy completes only then), every
// communicator call in order, and the aborts. Faults are injected by
// number: a launch error, a communicator that reports an error, or one
// whose stream never completes.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_TESTS_FAKEDEVICE_H
#define BRAID_RUNTIME_TESTS_FAKEDEVICE_H

#include "../lib/cpu/CpuKernels.h"
#include "braid-runtime/Device.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace braid::rt {

/// A communicator call, as the tests compare them across ranks: the
/// Communicator method called (its C++ name), its count and dtype.
struct CommCall {
  int group;
  unsigned stream;
  std::string what;
  bool operator==(const CommCall &o) const {
    return group == o.group && stream == o.stream && what == o.what;
  }
};

/// Records every call into `log` (under `mutex`), moving no data: what the
/// tests check is the order of the calls, not their results.
class RecordingComm : public DeviceComm {
public:
  RecordingComm(std::vector<CommCall> &log, std::mutex &mutex, int group,
                unsigned stream, int index, int size)
      : log(log), mutex(mutex), group(group), stream(stream), index(index),
        ranks(size) {}
  /// Called before each call is logged (delays, faults).
  std::function<void(RecordingComm &)> onCall;
  bool aborted = false;
  std::string error;

  int rank() const override { return index; }
  int size() const override { return ranks; }
  void allReduce(void *, int64_t count, DType dtype,
                 ops::ReductionKind) override {
    add("allReduce", count, dtype);
  }
  void reduceScatter(const void *, void *, int64_t count, DType dtype,
                     ops::ReductionKind) override {
    add("reduceScatter", count, dtype);
  }
  void allGather(const void *, void *, int64_t count, DType dtype) override {
    add("allGather", count, dtype);
  }
  void allToAll(const void *, void *, int64_t count, DType dtype) override {
    add("allToAll", count, dtype);
  }
  void broadcast(void *, int64_t count, DType dtype, int root) override {
    add("broadcast", count, dtype);
  }
  void send(const void *, int64_t count, DType dtype, int) override {
    add("send", count, dtype);
  }
  void recv(void *, int64_t count, DType dtype, int) override {
    add("recv", count, dtype);
  }
  void sendRecv(const void *, void *, int64_t count, DType dtype, int,
                int) override {
    add("sendRecv", count, dtype);
  }
  void groupStart() override { add("groupStart", 0, DType::F32); }
  void groupEnd() override { add("groupEnd", 0, DType::F32); }
  std::string asyncError() override {
    std::lock_guard<std::mutex> lock(mutex);
    return error;
  }
  void abort() override {
    std::lock_guard<std::mutex> lock(mutex);
    aborted = true;
  }

private:
  void add(const char *what, int64_t count, DType dtype) {
    if (onCall)
      onCall(*this);
    std::lock_guard<std::mutex> lock(mutex);
    log.push_back({group, stream,
                   std::string(what) + " " + std::to_string(count) + " x " +
                       dtypeName(dtype)});
  }

  std::vector<CommCall> &log;
  std::mutex &mutex;
  int group;
  unsigned stream;
  int index, ranks;
};

/// Copies on the host, at once: for issueCollective over host memory.
class HostMemory : public CollectiveMemory {
public:
  void copy(uint8_t *dst, const uint8_t *src, uint64_t bytes) override {
    std::memmove(dst, src, bytes);
  }
  void upload(uint8_t *dst, const void *src, uint64_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void copyRows(uint8_t *dst, uint64_t dstPitch, const uint8_t *src,
                uint64_t srcPitch, uint64_t width, uint64_t rows) override {
    for (uint64_t r = 0; r < rows; ++r)
      std::memmove(dst + r * dstPitch, src + r * srcPitch, width);
  }
  uint8_t *staging(uint64_t bytes) override {
    buffers.emplace_back(bytes);
    return buffers.back().data();
  }
  void afterwards(std::function<void()> fn) override { fn(); }

private:
  std::vector<std::vector<uint8_t>> buffers;
};

class FakeDevice : public Device {
public:
  /// How many devices the node has.
  int devices = 8;
  /// This rank's device: launches from a thread that selected another one
  /// (or none) are counted in wrongThread.
  int expected = 0;
  bool runKernels = true;
  /// The n-th launch (1-based, over all threads) fails.
  int failLaunch = 0;
  /// The n-th communicator call (1-based) reports an error, or makes its
  /// stream hang without one.
  int errorAtCall = 0, hangAtCall = 0;
  /// Slept before each communicator call on stream s.
  std::map<unsigned, int> commDelayMicros;

  std::atomic<int> launches{0}, wrongThread{0}, unpinnedCopies{0},
      hostCopies{0};
  std::mutex mutex;
  std::set<std::thread::id> selectedThreads;
  std::vector<CommCall> calls;
  std::vector<std::unique_ptr<std::vector<uint8_t>>> memory;

  const char *name() const override { return "fake"; }
  int count() override { return devices; }
  void select(int device) override {
    current() = device;
    std::lock_guard<std::mutex> lock(mutex);
    selectedThreads.insert(std::this_thread::get_id());
    selects.push_back(device);
  }
  uint8_t *allocate(uint64_t bytes) override { return add(bytes, false); }
  uint8_t *allocateHost(uint64_t bytes) override { return add(bytes, true); }
  void create(unsigned streams, unsigned events) override {
    queues = std::vector<std::vector<std::function<void()>>>(streams);
    hung = std::vector<std::atomic<bool>>(streams);
    reachedEvents = std::vector<std::atomic<bool>>(events);
  }
  void launch(const Plan &plan, const Instr &instr, uint8_t *arena,
              unsigned stream) override {
    if (current() != expected)
      ++wrongThread;
    if (++launches == failLaunch) {
      lastError() = "too many resources requested for launch (injected)";
      return;
    }
    if (launchMicros)
      std::this_thread::sleep_for(std::chrono::microseconds(launchMicros));
    if (runKernels)
      runCpuKernel(plan, instr, arena);
  }
  std::string launchError() override {
    std::string e = lastError();
    lastError().clear();
    return e;
  }
  void copy(void *dst, const void *src, uint64_t bytes,
            unsigned stream) override {
    // Each end is device memory or pinned host memory.
    bool dstHost = isHost(dst), srcHost = isHost(src);
    if ((!dstHost && !isDevice(dst)) || (!srcHost && !isDevice(src)))
      ++unpinnedCopies;
    if (dstHost || srcHost)
      ++hostCopies;
    enqueue(stream, [=] { std::memmove(dst, src, bytes); });
  }
  void fill(uint8_t *dst, uint8_t value, uint64_t bytes,
            unsigned stream) override {
    enqueue(stream, [=] { std::memset(dst, value, bytes); });
  }
  void record(unsigned event, unsigned stream) override {
    reachedEvents[event] = !hung[stream];
  }
  void wait(unsigned, unsigned) override {}
  bool done(unsigned stream) override {
    if (hung[stream])
      return false;
    flush(stream);
    return true;
  }
  bool reached(unsigned event) override { return reachedEvents[event]; }
  void synchronize(unsigned stream) override { flush(stream); }
  std::unique_ptr<CollectiveMemory> collectiveMemory(unsigned) override {
    return std::make_unique<HostMemory>();
  }
  std::unique_ptr<DeviceComm> connect(int group, int64_t, int64_t index,
                                      int64_t size, unsigned stream) override {
    auto comm = std::make_unique<RecordingComm>(calls, mutex, group, stream,
                                                int(index), int(size));
    comm->onCall = [this, stream](RecordingComm &c) {
      if (current() != expected)
        ++wrongThread;
      auto delay = commDelayMicros.find(stream);
      if (delay != commDelayMicros.end())
        std::this_thread::sleep_for(std::chrono::microseconds(delay->second));
      int n = ++commCalls;
      if (n == errorAtCall) {
        std::lock_guard<std::mutex> lock(mutex);
        c.error = "unhandled system error (injected: a NIC went down)";
      }
      if (n == errorAtCall || n == hangAtCall)
        hung[stream] = true;
    };
    comms.push_back(comm.get());
    return comm;
  }
  bool indexError() override { return false; }
  void createTimers(unsigned count) override {
    timers = std::vector<std::chrono::steady_clock::time_point>(count);
  }
  void recordTimer(unsigned timer, unsigned) override {
    timers.at(timer) = std::chrono::steady_clock::now();
  }
  double elapsed(unsigned from, unsigned to) override {
    return std::chrono::duration<double>(timers.at(to) - timers.at(from))
        .count();
  }
  /// Slept in each launch (so that a kernel takes time).
  int launchMicros = 0;

  /// How many communicators were made, and how many of them aborted.
  std::pair<int, int> aborted() {
    std::lock_guard<std::mutex> lock(mutex);
    int n = 0;
    for (RecordingComm *c : comms)
      n += c->aborted;
    return {int(comms.size()), n};
  }

  /// The devices select() was called with, in order.
  std::vector<int> selected() {
    std::lock_guard<std::mutex> lock(mutex);
    return selects;
  }

private:
  static int &current() {
    thread_local int device = -1;
    return device;
  }
  static std::string &lastError() {
    thread_local std::string error;
    return error;
  }
  uint8_t *add(uint64_t bytes, bool host) {
    std::lock_guard<std::mutex> lock(mutex);
    memory.push_back(std::make_unique<std::vector<uint8_t>>(bytes + 64, 0xAB));
    (host ? hostRanges : deviceRanges)
        .push_back({memory.back()->data(), bytes + 64});
    return memory.back()->data();
  }
  bool in(const std::vector<std::pair<uint8_t *, uint64_t>> &ranges,
          const void *p) {
    std::lock_guard<std::mutex> lock(mutex);
    auto *q = static_cast<const uint8_t *>(p);
    for (auto &[base, bytes] : ranges)
      if (q >= base && q < base + bytes)
        return true;
    return false;
  }
  bool isHost(const void *p) { return in(hostRanges, p); }
  bool isDevice(const void *p) { return in(deviceRanges, p); }
  void enqueue(unsigned stream, std::function<void()> work) {
    std::lock_guard<std::mutex> lock(mutex);
    queues.at(stream).push_back(std::move(work));
  }
  void flush(unsigned stream) {
    std::vector<std::function<void()>> work;
    {
      std::lock_guard<std::mutex> lock(mutex);
      work.swap(queues.at(stream));
    }
    for (auto &w : work)
      w();
  }

  std::vector<std::pair<uint8_t *, uint64_t>> hostRanges, deviceRanges;
  std::vector<std::vector<std::function<void()>>> queues;
  std::vector<std::atomic<bool>> hung, reachedEvents;
  std::vector<int> selects;
  std::vector<RecordingComm *> comms;
  std::atomic<int> commCalls{0};
  std::vector<std::chrono::steady_clock::time_point> timers;
};

} // namespace braid::rt

#endif // BRAID_RUNTIME_TESTS_FAKEDEVICE_H
