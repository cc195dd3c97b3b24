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
             uint32_t streamIndex = 0,
             plan::ActionKind action = plan::ActionKind::None,
             int32_t microBatch = -1) {
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
      b.CreateVector(attrOffsets), -1, -1, -1, b.CreateString("test.mlir:1:1"),
      0, 0, 0, 0, 0, 0, 0, action, microBatch);
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

struct BufferSpec {
  uint64_t offset;
  std::vector<int64_t> shape; // f32
};
struct BindingSpec {
  plan::Role role;
  std::string name;
  uint32_t buffer;
  int32_t splitDim = -1;
  std::vector<int64_t> splitBlocks = {};
  int32_t dpSplitDim = -1;
};
/// A plan's tensor-parallel axis and grid, its world size, and its ZeRO
/// axis and grid.
struct TpSpec {
  int32_t axis = -1;
  std::vector<int64_t> grid = {};
  uint32_t world = 1;
  int32_t dpAxis = -1;
  std::vector<int64_t> dpGrid = {};
};

/// The error of loading a one-rank plan of f32 `buffers` (in an arena of
/// `arena` bytes) with one instruction on the compute stream (on group 0,
/// a one-rank world, for a collective) and the given bindings; "" if it
/// loads.
std::string errorOfPlan(std::vector<BufferSpec> buffers, uint64_t arena,
                        uint16_t opcode, std::vector<uint32_t> operands,
                        std::vector<uint32_t> results,
                        std::vector<AttrSpec> attrs,
                        std::vector<BindingSpec> arguments = {},
                        std::vector<BindingSpec> resultBindings = {},
                        TpSpec tp = {}) {
  fb::FlatBufferBuilder b;
  std::vector<fb::Offset<plan::Buffer>> bufs;
  for (size_t i = 0; i < buffers.size(); ++i) {
    int64_t n = 1;
    for (int64_t d : buffers[i].shape)
      n *= d;
    bufs.push_back(plan::CreateBuffer(b, buffers[i].offset, uint64_t(4 * n),
                                      plan::DType::F32,
                                      b.CreateVector(buffers[i].shape),
                                      b.CreateString("b" + std::to_string(i))));
  }
  std::vector<fb::Offset<plan::Attr>> attrOffsets;
  for (const AttrSpec &a : attrs)
    attrOffsets.push_back(
        plan::CreateAttr(b, a.id, a.ints.empty() ? 0 : b.CreateVector(a.ints),
                         a.floats.empty() ? 0 : b.CreateVector(a.floats)));
  const ops::OpInfo *info = ops::findOp(opcode);
  bool collective = info && info->isCollective();
  std::vector<int64_t> gridShape = {1}, axes = {0};
  std::vector<fb::Offset<plan::Group>> groups;
  if (collective)
    groups.push_back(plan::CreateGroup(b, b.CreateString("world"),
                                       b.CreateVector(gridShape),
                                       b.CreateVector(axes)));
  auto instr = plan::CreateInstr(
      b, opcode, b.CreateVector(operands), b.CreateVector(results),
      b.CreateVector(attrOffsets), collective ? 0 : -1, -1, -1,
      b.CreateString("test.mlir:1:1"));
  std::vector<fb::Offset<plan::Instr>> instrs = {instr};
  std::vector<fb::Offset<plan::Stream>> streams = {plan::CreateStream(
      b, plan::StreamKind::Compute, 0, b.CreateVector(instrs))};
  auto bindings = [&](const std::vector<BindingSpec> &specs) {
    std::vector<fb::Offset<plan::Binding>> out;
    for (const BindingSpec &s : specs)
      out.push_back(plan::CreateBinding(
          b, s.role, b.CreateString(s.name), s.buffer, s.splitDim,
          b.CreateVector(s.splitBlocks), /*step_count=*/false, s.dpSplitDim));
    return b.CreateVector(out);
  };
  auto args = bindings(arguments);
  auto res = bindings(resultBindings);
  auto root = plan::CreatePlan(
      b, b.CreateString("test"), b.CreateString("f"), tp.world, arena,
      b.CreateVector(bufs), b.CreateVector(groups), b.CreateVector(streams), 0,
      0, args, res, 0, 0, tp.axis, b.CreateVector(tp.grid), /*stages=*/0,
      /*program_of_rank=*/0, /*pipeline_axis=*/-1, /*pipeline_grid=*/0,
      /*stage=*/-1, /*evaluation=*/0, tp.dpAxis, b.CreateVector(tp.dpGrid));
  b.Finish(root, plan::PlanIdentifier());
  try {
    loadPayload(b.GetBufferPointer(), b.GetSize(), plan::kFormatVersion);
  } catch (const PlanError &e) {
    return e.what();
  }
  return "";
}

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

