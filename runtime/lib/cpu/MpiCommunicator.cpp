//===- MpiCommunicator.cpp - the Communicator over MPI --------------------===//

#include "braid-runtime/MpiCommunicator.h"

#include "braid-runtime/Executor.h"

using namespace braid;
using namespace braid::rt;

namespace {

/// The MPI type of a dtype the cpu backend moves (checkComputeTypes has
/// ruled out computing in the others; collectives move them as they are).
MPI_Datatype mpiType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return MPI_FLOAT;
  case DType::F64:
    return MPI_DOUBLE;
  case DType::F16:
  case DType::BF16:
    return MPI_UINT16_T;
  case DType::I1:
    return MPI_UINT8_T;
  case DType::I32:
    return MPI_INT32_T;
  case DType::I64:
    return MPI_INT64_T;
  }
  return MPI_BYTE;
}

/// The MPI operation of a reduction (an average sums, then divides).
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

template <typename T> void divide(void *buffer, int64_t count, int64_t by) {
  T *x = static_cast<T *>(buffer);
  for (int64_t i = 0; i < count; ++i)
    x[i] = T(x[i] / T(by));
}

} // namespace

void MpiWork::finish() {
  for (const Average &a : averages) {
    switch (a.dtype) {
    case DType::F32:
      divide<float>(a.buffer, a.count, a.ranks);
      break;
    case DType::F64:
      divide<double>(a.buffer, a.count, a.ranks);
      break;
    case DType::I32:
      divide<int32_t>(a.buffer, a.count, a.ranks);
      break;
    case DType::I64:
      divide<int64_t>(a.buffer, a.count, a.ranks);
      break;
    case DType::F16:
    case DType::BF16:
    case DType::I1:
      // The verifier allows avg on floats only; the cpu backend computes in
      // f32 (checkComputeTypes): not reachable from a valid plan.
      throw CommError(std::string("cannot average ") + dtypeName(a.dtype) +
                      " tensors on the cpu backend");
    }
  }
  averages.clear();
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm) : comm(comm) {
  MPI_Comm_rank(comm, &index);
  MPI_Comm_size(comm, &ranks);
}

MpiCommunicator::~MpiCommunicator() { MPI_Comm_free(&comm); }

MPI_Request *MpiCommunicator::request() {
  current->requests.emplace_back();
  return &current->requests.back();
}

void MpiCommunicator::allReduce(void *buffer, int64_t count, DType dtype,
                                ops::ReductionKind reduction) {
  MPI_Iallreduce(MPI_IN_PLACE, buffer, int(count), mpiType(dtype),
                 mpiOp(reduction), comm, request());
  if (reduction == ops::ReductionKind::Avg)
    current->averages.push_back({buffer, count, dtype, ranks});
}

void MpiCommunicator::reduceScatter(const void *input, void *output,
                                    int64_t outputCount, DType dtype,
                                    ops::ReductionKind reduction) {
  MPI_Ireduce_scatter_block(input, output, int(outputCount), mpiType(dtype),
                            mpiOp(reduction), comm, request());
  if (reduction == ops::ReductionKind::Avg)
    current->averages.push_back({output, outputCount, dtype, ranks});
}

void MpiCommunicator::allGather(const void *input, void *output,
                                int64_t inputCount, DType dtype) {
  MPI_Iallgather(input, int(inputCount), mpiType(dtype), output,
                 int(inputCount), mpiType(dtype), comm, request());
}

void MpiCommunicator::allToAll(const void *input, void *output,
                               int64_t chunkCount, DType dtype) {
  MPI_Ialltoall(input, int(chunkCount), mpiType(dtype), output, int(chunkCount),
                mpiType(dtype), comm, request());
}

void MpiCommunicator::broadcast(void *buffer, int64_t count, DType dtype,
                                int root) {
  MPI_Ibcast(buffer, int(count), mpiType(dtype), root, comm, request());
}

void MpiCommunicator::send(const void *input, int64_t count, DType dtype,
                           int peer) {
  MPI_Isend(input, int(count), mpiType(dtype), peer, 0, comm, request());
}

void MpiCommunicator::recv(void *output, int64_t count, DType dtype, int peer) {
  MPI_Irecv(output, int(count), mpiType(dtype), peer, 0, comm, request());
}

void MpiCommunicator::sendRecv(const void *input, void *output, int64_t count,
                               DType dtype, int to, int from) {
  // Its own tag: a permute never matches a send or recv of the same group.
  MPI_Irecv(output, int(count), mpiType(dtype), from, 1, comm, request());
  MPI_Isend(input, int(count), mpiType(dtype), to, 1, comm, request());
}
