//===- CpuVectorMathAvx512.cpp - VectorMath on 16 lanes (AVX-512) ---------===//
//
// Compiled with -mavx512f -mfma (runtime/lib/CMakeLists.txt); reached only
// on a CPU that has them (vectorMath()).
//
//===----------------------------------------------------------------------===//

#include "CpuVectorMathImpl.h"

#include <immintrin.h>
#include <sleef.h>

using namespace braid;
using namespace braid::rt;

namespace {
struct V16 {
  using R = __m512;
  static constexpr int N = 16;
  static R load(const float *p) { return _mm512_loadu_ps(p); }
  static void store(float *p, R v) { _mm512_storeu_ps(p, v); }
  static R set(float v) { return _mm512_set1_ps(v); }
  static R add(R a, R b) { return _mm512_add_ps(a, b); }
  static R sub(R a, R b) { return _mm512_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm512_mul_ps(a, b); }
  static R div(R a, R b) { return _mm512_div_ps(a, b); }
  static R fma(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static R sqrt(R a) { return _mm512_sqrt_ps(a); }
  static R exp(R a) { return Sleef_expf16_u10avx512f(a); }
  static R log(R a) { return Sleef_logf16_u10avx512f(a); }
  static R tanh(R a) { return Sleef_tanhf16_u10avx512f(a); }
  static R erf(R a) { return Sleef_erff16_u10avx512f(a); }
  static double sum(R a) {
    alignas(64) float lanes[N];
    _mm512_store_ps(lanes, a);
    double s = 0;
    for (float l : lanes)
      s += l;
    return s;
  }
};
} // namespace

const VectorMath *braid::rt::avx512Math() {
  static const bool supported =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
  return supported ? &VectorKernels<V16>::table("avx512") : nullptr;
}
