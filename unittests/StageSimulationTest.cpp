//===- StageSimulationTest.cpp - programs that meet in transfers ----------===//
//
// StageSimulation without IR: two stages whose transfers match in order
// finish, with blocking and with asynchronous transfers; sends issued
// before the receives on both sides deadlock, and so do an operand that
// waits for a receive behind it, and the issue order of collectives; an op
// in two exchanges (a send-receive) completes only when both have.
//
//===----------------------------------------------------------------------===//

#include "braid/Dialect/Braid/Analysis/StageSimulation.h"

#include <gtest/gtest.h>

using namespace braid;
using Wait = StageSimulation::Wait;

namespace {

constexpr unsigned kCompute = 0, kComm = 1;

TEST(StageSimulationTest, ForwardThenBackwardFinishes) {
  // Stage 0 sends an activation, then receives its gradient; stage 1
  // receives, computes, and sends the gradient back.
  StageSimulation sim;
  unsigned s0 = sim.addProgram(), s1 = sim.addProgram();
  unsigned f0 = sim.addOp(s0, kCompute, {}, false);
  unsigned send = sim.addOp(s0, kCompute, {f0}, true);
  unsigned recvGrad = sim.addOp(s0, kCompute, {}, true);
  sim.addOp(s0, kCompute, {recvGrad}, false);
  unsigned recv = sim.addOp(s1, kCompute, {}, true);
  unsigned f1 = sim.addOp(s1, kCompute, {recv}, false);
  unsigned sendGrad = sim.addOp(s1, kCompute, {f1}, true);
  sim.addExchange({{s0, send}, {s1, recv}});
  sim.addExchange({{s1, sendGrad}, {s0, recvGrad}});
  EXPECT_TRUE(sim.run().empty());
}

TEST(StageSimulationTest, SendsBeforeReceivesOnBothSidesDeadlock) {
  StageSimulation sim;
  unsigned s0 = sim.addProgram(), s1 = sim.addProgram();
  unsigned send0 = sim.addOp(s0, kCompute, {}, true);
  unsigned recv0 = sim.addOp(s0, kCompute, {}, true);
  unsigned send1 = sim.addOp(s1, kCompute, {}, true);
  unsigned recv1 = sim.addOp(s1, kCompute, {}, true);
  sim.addExchange({{s0, send0}, {s1, recv1}});
  sim.addExchange({{s1, send1}, {s0, recv0}});
  auto cycle = sim.run();
  ASSERT_EQ(cycle.size(), 4u);
  // The send of stage 0 waits for stage 1's receive to start, which waits
  // for stage 1's send ahead of it, which waits for stage 0's receive,
  // which waits for stage 0's send.
  EXPECT_EQ(cycle[0].op, (StageSimulation::OpRef{s0, send0}));
  EXPECT_EQ(cycle[0].waits, Wait::Exchange);
  EXPECT_EQ(cycle[1].op, (StageSimulation::OpRef{s1, recv1}));
  EXPECT_EQ(cycle[1].waits, Wait::Stream);
  EXPECT_EQ(cycle[2].op, (StageSimulation::OpRef{s1, send1}));
  EXPECT_EQ(cycle[2].waits, Wait::Exchange);
  EXPECT_EQ(cycle[3].op, (StageSimulation::OpRef{s0, recv0}));
  EXPECT_EQ(cycle[3].waits, Wait::Stream);
}

TEST(StageSimulationTest, TransfersOnOtherStreamsDoNotBlockEachOther) {
  // The same crossed order, but each stage sends on one communication
  // stream and receives on another: both transfers proceed.
  StageSimulation sim;
  unsigned s0 = sim.addProgram(), s1 = sim.addProgram();
  unsigned send0 = sim.addOp(s0, kComm, {}, true);
  unsigned recv0 = sim.addOp(s0, kComm + 1, {}, true);
  unsigned send1 = sim.addOp(s1, kComm, {}, true);
  unsigned recv1 = sim.addOp(s1, kComm + 1, {}, true);
  sim.addExchange({{s0, send0}, {s1, recv1}});
  sim.addExchange({{s1, send1}, {s0, recv0}});
  EXPECT_TRUE(sim.run().empty());
}

TEST(StageSimulationTest, AnOperandBehindAReceiveDeadlocks) {
  // Stage 1 waits for its receive's value on the compute stream before the
  // send that stage 0's receive needs; stage 0 receives before it sends.
  StageSimulation sim;
  unsigned s0 = sim.addProgram(), s1 = sim.addProgram();
  unsigned recv0 = sim.addOp(s0, kComm, {}, true);
  unsigned use0 = sim.addOp(s0, kCompute, {recv0}, false);
  unsigned send0 = sim.addOp(s0, kComm + 1, {use0}, true);
  unsigned recv1 = sim.addOp(s1, kComm, {}, true);
  unsigned use1 = sim.addOp(s1, kCompute, {recv1}, false);
  unsigned send1 = sim.addOp(s1, kComm + 1, {use1}, true);
  sim.addExchange({{s0, send0}, {s1, recv1}});
  sim.addExchange({{s1, send1}, {s0, recv0}});
  auto cycle = sim.run();
  ASSERT_FALSE(cycle.empty());
  bool sawOperand = false;
  for (const auto &link : cycle)
    sawOperand |= link.waits == Wait::Operand;
  EXPECT_TRUE(sawOperand);
}

/// Stage 0 sends, then takes part in two collectives, all on one stream;
/// stage 1 takes part in the collectives on another stream and receives
/// last. With stage 1's ops issued in program order, its receive cannot
/// start before the second collective, which waits behind the first, which
/// waits behind stage 0's send: a cycle through the issue order. Issued in
/// any order, everything completes.
StageSimulation crossedIssue(bool ordered) {
  StageSimulation sim;
  unsigned s0 = sim.addProgram(), s1 = sim.addProgram();
  unsigned send0 = sim.addOp(s0, kComm, {}, ordered);
  unsigned h0 = sim.addOp(s0, kComm, {}, ordered);
  unsigned a0 = sim.addOp(s0, kComm, {}, ordered);
  unsigned h1 = sim.addOp(s1, kComm + 1, {}, ordered);
  unsigned a1 = sim.addOp(s1, kComm + 1, {}, ordered);
  unsigned recv1 = sim.addOp(s1, kComm, {}, ordered);
  sim.addExchange({{s0, send0}, {s1, recv1}});
  sim.addExchange({{s0, h0}, {s1, h1}});
  sim.addExchange({{s0, a0}, {s1, a1}});
  return sim;
}

TEST(StageSimulationTest, CollectivesStartInProgramOrder) {
  auto cycle = crossedIssue(true).run();
  ASSERT_EQ(cycle.size(), 5u);
  EXPECT_EQ(cycle[0].op, (StageSimulation::OpRef{0, 0}));
  EXPECT_EQ(cycle[0].waits, Wait::Exchange);
  EXPECT_EQ(cycle[1].op, (StageSimulation::OpRef{1, 2}));
  EXPECT_EQ(cycle[1].waits, Wait::Order);
  EXPECT_EQ(cycle[2].op, (StageSimulation::OpRef{1, 1}));
  EXPECT_EQ(cycle[2].waits, Wait::Stream);
  EXPECT_EQ(cycle[3].op, (StageSimulation::OpRef{1, 0}));
  EXPECT_EQ(cycle[3].waits, Wait::Exchange);
  EXPECT_EQ(cycle[4].op, (StageSimulation::OpRef{0, 1}));
  EXPECT_EQ(cycle[4].waits, Wait::Stream);
  EXPECT_TRUE(crossedIssue(false).run().empty());
}

TEST(StageSimulationTest, ProgramsWithoutExchangesFinish) {
  StageSimulation sim;
  unsigned p = sim.addProgram();
  unsigned a = sim.addOp(p, kCompute, {}, false);
  sim.addOp(p, kComm, {a}, false);
  sim.addProgram();
  EXPECT_TRUE(sim.run().empty());
}

TEST(StageSimulationTest, SendReceivesPairTheSendsThatDeadlocked) {
  // The order that deadlocks with sends before receives finishes when each
  // stage's send and receive are one op in two exchanges.
  StageSimulation sim;
  unsigned s0 = sim.addProgram(), s1 = sim.addProgram();
  unsigned pair0 = sim.addOp(s0, kCompute, {}, true);
  sim.addOp(s0, kCompute, {pair0}, false);
  unsigned pair1 = sim.addOp(s1, kCompute, {}, true);
  sim.addExchange({{s0, pair0}, {s1, pair1}});
  sim.addExchange({{s1, pair1}, {s0, pair0}});
  EXPECT_TRUE(sim.run().empty());
}

TEST(StageSimulationTest, AnOpInTwoExchangesWaitsForBoth) {
  // Three programs in a ring, each op sending to the next and receiving
  // from the one before: with all three they finish; when program 2
  // reaches its op only after a receive from program 0 that program 0
  // sends after its ring op, program 0's op waits for program 2's (its
  // receive half), though its send half is complete.
  {
    StageSimulation sim;
    unsigned p[3], op[3];
    for (unsigned i = 0; i < 3; ++i) {
      p[i] = sim.addProgram();
      op[i] = sim.addOp(p[i], kComm, {}, true);
    }
    for (unsigned i = 0; i < 3; ++i)
      sim.addExchange({{p[i], op[i]}, {p[(i + 1) % 3], op[(i + 1) % 3]}});
    EXPECT_TRUE(sim.run().empty());
  }
  StageSimulation sim;
  unsigned p0 = sim.addProgram(), p1 = sim.addProgram(), p2 = sim.addProgram();
  unsigned ring0 = sim.addOp(p0, kCompute, {}, true);
  unsigned late0 = sim.addOp(p0, kCompute, {}, true);
  unsigned ring1 = sim.addOp(p1, kCompute, {}, true);
  unsigned early2 = sim.addOp(p2, kCompute, {}, true);
  unsigned ring2 = sim.addOp(p2, kCompute, {}, true);
  sim.addExchange({{p0, ring0}, {p1, ring1}});
  sim.addExchange({{p1, ring1}, {p2, ring2}});
  sim.addExchange({{p2, ring2}, {p0, ring0}});
  sim.addExchange({{p0, late0}, {p2, early2}});
  auto cycle = sim.run();
  ASSERT_EQ(cycle.size(), 4u);
  EXPECT_EQ(cycle[0].op, (StageSimulation::OpRef{p0, ring0}));
  EXPECT_EQ(cycle[0].waits, Wait::Exchange);
  EXPECT_EQ(cycle[1].op, (StageSimulation::OpRef{p2, ring2}));
  EXPECT_EQ(cycle[1].waits, Wait::Stream);
  EXPECT_EQ(cycle[2].op, (StageSimulation::OpRef{p2, early2}));
  EXPECT_EQ(cycle[2].waits, Wait::Exchange);
  EXPECT_EQ(cycle[3].op, (StageSimulation::OpRef{p0, late0}));
  EXPECT_EQ(cycle[3].waits, Wait::Stream);
}

} // namespace
