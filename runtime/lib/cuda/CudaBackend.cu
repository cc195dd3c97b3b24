//===- CudaBackend.cu - the Device over CUDA, cuBLAS and NCCL -------------===//
//
// CUDA streams and events by index, braid's CUDA kernels with a cuBLAS
// handle per stream, copies with cudaMemcpyAsync, and NCCL communicators
// bootstrapped by broadcasting the unique id over the group's MPI
// communicator. What the backend does with them (which thread selects the
// GPU, how launches are checked, the order of the NCCL calls, the deadline)
// is DeviceBackend's, tested on the host with a fake device.
//
// Before the first CUDA call, unless the user set them: CUDA_MODULE_LOADING
// =EAGER loads every kernel when the context is made (lazy loading, the
// default since CUDA 12.2, can stall step 1 while NCCL kernels run on other
// streams), and NCCL_RUNTIME_CONNECT=0 connects a communicator's peers in
// ncclCommInitRank instead of inside its first collective.
//
//===----------------------------------------------------------------------===//

#include "CudaKernels.h"
#include "NcclCommunicator.h"
#include "braid-runtime/BackendRegistry.h"
#include "braid-runtime/CudaBackend.h"
#include "braid-runtime/DeviceBackend.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdlib>
#include <string>
#include <vector>

using namespace braid;
using namespace braid::rt;

namespace {

void cudaCheck(cudaError_t error, const std::string &what) {
  if (error != cudaSuccess)
    throw KernelError("cuda: " + what + ": " + cudaGetErrorString(error));
}

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
    cudaCheck(
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream),
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

class CudaDevice : public Device {
public:
  explicit CudaDevice(MPI_Comm world) : world(world) {
    setenv("CUDA_MODULE_LOADING", "EAGER", /*overwrite=*/0);
    setenv("NCCL_RUNTIME_CONNECT", "0", /*overwrite=*/0);
  }
  ~CudaDevice() override {
    for (cublasHandle_t h : blas)
      cublasDestroy(h);
    for (cudaEvent_t e : events)
      cudaEventDestroy(e);
    for (cudaEvent_t e : timers)
      cudaEventDestroy(e);
    for (cudaStream_t s : streams)
      cudaStreamDestroy(s);
    for (void *p : memory)
      cudaFree(p);
    for (void *p : hostMemory)
      cudaFreeHost(p);
  }

  const char *name() const override { return "cuda"; }

  int count() override {
    int n = 0;
    cudaError_t error = cudaGetDeviceCount(&n);
    if (error != cudaSuccess || n == 0)
      throw std::runtime_error(
          std::string("the cuda backend found no usable GPU: ") +
          (error != cudaSuccess ? cudaGetErrorString(error) : "0 devices"));
    return n;
  }

  void select(int device) override {
    cudaCheck(cudaSetDevice(device),
              "making GPU " + std::to_string(device) + " current");
  }

  uint8_t *allocate(uint64_t bytes) override {
    void *p = nullptr;
    cudaCheck(cudaMalloc(&p, bytes),
              "allocating " + std::to_string(bytes) + " bytes of GPU memory");
    memory.push_back(p);
    return static_cast<uint8_t *>(p);
  }

  uint8_t *allocateHost(uint64_t bytes) override {
    void *p = nullptr;
    cudaCheck(cudaMallocHost(&p, bytes), "allocating " + std::to_string(bytes) +
                                             " bytes of pinned memory");
    hostMemory.push_back(p);
    return static_cast<uint8_t *>(p);
  }

  void create(unsigned streamCount, unsigned eventCount) override {
    for (unsigned i = 0; i < streamCount; ++i) {
      cudaStream_t stream;
      cudaCheck(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                "cudaStreamCreate");
      streams.push_back(stream);
      cublasHandle_t handle;
      if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS)
        throw KernelError("cuda: cublasCreate failed");
      cublasSetStream(handle, stream);
      blas.push_back(handle);
    }
    for (unsigned i = 0; i < eventCount; ++i) {
      cudaEvent_t e;
      cudaCheck(cudaEventCreateWithFlags(&e, cudaEventDisableTiming),
                "cudaEventCreate");
      events.push_back(e);
    }
    void *flag = nullptr;
    cudaCheck(cudaMalloc(&flag, sizeof(int)), "cudaMalloc");
    memory.push_back(flag);
    errorFlag = static_cast<int *>(flag);
    cudaCheck(cudaMemsetAsync(errorFlag, 0, sizeof(int), streams[0]),
              "clearing the error flag");
    cudaCheck(cudaStreamSynchronize(streams[0]), "clearing the error flag");
  }

  void launch(const Plan &plan, const Instr &instr, uint8_t *arena,
              unsigned stream) override {
    launchCudaKernel(plan, instr, arena, streams[stream], blas[stream],
                     errorFlag);
  }

