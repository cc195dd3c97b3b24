//===- BucketPlan.h - where gradient buckets end, by the cost model -*- C++
//-*-===//
//
// The dynamic program of braid-bucket-gradients auto-bucket-cap, as a pure
// function over the few numbers it needs, so that it is tested alone
// (unittests/BucketPlanTest.cpp). One group of gradients, in the order they
// become ready; a bucket of gradients (i, j] starts when its last gradient
// is ready and the previous bucket is done (one stream serializes a group),
// and takes the all-reduce's time for its bytes; the last bucket adds the
// optimizer work that waits for it. Communication that overlaps compute
// slows it, as the simulator models it (docs/CostModel.md): compute runs
// 1 + a times slower meanwhile, so every bucket delays the gradients after
// it by a / (1 + a) of its time, and communication runs 1 + b times slower.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_COMMON_BUCKETPLAN_H
#define BRAID_COMMON_BUCKETPLAN_H

#include "braid-common/CostModel.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace braid::cost {

struct BucketProblem {
  /// Per gradient, in ready order: when it is ready (seconds from the step's
  /// start, the step alone on one GPU), its bytes, and the seconds of the
  /// optimizer work that waits for it.
  std::vector<double> ready, update;
  std::vector<uint64_t> bytes;
  /// The all-reduce algorithms of the group; a collective takes the fastest.
  std::vector<AffineCost> algorithms;
  /// a and b above (Cluster::computeSlowdownDuringComm,
  /// Cluster::commSlowdownDuringCompute).
  double computeSlowdown = 0, commSlowdown = 0;
};

/// The step end the model predicts when buckets end after gradients
/// `ends` (ascending counts of gradients; the last is the number of
/// gradients).
double evaluateBuckets(const BucketProblem &problem,
                       const std::vector<size_t> &ends);

/// The bucket ends (as for evaluateBuckets) the model prefers: one bucket,
/// or the best of a few dynamic programs over where buckets end, each
/// O(gradients x 256), trading an early start against fewer collectives.
std::vector<size_t> planBuckets(const BucketProblem &problem);

} // namespace braid::cost

#endif // BRAID_COMMON_BUCKETPLAN_H
