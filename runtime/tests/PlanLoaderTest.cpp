//===- PlanLoaderTest.cpp - decoding plan instructions by the op table ----===//
//
// Plans built with the FlatBuffers API, one instruction each, through
// loadPayload: a good instruction decodes into its opcode and typed
// attributes (defaults included), and every way an instruction can be
// malformed (an unknown opcode, an attribute id the op does not have, one
// given twice, a required one missing, a value of the wrong kind, an enum
// value out of range, the wrong operand count) is a PlanError naming it.
//
//===----------------------------------------------------------------------===//

#include "braid-common/PlanFormat.h"
#include "braid-runtime/Plan.h"
#include "plan_generated.h"

#include <gtest/gtest.h>

using namespace braid;
using namespace braid::rt;
namespace fb = flatbuffers;

namespace {

struct AttrSpec {
  uint8_t id;
  std::vector<int64_t> ints;
  std::vector<double> floats;
};

/// A one-rank plan of three [4] f32 buffers (at 0, 64 and `lastOffset`) in
/// an arena of `arena` bytes, and one instruction.
Plan loadOne(uint16_t opcode, std::vector<uint32_t> operands,
             std::vector<uint32_t> results, std::vector<AttrSpec> attrs,
             uint64_t arena = 192, uint64_t lastOffset = 128,
             plan::StreamKind streamKind = plan::StreamKind::Compute,
             uint32_t streamIndex = 0) {
  fb::FlatBufferBuilder b;
  std::vector<fb::Offset<plan::Buffer>> buffers;
  for (int i = 0; i < 3; ++i) {
    std::vector<int64_t> shape = {4};
    buffers.push_back(plan::CreateBuffer(
        b, i == 2 ? lastOffset : 64 * i, 16, plan::DType::F32,
        b.CreateVector(shape), b.CreateString("b" + std::to_string(i))));
  }
  std::vector<fb::Offset<plan::Attr>> attrOffsets;
  for (const AttrSpec &a : attrs)
    attrOffsets.push_back(
        plan::CreateAttr(b, a.id, a.ints.empty() ? 0 : b.CreateVector(a.ints),
                         a.floats.empty() ? 0 : b.CreateVector(a.floats)));
  auto instr = plan::CreateInstr(
      b, opcode, b.CreateVector(operands), b.CreateVector(results),
      b.CreateVector(attrOffsets), -1, -1, -1, b.CreateString("test.mlir:1:1"));
  std::vector<fb::Offset<plan::Instr>> instrs = {instr};
  std::vector<fb::Offset<plan::Stream>> streams = {
      plan::CreateStream(b, streamKind, streamIndex, b.CreateVector(instrs))};
  auto root = plan::CreatePlan(b, b.CreateString("test"), b.CreateString("f"),
                               1, arena, b.CreateVector(buffers), 0,
                               b.CreateVector(streams), 0, 0, 0, 0);
  b.Finish(root, plan::PlanIdentifier());
  return loadPayload(b.GetBufferPointer(), b.GetSize(), plan::kFormatVersion);
}

std::string errorOf(uint16_t opcode, std::vector<uint32_t> operands,
                    std::vector<uint32_t> results, std::vector<AttrSpec> attrs,
                    uint64_t arena = 192, uint64_t lastOffset = 128) {
  try {
    loadOne(opcode, operands, results, attrs, arena, lastOffset);
  } catch (const PlanError &e) {
    return e.what();
  }
  return "";
}

constexpr uint16_t code(Opcode op) { return uint16_t(op); }

TEST(PlanLoaderTest, DecodesTypedAttributes) {
  // scale: factor (id 0), a float.
  Plan p = loadOne(code(Opcode::Scale), {0}, {1}, {{0, {}, {2.5}}});
  const Instr &i = p.streams[0].instrs[0];
  EXPECT_EQ(i.opcode, Opcode::Scale);
  EXPECT_EQ(i.kind, InstrKind::Kernel);
  EXPECT_STREQ(i.name(), "scale");
  EXPECT_DOUBLE_EQ(i.as<ops::ScaleAttrs>().factor, 2.5);
}

TEST(PlanLoaderTest, DefaultsHoldWhenAbsent) {
  // gelu: approximate_tanh (id 0), a flag, absent: false.
  Plan p = loadOne(code(Opcode::Gelu), {0}, {1}, {});
  EXPECT_FALSE(p.streams[0].instrs[0].as<ops::GeluAttrs>().approximate_tanh);
  Plan q = loadOne(code(Opcode::Gelu), {0}, {1}, {{0, {1}, {}}});
  EXPECT_TRUE(q.streams[0].instrs[0].as<ops::GeluAttrs>().approximate_tanh);
}

TEST(PlanLoaderTest, UnknownOpcode) {
  EXPECT_NE(errorOf(999, {0}, {1}, {})
                .find("has opcode 999, which no op of this braid-run has"),
            std::string::npos);
  EXPECT_NE(errorOf(0, {0}, {1}, {}).find("has opcode 0"), std::string::npos);
}

TEST(PlanLoaderTest, AttributeIdOutOfRange) {
  std::string e =
      errorOf(code(Opcode::Scale), {0}, {1}, {{0, {}, {1.0}}, {5, {}, {1.0}}});
  EXPECT_NE(e.find("'scale' at test.mlir:1:1 has attribute id 5, but the op "
                   "has 1 attributes"),
            std::string::npos)
      << e;
}

TEST(PlanLoaderTest, AttributeTwice) {
  std::string e =
      errorOf(code(Opcode::Scale), {0}, {1}, {{0, {}, {1.0}}, {0, {}, {2.0}}});
  EXPECT_NE(e.find("has attribute 'factor' twice"), std::string::npos) << e;
}

TEST(PlanLoaderTest, RequiredAttributeMissing) {
  std::string e = errorOf(code(Opcode::Scale), {0}, {1}, {});
  EXPECT_NE(e.find("has no attribute 'factor'"), std::string::npos) << e;
}

TEST(PlanLoaderTest, WrongKindOfValue) {
  // factor given as an integer.
  std::string e = errorOf(code(Opcode::Scale), {0}, {1}, {{0, {3}, {}}});
  EXPECT_NE(e.find("attribute 'factor' is not one float"), std::string::npos)
      << e;
}

TEST(PlanLoaderTest, EnumOutOfRange) {
  // cross_entropy's reduction (id 0) is mean (0) or sum (1); the loss
  // shapes would not check, but the decoder runs first.
  std::string e =
      errorOf(code(Opcode::CrossEntropy), {0, 1}, {2}, {{0, {7}, {}}});
  EXPECT_NE(e.find("attribute 'reduction' has value 7, not one of its 2 cases"),
            std::string::npos)
      << e;
}

TEST(PlanLoaderTest, OperandCountNamesTheOperands) {
  std::string e = errorOf(code(Opcode::Add), {0}, {1}, {});
  EXPECT_NE(e.find("'add' at test.mlir:1:1: expected 2 operands (lhs, rhs) "
                   "and 1 results (result), got 1 and 1"),
            std::string::npos)
      << e;
}

TEST(PlanLoaderTest, BufferOutsideTheArena) {
  uint16_t scale = code(Opcode::Scale);
  std::vector<AttrSpec> factor = {{0, {}, {2.0}}};
  // [128, 144) fits an arena of 144 bytes exactly, not one of 143.
  EXPECT_EQ(errorOf(scale, {0}, {1}, factor, 144), "");
  std::string e = errorOf(scale, {0}, {1}, factor, 143);
  EXPECT_NE(
      e.find("buffer #2 ('b2') [128, 144) lies outside the arena of 143 bytes"),
      std::string::npos)
      << e;
  // An offset so large that offset + bytes wraps around is outside too.
  e = errorOf(scale, {0}, {1}, factor, 192, UINT64_MAX - 8);
  EXPECT_NE(e.find("lies outside the arena of 192 bytes"), std::string::npos)
      << e;
}

/// The stream rules of #braid.stream hold in plans too: one compute stream
/// (index 0), at most 64 communication streams.
TEST(PlanLoaderTest, StreamsInRange) {
  auto errorOn = [](plan::StreamKind kind, uint32_t index) -> std::string {
    try {
      loadOne(code(Opcode::Scale), {0}, {1}, {{0, {}, {2.0}}}, 192, 128, kind,
              index);
    } catch (const PlanError &e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(errorOn(plan::StreamKind::Comm, 63), "");
  std::string e = errorOn(plan::StreamKind::Compute, 1);
  EXPECT_NE(e.find("a plan has one compute stream, compute 0"),
            std::string::npos)
      << e;
  e = errorOn(plan::StreamKind::Comm, 64);
  EXPECT_NE(e.find("is out of range: at most 64 communication streams"),
            std::string::npos)
      << e;
  e = errorOn(plan::StreamKind::Comm, 4294967295u);
  EXPECT_NE(e.find("is out of range"), std::string::npos) << e;
}

TEST(PlanLoaderTest, EveryOpcodeHasItsTableEntry) {
  for (const ops::OpInfo *info : ops::allOps()) {
    EXPECT_EQ(ops::findOp(uint16_t(info->opcode)), info);
    EXPECT_EQ(&ops::getOpInfo(info->opcode), info);
    if (info->isCollective()) {
      // The other form is a collective of the same kind that points back.
      const ops::OpInfo &other = ops::getOpInfo(info->otherForm);
      EXPECT_EQ(other.collective, info->collective) << info->name;
      EXPECT_EQ(other.otherForm, info->opcode) << info->name;
    }
  }
}

} // namespace
