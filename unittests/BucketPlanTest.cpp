//===- BucketPlanTest.cpp - the bucket dynamic program --------------------===//
//
// planBuckets and evaluateBuckets against cases whose answer follows from
// the arithmetic: latency-bound collectives want one bucket, bandwidth-bound
// ones on a long backward want many, and the evaluation is the formula.
//
//===----------------------------------------------------------------------===//

#include "braid-common/BucketPlan.h"

#include <gtest/gtest.h>

using namespace braid::cost;

namespace {

/// `n` gradients of `bytes` each, ready every `gap` seconds, on a collective
/// of `latency` + bytes * `perByte`, no contention, no optimizer work.
BucketProblem uniform(size_t n, uint64_t bytes, double gap, double latency,
                      double perByte) {
  BucketProblem p;
  for (size_t k = 0; k < n; ++k) {
    p.ready.push_back(gap * double(k + 1));
    p.update.push_back(0);
    p.bytes.push_back(bytes);
  }
  p.algorithms = {{latency, perByte}};
  return p;
}

TEST(BucketPlanTest, EvaluateIsTheFormula) {
  // Two buckets of two gradients: the first starts at 2 (ready) and takes
  // 1 + 2 * 0.5 = 2, ending at 4; the second is ready at 4, starts at 4,
  // ends at 6.
  BucketProblem p = uniform(4, 1, 1.0, 1.0, 0.5);
  EXPECT_DOUBLE_EQ(evaluateBuckets(p, {2, 4}), 6.0);
  // One bucket: ready at 4, 1 + 4 * 0.5 = 3 -> 7.
  EXPECT_DOUBLE_EQ(evaluateBuckets(p, {4}), 7.0);
}

TEST(BucketPlanTest, OptimizerWorkWaitsForTheLastBucket) {
  BucketProblem p = uniform(2, 1, 1.0, 1.0, 0.0);
  p.update = {0.25, 0.5};
  // One bucket ready at 2, takes 1, then both updates: 3.75.
  EXPECT_DOUBLE_EQ(evaluateBuckets(p, {2}), 3.75);
  // Two buckets: the first ends at 2, the second starts at 2, ends at 3,
  // then the second's update (only the last bucket's work waits).
  EXPECT_DOUBLE_EQ(evaluateBuckets(p, {1, 2}), 3.5);
}

TEST(BucketPlanTest, ContentionStretchesAndDelays) {
  BucketProblem p = uniform(2, 1, 1.0, 1.0, 0.0);
  p.commSlowdown = 1.0;    // collectives take twice as long
  p.computeSlowdown = 1.0; // and delay later gradients by half their time
  // First: ready 1, takes 2 -> 3. Second: ready 2 + 0.5 * 2 = 3, takes 2 -> 5.
  EXPECT_DOUBLE_EQ(evaluateBuckets(p, {1, 2}), 5.0);
}

TEST(BucketPlanTest, LatencyBoundWantsOneBucket) {
  // Everything is ready at once and each collective costs its latency:
  // any split only adds latencies.
  BucketProblem p = uniform(16, 1024, 0.0, 1e-3, 1e-12);
  EXPECT_EQ(planBuckets(p), std::vector<size_t>({16}));
}

TEST(BucketPlanTest, LongBackwardWantsEarlyBuckets) {
  // Gradients every 1 ms, each taking 0.9 ms to reduce with a tiny latency:
  // reducing each as it comes hides all but the last; one bucket exposes
  // everything.
  BucketProblem p = uniform(8, 1 << 20, 1e-3, 1e-6, 0.9e-3 / (1 << 20));
  std::vector<size_t> ends = planBuckets(p);
  EXPECT_GT(ends.size(), 1u);
  EXPECT_EQ(ends.back(), 8u);
  EXPECT_LT(evaluateBuckets(p, ends), evaluateBuckets(p, {8}));
  // No worse than reducing each gradient alone.
  std::vector<size_t> each = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_LE(evaluateBuckets(p, ends), evaluateBuckets(p, each) + 1e-15);
}

TEST(BucketPlanTest, EndsAreAscendingAndCoverEveryGradient) {
  BucketProblem p = uniform(300, 4096, 1e-5, 2e-5, 1e-9);
  p.computeSlowdown = 0.2;
  std::vector<size_t> ends = planBuckets(p);
  ASSERT_FALSE(ends.empty());
  EXPECT_EQ(ends.back(), 300u);
  for (size_t i = 1; i < ends.size(); ++i)
    EXPECT_LT(ends[i - 1], ends[i]);
}

TEST(BucketPlanTest, NoGradientsNoBuckets) {
  EXPECT_TRUE(planBuckets(BucketProblem()).empty());
}

} // namespace
