//===- DeviceBackend.cpp - the executor's backend over a Device -----------===//

#include "braid-runtime/DeviceBackend.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>

using namespace braid;
using namespace braid::rt;

namespace {

/// Host transfers (write, read, copy, the arena's clearing) go on the
/// first plan stream, and the host waits for them: between steps every
/// stream is idle, so they are ordered with everything before and after.
constexpr unsigned transferStream = 0;

} // namespace

DeviceBackend::DeviceBackend(std::unique_ptr<Device> dev, const Options &opts)
    : device(std::move(dev)), options(opts) {
  int count = device->count();
  if (options.localRanks > count)
    throw std::runtime_error(
        std::string(device->name()) + ": this node runs " +
        std::to_string(options.localRanks) + " ranks but has " +
        std::to_string(count) + " GPU" + (count == 1 ? "" : "s") +
        "; NCCL needs a GPU of its own for each rank: start at most " +
        std::to_string(count) + " ranks per node");
  deviceId = options.localRank;
  device->select(deviceId);
}

DeviceBackend::~DeviceBackend() {
  comms.clear();
  communicators.clear();
  device.reset();
}

void DeviceBackend::prepare(const Plan &p) {
  checkComputeTypes(p, device->name(), /*half=*/false);
  plan = prepared = &p;
  unsigned events = p.numEvents;
  for (const Stream &s : p.streams)
    for (const Instr &i : s.instrs)
      if (i.kind == InstrKind::Collective ||
          i.kind == InstrKind::CollectiveStart)
        collectiveEvents[&i] = events++;
  device->create(std::max<unsigned>(1, p.streams.size()), events);
  if (options.profile) {
    profile = std::make_unique<KernelProfile>(
        p.streams.size(),
        std::string(device->name()) +
            " backend, each kernel's device time between events on its "
            "stream (streams overlap: kernels may add up to more than the "
            "step)");
    for (unsigned s = 0; s < p.streams.size(); ++s)
      for (const Instr &i : p.streams[s].instrs)
        if (i.kind == InstrKind::Kernel) {
          kernelTimers[&i] = unsigned(timedKernels.size());
          timedKernels.push_back({&i, s});
        }
    device->createTimers(2 * unsigned(timedKernels.size()));
  }
  arena = device->allocate(p.arenaBytes ? p.arenaBytes : 256);
  scratch = device->allocate(256);
  device->fill(arena, 0, p.arenaBytes, transferStream);
  device->synchronize(transferStream);
}

void DeviceBackend::connect() {
  const Plan &p = *plan;
  // Every communicator of the whole plan, in its order, on every rank, each
  // made and then warmed up by a one-element all-reduce: NCCL connects its
  // peers lazily, inside the first collective, where a dead peer would
  // block a stream thread before the step's deadline is checked. One this
  // program does not use is made on stream 0 (its members that use it have
  // the stream; a creation is a call on all of them).
  forEachCommunicator(p, [&](const CommunicatorSpec &spec, unsigned id,
                             const std::vector<int> &groups, unsigned stream) {
    int64_t color, index;
    spec.group.locate(options.worldRank, color, index);
    // Kept before its warm-up: a warm-up that fails aborts it with the
    // others (fail aborts every communicator made).
    communicators.push_back({spec, device->connect(int(id), color, index,
                                                   spec.group.size(), stream)});
    DeviceComm *comm = communicators.back().second.get();
    comm->allReduce(scratch, 1, DType::F32, ops::ReductionKind::Sum);
    poll([&] { return device->done(stream); },
         [&] {
           return "connecting the communicator of " + describeComm(spec) +
                  ": its first all-reduce (one element, issued to connect "
                  "the peers) did not complete; a rank of the group is "
                  "dead, hung, or did not start";
         });
    for (int group : groups)
      comms[{group, stream}] = comm;
  });
}

void DeviceBackend::startThread(unsigned) { device->select(deviceId); }

void DeviceBackend::setProgram(const Plan &program) {
  // The streams and events were made for the prepared plan.
  if (program.arenaBytes > prepared->arenaBytes ||
      program.streams.size() > std::max<size_t>(1, prepared->streams.size()) ||
      program.numEvents > prepared->numEvents)
    throw std::runtime_error(
        "program @" + program.function +
        " needs more arena, streams or events than the prepared plan");
  plan = &program;
}

void DeviceBackend::kernel(unsigned stream, const Instr &instr) {
  // --profile times the prepared plan's kernels alone.
  bool timed = profile && plan == prepared;
  unsigned timer = timed ? 2 * kernelTimers.at(&instr) : 0;
  if (timed)
    device->recordTimer(timer, stream);
  device->launch(*plan, instr, arena, stream);
  if (timed)
    device->recordTimer(timer + 1, stream);
  std::string error = device->launchError();
  if (!error.empty())
    throw KernelError(std::string(device->name()) + ": launching " +
                      instr.describe() + " failed: " + error);
}

void DeviceBackend::issue(unsigned stream, const Instr &instr) {
  {
    std::unique_ptr<CollectiveMemory> memory = device->collectiveMemory(stream);
    issueCollective(*plan, instr, arena, *comms.at({instr.group, stream}),
                    *memory);
  }
  device->record(collectiveEvents.at(&instr), stream);
  std::lock_guard<std::mutex> lock(mutex);
  issued.push_back(&instr);
}

