//===- CpuVectorMathAvx2.cpp - VectorMath on 8 lanes (AVX2 and FMA) -------===//
//
// Compiled with -mavx2 -mfma (runtime/lib/CMakeLists.txt); reached only on
// a CPU that has them (vectorMath()).
//
//===----------------------------------------------------------------------===//

#include "CpuVectorMathImpl.h"

#include <immintrin.h>
#include <sleef.h>

using namespace braid;
using namespace braid::rt;

namespace {
struct V8 {
  using R = __m256;
  static constexpr int N = 8;
  static R load(const float *p) { return _mm256_loadu_ps(p); }
  static void store(float *p, R v) { _mm256_storeu_ps(p, v); }
  static R set(float v) { return _mm256_set1_ps(v); }
  static R add(R a, R b) { return _mm256_add_ps(a, b); }
  static R sub(R a, R b) { return _mm256_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm256_mul_ps(a, b); }
  static R div(R a, R b) { return _mm256_div_ps(a, b); }
  static R fma(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static R sqrt(R a) { return _mm256_sqrt_ps(a); }
  static R exp(R a) { return Sleef_expf8_u10avx2(a); }
  static R log(R a) { return Sleef_logf8_u10avx2(a); }
  static R tanh(R a) { return Sleef_tanhf8_u10avx2(a); }
  static R erf(R a) { return Sleef_erff8_u10avx2(a); }
  static double sum(R a) {
    alignas(32) float lanes[N];
    _mm256_store_ps(lanes, a);
    double s = 0;
    for (float l : lanes)
      s += l;
    return s;
  }
};
} // namespace

const VectorMath *braid::rt::avx2Math() {
  static const bool supported =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return supported ? &VectorKernels<V8>::table("avx2") : nullptr;
}
