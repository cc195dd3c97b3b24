//===- CudaBackend.h - the cuda backend -------------------------*- C++ -*-===//

#ifndef BRAID_RUNTIME_CUDABACKEND_H
#define BRAID_RUNTIME_CUDABACKEND_H

#include "braid-runtime/Executor.h"

#include <mpi.h>

#include <memory>

namespace braid::rt {

/// CUDA streams and events, cuBLAS, braid's CUDA kernels, NCCL with one
/// communicator per (device group, stream), bootstrapped through MPI. One
/// process per GPU: a rank takes GPU (local rank mod GPU count).
class CudaBackend : public Backend {
public:
  /// Throws if there is no usable GPU. `localRank` is the rank's index among
  /// the ranks of its node; it picks the GPU.
  CudaBackend(MPI_Comm world, double timeoutSeconds, int localRank);
  ~CudaBackend() override;

  const char *name() const override { return "cuda"; }
  void prepare(const Plan &plan) override;
  void connect() override;
  void kernel(unsigned stream, const Instr &instr) override;
  void collective(unsigned stream, const Instr &instr) override;
  void startCollective(unsigned stream, const Instr &instr) override;
  void waitCollective(unsigned stream, const Instr &start) override;
  void recordEvent(unsigned stream, int event) override;
  void waitEvent(unsigned stream, int event) override;
  void synchronize() override;
  void read(const Buffer &buffer, void *dst) override;
  void write(const Buffer &buffer, const void *src) override;
  void copy(const Buffer &dst, const Buffer &src) override;

  struct State;

private:
  std::unique_ptr<State> state;
};

} // namespace braid::rt

#endif // BRAID_RUNTIME_CUDABACKEND_H
