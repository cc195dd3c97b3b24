//===- CpuBackend.cpp - kernels on host threads, collectives over MPI -----===//
//
// The arena is one host allocation. Kernels run on the calling stream's
// thread. Collectives are MPI non-blocking calls (MpiCommunicator, issued by
// issueCollective) on one communicator per (device group, stream), so that
// each communicator sees its collectives in the one program order every rank
// shares; MPI_THREAD_MULTIPLE lets the stream threads call MPI at once. A
// wait polls its requests against the watchdog's deadline (Watchdog.h).
//
//===----------------------------------------------------------------------===//

#include "braid-runtime/CpuBackend.h"
#include "CpuKernels.h"
#include "CpuParallel.h"
#include "CpuVectorMath.h"
#include "braid-runtime/BackendRegistry.h"
#include "braid-runtime/MpiCommunicator.h"

#include <cblas.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

using namespace braid;
using namespace braid::rt;

CpuBackend::CpuBackend(MPI_Comm world, double timeoutSeconds, bool checkMemory,
                       bool profile, int threads)
    : world(world), checkMemory(checkMemory), profiling(profile),
      watchdog(world, timeoutSeconds) {
  MPI_Comm_rank(world, &rank);
  // The kernels' share of the node's cores (BackendOptions::threads).
  setCpuThreads(threads);
}

CpuBackend::~CpuBackend() {
  comms.clear();
  communicators.clear();
  std::free(arena);
}

void CpuBackend::define(const std::vector<uint32_t> &ids) {
  if (checker)
    for (uint32_t id : ids)
      checker->define(id);
}

void CpuBackend::use(const std::vector<uint32_t> &ids, const Instr &instr,
                     const char *when) {
  if (checker)
    for (uint32_t id : ids)
      checker->use(id, instr.describe() + when);
}

void CpuBackend::prepare(const Plan &p) {
  checkComputeTypes(p, "cpu", /*half=*/true);
  plan = prepared = &p;
  if (checkMemory)
    checker = (checkers[&p] = std::make_unique<MemoryChecker>(p)).get();
  if (profiling)
    profile = std::make_unique<KernelProfile>(
        p.streams.size(), std::string("cpu backend, ") + vectorMath().name +
                              " vector math, OpenBLAS " + openblasCore() +
                              " kernels, " + std::to_string(cpuThreads()) +
                              " thread" + (cpuThreads() == 1 ? "" : "s") +
                              " per kernel");
  uint64_t bytes = (p.arenaBytes + 63) / 64 * 64;
  arena = static_cast<uint8_t *>(std::aligned_alloc(64, bytes ? bytes : 64));
  if (!arena)
    throw std::runtime_error("cannot allocate the arena of " +
                             std::to_string(bytes) + " bytes");
  std::memset(arena, 0, bytes);
  inFlight.resize(p.numFutures);
  syncPending.resize(p.streams.size());
}

void CpuBackend::setProgram(const Plan &program) {
  if (program.arenaBytes > prepared->arenaBytes)
    throw std::runtime_error("program @" + program.function + " needs " +
                             std::to_string(program.arenaBytes) +
                             " bytes of arena, more than the prepared " +
                             std::to_string(prepared->arenaBytes));
  plan = &program;
  if (!checkMemory)
    return;
  std::unique_ptr<MemoryChecker> &c = checkers[&program];
  if (!c) {
    c = std::make_unique<MemoryChecker>(program);
    // An evaluation program's parameters are the step's, written already.
    if (&program != prepared)
      for (const Binding &a : program.arguments)
        if (a.role == Role::Parameter)
          c->define(a.buffer);
  }
  checker = c.get();
}

void CpuBackend::connect() {
  const Plan &p = *plan;
  // Every communicator of the whole plan, in its order, on every rank (a
  // collective call on the world).
  forEachCommunicator(p, [&](const CommunicatorSpec &spec, unsigned id,
                             const std::vector<int> &groups, unsigned stream) {
    int64_t color, index;
    spec.group.locate(rank, color, index);
    MPI_Comm split;
    MPI_Comm_split(world, int(color), int(index), &split);
    auto made = std::make_unique<Comm>();
    made->comm = std::make_unique<MpiCommunicator>(split);
    made->id = int(id);
    made->members.resize(size_t(made->comm->size()));
    MPI_Allgather(&rank, 1, MPI_INT, made->members.data(), 1, MPI_INT, split);
    for (int group : groups)
      comms[{group, stream}] = made.get();
    communicators.push_back(std::move(made));
  });
}

