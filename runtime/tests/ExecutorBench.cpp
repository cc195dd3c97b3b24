//===- ExecutorBench.cpp - the executor's overhead per instruction --------===//
//
// Prints the median time per instruction of the cpu executor with empty
// kernels: a chain of kernels on one stream, and a ping-pong of events
// between two streams (one cross-stream synchronization per instruction).
//
//===----------------------------------------------------------------------===//

#include "TestBackend.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

using namespace braid;
using namespace braid::rt;

static double medianMicrosPerInstr(const Plan &plan, int instrs, int reps) {
  TestBackend backend;
  backend.emptyKernels = true;
  backend.prepare(plan);
  Executor executor(plan, backend);
  executor.runStep(); // warm up the threads
  std::vector<double> samples;
  for (int r = 0; r < reps; ++r) {
    auto start = std::chrono::steady_clock::now();
    executor.runStep();
    std::chrono::duration<double, std::micro> took =
        std::chrono::steady_clock::now() - start;
    samples.push_back(took.count() / instrs);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

int main(int argc, char **argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 20000;
  int reps = argc > 2 ? std::atoi(argv[2]) : 15;
  if (n < 1 || reps < 1) {
    std::fprintf(stderr, "usage: braid-executor-bench [INSTRS] [REPS]\n");
    return 2;
  }

  PlanBuilder same(1, 0);
  uint32_t x = same.buffer(1);
  for (int i = 0; i < n; ++i)
    same.kernel(0, Opcode::Reshape, {x}, {x});
  double sameStream = medianMicrosPerInstr(same.plan, n, reps);

  // Stream 0 records, stream 1 waits and records back: each round trip is
  // two cross-stream synchronizations.
  int rounds = std::max(1, n / 20);
  PlanBuilder cross(2, 0);
  for (int i = 0; i < rounds; ++i) {
    int e = cross.record(0);
    cross.waitEvent(1, e);
    int back = cross.record(1);
    cross.waitEvent(0, back);
  }
  double crossStream = medianMicrosPerInstr(cross.plan, 2 * rounds, reps);

  std::printf("executor overhead (cpu, empty kernels, median of %d steps)\n",
              reps);
  std::printf("  same-stream instruction     %8.3f us   (target <= 1)\n",
              sameStream);
  std::printf("  cross-stream synchronization %7.3f us   (target <= 25)\n",
              crossStream);
  return 0;
}
