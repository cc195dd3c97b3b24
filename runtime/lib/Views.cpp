//===- Views.cpp - data movement as strided reads -------------------------===//

#include "Views.h"

#include <algorithm>

using namespace braid::rt;

StridedView braid::rt::getStridedView(const Plan &plan, const Instr &instr) {
  const Buffer &x = plan.buffers[instr.operands[0]];
  const Buffer &y = plan.buffers[instr.results[0]];
  std::vector<int64_t> inStrides = stridesOf(x.shape);
  StridedView view;
  if (instr.op == "transpose") {
    for (int64_t p : instr.getInts("permutation"))
      view.strides.push_back(inStrides[p]);
  } else if (instr.op == "broadcast") {
    // The added dimensions read the same input element (stride 0).
    const auto &dims = instr.getInts("dims");
    for (size_t d = 0, k = 0; d < y.shape.size(); ++d)
      view.strides.push_back(std::count(dims.begin(), dims.end(), int64_t(d))
                                 ? 0
                                 : inStrides[k++]);
  } else {
    const auto &offsets = instr.getInts("offsets");
    std::vector<int64_t> steps(x.shape.size(), 1);
    if (instr.attrs.count("strides"))
      steps = instr.getInts("strides");
    for (size_t d = 0; d < x.shape.size(); ++d) {
      view.strides.push_back(inStrides[d] * steps[d]);
      view.base += offsets[d] * inStrides[d];
    }
  }
  return view;
}
