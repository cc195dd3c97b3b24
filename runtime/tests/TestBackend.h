//===- TestBackend.h - a host backend for executor tests --------*- C++ -*-===//
//
// Runs the cpu kernels on a host arena without MPI; a collective of one rank
// completes on a background thread after a delay (an all_reduce of one rank
// copies its inputs to its results), so that waits really wait. Optional
// delays before kernels of chosen streams expose missing synchronization.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_TESTS_TESTBACKEND_H
#define BRAID_RUNTIME_TESTS_TESTBACKEND_H

#include "../lib/cpu/CpuKernels.h"
#include "braid-runtime/Executor.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace braid::rt {

class TestBackend : public Backend {
public:
  /// `kernelDelayMicros[s]` is slept before each kernel of stream s.
  std::vector<int> kernelDelayMicros;
  int collectiveDelayMicros = 0;
  /// When true, kernels do nothing (executor overhead measurements).
  bool emptyKernels = false;
  /// A kernel named "fail" throws at this step (1-based).
  int failAtStep = 0;
  int step = 0;

  const char *name() const override { return "test"; }
  void prepare(const Plan &p) override {
    plan = &p;
    arena.assign(p.arenaBytes + 64, 0);
    done = std::vector<std::atomic<int>>(p.numFutures);
    threads.resize(p.numFutures);
  }
  ~TestBackend() override {
    for (std::thread &t : threads)
      if (t.joinable())
        t.join();
  }
  void kernel(unsigned stream, const Instr &instr) override {
    if (emptyKernels)
      return;
    if (stream < kernelDelayMicros.size() && kernelDelayMicros[stream])
      std::this_thread::sleep_for(
          std::chrono::microseconds(kernelDelayMicros[stream]));
    if (instr.location == "fail") {
      if (step == failAtStep)
        throw KernelError("injected failure");
      return;
    }
    runCpuKernel(*plan, instr, arena.data());
  }
  void collective(unsigned stream, const Instr &instr) override {
    copyIn(instr);
  }
  void startCollective(unsigned, const Instr &instr) override {
    if (emptyKernels) {
      done[instr.future] = 1;
      return;
    }
    if (threads[instr.future].joinable())
      threads[instr.future].join();
    done[instr.future] = 0;
    threads[instr.future] = std::thread([this, &instr] {
      std::this_thread::sleep_for(
          std::chrono::microseconds(collectiveDelayMicros));
      copyIn(instr);
      done[instr.future].store(1, std::memory_order_release);
    });
  }
  void waitCollective(unsigned, const Instr &start) override {
    while (!done[start.future].load(std::memory_order_acquire))
      std::this_thread::yield();
  }
  void read(const Buffer &b, void *dst) override {
    std::memcpy(dst, arena.data() + b.offset, b.bytes);
  }
  void write(const Buffer &b, const void *src) override {
    std::memcpy(arena.data() + b.offset, src, b.bytes);
  }
  void copy(const Buffer &dst, const Buffer &src) override {
    std::memmove(arena.data() + dst.offset, arena.data() + src.offset,
                 dst.bytes);
  }

private:
  void copyIn(const Instr &instr) {
    for (size_t i = 0; i < instr.operands.size() && i < instr.results.size();
         ++i) {
      const Buffer &from = plan->buffers[instr.operands[i]];
      const Buffer &to = plan->buffers[instr.results[i]];
      std::memmove(arena.data() + to.offset, arena.data() + from.offset,
                   to.bytes);
    }
  }

  const Plan *plan = nullptr;
  std::vector<uint8_t> arena;
  std::vector<std::atomic<int>> done;
  std::vector<std::thread> threads;
};

/// Helpers to write plans by hand.
struct PlanBuilder {
  Plan plan;
  explicit PlanBuilder(unsigned computeStreams, unsigned commStreams) {
    for (unsigned i = 0; i < computeStreams; ++i)
      plan.streams.push_back({false, i, {}});
    for (unsigned i = 0; i < commStreams; ++i)
      plan.streams.push_back({true, i, {}});
  }
  uint32_t buffer(int64_t elements) {
    Buffer b;
    b.offset = plan.arenaBytes;
    b.bytes = elements * 4;
    b.shape = {elements};
    b.name = "b" + std::to_string(plan.buffers.size());
    plan.arenaBytes += (b.bytes + 63) / 64 * 64;
    plan.buffers.push_back(b);
    return plan.buffers.size() - 1;
  }
  Instr &add(unsigned stream, Opcode op, std::vector<uint32_t> operands,
             std::vector<uint32_t> results) {
    Instr i;
    i.opcode = op;
    i.info = &ops::getOpInfo(op);
    i.kind = i.info->instrKind;
    i.operands = std::move(operands);
    i.results = std::move(results);
    i.location = "test";
    plan.streams[stream].instrs.push_back(i);
    return plan.streams[stream].instrs.back();
  }
  Instr &kernel(unsigned stream, Opcode op, std::vector<uint32_t> operands,
                std::vector<uint32_t> results) {
    return add(stream, op, std::move(operands), std::move(results));
  }
  /// A kernel that throws at TestBackend::failAtStep.
  Instr &failing(unsigned stream) {
    Instr &i = add(stream, Opcode::Fill, {}, {});
    i.location = "fail";
    return i;
  }
  int record(unsigned stream) {
    add(stream, Opcode::RecordEvent, {}, {}).event = plan.numEvents;
    return plan.numEvents++;
  }
  void waitEvent(unsigned stream, int event) {
    add(stream, Opcode::WaitEvent, {}, {}).event = event;
  }
  int start(unsigned stream, std::vector<uint32_t> operands,
            std::vector<uint32_t> results) {
    Instr &i = add(stream, Opcode::AllReduceStart, std::move(operands),
                   std::move(results));
    i.attrs = ops::AllReduceAttrs{};
    i.future = plan.numFutures;
    i.group = 0;
    return plan.numFutures++;
  }
  void wait(unsigned stream, int future) {
    add(stream, Opcode::Wait, {}, {}).future = future;
  }
};

} // namespace braid::rt

#endif // BRAID_RUNTIME_TESTS_TESTBACKEND_H
