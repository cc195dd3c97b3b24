//===- BucketPlan.cpp - where gradient buckets end, by the cost model -----===//

#include "braid-common/BucketPlan.h"

#include <algorithm>
#include <cmath>

using namespace braid;
using namespace braid::cost;

namespace {

/// What both the evaluation and the dynamic program read.
struct Model {
  explicit Model(const BucketProblem &p)
      : p(p), m(p.ready.size()), prefix(m + 1, 0),
        slow(p.computeSlowdown / (1 + p.computeSlowdown)),
        stretch(1 + p.commSlowdown) {
    for (size_t k = 0; k < m; ++k)
      prefix[k + 1] = prefix[k] + p.bytes[k];
  }
  /// The all-reduce of gradients (i, j], slowed by the compute it overlaps.
  double seconds(size_t i, size_t j) const {
    double best = INFINITY;
    for (const AffineCost &a : p.algorithms)
      best = std::min(best, a.at(double(prefix[j] - prefix[i])));
    return best * stretch;
  }

  const BucketProblem &p;
  size_t m;
  std::vector<uint64_t> prefix;
  double slow, stretch;
};

} // namespace

double cost::evaluateBuckets(const BucketProblem &problem,
                             const std::vector<size_t> &ends) {
  Model model(problem);
  double commEnd = 0, busy = 0;
  size_t begin = 0;
  for (size_t j : ends) {
    double t = model.seconds(begin, j);
    commEnd = std::max(commEnd, problem.ready[j - 1] + model.slow * busy) + t;
    busy += t;
    if (j == model.m)
      for (size_t k = begin; k < model.m; ++k)
        commEnd += problem.update[k];
    begin = j;
  }
  return commEnd;
}

std::vector<size_t> cost::planBuckets(const BucketProblem &problem) {
  Model model(problem);
  size_t m = model.m;
  if (m == 0)
    return {};
  constexpr size_t window = 256;
  // The optimizer work after gradient i: a small last bucket saves it.
  std::vector<double> updateFrom(m + 1, 0);
  for (size_t k = m; k > 0; --k)
    updateFrom[k - 1] = updateFrom[k] + problem.update[k - 1];
  // The key of a prefix is its buckets' end plus lambda times their busy
  // time, so lambda trades starting early (small buckets) against fewer,
  // cheaper collectives.
  auto partition = [&](double lambda) {
    std::vector<double> done(m + 1, 0), busy(m + 1, 0);
    std::vector<size_t> from(m + 1, 0);
    for (size_t j = 1; j <= m; ++j) {
      double best = INFINITY;
      for (size_t i = j > window ? j - window : 0; i < j; ++i) {
        double t = model.seconds(i, j);
        double end =
            std::max(done[i], problem.ready[j - 1] + model.slow * busy[i]) + t +
            (j == m ? updateFrom[i] : 0);
        double key = end + lambda * (busy[i] + t);
        if (key < best) {
          best = key;
          done[j] = end;
          busy[j] = busy[i] + t;
          from[j] = i;
        }
      }
    }
    std::vector<size_t> ends;
    for (size_t j = m; j > 0; j = from[j])
      ends.push_back(j);
    std::reverse(ends.begin(), ends.end());
    return ends;
  };
  std::vector<size_t> bestEnds = {m};
  double best = evaluateBuckets(problem, bestEnds);
  for (double lambda : {0.0, 0.5, 1.0, 2.0, 4.0}) {
    std::vector<size_t> ends = partition(lambda * model.slow);
    double end = evaluateBuckets(problem, ends);
    if (end < best) {
      best = end;
      bestEnds = ends;
    }
  }
  return bestEnds;
}
