//===- CpuWidening.cpp - bf16 and f16 kernels through the f32 ones --------===//
//
// The cpu backend computes bf16 and f16 in f32: a kernel's half operands are
// widened into per-thread f32 copies, the f32 kernel runs on them, and its
// half results are rounded to the nearest even value (HalfFloat.h). The ops
// that only move bytes run on the 16-bit values as they are.
//
//===----------------------------------------------------------------------===//

#include "CpuKernels.h"
#include "braid-runtime/HalfFloat.h"

#include <vector>

using namespace braid;
using namespace braid::rt;

/// Whether the kernel of `opcode` moves bytes of any type as they are (the
/// ODS's kernelTables "cpu_moves_bytes": a new op says so there).
static bool movesBytes(Opcode opcode) {
  switch (opcode) {
    BRAID_CASE_CPU_MOVES_BYTES_OPCODES
    return true;
    BRAID_CASE_NOT_CPU_MOVES_BYTES_OPCODES
    return false;
  }
  return false;
}

void braid::rt::runCpuKernel(const Plan &plan, const Instr &instr,
                             uint8_t *arena) {
  std::vector<const float *> inData;
  std::vector<float *> outData;
  bool widen = false;
  for (uint32_t id : instr.operands) {
    inData.push_back(
        reinterpret_cast<const float *>(arena + plan.buffers[id].offset));
    widen |= isHalf(plan.buffers[id].dtype);
  }
  for (uint32_t id : instr.results) {
    outData.push_back(
        reinterpret_cast<float *>(arena + plan.buffers[id].offset));
    widen |= isHalf(plan.buffers[id].dtype);
  }
  if (!widen || movesBytes(instr.opcode))
    return runF32Kernel(plan, instr, arena, std::move(inData),
                        std::move(outData));
  // f32 copies of the half buffers, kept per thread from one call to the
  // next: operands widened before, results rounded after.
  thread_local std::vector<std::vector<float>> scratch;
  size_t used = 0;
  auto copy = [&](const Buffer &b) {
    if (scratch.size() <= used)
      scratch.emplace_back();
    std::vector<float> &v = scratch[used++];
    v.resize(size_t(b.numElements()));
    return v.data();
  };
  for (size_t i = 0; i < instr.operands.size(); ++i) {
    const Buffer &b = plan.buffers[instr.operands[i]];
    if (!isHalf(b.dtype))
      continue;
    float *f = copy(b);
    widenHalf(b.dtype, arena + b.offset, f, b.numElements());
    inData[i] = f;
  }
  for (size_t i = 0; i < instr.results.size(); ++i)
    if (isHalf(plan.buffers[instr.results[i]].dtype))
      outData[i] = copy(plan.buffers[instr.results[i]]);
  std::vector<float *> results = outData;
  runF32Kernel(plan, instr, arena, std::move(inData), std::move(outData));
  for (size_t i = 0; i < instr.results.size(); ++i) {
    const Buffer &b = plan.buffers[instr.results[i]];
    if (isHalf(b.dtype))
      narrowHalf(b.dtype, results[i], arena + b.offset, b.numElements());
  }
}
