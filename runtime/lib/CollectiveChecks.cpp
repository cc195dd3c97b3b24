//===- CollectiveChecks.cpp - the rules each collective of a plan obeys ---===//
//
// OpChecks.cpp's counterpart for the collectives: element types, shapes
// against the group's size, roots and peers inside the group.
//
//===----------------------------------------------------------------------===//

#include "OpChecker.h"

using namespace braid;
using namespace braid::rt;

namespace braid::rt::opcheck {

namespace {

/// The group size, once a collective's split dimension is checked to exist.
int64_t splitCheck(Checker &c, const Buffer &b, int64_t d) {
  c.dim(b, d);
  return c.group().size();
}

void collectiveDType(Checker &c, const Buffer &b) {
  if (!isFloat(b.dtype) && b.dtype != DType::I32 && b.dtype != DType::I64)
    c.fail("collectives move floating-point, i32 or i64 tensors, but '" +
           b.name + "' is " + shapeOf(b));
}

} // namespace

void checkCollective(Checker &c) {
  const Instr &instr = c.instr;
  for (size_t i = 0; i < instr.operands.size(); ++i)
    collectiveDType(c, c.in(i));
  for (size_t i = 0; i < instr.results.size(); ++i)
    collectiveDType(c, c.out(i));
  auto sameType = [&]() {
    c.noOverlap();
    if (c.in(0).dtype != c.out(0).dtype)
      c.fail("element types differ");
  };
  auto inGroup = [&](const char *what, int64_t rank) {
    if (rank < 0 || rank >= c.group().size())
      c.fail(std::string(what) + " " + std::to_string(rank) +
             " is not in the group");
  };
  switch (instr.collective()) {
  case CollectiveKind::AllReduce: {
    if (instr.operands.empty() || instr.operands.size() != instr.results.size())
      c.fail("expected as many results as operands");
    for (size_t i = 0; i < instr.operands.size(); ++i) {
      c.shape(c.out(i), c.in(i).shape);
      if (c.out(i).dtype != c.in(i).dtype)
        c.fail("element types differ");
    }
    // The results are reduced in place: in runs of adjacent buffers.
    for (size_t i = 0; i < instr.results.size(); ++i)
      for (size_t j = i + 1; j < instr.results.size(); ++j) {
        const Buffer &a = c.out(i), &b = c.out(j);
        if (a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes)
          c.fail("results '" + a.name + "' and '" + b.name + "' overlap");
      }
    return;
  }
  case CollectiveKind::ReduceScatter: {
    sameType();
    const Buffer &x = c.in(0);
    int64_t d = instr.as<ops::ReduceScatterAttrs>().scatter_dim;
    int64_t n = splitCheck(c, x, d);
    if (x.shape[d] % n)
      c.fail("dimension " + std::to_string(d) + " of " + shapeOf(x) +
             " does not split into " + std::to_string(n));
    std::vector<int64_t> expected = x.shape;
    expected[d] /= n;
    return c.shape(c.out(0), expected);
  }
  case CollectiveKind::AllGather: {
    sameType();
    const Buffer &x = c.in(0);
    int64_t d = instr.as<ops::AllGatherAttrs>().gather_dim;
    std::vector<int64_t> expected = x.shape;
    expected[d] *= splitCheck(c, x, d);
    return c.shape(c.out(0), expected);
  }
  case CollectiveKind::AllToAll: {
    sameType();
    const Buffer &x = c.in(0);
    const auto &a = instr.as<ops::AllToAllAttrs>();
    if (a.split_dim != a.concat_dim)
      c.fail("the runtime supports all_to_all with split_dim == concat_dim");
    int64_t n = splitCheck(c, x, a.split_dim);
    if (x.shape[a.split_dim] % n)
      c.fail("dimension " + std::to_string(a.split_dim) +
             " does not split into " + std::to_string(n));
    return c.shape(c.out(0), x.shape);
  }
  case CollectiveKind::Broadcast:
    sameType();
    inGroup("root", instr.as<ops::CollectiveBroadcastAttrs>().root);
    return c.shape(c.out(0), c.in(0).shape);
  case CollectiveKind::Permute:
    sameType();
    return c.shape(c.out(0), c.in(0).shape);
  case CollectiveKind::Send:
    return inGroup("peer", instr.as<ops::SendAttrs>().peer);
  case CollectiveKind::Recv:
    return inGroup("peer", instr.as<ops::RecvAttrs>().peer);
  case CollectiveKind::SendRecv:
    inGroup("send_peer", instr.as<ops::SendRecvAttrs>().send_peer);
    return inGroup("recv_peer", instr.as<ops::SendRecvAttrs>().recv_peer);
  case CollectiveKind::AxisIndex:
    if (c.out(0).dtype != DType::I64)
      c.fail("the rank index '" + c.out(0).name + "' must be i64");
    return c.shape(c.out(0), {});
  case CollectiveKind::None:
    c.fail("is not a collective");
  }
}

} // namespace braid::rt::opcheck