  std::string launchError() override {
    cudaError_t error = cudaGetLastError();
    return error == cudaSuccess ? "" : cudaGetErrorString(error);
  }

  void copy(void *dst, const void *src, uint64_t bytes,
            unsigned stream) override {
    cudaCheck(
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, streams[stream]),
        "copying " + std::to_string(bytes) + " bytes");
  }

  void fill(uint8_t *dst, uint8_t value, uint64_t bytes,
            unsigned stream) override {
    cudaCheck(cudaMemsetAsync(dst, value, bytes, streams[stream]),
              "clearing " + std::to_string(bytes) + " bytes");
  }

  void record(unsigned event, unsigned stream) override {
    cudaCheck(cudaEventRecord(events[event], streams[stream]),
              "cudaEventRecord");
  }

  void wait(unsigned stream, unsigned event) override {
    cudaCheck(cudaStreamWaitEvent(streams[stream], events[event], 0),
              "cudaStreamWaitEvent");
  }

  bool done(unsigned stream) override {
    return completed(cudaStreamQuery(streams[stream]));
  }

  bool reached(unsigned event) override {
    return completed(cudaEventQuery(events[event]));
  }

  void synchronize(unsigned stream) override {
    cudaCheck(cudaStreamSynchronize(streams[stream]), "cudaStreamSynchronize");
  }

  std::unique_ptr<CollectiveMemory> collectiveMemory(unsigned stream) override {
    return std::make_unique<StreamStaging>(streams[stream]);
  }

  std::unique_ptr<DeviceComm> connect(int group, int64_t color, int64_t index,
                                      int64_t size, unsigned stream) override {
    MPI_Comm comm;
    MPI_Comm_split(world, int(color), int(index), &comm);
    ncclUniqueId id;
    if (index == 0)
      ncclCheck(ncclGetUniqueId(&id), "ncclGetUniqueId");
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm);
    MPI_Comm_free(&comm);
    ncclComm_t nccl;
    ncclCheck(ncclCommInitRank(&nccl, int(size), id, int(index)),
              "ncclCommInitRank");
    return std::make_unique<NcclCommunicator>(nccl, streams[stream], int(index),
                                              int(size));
  }

  void createTimers(unsigned count) override {
    for (unsigned i = 0; i < count; ++i) {
      cudaEvent_t e;
      cudaCheck(cudaEventCreate(&e), "cudaEventCreate");
      timers.push_back(e);
    }
  }

  void recordTimer(unsigned timer, unsigned stream) override {
    cudaCheck(cudaEventRecord(timers[timer], streams[stream]),
              "cudaEventRecord");
  }

  double elapsed(unsigned from, unsigned to) override {
    float ms = 0;
    cudaCheck(cudaEventElapsedTime(&ms, timers[from], timers[to]),
              "cudaEventElapsedTime");
    return ms / 1e3;
  }

  bool indexError() override {
    int flag = 0;
    cudaCheck(cudaMemcpyAsync(&flag, errorFlag, sizeof(int),
                              cudaMemcpyDeviceToHost, streams[0]),
              "reading the error flag");
    cudaCheck(cudaMemsetAsync(errorFlag, 0, sizeof(int), streams[0]),
              "clearing the error flag");
    cudaCheck(cudaStreamSynchronize(streams[0]), "reading the error flag");
    return flag != 0;
  }

private:
  /// What a stream or event query says: false while work is pending; an
  /// error of the work (a kernel's, NCCL's) is thrown.
  static bool completed(cudaError_t query) {
    if (query == cudaErrorNotReady)
      return false;
    cudaCheck(query, "running the step");
    return true;
  }

  MPI_Comm world;
  std::vector<cudaStream_t> streams;
  std::vector<cublasHandle_t> blas;
  std::vector<cudaEvent_t> events, timers;
  std::vector<void *> memory, hostMemory;
  int *errorFlag = nullptr;
};

} // namespace

std::unique_ptr<Device> braid::rt::createCudaDevice(MPI_Comm world) {
  return std::make_unique<CudaDevice>(world);
}

void braid::rt::registerCudaBackend() {
  registerBackend(
      "cuda", [](const BackendOptions &o) -> std::unique_ptr<Backend> {
        if (o.checkMemory)
          throw std::runtime_error("--check-memory is a cpu backend option");
        DeviceBackend::Options options;
        options.timeoutSeconds = o.timeoutSeconds;
        MPI_Comm_rank(o.world, &options.worldRank);
        options.localRank = o.localRank;
        options.localRanks = o.localRanks;
        options.profile = o.profile;
        return std::make_unique<DeviceBackend>(createCudaDevice(o.world),
                                               options);
      });
}
