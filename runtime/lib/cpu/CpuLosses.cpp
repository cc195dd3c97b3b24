//===- CpuLosses.cpp - the losses on the cpu -----------------------------===//
//
// Negative log-likelihood and cross-entropy over [N, C] rows, their
// backward, and the vocabulary-parallel cross-entropy's three parts: each
// shard's per-row summary (largest logit, sum of exponentials, the label's
// logit), the loss combined from every shard's summaries, and each shard's
// gradient. Sums run in double; a label equal to `ignore_index` counts in
// neither the total nor the mean's divisor.
//
//===----------------------------------------------------------------------===//

#include "CpuArgs.h"

#include <algorithm>
#include <cmath>
#include <optional>

using namespace braid;
using namespace braid::rt;

namespace {

/// A loss's total over `counted` rows: the mean divides by them (NaN when
/// there are none, as torch's mean over no targets), the sum does not.
float reduceLoss(double total, int64_t counted, bool mean) {
  if (!mean)
    return float(total);
  return counted ? float(total / double(counted)) : NAN;
}

/// The rows of a loss (labels at operand `i`) whose label is not ignored.
int64_t countedRows(const Args &a, size_t i, int64_t rows,
                    std::optional<int64_t> ignore) {
  int64_t n = 0;
  for (int64_t r = 0; r < rows; ++r)
    n += a.ignored(i, r, ignore) ? 0 : 1;
  return n;
}

void loss(const Args &a, bool fromLogits, bool mean,
          std::optional<int64_t> ignore) {
  const Buffer &xb = a.inBuf(0);
  int64_t rows = xb.shape[0], classes = xb.shape[1];
  const float *x = a.in(0);
  double total = 0;
  int64_t counted = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (a.ignored(1, r, ignore))
      continue;
    ++counted;
    int64_t label = a.index(1, r, classes, "label");
    const float *row = x + r * classes;
    double logp = row[label];
    if (fromLogits) {
      float mx = *std::max_element(row, row + classes);
      double sum = 0;
      for (int64_t c = 0; c < classes; ++c)
        sum += std::exp(double(row[c]) - mx);
      logp = row[label] - mx - std::log(sum);
    }
    total -= logp;
  }
  a.out(0)[0] = reduceLoss(total, counted, mean);
}

void lossBackward(const Args &a, bool fromLogits, bool mean,
                  std::optional<int64_t> ignore) {
  const Buffer &xb = a.inBuf(1);
  int64_t rows = xb.shape[0], classes = xb.shape[1];
  int64_t counted = countedRows(a, 2, rows, ignore);
  double scale = a.in(0)[0] / (mean && counted ? double(counted) : 1.0);
  const float *x = a.in(1);
  float *dx = a.out(0);
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = x + r * classes;
    float *drow = dx + r * classes;
    if (a.ignored(2, r, ignore)) {
      std::fill(drow, drow + classes, 0.0f);
      continue;
    }
    int64_t label = a.index(2, r, classes, "label");
    if (fromLogits) {
      float mx = *std::max_element(row, row + classes);
      double sum = 0;
      for (int64_t c = 0; c < classes; ++c)
        sum += std::exp(double(row[c]) - mx);
      for (int64_t c = 0; c < classes; ++c)
        drow[c] = float(scale * (std::exp(double(row[c]) - mx) / sum -
                                 (c == label ? 1.0 : 0.0)));
    } else {
      std::fill(drow, drow + classes, 0.0f);
      drow[label] = float(-scale);
    }
  }
}

/// A row's summary over one shard of the classes: its largest logit, the
/// sum of exp(logit - that), and the label's logit if the shard has it.
void crossEntropyShardStats(const Args &a, int64_t parts,
                            std::optional<int64_t> ignore) {
  const Buffer &xb = a.inBuf(0);
  int64_t rows = xb.shape[0], classes = xb.shape[1];
  int64_t first = a.rankIndex(2, parts) * classes;
  const float *x = a.in(0);
  float *stats = a.out(0);
  for (int64_t r = 0; r < rows; ++r) {
    if (a.ignored(1, r, ignore)) {
      // An ignored row's summary: (0, 0, 0), which the loss skips.
      std::fill(stats + 3 * r, stats + 3 * r + 3, 0.0f);
      continue;
    }
    int64_t label = a.index(1, r, parts * classes, "label") - first;
    const float *row = x + r * classes;
    float mx = classes ? *std::max_element(row, row + classes) : -INFINITY;
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c)
      sum += std::exp(double(row[c]) - mx);
    stats[3 * r] = mx;
    stats[3 * r + 1] = float(sum);
    stats[3 * r + 2] = label >= 0 && label < classes ? row[label] : 0.0f;
  }
}

