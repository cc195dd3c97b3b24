//===- Views.h - data movement as strided reads -----------------*- C++ -*-===//

#ifndef BRAID_RUNTIME_LIB_VIEWS_H
#define BRAID_RUNTIME_LIB_VIEWS_H

#include "braid-runtime/Plan.h"

namespace braid::rt {

/// How transpose, broadcast and slice read their input: result element at
/// coordinates c reads input element `base + sum(c[k] * strides[k])`.
/// Shared by the backends, which then copy element by element.
struct StridedView {
  std::vector<int64_t> strides;
  int64_t base = 0;
};

/// The view of a `transpose`, `broadcast` or `slice` instruction (checked by
/// the loader).
StridedView getStridedView(const Plan &plan, const Instr &instr);

} // namespace braid::rt

#endif // BRAID_RUNTIME_LIB_VIEWS_H
