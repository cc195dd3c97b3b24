//===- CpuParallel.cpp - the cpu backend's threads per kernel -------------===//

#include "CpuParallel.h"
#include "braid-runtime/CpuBackend.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

using namespace braid;
using namespace braid::rt;

namespace {

/// Spins up to `spin` on `ready`, pausing the core between checks.
template <typename F> bool spinUntil(F ready, std::chrono::microseconds spin) {
  auto until = std::chrono::steady_clock::now() + spin;
  for (unsigned i = 0;; ++i) {
    if (ready())
      return true;
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
    if (i % 64 == 63 && std::chrono::steady_clock::now() > until)
      return false;
  }
}

/// How long a worker waiting for the next loop, and the caller waiting for
/// the workers, spin before they sleep: a kernel's loops follow each other
/// within microseconds, and a futex wake-up per loop cost more than the
/// loops gained (see docs/Runtime.md).
constexpr std::chrono::microseconds kSpin{50};

/// Workers that each run one piece of the current loop, then wait for the
/// next: spinning for kSpin first, then asleep.
class Pool {
public:
  explicit Pool(int workers) {
    for (int w = 0; w < workers; ++w)
      threads.emplace_back([this, w] { work(w); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
      generation.fetch_add(1, std::memory_order_release);
    }
    wake.notify_all();
    for (std::thread &t : threads)
      t.join();
  }
  int size() const { return int(threads.size()); }

  /// Runs pieces 1..n-1 of `fn` on the workers and piece 0 here.
  void run(int pieces, const std::function<void(int)> &fn) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      job = &fn;
      jobPieces = pieces;
      active.store(pieces - 1, std::memory_order_relaxed);
      generation.fetch_add(1, std::memory_order_release);
    }
    wake.notify_all();
    fn(0);
    if (!spinUntil([&] { return active.load(std::memory_order_acquire) == 0; },
                   kSpin)) {
      std::unique_lock<std::mutex> lock(mutex);
      done.wait(lock,
                [&] { return active.load(std::memory_order_acquire) == 0; });
    }
    // `job` stays: a worker reads it only under the mutex, after a new
    // generation has set it (one past this loop's pieces may read it late,
    // and then does not call it).
  }

private:
  void work(int w) {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(int)> *fn;
      int pieces;
      spinUntil(
          [&] { return generation.load(std::memory_order_acquire) != seen; },
          kSpin);
      {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [&] {
          return generation.load(std::memory_order_acquire) != seen;
        });
        if (stopping)
          return;
        seen = generation.load(std::memory_order_acquire);
        fn = job;
        pieces = jobPieces;
      }
      // Workers past the loop's pieces sit this one out.
      if (w + 1 >= pieces)
        continue;
      (*fn)(w + 1);
      if (active.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(mutex);
        done.notify_all();
      }
    }
  }

  std::vector<std::thread> threads;
  std::mutex mutex;
  std::condition_variable wake, done;
  const std::function<void(int)> *job = nullptr;
  int jobPieces = 0;
  std::atomic<int> active{0};
  std::atomic<uint64_t> generation{0};
  bool stopping = false;
};

int threadCount = 1;
std::unique_ptr<Pool> pool;
/// Held by the stream thread whose loop uses the pool.
std::mutex poolOwner;

} // namespace

void braid::rt::setCpuThreads(int threads) {
  threadCount = std::max(1, threads);
  // BLAS calls run on the calling thread; matmul splits its products over
  // the pool (CpuKernels.cpp).
  openblas_set_num_threads(1);
  std::lock_guard<std::mutex> lock(poolOwner);
  pool.reset();
  if (threadCount > 1)
    pool = std::make_unique<Pool>(threadCount - 1);
}

int braid::rt::cpuThreads() { return threadCount; }

void braid::rt::parallelFor(int64_t n, int64_t grain,
                            const std::function<void(int64_t, int64_t)> &fn) {
  int64_t pieces =
      std::min<int64_t>(threadCount, grain > 0 ? n / grain : int64_t(1));
  std::unique_lock<std::mutex> lock(poolOwner, std::defer_lock);
  if (pieces <= 1 || !pool || !lock.try_lock()) {
    fn(0, n);
    return;
  }
  pool->run(int(pieces),
            [&](int p) { fn(n * p / pieces, n * (p + 1) / pieces); });
}

std::string braid::rt::openblasCore() {
  const char *name = openblas_get_corename();
  return name ? name : "unknown";
}

const char *braid::rt::betterOpenblasCore() {
  if (std::getenv("OPENBLAS_CORETYPE"))
    return nullptr;
  // The cores OpenBLAS falls back to, or older than AVX2: its kernels for
  // a CPU it recognizes are left alone.
  static const char *const generic[] = {
      "Prescott", "Core2",       "Penryn", "Dunnington", "Nehalem",
      "Atom",     "Sandybridge", "Katmai", "Coppermine", "Northwood"};
  std::string core = openblasCore();
  bool fallback = false;
  for (const char *g : generic)
    fallback |= strcasecmp(core.c_str(), g) == 0;
  if (!fallback)
    return nullptr;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512cd"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return "Haswell";
#endif
  return nullptr;
}
