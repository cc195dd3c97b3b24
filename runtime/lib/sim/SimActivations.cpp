//===- SimActivations.cpp - the activations a stage program holds --------===//
//
// The memory a pipeline schedule is about (docs/Pipeline.md): the
// activations a stage keeps from a micro-batch's forward for its backward.
// A buffer is one if an instruction of a forward (the plan's action F<k>)
// writes it and one of the same micro-batch's backward or W ("B<k>",
// "W<k>") reads it; it lives from its write to its last such read, at the
// compute stream's positions (a transfer's result from its wait). The peak
// is the largest number of bytes such buffers cover at once (a view and
// its operand covering the same bytes count once), as the memory plan
// places them.
//
//===----------------------------------------------------------------------===//

#include "SimItems.h"

#include <algorithm>
#include <limits>
#include <map>

using namespace braid;
using namespace braid::rt;

namespace {

constexpr size_t kUnset = std::numeric_limits<size_t>::max();
constexpr uint8_t kForward = 1;

struct Life {
  size_t from = kUnset, to = 0;
  int microBatch = -1;
  bool kept = false;
};

/// The bytes the ranges [offset, offset + bytes) cover together.
uint64_t covered(std::vector<std::pair<uint64_t, uint64_t>> ranges) {
  std::sort(ranges.begin(), ranges.end());
  uint64_t total = 0, end = 0;
  for (auto [lo, hi] : ranges) {
    lo = std::max(lo, end);
    if (hi > lo)
      total += hi - lo;
    end = std::max(end, hi);
  }
  return total;
}

} // namespace

uint64_t braid::rt::sim::activationPeakBytes(const Plan &plan) {
  const Stream *compute = nullptr;
  for (const Stream &s : plan.streams)
    if (!s.comm) {
      compute = &s;
      break;
    }
  if (!compute)
    return 0;
  // Where each collective's wait is on the compute stream.
  std::map<int, size_t> waitAt;
  for (size_t j = 0; j < compute->instrs.size(); ++j)
    if (compute->instrs[j].kind == InstrKind::Wait)
      waitAt[compute->instrs[j].future] = j;
  std::vector<Life> lives(plan.buffers.size());
  for (const Stream &s : plan.streams)
    for (size_t j = 0; j < s.instrs.size(); ++j) {
      const Instr &i = s.instrs[j];
      if (i.action != kForward)
        continue;
      size_t at = &s == compute ? j : kUnset;
      if (auto w = waitAt.find(i.future); &s != compute && w != waitAt.end())
        at = w->second;
      if (at == kUnset)
        continue;
      for (uint32_t b : i.results)
        if (b < lives.size() && lives[b].from == kUnset) {
          lives[b].from = at;
          lives[b].microBatch = i.microBatch;
        }
    }
  for (size_t j = 0; j < compute->instrs.size(); ++j) {
    const Instr &i = compute->instrs[j];
    if (i.action <= kForward)
      continue;
    for (uint32_t b : i.operands)
      if (b < lives.size() && lives[b].from != kUnset &&
          lives[b].microBatch == i.microBatch) {
        lives[b].kept = true;
        lives[b].to = std::max(lives[b].to, j);
      }
  }
  // Sweep the positions where the set changes.
  std::map<size_t, std::vector<uint32_t>> starts, ends;
  for (uint32_t b = 0; b < lives.size(); ++b)
    if (lives[b].kept) {
      starts[lives[b].from].push_back(b);
      ends[lives[b].to + 1].push_back(b);
    }
  std::vector<bool> live(lives.size(), false);
  std::vector<size_t> points;
  for (auto &[at, _] : starts)
    points.push_back(at);
  for (auto &[at, _] : ends)
    points.push_back(at);
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  uint64_t peak = 0;
  for (size_t at : points) {
    for (uint32_t b : ends[at])
      live[b] = false;
    for (uint32_t b : starts[at])
      live[b] = true;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (uint32_t b = 0; b < lives.size(); ++b)
      if (live[b])
        ranges.push_back({plan.buffers[b].offset,
                          plan.buffers[b].offset + plan.buffers[b].bytes});
    peak = std::max(peak, covered(std::move(ranges)));
  }
  return peak;
}
