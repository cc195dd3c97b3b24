//===- CudaBackend.cu - CUDA streams, cuBLAS, NCCL ------------------------===//
//
// The executor's stream threads enqueue work on one CUDA stream each; events
// are CUDA events; a collective is an NCCL call on the communicator of its
// (device group, stream), and its wait makes the waiting stream wait on an
// event recorded after the call. NCCL communicators are bootstrapped by
// broadcasting the unique id over the group's MPI communicator. The step's
// end polls the streams against the watchdog's deadline.
//
//===----------------------------------------------------------------------===//

#include "CudaKernels.h"
#include "braid-runtime/CudaBackend.h"
#include "braid-runtime/Watchdog.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <map>
#include <string>

using namespace braid;
using namespace braid::rt;

namespace {

void cudaCheck(cudaError_t error, const std::string &what) {
  if (error != cudaSuccess)
    throw KernelError("cuda: " + what + ": " + cudaGetErrorString(error));
}

void ncclCheck(ncclResult_t result, const std::string &what) {
  if (result != ncclSuccess)
    throw CommError("nccl: " + what + ": " + ncclGetErrorString(result));
}

ncclDataType_t ncclType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return ncclFloat32;
  case DType::F16:
    return ncclFloat16;
  case DType::BF16:
    return ncclBfloat16;
  case DType::F64:
    return ncclFloat64;
  case DType::I1:
    return ncclUint8;
  case DType::I32:
    return ncclInt32;
  case DType::I64:
    return ncclInt64;
  }
  return ncclFloat32;
}

ncclRedOp_t ncclOp(ops::ReductionKind reduction) {
  switch (reduction) {
  case ops::ReductionKind::Sum:
    return ncclSum;
  case ops::ReductionKind::Avg:
    return ncclAvg;
  case ops::ReductionKind::Max:
    return ncclMax;
  case ops::ReductionKind::Min:
    return ncclMin;
  }
  return ncclSum;
}

} // namespace

struct CudaBackend::State {
  MPI_Comm world;
  int rank = 0;
  int device = 0;
  double timeout;
  const Plan *plan = nullptr;
  uint8_t *arena = nullptr;
  int *errorFlag = nullptr;
  std::vector<cudaStream_t> streams;
  std::vector<cublasHandle_t> blas;
  std::vector<cudaEvent_t> events, futureEvents;
  std::map<std::pair<int, unsigned>, ncclComm_t> comms;
};

CudaBackend::CudaBackend(MPI_Comm world, double timeoutSeconds, int localRank)
    : state(std::make_unique<State>()) {
  state->world = world;
  state->timeout = timeoutSeconds;
  MPI_Comm_rank(world, &state->rank);
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess || count == 0)
    throw std::runtime_error(
        std::string("the cuda backend found no usable GPU: ") +
        (error != cudaSuccess ? cudaGetErrorString(error) : "0 devices"));
  // The rank's index among the ranks of its node picks its GPU.
  state->device = localRank % count;
  cudaCheck(cudaSetDevice(state->device), "cudaSetDevice");
}

CudaBackend::~CudaBackend() {
  if (!state)
    return;
  for (auto &[key, comm] : state->comms)
    ncclCommDestroy(comm);
  for (cublasHandle_t h : state->blas)
    cublasDestroy(h);
  for (cudaEvent_t e : state->events)
    cudaEventDestroy(e);
  for (cudaEvent_t e : state->futureEvents)
    cudaEventDestroy(e);
  for (cudaStream_t s : state->streams)
    cudaStreamDestroy(s);
  cudaFree(state->arena);
  cudaFree(state->errorFlag);
}

void CudaBackend::prepare(const Plan &plan) {
  checkComputeTypes(plan, "cuda");
  State &s = *state;
  s.plan = &plan;
  cudaCheck(cudaMalloc(&s.arena, plan.arenaBytes ? plan.arenaBytes : 256),
            "allocating the arena of " + std::to_string(plan.arenaBytes) +
                " bytes");
  cudaCheck(cudaMemset(s.arena, 0, plan.arenaBytes), "clearing the arena");
  cudaCheck(cudaMalloc(&s.errorFlag, sizeof(int)), "cudaMalloc");
  cudaCheck(cudaMemset(s.errorFlag, 0, sizeof(int)), "cudaMemset");
  for (size_t i = 0; i < plan.streams.size(); ++i) {
    cudaStream_t stream;
    cudaCheck(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
              "cudaStreamCreate");
    s.streams.push_back(stream);
    cublasHandle_t handle;
    if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS)
      throw KernelError("cuda: cublasCreate failed");
    cublasSetStream(handle, stream);
    s.blas.push_back(handle);
  }
  auto newEvent = [] {
    cudaEvent_t e;
    cudaCheck(cudaEventCreateWithFlags(&e, cudaEventDisableTiming),
              "cudaEventCreate");
    return e;
  };
  for (uint32_t e = 0; e < plan.numEvents; ++e)
    s.events.push_back(newEvent());
  for (uint32_t f = 0; f < plan.numFutures; ++f)
    s.futureEvents.push_back(newEvent());
}