std::vector<Watchdog::Arrival> CpuBackend::announce(const Instr &instr,
                                                    const Comm &comm) {
  // A point-to-point transfer waits for its peers alone.
  auto peers = [&](std::initializer_list<uint32_t> indices) {
    std::vector<Watchdog::Arrival> out;
    for (uint32_t index : indices)
      out.push_back(watchdog.arrivePeer(comm.id, comm.members.at(index)));
    return out;
  };
  switch (instr.collective()) {
  case CollectiveKind::Send:
    return peers({uint32_t(instr.as<ops::SendAttrs>().peer)});
  case CollectiveKind::Recv:
    return peers({uint32_t(instr.as<ops::RecvAttrs>().peer)});
  case CollectiveKind::SendRecv: {
    const auto &a = instr.as<ops::SendRecvAttrs>();
    return peers({uint32_t(a.send_peer), uint32_t(a.recv_peer)});
  }
    BRAID_CASE_NOT_POINT_TO_POINT_KINDS
    break;
  }
  return {watchdog.arrive(comm.id, comm.members)};
}

void CpuBackend::kernel(unsigned stream, const Instr &instr) {
  use(instr.operands, instr);
  if (profile && plan == prepared) {
    using Clock = std::chrono::steady_clock;
    Clock::time_point start = Clock::now();
    runCpuKernel(*plan, instr, arena);
    profile->add(stream, instr.opcode,
                 std::chrono::duration<double>(Clock::now() - start).count());
  } else {
    runCpuKernel(*plan, instr, arena);
  }
  define(instr.results);
}

void CpuBackend::collective(unsigned stream, const Instr &instr) {
  Pending &pending = syncPending[stream];
  post(stream, instr, pending);
  complete(instr, pending);
}

void CpuBackend::startCollective(unsigned stream, const Instr &instr) {
  post(stream, instr, inFlight[instr.future]);
}

void CpuBackend::idle(unsigned) { watchdog.drain(); }

void CpuBackend::waitCollective(unsigned, const Instr &start) {
  complete(start, inFlight[start.future]);
}

void CpuBackend::post(unsigned stream, const Instr &instr, Pending &pending) {
  Comm &comm = *comms.at({instr.group, stream});
  use(instr.operands, instr);
  pending.work = MpiWork();
  pending.arrivals = announce(instr, comm);
  comm.comm->begin(pending.work);
  pending.staging = Staging();
  issueCollective(*plan, instr, arena, *comm.comm, pending.staging);
}

void CpuBackend::Staging::copy(uint8_t *dst, const uint8_t *src,
                               uint64_t bytes) {
  std::memcpy(dst, src, bytes);
}

void CpuBackend::Staging::upload(uint8_t *dst, const void *src,
                                 uint64_t bytes) {
  std::memcpy(dst, src, bytes);
}

void CpuBackend::Staging::copyRows(uint8_t *dst, uint64_t dstPitch,
                                   const uint8_t *src, uint64_t srcPitch,
                                   uint64_t width, uint64_t rows) {
  for (uint64_t r = 0; r < rows; ++r)
    std::memcpy(dst + r * dstPitch, src + r * srcPitch, width);
}

uint8_t *CpuBackend::Staging::staging(uint64_t bytes) {
  buffers.push_back(std::make_unique<uint8_t[]>(bytes));
  return buffers.back().get();
}

void CpuBackend::Staging::afterwards(std::function<void()> fn) {
  pending.push_back(std::move(fn));
}

void CpuBackend::Staging::finish() {
  for (const auto &fn : pending)
    fn();
  pending.clear();
  buffers.clear();
}

void CpuBackend::complete(const Instr &instr, Pending &pending) {
  watchdog.wait(instr, pending.work.requests, pending.arrivals);
  pending.work.finish();
  pending.staging.finish();
  // The inputs were read until now: nothing may have overwritten them.
  use(instr.operands, instr, " (in flight)");
  define(instr.results);
}

void CpuBackend::read(const Buffer &buffer, void *dst) {
  if (checker)
    checker->use(idOf(buffer), "reading the results");
  std::memcpy(dst, arena + buffer.offset, buffer.bytes);
}

void CpuBackend::write(const Buffer &buffer, const void *src) {
  std::memcpy(arena + buffer.offset, src, buffer.bytes);
  if (checker)
    checker->define(idOf(buffer));
}

void CpuBackend::copy(const Buffer &dst, const Buffer &src) {
  if (checker)
    checker->use(idOf(src), "the copy of '" + src.name + "' to '" + dst.name +
                                "' after the step");
  if (dst.offset != src.offset)
    std::memmove(arena + dst.offset, arena + src.offset, dst.bytes);
  if (checker)
    checker->define(idOf(dst));
}

void braid::rt::registerCpuBackend() {
  registerBackend("cpu", [](const BackendOptions &o) {
    return std::make_unique<CpuBackend>(o.world, o.timeoutSeconds,
                                        o.checkMemory, o.profile, o.threads);
  });
}
