//===- ArenaPackingTest.cpp - the arena packers ---------------------------===//
//
// Both packers on hand-made lifetimes: allocations whose lifetimes meet
// never share a byte (checked pairwise), disjoint lifetimes reuse bytes, and
// the arena is at least the largest live sum and at most the plain sum.
//
//===----------------------------------------------------------------------===//

#include "ArenaPacking.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

using namespace braid;

namespace {

using Packer = uint64_t (*)(llvm::ArrayRef<Lifetime>, llvm::ArrayRef<unsigned>,
                            llvm::MutableArrayRef<uint64_t>);

/// Packs all of `allocations` and checks the result; returns the arena.
uint64_t packAndCheck(Packer pack, const std::vector<Lifetime> &allocations,
                      std::vector<uint64_t> &offsets) {
  std::vector<unsigned> live;
  for (unsigned i = 0; i < allocations.size(); ++i)
    live.push_back(i);
  offsets.assign(allocations.size(), ~uint64_t(0));
  uint64_t arena = pack(allocations, live, offsets);
  uint64_t sum = 0;
  for (size_t i = 0; i < allocations.size(); ++i) {
    const Lifetime &a = allocations[i];
    sum += a.bytes;
    EXPECT_LE(offsets[i] + a.bytes, arena) << "allocation " << i;
    for (size_t j = i + 1; j < allocations.size(); ++j) {
      const Lifetime &b = allocations[j];
      bool meet = a.begin <= b.end && b.begin <= a.end;
      // An empty allocation holds no bytes: it shares none.
      bool share = a.bytes && b.bytes && offsets[i] < offsets[j] + b.bytes &&
                   offsets[j] < offsets[i] + a.bytes;
      EXPECT_FALSE(meet && share) << "allocations " << i << " and " << j;
    }
  }
  EXPECT_LE(arena, sum);
  // At least the most bytes live at one position.
  size_t last = 0;
  for (const Lifetime &a : allocations)
    last = std::max(last, a.end);
  for (size_t at = 0; at <= last; ++at) {
    uint64_t liveBytes = 0;
    for (const Lifetime &a : allocations)
      if (a.begin <= at && at <= a.end)
        liveBytes += a.bytes;
    EXPECT_GE(arena, liveBytes) << "position " << at;
  }
  return arena;
}

class ArenaPackingTest : public ::testing::TestWithParam<Packer> {};

TEST_P(ArenaPackingTest, DisjointLifetimesShareBytes) {
  std::vector<Lifetime> a = {{64, 0, 1}, {64, 2, 3}, {64, 4, 5}};
  std::vector<uint64_t> offsets;
  EXPECT_EQ(packAndCheck(GetParam(), a, offsets), 64u);
}

TEST_P(ArenaPackingTest, OverlappingLifetimesDoNot) {
  std::vector<Lifetime> a = {{64, 0, 5}, {128, 1, 3}, {64, 3, 4}};
  std::vector<uint64_t> offsets;
  EXPECT_EQ(packAndCheck(GetParam(), a, offsets), 256u);
}

TEST_P(ArenaPackingTest, TouchingEndsCount) {
  // Lifetimes are inclusive: [0, 2] and [2, 4] meet at 2.
  std::vector<Lifetime> a = {{64, 0, 2}, {64, 2, 4}};
  std::vector<uint64_t> offsets;
  EXPECT_EQ(packAndCheck(GetParam(), a, offsets), 128u);
}

TEST_P(ArenaPackingTest, FreedRangeIsReused) {
  // The big one dies before the two small ones start: they fit in it.
  std::vector<Lifetime> a = {{256, 0, 1}, {128, 2, 3}, {128, 2, 3}};
  std::vector<uint64_t> offsets;
  EXPECT_EQ(packAndCheck(GetParam(), a, offsets), 256u);
}

TEST_P(ArenaPackingTest, RandomLifetimesAreValid) {
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    std::vector<Lifetime> a;
    for (int i = 0; i < 60; ++i) {
      size_t begin = rng() % 50, length = rng() % 10;
      a.push_back({64 * (1 + rng() % 8), begin, begin + length});
    }
    std::vector<uint64_t> offsets;
    packAndCheck(GetParam(), a, offsets);
  }
}

TEST_P(ArenaPackingTest, EmptyAllocationsAmongOthers) {
  // Empty tensors (0 bytes) freed at the offset of a live range must not
  // disturb the free list: random lifetimes, a third of them empty.
  std::mt19937 rng(11);
  for (int round = 0; round < 20; ++round) {
    std::vector<Lifetime> a;
    for (int i = 0; i < 60; ++i) {
      size_t begin = rng() % 50, length = rng() % 10;
      uint64_t bytes = rng() % 3 == 0 ? 0 : 64 * (1 + rng() % 8);
      a.push_back({bytes, begin, begin + length});
    }
    std::vector<uint64_t> offsets;
    packAndCheck(GetParam(), a, offsets);
  }
}

INSTANTIATE_TEST_SUITE_P(Packers, ArenaPackingTest,
                         ::testing::Values(&packBySweep, &packGreedyBySize));

} // namespace