void CudaBackend::connect() {
  State &s = *state;
  const Plan &plan = *s.plan;
  // NCCL communicators in plan order on every rank.
  for (unsigned st = 0; st < plan.streams.size(); ++st)
    for (const Instr &instr : plan.streams[st].instrs) {
      if (instr.kind != InstrKind::Collective &&
          instr.kind != InstrKind::CollectiveStart)
        continue;
      auto key = std::make_pair(instr.group, st);
      if (s.comms.count(key))
        continue;
      int64_t color, index;
      plan.groups[instr.group].locate(s.rank, color, index);
      MPI_Comm comm;
      MPI_Comm_split(s.world, int(color), int(index), &comm);
      int size = 0;
      MPI_Comm_size(comm, &size);
      ncclUniqueId id;
      if (index == 0)
        ncclCheck(ncclGetUniqueId(&id), "ncclGetUniqueId");
      MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm);
      MPI_Comm_free(&comm);
      ncclComm_t nccl;
      ncclCheck(ncclCommInitRank(&nccl, size, id, int(index)),
                "ncclCommInitRank");
      s.comms[key] = nccl;
    }
}

void CudaBackend::kernel(unsigned stream, const Instr &instr) {
  launchCudaKernel(*state->plan, instr, state->arena, state->streams[stream],
                   state->blas[stream], state->errorFlag);
}

void CudaBackend::startCollective(unsigned stream, const Instr &instr) {
  State &s = *state;
  const Plan &plan = *s.plan;
  ncclComm_t comm = s.comms.at({instr.group, stream});
  cudaStream_t cs = s.streams[stream];
  auto buf = [&](uint32_t id) -> const Buffer & { return plan.buffers[id]; };
  auto at = [&](const Buffer &b) { return s.arena + b.offset; };
  int size = int(plan.groups[instr.group].size());
  switch (instr.collective()) {
  case CollectiveKind::AllReduce: {
    for (size_t i = 0; i < instr.operands.size(); ++i)
      if (buf(instr.operands[i]).offset != buf(instr.results[i]).offset)
        cudaCheck(cudaMemcpyAsync(at(buf(instr.results[i])),
                                  at(buf(instr.operands[i])),
                                  buf(instr.results[i]).bytes,
                                  cudaMemcpyDeviceToDevice, cs),
                  "copying a collective's input");
    ncclRedOp_t redop = ncclOp(instr.as<ops::AllReduceAttrs>().reduction);
    ncclCheck(ncclGroupStart(), "ncclGroupStart");
    size_t i = 0;
    while (i < instr.results.size()) {
      const Buffer &first = buf(instr.results[i]);
      uint64_t end = first.offset + first.bytes;
      size_t elements = first.numElements(), j = i + 1;
      while (j < instr.results.size() && buf(instr.results[j]).offset == end &&
             buf(instr.results[j]).dtype == first.dtype) {
        end += buf(instr.results[j]).bytes;
        elements += buf(instr.results[j]).numElements();
        ++j;
      }
      if (elements)
        ncclCheck(ncclAllReduce(at(first), at(first), elements,
                                ncclType(first.dtype), redop, comm, cs),
                  "ncclAllReduce");
      i = j;
    }
    ncclCheck(ncclGroupEnd(), "ncclGroupEnd");
    break;
  }
  case CollectiveKind::ReduceScatter: {
    const Buffer &x = buf(instr.operands[0]), &y = buf(instr.results[0]);
    ncclCheck(
        ncclReduceScatter(at(x), at(y), y.numElements(), ncclType(y.dtype),
                          ncclOp(instr.as<ops::ReduceScatterAttrs>().reduction),
                          comm, cs),
        "ncclReduceScatter");
    break;
  }
  case CollectiveKind::AllGather: {
    const Buffer &x = buf(instr.operands[0]), &y = buf(instr.results[0]);
    ncclCheck(ncclAllGather(at(x), at(y), x.numElements(), ncclType(x.dtype),
                            comm, cs),
              "ncclAllGather");
    break;
  }
  case CollectiveKind::AllToAll: {
    const Buffer &x = buf(instr.operands[0]), &y = buf(instr.results[0]);
    size_t chunk = x.numElements() / size, bytes = x.bytes / size;
    ncclCheck(ncclGroupStart(), "ncclGroupStart");
    for (int peer = 0; peer < size; ++peer) {
      ncclCheck(ncclSend(at(x) + peer * bytes, chunk, ncclType(x.dtype), peer,
                         comm, cs),
                "ncclSend");
      ncclCheck(ncclRecv(at(y) + peer * bytes, chunk, ncclType(y.dtype), peer,
                         comm, cs),
                "ncclRecv");
    }
    ncclCheck(ncclGroupEnd(), "ncclGroupEnd");
    break;
  }
  case CollectiveKind::Broadcast: {
    const Buffer &x = buf(instr.operands[0]), &y = buf(instr.results[0]);
    ncclCheck(ncclBroadcast(at(x), at(y), y.numElements(), ncclType(y.dtype),
                            int(instr.as<ops::CollectiveBroadcastAttrs>().root),
                            comm, cs),
              "ncclBroadcast");
    break;
  }
  case CollectiveKind::Send: {
    const Buffer &x = buf(instr.operands[0]);
    ncclCheck(ncclSend(at(x), x.numElements(), ncclType(x.dtype),
                       int(instr.as<ops::SendAttrs>().peer), comm, cs),
              "ncclSend");
    break;
  }
  case CollectiveKind::Recv: {
    const Buffer &y = buf(instr.results[0]);
    ncclCheck(ncclRecv(at(y), y.numElements(), ncclType(y.dtype),
                       int(instr.as<ops::RecvAttrs>().peer), comm, cs),
              "ncclRecv");
    break;
  }
  case CollectiveKind::Permute: {
    // Send to the rank `offset` ahead, receive from the one behind, as one
    // NCCL group (a send and a receive in a group cannot deadlock).
    const Buffer &x = buf(instr.operands[0]), &y = buf(instr.results[0]);
    int index;
    ncclCheck(ncclCommUserRank(comm, &index), "ncclCommUserRank");
    int64_t offset = instr.as<ops::CollectivePermuteAttrs>().offset % size;
    int to = int((index + offset + size) % size);
    int from = int((index - offset + size) % size);
    ncclCheck(ncclGroupStart(), "ncclGroupStart");
    ncclCheck(ncclSend(at(x), x.numElements(), ncclType(x.dtype), to, comm, cs),
              "ncclSend");
    ncclCheck(
        ncclRecv(at(y), y.numElements(), ncclType(y.dtype), from, comm, cs),
        "ncclRecv");
    ncclCheck(ncclGroupEnd(), "ncclGroupEnd");
    break;
  }
  case CollectiveKind::None:
    throw CommError(instr.describe() + ": is not a collective");
  }
  if (instr.kind == InstrKind::CollectiveStart)
    cudaCheck(cudaEventRecord(s.futureEvents[instr.future], cs),
              "cudaEventRecord");
}

