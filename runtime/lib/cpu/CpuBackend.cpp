//===- CpuBackend.cpp - kernels on host threads, collectives over MPI -----===//
//
// The arena is one host allocation. Kernels run on the calling stream's
// thread. Collectives are MPI non-blocking calls on one communicator per
// (device group, stream), so that each communicator sees its collectives in
// the one program order every rank shares; MPI_THREAD_MULTIPLE lets the
// stream threads call MPI at once. A wait polls its requests against the
// watchdog's deadline (Watchdog.h).
//
//===----------------------------------------------------------------------===//

#include "braid-runtime/CpuBackend.h"
#include "CpuKernels.h"

#include <cblas.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <thread>

using namespace braid;
using namespace braid::rt;

namespace {

/// The MPI type of a dtype the cpu backend moves (checkComputeTypes has
/// ruled out the others).
MPI_Datatype mpiType(DType dtype) {
  switch (dtype) {
  case DType::I32:
    return MPI_INT32_T;
  case DType::I64:
    return MPI_INT64_T;
  case DType::I1:
    return MPI_UINT8_T;
  case DType::F64:
    return MPI_DOUBLE;
  case DType::F32:
  case DType::F16:
  case DType::BF16:
    return MPI_FLOAT;
  }
  return MPI_FLOAT;
}

/// The MPI operation of a reduction (avg sums, then divides on completion).
MPI_Op mpiOp(ops::ReductionKind reduction) {
  switch (reduction) {
  case ops::ReductionKind::Max:
    return MPI_MAX;
  case ops::ReductionKind::Min:
    return MPI_MIN;
  case ops::ReductionKind::Sum:
  case ops::ReductionKind::Avg:
    return MPI_SUM;
  }
  return MPI_SUM;
}

/// The reduction of an all-reduce or a reduce-scatter, if `instr` is one.
std::optional<ops::ReductionKind> reductionOf(const Instr &instr) {
  switch (instr.collective()) {
  case CollectiveKind::AllReduce:
    return instr.as<ops::AllReduceAttrs>().reduction;
  case CollectiveKind::ReduceScatter:
    return instr.as<ops::ReduceScatterAttrs>().reduction;
  case CollectiveKind::AllGather:
  case CollectiveKind::AllToAll:
  case CollectiveKind::Broadcast:
  case CollectiveKind::Send:
  case CollectiveKind::Recv:
  case CollectiveKind::Permute:
  case CollectiveKind::None:
    return std::nullopt;
  }
  return std::nullopt;
}

} // namespace

CpuBackend::CpuBackend(MPI_Comm world, double timeoutSeconds, bool checkMemory)
    : world(world), checkMemory(checkMemory), watchdog(world, timeoutSeconds) {
  MPI_Comm_rank(world, &rank);
  // One BLAS thread per stream thread: ranks and streams share the cores.
  openblas_set_num_threads(1);
}

CpuBackend::~CpuBackend() {
  for (auto &[key, comm] : comms)
    MPI_Comm_free(&comm);
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
  checkComputeTypes(p, "cpu");
  plan = &p;
  if (checkMemory)
    checker = std::make_unique<MemoryChecker>(p);
  uint64_t bytes = (p.arenaBytes + 63) / 64 * 64;
  arena = static_cast<uint8_t *>(std::aligned_alloc(64, bytes ? bytes : 64));
  if (!arena)
    throw std::runtime_error("cannot allocate the arena of " +
                             std::to_string(bytes) + " bytes");
  std::memset(arena, 0, bytes);
  inFlight.resize(p.numFutures);
  syncPending.resize(p.streams.size());
}

void CpuBackend::connect() {
  const Plan &p = *plan;
  // Communicators, created in plan order on every rank (a collective call).
  for (unsigned s = 0; s < p.streams.size(); ++s)
    for (const Instr &instr : p.streams[s].instrs) {
      if (instr.kind != InstrKind::Collective &&
          instr.kind != InstrKind::CollectiveStart)
        continue;
      auto key = std::make_pair(instr.group, s);
      if (comms.count(key))
        continue;
      int64_t color, index;
      p.groups[instr.group].locate(rank, color, index);
      MPI_Comm comm;
      MPI_Comm_split(world, int(color), int(index), &comm);
      comms[key] = comm;
      // The world ranks of the group, by index, for the watchdog.
      if (!groupMembers.count(instr.group)) {
        int size;
        MPI_Comm_size(comm, &size);
        std::vector<int> members(size);
        MPI_Allgather(&rank, 1, MPI_INT, members.data(), 1, MPI_INT, comm);
        groupMembers[instr.group] = members;
      }
    }
}

