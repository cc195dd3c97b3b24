//===- ArenaPacking.h - offsets for buffers with lifetimes ------*- C++ -*-===//
//
// The two packings braid-plan-memory tries, as pure functions over sizes and
// lifetimes (tested alone in unittests/ArenaPackingTest.cpp): give each
// allocation an offset so that two allocations whose lifetimes meet never
// share a byte, and return the arena size.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_DIALECT_BRAID_TRANSFORMS_ARENAPACKING_H
#define BRAID_LIB_DIALECT_BRAID_TRANSFORMS_ARENAPACKING_H

#include "llvm/ADT/ArrayRef.h"

#include <cstddef>
#include <cstdint>

namespace braid {

/// An allocation: its bytes (a multiple of the alignment, so that every
/// offset is aligned) and the first and last program-order positions
/// (inclusive) at which any stream may touch them.
struct Lifetime {
  uint64_t bytes = 0;
  size_t begin = 0, end = 0;
};

/// Up to how many allocations greedy-by-size packing is tried (O(n^2)).
constexpr size_t kGreedyLimit = 4096;

/// Greedy by size: the largest allocation first, each at the lowest offset
/// free during its whole lifetime. `live` lists the allocations to place;
/// `offsets[i]` receives allocation i's offset.
uint64_t packGreedyBySize(llvm::ArrayRef<Lifetime> allocations,
                          llvm::ArrayRef<unsigned> live,
                          llvm::MutableArrayRef<uint64_t> offsets);

/// A sweep in program order: at each allocation's first position, the
/// ranges of allocations that ended before it are free (coalesced), and the
/// allocation takes the smallest free range that fits (the lowest such), or
/// the top of the arena. O(n log n).
uint64_t packBySweep(llvm::ArrayRef<Lifetime> allocations,
                     llvm::ArrayRef<unsigned> live,
                     llvm::MutableArrayRef<uint64_t> offsets);

} // namespace braid

#endif // BRAID_LIB_DIALECT_BRAID_TRANSFORMS_ARENAPACKING_H
