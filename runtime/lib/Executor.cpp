//===- Executor.cpp - streams and events over a backend -------------------===//

#include "braid-runtime/Executor.h"

#include <chrono>

using namespace braid;
using namespace braid::rt;

Executor::Executor(const Plan &plan, Backend &backend)
    : plan(plan), backend(backend) {
  for (uint32_t e = 0; e < plan.numEvents; ++e)
    events.push_back(std::make_unique<std::atomic<uint64_t>>(0));
  futureStarts.assign(plan.numFutures, nullptr);
  for (uint32_t f = 0; f < plan.numFutures; ++f)
    futures.push_back(std::make_unique<std::atomic<uint64_t>>(0));
  for (const Stream &s : plan.streams)
    for (const Instr &i : s.instrs)
      if (i.kind == InstrKind::CollectiveStart)
        futureStarts[i.future] = &i;
  if (backend.ordersCollectives()) {
    std::vector<const Instr *> order = collectiveOrder(plan);
    for (size_t k = 0; k < order.size(); ++k)
      tickets[order[k]] = k;
  }
  for (unsigned s = 0; s < plan.streams.size(); ++s)
    threads.emplace_back([this, s] { worker(s); });
}

Executor::~Executor() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  for (std::thread &t : threads)
    t.join();
}

void Executor::runStep() {
  std::unique_lock<std::mutex> lock(mutex);
  ++step;
  running = threads.size();
  wake.notify_all();
  done.wait(lock, [&] { return running == 0; });
  if (error) {
    std::exception_ptr e = error;
    error = nullptr;
    std::rethrow_exception(e);
  }
  lock.unlock();
  backend.synchronize();
}

void Executor::worker(unsigned stream) {
  uint64_t seen = 0;
  try {
    backend.startThread(stream);
  } catch (...) {
    // Reported by the first step, which every stream then stops.
    std::lock_guard<std::mutex> lock(mutex);
    if (!error)
      error = std::current_exception();
    failed = true;
  }
  for (;;) {
    uint64_t current;
    {
      std::unique_lock<std::mutex> lock(mutex);
      wake.wait(lock, [&] { return stopping || step != seen; });
      if (stopping)
        return;
      current = seen = step;
    }
    try {
      runStream(stream, current);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex);
      if (!error)
        error = std::current_exception();
      failed = true;
      wake.notify_all();
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (--running == 0)
      done.notify_all();
  }
}

void Executor::signal(std::atomic<uint64_t> &flag, uint64_t value) {
  flag.store(value, std::memory_order_release);
  // Take the lock so that a waiter between its check and its sleep sees it.
  std::lock_guard<std::mutex> lock(mutex);
  wake.notify_all();
}

void Executor::waitFor(unsigned stream, const std::atomic<uint64_t> &flag,
                       uint64_t value) {
  // Spin briefly: a cross-stream wait is usually short. Then sleep, waking
  // every millisecond to let the backend progress its collectives.
  auto spinUntil =
      std::chrono::steady_clock::now() + std::chrono::microseconds(50);
  while (flag.load(std::memory_order_acquire) < value) {
    if (failed)
      throw CommError("stopped: another stream of this rank failed");
    if (std::chrono::steady_clock::now() < spinUntil) {
      std::this_thread::yield();
      continue;
    }
    backend.idle(stream);
    std::unique_lock<std::mutex> lock(mutex);
    wake.wait_for(lock, std::chrono::milliseconds(1), [&] {
      return failed || flag.load(std::memory_order_acquire) >= value;
    });
  }
}

void Executor::issue(unsigned stream, const Instr &instr, uint64_t current) {
  // A ticket: the collectives before it in collectiveOrder, over all the
  // steps so far, have been issued. Every step issues each collective once
  // (a failed step ends the executor), so the count is exact.
  uint64_t ticket = 0;
  bool ordered = !tickets.empty();
  if (ordered) {
    ticket = (current - 1) * tickets.size() + tickets.at(&instr);
    waitFor(stream, issued, ticket);
  }
  if (instr.kind == InstrKind::Collective) {
    backend.collective(stream, instr);
  } else {
    backend.startCollective(stream, instr);
    signal(*futures[instr.future], current);
  }
  if (ordered)
    signal(issued, ticket + 1);
}

std::vector<const Instr *> braid::rt::collectiveOrder(const Plan &plan) {
  size_t streams = plan.streams.size();
  std::vector<size_t> next(streams, 0);
  std::vector<bool> recorded(plan.numEvents, false),
      started(plan.numFutures, false);
  std::vector<const Instr *> order;
  for (;;) {
    bool moved = false, finished = true;
    for (size_t s = 0; s < streams; ++s) {
      const std::vector<Instr> &instrs = plan.streams[s].instrs;
      if (next[s] == instrs.size())
        continue;
      finished = false;
      const Instr &i = instrs[next[s]];
      if ((i.kind == InstrKind::WaitEvent && !recorded.at(i.event)) ||
          (i.kind == InstrKind::Wait && !started.at(i.future)))
        continue;
      if (i.kind == InstrKind::RecordEvent)
        recorded.at(i.event) = true;
      if (i.kind == InstrKind::CollectiveStart)
        started.at(i.future) = true;
      if (i.kind == InstrKind::Collective ||
          i.kind == InstrKind::CollectiveStart)
        order.push_back(&i);
      ++next[s];
      moved = true;
    }
    if (finished)
      return order;
    if (!moved) {
      std::string blocked;
      for (size_t s = 0; s < streams; ++s)
        if (next[s] < plan.streams[s].instrs.size())
          blocked += std::string(blocked.empty() ? "" : ", ") +
                     plan.streams[s].name() + " at " +
                     plan.streams[s].instrs[next[s]].describe();
      throw PlanError("the plan's streams wait on each other in a cycle: " +
                      blocked);
    }
  }
}

void Executor::runStream(unsigned stream, uint64_t current) {
  for (const Instr &instr : plan.streams[stream].instrs) {
    if (failed)
      throw CommError("stopped: another stream of this rank failed");
    switch (instr.kind) {
    case InstrKind::Kernel:
      backend.kernel(stream, instr);
      break;
    case InstrKind::Collective:
    case InstrKind::CollectiveStart:
      issue(stream, instr, current);
      break;
    case InstrKind::Wait:
      waitFor(stream, *futures[instr.future], current);
      backend.waitCollective(stream, *futureStarts[instr.future]);
      break;
    case InstrKind::RecordEvent:
      backend.recordEvent(stream, instr.event);
      signal(*events[instr.event], current);
      break;
    case InstrKind::WaitEvent:
      waitFor(stream, *events[instr.event], current);
      backend.waitEvent(stream, instr.event);
      break;
    }
  }
}
