//===- ArenaPacking.cpp - offsets for buffers with lifetimes --------------===//

#include "ArenaPacking.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <map>
#include <set>

using namespace llvm;
using namespace braid;

/// Greedy by size: the largest allocation first, each at the lowest offset
/// free during its whole lifetime. Sizes are multiples of the alignment, so
/// every offset is aligned. Returns the arena size.
uint64_t braid::packGreedyBySize(ArrayRef<Lifetime> allocations,
                                 ArrayRef<unsigned> live,
                                 MutableArrayRef<uint64_t> offsets) {
  SmallVector<unsigned> order(live);
  llvm::stable_sort(order, [&](unsigned a, unsigned b) {
    return allocations[a].bytes > allocations[b].bytes;
  });
  SmallVector<unsigned> placed;
  uint64_t arenaBytes = 0;
  SmallVector<std::pair<uint64_t, uint64_t>> busy;
  for (unsigned i : order) {
    const Lifetime &a = allocations[i];
    busy.clear();
    for (unsigned j : placed) {
      const Lifetime &b = allocations[j];
      if (b.begin <= a.end && a.begin <= b.end)
        busy.push_back({offsets[j], offsets[j] + b.bytes});
    }
    llvm::sort(busy);
    uint64_t offset = 0;
    for (auto [lo, hi] : busy) {
      if (lo >= offset + a.bytes)
        break;
      offset = std::max(offset, hi);
    }
    offsets[i] = offset;
    arenaBytes = std::max(arenaBytes, offset + a.bytes);
    placed.push_back(i);
  }
  return arenaBytes;
}

/// A sweep in program order: at each allocation's first position, the
/// ranges of allocations that ended before it are free (coalesced), and the
/// allocation takes the smallest free range that fits, or the top of the
/// arena. Returns the arena size.
uint64_t braid::packBySweep(ArrayRef<Lifetime> allocations,
                            ArrayRef<unsigned> live,
                            MutableArrayRef<uint64_t> offsets) {
  SmallVector<unsigned> byBegin(live), byEnd(live);
  llvm::stable_sort(byBegin, [&](unsigned a, unsigned b) {
    const Lifetime &x = allocations[a], &y = allocations[b];
    return x.begin != y.begin ? x.begin < y.begin : x.bytes > y.bytes;
  });
  llvm::stable_sort(byEnd, [&](unsigned a, unsigned b) {
    return allocations[a].end < allocations[b].end;
  });
  std::map<uint64_t, uint64_t> freeByOffset; // offset -> size
  // (size, offset): best fit is the smallest size, then the lowest offset;
  // a range is erased by its key, not by scanning its size's ranges.
  std::set<std::pair<uint64_t, uint64_t>> freeBySize;
  auto eraseFree = [&](std::map<uint64_t, uint64_t>::iterator it) {
    freeBySize.erase({it->second, it->first});
    return freeByOffset.erase(it);
  };
  auto addFree = [&](uint64_t offset, uint64_t size) {
    // An empty buffer frees nothing (and an empty range at the offset of a
    // real one would overwrite its size in freeByOffset, not in freeBySize).
    if (size == 0)
      return;
    // Coalesce with the neighbours.
    auto next = freeByOffset.lower_bound(offset);
    if (next != freeByOffset.end() && offset + size == next->first) {
      size += next->second;
      next = eraseFree(next);
    }
    if (next != freeByOffset.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        offset = prev->first;
        size += prev->second;
        eraseFree(prev);
      }
    }
    freeByOffset[offset] = size;
    freeBySize.insert({size, offset});
  };
  uint64_t top = 0;
  size_t released = 0;
  for (unsigned i : byBegin) {
    const Lifetime &a = allocations[i];
    while (released < byEnd.size() &&
           allocations[byEnd[released]].end < a.begin) {
      unsigned j = byEnd[released++];
      addFree(offsets[j], allocations[j].bytes);
    }
    auto fit = freeBySize.lower_bound({a.bytes, 0});
    if (fit != freeBySize.end()) {
      uint64_t size = fit->first, offset = fit->second;
      eraseFree(freeByOffset.find(offset));
      if (size > a.bytes)
        addFree(offset + a.bytes, size - a.bytes);
      offsets[i] = offset;
      continue;
    }
    // Nothing fits: grow the arena, starting in a free range at its top.
    uint64_t offset = top;
    if (!freeByOffset.empty()) {
      auto last = std::prev(freeByOffset.end());
      if (last->first + last->second == top) {
        offset = last->first;
        eraseFree(last);
      }
    }
    offsets[i] = offset;
    top = offset + a.bytes;
  }
  return top;
}