void CpuBackend::kernel(unsigned, const Instr &instr) {
  use(instr.operands, instr);
  runCpuKernel(*plan, instr, arena);
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
  const Plan &p = *plan;
  MPI_Comm comm = comms.at({instr.group, stream});
  use(instr.operands, instr);
  pending.requests.clear();
  pending.sequence = watchdog.arrive(instr.group, groupMembers[instr.group]);
  auto buffer = [&](uint32_t id) -> const Buffer & { return p.buffers[id]; };
  auto at = [&](const Buffer &b) { return arena + b.offset; };
  auto count = [](const Buffer &b) { return int(b.numElements()); };
  auto push = [&]() -> MPI_Request * {
    pending.requests.emplace_back();
    return &pending.requests.back();
  };
  int size = int(p.groups[instr.group].size());
  switch (instr.collective()) {
  case CollectiveKind::AllReduce: {
    // In place over the results; inputs elsewhere are copied in first.
    for (size_t i = 0; i < instr.operands.size(); ++i)
      if (instr.operands[i] != instr.results[i] &&
          buffer(instr.operands[i]).offset != buffer(instr.results[i]).offset)
        std::memcpy(at(buffer(instr.results[i])), at(buffer(instr.operands[i])),
                    buffer(instr.results[i]).bytes);
    MPI_Op mop = mpiOp(instr.as<ops::AllReduceAttrs>().reduction);
    // One call per run of adjacent results of one type: a bucket is one.
    size_t i = 0;
    while (i < instr.results.size()) {
      const Buffer &first = buffer(instr.results[i]);
      uint64_t end = first.offset + first.bytes;
      int64_t elements = first.numElements();
      size_t j = i + 1;
      while (j < instr.results.size() &&
             buffer(instr.results[j]).offset == end &&
             buffer(instr.results[j]).dtype == first.dtype &&
             elements + buffer(instr.results[j]).numElements() < (1ll << 31)) {
        end += buffer(instr.results[j]).bytes;
        elements += buffer(instr.results[j]).numElements();
        ++j;
      }
      if (elements > 0)
        MPI_Iallreduce(MPI_IN_PLACE, at(first), int(elements),
                       mpiType(first.dtype), mop, comm, push());
      i = j;
    }
    return;
  }
  case CollectiveKind::ReduceScatter: {
    const Buffer &x = buffer(instr.operands[0]), &y = buffer(instr.results[0]);
    MPI_Ireduce_scatter_block(
        at(x), at(y), count(y), mpiType(y.dtype),
        mpiOp(instr.as<ops::ReduceScatterAttrs>().reduction), comm, push());
    return;
  }
  case CollectiveKind::AllGather: {
    const Buffer &x = buffer(instr.operands[0]), &y = buffer(instr.results[0]);
    MPI_Iallgather(at(x), count(x), mpiType(x.dtype), at(y), count(x),
                   mpiType(y.dtype), comm, push());
    return;
  }
  case CollectiveKind::AllToAll: {
    const Buffer &x = buffer(instr.operands[0]), &y = buffer(instr.results[0]);
    MPI_Ialltoall(at(x), count(x) / size, mpiType(x.dtype), at(y),
                  count(y) / size, mpiType(y.dtype), comm, push());
    return;
  }
  case CollectiveKind::Broadcast: {
    const Buffer &x = buffer(instr.operands[0]), &y = buffer(instr.results[0]);
    std::memcpy(at(y), at(x), y.bytes);
    MPI_Ibcast(at(y), count(y), mpiType(y.dtype),
               int(instr.as<ops::CollectiveBroadcastAttrs>().root), comm,
               push());
    return;
  }
  case CollectiveKind::Send: {
    const Buffer &x = buffer(instr.operands[0]);
    MPI_Isend(at(x), count(x), mpiType(x.dtype),
              int(instr.as<ops::SendAttrs>().peer), 0, comm, push());
    return;
  }
  case CollectiveKind::Recv: {
    const Buffer &y = buffer(instr.results[0]);
    MPI_Irecv(at(y), count(y), mpiType(y.dtype),
              int(instr.as<ops::RecvAttrs>().peer), 0, comm, push());
    return;
  }
  case CollectiveKind::Permute: {
    // Send to the rank `offset` ahead, receive from the one behind.
    const Buffer &x = buffer(instr.operands[0]), &y = buffer(instr.results[0]);
    int index;
    MPI_Comm_rank(comm, &index);
    int64_t offset = instr.as<ops::CollectivePermuteAttrs>().offset % size;
    int to = int((index + offset + size) % size);
    int from = int((index - offset + size) % size);
    MPI_Irecv(at(y), count(y), mpiType(y.dtype), from, 1, comm, push());
    MPI_Isend(at(x), count(x), mpiType(x.dtype), to, 1, comm, push());
    return;
  }
  case CollectiveKind::None:
    break;
  }
  throw CommError(instr.describe() + ": is not a collective");
}

void CpuBackend::complete(const Instr &instr, Pending &pending) {
  watchdog.wait(instr, pending.requests, pending.sequence,
                groupMembers[instr.group]);
  // The inputs were read until now: nothing may have overwritten them.
  use(instr.operands, instr, " (in flight)");
  define(instr.results);
  if (reductionOf(instr) == ops::ReductionKind::Avg) {
    double size = double(plan->groups[instr.group].size());
    for (uint32_t id : instr.results) {
      const Buffer &b = plan->buffers[id];
      int64_t n = b.numElements();
      if (b.dtype == DType::F32) {
        float *x = reinterpret_cast<float *>(arena + b.offset);
        for (int64_t i = 0; i < n; ++i)
          x[i] = float(x[i] / size);
      } else if (b.dtype == DType::I32) {
        int32_t *x = reinterpret_cast<int32_t *>(arena + b.offset);
        for (int64_t i = 0; i < n; ++i)
          x[i] = int32_t(x[i] / int64_t(size));
      } else {
        int64_t *x = reinterpret_cast<int64_t *>(arena + b.offset);
        for (int64_t i = 0; i < n; ++i)
          x[i] = x[i] / int64_t(size);
      }
    }
  }
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
