//===- MpiCommunicator.h - the Communicator over MPI ------------*- C++ -*-===//
//
// Non-blocking MPI calls on one MPI communicator (a device group, for one
// stream). Each call adds its requests to the work begun last (begin());
// the backend waits for them and then calls MpiWork::finish, which applies
// what MPI has no operation for (an average is a sum, divided at the end).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_MPICOMMUNICATOR_H
#define BRAID_RUNTIME_MPICOMMUNICATOR_H

#include "braid-runtime/Communicator.h"

#include <mpi.h>

#include <vector>

namespace braid::rt {

/// One collective's requests, and what is left to do once they complete.
struct MpiWork {
  std::vector<MPI_Request> requests;
  struct Average {
    void *buffer;
    int64_t count;
    DType dtype;
    int64_t ranks;
  };
  std::vector<Average> averages;
  /// After every request has completed: the averages' division.
  void finish();
};

class MpiCommunicator : public Communicator {
public:
  explicit MpiCommunicator(MPI_Comm comm);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator &) = delete;
  MpiCommunicator &operator=(const MpiCommunicator &) = delete;

  /// The calls that follow add their requests to `work`.
  void begin(MpiWork &work) { current = &work; }
  MPI_Comm get() const { return comm; }

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

private:
  MPI_Request *request();

  MPI_Comm comm;
  int index = 0, ranks = 1;
  MpiWork *current = nullptr;
};

} // namespace braid::rt

#endif // BRAID_RUNTIME_MPICOMMUNICATOR_H
