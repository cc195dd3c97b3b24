//===- CudaBackend.cu - CUDA streams, cuBLAS, NCCL ------------------------===//
//
// The executor's stream threads enqueue work on one CUDA stream each; events
// are CUDA events; a collective is an NCCL call (NcclCommunicator, issued by
// issueCollective) on the communicator of its (device group, stream), and
// its wait makes the waiting stream wait on an event recorded after the
// call. NCCL communicators are bootstrapped by
// broadcasting the unique id over the group's MPI communicator. The step's
// end polls the streams against the watchdog's deadline.
//
//===----------------------------------------------------------------------===//

#include "CudaKernels.h"
#include "NcclCommunicator.h"
#include "braid-runtime/BackendRegistry.h"
#include "braid-runtime/CudaBackend.h"
#include "braid-runtime/Watchdog.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <map>
#include <string>
#include <vector>

using namespace braid;
using namespace braid::rt;

namespace {

void cudaCheck(cudaError_t error, const std::string &what) {
  if (error != cudaSuccess)
    throw KernelError("cuda: " + what + ": " + cudaGetErrorString(error));
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
  std::map<std::pair<int, unsigned>, std::unique_ptr<NcclCommunicator>> comms;
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
  state->comms.clear();
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
  checkComputeTypes(plan, "cuda", /*half=*/false);
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
  // NCCL communicators in plan order on every rank, bootstrapped by
  // broadcasting the unique id over the group's MPI communicator.
  forEachCommunicator(plan, [&](int group, unsigned stream) {
    int64_t color, index;
    plan.groups[group].locate(s.rank, color, index);
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
    s.comms[{group, stream}] = std::make_unique<NcclCommunicator>(
        nccl, s.streams[stream], int(index), size);
  });
}

void CudaBackend::kernel(unsigned stream, const Instr &instr) {
  launchCudaKernel(*state->plan, instr, state->arena, state->streams[stream],
                   state->blas[stream], state->errorFlag);
}

namespace {

/// Stream-ordered copies and staging memory on one CUDA stream: what is
/// enqueued after the NCCL call runs after it, so `afterwards` runs at
/// once; the staging memory is freed in stream order at the end.
class StreamStaging : public CollectiveMemory {
public:
  explicit StreamStaging(cudaStream_t stream) : stream(stream) {}
  ~StreamStaging() override {
    for (void *p : buffers)
      cudaFreeAsync(p, stream);
  }
  void copy(uint8_t *dst, const uint8_t *src, uint64_t bytes) override {
    cudaCheck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
                              stream),
              "copying a collective's input");
  }
  void upload(uint8_t *dst, const void *src, uint64_t bytes) override {
    // From pageable memory: returns once `src` has been read.
    cudaCheck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream),
              "writing a rank index");
  }
  void copyRows(uint8_t *dst, uint64_t dstPitch, const uint8_t *src,
                uint64_t srcPitch, uint64_t width, uint64_t rows) override {
    cudaCheck(cudaMemcpy2DAsync(dst, dstPitch, src, srcPitch, width, rows,
                                cudaMemcpyDeviceToDevice, stream),
              "copying a collective's pieces");
  }
  uint8_t *staging(uint64_t bytes) override {
    void *p = nullptr;
    cudaCheck(cudaMallocAsync(&p, bytes, stream),
              "allocating a collective's staging memory");
    buffers.push_back(p);
    return static_cast<uint8_t *>(p);
  }
  void afterwards(std::function<void()> fn) override { fn(); }

private:
  cudaStream_t stream;
  std::vector<void *> buffers;
};

} // namespace

void CudaBackend::startCollective(unsigned stream, const Instr &instr) {
  State &s = *state;
  cudaStream_t cs = s.streams[stream];
  {
    StreamStaging staging(cs);
    issueCollective(*s.plan, instr, s.arena,
                    *s.comms.at({instr.group, stream}), staging);
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
  end.location = "the end of the step on the GPU streams";
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

void braid::rt::registerCudaBackend() {
  registerBackend(
      "cuda", [](const BackendOptions &o) -> std::unique_ptr<Backend> {
        if (o.checkMemory)
          throw std::runtime_error("--check-memory is a cpu backend option");
        if (o.profile)
          throw std::runtime_error(
              "--profile is a cpu backend option (cuda kernels run "
              "asynchronously; time them with the CUDA tools)");
        return std::make_unique<CudaBackend>(o.world, o.timeoutSeconds,
                                             o.localRank);
      });
}
