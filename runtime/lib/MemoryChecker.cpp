//===- MemoryChecker.cpp - catch a memory plan that reuses bytes too early ===//

#include "braid-runtime/MemoryChecker.h"
#include "braid-runtime/Executor.h"

using namespace braid;
using namespace braid::rt;

MemoryChecker::MemoryChecker(const Plan &plan)
    : plan(plan), valueOf(plan.buffers.size()) {
  for (uint32_t id = 0; id < valueOf.size(); ++id)
    valueOf[id] = id;
  // Views in stream order: a view's operand is written before it (the
  // loader has checked), so its value is known when the view is met.
  for (const Stream &stream : plan.streams)
    for (const Instr &instr : stream.instrs) {
      if (!instr.info || !instr.info->isView || instr.operands.size() != 1 ||
          instr.results.size() != 1)
        continue;
      const Buffer &x = plan.buffers[instr.operands[0]];
      const Buffer &y = plan.buffers[instr.results[0]];
      if (x.offset == y.offset && x.bytes == y.bytes)
        valueOf[instr.results[0]] = valueOf[instr.operands[0]];
    }
}

void MemoryChecker::define(uint32_t id) {
  const Buffer &b = plan.buffers[id];
  id = valueOf[id];
  if (!b.bytes)
    return;
  uint64_t lo = b.offset, hi = b.offset + b.bytes;
  std::lock_guard<std::mutex> lock(mutex);
  // Trim or drop the ranges this write covers.
  auto it = owners.lower_bound(lo);
  if (it != owners.begin()) {
    auto prev = std::prev(it);
    if (prev->second.first > lo) {
      auto [end, owner] = prev->second;
      prev->second.first = lo;
      if (end > hi)
        owners[hi] = {end, owner};
    }
  }
  it = owners.lower_bound(lo);
  while (it != owners.end() && it->first < hi) {
    auto [end, owner] = it->second;
    it = owners.erase(it);
    if (end > hi) {
      owners[hi] = {end, owner};
      break;
    }
  }
  owners[lo] = {hi, id};
}

void MemoryChecker::use(uint32_t id, const std::string &reader) {
  const Buffer &b = plan.buffers[id];
  uint32_t value = valueOf[id];
  if (!b.bytes)
    return;
  uint64_t lo = b.offset, hi = b.offset + b.bytes;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = owners.upper_bound(lo);
  if (it != owners.begin())
    --it;
  uint64_t covered = lo;
  for (; it != owners.end() && it->first < hi; ++it) {
    auto [end, owner] = it->second;
    if (end <= lo)
      continue;
    if (it->first > covered)
      break;
    if (owner != value)
      throw KernelError(
          reader + " reads '" + b.name + "' [" + std::to_string(lo) + ", " +
          std::to_string(hi) + "), but '" + plan.buffers[owner].name +
          "' has written [" + std::to_string(std::max(it->first, lo)) + ", " +
          std::to_string(std::min(end, hi)) +
          ") since: the memory plan reused those bytes while '" + b.name +
          "' was live");
    covered = end;
  }
  if (covered < hi)
    throw KernelError(reader + " reads '" + b.name + "' [" +
                      std::to_string(lo) + ", " + std::to_string(hi) +
                      "), but bytes from " + std::to_string(covered) +
                      " on were never written");
}
