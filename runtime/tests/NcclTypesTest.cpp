//===- NcclTypesTest.cpp - every dtype's NCCL type ------------------------===//
//
// Runs without a GPU (no CUDA call is made): each of braid's dtypes maps to
// the NCCL type of its width and kind, what NCCL cannot reduce as braid
// means it (a sum or mean of booleans) and what is not a dtype are refused
// with a message.
//
//===----------------------------------------------------------------------===//

#include "../lib/cuda/NcclCommunicator.h"
#include "braid-runtime/Executor.h"

#include <cstdio>
#include <string>

using namespace braid;
using namespace braid::rt;

namespace {

int failures = 0;

void expect(bool ok, const std::string &what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  failures += !ok;
}

/// NCCL's types, named by the test from nccl.h, not from the mapping.
struct Expected {
  ncclDataType_t type;
  unsigned bytes;
  bool isFloat;
};

Expected expected(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return {ncclFloat32, 4, true};
  case DType::F16:
    return {ncclFloat16, 2, true};
  case DType::BF16:
    return {ncclBfloat16, 2, true};
  case DType::F64:
    return {ncclFloat64, 8, true};
  case DType::I1:
    return {ncclUint8, 1, false};
  case DType::I32:
    return {ncclInt32, 4, false};
  case DType::I64:
    return {ncclInt64, 8, false};
  }
  return {ncclNumTypes, 0, false};
}

std::string refusal(DType dtype, const ops::ReductionKind *reduction) {
  try {
    ncclType(dtype, reduction);
  } catch (const CommError &e) {
    return e.what();
  }
  return "";
}

} // namespace

int main() {
  for (unsigned d = 0; d < kNumDTypes; ++d) {
    DType dtype = DType(d);
    Expected e = expected(dtype);
    std::string name = dtypeName(dtype);
    expect(e.bytes == dtypeBytes(dtype) && e.isFloat == isFloat(dtype),
           name + ": the test's NCCL type has its width and kind");
    std::string error;
    ncclDataType_t got = ncclNumTypes;
    try {
      got = ncclType(dtype);
    } catch (const CommError &ex) {
      error = ex.what();
    }
    expect(error.empty() && got == e.type,
           name + " maps to NCCL type " + std::to_string(int(e.type)) +
               " (got " + std::to_string(int(got)) + error + ")");
    for (ops::ReductionKind r :
         {ops::ReductionKind::Sum, ops::ReductionKind::Avg,
          ops::ReductionKind::Max, ops::ReductionKind::Min}) {
      bool refuse = dtype == DType::I1 && (r == ops::ReductionKind::Sum ||
                                           r == ops::ReductionKind::Avg);
      std::string message = refusal(dtype, &r);
      expect(refuse ? message == "nccl: cannot sum or average i1 (booleans); "
                                 "reduce them with max or min"
                    : message.empty(),
             name + " under reduction " + std::to_string(int(r)) +
                 (refuse ? " is refused" : " maps") +
                 (message.empty() ? "" : ": " + message));
    }
  }
  std::string bad = refusal(DType(kNumDTypes), nullptr);
  expect(bad == "nccl: no NCCL type for dtype number " +
                    std::to_string(kNumDTypes),
         "a value that is not a dtype is refused: " + bad);
  std::printf("nccl types: %d failed\n", failures);
  return failures ? 1 : 0;
}
