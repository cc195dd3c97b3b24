//===- CpuParallel.h - the cpu backend's threads per kernel -----*- C++ -*-===//
//
// A kernel may use the rank's share of the node's cores (braid-run
// --threads, BackendOptions::threads): BLAS calls get that many threads, and
// the elementwise loops split their range over a small pool. With one
// thread, as when the ranks fill the cores, everything runs on the calling
// stream thread and the pool has no workers.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_LIB_CPU_CPUPARALLEL_H
#define BRAID_RUNTIME_LIB_CPU_CPUPARALLEL_H

#include <cstdint>
#include <functional>

namespace braid::rt {

/// Sets the threads a kernel may use (at least 1): BLAS's and the pool's.
void setCpuThreads(int threads);
int cpuThreads();

/// Calls fn(begin, end) on pieces of [0, n) of at least `grain` elements,
/// on up to cpuThreads() threads, and returns when all are done. A call
/// made while another stream's loop holds the pool runs on the caller
/// alone.
void parallelFor(int64_t n, int64_t grain,
                 const std::function<void(int64_t, int64_t)> &fn);

} // namespace braid::rt

#endif // BRAID_RUNTIME_LIB_CPU_CPUPARALLEL_H