void CudaBackend::collective(unsigned stream, const Instr &instr) {
  // In stream order: the NCCL call is enqueued on the same stream.
  startCollective(stream, instr);
}

void CudaBackend::waitCollective(unsigned stream, const Instr &start) {
  cudaCheck(cudaStreamWaitEvent(state->streams[stream],
                                state->futureEvents[start.future], 0),
            "cudaStreamWaitEvent");
}

void CudaBackend::recordEvent(unsigned stream, int event) {
  cudaCheck(cudaEventRecord(state->events[event], state->streams[stream]),
            "cudaEventRecord");
}

void CudaBackend::waitEvent(unsigned stream, int event) {
  cudaCheck(
      cudaStreamWaitEvent(state->streams[stream], state->events[event], 0),
      "cudaStreamWaitEvent");
}

void CudaBackend::synchronize() {
  State &s = *state;
  // Poll rather than block, so that a hung NCCL call becomes an error.
  Watchdog watchdog(MPI_COMM_SELF, s.timeout);
  Instr end;
  end.location = "the GPU streams";
  for (cudaStream_t stream : s.streams)
    watchdog.poll(end, 0, {}, [&] {
      cudaError_t e = cudaStreamQuery(stream);
      if (e == cudaErrorNotReady)
        return false;
      cudaCheck(e, "running the step");
      return true;
    });
  int flag = 0;
  cudaCheck(cudaMemcpy(&flag, s.errorFlag, sizeof(int), cudaMemcpyDeviceToHost),
            "reading the error flag");
  if (flag)
    throw KernelError("a label or token id was out of range in this step");
}

void CudaBackend::read(const Buffer &buffer, void *dst) {
  cudaCheck(cudaMemcpy(dst, state->arena + buffer.offset, buffer.bytes,
                       cudaMemcpyDeviceToHost),
            "reading '" + buffer.name + "'");
}

void CudaBackend::write(const Buffer &buffer, const void *src) {
  cudaCheck(cudaMemcpy(state->arena + buffer.offset, src, buffer.bytes,
                       cudaMemcpyHostToDevice),
            "writing '" + buffer.name + "'");
}

void CudaBackend::copy(const Buffer &dst, const Buffer &src) {
  if (dst.offset == src.offset)
    return;
  cudaCheck(cudaMemcpy(state->arena + dst.offset, state->arena + src.offset,
                       dst.bytes, cudaMemcpyDeviceToDevice),
            "copying '" + src.name + "'");
}