void DeviceBackend::collective(unsigned stream, const Instr &instr) {
  // In stream order: the call is enqueued on the same stream.
  issue(stream, instr);
}

void DeviceBackend::startCollective(unsigned stream, const Instr &instr) {
  issue(stream, instr);
}

void DeviceBackend::waitCollective(unsigned stream, const Instr &start) {
  device->wait(stream, collectiveEvents.at(&start));
}

void DeviceBackend::recordEvent(unsigned stream, int event) {
  device->record(unsigned(event), stream);
}

void DeviceBackend::waitEvent(unsigned stream, int event) {
  device->wait(stream, unsigned(event));
}

std::string DeviceBackend::describeGroup(int group) const {
  const Group &g = plan->groups.at(group);
  std::ostringstream os;
  int64_t color, index;
  g.locate(options.worldRank, color, index);
  os << "device group #" << group << " (axes";
  for (int64_t a : g.axes)
    os << " " << a;
  os << " of grid '" << g.grid << "'";
  for (size_t d = 0; d < g.gridShape.size(); ++d)
    os << (d ? "x" : " ") << g.gridShape[d];
  os << "; " << g.size() << " ranks, this rank " << options.worldRank
     << " is number " << index << ")";
  return os.str();
}

std::string DeviceBackend::describeComm(const CommunicatorSpec &spec) const {
  int64_t color, index;
  spec.group.locate(options.worldRank, color, index);
  return spec.describe() + " (" + std::to_string(spec.group.size()) +
         " ranks, this rank " + std::to_string(options.worldRank) +
         " is number " + std::to_string(index) + ")";
}

const Instr *DeviceBackend::firstPending() {
  std::lock_guard<std::mutex> lock(mutex);
  for (const Instr *instr : issued)
    if (!device->reached(collectiveEvents.at(instr)))
      return instr;
  return nullptr;
}

void DeviceBackend::fail(const std::string &message) {
  // Abort all of them: a stream waiting in any NCCL call can then finish,
  // and no communicator of this rank is used again.
  for (auto &[spec, comm] : communicators)
    comm->abort();
  throw CommError(std::string(device->name()) + ": " + message +
                  "; aborted this rank's communicators");
}

void DeviceBackend::poll(const std::function<bool()> &finished,
                         const std::function<std::string()> &late) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(options.timeoutSeconds));
  for (;;) {
    for (auto &[spec, comm] : communicators) {
      std::string error = comm->asyncError();
      if (error.empty())
        continue;
      const Instr *pending = firstPending();
      fail("NCCL reported an error on the communicator of " +
           describeComm(spec) +
           (pending ? " while " + pending->describe() + " was in flight" : "") +
           ": " + error);
    }
    if (finished())
      return;
    if (options.timeoutSeconds > 0 && Clock::now() > deadline) {
      std::ostringstream os;
      os << late() << " within " << options.timeoutSeconds << " s";
      fail(os.str());
    }
    // Sleep between polls: the host has nothing else to do, and spinning
    // would take a core from the other ranks of the node.
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

void DeviceBackend::synchronize() {
  const Plan &p = *plan;
  poll(
      [&] {
        for (unsigned s = 0; s < p.streams.size(); ++s)
          if (!device->done(s))
            return false;
        return true;
      },
      [&]() -> std::string {
        if (const Instr *pending = firstPending())
          return "collective " + pending->describe() + " on " +
                 describeGroup(pending->group) +
                 " did not complete, and NCCL reported no error (a rank of "
                 "the group is dead, hung, or running another plan)";
        return "the step's kernels did not complete";
      });
  {
    std::lock_guard<std::mutex> lock(mutex);
    issued.clear();
  }
  // The stream threads are idle between steps: their entries are free.
  for (size_t k = 0; profile && k < timedKernels.size(); ++k)
    profile->add(timedKernels[k].second, timedKernels[k].first->opcode,
                 device->elapsed(unsigned(2 * k), unsigned(2 * k + 1)));
  if (device->indexError())
    throw KernelError("a label or token id was out of range in this step");
}

uint8_t *DeviceBackend::pinned(uint64_t bytes) {
  if (bytes > stagingBytes) {
    // The old buffer goes with the device; host copies are rare (inputs,
    // state, results), so growing it is too.
    stagingBytes = std::max<uint64_t>(bytes, 2 * stagingBytes);
    staging = device->allocateHost(stagingBytes);
  }
  return staging;
}

void DeviceBackend::read(const Buffer &buffer, void *dst) {
  uint8_t *host = pinned(buffer.bytes);
  device->copy(host, arena + buffer.offset, buffer.bytes, transferStream);
  device->synchronize(transferStream);
  std::memcpy(dst, host, buffer.bytes);
}

void DeviceBackend::write(const Buffer &buffer, const void *src) {
  uint8_t *host = pinned(buffer.bytes);
  std::memcpy(host, src, buffer.bytes);
  device->copy(arena + buffer.offset, host, buffer.bytes, transferStream);
  device->synchronize(transferStream);
}

void DeviceBackend::copy(const Buffer &dst, const Buffer &src) {
  if (dst.offset == src.offset)
    return;
  device->copy(arena + dst.offset, arena + src.offset, dst.bytes,
               transferStream);
  device->synchronize(transferStream);
}
