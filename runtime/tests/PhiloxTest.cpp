//===- PhiloxTest.cpp - braid.dropout_mask's generator -----------*- C++
//-*-===//
//
// Philox4x32-10 against the known-answer vectors of its authors' Random123
// library (kat_vectors), and the dropout draw's kept fraction and its
// independence of the stream, step and rank.
//
//===----------------------------------------------------------------------===//

#include "braid-common/Philox.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace braid;

namespace {

void expectPhilox(Philox4x32 counter, uint32_t k0, uint32_t k1,
                  Philox4x32 expected) {
  Philox4x32 got = philox4x32_10(counter, k0, k1);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(got.v[i], expected.v[i]) << "word " << i;
}

/// The kept count of n elements at probability `keep`.
int64_t kept(uint32_t seed, uint32_t rank, uint32_t step, uint32_t stream,
             int64_t n, double keep) {
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i)
    count += dropoutKeeps(seed, rank, step, stream, uint64_t(i), keep);
  return count;
}

} // namespace

TEST(PhiloxTest, KnownAnswers) {
  expectPhilox({{0, 0, 0, 0}}, 0, 0,
               {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}});
  expectPhilox({{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}}, 0xffffffff,
               0xffffffff, {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}});
  expectPhilox({{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}}, 0xa4093822,
               0x299f31d0, {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}});
}

TEST(PhiloxTest, KeptFractionIsTheProbability) {
  // A binomial count: within 5 standard deviations of n * keep.
  const int64_t n = 1 << 20;
  for (double keep : {0.1, 0.5, 0.9}) {
    double sigma = std::sqrt(n * keep * (1 - keep));
    EXPECT_NEAR(double(kept(7, 0, 3, 1, n, keep)), n * keep, 5 * sigma)
        << "keep " << keep;
  }
  EXPECT_EQ(kept(7, 0, 3, 1, 4096, 0.0), 0);
  EXPECT_EQ(kept(7, 0, 3, 1, 4096, 1.0), 4096);
}

TEST(PhiloxTest, MasksDifferByStepStreamAndRank) {
  // Two masks of one probability agree on keep^2 + (1 - keep)^2 of the
  // elements when independent (0.5 at keep 0.5), on all of them when equal.
  const int64_t n = 1 << 16;
  auto agreement = [&](uint32_t rank, uint32_t step, uint32_t stream) {
    int64_t same = 0;
    for (int64_t i = 0; i < n; ++i)
      same += dropoutKeeps(1, 0, 0, 0, uint64_t(i), 0.5) ==
              dropoutKeeps(1, rank, step, stream, uint64_t(i), 0.5);
    return double(same) / n;
  };
  EXPECT_EQ(agreement(0, 0, 0), 1.0);
  for (auto [rank, step, stream] :
       {std::tuple<uint32_t, uint32_t, uint32_t>{1, 0, 0},
        {0, 1, 0},
        {0, 0, 1}})
    EXPECT_NEAR(agreement(rank, step, stream), 0.5, 0.02)
        << rank << " " << step << " " << stream;
}
