//===- ExecutorTest.cpp - the executor's ordering guarantees --------------===//
//
// Hand-written plans on the test backend, run for many steps with delays that
// make a missing synchronization visible: a value read across streams after
// wait_event, a collective's result read after its wait, an error in one
// stream that must not leave the others waiting. Built and run under
// ThreadSanitizer by the test command.
//
//===----------------------------------------------------------------------===//

#include "Expect.h"
#include "TestBackend.h"

#include <cstdio>
#include <string>

using namespace braid;
using namespace braid::rt;

static float readFloat(TestBackend &backend, const Plan &plan, uint32_t id,
                       size_t index = 0) {
  std::vector<float> values(plan.buffers[id].numElements());
  backend.read(plan.buffers[id], values.data());
  return values[index];
}

/// Stream 0 increments a counter, stream 1 copies it after wait_event.
static void testEvents() {
  PlanBuilder b(2, 0);
  uint32_t counter = b.buffer(16), one = b.buffer(16), copy = b.buffer(16);
  b.kernel(0, Opcode::Add, {counter, one}, {counter});
  int e = b.record(0);
  b.waitEvent(1, e);
  b.kernel(1, Opcode::Scale, {counter}, {copy}).attrs = ops::ScaleAttrs{1.0};
  TestBackend backend;
  backend.kernelDelayMicros = {30, 0};
  backend.prepare(b.plan);
  std::vector<float> ones(16, 1.0f);
  backend.write(b.plan.buffers[one], ones.data());
  Executor executor(b.plan, backend);
  int bad = 0;
  for (int step = 1; step <= 300; ++step) {
    executor.runStep();
    bad += readFloat(backend, b.plan, copy, 7) != float(step);
  }
  EXPECT(bad == 0, "a cross-stream read saw a stale value in %d of 300 steps",
         bad);
}

/// A collective started on a comm stream and waited on the compute stream.
static void testFutures() {
  PlanBuilder b(1, 1);
  uint32_t counter = b.buffer(8), one = b.buffer(8), reduced = b.buffer(8),
           doubled = b.buffer(8);
  b.kernel(0, Opcode::Add, {counter, one}, {counter});
  int e = b.record(0);
  b.waitEvent(1, e);
  int f = b.start(1, {counter}, {reduced});
  b.wait(0, f);
  b.kernel(0, Opcode::Scale, {reduced}, {doubled}).attrs = ops::ScaleAttrs{2.0};
  TestBackend backend;
  backend.collectiveDelayMicros = 100;
  backend.prepare(b.plan);
  std::vector<float> ones(8, 1.0f);
  backend.write(b.plan.buffers[one], ones.data());
  Executor executor(b.plan, backend);
  int bad = 0;
  for (int step = 1; step <= 200; ++step) {
    executor.runStep();
    bad += readFloat(backend, b.plan, doubled, 3) != 2.0f * step;
  }
  EXPECT(bad == 0, "a wait returned before its collective in %d of 200 steps",
         bad);
}

/// An error on one stream ends the step with that error, and a stream that
/// waits on an event the failed stream never records does not hang.
static void testErrors() {
  PlanBuilder b(2, 0);
  uint32_t x = b.buffer(4), y = b.buffer(4);
  b.failing(0);
  int e = b.record(0);
  b.waitEvent(1, e);
  b.kernel(1, Opcode::Scale, {x}, {y}).attrs = ops::ScaleAttrs{1.0};
  TestBackend backend;
  backend.failAtStep = 3;
  backend.prepare(b.plan);
  Executor executor(b.plan, backend);
  std::string error;
  int steps = 0;
  for (int step = 1; step <= 5 && error.empty(); ++step) {
    backend.step = step;
    try {
      executor.runStep();
      ++steps;
    } catch (const std::exception &ex) {
      error = ex.what();
    }
  }
  EXPECT(steps == 2, "expected 2 good steps before the failure, got %d", steps);
  EXPECT(error == "injected failure", "expected the kernel's error, got '%s'",
         error.c_str());
}

/// Many streams in a ring of events, many steps: for ThreadSanitizer.
static void testRing() {
  const unsigned n = 4;
  PlanBuilder b(n, 0);
  uint32_t one = b.buffer(4);
  std::vector<uint32_t> cells;
  for (unsigned s = 0; s < n; ++s)
    cells.push_back(b.buffer(4));
  int previous = -1;
  for (unsigned round = 0; round < 3; ++round)
    for (unsigned s = 0; s < n; ++s) {
      if (previous >= 0)
        b.waitEvent(s, previous);
      uint32_t from = cells[(s + n - 1) % n];
      b.kernel(s, Opcode::Add, {from, one}, {cells[s]});
      previous = b.record(s);
    }
  TestBackend backend;
  backend.prepare(b.plan);
  std::vector<float> ones(4, 1.0f);
  backend.write(b.plan.buffers[one], ones.data());
  Executor executor(b.plan, backend);
  for (int step = 0; step < 200; ++step)
    executor.runStep();
  // Each step adds 3 * n along the ring: the last cell is 12 ahead per step.
  float last = readFloat(backend, b.plan, cells[n - 1]);
  EXPECT(last == 200.0f * 3 * n, "ring ended at %g, expected %g", last,
         200.0 * 3 * n);
}

int main() {
  testEvents();
  testFutures();
  testErrors();
  testRing();
  int failures = expectFailures().load();
  std::printf("executor tests: %d failed\n", failures);
  return failures ? 1 : 0;
}
