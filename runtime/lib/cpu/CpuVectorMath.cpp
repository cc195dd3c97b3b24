//===- CpuVectorMath.cpp - the widest VectorMath this CPU runs ------------===//

#include "CpuVectorMathImpl.h"

#include <cstdlib>
#include <string>

using namespace braid;
using namespace braid::rt;

namespace {
/// One lane: libm's float functions (any CPU).
struct V1 {
  using R = float;
  static constexpr int N = 1;
  static R load(const float *p) { return *p; }
  static void store(float *p, R v) { *p = v; }
  static R set(float v) { return v; }
  static R add(R a, R b) { return a + b; }
  static R sub(R a, R b) { return a - b; }
  static R mul(R a, R b) { return a * b; }
  static R div(R a, R b) { return a / b; }
  static R fma(R a, R b, R c) { return std::fma(a, b, c); }
  static R sqrt(R a) { return std::sqrt(a); }
  static R exp(R a) { return std::exp(a); }
  static R log(R a) { return std::log(a); }
  static R tanh(R a) { return std::tanh(a); }
  static R erf(R a) { return std::erf(a); }
  static double sum(R a) { return a; }
};
} // namespace

const VectorMath &braid::rt::scalarMath() {
  return VectorKernels<V1>::table("scalar");
}

#if !BRAID_X86_VECTOR_MATH
const VectorMath *braid::rt::avx512Math() { return nullptr; }
const VectorMath *braid::rt::avx2Math() { return nullptr; }
#endif

const VectorMath &braid::rt::vectorMath() {
  // BRAID_CPU_MATH=avx2|scalar picks a narrower width (the kernel tests run
  // each width the CPU has).
  static const VectorMath &chosen = [&]() -> const VectorMath & {
    const char *want = std::getenv("BRAID_CPU_MATH");
    std::string w = want ? want : "";
    if (w.empty() || w == "avx512")
      if (const VectorMath *m = avx512Math())
        return *m;
    if (w.empty() || w == "avx512" || w == "avx2")
      if (const VectorMath *m = avx2Math())
        return *m;
    return scalarMath();
  }();
  return chosen;
}
