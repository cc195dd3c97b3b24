//===- MpiCommunicator.cpp - the Communicator over MPI --------------------===//

#include "braid-runtime/MpiCommunicator.h"

#include "braid-runtime/Executor.h"
#include "braid-runtime/HalfFloat.h"

#include <algorithm>
#include <cmath>

using namespace braid;
using namespace braid::rt;

namespace {

/// The MPI type of a dtype the cpu backend moves. bf16 and f16 travel as
/// 16-bit words, reduced by halfOp's operations.
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

/// f32 combination of a reduction (an average sums, then divides).
float combine(ops::ReductionKind reduction, float a, float b) {
  switch (reduction) {
  case ops::ReductionKind::Max:
    return std::isnan(a) || a > b ? a : b;
  case ops::ReductionKind::Min:
    return std::isnan(a) || a < b ? a : b;
  case ops::ReductionKind::Sum:
  case ops::ReductionKind::Avg:
    break;
  }
  return a + b;
}

/// MPI has no bf16 or f16 arithmetic: a user operation widens both sides to
/// f32, combines them and rounds the result, as NCCL reduces bf16.
template <DType D, ops::ReductionKind R>
void combineHalf(void *in, void *inout, int *len, MPI_Datatype *) {
  constexpr int chunk = 1024;
  float a[chunk], b[chunk];
  auto *x = static_cast<const uint16_t *>(in);
  auto *y = static_cast<uint16_t *>(inout);
  for (int at = 0; at < *len; at += chunk) {
    int n = std::min(chunk, *len - at);
    widenHalf(D, x + at, a, n);
    widenHalf(D, y + at, b, n);
    for (int i = 0; i < n; ++i)
      b[i] = combine(R, a[i], b[i]);
    narrowHalf(D, b, y + at, n);
  }
}

template <DType D> MPI_Op createHalfOp(ops::ReductionKind reduction) {
  MPI_User_function *fn = nullptr;
  switch (reduction) {
  case ops::ReductionKind::Max:
    fn = combineHalf<D, ops::ReductionKind::Max>;
    break;
  case ops::ReductionKind::Min:
    fn = combineHalf<D, ops::ReductionKind::Min>;
    break;
  case ops::ReductionKind::Sum:
  case ops::ReductionKind::Avg:
    fn = combineHalf<D, ops::ReductionKind::Sum>;
    break;
  }
  MPI_Op op;
  MPI_Op_create(fn, /*commute=*/1, &op);
  return op;
}

/// The MPI operation of a reduction on `dtype` (an average sums, then
/// divides).
MPI_Op mpiOp(ops::ReductionKind reduction, DType dtype) {
  if (isHalf(dtype)) {
    // Created once, after MPI_Init (the first communicator exists), and
    // kept until the process ends.
    static const MPI_Op bf16[] = {
        createHalfOp<DType::BF16>(ops::ReductionKind::Sum),
        createHalfOp<DType::BF16>(ops::ReductionKind::Max),
        createHalfOp<DType::BF16>(ops::ReductionKind::Min)};
    static const MPI_Op f16[] = {
        createHalfOp<DType::F16>(ops::ReductionKind::Sum),
        createHalfOp<DType::F16>(ops::ReductionKind::Max),
        createHalfOp<DType::F16>(ops::ReductionKind::Min)};
    const MPI_Op *ops = dtype == DType::BF16 ? bf16 : f16;
    switch (reduction) {
    case ops::ReductionKind::Max:
      return ops[1];
    case ops::ReductionKind::Min:
      return ops[2];
    case ops::ReductionKind::Sum:
    case ops::ReductionKind::Avg:
      return ops[0];
    }
  }
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

/// An average's division of `count` half values, in f32, rounded.
void divideHalf(DType dtype, void *buffer, int64_t count, int64_t by) {
  constexpr int64_t chunk = 1024;
  float f[chunk];
  auto *x = static_cast<uint16_t *>(buffer);
  for (int64_t at = 0; at < count; at += chunk) {
    int64_t n = std::min(chunk, count - at);
    widenHalf(dtype, x + at, f, n);
    for (int64_t i = 0; i < n; ++i)
      f[i] /= float(by);
    narrowHalf(dtype, f, x + at, n);
  }
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
      divideHalf(a.dtype, a.buffer, a.count, a.ranks);
      break;
    case DType::I1:
      // The verifier allows avg on floats and integers only: not reachable
      // from a valid plan.
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
                 mpiOp(reduction, dtype), comm, request());
  if (reduction == ops::ReductionKind::Avg)
    current->averages.push_back({buffer, count, dtype, ranks});
}

void MpiCommunicator::reduceScatter(const void *input, void *output,
                                    int64_t outputCount, DType dtype,
                                    ops::ReductionKind reduction) {
  MPI_Ireduce_scatter_block(input, output, int(outputCount), mpiType(dtype),
                            mpiOp(reduction, dtype), comm, request());
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
