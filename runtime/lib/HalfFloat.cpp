//===- HalfFloat.cpp - bf16 and f16 to and from f32 on the host -----------===//

#include "braid-runtime/HalfFloat.h"

#include <vector>

#include <Eigen/Core>

using namespace braid;

namespace {

template <typename Half> void widen(const void *src, float *dst, int64_t n) {
  Eigen::Map<Eigen::Array<float, Eigen::Dynamic, 1>>(dst, n) =
      Eigen::Map<const Eigen::Array<Half, Eigen::Dynamic, 1>>(
          static_cast<const Half *>(src), n)
          .template cast<float>();
}

template <typename Half> void narrow(const float *src, void *dst, int64_t n) {
  Eigen::Map<Eigen::Array<Half, Eigen::Dynamic, 1>>(static_cast<Half *>(dst),
                                                    n) =
      Eigen::Map<const Eigen::Array<float, Eigen::Dynamic, 1>>(src, n)
          .template cast<Half>();
}

} // namespace

void braid::rt::widenHalf(DType dtype, const void *src, float *dst, int64_t n) {
  if (dtype == DType::BF16)
    widen<Eigen::bfloat16>(src, dst, n);
  else
    widen<Eigen::half>(src, dst, n);
}

void braid::rt::narrowHalf(DType dtype, const float *src, void *dst,
                           int64_t n) {
  if (dtype == DType::BF16)
    narrow<Eigen::bfloat16>(src, dst, n);
  else
    narrow<Eigen::half>(src, dst, n);
}

void braid::rt::roundToHalf(DType dtype, float *x, int64_t n) {
  if (!isHalf(dtype))
    return;
  thread_local std::vector<uint16_t> bits;
  bits.resize(size_t(n));
  narrowHalf(dtype, x, bits.data(), n);
  widenHalf(dtype, bits.data(), x, n);
}
