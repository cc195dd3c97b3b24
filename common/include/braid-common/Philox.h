//===- Philox.h - counter-based random numbers for braid.dropout_mask
//------===//
//
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC 2011; the generator behind PyTorch's CUDA dropout and cuRAND's
// default), and braid.dropout_mask's draw from it. Counter-based: element
// i's number depends only on (seed, rank, step, stream, i), so every
// backend (the cpu kernels, the cuda kernels, the tests' numpy twin)
// draws the same mask, in any order, with no state to carry but the step.
// Compiled for the host and, under nvcc, for the device.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_COMMON_PHILOX_H
#define BRAID_COMMON_PHILOX_H

#include <cstdint>

#if defined(__CUDACC__)
#define BRAID_HOST_DEVICE __host__ __device__
#else
#define BRAID_HOST_DEVICE
#endif

namespace braid {

struct Philox4x32 {
  uint32_t v[4];
};

/// Philox4x32 with 10 rounds of `counter` under `key`.
BRAID_HOST_DEVICE inline Philox4x32
philox4x32_10(Philox4x32 counter, uint32_t key0, uint32_t key1) {
  const uint32_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;
  const uint32_t w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;
  uint32_t *c = counter.v;
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t(m0) * c[0], p1 = uint64_t(m1) * c[2];
    uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0);
    uint32_t hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
    uint32_t n0 = hi1 ^ c[1] ^ key0, n2 = hi0 ^ c[3] ^ key1;
    c[0] = n0;
    c[1] = lo1;
    c[2] = n2;
    c[3] = lo0;
    key0 += w0;
    key1 += w1;
  }
  return counter;
}

/// Whether braid.dropout_mask keeps element `element`: Philox of the
/// counter (element's low and high words, step, stream) under the key
/// (seed, rank), its first word's top 24 bits as a uniform number in
/// [0, 1), kept when below `keep`.
BRAID_HOST_DEVICE inline bool dropoutKeeps(uint32_t seed, uint32_t rank,
                                           uint32_t step, uint32_t stream,
                                           uint64_t element, double keep) {
  Philox4x32 c = {{uint32_t(element), uint32_t(element >> 32), step, stream}};
  uint32_t bits = philox4x32_10(c, seed, rank).v[0] >> 8;
  return double(bits) * (1.0 / 16777216.0) < keep;
}

} // namespace braid

#endif // BRAID_COMMON_PHILOX_H