/// Every shard's summaries [P, N, 3] combined for row `r`: the largest
/// logit M, the sum S of exp(logit - M), and the label's logit T.
struct RowStats {
  double max, sum, target;
};
RowStats combineStats(const Buffer &b, const float *stats, int64_t r) {
  int64_t parts = b.shape[0], rows = b.shape[1];
  double mx = -INFINITY;
  for (int64_t p = 0; p < parts; ++p)
    mx = std::max(mx, double(stats[3 * (p * rows + r)]));
  RowStats out{mx, 0, 0};
  for (int64_t p = 0; p < parts; ++p) {
    const float *s = stats + 3 * (p * rows + r);
    out.sum += double(s[1]) * std::exp(double(s[0]) - mx);
    out.target += s[2];
  }
  return out;
}

void crossEntropyShardLoss(const Args &a, bool mean) {
  const Buffer &sb = a.inBuf(0);
  int64_t rows = sb.shape[1];
  double total = 0;
  int64_t counted = 0;
  for (int64_t r = 0; r < rows; ++r) {
    RowStats s = combineStats(sb, a.in(0), r);
    if (s.sum == 0) // every shard's summary (0, 0, 0): an ignored label
      continue;
    ++counted;
    total += std::log(s.sum) + s.max - s.target;
  }
  a.out(0)[0] = reduceLoss(total, counted, mean);
}

void crossEntropyShardBackward(const Args &a, bool mean,
                               std::optional<int64_t> ignore) {
  const Buffer &xb = a.inBuf(1), &sb = a.inBuf(3);
  int64_t rows = xb.shape[0], classes = xb.shape[1];
  int64_t first = a.rankIndex(4, sb.shape[0]) * classes;
  int64_t counted = countedRows(a, 2, rows, ignore);
  double scale = a.in(0)[0] / (mean && counted ? double(counted) : 1.0);
  const float *x = a.in(1);
  float *dx = a.out(0);
  for (int64_t r = 0; r < rows; ++r) {
    if (a.ignored(2, r, ignore)) {
      std::fill(dx + r * classes, dx + (r + 1) * classes, 0.0f);
      continue;
    }
    int64_t label = a.index(2, r, sb.shape[0] * classes, "label") - first;
    RowStats s = combineStats(sb, a.in(3), r);
    for (int64_t c = 0; c < classes; ++c)
      dx[r * classes + c] =
          float(scale * (std::exp(double(x[r * classes + c]) - s.max) / s.sum -
                         (c == label ? 1.0 : 0.0)));
  }
}

bool isMean(ops::LossReduction r) { return r == ops::LossReduction::Mean; }

} // namespace

void braid::rt::runCpuLossKernel(const Args &a) {
  const Instr &instr = a.instr;
  switch (instr.opcode) {
  case Opcode::NllLoss: {
    const auto &attrs = instr.as<ops::NllLossAttrs>();
    return loss(a, false, isMean(attrs.reduction), attrs.ignore_index);
  }
  case Opcode::CrossEntropy: {
    const auto &attrs = instr.as<ops::CrossEntropyAttrs>();
    return loss(a, true, isMean(attrs.reduction), attrs.ignore_index);
  }
  case Opcode::NllLossBackward: {
    const auto &attrs = instr.as<ops::NllLossBackwardAttrs>();
    return lossBackward(a, false, isMean(attrs.reduction), attrs.ignore_index);
  }
  case Opcode::CrossEntropyBackward: {
    const auto &attrs = instr.as<ops::CrossEntropyBackwardAttrs>();
    return lossBackward(a, true, isMean(attrs.reduction), attrs.ignore_index);
  }
  case Opcode::CrossEntropyShardStats: {
    const auto &attrs = instr.as<ops::CrossEntropyShardStatsAttrs>();
    return crossEntropyShardStats(a, attrs.parts, attrs.ignore_index);
  }
  case Opcode::CrossEntropyShardLoss:
    return crossEntropyShardLoss(
        a, isMean(instr.as<ops::CrossEntropyShardLossAttrs>().reduction));
  case Opcode::CrossEntropyShardBackward: {
    const auto &attrs = instr.as<ops::CrossEntropyShardBackwardAttrs>();
    return crossEntropyShardBackward(a, isMean(attrs.reduction),
                                     attrs.ignore_index);
  }
    // The cpu_loss table's ops (the ODS's kernelTables) are the cases
    // above; a new one does not compile until it has its case.
    BRAID_CASE_NOT_CPU_LOSS_OPCODES
    break;
  }
  throw KernelError(instr.describe() + ": not a loss kernel");
}
