//===- DType.h - element types of plan tensors ------------------*- C++ -*-===//
//
// The element types a plan's tensors have, numbered as in the plan schema
// (common/schema/plan.fbs). Shared by the compiler, the cost model and the
// runtime; no dependencies.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_COMMON_DTYPE_H
#define BRAID_COMMON_DTYPE_H

#include <cstdint>

namespace braid {

enum class DType : uint8_t { F32 = 0, F16, BF16, F64, I1, I32, I64 };

/// The number of DType values.
inline constexpr unsigned kNumDTypes = 7;

inline const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F64:
    return "f64";
  case DType::I1:
    return "i1";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  }
  return "?";
}

inline unsigned dtypeBytes(DType dtype) {
  switch (dtype) {
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::I1:
    return 1;
  }
  return 0;
}

inline bool isFloat(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::F16:
  case DType::BF16:
  case DType::F64:
    return true;
  case DType::I1:
  case DType::I32:
  case DType::I64:
    return false;
  }
  return false;
}

} // namespace braid

#endif // BRAID_COMMON_DTYPE_H
