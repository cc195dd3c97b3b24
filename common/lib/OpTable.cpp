//===- OpTable.cpp - the generated table of braid ops
//-----------------------===//

#include "braid-common/OpTable.h"

#include <array>

using namespace braid;
using namespace braid::ops;

namespace {
#include "braid-common/BraidOpTable.cpp.inc"

/// kOpInfos indexed by opcode.
const std::array<const OpInfo *, kMaxOpcode + 1> &byCode() {
  static const std::array<const OpInfo *, kMaxOpcode + 1> table = [] {
    std::array<const OpInfo *, kMaxOpcode + 1> t{};
    for (const OpInfo &info : kOpInfos)
      t[uint16_t(info.opcode)] = &info;
    return t;
  }();
  return table;
}
} // namespace

const OpInfo *ops::findOp(uint16_t code) {
  return code <= kMaxOpcode ? byCode()[code] : nullptr;
}

const OpInfo &ops::getOpInfo(Opcode opcode) {
  return *byCode()[uint16_t(opcode)];
}

const std::vector<const OpInfo *> &ops::allOps() {
  static const std::vector<const OpInfo *> all = [] {
    std::vector<const OpInfo *> v;
    for (const OpInfo &info : kOpInfos)
      v.push_back(&info);
    return v;
  }();
  return all;
}
