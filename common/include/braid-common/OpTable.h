//===- OpTable.h - every braid op, as the plan and runtime know it -*- C++
//-*-===//
//
// Generated from BraidOps.td (common/gen-op-table.py over llvm-tblgen's JSON):
// the Opcode enum, each op's typed attribute struct, and the OpInfo table
// that the translator writes plans by and the runtime decodes them by. No
// MLIR, no runtime: the compiler, the cost model and the runtime all use it.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_COMMON_OPTABLE_H
#define BRAID_COMMON_OPTABLE_H

#include "braid-common/CollectiveKind.h"

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace braid::ops {

#include "braid-common/BraidOpTable.h.inc"

/// What a plan instruction of an op is.
enum class InstrKind : uint8_t {
  /// A compute op: reads operands, writes results.
  Kernel = 0,
  /// A synchronous collective: runs to completion on its stream.
  Collective,
  /// The start of a collective; its wait yields the results.
  CollectiveStart,
  /// Blocks the stream until a collective has completed.
  Wait,
  /// Marks the current point of the stream as an event.
  RecordEvent,
  /// Blocks the stream until an event has been recorded this step.
  WaitEvent
};

/// How an attribute is stored in a plan (common/schema/plan.fbs, `Attr`).
enum class AttrKind : uint8_t {
  Flag,    // a unit attribute: ints = [1] when set
  Int,     // ints = [v]
  Float,   // floats = [v]
  Ints,    // ints
  Strings, // strings
  Enum,    // ints = [v], v < enumCount
  Data     // data: the elements, little-endian, row-major
};

struct AttrInfo {
  const char *name;
  AttrKind kind;
  /// Whether a plan must hold it (no default, not optional).
  bool required;
  /// For an Enum: the number of cases and their names.
  uint32_t enumCount;
  const char *const *enumNames;
};

struct OpInfo {
  Opcode opcode;
  /// The mnemonic without the dialect prefix, such as all_reduce_start.
  const char *name;
  InstrKind instrKind;
  CollectiveKind collective;
  /// A collective's other form (the start form of a synchronous one, the
  /// synchronous form of a start form); the op itself otherwise.
  Opcode otherForm;
  /// Tensor operands and results as a plan instruction has them (a start
  /// form: those of its synchronous form); -1 for variadic.
  int8_t numOperands, numResults;
  /// Their names in the ODS, each list ended by "" ("inputs..." for a
  /// variadic operand).
  const char *const *operandNames;
  const char *const *resultNames;
  /// The attributes, in the order of their plan ids.
  const AttrInfo *attrs;
  uint8_t numAttrs;
  /// For result i < numInPlace, the operand it may overwrite element for
  /// element (-1: none); InPlaceOpInterface in the ODS.
  const int8_t *inPlace;
  uint8_t numInPlace;
  /// The result is the operand's bytes in another shape, and may share
  /// them (Braid_View in the ODS: reshape).
  bool isView;

  bool isCollective() const {
    return instrKind == InstrKind::Collective ||
           instrKind == InstrKind::CollectiveStart;
  }
};

/// The op of `code`, or null for a number no op has.
const OpInfo *findOp(uint16_t code);
/// The op of a valid opcode.
const OpInfo &getOpInfo(Opcode opcode);
/// Every op, by increasing opcode.
const std::vector<const OpInfo *> &allOps();

} // namespace braid::ops

#endif // BRAID_COMMON_OPTABLE_H
