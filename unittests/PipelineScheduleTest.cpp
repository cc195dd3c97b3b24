//===- PipelineScheduleTest.cpp - the order of a stage's micro-batches ----===//
//
// The schedules' action lists: every micro-batch's forward and backward once,
// forward first, each kind in micro-batch order; GPipe holds all m
// micro-batches on every stage, 1F1B at most p - i on stage i (Narayanan et
// al. 2021), and its last stage alternates from the start.
//
//===----------------------------------------------------------------------===//

#include "braid/Dialect/Braid/Analysis/PipelineSchedule.h"

#include <gtest/gtest.h>

using namespace braid;

namespace {

using A = PipelineAction;

void expectComplete(llvm::ArrayRef<A> actions, unsigned m) {
  ASSERT_EQ(actions.size(), 2 * m);
  unsigned nextF = 0, nextB = 0;
  for (const A &a : actions) {
    if (a.kind == A::Forward) {
      EXPECT_EQ(a.microBatch, nextF++);
    } else {
      EXPECT_EQ(a.microBatch, nextB++);
      EXPECT_LT(a.microBatch, nextF) << "a backward before its forward";
    }
  }
  EXPECT_EQ(nextF, m);
  EXPECT_EQ(nextB, m);
}

TEST(PipelineScheduleTest, Names) {
  EXPECT_EQ(parsePipelineSchedule("gpipe"), PipelineScheduleKind::GPipe);
  EXPECT_EQ(parsePipelineSchedule("1f1b"),
            PipelineScheduleKind::OneForwardOneBackward);
  EXPECT_EQ(parsePipelineSchedule("1F1B"), std::nullopt);
  EXPECT_EQ(parsePipelineSchedule(""), std::nullopt);
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

} // namespace
