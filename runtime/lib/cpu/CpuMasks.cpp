//===- CpuMasks.cpp - the cpu kernels of the i1 masks ----------*- C++ -*-===//
//
// braid.where (choosing by an i1 mask) and braid.dropout_mask (drawing
// one, with the Philox generator the cuda kernel shares:
// braid-common/Philox.h). Masks are one byte an element in the arena.
//
//===----------------------------------------------------------------------===//

#include "CpuKernels.h"

#include "braid-common/Philox.h"

using namespace braid;
using namespace braid::rt;

void braid::rt::runCpuMaskKernel(const Plan &plan, const Instr &instr,
                                 uint8_t *arena,
                                 const std::vector<const float *> &in,
                                 const std::vector<float *> &out) {
  const Buffer &result = plan.buffers[instr.results[0]];
  int64_t n = result.numElements();
  if (instr.opcode == Opcode::Where) {
    const uint8_t *c = arena + plan.buffers[instr.operands[0]].offset;
    const float *x = in[1], *z = in[2];
    float *y = out[0];
    for (int64_t i = 0; i < n; ++i)
      y[i] = c[i] ? x[i] : z[i];
    return;
  }
  const auto &attrs = instr.as<ops::DropoutMaskAttrs>();
  uint32_t step = uint32_t(in[0][0]);
  uint32_t rank = uint32_t(*reinterpret_cast<const int64_t *>(
      arena + plan.buffers[instr.operands[1]].offset));
  uint8_t *mask = arena + result.offset;
  for (int64_t i = 0; i < n; ++i)
    mask[i] = dropoutKeeps(uint32_t(attrs.seed), rank, step,
                           uint32_t(attrs.stream), uint64_t(i), attrs.keep);
}
