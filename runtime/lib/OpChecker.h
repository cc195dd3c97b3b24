//===- OpChecker.h - the checks of one plan instruction ---------*- C++ -*-===//
//
// What OpChecks.cpp (the kernels' rules) and CollectiveChecks.cpp (the
// collectives') share: the instruction with its buffers at hand, and how a
// message names a shape.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_LIB_OPCHECKER_H
#define BRAID_RUNTIME_LIB_OPCHECKER_H

#include "braid-runtime/Plan.h"

#include <string>
#include <vector>

namespace braid::rt::opcheck {

/// "[4x8] f32".
inline std::string shapeOf(const Buffer &b) {
  std::string s = "[";
  for (size_t i = 0; i < b.shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(b.shape[i]);
  return s + "] " + dtypeName(b.dtype);
}

/// "[4x8]".
inline std::string dimsOf(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? "x" : "") + std::to_string(dims[i]);
  return s + "]";
}

/// The checks of one instruction, with its buffers at hand.
struct Checker {
  const Plan &plan;
  const Instr &instr;

  [[noreturn]] void fail(const std::string &message) const {
    throw PlanError(instr.describe() + ": " + message);
  }
  const Buffer &in(size_t i) const { return plan.buffers[instr.operands[i]]; }
  const Buffer &out(size_t i) const { return plan.buffers[instr.results[i]]; }

  /// A floating-point tensor. Which float types a backend computes in is
  /// its own check (checkComputeTypes): the simulator takes them all.
  void f32(const Buffer &b) const {
    if (!isFloat(b.dtype))
      fail("'" + b.name + "' must be a floating-point tensor, but is " +
           shapeOf(b));
  }
  void index(const Buffer &b) const {
    if (b.dtype != DType::I32 && b.dtype != DType::I64)
      fail("'" + b.name + "' must hold i32 or i64 indices, but is " +
           shapeOf(b));
  }
  void shape(const Buffer &b, const std::vector<int64_t> &expected) const {
    if (b.shape != expected)
      fail("'" + b.name + "' is " + shapeOf(b) + ", expected shape " +
           dimsOf(expected));
  }
  void allF32() const {
    for (size_t i = 0; i < instr.operands.size(); ++i)
      f32(in(i));
    for (size_t i = 0; i < instr.results.size(); ++i)
      f32(out(i));
  }
  int64_t dim(const Buffer &b, int64_t d) const {
    int64_t rank = b.shape.size();
    if (d < 0 || d >= rank)
      fail("dimension " + std::to_string(d) + " is out of range for '" +
           b.name + "' of rank " + std::to_string(rank));
    return d;
  }
  /// Operands and results may not overlap, except where an op allows it.
  void noOverlap() const {
    for (uint32_t r : instr.results)
      for (uint32_t o : instr.operands) {
        const Buffer &a = plan.buffers[r], &b = plan.buffers[o];
        if (a.bytes && b.bytes && a.offset < b.offset + b.bytes &&
            b.offset < a.offset + a.bytes)
          fail("result '" + a.name + "' overlaps operand '" + b.name + "'");
      }
  }
  const Group &group() const { return plan.groups[instr.group]; }
};

/// Checks a collective instruction (CollectiveChecks.cpp).
void checkCollective(Checker &c);

} // namespace braid::rt::opcheck

#endif // BRAID_RUNTIME_LIB_OPCHECKER_H
