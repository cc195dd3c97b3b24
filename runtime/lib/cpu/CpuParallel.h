//===- CpuParallel.h - the cpu backend's threads per kernel -----*- C++ -*-===//
//
// A kernel may use the rank's share of the node's cores (braid-run
// --threads, BackendOptions::threads): the elementwise loops split their
// range over a small pool, and matmul its products (BLAS itself runs on
// one thread, so that no second set of workers competes for the cores).
// With one thread, as when the ranks fill the cores, everything runs on the
// calling stream thread and the pool has no workers.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_LIB_CPU_CPUPARALLEL_H
#define BRAID_RUNTIME_LIB_CPU_CPUPARALLEL_H

#include <algorithm>
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

/// The elementwise loops split over the kernel's threads in
/// pieces of at least kGrain elements' work; rows are never split, so every
/// element is computed alike whatever the thread count.
constexpr int64_t kGrain = 1 << 14;

/// Rows of `width` elements, split over the kernel's threads.
template <typename F> void forRows(int64_t rows, int64_t width, F f) {
  parallelFor(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(width, 1)),
              [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r)
                  f(r);
              });
}

} // namespace braid::rt

#endif // BRAID_RUNTIME_LIB_CPU_CPUPARALLEL_H
