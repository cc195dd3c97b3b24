//===- PipelineScheduleTest.cpp - the order of a stage's micro-batches ----===//
//
// The schedules' action lists: every micro-batch's forward and backward once,
// forward first, each kind in micro-batch order; GPipe holds all m
// micro-batches on every stage, 1F1B at most p - i on stage i (Narayanan et
// al. 2021), and its last stage alternates from the start; ZB-H1 runs each
// W after its B and holds p on every stage. Played on uniform stages by a
// list scheduler (each stage runs its actions in order, each as soon as
// its inputs are there), the schedules' step times are the formulas':
// m (F + B + W) plus a bubble of (p - 1)(F + B + W) for GPipe and 1F1B and
// (p - 1)(F + B - W) for ZB-H1 (Qi et al. 2024) when m >= p. The
// interleaved schedule runs each micro-batch's forward and backward once per
// chunk, in Megatron-LM's order, holds at most 2 (p - r - 1) + (v - 1) p + 1
// chunk-micro-batches on rank r, and its bubble is 1F1B's over v.
//
//===----------------------------------------------------------------------===//

#include "braid/Dialect/Braid/Analysis/PipelineSchedule.h"

#include <gtest/gtest.h>

#include <map>
#include <tuple>

using namespace braid;

namespace {

using A = PipelineAction;

void expectComplete(llvm::ArrayRef<A> actions, unsigned m, bool split = false) {
  ASSERT_EQ(actions.size(), (split ? 3 : 2) * m);
  unsigned nextF = 0, nextB = 0, nextW = 0;
  for (const A &a : actions) {
    if (a.kind == A::Forward) {
      EXPECT_EQ(a.microBatch, nextF++);
    } else if (a.kind == A::Backward) {
      EXPECT_EQ(a.microBatch, nextB++);
      EXPECT_LT(a.microBatch, nextF) << "a backward before its forward";
    } else {
      EXPECT_TRUE(split) << "a W in a schedule that does not split";
      EXPECT_EQ(a.microBatch, nextW++);
      EXPECT_LT(a.microBatch, nextB) << "a W before its B";
    }
  }
  EXPECT_EQ(nextF, m);
  EXPECT_EQ(nextB, m);
  EXPECT_EQ(nextW, split ? m : 0);
}

/// The step time of `kind` on p uniform stages: each stage runs its actions
/// in order, each once its inputs are there (a forward after the previous
/// stage's, a backward after its forward and the next stage's backward, a
/// W after its B), transfers taking no time. Without a split the backward
/// takes b + w. Under the interleaved schedule, rank r runs virtual stages
/// c p + r of p v, each chunk's actions taking f, b.
double stepTime(PipelineScheduleKind kind, unsigned p, unsigned m, double f,
                double b, double w, unsigned v = 1) {
  if (!splitsBackward(kind))
    b += w;
  std::vector<llvm::SmallVector<A>> actions;
  for (unsigned i = 0; i < p; ++i)
    actions.push_back(pipelineActions(kind, p, i, m, v));
  std::map<std::tuple<int, unsigned, unsigned>, double> done;
  std::vector<size_t> next(p, 0);
  std::vector<double> clock(p, 0);
  unsigned last = p * v - 1;
  bool progress = true;
  while (progress) {
    progress = false;
    for (unsigned i = 0; i < p; ++i) {
      if (next[i] == actions[i].size())
        continue;
      A a = actions[i][next[i]];
      unsigned s = a.chunk * p + i;
      llvm::SmallVector<std::tuple<int, unsigned, unsigned>> deps;
      if (a.kind == A::Forward && s > 0)
        deps.push_back({A::Forward, s - 1, a.microBatch});
      if (a.kind == A::Backward) {
        deps.push_back({A::Forward, s, a.microBatch});
        if (s < last)
          deps.push_back({A::Backward, s + 1, a.microBatch});
      }
      if (a.kind == A::Weight)
        deps.push_back({A::Backward, s, a.microBatch});
      double start = clock[i];
      bool ready = true;
      for (auto &d : deps) {
        auto it = done.find(d);
        ready &= it != done.end();
        if (it != done.end())
          start = std::max(start, it->second);
      }
      if (!ready)
        continue;
      clock[i] = start + (a.kind == A::Forward    ? f
                          : a.kind == A::Backward ? b
                                                  : w);
      done[{a.kind, s, a.microBatch}] = clock[i];
      ++next[i];
      progress = true;
    }
  }
  for (unsigned i = 0; i < p; ++i)
    EXPECT_EQ(next[i], actions[i].size())
        << "p=" << p << " v=" << v << " m=" << m << ": stage " << i
        << " waits forever";
  return *std::max_element(clock.begin(), clock.end());
}

TEST(PipelineScheduleTest, Names) {
  EXPECT_EQ(symbolizePipelineScheduleKind("gpipe"),
            PipelineScheduleKind::GPipe);
  EXPECT_EQ(symbolizePipelineScheduleKind("1f1b"),
            PipelineScheduleKind::OneForwardOneBackward);
  EXPECT_EQ(symbolizePipelineScheduleKind("zb-h1"),
            PipelineScheduleKind::ZeroBubbleH1);
  EXPECT_EQ(symbolizePipelineScheduleKind("interleaved"),
            PipelineScheduleKind::Interleaved);
  EXPECT_FALSE(splitsBackward(PipelineScheduleKind::Interleaved));
  EXPECT_EQ(symbolizePipelineScheduleKind("1F1B"), std::nullopt);
  EXPECT_FALSE(splitsBackward(PipelineScheduleKind::OneForwardOneBackward));
  EXPECT_TRUE(splitsBackward(PipelineScheduleKind::ZeroBubbleH1));
  EXPECT_EQ(symbolizePipelineScheduleKind(""), std::nullopt);
  // Messages list the names in ODS order.
  EXPECT_EQ(pipelineScheduleNames(), "gpipe, 1f1b, zb-h1, interleaved");
}

TEST(PipelineScheduleTest, GPipeHoldsEveryMicroBatch) {
  for (unsigned p : {1u, 2u, 4u, 8u})
    for (unsigned m : {1u, 3u, 8u})
      for (unsigned i = 0; i < p; ++i) {
        auto actions = pipelineActions(PipelineScheduleKind::GPipe, p, i, m);
        expectComplete(actions, m);
        EXPECT_EQ(peakInFlight(actions), m);
        for (unsigned k = 0; k < m; ++k)
          EXPECT_EQ(actions[k], (A{A::Forward, k}));
      }
}

TEST(PipelineScheduleTest, OneForwardOneBackwardHoldsPMinusI) {
  for (unsigned p : {1u, 2u, 4u, 8u})
    for (unsigned m : {1u, 2u, 4u, 8u, 16u})
      for (unsigned i = 0; i < p; ++i) {
        auto actions = pipelineActions(
            PipelineScheduleKind::OneForwardOneBackward, p, i, m);
        expectComplete(actions, m);
        EXPECT_EQ(peakInFlight(actions), std::min(p - i, m))
            << "p=" << p << " m=" << m << " stage " << i;
      }
}

TEST(PipelineScheduleTest, OneForwardOneBackwardOrder) {
  // Stage 0 of 3 with 4 micro-batches: two warm-up forwards, then F B in
  // turn, then the last two backwards; the last stage alternates at once.
  auto first =
      pipelineActions(PipelineScheduleKind::OneForwardOneBackward, 3, 0, 4);
  llvm::SmallVector<A> want{{A::Forward, 0},  {A::Forward, 1}, {A::Forward, 2},
                            {A::Backward, 0}, {A::Forward, 3}, {A::Backward, 1},
                            {A::Backward, 2}, {A::Backward, 3}};
  EXPECT_EQ(first, want);
  auto last =
      pipelineActions(PipelineScheduleKind::OneForwardOneBackward, 3, 2, 4);
  for (unsigned k = 0; k < 4; ++k) {
    EXPECT_EQ(last[2 * k], (A{A::Forward, k}));
    EXPECT_EQ(last[2 * k + 1], (A{A::Backward, k}));
  }
}

TEST(PipelineScheduleTest, ZeroBubbleH1HoldsP) {
  for (unsigned p : {1u, 2u, 4u, 8u})
    for (unsigned m : {1u, 2u, 3u, 8u, 16u})
      for (unsigned i = 0; i < p; ++i) {
        auto actions =
            pipelineActions(PipelineScheduleKind::ZeroBubbleH1, p, i, m);
        expectComplete(actions, m, /*split=*/true);
        EXPECT_EQ(peakInFlight(actions), std::min(p, m))
            << "p=" << p << " m=" << m << " stage " << i;
      }
}

TEST(PipelineScheduleTest, ZeroBubbleH1Order) {
  // Its F and B are 1F1B's; stage i runs micro-batch k's W right after the
  // B of k + i, and the last i W at the end.
  for (unsigned i = 0; i < 3; ++i) {
    auto split = pipelineActions(PipelineScheduleKind::ZeroBubbleH1, 3, i, 4);
    auto plain =
        pipelineActions(PipelineScheduleKind::OneForwardOneBackward, 3, i, 4);
    llvm::SmallVector<A> withoutW;
    for (const A &a : split)
      if (a.kind != A::Weight)
        withoutW.push_back(a);
    EXPECT_EQ(withoutW, plain);
    for (size_t j = 0; j < split.size(); ++j) {
      if (split[j].kind != A::Weight)
        continue;
      unsigned k = split[j].microBatch;
      if (k + i < 4)
        EXPECT_EQ(split[j - 1], (A{A::Backward, k + i})) << "stage " << i;
      else
        EXPECT_GE(j, split.size() - i) << "stage " << i;
    }
  }
}

TEST(PipelineScheduleTest, StepTimesFollowTheFormulas) {
  for (unsigned p : {2u, 4u, 8u})
    for (unsigned m : {4u, 8u, 16u, 32u}) {
      if (m < p)
        continue;
      // Uniform, and B longer than W as in a layer whose input gradient
      // has more to do than its weights'.
      for (auto [f, b, w] : {std::tuple{1.0, 1.0, 1.0}, {1.0, 1.25, 0.75}}) {
        double full = m * (f + b + w);
        for (auto kind : {PipelineScheduleKind::GPipe,
                          PipelineScheduleKind::OneForwardOneBackward})
          EXPECT_DOUBLE_EQ(stepTime(kind, p, m, f, b, w),
                           full + (p - 1) * (f + b + w))
              << "p=" << p << " m=" << m;
        EXPECT_DOUBLE_EQ(
            stepTime(PipelineScheduleKind::ZeroBubbleH1, p, m, f, b, w),
            full + (p - 1) * (f + b - w))
            << "p=" << p << " m=" << m;
      }
    }
}

TEST(PipelineScheduleTest, InterleavedRunsEveryChunk) {
  for (unsigned p : {2u, 4u, 8u})
    for (unsigned v : {1u, 2u, 3u, 4u})
      for (unsigned m : {p, 2 * p, 4 * p})
        for (unsigned r = 0; r < p; ++r) {
          auto actions =
              pipelineActions(PipelineScheduleKind::Interleaved, p, r, m, v);
          // Per chunk, the forwards and backwards of every micro-batch in
          // order, each backward after its forward.
          for (unsigned c = 0; c < v; ++c) {
            llvm::SmallVector<A> mine;
            for (A a : actions)
              if (a.chunk == c) {
                a.chunk = 0;
                mine.push_back(a);
              }
            expectComplete(mine, m);
          }
          ASSERT_EQ(actions.size(), 2 * m * v);
          unsigned warmup =
              m == p ? m * v : std::min(2 * (p - r - 1) + (v - 1) * p, m * v);
          EXPECT_EQ(peakInFlight(actions), std::min(warmup + 1, m * v))
              << "p=" << p << " v=" << v << " m=" << m << " rank " << r;
        }
}

TEST(PipelineScheduleTest, InterleavedOrder) {
  // Rank 0 of 2 with 2 chunks and 4 micro-batches (Megatron-LM's order):
  // forwards in groups of p = 2 micro-batches through chunk 0, then chunk
  // 1; backwards through chunk 1, then 0; 2 (p - 1) + (v - 1) p = 4 warm-up
  // forwards.
  auto first = pipelineActions(PipelineScheduleKind::Interleaved, 2, 0, 4, 2);
  llvm::SmallVector<A> want{
      {A::Forward, 0, 0},  {A::Forward, 1, 0},  {A::Forward, 0, 1},
      {A::Forward, 1, 1},  {A::Forward, 2, 0},  {A::Backward, 0, 1},
      {A::Forward, 3, 0},  {A::Backward, 1, 1}, {A::Forward, 2, 1},
      {A::Backward, 0, 0}, {A::Forward, 3, 1},  {A::Backward, 1, 0},
      {A::Backward, 2, 1}, {A::Backward, 3, 1}, {A::Backward, 2, 0},
      {A::Backward, 3, 0}};
  EXPECT_EQ(first, want);
}

TEST(PipelineScheduleTest, InterleavedBubbleIsOneFOneBsOverV) {
  // Each chunk a 1/v of the stage: f = F / v, b = B / v; the step is
  // m (F + B) + (p - 1)(F + B) / v.
  for (unsigned p : {2u, 4u, 8u})
    for (unsigned v : {1u, 2u, 4u})
      for (unsigned m : {p, 2 * p, 4 * p, 8u, 16u, 32u}) {
        if (m % p || m < p)
          continue;
        for (auto [f, b] : {std::pair{1.0, 2.0}, {1.0, 1.0}}) {
          double fc = f / v, bc = b / v;
          EXPECT_DOUBLE_EQ(
              stepTime(PipelineScheduleKind::Interleaved, p, m, fc, bc, 0, v),
              m * (f + b) + (p - 1) * (f + b) / v)
              << "p=" << p << " v=" << v << " m=" << m;
        }
      }
}

} // namespace