TEST(PlanLoaderTest, PipelineActions) {
  // braid-pipeline's label of the action an op belongs to travels with it;
  // a kind without a micro-batch, a micro-batch without a kind, or a kind
  // the schema lacks is refused.
  Plan p = loadOne(code(Opcode::Gelu), {0}, {1}, {}, 192, 128,
                   plan::StreamKind::Compute, 0, plan::ActionKind::Weight, 4);
  EXPECT_EQ(p.streams[0].instrs[0].actionLabel(), "W4");
  Plan q = loadOne(code(Opcode::Gelu), {0}, {1}, {});
  EXPECT_EQ(q.streams[0].instrs[0].actionLabel(), "");
  auto error = [](plan::ActionKind kind, int32_t microBatch) {
    try {
      loadOne(code(Opcode::Gelu), {0}, {1}, {}, 192, 128,
              plan::StreamKind::Compute, 0, kind, microBatch);
    } catch (const PlanError &e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error(plan::ActionKind::Backward, -1)
                .find("has action 2 of micro-batch -1, which is no action of "
                      "a pipeline schedule"),
            std::string::npos);
  EXPECT_NE(
      error(plan::ActionKind::None, 3).find("has action 0 of micro-batch 3"),
      std::string::npos);
  EXPECT_NE(error(plan::ActionKind(9), 0).find("has action 9"),
            std::string::npos);
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

TEST(PlanLoaderTest, UnaryBackwardOnlyForItsKinds) {
  // unary_backward's kind (id 0): tanh (4), sigmoid and silu have a form;
  // exp (0) has none, and a plan that asks for it is refused.
  Plan p = loadOne(code(Opcode::UnaryBackward), {0, 1}, {2}, {{0, {4}, {}}});
  EXPECT_EQ(p.streams[0].instrs[0].as<ops::UnaryBackwardAttrs>().kind,
            ops::UnaryKind::Tanh);
  std::string e =
      errorOf(code(Opcode::UnaryBackward), {0, 1}, {2}, {{0, {0}, {}}});
  EXPECT_NE(e.find("unary_backward has no form for 'exp' (only tanh, sigmoid "
                   "and silu)"),
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
  e = errorOf(scale, {0}, {1}, factor, 192, UINT64_MAX - 15);
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

TEST(PlanLoaderTest, BufferMisalignedForItsType) {
  std::vector<AttrSpec> factor = {{0, {}, {2.0}}};
  std::string e = errorOf(code(Opcode::Scale), {0}, {1}, factor, 192, 130);
  EXPECT_NE(e.find("buffer #2 ('b2') at offset 130 is not aligned for its f32 "
                   "elements (4 bytes)"),
            std::string::npos)
      << e;
}

TEST(PlanLoaderTest, CarriedResultMatchesItsArgument) {
  std::vector<AttrSpec> factor = {{0, {}, {2.0}}};
  // w [4] carried from a result of [2]: the copy after the step would read
  // past the result.
  std::vector<BufferSpec> buffers = {{0, {4}}, {64, {2}}};
  std::string e = errorOfPlan(buffers, 128, code(Opcode::Scale), {0}, {1},
                              factor, {{plan::Role::Parameter, "w", 0}},
                              {{plan::Role::Parameter, "w", 1}});
  EXPECT_NE(e.find("result 'w' carries to the next step into its argument, "
                   "but holds 8 bytes of f32 where the argument holds 16"),
            std::string::npos)
      << e;
  EXPECT_EQ(errorOfPlan({{0, {4}}, {64, {4}}}, 128, code(Opcode::Scale), {0},
                        {1}, factor, {{plan::Role::Parameter, "w", 0}},
                        {{plan::Role::Parameter, "w", 1}}),
            "");
}

TEST(PlanLoaderTest, ABufferHoldsOneValue) {
  // PlanLifetimes.cpp: an instruction may not write an argument's buffer
  // (the step would change its own input).
  std::vector<AttrSpec> factor = {{0, {}, {2.0}}};
  std::vector<BufferSpec> buffers = {{0, {4}}, {64, {4}}};
  std::string e = errorOfPlan(buffers, 128, code(Opcode::Scale), {1}, {0},
                              factor, {{plan::Role::Batch, "x", 0}});
  EXPECT_NE(e.find("'scale' at test.mlir:1:1 writes 'b0' [0, 16), which holds "
                   "an argument of the step"),
            std::string::npos)
      << e;
}

TEST(PlanLoaderTest, HyperparameterIsAScalarArgument) {
  std::vector<AttrSpec> factor = {{0, {}, {2.0}}};
  // A scalar f32 argument loads; a [4] one, or a result, does not.
  std::vector<BufferSpec> buffers = {{0, {4}}, {64, {4}}, {128, {}}};
  EXPECT_EQ(errorOfPlan(buffers, 192, code(Opcode::Scale), {0}, {1}, factor,
                        {{plan::Role::Hyperparameter, "lr", 2}}),
            "");
  std::string e = errorOfPlan(buffers, 192, code(Opcode::Scale), {0}, {1},
                              factor, {{plan::Role::Hyperparameter, "lr", 0}});
  EXPECT_NE(e.find("hyperparameter argument 'lr' must be a scalar f32, but is "
                   "f32 of rank 1"),
            std::string::npos)
      << e;
  e = errorOfPlan(buffers, 192, code(Opcode::Scale), {0}, {1}, factor, {},
                  {{plan::Role::Hyperparameter, "lr", 2}});
  EXPECT_NE(e.find("result 'lr' has role hyperparameter, which is only for "
                   "arguments"),
            std::string::npos)
      << e;
}

TEST(PlanLoaderTest, UpdateTakesItsLearningRateOnce) {
  // sgd (lr, momentum, weight_decay = attributes 0, 1, 2): a constant lr
  // and three operands, or no lr attribute and a fourth, scalar operand;
  // either with one more scalar, the gradient scale.
  std::vector<BufferSpec> buffers = {{0, {4}},  {64, {4}},  {128, {4}},
                                     {192, {}}, {256, {4}}, {320, {4}}};
  std::vector<AttrSpec> constant = {
      {0, {}, {0.1}}, {1, {}, {0.9}}, {2, {}, {0.0}}};
  std::vector<AttrSpec> scheduled = {{1, {}, {0.9}}, {2, {}, {0.0}}};
  uint16_t sgd = code(Opcode::Sgd);
  EXPECT_EQ(errorOfPlan(buffers, 384, sgd, {0, 1, 2}, {4, 5}, constant), "");
  EXPECT_EQ(errorOfPlan(buffers, 384, sgd, {0, 1, 2, 3}, {4, 5}, constant), "");
  EXPECT_EQ(errorOfPlan(buffers, 384, sgd, {0, 1, 2, 3}, {4, 5}, scheduled),
            "");
  EXPECT_EQ(errorOfPlan(buffers, 384, sgd, {0, 1, 2, 3, 3}, {4, 5}, scheduled),
            "");
  std::string e =
      errorOfPlan(buffers, 384, sgd, {0, 1, 2, 3, 3}, {4, 5}, constant);
  EXPECT_NE(e.find("expected 3 operands (a constant lr), or one more for a "
                   "gradient scale, got 5"),
            std::string::npos)
      << e;
  e = errorOfPlan(buffers, 384, sgd, {0, 1, 2}, {4, 5}, scheduled);
  EXPECT_NE(e.find("expected 4 operands (a scheduled lr operand last, no lr "
                   "attribute), or one more for a gradient scale, got 3"),
            std::string::npos)
      << e;
  e = errorOfPlan(buffers, 384, sgd, {0, 1, 2, 1}, {4, 5}, scheduled);
  EXPECT_NE(e.find("'b1' is [4] f32, expected shape []"), std::string::npos)
      << e;
}

TEST(PlanLoaderTest, CollectiveOperandAndResultOverlapInPart) {
  // all_reduce (reduction sum = 0): in place is fine, disjoint is fine, a
  // result 8 bytes into its operand is not.
  uint16_t allReduce = code(Opcode::AllReduce);
  std::vector<AttrSpec> sum = {{0, {0}, {}}};
  EXPECT_EQ(errorOfPlan({{0, {4}}, {0, {4}}}, 64, allReduce, {0}, {1}, sum),
            "");
  EXPECT_EQ(errorOfPlan({{0, {4}}, {64, {4}}}, 128, allReduce, {0}, {1}, sum),
            "");
  std::string e =
      errorOfPlan({{0, {4}}, {8, {4}}}, 64, allReduce, {0}, {1}, sum);
  EXPECT_NE(e.find("reads [0, 16) and writes [8, 24): they overlap in part"),
            std::string::npos)
      << e;
}

TEST(PlanLoaderTest, TensorParallelBindings) {
  // relu b0 -> b1 on 2 tensor-parallel ranks: an argument split along
  // dimension 1 of its [2, 4] piece, with and without blocks.
  uint16_t relu = code(Opcode::Relu);
  std::vector<BufferSpec> bufs = {{0, {2, 4}}, {32, {2, 4}}};
  TpSpec tp{1, {1, 2}, 2};
  auto arg = [](int32_t dim, std::vector<int64_t> blocks) {
    return std::vector<BindingSpec>{
        {plan::Role::Parameter, "w", 0, dim, blocks}};
  };
  EXPECT_EQ(errorOfPlan(bufs, 64, relu, {0}, {1}, {}, arg(1, {}), {}, tp), "");
  EXPECT_EQ(
      errorOfPlan(bufs, 64, relu, {0}, {1}, {}, arg(1, {4, 2, 2}), {}, tp), "");
  struct Case {
    std::vector<BindingSpec> args;
    TpSpec tp;
    const char *error;
  } cases[] = {
      {arg(1, {}),
       {},
       "argument 'w' is split, but the plan is not "
       "tensor-parallel"},
      {arg(2, {}), tp,
       "argument 'w' is split along dimension 2, but its "
       "buffer has 2 dimensions"},
      {arg(1, {3, 5}), tp,
       "argument 'w' has a block of 3, which does not "
       "divide into 2 tensor-parallel pieces"},
      {arg(1, {4, 2}), tp,
       "argument 'w''s blocks make pieces of 3 along "
       "dimension 1, but its buffer has 4"},
      {arg(1, {}),
       {1, {2, 2}, 2},
       "the tensor-parallel axis 1 of a grid of 2 "
       "axes spanning 4 ranks does not fit a plan "
       "for 2 ranks"},
      {arg(1, {}),
       {0, {0}, 2},
       "the tensor-parallel grid has a bad dimension "
       "0"},
      {arg(1, {}),
       {-3, {}, 1},
       "the tensor-parallel axis is -3 (-1 or an "
       "axis)"},
  };
  for (const Case &c : cases) {
    std::string e = errorOfPlan(bufs, 64, relu, {0}, {1}, {}, c.args, {}, c.tp);
    EXPECT_NE(e.find(c.error), std::string::npos) << e;
  }
  // The updated value must be split as its argument is.
  std::string e = errorOfPlan(bufs, 64, relu, {0}, {1}, {}, arg(1, {}),
                              {{plan::Role::Parameter, "w", 1, 0, {}}}, tp);
  EXPECT_NE(e.find("result 'w' carries to the next step into its argument, "
                   "but is split unlike it"),
            std::string::npos)
      << e;
}

TEST(PlanLoaderTest, DataParallelBindings) {
  // relu b0 -> b1 on 2 data-parallel ranks (ZeRO): an optimizer-state
  // argument that holds its rank's rows, carried from the result b1.
  uint16_t relu = code(Opcode::Relu);
  std::vector<BufferSpec> bufs = {{0, {2, 4}}, {32, {2, 4}}};
  TpSpec dp{-1, {}, 2, 0, {2}};
  auto state = [](int32_t dim, uint32_t buffer = 0) {
    return std::vector<BindingSpec>{
        {plan::Role::OptimizerState, "w.m", buffer, -1, {}, dim}};
  };
  EXPECT_EQ(
      errorOfPlan(bufs, 64, relu, {0}, {1}, {}, state(0), state(0, 1), dp), "");
  struct Case {
    std::vector<BindingSpec> args, results;
    TpSpec dp;
    const char *error;
  } cases[] = {
      {state(0),
       {},
       {},
       "argument 'w.m' is a data-parallel piece, but the plan shards nothing "
       "over a data-parallel axis"},
      {state(2),
       {},
       dp,
       "argument 'w.m' is a data-parallel piece along dimension 2, but its "
       "buffer has 2 dimensions"},
      {{{plan::Role::Parameter, "w", 0, -1, {}, 0}},
       {},
       dp,
       "argument 'w' is a data-parallel piece, but only optimizer state is "
       "sharded so"},
      {state(0),
       {},
       {-1, {}, 2, 0, {4}},
       "the data-parallel axis 0 of a grid of 1 axes spanning 4 ranks does "
       "not fit a plan for 2 ranks"},
      {state(0),
       {},
       {-1, {}, 2, -2, {}},
       "the data-parallel axis is -2 (-1 or an axis)"},
      {state(0), state(1, 1), dp,
       "result 'w.m' carries to the next step into its argument, but is "
       "split unlike it"},
  };
  for (const Case &c : cases) {
    std::string e =
        errorOfPlan(bufs, 64, relu, {0}, {1}, {}, c.args, c.results, c.dp);
    EXPECT_NE(e.find(c.error), std::string::npos) << e;
  }
}

TEST(PlanLoaderTest, PiecesOfBlocks) {
  // A [2, 6] global value in blocks [4, 2] along dimension 1 over 2 ranks:
  // rank 0 holds columns 0, 1 and 4; rank 1 columns 2, 3 and 5.
  std::vector<int32_t> global = {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15};
  std::vector<std::vector<int32_t>> want = {{0, 1, 4, 10, 11, 14},
                                            {2, 3, 5, 12, 13, 15}};
  std::vector<int32_t> back(global.size(), -1);
  for (int64_t r = 0; r < 2; ++r) {
    std::vector<int32_t> piece(6, -1);
    copyPiece(reinterpret_cast<const uint8_t *>(global.data()),
              reinterpret_cast<uint8_t *>(piece.data()), {2, 6}, 4, 1, {4, 2},
              2, r, /*toPiece=*/true);
    EXPECT_EQ(piece, want[size_t(r)]) << "rank " << r;
    copyPiece(reinterpret_cast<const uint8_t *>(piece.data()),
              reinterpret_cast<uint8_t *>(back.data()), {2, 6}, 4, 1, {4, 2}, 2,
              r, /*toPiece=*/false);
  }
  EXPECT_EQ(back, global);
  // Split along dimension 0 without blocks: rows.
  std::vector<int32_t> rows(6, -1);
  copyPiece(reinterpret_cast<const uint8_t *>(global.data()),
            reinterpret_cast<uint8_t *>(rows.data()), {2, 6}, 4, 0, {}, 2, 1,
            /*toPiece=*/true);
  EXPECT_EQ(rows, std::vector<int32_t>({10, 11, 12, 13, 14, 15}));
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

// The folded forms braid-fuse-kernels writes, which the kernels index by:
// matmul permutations, softmax's causal mask, gelu's bias.
TEST(PlanLoaderTest, MatmulPermutationsKeepAUnitStride) {
  // matmul: transpose_a (0), transpose_b (1), lhs_permutation (2),
  // rhs_permutation (3), result_permutation (4). [2, 3, 4] x [2, 4, 5].
  std::vector<BufferSpec> bufs = {
      {0, {3, 2, 4}}, {256, {2, 4, 5}}, {512, {2, 3, 5}}};
  uint16_t mm = code(Opcode::Matmul);
  EXPECT_EQ(errorOfPlan(bufs, 1024, mm, {0, 1}, {2}, {{2, {1, 0, 2}, {}}}), "");
  std::string e =
      errorOfPlan(bufs, 1024, mm, {0, 1}, {2}, {{2, {1, 1, 2}, {}}});
  EXPECT_NE(e.find("lhs_permutation [1x1x2] is not a permutation of 3 "
                   "dimensions"),
            std::string::npos)
      << e;
  // The operand's last dimension (of unit stride) first: no matrix of unit
  // stride.
  std::vector<BufferSpec> moved = {
      {0, {4, 2, 3}}, {256, {2, 4, 5}}, {512, {2, 3, 5}}};
  e = errorOfPlan(moved, 1024, mm, {0, 1}, {2}, {{2, {2, 1, 0}, {}}});
  EXPECT_NE(e.find("lhs_permutation [2x1x0] must put the last dimension at one "
                   "of the last two places"),
            std::string::npos)
      << e;
  // The product [2, 3, 5] stored as [5, 3, 2]: its batch dimension last.
  std::vector<BufferSpec> stored = {
      {0, {2, 3, 4}}, {256, {2, 4, 5}}, {512, {5, 3, 2}}};
  e = errorOfPlan(stored, 1024, mm, {0, 1}, {2}, {{4, {2, 1, 0}, {}}});
  EXPECT_NE(e.find("result_permutation [2x1x0] must store one of the product's "
                   "last two dimensions last"),
            std::string::npos)
      << e;
  // Stored as [2, 5, 3] (its rows of unit stride) is taken.
  std::vector<BufferSpec> swapped = {
      {0, {2, 3, 4}}, {256, {2, 4, 5}}, {512, {2, 5, 3}}};
  EXPECT_EQ(errorOfPlan(swapped, 1024, mm, {0, 1}, {2}, {{4, {0, 2, 1}, {}}}),
            "");
}

TEST(PlanLoaderTest, BiasCoversTheLastDimensions) {
  // bias_add: a bias of the input's last dimensions, [3, 4] or [4] of
  // [2, 3, 4]; another shape or a rank past the input's is refused.
  uint16_t op = code(Opcode::BiasAdd);
  auto bufs = [](std::vector<int64_t> bias) {
    return std::vector<BufferSpec>{
        {0, {2, 3, 4}}, {128, bias}, {256, {2, 3, 4}}};
  };
  EXPECT_EQ(errorOfPlan(bufs({3, 4}), 512, op, {0, 1}, {2}, {}), "");
  EXPECT_EQ(errorOfPlan(bufs({4}), 512, op, {0, 1}, {2}, {}), "");
  std::string e = errorOfPlan(bufs({2, 4}), 512, op, {0, 1}, {2}, {});
  EXPECT_NE(e.find("'b1' is [2x4] f32, expected shape [3x4]"),
            std::string::npos)
      << e;
  e = errorOfPlan(bufs({1, 2, 3, 4}), 512, op, {0, 1}, {2}, {});
  EXPECT_NE(e.find("the bias must have rank 1 to 3 (the input's)"),
            std::string::npos)
      << e;
}

TEST(PlanLoaderTest, MatmulSlicesAreBatchRanges) {
  // matmul: ..., lhs_slice (5), rhs_slice (6). Entries 1..2 of the 4 of
  // dimension 0 of [4, 3, 2], times a shared [2, 5]: [2, 3, 5].
  std::vector<BufferSpec> bufs = {
      {0, {4, 3, 2}}, {256, {2, 5}}, {512, {2, 3, 5}}};
  uint16_t mm = code(Opcode::Matmul);
  EXPECT_EQ(errorOfPlan(bufs, 1024, mm, {0, 1}, {2}, {{5, {0, 1, 2}, {}}}), "");
  std::string e =
      errorOfPlan(bufs, 1024, mm, {0, 1}, {2}, {{5, {0, 3, 2}, {}}});
  EXPECT_NE(e.find("lhs_slice [0x3x2] is not a range of a dimension of "
                   "[4x3x2]"),
            std::string::npos)
      << e;
  e = errorOfPlan(bufs, 1024, mm, {0, 1}, {2}, {{5, {0, 1}, {}}});
  EXPECT_NE(e.find("lhs_slice [0x1] is not [dim, offset, size]"),
            std::string::npos)
      << e;
  // A matrix dimension (the rows, 1) cannot be sliced.
  std::vector<BufferSpec> rows = {
      {0, {4, 3, 2}}, {256, {2, 5}}, {512, {4, 2, 5}}};
  e = errorOfPlan(rows, 1024, mm, {0, 1}, {2}, {{5, {1, 0, 2}, {}}});
  EXPECT_NE(e.find("lhs_slice [1x0x2] slices a dimension the product reads "
                   "as a matrix dimension"),
            std::string::npos)
      << e;
  // The result's shape follows the slice.
  e = errorOfPlan(rows, 1024, mm, {0, 1}, {2}, {{5, {0, 1, 2}, {}}});
  EXPECT_NE(e.find("shape"), std::string::npos) << e;
}

TEST(PlanLoaderTest, SoftmaxFoldedCausalMaskIsSquare) {
  // softmax: dim (0), safe (1), scale (2), causal (3).
  uint16_t sm = code(Opcode::Softmax);
  std::vector<BufferSpec> square = {{0, {2, 4, 4}}, {128, {2, 4, 4}}};
  EXPECT_EQ(errorOfPlan(square, 256, sm, {0}, {1},
                        {{0, {2}, {}}, {2, {}, {0.5}}, {3, {1}, {}}}),
            "");
  std::vector<BufferSpec> wide = {{0, {2, 4, 8}}, {256, {2, 4, 8}}};
  std::string e =
      errorOfPlan(wide, 512, sm, {0}, {1}, {{0, {2}, {}}, {3, {1}, {}}});
  EXPECT_NE(e.find("causal needs dim to be the last dimension and the last two "
                   "dimensions to be equal"),
            std::string::npos)
      << e;
  e = errorOfPlan(square, 256, sm, {0}, {1}, {{0, {1}, {}}, {3, {1}, {}}});
  EXPECT_NE(e.find("causal needs dim to be the last dimension"),
            std::string::npos)
      << e;
}

TEST(PlanLoaderTest, GeluBiasSpansTheLastDimension) {
  uint16_t gelu = code(Opcode::Gelu);
  std::vector<BufferSpec> bufs = {{0, {2, 8}}, {64, {8}}, {128, {2, 8}}};
  EXPECT_EQ(errorOfPlan(bufs, 256, gelu, {0, 1}, {2}, {}), "");
  std::vector<BufferSpec> short_ = {{0, {2, 8}}, {64, {2}}, {128, {2, 8}}};
  std::string e = errorOfPlan(short_, 256, gelu, {0, 1}, {2}, {});
  EXPECT_NE(e.find("'b1' is [2] f32, expected shape [8]"), std::string::npos)
      << e;
  e = errorOfPlan(bufs, 256, code(Opcode::GeluBackward), {0, 1, 2, 1}, {2}, {});
  EXPECT_NE(e.find("expected 2 operands, or 3 with a bias, got 4"),
            std::string::npos)
      << e;
}

namespace {

/// A pipelined plan (format 5): `stages` stage programs, each an empty
/// compute stream on `world` ranks of `grid` with pipeline axis `axis`, and
/// the program of each rank. The knobs break one fact each.
struct PipelineSpec {
  uint32_t world = 4;
  std::vector<int64_t> grid = {2, 2};
  int32_t axis = 1;
  int stages = 2;
  std::vector<uint32_t> programOfRank = {0, 1, 0, 1};
  /// Stage program `badStage` says it is stage `badIndex`, or runs on
  /// another grid (`otherGrid`), or holds a stage of its own (`nested`).
  int badStage = -1, badIndex = -1;
  bool otherGrid = false, nested = false;
  /// The root has a stream of its own.
  bool rootStream = false;
  /// Per stage program, its point-to-point transfers on the pipeline axis
  /// in order (each moves an f32 buffer of its own).
  struct Transfer {
    bool send;
    int64_t peer;
    std::vector<int64_t> shape = {4};
  };
  std::vector<std::vector<Transfer>> transfers;
};

Plan loadPipeline(const PipelineSpec &spec) {
  fb::FlatBufferBuilder b;
  auto emptyStreams = [&] {
    std::vector<fb::Offset<plan::Instr>> none;
    std::vector<fb::Offset<plan::Stream>> streams = {plan::CreateStream(
        b, plan::StreamKind::Compute, 0, b.CreateVector(none))};
    return b.CreateVector(streams);
  };
  auto stagePlan = [&](int32_t index, bool otherGrid,
                       fb::Offset<fb::Vector<fb::Offset<plan::Plan>>> inner) {
    std::vector<int64_t> grid =
        otherGrid ? std::vector<int64_t>{4, 1} : spec.grid;
    if (size_t(index) >= spec.transfers.size() ||
        spec.transfers[size_t(index)].empty())
      return plan::CreatePlan(b, b.CreateString("test"), b.CreateString("s"),
                              spec.world, 0, 0, 0, emptyStreams(), 0, 0, 0, 0,
                              0, 0, -1, 0, inner, 0, spec.axis,
                              b.CreateVector(grid), index);
    // A buffer per transfer, one after another; one group, the pipeline
    // axis.
    std::vector<fb::Offset<plan::Buffer>> buffers;
    std::vector<fb::Offset<plan::Instr>> instrs;
    uint64_t offset = 0;
    for (const PipelineSpec::Transfer &t : spec.transfers[size_t(index)]) {
      uint64_t bytes = 4;
      for (int64_t d : t.shape)
        bytes *= uint64_t(d);
      uint32_t id = uint32_t(buffers.size());
      buffers.push_back(plan::CreateBuffer(
          b, offset, bytes, plan::DType::F32, b.CreateVector(t.shape),
          b.CreateString("t" + std::to_string(id))));
      offset += (bytes + 63) / 64 * 64;
      std::vector<int64_t> peer = {t.peer};
      std::vector<fb::Offset<plan::Attr>> attrs = {
          plan::CreateAttr(b, 0, b.CreateVector(peer), 0)};
      std::vector<uint32_t> operands, results;
      (t.send ? operands : results).push_back(id);
      instrs.push_back(plan::CreateInstr(
          b, code(t.send ? Opcode::Send : Opcode::Recv),
          b.CreateVector(operands), b.CreateVector(results),
          b.CreateVector(attrs), 0, -1, -1, b.CreateString("s.mlir:1:1")));
    }
    std::vector<int64_t> axes = {spec.axis};
    std::vector<fb::Offset<plan::Group>> groups = {
        plan::CreateGroup(b, b.CreateString("world"), b.CreateVector(grid),
                          b.CreateVector(axes))};
    std::vector<fb::Offset<plan::Stream>> streams = {plan::CreateStream(
        b, plan::StreamKind::Compute, 0, b.CreateVector(instrs))};
    return plan::CreatePlan(b, b.CreateString("test"), b.CreateString("s"),
                            spec.world, offset, b.CreateVector(buffers),
                            b.CreateVector(groups), b.CreateVector(streams), 0,
                            0, 0, 0, 0, 0, -1, 0, inner, 0, spec.axis,
                            b.CreateVector(grid), index);
  };
  std::vector<fb::Offset<plan::Plan>> stages;
  for (int i = 0; i < spec.stages; ++i) {
    bool bad = i == spec.badStage;
    fb::Offset<fb::Vector<fb::Offset<plan::Plan>>> inner = 0;
    if (bad && spec.nested) {
      std::vector<fb::Offset<plan::Plan>> one = {stagePlan(0, false, 0)};
      inner = b.CreateVector(one);
    }
    stages.push_back(stagePlan(bad && spec.badIndex >= 0 ? spec.badIndex : i,
                               bad && spec.otherGrid, inner));
  }
  auto root = plan::CreatePlan(
      b, b.CreateString("test"), b.CreateString("pipeline"), spec.world, 0, 0,
      0, spec.rootStream ? emptyStreams() : 0, 0, 0, 0, 0, 0, 0, -1, 0,
      b.CreateVector(stages), b.CreateVector(spec.programOfRank), spec.axis,
      b.CreateVector(spec.grid), -1);
  b.Finish(root, plan::PlanIdentifier());
  return loadPayload(b.GetBufferPointer(), b.GetSize(), plan::kFormatVersion);
}

std::string errorOfPipeline(const PipelineSpec &spec) {
  try {
    loadPipeline(spec);
  } catch (const PlanError &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(PlanLoaderTest, PipelineRanksRunTheirStagesProgram) {
  Plan plan = loadPipeline({});
  ASSERT_TRUE(plan.isPipelined());
  EXPECT_EQ(plan.stages.size(), 2u);
  // Rank 3 is (1, 1) on the 2 x 2 grid: stage 1 of replica 1.
  Plan program = programOf(loadPipeline({}), 3);
  EXPECT_EQ(program.stage, 1);
  EXPECT_FALSE(program.isPipelined());
  RankPlace place = placeRank(program, 3);
  EXPECT_EQ(place.ppIndex, 1);
  EXPECT_EQ(place.ppSize, 2);
  EXPECT_EQ(place.dpIndex, 1);
  EXPECT_EQ(place.dpSize, 2);
  RankPlace first = placeRank(program, 2);
  EXPECT_EQ(first.ppIndex, 0);
  EXPECT_EQ(first.dpIndex, 1);
  // A plan without a pipeline is its own program.
  EXPECT_EQ(programOf(loadOne(code(Opcode::Relu), {0}, {1}, {}), 0).stage, -1);
}

TEST(PlanLoaderTest, PipelineErrorsNameTheFact) {
  PipelineSpec spec;
  spec.programOfRank = {0, 0, 1, 1};
  EXPECT_EQ(errorOfPipeline(spec),
            "rank 1 runs stage program 0, but its coordinate on the pipeline "
            "axis is 1 (its peers name it so)");
  spec = {};
  spec.programOfRank = {0, 1};
  EXPECT_EQ(errorOfPipeline(spec),
            "the plan names the program of 2 ranks, but runs on 4");
  spec = {};
  spec.stages = 3;
  EXPECT_EQ(errorOfPipeline(spec),
            "the pipeline axis has 2 stages, but the plan holds 3 stage "
            "programs");
  spec = {};
  spec.badStage = 1;
  spec.badIndex = 0;
  EXPECT_EQ(errorOfPipeline(spec), "stage program 1 says it is stage 0");
  spec = {};
  spec.badStage = 0;
  spec.otherGrid = true;
  EXPECT_EQ(errorOfPipeline(spec), "stage program 0 runs on another grid or "
                                   "pipeline axis than the plan");
  spec = {};
  spec.badStage = 1;
  spec.nested = true;
  EXPECT_EQ(errorOfPipeline(spec),
            "stage program 1 holds stage programs of its own");
  spec = {};
  spec.rootStream = true;
  EXPECT_NE(errorOfPipeline(spec).find("a pipelined plan's root holds its "
                                       "stages' programs and no program of "
                                       "its own"),
            std::string::npos);
  spec = {};
  spec.axis = 2;
  EXPECT_EQ(errorOfPipeline(spec), "the pipeline axis 2 is not an axis of "
                                   "the pipeline grid of 2 axes");
  spec = {};
  spec.world = 8;
  spec.programOfRank = {0, 1, 0, 1, 0, 1, 0, 1};
  EXPECT_EQ(errorOfPipeline(spec),
            "the pipeline grid spans 4 ranks, but the plan runs on 8");
}

TEST(PlanLoaderTest, APipelineAxisWithoutStagesIsAnError) {
  fb::FlatBufferBuilder b;
  std::vector<fb::Offset<plan::Instr>> none;
  std::vector<fb::Offset<plan::Stream>> streams = {plan::CreateStream(
      b, plan::StreamKind::Compute, 0, b.CreateVector(none))};
  std::vector<int64_t> grid = {2};
  auto root = plan::CreatePlan(b, b.CreateString("test"), b.CreateString("f"),
                               2, 0, 0, 0, b.CreateVector(streams), 0, 0, 0, 0,
                               0, 0, -1, 0, 0, 0, 0, b.CreateVector(grid), -1);
  b.Finish(root, plan::PlanIdentifier());
  try {
    loadPayload(b.GetBufferPointer(), b.GetSize(), plan::kFormatVersion);
    FAIL() << "loaded";
  } catch (const PlanError &e) {
    EXPECT_STREQ(e.what(), "the plan has a pipeline axis, a stage index or a "
                           "program per rank, but no stage programs");
  }
}

TEST(PlanLoaderTest, StageTransfersPairUp) {
  // What MPI and NCCL match: the k-th send of one stage to another and the
  // k-th receive of that one from it move one type and shape, and each send
  // has its receive. (A crafted plan ended in OpenMPI's MPI_ERR_TRUNCATE.)
  using T = PipelineSpec::Transfer;
  PipelineSpec spec;
  spec.transfers = {{T{true, 1}, T{false, 1}}, {T{false, 0}, T{true, 0}}};
  EXPECT_EQ(errorOfPipeline(spec), "");
  spec.transfers = {{T{true, 1, {4}}, T{true, 1, {8}}},
                    {T{false, 0, {8}}, T{false, 0, {4}}}};
  EXPECT_EQ(errorOfPipeline(spec),
            "transfer #0 from stage 0 to stage 1 on stream compute 0 sends [4] "
            "f32 ('send' at s.mlir:1:1), but the receive matching it expects "
            "[8] f32 ('recv' at s.mlir:1:1)");
  spec.transfers = {{T{true, 1}, T{true, 1}}, {T{false, 0}}};
  EXPECT_EQ(errorOfPipeline(spec),
            "stage 0 sends 2 values to stage 1 on stream compute 0, but stage "
            "1 receives 1 from it; each send needs its receive");
  spec.transfers = {{}, {T{false, 0}}};
  EXPECT_EQ(errorOfPipeline(spec),
            "stage 0 sends 0 values to stage 1 on stream compute 0, but stage "
            "1 receives 1 from it; each send needs its receive");
}
