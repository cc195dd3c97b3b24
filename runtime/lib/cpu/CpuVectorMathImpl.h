//===- CpuVectorMathImpl.h - one vector width's functions -------*- C++ -*-===//
//
// VectorMath's functions for a vector type V (CpuVectorMath.h), included by
// the file of each width, which is compiled for its instruction set. V has
// N lanes of f32 and load, store, set, add, sub, mul, fma (a * b + c), div,
// exp, log, tanh, erf, sqrt and sum. A row's last n % N elements go through
// a zero-padded register, so every element takes the same arithmetic.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_LIB_CPU_CPUVECTORMATHIMPL_H
#define BRAID_RUNTIME_LIB_CPU_CPUVECTORMATHIMPL_H

#include "CpuVectorMath.h"

#include <cmath>
#include <cstring>

namespace braid::rt {

template <class V> struct VectorKernels {
  using R = typename V::R;
  static constexpr int N = V::N;

  /// Calls y = f(x...) over n elements of each input, N at a time.
  template <class F>
  static void map1(const float *x, float *y, int64_t n, F f) {
    int64_t i = 0;
    for (; i + N <= n; i += N)
      V::store(y + i, f(V::load(x + i)));
    if (i < n) {
      float in[N] = {}, out[N];
      std::memcpy(in, x + i, sizeof(float) * size_t(n - i));
      V::store(out, f(V::load(in)));
      std::memcpy(y + i, out, sizeof(float) * size_t(n - i));
    }
  }
  template <class F>
  static void map2(const float *a, const float *b, float *y, int64_t n, F f) {
    int64_t i = 0;
    for (; i + N <= n; i += N)
      V::store(y + i, f(V::load(a + i), V::load(b + i)));
    if (i < n) {
      float in0[N] = {}, in1[N] = {}, out[N];
      std::memcpy(in0, a + i, sizeof(float) * size_t(n - i));
      std::memcpy(in1, b + i, sizeof(float) * size_t(n - i));
      V::store(out, f(V::load(in0), V::load(in1)));
      std::memcpy(y + i, out, sizeof(float) * size_t(n - i));
    }
  }

  // sqrt(2 / pi), 0.044715, 1 / sqrt(2), 1 / sqrt(2 pi): GELU's constants.
  static constexpr float kC = 0.7978845608028654f, kK = 0.044715f,
                         kRsqrt2 = 0.7071067811865476f,
                         kRsqrt2Pi = 0.3989422804014327f;

  static void gelu(const float *x, float *y, int64_t n, bool tanhApprox) {
    R half = V::set(0.5f), one = V::set(1.0f);
    if (tanhApprox) {
      R c = V::set(kC), k = V::set(kK);
      map1(x, y, n, [&](R v) {
        // c (x + k x^3) = c x (1 + k x^2)
        R u = V::mul(V::mul(c, v), V::fma(k, V::mul(v, v), one));
        return V::mul(V::mul(half, v), V::add(one, V::tanh(u)));
      });
    } else {
      R s = V::set(kRsqrt2);
      map1(x, y, n, [&](R v) {
        return V::mul(V::mul(half, v), V::add(one, V::erf(V::mul(v, s))));
      });
    }
  }

  static void geluBackward(const float *g, const float *x, float *y, int64_t n,
                           bool tanhApprox) {
    R half = V::set(0.5f), one = V::set(1.0f);
    if (tanhApprox) {
      R c = V::set(kC), k = V::set(kK), k3 = V::set(3.0f * kK);
      map2(g, x, y, n, [&](R gv, R v) {
        R v2 = V::mul(v, v);
        R t = V::tanh(V::mul(V::mul(c, v), V::fma(k, v2, one)));
        R du = V::mul(c, V::fma(k3, v2, one));
        // 0.5 (1 + t) + 0.5 x (1 - t^2) du
        R left = V::mul(half, V::add(one, t));
        R right =
            V::mul(V::mul(V::mul(half, v), V::sub(one, V::mul(t, t))), du);
        return V::mul(gv, V::add(left, right));
      });
    } else {
      R s = V::set(kRsqrt2), p = V::set(kRsqrt2Pi), mhalf = V::set(-0.5f);
      map2(g, x, y, n, [&](R gv, R v) {
        R cdf = V::mul(half, V::add(one, V::erf(V::mul(v, s))));
        R pdf = V::mul(V::exp(V::mul(mhalf, V::mul(v, v))), p);
        return V::mul(gv, V::fma(v, pdf, cdf));
      });
    }
  }

  static double expShifted(const float *x, int64_t stride, float shift,
                           float *y, int64_t n) {
    R m = V::set(shift);
    if (stride != 1)
      for (int64_t k = 0; k < n; ++k)
        y[k] = x[k * stride];
    const float *in = stride == 1 ? x : y;
    R acc = V::set(0.0f);
    int64_t i = 0;
    for (; i + N <= n; i += N) {
      R e = V::exp(V::sub(V::load(in + i), m));
      V::store(y + i, e);
      acc = V::add(acc, e);
    }
    double sum = V::sum(acc);
    if (i < n) {
      float pad[N], out[N];
      for (int l = 0; l < N; ++l)
        pad[l] = i + l < n ? in[i + l] : -INFINITY;
      V::store(out, V::exp(V::sub(V::load(pad), m)));
      for (int64_t l = 0; i + l < n; ++l) {
        y[i + l] = out[l];
        sum += out[l];
      }
    }
    return sum;
  }

  static void unary(ops::UnaryKind kind, const float *x, float *y, int64_t n) {
    R one = V::set(1.0f);
    switch (kind) {
    case ops::UnaryKind::Exp:
      return map1(x, y, n, [](R v) { return V::exp(v); });
    case ops::UnaryKind::Log:
      return map1(x, y, n, [](R v) { return V::log(v); });
    case ops::UnaryKind::Sqrt:
      return map1(x, y, n, [](R v) { return V::sqrt(v); });
    case ops::UnaryKind::Rsqrt:
      return map1(x, y, n, [&](R v) { return V::div(one, V::sqrt(v)); });
    case ops::UnaryKind::Tanh:
      return map1(x, y, n, [](R v) { return V::tanh(v); });
    case ops::UnaryKind::Sigmoid:
      return map1(x, y, n, [&](R v) {
        return V::div(one, V::add(one, V::exp(V::sub(V::set(0.0f), v))));
      });
    case ops::UnaryKind::Silu:
      return map1(x, y, n, [&](R v) {
        return V::div(v, V::add(one, V::exp(V::sub(V::set(0.0f), v))));
      });
    }
  }

  /// The parameter and the moments in double, each rounded once; the
  /// step's ratio m / (sqrt(v) + eps) in f32, whose rounding (2^-24 of an
  /// lr-sized step) lies far below the parameter's own. Element by element:
  /// the compiler vectorizes the loop for the file's instruction set
  /// (-fno-math-errno lets sqrt vectorize; an output that is its input is
  /// read before it is written, element for element, so there is no
  /// dependence between iterations).
  static void adamw(const float *p, const float *g, const float *m,
                    const float *v, float *np, float *nm, float *nv, int64_t n,
                    const AdamWStep &s) {
    const double decay = 1.0 - s.lr * s.wd, invC1 = 1.0 / s.c1,
                 invC2 = 1.0 / s.c2;
    const float eps = float(s.eps);
#pragma clang loop vectorize(assume_safety)
    for (int64_t i = 0; i < n; ++i) {
      double pi = p[i] * decay;
      double gi = s.scale * g[i];
      double mi = s.b1 * m[i] + (1.0 - s.b1) * gi;
      double vi = s.b2 * v[i] + (1.0 - s.b2) * gi * gi;
      float ratio = float(mi * invC1) / (std::sqrt(float(vi * invC2)) + eps);
      nm[i] = float(mi);
      nv[i] = float(vi);
      np[i] = float(pi - s.lr * double(ratio));
    }
  }

  /// In double, each result rounded once, as the scalar loop it replaced:
  /// no contraction into fused multiply-adds, so every width gives the same
  /// bits. Vectorized by the compiler as adamw is.
  static void sgd(const float *p, const float *g, const float *buf, float *np,
                  float *nbuf, int64_t n, const SgdStep &s) {
#pragma clang fp contract(off)
    const double keep = 1.0 - s.dampening;
    if (s.nesterov) {
#pragma clang loop vectorize(assume_safety)
      for (int64_t i = 0; i < n; ++i) {
        double gi = s.scale * g[i] + s.wd * p[i];
        double b = s.momentum * buf[i] + keep * gi;
        nbuf[i] = float(b);
        np[i] = float(p[i] - s.lr * (gi + s.momentum * b));
      }
      return;
    }
#pragma clang loop vectorize(assume_safety)
    for (int64_t i = 0; i < n; ++i) {
      double gi = s.scale * g[i] + s.wd * p[i];
      double b = s.momentum * buf[i] + keep * gi;
      nbuf[i] = float(b);
      np[i] = float(p[i] - s.lr * b);
    }
  }

  static const VectorMath &table(const char *name) {
    static const VectorMath math = {name,  gelu,  geluBackward, expShifted,
                                    unary, adamw, sgd};
    return math;
  }
};

} // namespace braid::rt

#endif // BRAID_RUNTIME_LIB_CPU_CPUVECTORMATHIMPL_H
