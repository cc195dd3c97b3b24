//===- NcclCommunicator.h - the Communicator over NCCL ----------*- C++ -*-===//
//
// NCCL calls on one NCCL communicator (a device group, for one stream),
// enqueued on that stream: a collective completes in stream order. Its
// asynchronous error is ncclCommGetAsyncError with ncclGetLastError's
// detail; abort is ncclCommAbort.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_LIB_CUDA_NCCLCOMMUNICATOR_H
#define BRAID_RUNTIME_LIB_CUDA_NCCLCOMMUNICATOR_H

#include "braid-runtime/Device.h"

#include <cuda_runtime.h>
#include <nccl.h>

namespace braid::rt {

/// The NCCL type of each dtype; `reduction` (null for a collective that
/// only moves data) rejects what NCCL cannot reduce as braid means it (a
/// sum or mean of booleans). Throws CommError naming the dtype.
ncclDataType_t ncclType(DType dtype,
                        const ops::ReductionKind *reduction = nullptr);
/// A failed NCCL call as a CommError naming `what`.
void ncclCheck(ncclResult_t result, const char *what);

class NcclCommunicator : public DeviceComm {
public:
  NcclCommunicator(ncclComm_t comm, cudaStream_t stream, int rank, int size)
      : comm(comm), stream(stream), index(rank), ranks(size) {}
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator &) = delete;
  NcclCommunicator &operator=(const NcclCommunicator &) = delete;

  int rank() const override { return index; }
  int size() const override { return ranks; }
  void allReduce(void *buffer, int64_t count, DType dtype,
                 ops::ReductionKind reduction) override;
  void reduceScatter(const void *input, void *output, int64_t outputCount,
                     DType dtype, ops::ReductionKind reduction) override;
  void allGather(const void *input, void *output, int64_t inputCount,
                 DType dtype) override;
  void allToAll(const void *input, void *output, int64_t chunkCount,
                DType dtype) override;
  void broadcast(void *buffer, int64_t count, DType dtype, int root) override;
  void send(const void *input, int64_t count, DType dtype, int peer) override;
  void recv(void *output, int64_t count, DType dtype, int peer) override;
  void sendRecv(const void *input, void *output, int64_t count, DType dtype,
                int to, int from) override;
  void groupStart() override;
  void groupEnd() override;
  std::string asyncError() override;
  void abort() override;

private:
  ncclComm_t comm;
  cudaStream_t stream;
  int index, ranks;
};

} // namespace braid::rt

#endif // BRAID_RUNTIME_LIB_CUDA_NCCLCOMMUNICATOR_H
