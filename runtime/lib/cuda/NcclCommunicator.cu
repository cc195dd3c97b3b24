//===- NcclCommunicator.cu - the Communicator over NCCL -------------------===//

#include "NcclCommunicator.h"

#include "braid-runtime/Executor.h"

#include <string>

using namespace braid;
using namespace braid::rt;

ncclDataType_t braid::rt::ncclType(DType dtype,
                                   const ops::ReductionKind *reduction) {
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
    // Booleans as bytes: moved, or reduced by max (or) and min (and); a sum
    // or mean of bytes would not be a boolean.
    if (reduction && (*reduction == ops::ReductionKind::Sum ||
                      *reduction == ops::ReductionKind::Avg))
      throw CommError("nccl: cannot sum or average i1 (booleans); reduce "
                      "them with max or min");
    return ncclUint8;
  case DType::I32:
    return ncclInt32;
  case DType::I64:
    return ncclInt64;
  }
  throw CommError("nccl: no NCCL type for dtype number " +
                  std::to_string(int(dtype)));
}

void braid::rt::ncclCheck(ncclResult_t result, const char *what) {
  if (result != ncclSuccess)
    throw CommError(std::string("nccl: ") + what + ": " +
                    ncclGetErrorString(result));
}

namespace {

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

size_t bytesOf(int64_t count, DType dtype) {
  return size_t(count) * dtypeBytes(dtype);
}

} // namespace

NcclCommunicator::~NcclCommunicator() {
  if (comm)
    ncclCommDestroy(comm);
}

std::string NcclCommunicator::asyncError() {
  if (!comm)
    return "";
  ncclResult_t async = ncclSuccess;
  ncclResult_t result = ncclCommGetAsyncError(comm, &async);
  if (result != ncclSuccess)
    return std::string("ncclCommGetAsyncError failed: ") +
           ncclGetErrorString(result);
  if (async == ncclSuccess || async == ncclInProgress)
    return "";
  std::string detail = ncclGetLastError(comm);
  return std::string(ncclGetErrorString(async)) +
         (detail.empty() ? "" : " (" + detail + ")");
}

void NcclCommunicator::abort() {
  if (comm)
    ncclCommAbort(comm);
  comm = nullptr;
}

void NcclCommunicator::allReduce(void *buffer, int64_t count, DType dtype,
                                 ops::ReductionKind reduction) {
  ncclCheck(ncclAllReduce(buffer, buffer, size_t(count),
                          ncclType(dtype, &reduction), ncclOp(reduction), comm,
                          stream),
            "ncclAllReduce");
}

void NcclCommunicator::reduceScatter(const void *input, void *output,
                                     int64_t outputCount, DType dtype,
                                     ops::ReductionKind reduction) {
  ncclCheck(ncclReduceScatter(input, output, size_t(outputCount),
                              ncclType(dtype, &reduction), ncclOp(reduction),
                              comm, stream),
            "ncclReduceScatter");
}

void NcclCommunicator::allGather(const void *input, void *output,
                                 int64_t inputCount, DType dtype) {
  ncclCheck(ncclAllGather(input, output, size_t(inputCount), ncclType(dtype),
                          comm, stream),
            "ncclAllGather");
}

void NcclCommunicator::allToAll(const void *input, void *output,
                                int64_t chunkCount, DType dtype) {
  size_t chunk = bytesOf(chunkCount, dtype);
  groupStart();
  for (int peer = 0; peer < ranks; ++peer) {
    ncclCheck(ncclSend(static_cast<const char *>(input) + peer * chunk,
                       size_t(chunkCount), ncclType(dtype), peer, comm, stream),
              "ncclSend");
    ncclCheck(ncclRecv(static_cast<char *>(output) + peer * chunk,
                       size_t(chunkCount), ncclType(dtype), peer, comm, stream),
              "ncclRecv");
  }
  groupEnd();
}

void NcclCommunicator::broadcast(void *buffer, int64_t count, DType dtype,
                                 int root) {
  ncclCheck(ncclBroadcast(buffer, buffer, size_t(count), ncclType(dtype), root,
                          comm, stream),
            "ncclBroadcast");
}

void NcclCommunicator::send(const void *input, int64_t count, DType dtype,
                            int peer) {
  ncclCheck(ncclSend(input, size_t(count), ncclType(dtype), peer, comm, stream),
            "ncclSend");
}

void NcclCommunicator::recv(void *output, int64_t count, DType dtype,
                            int peer) {
  ncclCheck(
      ncclRecv(output, size_t(count), ncclType(dtype), peer, comm, stream),
      "ncclRecv");
}

void NcclCommunicator::sendRecv(const void *input, void *output, int64_t count,
                                DType dtype, int to, int from) {
  // One group: a send and a receive in a group cannot deadlock.
  groupStart();
  send(input, count, dtype, to);
  recv(output, count, dtype, from);
  groupEnd();
}

void NcclCommunicator::groupStart() {
  ncclCheck(ncclGroupStart(), "ncclGroupStart");
}

void NcclCommunicator::groupEnd() { ncclCheck(ncclGroupEnd(), "ncclGroupEnd"); }
