//===- Views.cpp - data movement as strided reads -------------------------===//

#include "Views.h"

#include <algorithm>

using namespace braid;
using namespace braid::rt;

StridedView braid::rt::getStridedView(const Plan &plan, const Instr &instr) {
  const Buffer &x = plan.buffers[instr.operands[0]];
  const Buffer &y = plan.buffers[instr.results[0]];
  std::vector<int64_t> inStrides = stridesOf(x.shape);
  StridedView view;
  // Only the three view ops call this (their kernels).
  if (instr.opcode == Opcode::Transpose) {
    for (int64_t p : instr.as<ops::TransposeAttrs>().permutation)
      view.strides.push_back(inStrides[p]);
  } else if (instr.opcode == Opcode::Broadcast) {
    // The added dimensions read the same input element (stride 0).
    const auto &dims = instr.as<ops::BroadcastAttrs>().dims;
    for (size_t d = 0, k = 0; d < y.shape.size(); ++d)
      view.strides.push_back(std::count(dims.begin(), dims.end(), int64_t(d))
                                 ? 0
                                 : inStrides[k++]);
  } else {
    const auto &attrs = instr.as<ops::SliceAttrs>();
    std::vector<int64_t> steps = attrs.strides
                                     ? *attrs.strides
                                     : std::vector<int64_t>(x.shape.size(), 1);
    for (size_t d = 0; d < x.shape.size(); ++d) {
      view.strides.push_back(inStrides[d] * steps[d]);
      view.base += attrs.offsets[d] * inStrides[d];
    }
  }
  return view;
}
