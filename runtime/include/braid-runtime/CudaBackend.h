//===- CudaBackend.h - the cuda backend -------------------------*- C++ -*-===//
//
// The cuda backend is a DeviceBackend (DeviceBackend.h) over a Device made
// of CUDA streams and events, cuBLAS, braid's CUDA kernels and NCCL, with
// one communicator per (device group, stream) bootstrapped through MPI. One
// process per GPU: a rank takes the GPU of its local rank, and a node with
// more ranks than GPUs is refused. Registered as "cuda" in builds that have
// CUDA and NCCL.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDABACKEND_H
#define BRAID_RUNTIME_CUDABACKEND_H

#include "braid-runtime/Device.h"

#include <mpi.h>

#include <memory>

namespace braid::rt {

/// The CUDA device; its communicators split `world`.
std::unique_ptr<Device> createCudaDevice(MPI_Comm world);

} // namespace braid::rt

#endif // BRAID_RUNTIME_CUDABACKEND_H
