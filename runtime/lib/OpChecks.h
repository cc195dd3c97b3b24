//===- OpChecks.h - the rules each instruction of a plan obeys --*- C++ -*-===//

#ifndef BRAID_RUNTIME_LIB_OPCHECKS_H
#define BRAID_RUNTIME_LIB_OPCHECKS_H

#include "braid-runtime/Plan.h"

namespace braid::rt {

/// Checks a kernel or collective instruction: operand and result counts,
/// element types, shapes and attributes. Throws PlanError naming the problem.
/// The rules of one op (counts from the op table, shapes, types, overlap).
void checkOp(const Plan &plan, const Instr &instr);

/// Every fact the executor relies on, after decoding (PlanChecks.cpp); a
/// PlanError names the first that fails.
void checkPlan(const Plan &plan);

/// No two buffers that are live at once share a byte, under the lifetimes
/// braid-plan-memory documents (PlanLifetimes.cpp); called by checkPlan once
/// the streams are known to make progress.
void checkLifetimes(const Plan &plan);

} // namespace braid::rt

#endif // BRAID_RUNTIME_LIB_OPCHECKS_H
