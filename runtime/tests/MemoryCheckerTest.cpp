//===- MemoryCheckerTest.cpp - braid-run --check-memory's bookkeeping -----===//
//
// The checker behind `braid-run --check-memory`, driven directly: the plan
// loader refuses every plan whose buffers share bytes while live
// (PlanLifetimes.cpp, plan-lifetimes.test), so no loadable plan shows the
// checker at work; it stays as the run-time cross-check of the loader and of
// braid-plan-memory (the compiler fuzzer runs accepted plans with it).
//
//===----------------------------------------------------------------------===//

#include "braid-runtime/MemoryChecker.h"
#include "braid-runtime/Executor.h"

#include <gtest/gtest.h>

using namespace braid;
using namespace braid::rt;

namespace {

/// Buffers of `bytes` at each of `offsets`, named b0, b1, ...
Plan planOf(std::vector<uint64_t> offsets, uint64_t bytes = 16) {
  Plan plan;
  for (size_t i = 0; i < offsets.size(); ++i) {
    Buffer b;
    b.offset = offsets[i];
    b.bytes = bytes;
    b.shape = {int64_t(bytes / 4)};
    b.name = "b" + std::to_string(i);
    plan.buffers.push_back(b);
  }
  return plan;
}

std::string useError(MemoryChecker &checker, uint32_t id) {
  try {
    checker.use(id, "'add'");
  } catch (const KernelError &e) {
    return e.what();
  }
  return "";
}

TEST(MemoryChecker, ReadAfterItsOwnWriteIsFine) {
  Plan plan = planOf({0, 16});
  MemoryChecker checker(plan);
  checker.define(0);
  checker.define(1);
  EXPECT_EQ(useError(checker, 0), "");
  EXPECT_EQ(useError(checker, 1), "");
}

TEST(MemoryChecker, OverwrittenBytesAreNamed) {
  // b1 lies over the second half of b0: reading b0 after b1 is written
  // names both and the bytes b1 took.
  Plan plan = planOf({0, 8});
  MemoryChecker checker(plan);
  checker.define(0);
  checker.define(1);
  EXPECT_EQ(useError(checker, 0),
            "'add' reads 'b0' [0, 16), but 'b1' has written [8, 16) since: "
            "the memory plan reused those bytes while 'b0' was live");
  EXPECT_EQ(useError(checker, 1), "");
}

TEST(MemoryChecker, ReuseAfterTheLastReadIsFine) {
  Plan plan = planOf({0, 0});
  MemoryChecker checker(plan);
  checker.define(0);
  EXPECT_EQ(useError(checker, 0), "");
  checker.define(1); // b0 is dead: its bytes may be reused.
  EXPECT_EQ(useError(checker, 1), "");
  EXPECT_NE(useError(checker, 0), "");
}

TEST(MemoryChecker, BytesNeverWrittenAreNamed) {
  Plan plan = planOf({0, 32});
  MemoryChecker checker(plan);
  checker.define(0);
  EXPECT_EQ(useError(checker, 1), "'add' reads 'b1' [32, 48), but bytes from "
                                  "32 on were never written");
}

TEST(MemoryChecker, AWriteInsideAnotherSplitsIt) {
  // b1 writes the middle of b0's bytes [0, 48): b0 is overwritten, and
  // rewriting b0 restores it.
  Plan plan = planOf({0, 16}, 48);
  plan.buffers[1].bytes = 16;
  MemoryChecker checker(plan);
  checker.define(0);
  checker.define(1);
  EXPECT_NE(useError(checker, 0), "");
  EXPECT_EQ(useError(checker, 1), "");
  checker.define(0);
  EXPECT_EQ(useError(checker, 0), "");
  EXPECT_NE(useError(checker, 1), "");
}

TEST(MemoryChecker, AViewKeepsItsOperandReadable) {
  // b1 = reshape(b0) at b0's bytes (a view): writing b1 leaves b0 readable;
  // b2 at the same bytes, not a view, overwrites both.
  Plan plan = planOf({0, 0, 0});
  Instr reshape;
  reshape.opcode = Opcode::Reshape;
  reshape.info = &ops::getOpInfo(Opcode::Reshape);
  reshape.operands = {0};
  reshape.results = {1};
  plan.streams.push_back(Stream{});
  plan.streams.back().instrs.push_back(reshape);
  MemoryChecker checker(plan);
  checker.define(0);
  checker.define(1);
  EXPECT_EQ(useError(checker, 0), "");
  EXPECT_EQ(useError(checker, 1), "");
  checker.define(2);
  EXPECT_NE(useError(checker, 0), "");
  EXPECT_NE(useError(checker, 1), "");
}

} // namespace
