//===- StreamOrderTest.cpp - the vector-clock analysis --------------------===//
//
// StreamOrder on op sequences without IR (ops are addresses): what a stream
// knows after waits, transitively through a third stream, and what it does
// not know.
//
//===----------------------------------------------------------------------===//

#include "braid/Dialect/Braid/Analysis/StreamOrder.h"

#include <gtest/gtest.h>

using namespace braid;

namespace {

TEST(StreamOrderTest, SameStreamIsOrdered) {
  int a, b;
  StreamOrder order;
  order.issue(&a, 0);
  order.issue(&b, 0);
  EXPECT_TRUE(order.isOrderedBefore(&a, 0));
  EXPECT_EQ(order.getStream(&b), 0u);
  EXPECT_LT(order.getPosition(&a), order.getPosition(&b));
}

TEST(StreamOrderTest, OtherStreamNeedsAWait) {
  int produce, consume;
  StreamOrder order;
  order.issue(&produce, 1);
  EXPECT_FALSE(order.isOrderedBefore(&produce, 0));
  EXPECT_TRUE(order.waitFor(0, &produce));
  EXPECT_TRUE(order.isOrderedBefore(&produce, 0));
  order.issue(&consume, 0);
  EXPECT_TRUE(order.isOrderedBefore(&consume, 0));
}

TEST(StreamOrderTest, AWaitCoversWhatCameBeforeOnlyOnThatStream) {
  int early, marker, late;
  StreamOrder order;
  order.issue(&early, 1);
  order.issue(&marker, 1);
  order.issue(&late, 1);
  order.waitFor(0, &marker);
  EXPECT_TRUE(order.isOrderedBefore(&early, 0));
  EXPECT_TRUE(order.isOrderedBefore(&marker, 0));
  EXPECT_FALSE(order.isOrderedBefore(&late, 0));
}

TEST(StreamOrderTest, KnowledgeIsTransitive) {
  // Stream 2 produces, stream 1 waits for it and records, stream 0 waits
  // for stream 1's record: stream 0 knows stream 2's op.
  int produce, record;
  StreamOrder order;
  order.issue(&produce, 2);
  order.waitFor(1, &produce);
  order.issue(&record, 1);
  EXPECT_FALSE(order.isOrderedBefore(&produce, 0));
  order.waitFor(0, &record);
  EXPECT_TRUE(order.isOrderedBefore(&produce, 0));
  EXPECT_TRUE(order.isOrderedBefore(&record, 0));
}

TEST(StreamOrderTest, WaitingBeforeTheRecordTeachesNothingLater) {
  int first, second;
  StreamOrder order;
  order.issue(&first, 1);
  order.waitFor(0, &first);
  order.issue(&second, 1);
  EXPECT_FALSE(order.isOrderedBefore(&second, 0));
}

TEST(StreamOrderTest, UnknownOps) {
  int never;
  StreamOrder order;
  EXPECT_FALSE(order.waitFor(0, &never));
  EXPECT_FALSE(order.isOrderedBefore(&never, 0));
  EXPECT_FALSE(order.getStream(&never).has_value());
  EXPECT_EQ(order.getPosition(&never), 0u);
}

} // namespace
